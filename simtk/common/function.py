"""Scalar functions of several arguments with analytic partial derivatives.

`Function` is what ``Constraint.CoordinateCoupler``, ``Constraint.PrescribedMotion`` and
``MobilizedBody.FunctionBased`` evaluate: a real-valued f(x) of ``m = get_argument_size()`` real arguments
together with its partial derivatives up to ``get_max_derivative_order()``.

Checked and unchecked entry points
----------------------------------
Users write a subclass exactly as in Simbody and override the four methods
``calc_value(x)``, ``calc_derivative(deriv_components, x)``, ``get_argument_size()`` and
``get_max_derivative_order()``. When such a class is created, ``Function.__init_subclass__`` moves the
method the user wrote to ``calc_value_unchecked`` (and ``calc_derivative_unchecked``) and puts a checking
wrapper in its place under the public name. So ``f.calc_value(x)`` always validates:

- ``x`` is a real 1-D sequence of length ``m`` (a scalar is accepted when ``m == 1``), all finite;
- ``deriv_components`` is a non-empty sequence of integer argument indices in ``[0, m)`` whose length (the
  derivative order) does not exceed ``get_max_derivative_order()``;
- the result is a finite real scalar.

Violations raise ``TypeError`` or ``ValueError`` naming the function class and what was wrong. Framework code
that has already validated a function (see `require_function`) and calls it in a time loop may use the
``*_unchecked`` twins: they take ``x`` as a float ndarray of shape ``(m,)`` and ``deriv_components`` as a
tuple of ints of length >= 1, and skip all checks.

The unchecked methods receive the caller's array; a function must not modify ``x``.
"""
from __future__ import annotations

import abc
import bisect
import functools
import inspect
import math
import operator
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Function", "require_function", "UNLIMITED_DERIVATIVE_ORDER"]

#: What ``get_max_derivative_order()`` returns when every derivative is available (Simbody returns INT_MAX).
UNLIMITED_DERIVATIVE_ORDER: int = sys.maxsize

_REAL_KINDS = frozenset("iuf")


def _name(f: Any) -> str:
    return type(f).__qualname__


def _argument_size(f: "Function") -> int:
    m = f.get_argument_size()
    try:
        m = operator.index(m)
    except TypeError:
        raise TypeError(f"{_name(f)}.get_argument_size() must return an int, got {m!r}") from None
    if m < 0:
        raise ValueError(f"{_name(f)}.get_argument_size() returned {m}; it must be >= 0")
    return m


def _check_x(f: "Function", x: Any, where: str) -> np.ndarray:
    """Return x as a float array of shape (m,), or raise naming ``f`` and ``where``."""
    m = _argument_size(f)
    # Fast path for the common one-argument scalar call (e.g. a function of time).
    if type(x) is float or type(x) is int:
        if m != 1:
            raise ValueError(
                f"{_name(f)}.{where}: got a scalar x but the function takes {m} arguments; "
                f"pass a sequence of length {m}"
            )
        if not math.isfinite(x):
            raise ValueError(f"{_name(f)}.{where}: x = {x!r} is not finite")
        return np.array((float(x),))
    a = np.asarray(x)
    if a.dtype.kind not in _REAL_KINDS:
        raise TypeError(f"{_name(f)}.{where}: x must be real numbers, got dtype {a.dtype} from {x!r}")
    if a.ndim == 0:
        if m != 1:
            raise ValueError(
                f"{_name(f)}.{where}: got a scalar x but the function takes {m} arguments; "
                f"pass a sequence of length {m}"
            )
        a = a.reshape(1)
    elif a.ndim != 1 or a.shape[0] != m:
        raise ValueError(
            f"{_name(f)}.{where}: x must have {m} argument(s) (shape ({m},)), got shape {a.shape}"
        )
    if a.dtype != np.float64:
        a = a.astype(np.float64)
    if not np.isfinite(a).all():
        bad = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"{_name(f)}.{where}: x[{bad}] = {a[bad]} is not finite")
    return a


