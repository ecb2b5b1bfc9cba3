"""Self-consistency of the compiled sweeps on random trees of every built-in joint.

Each algorithm is checked by another one or by finite differences, never by
values taken from the code under test.
"""
import itertools

import numpy as np
import pytest
from core_tree_helpers import QUATERNION_JOINTS, gravity_forces, quat_to_matrix, random_state, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st

import simtk_core
from simtk import _core
from tolerances import assert_close, scale_of, tol

ALL_JOINTS = [name for name in _core.JOINT_TYPES if name != "Custom"]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=40, deadline=None)


def setup_tree(seed, joints=ALL_JOINTS, nb=None):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, joints, nb=nb)
    ws = tree.kernels()
    q, u = random_state(rng, ws, tree.joints)
    ws.realize_position(q)
    ws.realize_velocity(u)
    return rng, tree, ws, q, u


#: Round-off margins: a recursive sweep over up to 15 bodies (RNEA, ABA, the Jacobians) on each side
#: of a comparison; a few flops per entry.
SWEEP = 2**10
FEW = 64


def cond(ws) -> float:
    """Condition number of the mass matrix: solves (ABA, M^-1) lose that factor to round-off."""
    return float(np.linalg.cond(_core.mass_matrix(ws)))


def dot_terms(a, b) -> float:
    """Scale of a dot product's round-off: the sum of |a_i b_i| (the result may cancel)."""
    return float(np.sum(np.abs(a) * np.abs(b)))


@given(seed=SEEDS)
@FAST
def test_mass_matrix_is_spd_and_equals_rnea_differences(seed):
    """M is symmetric positive definite and M e_j = ID(e_j) - ID(0) (RNEA, any velocity)."""
    rng, tree, ws, q, u = setup_tree(seed)
    M = _core.mass_matrix(ws)
    assert_close(M, M.T, margin=SWEEP, scale=scale_of(M), what="M - M^T")  # composite-body sweep, both halves
    assert np.linalg.eigvalsh(M).min() > 0
    zero_tau, zero_F = np.zeros(ws.nu), np.zeros((ws.nb, 2, 3))
    bias = _core.inverse_dynamics(ws, np.zeros(ws.nu), zero_tau, zero_F)
    cols = np.column_stack([_core.inverse_dynamics(ws, e, zero_tau, zero_F) - bias
                            for e in np.eye(ws.nu)])
    # ID(e_j) - ID(0) cancels the velocity terms: the scale is theirs and M's
    assert_close(cols, M, margin=SWEEP, scale=scale_of(M, bias), what="RNEA columns")


@given(seed=SEEDS)
@FAST
def test_aba_equals_m_inverse_of_forces_minus_bias(seed):
    """ABA: udot = M^-1 (tau + J^T F - bias), and the RNEA residual of that udot is zero."""
    rng, tree, ws, q, u = setup_tree(seed)
    tau = rng.uniform(-3, 3, ws.nu)
    F = gravity_forces(ws) + rng.uniform(-1, 1, (ws.nb, 2, 3))
    M = _core.mass_matrix(ws)
    bias = _core.inverse_dynamics(ws, np.zeros(ws.nu), np.zeros(ws.nu), np.zeros((ws.nb, 2, 3)))
    expected = np.linalg.solve(M, tau + _core.jacobian_transpose(ws, F) - bias)
    udot, _ = _core.forward_dynamics(ws, tau, F)
    # two solves (ABA, LU of M) of a right-hand side whose terms may cancel: cond(M) times the larger
    # of udot and those terms over |M|
    rhs_terms = scale_of(tau, _core.jacobian_transpose(ws, F), bias)
    assert_close(udot, expected, margin=SWEEP, scale=cond(ws) * max(scale_of(expected), rhs_terms / scale_of(M)),
                 what="udot")
    # the residual of the ABA's udot: M udot + bias - tau - J^T F, on the scale of those terms (M udot's
    # as the sums of |M_ij udot_j|: its rows cancel)
    terms = scale_of(np.abs(M) @ np.abs(udot), rhs_terms)
    assert np.abs(_core.inverse_dynamics(ws, udot, tau, F)).max() <= tol(terms, SWEEP)


