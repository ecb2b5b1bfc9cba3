"""Cross-check the compiled sweeps against Pinocchio on random trees.

Pinocchio's algorithms assume depth-first body numbering (each subtree's
indices contiguous), so these trees are generated that way; the self-consistency
tests use arbitrary numberings.

Mapping of Simbody's meanings to Pinocchio's (done explicitly here):
- Pinocchio's joint frame of body i is our M frame. Its placement in the
  parent joint frame is X_PF (parent Ground) or ~X_BM(parent) * X_PF.
- The body inertia is expressed in M: mass center X_MB * p_BC, central inertia
  R_MB I_C R_MB^T.
- Pin = JointModelRZ, Slider = JointModelPX (same q and u).
- Ball = JointModelSpherical: q (w,x,y,z) -> (x,y,z,w); u = w_FM in F while
  Pinocchio's v = w_FM in M, so u = R_FM v and udot = R_FM vdot.
- Free = JointModelFreeFlyer: q = (quat, p_FM) -> (p_FM, quat xyzw); Pinocchio's
  v = (v_M, w_M) in M, ours u = (w_F, v_F) in F, so u = T v with
  T = [[0, R], [R, 0]], and udot = T vdot + (0, R (w_M x v_M)).
Hence M_pin = T^T M T, tau_pin = T^T tau.
"""
import numpy as np
import pytest
from core_tree_helpers import gravity_forces, random_state, random_tree

from simtk import _core
from tolerances import assert_close

pin = pytest.importorskip("pinocchio")

JOINTS = ["Pin", "Slider", "Ball", "Free"]
G = np.array([0.3, -9.81, 0.5])


def _se3(R, p):
    return pin.SE3(np.array(R), np.array(p))


def build_pinocchio(tree):
    model = pin.Model()
    model.gravity = pin.Motion(G, np.zeros(3))
    jm = {"Pin": pin.JointModelRZ, "Slider": pin.JointModelPX,
          "Ball": pin.JointModelSpherical, "Free": pin.JointModelFreeFlyer}
    for i in range(1, tree.nb):
        p = tree.parent[i]
        X_PF = _se3(tree.R_PF[i], tree.p_PF[i])
        if p == 0:
            placement = X_PF
        else:
            placement = _se3(tree.R_BM[p], tree.p_BM[p]).inverse() * X_PF
        jid = model.addJoint(int(p), jm[tree.joints[i]](), placement, f"j{i}")
        assert jid == i
        R_MB = tree.R_BM[i].T
        p_MB = -R_MB @ tree.p_BM[i]
        m, c = tree.mass[i], tree.p_BC[i]
        I_C = tree.I_B[i] - m * (c @ c * np.eye(3) - np.outer(c, c))
        inertia = pin.Inertia(m, R_MB @ c + p_MB, R_MB @ I_C @ R_MB.T)
        model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
    return model


def velocity_map(tree, ws, q, v_pin):
    """T (nu x nu) with u = T v_pin, and the term Tdot v_pin."""
    T = np.zeros((ws.nu, ws.nu))
    Tdot_v = np.zeros(ws.nu)
    for i in range(1, tree.nb):
        a, b = ws.uoff[i], ws.uoff[i + 1]
        R = ws.R_FM[i]
        kind = tree.joints[i]
        if kind in ("Pin", "Slider"):
            T[a, a] = 1.0
        elif kind == "Ball":
            T[a:b, a:b] = R
        else:  # Free
            T[a:a + 3, a + 3:a + 6] = R
            T[a + 3:a + 6, a:a + 3] = R
            v_M, w_M = v_pin[a:a + 3], v_pin[a + 3:a + 6]
            Tdot_v[a + 3:a + 6] = R @ np.cross(w_M, v_M)
    return T, Tdot_v


def to_pinocchio_q(tree, ws, q):
    qp = q.copy()
    for i in range(1, tree.nb):
        a = ws.qoff[i]
        if tree.joints[i] == "Ball":
            qp[a:a + 4] = np.r_[q[a + 1:a + 4], q[a]]
        elif tree.joints[i] == "Free":
            qp[a:a + 3] = q[a + 4:a + 7]
            qp[a + 3:a + 7] = np.r_[q[a + 1:a + 4], q[a]]
    return qp


