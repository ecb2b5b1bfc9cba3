"""Simbody's stage rules for writing cache entries and for stepping through time.

Laws: a cache entry may be written (``set_cache_entry``/``upd_cache_entry``) only once the stage
before its earliest stage is realized, as Simbody's ``updCacheEntry`` requires, and a refused
write leaves the entry and the State unchanged; a TimeStepper never steps backwards.
"""
import numpy as np
import pytest

from simtk import (
    RungeKuttaMersonIntegrator,
    Stage,
    StageTooLowError,
    Subsystem,
    System,
    TimeStepper,
)


class Entries(Subsystem):
    """``pos`` (earliest Position) and ``vel`` (earliest Velocity, an array), both filled in hooks."""

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [1.0])
        self.allocate_u(state, [2.0])
        self.pos = self.allocate_cache_entry(state, Stage.Position, Stage.Dynamics, np.nan)
        self.vel = self.allocate_cache_entry(state, Stage.Velocity, np.zeros(2))

    def realize_subsystem_velocity_impl(self, state):
        self.upd_cache_entry(state, self.vel)[:] = self.get_u(state)[0]


def make():
    system = System()
    sub = Entries(system, name="entries")
    return system, sub, system.realize_topology()


@pytest.mark.parametrize("writer", ["set", "upd"])
def test_cache_write_below_the_entrys_stage_is_refused_and_changes_nothing(writer):
    system, sub, state = make()
    system.realize(state, Stage.Time)  # Velocity's entry needs Position realized first
    before = sub.upd_cache_entry(state, sub.pos)
    with pytest.raises(StageTooLowError) as info:
        if writer == "set":
            sub.set_cache_entry(state, sub.vel, np.ones(2))
        else:
            sub.upd_cache_entry(state, sub.vel)
    text = str(info.value)
    assert "'entries'" in text and f"_cache_entry({sub.vel})" in text
    assert "needs stage Position" in text and "realized only to Time" in text
    assert state.get_system_stage() == Stage.Time
    assert sub.upd_cache_entry(state, sub.pos) is before
    system.realize(state, Stage.Position)  # one below earliest: now allowed
    sub.set_cache_entry(state, sub.vel, np.full(2, 3.0))
    np.testing.assert_array_equal(sub.upd_cache_entry(state, sub.vel), [3.0, 3.0])


def test_entry_written_in_its_own_stage_hook_is_allowed():
    system, sub, state = make()
    system.realize(state, Stage.Velocity)
    np.testing.assert_array_equal(sub.get_cache_entry(state, sub.vel), [2.0, 2.0])


@pytest.mark.parametrize("bad", [0.5, float("nan")])
def test_time_stepper_refuses_to_step_backwards(bad):
    system, sub, state = make()
    ts = TimeStepper(system, RungeKuttaMersonIntegrator(system))
    ts.initialize(state)
    ts.step_to(1.0)
    y = ts.get_state().get_y().copy()
    with pytest.raises(ValueError, match="before the current time"):
        ts.step_to(bad)
    assert ts.get_time() == 1.0 and np.array_equal(ts.get_state().get_y(), y)
    ts.step_to(1.0)  # the current time itself is a no-op, not an error
    assert ts.get_time() == 1.0


def test_time_stepper_step_by():
    system, sub, state = make()
    ts = TimeStepper(system, RungeKuttaMersonIntegrator(system))
    ts.initialize(state)
    ts.step_by(0.25)
    ts.step_by(0.25)
    assert ts.get_time() == 0.5
    with pytest.raises(ValueError, match=">= 0"):
        ts.step_by(-0.1)
    with pytest.raises(TypeError):
        ts.step_by("soon")
