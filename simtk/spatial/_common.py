"""Shared helpers of the spatial types: validation of numbers, immutability, cross-product matrices."""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
from numpy.typing import ArrayLike

from .._real import real_array

#: Relative tolerance of the inertia validity tests (symmetry, semi-definiteness, triangle
#: inequality), relative to the largest magnitude involved. Loose enough for inertias obtained by
#: subtraction (shifting to the mass center), tight enough to catch real mistakes.
INERTIA_RTOL = 1e-9

#: Absolute floor (kg m^2) of the same tolerance: the round-off of an inertia computed from numbers of
#: order one in SI units (16 machine epsilons, about 3.6e-15 kg m^2). Model files written by CAD
#: exporters carry such round-off where an inertia should be zero: iCub's URDF has central moments of
#: -5.4e-20 and principal moments (0, 0, 4.1e-18), which no relative test can accept because the
#: largest moment is itself round-off. A model written in other units (grams, millimetres) scales
#: this floor by the square of its length unit times its mass unit.
INERTIA_ATOL = 16 * float(np.finfo(np.float64).eps)

#: Default tolerance of `Rotation.from_matrix` on ``max|R^T R - 1|`` and ``|det R - 1|``.
ROTATION_TOL = 1e-6

# Below this orthonormality error a matrix is kept bit for bit instead of being re-orthonormalized,
# so that round trips through from_matrix are exact.
_KEEP_AS_IS_TOL = 16 * np.finfo(np.float64).eps


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _float_array(x: Any, what: str) -> np.ndarray:
    """A fresh float64 copy of ``x``, or a TypeError naming ``what`` (complex values and strings included:
    numpy would drop the imaginary part or parse the string)."""
    return real_array(x, what)


def _require_finite(a: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f" at index {idx}" if a.ndim else ""
        raise ValueError(f"{what} must be finite; got {a[idx]!r}{where} in {a.tolist()}")


# Where squares of the entries neither overflow nor lose precision by underflow: a vector whose largest
# magnitude is inside has its norm computed as it is (bit for bit as before), one outside on a copy scaled
# by that magnitude (so that [1e200, 1e200, 0, 0] normalizes to [0.707.., 0.707.., 0, 0], not to 0).
_UNSCALED_RANGE = (1e-150, 1e150)


def _unit(a: np.ndarray, what: str) -> np.ndarray:
    """``a / |a|`` for a finite nonzero vector ``a`` of any representable magnitude, or a ValueError."""
    _require_finite(a, what)
    big = float(np.max(np.abs(a)))
    if big == 0.0:
        raise ValueError(f"{what} must be nonzero, got {a.tolist()}")
    if not _UNSCALED_RANGE[0] <= big <= _UNSCALED_RANGE[1]:
        a = a / big
    return a / float(np.linalg.norm(a))


def _scalar(x: Any, what: str) -> float:
    a = _float_array(x, what)
    if a.ndim != 0:
        raise TypeError(f"{what} must be a scalar, got an array of shape {a.shape}")
    v = float(a)
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v!r}")
    return v


def _vec3(x: Any, what: str) -> np.ndarray:
    """A finite float64 (3,) copy of ``x``; a scalar fills all three entries, like Simbody's Vec3(s)."""
    a = _float_array(x, what)
    if a.ndim == 0:
        a = np.full(3, float(a))
    if a.shape != (3,):
        raise ValueError(f"{what} must have shape (3,), got shape {a.shape}")
    _require_finite(a, what)
    return a


def _vectors(x: Any, what: str) -> np.ndarray:
    """``x`` as a float64 array of shape (3,) or (n, 3) (not copied when already one)."""
    a = real_array(x, what, copy=False)
    if a.ndim not in (1, 2) or a.shape[-1] != 3:
        raise ValueError(f"{what} must have shape (3,) or (n, 3), got shape {a.shape}")
    return a


_FLOAT_MAX = float(np.finfo(np.float64).max)
# An inertia's trace and the triangle inequality's sums add up to three entries: above this they overflow
# (Inertia(1e308) ended in LAPACK's "eigenvalues did not converge" on an infinite matrix).
_MAX_ENTRY = _FLOAT_MAX / 3

