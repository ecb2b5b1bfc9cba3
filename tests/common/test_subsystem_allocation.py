"""Allocation in the stages Simbody allows, the Model-stage story, and realization stage by stage."""
import numpy as np
import pytest

from simtk import Stage, StageOutOfRangeError, StageTooLowError, Subsystem, System

HOOKS = {
    Stage.Topology: "realize_subsystem_topology_impl",
    Stage.Model: "realize_subsystem_model_impl",
    Stage.Instance: "realize_subsystem_instance_impl",
    Stage.Time: "realize_subsystem_time_impl",
    Stage.Position: "realize_subsystem_position_impl",
    Stage.Velocity: "realize_subsystem_velocity_impl",
    Stage.Dynamics: "realize_subsystem_dynamics_impl",
    Stage.Acceleration: "realize_subsystem_acceleration_impl",
    Stage.Report: "realize_subsystem_report_impl",
}
RUNTIME = [Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics, Stage.Acceleration, Stage.Report]


class Recorder(Subsystem):
    """Logs (stage, name, stage seen by itself, stages seen of every subsystem) at every hook call."""

    def __init__(self, system, log, name):
        self.log = log
        super().__init__(system, name=name)

    def _note(self, stage, state):
        seen = [state.get_subsystem_stage(i) for i in range(state.get_num_subsystems())]
        self.log.append((stage, self.get_name(), self.get_stage(state), seen))


for _g, _hook in HOOKS.items():
    setattr(Recorder, _hook, (lambda g: lambda self, state: self._note(g, state))(_g))


class Hookless(Subsystem):
    """Keeps every hook of the base class: realizing it only advances its stage."""

    def realize_subsystem_topology_impl(self, state):  # noqa: D102 - needs one q to be laid out
        self.allocate_q(state, [0.0])


# ---------------------------------------------------------------------- which stage may allocate what
def _alloc_q(sub, s):
    sub.allocate_q(s, [1.0])


def _alloc_u(sub, s):
    sub.allocate_u(s, [1.0])


def _alloc_z(sub, s):
    sub.allocate_z(s, [1.0])


def _alloc_discrete(sub, s):
    sub.allocate_discrete_variable(s, Stage.Report, 1.0)


def _alloc_auto_update(sub, s):
    sub.allocate_auto_update_discrete_variable(s, Stage.Report, 1.0, Stage.Report)


def _alloc_cache(sub, s):
    sub.allocate_cache_entry(s, Stage.Report, Stage.Infinity, 0.0)


def _alloc_lazy(sub, s):
    sub.allocate_lazy_cache_entry(s, Stage.Report, 0.0)


def _alloc_qerr(sub, s):
    sub.allocate_q_err(s, 1)


def _alloc_uerr(sub, s):
    sub.allocate_u_err(s, 1)


def _alloc_udoterr(sub, s):
    sub.allocate_udot_err(s, 1)


def _alloc_triggers(sub, s):
    sub.allocate_event_triggers(s, Stage.Acceleration, 1)


# Simbody's table (seed §2.4-2.5; Subsystem docstring): the last stage whose realization may allocate.
LAST_ALLOWED = {
    _alloc_q: Stage.Model, _alloc_u: Stage.Model, _alloc_z: Stage.Model,
    _alloc_discrete: Stage.Model, _alloc_auto_update: Stage.Model,
    _alloc_cache: Stage.Instance, _alloc_lazy: Stage.Instance,
    _alloc_qerr: Stage.Instance, _alloc_uerr: Stage.Instance, _alloc_udoterr: Stage.Instance,
    _alloc_triggers: Stage.Instance,
}


class AllocatesAt(Subsystem):
    def __init__(self, system, when, how):
        self.when, self.how, self.calls = when, how, 0
        super().__init__(system)

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [0.5])  # so that y is never empty
        self._maybe(Stage.Topology, state)


for _g, _hook in HOOKS.items():
    if _g is not Stage.Topology:
        setattr(AllocatesAt, _hook, (lambda g: lambda self, state: self._maybe(g, state))(_g))


