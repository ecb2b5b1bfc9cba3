"""The closed-form families: `Function.Constant`, `Linear`, `Polynomial`, `Step`, `Sinusoid`."""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._base import UNLIMITED_DERIVATIVE_ORDER, Function, _finite_real, _finite_vector


class _Constant(Function):
    """f(x) = c for every x in R^m; every derivative is 0.

    Parameters
    ----------
    value : float
        The constant c.
    argument_size : int, default 1
        The number m >= 0 of (ignored) arguments. ``Function.Constant(0, 0)`` takes none, as the constant
        coordinates of a ``MobilizedBody.FunctionBased``.
    """

    __qualname__ = "Function.Constant"
    __slots__ = ("_c", "_m")

    def __init__(self, value: float, argument_size: int = 1) -> None:
        self._c = _finite_real(value, "value", "Function.Constant")
        try:
            m = operator.index(argument_size)
        except TypeError:
            raise TypeError(
                f"Function.Constant: argument_size must be an int, got {argument_size!r}"
            ) from None
        if m < 0:
            raise ValueError(f"Function.Constant: argument_size = {m} must be >= 0")
        self._m = m

    def calc_value(self, x):
        return self._c

    def calc_derivative(self, deriv_components, x):
        return 0.0

    def get_argument_size(self) -> int:
        return self._m

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def get_value(self) -> float:
        """The constant c."""
        return self._c

    def parameters(self) -> dict[str, Any]:
        """The constructor's arguments: ``Function.Constant(**f.parameters())`` rebuilds ``f`` exactly.

        Returns
        -------
        dict
            ``{"value": c, "argument_size": m}``.
        """
        return {"value": self._c, "argument_size": self._m}

    def _calc_values(self, X):
        return np.full(len(X), self._c)

    def _calc_derivatives(self, comps, X):
        return np.zeros(len(X))

    def _compile(self, builder) -> int:
        # the compiled form (simtk/common/function/_compiled.py); par = (c,)
        return builder.entry("constant", self, [self._c])

    def __repr__(self) -> str:
        return f"Function.Constant({self._c!r}, argument_size={self._m})"


class _Linear(Function):
    """f(x) = c_0 x_0 + c_1 x_1 + … + c_{m-1} x_{m-1} + c_m.

    The last coefficient is the constant term, so ``m = len(coefficients) - 1``. ∂f/∂x_k = c_k; every
    derivative of order 2 or more is 0.

    Parameters
    ----------
    coefficients : array_like, shape (m + 1,)
        ``(c_0, …, c_{m-1}, c_m)``; at least one entry.
    """

    __qualname__ = "Function.Linear"
    __slots__ = ("_c", "_a", "_b", "_clist")

    def __init__(self, coefficients: Sequence[float] | np.ndarray) -> None:
        self._c = _finite_vector(coefficients, "coefficients", "Function.Linear", 1)
        self._a = self._c[:-1]
        self._b = float(self._c[-1])
        self._clist = self._c.tolist()

    def calc_value(self, x):
        return float(self._a @ x) + self._b

    def calc_derivative(self, deriv_components, x):
        if len(deriv_components) == 1:
            return self._clist[deriv_components[0]]
        return 0.0

    def get_argument_size(self) -> int:
        return len(self._c) - 1

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def get_coefficients(self) -> np.ndarray:
        """The coefficients, shape ``(m + 1,)``, read-only."""
        return self._c

    def parameters(self) -> dict[str, Any]:
        """The constructor's arguments: ``Function.Linear(**f.parameters())`` rebuilds ``f`` exactly.

        Returns
        -------
        dict
            ``{"coefficients": c}``, the read-only array of `get_coefficients`.
        """
        return {"coefficients": self._c}

    def _calc_values(self, X):
        return X @ self._a + self._b

    def _calc_derivatives(self, comps, X):
        return np.full(len(X), self._clist[comps[0]] if len(comps) == 1 else 0.0)

    def _compile(self, builder) -> int:
        # par = (c_0, ..., c_m)
        return builder.entry("linear", self, self._clist)

    def __repr__(self) -> str:
        return f"Function.Linear({self._clist!r})"


