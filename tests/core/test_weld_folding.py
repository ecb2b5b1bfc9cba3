"""Weld bodies folded into their roots: the sweeps skip them, and nothing a user sees changes.

The kernels fold each Weld body's mass into its nearest non-Weld ancestor once per workspace and
skip Weld bodies in the tip-to-base sweeps. The reference here never folds: the same tree with
every Weld replaced by a Pin held at q = 0, u = 0, whose frames coincide with the Weld's (R_FM = 1
and p_FM = 0 exactly). Its mass matrix restricted to the other mobilities, its inverse dynamics
with zero accelerations of the Pins, and the body kinematics must agree with the folded tree's,
for trees with Welds under Welds, Welds on Ground, mobile bodies under Welds, massless Welds, and
forces applied to Weld bodies.
"""
import pickle

import numpy as np
from core_tree_helpers import random_state, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import _core
from tolerances import assert_close, scale_of

MOBILE = ["Pin", "Slider", "Ball", "Free", "Universal", "Gimbal", "Cylinder", "BallEuler"]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
#: A recursive sweep over up to 16 bodies on each side, and a solve (M^-1) of moderate condition.
SWEEP = 2**11


def welded_pair(seed: int):
    """(tree, welded kernels, pinned kernels, mask of the non-Pin mobilities, q, u) at a random state."""
    rng = np.random.default_rng(seed)
    nb = int(rng.integers(4, 16))
    tree = random_tree(rng, MOBILE, nb=nb)
    for i in range(2, nb):  # body 1 stays mobile, so that there is a mobility
        if rng.uniform() < 0.45:
            tree.joints[i] = "Weld"
            if rng.uniform() < 0.25:  # a massless Weld (a sensor frame)
                tree.mass[i] = 0.0
                tree.p_BC[i] = 0.0
                tree.I_B[i] = 0.0
    pinned = ["Pin" if j == "Weld" and i > 0 else j for i, j in enumerate(tree.joints)]
    ws_w, ws_p = tree.kernels(tree.joints), tree.kernels(pinned)
    q_w, u_w = random_state(rng, ws_w, tree.joints)
    # the pinned tree's q, u: the welded tree's, with 0 in every Pin that stands for a Weld
    q_p, u_p = np.zeros(ws_p.nq), np.zeros(ws_p.nu)
    keep_q, keep_u = np.zeros(ws_p.nq, bool), np.zeros(ws_p.nu, bool)
    for i in range(1, nb):
        if tree.joints[i] != "Weld":
            keep_q[ws_p.qoff[i]:ws_p.qoff[i + 1]] = True
            keep_u[ws_p.uoff[i]:ws_p.uoff[i + 1]] = True
    q_p[keep_q], u_p[keep_u] = q_w, u_w
    for ws, q, u in ((ws_w, q_w, u_w), (ws_p, q_p, u_p)):
        ws.realize_position(q)
        ws.realize_velocity(u)
    return rng, tree, ws_w, ws_p, keep_u


def test_composites_of_a_tree_without_welds_are_its_own_mass_properties():
    rng = np.random.default_rng(3)
    tree = random_tree(rng, MOBILE, nb=9)
    ws = tree.kernels()
    assert np.array_equal(ws.cmass, ws.mass) and np.array_equal(ws.cp_BC, ws.p_BC)
    assert np.array_equal(ws.cI_B, ws.I_B)
    assert np.array_equal(ws.rpar, ws.parent.clip(min=0))


def test_composite_of_a_chain_of_welds_is_the_sum_of_its_parts():
    # A Pin body carrying a Weld that carries a Weld, all on one axis: the composite's mass, mass
    # center and inertia about the root's origin follow from the parallel-axis theorem by hand.
    R = np.eye(3)
    zeros = np.zeros((4, 3))
    p_PF = np.array([[0, 0, 0], [0, 0, 0], [1.0, 0, 0], [0.5, 0, 0]])
    mass = np.array([0.0, 2.0, 3.0, 5.0])
    p_BC = np.array([[0, 0, 0], [0.25, 0, 0], [0, 0.5, 0], [0, 0, 0]])
    I_C = np.array([np.zeros((3, 3)), np.diag([1.0, 2, 3]), np.diag([0.5, 0.25, 0.125]), np.diag([4.0, 4, 4])])
    I_B = np.array([I_C[i] + mass[i] * (p_BC[i] @ p_BC[i] * np.eye(3) - np.outer(p_BC[i], p_BC[i]))
                    for i in range(4)])
    ws = _core.make_tree_kernels([-1, 0, 1, 2], ["Weld", "Pin", "Weld", "Weld"], R_PF=np.array([R] * 4), p_PF=p_PF,
                                 R_BM=np.array([R] * 4), p_BM=zeros, mass=mass, p_BC=p_BC, I_B=I_B)
    origin = np.array([[0, 0, 0], [0, 0, 0], [1.0, 0, 0], [1.5, 0, 0]])  # body origins in body 1
    com = origin + p_BC
    m = mass[1:].sum()
    c = (mass[1:, None] * com[1:]).sum(axis=0) / m
    J = sum(I_C[i] + mass[i] * (com[i] @ com[i] * np.eye(3) - np.outer(com[i], com[i])) for i in range(1, 4))
    assert ws.cmass[1] == m
    assert_close(ws.cp_BC[1], c, margin=16, scale=1.5)
    assert_close(ws.cI_B[1], J, margin=64, scale=scale_of(J))
    assert list(ws.rpar) == [0, 0, 1, 1]


