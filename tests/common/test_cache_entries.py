"""Cache entries (earliest/latest stages, marking, lazy evaluation) and auto-update discrete variables.

The rule checked (docs/api_contract.md, seed §2.5.2-2.5.3): an entry is valid at or past its latest stage, never below
its earliest (the framework also accepts it one below earliest, i.e. while earliest is being realized, if it
was marked then), and in between only if marked realized since a stage at or below earliest last changed.
"""
import numpy as np
import pytest

from simtk import CacheEntryOutOfDateError, Stage, StageTooLowError, Subsystem, System


class Entries(Subsystem):
    """One q, one u, one z, a Dynamics parameter and a Position parameter, and these entries:

    * ``late``   earliest Position, latest Dynamics: sum(q) * p, computed in the Dynamics hook, never marked;
    * ``early``  earliest Position, latest Dynamics: 2 * q, computed and marked in the Position hook;
    * ``vec``    earliest Velocity, latest Velocity: [u, u**2], an array, computed in the Velocity hook;
    * ``energy`` earliest Position, lazy: 0.5 * p * q**2 + t, computed on demand and counted.
    """

    def __init__(self, system, name=""):
        self.energy_computations = 0
        super().__init__(system, name=name)

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [1.0])
        self.allocate_u(state, [2.0])
        self.allocate_z(state, [3.0])
        self.p = self.allocate_discrete_variable(state, Stage.Position, 4.0)
        self.d = self.allocate_discrete_variable(state, Stage.Dynamics, 5.0)
        self.late = self.allocate_cache_entry(state, Stage.Position, Stage.Dynamics, np.nan)
        self.early = self.allocate_cache_entry(state, Stage.Position, Stage.Dynamics, np.nan)
        self.vec = self.allocate_cache_entry(state, Stage.Velocity, np.zeros(2))  # (state, stage, value) form
        self.energy = self.allocate_lazy_cache_entry(state, Stage.Position, np.nan)

    def realize_subsystem_position_impl(self, state):
        self.set_cache_entry(state, self.early, 2.0 * self.get_q(state)[0])
        self.mark_cache_value_realized(state, self.early)

    def realize_subsystem_velocity_impl(self, state):
        u = self.get_u(state)[0]
        self.upd_cache_entry(state, self.vec)[:] = [u, u * u]

    def realize_subsystem_dynamics_impl(self, state):
        self.set_cache_entry(state, self.late, self.get_q(state)[0] * self.get_discrete_variable(state, self.p))

    # the seed's realizeCE / getCE pattern
    def realize_energy(self, state):
        if self.is_cache_value_realized(state, self.energy):
            return
        q = self.get_q(state)[0]
        self.set_cache_entry(state, self.energy,
                             0.5 * self.get_discrete_variable(state, self.p) * q * q + state.get_time())
        self.energy_computations += 1
        self.mark_cache_value_realized(state, self.energy)

    def get_energy(self, state):
        self.realize_energy(state)
        return self.get_cache_entry(state, self.energy)


def make():
    system = System()
    sub = Entries(system, name="entries")
    return system, sub, system.realize_topology()


# ---------------------------------------------------------------------- earliest / latest
@pytest.mark.parametrize("stage, error", [
    (Stage.Model, StageTooLowError), (Stage.Instance, StageTooLowError),  # below earliest - 1
    (Stage.Time, CacheEntryOutOfDateError), (Stage.Position, CacheEntryOutOfDateError),
    (Stage.Velocity, CacheEntryOutOfDateError),
    (Stage.Dynamics, None), (Stage.Report, None),
])
def test_unmarked_entry_is_valid_only_from_its_latest_stage(stage, error):
    system, sub, state = make()
    system.realize(state, stage)
    assert sub.is_cache_value_realized(state, sub.late) == (error is None)
    if error is None:
        assert sub.get_cache_entry(state, sub.late) == 1.0 * 4.0
    else:
        with pytest.raises(error):
            sub.get_cache_entry(state, sub.late)


