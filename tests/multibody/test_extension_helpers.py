"""The helpers users' extension code calls once per evaluation, whose common case is compiled
(core/helpers.pxi): MobilizedBody's find_station_* / get_body_* / apply_*, the matter subsystem's
add_in_* (what a Force.Custom calls) and Constraint.Custom.Implementation's get_* / add_in_*.

Each is checked against numpy from the body's Transform and velocities (for the ancestor-frame
helpers, the transport theorem applied to quantities in Ground), the compiled and the Python path
against each other (a station of float32 values takes the Python path), the getters' read-only views
and fresh arrays as they were, bad input refused with the message naming what is wrong (and nothing
written), and random states of small chains by hypothesis. Round-off margins are counts of EPS
times the scale of the terms (tests/tolerances.py): numpy's ``R @ s`` goes through BLAS, whose
rounding the kernels' products need not share.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    StageTooLowError,
    Transform,
)
from simtk.testing import check_constraint, multibody_systems, states
from tolerances import EPS, assert_close

STATIONS = arrays(np.float64, 3, elements=st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False))
CHAIN_KINDS = ("Pin", "Slider", "Ball", "Free", "Gimbal", "Universal", "Planar", "Bushing")
BODY = Body.Rigid(MassProperties(1.3, [0.1, -0.2, 0.05], Inertia([0.4, 0.5, 0.3])))
MARGIN = 16  # a handful of products and sums per entry


def _norm(x) -> float:
    return float(np.max(np.abs(x))) if np.size(x) else 0.0


def _ground_motion(mb, state):
    """R_GB, p_GB, (w, v), (b, a) of ``mb`` as the getters give them."""
    X = mb.get_body_transform(state)
    return X.R.matrix, X.p, mb.get_body_velocity(state), mb.get_body_acceleration(state)


def _realized(model, state, stage=Stage.Acceleration):
    model.system.realize(state, stage)
    return state


# ====================================================================== MobilizedBody: in Ground
@settings(max_examples=30)
@given(model=multibody_systems(min_bodies=2, max_bodies=4, kinds=CHAIN_KINDS, chain=True), data=st.data(),
       s=STATIONS)
def test_station_kinematics_in_ground_match_numpy(model, data, s):
    """find_station_{location,velocity,acceleration}_in_ground = p + R s, v + w x r and
    a + b x r + w x (w x r) with r = R s, for every body of random chains in random states."""
    state = _realized(model, data.draw(states(model.system)))
    for mb in [model.matter.get_ground(), *model.bodies]:
        R, p, (w, v), (b, a) = _ground_motion(mb, state)
        r = R @ s
        sr = _norm(s) * 3  # bound of |R s| per entry (R orthonormal: |R_ij| <= 1)
        assert_close(mb.find_station_location_in_ground(state, s), p + r, margin=MARGIN, scale=_norm(p) + sr)
        assert_close(mb.find_station_velocity_in_ground(state, s), v + np.cross(w, r), margin=MARGIN,
                     scale=_norm(v) + 2 * _norm(w) * sr)
        assert_close(mb.find_station_acceleration_in_ground(state, s),
                     a + np.cross(b, r) + np.cross(w, np.cross(w, r)), margin=MARGIN,
                     scale=_norm(a) + 2 * _norm(b) * sr + 4 * _norm(w) ** 2 * sr)


def _chain(n=4):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    bodies, parent = [], matter.get_ground()
    kinds = ("Ball", "Pin", "Free", "Gimbal", "Slider")
    for i in range(n):
        parent = getattr(MobilizedBody, kinds[i % len(kinds)])(
            parent, Transform([0.1 * i, -0.5, 0.2]), BODY, Transform([0.05, 0.1, -0.1]))
        bodies.append(parent)
    return system, matter, bodies


def _random_state(system, seed=0, stage=Stage.Acceleration):
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    rng = np.random.default_rng(seed)
    q = state.upd_q()
    q[:] += rng.uniform(-0.8, 0.8, q.shape)
    state.upd_u()[:] = rng.uniform(-1.5, 1.5, state.get_nu())
    system.realize(state, stage)
    return state


def test_compiled_and_python_paths_agree():
    """A list, a tuple and an array take the compiled path and give the same bits; a station of
    float32 values (the same numbers) takes the Python path and agrees to round-off."""
    system, matter, bodies = _chain()
    state = _random_state(system, 1)
    s = np.array([0.25, -1.5, 0.75], dtype=np.float32)
    s64 = s.astype(np.float64)
    for mb in bodies:
        for name in ("location", "velocity", "acceleration"):
            f = getattr(mb, f"find_station_{name}_in_ground")
            fast = f(state, s64)
            assert isinstance(fast, np.ndarray) and fast.flags.writeable and fast.shape == (3,)
            assert np.array_equal(f(state, list(s64)), fast) and np.array_equal(f(state, tuple(s64)), fast)
            assert np.array_equal(f(state, s64[::-1].copy()[::-1]), fast)  # a strided array
            assert_close(f(state, s), fast, margin=MARGIN, scale=_norm(fast) + 10.0)
        # integer stations are exact in both
        assert np.array_equal(mb.find_station_location_in_ground(state, [1, 0, 2]),
                              mb.find_station_location_in_ground(state, np.array([1.0, 0.0, 2.0])))


def test_getters_return_what_they_returned():
    """get_body_transform: fresh read-only copies of R_GB and p_GB; get_body_origin_location,
    get_body_velocity, get_body_acceleration: read-only views of the realized arrays (they follow a
    later realization), bitwise those of the Python path."""
    system, matter, bodies = _chain()
    state = _random_state(system, 2)
    cache = matter._cache(state)
    for mb in bodies:
        i = mb.get_mobilized_body_index()
        R_ref, p_ref = matter._body_pose(state, i)
        X = mb.get_body_transform(state)
        assert np.array_equal(X.R.matrix, R_ref) and np.array_equal(X.p, p_ref)
        for a in (X.R.matrix, X.p):
            assert not a.flags.writeable and not np.shares_memory(a, cache.ws.R_GB) \
                and not np.shares_memory(a, cache.ws.p_GB)
        assert X.R.matrix.dtype == np.float64 and X.R.matrix.shape == (3, 3) and X.p.shape == (3,)
        for getter, ref, base in ((mb.get_body_origin_location, p_ref, cache.ws.p_GB),
                                  (mb.get_body_velocity, matter._body_velocity(state, i), cache.ws.V_GB),
                                  (mb.get_body_acceleration, matter._body_acceleration(state, i), cache.A_GB)):
            got = getter(state)
            assert np.array_equal(got, ref) and got.shape == ref.shape
            assert not got.flags.writeable and np.shares_memory(got, base)
            with pytest.raises(ValueError, match="read-only"):
                got[0] = 1.0
    V5 = bodies[-1].get_body_velocity(state)
    before = V5.copy()
    bodies[0].set_u(state, np.asarray(bodies[0].get_u(state)) + 0.5)
    system.realize(state, Stage.Velocity)
    assert not np.array_equal(V5, before)  # a view of the State's array, as it was


# ====================================================================== forces in Ground
def test_force_helpers_add_what_numpy_adds():
    """add_in_station_force / apply_force_to_body_point add (R s) x f and f to the body's row;
    the torque helpers add the torque; apply_body_force the spatial force; the mobility helpers the
    scalar at the body's u offset. Nothing else changes."""
    system, matter, bodies = _chain()
    state = _random_state(system, 3)
    rng = np.random.default_rng(4)
    nb, nu = matter.get_num_bodies(), state.get_nu()
    F0, f0 = rng.normal(size=(nb, 2, 3)), rng.normal(size=nu)
    for mb in bodies:
        i = mb.get_mobilized_body_index()
        R = mb.get_body_transform(state).R.matrix
        s, force, torque, F6 = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), rng.normal(size=(2, 3))
        expected = F0.copy()
        expected[i, 0] += np.cross(R @ s, force)
        expected[i, 1] += force
        for add in (lambda F: matter.add_in_station_force(state, mb, s, force, F),
                    lambda F: matter.add_in_station_force(state, i, list(s), tuple(force), F),
                    lambda F: mb.apply_force_to_body_point(state, s, force, F)):
            F = F0.copy()
            add(F)
            assert_close(F, expected, margin=MARGIN, scale=_norm(F0) + 3 * _norm(s) * _norm(force))
            rows = np.arange(nb) != i
            assert np.array_equal(F[rows], F0[rows]) and np.array_equal(F[i, 1], expected[i, 1])
        for add in (lambda F: matter.add_in_body_torque(state, mb, torque, F),
                    lambda F: mb.apply_body_torque(state, torque, F)):
            F = F0.copy()
            add(F)
            expected = F0.copy()
            expected[i, 0] += torque
            assert np.array_equal(F, expected)
        F = F0.copy()
        mb.apply_body_force(state, F6, F)
        expected = F0.copy()
        expected[i] += F6
        assert np.array_equal(F, expected)
        u0 = int(matter._layout(state).uoff[i])
        for k in range(mb.get_num_u(state)):
            for add in (lambda f: matter.add_in_mobility_force(state, mb, k, 0.75, f),
                        lambda f: mb.apply_one_mobility_force(state, k, 0.75, f)):
                f = f0.copy()
                add(f)
                expected = f0.copy()
                expected[u0 + k] += 0.75
                assert np.array_equal(f, expected)


