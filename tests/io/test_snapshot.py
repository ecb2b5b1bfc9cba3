"""State snapshots: ``load_state(save_state(s))`` continues a simulation bitwise like ``s``; a snapshot of
another topology is refused with the difference named, and ``migrate=True`` carries what still exists.
"""
from __future__ import annotations

import numpy as np
import pytest
from continuation_models import MODELS, Oscillator, four_bar, oscillator, pendulum, trajectory
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    System,
)
from simtk.io import load_state, save_state
from simtk.testing import multibody_systems, states


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
