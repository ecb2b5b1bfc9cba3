"""OpenSim's functions that Simbody has no built-in for: SimmSpline, GCVSpline, multivariate polynomials,
Lepton expressions, scaled and coupler functions.

(OpenSim's CoordinateLimitForce is the built-in ``Force.CoordinateLimit``.)"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from simtk import Function
from simtk.common.function._base import UNLIMITED_DERIVATIVE_ORDER
from simtk.common.function.spline import piece_derivative
from simtk.common.property import Property

# SimmSpline and the wrappers declare their constructor's parameters as Properties: a model description
# (and a model file) holds such a Function as its declared Properties and rebuilds it as
# ``cls(**properties)`` (registered in ``_model_registry_osim``); the others give their parameters().


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


class GCVSplineFunction(Function):
    """OpenSim's ``GCVSpline``: the natural spline of odd degree GCVSPL fits, interpolating or smoothing.

    OpenSim 4.6 fits it with Simbody's GCVSPL (Woltring's generalized cross-validation spline, all
    weights 1; OpenSim's ``weights`` property is not passed on). With ``error_variance`` 0 it interpolates:
    the spline of degree 2m - 1 (m the ``half_order``) through every point whose derivatives of orders m
    to 2m - 2 vanish at both ends ("natural"). With a positive error variance it smooths: the natural
    spline minimizing ``sum (y_i - s(x_i))^2 + p * integral (s^(m))^2``, p chosen by GCVSPL's search
    to minimize the predicted true mean-squared error for that variance; with a negative one p minimizes
    the generalized cross-validation function (the variance estimated). `simtk.io._gcvspl` repeats
    that search; the spline is then the natural one through the smoothed values. Outside the points it
    continues as the polynomial of degree m - 1 that the end conditions leave (a constant for degree 1,
    a line for degree 3), as GCVSPL's evaluation does. Here it is solved directly as a B-spline with
    those end conditions, then held as Taylor polynomials on the intervals, plus the two end
    polynomials as extra pieces. Every derivative order is available.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Strictly increasing finite abscissae and finite values; n >= degree + 1 (GCVSPL's n >= 2m).
    degree : int
        1, 3, 5 or 7.
    error_variance : float
        0 (interpolation, the default), > 0 (the data's known error variance) or < 0 (estimated).
    """

    def __init__(self, x: Sequence[float], y: Sequence[float], degree: int = 5, error_variance: float = 0.0):
        import math

        if degree not in (1, 3, 5, 7):
            raise ValueError(f"GCVSpline: degree {degree} is not 1, 3, 5 or 7 (half_order 1 to 4)")
        x = np.asarray(x, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        m = (degree + 1) // 2
        if x.shape != y.shape:
            raise ValueError(f"GCVSpline: {x.size} x values but {y.size} y values")
        if x.size < 2 * m:
            raise ValueError(f"GCVSpline: degree {degree} needs at least {2 * m} points (GCVSPL's n >= 2 * "
                             f"half_order), got {x.size}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("GCVSpline: x and y must be finite")
        if not (np.diff(x) > 0).all():
            i = int(np.flatnonzero(np.diff(x) <= 0)[0])
            raise ValueError(f"GCVSpline: x must be strictly increasing, but x[{i}] = {x[i]} and "
                             f"x[{i + 1}] = {x[i + 1]}")
        variance = float(error_variance)
        if not math.isfinite(variance):
            raise ValueError(f"GCVSpline: error_variance must be finite, got {error_variance}")
        self._x, self._y, self._k, self._variance = x, y, degree, variance
        # GCVSPL with variance 0 ends its search at p = 1e-15 / el (its lower bound), which moves the
        # values by ~1e-15 of their scale: interpolating is that limit
        self._p = 0.0
        values = y
        if variance != 0.0:
            from ._gcvspl import smoothing_fit
            values, self._p = smoothing_fit(x, y, m, variance)
        self._build(x, values, degree)

    def _build(self, x: np.ndarray, values: np.ndarray, k: int) -> None:
        """The natural interpolating spline of degree k through (x, values), as pieces."""
        import math

        from scipy.interpolate import make_interp_spline
        m = (k + 1) // 2
        natural = [(j, 0.0) for j in range(m, k)]
        spl = make_interp_spline(x, values, k=k, bc_type=(natural, natural) if natural else None)
        # pieces: [x_0 - 1, x_0) the left end polynomial, the intervals, [x_{n-1}, x_{n-1} + 1) the right
        # one; below (above) the first (last) breakpoint its piece continues, which is exactly GCVSPL's
        bp = np.concatenate([[x[0] - 1.0], x, [x[-1] + 1.0]])
        mid = 0.5 * (bp[:-1] + bp[1:])
        coef = np.zeros((len(mid), k + 1))
        for r in range(k + 1):
            coef[1:-1, r] = spl(mid[1:-1], nu=r) / math.factorial(r)
        for row, x_end in ((0, x[0]), (-1, x[-1])):
            # the end polynomial sum_{j<m} f^(j)(x_end) (t - x_end)^j / j!, re-expanded about the piece's midpoint
            d = [float(spl(x_end, nu=j)) for j in range(m)]
            u0 = mid[row] - x_end
            for r in range(m):
                coef[row, r] = sum(d[j] * u0 ** (j - r) / (math.factorial(r) * math.factorial(j - r))
                                   for j in range(r, m))
        self._bp = bp.tolist()
        self._mid = mid.tolist()
        self._coef = [row.tolist() for row in coef]

    @property
    def smoothing_parameter(self) -> float:
        """GCVSPL's p of the fit (0 for an interpolating spline)."""
        return self._p

    def _piece(self, t: float) -> tuple[list, float]:
        import bisect
        j = min(max(bisect.bisect_right(self._bp, t) - 1, 0), len(self._bp) - 2)
        return self._coef[j], t - self._mid[j]

    def calc_value(self, x):
        c, u = self._piece(float(x[0]))
        return piece_derivative(c, u, 0)

    def calc_derivative(self, deriv_components, x):
        n = len(deriv_components)
        if n > self._k:
            return 0.0
        c, u = self._piece(float(x[0]))
        return piece_derivative(c, u, n)

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def parameters(self) -> dict:
        """The constructor's arguments (the model format rebuilds the spline from them)."""
        return {"x": self._x, "y": self._y, "degree": self._k, "error_variance": self._variance}

    def _compile(self, builder) -> int:
        if self._k > _CORE_SPLINE_DEGREE:
            raise NotImplementedError(f"GCVSpline of degree {self._k}: the compiled spline family holds degrees "
                                      f"up to {_CORE_SPLINE_DEGREE}; evaluated through its Python methods")
        # the layout of Function.Spline's family: breakpoints, midpoints, Taylor coefficients row by row
        par = self._bp + self._mid + [c for row in self._coef for c in row]
        return builder.entry("spline", self, par, aux=(len(self._bp), self._k))


_CORE_SPLINE_DEGREE = 5  # core/functions.pxi FN_MAX_SPLINE_DEGREE


class MultivariatePolynomialFunction(Function):
    """OpenSim's ``MultivariatePolynomialFunction``: sum of c_t prod_i x_i^(e_t,i) over every exponent
    tuple of total degree <= ``order``, in OpenSim's order of the coefficients: lexicographic in the
    exponents, the last argument's varying fastest (for 2 arguments and order 2: 1, y, y^2, x, xy, x^2).

    Derivatives of every order are exact (OpenSim 4.6 returns the first derivative for any order:
    where a second derivative matters, such as a coupler's acceleration at nonzero speed, simtk's
    differs from OpenSim's).

    Parameters
    ----------
    coefficients : array_like
        comb(dimension + order, order) finite numbers.
    dimension : int
        The number of arguments, >= 1.
    order : int
        The largest total degree, >= 0.
    """

    def __init__(self, coefficients: Sequence[float], dimension: int, order: int):
        import math
        c = np.asarray(coefficients, dtype=float).reshape(-1)
        dimension, order = int(dimension), int(order)
        if dimension < 1 or order < 0:
            raise ValueError(f"MultivariatePolynomialFunction: expected dimension >= 1 and order >= 0, got "
                             f"{dimension} and {order}")
        need = math.comb(dimension + order, order)
        if c.size != need:
            raise ValueError(f"MultivariatePolynomialFunction: dimension {dimension} and order {order} take {need} "
                             f"coefficients, got {c.size}")
        if not np.isfinite(c).all():
            raise ValueError("MultivariatePolynomialFunction: coefficients must be finite")
        self._c, self._dim, self._order = c, dimension, order
        self._terms = [(float(ci), e) for ci, e in zip(c, _exponents(dimension, order)) if ci != 0.0]

    def calc_value(self, x):
        return self._partial((), x)

    def calc_derivative(self, deriv_components, x):
        return self._partial(deriv_components, x)

    def _partial(self, deriv_components, x) -> float:
        d = [0] * self._dim
        for k in deriv_components:
            d[k] += 1
        xs = [float(v) for v in x[:self._dim]]
        total = 0.0
        for c, e in self._terms:
            term = c
            for xi, ei, di in zip(xs, e, d):
                if di > ei:
                    term = 0.0
                    break
                for j in range(di):  # the falling factorial of the differentiated power
                    term *= ei - j
                term *= xi ** (ei - di)
            total += term
        return total

    def get_argument_size(self) -> int:
        return self._dim

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def parameters(self) -> dict:
        """The constructor's arguments (the model format rebuilds the function from them)."""
        return {"coefficients": self._c, "dimension": self._dim, "order": self._order}


def _exponents(dim: int, order: int) -> list[tuple[int, ...]]:
    if dim == 1:
        return [(p,) for p in range(order + 1)]
    return [(p,) + rest for p in range(order + 1) for rest in _exponents(dim - 1, order - p)]


class ExpressionFunction(Function):
    """OpenSim's ``ExpressionBasedFunction``: a Lepton expression of named variables (`simtk.io._lepton`),
    its derivatives of every order exact (made symbolically; OpenSim 4.6 returns the first derivative for
    any order).

    Parameters
    ----------
    expression : str
        The expression, e.g. ``"x^2*y + sin(x)"``.
    variables : str
        Its variables in argument order, separated by spaces (OpenSim's XML form), e.g. ``"x y"``.
    """

    def __init__(self, expression: str, variables: str):
        from ._lepton import Expression
        names = str(variables).split()
        if not names:
            raise ValueError("ExpressionBasedFunction: expected at least one variable name in <variables>")
        if len(set(names)) != len(names):
            raise ValueError(f"ExpressionBasedFunction: variable names repeat in {variables!r}")
        self._text, self._vars = str(expression), " ".join(names)
        self._e = Expression(self._text, names)
        self._n = len(names)

    def calc_value(self, x):
        return self._e.value([float(v) for v in x])

    def calc_derivative(self, deriv_components, x):
        return self._e.derivative(tuple(deriv_components), [float(v) for v in x])

    def get_argument_size(self) -> int:
        return self._n

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def parameters(self) -> dict:
        """The constructor's arguments (the model format rebuilds the function from them)."""
        return {"expression": self._text, "variables": self._vars}