def test_stage_too_low_names_subsystem_entry_and_stages():
    system, sub, state = make()
    with pytest.raises(StageTooLowError) as info:
        sub.get_cache_entry(state, sub.late)
    text = str(info.value)
    assert "'entries'" in text and f"get_cache_entry({sub.late})" in text
    assert "Position" in text and "Model" in text


def test_unmarked_entry_goes_out_of_date_when_dropping_below_latest_even_if_its_inputs_are_unchanged():
    """Without a mark the framework cannot know the value survived; it only promises it at latest."""
    system, sub, state = make()
    system.realize(state, Stage.Report)
    state.set_u([9.0])  # above earliest: the value is still right, but nobody marked it
    with pytest.raises(CacheEntryOutOfDateError):
        sub.get_cache_entry(state, sub.late)


def test_marked_entry_survives_changes_above_earliest_and_dies_with_changes_at_or_below():
    system, sub, state = make()
    system.realize(state, Stage.Position)
    assert sub.get_cache_entry(state, sub.early) == 2.0
    system.realize(state, Stage.Report)
    state.set_u([9.0])
    sub.set_discrete_variable(state, sub.d, 6.0)
    state.set_z([1.0])
    assert state.get_system_stage() == Stage.Position
    assert sub.get_cache_entry(state, sub.early) == 2.0
    state.set_q([3.0])  # the entry's own stage
    with pytest.raises(CacheEntryOutOfDateError):
        sub.get_cache_entry(state, sub.early)
    system.realize(state, Stage.Position)
    assert sub.get_cache_entry(state, sub.early) == 6.0


@pytest.mark.parametrize("change", ["time", "position parameter", "instance"])
def test_changes_below_earliest_invalidate_a_marked_entry(change):
    system, sub, state = make()
    system.realize(state, Stage.Position)
    assert sub.is_cache_value_realized(state, sub.early)
    if change == "time":
        state.set_time(1.0)
    elif change == "position parameter":
        sub.set_discrete_variable(state, sub.p, 1.0)
    else:
        state.invalidate_all(Stage.Instance)
    assert not sub.is_cache_value_realized(state, sub.early)


def test_changing_q_while_already_below_position_still_invalidates():
    """The stage does not drop (it is already Time), but the entry's inputs changed."""
    system, sub, state = make()
    system.realize(state, Stage.Time)
    sub.set_cache_entry(state, sub.energy, 123.0)
    sub.mark_cache_value_realized(state, sub.energy)  # allowed at earliest - 1
    assert sub.get_cache_entry(state, sub.energy) == 123.0
    state.set_q([5.0])
    assert state.get_system_stage() == Stage.Time
    with pytest.raises(CacheEntryOutOfDateError):
        sub.get_cache_entry(state, sub.energy)


def test_marking_needs_the_stage_before_earliest():
    system, sub, state = make()
    system.realize(state, Stage.Instance)
    with pytest.raises(StageTooLowError):
        sub.mark_cache_value_realized(state, sub.energy)
    assert not sub.is_cache_value_realized(state, sub.energy)


def test_mark_not_realized():
    system, sub, state = make()
    system.realize(state, Stage.Velocity)
    assert sub.is_cache_value_realized(state, sub.early)
    sub.mark_cache_value_not_realized(state, sub.early)
    assert not sub.is_cache_value_realized(state, sub.early)
    system.realize(state, Stage.Dynamics)
    assert sub.is_cache_value_realized(state, sub.early)  # at latest: valid whatever the mark
    sub.mark_cache_value_not_realized(state, sub.early)
    assert sub.is_cache_value_realized(state, sub.early)


def test_set_and_upd_do_not_change_validity():
    system, sub, state = make()
    system.realize(state, Stage.Time)
    sub.set_cache_entry(state, sub.early, 11.0)
    assert not sub.is_cache_value_realized(state, sub.early)
    assert state.get_system_stage() == Stage.Time
    sub.mark_cache_value_realized(state, sub.early)
    sub.set_cache_entry(state, sub.early, 12.0)
    assert sub.get_cache_entry(state, sub.early) == 12.0


