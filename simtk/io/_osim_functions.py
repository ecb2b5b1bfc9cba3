"""OpenSim's functions that Simbody has no built-in for: SimmSpline, scaled and coupler functions.

(OpenSim's CoordinateLimitForce is the built-in ``Force.CoordinateLimit``.)"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from simtk import Function
from simtk.common.property import Property

# Each class declares its constructor's parameters as Properties: a model description (and a model
# file) holds a Function as its declared Properties and rebuilds it as ``cls(**properties)``; the kinds
# are registered in ``_model_registry_osim``.


# ====================================================================== functions
class SimmSplineFunction(Function):
    """OpenSim's ``SimmSpline`` (and ``NaturalCubicSpline``): the Forsythe-Malcolm-Moler cubic spline.

    An interpolating cubic spline through (x_i, y_i), twice continuously differentiable, whose end
    conditions make the third derivative on the first (last) interval equal to that of the cubic
    through the first (last) four points; with three points it is the parabola through them, with
    two the line. Outside [x_0, x_{n-1}] it continues as the tangent line at the end point (second
    derivative 0), as OpenSim's does. Derivatives up to order 2 (OpenSim's limit).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Strictly increasing finite abscissae (n >= 2) and finite values.
    """

    x = Property(attr="_x", doc="abscissae, strictly increasing")
    y = Property(attr="_y", doc="values")

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        x = np.asarray(x, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        if x.shape != y.shape:
            raise ValueError(f"SimmSpline: {x.size} x values but {y.size} y values")
        if x.size < 2:
            raise ValueError(f"SimmSpline: needs at least 2 points, got {x.size}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("SimmSpline: x and y must be finite")
        h = np.diff(x)
        if not (h > 0).all():
            i = int(np.flatnonzero(h <= 0)[0])
            raise ValueError(f"SimmSpline: x must be strictly increasing, but x[{i}] = {x[i]} and "
                             f"x[{i + 1}] = {x[i + 1]}")
        n = x.size
        slope = np.diff(y) / h
        # Unknowns: the second derivatives M_i at the points.
        M = np.zeros(n)
        if n >= 3:
            A = np.zeros((n, n))
            rhs = np.zeros(n)
            for i in range(1, n - 1):  # continuity of the first derivative at interior points
                A[i, i - 1], A[i, i], A[i, i + 1] = h[i - 1], 2.0 * (h[i - 1] + h[i]), h[i]
                rhs[i] = 6.0 * (slope[i] - slope[i - 1])
            # End conditions on the third derivative (M_1 - M_0) / h_0: that of the cubic through
            # the four end points (6 x the third divided difference), or 0 with only three points.
            third_first = third_last = 0.0
            if n > 3:
                third_first = 6.0 * _third_divided_difference(x[:4], y[:4])
                third_last = 6.0 * _third_divided_difference(x[-4:], y[-4:])
            A[0, 0], A[0, 1], rhs[0] = -1.0, 1.0, h[0] * third_first
            A[-1, -2], A[-1, -1], rhs[-1] = -1.0, 1.0, h[-1] * third_last
            M = np.linalg.solve(A, rhs)
        # Per interval: y_i + b dx + c dx^2 + d dx^3.
        self._x = x
        self._xl = x.tolist()
        self._y = y
        self._b = slope - h * (2.0 * M[:-1] + M[1:]) / 6.0
        self._c = M[:-1] / 2.0
        self._d = (M[1:] - M[:-1]) / (6.0 * h)
        self._slope_first = float(self._b[0])
        self._slope_last = float(slope[-1] + h[-1] * (M[-2] + 2.0 * M[-1]) / 6.0)
        self._M = M

    def _interval(self, t: float) -> int:
        import bisect
        k = bisect.bisect_right(self._xl, t) - 1
        return min(max(k, 0), len(self._xl) - 2)

    def calc_value(self, x):
        t = float(x[0])
        if t < self._xl[0]:
            return float(self._y[0] + (t - self._xl[0]) * self._slope_first)
        if t > self._xl[-1]:
            return float(self._y[-1] + (t - self._xl[-1]) * self._slope_last)
        k = self._interval(t)
        dx = t - self._xl[k]
        return float(self._y[k] + dx * (self._b[k] + dx * (self._c[k] + dx * self._d[k])))

    def calc_derivative(self, deriv_components, x):
        order = len(deriv_components)
        t = float(x[0])
        if t < self._xl[0]:
            return self._slope_first if order == 1 else 0.0
        if t > self._xl[-1]:
            return self._slope_last if order == 1 else 0.0
        k = self._interval(t)
        dx = t - self._xl[k]
        if order == 1:
            return float(self._b[k] + dx * (2.0 * self._c[k] + 3.0 * dx * self._d[k]))
        return float(2.0 * self._c[k] + 6.0 * dx * self._d[k])

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 2

    def _compile(self, builder) -> int:
        # the compiled form (simtk/common/function/_compiled.py): the arrays and end slopes the methods read
        par = np.concatenate([self._x, self._y, self._b, self._c, self._d, [self._slope_first, self._slope_last]])
        return builder.entry("simm_spline", self, par, aux=(len(self._xl), 0))


def _third_divided_difference(x: np.ndarray, y: np.ndarray) -> float:
    f01 = (y[1] - y[0]) / (x[1] - x[0])
    f12 = (y[2] - y[1]) / (x[2] - x[1])
    f23 = (y[3] - y[2]) / (x[3] - x[2])
    f012 = (f12 - f01) / (x[2] - x[0])
    f123 = (f23 - f12) / (x[3] - x[1])
    return float((f123 - f012) / (x[3] - x[0]))


class _Scaled(Function):
    """``scale * f(x)``: OpenSim's MultiplierFunction."""

    function = Property(attr="_f", doc="f")
    scale = Property(attr="_s", doc="the factor")

    def __init__(self, function: Function, scale: float):
        self._f = function
        self._s = float(scale)

    def calc_value(self, x):
        return self._s * self._f.calc_value(x)

    def calc_derivative(self, deriv_components, x):
        return self._s * self._f.calc_derivative(deriv_components, x)

    def get_argument_size(self) -> int:
        return self._f.get_argument_size()

    def get_max_derivative_order(self) -> int:
        return self._f.get_max_derivative_order()

    def _compile(self, builder) -> int:
        return builder.entry("scaled", self, [self._s], child=builder.add(self._f))