def test_a_station_force_in_a_custom_force_moves_the_system_as_the_built_in_one():
    """A Force.Custom applying a constant force at a station through add_in_station_force gives the
    accelerations of Force.ConstantForce at that station (the same kernel arithmetic: bitwise)."""
    station, force = np.array([0.2, -0.3, 0.1]), np.array([1.5, -2.0, 0.5])

    class Push(Force.Custom.Implementation):
        def __init__(self, matter, body):
            super().__init__()
            self.matter, self.body = matter, body

        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            self.matter.add_in_station_force(state, self.body, station, force, body_forces)

    udots = []
    for custom in (False, True):
        system, matter, bodies = _chain()
        forces = system.get_force_subsystems()[0]
        if custom:
            Force.Custom(forces, Push(matter, bodies[2]))
        else:
            Force.ConstantForce(forces, bodies[2], station, force)
        udots.append(np.array(_random_state(system, 5).get_udot()))
    assert np.array_equal(udots[0], udots[1])


# ====================================================================== bad input
def _bad_calls(matter, bodies, other):
    mb = bodies[1]
    z3 = np.zeros(3)
    nan3 = np.array([0.0, np.nan, 1.0])
    return [
        (ValueError, r"find_station_location_in_ground\(\): expected 3 values, got shape \(2,\)",
         lambda s, F, f: mb.find_station_location_in_ground(s, [1.0, 2.0])),
        (ValueError, r"find_station_velocity_in_ground\(\): expected 3 values, got shape \(3, 1\)",
         lambda s, F, f: mb.find_station_velocity_in_ground(s, np.zeros((3, 1)))),
        (ValueError, r"find_station_acceleration_in_ground\(\): values must be finite",
         lambda s, F, f: mb.find_station_acceleration_in_ground(s, nan3)),
        (ValueError, r"find_station_location_in_ground\(\): values must be finite",
         lambda s, F, f: mb.find_station_location_in_ground(s, [0.0, np.inf, 0.0])),
        (ValueError, r"add_in_station_force\(\): station: expected a finite 3-vector",
         lambda s, F, f: matter.add_in_station_force(s, mb, nan3, z3, F)),
        (ValueError, r"add_in_station_force\(\): force: expected a finite 3-vector",
         lambda s, F, f: matter.add_in_station_force(s, mb, z3, [1.0, 2.0, 3.0, 4.0], F)),
        (ValueError, r"add_in_body_torque\(\): torque: expected a finite 3-vector",
         lambda s, F, f: matter.add_in_body_torque(s, mb, nan3, F)),
        (ValueError, r"apply_force_to_body_point\(\): force: values must be finite",
         lambda s, F, f: mb.apply_force_to_body_point(s, z3, nan3, F)),
        (ValueError, r"apply_force_to_body_point\(\): station: expected 3 values",
         lambda s, F, f: mb.apply_force_to_body_point(s, [0.0], z3, F)),
        (ValueError, r"apply_body_torque\(\): torque: values must be finite",
         lambda s, F, f: mb.apply_body_torque(s, nan3, F)),
        (ValueError, r"apply_body_force\(\): F must be a finite \(2, 3\) array",
         lambda s, F, f: mb.apply_body_force(s, np.full((2, 3), np.nan), F)),
        (ValueError, "body .* belongs to .*, not to this System",
         lambda s, F, f: matter.add_in_station_force(s, other, z3, z3, F)),
        (ValueError, "body .* belongs to .*, not to this System",
         lambda s, F, f: matter.add_in_body_torque(s, other, z3, F)),
        (IndexError, "no mobilized body 99", lambda s, F, f: matter.add_in_station_force(s, 99, z3, z3, F)),
        (IndexError, r"no u\[1\]", lambda s, F, f: matter.add_in_mobility_force(s, mb, 1, 1.0, f)),
        (IndexError, r"no u\[-1\]", lambda s, F, f: mb.apply_one_mobility_force(s, -1, 1.0, f)),
    ]