def _check_components(f: "Function", deriv_components: Any, where: str) -> tuple[int, ...]:
    """Return the derivative components as a tuple of ints, or raise naming ``f``."""
    if isinstance(deriv_components, (str, bytes)) or not isinstance(
        deriv_components, (Sequence, np.ndarray)
    ):
        raise TypeError(
            f"{_name(f)}.{where}: deriv_components must be a sequence of argument indices "
            f"(its length is the derivative order), got {deriv_components!r}"
        )
    comps = []
    for c in deriv_components:
        if isinstance(c, (bool, np.bool_)):
            raise TypeError(f"{_name(f)}.{where}: deriv_components entries must be ints, got {c!r}")
        try:
            comps.append(operator.index(c))
        except TypeError:
            raise TypeError(
                f"{_name(f)}.{where}: deriv_components entries must be ints, got {c!r}"
            ) from None
    order = len(comps)
    if order == 0:
        raise ValueError(
            f"{_name(f)}.{where}: deriv_components is empty (derivative order 0); use calc_value() "
            f"for the value"
        )
    m = _argument_size(f)
    for c in comps:
        if not 0 <= c < m:
            raise ValueError(
                f"{_name(f)}.{where}: derivative component {c} is out of range for a function of "
                f"{m} argument(s) (valid: 0..{m - 1})"
                if m
                else f"{_name(f)}.{where}: a function of 0 arguments has no derivatives "
                f"(component {c} requested)"
            )
    max_order = f.get_max_derivative_order()
    if order > max_order:
        raise ValueError(
            f"{_name(f)}.{where}: derivative of order {order} requested but "
            f"get_max_derivative_order() is {max_order}"
        )
    return tuple(comps)


def _check_result(
    f: "Function", r: Any, where: str, x: np.ndarray, comps: tuple[int, ...] | None = None
) -> float:
    if type(r) is not float:
        if np.ndim(r) != 0:
            raise TypeError(f"{_name(f)}.{where} must return a real scalar, got {r!r}")
        try:
            if np.iscomplexobj(r):
                raise TypeError
            r = float(r)
        except TypeError:
            raise TypeError(f"{_name(f)}.{where} must return a real scalar, got {r!r}") from None
    if not math.isfinite(r):
        what = "" if comps is None else f" for deriv_components {list(comps)}"
        raise ValueError(f"{_name(f)}.{where} returned {r}{what} at x = {x.tolist()}")
    return r


def _checked_value(raw):
    @functools.wraps(raw)
    def calc_value(self, x):
        xa = _check_x(self, x, "calc_value()")
        return _check_result(self, raw(self, xa), "calc_value()", xa)

    calc_value._simtk_checked = True
    return calc_value


def _checked_derivative(raw):
    @functools.wraps(raw)
    def calc_derivative(self, deriv_components, x):
        comps = _check_components(self, deriv_components, "calc_derivative()")
        xa = _check_x(self, x, "calc_derivative()")
        return _check_result(self, raw(self, comps, xa), "calc_derivative()", xa, comps)

    calc_derivative._simtk_checked = True
    return calc_derivative