@given(seed=SEEDS)
@FAST
def test_m_and_m_inverse_products(seed):
    """multiply_by_m equals M x and multiply_by_m_inv undoes it, both in O(n) sweeps."""
    rng, tree, ws, q, u = setup_tree(seed)
    x = rng.normal(size=ws.nu)
    M = _core.mass_matrix(ws)
    Mx = _core.multiply_by_m(ws, x)
    assert_close(Mx, M @ x, margin=SWEEP, scale=scale_of(M) * np.abs(x).sum(), what="M x")
    assert_close(_core.multiply_by_m_inv(ws, Mx), x, margin=SWEEP, scale=cond(ws) * scale_of(x), what="M^-1 M x")


def _angular_velocity_fd(R_minus, R_plus, R, h):
    Rdot = (R_plus - R_minus) / (2 * h)
    W = Rdot @ R.T
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


def _kinematics_at(ws, q, u=None):
    ws.realize_position(q)
    if u is not None:
        ws.realize_velocity(u)
    return ws.R_GB.copy(), ws.p_GB.copy(), ws.R_FM.copy(), ws.p_FM.copy()


@given(seed=SEEDS)
@FAST
def test_velocities_are_derivatives_of_positions(seed):
    """V_GB and V_FM equal central differences of X_GB(q), X_FM(q) along qdot = N u.

    This checks H_FM, the assembly into Ground and N for every joint type."""
    rng, tree, ws, q, u = setup_tree(seed)
    qdot, V_GB, V_FM = ws.qdot.copy(), ws.V_GB.copy(), ws.V_FM.copy()
    other = ws.copy()
    h = 1e-6  # central differences: truncation ~h^2, round-off ~EPS/h ~ 1e-10; atol 1e-7 is theirs
    Rm, pm, RFm, pFm = _kinematics_at(other, q - h * qdot)
    Rp, pp, RFp, pFp = _kinematics_at(other, q + h * qdot)
    for i in range(1, ws.nb):
        w = _angular_velocity_fd(Rm[i], Rp[i], ws.R_GB[i], h)
        assert np.allclose(V_GB[i, 0], w, atol=1e-7), (tree.joints[i], V_GB[i, 0], w)
        assert np.allclose(V_GB[i, 1], (pp[i] - pm[i]) / (2 * h), atol=1e-7), tree.joints[i]
        w_FM = _angular_velocity_fd(RFm[i], RFp[i], ws.R_FM[i], h)
        assert np.allclose(V_FM[i, 0], w_FM, atol=1e-7), tree.joints[i]
        assert np.allclose(V_FM[i, 1], (pFp[i] - pFm[i]) / (2 * h), atol=1e-7), tree.joints[i]


@given(seed=SEEDS)
@FAST
def test_accelerations_are_derivatives_of_velocities(seed):
    """A_GB (from ABA) equals central differences of V_GB along the trajectory
    q(t) = q + t qdot + t^2/2 qdotdot, u(t) = u + t udot; this checks HDot, the
    bias terms c and qdotdot = N udot + NDot u for every joint type."""
    rng, tree, ws, q, u = setup_tree(seed)
    tau = rng.uniform(-2, 2, ws.nu)
    udot, A_GB = _core.forward_dynamics(ws, tau, gravity_forces(ws))
    udot, A_GB = udot.copy(), A_GB.copy()
    qdot, qdotdot = ws.qdot.copy(), ws.qdotdot.copy()
    other = ws.copy()
    h = 1e-5
    V = []
    for t in (-h, h):
        other.realize_position(q + t * qdot + 0.5 * t * t * qdotdot)
        other.realize_velocity(u + t * udot)
        V.append(other.V_GB.copy())
    A_fd = (V[1] - V[0]) / (2 * h)
    assert np.abs(A_GB[1:] - A_fd[1:]).max() < 1e-6 * max(1, np.abs(A_fd).max())  # the finite difference's accuracy
    # A_GB = J udot + JDot u, with JDot u = A_bias filled by realize_velocity: two sweeps, the same udot
    J_udot = _core.jacobian(ws, udot)
    A_from_bias = ws.A_bias + J_udot
    assert_close(A_from_bias[1:], A_GB[1:], margin=SWEEP, scale=scale_of(ws.A_bias, J_udot), what="A_GB")


