"""Contact from an MJCF's geoms (``load_mjcf(..., contact=True)``): one ``Force.HuntCrossley`` ("contact").

Shapes. Each geom that can collide (``contype`` or ``conaffinity`` not 0) becomes a surface on its
body, at the geom's frame:

- ``plane``: a HalfSpace (the floor: MuJoCo's plane is infinite, its solid side below its z axis);
- ``sphere``, ``capsule`` (axis z), ``box``, ``ellipsoid``, ``cylinder`` (axis z): a Sphere, Capsule,
  Brick (MuJoCo's sizes are already half lengths), Ellipsoid and Cylinder of the same sizes;
- ``mesh``: the ConvexHull of its vertices (MuJoCo collides a mesh as its convex hull too); a mesh file
  not found, or trimesh not installed, leaves it out;
- ``hfield`` and ``sdf``: left out. Whatever is left out is named in the load's one warning.

Which pairs touch. MuJoCo's rule: two geoms may touch when ``(contype1 & conaffinity2) or (contype2 &
conaffinity1)``, unless they are on one weld body (bodies welded to each other, the world and what is
welded to it included), on a parent and child weld body (neither the world), or on a pair of bodies of
an ``<exclude>``. It is reproduced exactly: the connected groups of pairs that must not touch become
cliques (surfaces of one clique never touch) where a group holds no pair MuJoCo lets touch (the static
geoms, say); in the other groups (a humanoid whose limbs touch each other but not their parents) every
pair that must not touch is an excluded pair (``Force.HuntCrossley.exclude_pair``). ``<pair>`` elements
are not built.

Contact law (MuJoCo's soft constraints are not Hunt-Crossley's; the mapping keeps their time scale). A
geom's solref ``(timeconst, dampratio)`` and solimp's ``dmax`` make MuJoCo's contact a mass-spring-damper
of natural frequency w = 1/(dmax timeconst dampratio) and damping ratio dampratio (a negative solref
``(-k, -b)``: w = sqrt(k)/dmax, ratio b/(2 sqrt(k))). Each moving geom's stiffness and dissipation are
chosen so that the whole weight W = m g of its tree (m: the tree of bodies it moves with) resting on it
alone has that frequency and damping ratio, linearized at rest:

- Hertz surfaces (sphere, capsule, ellipsoid, cylinder, with radius r: the smallest semi-axis, the
  cylinder's radius as it lies on its side): depth at rest d0 = 3/2 g / w^2, stiffness
  k = W / (4/3 sqrt(r) d0^(3/2)), dissipation c = 4/3 dampratio w / g;
- bricks and convex hulls (four vertices carry W, Simbody's linear law per vertex): d0 = g / w^2,
  k = W / (4 d0), c = 2 dampratio w / g.

With MuJoCo's defaults (0.02 s, 1, dmax 0.95) that is ~5 mm of sinking under the full weight, a soft
contact that stays stable at MuJoCo's time steps. Geoms that do not move (on the world or welded to it,
floors) are rigid beside them: stiffness 1000 times the largest moving geom's (so a pair's law is the
moving geom's within 1.5 %), dissipation the largest. Friction: the geom's sliding friction as static
and dynamic coefficient (``condim="1"``: none); the pair's is Simbody's harmonic mean (MuJoCo takes the
larger); torsional and rolling friction (condim 4, 6), margin and gap are not built. ``contact_parameters``
replaces any of these values for every surface.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simtk import Rotation, Transform

from ._urdf_contact import mesh_vertices

__all__: list[str] = []

LAW_KEYS = ("stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction")
#: a static surface's stiffness beside the stiffest moving one
RIGID = 1000.0
_G_REF = 9.81  # a model without gravity: its contacts still get MuJoCo's time scale under Earth's


def plane_frame(R: np.ndarray, p: np.ndarray) -> Transform:
    """The HalfSpace frame (solid x > 0) of a MuJoCo plane at (R, p) (solid z < 0 of its frame)."""
    turn = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # S's x axis is the plane's -z
    return Transform(Rotation.from_matrix(R @ turn), p)


def natural(g) -> tuple[float, float]:
    """(w, damping ratio) of MuJoCo's contact of geom ``g`` from its solref and solimp's dmax."""
    dmax = float(min(max(g.solimp[1], 1e-4), 0.9999))  # MuJoCo clamps the impedance to (0, 1)
    a, b = float(g.solref[0]), float(g.solref[1])
    if a > 0:
        return 1.0 / (dmax * a * max(b, 1e-12)), b
    k, c = -a, -b
    if k <= 0:
        return 1.0 / (dmax * 0.02), 1.0  # a malformed reference: MuJoCo's default
    return float(np.sqrt(k)) / dmax, c / (2.0 * float(np.sqrt(k)))


class _Surfaces:
    """The contact surfaces of a read file: parallel lists, one entry per surface."""

    def __init__(self) -> None:
        self.bodies: list = []
        self.shapes: list[str] = []
        self.sizes: list = []
        self.frames: list[Transform] = []
        self.laws: list[list[float]] = []
        self.cliques: list[int] = []
        self.vertices: list = []  # a ConvexHull's vertices (flat list), else []
        self.excluded: list[list[int]] = []  # surface pairs that never touch (where cliques cannot say it)
        self.geoms: list[int] = []  # index of each surface's geom in the reader's geoms
        self.skipped: list[str] = []
        self.notes: list[str] = []


def build_surfaces(rd: Any, body_nodes: dict, given: dict) -> _Surfaces:
    """The surfaces of every colliding geom of reader ``rd``, on ``body_nodes`` (MuJoCo body name ->
    description node), with the laws derived as the module says and ``given``'s values over them."""
    out = _Surfaces()
    index = {b.name: i for i, b in enumerate(rd.bodies)}
    weld = _weld_ids(rd)
    tree_mass = _tree_masses(rd)
    gmag = float(np.linalg.norm(rd.gravity)) or _G_REF
    moving_k, moving_c = [], []
    kept: list[tuple[int, Any, int, float, float]] = []  # (geom index, geom, body index, k, c)
    for gi, g in enumerate(rd.geoms):
        if not (g.contype or g.conaffinity):
            continue
        label = f"{g.kind} geom {g.name or '#' + str(gi)} of body {g.body!r}"
        made = _shape(g, rd)
        if isinstance(made, str):
            out.skipped.append(f"{label} ({made})")
            continue
        b = index[g.body]
        k = c = 0.0
        if weld[b] != 0:
            w, zeta = natural(g)
            W = tree_mass[b] * gmag
            if made[0] in ("Brick", "ConvexHull"):
                d0 = gmag / w**2
                k, c = W / (4.0 * d0), 2.0 * zeta * w / gmag
            else:
                d0 = 1.5 * gmag / w**2
                r = made[1][0] if made[0] != "Ellipsoid" else min(made[1])
                k, c = W / (4.0 / 3.0 * np.sqrt(r) * d0**1.5), 4.0 / 3.0 * zeta * w / gmag
            moving_k.append(k)
            moving_c.append(c)
        kept.append((gi, g, b, k, c))
        out.bodies.append(body_nodes[g.body])
        out.shapes.append(made[0])
        if made[0] == "ConvexHull":
            out.vertices.append(np.asarray(made[1]).ravel().tolist())
            out.sizes.append([float(np.linalg.norm(made[1], axis=1).max()), float(len(made[1])), 0.0])
        else:
            out.vertices.append([])
            out.sizes.append(list(made[1]))
        out.frames.append(made[2])
        out.geoms.append(gi)
        if g.condim > 3:
            out.notes.append(f"the torsional/rolling friction of {label} (condim {g.condim})")
    k_rigid = RIGID * max(moving_k, default=1e7)
    c_rigid = max(moving_c, default=1.0)
    for gi, g, b, k, c in kept:
        mu = float(g.friction[0])  # condim 1 too: MuJoCo gives a pair the larger condim of its geoms
        law = dict(stiffness=k if weld[b] != 0 else k_rigid, dissipation=c if weld[b] != 0 else c_rigid,
                   static_friction=mu, dynamic_friction=mu, viscous_friction=0.0)
        law.update(given)
        out.laws.append([float(law[key]) for key in LAW_KEYS])
    margins = [g.name or f"#{gi}" for gi, g, _, _, _ in kept if g.margin - g.gap != 0.0]
    if margins:
        out.notes.append(f"the contact margin of {len(margins)} geom(s) (surfaces touch at their shape)")
    out.cliques, out.excluded = _cliques(rd, [(b, g) for _, g, b, _, _ in kept], weld, index)
    if not any(out.vertices):
        out.vertices = []
    return out


