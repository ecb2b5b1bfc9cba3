"""What both viewers share: decorations tessellated into triangle and line parts, and body poses.

A `Scene` is built once per viewer: the distinct bodies that carry decorations (its "slots"), one
`Item` per drawable part (a slot, the part's fixed pose in the body, its colour), and the parts'
geometry, each distinct decoration tessellated once. A frame is then only the slots' poses
(quaternion and position, 7 numbers each), which is all the per-frame work either viewer does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..common.stage import Stage
from ._deformables import DeformableDrawing, deformable_drawings
from ._paths import PathDrawing, path_drawings
from .decorations import DEFAULT_COLOR, Decoration, Placed

__all__ = ["Part", "Item", "Scene", "build_scene", "tessellate", "quaternions", "poses_of", "up_axis"]


@dataclass
class Part:
    """A piece of geometry in its decoration's frame: ``mode`` "triangles" or "lines", float32 positions
    (n, 3), uint32 indices (3 per triangle, 2 per line), and its own colour when the decoration gives none."""

    mode: str
    positions: np.ndarray
    indices: np.ndarray
    rgba: tuple[float, float, float, float] | None = None


@dataclass
class Item:
    """One part placed on a slot's body: ``geom`` indexes `Scene.geoms`; ``q`` (w, x, y, z) and ``p`` are X_BD."""

    slot: int
    geom: int
    q: np.ndarray
    p: np.ndarray
    rgba: tuple[float, float, float, float]
    mode: str
    bounded: bool = True


@dataclass
class Scene:
    """The bodies drawn (``bodies``, one per slot), the items on them, the distinct geometry, and bounds data."""

    system: Any
    bodies: list
    items: list[Item] = field(default_factory=list)
    geoms: list[Part] = field(default_factory=list)
    radius: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per slot: how far its items reach from its origin
    up: str = "+y"
    paths: list[PathDrawing] = field(default_factory=list)  # drawn per frame, in Ground
    deformables: list[DeformableDrawing] = field(default_factory=list)  # their particles per frame, in Ground

    def poses(self, state: Any) -> np.ndarray:
        """The slots' poses in ``state`` as (n_slots, 7): w, x, y, z, px, py, pz (realizes Position if needed)."""
        return poses_of(self.bodies, [state])[0]


