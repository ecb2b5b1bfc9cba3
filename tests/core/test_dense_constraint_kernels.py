"""The compiled pieces of the constraint solve: the operators M^-1 G^T and G M^-1 G^T, the rows of G
from a force map, and the small Cholesky factorization of the multiplier system.

Each is held to an independent computation: numpy's Cholesky and solves, the O(n) M^-1 products one
row at a time, and the single-row Jacobian transpose; tolerances scale with the size of the numbers.
"""
import numpy as np
import pytest
from core_tree_helpers import random_state, random_tree
from hypothesis import given, settings
from hypothesis import strategies as st

import simtk_core
from simtk.multibody.constraints._solver import _Factor

ALL = ["Pin", "Slider", "Universal", "Cylinder", "Planar", "Gimbal", "Ball", "Free", "Weld"]
EPS = np.finfo(float).eps


def _spd(rng, m, extra=2):
    X = rng.normal(size=(m, m + extra))
    return X @ X.T


@given(st.integers(1, 30), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_cholesky_matches_numpy(m, seed):
    rng = np.random.default_rng(seed)
    A = _spd(rng, m, extra=m + 2)  # well conditioned: accepted whole
    L, keep = np.full((m, m), np.nan), np.full(m, -1, dtype=np.intp)
    assert simtk_core.factor_kept(A, L, keep) == m
    np.testing.assert_array_equal(keep, np.arange(m))
    assert not np.triu(L, 1).any()
    scale = np.abs(A).max()
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=0, atol=64 * m * EPS * np.sqrt(scale))
    b = rng.normal(size=m)
    x = np.empty(m)
    simtk_core.cholesky_solve(L, b, x)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=0, atol=64 * m * EPS * np.linalg.cond(A) * np.abs(x).max())


@pytest.mark.parametrize("m", [2, 3, 6, simtk_core.LAPACK_CHOLESKY_ABOVE + 6])
def test_factor_kept_leaves_out_zero_rows_and_refuses_what_it_cannot_factor(m):
    rng = np.random.default_rng(m)
    A = _spd(rng, m, extra=m + 2)
    Z = np.zeros((m + 2, m + 2))  # rows 0 and 2 of zeros (a planar loop's out-of-plane rows)
    inner = [1] + list(range(3, m + 2))
    Z[np.ix_(inner, inner)] = A
    L, keep = np.empty((m + 2, m + 2)), np.empty(m + 2, dtype=np.intp)
    assert simtk_core.factor_kept(Z, L, keep) == m
    np.testing.assert_array_equal(keep[:m], inner)
    np.testing.assert_allclose(L[:m, :m], np.linalg.cholesky(A), rtol=0, atol=64 * m * EPS * np.sqrt(np.abs(A).max()))
    assert simtk_core.factor_kept(np.zeros((m, m)), L, keep) == -1  # nothing to factor
    B = np.eye(m)
    B[0, 1] = B[1, 0] = 2.0  # a positive diagonal, but indefinite: row 1's pivot is 1 - 4 < 0
    assert simtk_core.factor_kept(B, L, keep) == -2
    B[0, 1] = B[1, 0] = 0.0
    B[1, 1] = -1.0  # a diagonal at or below zero counts as a row of zeros: left out, not refused
    assert simtk_core.factor_kept(B, L, keep) == m - 1 and 1 not in keep[:m - 1]
    C = A.copy()
    C[:, 0] = C[0, :] = C[:, 1]  # rows 0 and 1 alike: singular, though its diagonal is positive
    C[0, 0] = C[1, 1]
    assert simtk_core.factor_kept(C, L, keep) == -2
    with pytest.raises(ValueError, match="factor_kept"):
        simtk_core.factor_kept(A, np.zeros((m - 1, m - 1)), keep)
    with pytest.raises(ValueError, match="cholesky_solve"):
        simtk_core.cholesky_solve(np.eye(m), np.zeros(m + 1), np.zeros(m))