def test_bad_input_is_refused_with_its_message_and_nothing_is_written():
    system, matter, bodies = _chain()
    other = _chain()[2][1]
    state = _random_state(system, 6)
    nb, nu = matter.get_num_bodies(), state.get_nu()
    assert bodies[1].get_num_u(state) == 1  # (a Pin: the u index messages above)
    for exc, match, call in _bad_calls(matter, bodies, other):
        F, f = np.ones((nb, 2, 3)), np.ones(nu)
        with pytest.raises(exc, match=match):
            call(state, F, f)
        assert np.array_equal(F, np.ones((nb, 2, 3))) and np.array_equal(f, np.ones(nu))


@pytest.mark.parametrize("needed, call", [
    ("Position", lambda mb, s, F, f: mb.find_station_location_in_ground(s, [0.0, 0.0, 1.0])),
    ("Position", lambda mb, s, F, f: mb.get_body_transform(s)),
    ("Position", lambda mb, s, F, f: mb.get_body_origin_location(s)),
    ("Position", lambda mb, s, F, f: mb.apply_force_to_body_point(s, [0.0, 0.0, 1.0], [1.0, 0.0, 0.0], F)),
    ("Position", lambda mb, s, F, f: mb.get_matter_subsystem().add_in_station_force(s, mb, np.ones(3), np.ones(3), F)),
    ("Velocity", lambda mb, s, F, f: mb.find_station_velocity_in_ground(s, [0.0, 0.0, 1.0])),
    ("Velocity", lambda mb, s, F, f: mb.get_body_velocity(s)),
    ("Acceleration", lambda mb, s, F, f: mb.find_station_acceleration_in_ground(s, [0.0, 0.0, 1.0])),
    ("Acceleration", lambda mb, s, F, f: mb.get_body_acceleration(s)),
])
def test_a_stage_too_low_is_refused_as_before(needed, call):
    """One stage below what a helper needs raises StageTooLowError naming the stage, and nothing is
    written; at that stage the call succeeds."""
    system, matter, bodies = _chain()
    state = _random_state(system, 7, Stage[needed].prev())
    F, f = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(state.get_nu())
    with pytest.raises(StageTooLowError, match=needed):
        call(bodies[2], state, F, f)
    assert not F.any()
    system.realize(state, Stage[needed])
    call(bodies[2], state, F, f)


