"""State.copy() (Simbody's semantics) and the topology version stamp that refuses stale States."""
import copy as pycopy

import numpy as np
import pytest

from simtk import Stage, StageTooLowError, State, Subsystem, System, TopologyVersionError


class Kept(Subsystem):
    """Variables of every kind and one cache entry per construction and runtime stage.

    Hooks count their calls; each entry holds a closed form of the variables of its stage and below.
    """

    def __init__(self, system, name="kept"):
        self.calls = {g: 0 for g in Stage}
        super().__init__(system, name=name)

    def _count(self, g):
        self.calls[g] += 1

    def realize_subsystem_topology_impl(self, state):
        self._count(Stage.Topology)
        self.allocate_q(state, [1.0, 2.0])
        self.allocate_u(state, [3.0])
        self.allocate_z(state, [4.0])
        self.k = self.allocate_discrete_variable(state, Stage.Instance, 2.0)
        self.arr = self.allocate_discrete_variable(state, Stage.Position, np.array([1.0, 1.0]))
        self.items = self.allocate_discrete_variable(state, Stage.Report, ["a"])
        self.topo = self.allocate_cache_entry(state, Stage.Topology, Stage.Topology, {"owner": self})
        self.inst = self.allocate_cache_entry(state, Stage.Instance, Stage.Instance, None)
        self.pos = self.allocate_cache_entry(state, Stage.Position, Stage.Position, None)
        self.lazy_inst = self.allocate_lazy_cache_entry(state, Stage.Instance, None)

    def realize_subsystem_model_impl(self, state):
        self._count(Stage.Model)

    def realize_subsystem_instance_impl(self, state):
        self._count(Stage.Instance)
        self.allocate_q_err(state, 1)
        self.set_cache_entry(state, self.inst, 10.0 * self.get_discrete_variable(state, self.k))

    def realize_subsystem_time_impl(self, state):
        self._count(Stage.Time)

    def realize_subsystem_position_impl(self, state):
        self._count(Stage.Position)
        q = self.get_q(state)
        self.set_cache_entry(state, self.pos, float(q @ self.get_discrete_variable(state, self.arr)))
        self.upd_q_err(state)[0] = q[0] - q[1]

    def realize_subsystem_velocity_impl(self, state):
        self._count(Stage.Velocity)
        self.upd_qdot(state)[:] = self.get_u(state)[0]

    def realize_subsystem_dynamics_impl(self, state):
        self._count(Stage.Dynamics)

    def realize_subsystem_acceleration_impl(self, state):
        self._count(Stage.Acceleration)
        self.upd_udot(state)[:] = -self.get_q(state)[0]
        self.upd_zdot(state)[:] = self.get_u(state)[0]

    def realize_subsystem_report_impl(self, state):
        self._count(Stage.Report)


def make():
    system = System("copy")
    sub = Kept(system)
    return system, sub, system.realize_topology()


# ---------------------------------------------------------------------- copy
@pytest.mark.parametrize("realized, expected", [
    (Stage.Model, Stage.Model), (Stage.Instance, Stage.Instance), (Stage.Time, Stage.Instance),
    (Stage.Position, Stage.Instance), (Stage.Report, Stage.Instance),
])
def test_copy_is_realized_at_most_to_instance(realized, expected):
    system, sub, state = make()
    system.realize(state, realized)
    c = state.copy()
    assert c.get_system_stage() == expected
    assert state.get_system_stage() == realized


