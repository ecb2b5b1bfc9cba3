"""State snapshots: ``load_state(save_state(s))`` continues a simulation bitwise like ``s``; a snapshot of
another topology is refused with the difference named, and ``migrate=True`` carries what still exists.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from simtk.io import load_state, save_state
from simtk.testing import multibody_systems, states


class Oscillator(Subsystem):
    """z'' = -k z with k a discrete variable declared by name."""

    def __init__(self, system):
        super().__init__(system, name="osc")
        self.add_state_variable("x", 1.0)
        self.add_state_variable("v", 0.0)
        self.add_discrete_variable("k", Stage.Dynamics, 4.0)

    def realize_subsystem_acceleration_impl(self, state):
        x, v = self.get_state_variable_values(state)
        self.set_state_variable_derivative(state, "x", v)
        self.set_state_variable_derivative(state, "v", -self.get_discrete_variable_value(state, "k") * x)


def pendulum(with_damper: bool = False):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia([0.1, 0.01, 0.1])))
    a = MobilizedBody.Pin(matter.ground, body, name="upper")
    b = MobilizedBody.Ball(a, Transform([0, -1, 0]), body, Transform(), name="lower")
    Force.TwoPointLinearSpring(forces, matter.ground, [0.5, 0, 0], b, [0, -1, 0], 20.0, 0.5, name="spring")
    push = Force.DiscreteForces(forces, matter, name="push")
    if with_damper:
        Force.GlobalDamper(forces, matter, 0.2, name="damper")
    state = system.realize_topology()
    a.set_angle(state, 0.4)
    b.set_u(state, [0.5, -1.0, 2.0])
    push.set_all_mobility_forces(state, [0.3, 0.0, 0.1, -0.2])
    state.set_time(0.25)
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
    Constraint.ConstantSpeed(crank, 0, 0.0, name="lock").set_disabled_by_default(True)
    state = system.realize_topology()
    state.set_q([1.2, -1.9, -1.0])
    system.project(state, 1e-12)
    return system, state


def oscillator():
    system = System()
    osc = Oscillator(system)
    state = system.realize_topology()
    osc.set_discrete_variable_value(state, "k", 9.0)
    osc.set_state_variable_value(state, "v", 0.5)
    return system, state


MODELS = {"pendulum": pendulum, "four_bar": four_bar, "oscillator": oscillator}


def trajectory(system, state, fixed: bool, n: int = 30) -> np.ndarray:
    integ = SemiExplicitEulerIntegrator(system, 1e-3) if fixed else RungeKuttaMersonIntegrator(system)
    if not fixed:
        integ.set_accuracy(1e-7)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    t0 = state.get_time()
    rows = []
    for k in range(1, n + 1):
        ts.step_to(t0 + 0.005 * k)
        rows.append(np.concatenate([[ts.get_time()], ts.get_state().get_y()]))
    return np.array(rows)


@pytest.mark.parametrize("model", list(MODELS))
def test_a_loaded_snapshot_continues_bitwise(model, tmp_path):
    system, state = MODELS[model]()
    path = tmp_path / "s.npz"
    save_state(state, path)
    loaded = load_state(system, path)
    assert loaded.get_time() == state.get_time()
    np.testing.assert_array_equal(loaded.get_y(), state.get_y())
    for fixed in (False, True):
        np.testing.assert_array_equal(trajectory(system, loaded, fixed), trajectory(system, state.copy(), fixed))


def test_discrete_forces_and_disabled_constraints_are_restored(tmp_path):
    system, state = pendulum()
    push = system.get_component("/forces/push")
    save_state(state, tmp_path / "p.npz")
    loaded = load_state(system, tmp_path / "p.npz")
    np.testing.assert_array_equal(push.get_all_mobility_forces(loaded), push.get_all_mobility_forces(state))
    assert push.get_all_mobility_forces(loaded).any()  # the test is not vacuous
    system, state = four_bar()
    lock = system.get_component("/matter/lock")
    assert lock.is_disabled(state)
    lock.enable(state)
    save_state(state, tmp_path / "f.npz")
    assert not lock.is_disabled(load_state(system, tmp_path / "f.npz"))


def test_euler_angle_mode_is_restored(tmp_path):
    system, state = pendulum()
    matter = system.get_matter_subsystem()
    matter.set_use_euler_angles(state, True)
    system.realize(state, Stage.Model)
    system.get_component("/matter/lower").set_q(state, [0.1, 0.2, -0.3])
    save_state(state, tmp_path / "e.npz")
    loaded = load_state(system, tmp_path / "e.npz")
    assert matter.get_use_euler_angles(loaded)
    np.testing.assert_array_equal(loaded.get_y(), state.get_y())


@settings(max_examples=20)
@given(model=multibody_systems(max_bodies=4), data=st.data())
def test_random_models_restore_bitwise(tmp_path_factory, model, data):
    state = data.draw(states(model.system))
    path = tmp_path_factory.mktemp("snap") / "r.npz"
    save_state(state, path)
    loaded = load_state(model.system, path)
    np.testing.assert_array_equal(loaded.get_y(), state.get_y())
    model.system.realize(loaded, Stage.Acceleration)
    model.system.realize(state, Stage.Acceleration)
    np.testing.assert_array_equal(loaded.get_udot(), state.get_udot())


def test_another_topology_is_refused_with_the_difference_named(tmp_path):
    system, state = pendulum()
    save_state(state, tmp_path / "s.npz")
    other, _ = pendulum(with_damper=True)
    with pytest.raises(ValueError, match="/forces/damper"):
        load_state(other, tmp_path / "s.npz")
    osc, _ = oscillator()
    with pytest.raises(ValueError, match="another topology"):
        load_state(osc, tmp_path / "s.npz")


def test_migrate_carries_what_still_exists(tmp_path):
    system, state = pendulum()
    save_state(state, tmp_path / "s.npz")
    other, other_default = pendulum(with_damper=True)
    default = other.realize_topology()
    migrated = load_state(other, tmp_path / "s.npz", migrate=True)
    assert migrated.get_time() == state.get_time()
    for path in system.get_state_variable_names(state):
        assert other.get_state_variable_value(migrated, path) == system.get_state_variable_value(state, path)
    # A model with fewer variables: the missing ones keep their defaults, the rest are carried.
    small = MultibodySystem()
    matter = SimbodyMatterSubsystem(small)
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia([0.1, 0.01, 0.1])))
    MobilizedBody.Pin(matter.ground, body, name="upper")
    MobilizedBody.Slider(matter.ground, body, name="extra")
    s = load_state(small, tmp_path / "s.npz", migrate=True)
    assert small.get_state_variable_value(s, "/matter/upper/angle") == 0.4
    assert small.get_state_variable_value(s, "/matter/extra/length") == \
        small.get_state_variable_value(small.realize_topology(), "/matter/extra/length")
    assert default.get_time() == 0.0 and other_default is not None


def test_migrate_carries_named_discrete_variables(tmp_path):
    system, state = oscillator()
    save_state(state, tmp_path / "o.npz")
    other = System()
    osc = Oscillator(other)
    osc.add_state_variable("w", 3.0)
    s = load_state(other, tmp_path / "o.npz", migrate=True)
    assert osc.get_discrete_variable_value(s, "k") == 9.0
    assert osc.get_state_variable_value(s, "v") == 0.5
    assert osc.get_state_variable_value(s, "w") == 3.0


def test_not_a_snapshot_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    system, _ = oscillator()
    with pytest.raises(ValueError, match="bad.npz"):
        load_state(system, bad)
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="missing"):
        load_state(system, tmp_path / "other.npz")