def test_a_state_of_another_system_is_refused():
    system, matter, bodies = _chain()
    other_system = _chain()[0]
    other = _random_state(other_system, 8)
    F = np.zeros((matter.get_num_bodies(), 2, 3))
    for call in (lambda: bodies[1].find_station_location_in_ground(other, np.zeros(3)),
                 lambda: bodies[1].get_body_velocity(other),
                 lambda: bodies[1].apply_force_to_body_point(other, np.zeros(3), np.ones(3), F),
                 lambda: matter.add_in_station_force(other, bodies[1], np.zeros(3), np.ones(3), F),
                 lambda: matter.add_in_mobility_force(other, bodies[1], 0, 1.0, np.zeros(5))):
        with pytest.raises(ValueError, match="State belongs to"):
            call()
    assert not F.any()


# ====================================================================== Constraint.Custom: in the ancestor
def _tree():
    """Ground -> B1 (Free) -> B2 (Ball) -> B3 (Pin), and B1 -> B4 (Gimbal), B1 -> B5 (Slider):
    constrained bodies B3 and B4 have the ancestor B1 (not Ground)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    X = Transform([0.1, -0.4, 0.2])
    b1 = MobilizedBody.Free(matter.get_ground(), X, BODY, Transform([0.0, 0.1, 0.0]))
    b2 = MobilizedBody.Ball(b1, X, BODY, Transform([0.05, 0.2, -0.1]))
    b3 = MobilizedBody.Pin(b2, X, BODY, Transform([0.2, 0.0, 0.1]))
    b4 = MobilizedBody.Gimbal(b1, Transform([-0.3, 0.1, 0.0]), BODY, X)
    b5 = MobilizedBody.Slider(b1, Transform([0.0, 0.3, 0.1]), BODY, X)
    return system, matter, (b1, b2, b3, b4, b5)


class Reader(Constraint.Custom.Implementation):
    """No equations: registers bodies and mobilizers, so that the helpers can be read."""

    def __init__(self, bodies, mobilizers):
        super().__init__(bodies[0].get_matter_subsystem(), 0, 0, 0)
        self.cbs = [self.add_constrained_body(b) for b in bodies]
        self.cms = [self.add_constrained_mobilizer(m) for m in mobilizers]


def _in_ancestor(A, B, state, s):
    """Independent numpy: p_AS, v_AS, a_AS of station s of B in A by the transport theorem, from the
    Ground quantities of B's station and of A's point coincident with it; and the scales of the terms
    each is computed from (positions, velocities, accelerations)."""
    R_GA, p_GA, (w_A, v_A), (b_A, a_A) = _ground_motion(A, state)
    _, p_GB, (w_B, v_B), (b_B, a_B) = _ground_motion(B, state)
    p_S, v_S, a_S = (B.find_station_location_in_ground(state, s), B.find_station_velocity_in_ground(state, s),
                     B.find_station_acceleration_in_ground(state, s))
    s_A = R_GA.T @ (p_S - p_GA)  # A's point at S, in A
    v_P, a_P = A.find_station_velocity_in_ground(state, s_A), A.find_station_acceleration_in_ground(state, s_A)
    v_rel = v_S - v_P
    lever = 3 * max(_norm(p_S - p_GA), _norm(p_S - p_GB), _norm(p_GB - p_GA))
    w, b = max(_norm(w_A), _norm(w_B)), max(_norm(b_A), _norm(b_B))
    scale_p = max(_norm(p_S), _norm(p_GA), _norm(p_GB)) + lever
    scale_v = max(_norm(v_S), _norm(v_P), _norm(v_A), _norm(v_B)) + 3 * w * lever
    scale_a = max(_norm(a_S), _norm(a_P), _norm(a_A), _norm(a_B)) + 3 * (b + w * w) * lever + 6 * w * scale_v
    return (s_A, R_GA.T @ v_rel, R_GA.T @ (a_S - a_P - 2 * np.cross(w_A, v_rel))), (scale_p, scale_v, scale_a)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), s=STATIONS, ground=st.booleans())
def test_ancestor_frame_helpers_match_the_transport_theorem(seed, s, ground):
    """The ancestor-frame helpers of a Custom constraint -- get_station_location and the new
    get_station_velocity and get_station_acceleration, get_body_origin_location, get_body_velocity,
    get_body_acceleration, get_body_transform -- against numpy from Ground quantities, with the
    ancestor A a moving body (B1, of constrained B3 and B4) or Ground (B3 and a child of Ground); in
    Ground the station helpers are MobilizedBody's, bitwise."""
    system, matter, (b1, b2, b3, b4, b5) = _tree()
    if ground:
        b6 = MobilizedBody.Ball(matter.get_ground(), Transform([0.5, 0.0, 0.0]), BODY, Transform())
        constrained = [b3, b6]
    else:
        constrained = [b3, b4]
    impl = Reader(constrained, [b5, b3])
    Constraint.Custom(impl)
    A = impl.get_ancestor_mobilized_body()
    assert A is (matter.get_ground() if ground else b1)
    state = _random_state(system, seed)
    m = 4 * MARGIN
    for cb, B in zip(impl.cbs, constrained):
        (p_AS, v_AS, a_AS), (sp, sv, sa) = _in_ancestor(A, B, state, s)
        assert_close(impl.get_station_location(state, cb, s), p_AS, margin=m, scale=sp)
        assert_close(impl.get_station_velocity(state, cb, s), v_AS, margin=m, scale=sv)
        assert_close(impl.get_station_acceleration(state, cb, s), a_AS, margin=m, scale=sa)
        X_AB = (~A.get_body_transform(state)) * B.get_body_transform(state)
        X = impl.get_body_transform(state, cb)
        assert_close(X.R.matrix, X_AB.R.matrix, margin=MARGIN, scale=1.0)
        assert_close(X.p, X_AB.p, margin=m, scale=sp)
        assert not X.p.flags.writeable and not X.R.matrix.flags.writeable
        (p0, v0, a0), _ = _in_ancestor(A, B, state, np.zeros(3))
        assert_close(impl.get_body_origin_location(state, cb), p0, margin=m, scale=sp)
        V, Acc = impl.get_body_velocity(state, cb), impl.get_body_acceleration(state, cb)
        assert_close(V[1], v0, margin=m, scale=sv)
        assert_close(Acc[1], a0, margin=m, scale=sa)
        R_GA = A.get_body_transform(state).R.matrix
        (w_A, _), (al_A, _) = A.get_body_velocity(state), A.get_body_acceleration(state)
        (w_B, _), (al_B, _) = B.get_body_velocity(state), B.get_body_acceleration(state)
        assert_close(V[0], R_GA.T @ (w_B - w_A), margin=MARGIN, scale=max(_norm(w_A), _norm(w_B)))
        assert_close(Acc[0], R_GA.T @ (al_B - al_A - np.cross(w_A, w_B)), margin=m, scale=sa)
        # the station helpers at the body origin are the body helpers
        assert_close(impl.get_station_velocity(state, cb, np.zeros(3)), V[1], margin=MARGIN, scale=sv)
        assert_close(impl.get_station_acceleration(state, cb, np.zeros(3)), Acc[1], margin=MARGIN, scale=sa)
        if ground:
            assert np.array_equal(impl.get_station_velocity(state, cb, s), B.find_station_velocity_in_ground(state, s))
            assert np.array_equal(impl.get_station_acceleration(state, cb, s),
                                  B.find_station_acceleration_in_ground(state, s))


