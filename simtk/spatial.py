"""User-facing spatial types: `Rotation`, `Transform`, `Inertia`, `MassProperties`, `Body`.

These are small immutable value objects for building models and reading results. The compiled
kernels never see them: every type hands out its raw float64 arrays cheaply (``Rotation.matrix``,
``Transform.p``, ``Transform.matrix44()``, ``Inertia.matrix``, ``MassProperties.com``, ...), and those
arrays are read-only so that sharing them is safe.

Conventions (as Simbody)
------------------------
* Monogram names. ``R_AB`` is the orientation of frame B in frame A: its columns are B's axes expressed
  in A, and ``R_AB * v_B == v_A`` re-expresses a vector from B to A. ``R_AB * R_BC == R_AC`` and
  ``~R_AB == R_BA``.
* ``X_AB`` (a `Transform`) is the pose of B in A: ``X_AB.R == R_AB`` and ``X_AB.p == p_AB``, the vector
  from A's origin to B's origin, expressed in A. ``X_AB * p_BS == p_AS`` maps a station S given in B
  to A; ``X_AB * X_BC == X_AC``.
* Spatial vectors are ``(2, 3)`` arrays, angular first: ``V = (w, v_O)``.
* An inertia is a symmetric 3x3 matrix about a point, expressed in a frame. Its *products* are the
  off-diagonal elements of that matrix in Simbody's order ``(xy, xz, yz)`` (the matrix entries, that
  is ``-sum(m x y)`` etc., not the positive product integrals).
* `MassProperties` holds the inertia about the **body origin**, in the body frame.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Rotation",
    "Transform",
    "Inertia",
    "MassProperties",
    "Body",
    "skew",
    "point_mass_inertia",
]

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
    """A fresh float64 copy of ``x``, or a TypeError naming ``what``."""
    try:
        return np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numeric, got {x!r}") from None


def _require_finite(a: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f" at index {idx}" if a.ndim else ""
        raise ValueError(f"{what} must be finite; got {a[idx]!r}{where} in {a.tolist()}")


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
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numeric, got {x!r}") from None
    if a.ndim not in (1, 2) or a.shape[-1] != 3:
        raise ValueError(f"{what} must have shape (3,) or (n, 3), got shape {a.shape}")
    return a


def _fmt(a: Iterable[float]) -> str:
    return "[" + ", ".join(f"{float(v):.6g}" for v in a) + "]"


def _restore(cls: type, state: dict) -> Any:
    """Unpickle an immutable spatial object exactly, restoring the read-only flags."""
    obj = object.__new__(cls)
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
    a = np.asarray(v, dtype=np.float64)
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
    p = np.asarray(p, dtype=np.float64)
    return mass * (np.dot(p, p) * np.eye(3) - np.outer(p, p))


# ---------------------------------------------------------------------------------------------
# Rotation
# ---------------------------------------------------------------------------------------------
_AXIS_NAMES = {
    "x": 0, "y": 1, "z": 2,
    "xaxis": 0, "yaxis": 1, "zaxis": 2,
}


def _coordinate_axis(axis: Any) -> int | None:
    """Index 0, 1, 2 for a named or integer coordinate axis, None for a vector axis."""
    if isinstance(axis, str):
        try:
            return _AXIS_NAMES[axis.lower()]
        except KeyError:
            raise ValueError(
                f"unknown axis {axis!r}: use 'x', 'y', 'z' (or 'XAxis', 'YAxis', 'ZAxis') "
                "or a 3-vector") from None
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        if axis not in (0, 1, 2):
            raise ValueError(f"coordinate axis index must be 0, 1 or 2, got {axis}")
        return int(axis)
    return None


def _unit_axis(axis: Any) -> np.ndarray:
    a = _float_array(axis, "rotation axis")
    if a.shape != (3,):
        raise ValueError(f"rotation axis must be 'x', 'y', 'z' or a 3-vector, got shape {a.shape}")
    _require_finite(a, "rotation axis")
    n = float(np.linalg.norm(a))
    if n == 0.0 or n < 1e-300:
        raise ValueError(f"rotation axis must be nonzero, got {a.tolist()}")
    return a / n


def _angle_axis_matrix(angle: float, axis: Any) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    k = _coordinate_axis(axis)
    if k is not None:
        # Exact zeros and ones off the rotation plane.
        i, j = (k + 1) % 3, (k + 2) % 3
        m = np.eye(3)
        m[i, i] = c
        m[j, j] = c
        m[j, i] = s
        m[i, j] = -s
        return m
    n = _unit_axis(axis)
    K = skew(n)
    # Rodrigues: 1 + sin(t) K + (1 - cos(t)) K^2
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def _quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _matrix_to_quaternion(m: np.ndarray) -> np.ndarray:
    """Shepperd's method: divide by the largest of the four candidate components."""
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    k = int(np.argmax([tr, m[0, 0], m[1, 1], m[2, 2]]))
    if k == 0:
        w = 0.5 * math.sqrt(max(0.0, 1.0 + tr))
        f = 0.25 / w
        q = [w, (m[2, 1] - m[1, 2]) * f, (m[0, 2] - m[2, 0]) * f, (m[1, 0] - m[0, 1]) * f]
    elif k == 1:
        x = 0.5 * math.sqrt(max(0.0, 1.0 + m[0, 0] - m[1, 1] - m[2, 2]))
        f = 0.25 / x
        q = [(m[2, 1] - m[1, 2]) * f, x, (m[0, 1] + m[1, 0]) * f, (m[0, 2] + m[2, 0]) * f]
    elif k == 2:
        y = 0.5 * math.sqrt(max(0.0, 1.0 - m[0, 0] + m[1, 1] - m[2, 2]))
        f = 0.25 / y
        q = [(m[0, 2] - m[2, 0]) * f, (m[0, 1] + m[1, 0]) * f, y, (m[1, 2] + m[2, 1]) * f]
    else:
        z = 0.5 * math.sqrt(max(0.0, 1.0 - m[0, 0] - m[1, 1] + m[2, 2]))
        f = 0.25 / z
        q = [(m[1, 0] - m[0, 1]) * f, (m[0, 2] + m[2, 0]) * f, (m[1, 2] + m[2, 1]) * f, z]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return _canonical_quaternion(q)


