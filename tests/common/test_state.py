"""The State: layout of q, u, z in y, getters and upd_*, set_* validation, derivative and error slots.

Expected values are computed here from the initial values each test subsystem was given, never read
back from the framework's own bookkeeping.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simtk import Stage, StageOutOfRangeError, StageTooLowError, Subsystem, System


class Block(Subsystem):
    """Allocates the given q, u, z at Topology and ``nerr`` constraint-error slots at Instance.

    Its hooks write closed forms of its own variables into the derivative cache and error slots,
    so a test can check that each subsystem's writes land in its own slice of the global arrays.
    """

    def __init__(self, system, q0, u0, z0, nerr=(0, 0, 0), name=""):
        self.q_init = np.asarray(q0, float)
        self.u_init = np.asarray(u0, float)
        self.z_init = np.asarray(z0, float)
        self.nerr = nerr
        super().__init__(system, name=name)

    def realize_subsystem_topology_impl(self, state):
        self.qx = self.allocate_q(state, self.q_init)
        self.ux = self.allocate_u(state, self.u_init)
        self.zx = self.allocate_z(state, self.z_init)
        self.vx = self.allocate_discrete_variable(state, Stage.Velocity, np.arange(3.0))

    def realize_subsystem_instance_impl(self, state):
        nqe, nue, nae = self.nerr
        self.allocate_q_err(state, nqe)
        self.allocate_u_err(state, nue)
        self.allocate_udot_err(state, nae)

    def realize_subsystem_position_impl(self, state):
        n = self.nerr[0]
        self.upd_q_err(state)[:] = self.get_q(state)[:n] - 1.0

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[:] = self.get_q(state) + 100.0
        n = self.nerr[1]
        self.upd_u_err(state)[:] = self.get_u(state)[:n] * 5.0

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[:] = 2.0 * self.get_u(state)
        self.upd_zdot(state)[:] = 3.0 * self.get_z(state)
        self.upd_qdotdot(state)[:] = -self.get_q(state)
        n = self.nerr[2]
        self.upd_udot_err(state)[:] = 7.0 + np.arange(n)
        self.upd_multipliers(state)[:] = 8.0 + np.arange(n)


SPECS = [  # (q0, u0, z0, (nqerr, nuerr, nudoterr))
    ([1.0, 2.0], [3.0], [4.0, 5.0, 6.0], (1, 0, 2)),
    ([], [7.0, 8.0], [], (0, 1, 0)),
    ([9.0, 10.0, 11.0], [12.0], [13.0], (2, 1, 1)),
]


def make_system(specs=SPECS):
    system = System("layout")
    subs = [Block(system, *spec, name=f"b{i}") for i, spec in enumerate(specs)]
    return system, subs, system.realize_topology()


def snapshot(state):
    """Everything a failed set_* must leave untouched."""
    return (state.get_y().copy() if state.get_system_stage() >= Stage.Model else None,
            state.get_time(), state.get_system_stage(),
            [state.get_subsystem_stage(i) for i in range(state.get_num_subsystems())])


def assert_unchanged(state, before):
    after = snapshot(state)
    if before[0] is not None:
        np.testing.assert_array_equal(after[0], before[0])
    assert after[1:] == before[1:]


# ---------------------------------------------------------------------- layout
def test_realize_topology_returns_default_state_at_model_with_time_zero():
    system, _, state = make_system()
    assert state.get_system_stage() == Stage.Model
    assert all(state.get_subsystem_stage(i) == Stage.Model for i in range(3))
    assert state.get_time() == 0.0


def test_blocks_are_contiguous_in_subsystem_order():
    """Law: global q (u, z) is the concatenation of the subsystems' blocks, in subsystem order."""
    _, subs, state = make_system()
    q = np.concatenate([s[0] for s in SPECS])
    u = np.concatenate([s[1] for s in SPECS])
    z = np.concatenate([s[2] for s in SPECS])
    np.testing.assert_array_equal(state.get_q(), q)
    np.testing.assert_array_equal(state.get_u(), u)
    np.testing.assert_array_equal(state.get_z(), z)
    np.testing.assert_array_equal(state.get_y(), np.concatenate([q, u, z]))
    assert (state.get_nq(), state.get_nu(), state.get_nz(), state.get_ny()) == (5, 4, 4, 13)
    starts_q = np.cumsum([0] + [len(s[0]) for s in SPECS])[:-1]
    starts_u = np.cumsum([0] + [len(s[1]) for s in SPECS])[:-1]
    starts_z = np.cumsum([0] + [len(s[2]) for s in SPECS])[:-1]
    for sub, spec, sq, su, sz in zip(subs, SPECS, starts_q, starts_u, starts_z):
        assert (sub.get_q_start(state), sub.get_u_start(state), sub.get_z_start(state)) == (sq, su, sz)
        np.testing.assert_array_equal(sub.get_q(state), spec[0])
        np.testing.assert_array_equal(sub.get_u(state), spec[1])
        np.testing.assert_array_equal(sub.get_z(state), spec[2])