def _body_xyz_from_matrix(R):
    b = np.arcsin(np.clip(R[0, 2], -1, 1))
    a = np.arctan2(-R[1, 2], R[2, 2])
    c = np.arctan2(-R[0, 1], R[0, 0])
    return np.array([a, b, c])


@given(seed=SEEDS)
@FAST
def test_euler_and_quaternion_modes_agree(seed):
    """Ball/Free/LineOrientation/FreeLine with Euler angles give the same udot as
    with quaternions for the same physical state (u has the same meaning in both
    modes), and the same kinematics."""
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, ["Ball", "Free", "LineOrientation", "FreeLine", "Ellipsoid", "Pin"],
                       nb=int(rng.integers(3, 9)))
    for i in range(1, tree.nb):   # both modes need the radii
        if tree.joints[i] == "Ellipsoid":
            tree.jparam[i] = rng.uniform(0.2, 1.5, size=3)
    ws_quat = tree.kernels()
    euler = [{"Ball": "BallEuler", "Free": "FreeEuler", "LineOrientation": "LineOrientationEuler",
              "FreeLine": "FreeLineEuler", "Ellipsoid": "EllipsoidEuler"}.get(j, j) for j in tree.joints]
    ws_eul = tree.kernels(euler)
    q_quat, u = random_state(rng, ws_quat, tree.joints)
    q_eul = np.zeros(ws_eul.nq)
    for i in range(1, tree.nb):
        a, e = ws_quat.qoff[i], ws_eul.qoff[i]
        if tree.joints[i] in QUATERNION_JOINTS:
            angles = _body_xyz_from_matrix(quat_to_matrix(q_quat[a:a + 4]))
            if abs(angles[1]) > 1.3:
                return  # too close to the Euler singularity for a clean comparison
            q_eul[e:e + 3] = angles
            n_rest = ws_quat.qoff[i + 1] - a - 4
            q_eul[e + 3:e + 3 + n_rest] = q_quat[a + 4:a + 4 + n_rest]
        else:
            q_eul[e] = q_quat[a]
    tau = rng.uniform(-2, 2, ws_quat.nu)
    results = []
    for ws, q in ((ws_quat, q_quat), (ws_eul, q_eul)):
        ws.realize_position(q)
        ws.realize_velocity(u)
        F = gravity_forces(ws)
        udot, A = _core.forward_dynamics(ws, tau, F)
        results.append((ws.R_GB.copy(), ws.V_GB.copy(), udot.copy(), A.copy()))
    # The Euler angles come from the quaternion through arcsin and arctan2 (|angle| <= 1.3: the
    # inverse of the angles' Hw has condition <= 1 / cos 1.3 ~ 4); the kinematics are sweeps on
    # both sides, and udot and A come out of the ABA, which loses cond(M).
    c = cond(ws_quat)
    for name, x, y, factor in zip(("R_GB", "V_GB", "udot", "A_GB"), *results, (1.0, 1.0, c, c)):
        assert_close(x, y, margin=SWEEP, scale=factor * scale_of(y, floor=1.0), what=name)