#: Two implementations of a recursive sweep over up to 15 bodies (and the maps T between their
#: coordinates): round-off of a sweep, on the scale max(1, max|expected|) (unit lengths and speeds
#: at least). Forward dynamics loses the condition number of M as well.
SWEEP = 2**10
ABA_MARGIN = 256


def _close(actual, expected, margin=SWEEP, factor=1.0):
    assert_close(actual, expected, margin=margin, scale=factor * max(1.0, np.abs(expected).max()))


def _setup(seed):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, JOINTS, depth_first=True)
    ws = tree.kernels()
    q, u = random_state(rng, ws, tree.joints)
    _core.realize_position(ws, q)
    _core.realize_velocity(ws, u)
    model = build_pinocchio(tree)
    data = model.createData()
    T, _ = velocity_map(tree, ws, q, np.zeros(ws.nu))
    v_pin = np.linalg.solve(T, u)
    T, Tdot_v = velocity_map(tree, ws, q, v_pin)
    return rng, tree, ws, q, u, model, data, T, Tdot_v, v_pin


@pytest.mark.parametrize("seed", range(12))
def test_mass_matrix_matches_pinocchio_crba(seed):
    """CRBA: M_pin = T^T M T for the same physical configuration."""
    rng, tree, ws, q, u, model, data, T, _, _ = _setup(seed)
    M = _core.mass_matrix(ws)
    M_pin = pin.crba(model, data, to_pinocchio_q(tree, ws, q))
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    _close(T.T @ M @ T, M_pin)


@pytest.mark.parametrize("seed", range(12))
def test_forward_dynamics_matches_pinocchio_aba(seed):
    """ABA with gravity (as body forces here) and joint forces: udot = T vdot + Tdot v."""
    rng, tree, ws, q, u, model, data, T, Tdot_v, v_pin = _setup(seed)
    tau = rng.uniform(-2, 2, size=ws.nu)
    udot, _ = _core.forward_dynamics(ws, tau, gravity_forces(ws, G))
    vdot = pin.aba(model, data, to_pinocchio_q(tree, ws, q), v_pin, T.T @ tau)
    _close(udot, T @ vdot + Tdot_v, margin=ABA_MARGIN, factor=np.linalg.cond(_core.mass_matrix(ws)))


@pytest.mark.parametrize("seed", range(12))
def test_inverse_dynamics_matches_pinocchio_rnea(seed):
    """RNEA: T^T (M udot + bias - J^T F_gravity) = rnea(q, v, vdot)."""
    rng, tree, ws, q, u, model, data, T, Tdot_v, v_pin = _setup(seed)
    vdot = rng.uniform(-2, 2, size=ws.nu)
    udot = T @ vdot + Tdot_v
    tau = _core.inverse_dynamics(ws, udot, np.zeros(ws.nu), gravity_forces(ws, G))
    tau_pin = pin.rnea(model, data, to_pinocchio_q(tree, ws, q), v_pin, vdot)
    _close(T.T @ tau, tau_pin)


@pytest.mark.parametrize("seed", range(6))
def test_body_kinematics_match_pinocchio(seed):
    """X_GB and V_GB agree with Pinocchio's placements and velocities of the M frames."""
    rng, tree, ws, q, u, model, data, T, Tdot_v, v_pin = _setup(seed)
    pin.forwardKinematics(model, data, to_pinocchio_q(tree, ws, q), v_pin)
    for i in range(1, tree.nb):
        oMi = data.oMi[i]
        R_GM = ws.R_GB[i] @ tree.R_BM[i]
        p_GM = ws.p_GB[i] + ws.R_GB[i] @ tree.p_BM[i]
        _close(R_GM, oMi.rotation)
        _close(p_GM, oMi.translation)
        vM = data.v[i]  # spatial velocity of the joint frame M, in M, at M's origin
        w_G = oMi.rotation @ vM.angular
        v_Mo = oMi.rotation @ vM.linear
        _close(ws.V_GB[i, 0], w_G)
        _close(ws.V_GB[i, 1], v_Mo + np.cross(w_G, ws.p_GB[i] - p_GM))