def test_ancestor_force_helpers_add_what_numpy_adds():
    system, matter, (b1, b2, b3, b4, b5) = _tree()
    impl = Reader([b3, b4], [b5, b3])
    Constraint.Custom(impl)
    state = _random_state(system, 9)
    rng = np.random.default_rng(10)
    R_GA = b1.get_body_transform(state).R.matrix
    F0 = rng.normal(size=(2, 2, 3))
    for cb, B in zip(impl.cbs, (b3, b4)):
        s, force = rng.normal(size=3), rng.normal(size=3)
        r_A = R_GA.T @ (B.get_body_transform(state).R.matrix @ s)
        expected = F0.copy()
        expected[cb, 0] += np.cross(r_A, force)
        expected[cb, 1] += force
        for station in (s, list(s), s.astype(np.float32).astype(np.float64)):
            F = F0.copy()
            impl.add_in_station_force(state, cb, station, force, F)
            if station is s or isinstance(station, list):
                assert_close(F, expected, margin=MARGIN, scale=_norm(F0) + 3 * _norm(s) * _norm(force))
        F = F0.copy()
        impl.add_in_body_torque(state, cb, force, F)
        expected = F0.copy()
        expected[cb, 0] += force
        assert np.array_equal(F, expected)
    # mobility forces are indexed over the constrained mobilizers' speeds: b5 (1 u) then b3 (1 u)
    f = np.zeros(2)
    impl.add_in_one_mobility_force(state, 1, 0, 2.5, f)
    impl.add_in_one_mobility_force(state, 0, 0, -1.0, f)
    assert np.array_equal(f, [-1.0, 2.5])