@given(seed=SEEDS)
@FAST
def test_jacobian_products_are_transposes(seed):
    """F . (J u) == u . (J^T F) for body, frame and station Jacobians; J u at the
    state's u reproduces V_GB."""
    rng, tree, ws, q, u = setup_tree(seed)
    x = rng.normal(size=ws.nu)
    F = rng.normal(size=(ws.nb, 2, 3))
    F[0] = 0
    # Power by two routes: each is a sweep and a dot product whose terms may cancel, so the scale
    # is the sum of the terms' magnitudes on either side.
    Jx, JtF = _core.jacobian(ws, x), _core.jacobian_transpose(ws, F)
    assert_close(np.sum(F * Jx), x @ JtF, margin=SWEEP, scale=max(dot_terms(F, Jx), dot_terms(x, JtF)), what="power")
    assert_close(_core.jacobian(ws, u), ws.V_GB, margin=SWEEP, scale=scale_of(ws.V_GB), what="J u")
    k = 4
    bodies = rng.integers(0, ws.nb, size=k)
    stations = rng.normal(size=(k, 3))
    Ff = rng.normal(size=(k, 2, 3))
    Vf = _core.frame_jacobian(ws, bodies, stations, x)
    JtFf = _core.frame_jacobian_transpose(ws, bodies, stations, Ff)
    assert_close(np.sum(Ff * Vf), x @ JtFf, margin=SWEEP, scale=max(dot_terms(Ff, Vf), dot_terms(x, JtFf)),
                 what="frame power")
    fs = rng.normal(size=(k, 3))
    vs = _core.station_jacobian(ws, bodies, stations, x)
    Jtfs = _core.station_jacobian_transpose(ws, bodies, stations, fs)
    assert_close(np.sum(fs * vs), x @ Jtfs, margin=SWEEP, scale=max(dot_terms(fs, vs), dot_terms(x, Jtfs)),
                 what="station power")
    # a station's velocity is the body's origin velocity plus w x r: a few flops on the scale |V| (1 + |r|)
    V = _core.jacobian(ws, x)
    for j, (bi, s) in enumerate(zip(bodies, stations)):
        r = ws.R_GB[bi] @ s
        assert_close(vs[j], V[bi, 1] + np.cross(V[bi, 0], r), margin=FEW,
                     scale=scale_of(V[bi]) * (1 + np.linalg.norm(r)), what="station velocity")


def other_at(ws, q):
    ws.realize_position(q)
    return ws


@given(seed=SEEDS)
@FAST
def test_station_bias_is_acceleration_at_zero_udot(seed):
    """station_bias = d/dt (station velocity) along a trajectory with udot = 0."""
    rng, tree, ws, q, u = setup_tree(seed)
    k = 3
    bodies = rng.integers(1, ws.nb, size=k)
    stations = rng.normal(size=(k, 3))
    bias = _core.frame_bias(ws, bodies, stations)
    qdot = ws.qdot.copy()
    other = ws.copy()
    h = 1e-5  # central differences; the 1e-6 below is their accuracy
    zero = np.zeros(ws.nu)
    # with udot = 0, qdotdot = NDot u: difference N(q) u along qdot
    Np = _core.multiply_by_n(other_at(other, q + h * qdot), False, u)
    Nm = _core.multiply_by_n(other_at(other, q - h * qdot), False, u)
    qdd = (Np - Nm) / (2 * h)
    V = []
    for t in (-h, h):
        other.realize_position(q + t * qdot + 0.5 * t * t * qdd)
        other.realize_velocity(u + t * zero)
        V.append(_core.frame_jacobian(other, bodies, stations, u))
    fd = (V[1] - V[0]) / (2 * h)
    assert np.abs(bias - fd).max() < 1e-6 * max(1, np.abs(fd).max())


@given(seed=SEEDS)
@FAST
def test_n_products(seed):
    """qdot = N u; N^-1 N = 1 (unit quaternions); N^T and N^-T are the transposes."""
    rng, tree, ws, q, u = setup_tree(seed)
    # N is block diagonal with blocks of a few flops per entry; its Euler-angle blocks are inverted
    # at angles up to 1.2 (condition up to 1 / cos 1.2 ~ 3)
    assert_close(_core.multiply_by_n(ws, False, u), ws.qdot, margin=FEW, scale=scale_of(u), what="N u")
    assert_close(_core.multiply_by_n_inv(ws, False, ws.qdot), u, margin=FEW, scale=scale_of(u, ws.qdot),
                 what="N^-1 N u")
    x, y = rng.normal(size=ws.nq), rng.normal(size=ws.nu)
    Ny, Ntx = _core.multiply_by_n(ws, False, y), _core.multiply_by_n(ws, True, x)
    assert_close(x @ Ny, y @ Ntx, margin=FEW, scale=max(dot_terms(x, Ny), dot_terms(y, Ntx)), what="x . N y")
    Nix, Nity = _core.multiply_by_n_inv(ws, False, x), _core.multiply_by_n_inv(ws, True, y)
    assert_close(y @ Nix, x @ Nity, margin=FEW, scale=max(dot_terms(y, Nix), dot_terms(x, Nity)),
                 what="y . N^-1 x")


