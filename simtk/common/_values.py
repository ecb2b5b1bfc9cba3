"""Checks and conversions of the values written into a State (vectors, discrete variables)."""
from __future__ import annotations

import copy
import numbers

import numpy as np

from .._core import _k


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (one compiled call: a State's copy makes dozens)."""
    return _k.readonly_view(a)


_IMMUTABLE = frozenset((type(None), bool, int, float, complex, str, bytes))


def _copied_value(value, memo: dict):
    """``copy.deepcopy(value, memo)``, with the values States hold most (None, numbers, plain numeric
    arrays) copied without the generic machinery: a State's copy copies every cache entry and
    discrete variable, and the integrators copy a State at every initialize."""
    t = type(value)
    if t in _IMMUTABLE:
        return value
    if t is np.ndarray and not value.dtype.hasobject:
        new = memo.get(id(value))
        if new is None:  # (an array two entries share stays shared in the copy, as deepcopy keeps it)
            new = memo[id(value)] = value.copy(order="K")
        return new
    return copy.deepcopy(value, memo)


def _checked_vector(values, n: int, where: str) -> np.ndarray:
    """``values`` as a contiguous float64 vector of length ``n``, all finite, or a ValueError."""
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: expected {n} real numbers, got {values!r}") from exc
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"{where}: expected {n} real numbers, got values of dtype {raw.dtype}")
    a = np.ascontiguousarray(raw, dtype=np.float64)
    if a.ndim == 0 and n == 1:
        a = a.reshape(1)
    if a.shape != (n,):
        raise ValueError(f"{where}: expected {n} values, got an array of shape {a.shape}")
    if not _k.all_finite(a):
        bad = _k.first_non_finite(a)
        raise ValueError(f"{where}: entry {bad} is {a[bad]}; values must be finite")
    return a


def _checked_discrete_value(old, new, where: str):
    """The value to store when replacing discrete variable value ``old`` by ``new``.

    The kind of value is fixed at allocation (Simbody's ``Value<T>``): an array keeps its shape and
    dtype, a number stays a number, any other object keeps its type. Real numbers must be finite.
    """
    if isinstance(old, np.ndarray):
        try:
            a = np.array(new, dtype=old.dtype)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: expected an array like {old.shape} {old.dtype}, got {new!r}") from exc
        if a.shape != old.shape:
            raise ValueError(f"{where}: expected shape {old.shape}, got {a.shape}")
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            raise ValueError(f"{where}: values must be finite, got {new!r}")
        return a
    if isinstance(old, (bool, np.bool_)):
        if not isinstance(new, (bool, np.bool_)):
            raise TypeError(f"{where}: expected a bool, got {type(new).__name__}")
        return bool(new)
    if isinstance(old, numbers.Integral):
        if isinstance(new, (bool, np.bool_)) or not isinstance(new, numbers.Integral):
            raise TypeError(f"{where}: expected an integer, got {type(new).__name__}")
        return int(new)
    if isinstance(old, numbers.Real):
        if isinstance(new, (bool, np.bool_)) or not isinstance(new, numbers.Real):
            raise TypeError(f"{where}: expected a real number, got {type(new).__name__}")
        v = float(new)
        if not np.isfinite(v):
            raise ValueError(f"{where}: value must be finite, got {v}")
        return v
    if old is not None and not isinstance(new, type(old)):
        raise TypeError(f"{where}: expected a {type(old).__name__}, got {type(new).__name__}")
    return new


def _same_value(a, b) -> bool:
    """Whether two discrete-variable values are equal (so copying one over the other changes nothing)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and \
            a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # values whose == is not a plain bool: treat as different
        return False