def _maybe(self, g, state):
    if g == self.when:
        self.calls += 1
        self.how(self, state)


AllocatesAt._maybe = _maybe


@pytest.mark.parametrize("how", list(LAST_ALLOWED), ids=lambda f: f.__name__[7:])
@pytest.mark.parametrize("when", list(HOOKS), ids=str)
def test_allocation_allowed_only_in_simbodys_stages(how, when):
    system = System()
    sub = AllocatesAt(system, when, how)
    allowed = when <= LAST_ALLOWED[how]
    if when <= Stage.Model:
        if allowed:
            system.realize_topology()
        else:
            with pytest.raises(StageOutOfRangeError):
                system.realize_topology()
        return
    state = system.realize_topology()
    state.set_time(0.25)
    system.realize(state, when.prev())
    y, t = state.get_y().copy(), state.get_time()
    if allowed:
        system.realize(state, when)
        assert state.get_system_stage() == when
        return
    with pytest.raises(StageOutOfRangeError, match="already realized to " + when.prev().name):
        system.realize(state, when)
    assert sub.calls == 1
    assert state.get_system_stage() == when.prev()
    np.testing.assert_array_equal(state.get_y(), y)
    assert state.get_time() == t


def test_allocate_q_from_position_hook_raises_and_leaves_state_unchanged():
    system = System()
    sub = AllocatesAt(system, Stage.Position, _alloc_q)
    state = system.realize_topology()
    system.realize(state, Stage.Time)
    before = state.get_y().copy()
    with pytest.raises(StageOutOfRangeError) as info:
        system.realize(state, Stage.Position)
    assert "allocate_q" in str(info.value)
    assert any("Position" in note for note in getattr(info.value, "__notes__", []))
    assert state.get_system_stage() == Stage.Time
    np.testing.assert_array_equal(state.get_y(), before)
    assert state.get_nq() == 1
    sub.when = None
    system.realize(state, Stage.Report)
    assert state.get_nq() == 1


class BadCache(Subsystem):
    def __init__(self, system, earliest, latest, when=Stage.Instance):
        self.earliest, self.latest, self.when = earliest, latest, when
        super().__init__(system)

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [2.0])

    def realize_subsystem_instance_impl(self, state):
        self.allocate_cache_entry(state, self.earliest, self.latest, 0.0)


@pytest.mark.parametrize("earliest, latest, match", [
    (Stage.Dynamics, Stage.Position, "below earliest"),
    (Stage.Model, Stage.Report, "below the stage being realized"),
])
def test_bad_cache_stages_raise_and_allocate_nothing(earliest, latest, match):
    system = System()
    sub = BadCache(system, earliest, latest)
    state = system.realize_topology()
    with pytest.raises(StageOutOfRangeError, match=match):
        system.realize(state, Stage.Instance)
    assert state.get_system_stage() == Stage.Model
    np.testing.assert_array_equal(state.get_y(), [2.0])
    with pytest.raises(IndexError):
        sub.get_cache_entry(state, 0)


class DiscreteAt(Subsystem):
    def __init__(self, system, invalidates, model=False):
        self.invalidates, self.model = invalidates, model
        super().__init__(system)

    def realize_subsystem_topology_impl(self, state):
        if not self.model:
            self.allocate_discrete_variable(state, self.invalidates, 0)

    def realize_subsystem_model_impl(self, state):
        if self.model:
            self.allocate_discrete_variable(state, self.invalidates, 0)


@pytest.mark.parametrize("invalidates, model", [
    (Stage.Topology, False), (Stage.Infinity, False), (Stage.Empty, False), (Stage.Model, True),
])
def test_discrete_variable_must_invalidate_a_later_stage_up_to_report(invalidates, model):
    system = System()
    DiscreteAt(system, invalidates, model)
    with pytest.raises(StageOutOfRangeError):
        system.realize_topology()