def test_copy_keeps_variables_and_instance_cache_but_not_runtime_cache():
    system, sub, state = make()
    state.set_time(1.5)
    state.set_q([5.0, 6.0])
    sub.set_discrete_variable(state, sub.k, 3.0)
    system.realize(state, Stage.Report)
    system_inst = system.get_num_realizations_of_this_stage(Stage.Instance)
    sub.set_cache_entry(state, sub.lazy_inst, "lazy")
    sub.mark_cache_value_realized(state, sub.lazy_inst)
    c = state.copy()
    assert c.get_time() == 1.5
    np.testing.assert_array_equal(c.get_y(), state.get_y())
    assert sub.get_discrete_variable(c, sub.k) == 3.0
    assert sub.get_cache_entry(c, sub.inst) == 30.0
    assert sub.get_cache_entry(c, sub.lazy_inst) == "lazy"
    assert not sub.is_cache_value_realized(c, sub.pos)
    with pytest.raises(StageTooLowError):
        sub.get_cache_entry(c, sub.pos)
    # realizing the copy recomputes only Time and above, with the same results as the original
    before = dict(sub.calls)
    system.realize(c, Stage.Report)
    assert system.get_num_realizations_of_this_stage(Stage.Instance) == system_inst
    assert sub.calls[Stage.Instance] == before[Stage.Instance]
    assert all(sub.calls[g] == before[g] + 1 for g in Stage if Stage.Time <= g <= Stage.Report)
    assert sub.get_cache_entry(c, sub.pos) == sub.get_cache_entry(state, sub.pos) == 11.0
    np.testing.assert_array_equal(c.get_ydot(), state.get_ydot())
    np.testing.assert_array_equal(c.get_q_err(), state.get_q_err())


def test_copies_are_independent():
    """Law: after c = s.copy(), changing either State leaves the other exactly as it was."""
    system, sub, state = make()
    system.realize(state, Stage.Report)
    y0, t0 = state.get_y().copy(), state.get_time()
    c = state.copy()
    c.set_time(9.0)
    c.upd_q()[0] = -1.0
    c.set_u([-3.0])
    sub.upd_discrete_variable(c, sub.arr)[0] = 100.0
    sub.upd_discrete_variable(c, sub.items).append("b")
    sub.set_discrete_variable(c, sub.k, 7.0)
    system.realize(c, Stage.Report)
    assert state.get_system_stage() == Stage.Report
    np.testing.assert_array_equal(state.get_y(), y0)
    assert state.get_time() == t0
    np.testing.assert_array_equal(sub.get_discrete_variable(state, sub.arr), [1.0, 1.0])
    assert sub.get_discrete_variable(state, sub.items) == ["a"]
    assert sub.get_discrete_variable(state, sub.k) == 2.0
    assert sub.get_cache_entry(state, sub.inst) == 20.0
    assert sub.get_cache_entry(state, sub.pos) == 3.0
    np.testing.assert_array_equal(state.get_qdot(), [3.0, 3.0])
    assert not np.shares_memory(c.get_y(), state.get_y())
    assert not np.shares_memory(c.get_ydot(), state.get_ydot())
    # and the other way round
    cy = c.get_y().copy()
    state.set_q([0.0, 0.0])
    sub.upd_cache_entry(state, sub.topo)["extra"] = 1
    np.testing.assert_array_equal(c.get_y(), cy)
    assert "extra" not in sub.get_cache_entry(c, sub.topo)


def test_copy_shares_subsystems_referenced_from_the_cache():
    system, sub, state = make()
    c = state.copy()
    assert sub.get_cache_entry(c, sub.topo)["owner"] is sub
    assert sub.get_cache_entry(c, sub.topo) is not sub.get_cache_entry(state, sub.topo)


class Holder(Subsystem):
    """Cache entries holding values of the kinds a State's copy copies by kind, two of them one array."""

    VALUES = {"none": None, "flag": True, "count": 3, "scale": 2.5, "label": "s",
              "fortran": np.arange(6.0).reshape(2, 3, order="F"), "ints": np.arange(4),
              "objects": np.array([[1.0], "x"], dtype=object), "dict": {"k": np.ones(2)}, "list": [np.ones(2)]}

    def realize_subsystem_topology_impl(self, state):
        self.shared = np.array([1.0, 2.0])
        self.first = self.allocate_cache_entry(state, Stage.Topology, Stage.Topology, self.shared)
        self.second = self.allocate_cache_entry(state, Stage.Topology, Stage.Topology, self.shared)
        self.entries = {k: self.allocate_cache_entry(state, Stage.Topology, Stage.Topology, v)
                        for k, v in self.VALUES.items()}


