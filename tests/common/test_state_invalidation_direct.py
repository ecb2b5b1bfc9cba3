"""Each kind of State change invalidates exactly its own stage, tested one change at a time.

Tests that change several variables at once let the lowest invalidation hide a missing higher one
(a discrete Instance variable that differs drops the State below Time whatever t does), so every
test here makes the two States differ in one variable only.
"""
import numpy as np
import pytest

from simtk import Stage, Subsystem, System


class TimeClock(Subsystem):
    """One q and one Time-stage cache entry holding a closed form of t, so a stale entry shows."""

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [1.0])
        self.at_time = self.allocate_cache_entry(state, Stage.Time, Stage.Time, None)
        self.time_hooks = 0

    def realize_subsystem_time_impl(self, state):
        self.time_hooks += 1
        self.set_cache_entry(state, self.at_time, 3.0 * state.get_time() + 1.0)


def _two_states():
    system = System("clock")
    sub = TimeClock(system)
    a, b = system.realize_topology(), system.realize_topology()
    return system, sub, a, b


@pytest.mark.parametrize("realized", [Stage.Time, Stage.Position, Stage.Report])
def test_copy_variables_from_a_time_only_difference_invalidates_time(realized):
    """Kills the mutation that drops ``self._invalidate(TIME)`` from ``copy_variables_from``: y is
    the same in both States, so the unconditional Position invalidation alone would leave the
    Time-stage cache of the old t in place and report the State realized to Time."""
    system, sub, a, b = _two_states()
    system.realize(a, realized)
    assert sub.get_cache_entry(a, sub.at_time) == 1.0
    b.set_time(2.0)
    np.testing.assert_array_equal(a.get_y(), b.get_y())  # only t differs
    mark = a.get_invalidation_mark()
    hooks = sub.time_hooks
    a.copy_variables_from(b)
    assert a.get_time() == 2.0
    assert a.get_lowest_stage_invalidated_since(mark) == Stage.Time
    assert a.get_system_stage() == Stage.Instance
    system.realize(a, Stage.Time)
    assert sub.time_hooks == hooks + 1
    assert sub.get_cache_entry(a, sub.at_time) == 3.0 * 2.0 + 1.0


def test_copy_variables_from_an_equal_time_keeps_time_realized():
    """The other half of the rule: an equal t is no change, so only Position is invalidated."""
    system, sub, a, b = _two_states()
    a.set_time(2.0)
    b.set_time(2.0)
    system.realize(a, Stage.Report)
    mark = a.get_invalidation_mark()
    a.copy_variables_from(b)
    assert a.get_lowest_stage_invalidated_since(mark) == Stage.Position
    assert a.get_system_stage() == Stage.Time
    assert sub.get_cache_entry(a, sub.at_time) == 7.0