@pytest.mark.parametrize("invalidates, model", [(Stage.Model, False), (Stage.Report, False), (Stage.Instance, True)])
def test_discrete_variable_valid_invalidation_stages(invalidates, model):
    system = System()
    sub = DiscreteAt(system, invalidates, model)
    state = system.realize_topology()
    assert sub.get_discrete_variable_invalidated_stage(state, 0) == invalidates


def test_auto_update_dependency_may_not_precede_allocation():
    class Early(Subsystem):
        def realize_subsystem_model_impl(self, state):
            self.allocate_auto_update_discrete_variable(state, Stage.Dynamics, 0.0, Stage.Topology)

    system = System()
    Early(system)
    with pytest.raises(StageOutOfRangeError):
        system.realize_topology()


@pytest.mark.parametrize("init, exc", [([np.nan], ValueError), ([[1.0, 2.0]], ValueError), (["x"], ValueError)])
def test_allocate_q_checks_initial_values(init, exc):
    class Bad(Subsystem):
        def realize_subsystem_topology_impl(self, state):
            self.allocate_q(state, init)

    system = System()
    Bad(system)
    with pytest.raises(exc):
        system.realize_topology()


@pytest.mark.parametrize("n", [-1, 1.5, True])
def test_allocate_error_slots_checks_the_count(n):
    class Bad(Subsystem):
        def realize_subsystem_instance_impl(self, state):
            self.allocate_q_err(state, n)

    system = System()
    Bad(system)
    state = system.realize_topology()
    with pytest.raises(ValueError):
        system.realize(state, Stage.Instance)


# ---------------------------------------------------------------------- the Model-stage story (seed §1.3)
class Orientation(Subsystem):
    """Like Simbody's set_use_euler_angles: a Topology-allocated flag that invalidates Model decides how
    many q the Model hook allocates (3 Euler angles or 4 quaternion components).

    The Model-stage index is kept in a cache entry of the State, never on the subsystem (seed §2.4).
    """

    def __init__(self, system):
        self.model_calls = self.topology_calls = 0
        super().__init__(system, name="orientation")

    def realize_subsystem_topology_impl(self, state):
        self.topology_calls += 1
        self.use_euler = self.allocate_discrete_variable(state, Stage.Model, False)
        self.layout = self.allocate_cache_entry(state, Stage.Model, Stage.Model, None)

    def realize_subsystem_model_impl(self, state):
        self.model_calls += 1
        if self.get_discrete_variable(state, self.use_euler):
            qx = self.allocate_q(state, [0.1, 0.2, 0.3])
        else:
            qx = self.allocate_q(state, [1.0, 0.0, 0.0, 0.0])
        self.allocate_u(state, np.zeros(3))
        self.set_cache_entry(state, self.layout, {"qx": qx, "nq": 3 if self.get_discrete_variable(
            state, self.use_euler) else 4})

    def set_use_euler_angles(self, state, flag):
        self.set_discrete_variable(state, self.use_euler, flag)


def make_orientation_system():
    system = System("orientation")
    Hookless(system, name="first")
    sub = Orientation(system)
    return system, sub, system.realize_topology()


def test_model_variable_changes_the_number_of_q():
    system, sub, state = make_orientation_system()
    assert state.get_nq() == 5 and sub.get_q_start(state) == 1
    np.testing.assert_array_equal(sub.get_q(state), [1, 0, 0, 0])
    system.realize(state, Stage.Report)
    sub.set_use_euler_angles(state, True)
    assert state.get_system_stage() == Stage.Topology
    with pytest.raises(StageTooLowError):
        state.get_q()
    system.realize(state, Stage.Model)
    assert state.get_nq() == 4 and state.get_nu() == 3
    np.testing.assert_array_equal(sub.get_q(state), [0.1, 0.2, 0.3])
    assert sub.get_cache_entry(state, sub.layout) == {"qx": 0, "nq": 3}
    assert sub.topology_calls == 1 and sub.model_calls == 2
    system.realize(state, Stage.Report)
    sub.set_use_euler_angles(state, False)
    system.realize(state, Stage.Model)
    assert state.get_nq() == 5 and sub.model_calls == 3


