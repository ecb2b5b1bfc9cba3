"""Decorations: what a viewer draws on each body, kept beside the System rather than inside it.

A `Decoration` is a shape in its own frame D (a sphere, a cylinder, a capsule, a box, an ellipsoid,
frame axes, a line between two stations, a half-space slab or a mesh file) with a colour and an
opacity. `decorate` fixes one on a mobilized body at ``X_BD``; the registry is a weak mapping keyed
by the body, so the core's classes carry nothing for it and a body that is dropped takes its
decorations with it.

`collect` gathers what a viewer shows of a system: the registered decorations, the contact surfaces
of every ``Force.HuntCrossley`` element (drawn by default) and, given a `UrdfModel`, its visual
geometry as the file describes it (`urdf_decorations`).

Shapes follow the conventions of the rest of simtk: cylinders and capsules lie along their frame's
z axis (URDF's cylinder and `ContactGeometry.Capsule` do), boxes and ellipsoids take half-lengths
and semi-axes (`ContactGeometry.Brick` and `.Ellipsoid` do), and a half-space is the side ``x > 0``
of its frame (`ContactGeometry.HalfSpace`).
"""
from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..spatial import Transform

__all__ = ["Decoration", "Placed", "decorate", "get_decorations", "clear_decorations", "collect",
           "contact_decorations", "urdf_decorations", "DEFAULT_COLOR", "CONTACT_COLOR"]

#: The colour of a decoration given none (a light steel blue).
DEFAULT_COLOR = (0.62, 0.68, 0.78)
#: The colour of contact geometry collected from force elements.
CONTACT_COLOR = (0.85, 0.55, 0.25)
_GROUND_COLOR = (0.72, 0.72, 0.70)

_KINDS = ("sphere", "cylinder", "capsule", "box", "ellipsoid", "frame", "line", "halfspace", "mesh")


def _rgb(color: Any) -> tuple[float, float, float] | None:
    if color is None:
        return None
    c = np.asarray(color, dtype=float).ravel()
    if c.shape != (3,) or not np.all((c >= 0) & (c <= 1)):
        raise ValueError(f"Decoration: color must be 3 numbers in [0, 1], got {color!r}")
    return (float(c[0]), float(c[1]), float(c[2]))


def _opacity(a: Any) -> float:
    a = float(a)
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"Decoration: opacity must be in [0, 1], got {a}")
    return a


def _pos(x: Any, what: str) -> float:
    v = float(x)
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"Decoration.{what} must be finite and > 0, got {x!r}")
    return v


def _pos3(x: Any, what: str) -> tuple[float, float, float]:
    v = np.asarray(x, dtype=float).ravel()
    if v.shape != (3,) or not (np.all(np.isfinite(v)) and np.all(v > 0)):
        raise ValueError(f"Decoration.{what} must be 3 finite numbers > 0, got {x!r}")
    return (float(v[0]), float(v[1]), float(v[2]))


def _vec3(x: Any, what: str) -> tuple[float, float, float]:
    v = np.asarray(x, dtype=float).ravel()
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"Decoration.{what} must be 3 finite numbers, got {x!r}")
    return (float(v[0]), float(v[1]), float(v[2]))


