"""`MassProperties` (mass, mass center, inertia about the body origin) and `Body`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._kinds import KindsMeta
from ._common import (
    INERTIA_ATOL,
    _float_array,
    _fmt,
    _Immutable,
    _point_mass_checked,
    _readonly,
    _require_finite,
    _vec3,
    skew,
)
from .inertia import Inertia, _as_inertia
from .rotation import Rotation
from .transform import Transform, _as_rotation


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
            pm = _point_mass_checked(c, m, "MassProperties")
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
        I_O = _point_mass_checked(c, m, "MassProperties.from_central_inertia", I_C._m)
        return cls._trusted(m, c, Inertia._trusted(I_O), I_C)

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
        _require_finite(d, "calc_shifted_inertia: new origin - mass center")
        return Inertia._trusted(_point_mass_checked(d, self._mass, "calc_shifted_inertia", self._central._m))

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
class Body(metaclass=KindsMeta):
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