@given(seed=SEEDS)
@FAST
def test_quaternion_error_slot(seed):
    """qerr = |quaternion| - 1 for quaternion joints, 0 for the others; R_FM uses
    the normalized quaternion."""
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, ALL_JOINTS)
    ws = tree.kernels()
    q, _ = random_state(rng, ws, tree.joints)
    scale = rng.uniform(0.5, 2.0)
    for i in range(1, ws.nb):
        if tree.joints[i] in QUATERNION_JOINTS:
            q[ws.qoff[i]:ws.qoff[i] + 4] *= scale
    ws.realize_position(q)
    for i in range(1, ws.nb):
        if tree.joints[i] in QUATERNION_JOINTS:
            quat = q[ws.qoff[i]:ws.qoff[i] + 4]
            # |quat| - 1 cancels: the scale is |quat|; R's entries are of unit scale, from the quaternion
            # normalized and its products on two routes (measured up to 5 EPS)
            assert_close(ws.qerr[i], np.linalg.norm(quat) - 1, margin=FEW, scale=np.linalg.norm(quat), what="qerr")
            assert_close(ws.R_FM[i], quat_to_matrix(quat), margin=256, scale=1.0, what="R_FM")
        else:
            assert ws.qerr[i] == 0


def test_single_pendulum_closed_form():
    """Pin pendulum under gravity: udot = -m g l sin(q) / I_O."""
    m, l, g, I_c = 2.0, 1.5, 9.81, 0.3
    com = np.array([0.0, -l, 0.0])
    I_B = np.diag([0.2, 0.25, I_c]) + m * (com @ com * np.eye(3) - np.outer(com, com))
    ws = _core.make_tree_kernels([-1, 0], ["Weld", "Pin"], R_PF=np.tile(np.eye(3), (2, 1, 1)),
                                 p_PF=np.zeros((2, 3)), R_BM=np.tile(np.eye(3), (2, 1, 1)),
                                 p_BM=np.zeros((2, 3)), mass=[0, m], p_BC=[np.zeros(3), com],
                                 I_B=[np.zeros((3, 3)), I_B])
    for q in (0.0, 0.7, -2.0, 3.0):
        _core.realize_position(ws, [q])
        _core.realize_velocity(ws, [0.9])
        udot, _ = _core.forward_dynamics(ws, np.zeros(1), gravity_forces(ws, (0, -g, 0)))
        # the gravity torque's terms are m g l (its sine may be small): a 1-body ABA, a few dozen flops
        assert_close(udot[0], -m * g * l * np.sin(q) / (I_c + m * l * l), margin=FEW,
                     scale=m * g * l / (I_c + m * l * l), what="udot")


