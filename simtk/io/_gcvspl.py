"""The smoothing fit of OpenSim's GCVSpline: Woltring's GCVSPL (1986) choice of the smoothing parameter.

OpenSim 4.6 fits a GCVSpline of half order m (degree 2m - 1) with Simbody's GCVSPL, all weights 1, in
mode 3 (the predicted true mean-squared error for a known error variance) when ``error_variance`` >= 0,
and in mode 2 (generalized cross-validation, the variance estimated) when it is negative.

For a smoothing parameter p the fit is the natural spline s of degree 2m - 1 with knots at the points
that minimizes ``sum (y_i - s(x_i))^2 + p * integral (s^(m))^2``. GCVSPL solves it in a local basis of
natural B-splines (its ``B + p E`` band system); here it is solved in values at the points instead (the
Reinsch form, which stays well conditioned for every p):

    s^(m) = sum_k g_k Q_k, Q_k = [x_k .. x_(k+m)] (. - t)_+^(m-1) (the B-splines of order m),
    D s = G g / (m-1)!    (D: the m-th divided differences, G: the Gram matrix of the Q_k),
    (G + p c D D^T) g = D y,  y - s = p c D^T g,  c = ((m-1)!)^2,

both matrices banded (half bandwidth m), so a banded Cholesky factor per p. The criterion needs the
residual and tr(I - A) = p c tr((G + p c D D^T)^-1 D D^T) (A the influence matrix), each formed without
cancellation. GCVSPL's p is this p (checked against OpenSim's coefficients); its search, with which the
result must agree, is repeated step for step:

- it starts at p = 1/el, where el is the mean magnitude of the entries of GCVSPL's penalty band divided
  by that of its basis band (a scale of its basis; computed here from the same definitions);
- a trial p is clamped to [1e-15, 1e15] / el;
- it halves p while the criterion does not increase (ending at the lower clamp: interpolation), else
  doubles it until the criterion increases, then narrows the bracket by golden sections until its
  relative width (r2 - r1)/(r1 + r2) is at most 1e-6 and takes the bracket's midpoint.

The termination limits how closely two implementations agree: a comparison of nearly equal criterion
values (round-off in the last bracket) may choose the other half, moving p by up to the bracket's width,
about 2e-6 of p. Where the criterion keeps decreasing as p grows (the data are within the variance of a
polynomial of degree m - 1), GCVSPL doubles p until its own round-off stops it; here the doubling ends at
the upper clamp, the limit (that polynomial fitted by least squares).
"""
from __future__ import annotations

import math

import numpy as np

_CLAMP = 1e-15  # GCVSPL's bounds on p * el
_GOLDEN = 1.618033983
_BRACKET = 1e-6  # GCVSPL's relative width at which the golden-section search stops
_MAX_STEPS = 400  # doubling/halving spans the 1e30 clamp range in ~100 steps; a guard against non-finite data