class _CouplerFunction(Function):
    """C(q_ind..., q_dep) = scale * f(q_ind...) - q_dep: the function OpenSim's
    CoordinateCouplerConstraint gives Simbody's CoordinateCoupler (OpenSim's CompoundFunction)."""

    function = Property(attr="_f", doc="f, of the independent coordinates")
    scale = Property(attr="_s", doc="the factor of f")

    def __init__(self, function: Function, scale: float):
        self._f = function
        self._s = float(scale)
        self._n = function.get_argument_size()

    def calc_value(self, x):
        return self._s * self._f.calc_value(x[:self._n]) - float(x[self._n])

    def calc_derivative(self, deriv_components, x):
        comps = list(deriv_components)
        if self._n in comps:  # the dependent coordinate enters linearly with slope -1
            return -1.0 if len(comps) == 1 else 0.0
        return self._s * self._f.calc_derivative(comps, x[:self._n])

    def get_argument_size(self) -> int:
        return self._n + 1

    def get_max_derivative_order(self) -> int:
        return self._f.get_max_derivative_order()

    def _compile(self, builder) -> int:
        return builder.entry("coupler", self, [self._s], child=builder.add(self._f), aux=(self._n, 0))


class _Shifted(Function):
    """``f(x) + offset``: OpenSim's ``Sine`` (a Simbody Sinusoid plus its DC offset)."""

    function = Property(attr="_f", doc="f")
    offset = Property(attr="_c", doc="the constant added")

    def __init__(self, function: Function, offset: float):
        self._f = function
        self._c = float(offset)

    def calc_value(self, x):
        return self._f.calc_value(x) + self._c

    def calc_derivative(self, deriv_components, x):
        return self._f.calc_derivative(deriv_components, x)

    def get_argument_size(self) -> int:
        return self._f.get_argument_size()

    def get_max_derivative_order(self) -> int:
        return self._f.get_max_derivative_order()


class _PiecewiseConstant(Function):
    """OpenSim's ``PiecewiseConstantFunction``: y_k on [x_k, x_{k+1}), y_0 before x_0 and y_{n-1}
    from x_{n-1} on (what OpenSim 4.6 evaluates); every derivative is 0."""

    x = Property(attr="_xl", doc="abscissae, strictly increasing")
    y = Property(attr="_yl", doc="values")

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        x = np.asarray(x, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        if x.shape != y.shape or x.size < 1:
            raise ValueError(f"PiecewiseConstantFunction: expected as many x as y values (at least one), "
                             f"got {x.size} and {y.size}")
        if not (np.diff(x) > 0).all():
            raise ValueError("PiecewiseConstantFunction: x must be strictly increasing")
        self._xl = x.tolist()
        self._yl = y.tolist()

    def calc_value(self, x):
        import bisect
        k = bisect.bisect_right(self._xl, float(x[0])) - 1
        return float(self._yl[max(k, 0)])

    def calc_derivative(self, deriv_components, x):
        return 0.0

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 2