def test_custom_mobilizer_rows_written_by_python_match_builtin():
    """A Custom body whose X_FM, H_FM, HDot_FM u and N rows are written from Python
    as a Pin gives the same results as the built-in Pin."""
    rng = np.random.default_rng(3)
    tree = random_tree(rng, ["Pin", "Ball", "Slider"], nb=6)
    tree.joints[2] = "Pin"
    ws_pin = tree.kernels()
    joints = list(tree.joints)
    joints[2] = _core.CUSTOM
    ws_c = _core.make_tree_kernels(tree.parent, joints, R_PF=tree.R_PF, p_PF=tree.p_PF,
                                   R_BM=tree.R_BM, p_BM=tree.p_BM, mass=tree.mass,
                                   p_BC=tree.p_BC, I_B=tree.I_B, custom_sizes={2: (1, 1)})
    q, u = random_state(rng, ws_pin, tree.joints)
    tau = rng.normal(size=ws_pin.nu)
    F = rng.normal(size=(ws_pin.nb, 2, 3))
    out = []
    for ws in (ws_pin, ws_c):
        if ws is ws_c:
            a, k = ws.qoff[2], ws.uoff[2]
            c, s = np.cos(q[a]), np.sin(q[a])
            ws.R_FM[2] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
            ws.p_FM[2] = 0
            ws.H_FM[k] = [[0, 0, 1], [0, 0, 0]]
        ws.realize_position(q)
        if ws is ws_c:
            ws.HDotu_FM[2] = 0
            ws.qdot[ws.qoff[2]] = u[ws.uoff[2]]
        ws.realize_velocity(u)
        udot, A = _core.forward_dynamics(ws, tau, F)
        out.append((ws.V_GB.copy(), udot.copy(), A.copy(), _core.mass_matrix(ws), ws.qdot.copy()))
    # the same sweeps on rows that differ by the rounding of cos and sin: V, udot, A, M, qdot,
    # each on its own scale (unit lengths and speeds at least); the solve loses cond(M) (~10 here)
    c = cond(ws_pin)
    for name, x, y, factor in zip(("V_GB", "udot", "A_GB", "M", "qdot"), *out, (1.0, c, c, 1.0, 1.0)):
        assert_close(x, y, margin=FEW, scale=factor * scale_of(y, floor=1.0), what=name)


def test_copy_is_independent():
    """A copied workspace keeps its own caches when the original is re-realized."""
    rng, tree, ws, q, u = setup_tree(5)
    twin = ws.copy()
    V = twin.V_GB.copy()
    ws.realize_position(q + 0.1)
    ws.realize_velocity(u + 0.1)
    assert np.array_equal(twin.V_GB, V)
    twin.realize_velocity(u)
    assert np.array_equal(twin.V_GB, V)


def test_factory_rejects_bad_trees():
    """make_tree_kernels names the offending body or array."""
    eye = np.tile(np.eye(3), (2, 1, 1))
    kw = dict(R_PF=eye, p_PF=np.zeros((2, 3)), R_BM=eye, p_BM=np.zeros((2, 3)),
              mass=[0, 1], p_BC=np.zeros((2, 3)), I_B=eye)
    with pytest.raises(ValueError, match="body 1: parent"):
        _core.make_tree_kernels([-1, 1], ["Weld", "Pin"], **kw)
    with pytest.raises(ValueError, match="unknown joint type"):
        _core.make_tree_kernels([-1, 0], ["Weld", "Hinge"], **kw)
    with pytest.raises(ValueError, match=r"p_PF: entry \(1, 2\) is not finite"):
        _core.make_tree_kernels([-1, 0], ["Weld", "Pin"], **{**kw, "p_PF": [[0, 0, 0], [0, 0, np.nan]]})
    with pytest.raises(ValueError, match="R_BM"):
        _core.make_tree_kernels([-1, 0], ["Weld", "Pin"], **{**kw, "R_BM": 2 * eye})
    ws = _core.make_tree_kernels([-1, 0], ["Weld", "Pin"], **kw)
    with pytest.raises(ValueError, match=r"q: expected shape \(1,\)"):
        _core.realize_position(ws, [0.0, 1.0])


def test_copy_duplicates_every_cache_array():
    """A workspace copy has its own copy of every cache array (equal values, no shared memory)
    and shares only the frozen tree inputs; then both compute the same results independently."""
    rng, tree, ws, q, u = setup_tree(3)
    other = ws.copy()
    mine, theirs = ws.__reduce__()[1][2], other.__reduce__()[1][2]  # every cache array, by name
    assert mine.keys() == theirs.keys() and len(mine) > 30
    for name in mine:
        a, b = mine[name], theirs[name]
        assert a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)
        assert not np.shares_memory(a, b), name
    for name in ("parent", "jtype", "R_PF", "mass", "I_B", "cI_B", "rpar", "fflag"):
        assert getattr(other, name) is getattr(ws, name)
    R_before = ws.R_GB.copy()
    other.realize_position(q + 0.1)
    np.testing.assert_array_equal(ws.R_GB, R_before)  # the original untouched
    ws.realize_position(q + 0.1)
    np.testing.assert_array_equal(ws.R_GB, other.R_GB)