def _canonical_quaternion(q: np.ndarray) -> np.ndarray:
    # q and -q are the same rotation; pick w >= 0, and for w == 0 the first nonzero entry > 0,
    # so that equal rotations always give equal quaternions.
    nz = np.flatnonzero(q)
    if nz.size and q[nz[0]] < 0:
        q = -q
    return q


class Rotation(_Immutable):
    """A 3x3 rotation matrix ``R_AB``: the orientation of frame B in frame A.

    ``Rotation()`` is the identity; ``Rotation(angle, axis)`` rotates by ``angle`` radians
    (right-handed) about ``axis``, which is ``'x'``, ``'y'``, ``'z'`` (also ``'X'``, ``'XAxis'``,
    ..., or the index 0, 1, 2) or a nonzero 3-vector (normalized here).

    ``R_AB * v_B`` gives ``v_A`` (also for an ``(n, 3)`` array of vectors), ``R_AB * R_BC`` gives
    ``R_AC`` and ``~R_AB`` gives ``R_BA``. The object is immutable; ``.matrix`` is a read-only
    ``(3, 3)`` float64 array.

    Parameters
    ----------
    angle : float, optional
        Rotation angle in radians.
    axis : str, int or array_like of shape (3,), optional
        Rotation axis; required when ``angle`` is given.
    """

    __slots__ = ("_m",)

    def __init__(self, angle: float | None = None, axis: Any = None) -> None:
        if angle is None:
            if axis is not None:
                raise TypeError("Rotation(angle, axis) needs an angle")
            m = np.eye(3)
        elif isinstance(angle, Rotation):
            if axis is not None:
                raise TypeError("Rotation(R) copies a Rotation and takes no axis")
            m = angle._m.copy()
        else:
            if axis is None:
                if np.ndim(angle) == 2:
                    raise TypeError("to make a Rotation from a 3x3 matrix use Rotation.from_matrix(m)")
                raise TypeError("Rotation(angle, axis) needs an axis: 'x', 'y', 'z' or a 3-vector")
            m = _angle_axis_matrix(_scalar(angle, "rotation angle"), axis)
        self._m = _readonly(m)

    @classmethod
    def _trusted(cls, m: np.ndarray) -> "Rotation":
        # For results known to be rotations (products, transposes, kernel output): no validation
        # and no copy. ``m`` must be a float64 (3, 3) array that nobody writes to afterwards; its
        # own writeable flag is cleared (for a view, only the view's).
        r = object.__new__(cls)
        r._m = _readonly(m)
        return r

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_angle_axis(cls, angle: float, axis: Any) -> "Rotation":
        """Same as ``Rotation(angle, axis)``."""
        return cls(angle, axis)

    @classmethod
    def from_matrix(cls, m: ArrayLike, tol: float = ROTATION_TOL) -> "Rotation":
        """A Rotation from a 3x3 matrix, validated and re-orthonormalized.

        Parameters
        ----------
        m : array_like, shape (3, 3)
            Must be orthonormal with determinant +1 to within ``tol``: ``max|m^T m - 1| <= tol``
            and ``|det m - 1| <= tol``. A matrix that passes but is not orthonormal to machine
            precision is replaced by the nearest rotation (polar decomposition).
        tol : float, optional

        Raises
        ------
        ValueError
            Wrong shape, a non-finite entry, not orthonormal, or a reflection (det -1).
        """
        a = _float_array(m, "rotation matrix")
        if a.shape != (3, 3):
            raise ValueError(f"rotation matrix must have shape (3, 3), got shape {a.shape}")
        _require_finite(a, "rotation matrix")
        err = float(np.max(np.abs(a.T @ a - np.eye(3))))
        det = float(np.linalg.det(a))
        if err > tol:
            raise ValueError(
                f"matrix is not orthonormal: max|R^T R - 1| = {err:.3g} exceeds tolerance {tol:.3g}; "
                f"got {a.tolist()}")
        if abs(det - 1.0) > tol:
            raise ValueError(
                f"matrix is not a proper rotation: det = {det:.6g}, expected +1"
                + (" (it is a reflection)" if det < 0 else "") + f"; got {a.tolist()}")
        if err > _KEEP_AS_IS_TOL:
            u, _, vt = np.linalg.svd(a)
            a = u @ vt
        return cls._trusted(a)

    @classmethod
    def from_quaternion(cls, q: ArrayLike) -> "Rotation":
        """A Rotation from a quaternion ``[w, x, y, z]`` (scalar first), normalized here.

        Raises
        ------
        ValueError
            Wrong shape, a non-finite entry or a zero quaternion.
        """
        a = _float_array(q, "quaternion")
        if a.shape != (4,):
            raise ValueError(f"quaternion must have shape (4,) as [w, x, y, z], got shape {a.shape}")
        _require_finite(a, "quaternion")
        n = float(np.linalg.norm(a))
        if n < 1e-300:
            raise ValueError(f"quaternion must be nonzero, got {a.tolist()}")
        return cls._trusted(_quaternion_to_matrix(a / n))

    @classmethod
    def from_body_fixed_xyz(cls, angles: ArrayLike) -> "Rotation":
        """Simbody's body-fixed X-Y-Z sequence: ``R = Rx(a0) * Ry(a1) * Rz(a2)``.

        First rotate about x by ``a0``, then about the new y by ``a1``, then about the newest z by
        ``a2``.

        Parameters
        ----------
        angles : array_like, shape (3,)
            Radians.
        """
        a = _vec3(angles, "body-fixed XYZ angles")
        return cls._trusted(
            _angle_axis_matrix(a[0], 0) @ _angle_axis_matrix(a[1], 1) @ _angle_axis_matrix(a[2], 2))

    # -- accessors ---------------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        """The rotation matrix, shape (3, 3), read-only."""
        return self._m

    def to_quaternion(self) -> np.ndarray:
        """The unit quaternion ``[w, x, y, z]`` with ``w >= 0`` (canonical sign), shape (4,)."""
        return _matrix_to_quaternion(self._m)

    def to_angle_axis(self) -> tuple[float, np.ndarray]:
        """Angle in ``[0, pi]`` and unit axis, shape (3,); the axis is x for the identity."""
        q = self.to_quaternion()
        s = float(np.linalg.norm(q[1:]))
        if s == 0.0:
            return 0.0, np.array([1.0, 0.0, 0.0])
        return 2.0 * math.atan2(s, q[0]), q[1:] / s

    def to_body_fixed_xyz(self) -> np.ndarray:
        """Angles ``(a0, a1, a2)`` with ``R = Rx(a0) Ry(a1) Rz(a2)``, shape (3,).

        ``a1`` is in ``[-pi/2, pi/2]``, ``a0`` and ``a2`` in ``[-pi, pi]``. At gimbal lock
        (``|a1| = pi/2``) only ``a0 +- a2`` is determined; the result still reproduces the rotation.
        """
        m = self._m
        # For R = Rx(a) Ry(b) Rz(c): R[1,2] = -sin a cos b and R[2,2] = cos a cos b, which fixes a
        # unless cos b = 0. Then undo Rx(a): Rx(a)^T R = Ry(b) Rz(c) has rows [.., .., sin b],
        # [sin c, cos c, 0], [.., .., cos b]; reading b and c from it stays accurate for any a,
        # which is what keeps this well behaved near gimbal lock.
        if math.hypot(m[1, 2], m[2, 2]) < 1e-15:
            a = 0.0
        else:
            a = math.atan2(-m[1, 2], m[2, 2])
        ca, sa = math.cos(a), math.sin(a)
        b = math.atan2(m[0, 2], ca * m[2, 2] - sa * m[1, 2])
        c = math.atan2(ca * m[1, 0] + sa * m[2, 0], ca * m[1, 1] + sa * m[2, 1])
        return np.array([a, b, c])

    # -- algebra -----------------------------------------------------------------------------
    def __mul__(self, other: Any) -> Any:
        if isinstance(other, Rotation):
            return Rotation._trusted(self._m @ other._m)
        if isinstance(other, _Immutable):
            return NotImplemented
        v = _vectors(other, "vector rotated by a Rotation")
        return self._m @ v if v.ndim == 1 else v @ self._m.T

    __matmul__ = __mul__

    def __invert__(self) -> "Rotation":
        return Rotation._trusted(self._m.T.copy())

    def transpose(self) -> "Rotation":
        """The inverse rotation, ``~R``."""
        return ~self

    invert = transpose

    def is_same_rotation(self, other: "Rotation", tol: float = 1e-12) -> bool:
        """True when the rotation taking ``self`` to ``other`` has an angle <= ``tol`` radians."""
        if not isinstance(other, Rotation):
            raise TypeError(f"is_same_rotation needs a Rotation, got {type(other).__name__}")
        q = _matrix_to_quaternion(self._m.T @ other._m)
        return 2.0 * math.atan2(float(np.linalg.norm(q[1:])), abs(q[0])) <= tol

    def __repr__(self) -> str:
        return f"Rotation.from_matrix({self._m.tolist()!r})"