def test_array_entry_is_read_only_through_get_and_writable_through_upd():
    system, sub, state = make()
    system.realize(state, Stage.Velocity)
    v = sub.get_cache_entry(state, sub.vec)
    np.testing.assert_array_equal(v, [2.0, 4.0])
    assert v.flags.writeable is False
    with pytest.raises(ValueError):
        v[0] = 0.0
    w = sub.upd_cache_entry(state, sub.vec)
    assert w.flags.writeable and np.shares_memory(v, w)


@pytest.mark.parametrize("index", [99, -1, True, 1.0])
def test_bad_entry_index(index):
    system, sub, state = make()
    with pytest.raises(IndexError):
        sub.get_cache_entry(state, index)


def test_entries_belong_to_their_subsystem():
    system = System()
    a, b = Entries(system, "a"), Entries(system, "b")
    state = system.realize_topology()
    state.set_q([1.0, 3.0])
    system.realize(state, Stage.Dynamics)
    assert a.late == b.late  # same index, different subsystems
    assert a.get_cache_entry(state, a.late) == 4.0
    assert b.get_cache_entry(state, b.late) == 12.0
    assert (a.get_energy(state), b.get_energy(state)) == (2.0, 18.0)


# ---------------------------------------------------------------------- lazy entries
def test_lazy_entry_is_computed_once_per_change_of_its_inputs():
    """Law: a lazy entry is computed on first demand after its inputs change, and never again until they do."""
    system, sub, state = make()
    system.realize(state, Stage.Position)
    assert sub.get_energy(state) == 0.5 * 4.0 * 1.0 + 0.0
    assert sub.get_energy(state) == 2.0
    assert sub.energy_computations == 1
    # changes above its earliest stage (u, z, a Dynamics parameter) and realizing further: nothing recomputed
    state.set_u([7.0])
    state.set_z([8.0])
    sub.set_discrete_variable(state, sub.d, 0.5)
    system.realize(state, Stage.Report)
    assert sub.get_energy(state) == 2.0
    assert sub.energy_computations == 1
    # its own inputs: q, t, the Position parameter
    expected = 2.0
    for change in ("q", "t", "p"):
        if change == "q":
            state.set_q([2.0])
        elif change == "t":
            state.set_time(0.5)
        else:
            sub.set_discrete_variable(state, sub.p, 1.0)
        system.realize(state, Stage.Time)
        q, p, t = state.get_q()[0], sub.get_discrete_variable(state, sub.p), state.get_time()
        expected = 0.5 * p * q * q + t
        assert sub.get_energy(state) == expected
        assert sub.get_energy(state) == expected
    assert sub.energy_computations == 4


def test_lazy_entry_is_never_valid_by_stage_alone():
    system, sub, state = make()
    system.realize(state, Stage.Report)
    assert not sub.is_cache_value_realized(state, sub.energy)
    with pytest.raises(CacheEntryOutOfDateError):
        sub.get_cache_entry(state, sub.energy)


def test_lazy_entry_below_earliest_cannot_be_computed():
    system, sub, state = make()
    system.realize(state, Stage.Report)
    state.set_time(1.0)  # drops to Instance: t is an input, and Time is not realized
    with pytest.raises(StageTooLowError):
        sub.get_energy(state)


# ---------------------------------------------------------------------- auto-update discrete variables
class Counter(Subsystem):
    """Counts steps in an auto-update discrete variable: its update value is count + 1 (seed's 'memory')."""

    def __init__(self, system, n=1):
        self.n = n
        super().__init__(system)

    def realize_subsystem_topology_impl(self, state):
        self.allocate_z(state, [0.0])
        self.counts = [self.allocate_auto_update_discrete_variable(state, Stage.Dynamics, 10 * k, Stage.Dynamics)
                       for k in range(self.n)]
        self.plain = self.allocate_discrete_variable(state, Stage.Report, 0)

    def realize_subsystem_dynamics_impl(self, state):
        for i in self.counts:
            self.set_discrete_var_update_value(state, i, self.get_discrete_variable(state, i) + 1)