def _shape(g, rd) -> tuple | str:
    """(kind, params, X_BS) of geom ``g``, or why it is left out."""
    X = Transform(Rotation.from_matrix(g.R), g.p)
    s = g.size
    if g.kind == "plane":
        return ("HalfSpace", [0.0, 0.0, 0.0], plane_frame(g.R, g.p))
    if g.kind == "sphere":
        return ("Sphere", [s[0], 0.0, 0.0], X)
    if g.kind == "capsule":
        return ("Capsule", [s[0], s[1], 0.0], X)
    if g.kind == "cylinder":
        return ("Cylinder", [s[0], s[1], 0.0], X)
    if g.kind == "box":
        return ("Brick", [s[0], s[1], s[2]], X)
    if g.kind == "ellipsoid":
        return ("Ellipsoid", [s[0], s[1], s[2]], X)
    if g.kind == "mesh":
        v = _mesh_vertices(g, rd)
        if isinstance(v, str):
            return v
        try:
            from scipy.spatial import ConvexHull, QhullError
            hull = ConvexHull(v)
        except (ValueError, QhullError):
            return "its vertices span no volume"
        return ("ConvexHull", v[np.sort(hull.vertices)], X)
    return f"no {g.kind} surface"


def _mesh_vertices(g, rd) -> np.ndarray | str:
    el = rd.meshes.get(g.mesh)
    if el is None:
        return f"mesh {g.mesh!r} is not in <asset>"
    scale = np.array([float(v) for v in el.get("scale", "1 1 1").split()])
    if el.get("vertex") is not None:
        v = np.array([float(t) for t in el.get("vertex").split()]).reshape(-1, 3)
        return v * scale
    if el.get("file") is None:
        return f"mesh {g.mesh!r} has neither a file nor vertices"
    base = Path(rd.x.src.file(el) or rd.path).resolve().parent
    path = base / rd.x.compiler.meshdir / el.get("file")
    if not path.is_file():
        return f"mesh file {str(path)!r} not found"
    v = mesh_vertices(path)
    return v if isinstance(v, str) else v * scale