@pytest.mark.parametrize("m", [simtk_core.LAPACK_CHOLESKY_ABOVE + d for d in (-1, 0, 1, 2, 60)])
def test_factor_solves_alike_on_both_sides_of_the_lapack_threshold(m):
    """Up to LAPACK_CHOLESKY_ABOVE kept equations factor_kept's own loops, above it LAPACK's dpotrf: the
    same solution to round-off, and the least-norm one when rows of A vanish (a planar loop's
    out-of-plane rows; two of them here, so that m + 2 equations keep m)."""
    rng = np.random.default_rng(m)
    A = _spd(rng, m, extra=4)
    b = rng.normal(size=m)
    x = _Factor(A).solve(b)
    cond = np.linalg.cond(A)
    np.testing.assert_allclose(A @ x, b, rtol=0, atol=64 * m * EPS * cond * np.abs(b).max())
    Z = np.zeros((m + 2, m + 2))
    Z[1:-1, 1:-1] = A
    bz = np.concatenate([[0.0], b, [0.0]])
    xz = _Factor(Z).solve(bz)
    assert xz[0] == 0.0 and xz[-1] == 0.0
    np.testing.assert_allclose(xz[1:-1], x, rtol=0, atol=64 * m * EPS * cond * np.abs(x).max())


@pytest.mark.parametrize("m", [simtk_core.LAPACK_CHOLESKY_ABOVE + 1, 150])
def test_lapack_factor_is_the_lower_cholesky_factor(m):
    """Above the threshold the factor is still A's lower Cholesky factor, row-major, its upper triangle
    zero (LAPACK reads the row-major lower triangle as the column-major upper one): numpy's, to
    round-off, whatever L held before."""
    rng = np.random.default_rng(m)
    A = _spd(rng, m, extra=m + 2)
    L, keep = np.full((m + 3, m + 3), np.nan), np.full(m + 3, -1, dtype=np.intp)  # larger than A: lda != m
    assert simtk_core.factor_kept(A, L, keep) == m
    np.testing.assert_array_equal(keep[:m], np.arange(m))
    assert not np.triu(L[:m, :m], 1).any()
    np.testing.assert_allclose(L[:m, :m], np.linalg.cholesky(A), rtol=0, atol=64 * m * EPS * np.sqrt(np.abs(A).max()))


def _tree(seed):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, ALL, nb=9)
    ws = tree.kernels()
    q, u = random_state(rng, ws, tree.joints)
    ws.realize_position(q)
    return rng, ws


@pytest.mark.parametrize("seed", range(3))
def test_constraint_operators(seed):
    rng, ws = _tree(seed)
    m = 5
    G = rng.normal(size=(m, ws.nu))
    YT, A = np.empty((m, ws.nu)), np.empty((m, m))
    ws.constraint_operators(G, YT, A)
    for k in range(m):
        ref = np.empty(ws.nu)
        ws.multiply_by_m_inv(G[k], ref)
        np.testing.assert_array_equal(YT[k], ref)  # the same sweep, row by row
    np.testing.assert_array_equal(A, A.T)  # one triangle, mirrored
    ref = G @ YT.T
    np.testing.assert_allclose(A, ref, rtol=0, atol=8 * ws.nu * EPS * np.abs(G).max() * np.abs(YT).max())
    M = np.empty((ws.nu, ws.nu))
    ws.mass_matrix(M)
    np.testing.assert_allclose(M @ YT.T, G.T, rtol=0, atol=1e-9 * np.abs(G).max() * np.linalg.cond(M))
    with pytest.raises(ValueError, match="constraint_operators"):
        ws.constraint_operators(G, np.empty((m, ws.nu + 1)), A)


