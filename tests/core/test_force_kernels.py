"""The compiled built-in force kernels (core/forces.pxi) on random trees and random parameters.

Each kernel is compared with a straightforward numpy formula written here, element by element
(np.cross, np.linalg.solve, ...), and the conservative kinds are checked against their own
potential energy by the power law dPE/dt = -(J^T F + f) . u with finite differences.
"""
import numpy as np
import pytest
from core_tree_helpers import random_state, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import _core
from tolerances import assert_close, scale_of

# the unchecked entry points of the force subsystem's hot path
_k = _core._k
ALL_JOINTS = [name for name in _core.JOINT_TYPES if name != "Custom"]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=25, deadline=None)


def setup_tree(seed, joints=ALL_JOINTS, nb=None):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, joints, nb=nb)
    ws = tree.kernels()
    q, u = random_state(rng, ws, tree.joints)
    _core.realize_position(ws, q)
    _core.realize_velocity(ws, u)
    return rng, tree, ws


#: A kernel's forces against the numpy formula: a few dozen flops per element on either side, summed
#: into the rows of the bodies (or mobilities) it touches, up to ten additions per row onto starting
#: values of magnitude ~1 (measured up to 4 EPS on that scale).
MARGIN = 256


def assert_forces(actual, expected, terms: float = 0.0, what: str = "forces") -> None:
    """``actual`` (added by `apply` onto starting values of magnitude <= 1, which are subtracted
    again: the floor of 1) equals ``expected`` to round-off of the larger of |expected| and the
    elements' ``terms`` (contributions that may cancel in a row)."""
    assert_close(actual, expected, margin=MARGIN, scale=scale_of(expected, floor=max(1.0, terms)), what=what)


def apply(ws, fs, F0=None, f0=None):
    """Kernel result added onto random starting values, minus those values (checks it adds)."""
    F0 = np.zeros((ws.nb, 2, 3)) if F0 is None else F0
    f0 = np.zeros(ws.nu) if f0 is None else f0
    F, f = F0.copy(), f0.copy()
    assert _core.add_forces(fs, ws, F, f) == -1
    return F - F0, f - f0


# ---------------------------------------------------------------------- numpy references
def station(ws, b, s):
    r = ws.R_GB[b] @ s
    return r, ws.p_GB[b] + r


def station_velocity(ws, b, r):
    return ws.V_GB[b, 1] + np.cross(ws.V_GB[b, 0], r)


def add_at(F, b, r, f):
    F[b, 0] += np.cross(r, f)
    F[b, 1] += f


def random_pairs(rng, ws, n):
    b1 = rng.integers(0, ws.nb, n)
    b2 = rng.integers(0, ws.nb, n)
    b2[0] = b1[0]  # two stations on one body: both ends add into the same row
    return b1, rng.uniform(-1, 1, (n, 3)), b2, rng.uniform(-1, 1, (n, 3))


def ref_two_point(ws, b1, s1, b2, s2, law):
    """Forces, lengths, and the scale of the forces' terms: the largest element force times one plus
    its lever arms (both ends may add into one body's row and cancel there)."""
    F, lengths, terms = np.zeros((ws.nb, 2, 3)), [], 0.0
    for j in range(len(b1)):
        r1, p1 = station(ws, b1[j], s1[j])
        r2, p2 = station(ws, b2[j], s2[j])
        d = p2 - p1
        L = np.linalg.norm(d)
        lengths.append(L)
        if L == 0.0:
            continue
        e = d / L
        rate = (station_velocity(ws, b2[j], r2) - station_velocity(ws, b1[j], r1)) @ e
        f_on_2 = law(j, L, rate) * e
        add_at(F, b1[j], r1, -f_on_2)
        add_at(F, b2[j], r2, f_on_2)
        terms = max(terms, abs(law(j, L, rate)) * (1.0 + max(np.linalg.norm(r1), np.linalg.norm(r2))))
    return F, np.array(lengths), terms


def xyz_angles(R):
    return np.array([np.arctan2(-R[1, 2], R[2, 2]), np.arcsin(np.clip(R[0, 2], -1, 1)),
                     np.arctan2(-R[0, 1], R[0, 0])])