# ---------------------------------------------------------------------------------------------
# Transform
# ---------------------------------------------------------------------------------------------
def _as_rotation(R: Any) -> Rotation:
    if isinstance(R, Rotation):
        return R
    return Rotation.from_matrix(R)


class Transform(_Immutable):
    """A rigid transform ``X_AB``: the pose of frame B in frame A.

    ``Transform()`` is the identity, ``Transform(p)`` a pure translation, ``Transform(R)`` a pure
    rotation and ``Transform(R, p)`` both; ``R`` is a `Rotation` or a 3x3 matrix (validated by
    `Rotation.from_matrix`), ``p`` a 3-vector (a scalar fills all three entries).

    ``X_AB * X_BC == X_AC``; ``X_AB * p_BS == p_AS`` maps a station (or an ``(n, 3)`` array of
    stations); ``~X_AB == X_BA``.

    Parameters
    ----------
    R : Rotation or array_like of shape (3, 3), optional
    p : array_like, shape (3,), optional
    """

    __slots__ = ("_R", "_p")

    def __init__(self, R: Any = None, p: Any = None) -> None:
        if p is None and R is not None and not isinstance(R, Rotation):
            if isinstance(R, Transform):
                self._R, self._p = R._R, R._p
                return
            # One argument that is not a Rotation: a 3x3 matrix is a rotation, else a position.
            shape = np.shape(R)
            if shape == (3, 3):
                rot, pos = Rotation.from_matrix(R), np.zeros(3)
            else:
                rot, pos = Rotation(), _vec3(R, "Transform position p")
        else:
            rot = Rotation() if R is None else _as_rotation(R)
            pos = np.zeros(3) if p is None else _vec3(p, "Transform position p")
        self._R = rot
        self._p = _readonly(pos)

    @classmethod
    def _trusted(cls, R: Rotation, p: np.ndarray) -> "Transform":
        # No validation, no copy: ``p`` must be a float64 (3,) array nobody writes to afterwards.
        x = object.__new__(cls)
        x._R = R
        x._p = _readonly(p)
        return x

    @classmethod
    def from_matrix44(cls, m: ArrayLike, tol: float = ROTATION_TOL) -> "Transform":
        """A Transform from a 4x4 homogeneous matrix ``[[R, p], [0, 0, 0, 1]]``.

        Raises
        ------
        ValueError
            Wrong shape, non-finite entries, a bottom row other than ``[0, 0, 0, 1]`` or a block
            ``R`` that is not a rotation (see `Rotation.from_matrix`).
        """
        a = _float_array(m, "homogeneous matrix")
        if a.shape != (4, 4):
            raise ValueError(f"homogeneous matrix must have shape (4, 4), got shape {a.shape}")
        _require_finite(a, "homogeneous matrix")
        if not np.array_equal(a[3], [0.0, 0.0, 0.0, 1.0]):
            raise ValueError("bottom row of a homogeneous transform must be [0, 0, 0, 1], "
                             f"got {a[3].tolist()}")
        return cls._trusted(Rotation.from_matrix(a[:3, :3], tol), a[:3, 3].copy())

    @property
    def R(self) -> Rotation:
        """The rotation ``R_AB``."""
        return self._R

    @property
    def p(self) -> np.ndarray:
        """The position ``p_AB`` of B's origin in A, shape (3,), read-only."""
        return self._p

    def matrix44(self) -> np.ndarray:
        """The homogeneous matrix ``[[R, p], [0, 0, 0, 1]]``, shape (4, 4), a new array."""
        m = np.eye(4)
        m[:3, :3] = self._R._m
        m[:3, 3] = self._p
        return m

    def matrix34(self) -> np.ndarray:
        """The top three rows ``[R | p]`` of `matrix44`, shape (3, 4), a new array."""
        return np.hstack([self._R._m, self._p[:, None]])

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, Transform):
            R = self._R._m
            return Transform._trusted(Rotation._trusted(R @ other._R._m), R @ other._p + self._p)
        if isinstance(other, _Immutable):
            return NotImplemented
        s = _vectors(other, "station mapped by a Transform")
        return self._R._m @ s + self._p if s.ndim == 1 else s @ self._R._m.T + self._p

    __matmul__ = __mul__

    def __invert__(self) -> "Transform":
        Rt = self._R._m.T.copy()
        return Transform._trusted(Rotation._trusted(Rt), -(Rt @ self._p))

    def invert(self) -> "Transform":
        """The inverse transform, ``~X``."""
        return ~self

    def shift_frame_station_to_base(self, s_B: ArrayLike) -> np.ndarray:
        """``X_AB * s_B``: a station given in B, measured from A's origin and expressed in A."""
        return self * s_B

    def shift_base_station_to_frame(self, s_A: ArrayLike) -> np.ndarray:
        """``~X_AB * s_A``: a station given in A, measured from B's origin and expressed in B."""
        s = _vectors(s_A, "station")
        return (s - self._p) @ self._R._m

    def xform_frame_vec_to_base(self, v_B: ArrayLike) -> np.ndarray:
        """``R_AB * v_B``: re-express a vector (no translation)."""
        return self._R * v_B

    def xform_base_vec_to_frame(self, v_A: ArrayLike) -> np.ndarray:
        """``R_BA * v_A``: re-express a vector (no translation)."""
        v = _vectors(v_A, "vector")
        return v @ self._R._m

    def is_same_transform(self, other: "Transform", angle_tol: float = 1e-12,
                          distance_tol: float = 1e-12) -> bool:
        """True when rotations agree within ``angle_tol`` rad and positions within ``distance_tol``."""
        if not isinstance(other, Transform):
            raise TypeError(f"is_same_transform needs a Transform, got {type(other).__name__}")
        return (self._R.is_same_rotation(other._R, angle_tol)
                and float(np.linalg.norm(self._p - other._p)) <= distance_tol)

    def __repr__(self) -> str:
        return f"Transform({self._R!r}, {self._p.tolist()!r})"


