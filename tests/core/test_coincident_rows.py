"""The Coincident rows (Ball, the translation rows of Weld) in the compiled core, against their
numpy formulation (kept here as the reference: the equations of simtk/multibody/constraints/_rows.py).

Random trees and random point pairs, ancestors Ground or a body; the position errors, the stations'
locations, the force map's entries and the fast acceleration rows must agree to round-off.
"""
import numpy as np
import pytest
from core_tree_helpers import random_state, random_tree

import simtk_core
from simtk.multibody.constraints import _rows

ALL = ["Pin", "Slider", "Universal", "Cylinder", "Planar", "Gimbal", "Ball", "Free", "Weld"]
EPS = np.finfo(float).eps


def _rot(R, v):
    return np.einsum("kij,kj->ki", R, v)


def _rot_t(R, v):
    return np.einsum("kji,kj->ki", R, v)


def reference_position(P, R, p):
    S = p[P["b2"]] + _rot(R[P["b2"]], P["s2"])
    Pp = p[P["b1"]] + _rot(R[P["b1"]], P["s1"])
    d = S - Pp
    if not P["ground"]:
        d = _rot_t(R[P["a"]], d)
    return d.reshape(-1), S


def reference_force_map(P, R, p, S):
    K, b1 = P["K"], P["b1"]
    sC = _rot_t(R[b1], S - p[b1])
    st = np.zeros((K, 3, 2, 3))
    st[:, :, 0] = P["s2"][:, None, :]
    st[:, :, 1] = sC[:, None, :]
    F = np.zeros((K, 3, 2, 2, 3))
    n = np.swapaxes(R[P["a"]], 1, 2) if not P["ground"] else np.broadcast_to(np.eye(3), (K, 3, 3))
    F[:, :, 0, 1] = n
    F[:, :, 1, 1] = -n
    return st.reshape(-1, 2, 3), F.reshape(-1, 2, 2, 3), np.concatenate([P["s2"], sC])


def reference_fast(P, R, V, AB, verr, Gud):
    K = P["K"]
    e = AB[:K, 1] - AB[K:, 1]
    if not P["ground"]:
        RA = R[P["a"]]
        dv = _rot(RA, verr.reshape(K, 3))
        e = _rot_t(RA, e - 2.0 * np.cross(V[P["a"], 0], dv))
    return Gud + e.reshape(-1)


class _Kin:
    def __init__(self, ws):
        self.R, self.p, self.V, self.ws = ws.R_GB, ws.p_GB, ws.V_GB, ws


class _Ctx:
    pass


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ground", [True, False])
def test_compiled_rows_equal_the_numpy_formulation(seed, ground):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, ALL, nb=10)
    ws = tree.kernels()
    q, u = random_state(rng, ws, tree.joints)
    ws.realize_position(q)
    ws.realize_velocity(u)
    K = 4
    b1, b2 = rng.integers(0, ws.nb, K), rng.integers(1, ws.nb, K)
    a = np.zeros(K, dtype=np.intp) if ground else rng.integers(1, ws.nb, K)
    P = _rows.Coincident.pack(b1, rng.normal(size=(K, 3)), b2, rng.normal(size=(K, 3)), a)
    assert P["ground"] == ground
    kin = _Kin(ws)
    scale = 1.0 + np.abs(ws.p_GB).max()
    perr, S = _rows.Coincident.position(P, kin)
    perr_ref, S_ref = reference_position(P, ws.R_GB, ws.p_GB)
    np.testing.assert_allclose(perr, perr_ref, rtol=0, atol=32 * EPS * scale)
    np.testing.assert_allclose(S, S_ref, rtol=0, atol=32 * EPS * scale)

    st, F, sts = P["e_st0"].copy(), (P["e_F0"] if ground else np.zeros((3 * K, 2, 2, 3))).copy(), P["s_st0"].copy()
    handle = _rows.Coincident.force_map(P, kin, S, st, F, sts)
    assert (handle is None) == ground
    st_ref, F_ref, sts_ref = reference_force_map(P, ws.R_GB, ws.p_GB, S)
    np.testing.assert_allclose(st, st_ref, rtol=0, atol=32 * EPS * scale)
    np.testing.assert_array_equal(F, F_ref)  # copies of rotation columns
    np.testing.assert_allclose(sts, sts_ref, rtol=0, atol=32 * EPS * scale)
    # S recomputed when the geometry is not handed over
    st2 = P["e_st0"].copy()
    _rows.Coincident.force_map(P, kin, None, st2, F.copy(), P["s_st0"].copy())
    np.testing.assert_allclose(st2, st, rtol=0, atol=32 * EPS * scale)

    ctx = _Ctx()
    ctx.ws, ctx.V = ws, ws.V_GB
    ctx.AB_part = rng.normal(size=(2 * K, 2, 3))
    ctx.verr_part = rng.normal(size=3 * K)
    ctx.Gud_part = rng.normal(size=3 * K)
    out = _rows.Coincident.fast(P, handle, ctx)
    ref = reference_fast(P, ws.R_GB, ws.V_GB, ctx.AB_part, ctx.verr_part, ctx.Gud_part)
    np.testing.assert_allclose(out, ref, rtol=0, atol=64 * EPS * (1 + np.abs(ws.V_GB).max()) * 4)


def test_bad_bodies_are_refused():
    rng = np.random.default_rng(1)
    tree = random_tree(rng, ALL, nb=5)
    ws = tree.kernels()
    z = np.zeros((1, 3))
    with pytest.raises(ValueError, match="outside the tree"):
        simtk_core.coincident_position(ws, np.array([9]), z, np.array([1]), z, np.array([0]), True,
                                       np.empty(3), np.empty((1, 3)))
    with pytest.raises(ValueError, match="differ in length"):
        simtk_core.coincident_position(ws, np.array([1, 2]), z, np.array([1]), z, np.array([0]), True,
                                       np.empty(3), np.empty((1, 3)))