def hw(a):
    """w_FM (in F) = Hw(a) (body-fixed X-Y-Z angle rates)."""
    c0, s0, c1, s1 = np.cos(a[0]), np.sin(a[0]), np.cos(a[1]), np.sin(a[1])
    return np.array([[1.0, 0.0, s1], [0.0, c0, -s0 * c1], [0.0, s0, c0 * c1]])


def ref_bushing(ws, b1, R1, p1, b2, R2, p2, k6, c6):
    """Forces, energy, and the scale of the forces' terms: each element's generalized force |f| (and
    its stiffness times a unit of angle, for the round-off of the angles) times one plus its lever
    arms, times cond(Hw)^2 (the angles' rates and the torque both go through Hw, ill-conditioned
    near ze = +-pi/2, where the angle ze = arcsin(R_02) is ill-conditioned too)."""
    F, energy, terms = np.zeros((ws.nb, 2, 3)), 0.0, 0.0
    for j in range(len(b1)):
        R_GF, R_GM = ws.R_GB[b1[j]] @ R1[j], ws.R_GB[b2[j]] @ R2[j]
        rF, p_GF = station(ws, b1[j], p1[j])
        rM, p_GM = station(ws, b2[j], p2[j])
        q = np.concatenate([xyz_angles(R_GF.T @ R_GM), R_GF.T @ (p_GM - p_GF)])
        w1, w2 = ws.V_GB[b1[j], 0], ws.V_GB[b2[j], 0]
        v_GF, v_GM = station_velocity(ws, b1[j], rF), station_velocity(ws, b2[j], rM)
        w_FM = R_GF.T @ (w2 - w1)
        v_FM = R_GF.T @ (v_GM - v_GF - np.cross(w1, p_GM - p_GF))
        H = hw(q[:3])
        qdot = np.concatenate([np.linalg.solve(H, w_FM), v_FM])
        f = -(k6[j] * q + c6[j] * qdot)
        torque = R_GF @ np.linalg.solve(H.T, f[:3])
        force = R_GF @ f[3:]
        F[b2[j], 0] += torque + np.cross(rM, force)
        F[b2[j], 1] += force
        F[b1[j], 0] -= torque + np.cross(p_GM - ws.p_GB[b1[j]], force)
        F[b1[j], 1] -= force
        energy += 0.5 * np.sum(k6[j] * q * q)
        lever = 1.0 + max(np.linalg.norm(rM), np.linalg.norm(p_GM - ws.p_GB[b1[j]]))
        terms = max(terms, (np.abs(f).max() + k6[j].max()) * lever * np.linalg.cond(H) ** 2)
    return F, energy, terms


def random_rotations(rng, n):
    out = []
    for _ in range(n):
        Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
        Q = Q @ np.diag(np.sign(np.diag(R)))
        out.append(Q if np.linalg.det(Q) > 0 else -Q)
    return np.array(out)


def random_mobilities(rng, ws, n):
    ui = rng.integers(0, ws.nu, n)
    qi = rng.integers(0, ws.nq, n)
    return qi, ui


# ---------------------------------------------------------------------- kernels vs numpy
@given(seed=SEEDS)
@FAST
def test_uniform_gravity_matches_numpy(seed):
    """Gravity: m_i sum(g) at each mass center (torque (R_GB p_BC) x F about the origin), Ground
    untouched; PE = sum_e -sum_i m_i g_e . p_GCi - |g_e| h0_e sum_i m_i."""
    rng, tree, ws = setup_tree(seed)
    n = int(rng.integers(1, 4))
    g, h0 = rng.uniform(-10, 10, (n, 3)), rng.uniform(-2, 2, n)
    fs = _core.uniform_gravity_set(g, h0)
    F0 = rng.uniform(-1, 1, (ws.nb, 2, 3))
    F, f = apply(ws, fs, F0=F0)
    expected = np.zeros((ws.nb, 2, 3))
    for i in range(1, ws.nb):
        add_at(expected, i, ws.R_GB[i] @ tree.p_BC[i], ws.mass[i] * g.sum(axis=0))
    # the elements' g add up before the mass scales them: the terms are m |g_e| (1 + |r|)
    lever = 1.0 + np.abs(np.einsum("bij,bj->bi", ws.R_GB, tree.p_BC)).max()
    assert_forces(F, expected, ws.mass.max() * np.abs(g).sum() * lever)
    assert not f.any()
    p_C = ws.p_GB[1:] + np.einsum("bij,bj->bi", ws.R_GB[1:], tree.p_BC[1:])
    m = tree.mass[1:]
    pe = sum(-m @ (p_C @ g[e]) - np.linalg.norm(g[e]) * h0[e] * m.sum() for e in range(n))
    # a sum of signed terms m_i |g_e| (|p_Ci| + |h0_e|): that sum is the scale
    pe_terms = sum(np.linalg.norm(g[e]) * (m @ np.linalg.norm(p_C, axis=1) + abs(h0[e]) * m.sum()) for e in range(n))
    assert_close(_core.force_energy(fs, ws), pe, margin=MARGIN, scale=pe_terms, what="energy")