class _Polynomial(Function):
    """f(x) = a_0 x^N + a_1 x^(N-1) + … + a_{N-1} x + a_N, of one argument.

    Coefficients are in order of decreasing powers, as Simbody's ``Function::Polynomial`` (and
    ``numpy.polyval``). The n-th derivative is

        f^(n)(x) = sum_{i=0}^{N-n} a_i (N-i)! / (N-i-n)! x^(N-i-n),

    exactly 0 for n > N, so every order is available.

    Parameters
    ----------
    coefficients : array_like, shape (N + 1,)
        ``(a_0, …, a_N)``, highest power first; at least one entry.
    """

    __qualname__ = "Function.Polynomial"
    __slots__ = ("_c", "_clist", "_dcache")

    def __init__(self, coefficients: Sequence[float] | np.ndarray) -> None:
        self._c = _finite_vector(coefficients, "coefficients", "Function.Polynomial", 1)
        self._clist = self._c.tolist()
        self._dcache: dict[int, list[float]] = {0: self._clist}

    def _deriv_coefficients(self, n: int) -> list[float]:
        d = self._dcache.get(n)
        if d is None:
            N = len(self._clist) - 1
            d = []
            for i in range(N - n + 1):
                p = N - i  # power of the term a_i x^p
                d.append(self._clist[i] * math.prod(range(p - n + 1, p + 1)))
            self._dcache[n] = d
        return d

    @staticmethod
    def _horner(c: list[float], t: float) -> float:
        v = 0.0
        for a in c:
            v = v * t + a
        return v

    def calc_value(self, x):
        return self._horner(self._clist, float(x[0]))

    def calc_derivative(self, deriv_components, x):
        n = len(deriv_components)
        if n >= len(self._clist):
            return 0.0
        return self._horner(self._deriv_coefficients(n), float(x[0]))

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def get_coefficients(self) -> np.ndarray:
        """The coefficients, highest power first, shape ``(N + 1,)``, read-only."""
        return self._c

    def parameters(self) -> dict[str, Any]:
        """The constructor's arguments: ``Function.Polynomial(**f.parameters())`` rebuilds ``f`` exactly.

        Returns
        -------
        dict
            ``{"coefficients": a}``, the read-only array of `get_coefficients`.
        """
        return {"coefficients": self._c}

    def _calc_values(self, X):
        return np.polyval(self._clist, X[:, 0])

    def _calc_derivatives(self, comps, X):
        n = len(comps)
        if n >= len(self._clist):
            return np.zeros(len(X))
        return np.polyval(self._deriv_coefficients(n), X[:, 0])

    def _compile(self, builder) -> int:
        # par = (a_0, ..., a_N); the derivatives' coefficients a_i p!/(p-n)! are formed by the core
        return builder.entry("polynomial", self, self._clist)

    def __repr__(self) -> str:
        return f"Function.Polynomial({self._clist!r})"


