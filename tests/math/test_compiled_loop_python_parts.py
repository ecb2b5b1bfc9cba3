"""Python parts inside the compiled time loop: the same trajectory as the Python loop, bitwise.

A model with a ``Force.Custom``, ``Force.DiscreteForces``, a user's force subsystem or a user's
subsystem with stage hooks keeps the compiled loop: its derivatives are the State's fused
realization, which runs the kernels and calls each Python part where the stage hooks would
(``simtk/multibody/_fused.py``, ``core/realize.pxi``). The reference is the same integrator with the
compiled loop turned off, and the same State realized by the hooks (``state._fused = False``): every
comparison is exact, and the only expected values are the other path's.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compiled_loop import (
    COMPILED_TWINS,
    MIN_STEP,
    LinkCrossing,
    StepCounter,
    _with_coupler,
    _with_custom_force_and_motion,
    _with_custom_motion,
    assert_same_integrators,
    counting_compiled_steps,
    drive,
    models,
    outcome,
    pin_chain,
    report_times,
    twins,
)

from simtk import Function, MobilizedBody, Stage, Transform
from simtk.common.errors import NonFiniteForceError
from simtk.common.subsystem import Subsystem
from simtk.math import TimeStepper
from simtk.multibody import Force, ForceSubsystem
from simtk.testing import states


# ---------------------------------------------------------------------------------------------- Python parts
class PySpring(Force.Custom.Implementation):
    """A two-point linear spring through the library's helpers (position only: reused while only u
    changes)."""

    def __init__(self, b1, s1, b2, s2, k, x0):
        super().__init__()
        self.b1, self.b2 = b1, b2
        self.s1, self.s2 = np.asarray(s1, float), np.asarray(s2, float)
        self.k, self.x0 = k, x0
        self.calls = 0

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        self.calls += 1
        p1 = self.b1.find_station_location_in_ground(state, self.s1)
        p2 = self.b2.find_station_location_in_ground(state, self.s2)
        d = p2 - p1
        x = float(np.sqrt(d @ d))
        f = self.k * (x - self.x0) / max(x, 1e-9) * d
        matter = self.b2.get_matter_subsystem()
        matter.add_in_station_force(state, self.b1, self.s1, f, body_forces)
        matter.add_in_station_force(state, self.b2, self.s2, -f, body_forces)

    def calc_potential_energy(self, state):
        p1 = self.b1.find_station_location_in_ground(state, self.s1)
        p2 = self.b2.find_station_location_in_ground(state, self.s2)
        return 0.5 * self.k * (float(np.linalg.norm(p2 - p1)) - self.x0) ** 2

    def depends_only_on_positions(self):
        return True


class PyDamper(Force.Custom.Implementation):
    """A damper on every mobility, c u, that also logs what the State says at each of its stage hooks
    and in calc_force (the stage marks a Python element sees)."""

    def __init__(self, c, log=None, fail_at=None, nan_at=None, interrupt_at=None, fail_position_at=None):
        super().__init__()
        self.c, self.log = c, log
        self.fail_at, self.nan_at, self.interrupt_at = fail_at, nan_at, interrupt_at
        self.fail_position_at = fail_position_at  # the realize_position call that raises
        self.calls = self.position_calls = 0

    def _seen(self, where, state):
        if self.log is not None:
            self.log.append((where, int(state.get_system_stage()),
                             tuple(int(state.get_subsystem_stage(i)) for i in range(state.get_num_subsystems()))))

    def realize_time(self, state):
        self._seen("time", state)

    def realize_position(self, state):
        self._seen("position", state)
        self.position_calls += 1
        if self.position_calls == self.fail_position_at:
            raise ValueError(f"PyDamper refuses realize_position call {self.position_calls}")

    def realize_velocity(self, state):
        self._seen("velocity", state)

    def realize_dynamics(self, state):
        self._seen("dynamics", state)

    def realize_acceleration(self, state):
        self._seen("acceleration", state)

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        self.calls += 1
        self._seen("calc_force", state)
        if self.calls == self.fail_at:
            raise ValueError(f"PyDamper refuses call {self.calls}")
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        mobility_forces -= self.c * state.get_u()
        if self.calls == self.nan_at:
            mobility_forces[0] = np.nan


class Pusher(ForceSubsystem):
    """A user's force subsystem: a constant generalized force on the first mobility, added by its own
    Dynamics hook."""

    def __init__(self, system, f):
        super().__init__(system, "pusher")
        self.f = f

    def realize_subsystem_dynamics_impl(self, state):
        self.get_system().upd_mobility_forces(state, Stage.Dynamics)[0] += self.f


class Watcher(Subsystem):
    """A user's subsystem with a Position and an Acceleration hook that only look (and log)."""

    def __init__(self, system, log):
        super().__init__(system, "watcher")
        self.log = log

    def realize_subsystem_position_impl(self, state):
        self.log.append(("watcher position", int(state.get_system_stage())))

    def realize_subsystem_acceleration_impl(self, state):
        self.log.append(("watcher acceleration", int(state.get_system_stage())))