@pytest.mark.parametrize("seed", range(3))
def test_rows_of_g_in_one_call_equal_row_by_row(seed):
    rng, ws = _tree(seed)
    E = 11
    bodies = rng.integers(0, ws.nb, E).astype(np.intp)
    stations = rng.normal(size=(E, 3))
    F = rng.normal(size=(E, 2, 3))
    starts = np.array([0, 2, 2, 7], dtype=np.intp)
    stops = np.array([2, 2, 7, 11], dtype=np.intp)
    rows = np.array([3, 0, 4, 1], dtype=np.intp)
    G = np.full((6, ws.nu), 7.0)
    ws.frame_jacobian_transpose_rows(bodies, stations, F, rows, starts, stops, G)
    for r, s0, s1 in zip(rows, starts, stops):
        ref = np.empty(ws.nu)
        ws.frame_jacobian_transpose(bodies[s0:s1], stations[s0:s1], F[s0:s1], ref)
        np.testing.assert_array_equal(G[r], ref)
    assert (G[[2, 5]] == 7.0).all()  # rows not named are left alone
    assert not G[0].any()  # an empty range gives a zero row
    with pytest.raises(ValueError, match="out of range"):
        ws.frame_jacobian_transpose_rows(bodies, stations, F, rows, starts, stops + 1, G)
    with pytest.raises(ValueError, match="no body"):
        ws.frame_jacobian_transpose_rows(np.full(E, ws.nb, dtype=np.intp), stations, F, rows, starts, stops, G)


@pytest.mark.parametrize("dropped", [(), (0,), (2, 4)])
def test_multiplier_step_is_the_factor_solve_and_its_correction(dropped):
    """lam from the compiled substitutions equals _Factor.solve (the least-norm multipliers, zero on
    rows of zeros) and du = lam YT to round-off."""
    rng = np.random.default_rng(len(dropped))
    m, nu = 6, 9
    G = rng.normal(size=(m, nu))
    G[list(dropped)] = 0.0
    A = G @ G.T  # a stand-in SPD A with exactly zero rows where G has them
    YT = rng.normal(size=(m, nu))
    rhs = rng.normal(size=m)
    f = _Factor(A)
    assert f.chol is not None and (f.keep is None) == (not dropped)
    lam, du = np.full(m, np.nan), np.full(nu, np.nan)
    keep = np.zeros(0, dtype=np.intp) if f.keep is None else f.keep
    simtk_core.multiplier_step(rhs, f.chol, keep, YT, lam, du)
    ref = f.solve(rhs)
    np.testing.assert_array_equal(lam, ref)  # the same substitutions in the same order
    assert all(lam[i] == 0.0 for i in dropped)
    kept = [i for i in range(m) if i not in dropped]  # and independently: A lam = rhs on the kept rows
    np.testing.assert_allclose(A[np.ix_(kept, kept)] @ lam[kept], rhs[kept], rtol=0,
                               atol=64 * m * EPS * np.linalg.cond(A[np.ix_(kept, kept)]) * np.abs(rhs).max())
    np.testing.assert_allclose(du, lam @ YT, rtol=0, atol=8 * m * EPS * np.abs(lam).max() * np.abs(YT).max())
    with pytest.raises(ValueError, match="multiplier_step"):
        simtk_core.multiplier_step(rhs[:-1], f.chol, keep, YT, lam, du)


@pytest.mark.parametrize("seed", range(3))
def test_subtract_correction_equals_the_separate_operators(seed):
    rng, ws = _tree(seed)
    du, udot0, qdd0 = rng.normal(size=ws.nu), rng.normal(size=ws.nu), rng.normal(size=ws.nq)
    A0 = rng.normal(size=(ws.nb, 2, 3))
    udot, A, qdd = np.empty(ws.nu), np.empty((ws.nb, 2, 3)), np.empty(ws.nq)
    ws.subtract_correction(du, udot0, A0, qdd0, udot, A, qdd)
    J, N = np.empty((ws.nb, 2, 3)), np.empty(ws.nq)
    ws.jacobian(du, J)
    ws.multiply_by_n(False, du, N)
    np.testing.assert_array_equal(udot, udot0 - du)
    np.testing.assert_array_equal(A, A0 - J)
    np.testing.assert_array_equal(qdd, qdd0 - N)
    with pytest.raises(ValueError, match="subtract_correction"):
        ws.subtract_correction(du[:-1], udot0, A0, qdd0, udot, A, qdd)
