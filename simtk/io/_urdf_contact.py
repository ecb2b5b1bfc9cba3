"""Contact from a URDF's ``<collision>`` shapes (``load_urdf(..., contact=True)``) and a floor.

Each collision shape becomes a surface of one ``Force.HuntCrossley`` element ("contact"), on the body
its link is part of, at the shape's frame:

- ``<sphere>``: a Sphere; ``<box>``: a Brick of half its sizes;
- ``<cylinder>`` (axis z): a Cylinder of the same radius and half its length;
- ``<capsule>`` (an extension some exporters write, axis z, length between the cap centres): a Capsule;
- ``<mesh>``: the ConvexHull of its vertices (scaled). A mesh file not found, trimesh not installed,
  or vertices spanning no volume, leave the shape out (listed in the warning).

All the robot's surfaces are in one clique, so they never touch each other (the links' shapes of
published robots overlap at the joints); the floor (`add_floor`) is in none, so every surface touches it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simtk import Rotation, Transform

#: The contact law's defaults (Simbody's units; the robot's and the floor's surfaces both take them):
#: a 2 cm foot sphere of a 12 kg quadruped sinks ~1 mm, a box's vertex 5e6 N/m each.
DEFAULTS = dict(stiffness=1e7, dissipation=1.0, static_friction=0.9, dynamic_friction=0.8, viscous_friction=0.0)
ROBOT_CLIQUE = 0


def collision_surfaces(rd: Any, home: dict, nodes: dict, urdf_dir: Path, package_dirs: list, resolve) -> tuple:
    """(body nodes, shape kinds, sizes (3,), frames X_BS, hull vertices (a flat list per shape, empty
    but for a ConvexHull), skipped descriptions) of every collision shape."""
    bodies, shapes, sizes, frames, verts, skipped = [], [], [], [], [], []
    for name in rd.order:
        link = rd.links[name]
        body, X_BL = home[name]
        for gname, X_LG, kind, dims, _, _ in rd.shapes(link, "collision"):
            X_BG = X_BL * X_LG
            label = f"{kind} of link {name!r}"
            if kind == "sphere":
                made = ("Sphere", [dims["radius"], 0.0, 0.0], X_BG)
            elif kind == "box":
                made = ("Brick", [0.5 * v for v in dims["size"]], X_BG)
            elif kind in ("cylinder", "capsule"):
                made = ("Cylinder" if kind == "cylinder" else "Capsule", [dims["radius"], 0.5 * dims["length"], 0.0],
                        X_BG)
            elif kind == "mesh":
                made = _mesh_hull(dims, urdf_dir, package_dirs, resolve, X_BG)
                if isinstance(made, str):
                    skipped.append(f"{label} ({made})")
                    continue
            else:
                skipped.append(label)
                continue
            if min(made[1][:1 if made[0] in ("Sphere", "ConvexHull") else 2 if made[0] in ("Capsule", "Cylinder")
                           else 3]) <= 0:
                skipped.append(f"{label} (zero size)")
                continue
            bodies.append(nodes[body])
            shapes.append(made[0])
            sizes.append(made[1])
            frames.append(made[2])
            verts.append(made[3] if len(made) > 3 else [])
    return bodies, shapes, sizes, frames, verts, skipped


def _mesh_hull(dims: dict, urdf_dir: Path, package_dirs: list, resolve, X_BG: Transform):
    """("ConvexHull", params, X_BG, flat vertex list) of a mesh shape, or why it is left out."""
    path = resolve(dims["filename"], urdf_dir, package_dirs)
    if path is None:
        return "mesh file not found"
    v = mesh_vertices(path)
    if isinstance(v, str):
        return v
    from simtk import ContactGeometry

    try:
        g = ContactGeometry.ConvexHull(v * np.asarray(dims.get("scale", (1.0, 1.0, 1.0))))
    except ValueError as e:
        return f"no convex hull: {e}"
    return ("ConvexHull", list(g.params), X_BG, g.vertices.ravel().tolist())


def mesh_vertices(path: Path) -> np.ndarray | str:
    """A mesh file's vertices (n, 3) through trimesh, or why not (a string: the rest of the model
    loads, the mesh is reported)."""
    try:
        import trimesh
    except ImportError:
        return "trimesh is not installed"
    try:
        mesh = trimesh.load(str(path), force="mesh")
    except Exception as e:  # a file trimesh cannot read
        return f"unreadable mesh: {type(e).__name__}: {e}"
    return np.asarray(mesh.vertices, dtype=float)


def floor_frame(height: float) -> Transform:
    """The HalfSpace frame of the floor z < height: its x axis (the inward normal) along -z."""
    return Transform(Rotation.from_matrix(np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])),
                     [0.0, 0.0, float(height)])