class Clock(Subsystem):
    """An auxiliary variable z' = 1 + z/2 (realized in Python)."""

    def __init__(self, system):
        super().__init__(system, "clock")

    def realize_subsystem_topology_impl(self, state):
        self.allocate_z(state, [0.0])

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_zdot(state)[0] = 1.0 + 0.5 * self.get_z(state)[0]


#: what a drawn model gets beside its built-in elements
PARTS = ("spring", "damper", "discrete", "pusher", "watcher", "clock")


def add_parts(system, matter, forces, bodies, parts, log=None, seed=0, **damper):
    """Add the named Python parts to a model; returns the DiscreteForces element (or None)."""
    rng = np.random.default_rng(seed)
    discrete = None
    if "spring" in parts:
        b2 = bodies[-1]
        Force.Custom(forces, PySpring(matter.ground, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.3, .3, 3), 15.0, 0.4))
    if "damper" in parts:
        Force.Custom(forces, PyDamper(0.3, log, **damper))
    if "discrete" in parts:
        discrete = Force.DiscreteForces(forces, matter)
    if "pusher" in parts:
        Pusher(system, 0.7)
    if "watcher" in parts:
        Watcher(system, log if log is not None else [])
    if "clock" in parts:
        Clock(system)
    return discrete


def set_discrete(discrete, state, bodies, seed=1):
    if discrete is None:
        return
    rng = np.random.default_rng(seed)
    state.get_system().realize(state, Stage.Position)  # a force at a station needs the body's pose
    discrete.set_one_mobility_force(state, bodies[0], 0, float(rng.uniform(-1, 1)))
    discrete.add_force_to_body_point(state, bodies[-1], rng.uniform(-.2, .2, 3), rng.uniform(-2, 2, 3))


# ---------------------------------------------------------------------------------------------- realization
def test_a_fused_realization_with_python_parts_equals_the_hooks_bitwise():
    """Law: with every kind of Python part, the fused realization leaves what the hooks leave (the
    caches, stage marks and realization counts, bitwise), and each Python part runs as often, in the
    same order, seeing the same stages of the State."""
    system, matter, forces, bodies = pin_chain(4, "Ball")
    log: list = []
    discrete = add_parts(system, matter, forces, bodies, PARTS, log)
    fused = system.realize_topology()
    system.realize(fused, Stage.Instance)
    assert fused._fused and fused._fused.staged, "Python parts take the fused realization, stage by stage"
    hooks = fused.copy()
    system.realize(hooks, Stage.Instance)
    hooks._fused = False
    rng = np.random.default_rng(3)
    for s in (fused, hooks):
        set_discrete(discrete, s, bodies)
    steps = [("q", Stage.Acceleration), ("u", Stage.Acceleration), ("t", Stage.Dynamics), ("u", Stage.Velocity),
             ("none", Stage.Acceleration), ("q", Stage.Position), ("d", Stage.Acceleration), ("t", Stage.Time),
             ("none", Stage.Acceleration)]
    for what, stage in steps:
        q = rng.uniform(-1, 1, fused.get_nq())
        u = rng.uniform(-1, 1, fused.get_nu())
        t = float(rng.uniform(0, 3))
        seen, counts, results = [], [], []
        for s in (fused, hooks):
            if what == "q":
                s.set_q(q)
            elif what == "u":
                s.set_u(u)
            elif what == "t":
                s.set_time(t)
            elif what == "d":
                set_discrete(discrete, s, bodies, seed=int(t * 1000))
            del log[:]
            before = list(system._num_realizations)
            system.realize(s, stage)
            counts.append([a - b for a, b in zip(system._num_realizations, before)])
            seen.append(list(log))
            results.append(snapshot(system, matter, s))
        assert counts[0] == counts[1], (what, stage)
        assert seen[0] == seen[1], (what, stage)
        for key in results[1]:
            np.testing.assert_array_equal(results[0][key], results[1][key], err_msg=f"{what} {stage!r}: {key}")
    assert fused._fused.staged and hooks._fused is False