def _divided_difference_weights(x: np.ndarray, lo: np.ndarray, width: int, count=None) -> np.ndarray:
    """w[j, i] = 1 / prod_{k != i} (x[lo_j + i] - x[lo_j + k]), i, k < count_j (``width`` by default),
    the weights of the divided difference over the points lo_j .. lo_j + count_j - 1; 0 past them."""
    n = x.size
    idx = lo[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < (np.full(lo.size, width) if count is None else count)[:, None]
    xw = np.where(valid, x[np.minimum(idx, n - 1)], np.nan)
    diff = xw[:, :, None] - xw[:, None, :]
    same = np.eye(width, dtype=bool)[None, :, :] | ~valid[:, None, :]
    diff = np.where(same, 1.0, diff)
    w = 1.0 / np.prod(diff, axis=2)
    return np.where(valid, w, 0.0)


def basis_scale(x: np.ndarray, m: int) -> float:
    """GCVSPL's el: the mean |entry| of its penalty band E over that of its basis band B (all weights 1).

    Its basis function J (1-based) is, with the window [max(1, J-m), min(n, J+m)]: the divided difference
    of (. - t)_+^(2m-1) over the window (J <= m, left), that times x_(J+m) - x_(J-m) (interior: the
    B-spline of order 2m), or of (t - .)_+^(2m-1) (J > n - m, right); column J of E is (2m-1)! times the
    divided-difference weights of the window, times x_(J+m) - x_(J-m) for the interior ones (the jumps of
    the (2m-1)-th derivative). Signs do not enter the magnitudes."""
    n = x.size
    J = np.arange(1, n + 1)
    lo = np.maximum(1, J - m)
    hi = np.minimum(n, J + m)
    width = 2 * m + 1
    idx = (lo - 1)[:, None] + np.arange(width)[None, :]
    w = _divided_difference_weights(x, lo - 1, width, hi - lo + 1)
    interior = (J >= m + 1) & (J <= n - m)
    span = np.where(interior, x[np.minimum(J + m, n) - 1] - x[np.maximum(J - m, 1) - 1], 1.0)
    e_sum = math.factorial(2 * m - 1) * float(np.sum(np.abs(w).sum(axis=1) * span))
    # values of basis function J at the points l with |l - J| <= m - 1
    xw = x[np.minimum(idx, n - 1)]
    b_sum = 0.0
    right = J > n - m
    for off in range(-(m - 1), m):
        lpos = J - 1 + off
        ok = (lpos >= 0) & (lpos < n)
        t = x[np.clip(lpos, 0, n - 1)][:, None]
        dist = np.where(right[:, None], t - xw, xw - t)
        v = span * np.sum(w * np.maximum(dist, 0.0) ** (2 * m - 1), axis=1)
        b_sum += float(np.abs(v[ok]).sum())
    return e_sum / b_sum


class _Penalty:
    """The banded pieces of the Reinsch form for points ``x`` and half order ``m``."""

    def __init__(self, x: np.ndarray, m: int):
        from scipy.interpolate import BSpline
        n = x.size
        r = n - m
        self.m, self.n, self.r = m, n, r
        self.D = _divided_difference_weights(x, np.arange(r), m + 1)  # row j: points j .. j+m
        # Gram matrix of the Q_k by m-point Gauss quadrature on each interval (exact for degree 2m - 2)
        k = m - 1
        knots = np.concatenate([np.full(k, x[0]), x, np.full(k, x[-1])])
        gx, gw = np.polynomial.legendre.leggauss(m)
        a, b = x[:-1], x[1:]
        pts = (0.5 * (b - a)[:, None] * gx + 0.5 * (a + b)[:, None]).ravel()
        wts = (0.5 * (b - a)[:, None] * gw).ravel()
        N = BSpline.design_matrix(pts, knots, k).tocsc()[:, k:k + r]
        N = N.multiply(1.0 / (x[m:] - x[:r])[None, :]).tocsc()
        G = (N.T.multiply(wts[None, :]) @ N).toarray()
        Dm = np.zeros((r, n))
        for i in range(m + 1):
            Dm[np.arange(r), np.arange(r) + i] = self.D[:, i]
        self.Dmat = Dm
        self.G = G
        self.M = Dm @ Dm.T
        self.c = float(math.factorial(m - 1) ** 2)

    def _upper_band(self, A: np.ndarray) -> np.ndarray:
        m = self.m
        ab = np.zeros((m + 1, self.r))
        for d in range(m + 1):
            ab[m - d, d:] = np.diagonal(A, d)
        return ab

    def fit(self, y: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, float]:
        """The smoothed values s, the residual y - s and tr(I - A) at smoothing parameter ``p``."""
        from scipy.linalg import cho_solve_banded, cholesky_banded
        pc = p * self.c
        cb = cholesky_banded(self._upper_band(self.G + pc * self.M))
        g = cho_solve_banded((cb, False), self.Dmat @ y)
        res = pc * (self.Dmat.T @ g)
        trace = pc * float(np.trace(cho_solve_banded((cb, False), self.M)))
        return y - res, res, trace


def smoothing_fit(x: np.ndarray, y: np.ndarray, m: int, variance: float) -> tuple[np.ndarray, float]:
    """The values at the points of GCVSPL's smoothing spline (mode 3 for ``variance`` >= 0, mode 2 for
    a negative one) and its smoothing parameter p."""
    n = x.size
    el = basis_scale(x, m)
    pen = _Penalty(x, m)
    low, high = _CLAMP / el, 1.0 / (el * _CLAMP)
    gcv = variance < 0.0

    def criterion(p: float) -> float:
        _, res, trace = pen.fit(y, min(max(p, low), high))
        esn = float(res @ res) / n
        trn = trace / n
        if gcv:
            return esn / trn ** 2 if trn > 0.0 else math.inf
        return esn - variance * (2.0 * trn - 1.0)

    r1 = 1.0 / el
    r2 = 2.0 * r1
    gf2 = criterion(r2)
    for _ in range(_MAX_STEPS):  # halve while the criterion does not increase
        gf1 = criterion(r1)
        if gf1 > gf2:
            break
        if r1 * el < _CLAMP:  # interpolation: the lower clamp
            return pen.fit(y, low)[0], low
        r2, gf2 = r1, gf1
        r1 /= 2.0
    r3 = 2.0 * r2
    for _ in range(_MAX_STEPS):  # double until it increases
        gf3 = criterion(r3)
        if gf3 > gf2:
            break
        if r3 * el * _CLAMP > 1.0:  # it never increases: the limit, a polynomial of degree m - 1
            return pen.fit(y, high)[0], high
        r2, gf2 = r3, gf3
        r3 *= 2.0
    r2 = r3
    alpha = (r2 - r1) / _GOLDEN
    r4, r3 = r1 + alpha, r2 - alpha
    gf3, gf4 = criterion(r3), criterion(r4)
    for _ in range(_MAX_STEPS):  # golden sections of [r1, r2], r3 < r4 inside
        if gf3 <= gf4:
            r2 = r4
            err = (r2 - r1) / (r1 + r2)
            if err * err + 1.0 == 1.0 or err <= _BRACKET:
                break
            r4, gf4 = r3, gf3
            alpha /= _GOLDEN
            r3 = r2 - alpha
            gf3 = criterion(r3)
        else:
            r1 = r3
            err = (r2 - r1) / (r1 + r2)
            if err * err + 1.0 == 1.0 or err <= _BRACKET:
                break
            r3, gf3 = r4, gf4
            alpha /= _GOLDEN
            r4 = r1 + alpha
            gf4 = criterion(r4)
    p = min(max(0.5 * (r1 + r2), low), high)
    return pen.fit(y, p)[0], p
