"""`ContactGeometry`: the shapes of contact surfaces, with Simbody's names and meanings.

Each shape is expressed in its own frame S (the surface frame, fixed on a body):

- ``HalfSpace()`` occupies ``x > 0`` of S; its surface is the plane ``x = 0`` and its outward
  normal is ``-x``.
- ``Sphere(radius)`` is centred on S's origin.
- ``Capsule(radius, half_length)`` is the set of points within ``radius`` of the segment from
  ``-half_length`` to ``+half_length`` along S's z axis (a cylinder capped by two hemispheres).
- ``Brick(half_lengths)`` is the box ``|x| <= hx, |y| <= hy, |z| <= hz`` centred on S's origin.
- ``Ellipsoid(radii)`` is ``(x/a)^2 + (y/b)^2 + (z/c)^2 <= 1`` centred on S's origin.
- ``Cylinder(radius, half_length)`` is ``x^2 + y^2 <= radius^2, |z| <= half_length`` (the axis along
  S's z, as MuJoCo's and URDF's cylinders).
- ``ConvexHull(vertices)`` is the convex hull of points given in S (a mesh's vertices, say); only
  its extreme points are kept.

The geometries are immutable values. Each carries ``shape_code`` and ``params`` (three floats,
unused entries 0), which is all the compiled detection kernels (`simtk.multibody.contact._detection`)
need to know about it, but for a ConvexHull, whose ``params`` are ``(size, vertex count, 0)`` and
whose ``vertices`` the kernels are given apart.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from simtk._core_contact import CONTACT_SHAPES

__all__ = ["ContactGeometry"]


def _positive(x: Any, what: str) -> float:
    """``x`` as a finite float > 0, or a clear TypeError / ValueError naming ``what``."""
    if isinstance(x, bool):
        raise TypeError(f"{what} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number, got {x!r}") from None
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{what} must be finite and > 0, got {v!r}")
    return v


def _positive3(x: Any, what: str) -> tuple[float, float, float]:
    try:
        a = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be three numbers, got {x!r}") from None
    if a.shape != (3,):
        raise ValueError(f"{what} must have three entries, got shape {a.shape}")
    return (_positive(a[0], f"{what}[0]"), _positive(a[1], f"{what}[1]"), _positive(a[2], f"{what}[2]"))


class ContactGeometry:
    """The shape of a contact surface, in its own frame S.

    Build one with a kind constructor: `HalfSpace`, `Sphere`, `Capsule`, `Brick`, `Ellipsoid`,
    `Cylinder` or `ConvexHull` (see the module docstring for the meaning of each). Instances are
    immutable, compare by value and are hashable.

    Each has a ``kind`` (the constructor's name), and for the compiled kernels a ``shape_code`` and
    three ``params``: Sphere ``(radius, 0, 0)``, Capsule and Cylinder ``(radius, half_length, 0)``,
    Brick the half-lengths, Ellipsoid the radii, HalfSpace ``(0, 0, 0)``, ConvexHull ``(size, nv, 0)``
    (size: the largest distance of a vertex from the frame's origin; nv: its vertex count).
    """

    __slots__ = ("_kind", "_params", "_vertices")

    _kind: str
    _params: tuple[float, float, float]
    _vertices: tuple

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("build a ContactGeometry with ContactGeometry.HalfSpace(), .Sphere(radius), "
                        ".Capsule(radius, half_length), .Brick(half_lengths), .Ellipsoid(radii), "
                        ".Cylinder(radius, half_length) or .ConvexHull(vertices)")

    @classmethod
    def _make(cls, kind: str, params: tuple[float, float, float], vertices: tuple = ()) -> ContactGeometry:
        self = object.__new__(cls)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_vertices", vertices)
        return self

    # -- kinds ------------------------------------------------------------------------------
    @classmethod
    def HalfSpace(cls) -> ContactGeometry:
        """The half-space ``x > 0`` of the surface frame (outward normal ``-x``).

        Returns
        -------
        ContactGeometry
        """
        return cls._make("HalfSpace", (0.0, 0.0, 0.0))

    @classmethod
    def Sphere(cls, radius: float) -> ContactGeometry:
        """A sphere centred on the surface frame's origin.

        Parameters
        ----------
        radius : float
            Radius, > 0.

        Returns
        -------
        ContactGeometry
        """
        return cls._make("Sphere", (_positive(radius, "Sphere radius"), 0.0, 0.0))

    @classmethod
    def Capsule(cls, radius: float, half_length: float) -> ContactGeometry:
        """A capsule: the points within ``radius`` of the segment ``z in [-half_length, half_length]``.

        Parameters
        ----------
        radius : float
            Radius of the cylinder and of its hemispherical caps, > 0.
        half_length : float
            Half the length of the cylinder (of the axis segment), > 0.

        Returns
        -------
        ContactGeometry
        """
        return cls._make("Capsule", (_positive(radius, "Capsule radius"),
                                     _positive(half_length, "Capsule half_length"), 0.0))

    @classmethod
    def Brick(cls, half_lengths: Any) -> ContactGeometry:
        """A box ``|x| <= hx, |y| <= hy, |z| <= hz`` centred on the surface frame's origin.

        Parameters
        ----------
        half_lengths : array_like, shape (3,)
            Half the box's side along each axis of the frame, each > 0.

        Returns
        -------
        ContactGeometry
        """
        return cls._make("Brick", _positive3(half_lengths, "Brick half_lengths"))

    @classmethod
    def Ellipsoid(cls, radii: Any) -> ContactGeometry:
        """An ellipsoid with semi-axes along the frame's axes, centred on its origin.

        Parameters
        ----------
        radii : array_like, shape (3,)
            Semi-axis lengths ``(a, b, c)`` along x, y, z, each > 0.

        Returns
        -------
        ContactGeometry
        """
        return cls._make("Ellipsoid", _positive3(radii, "Ellipsoid radii"))

    @classmethod
    def Cylinder(cls, radius: float, half_length: float) -> ContactGeometry:
        """A solid cylinder ``x^2 + y^2 <= radius^2, |z| <= half_length`` (flat caps).

        Parameters
        ----------
        radius : float
            Radius, > 0.
        half_length : float
            Half its length along the frame's z axis, > 0.

        Returns
        -------
        ContactGeometry
        """
        return cls._make("Cylinder", (_positive(radius, "Cylinder radius"),
                                      _positive(half_length, "Cylinder half_length"), 0.0))

    @classmethod
    def ConvexHull(cls, vertices: Any) -> ContactGeometry:
        """The convex hull of points given in the surface frame (a convex polytope).

        Parameters
        ----------
        vertices : array_like, shape (m, 3)
            Finite points, not all in one plane; points inside the hull are dropped.

        Returns
        -------
        ContactGeometry

        Raises
        ------
        ValueError
            Fewer than 4 points, non-finite ones, or points spanning no volume.
        """
        try:
            v = np.array(vertices, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"ConvexHull vertices must be an (m, 3) array of numbers, got {type(vertices).__name__}"
                            ) from None
        if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4:
            raise ValueError(f"ConvexHull vertices must have shape (m, 3) with m >= 4, got {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError("ConvexHull vertices must be finite")
        from scipy.spatial import ConvexHull as _Hull
        from scipy.spatial import QhullError

        try:
            hull = _Hull(v)
        except QhullError:
            raise ValueError("ConvexHull vertices span no volume (all in one plane or on one line)") from None
        ext = v[np.sort(hull.vertices)]
        if not hull.volume > 1e-12 * float(np.abs(ext).max()) ** 3:
            raise ValueError("ConvexHull vertices span no volume (all in one plane or on one line)")
        size = float(np.sqrt((ext * ext).sum(axis=1)).max())
        return cls._make("ConvexHull", (size, float(ext.shape[0]), 0.0), tuple(map(tuple, ext.tolist())))

    # -- values -----------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """The kind's name, e.g. ``"Sphere"``."""
        return self._kind

    @property
    def shape_code(self) -> int:
        """The kind's integer code for the compiled kernels."""
        return int(CONTACT_SHAPES[self._kind][0])

    @property
    def params(self) -> tuple[float, float, float]:
        """The three kernel parameters (unused entries 0)."""
        return self._params

    @property
    def vertices(self) -> np.ndarray:
        """The extreme points of a ConvexHull, shape (nv, 3), in the surface frame (read-only)."""
        if self._kind != "ConvexHull":
            raise AttributeError(f"a {self._kind} has no vertices")
        v = np.array(self._vertices, dtype=np.float64).reshape(-1, 3)
        v.flags.writeable = False
        return v

    @property
    def radius(self) -> float:
        """Radius of a Sphere, Capsule or Cylinder."""
        if self._kind not in ("Sphere", "Capsule", "Cylinder"):
            raise AttributeError(f"a {self._kind} has no radius")
        return self._params[0]

    @property
    def half_length(self) -> float:
        """Half-length of a Capsule's axis segment or of a Cylinder."""
        if self._kind not in ("Capsule", "Cylinder"):
            raise AttributeError(f"a {self._kind} has no half_length")
        return self._params[1]

    @property
    def half_lengths(self) -> tuple[float, float, float]:
        """Half-lengths of a Brick."""
        if self._kind != "Brick":
            raise AttributeError(f"a {self._kind} has no half_lengths")
        return self._params

    @property
    def radii(self) -> tuple[float, float, float]:
        """Semi-axes of an Ellipsoid."""
        if self._kind != "Ellipsoid":
            raise AttributeError(f"a {self._kind} has no radii")
        return self._params

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ContactGeometry is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ContactGeometry is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContactGeometry):
            return NotImplemented
        return self._kind == other._kind and self._params == other._params and self._vertices == other._vertices

    def __hash__(self) -> int:
        return hash((self._kind, self._params, self._vertices))

    def __reduce__(self) -> tuple:
        return (ContactGeometry._make, (self._kind, self._params, self._vertices))

    def __repr__(self) -> str:
        p = self._params
        if self._kind == "HalfSpace":
            return "ContactGeometry.HalfSpace()"
        if self._kind == "Sphere":
            return f"ContactGeometry.Sphere({p[0]!r})"
        if self._kind in ("Capsule", "Cylinder"):
            return f"ContactGeometry.{self._kind}({p[0]!r}, {p[1]!r})"
        if self._kind == "ConvexHull":
            return f"ContactGeometry.ConvexHull({[list(v) for v in self._vertices]!r})"
        return f"ContactGeometry.{self._kind}([{p[0]!r}, {p[1]!r}, {p[2]!r}])"
