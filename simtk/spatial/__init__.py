"""User-facing spatial types: `Rotation`, `Transform`, `Inertia`, `MassProperties`, `Body`; one module each.

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
from ._common import INERTIA_ATOL, INERTIA_RTOL, ROTATION_TOL, point_mass_inertia, skew
from .inertia import Inertia
from .mass_properties import Body, MassProperties
from .rotation import Rotation
from .transform import Transform

__all__ = [
    "Rotation",
    "Transform",
    "Inertia",
    "MassProperties",
    "Body",
    "skew",
    "point_mass_inertia",
    "INERTIA_ATOL",
    "INERTIA_RTOL",
    "ROTATION_TOL",
]