class Function(abc.ABC):
    """A real-valued function f(x) of ``m`` real arguments, with partial derivatives.

    Subclass it and override the four abstract methods (Simbody's ``Function_<Real>``). The public
    ``calc_value`` and ``calc_derivative`` of every subclass validate their input (see the module docstring);
    the methods you write are kept, unchanged, as ``calc_value_unchecked`` and
    ``calc_derivative_unchecked``.

    Built-ins: `Function.Constant`, `Function.Linear`, `Function.Polynomial`, `Function.Step`,
    `Function.Sinusoid`, `Function.Spline`.

    Examples
    --------
    The coupler function c(q) = q0 - q1 of "Advanced Programming with SimTK", section 3.3:

    >>> import sys
    >>> class ConstraintFunction(Function):
    ...     def calc_value(self, x):
    ...         return x[0] - x[1]
    ...     def calc_derivative(self, deriv_components, x):
    ...         if len(deriv_components) == 1:
    ...             return 1.0 if deriv_components[0] == 0 else -1.0
    ...         return 0.0
    ...     def get_argument_size(self):
    ...         return 2
    ...     def get_max_derivative_order(self):
    ...         return sys.maxsize
    >>> f = ConstraintFunction()
    >>> f.calc_value([3.0, 1.0]), f.calc_derivative([1], [3.0, 1.0])
    (2.0, -1.0)
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ns = cls.__dict__
        for public, unchecked, wrap in (
            ("calc_value", "calc_value_unchecked", _checked_value),
            ("calc_derivative", "calc_derivative_unchecked", _checked_derivative),
        ):
            raw = ns.get(public)
            if (
                inspect.isfunction(raw)
                and not getattr(raw, "_simtk_checked", False)
                and not getattr(raw, "__isabstractmethod__", False)
            ):
                # The wrapper calls this exact `raw`, not self.<unchecked>: a subclass's override that
                # calls super().calc_value must reach the parent's code, not recurse into its own.
                setattr(cls, unchecked, raw)
                setattr(cls, public, wrap(raw))

    # -- the Simbody interface -------------------------------------------------------------------------

    @abc.abstractmethod
    def calc_value(self, x: Sequence[float] | np.ndarray | float) -> float:
        """Value f(x).

        Parameters
        ----------
        x : array_like, shape (m,)
            The arguments; a scalar is accepted when ``m == 1``. A subclass receives a float ndarray of
            shape ``(m,)`` and must not modify it.

        Returns
        -------
        float
        """

    @abc.abstractmethod
    def calc_derivative(
        self, deriv_components: Sequence[int], x: Sequence[float] | np.ndarray | float
    ) -> float:
        """Partial derivative ∂ⁿf / ∂x_{k1} … ∂x_{kn} at x.

        Parameters
        ----------
        deriv_components : sequence of int, length n >= 1
            The argument indices ``k1 … kn`` to differentiate with respect to; the length is the order.
            A subclass receives a tuple of ints.
        x : array_like, shape (m,)
            As in `calc_value`.

        Returns
        -------
        float
        """

    @abc.abstractmethod
    def get_argument_size(self) -> int:
        """Number ``m`` of arguments f takes (may be 0)."""

    @abc.abstractmethod
    def get_max_derivative_order(self) -> int:
        """Highest derivative order `calc_derivative` supports (``sys.maxsize`` for all)."""

    # -- fast paths -------------------------------------------------------------------------------------

    def calc_value_unchecked(self, x: np.ndarray) -> float:
        """`calc_value` without any checks: ``x`` must be a finite float ndarray of shape ``(m,)``.

        Set automatically to the method a subclass writes as ``calc_value``.
        """
        raise NotImplementedError(f"{_name(self)} does not implement calc_value")

    def calc_derivative_unchecked(self, deriv_components: tuple[int, ...], x: np.ndarray) -> float:
        """`calc_derivative` without any checks (components valid, order >= 1, ``x`` as in
        `calc_value_unchecked`). Set automatically to the subclass's ``calc_derivative``."""
        raise NotImplementedError(f"{_name(self)} does not implement calc_derivative")

    # -- vectorized helpers -----------------------------------------------------------------------------

    def calc_values(self, xs: Any) -> np.ndarray:
        """Values at many points.

        Parameters
        ----------
        xs : array_like, shape (n, m)
            One point per row; shape ``(n,)`` is accepted when ``m == 1``.

        Returns
        -------
        ndarray, shape (n,)
        """
        X = self._check_points(xs, "calc_values()")
        out = self._calc_values(X)
        self._check_results(out, "calc_values()")
        return out

    def calc_derivatives(self, deriv_components: Sequence[int], xs: Any) -> np.ndarray:
        """One partial derivative at many points.

        Parameters
        ----------
        deriv_components : sequence of int, length >= 1
            As in `calc_derivative`.
        xs : array_like, shape (n, m)
            As in `calc_values`.

        Returns
        -------
        ndarray, shape (n,)
        """
        comps = _check_components(self, deriv_components, "calc_derivatives()")
        X = self._check_points(xs, "calc_derivatives()")
        out = self._calc_derivatives(comps, X)
        self._check_results(out, f"calc_derivatives({list(comps)})")
        return out

    def _calc_values(self, X: np.ndarray) -> np.ndarray:
        """Hook for `calc_values`: ``X`` is a finite float array ``(n, m)``. Override to vectorize."""
        f = self.calc_value_unchecked
        return np.array([f(row) for row in X], dtype=float).reshape(len(X))

    def _calc_derivatives(self, comps: tuple[int, ...], X: np.ndarray) -> np.ndarray:
        """Hook for `calc_derivatives`; override to vectorize."""
        d = self.calc_derivative_unchecked
        return np.array([d(comps, row) for row in X], dtype=float).reshape(len(X))

    def _check_points(self, xs: Any, where: str) -> np.ndarray:
        m = _argument_size(self)
        X = np.asarray(xs)
        if X.dtype.kind not in _REAL_KINDS:
            raise TypeError(f"{_name(self)}.{where}: points must be real numbers, got dtype {X.dtype}")
        if X.ndim == 1 and m == 1:
            X = X.reshape(-1, 1)
        if X.ndim != 2 or X.shape[1] != m:
            raise ValueError(
                f"{_name(self)}.{where}: points must have shape (n, {m})"
                + (" or (n,)" if m == 1 else "")
                + f", got shape {X.shape}"
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            i, j = np.argwhere(~np.isfinite(X))[0]
            raise ValueError(f"{_name(self)}.{where}: point {i} has non-finite x[{j}] = {X[i, j]}")
        return X

    def _check_results(self, out: np.ndarray, where: str) -> None:
        if not np.isfinite(out).all():
            i = int(np.flatnonzero(~np.isfinite(out))[0])
            raise ValueError(f"{_name(self)}.{where} returned {out[i]} at point {i}")

    # Built-ins are attached below the class body (they must subclass Function).
    Constant: type["Function"]
    Linear: type["Function"]
    Polynomial: type["Function"]
    Step: type["Function"]
    Sinusoid: type["Function"]
    Spline: type["Function"]


def require_function(
    f: Any,
    *,
    argument_size: int | None = None,
    min_derivative_order: int = 0,
    owner: str = "",
) -> Function:
    """Check once, at construction of a framework element, that ``f`` is a usable `Function`.

    Parameters
    ----------
    f : Function
        The function to check.
    argument_size : int, optional
        The number of arguments the element will pass, if it is fixed.
    min_derivative_order : int
        The derivative order the element needs (2 for position constraints, whose accelerations need f'').
    owner : str
        The element, for the error message, e.g. ``"Constraint.CoordinateCoupler #3"``.

    Returns
    -------
    Function
        ``f`` itself.

    Raises
    ------
    TypeError, ValueError
        Naming ``owner``, the function's class and what was wrong.
    """
    who = f"{owner}: " if owner else ""
    if not isinstance(f, Function):
        raise TypeError(f"{who}expected a simtk Function, got {type(f).__qualname__} {f!r}")
    m = _argument_size(f)
    if argument_size is not None and m != argument_size:
        raise ValueError(
            f"{who}{_name(f)} takes {m} argument(s) but {argument_size} will be passed to it"
        )
    max_order = f.get_max_derivative_order()
    if max_order < min_derivative_order:
        raise ValueError(
            f"{who}{_name(f)} supports derivatives up to order {max_order} but order "
            f"{min_derivative_order} is needed"
        )
    return f


# ----------------------------------------------------------------------------------------------------------
# Built-ins
# ----------------------------------------------------------------------------------------------------------


def _finite_real(value: Any, what: str, cls: str) -> float:
    try:
        if isinstance(value, (bool, np.bool_)) or np.iscomplexobj(value):
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{cls}: {what} must be a real number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{cls}: {what} = {v} is not finite")
    return v


def _finite_vector(values: Any, what: str, cls: str, min_len: int) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind not in _REAL_KINDS:
        raise TypeError(f"{cls}: {what} must be real numbers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{cls}: {what} must be 1-D, got shape {a.shape}")
    if a.shape[0] < min_len:
        raise ValueError(f"{cls}: {what} needs at least {min_len} entries, got {a.shape[0]}")
    a = np.array(a, dtype=np.float64)  # own copy: built-ins are immutable
    if not np.isfinite(a).all():
        bad = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"{cls}: {what}[{bad}] = {a[bad]} is not finite")
    a.setflags(write=False)
    return a


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

    def _calc_values(self, X):
        return np.full(len(X), self._c)

    def _calc_derivatives(self, comps, X):
        return np.zeros(len(X))

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

    def _calc_values(self, X):
        return X @ self._a + self._b

    def _calc_derivatives(self, comps, X):
        return np.full(len(X), self._clist[comps[0]] if len(comps) == 1 else 0.0)

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

    def _calc_values(self, X):
        return np.polyval(self._clist, X[:, 0])

    def _calc_derivatives(self, comps, X):
        n = len(comps)
        if n >= len(self._clist):
            return np.zeros(len(X))
        return np.polyval(self._deriv_coefficients(n), X[:, 0])

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

    def _calc_values(self, X):
        return self._a * np.sin(self._w * X[:, 0] + self._p)

    def _calc_derivatives(self, comps, X):
        n = len(comps)
        th = self._w * X[:, 0] + self._p
        k = n & 3
        sc = np.sin(th) if k in (0, 2) else np.cos(th)
        return (-1.0 if k >= 2 else 1.0) * self._a * self._w**n * sc

    def __repr__(self) -> str:
        return f"Function.Sinusoid({self._a!r}, {self._w!r}, {self._p!r})"


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
        c = self._coef_list[j]
        u = t - self._mid_list[j]
        v = 0.0
        for a in reversed(c):
            v = v * u + a
        return v

    def calc_derivative(self, deriv_components, x):
        n = len(deriv_components)
        k = self._k
        if n > k:
            return 0.0
        t = float(x[0])
        j = self._interval(t)
        c = self._coef_list[j]
        u = t - self._mid_list[j]
        # d^n/du^n of c_r u^r is c_r r!/(r-n)! u^(r-n); Horner over r = k … n.
        v = 0.0
        for r in range(k, n - 1, -1):
            v = v * u + c[r] * math.prod(range(r - n + 1, r + 1))
        return v

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

    def __repr__(self) -> str:
        return f"Function.Spline(<{len(self._x)} points on [{self._x[0]}, {self._x[-1]}]>, degree={self._k})"


for _cls in (_Constant, _Linear, _Polynomial, _Step, _Sinusoid, _Spline):
    _cls.__module__ = __name__
    setattr(Function, _cls.__qualname__.split(".")[1], _cls)
del _cls
