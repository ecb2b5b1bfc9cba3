"""A State that went through pickle on its own (to a worker and back) continues with the System it came from.

Laws: an unpickled State brings a copy of its System; the original System takes it as its own when the
copy is structurally identical (same topology version, the same components of the same kinds with the
same property values): realizing it gives bitwise the original's results, and a TimeStepper run from it
is bitwise the run from the State that never left. A State of a System that differs (another topology,
another property value) is still refused, with the same message as before, and is left as it was.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from continuation_models import MODELS, pendulum, trajectory

from simtk import Stage

STAGES = [Stage.Model, Stage.Instance, Stage.Position, Stage.Acceleration, Stage.Report]


@pytest.mark.parametrize("stage", STAGES, ids=[s.name for s in STAGES])
@pytest.mark.parametrize("model", list(MODELS))
def test_a_state_pickled_alone_continues_bitwise_with_the_original_system(model, stage):
    system, state = MODELS[model]()
    system.realize(state, stage)
    back = pickle.loads(pickle.dumps(state))
    assert back.get_system() is not system
    system.realize(back, Stage.Acceleration)  # refused before: "this State belongs to <copy>, not to <system>"
    assert back.get_system() is system
    ref = state.copy()
    system.realize(ref, Stage.Acceleration)
    np.testing.assert_array_equal(back.get_y(), ref.get_y())
    np.testing.assert_array_equal(back.get_ydot(), ref.get_ydot())
    assert back.get_time() == ref.get_time()
    for fixed in (False, True):
        np.testing.assert_array_equal(trajectory(system, back.copy(), fixed), trajectory(system, state.copy(), fixed))


def test_a_rebound_state_keeps_its_stage_and_is_live_in_the_original_system():
    system, state = pendulum()
    system.realize(state, Stage.Velocity)
    back = pickle.loads(pickle.dumps(state))
    matter = system.get_matter_subsystem()
    # a subsystem's accessor takes it too, and the State is still realized to Velocity afterwards
    np.testing.assert_array_equal(matter.get_component("lower").get_body_velocity(back),
                                  matter.get_component("lower").get_body_velocity(state))
    assert back.get_system() is system and back.get_system_stage() == Stage.Velocity
    # a property change of the original System now reaches it, as it reaches the System's own States
    system.get_component("/forces/spring").set_property("stiffness", 25.0)
    assert back.get_system_stage() < Stage.Dynamics


def test_the_states_of_a_system_that_differs_are_still_refused_and_left_as_they_were():
    system, state = pendulum()
    system.realize(state, Stage.Velocity)
    other, _ = pendulum()
    other.get_component("/forces/spring").set_property("stiffness", 21.0)  # a parameter differs
    foreign = other.realize_topology()
    other.realize(foreign, Stage.Velocity)
    with pytest.raises(ValueError, match="belongs to"):
        system.realize(foreign, Stage.Acceleration)
    assert foreign.get_system() is other and foreign.get_system_stage() == Stage.Velocity

    back = pickle.loads(pickle.dumps(state))
    system.get_component("/forces/spring").set_property("stiffness", 30.0)  # the original changed after pickling
    with pytest.raises(ValueError, match="belongs to"):
        system.realize(back, Stage.Acceleration)
    assert back.get_system() is not system

    changed, s3 = pendulum()
    s4 = pickle.loads(pickle.dumps(s3))
    from simtk import Force
    Force.GlobalDamper(changed.get_component("/forces"), changed.get_matter_subsystem(), 0.1, name="damper")
    changed.realize_topology()
    with pytest.raises(ValueError, match="belongs to"):
        changed.realize(s4, Stage.Acceleration)


def test_copy_variables_from_takes_an_unpickled_state_of_a_copy():
    system, state = pendulum()
    system.realize(state, Stage.Acceleration)
    back = pickle.loads(pickle.dumps(state))
    target = system.realize_topology()
    target.copy_variables_from(back)
    np.testing.assert_array_equal(target.get_y(), state.get_y())
    assert target.get_time() == state.get_time()