def _rotation_permutations():
    """The 24 signed permutation matrices that are rotations (det +1)."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            P = np.zeros((3, 3))
            P[list(perm), range(3)] = signs
            if np.linalg.det(P) > 0:
                out.append(P)
    return out


def test_signed_permutation_codes():
    """The frame products with a signed permutation (the axis alignments of URDF joints) take a
    copy-and-negate path; its code must reproduce the matrix, and anything else must be refused."""
    rotations = _rotation_permutations()
    assert len(rotations) == 24
    A = np.arange(1.0, 10.0).reshape(3, 3)
    for P in rotations:
        code = simtk_core._signed_permutation_code(P)
        assert code >= 0
        decoded = np.zeros((3, 3))
        for b in range(3):
            cb = (code >> (3 * b)) & 7
            decoded[cb & 3, b] = -1.0 if cb & 4 else 1.0
        np.testing.assert_array_equal(decoded, P)
        np.testing.assert_array_equal(A @ decoded, A @ P)
    c, s = np.cos(0.3), np.sin(0.3)
    for M in (np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]]), np.array([[1.0, 0, 0], [1, 0, 0], [0, 0, 1]]),
              np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, 0]]), 2 * np.eye(3), np.zeros((3, 3)),
              np.array([[1.0, 1e-300, 0], [0, 1, 0], [0, 0, 1]])):
        assert simtk_core._signed_permutation_code(M) == -1


@pytest.mark.parametrize("seed", range(4))
def test_frames_that_are_signed_permutations(seed):
    """A tree whose R_PF and R_BM are axis alignments (signed permutations) or the identity: X_GF
    must be exactly X_GP X_PF (one nonzero term per entry: no rounding), and X_GB the product of
    the whole chain to round-off."""
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, ALL_JOINTS, nb=12)
    rotations = _rotation_permutations()
    aligned = rng.random(tree.nb) < 0.8  # the rest keep their general rotations
    for i in range(1, tree.nb):
        if aligned[i]:
            tree.R_PF[i] = rotations[rng.integers(24)]
        if rng.random() < 0.8:
            tree.R_BM[i] = rotations[rng.integers(24)]
    ws = tree.kernels()
    q, _ = random_state(rng, ws, tree.joints)
    ws.realize_position(q)
    flags = simtk_core.FRAME_FLAGS
    for i in range(1, tree.nb):
        identity = np.array_equal(tree.R_PF[i], np.eye(3))
        assert bool(ws.fflag[i] & flags["R_PF_PERM"]) == (aligned[i] and not identity)  # the path taken
        assert bool(ws.fflag[i] & flags["R_PF_ONE"]) == identity
        R = tree.R_BM[i]
        permutation = bool(((R == 0) | (np.abs(R) == 1)).all() and (np.abs(R).sum(axis=0) == 1).all())
        identity = np.array_equal(R, np.eye(3))
        assert bool(ws.fflag[i] & flags["R_BM_PERM"]) == (permutation and not identity)
        pa = tree.parent[i]
        if aligned[i]:
            np.testing.assert_array_equal(ws.R_GF[i], ws.R_GB[pa] @ tree.R_PF[i])
        else:
            np.testing.assert_allclose(ws.R_GF[i], ws.R_GB[pa] @ tree.R_PF[i], rtol=0, atol=8 * np.finfo(float).eps)
        R_ref = ws.R_GF[i] @ ws.R_FM[i] @ tree.R_BM[i].T
        np.testing.assert_allclose(ws.R_GB[i], R_ref, rtol=0, atol=16 * np.finfo(float).eps)