def snapshot(system, matter, s) -> dict:
    out = {"stages": np.array([int(s.get_system_stage())] + [int(s.get_subsystem_stage(i))
                                                              for i in range(s.get_num_subsystems())])}
    if s.get_system_stage() >= Stage.Velocity:
        out["qdot"] = s.get_qdot().copy()
    if s.get_system_stage() >= Stage.Dynamics:
        out["F"] = system.get_rigid_body_forces(s).copy()
        out["f"] = system.get_mobility_forces(s).copy()
    if s.get_system_stage() >= Stage.Acceleration:
        out["udot"] = s.get_udot().copy()
        out["A_GB"] = np.array([matter.get_mobilized_body(i).get_body_acceleration(s)
                                for i in range(1, matter.get_num_bodies())])
    return out


def test_a_python_part_that_raises_fails_as_on_the_hooks_path():
    """Law: an exception of a Python part propagates with the hooks' note (stage and subsystem), the
    State left below the stage it was realizing, on either path; a non-finite force names its element."""
    errors = []
    for use_fused in (True, False):
        for damper, expected in (({"fail_at": 1}, ValueError), ({"nan_at": 1}, NonFiniteForceError)):
            system, matter, forces, bodies = pin_chain(3)
            add_parts(system, matter, forces, bodies, ("spring", "damper"), **damper)
            s = system.realize_topology()
            system.realize(s, Stage.Instance)
            if not use_fused:
                s._fused = False
            s.set_u(np.full(s.get_nu(), 0.5))
            with pytest.raises(expected) as info:
                system.realize(s, Stage.Acceleration)
            assert s.get_system_stage() == Stage.Velocity
            errors.append((type(info.value), str(info.value), getattr(info.value, "__notes__", None)))
            if expected is NonFiniteForceError:
                assert "PyDamper.calc_force" in str(info.value)
    assert errors[:2] == errors[2:]
    assert "while realizing Dynamics of subsystem 'forces'" in errors[0][2][0]


# ---------------------------------------------------------------------------------------------- the time loop
@pytest.mark.parametrize("name", list(COMPILED_TWINS))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_python_parts_keep_the_compiled_loop_bitwise(name, data):
    """Law: a random model of built-in elements with Python parts of every kind steps in the compiled
    loop (every step), with the trajectory, statistics and advanced State of the Python loop after
    every ``step_to``, bitwise; ``describe_fast_path`` names the Python parts and their cost."""
    model = data.draw(models(max_bodies=3), label="model")
    parts = data.draw(st.lists(st.sampled_from(PARTS), min_size=1, max_size=3, unique=True), label="parts")
    system, matter, forces = model.system, model.matter, model.forces
    discrete = add_parts(system, matter, forces, model.bodies, parts, seed=data.draw(st.integers(0, 9)))
    state = data.draw(states(system), label="state")
    set_discrete(discrete, state, model.bodies)
    reports = data.draw(report_times, label="report times")

    def configure(integ):
        integ.set_accuracy(1e-4)
        integ.set_minimum_step_size(MIN_STEP)

    a, b = twins(system, COMPILED_TWINS[name], configure)
    with counting_compiled_steps() as compiled_steps:
        a.initialize(state)
        b.initialize(state)
        why = a.describe_fast_path()
        if "clock" in parts and a._compiled_spec()[0] != "rk":
            # z is stepped in the compiled loop by the Runge-Kutta tables only
            assert why.startswith("Python time loop:") and "auxiliary variables z" in why, why
            drive(a, b, reports, max_steps=400)
            return
        assert why.startswith("compiled time loop:"), why
        if parts == ["discrete"]:  # the only Python part: its values held in the batch kernels' steps
            assert "(DiscreteForces) are held over the steps" in why and "calls Python" not in why, why
        else:
            assert "calls Python for" in why and "us per evaluation" in why, why
        if "spring" in parts or "damper" in parts:
            assert "Force.Custom" in why, why
        if "pusher" in parts:
            assert "'pusher'" in why, why
        assert_same_integrators(a, b, "after initialize")
        seen, ended = drive(a, b, reports, max_steps=400)
    if ended != "raised":
        assert compiled_steps[0] == a.get_num_steps_taken() > 0


@pytest.mark.parametrize("damper", [{"fail_at": 40}, {"nan_at": 40}, {"fail_position_at": 41},
                                    {"fail_position_at": 42}])