def test_copy_copies_every_value_as_deepcopy_would():
    """Law: a copy's cache values equal copy.deepcopy of the original's (type, dtype, layout and
    contents), are independent of them, and an array two entries share stays one array in the copy."""
    system = System("values")
    sub = Holder(system, name="holder")
    state = system.realize_topology()
    c = state.copy()
    for name, i in sub.entries.items():
        mine, theirs = sub.upd_cache_entry(c, i), sub.upd_cache_entry(state, i)
        expected = pycopy.deepcopy(theirs)
        assert type(mine) is type(expected), name
        if isinstance(expected, np.ndarray):
            assert mine.dtype == expected.dtype and mine.strides == expected.strides, name
            assert mine.flags.writeable and not np.shares_memory(mine, theirs), name
            assert [str(x) for x in mine.ravel(order="K")] == [str(x) for x in expected.ravel(order="K")], name
        elif isinstance(expected, (dict, list)):
            assert mine is not theirs and str(mine) == str(expected), name
        else:
            assert mine == expected, name
    sub.upd_cache_entry(c, sub.entries["objects"])[0].append(9.0)  # object arrays are copied deeply
    assert sub.get_cache_entry(state, sub.entries["objects"])[0] == [1.0]
    sub.upd_cache_entry(c, sub.entries["dict"])["k"][0] = 7.0
    assert sub.get_cache_entry(state, sub.entries["dict"])["k"][0] == 1.0
    first, second = sub.upd_cache_entry(c, sub.first), sub.upd_cache_entry(c, sub.second)
    assert sub.upd_cache_entry(state, sub.first) is sub.upd_cache_entry(state, sub.second)  # the premise
    assert first is second and not np.shares_memory(first, sub.upd_cache_entry(state, sub.first))


@pytest.mark.parametrize("how", [pycopy.copy, pycopy.deepcopy, State.copy])
def test_python_copy_protocols_give_independent_states(how):
    system, sub, state = make()
    c = how(state)
    assert isinstance(c, State) and c is not state
    c.set_q([8.0, 9.0])
    np.testing.assert_array_equal(state.get_q(), [1.0, 2.0])


def test_realize_topology_returns_independent_copies_of_the_default_state():
    system, sub, _ = make()
    a, b = system.realize_topology(), system.get_default_state()
    a.set_q([7.0, 7.0])
    np.testing.assert_array_equal(b.get_q(), [1.0, 2.0])
    np.testing.assert_array_equal(system.realize_topology().get_q(), [1.0, 2.0])
    assert sub.calls[Stage.Topology] == 1


# ---------------------------------------------------------------------- topology version
def test_invalidate_subsystem_topology_cache_refuses_old_states():
    system, sub, state = make()
    system.realize(state, Stage.Position)
    v = system.get_system_topology_cache_version()
    old_copy = state.copy()
    sub.invalidate_subsystem_topology_cache()
    assert system.get_system_topology_cache_version() != v
    assert not system.is_topology_realized()
    for s in (state, old_copy):
        y = s.get_y().copy()
        with pytest.raises(TopologyVersionError, match="realize_topology"):
            system.realize(s, Stage.Report)
        with pytest.raises(TopologyVersionError):
            sub.get_q(s)
        with pytest.raises(TopologyVersionError):
            sub.set_discrete_variable(s, sub.k, 5.0)
        with pytest.raises(TopologyVersionError):
            sub.get_cache_entry(s, sub.inst)
        np.testing.assert_array_equal(s.get_y(), y)
    assert state.get_system_stage() == Stage.Position
    with pytest.raises(RuntimeError):
        system.get_default_state()
    fresh = system.realize_topology()
    assert sub.calls[Stage.Topology] == 2
    system.realize(fresh, Stage.Report)
    assert fresh.get_system_stage() == Stage.Report
    with pytest.raises(TopologyVersionError):
        system.realize(state, Stage.Report)


@pytest.mark.parametrize("change", ["adopt", "handler", "reporter", "system"])
def test_every_topology_change_refuses_old_states(change):
    system, sub, state = make()
    if change == "adopt":
        Kept(system, name="second")
    elif change == "handler":
        system.add_event_handler(object())
    elif change == "reporter":
        system.add_event_reporter(object())
    else:
        system.invalidate_system_topology_cache()
    with pytest.raises(TopologyVersionError):
        system.realize(state, Stage.Instance)
    state = system.realize_topology()
    system.realize(state, Stage.Instance)


def test_a_state_of_another_system_is_refused():
    system, sub, state = make()
    other_system, other_sub, other = make()
    with pytest.raises(ValueError, match="belongs to"):
        system.realize(other, Stage.Report)
    with pytest.raises(ValueError):
        sub.get_q(other)
    with pytest.raises(ValueError):
        system.realize(State(), Stage.Report)
    assert other.get_system_stage() == Stage.Model