def _weld_ids(rd) -> list[int]:
    """MuJoCo's weldid of each body: the nearest ancestor-or-self with a joint (0: the world)."""
    out = [0] * len(rd.bodies)
    for i, b in enumerate(rd.bodies[1:], start=1):
        out[i] = i if b.joints else out[b.parent]
    return out


def _tree_masses(rd) -> list[float]:
    """Each body's tree's mass (the bodies under the same child of the world); 1 kg for a massless one."""
    root = [0] * len(rd.bodies)
    for i, b in enumerate(rd.bodies[1:], start=1):
        root[i] = i if b.parent == 0 else root[b.parent]
    mass: dict[int, float] = {}
    for i, b in enumerate(rd.bodies[1:], start=1):
        mass[root[i]] = mass.get(root[i], 0.0) + b.mass
    return [mass.get(root[i], 0.0) or 1.0 for i in range(len(rd.bodies))]


def _allowed(rd, a: tuple, b: tuple, weld: list, excluded: set) -> bool:
    (ba, ga), (bb, gb) = a, b
    wa, wb = weld[ba], weld[bb]
    if wa == wb:
        return False
    if not ((ga.contype & gb.conaffinity) or (gb.contype & ga.conaffinity)):
        return False
    if wa != 0 and wb != 0:
        pa, pb = weld[rd.bodies[wa].parent], weld[rd.bodies[wb].parent]
        if pa == wb or pb == wa:
            return False
    return (min(ba, bb), max(ba, bb)) not in excluded


def _cliques(rd, kept: list, weld: list, index: dict) -> tuple[list[int], list[list[int]]]:
    """A clique for each surface (-1: none) and the excluded surface pairs [i, j], i < j: together
    exactly the pairs MuJoCo keeps apart (those of one body aside: they never touch anyway)."""
    excluded = {(min(index[b1], index[b2]), max(index[b1], index[b2])) for b1, b2 in rd.excludes}
    n = len(kept)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    allowed = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1, n):
            if kept[i][0] == kept[j][0]:
                continue  # one body: never touches, whatever the cliques
            allowed[i, j] = allowed[j, i] = _allowed(rd, kept[i], kept[j], weld, excluded)
            if not allowed[i, j]:
                parent[find(i)] = find(j)
    roots = [find(i) for i in range(n)]
    sizes: dict[int, int] = {}
    for r in roots:
        sizes[r] = sizes.get(r, 0) + 1
    # a group with a pair MuJoCo lets touch cannot be a clique: its pairs that must not are excluded one by one
    mixed = {roots[i] for i in range(n) for j in range(i + 1, n) if allowed[i, j] and roots[i] == roots[j]}
    ids: dict[int, int] = {}
    cliques = []
    for r in roots:
        if sizes[r] == 1 or r in mixed:
            cliques.append(-1)
        else:
            cliques.append(ids.setdefault(r, len(ids)))
    excluded = [[i, j] for i in range(n) for j in range(i + 1, n)
                if roots[i] in mixed and roots[i] == roots[j] and not allowed[i, j] and kept[i][0] != kept[j][0]]
    return cliques, excluded