@pytest.mark.parametrize("name", ["RungeKuttaMerson", "SemiExplicitEuler", "SemiExplicitEuler2", "Verlet", "SemiImplicitEuler"])
def test_a_python_part_failing_inside_the_compiled_loop_ends_the_step_alike(name, damper):
    """Law: a Python part that raises or gives a non-finite force in the middle of a run hands the step
    back to Python: both loops end the same way (the same error, the State at the last good step,
    the same statistics). A non-finite force under error control is a refused attempt instead: both
    loops take a quarter step from the last good one and run on, to the same end."""
    system, matter, forces, bodies = pin_chain(3)
    add_parts(system, matter, forces, bodies, ("spring", "damper"), **damper)
    impl = forces.get_force(forces.get_num_forces() - 1).get_implementation()
    assert isinstance(impl, PyDamper)
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.upd_u()[:] = 0.8
    results = []
    for compiled in (True, False):
        impl.calls = impl.position_calls = 0
        integ = COMPILED_TWINS[name](system)
        integ.set_use_compiled_loop(compiled)
        integ.initialize(state)
        result = outcome(lambda: integ.step_to(2.0))
        adv = integ.get_advanced_state()
        results.append((result, adv.get_time(), adv.get_y().copy(), integ.get_num_steps_taken(),
                        integ.get_num_steps_attempted(), integ.get_num_realizations(),
                        integ.get_num_error_test_failures(), integ.get_num_non_finite_failures()))
    (ra, ta, ya, *stats_a), (rb, tb, yb, *stats_b) = results
    retried = "nan_at" in damper and integ.method_has_error_control()
    assert isinstance(ra, tuple) != retried and ra == rb
    assert stats_a[-1] == (1 if retried else 0)
    assert ta == tb and np.array_equal(ya, yb)
    assert stats_a == stats_b, (f"steps, attempts, realizations, error-test and non-finite failures: {stats_a} vs "
                                f"{stats_b}")


def test_a_keyboard_interrupt_in_a_python_part_reaches_the_caller_and_the_run_can_go_on():
    """A KeyboardInterrupt raised by a Python part inside the compiled loop reaches the caller of
    ``step_to``, with the steps taken before it kept; continuing gives the uninterrupted run, bitwise."""
    runs = []
    for interrupt_at in (None, 25):
        system, matter, forces, bodies = pin_chain(3)
        add_parts(system, matter, forces, bodies, ("spring", "damper"), interrupt_at=interrupt_at)
        state = system.realize_topology()
        system.realize(state, Stage.Model)
        state.upd_u()[:] = 0.8
        integ = COMPILED_TWINS["RungeKuttaMerson"](system)
        integ.set_accuracy(1e-5)
        integ.initialize(state)
        assert integ.describe_fast_path().startswith("compiled time loop:")
        if interrupt_at is not None:
            with pytest.raises(KeyboardInterrupt):
                integ.step_to(1.0)
            assert 0 < integ.get_time() < 1.0
        integ.step_to(1.0)
        runs.append((integ.get_time(), integ.get_state().get_y().copy(), integ.get_num_steps_taken()))
    assert runs[0][0] == runs[1][0] == 1.0
    assert np.array_equal(runs[0][1], runs[1][1]) and runs[0][2] == runs[1][2]


# ---------------------------------------------------------------------------------------------- the matter's Python
class PySlider(MobilizedBody.Custom.Implementation):
    """A slider along x written in Python (a Custom mobilizer)."""

    def __init__(self, matter):
        super().__init__(matter, 1, 1, 0)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform([q[0], 0, 0])

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0, 0, 0], [u[0], 0, 0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[1][0]])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class PyLinear(Function):
    """Function.Linear written in Python (no compiled form: a coupler of it is solved in Python)."""

    def __init__(self, a):
        self.a = np.asarray(a, float)

    def calc_value(self, x):
        return float(self.a[:-1] @ np.asarray(x, float) + self.a[-1])

    def calc_derivative(self, deriv_components, x):
        return float(self.a[deriv_components[0]]) if len(deriv_components) == 1 else 0.0

    def get_argument_size(self):
        return len(self.a) - 1

    def get_max_derivative_order(self):
        return 2


def _with_python_coupler(system, matter, forces, bodies):
    from simtk.multibody import Constraint
    Constraint.CoordinateCoupler(matter, PyLinear([1.0, -2.0, 0.0]), bodies[:2], [0, 0])


def _with_builtin_coupler(system, matter, forces, bodies):
    # (solved by the compiled loop's own rows: the State is not realized in its steps)
    from simtk.multibody import Constraint
    Constraint.CoordinateCoupler(matter, Function.Linear([1.0, -2.0, 0.0]), bodies[:2], [0, 0])


def _with_custom_mobilizer(system, matter, forces, bodies):
    body = bodies[-1].get_body()
    MobilizedBody.Custom(bodies[-1], Transform([0, -0.5, 0]), body, Transform(), PySlider(matter))


