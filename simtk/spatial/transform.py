"""`Transform`: rigid poses ``X_AB = (R_AB, p_AB)``."""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._common import ROTATION_TOL, _float_array, _Immutable, _readonly, _require_finite, _vec3, _vectors
from .rotation import Rotation


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
    _R: Rotation
    _p: np.ndarray

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

    @staticmethod
    def _from_readonly(m: np.ndarray, p: np.ndarray, _new=object.__new__) -> "Transform":
        # `_trusted` for a rotation matrix ``m`` (3, 3) and ``p`` (3,) that are already read-only float64
        # arrays owned by the result (a kernel's fresh copies): nothing is checked, copied or flagged, for
        # the getters called once per evaluation (a flag change, a classmethod's binding cost as much as
        # the rest; ``_new`` is bound once).
        R = _new(Rotation)
        R._m = m
        x = _new(Transform)
        x._R = R
        x._p = p
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
