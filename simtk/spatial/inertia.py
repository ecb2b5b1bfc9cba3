"""`Inertia`: symmetric 3x3 inertia matrices about a point, validated as physical."""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._common import (
    _FLOAT_MAX,
    _MAX_ENTRY,
    INERTIA_ATOL,
    INERTIA_RTOL,
    _float_array,
    _fmt,
    _Immutable,
    _point_mass_checked,
    _readonly,
    _require_finite,
    _scalar,
    _vec3,
    _vectors,
)
from .rotation import Rotation
from .transform import _as_rotation


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
    big = float(np.max(np.abs(m)))
    if big > _MAX_ENTRY:
        raise ValueError(f"{what}: inertia entries as large as {big:.6g} overflow: the sums of moments that "
                         f"validate an inertia and that the dynamics forms (up to three of them) exceed the "
                         f"largest float64 ({_FLOAT_MAX:.6g}); express the model in larger units")
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
    _m: np.ndarray

    def __init__(self, moments: Any, products: Any = (0.0, 0.0, 0.0), *rest: float) -> None:
        if rest:
            # Simbody's Inertia(xx, yy, zz) and Inertia(xx, yy, zz, xy, xz, yz).
            vals = (moments, products) + rest
            if len(vals) not in (3, 6):
                raise TypeError(f"Inertia takes 1, 2, 3 or 6 arguments, got {len(vals)}")
            nums = [_scalar(v, "Inertia element") for v in vals]
            m = _symmetric_from(np.array(nums[:3]), np.array(nums[3:] or [0.0, 0.0, 0.0]))
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
        return cls._trusted(_point_mass_checked(_vec3(p, "point mass location"), m, "Inertia.point_mass_at"))

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
        pm = _point_mass_checked(c, m, "shift_to_mass_center")
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
        return Inertia._trusted(_point_mass_checked(v, m, "shift_from_mass_center", self._m))

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