def test_q_u_z_are_views_of_one_y_buffer():
    _, subs, state = make_system()
    y = state.get_y()
    for part in (state.get_q(), state.get_u(), state.get_z()):
        assert np.shares_memory(part, y)
    for sub in subs:
        for part in (sub.get_q(state), sub.get_u(state), sub.get_z(state)):
            if part.size:
                assert np.shares_memory(part, y)


def test_allocate_returns_start_within_the_subsystem_block():
    class TwoBlocks(Subsystem):
        def realize_subsystem_topology_impl(self, state):
            self.a = self.allocate_q(state, [1.0, 2.0])
            self.b = self.allocate_q(state, [3.0, 4.0, 5.0])

    system = System()
    Block(system, [0.5], [], [])
    sub = TwoBlocks(system)
    state = system.realize_topology()
    assert (sub.a, sub.b) == (0, 2)
    assert sub.get_q(state)[sub.b] == 3.0  # the seed's getQ(state)[qindex] idiom
    assert sub.get_q_start(state) == 1


# ---------------------------------------------------------------------- read-only getters, writable upd_*
STATE_GETTERS = ["get_q", "get_u", "get_z", "get_y", "get_qdot", "get_udot", "get_zdot", "get_ydot",
                 "get_qdotdot", "get_q_err", "get_u_err", "get_udot_err", "get_multipliers"]
SUB_GETTERS = ["get_q", "get_u", "get_z", "get_qdot", "get_udot", "get_zdot", "get_qdotdot", "get_q_err",
               "get_u_err", "get_udot_err", "get_multipliers"]


@pytest.mark.parametrize("name", STATE_GETTERS)
def test_state_getters_are_read_only(name):
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    a = getattr(state, name)()
    assert a.flags.writeable is False
    if a.size:
        with pytest.raises(ValueError):
            a[0] = 1.0


@pytest.mark.parametrize("name", SUB_GETTERS)
def test_subsystem_getters_are_read_only(name):
    system, subs, state = make_system()
    system.realize(state, Stage.Report)
    a = getattr(subs[0], name)(state)
    assert a.flags.writeable is False
    if a.size:
        with pytest.raises(ValueError):
            a[0] = 1.0


def test_array_discrete_variable_getter_is_read_only_and_upd_aliases_it():
    system, subs, state = make_system()
    a = subs[0].get_discrete_variable(state, subs[0].vx)
    assert a.flags.writeable is False
    w = subs[0].upd_discrete_variable(state, subs[0].vx)
    assert w.flags.writeable and np.shares_memory(a, w)
    w[1] = 42.0
    assert subs[0].get_discrete_variable(state, subs[0].vx)[1] == 42.0


@pytest.mark.parametrize("name", ["q", "u", "z", "y"])
def test_state_upd_returns_writable_alias_of_storage(name):
    _, _, state = make_system()
    w = getattr(state, f"upd_{name}")()
    assert w.flags.writeable
    assert np.shares_memory(w, getattr(state, f"get_{name}")())
    w[0] = -1.5
    assert getattr(state, f"get_{name}")()[0] == -1.5