def test_ancestor_helpers_refuse_bad_input():
    system, matter, (b1, b2, b3, b4, b5) = _tree()
    impl = Reader([b3, b4], [b5])
    Constraint.Custom(impl)
    state = _random_state(system, 11, Stage.Velocity)
    F = np.zeros((2, 2, 3))
    for call in (lambda: impl.get_station_location(state, 0, [1.0, 2.0]),
                 lambda: impl.get_station_velocity(state, 1, np.zeros((3, 1))),
                 lambda: impl.add_in_station_force(state, 0, np.zeros(4), np.ones(3), F)):
        with pytest.raises(ValueError, match=r"Reader\.(get_station_\w+|add_in_station_force)\(\): station: "
                                             r"expected a 3-vector"):
            call()
    with pytest.raises(IndexError, match="no constrained body 2"):
        impl.get_station_location(state, 2, np.zeros(3))
    with pytest.raises(IndexError, match=r"constrained mobilizer 0 \('/matter/slider'\) has no u\[1\]"):
        impl.add_in_one_mobility_force(state, 0, 1, 1.0, np.zeros(1))
    for getter in (impl.get_station_acceleration, lambda s, cb, _: impl.get_body_acceleration(s, cb)):
        with pytest.raises(StageTooLowError, match="Acceleration"):
            getter(state, 0, np.zeros(3))
    assert not F.any()