def test_auto_update_swaps_in_the_update_value_and_invalidates():
    system = System()
    sub = Counter(system)
    state = system.realize_topology()
    i = sub.counts[0]
    assert not sub.is_discrete_var_update_value_realized(state, i)
    with pytest.raises(StageTooLowError):
        sub.get_discrete_var_update_value(state, i)
    system.realize(state, Stage.Dynamics)
    assert sub.get_discrete_var_update_value(state, i) == 1
    assert sub.get_discrete_variable(state, i) == 0  # realization does not change variables
    state.auto_update_discrete_variables()
    assert sub.get_discrete_variable(state, i) == 1
    assert state.get_system_stage() == Stage.Velocity
    assert not sub.is_discrete_var_update_value_realized(state, i)
    for step in range(2, 5):
        system.realize(state, Stage.Dynamics)
        state.auto_update_discrete_variables()
        assert sub.get_discrete_variable(state, i) == step


def test_auto_update_skips_an_out_of_date_update_value():
    system = System()
    sub = Counter(system)
    state = system.realize_topology()
    system.realize(state, Stage.Dynamics)
    state.set_z([1.0])  # the update value depends on Dynamics: now stale
    state.auto_update_discrete_variables()
    assert sub.get_discrete_variable(state, sub.counts[0]) == 0


def test_update_value_api_refuses_plain_variables():
    system = System()
    sub = Counter(system)
    state = system.realize_topology()
    for f in (sub.get_discrete_var_update_value, sub.is_discrete_var_update_value_realized,
              sub.mark_discrete_var_update_value_realized, sub.upd_discrete_var_update_value):
        with pytest.raises(ValueError):
            f(state, sub.plain)
    assert sub.get_discrete_var_update_index(state, sub.plain) == -1


def test_update_value_keeps_the_variables_kind():
    system = System()
    sub = Counter(system)
    state = system.realize_topology()
    system.realize(state, Stage.Dynamics)
    with pytest.raises(TypeError):
        sub.set_discrete_var_update_value(state, sub.counts[0], 1.5)


def test_auto_update_swaps_every_current_update_value():
    """Law: every auto-update variable whose update value is current at the call advances, whatever the order
    (regression: the first swap's invalidation used to make the second update value look stale)."""
    system = System()
    sub = Counter(system, n=2)
    state = system.realize_topology()
    system.realize(state, Stage.Dynamics)
    assert all(sub.is_discrete_var_update_value_realized(state, i) for i in sub.counts)
    state.auto_update_discrete_variables()
    assert [sub.get_discrete_variable(state, i) for i in sub.counts] == [1, 11]


def test_auto_update_invalidates_the_lowest_stage_of_the_swapped_variables():
    class Two(Subsystem):
        def realize_subsystem_topology_impl(self, state):
            self.slow = self.allocate_auto_update_discrete_variable(state, Stage.Dynamics, 0.0, Stage.Velocity)
            self.fast = self.allocate_auto_update_discrete_variable(state, Stage.Velocity, 0.0, Stage.Velocity)

        def realize_subsystem_velocity_impl(self, state):
            for i in (self.slow, self.fast):
                self.set_discrete_var_update_value(state, i, self.get_discrete_variable(state, i) + 0.5)

    system = System()
    sub = Two(system)
    state = system.realize_topology()
    system.realize(state, Stage.Report)
    state.auto_update_discrete_variables()
    assert state.get_system_stage() == Stage.Position
    assert (sub.get_discrete_variable(state, sub.slow), sub.get_discrete_variable(state, sub.fast)) == (0.5, 0.5)
    mark = state.get_invalidation_mark()
    state.auto_update_discrete_variables()  # nothing current: nothing swapped, nothing invalidated
    assert state.get_lowest_stage_invalidated_since(mark) == Stage.Infinity
    assert sub.get_discrete_variable(state, sub.slow) == 0.5