@dataclass(frozen=True)
class Decoration:
    """A shape to draw, in its own frame D. Build one with a kind constructor (`Sphere`, `Mesh`, ...).

    Decorations are immutable and compare by value, so viewers tessellate each distinct one once.

    Attributes
    ----------
    kind : str
        ``"sphere"``, ``"cylinder"``, ``"capsule"``, ``"box"``, ``"ellipsoid"``, ``"frame"``,
        ``"line"``, ``"halfspace"`` or ``"mesh"``.
    params : tuple of float
        The dimensions (see each constructor).
    color : tuple of 3 floats or None
        RGB in [0, 1]; None means the default (or, for a mesh, the file's own materials).
    opacity : float
        1 is opaque, 0 invisible.
    path : Path or None
        A mesh's file.
    scale : tuple of 3 floats
        A mesh's scale factors along x, y, z.
    """

    kind: str
    params: tuple = ()
    color: tuple[float, float, float] | None = None
    opacity: float = 1.0
    path: Path | None = None
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    _extra: tuple = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Decoration: unknown kind {self.kind!r}; expected one of {_KINDS}")

    # -- kinds --------------------------------------------------------------------------------
    @classmethod
    def Sphere(cls, radius: float, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """A sphere of ``radius`` centred on D's origin.

        Parameters
        ----------
        radius : float
            > 0.
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("sphere", (_pos(radius, "Sphere radius"),), _rgb(color), _opacity(opacity))

    @classmethod
    def Cylinder(cls, radius: float, length: float, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """A closed cylinder along D's z axis, centred on D's origin (URDF's ``<cylinder>``).

        Parameters
        ----------
        radius, length : float
            Radius and whole length, > 0.
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("cylinder", (_pos(radius, "Cylinder radius"), _pos(length, "Cylinder length")), _rgb(color),
                   _opacity(opacity))

    @classmethod
    def Capsule(cls, radius: float, half_length: float, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """The points within ``radius`` of the segment ``z in [-half_length, half_length]`` of D.

        Parameters
        ----------
        radius, half_length : float
            As in `ContactGeometry.Capsule`, > 0.
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("capsule", (_pos(radius, "Capsule radius"), _pos(half_length, "Capsule half_length")),
                   _rgb(color), _opacity(opacity))

    @classmethod
    def Box(cls, half_lengths: Any, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """A box ``|x| <= hx, |y| <= hy, |z| <= hz`` of D (Simbody's DecorativeBrick).

        Parameters
        ----------
        half_lengths : array_like, shape (3,)
            Half the side along each axis, > 0 (a URDF ``<box size>`` is twice these).
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("box", _pos3(half_lengths, "Box half_lengths"), _rgb(color), _opacity(opacity))

    @classmethod
    def Ellipsoid(cls, radii: Any, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """An ellipsoid with semi-axes ``radii`` along D's axes.

        Parameters
        ----------
        radii : array_like, shape (3,)
            > 0.
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("ellipsoid", _pos3(radii, "Ellipsoid radii"), _rgb(color), _opacity(opacity))

    @classmethod
    def Frame(cls, axis_length: float = 0.2, *, opacity: float = 1.0) -> Decoration:
        """D's axes as three lines from its origin: x red, y green, z blue.

        Parameters
        ----------
        axis_length : float
            > 0.
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("frame", (_pos(axis_length, "Frame axis_length"),), None, _opacity(opacity))

    @classmethod
    def Line(cls, point1: Any, point2: Any, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """A line between two stations given in D.

        Parameters
        ----------
        point1, point2 : array_like, shape (3,)
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("line", _vec3(point1, "Line point1") + _vec3(point2, "Line point2"), _rgb(color),
                   _opacity(opacity))

    @classmethod
    def HalfSpace(cls, size: float = 4.0, *, color: Any = None, opacity: float = 1.0) -> Decoration:
        """The half-space ``x > 0`` of D, drawn as a thin square slab of side ``size`` behind the plane x = 0.

        Viewers leave it out when they frame the scene (it is unbounded in principle).

        Parameters
        ----------
        size : float
            The side of the square drawn, > 0.
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        return cls("halfspace", (_pos(size, "HalfSpace size"),), _rgb(color), _opacity(opacity))

    @classmethod
    def Mesh(cls, path: str | Path, *, scale: Any = (1.0, 1.0, 1.0), color: Any = None,
             opacity: float = 1.0) -> Decoration:
        """A mesh file (STL, OBJ, PLY, DAE, glTF: what ``trimesh`` reads; DAE also needs ``pycollada``).

        The file is read when a viewer first draws it. Without ``color`` the file's own material
        colours are used (one per sub-mesh).

        Parameters
        ----------
        path : str or Path
        scale : float or array_like, shape (3,)
            Scale factors along D's axes.
        color : array_like of 3 floats in [0, 1], optional
        opacity : float

        Returns
        -------
        Decoration
        """
        s = np.broadcast_to(np.asarray(scale, dtype=float), (3,))
        return cls("mesh", (), _rgb(color), _opacity(opacity), Path(path), _pos3(s, "Mesh scale"))

    # -- derived ------------------------------------------------------------------------------
    def bounding_radius(self) -> float:
        """The radius of a sphere about D's origin that holds the shape (0 for a half-space; 1 for an unread mesh)."""
        k, p = self.kind, self.params
        if k == "sphere":
            return p[0]
        if k == "cylinder":
            return float(np.hypot(p[0], p[1] / 2))
        if k == "capsule":
            return p[0] + p[1]
        if k in ("box", "ellipsoid"):
            return float(np.linalg.norm(p)) if k == "box" else max(p)
        if k == "frame":
            return p[0]
        if k == "line":
            return float(max(np.linalg.norm(p[:3]), np.linalg.norm(p[3:])))
        if k == "halfspace":
            return 0.0
        return 1.0 * max(self.scale)


@dataclass(frozen=True)
class Placed:
    """A decoration fixed on a body: ``body`` (a MobilizedBody), ``decoration``, and ``X_BD`` its frame in the body."""

    body: Any
    decoration: Decoration
    X_BD: Transform


# The registry: body -> its decorations. Weak keys: the body owns nothing, the registry does not keep it alive.
_REGISTRY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def decorate(mobod: Any, decoration: Decoration, X_BD: Transform = Transform()) -> Placed:
    """Fix ``decoration`` on ``mobod`` at ``X_BD`` (its frame D in the body frame B).

    Parameters
    ----------
    mobod : MobilizedBody
        The body (``matter.ground`` for scenery).
    decoration : Decoration
    X_BD : Transform

    Returns
    -------
    Placed
        The record, as `get_decorations` lists it.
    """
    if not isinstance(decoration, Decoration):
        raise TypeError(f"decorate: expected a Decoration, got {type(decoration).__name__}")
    if not isinstance(X_BD, Transform):
        raise TypeError(f"decorate: X_BD must be a Transform, got {type(X_BD).__name__}")
    if not hasattr(mobod, "get_mobilized_body_index"):
        raise TypeError(f"decorate: expected a MobilizedBody, got {type(mobod).__name__}")
    placed = Placed(mobod, decoration, X_BD)
    _REGISTRY.setdefault(mobod, []).append(placed)
    return placed


def get_decorations(mobod: Any) -> list[Placed]:
    """The decorations registered on ``mobod`` with `decorate`, in the order they were added."""
    return list(_REGISTRY.get(mobod, ()))


def clear_decorations(mobod: Any) -> None:
    """Forget the decorations registered on ``mobod``."""
    _REGISTRY.pop(mobod, None)


def _bodies(system: Any) -> list:
    matter = system.get_matter_subsystem()
    return [matter.get_mobilized_body(i) for i in range(matter.get_num_bodies())]


def _surfaces(force: Any) -> list[tuple[Any, Any, Transform]]:
    """(body, ContactGeometry, X_BS) of each surface of a Hunt-Crossley-like element.

    The element offers the body of a surface publicly (``get_surface_body``) but not its shape and
    frame; those are read from its surface records until it offers accessors for them.
    """
    out = []
    records = getattr(force, "_surfaces", None)
    for i in range(force.get_num_surfaces()):
        getter = getattr(force, "get_surface_geometry", None)
        if getter is not None:
            geometry, X_BS = getter(i), force.get_surface_transform(i)
        elif records is not None:
            geometry, X_BS = records[i].geometry, records[i].X_BS
        else:
            continue
        out.append((force.get_surface_body(i), geometry, X_BS))
    return out


def contact_decorations(system: Any, color: Any = CONTACT_COLOR, opacity: float = 1.0) -> list[Placed]:
    """The contact surfaces of every force element with surfaces (``Force.HuntCrossley``) as decorations.

    Parameters
    ----------
    system : MultibodySystem
    color : array_like of 3 floats in [0, 1]
        The colour of the bodies' surfaces; half-spaces on Ground are drawn in grey.
    opacity : float

    Returns
    -------
    list of Placed
    """
    out = []
    for sub in system.get_force_subsystems():
        for i in range(sub.get_num_forces()):
            force = sub.get_force(i)
            if not hasattr(force, "get_num_surfaces"):
                continue
            for body, g, X_BS in _surfaces(force):
                p = g.params
                kind = g.kind
                if kind == "HalfSpace":
                    on_ground = body.get_mobilized_body_index() == 0
                    d = Decoration.HalfSpace(color=_GROUND_COLOR if on_ground else color, opacity=opacity)
                elif kind == "Sphere":
                    d = Decoration.Sphere(p[0], color=color, opacity=opacity)
                elif kind == "Capsule":
                    d = Decoration.Capsule(p[0], p[1], color=color, opacity=opacity)
                elif kind == "Brick":
                    d = Decoration.Box(p, color=color, opacity=opacity)
                elif kind == "Ellipsoid":
                    d = Decoration.Ellipsoid(p, color=color, opacity=opacity)
                elif kind == "Cylinder":
                    d = Decoration.Cylinder(p[0], 2.0 * p[1], color=color, opacity=opacity)
                else:  # (a ConvexHull: the viewers draw meshes from files only)
                    continue
                out.append(Placed(body, d, X_BS))
    return out


def urdf_decorations(model: Any, which: str = "visuals") -> list[Placed]:
    """A `UrdfModel`'s geometry as decorations, as the file describes it.

    Parameters
    ----------
    model : UrdfModel
    which : {"visuals", "collisions"}

    Returns
    -------
    list of Placed
        Shapes with the file's ``rgba`` (colour and opacity) where it gives one; meshes without it
        keep their own materials. Meshes whose file was not found are left out, with a warning.

    Warns
    -----
    UserWarning
        When mesh files were not found.
    """
    if which not in ("visuals", "collisions"):
        raise ValueError(f"urdf_decorations: which must be 'visuals' or 'collisions', got {which!r}")
    out, missing = [], []
    for g in getattr(model, which):
        color, opacity = (None, 1.0) if g.rgba is None else (tuple(g.rgba[:3]), float(g.rgba[3]))
        kw: dict[str, Any] = {"color": color, "opacity": opacity}
        if g.kind == "box":
            d = Decoration.Box(np.asarray(g.size, dtype=float) / 2, **kw)
        elif g.kind == "cylinder":
            d = Decoration.Cylinder(g.radius, g.length, **kw)
        elif g.kind == "sphere":
            d = Decoration.Sphere(g.radius, **kw)
        elif g.kind == "mesh":
            if g.path is None:
                missing.append(g.filename)
                continue
            d = Decoration.Mesh(g.path, scale=g.scale, **kw)
        else:
            continue
        out.append(Placed(g.body, d, g.X_BG))
    if missing:
        warnings.warn(f"urdf_decorations: {len(missing)} mesh file(s) not found, not drawn: {', '.join(missing[:5])}",
                      stacklevel=2)
    return out


def collect(source: Any, *, contact: bool = True, urdf: str | None = "visuals",
            extra: Iterable[Placed] = ()) -> tuple[Any, list[Placed]]:
    """What a viewer draws of ``source``: registered decorations, contact surfaces, URDF geometry.

    Parameters
    ----------
    source : MultibodySystem or UrdfModel
    contact : bool
        Include the surfaces of contact force elements.
    urdf : {"visuals", "collisions"} or None
        For a UrdfModel, which of its geometry to include.
    extra : iterable of Placed
        More decorations.

    Returns
    -------
    system : MultibodySystem
    placed : list of Placed
    """
    system = source.system if hasattr(source, "visuals") and hasattr(source, "system") else source
    placed: list[Placed] = []
    for body in _bodies(system):
        placed += get_decorations(body)
    if contact:
        placed += contact_decorations(system)
    if urdf is not None and system is not source:
        placed += urdf_decorations(source, urdf)
    placed += list(extra)
    return system, placed