# ---------------------------------------------------------------------- copy_variables_from
def test_copy_variables_from_makes_variables_equal_and_invalidates():
    system, sub, a = make()
    b = system.realize_topology()
    system.realize(a, Stage.Report)
    b.set_time(2.0)
    b.set_y([5.0, 6.0, 7.0, 8.0])
    sub.set_discrete_variable(b, sub.k, 4.0)
    sub.upd_discrete_variable(b, sub.arr)[:] = [3.0, -1.0]
    sub.upd_discrete_variable(b, sub.items).append("b")
    mark = a.get_invalidation_mark()
    a.copy_variables_from(b)
    assert a.get_time() == 2.0
    np.testing.assert_array_equal(a.get_y(), [5.0, 6.0, 7.0, 8.0])
    assert sub.get_discrete_variable(a, sub.k) == 4.0
    np.testing.assert_array_equal(sub.get_discrete_variable(a, sub.arr), [3.0, -1.0])
    assert sub.get_discrete_variable(a, sub.items) == ["a", "b"]
    assert a.get_lowest_stage_invalidated_since(mark) <= Stage.Instance
    assert a.get_system_stage() <= Stage.Model
    system.realize(a, Stage.Report)
    system.realize(b, Stage.Report)
    assert sub.get_cache_entry(a, sub.pos) == sub.get_cache_entry(b, sub.pos) == 5.0 * 3.0 - 6.0
    # independent afterwards
    sub.upd_discrete_variable(b, sub.items).append("c")
    sub.upd_discrete_variable(b, sub.arr)[0] = 0.0
    b.set_q([0.0, 0.0])
    assert sub.get_discrete_variable(a, sub.items) == ["a", "b"]
    assert sub.get_discrete_variable(a, sub.arr)[0] == 3.0
    np.testing.assert_array_equal(a.get_q(), [5.0, 6.0])


def test_copy_variables_from_refuses_states_it_cannot_match():
    system, sub, a = make()
    other_system, _, foreign = make()
    low = system.realize_topology()
    low.invalidate_all(Stage.Model)
    y = a.get_y().copy()
    with pytest.raises(ValueError, match="different Systems"):
        a.copy_variables_from(foreign)
    with pytest.raises(StageTooLowError):
        a.copy_variables_from(low)  # the other State has no y to copy
    np.testing.assert_array_equal(a.get_y(), y)
    assert a.get_system_stage() == Stage.Model


def test_copy_variables_from_into_a_state_below_model_lays_it_out_first():
    system, sub, a = make()
    b = system.realize_topology()
    b.set_q([4.0, 5.0])
    a.invalidate_all(Stage.Model)
    a.copy_variables_from(b)
    assert a.get_system_stage() >= Stage.Model
    np.testing.assert_array_equal(a.get_q(), [4.0, 5.0])


class ModelScale(Subsystem):
    """A Model-stage discrete variable that sets the initial value (not the number) of its one q."""

    def realize_subsystem_topology_impl(self, state):
        self.scale = self.allocate_discrete_variable(state, Stage.Model, 1.0)

    def realize_subsystem_model_impl(self, state):
        self.allocate_q(state, [self.get_discrete_variable(state, self.scale)])


@pytest.mark.parametrize("other_scale", [2.0, 1.0])
def test_copy_variables_from_keeps_y_across_a_model_stage_variable(other_scale):
    """Law: after a.copy_variables_from(b) and realizing, a's y equals b's y, also when a Model-stage
    variable differs (or is an equal value held in another object). Regression: y used to be copied
    before the discrete variables, whose Model invalidation then laid y out again from initial values."""
    system = System()
    sub = ModelScale(system)
    a, b = system.realize_topology(), system.realize_topology()
    sub.set_discrete_variable(a, sub.scale, np.float64(1.0))
    sub.set_discrete_variable(b, sub.scale, np.float64(other_scale))
    system.realize(a, Stage.Report)
    system.realize(b, Stage.Report)
    b.set_q([5.0])
    a.copy_variables_from(b)
    system.realize(a, Stage.Report)
    np.testing.assert_array_equal(a.get_q(), [5.0])
    assert sub.get_discrete_variable(a, sub.scale) == other_scale