# Inside these bounds m |p|^2 and the sums of an inertia's entries cannot overflow, so the common case pays
# for no check; outside, the result is computed with overflow tested (see _point_mass_checked).
_SAFE_POINT_MASS = 1e100


def _point_mass_checked(p: np.ndarray, mass: float, what: str, plus: np.ndarray | None = None) -> np.ndarray:
    """``point_mass_inertia(p, mass)`` (plus the inertia matrix ``plus`` when given), for a finite ``p``
    and mass >= 0, or a ValueError naming ``what`` when the result is not representable.

    A result that is representable although ``|p|^2`` overflows (a tiny mass far away) is computed on
    ``sqrt(mass) p`` instead of a NaN or an infinity.
    """
    big = float(np.max(np.abs(p)))
    extra = 0.0 if plus is None else float(np.max(np.abs(plus)))
    if big < _SAFE_POINT_MASS and mass < _SAFE_POINT_MASS and extra < _SAFE_POINT_MASS ** 3:
        pm = point_mass_inertia(p, mass)
        return pm if plus is None else plus + pm
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        s = math.sqrt(abs(mass)) * p
        pm = math.copysign(1.0, mass) * (np.dot(s, s) * np.eye(3) - np.outer(s, s))
        out = pm if plus is None else plus + pm
    if not (np.isfinite(out).all() and float(np.max(np.abs(out))) <= _MAX_ENTRY):
        raise ValueError(
            f"{what}: the inertia of mass {mass:.6g} at {_fmt(p)} from the point it is taken about is "
            f"not representable in float64 (m |p|^2 = {mass * big * big:.3g}): the mass is too far from that point "
            "for its size; express the model in larger units")
    return out


def _fmt(a: Iterable[float]) -> str:
    return "[" + ", ".join(f"{float(v):.6g}" for v in a) + "]"


def _restore(cls: type, state: dict) -> Any:
    """Unpickle an immutable spatial object exactly, restoring the read-only flags."""
    obj: Any = object.__new__(cls)
    for k, v in state.items():
        if isinstance(v, np.ndarray):
            v = _readonly(np.array(v, dtype=np.float64))
        object.__setattr__(obj, k, v)
    return obj


class _Immutable:
    """Shared behaviour of the value types: exact pickling, copies are the object itself."""

    __slots__ = ()
    # numpy must defer to us (``array * R`` raises instead of building an object array).
    __array_ufunc__ = None

    def __reduce__(self):
        return (_restore, (type(self), {k: getattr(self, k) for k in self.__slots__}))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def skew(v: ArrayLike) -> np.ndarray:
    """Cross-product matrix: ``skew(a) @ b == cross(a, b)``.

    Parameters
    ----------
    v : array_like, shape (3,) or (..., 3)

    Returns
    -------
    numpy.ndarray, shape (3, 3) or (..., 3, 3)
        ``[[0, -z, y], [z, 0, -x], [-y, x, 0]]``.
    """
    a = real_array(v, "skew's argument", copy=False)
    if a.ndim == 0 or a.shape[-1] != 3:
        raise ValueError(f"skew needs vectors of length 3, got shape {a.shape}")
    out = np.zeros(a.shape[:-1] + (3, 3))
    x, y, z = a[..., 0], a[..., 1], a[..., 2]
    out[..., 0, 1] = -z
    out[..., 0, 2] = y
    out[..., 1, 0] = z
    out[..., 1, 2] = -x
    out[..., 2, 0] = -y
    out[..., 2, 1] = x
    return out


def point_mass_inertia(p: ArrayLike, mass: float) -> np.ndarray:
    """Inertia matrix of a point mass at ``p`` about the origin: ``m (|p|^2 1 - p p^T)``.

    This is Simbody's ``Inertia::pointMassAt(p, m)``, which equals ``-m skew(p) @ skew(p)``.

    Parameters
    ----------
    p : array_like, shape (3,)
    mass : float

    Returns
    -------
    numpy.ndarray, shape (3, 3)
    """
    p = real_array(p, "point mass location", copy=False)
    return mass * (np.dot(p, p) * np.eye(3) - np.outer(p, p))