# ---------------------------------------------------------------------------------------------
# Inertia
# ---------------------------------------------------------------------------------------------
def _check_inertia(m: np.ndarray, what: str = "Inertia", scale: float = 0.0) -> np.ndarray:
    """Validate an inertia matrix; return it symmetrized, or raise ValueError naming the failed test.

    A matrix is an inertia of some mass distribution exactly when it is symmetric and its
    principal moments are nonnegative and each is at most the sum of the other two (the second
    moment matrix ``tr(I)/2 - I`` is then positive semi-definite). ``scale`` is the magnitude of the
    terms ``m`` was computed from, for tolerances on results of subtractions.
    """
    if m.shape != (3, 3):
        raise ValueError(f"{what}: an inertia matrix must have shape (3, 3), got shape {m.shape}")
    _require_finite(m, f"{what}: inertia matrix")
    slop = INERTIA_RTOL * max(float(np.max(np.abs(m))), scale) + INERTIA_ATOL
    asym = np.abs(m - m.T)
    if asym.max() > slop:
        i, j = (int(k) for k in np.unravel_index(np.argmax(asym), asym.shape))
        raise ValueError(
            f"{what}: inertia matrix is not symmetric: I[{i},{j}] = {m[i, j]:.6g} but "
            f"I[{j},{i}] = {m[j, i]:.6g}")
    d = np.diag(m)
    if d.min() < -slop:
        k = int(np.argmin(d))
        raise ValueError(f"{what}: moment of inertia I{'xyz'[k] * 2} = {d[k]:.6g} is negative "
                         f"(moments {_fmt(d)})")
    s = 0.5 * (m + m.T)
    lam = np.linalg.eigvalsh(s)
    if lam[0] < -slop:
        raise ValueError(f"{what}: inertia matrix is not positive semi-definite: principal moments "
                         f"{_fmt(lam)} (smallest {lam[0]:.6g} < 0)")
    if lam[2] > lam[0] + lam[1] + slop:
        raise ValueError(
            f"{what}: principal moments {_fmt(lam)} violate the triangle inequality: "
            f"{lam[2]:.6g} > {lam[0]:.6g} + {lam[1]:.6g}, so no mass distribution has this inertia")
    return s