# ------------------------------------------------------------------------------- tessellation
def _sphere_grid(nlat: int, nlon: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit sphere rings (pole to pole, nlat+1 rings of nlon+1 points, the seam doubled) and their triangles."""
    th = np.linspace(0, np.pi, nlat + 1)[:, None]
    ph = np.linspace(0, 2 * np.pi, nlon + 1)[None, :]
    pts = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th) * np.ones_like(ph)], -1)
    return pts.reshape(-1, 3), _grid_triangles(nlat, nlon)


def _grid_triangles(nrows: int, ncols: int) -> np.ndarray:
    """Two triangles per cell of a (nrows+1) x (ncols+1) vertex grid, counter-clockwise seen from outside."""
    i, j = np.meshgrid(np.arange(nrows), np.arange(ncols), indexing="ij")
    a = (i * (ncols + 1) + j).ravel()
    b, c, d = a + ncols + 1, a + 1, a + ncols + 2
    return np.stack([a, b, c, c, b, d], -1).reshape(-1, 3)


def _box(h: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    # 4 vertices per face so that each face is shaded flat (normals are computed per vertex).
    pts: list[np.ndarray] = []
    tris: list[list[int]] = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u, v = (axis + 1) % 3, (axis + 2) % 3
            quad = []
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                x = np.zeros(3)
                x[axis], x[u], x[v] = sign * h[axis], a * h[u], b * h[v]
                quad.append(x)
            k = len(pts)
            pts += quad
            tris += [[k, k + 1, k + 2], [k, k + 2, k + 3]] if sign > 0 else [[k, k + 2, k + 1], [k, k + 3, k + 2]]
    return np.array(pts), np.array(tris)


def _cylinder(r: float, half: float, n: int = 32) -> tuple[np.ndarray, np.ndarray]:
    ph = np.linspace(0, 2 * np.pi, n + 1)
    ring = np.stack([r * np.cos(ph), r * np.sin(ph)], -1)
    side = np.concatenate([np.c_[ring, np.full(n + 1, -half)], np.c_[ring, np.full(n + 1, half)]])
    k = np.arange(n)
    side_t = np.concatenate([np.stack([k, k + 1, k + n + 1], -1), np.stack([k + 1, k + n + 2, k + n + 1], -1)])
    pts, tris = [side], [side_t]
    base = len(side)
    for z, flip in ((-half, True), (half, False)):
        cap = np.concatenate([[[0.0, 0.0, z]], np.c_[ring[:-1], np.full(n, z)]])
        t = np.stack([np.zeros(n, int), 1 + k, 1 + (k + 1) % n], -1) + base
        pts.append(cap)
        tris.append(t[:, ::-1] if flip else t)
        base += len(cap)
    return np.concatenate(pts), np.concatenate(tris)


def _capsule(r: float, half: float, nlat: int = 16, nlon: int = 32) -> tuple[np.ndarray, np.ndarray]:
    # A sphere split at its equator, the two halves pushed apart: the doubled equator ring is the cylinder.
    th = np.concatenate([np.linspace(0, np.pi / 2, nlat // 2 + 1), np.linspace(np.pi / 2, np.pi, nlat // 2 + 1)])
    dz = np.concatenate([np.full(nlat // 2 + 1, half), np.full(nlat // 2 + 1, -half)])
    ph = np.linspace(0, 2 * np.pi, nlon + 1)[None, :]
    t = th[:, None]
    pts = np.stack([r * np.sin(t) * np.cos(ph), r * np.sin(t) * np.sin(ph), (r * np.cos(t) + dz[:, None]) * np.ones_like(ph)], -1)
    return pts.reshape(-1, 3), _grid_triangles(len(th) - 1, nlon)


def _mesh_parts(d: Decoration) -> list[Part]:
    try:
        import trimesh
    except ImportError as e:  # the [viz] extra
        raise ImportError("drawing mesh files needs trimesh: pip install 'simtk[viz]'") from e
    loaded = trimesh.load(str(d.path))
    meshes = loaded.dump() if isinstance(loaded, trimesh.Scene) else [loaded]
    parts = []
    for m in meshes:
        if not isinstance(m, trimesh.Trimesh) or len(m.faces) == 0:
            continue
        rgba = None
        visual = m.visual
        main = getattr(getattr(visual, "material", None), "main_color", None)
        if main is None and getattr(visual, "kind", None) is not None:
            main = getattr(visual, "main_color", None)
        if main is not None:
            c = np.asarray(main, dtype=float) / 255.0
            rgba = (float(c[0]), float(c[1]), float(c[2]), float(c[3]))
        pos = np.asarray(m.vertices, dtype=float) * np.asarray(d.scale)
        parts.append(Part("triangles", pos.astype(np.float32), np.asarray(m.faces, dtype=np.uint32).ravel(), rgba))
    return parts


def tessellate(d: Decoration) -> list[Part]:
    """The parts of decoration ``d`` in its frame D.

    Parameters
    ----------
    d : Decoration

    Returns
    -------
    list of Part
        Triangles for solids and meshes (several parts for a mesh file with several materials),
        lines for frames (one part per axis, coloured red, green, blue) and lines.
    """
    k, p = d.kind, d.params
    if k == "mesh":
        return _mesh_parts(d)
    if k == "frame":
        L = p[0]
        axes = []
        for i, c in enumerate(((0.9, 0.1, 0.1, 1.0), (0.1, 0.75, 0.1, 1.0), (0.15, 0.25, 0.95, 1.0))):
            end = np.zeros(3)
            end[i] = L
            axes.append(Part("lines", np.array([np.zeros(3), end], np.float32), np.array([0, 1], np.uint32), c))
        return axes
    if k == "line":
        return [Part("lines", np.array([p[:3], p[3:]], np.float32), np.array([0, 1], np.uint32))]
    if k in ("sphere", "ellipsoid"):
        pts, tris = _sphere_grid(18, 32)
        pts = pts * (np.array(p) if k == "ellipsoid" else p[0])
    elif k == "box":
        pts, tris = _box(p)
    elif k == "cylinder":
        pts, tris = _cylinder(p[0], p[1] / 2)
    elif k == "capsule":
        pts, tris = _capsule(p[0], p[1])
    else:  # halfspace: a thin slab just inside x > 0, its face on the plane x = 0
        t = p[0] * 0.004
        pts, tris = _box((t, p[0] / 2, p[0] / 2))
        pts = pts + np.array([t, 0, 0])
    return [Part("triangles", np.asarray(pts, np.float32), np.asarray(tris, np.uint32).ravel())]


# ------------------------------------------------------------------------------- poses
def quaternions(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (w, x, y, z) of rotation matrices R (..., 3, 3), vectorized (Shepperd's method).

    Parameters
    ----------
    R : ndarray, shape (..., 3, 3)

    Returns
    -------
    ndarray, shape (..., 4)
    """
    R = np.asarray(R, dtype=float)
    shape = R.shape[:-2]
    R = R.reshape(-1, 3, 3)
    tr = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    # For each matrix take the largest of 4 w^2, 4 x^2, 4 y^2, 4 z^2 to divide by: no cancellation.
    cand = np.stack([tr, R[:, 0, 0], R[:, 1, 1], R[:, 2, 2]], -1)
    which = np.argmax(cand, -1)
    q = np.empty((len(R), 4))
    for k in range(4):
        m = which == k
        if not m.any():
            continue
        r = R[m]
        if k == 0:
            s = 2 * np.sqrt(1 + tr[m])
            q[m] = np.stack([s / 4, (r[:, 2, 1] - r[:, 1, 2]) / s, (r[:, 0, 2] - r[:, 2, 0]) / s,
                             (r[:, 1, 0] - r[:, 0, 1]) / s], -1)
        else:
            i, j, l = k - 1, k % 3, (k + 1) % 3
            s = 2 * np.sqrt(np.maximum(1 + r[:, i, i] - r[:, j, j] - r[:, l, l], 1e-300))
            qq = np.empty((len(r), 4))
            qq[:, 0] = (r[:, l, j] - r[:, j, l]) / s
            qq[:, 1 + i] = s / 4
            qq[:, 1 + j] = (r[:, j, i] + r[:, i, j]) / s
            qq[:, 1 + l] = (r[:, l, i] + r[:, i, l]) / s
            q[m] = qq
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return q.reshape(shape + (4,))


def poses_of(bodies: Sequence[Any], states: Sequence[Any]) -> np.ndarray:
    """The poses of ``bodies`` in each State as (n_states, n_bodies, 7): w, x, y, z, px, py, pz.

    States below Position are realized to Position (only their caches change).
    """
    n, nb = len(states), len(bodies)
    Rs = np.empty((n, nb, 3, 3))
    ps = np.empty((n, nb, 3))
    for i, s in enumerate(states):
        if s.get_system_stage() < Stage.Position:
            s.get_system().realize(s, Stage.Position)
        for j, b in enumerate(bodies):
            X = b.get_body_transform(s)
            Rs[i, j] = X.R.matrix
            ps[i, j] = X.p
    out = np.empty((n, nb, 7))
    out[..., :4] = quaternions(Rs) if nb else np.zeros((n, 0, 4))
    out[..., 4:] = ps
    return out


def up_axis(system: Any, default: str = "+y") -> str:
    """The coordinate axis nearest to "up" (against the gravity of the system's gravity elements), e.g. ``"+z"``."""
    for sub in system.get_force_subsystems():
        for i in range(sub.get_num_forces()):
            f = sub.get_force(i)
            getter = getattr(f, "get_gravity", None)
            if getter is None:
                continue
            g = np.asarray(getter(), dtype=float)
            if g.shape == (3,) and np.linalg.norm(g) > 0:
                k = int(np.argmax(np.abs(g)))
                return ("-" if g[k] > 0 else "+") + "xyz"[k]
    return default


def build_scene(system: Any, placed: Sequence[Placed], up: str | None = None, paths: bool = True,
                deformables: bool = True) -> Scene:
    """Tessellate and place ``placed`` (each distinct decoration once) for drawing ``system``.

    Parameters
    ----------
    system : MultibodySystem
    placed : sequence of Placed
    up : str, optional
        ``"+x"``, ``"-y"``, ...; found from gravity when None.
    paths : bool
        Draw the GeometryPaths of the system's path forces and muscles (see ``_paths``).
    deformables : bool
        Draw the system's deformable bodies (see ``_deformables``).

    Returns
    -------
    Scene
    """
    slots: dict[int, int] = {}
    bodies: list = []
    scene = Scene(system, bodies, up=up or up_axis(system), paths=path_drawings(system) if paths else [],
                  deformables=deformable_drawings(system) if deformables else [])
    radius: list[float] = []
    cache: dict[Decoration, list[tuple[int, Part]]] = {}
    for pl in placed:
        bi = pl.body.get_mobilized_body_index()
        if bi not in slots:
            slots[bi] = len(bodies)
            bodies.append(pl.body)
            radius.append(0.0)
        slot = slots[bi]
        d = pl.decoration
        if d not in cache:
            parts = tessellate(d)
            cache[d] = [(len(scene.geoms) + k, part) for k, part in enumerate(parts)]
            scene.geoms += parts
        q = quaternions(pl.X_BD.R.matrix)
        p = np.asarray(pl.X_BD.p, dtype=float)
        for gi, part in cache[d]:
            base = d.color if d.color is not None else (part.rgba[:3] if part.rgba is not None else DEFAULT_COLOR)
            alpha = d.opacity * (part.rgba[3] if part.rgba is not None and d.color is None else 1.0)
            rgba = (float(base[0]), float(base[1]), float(base[2]), float(alpha))
            bounded = d.kind != "halfspace"
            scene.items.append(Item(slot, gi, q, p, rgba, part.mode, bounded))
            if bounded and len(part.positions):
                reach = float(np.linalg.norm(p) + np.linalg.norm(part.positions, axis=1).max())
                radius[slot] = max(radius[slot], reach)
    scene.radius = np.array(radius)
    return scene


def default_camera(scene: Scene, poses: np.ndarray, fov: float = 45.0, points: np.ndarray | None = None) -> dict:
    """A camera that sees every bounded item over all ``poses`` (n, n_slots, 7), and ``points`` (..., 3) in
    Ground when given (the deformable bodies' particles): eye, target, up, fov (degrees).

    It looks along the axis after "up" (z when y is up, x when z is up), a little from the side and
    from above.
    """
    bounded_slots = sorted({it.slot for it in scene.items if it.bounded})
    up = np.zeros(3)
    k = "xyz".index(scene.up[1])
    up[k] = 1.0 if scene.up[0] == "+" else -1.0
    if bounded_slots and len(poses):
        P = poses[:, bounded_slots, 4:].reshape(-1, 3)
        r = np.repeat(scene.radius[bounded_slots][None, :], len(poses), 0).ravel()
        lo, hi = (P - r[:, None]).min(0), (P + r[:, None]).max(0)
    else:
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    pts = np.zeros((0, 3)) if points is None else np.asarray(points, dtype=float).reshape(-1, 3)
    pts = pts[np.isfinite(pts).all(1)]
    if len(pts):
        lo, hi = np.minimum(lo, pts.min(0)), np.maximum(hi, pts.max(0))
    if not np.isfinite(lo).all():
        lo, hi = -np.ones(3), np.ones(3)
    target = (lo + hi) / 2
    size = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
    # Look mostly along the axis after "up" (z for y-up models, whose planar motion is in x-y; x for
    # z-up robots), with a little from the side and from above so that no motion is seen edge-on.
    front = np.roll(np.abs(up), 1)
    side = np.cross(up, front)
    view = 0.85 * front + 0.3 * side + 0.3 * up
    view /= np.linalg.norm(view)
    # The bounding box's half-diagonal overstates what is seen across the view: frame it a little tight.
    dist = 0.8 * size / np.tan(np.radians(fov) / 2)
    eye = target + dist * view
    return {"eye": eye.tolist(), "target": target.tolist(), "up": up.tolist(), "fov": float(fov)}
