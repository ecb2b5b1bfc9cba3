"""Wrap objects of geometry paths: OpenSim's WrapCylinder, WrapSphere, WrapEllipsoid and WrapTorus, and
PathWrap.

A wrap object is a surface fixed in a body (its frame W placed by ``X_BW`` in the body's frame B);
a `PathWrap` lets a `GeometryPath` wrap over it between two of its points. The path is made as
OpenSim makes it (``GeometryPath::applyWrapObjects``, ``WrapCylinder::wrapLine``,
``WrapSphere::wrapLine``, ``WrapEllipsoid::wrapLine``, ``WrapTorus::wrapLine``): the segment of the
range that crosses the object (or, with a quadrant, the one lengthening the path least) is replaced
by a straight segment to a tangent point r1, the length on the surface to r2 (a helix on a cylinder,
an arc on a sphere) and a straight segment from r2 (on an ellipsoid, OpenSim's polyline of about
1 mm pieces in the wrapping plane its method chooses; on a torus, the helix on OpenSim's stand-in
cylinder, see `WrapTorus`). The tension acts at r1 and r2 on the wrap object's body. The computation
is compiled (``core/path_wrap.pxi`` and the files beside it), in the kernel's passes over the path.

A wrap object's body need not carry a point of the path (OpenSim's models wrap the knee's muscles
over cylinders of the femur while their points are on the pelvis and the tibia); it must be a body
of the path's System.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _core
from ...spatial import Transform
from ..tree.mobilized_body import MobilizedBody

__all__ = ["WrapObject", "WrapCylinder", "WrapSphere", "WrapEllipsoid", "WrapTorus", "PathWrap", "QUADRANTS"]

#: OpenSim's quadrant names -> the code the kernel reads: 0 all, +-(axis + 1) one side of an axis
QUADRANTS = {"all": 0, "x": 1, "+x": 1, "-x": -1, "y": 2, "+y": 2, "-y": -2, "z": 3, "+z": 3, "-z": -3}


def _positive(x: Any, what: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected a number, got {x!r}") from None
    if not (v > 0.0 and np.isfinite(v)):
        raise ValueError(f"{what}: must be a positive finite number, got {x!r}")
    return v


class WrapObject:
    """Shared parts of the wrap objects: ``body``, ``X_BW``, ``quadrant`` and ``name``."""

    _type = ""

    def __init__(self, body: MobilizedBody, X_BW: Any = None, quadrant: str = "all", name: str = "wrap"):
        self.name = str(name)
        where = f"{type(self).__name__} {self.name!r}"
        if not isinstance(body, MobilizedBody):
            raise TypeError(f"{where}: body: expected a MobilizedBody, got {type(body).__name__}")
        try:
            X = Transform() if X_BW is None else (X_BW if isinstance(X_BW, Transform) else Transform(*X_BW))
        except (TypeError, ValueError) as why:
            raise type(why)(f"{where}: X_BW: {why}") from None
        code = QUADRANTS.get(str(quadrant).lower()) if isinstance(quadrant, str) else None
        if code is None:
            raise ValueError(f"{where}: quadrant {quadrant!r} is not one of {sorted(set(QUADRANTS))}")
        self.body = body
        self.X_BW = X
        self.quadrant = str(quadrant).lower()
        self._quadrant = code

    def _dims(self) -> tuple[float, float, float]:
        raise NotImplementedError

    def _arc(self, r1: np.ndarray, r2: np.ndarray, wlen: float, max_angle: float, P1: Any = None, P2: Any = None,
             method: int = 0) -> np.ndarray:
        """Points strictly between tangent points r1 and r2 (in W) along the surface, for drawing (P1 and
        P2, the path's points before and after the wrap in W, and the PathWrap's method code, for a
        surface whose wrap depends on them); none (a straight chord) for a surface that does not say
        how it is wrapped."""
        return np.zeros((0, 3))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} on {self.body!r}>"


class WrapCylinder(WrapObject):
    """A cylinder of ``radius`` along W's z axis, centred at W's origin, ``length`` long (OpenSim's
    WrapCylinder: the path wraps unless both tangent points fall beyond the ends).

    Parameters
    ----------
    body : MobilizedBody
    X_BW : Transform, optional
        The cylinder's frame in the body's (identity by default).
    radius : float
        > 0.
    length : float
        >= 0.
    quadrant : str
        "all", or "+x", "-x", "+y", "-y", "+z", "-z" (also "x", "y", "z"): wrap only on that side.
    name : str
    """

    _type = "wrap_cylinder"

    def __init__(self, body: MobilizedBody, X_BW: Any = None, radius: float = 1.0, length: float = 1.0,
                 quadrant: str = "all", name: str = "cylinder"):
        super().__init__(body, X_BW, quadrant, name)
        self.radius = _positive(radius, f"WrapCylinder {self.name!r}: radius")
        try:
            self.length = float(length)
        except (TypeError, ValueError):
            raise TypeError(f"WrapCylinder {self.name!r}: length: expected a number, got {length!r}") from None
        if not (self.length >= 0.0 and np.isfinite(self.length)):
            raise ValueError(f"WrapCylinder {self.name!r}: length must be finite and >= 0, got {length!r}")

    def _dims(self) -> tuple[float, float, float]:
        return (self.radius, self.length, 0.0)

    def _arc(self, r1: np.ndarray, r2: np.ndarray, wlen: float, max_angle: float, P1: Any = None,
             P2: Any = None, method: int = 0) -> np.ndarray:
        # The helix about z from r1 to r2: its turn is the short one or the long way round, whichever
        # has the length the kernel found (OpenSim's _make_spiral_path may go the far way).
        short = float(np.arctan2(r1[0] * r2[1] - r1[1] * r2[0], r1[0] * r2[0] + r1[1] * r2[1]))
        axial = float(r2[2] - r1[2])
        turn = np.sqrt(max(wlen * wlen - axial * axial, 0.0)) / self.radius
        other = short - np.copysign(2.0 * np.pi, short if short != 0.0 else 1.0)
        theta = short if abs(abs(short) - turn) <= abs(abs(other) - turn) else other
        n = int(np.ceil(abs(theta) / max_angle))
        s = np.arange(1, n) / n if n > 1 else np.zeros(0)
        a0 = np.arctan2(r1[1], r1[0])
        rho = np.hypot(r1[0], r1[1]) + s * (np.hypot(r2[0], r2[1]) - np.hypot(r1[0], r1[1]))
        a = a0 + s * theta
        return np.stack([rho * np.cos(a), rho * np.sin(a), r1[2] + s * axial], -1)


class WrapSphere(WrapObject):
    """A sphere of ``radius`` centred at W's origin (OpenSim's WrapSphere).

    Parameters
    ----------
    body : MobilizedBody
    X_BW : Transform, optional
    radius : float
        > 0.
    quadrant : str
        As WrapCylinder's.
    name : str
    """

    _type = "wrap_sphere"

    def __init__(self, body: MobilizedBody, X_BW: Any = None, radius: float = 1.0, quadrant: str = "all",
                 name: str = "sphere"):
        super().__init__(body, X_BW, quadrant, name)
        self.radius = _positive(radius, f"WrapSphere {self.name!r}: radius")

    def _dims(self) -> tuple[float, float, float]:
        return (self.radius, 0.0, 0.0)

    def _arc(self, r1: np.ndarray, r2: np.ndarray, wlen: float, max_angle: float, P1: Any = None,
             P2: Any = None, method: int = 0) -> np.ndarray:
        # The great circle through r1 and r2, the short arc or the long one, whichever has the
        # kernel's length.
        c = np.cross(r1, r2)
        sc = float(np.linalg.norm(c))
        short = float(np.arctan2(sc, float(r1 @ r2)))
        if sc > 0.0:
            axis = c / sc
        else:  # r1 and r2 (anti)parallel: any great circle through them
            e = np.eye(3)[int(np.argmin(np.abs(r1)))]
            axis = np.cross(r1, e) / np.linalg.norm(np.cross(r1, e))
        theta = short
        if abs(2.0 * np.pi - short - wlen / self.radius) < abs(short - wlen / self.radius):
            theta = short - 2.0 * np.pi  # the other way round the same circle
        n = int(np.ceil(abs(theta) / max_angle))
        s = np.arange(1, n) / n if n > 1 else np.zeros(0)
        u = r1 / np.linalg.norm(r1)
        v = np.cross(axis, u)
        rho = np.linalg.norm(r1) + s * (np.linalg.norm(r2) - np.linalg.norm(r1))
        a = (s * theta)[:, None]
        return rho[:, None] * (np.cos(a) * u + np.sin(a) * v)


class WrapEllipsoid(WrapObject):
    """An ellipsoid of semi-axes ``dimensions`` along W's x, y, z axes, centred at W's origin
    (OpenSim's WrapEllipsoid; the `PathWrap`'s ``method`` chooses how its wrapping plane is found).

    Parameters
    ----------
    body : MobilizedBody
    X_BW : Transform, optional
    dimensions : sequence of 3 floats
        The semi-axes, each > 0.
    quadrant : str
        As WrapCylinder's.
    name : str
    """

    _type = "wrap_ellipsoid"

    def __init__(self, body: MobilizedBody, X_BW: Any = None, dimensions: Any = (1.0, 1.0, 1.0),
                 quadrant: str = "all", name: str = "ellipsoid"):
        super().__init__(body, X_BW, quadrant, name)
        try:
            dims = list(dimensions)
        except TypeError:
            raise TypeError(f"WrapEllipsoid {self.name!r}: dimensions: expected 3 numbers, got {dimensions!r}") from None
        if len(dims) != 3:
            raise ValueError(f"WrapEllipsoid {self.name!r}: dimensions: expected 3 numbers, got {dimensions!r}")
        self.dimensions = tuple(_positive(d, f"WrapEllipsoid {self.name!r}: dimensions[{k}]")
                                for k, d in enumerate(dims))

    def _dims(self) -> tuple[float, float, float]:
        return self.dimensions

    def _arc(self, r1: np.ndarray, r2: np.ndarray, wlen: float, max_angle: float, P1: Any = None, P2: Any = None,
             method: int = 0) -> np.ndarray:
        # The kernel's own polyline over the surface (OpenSim's CalcDistanceOnEllipsoid: up to 498
        # points in the wrapping plane), wrapped again from the path's neighbouring points; thinned to
        # about max_angle of turn between kept points. A chord when the neighbours do not reproduce
        # the path's tangent points (a wrap computed from another wrap's earlier tangent points).
        if P1 is None or P2 is None:
            return np.zeros((0, 3))
        code, q1, q2, _, pts = _core._k.ellipsoid_wrap_points(P1, P2, self.dimensions, self._quadrant, method)
        scale = max(self.dimensions)
        if code < 2 or len(pts) == 0 or max(np.abs(q1 - r1).max(), np.abs(q2 - r2).max()) > 1e-9 * scale:
            return np.zeros((0, 3))
        line = np.concatenate([r1[None], pts, r2[None]])
        d = np.diff(line, axis=0)  # len(pts) + 1 pieces; interior point j turns from piece j to j + 1
        n = np.linalg.norm(d, axis=1)
        both = (n[:-1] > 0.0) & (n[1:] > 0.0)
        cosines = np.einsum("ij,ij->i", d[:-1], d[1:]) / np.where(both, n[:-1] * n[1:], 1.0)
        turned = np.cumsum(np.arccos(np.clip(np.where(both, cosines, 1.0), -1.0, 1.0)))
        steps = np.floor(turned / max_angle)
        return pts[np.diff(np.concatenate([[0.0], steps])) > 0]


class WrapTorus(WrapObject):
    """A torus about W's z axis in W's xy plane: its tube, of radius ``inner_radius``, goes round the
    circle of radius ``outer_radius`` centred at W's origin (OpenSim's WrapTorus and its property names).

    As OpenSim does, the path wraps only through the hole: the point of the path's line nearest the
    circle is found (by OpenSim's Levenberg-Marquardt iteration, which stops at its tolerance of 1e-4,
    from each end of the segment; the nearer result is taken, or the one on the ``quadrant``'s side),
    and the tube is replaced there by a long cylinder of ``inner_radius``, tangent to the circle, over
    whose side facing the hole the path wraps as on a `WrapCylinder`.

    Parameters
    ----------
    body : MobilizedBody
    X_BW : Transform, optional
    inner_radius : float
        The tube's radius, > 0.
    outer_radius : float
        The radius of the tube's centre circle, > ``inner_radius``.
    quadrant : str
        As WrapCylinder's: which side of W the nearest point on the circle must be on.
    name : str

    Raises
    ------
    ValueError
        A radius not positive and finite, or ``inner_radius >= outer_radius`` (naming the torus).
    """

    _type = "wrap_torus"

    def __init__(self, body: MobilizedBody, X_BW: Any = None, inner_radius: float = 0.01,
                 outer_radius: float = 0.05, quadrant: str = "all", name: str = "torus"):
        super().__init__(body, X_BW, quadrant, name)
        self.inner_radius = _positive(inner_radius, f"WrapTorus {self.name!r}: inner_radius")
        self.outer_radius = _positive(outer_radius, f"WrapTorus {self.name!r}: outer_radius")
        if not self.inner_radius < self.outer_radius:
            raise ValueError(f"WrapTorus {self.name!r}: inner_radius {self.inner_radius} must be less than "
                             f"outer_radius {self.outer_radius}")

    def _dims(self) -> tuple[float, float, float]:
        return (self.inner_radius, self.outer_radius, 0.0)


@dataclass(frozen=True)
class PathWrap:
    """The path wraps over ``wrap`` between its points ``range`` = (a, b) (0-based, inclusive; None
    for the whole path). OpenSim's PathWrap ``range`` is 1-based with -1 for "first"/"last":
    ``load_osim`` converts it. ``method`` is OpenSim's ("hybrid", "midpoint" or "axial": how an
    ellipsoid's wrapping plane is found; kept, unused, for the others)."""

    wrap: WrapObject
    range: Any = None
    method: str = "hybrid"

    def _resolved(self, npoints: int, where: str) -> tuple[int, int]:
        if not isinstance(self.wrap, WrapObject):
            raise TypeError(f"{where}: expected a WrapCylinder, WrapSphere, WrapEllipsoid or WrapTorus, got {type(self.wrap).__name__}")
        if self.method not in ("hybrid", "midpoint", "axial"):
            raise ValueError(f"{where}: method {self.method!r} is not 'hybrid', 'midpoint' or 'axial'")
        if self.range is None:
            return 0, npoints - 1
        try:
            a, b = (int(x) for x in self.range)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: range: expected two point indices, got {self.range!r}") from None
        if not 0 <= a <= b < npoints:
            raise ValueError(f"{where}: range {self.range!r} is not within the path's {npoints} points "
                             "(0-based, a <= b)")
        return a, b