@given(seed=SEEDS)
@FAST
def test_two_point_spring_damper_constant_match_numpy(seed):
    """Two-point elements: force a e on station 2 and -a e on station 1 (e the unit vector from 1 to
    2) with a = -k (L - x0), -c dL/dt, or f; PE k/2 (L - x0)^2, 0 and -f L."""
    rng, tree, ws = setup_tree(seed)
    n = int(rng.integers(1, 6))
    b1, s1, b2, s2 = random_pairs(rng, ws, n)
    k, x0, c, fc = (rng.uniform(0, 20, n), rng.uniform(0, 2, n), rng.uniform(0, 5, n),
                    rng.uniform(-5, 5, n))
    # (energy, the scale of its terms): L - x0 cancels, so the scale is k (L + x0)^2
    cases = [
        (_core.two_point_linear_spring_set(b1, s1, b2, s2, k, x0), lambda j, L, rate: -k[j] * (L - x0[j]),
         lambda L: (np.sum(0.5 * k * (L - x0) ** 2), np.sum(k * (L + x0) ** 2))),
        (_core.two_point_linear_damper_set(b1, s1, b2, s2, c), lambda j, L, rate: -c[j] * rate,
         lambda L: (0.0, 0.0)),  # no energy: exactly zero
        (_core.two_point_constant_force_set(b1, s1, b2, s2, fc), lambda j, L, rate: fc[j],
         lambda L: (-np.sum(fc * L), np.sum(np.abs(fc) * L))),
    ]
    for fs, law, energy in cases:
        F, f = apply(ws, fs, F0=rng.uniform(-1, 1, (ws.nb, 2, 3)))
        expected, lengths, terms = ref_two_point(ws, b1, s1, b2, s2, law)
        assert_forces(F, expected, terms)
        assert not f.any()
        pe, pe_terms = energy(lengths)
        assert_close(_core.force_energy(fs, ws), pe, margin=MARGIN, scale=pe_terms, what="energy")


def test_coincident_stations_apply_no_force():
    """Stations at the same point have no line of action: no force (and PE k/2 x0^2)."""
    rng, tree, ws = setup_tree(3)
    fs = _core.two_point_linear_spring_set([1], [[0.1, 0.2, 0.3]], [1], [[0.1, 0.2, 0.3]], [10.0], [0.5])
    F, _ = apply(ws, fs)
    assert not F.any()
    assert _core.force_energy(fs, ws) == 0.5 * 10.0 * 0.25  # L = 0 exactly; halves and 10 x 0.25: exact


