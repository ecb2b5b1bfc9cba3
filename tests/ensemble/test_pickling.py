"""Systems and States travel to worker processes: pickle, cloudpickle and the model file text round-trip them.

Laws: a pickled System (built-in mobilizers, forces and a constraint, and a registered user force)
comes back with the same model (its model file text is identical, the user force is of the
registered class with its property) and simulates bitwise like the original; a System pickled
with its State gives a State of the copy that continues bitwise; a user class defined inside a
function (which pickle cannot find by name) travels by value with cloudpickle, as Dask sends it;
the model file stand-in for ``make`` (`ModelText`) pickles and rebuilds the file's model.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from continuation_models import trajectory
from ensemble_models import Damping, build, cart_pole

from simtk import Force, Property, Stage
from simtk.ensemble import ModelText, apply_parameters
from simtk.io import model_to_text, register_class, save_model


def _started(system):
    """The default State with the cart displaced and the rod's poles projected onto the constraint."""
    state = system.realize_topology()
    system.set_state_variable_value(state, "/matter/cart/length", 0.1)
    system.set_state_variable_value(state, "/matter/pole/angle", 0.2)
    system.project(state, 1e-12)
    return state


@pytest.mark.parametrize("rod", [False, True], ids=["tree", "with_rod"])
def test_a_system_pickled_alone_has_the_same_model_and_simulates_bitwise(rod):
    system = build(k=35.0, damping=0.3, rod=rod)
    copy = pickle.loads(pickle.dumps(system))
    assert copy is not system
    assert model_to_text(copy) == model_to_text(system)  # every element, property and default value
    user = copy.get_component("/forces/damping").get_implementation()
    assert type(user) is Damping and user.c == 0.3 and user is not system.get_component("/forces/damping").get_implementation()
    assert "ensemble_test.Damping" in model_to_text(copy)
    for fixed in (False, True):
        np.testing.assert_array_equal(trajectory(copy, _started(copy), fixed), trajectory(system, _started(system), fixed))


@pytest.mark.parametrize("stage", [Stage.Model, Stage.Velocity, Stage.Acceleration], ids=lambda s: s.name)
def test_a_system_pickled_with_its_state_continues_bitwise(stage):
    system = build(k=12.0, rod=True)
    state = _started(system)
    system.realize(state, stage)
    sys2, s2 = pickle.loads(pickle.dumps((system, state)))
    assert s2.get_system() is sys2 and s2.get_system_stage() == state.get_system_stage()
    np.testing.assert_array_equal(s2.get_y(), state.get_y())
    np.testing.assert_array_equal(trajectory(sys2, s2, False), trajectory(system, state.copy(), False))


def test_a_state_pickled_alone_brings_a_copy_of_its_system():
    system, state = cart_pole(k=5.0)
    s2 = pickle.loads(pickle.dumps(state))
    sys2 = s2.get_system()
    assert sys2 is not system and model_to_text(sys2) == model_to_text(system)
    np.testing.assert_array_equal(trajectory(sys2, s2, True), trajectory(system, state.copy(), True))


def test_a_user_class_defined_in_a_function_travels_by_value_with_cloudpickle():
    cloudpickle = pytest.importorskip("cloudpickle")

    class Push(Force.Custom.Implementation):  # pickle cannot find a local class by name; cloudpickle sends it
        f = Property(1.5, stage=Stage.Dynamics)

        def __init__(self, f=1.5):
            super().__init__()
            self.f = f

        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            mobility_forces[0] += self.f

    register_class(Push, "ensemble_test.LocalPush")
    system = build(k=8.0)
    Force.Custom(system.get_component("/forces"), Push(2.5), name="push")
    state = _started(system)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(system)
    sys2, s2 = pickle.loads(cloudpickle.dumps((system, state)))
    assert s2.get_system() is sys2
    np.testing.assert_array_equal(trajectory(sys2, s2, False), trajectory(system, state.copy(), False))


def test_the_model_file_stand_in_pickles_and_rebuilds_the_model_with_parameters_by_path(tmp_path):
    system = build(k=20.0, rod=True)
    save_model(system, tmp_path / "cart_pole.simtk")
    make = pickle.loads(pickle.dumps(ModelText.read(tmp_path / "cart_pole.simtk")))
    assert make.classes["ensemble_test.Damping"] is Damping
    params = {"/forces/spring.stiffness": 42.0, "/forces/damping.c": 0.7, "/matter/pole/angle": 0.25}
    sys2, s2 = make(**params)
    expected = build(k=42.0, damping=0.7, rod=True)
    assert model_to_text(sys2) == model_to_text(expected)
    assert sys2.get_state_variable_value(s2, "/matter/pole/angle") == 0.25
    s_expected = apply_parameters(expected, {"/matter/pole/angle": 0.25})
    np.testing.assert_array_equal(trajectory(sys2, s2, True), trajectory(expected, s_expected, True))
