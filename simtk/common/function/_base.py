"""The `Function` base class: the checked entry points around a user's methods, and `require_function`."""
from __future__ import annotations

import abc
import functools
import inspect
import math
import operator
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._kinds import KindsMeta

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


class _FunctionMeta(KindsMeta, abc.ABCMeta):
    """ABCMeta with the registered families (``Function.Constant``, ...) known to type checkers."""


class Function(abc.ABC, metaclass=_FunctionMeta):
    """A real-valued function f(x) of ``m`` real arguments, with partial derivatives.

    Subclass it and override the four abstract methods (Simbody's ``Function_<Real>``). The public
    ``calc_value`` and ``calc_derivative`` of every subclass validate their input (see the module docstring);
    the methods you write are kept, unchanged, as ``calc_value_unchecked`` and
    ``calc_derivative_unchecked``.

    Built-ins: `Function.Constant`, `Function.Linear`, `Function.Polynomial`, `Function.Step`,
    `Function.Sinusoid`, `Function.Spline`. Each has ``parameters()``, its constructor's arguments as a
    dict, so that ``type(f)(**f.parameters())`` rebuilds it exactly (how model files store them).

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

    # Built-ins are attached below the class body (they must subclass Function); typed Any because each
    # family has its own constructor.
    Constant: Any
    Linear: Any
    Polynomial: Any
    Step: Any
    Sinusoid: Any
    Spline: Any


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