def _symmetric_from(moments: np.ndarray, products: np.ndarray) -> np.ndarray:
    xx, yy, zz = moments
    xy, xz, yz = products
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


class Inertia(_Immutable):
    """A rotational inertia: symmetric 3x3 matrix about a point, expressed in a frame.

    ``Inertia(Ixx)`` is ``diag(Ixx, Ixx, Ixx)``; ``Inertia(moments, products=(0, 0, 0))`` takes the
    diagonal ``(xx, yy, zz)`` and the off-diagonal matrix entries ``(xy, xz, yz)`` (Simbody's order);
    ``Inertia(xx, yy, zz)`` and ``Inertia(xx, yy, zz, xy, xz, yz)`` also work, and so does a 3x3
    matrix (see `from_matrix`).

    Every Inertia is validated: finite, symmetric, positive semi-definite and satisfying the
    triangle inequality on its principal moments (each at most the sum of the other two), all within
    a relative tolerance `INERTIA_RTOL` plus a tiny absolute floor `INERTIA_ATOL`. The error says
    which test failed, with the numbers.

    Parameters
    ----------
    moments : float or array_like of shape (3,) or (3, 3)
    products : array_like, shape (3,), optional

    Raises
    ------
    ValueError
        When the matrix is not a valid inertia.
    """

    __slots__ = ("_m",)

    def __init__(self, moments: Any, products: Any = (0.0, 0.0, 0.0), *rest: float) -> None:
        if rest:
            # Simbody's Inertia(xx, yy, zz) and Inertia(xx, yy, zz, xy, xz, yz).
            vals = (moments, products) + rest
            if len(vals) not in (3, 6):
                raise TypeError(f"Inertia takes 1, 2, 3 or 6 arguments, got {len(vals)}")
            vals = [_scalar(v, "Inertia element") for v in vals]
            m = _symmetric_from(np.array(vals[:3]), np.array(vals[3:] or [0.0, 0.0, 0.0]))
        elif isinstance(moments, Inertia):
            self._m = moments._m
            return
        else:
            a = _float_array(moments, "Inertia moments")
            prod = _float_array(products, "Inertia products")
            if a.shape == (3, 3):
                if prod.shape != (3,) or np.any(prod != 0):
                    raise TypeError("Inertia(matrix) takes no products; they are in the matrix")
                m = a
            else:
                if a.ndim == 0:
                    a = np.full(3, float(a))
                if a.shape != (3,):
                    raise ValueError(f"Inertia moments must be a scalar or have shape (3,) as (xx, yy, zz), "
                                     f"got shape {a.shape}")
                if prod.shape != (3,):
                    raise ValueError(f"Inertia products must have shape (3,) as (xy, xz, yz), "
                                     f"got shape {prod.shape}")
                _require_finite(a, "Inertia moments")
                _require_finite(prod, "Inertia products")
                m = _symmetric_from(a, prod)
        self._m = _readonly(_check_inertia(m))

    @classmethod
    def _trusted(cls, m: np.ndarray) -> "Inertia":
        i = object.__new__(cls)
        i._m = _readonly(m)
        return i

    @classmethod
    def _checked(cls, m: np.ndarray, what: str, scale: float = 0.0) -> "Inertia":
        return cls._trusted(_check_inertia(m, what, scale))

    @classmethod
    def from_matrix(cls, m: ArrayLike) -> "Inertia":
        """An Inertia from a symmetric 3x3 matrix (validated; symmetrized within tolerance)."""
        a = _float_array(m, "inertia matrix")
        if a.shape != (3, 3):
            raise ValueError(f"inertia matrix must have shape (3, 3), got shape {a.shape}")
        return cls._checked(a, "Inertia")

    @classmethod
    def point_mass_at(cls, p: ArrayLike, mass: float) -> "Inertia":
        """Inertia about the origin of a point of mass ``mass`` at ``p``: ``m (|p|^2 1 - p p^T)``."""
        m = _scalar(mass, "point mass")
        if m < 0:
            raise ValueError(f"point mass must be >= 0, got {m!r}")
        return cls._trusted(point_mass_inertia(_vec3(p, "point mass location"), m))

    # -- unit-mass shapes (Simbody's UnitInertia factories) -----------------------------------
    @staticmethod
    def _lengths(what: str, *vals: float) -> list[float]:
        out = []
        for v in vals:
            x = _scalar(v, f"{what} dimension")
            if x < 0:
                raise ValueError(f"{what}: dimensions must be >= 0, got {x!r}")
            out.append(x)
        return out

    @classmethod
    def sphere(cls, r: float) -> "Inertia":
        """Unit-mass solid sphere of radius ``r`` about its center: ``2/5 r^2`` on the diagonal."""
        (r,) = cls._lengths("Inertia.sphere", r)
        return cls._trusted(np.eye(3) * (0.4 * r * r))

    @classmethod
    def _cylinder(cls, k: int, r: float, h: float) -> "Inertia":
        r, h = cls._lengths("Inertia.cylinder", r, h)
        # Length 2h along axis k: (3 r^2 + (2h)^2) / 12 across, r^2 / 2 along.
        d = np.full(3, r * r / 4 + h * h / 3)
        d[k] = r * r / 2
        return cls._trusted(np.diag(d))

    @classmethod
    def cylinder_along_x(cls, r: float, half_length: float) -> "Inertia":
        """Unit-mass solid cylinder along x, radius ``r``, half-length ``half_length``, about its center."""
        return cls._cylinder(0, r, half_length)

    @classmethod
    def cylinder_along_y(cls, r: float, half_length: float) -> "Inertia":
        """Unit-mass solid cylinder along y, radius ``r``, half-length ``half_length``, about its center."""
        return cls._cylinder(1, r, half_length)

    @classmethod
    def cylinder_along_z(cls, r: float, half_length: float) -> "Inertia":
        """Unit-mass solid cylinder along z, radius ``r``, half-length ``half_length``, about its center."""
        return cls._cylinder(2, r, half_length)

    @classmethod
    def brick(cls, hx: float, hy: float, hz: float) -> "Inertia":
        """Unit-mass solid box with half-lengths ``hx, hy, hz``: ``Ixx = (hy^2 + hz^2) / 3``, ..."""
        x, y, z = cls._lengths("Inertia.brick", hx, hy, hz)
        x2, y2, z2 = x * x, y * y, z * z
        return cls._trusted(np.diag([(y2 + z2) / 3, (x2 + z2) / 3, (x2 + y2) / 3]))

    @classmethod
    def ellipsoid(cls, a: float, b: float, c: float) -> "Inertia":
        """Unit-mass solid ellipsoid with semi-axes ``a, b, c``: ``Ixx = (b^2 + c^2) / 5``, ..."""
        x, y, z = cls._lengths("Inertia.ellipsoid", a, b, c)
        x2, y2, z2 = x * x, y * y, z * z
        return cls._trusted(np.diag([(y2 + z2) / 5, (x2 + z2) / 5, (x2 + y2) / 5]))

    # -- accessors ---------------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        """The symmetric matrix, shape (3, 3), read-only."""
        return self._m

    @property
    def moments(self) -> np.ndarray:
        """Diagonal ``(xx, yy, zz)``, shape (3,)."""
        return np.diag(self._m).copy()

    @property
    def products(self) -> np.ndarray:
        """Off-diagonal matrix entries ``(xy, xz, yz)``, shape (3,)."""
        m = self._m
        return np.array([m[0, 1], m[0, 2], m[1, 2]])

    def trace(self) -> float:
        """Sum of the moments."""
        return float(np.trace(self._m))

    def principal_moments(self) -> np.ndarray:
        """Eigenvalues in ascending order, shape (3,)."""
        return np.linalg.eigvalsh(self._m)

    # -- algebra -----------------------------------------------------------------------------
    def __add__(self, other: Any) -> "Inertia":
        if not isinstance(other, Inertia):
            return NotImplemented
        return Inertia._trusted(self._m + other._m)

    def __sub__(self, other: Any) -> "Inertia":
        if not isinstance(other, Inertia):
            return NotImplemented
        scale = max(float(np.max(np.abs(self._m))), float(np.max(np.abs(other._m))))
        return Inertia._checked(self._m - other._m, "Inertia difference", scale)

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, _Immutable):
            return NotImplemented
        if np.ndim(other) == 0:
            s = _scalar(other, "Inertia scale factor")
            if s < 0:
                raise ValueError(f"an Inertia can only be scaled by a factor >= 0, got {s!r}")
            return Inertia._trusted(self._m * s)
        w = _vectors(other, "vector multiplied by an Inertia")
        return self._m @ w if w.ndim == 1 else w @ self._m

    def __rmul__(self, other: Any) -> "Inertia":
        if np.ndim(other) != 0:
            return NotImplemented
        return self * other

    def __truediv__(self, other: Any) -> "Inertia":
        s = _scalar(other, "Inertia divisor")
        if not s > 0:
            raise ValueError(f"an Inertia can only be divided by a positive number, got {s!r}")
        return Inertia._trusted(self._m / s)

    def shift_to_mass_center(self, com: ArrayLike, mass: float) -> "Inertia":
        """Shift from the current point O to the mass center C (Simbody's shiftToMassCenter).

        ``I_C = I_O - m (|c|^2 1 - c c^T)``, with ``c`` the vector from O to C in this frame.

        Raises
        ------
        ValueError
            When the result is not a valid inertia (O, c and m are inconsistent).
        """
        c = _vec3(com, "mass center")
        m = _scalar(mass, "mass")
        pm = point_mass_inertia(c, m)
        scale = max(float(np.max(np.abs(self._m))), float(np.max(np.abs(pm))))
        return Inertia._checked(self._m - pm, "shift_to_mass_center", scale)

    def shift_from_mass_center(self, p: ArrayLike, mass: float) -> "Inertia":
        """Shift a central inertia to the point ``p`` (measured from the mass center).

        ``I_P = I_C + m (|p|^2 1 - p p^T)`` (parallel axis theorem; Simbody's shiftFromMassCenter).
        """
        v = _vec3(p, "shift vector")
        m = _scalar(mass, "mass")
        if m < 0:
            raise ValueError(f"mass must be >= 0, got {m!r}")
        return Inertia._trusted(self._m + point_mass_inertia(v, m))

    def reexpress(self, R_FB: Rotation | ArrayLike) -> "Inertia":
        """Re-express this inertia, given in F, in frame B (same point): ``R_BF I R_FB``.

        Simbody's ``Inertia::reexpress(R_FB)``; to go the other way pass ``~R_FB``.

        Parameters
        ----------
        R_FB : Rotation or array_like of shape (3, 3)
            Orientation of B in F.
        """
        R = _as_rotation(R_FB)._m
        m = R.T @ self._m @ R
        return Inertia._trusted(0.5 * (m + m.T))

    def is_numerically_equal(self, other: "Inertia", rtol: float = 1e-12) -> bool:
        """True when every entry agrees within ``rtol`` times the largest entry of either."""
        if not isinstance(other, Inertia):
            raise TypeError(f"is_numerically_equal needs an Inertia, got {type(other).__name__}")
        scale = max(float(np.max(np.abs(self._m))), float(np.max(np.abs(other._m))), 1e-300)
        return float(np.max(np.abs(self._m - other._m))) <= rtol * scale

    def __repr__(self) -> str:
        return f"Inertia({self.moments.tolist()!r}, {self.products.tolist()!r})"


