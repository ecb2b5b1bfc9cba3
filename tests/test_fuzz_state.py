"""A fuzz test of the State API: random call sequences on random models, bad values mixed in.

Laws checked after every call:
- nothing but a documented error escapes (ValueError, TypeError, IndexError, LookupError, the StageError
  family, FloatingPointError and the integrators' errors);
- a refused call leaves the State as it was: time, every continuous and discrete variable, and the
  realized stage, bit for bit;
- no stale cache: every cached result of the realized stages (positions, velocities, forces,
  accelerations, constraint errors, a user subsystem's lazy cache entry) equals, bit for bit, what a
  fresh State with the same variables computes.

The ``ci`` profile runs at least 200 examples (deterministic); ``--hypothesis-profile=long`` runs more.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    IntegratorError,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    StageError,
    Subsystem,
    Transform,
)

ALLOWED = (ValueError, TypeError, IndexError, LookupError, StageError, FloatingPointError, IntegratorError,
           RuntimeError)
JOINTS = ("Pin", "Slider", "Ball", "Free", "Universal", "Gimbal", "Planar", "Cylinder")
STAGES = [Stage.Model, Stage.Instance, Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics,
          Stage.Acceleration, Stage.Report]
_profile = settings.get_profile(settings._current_profile)  # noqa: SLF001 (what --hypothesis-profile chose)
EXAMPLES = max(200, _profile.max_examples)


class Counter(Subsystem):
    """A discrete variable ``gain`` (Dynamics) and a lazy cache entry ``energy`` = gain * |q|^2, which depends
    on Position (computed on demand, as seed §2.5.3)."""

    def __init__(self, system, matter):
        super().__init__(system, name="counter")
        self.matter = matter
        self.add_discrete_variable("gain", Stage.Dynamics, 1.0)
        self.add_cache_variable("energy", np.nan, Stage.Dynamics)

    def energy(self, state):
        if not self.is_cache_variable_valid(state, "energy"):
            q = self.matter.get_q(state)
            self.set_cache_variable_value(state, "energy", self.get_discrete_variable_value(state, "gain") * q @ q)
        return self.get_cache_variable_value(state, "energy")


@st.composite
def models(draw):
    nb = draw(st.integers(1, 4))
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    bodies = [matter.ground]
    for i in range(nb):
        parent = bodies[draw(st.integers(0, i))]
        joint = draw(st.sampled_from(JOINTS))
        mass = draw(st.floats(0.5, 2.0))
        body = Body.Rigid(MassProperties.from_central_inertia(mass, [0, -0.2, 0], Inertia([0.05, 0.04, 0.03])))
        bodies.append(getattr(MobilizedBody, joint)(parent, Transform([0, -0.5, 0]), body, Transform()))
    if draw(st.booleans()):
        Force.UniformGravity(forces, matter, [0, -9.8, 0])
    spring = Force.TwoPointLinearSpring(forces, matter.ground, [0.3, 0, 0], bodies[-1], [0, 0, 0], 10.0, 0.2)
    Force.GlobalDamper(forces, matter, 0.1)
    constraint = None
    if draw(st.booleans()):
        constraint = Constraint.ConstantSpeed(bodies[1], 0, 0.5)
    counter = Counter(system, matter)
    return system, matter, bodies, spring, constraint, counter


finite = st.floats(-2.0, 2.0, allow_nan=False)
bad_number = st.sampled_from([np.nan, np.inf, -np.inf, "x", None])
OPS = st.one_of(
    st.tuples(st.just("set_q"), st.lists(finite, min_size=1, max_size=30), st.booleans()),
    st.tuples(st.just("set_q_bad"), bad_number),
    st.tuples(st.just("set_u"), st.lists(finite, min_size=1, max_size=30), st.booleans()),
    st.tuples(st.just("upd_q"), st.integers(-1, 30), st.one_of(finite, bad_number)),
    st.tuples(st.just("set_time"), st.one_of(st.floats(0, 5), bad_number)),
    st.tuples(st.just("gain"), st.one_of(finite, bad_number)),
    st.tuples(st.just("realize"), st.one_of(st.sampled_from(STAGES), st.integers(-3, 14))),
    st.tuples(st.just("copy")),
    st.tuples(st.just("step"), st.sampled_from(["merson", "euler"])),
    st.tuples(st.just("toggle_force"), st.booleans()),
    st.tuples(st.just("toggle_constraint"), st.booleans()),
    st.tuples(st.just("stiffness"), st.one_of(st.floats(0, 50), bad_number, st.just(-1.0))),
    st.tuples(st.just("energy")),
    st.tuples(st.just("by_name"), st.integers(0, 40), st.one_of(finite, bad_number)),
)


def snapshot(state, counter):
    y = np.array(state.get_y()) if state.get_system_stage() >= Stage.Model else None
    return (state.get_time(), None if y is None else y.tobytes(), state.get_system_stage(),
            repr(counter.get_discrete_variable_value(state, "gain")))


def apply(op, system, matter, spring, constraint, counter, state):
    """Run one operation; returns the (possibly new) State."""
    kind = op[0]
    if kind == "set_q":  # the right size (values repeated to fill it), or whatever length was drawn
        state.set_q(np.resize(op[1], state.get_nq()) if op[2] else np.array(op[1], dtype=float))
    elif kind == "set_q_bad":
        state.set_q(np.full(state.get_nq(), op[1]) if isinstance(op[1], float) else op[1])
    elif kind == "set_u":
        state.set_u(np.resize(op[1], state.get_nu()) if op[2] else np.array(op[1], dtype=float))
    elif kind == "upd_q":
        i, v = op[1], op[2]
        if not (0 <= i < state.get_nq()):
            raise IndexError(f"test: no q[{i}]")  # a user's out-of-range index: refused before any write
        v = float(v) if not isinstance(v, str) and v is not None else v
        if not isinstance(v, float) or not np.isfinite(v):
            raise ValueError("test: a bad value is never written through upd_q")
        state.upd_q()[i] = v
    elif kind == "set_time":
        state.set_time(op[1])
    elif kind == "gain":
        counter.set_discrete_variable_value(state, "gain", op[1])
    elif kind == "realize":
        system.realize(state, op[1])
    elif kind == "copy":
        return state.copy()
    elif kind == "step":
        integ = RungeKuttaMersonIntegrator(system) if op[1] == "merson" else SemiExplicitEulerIntegrator(system, 1e-3)
        integ.initialize(state)
        integ.step_to(integ.get_time() + 0.01)
        return integ.get_state().copy()
    elif kind == "toggle_force":
        spring.disable(state) if op[1] else spring.enable(state)
    elif kind == "toggle_constraint":
        if constraint is not None:
            constraint.disable(state) if op[1] else constraint.enable(state)
    elif kind == "stiffness":
        spring.set_property("stiffness", op[1])
    elif kind == "energy":
        system.realize(state, Stage.Velocity)  # the stage before the entry's (Dynamics)
        counter.energy(state)
    elif kind == "by_name":
        names = system.get_state_variable_names(state)
        system.set_state_variable_value(state, names[op[1] % len(names)], op[2])
    return state


def check_fresh(system, matter, counter, state):
    """Every cached result of the realized stages equals a fresh State's recomputation, bit for bit."""
    stage = state.get_system_stage()
    if stage < Stage.Model:
        return
    fresh = system.realize_topology()
    fresh.copy_variables_from(state)
    system.realize(fresh, stage)
    assert fresh.get_system_stage() == stage
    if stage >= Stage.Position:
        np.testing.assert_array_equal(state.get_q_err(), fresh.get_q_err())
        for b in range(1, matter.get_num_bodies()):
            mb = matter.get_mobilized_body(b)
            X, Y = mb.get_body_transform(state), mb.get_body_transform(fresh)
            np.testing.assert_array_equal(X.R.matrix, Y.R.matrix)
            np.testing.assert_array_equal(X.p, Y.p)
    if stage >= Stage.Velocity:
        if counter.is_cache_variable_valid(state, "energy"):
            assert counter.get_cache_variable_value(state, "energy") == counter.energy(fresh)
        np.testing.assert_array_equal(state.get_qdot(), fresh.get_qdot())
        np.testing.assert_array_equal(state.get_u_err(), fresh.get_u_err())
    if stage >= Stage.Dynamics:
        np.testing.assert_array_equal(system.get_rigid_body_forces(state, Stage.Dynamics),
                                      system.get_rigid_body_forces(fresh, Stage.Dynamics))
    if stage >= Stage.Acceleration:
        np.testing.assert_array_equal(state.get_udot(), fresh.get_udot())
        np.testing.assert_array_equal(state.get_multipliers(), fresh.get_multipliers())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])
@given(models(), st.lists(st.tuples(OPS, st.sampled_from(STAGES + [None] * 4)), min_size=1, max_size=12))
def test_random_call_sequences_keep_the_state_consistent(model, steps):
    system, matter, bodies, spring, constraint, counter = model
    state = system.realize_topology()
    for op, then_realize in steps:
        if then_realize is not None:  # keep the State realized high often, so that stale caches would show
            try:
                system.realize(state, then_realize)
            except ALLOWED:
                pass  # e.g. a constraint that cannot be met; the refusal itself is checked below
        before = snapshot(state, counter)
        try:
            state = apply(op, system, matter, spring, constraint, counter, state)
        except ALLOWED as exc:
            after = snapshot(state, counter)
            if op[0] in ("realize", "energy"):  # a failed realization keeps the stages it completed
                after, before = after[:2] + after[3:], before[:2] + before[3:]
            assert after == before, f"{op!r} was refused ({type(exc).__name__}: {exc}) but changed the State"
        check_fresh(system, matter, counter, state)