class StationRod(Constraint.Custom.Implementation):
    """|p_AS2 - p_AS1|^2 / 2 = d^2 / 2 between stations of two bodies, written with the station
    helpers in the ancestor frame: perr, its derivatives v.r and a.r + v.v, force lambda r."""

    def __init__(self, b1, s1, b2, s2, d):
        super().__init__(b1.get_matter_subsystem(), 1, 0, 0)
        self.c1, self.c2 = self.add_constrained_body(b1), self.add_constrained_body(b2)
        self.s1, self.s2, self.d = np.asarray(s1, float), np.asarray(s2, float), d

    def _r(self, state):
        return self.get_station_location(state, self.c2, self.s2) - self.get_station_location(state, self.c1, self.s1)

    def _v(self, state):
        return self.get_station_velocity(state, self.c2, self.s2) - self.get_station_velocity(state, self.c1, self.s1)

    def realize_position_errors(self, state, mp, perr):
        r = self._r(state)
        perr[0] = (r @ r - self.d * self.d) / 2

    def realize_position_dot_errors(self, state, mp, pverr):
        pverr[0] = self._v(state) @ self._r(state)

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        a = (self.get_station_acceleration(state, self.c2, self.s2)
             - self.get_station_acceleration(state, self.c1, self.s1))
        v = self._v(state)
        paerr[0] = a @ self._r(state) + v @ v

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        f = multipliers[0] * self._r(state)
        self.add_in_station_force(state, self.c2, self.s2, f, body_forces_in_a)
        self.add_in_station_force(state, self.c1, self.s1, -f, body_forces_in_a)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_constraint_written_with_the_station_helpers_passes_the_checker(seed):
    """Inside an evaluation the helpers read the kinematics being evaluated (the trial
    accelerations at the acceleration level): the errors are each other's time derivatives and the
    forces are G^T lambda (simtk.testing.check_constraint, by finite differences), with the ancestor
    B1, and the constrained motion keeps the rod's acceleration error at round-off."""
    system, matter, (b1, b2, b3, b4, b5) = _tree()
    impl = StationRod(b3, [0.1, 0.2, -0.3], b4, [-0.2, 0.1, 0.4], 0.8)
    c = Constraint.Custom(impl)
    assert impl.get_ancestor_mobilized_body() is b1
    state = _random_state(system, seed)
    check_constraint(c, state, assert_ok=True)
    assert abs(c.get_acceleration_errors(state)[0]) < 1e6 * EPS