def test_copy_keeps_its_own_layout():
    system, sub, state = make_orientation_system()
    copy = state.copy()
    sub.set_use_euler_angles(state, True)
    system.realize(state, Stage.Report)
    assert state.get_nq() == 4
    assert copy.get_nq() == 5 and copy.get_system_stage() == Stage.Model
    assert sub.get_discrete_variable(copy, sub.use_euler) is False
    system.realize(copy, Stage.Report)
    assert copy.get_nq() == 5
    np.testing.assert_array_equal(sub.get_q(copy), [1, 0, 0, 0])
    assert system.realize_topology().get_nq() == 5  # the default State is untouched


def test_wrong_kind_for_a_model_variable_is_refused_and_keeps_the_layout():
    system, sub, state = make_orientation_system()
    system.realize(state, Stage.Report)
    with pytest.raises(TypeError):
        sub.set_use_euler_angles(state, 1)
    assert state.get_system_stage() == Stage.Report and state.get_nq() == 5


class InstanceAllocator(Subsystem):
    fail = False

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [1.0])
        self.k = self.allocate_discrete_variable(state, Stage.Instance, 1.0)
        self.where = self.allocate_cache_entry(state, Stage.Instance, Stage.Instance, None)

    def realize_subsystem_instance_impl(self, state):
        start = self.allocate_q_err(state, 2)
        ce = self.allocate_cache_entry(state, Stage.Position, Stage.Position, 0.0)
        self.set_cache_entry(state, self.where, (start, ce))
        if self.fail:
            raise RuntimeError("instance hook failed")


def test_instance_allocations_are_made_anew_each_realization():
    system = System()
    sub = InstanceAllocator(system)
    state = system.realize_topology()
    system.realize(state, Stage.Report)
    first = sub.get_cache_entry(state, sub.where)
    for k in (2.0, 3.0, 4.0):
        sub.set_discrete_variable(state, sub.k, k)
        assert state.get_system_stage() == Stage.Model
        system.realize(state, Stage.Report)
        assert state.get_nq_err() == 2
        assert sub.get_cache_entry(state, sub.where) == first
    with pytest.raises(IndexError):
        sub.get_cache_entry(state, first[1] + 1)


# ---------------------------------------------------------------------- realization: once per stage, in order
def make_recorded(n=3):
    log = []
    system = System("recorded")
    subs = [Recorder(system, log, f"r{i}") for i in range(n)]
    Hookless(system, name="hookless")
    return system, subs, log


def test_realize_topology_runs_topology_and_model_hooks_once():
    system, subs, log = make_recorded()
    state = system.realize_topology()
    assert [(g, name) for g, name, _, _ in log] == [(g, f"r{i}") for g in (Stage.Topology, Stage.Model)
                                                    for i in range(3)]
    system.realize_topology()
    system.get_default_state()
    assert len(log) == 6
    assert [system.get_num_realizations_of_this_stage(g) for g in (Stage.Topology, Stage.Model)] == [1, 1]
    assert state.get_system_stage() == Stage.Model


def test_realize_steps_one_stage_at_a_time_calling_each_hook_once():
    system, subs, log = make_recorded()
    state = system.realize_topology()
    del log[:]
    system.realize(state, Stage.Report)
    expected = [(g, f"r{i}") for g in list(HOOKS)[2:] for i in range(3)]
    assert [(g, name) for g, name, _, _ in log] == expected
    system.realize(state, Stage.Report)
    system.realize(state, Stage.Velocity)
    assert len(log) == len(expected)
    for g in list(HOOKS)[2:]:
        assert system.get_num_realizations_of_this_stage(g) == 1
    assert state.get_subsystem_stage(3) == Stage.Report