def _as_inertia(I: Any, what: str) -> Inertia:
    if isinstance(I, Inertia):
        return I
    try:
        return Inertia(I)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


# ---------------------------------------------------------------------------------------------
# MassProperties
# ---------------------------------------------------------------------------------------------
def _check_mass(mass: Any) -> float:
    a = _float_array(mass, "mass")
    if a.ndim != 0:
        raise TypeError(f"mass must be a scalar, got an array of shape {a.shape}")
    m = float(a)
    if math.isnan(m):
        raise ValueError("mass is NaN")
    if math.isinf(m):
        raise ValueError(f"mass must be finite, got {m!r} (only Ground has infinite mass; a body "
                         "that must not move should be welded to Ground)")
    if m < 0:
        raise ValueError(f"mass must be >= 0, got {m!r}")
    return m


class MassProperties(_Immutable):
    """Mass, mass center and inertia of a rigid body B, all in B (Simbody's convention).

    Parameters
    ----------
    mass : float
        Finite and >= 0. Zero makes a massless body, which must then have zero inertia (within
        `INERTIA_ATOL`).
    com : array_like, shape (3,)
        ``p_BC``: the mass center C measured from B's origin, expressed in B (a scalar fills all three).
    inertia : Inertia, float, array_like of shape (3,) or (3, 3)
        ``I_BO``: the inertia about **B's origin** (not the mass center), expressed in B. Use
        `from_central_inertia` when you have the inertia about the mass center.

    Raises
    ------
    ValueError
        A negative, NaN or infinite mass, a non-finite com, an invalid inertia, a massless body with
        nonzero inertia, or an inertia about the origin that implies a non-physical central inertia
        (checked with the same tests as `Inertia`; a valid central inertia makes the inertia about
        every other point valid).
    """

    __slots__ = ("_mass", "_com", "_inertia", "_central")

    def __init__(self, mass: float, com: ArrayLike, inertia: Any) -> None:
        m = _check_mass(mass)
        c = _vec3(com, "MassProperties com")
        I_O = _as_inertia(inertia, "MassProperties inertia")
        if m == 0.0:
            central = I_O
            self._require_massless_inertia(I_O, "inertia")
        else:
            pm = point_mass_inertia(c, m)
            scale = max(float(np.max(np.abs(I_O._m))), float(np.max(np.abs(pm))))
            try:
                central = Inertia._checked(I_O._m - pm, "central inertia", scale)
            except ValueError as e:
                raise ValueError(
                    f"MassProperties(mass={m:.6g}, com={_fmt(c)}, inertia about the body origin "
                    f"{I_O._m.tolist()}): the central inertia this implies is not physical ({e}). "
                    "MassProperties takes the inertia about "
                    "the BODY ORIGIN; if yours is about the mass center use "
                    "MassProperties.from_central_inertia(mass, com, inertia).") from None
        self._set(m, c, I_O, central)

    def _set(self, m: float, c: np.ndarray, I_O: Inertia, central: Inertia) -> None:
        self._mass = m
        self._com = _readonly(c)
        self._inertia = I_O
        self._central = central

    @staticmethod
    def _require_massless_inertia(I: Inertia, what: str) -> None:
        if np.max(np.abs(I._m)) > INERTIA_ATOL:
            raise ValueError(f"MassProperties: a massless body (mass 0) must have zero {what}, "
                             f"got {I._m.tolist()}")

    @classmethod
    def _trusted(cls, m: float, c: np.ndarray, I_O: Inertia, central: Inertia) -> "MassProperties":
        mp = object.__new__(cls)
        mp._set(m, c, I_O, central)
        return mp

    @classmethod
    def from_central_inertia(cls, mass: float, com: ArrayLike, central: Any) -> "MassProperties":
        """Mass properties from the inertia about the mass center (expressed in B).

        The inertia about B's origin is ``central + m (|com|^2 1 - com com^T)``.
        """
        m = _check_mass(mass)
        c = _vec3(com, "MassProperties com")
        I_C = _as_inertia(central, "MassProperties central inertia")
        if m == 0.0:
            cls._require_massless_inertia(I_C, "central inertia")
        return cls._trusted(m, c, Inertia._trusted(I_C._m + point_mass_inertia(c, m)), I_C)

    # -- accessors ---------------------------------------------------------------------------
    @property
    def mass(self) -> float:
        """Total mass."""
        return self._mass

    @property
    def com(self) -> np.ndarray:
        """Mass center from B's origin, in B, shape (3,), read-only."""
        return self._com

    @property
    def inertia(self) -> Inertia:
        """Inertia about B's origin, in B."""
        return self._inertia

    def get_mass(self) -> float:
        """Same as `mass` (Simbody's name)."""
        return self._mass

    def get_mass_center(self) -> np.ndarray:
        """Same as `com` (Simbody's name)."""
        return self._com

    def get_inertia(self) -> Inertia:
        """Same as `inertia` (Simbody's name): about B's origin."""
        return self._inertia

    def central_inertia(self) -> Inertia:
        """Inertia about the mass center, expressed in B."""
        return self._central

    calc_central_inertia = central_inertia

    def calc_shifted_inertia(self, new_origin: ArrayLike) -> Inertia:
        """Inertia about the point ``new_origin`` (measured from B's origin, in B), expressed in B."""
        d = _vec3(new_origin, "new origin") - self._com
        return Inertia._trusted(self._central._m + point_mass_inertia(d, self._mass))

    def calc_transformed_inertia(self, X_BC: Transform) -> Inertia:
        """Inertia about C's origin expressed in C, given the pose ``X_BC`` of a frame C in B."""
        return self.calc_shifted_inertia(X_BC.p).reexpress(X_BC.R)

    def calc_shifted_mass_props(self, new_origin: ArrayLike) -> "MassProperties":
        """The same body measured from ``new_origin`` (given from B's origin, in B); axes unchanged."""
        o = _vec3(new_origin, "new origin")
        return MassProperties._trusted(self._mass, self._com - o, self.calc_shifted_inertia(o),
                                       self._central)

    def calc_transformed_mass_props(self, X_BC: Transform) -> "MassProperties":
        """The same body described in frame C (origin and axes), given the pose ``X_BC`` of C in B."""
        if not isinstance(X_BC, Transform):
            raise TypeError(f"X_BC must be a Transform, got {type(X_BC).__name__}")
        return MassProperties._trusted(self._mass, (~X_BC) * self._com,
                                       self.calc_transformed_inertia(X_BC),
                                       self._central.reexpress(X_BC.R))

    def reexpress(self, R_BC: Rotation | ArrayLike) -> "MassProperties":
        """The same measurements (same origin) expressed in frame C, given ``R_BC`` (Simbody's)."""
        R = _as_rotation(R_BC)
        return MassProperties._trusted(self._mass, (~R) * self._com, self._inertia.reexpress(R),
                                       self._central.reexpress(R))

    def is_exactly_massless(self) -> bool:
        """True when the mass is exactly 0."""
        return self._mass == 0.0

    def is_nearly_massless(self, tol: float = 1e-14) -> bool:
        """True when the mass is <= ``tol``."""
        return self._mass <= tol

    def is_exactly_central(self) -> bool:
        """True when the mass center is exactly at B's origin."""
        return not np.any(self._com)

    def is_nearly_central(self, tol: float = 1e-14) -> bool:
        """True when the mass center is within ``tol`` of B's origin."""
        return float(np.linalg.norm(self._com)) <= tol

    def spatial_inertia_matrix(self) -> np.ndarray:
        """Rigid-body spatial inertia about B's origin, in B, shape (6, 6), a new array.

        For spatial velocity ``V = (w, v_O)`` (angular first, ``v_O`` the velocity of B's origin)
        the spatial momentum about B's origin is ``h = M V = (H_O, L)`` with::

            M = [[ I_O,         m skew(c) ],
                 [ -m skew(c),  m 1       ]]

        Derivation: a particle of mass m_i at r_i (from O) moves with ``v_O + w x r_i``, so
        ``L = sum m_i (v_O + w x r_i) = m v_O - m c x w`` and
        ``H_O = sum m_i r_i x (v_O + w x r_i) = m c x v_O + I_O w``. ``M`` is symmetric because
        ``skew(c)^T = -skew(c)``. This is Simbody's ``MassProperties::toMat66()``.
        """
        m, c = self._mass, self._com
        mc = m * skew(c)
        M = np.empty((6, 6))
        M[:3, :3] = self._inertia._m
        M[:3, 3:] = mc
        M[3:, :3] = -mc
        M[3:, 3:] = m * np.eye(3)
        return M

    def __repr__(self) -> str:
        return (f"MassProperties({self._mass!r}, {self._com.tolist()!r}, {self._inertia!r})")


