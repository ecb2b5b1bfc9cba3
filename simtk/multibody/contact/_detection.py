"""Collision detection between contact surfaces: `detect` and its result `Contacts`.

The work is done in the compiled core (``core/contact.pxi``); this module names the result.

Definitions
-----------
For surfaces 1 and 2 the penetration depth is the least distance by which surface 2 must be
translated to separate the two, ``depth = min over unit n of h_1(n) + h_2(-n)`` with ``h`` a
surface's support function; the minimizing ``n`` is the contact normal, pointing from surface 1
into surface 2 (the direction surface 2 is pushed). The deepest points are ``a`` on surface 1
(farthest along ``n``) and ``b`` on surface 2 (farthest along ``-n``), ``a - b = depth n``; the
contact point is their midpoint. When a surface's deepest points form an edge or a face (a
capsule's side, a brick's edge or face, a half-space), the point is taken on the lower-dimensional
of the two features and carried across the gap: a sphere on a brick touches below the sphere; a
capsule or a brick edge on a face touches at the middle of the part of it over the face; two
crossing segments (capsule sides, brick edges) at their closest points; two brick faces at the
mean of the vertices of their overlap. A brick's face is a face when its normal is within 1e-9 of
``n`` (direction cosine); the depth always uses the exact support value.

Radii of curvature ``R1``, ``R2``: a sphere's radius; a capsule's radius ``r``, on its caps and on
its side alike (a capsule is the union of the spheres of radius ``r`` centred on its axis, and a
contact is that of the sphere centred at the nearest axis point); an ellipsoid's ``abc / h(n)^2``
(the geometric mean of its principal radii there, ``h`` its support value along the normal in its
own frame); ``inf`` for a half-space and for a brick (faces are flat; edges and vertices are
reported as flat too rather than with radius 0, which would make a Hertz stiffness vanish); a
cylinder's side ``r``, its caps ``inf``, its rim ``inf`` while its axis is nearer the normal than
its cap's plane, else ``r``; a convex hull ``inf`` (its vertices, edges and faces alike). A hull's
face (three or more vertices within 1e-9 x size of the support value) is described to the
face-on-face rule by the bounding rectangle of its vertices in its plane, and a cylinder's cap by
its circumscribed square: these place a face-on-face contact's point, not its depth.
``R1 = R2 = inf`` marks a flat-on-flat contact (a brick's vertex or edge on a half-space or a
brick); ``Force.HuntCrossley`` gives those Simbody's vertex law instead of Hertz's.

Contact manifolds
-----------------
A pair that touches flat on a spread region would be badly served by one point (a box resting on
the ground would rock about it), so these pairs report several contacts, one per corner of the
touching region, all with the pair's normal ``n``:

- Brick - HalfSpace, as Simbody's CompliantContactSubsystem does (ContactTracker::HalfSpaceBrick
  finds the lowest vertex; ContactForceGenerator::BrickHalfSpacePenalty takes the brick face most
  antiparallel to the half-space normal and applies a force at each of its vertices that
  penetrates): one contact per vertex of that face below the plane, depth its distance below.
- Brick - Brick when ``n`` is a face normal of one of them (within 1e-9, direction cosine; the
  better aligned face): that face is the reference, the other brick's face most antiparallel to it
  the incident face, clipped to the reference face's side planes; one contact per corner of the
  clipped polygon (up to 8) below the reference face's plane. Simbody has no brick-brick contact.
- Capsule - HalfSpace: the spheres of radius ``r`` at the two axis ends (the end caps), each one a
  contact if it penetrates, ``R = r``; a lying capsule rests on both.
- Capsule - Brick when ``n`` is a face normal of the brick: the axis segment clipped to the face,
  with the spheres at its two ends, ``R = r``.
- Cylinder - HalfSpace: four points of each cap's rim, 90 degrees apart from the deepest one, each
  a contact if below the plane (a standing cylinder rests on four points of its bottom rim, a lying
  one on its two ends); ``R = inf`` while the axis is nearer the normal than the plane, else ``r``.
- ConvexHull - HalfSpace: the deepest vertex and the sunk vertex farthest along each of 8
  directions of the plane 45 degrees apart (at most 8 contacts), ``R = inf``; a hull of a box's
  vertices gives the Brick's contacts.

Each contact's point is midway between its incident point (vertex, or the sphere's pole) and the
reference plane. The deepest contact of a manifold is the pair's exact deepest contact; when
clipping removes it (the deepest vertex hangs beyond the reference face) the pair reports its one
exact contact instead. Edge-on-edge brick pairs, crossing or parallel capsules and every pair
with a sphere or an ellipsoid report one contact.

Methods per pair (the first of the pair by shape code; all are symmetric)
-------------------------------------------------------------------------
===========================  ==========================================================  ==============
pair                         method                                                      accuracy
===========================  ==========================================================  ==============
HalfSpace - any              the plane's normal; the other shape's support point          round-off
Sphere/Capsule - Sphere/Cap  closest points of the axis segments (points for spheres)    round-off
Sphere/Capsule - Brick       segment-box distance (exact piecewise-quadratic minimum);   round-off
                             if the axis meets the box, separating axes: the box's face
                             normals and (capsule axis x box axes)
Brick - Brick                separating axes: 3 + 3 face normals, 9 edge cross products  round-off
any - Ellipsoid, Cylinder,  EPA (expanding polytope) on the Minkowski difference's       depth within
ConvexHull                   support function, from an octahedron around its centre      EPA_REL_TOL x
                             (a tetrahedron of support points with a hull)               size
===========================  ==========================================================  ==============

EPA's stopping rule bounds the depth from both sides (the polytope lies inside the Minkowski
difference, so its nearest face is a lower bound; the support value along any direction is an
upper bound); it stops when they are within ``CONTACT_EPA_REL_TOL`` (1e-9) times the sum of the
two shapes' largest parameters, and reports the direction with the least upper bound. The
normal's error is then of order ``sqrt(tol / curvature)`` for curved surfaces.
HalfSpace - HalfSpace is never a contact.

Broad phase: sort-and-sweep of world-aligned bounding boxes along the axis over which their
centres spread most, in strips about two mean box sizes wide across the second axis (a single
sweep costs ``O(n^1.5)`` when the surfaces spread over a plane, as a pile on the ground does);
``O(n log n)`` plus the overlapping pairs for boxes of similar sizes. Each half-space is tested
against every other surface directly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from simtk._core_contact import CONTACT_EPA_REL_TOL, contact_detect, contact_detect_unchecked, contact_min_separation

__all__ = ["Contacts", "detect", "min_separation", "CONTACT_EPA_REL_TOL"]


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class Contacts:
    """The contacts found by `detect`, sorted by ``(surf1, surf2)``; read-only arrays.

    A pair can have several contacts (a flat pair's manifold), all with the same normal.

    Attributes
    ----------
    surf1, surf2 : ndarray of int64, shape (nc,)
        Surface indices of each contact, ``surf1 < surf2``.
    p_G : ndarray, shape (nc, 3)
        Contact point in Ground, midway between the two surfaces' deepest points.
    n_G : ndarray, shape (nc, 3)
        Unit normal in Ground from surface 1 into surface 2.
    depth : ndarray, shape (nc,)
        Penetration depth, > 0.
    R1, R2 : ndarray, shape (nc,)
        Radius of curvature of surface 1 and surface 2 at the contact (``inf`` where flat).
    """

    surf1: np.ndarray
    surf2: np.ndarray
    p_G: np.ndarray
    n_G: np.ndarray
    depth: np.ndarray
    R1: np.ndarray
    R2: np.ndarray

    def __len__(self) -> int:
        return int(self.depth.shape[0])

    @property
    def count(self) -> int:
        """The number of contacts nc."""
        return len(self)

    def __repr__(self) -> str:
        pairs = ", ".join(f"({int(a)}, {int(b)})" for a, b in zip(self.surf1[:6], self.surf2[:6]))
        more = ", ..." if len(self) > 6 else ""
        return f"Contacts({len(self)} contacts: {pairs}{more})"


def detect(codes: ArrayLike, params: ArrayLike, R_GS: ArrayLike, p_GS: ArrayLike,
           clique: ArrayLike, vertices: ArrayLike | None = None, exclude: ArrayLike | None = None) -> Contacts:
    """Find every pair of surfaces that penetrate, with its exact contact geometry.

    Parameters
    ----------
    codes : array_like of int, shape (ns,)
        Each surface's ``ContactGeometry.shape_code``.
    params : array_like, shape (ns, 3)
        Each surface's ``ContactGeometry.params`` (used entries > 0, unused entries 0).
    R_GS : array_like, shape (ns, 3, 3)
        Orientation of each surface's frame in Ground (rotation matrices).
    p_GS : array_like, shape (ns, 3)
        Origin of each surface's frame in Ground.
    clique : array_like of int, shape (ns,)
        Surfaces with the same clique number ``>= 0`` never touch each other; ``-1`` is no clique.
    vertices : array_like, shape (m, 3), optional
        The vertices of the ConvexHull surfaces, in their frames; a hull's ``params`` are
        ``(size, vertex count, first row here)`` (needed when there is a hull).
    exclude : array_like of int, shape (k, 2), optional
        Pairs of surfaces that never touch each other (in either order), for filters that cliques
        cannot express; checked after the broad phase.

    Returns
    -------
    Contacts
        The contacts with depth > 0, sorted by ``(surf1, surf2)``: one per pair, or a flat pair's
        manifold of several (see the module's notes), consecutive and in the kernel's order.
        Touching or separated pairs, and pairs of half-spaces, are not reported.

    Raises
    ------
    ValueError
        A wrong shape, an unknown shape code, a non-positive (or a nonzero unused) parameter, a
        non-finite number or a matrix that is not a rotation.
    TypeError
        Codes or cliques that are not integers.
    """
    return _sorted(contact_detect(codes, params, R_GS, p_GS, clique, vertices, exclude))


def detect_unchecked(codes: np.ndarray, params: np.ndarray, R_GS: np.ndarray, p_GS: np.ndarray,
                     clique: np.ndarray, vertices: np.ndarray | None = None,
                     exclude: np.ndarray | None = None) -> Contacts:
    """`detect` without validating its arguments, for a caller that keeps them valid by construction:
    int32 ``codes`` and ``clique`` and ``params`` checked once (they come from `ContactGeometry`
    objects), and each step's ``R_GS``, ``p_GS`` C-contiguous float64 products of rotations and
    finite poses. Skipping the checks matters in the time loop, where they cost several times the
    detection itself."""
    return _sorted(contact_detect_unchecked(codes, params, R_GS, p_GS, clique, vertices, exclude))


def _sorted(found: tuple) -> Contacts:
    surf, p, n, depth, r1, r2 = found
    order = np.lexsort((surf[:, 1], surf[:, 0]))
    return Contacts(surf1=_ro(surf[order, 0]), surf2=_ro(surf[order, 1]), p_G=_ro(p[order]), n_G=_ro(n[order]),
                    depth=_ro(depth[order]), R1=_ro(r1[order]), R2=_ro(r2[order]))


def min_separation(codes: ArrayLike, params: ArrayLike, R_GS: ArrayLike, p_GS: ArrayLike, clique: ArrayLike,
                   body: ArrayLike, margin: float, vertices: ArrayLike | None = None,
                   exclude: ArrayLike | None = None) -> float:
    """The least signed separation among the pairs `detect` considers, for an impact event witness.

    A pair's signed separation is minus its depth (as `detect` reports it) when the surfaces overlap
    and their distance when apart, so it is continuous through first contact and crosses zero there.
    Apart, it is exact for pairs with a half-space, a sphere or a capsule and for a sphere or a
    capsule against a brick; brick on brick gives the largest gap along the 15 separating axes (a
    lower bound of the distance, equal to it when the nearest features are a face and a vertex or two
    crossing edges, and zero exactly at first contact); a pair with an ellipsoid (other than a
    half-space) that EPA finds apart gets its distance by GJK on the support functions, an upper
    bound within ``CONTACT_EPA_REL_TOL`` times the pair's size of it.

    Parameters
    ----------
    codes, params, R_GS, p_GS, clique, vertices, exclude
        The surfaces, as for `detect`.
    body : array_like of int, shape (ns,)
        The body of each surface: pairs on one body are left out (they never separate).
    margin : float
        The broad phase looks only for pairs within ``margin`` of touching (> 0).

    Returns
    -------
    float
        The least signed separation, or ``margin`` if no pair is within ``margin``.
    """
    return contact_min_separation(codes, params, R_GS, p_GS, clique, body, margin, vertices, exclude)