@given(seed=SEEDS)
@FAST
def test_mobility_elements_match_numpy(seed):
    """Mobility elements add -k (q - q0), -c u, f and the one-sided stop force at their u index;
    PE k/2 (q - q0)^2 for the spring, k/2 (penetration)^2 for the stop."""
    rng, tree, ws = setup_tree(seed)
    n = int(rng.integers(1, 6))
    qi, ui = random_mobilities(rng, ws, n)
    q, u = ws.q, ws.u
    k, q0, c, f = rng.uniform(0, 20, n), rng.uniform(-1, 1, n), rng.uniform(0, 5, n), rng.uniform(-5, 5, n)
    d = rng.uniform(0, 2, n)
    lo = q[qi] + rng.uniform(-0.5, 0.5, n)
    hi = lo + rng.uniform(0, 0.6, n)
    f0 = rng.uniform(-1, 1, ws.nu)

    def ref_add(values):
        out = np.zeros(ws.nu)
        np.add.at(out, ui, values)
        return out

    below, above = np.maximum(lo - q[qi], 0.0), np.maximum(q[qi] - hi, 0.0)
    stop = k * below * np.maximum(1 - d * u[ui], 0) - k * above * np.maximum(1 + d * u[ui], 0)
    # (forces, energy, the scale of the energy's terms: differences of q's cancel, their sums don't)
    reach = np.abs(q[qi]) + np.maximum(np.abs(q0), np.maximum(np.abs(lo), np.abs(hi)))
    terms = np.sum(k * reach ** 2)
    cases = [
        (_core.mobility_linear_spring_set(qi, ui, k, q0), -k * (q[qi] - q0), np.sum(0.5 * k * (q[qi] - q0) ** 2),
         terms),
        (_core.mobility_linear_damper_set(ui, c), -c * u[ui], 0.0, 0.0),  # no energy: exactly zero
        (_core.mobility_constant_force_set(ui, f), f, 0.0, 0.0),
        (_core.mobility_linear_stop_set(qi, ui, k, d, lo, hi), stop, np.sum(0.5 * k * (below ** 2 + above ** 2)),
         terms),
    ]
    for fs, values, pe, pe_terms in cases:
        F, got = apply(ws, fs, f0=f0)
        assert not F.any()
        # several elements may add into one mobility: their magnitudes are the terms
        assert_forces(got, ref_add(values), scale_of(k * reach * (1 + d * np.abs(u[ui])), c * u[ui], f))
        assert_close(_core.force_energy(fs, ws), pe, margin=MARGIN, scale=pe_terms, what="energy")
    # energy from a q other than the workspace's
    q_other = q + rng.uniform(-0.3, 0.3, ws.nq)
    fs = _core.mobility_linear_spring_set(qi, ui, k, q0)
    assert_close(_core.force_energy(fs, ws, q_other), np.sum(0.5 * k * (q_other[qi] - q0) ** 2), margin=MARGIN,
                 scale=np.sum(k * (np.abs(q_other[qi]) + np.abs(q0)) ** 2), what="energy at q_other")


@given(seed=SEEDS)
@FAST
def test_global_damper_and_body_constants_match_numpy(seed):
    """GlobalDamper adds -sum(c) u; ConstantForce adds f at R_GB p_BS; ConstantTorque adds t."""
    rng, tree, ws = setup_tree(seed)
    n = int(rng.integers(1, 5))
    c = rng.uniform(0, 3, n)
    F, f = apply(ws, _core.global_damper_set(c), f0=rng.uniform(-1, 1, ws.nu))
    assert not F.any()
    assert_forces(f, -c.sum() * ws.u)
    b = rng.integers(0, ws.nb, n)
    s, fv, tv = rng.uniform(-1, 1, (n, 3)), rng.uniform(-5, 5, (n, 3)), rng.uniform(-5, 5, (n, 3))
    F, f = apply(ws, _core.constant_force_set(b, s, fv), F0=rng.uniform(-1, 1, (ws.nb, 2, 3)))
    expected = np.zeros((ws.nb, 2, 3))
    for j in range(n):
        add_at(expected, b[j], ws.R_GB[b[j]] @ s[j], fv[j])
    assert_forces(F, expected, np.abs(fv).max() * (1.0 + np.abs(s).max() * np.sqrt(3)))  # |R s| <= sqrt(3) max|s|
    assert not f.any()
    F, f = apply(ws, _core.constant_torque_set(b, tv))
    expected = np.zeros((ws.nb, 2, 3))
    np.add.at(expected[:, 0], b, tv)
    assert_forces(F, expected, np.abs(tv).max())
    assert not f.any()


@given(seed=SEEDS)
@FAST
def test_linear_bushing_matches_numpy(seed):
    """LinearBushing: f = -(k6 q + c6 qdot) on the X-Y-Z angles and p_FM of F relative to M, as the
    torque Hw^-T f_ang and force f_lin (in F) on b2 at M's origin and their opposite on b1 (the numpy
    reference solves with Hw; the kernel inverts it in closed form); PE = 1/2 sum k6 q^2."""
    rng, tree, ws = setup_tree(seed)
    n = int(rng.integers(1, 4))
    b1, p1, b2, p2 = random_pairs(rng, ws, n)
    R1, R2 = random_rotations(rng, n), random_rotations(rng, n)
    k6, c6 = rng.uniform(0, 50, (n, 6)), rng.uniform(0, 5, (n, 6))
    fs = _core.linear_bushing_set(b1, R1, p1, b2, R2, p2, k6, c6)
    F, f = apply(ws, fs, F0=rng.uniform(-1, 1, (ws.nb, 2, 3)))
    expected, pe, terms = ref_bushing(ws, b1, R1, p1, b2, R2, p2, k6, c6)
    assert_forces(F, expected, terms)  # (terms include cond(Hw)^2: up to ~2.5e4 at these random rotations)
    assert not f.any()
    # 1/2 sum k6 q^2, a sum of positive terms; the angles' round-off is on the scale of a radian
    assert_close(_core.force_energy(fs, ws), pe, margin=MARGIN, scale=pe + np.sum(k6), what="energy")