@pytest.mark.parametrize("name", ["q", "u", "z"])
def test_subsystem_upd_writes_into_its_global_slice(name):
    _, subs, state = make_system()
    sub = subs[2]
    w = getattr(sub, f"upd_{name}")(state)
    assert w.flags.writeable
    w[0] = 99.0
    start = getattr(sub, f"get_{name}_start")(state)
    assert getattr(state, f"get_{name}")()[start] == 99.0


@pytest.mark.parametrize("name, expected", [("upd_q", Stage.Time), ("upd_u", Stage.Position),
                                            ("upd_z", Stage.Velocity), ("upd_y", Stage.Time)])
def test_state_upd_invalidates_at_the_call(name, expected):
    """Law (Simbody): upd_* invalidates when called, even if nothing is written."""
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    getattr(state, name)()
    assert state.get_system_stage() == expected


@pytest.mark.parametrize("name, expected", [("upd_q", Stage.Time), ("upd_u", Stage.Position),
                                            ("upd_z", Stage.Velocity)])
def test_subsystem_upd_invalidates_every_subsystem_at_the_call(name, expected):
    system, subs, state = make_system()
    system.realize(state, Stage.Report)
    getattr(subs[1], name)(state)
    assert [state.get_subsystem_stage(i) for i in range(3)] == [expected] * 3


def test_writing_through_an_old_upd_reference_does_not_invalidate():
    """Simbody semantics: invalidation happens at the upd_ call, not when the storage is written."""
    system, _, state = make_system()
    w = state.upd_q()
    system.realize(state, Stage.Report)
    w[0] = 123.0
    assert state.get_system_stage() == Stage.Report
    assert state.get_q()[0] == 123.0


def test_derivative_cache_upd_does_not_invalidate():
    system, subs, state = make_system()
    system.realize(state, Stage.Report)
    for f in (subs[0].upd_qdot, subs[0].upd_udot, subs[0].upd_zdot, subs[0].upd_qdotdot):
        f(state)
    assert state.get_system_stage() == Stage.Report


# ---------------------------------------------------------------------- set_* and invalidation rules
@pytest.mark.parametrize("setter, value, expected", [
    ("set_time", 1.25, Stage.Instance),  # t belongs to Time: drop to Time-1
    ("set_q", np.zeros(5), Stage.Time),
    ("set_u", np.zeros(4), Stage.Position),
    ("set_z", np.zeros(4), Stage.Velocity),
    ("set_y", np.zeros(13), Stage.Time),
])
def test_set_drops_every_subsystem_to_the_stage_before_the_variables(setter, value, expected):
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    getattr(state, setter)(value)
    assert state.get_system_stage() == expected
    assert all(state.get_subsystem_stage(i) == expected for i in range(3))


@pytest.mark.parametrize("setter, value", [("set_time", 2.0), ("set_u", np.ones(4)), ("set_z", np.ones(4))])
def test_set_never_raises_the_stage(setter, value):
    system, _, state = make_system()
    system.realize(state, Stage.Instance)
    getattr(state, setter)(value)
    assert state.get_system_stage() == Stage.Instance


def test_set_values_are_stored():
    system, subs, state = make_system()
    state.set_time(3.5)
    state.set_q([1, 2, 3, 4, 5])
    state.set_u([6, 7, 8, 9])
    state.set_z(np.array([10.0, 11, 12, 13]))
    assert state.get_time() == 3.5
    np.testing.assert_array_equal(state.get_y(), np.arange(1.0, 14.0))
    np.testing.assert_array_equal(subs[2].get_q(state), [3, 4, 5])
    state.set_y(np.arange(13.0))
    np.testing.assert_array_equal(state.get_u(), [5, 6, 7, 8])


def test_set_q_accepts_a_scalar_when_there_is_one_q():
    system = System()
    Block(system, [0.0], [], [])
    state = system.realize_topology()
    state.set_q(2.5)
    assert state.get_q()[0] == 2.5


BAD_VECTORS = [
    ("wrong length", [1.0, 2.0]),
    ("too long", np.zeros(6)),
    ("NaN", [0.0, 0.0, np.nan, 0.0, 0.0]),
    ("+inf", [np.inf, 0.0, 0.0, 0.0, 0.0]),
    ("-inf", [0.0, 0.0, 0.0, 0.0, -np.inf]),
    ("not numbers", ["a", "b", "c", "d", "e"]),
    ("matrix", np.zeros((5, 1))),
    ("None", None),
]