_UNIT_MASS_PROPERTIES = MassProperties(1.0, 0.0, Inertia(1.0))
_MASSLESS = MassProperties(0.0, 0.0, Inertia(0.0))


# ---------------------------------------------------------------------------------------------
# Body
# ---------------------------------------------------------------------------------------------
class Body:
    """What a `MobilizedBody` carries about its body: the default mass properties.

    Make one with ``Body.Rigid(mass_properties)`` or ``Body.Massless()``; ``Body`` itself is the
    common base. Unlike the spatial value types a Body is mutable, as in Simbody.
    """

    __slots__ = ("_mass_properties",)

    def __init__(self, mass_properties: MassProperties) -> None:
        if type(self) is Body:
            raise TypeError("Body is a base class: use Body.Rigid(mass_properties) or Body.Massless()")
        self._mass_properties = self._accept(mass_properties)

    def _accept(self, mp: Any) -> MassProperties:
        if not isinstance(mp, MassProperties):
            raise TypeError(f"{type(self).__qualname__} needs a MassProperties, got {type(mp).__name__}")
        return mp

    def get_default_rigid_body_mass_properties(self) -> MassProperties:
        """The mass properties a State starts with."""
        return self._mass_properties

    def set_default_rigid_body_mass_properties(self, mass_properties: MassProperties) -> "Body":
        """Replace the default mass properties; returns this Body (Simbody returns ``Body&``)."""
        self._mass_properties = self._accept(mass_properties)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({self._mass_properties!r})"


class _Rigid(Body):
    """A rigid body with the given mass properties (default: mass 1, com 0, inertia 1).

    Parameters
    ----------
    mass_properties : MassProperties, optional
    """

    __slots__ = ()

    def __init__(self, mass_properties: MassProperties = _UNIT_MASS_PROPERTIES) -> None:
        super().__init__(mass_properties)


class _Massless(Body):
    """A body with mass 0 and zero inertia; its mass properties can only be set to massless ones."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_MASSLESS)

    def _accept(self, mp: Any) -> MassProperties:
        mp = super()._accept(mp)
        if not mp.is_exactly_massless():
            raise ValueError(f"Body.Massless cannot take mass properties with mass {mp.mass!r}; "
                             "use Body.Rigid")
        return mp

    def __repr__(self) -> str:
        return "Body.Massless()"


for _cls, _name in ((_Rigid, "Rigid"), (_Massless, "Massless")):
    _cls.__name__ = _name
    _cls.__qualname__ = f"Body.{_name}"
    setattr(Body, _name, _cls)
del _cls, _name