def test_realize_after_change_reruns_only_the_invalidated_stages():
    system, subs, log = make_recorded()
    state = system.realize_topology()
    system.realize(state, Stage.Report)
    del log[:]
    state.set_u(np.zeros(state.get_nu()))
    system.realize(state, Stage.Acceleration)
    assert [g for g, *_ in log] == [Stage.Velocity] * 3 + [Stage.Dynamics] * 3 + [Stage.Acceleration] * 3
    assert system.get_num_realizations_of_this_stage(Stage.Velocity) == 2
    assert system.get_num_realizations_of_this_stage(Stage.Report) == 1
    assert system.get_num_realizations_of_this_stage(Stage.Position) == 1


def test_counters_count_realizations_in_every_state():
    system, subs, log = make_recorded()
    a, b = system.realize_topology(), system.realize_topology()
    system.realize(a, Stage.Position)
    system.realize(b, Stage.Time)
    assert system.get_num_realizations_of_this_stage(Stage.Time) == 2
    assert system.get_num_realizations_of_this_stage(Stage.Position) == 1


def test_what_each_hook_sees():
    """In runtime stages a hook sees itself one below, earlier subsystems already advanced, later ones not;
    in allocating stages every subsystem stays one below until the layout exists."""
    system, subs, log = make_recorded()
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    for g, name, own, seen in log:
        assert own == g - 1
        if g <= Stage.Instance:
            assert seen == [g - 1] * 4
    del log[:]
    system.realize(state, Stage.Position)
    for g, name, own, seen in log:
        i = int(name[1])
        assert own == g - 1
        assert seen == [g] * i + [g - 1] * (4 - i)


def test_realize_to_a_lower_stage_is_a_no_op_and_past_report_is_refused():
    system, subs, log = make_recorded()
    state = system.realize_topology()
    system.realize(state, Stage.Dynamics)
    n = len(log)
    system.realize(state, Stage.Instance)
    system.realize_model(state)
    assert len(log) == n and state.get_system_stage() == Stage.Dynamics
    with pytest.raises(StageOutOfRangeError):
        system.realize(state, Stage.Infinity)
    assert state.get_system_stage() == Stage.Dynamics


class FailsOnce(Subsystem):
    def __init__(self, system, name):
        self.calls, self.fail = 0, False
        super().__init__(system, name=name)

    def realize_subsystem_position_impl(self, state):
        self.calls += 1
        if self.fail:
            raise ZeroDivisionError("bad position")


def test_failing_hook_leaves_the_whole_state_below_its_stage_and_a_retry_redoes_it():
    """Law (System.realize): if a hook raises, every subsystem is left below that stage (earlier ones may
    have written shared results), so realizing again runs the whole stage once more, from its start."""
    system = System()
    a, b = FailsOnce(system, "a"), FailsOnce(system, "b")
    Hookless(system)
    state = system.realize_topology()
    system.realize(state, Stage.Time)
    b.fail = True
    with pytest.raises(ZeroDivisionError) as info:
        system.realize(state, Stage.Position)
    assert any("'b'" in n and "Position" in n for n in info.value.__notes__)
    assert state.get_system_stage() == Stage.Time
    assert [state.get_subsystem_stage(i) for i in range(3)] == [Stage.Time] * 3
    assert system.get_num_realizations_of_this_stage(Stage.Position) == 0
    b.fail = False
    system.realize(state, Stage.Position)
    assert (a.calls, b.calls) == (2, 2)
    assert state.get_system_stage() == Stage.Position
    assert system.get_num_realizations_of_this_stage(Stage.Position) == 1
    system.realize(state, Stage.Position)
    assert (a.calls, b.calls) == (2, 2)