@pytest.mark.parametrize("what, bad", BAD_VECTORS, ids=[b[0] for b in BAD_VECTORS])
def test_set_q_rejects_bad_values_and_leaves_state_unchanged(what, bad):
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    before = snapshot(state)
    with pytest.raises(ValueError, match=r"State\.set_q"):
        state.set_q(bad)
    assert_unchanged(state, before)


@pytest.mark.parametrize("setter, n", [("set_u", 4), ("set_z", 4), ("set_y", 13)])
@pytest.mark.parametrize("bad", ["nan", "inf", "length"])
def test_other_setters_reject_bad_values_and_leave_state_unchanged(setter, n, bad):
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    before = snapshot(state)
    v = np.ones(n + 1) if bad == "length" else np.ones(n)
    if bad != "length":
        v[n - 1] = float(bad)
    with pytest.raises(ValueError):
        getattr(state, setter)(v)
    assert_unchanged(state, before)


@pytest.mark.parametrize("bad, exc", [(np.nan, ValueError), (np.inf, ValueError), (-np.inf, ValueError),
                                      ("soon", TypeError), (None, TypeError)])
def test_set_time_rejects_bad_values_and_leaves_state_unchanged(bad, exc):
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    before = snapshot(state)
    with pytest.raises(exc):
        state.set_time(bad)
    assert_unchanged(state, before)


def _readonly_copy(v):
    v = v.copy()
    v.flags.writeable = False
    return v


@pytest.mark.parametrize("kind, make", [
    ("float64", lambda v: v), ("read-only", _readonly_copy), ("strided", lambda v: np.repeat(v, 2)[::2]),
    ("list", lambda v: v.tolist()), ("int64", lambda v: np.round(10 * v).astype(np.int64)),
    ("float32", lambda v: v.astype(np.float32)), ("big-endian", lambda v: v.astype(">f8"))])
@pytest.mark.parametrize("setter, getter, n", [("set_q", "get_q", 5), ("set_u", "get_u", 4)])
def test_setters_store_any_real_vector_exactly(setter, getter, n, kind, make):
    """Law: set_q and set_u take any real vector of the right length (float64 contiguous, which one
    compiled call checks and copies, or strided, read-only, a list, integers, float32, another byte
    order, which are converted) and store exactly its float64 values; the setter invalidates alike."""
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    values = make(np.linspace(-0.8, 0.9, n))
    getattr(state, setter)(values)
    np.testing.assert_array_equal(getattr(state, getter)(), np.asarray(values, dtype=np.float64))
    assert state.get_system_stage() == (Stage.Time if setter == "set_q" else Stage.Position)


def test_nan_message_names_the_entry():
    _, _, state = make_system()
    with pytest.raises(ValueError, match="entry 3"):
        state.set_q([0.0, 0.0, 0.0, np.nan, 0.0])


@pytest.mark.parametrize("bad", [np.array([1 + 2j, 0, 0, 0, 0]), np.array([1 + 0j, 0, 0, 0, 0]),
                                 [True, False, True, False, True], [1.0, None, 0.0, 0.0, 0.0]])
def test_set_q_rejects_complex_bool_and_object_arrays(bad):
    """No silent cast: a complex part would be dropped, a bool or None is not a coordinate."""
    _, _, state = make_system()
    before = snapshot(state)
    with pytest.raises((TypeError, ValueError)):
        state.set_q(bad)
    assert_unchanged(state, before)


def test_ragged_input_error_names_the_setter():
    """Regression: numpy's own 'inhomogeneous shape' error used to escape without naming the setter."""
    _, _, state = make_system()
    before = snapshot(state)
    with pytest.raises(ValueError, match=r"State\.set_q"):
        state.set_q([[1.0, 2.0], [3.0], 4.0, 5.0, 6.0])
    assert_unchanged(state, before)


@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=5, max_size=5))
def test_set_q_round_trips_any_finite_vector(values):
    """Law: after set_q(v) with v finite, get_q() == v exactly and u, z are untouched."""
    _, _, state = make_system()
    u, z = state.get_u().copy(), state.get_z().copy()
    state.set_q(values)
    np.testing.assert_array_equal(state.get_q(), values)
    np.testing.assert_array_equal(state.get_u(), u)
    np.testing.assert_array_equal(state.get_z(), z)


