"""Conversion of users' numbers to float64 that refuses what is not real (complex, strings, booleans).

numpy's ``np.asarray(x, dtype=np.float64)`` drops the imaginary part of complex input (with only a
warning) and parses strings ("0.5" becomes 0.5); ``float(x)`` parses strings too. The State's setters
refuse both (``simtk.common._values._checked_vector``); the constructors and setters that take numbers
elsewhere (the spatial types, the MobilizedBody setters) convert through here so that they refuse them
the same way, with a TypeError naming what was being set.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["finite_float", "real_array", "real_float", "real_index"]

_REAL_KINDS = frozenset("iuf")


def _short(x: Any) -> str:
    r = " ".join(repr(x).split())
    return r if len(r) <= 100 else r[:97] + "..."


def _refuse(x: Any, what: str, why: str, one: bool = False) -> TypeError:
    return TypeError(f"{what} must be {'a real number' if one else 'real numbers'}, got {why}: {_short(x)}")


def _why_not_real(a: np.ndarray) -> str | None:
    """Why the array ``a`` (as numpy made it from the input) is not real numbers, or None."""
    kind = a.dtype.kind
    if kind in _REAL_KINDS:
        return None
    if kind == "c":
        return "a complex value" if a.ndim == 0 else "complex values"
    if kind in "US":
        return "a string" if a.ndim == 0 else "strings"
    if kind == "b":
        return "a boolean" if a.ndim == 0 else "booleans"
    if kind == "O":
        for v in a.flat:
            # (Fraction, Decimal and the like convert exactly as float() does; these would be mangled)
            if isinstance(v, (str, bytes)):
                return "a string"
            if isinstance(v, (bool, np.bool_)):
                return "a boolean"
            if isinstance(v, (numbers.Complex, np.complexfloating)) and not isinstance(v, numbers.Real):
                return "a complex value"
        return None
    return f"values of dtype {a.dtype}"


def real_array(x: Any, what: str, copy: bool = True, _one: bool = False) -> np.ndarray:
    """``x`` as a float64 array (a new one unless ``copy`` is False and ``x`` is already float64).

    Parameters
    ----------
    x : array_like
        Real numbers: Python or numpy integers and floats (or objects that convert to float, such as
        ``fractions.Fraction``), in any nesting numpy accepts.
    what : str
        What ``x`` is, for the error (e.g. ``"<MobilizedBody.Pin #1 '/matter/arm'>.set_q()"``).
    copy : bool, optional
        Whether the result must be a new array.

    Returns
    -------
    numpy.ndarray
        float64, of ``x``'s shape. Finiteness is not checked here.

    Raises
    ------
    TypeError
        When ``x`` holds complex values, strings or booleans, or is not numeric at all.
    """
    if type(x) is np.ndarray and x.dtype.kind in _REAL_KINDS:  # the common case, one test
        return np.array(x, dtype=np.float64) if copy else x.astype(np.float64, copy=False)
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError):
        raise _refuse(x, what, "something that is not an array of numbers", _one) from None
    why = _why_not_real(raw)
    if why is not None:
        raise _refuse(x, what, why, _one)
    try:
        return np.array(raw, dtype=np.float64) if copy or raw.dtype.kind == "O" else raw.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise _refuse(x, what, "something that is not an array of numbers", _one) from None


def real_float(x: Any, what: str) -> float:
    """``x`` as a Python float: a real number (or a 0-d array of one), never a string or a complex.

    Parameters
    ----------
    x : float or int or numpy scalar or 0-d array
    what : str
        What ``x`` is, for the error.

    Returns
    -------
    float
        Finiteness is not checked here.

    Raises
    ------
    TypeError
        When ``x`` is not one real number.
    """
    t = type(x)
    if t is float or t is int or t is np.float64:  # the common cases, without numpy's conversion
        return float(x)
    a = real_array(x, what, copy=False, _one=True)
    if a.ndim != 0:
        raise TypeError(f"{what} must be one real number, got an array of shape {a.shape}: {_short(x)}")
    return float(a)


def finite_float(x: Any, what: str) -> float:
    """`real_float`, and finite: a TypeError for what is not one real number, a ValueError for
    infinity and NaN."""
    v = real_float(x, what)
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v}")
    return v


def real_index(x: Any, what: str) -> int:
    """``x`` as an int: a Python or numpy integer, never a float (2.7 is not truncated), bool or string.

    Parameters
    ----------
    x : int or numpy.integer
    what : str
        What ``x`` is, for the error.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        When ``x`` is not an integer.
    """
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, np.integer)):
        raise TypeError(f"{what} must be an integer, got {type(x).__name__} {_short(x)}")
    return int(x)


def out_array(out: Any, shape: tuple, what: str, owner: Any = None) -> np.ndarray:
    """``out`` if it is a writable C-contiguous float64 array of ``shape`` (a kernel's output buffer), else a
    ValueError naming ``what`` (after ``owner._where()``, made only then: the check runs per call)."""
    if not (isinstance(out, np.ndarray) and out.shape == shape and out.dtype == np.float64
            and out.flags.c_contiguous and out.flags.writeable):
        where = f"{owner._where()}: " if owner is not None else ""
        raise ValueError(f"{where}{what}: out: expected a writable C-contiguous float64 array of shape {shape}, "
                         f"got {_short(out)}")
    return out
