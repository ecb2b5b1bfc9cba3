"""Event handlers that return what is not a time or a number are named in the error (issue 28):
a scheduled handler's NaN next time, a triggered witness's NaN or non-number."""
from __future__ import annotations

import math

import pytest

from simtk import (
    Body,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.common.events import ScheduledEventHandler, TriggeredEventHandler
from simtk.math import IntegratorError, RungeKuttaMersonIntegrator, TimeStepper


def pendulum():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                      Transform([0, 1, 0]))
    return system


class NaNSchedule(ScheduledEventHandler):
    def __init__(self, value):
        self.value = value

    def get_next_event_time(self, state, include_current_time):
        return self.value

    def handle_event(self, state, accuracy):
        return False


class BadWitness(TriggeredEventHandler):
    def __init__(self, value):
        super().__init__(Stage.Time)
        self.value = value

    def get_value(self, state):
        return self.value

    def handle_event(self, state, accuracy):
        return False


@pytest.mark.parametrize("value, error", [(math.nan, ValueError), ("soon", TypeError)])
def test_a_scheduled_handler_returning_nan_is_named(value, error):
    system = pendulum()
    system.add_event_handler(NaNSchedule(value))
    ts = TimeStepper(system, RungeKuttaMersonIntegrator(system))
    with pytest.raises(error) as info:
        ts.initialize(system.realize_topology())
    text = str(info.value)
    assert "NaNSchedule '/na_n_schedule'" in text and "get_next_event_time" in text


@pytest.mark.parametrize("value, shown", [(math.nan, "nan"), (None, "None"), ("x", "'x'")])
def test_a_witness_returning_a_non_number_is_named(value, shown):
    system = pendulum()
    system.add_event_handler(BadWitness(value), )
    ts = TimeStepper(system, RungeKuttaMersonIntegrator(system))
    with pytest.raises(IntegratorError) as info:
        ts.initialize(system.realize_topology())
        ts.step_to(0.1)
    text = str(info.value)
    assert "BadWitness '/bad_witness'" in text and f"returned {shown}" in text and "finite number" in text