@given(index=st.integers(0, 4), bad=st.sampled_from([np.nan, np.inf, -np.inf]),
       values=st.lists(st.floats(-1e6, 1e6), min_size=5, max_size=5))
def test_set_q_refuses_any_non_finite_entry(index, bad, values):
    """Law: a vector with a non-finite entry at any position is refused, naming that entry, and q is kept."""
    _, _, state = make_system()
    q = state.get_q().copy()
    values[index] = bad
    with pytest.raises(ValueError, match=f"entry {index}"):
        state.set_q(values)
    np.testing.assert_array_equal(state.get_q(), q)


# ---------------------------------------------------------------------- derivative cache and error slots
@pytest.mark.parametrize("name, needed", [
    ("get_qdot", Stage.Velocity), ("get_udot", Stage.Acceleration), ("get_zdot", Stage.Acceleration),
    ("get_ydot", Stage.Acceleration), ("get_qdotdot", Stage.Acceleration), ("get_q_err", Stage.Position),
    ("get_u_err", Stage.Velocity), ("get_udot_err", Stage.Acceleration), ("get_multipliers", Stage.Acceleration),
])
def test_cache_getters_need_their_stage(name, needed):
    system, _, state = make_system()
    system.realize(state, needed.prev())
    with pytest.raises(StageTooLowError) as info:
        getattr(state, name)()
    assert info.value.needed == needed and info.value.current == needed.prev()
    system.realize(state, needed)
    getattr(state, name)()


def test_get_udot_before_acceleration_after_a_change_of_u():
    system, subs, state = make_system()
    system.realize(state, Stage.Acceleration)
    state.get_udot()
    state.set_u(np.ones(4))
    with pytest.raises(StageTooLowError):
        state.get_udot()
    with pytest.raises(StageTooLowError):
        subs[0].get_udot(state)


def test_derivatives_land_in_each_subsystems_slice():
    system, _, state = make_system()
    state.set_y(np.arange(1.0, 14.0))
    system.realize(state, Stage.Acceleration)
    q, u, z = np.arange(1.0, 6.0), np.arange(6.0, 10.0), np.arange(10.0, 14.0)
    np.testing.assert_array_equal(state.get_qdot(), q + 100.0)
    np.testing.assert_array_equal(state.get_udot(), 2.0 * u)
    np.testing.assert_array_equal(state.get_zdot(), 3.0 * z)
    np.testing.assert_array_equal(state.get_qdotdot(), -q)
    np.testing.assert_array_equal(state.get_ydot(), np.concatenate([q + 100.0, 2.0 * u, 3.0 * z]))


def test_constraint_error_slots_are_laid_out_per_subsystem():
    system, subs, state = make_system()
    state.set_y(np.arange(1.0, 14.0))
    system.realize(state, Stage.Acceleration)
    assert (state.get_nq_err(), state.get_nu_err(), state.get_nudot_err()) == (3, 2, 3)
    # subsystem 0 owns q = [1, 2], subsystem 2 owns q = [3, 4, 5]
    np.testing.assert_array_equal(state.get_q_err(), [1 - 1.0, 3 - 1.0, 4 - 1.0])
    # subsystem 1 owns u = [7, 8] (u is [6 | 7, 8 | 9]), subsystem 2 owns u = [9]
    np.testing.assert_array_equal(state.get_u_err(), [35.0, 45.0])
    np.testing.assert_array_equal(state.get_udot_err(), [7.0, 8.0, 7.0])
    np.testing.assert_array_equal(state.get_multipliers(), [8.0, 9.0, 8.0])
    np.testing.assert_array_equal(subs[2].get_q_err(state), [2.0, 3.0])


# ---------------------------------------------------------------------- invalidate_all and stage-gated getters
@pytest.mark.parametrize("stage", [Stage.Model, Stage.Instance, Stage.Time, Stage.Position, Stage.Velocity,
                                   Stage.Dynamics, Stage.Acceleration, Stage.Report])