def test_bushing_with_non_finite_kinematics_is_reported_and_left_out():
    """A bushing whose forces come out non-finite is reported by index and adds nothing; the other
    elements of the set still add theirs."""
    rng, tree, ws = setup_tree(11, nb=6)
    eye = np.eye(3)[None].repeat(2, axis=0)
    fs = _core.linear_bushing_set([0, 0], eye, np.zeros((2, 3)), [2, 3], eye, np.zeros((2, 3)),
                                  np.ones((2, 6)), np.ones((2, 6)))
    ws.V_GB[3, 0, 0] = np.nan  # only the second element reads body 3's velocity
    F = np.zeros((ws.nb, 2, 3))
    assert _core.add_forces(fs, ws, F, np.zeros(ws.nu)) == 1
    assert np.isfinite(F).all() and not F[3].any() and F[2].any()
    assert _k.add_force_sets((_core.global_damper_set([0.0]), fs), ws, F, np.zeros(ws.nu)) == (1, 1)


# ---------------------------------------------------------------------- a law: power of conservative forces
@given(seed=SEEDS)
@settings(max_examples=15, deadline=None)
def test_conservative_kinds_lose_potential_energy_at_the_rate_of_their_power(seed):
    """For gravity, two-point springs and constant forces, mobility springs and stops (on qdot = u
    mobilities) and bushings without damping: dPE/dt along qdot = N u equals -(J^T F + f) . u, with
    dPE/dt by central differences of the kernels' energies."""
    rng, tree, ws = setup_tree(seed)
    one_dof = [i for i in range(1, ws.nb) if tree.joints[i] in ("Pin", "Slider", "Screw")]
    n = 3
    b1, s1, b2, s2 = random_pairs(rng, ws, n)
    R1, R2 = random_rotations(rng, n), random_rotations(rng, n)
    sets = [
        _core.uniform_gravity_set(rng.uniform(-10, 10, (1, 3)), [0.3]),
        _core.two_point_linear_spring_set(b1, s1, b2, s2, rng.uniform(1, 20, n), rng.uniform(0, 1, n)),
        _core.two_point_constant_force_set(b1, s1, b2, s2, rng.uniform(-5, 5, n)),
        _core.linear_bushing_set(b1, R1, s1, b2, R2, s2, rng.uniform(1, 20, (n, 6)), np.zeros((n, 6))),
    ]
    if one_dof:
        bodies = rng.choice(one_dof, 2)
        qi, ui = ws.qoff[bodies], ws.uoff[bodies]
        q = ws.q[qi]
        sets += [_core.mobility_linear_spring_set(qi, ui, [3.0, 7.0], q + [0.2, -0.3]),
                 _core.mobility_linear_stop_set(qi, ui, [30.0, 30.0], [0.0, 0.0], q + [0.1, -0.5], q + [0.4, -0.2])]
    q, qdot, u = ws.q.copy(), ws.qdot.copy(), ws.u.copy()
    F, f = np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu)
    for fs in sets:
        assert _core.add_forces(fs, ws, F, f) == -1
    power = (_core.jacobian_transpose(ws, F) + f) @ u

    def energy(qq):
        _core.realize_position(ws, qq)
        return sum(_core.force_energy(fs, ws) for fs in sets)

    h = 1e-6
    rate = (energy(q + h * qdot) - energy(q - h * qdot)) / (2 * h)
    assert rate == pytest.approx(-power, rel=1e-5, abs=1e-5)  # the central difference's accuracy