class _Step(Function):
    """Smooth step from y0 to y1 as x goes from x0 to x1 (Simbody's ``Function::Step``).

    With s = (x - x0) / (x1 - x0),

        f(x) = y0                                  for s <= 0,
        f(x) = y0 + (y1 - y0) (10 s^3 - 15 s^4 + 6 s^5)   for 0 < s < 1,
        f(x) = y1                                  for s >= 1.

    The quintic is Simbody's ``stepUp``: f', f'' are 0 at both ends, so f is C2 everywhere; f''' exists
    inside the interval but jumps at its ends. x1 < x0 is allowed (the step runs the other way along x).
    Derivatives: f^(n)(x) = (y1 - y0) / (x1 - x0)^n · stepUp^(n)(s) inside, 0 outside and at the ends;
    orders 1 to 3 are available (as in Simbody).

    Parameters
    ----------
    y0, y1 : float
        Values before and after the step.
    x0, x1 : float
        Ends of the switching interval; must differ.
    """

    __qualname__ = "Function.Step"
    __slots__ = ("_y0", "_y1", "_x0", "_x1", "_dy", "_ooxr", "_sign")

    def __init__(self, y0: float, y1: float, x0: float, x1: float) -> None:
        cls = "Function.Step"
        self._y0 = _finite_real(y0, "y0", cls)
        self._y1 = _finite_real(y1, "y1", cls)
        self._x0 = _finite_real(x0, "x0", cls)
        self._x1 = _finite_real(x1, "x1", cls)
        if self._x0 == self._x1:
            raise ValueError(
                f"{cls}: a zero-length switching interval is not allowed (x0 = x1 = {self._x0})"
            )
        self._dy = self._y1 - self._y0
        self._ooxr = 1.0 / (self._x1 - self._x0)
        self._sign = 1.0 if self._x1 > self._x0 else -1.0

    def _s(self, t: float) -> float:
        """s in (0, 1) for t strictly inside the interval, -1 outside or at an end."""
        # Compare with x0 and x1 themselves, not s with 0 and 1: (x1 - x0) / (x1 - x0) may round below 1,
        # and f(x1) must be exactly y1.
        if (t - self._x0) * self._sign <= 0.0 or (t - self._x1) * self._sign >= 0.0:
            return -1.0
        return min(max((t - self._x0) * self._ooxr, 0.0), 1.0)

    def calc_value(self, x):
        t = float(x[0])
        if (t - self._x0) * self._sign <= 0.0:
            return self._y0
        if (t - self._x1) * self._sign >= 0.0:
            return self._y1
        s = min(max((t - self._x0) * self._ooxr, 0.0), 1.0)
        # stepUp(s) = 1 - stepUp(1 - s): evaluate from the nearer end so f stays within [y0, y1] and
        # monotone up to rounding instead of overshooting y1 by a few ulps near s = 1.
        if s <= 0.5:
            return self._y0 + self._dy * (s * s * s * (10.0 + s * (6.0 * s - 15.0)))
        u = 1.0 - s
        return self._y1 - self._dy * (u * u * u * (10.0 + u * (6.0 * u - 15.0)))

    def calc_derivative(self, deriv_components, x):
        s = self._s(float(x[0]))
        if s < 0.0:
            return 0.0
        n = len(deriv_components)
        return self._dy * self._ooxr**n * self._d_step_up(n, s)

    @staticmethod
    def _d_step_up(n, s):
        """n-th derivative (1, 2 or 3) of stepUp(s) = 10 s^3 - 15 s^4 + 6 s^5; s may be an array."""
        if n == 1:
            return 30.0 * s * s * (1.0 - s) * (1.0 - s)
        if n == 2:
            return 60.0 * s * (1.0 - s) * (1.0 - 2.0 * s)
        return 60.0 + s * (360.0 * s - 360.0)

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 3

    def get_start_value(self) -> float:
        """y0, the value before the step."""
        return self._y0

    def get_end_value(self) -> float:
        """y1, the value after the step."""
        return self._y1

    def get_start_point(self) -> float:
        """x0, where the step starts."""
        return self._x0

    def get_end_point(self) -> float:
        """x1, where the step ends."""
        return self._x1

    def parameters(self) -> dict[str, Any]:
        """The constructor's arguments: ``Function.Step(**f.parameters())`` rebuilds ``f`` exactly.

        Returns
        -------
        dict
            ``{"y0": y0, "y1": y1, "x0": x0, "x1": x1}``.
        """
        return {"y0": self._y0, "y1": self._y1, "x0": self._x0, "x1": self._x1}

    def _inside_and_s(self, t):
        inside = ((t - self._x0) * self._sign > 0.0) & ((t - self._x1) * self._sign < 0.0)
        return inside, np.clip((t - self._x0) * self._ooxr, 0.0, 1.0)

    def _calc_values(self, X):
        t = X[:, 0]
        inside, s = self._inside_and_s(t)
        u = np.minimum(s, 1.0 - s)
        p = u**3 * (10.0 + u * (6.0 * u - 15.0))
        inner = np.where(s <= 0.5, self._y0 + self._dy * p, self._y1 - self._dy * p)
        before = (t - self._x0) * self._sign <= 0.0
        return np.where(inside, inner, np.where(before, self._y0, self._y1))

    def _calc_derivatives(self, comps, X):
        inside, s = self._inside_and_s(X[:, 0])
        n = len(comps)
        return np.where(inside, self._dy * self._ooxr**n * self._d_step_up(n, s), 0.0)

    def _compile(self, builder) -> int:
        # the derived numbers too, so that the core rounds nothing the Python methods do not
        return builder.entry("step", self, [self._y0, self._y1, self._x0, self._x1, self._dy, self._ooxr,
                                            self._sign])

    def __repr__(self) -> str:
        return f"Function.Step({self._y0!r}, {self._y1!r}, {self._x0!r}, {self._x1!r})"


