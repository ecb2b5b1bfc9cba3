"""`Function.Spline`: interpolating splines of degree 1 to 5 with exact derivatives."""
from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._base import UNLIMITED_DERIVATIVE_ORDER, Function, _finite_vector


def piece_derivative(c: Sequence[float], u: float, n: int) -> float:
    """d^n/du^n of the polynomial sum_r c[r] u^r at ``u`` (0 for n above its degree).

    d^n/du^n of c_r u^r is c_r r!/(r-n)! u^(r-n); Horner over r = degree ... n (n = 0: the value, as
    the plain Horner sum, bit for bit).
    """
    v = 0.0
    if n == 0:
        for a in reversed(c):
            v = v * u + a
        return v
    for r in range(len(c) - 1, n - 1, -1):
        v = v * u + c[r] * math.prod(range(r - n + 1, r + 1))
    return v

class _Spline(Function):
    """Interpolating spline of one argument through the points (x_i, y_i).

    f is the piecewise polynomial of degree k that passes through every (x_i, y_i) and has k - 1
    continuous derivatives, built by ``scipy.interpolate.make_interp_spline`` with its default end
    conditions (not-a-knot for k = 3, so a cubic spline through samples of a cubic polynomial reproduces
    it). On each knot interval [t_j, t_{j+1}) it is stored as a Taylor polynomial about the interval's
    midpoint m_j,

        f(x) = sum_{r=0}^{k} c_{j,r} (x - m_j)^r,   c_{j,r} = f^(r)(m_j) / r!,

    and evaluated by Horner's rule. Outside [x_0, x_{n-1}] the end pieces are extended. f^(k) is piecewise
    constant (taken from the right at an interior knot) and every derivative above k is 0, so every order
    is available, as in Simbody's ``Spline``.

    Unlike Simbody (whose ``SplineFitter`` builds smoothing splines of odd degree), this spline
    interpolates exactly and any degree 1 to 5 is accepted.

    Parameters
    ----------
    x : array_like, shape (n,)
        Strictly increasing, finite sample locations; n >= degree + 1.
    y : array_like, shape (n,)
        Finite sample values.
    degree : int, default 3
        k, from 1 to 5.
    """

    __qualname__ = "Function.Spline"
    __slots__ = ("_x", "_y", "_k", "_bp", "_mid", "_mid_list", "_coef", "_coef_list", "_dcache")

    MAX_DEGREE = 5

    def __init__(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, degree: int = 3):
        cls = "Function.Spline"
        try:
            k = operator.index(degree)
        except TypeError:
            raise TypeError(f"{cls}: degree must be an int, got {degree!r}") from None
        if not 1 <= k <= self.MAX_DEGREE:
            raise ValueError(f"{cls}: degree = {k} must be between 1 and {self.MAX_DEGREE}")
        xs = _finite_vector(x, "x", cls, k + 1)
        ys = _finite_vector(y, "y", cls, 0)
        if ys.shape != xs.shape:
            raise ValueError(f"{cls}: x has {xs.shape[0]} entries but y has {ys.shape[0]}")
        dx = np.diff(xs)
        if not (dx > 0).all():
            i = int(np.flatnonzero(dx <= 0)[0])
            raise ValueError(
                f"{cls}: x must be strictly increasing, but x[{i}] = {xs[i]} and x[{i + 1}] = {xs[i + 1]}"
            )
        from scipy.interpolate import make_interp_spline  # scipy is slow to import; only splines need it

        bspl = make_interp_spline(xs, ys, k=k)
        self._x, self._y, self._k = xs, ys, k
        bp = np.unique(bspl.t)  # breakpoints: the distinct knots, x_0 … x_{n-1} included
        mid = 0.5 * (bp[:-1] + bp[1:])
        # Taylor coefficients about interval midpoints: no need to ask the B-spline for one side of a knot.
        coef = np.empty((len(mid), k + 1))
        for r in range(k + 1):
            coef[:, r] = bspl(mid, nu=r) / math.factorial(r)
        self._bp = bp.tolist()
        self._mid = mid
        self._mid_list = mid.tolist()
        self._coef = coef  # (n_intervals, k + 1), increasing powers
        self._coef_list = [row.tolist() for row in coef]
        self._dcache: dict[int, np.ndarray] = {0: coef}

    def _interval(self, t: float) -> int:
        j = bisect.bisect_right(self._bp, t) - 1
        return 0 if j < 0 else min(j, len(self._bp) - 2)

    def calc_value(self, x):
        t = float(x[0])
        j = self._interval(t)
        return piece_derivative(self._coef_list[j], t - self._mid_list[j], 0)

    def calc_derivative(self, deriv_components, x):
        n = len(deriv_components)
        k = self._k
        if n > k:
            return 0.0
        t = float(x[0])
        j = self._interval(t)
        return piece_derivative(self._coef_list[j], t - self._mid_list[j], n)

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def get_degree(self) -> int:
        """The degree k."""
        return self._k

    def get_x(self) -> np.ndarray:
        """The sample locations, shape ``(n,)``, read-only."""
        return self._x

    def get_y(self) -> np.ndarray:
        """The sample values, shape ``(n,)``, read-only."""
        return self._y

    def parameters(self) -> dict[str, Any]:
        """The constructor's arguments: ``Function.Spline(**f.parameters())`` rebuilds ``f`` exactly.

        The spline is determined by its points and degree (its coefficients are computed from them
        deterministically), so these are all that is needed to rebuild it.

        Returns
        -------
        dict
            ``{"x": x, "y": y, "degree": k}``, the read-only arrays of `get_x` and `get_y`.
        """
        return {"x": self._x, "y": self._y, "degree": self._k}

    def _deriv_coef(self, n: int) -> np.ndarray:
        d = self._dcache.get(n)
        if d is None:
            k = self._k
            scale = np.array([math.prod(range(r - n + 1, r + 1)) for r in range(n, k + 1)], dtype=float)
            d = self._coef[:, n:] * scale
            self._dcache[n] = d
        return d

    def _calc_derivatives_n(self, n: int, X: np.ndarray) -> np.ndarray:
        if n > self._k:
            return np.zeros(len(X))
        t = X[:, 0]
        bp = np.asarray(self._bp)
        j = np.clip(np.searchsorted(bp, t, side="right") - 1, 0, len(bp) - 2)
        u = t - self._mid[j]
        c = self._deriv_coef(n)[j]
        v = np.zeros(len(X))
        for r in range(c.shape[1] - 1, -1, -1):
            v = v * u + c[:, r]
        return v

    def _calc_values(self, X):
        return self._calc_derivatives_n(0, X)

    def _calc_derivatives(self, comps, X):
        return self._calc_derivatives_n(len(comps), X)

    def _compile(self, builder) -> int:
        # par = (breakpoints, midpoints, Taylor coefficients row by row), the lists the Python methods read
        par = self._bp + self._mid_list + [c for row in self._coef_list for c in row]
        return builder.entry("spline", self, par, aux=(len(self._bp), self._k))

    def __repr__(self) -> str:
        return f"Function.Spline(<{len(self._x)} points on [{self._x[0]}, {self._x[-1]}]>, degree={self._k})"