# ====================================================================== the compiled common case
def test_the_compiled_common_case_is_taken_and_declines_without_writing():
    """core/helpers.pxi through simtk._core: the common inputs take the compiled path (what the
    benchmark times); anything else is declined (None or False) with nothing written, and the
    method's Python path then does the work or raises."""
    from simtk import _core

    system, matter, bodies = _chain()
    state = _random_state(system, 12)
    low = _random_state(system, 12, Stage.Velocity)
    other = _random_state(_chain()[0], 12)
    i, s = 2, np.array([0.1, 0.2, 0.3])
    for station in (s, [0.1, 0.2, 0.3], (0, 1, 2), [np.float64(1.0), 2, 3.5]):
        for order in (0, 1, 2):
            assert _core.mobod_station(matter, state, i, station, order) is not None
    for station in (s.astype(np.float32), [1.0, 2.0], np.zeros((1, 3)), [True, 0.0, 0.0], [2**60, 0, 0],
                    [np.nan, 0.0, 0.0], "abc", None):
        assert _core.mobod_station(matter, state, i, station, 0) is None
    assert _core.mobod_station(matter, low, i, s, 2) is None and _core.mobod_station(matter, low, i, s, 1) is not None
    assert _core.mobod_station(matter, other, i, s, 0) is None
    assert _core.mobod_station(matter, "not a State", i, s, 0) is None
    assert _core.mobod_station(matter, state, 99, s, 0) is None and _core.mobod_row(matter, state, -1, 0) is None
    with pytest.raises(ValueError, match="order"):
        _core.mobod_station(matter, state, i, s, 3)
    nb = matter.get_num_bodies()
    F = np.zeros((nb, 2, 3))
    ro = F.copy()
    ro.flags.writeable = False
    for bad in (ro, np.zeros((nb, 3, 2)), np.zeros((2, 2, 3)), np.zeros((nb, 2, 3), np.float32), F.tolist(),
                np.asfortranarray(np.zeros((nb, 2, 3)))):
        assert not _core.mobod_add_station_force(matter, state, i, s, s, bad)
        assert not _core.add_to_row(bad, i, 0, s)
    assert not _core.add_to_row(F, i, 0, [0.0, np.inf, 0.0]) and not _core.add_to_row(F, i, -1, np.full((2, 3), np.nan))
    assert not F.any()
    with pytest.raises(ValueError, match="read-only"):  # the Python path says it
        matter.add_in_station_force(state, bodies[2], s, s, ro)
    f = np.zeros(state.get_nu())
    for which in (np.int64(0), True, 0.0):
        assert not _core.mobod_add_mobility_force(matter, state, i, which, 1.0, f)
    assert not _core.mobod_add_mobility_force(matter, state, i, 0, "1.0", f)
    assert not f.any()
    matter.add_in_mobility_force(state, bodies[i - 1], np.int64(0), np.float32(1.5), f)  # the Python path converts
    assert f[int(matter._layout(state).uoff[i])] == 1.5
    R, p, V, A = (matter._cache(state).ws.R_GB, matter._cache(state).ws.p_GB, matter._cache(state).ws.V_GB,
                  matter._cache(state).A_GB)
    assert _core.ancestor_station(R, p, V, A, 3, 1, s, 2) is not None
    assert _core.ancestor_station(R, p[:-1], V, A, 3, 1, s, 0) is None
    assert _core.ancestor_station(R, p, None, A, 3, 1, s, 1) is None
    assert _core.ancestor_station(R, p, V, A, 3, nb, s, 0) is None
    assert _core.ancestor_body_motion(R, p, V, None, 3, 1, 2) is None
    assert _core.ancestor_body_pose(R.transpose(0, 2, 1), p, 3, 1) is None  # not C-contiguous