class _Sinusoid(Function):
    """f(x) = a sin(w x + p), of one argument (Simbody's ``Function::Sinusoid``).

    w is the angular frequency in radians per unit of x (rad/s when x is time), p the phase in radians.
    The n-th derivative is a w^n sin(w x + p + n π/2), i.e. cycling through
    a w^n (sin, cos, -sin, -cos)(w x + p); every order is available.

    Parameters
    ----------
    amplitude : float
        a.
    frequency : float
        w, in radians per unit of x.
    phase : float, default 0
        p, in radians.
    """

    __qualname__ = "Function.Sinusoid"
    __slots__ = ("_a", "_w", "_p")

    def __init__(self, amplitude: float, frequency: float, phase: float = 0.0) -> None:
        cls = "Function.Sinusoid"
        self._a = _finite_real(amplitude, "amplitude", cls)
        self._w = _finite_real(frequency, "frequency", cls)
        self._p = _finite_real(phase, "phase", cls)

    def calc_value(self, x):
        return self._a * math.sin(self._w * float(x[0]) + self._p)

    def calc_derivative(self, deriv_components, x):
        n = len(deriv_components)
        th = self._w * float(x[0]) + self._p
        k = n & 3
        sc = math.sin(th) if k in (0, 2) else math.cos(th)
        return (-1.0 if k >= 2 else 1.0) * self._a * self._w**n * sc

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return UNLIMITED_DERIVATIVE_ORDER

    def get_amplitude(self) -> float:
        """a."""
        return self._a

    def get_frequency(self) -> float:
        """w, radians per unit of x."""
        return self._w

    def get_phase(self) -> float:
        """p, radians."""
        return self._p

    def parameters(self) -> dict[str, Any]:
        """The constructor's arguments: ``Function.Sinusoid(**f.parameters())`` rebuilds ``f`` exactly.

        Returns
        -------
        dict
            ``{"amplitude": a, "frequency": w, "phase": p}``.
        """
        return {"amplitude": self._a, "frequency": self._w, "phase": self._p}

    def _calc_values(self, X):
        return self._a * np.sin(self._w * X[:, 0] + self._p)

    def _calc_derivatives(self, comps, X):
        n = len(comps)
        th = self._w * X[:, 0] + self._p
        k = n & 3
        sc = np.sin(th) if k in (0, 2) else np.cos(th)
        return (-1.0 if k >= 2 else 1.0) * self._a * self._w**n * sc

    def _compile(self, builder) -> int:
        return builder.entry("sinusoid", self, [self._a, self._w, self._p])

    def __repr__(self) -> str:
        return f"Function.Sinusoid({self._a!r}, {self._w!r}, {self._p!r})"