@given(seed=SEEDS)
@settings(max_examples=40, deadline=None)
def test_kinematics_and_mass_matrix_equal_the_unfolded_tree(seed):
    rng, tree, ws_w, ws_p, keep_u = welded_pair(seed)
    for name in ("R_GB", "p_GB", "p_GC", "V_GB", "A_bias"):
        a, b = getattr(ws_w, name), getattr(ws_p, name)
        assert_close(a, b, margin=SWEEP, scale=scale_of(b, floor=1.0), what=name)
    M_w, M_p = _core.mass_matrix(ws_w), _core.mass_matrix(ws_p)[np.ix_(keep_u, keep_u)]
    assert_close(M_w, M_p, margin=SWEEP, scale=scale_of(M_p))
    assert_close(ws_w.kinetic_energy(), ws_p.kinetic_energy(), margin=SWEEP,
                 scale=scale_of(M_p) * scale_of(ws_w.u) ** 2)


@given(seed=SEEDS)
@settings(max_examples=40, deadline=None)
def test_inverse_and_forward_dynamics_with_forces_on_welds_equal_the_unfolded_tree(seed):
    rng, tree, ws_w, ws_p, keep_u = welded_pair(seed)
    F = rng.uniform(-2, 2, size=(ws_w.nb, 2, 3))  # on every body, Weld bodies included
    F[0] = 0.0
    tau_w = rng.uniform(-2, 2, ws_w.nu)
    udot_w = rng.uniform(-2, 2, ws_w.nu)
    tau_p, udot_p = np.zeros(ws_p.nu), np.zeros(ws_p.nu)
    tau_p[keep_u], udot_p[keep_u] = tau_w, udot_w
    res_w = _core.inverse_dynamics(ws_w, udot_w, tau_w, F)
    res_p = _core.inverse_dynamics(ws_p, udot_p, tau_p, F)[keep_u]
    M = _core.mass_matrix(ws_w)
    scale = scale_of(res_p, M @ udot_w, tau_w, F, floor=1.0)
    assert_close(res_w, res_p, margin=SWEEP, scale=scale)
    # forward dynamics solves M udot = tau + J^T F - bias, with bias from the unfolded tree's RNEA
    bias_minus = _core.inverse_dynamics(ws_p, np.zeros(ws_p.nu), tau_p, F)[keep_u]  # bias - tau - J^T F
    udot = np.array(_core.forward_dynamics(ws_w, tau_w, F)[0])
    expected = np.linalg.solve(M, -bias_minus)
    assert_close(udot, expected, margin=SWEEP * np.linalg.cond(M), scale=scale_of(expected, floor=1.0))
    # the Weld bodies' accelerations are their roots', moved rigidly: A_GB = J udot + A_bias of the unfolded tree
    x = np.zeros(ws_p.nu)
    x[keep_u] = udot
    A_p = _core.jacobian(ws_p, x) + ws_p.A_bias
    assert_close(ws_w.A_GB, A_p, margin=SWEEP * np.linalg.cond(M), scale=scale_of(A_p, floor=1.0))


@given(seed=SEEDS)
@settings(max_examples=25, deadline=None)
def test_m_products_equal_the_mass_matrix(seed):
    rng, tree, ws_w, ws_p, keep_u = welded_pair(seed)
    M = _core.mass_matrix(ws_w)
    x = rng.uniform(-1, 1, ws_w.nu)
    assert_close(_core.multiply_by_m(ws_w, x), M @ x, margin=SWEEP, scale=scale_of(M) * scale_of(x))
    y = _core.multiply_by_m_inv(ws_w, x)
    assert_close(M @ y, x, margin=SWEEP * np.linalg.cond(M), scale=1.0)


def test_weld_inputs_are_read_only():
    rng = np.random.default_rng(5)
    tree = random_tree(rng, MOBILE + ["Weld"], nb=6)
    ws = tree.kernels()
    for name in ("mass", "I_B", "p_BC", "cmass", "cI_B", "cp_BC", "rpar", "parent"):
        assert not getattr(ws, name).flags.writeable, name


def test_a_workspace_pickled_with_arrays_no_longer_kept_unpickles_the_same():
    """A workspace pickles as its tree and cache arrays; one pickled when it still kept H (the Jacobian columns
    at the body origins, which nothing read) unpickles to the same workspace, its first-child table rebuilt."""
    _, _, ws_w, *_ = welded_pair(7)
    rebuild, (dims, inputs, cache, abi) = ws_w.__reduce__()
    assert "H" not in cache
    old = dict(cache, H=np.ones((ws_w.nu, 2, 3)))
    again = rebuild(dims, inputs, old, abi)
    for name in cache:
        if not name.startswith("_"):
            np.testing.assert_array_equal(getattr(again, name), getattr(ws_w, name))
    np.testing.assert_array_equal(again.cfirst, ws_w.cfirst)
    np.testing.assert_array_equal(_core.mass_matrix(again), _core.mass_matrix(ws_w))
    np.testing.assert_array_equal(_core.mass_matrix(pickle.loads(pickle.dumps(ws_w))), _core.mass_matrix(ws_w))
