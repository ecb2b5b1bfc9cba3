"""`Rotation`: orientations as proper orthogonal 3x3 matrices, with angle-axis, Euler, body-fixed
and quaternion constructors."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._common import (
    _KEEP_AS_IS_TOL,
    ROTATION_TOL,
    _float_array,
    _Immutable,
    _readonly,
    _require_finite,
    _scalar,
    _unit,
    _vec3,
    _vectors,
    skew,
)

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
    return _unit(a, "rotation axis")


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
    qa = np.array(q)
    qa /= np.linalg.norm(qa)
    return _canonical_quaternion(qa)


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
        return cls._trusted(_quaternion_to_matrix(_unit(a, "quaternion")))

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