# ---------------------------------------------------------------------- the batch entry points
def test_add_force_sets_zeroes_on_request_and_accumulate_adds():
    """add_force_sets adds every set's forces (onto zeros when asked); accumulate_forces adds one
    pair of arrays into another; forces_finite sees a NaN in either."""
    rng, tree, ws = setup_tree(5)
    sets = (_core.uniform_gravity_set([[0, -9.81, 0]], [0.0]), _core.global_damper_set([2.0]))
    one_by_one_F, one_by_one_f = np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu)
    for fs in sets:
        _core.add_forces(fs, ws, one_by_one_F, one_by_one_f)
    F, f = np.full((ws.nb, 2, 3), 7.0), np.full(ws.nu, 7.0)
    assert _k.add_force_sets(sets, ws, F, f, True) is None
    assert np.array_equal(F, one_by_one_F) and np.array_equal(f, one_by_one_f)
    _k.add_force_sets(sets, ws, F, f, False)
    # the sets added again onto their own sum: a rounding or two against 2 x (their sum)
    assert_close(F, 2 * one_by_one_F, margin=16, what="F")
    assert_close(f, 2 * one_by_one_f, margin=16, what="f")
    G, g = np.ones((ws.nb, 2, 3)), np.ones(ws.nu)
    _k.accumulate_forces(F, f, G, g)
    assert np.array_equal(G, F + 1) and np.array_equal(g, f + 1)
    assert _k.forces_finite(G, g)
    g[-1] = np.nan
    assert not _k.forces_finite(G, g)


# ---------------------------------------------------------------------- validation
def test_builders_reject_bad_input_naming_the_kind():
    """The checked builders name the kind and the argument at fault."""
    with pytest.raises(ValueError, match="TwoPointLinearSpring.*bodies.*negative"):
        _core.two_point_linear_spring_set([-1], [[0, 0, 0]], [1], [[0, 0, 0]], [1.0], [0.0])
    with pytest.raises(ValueError, match="TwoPointLinearDamper.*stations.*not finite"):
        _core.two_point_linear_damper_set([0], [[0, np.nan, 0]], [1], [[0, 0, 0]], [1.0])
    with pytest.raises(ValueError, match="UniformGravity.*params.*not finite"):
        _core.uniform_gravity_set([[0, -9.81, np.inf]], [0.0])
    with pytest.raises(ValueError, match="MobilityLinearSpring.*integers"):
        _core.mobility_linear_spring_set([0.5], [0], [1.0], [0.0])
    with pytest.raises(ValueError, match="LinearBushing.*R_B1F.*rotation"):
        _core.linear_bushing_set([0], 2 * np.eye(3)[None], [[0, 0, 0]], [1], np.eye(3)[None], [[0, 0, 0]],
                                 np.ones((1, 6)), np.ones((1, 6)))
    with pytest.raises(ValueError, match="unknown force kind"):
        _core.make_force_set("Spring", params=np.zeros((1, 1)))
    with pytest.raises(ValueError, match=r"ConstantTorque.*shape \(n, 3\)"):
        _core.constant_torque_set([1], [[1.0, 2.0]])


def test_sets_that_do_not_fit_the_tree_or_bad_accumulators_are_refused():
    """A set naming a body or mobility the tree lacks, or accumulators of the wrong shape, raise
    ValueError instead of touching memory out of bounds."""
    rng, tree, ws = setup_tree(7, nb=5)
    far = _core.constant_torque_set([ws.nb], [[1.0, 0, 0]])
    with pytest.raises(ValueError, match="out of range"):
        _core.add_forces(far, ws, np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu))
    with pytest.raises(ValueError, match="do not fit"):
        far.add(ws, np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu))
    with pytest.raises(ValueError, match="do not fit"):
        _core.mobility_linear_damper_set([ws.nu], [1.0]).add(ws, np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu))
    ok = _core.constant_torque_set([1], [[1.0, 0, 0]])
    with pytest.raises(ValueError, match="body_forces"):
        ok.add(ws, np.zeros((ws.nb + 1, 2, 3)), np.zeros(ws.nu))
    with pytest.raises(ValueError, match="body_forces"):
        _k.add_force_sets((ok,), ws, np.zeros((ws.nb, 2, 3), dtype=np.float32), np.zeros(ws.nu))
    with pytest.raises(ValueError, match="out"):
        _core.add_forces(ok, ws, np.zeros((ws.nb, 3, 2)), np.zeros(ws.nu))
    with pytest.raises(TypeError):
        _k.add_force_sets((ok, "not a set"), ws, np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu))