def test_invalidate_all_drops_to_the_stage_before(stage):
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    state.invalidate_all(stage)
    assert state.get_system_stage() == stage.prev()
    system.realize(state, Stage.Report)
    assert state.get_system_stage() == Stage.Report


@pytest.mark.parametrize("stage", [Stage.Empty, Stage.Topology])
def test_topology_cannot_be_invalidated_in_a_state(stage):
    system, _, state = make_system()
    before = snapshot(state)
    with pytest.raises(StageOutOfRangeError):
        state.invalidate_all(stage)
    assert_unchanged(state, before)


def test_invalidate_all_cache_at_or_above_refuses_variable_stages():
    system, _, state = make_system()
    system.realize(state, Stage.Report)
    with pytest.raises(StageOutOfRangeError):
        state.invalidate_all_cache_at_or_above(Stage.Model)
    assert state.get_system_stage() == Stage.Report
    state.invalidate_all_cache_at_or_above(Stage.Dynamics)
    assert state.get_system_stage() == Stage.Velocity


@pytest.mark.parametrize("name", ["get_q", "get_u", "get_z", "get_y", "get_nq", "get_nu", "get_nz"])
def test_variables_are_unavailable_below_model(name):
    _, _, state = make_system()
    state.invalidate_all(Stage.Model)
    with pytest.raises(StageTooLowError):
        getattr(state, name)()
    before = snapshot(state)
    with pytest.raises(StageTooLowError):
        state.set_q(np.zeros(5))
    assert_unchanged(state, before)


def test_model_reinvalidation_restores_initial_values():
    """Simbody semantics: realizing Model lays y out anew from each block's initial values."""
    system, _, state = make_system()
    state.set_q(np.full(5, 7.0))
    state.invalidate_all(Stage.Model)
    system.realize(state, Stage.Model)
    np.testing.assert_array_equal(state.get_q(), np.concatenate([s[0] for s in SPECS]))


def test_states_compare_by_identity_and_repr_names_stage_and_sizes():
    system, _, state = make_system()
    assert state == state
    assert not (state == state.copy())
    text = repr(state)
    assert "Model" in text and "nq=5" in text and "nu=4" in text and "nz=4" in text


# ---------------------------------------------------------------------- change tracking
def test_lowest_stage_invalidated_since_a_mark():
    """Law: the answer is the lowest stage of every variable changed since the mark, Infinity if none."""
    system, subs, state = make_system()
    system.realize(state, Stage.Report)
    mark = state.get_invalidation_mark()
    assert state.get_lowest_stage_invalidated_since(mark) == Stage.Infinity
    system.realize(state, Stage.Report)
    state.get_q(), subs[0].get_discrete_variable(state, subs[0].vx)
    assert state.get_lowest_stage_invalidated_since(mark) == Stage.Infinity
    for change, lowest in ((lambda: state.set_z(np.zeros(4)), Stage.Dynamics),
                           (lambda: subs[1].upd_discrete_variable(state, subs[1].vx), Stage.Velocity),
                           (lambda: state.set_z(np.ones(4)), Stage.Velocity),
                           (lambda: state.set_time(1.0), Stage.Time)):
        change()
        assert state.get_lowest_stage_invalidated_since(mark) == lowest
    later = state.get_invalidation_mark()
    system.realize(state, Stage.Report)
    assert state.get_lowest_stage_invalidated_since(later) == Stage.Infinity
    state.set_q(np.zeros(5))  # counted even though the State is already realized past Position
    state.set_q(np.ones(5))
    assert state.get_lowest_stage_invalidated_since(later) == Stage.Position


def test_a_refused_change_invalidates_nothing():
    system, subs, state = make_system()
    system.realize(state, Stage.Report)
    mark = state.get_invalidation_mark()
    for bad in (lambda: state.set_q([np.nan] * 5), lambda: state.set_time(np.inf),
                lambda: subs[0].set_discrete_variable(state, subs[0].vx, [1.0])):
        with pytest.raises(ValueError):
            bad()
    assert state.get_lowest_stage_invalidated_since(mark) == Stage.Infinity
    assert state.get_system_stage() == Stage.Report