class LeakyModel(Subsystem):
    """Allocates in its Model (or Instance) hook and then fails while ``fail`` is set."""

    def __init__(self, system, stage):
        self.stage, self.fail = stage, False
        super().__init__(system)

    def realize_subsystem_topology_impl(self, state):
        self.n = self.allocate_discrete_variable(state, self.stage, 2)

    def realize_subsystem_model_impl(self, state):
        if self.stage == Stage.Model:
            self.allocate_q(state, np.zeros(self.get_discrete_variable(state, self.n)))
            if self.fail:
                raise RuntimeError("model hook failed")
        else:
            self.allocate_q(state, [0.0])

    def realize_subsystem_instance_impl(self, state):
        if self.stage == Stage.Instance:
            self.allocate_q_err(state, self.get_discrete_variable(state, self.n))
            if self.fail:
                raise RuntimeError("instance hook failed")


@pytest.mark.parametrize("stage", [Stage.Model, Stage.Instance])
def test_failed_allocating_stage_leaves_no_allocations_behind(stage):
    """Law: a hook that raises while Model (Instance) is realized leaves no allocation behind, so realizing
    again allocates each block once (regression: the hooks before it used to allocate twice)."""
    system = System()
    sub = LeakyModel(system, stage)
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    sub.fail = True
    sub.set_discrete_variable(state, sub.n, 3)
    with pytest.raises(RuntimeError):
        system.realize(state, Stage.Instance)
    assert state.get_system_stage() == stage.prev()
    sub.fail = False
    system.realize(state, Stage.Instance)
    if stage == Stage.Model:
        assert state.get_nq() == 3
    else:
        assert state.get_nq_err() == 3


# ---------------------------------------------------------------------- event-trigger slots
def test_event_trigger_slots_by_stage():
    class Triggers(Subsystem):
        def realize_subsystem_topology_impl(self, state):
            self.allocate_q(state, [0.25, 0.5])

        def realize_subsystem_instance_impl(self, state):
            self.a = self.allocate_event_triggers(state, Stage.Position, 2)
            self.b = self.allocate_event_triggers(state, Stage.Position, 1)

        def realize_subsystem_position_impl(self, state):
            q = self.get_q(state)
            self.upd_event_triggers_by_stage(state, Stage.Position)[:] = [q[0] - 1, q[1] - 1, q.sum()]

    system = System()
    sub = Triggers(system)
    state = system.realize_topology()
    system.realize(state, Stage.Time)
    assert (sub.a, sub.b) == (0, 2)
    with pytest.raises(StageTooLowError):
        sub.get_event_triggers_by_stage(state, Stage.Position)
    system.realize(state, Stage.Position)
    v = sub.get_event_triggers_by_stage(state, Stage.Position)
    np.testing.assert_array_equal(v, [-0.75, -0.5, 0.75])
    assert v.flags.writeable is False
    with pytest.raises(ValueError):
        sub.allocate_event_triggers(state, Stage.Model, 1)


# ---------------------------------------------------------------------- adoption
def test_adoption_and_identity():
    system = System("s")
    lone = Hookless()
    with pytest.raises(RuntimeError):
        lone.get_system()
    with pytest.raises(RuntimeError):
        System("empty").realize_topology()
    assert system.adopt_subsystem(lone) == 0
    other = Hookless(system, name="two", version="1.0")
    assert other.get_my_subsystem_index() == 1 and other.get_version() == "1.0"
    assert system.get_num_subsystems() == 2 and system.get_subsystem(1) is other
    assert lone.get_system() is system and lone.get_name() == "Hookless"
    with pytest.raises(ValueError):
        System().adopt_subsystem(lone)
    with pytest.raises(TypeError):
        system.adopt_subsystem(object())


def test_get_num_discrete_variables_counts_what_was_allocated():
    class Three(Subsystem):
        def realize_subsystem_topology_impl(self, state):
            for v in (1.0, np.zeros(2), "mode"):
                self.allocate_discrete_variable(state, Stage.Instance, v)

    system = System()
    sub, none = Three(system), Subsystem(system)
    state = system.realize_topology()
    assert sub.get_num_discrete_variables(state) == 3 and none.get_num_discrete_variables(state) == 0
    sub.get_discrete_variable(state, 2)  # the last index the count allows
    with pytest.raises(IndexError):
        sub.get_discrete_variable(state, sub.get_num_discrete_variables(state))