MATTER_PARTS = {
    # case: (what to add, substrings describe_fast_path must contain)
    "Custom mobilizer": (_with_custom_mobilizer, ("the matter subsystem's stage hooks", "Custom mobilizers")),
    "coupler of a Python Function": (_with_python_coupler, ("constraint equations solved in Python",)),
    "coupler of a user's Function": (_with_coupler, ("constraint equations solved in Python", "_UserCoupling")),
    "coupler of a built-in Function": (_with_builtin_coupler, ("solving and projecting 1 constraint equations",)),
    "Motion.Custom": (_with_custom_motion, ("constraint equations solved in Python",)),
    "Force.Custom beside a Motion": (_with_custom_force_and_motion, ("Force.Custom", "python_push")),
    "auto-update variables": (lambda system, *_: StepCounter(system, "counter"), ("'counter'",)),
    "triggered event": (lambda system, matter, forces, bodies: system.add_event_handler(LinkCrossing(bodies[0])),
                        ("event witnesses are evaluated in Python", "link_crossing")),
}


@pytest.mark.parametrize("case", list(MATTER_PARTS))
@pytest.mark.parametrize("name", ["RungeKuttaMerson", "RungeKutta3", "SemiExplicitEuler", "SemiExplicitEuler2",
                                  "Verlet"])
def test_the_matters_python_keeps_the_compiled_loop_bitwise(name, case):
    """Law: Custom mobilizers, constraints and Motions solved in Python, and auto-update variables keep
    the compiled loop (the matter's own hooks called by the fused realization, the projection and the
    updates after each step by Integrator._finish_step's Python): the trajectory, statistics and State
    are the Python loop's, bitwise, and the compiled loop took every step."""
    add, words = MATTER_PARTS[case]
    system, matter, forces, bodies = pin_chain(2)
    add(system, matter, forces, bodies)
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.upd_u()[:] = 0.4

    def configure(integ):
        integ.set_accuracy(1e-4)
        integ.set_minimum_step_size(MIN_STEP)
        integ.set_constraint_tolerance(1e-6)

    a, b = twins(system, COMPILED_TWINS[name], configure)
    with counting_compiled_steps() as compiled_steps:
        a.initialize(state)
        b.initialize(state)
        why = a.describe_fast_path()
        assert why.startswith("compiled time loop:"), why
        for w in words:
            assert w in why, (w, why)
        assert_same_integrators(a, b, "after initialize")
        seen, ended = drive(a, b, [0.1, 0.25, 0.4], max_steps=600)
    assert ended in ("reached", "truncated"), seen
    assert compiled_steps[0] == a.get_num_steps_taken() > 0
    if "Motion" in case or "coupler" in case:
        assert a.get_num_projections() == b.get_num_projections()


class Kick(LinkCrossing):
    """When the first link's angle falls through zero, its speed is halved (a handler that changes the
    State: the integrator restarts after it)."""

    def __init__(self, mobod):
        super().__init__(mobod)
        self.times = []

    def handle_event(self, state, accuracy):
        self.times.append(state.get_time())
        self.mobod.set_one_u(state, 0, 0.5 * self.mobod.get_one_u(state, 0))
        return False


@pytest.mark.parametrize("name", ["RungeKuttaMerson", "RungeKutta3", "SemiExplicitEuler2", "Verlet"])
def test_triggered_events_in_the_compiled_loop_are_localized_alike(name):
    """Law: a TimeStepper run with a triggered handler that changes the State finds the same events at
    the same times and ends in the same State with the compiled loop as with the Python loop, bitwise;
    the compiled loop takes the steps without events."""
    results = []
    with counting_compiled_steps() as compiled_steps:
        for compiled in (True, False):
            system, matter, forces, bodies = pin_chain(2)
            kick = Kick(bodies[0])
            system.add_event_handler(kick)
            state = system.realize_topology()
            system.realize(state, Stage.Model)
            state.upd_q()[:] = [0.6, -0.3]
            integ = COMPILED_TWINS[name](system)
            integ.set_accuracy(1e-5)
            integ.set_use_compiled_loop(compiled)
            ts = TimeStepper(system, integ)
            ts.initialize(state)
            if compiled:
                assert "event witnesses are evaluated in Python" in integ.describe_fast_path()
            ts.step_to(3.0)
            results.append((kick.times, integ.get_state().get_y().copy(), integ.get_num_steps_taken(),
                            integ.get_num_realizations()))
            if compiled:
                n_compiled = compiled_steps[0]
    (ta, ya, na, ra), (tb, yb, nb, rb) = results
    assert len(ta) >= 2 and ta == tb
    assert np.array_equal(ya, yb) and na == nb and ra == rb
    assert n_compiled >= na - 3 * len(ta)  # only the steps with an event are taken again by Python
