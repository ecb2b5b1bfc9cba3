"""Every State pickles, realized or not, and its copy continues a simulation bitwise like the original.

Laws: ``pickle.loads(pickle.dumps((system, state)))`` gives a State at the same stage whose cached
results are bitwise the original's (the compiled workspace rebuilds itself from its arrays), and
integrating the copy with its System gives bitwise the same trajectory as integrating the original
(error-controlled and fixed-step); a State pickled alone brings a copy of its System, and the
original System can take its variables back by path (``migrate_state``).
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    Subsystem,
    System,
    TimeStepper,
    Transform,
)


class Drag(Force.Custom.Implementation):
    """A user force defined at module level (so pickle can find its class): -c u on the first mobility."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] -= self.c * state.get_u()[0]


class Oscillator(Subsystem):
    """z'' = -k z with k in a discrete variable, and a step counter as a second discrete variable."""

    def __init__(self, system):
        super().__init__(system, name="osc")
        self.add_state_variable("x", 1.0)
        self.add_state_variable("v", 0.0)
        self.add_discrete_variable("k", Stage.Dynamics, 4.0)

    def realize_subsystem_acceleration_impl(self, state):
        x, v = self.get_state_variable_values(state)
        self.set_state_variable_derivative(state, "x", v)
        self.set_state_variable_derivative(state, "v", -self.get_discrete_variable_value(state, "k") * x)


def pendulum():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia([0.1, 0.01, 0.1])))
    a = MobilizedBody.Pin(matter.ground, body, name="upper")
    b = MobilizedBody.Ball(a, Transform([0, -1, 0]), body, Transform(), name="lower")
    Force.TwoPointLinearSpring(forces, matter.ground, [0.5, 0, 0], b, [0, -1, 0], 20.0, 0.5)
    Force.Custom(forces, Drag(0.3), name="drag")
    state = system.realize_topology()
    a.set_angle(state, 0.4)
    b.set_u(state, [0.5, -1.0, 2.0])
    return system, state


def four_bar():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))
    crank = MobilizedBody.Pin(matter.ground, Transform(), rod, Transform())
    coupler = MobilizedBody.Pin(crank, Transform([1, 0, 0]), rod, Transform())
    rocker = MobilizedBody.Pin(coupler, Transform([1, 0, 0]), rod, Transform())
    Constraint.Ball(matter.ground, [1.5, 0, 0], rocker, [1, 0, 0])
    state = system.realize_topology()
    state.set_q([1.2, -1.9, -1.0])
    system.project(state, 1e-12)
    return system, state


def oscillator():
    system = System()
    osc = Oscillator(system)
    state = system.realize_topology()
    osc.set_discrete_variable_value(state, "k", 9.0)
    return system, state


MODELS = {"pendulum": pendulum, "four_bar": four_bar, "oscillator": oscillator}
STAGES = [Stage.Model, Stage.Instance, Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics,
          Stage.Acceleration, Stage.Report]


def _trajectory(system, state, fixed: bool, n: int = 40) -> np.ndarray:
    integ = SemiExplicitEulerIntegrator(system, 1e-3) if fixed else RungeKuttaMersonIntegrator(system)
    if not fixed:
        integ.set_accuracy(1e-7)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    rows = []
    for k in range(1, n + 1):
        ts.step_to(0.005 * k)
        rows.append(np.concatenate([[ts.get_time()], ts.get_state().get_y()]))
    return np.array(rows)


@pytest.mark.parametrize("stage", STAGES, ids=[s.name for s in STAGES])
@pytest.mark.parametrize("model", list(MODELS))
def test_pickled_state_keeps_its_stage_and_cache_and_continues_bitwise(model, stage):
    system, state = MODELS[model]()
    system.realize(state, stage)
    sys2, s2 = pickle.loads(pickle.dumps((system, state)))
    assert s2.get_system() is sys2 and s2.get_system_stage() == state.get_system_stage() >= stage
    np.testing.assert_array_equal(s2.get_y(), state.get_y())
    assert s2.get_time() == state.get_time()
    if stage >= Stage.Position:
        np.testing.assert_array_equal(s2.get_q_err(), state.get_q_err())
    if stage >= Stage.Acceleration:
        np.testing.assert_array_equal(s2.get_udot(), state.get_udot())  # the cache, not recomputed
        np.testing.assert_array_equal(s2.get_ydot(), state.get_ydot())
    for fixed in (False, True):
        np.testing.assert_array_equal(_trajectory(sys2, s2.copy(), fixed), _trajectory(system, state.copy(), fixed))


def test_realized_multibody_caches_survive_pickling():
    system, state = pendulum()
    system.realize(state, Stage.Acceleration)
    matter = system.get_matter_subsystem()
    sys2, s2 = pickle.loads(pickle.dumps((system, state)))
    m2 = sys2.get_matter_subsystem()
    for name in ("upper", "lower"):
        a, b = matter.get_component(name), m2.get_component(name)
        np.testing.assert_array_equal(a.get_body_velocity(state), b.get_body_velocity(s2))
        np.testing.assert_array_equal(a.get_body_acceleration(state), b.get_body_acceleration(s2))
    np.testing.assert_array_equal(matter.calc_m(state), m2.calc_m(s2))
    assert system.calc_energy(state) == sys2.calc_energy(s2)


def test_a_state_pickled_alone_brings_its_system_and_migrates_back_by_path():
    system, state = pendulum()
    system.realize(state, Stage.Velocity)
    s2 = pickle.loads(pickle.dumps(state))
    assert s2.get_system() is not system and s2.get_system_stage() == Stage.Velocity
    with pytest.raises(ValueError, match="belongs to"):
        system.realize(s2, Stage.Acceleration)
    back = system.migrate_state(s2)
    np.testing.assert_array_equal(back.get_y(), state.get_y())
    np.testing.assert_array_equal(_trajectory(system, back, True, 10), _trajectory(system, state.copy(), True, 10))


def test_deepcopy_and_copy_agree_with_pickling():
    system, state = four_bar()
    system.realize(state, Stage.Acceleration)
    for twin in (copy.deepcopy(state), state.copy()):
        np.testing.assert_array_equal(_trajectory(system, twin, False, 10), _trajectory(system, state.copy(), False, 10))
