"""Tetrahedral meshes for `DeformableBody.from_tetrahedra`: checks, rest geometry, lumped masses, the
boundary surface, a structured box mesh and mesh files (through meshio, imported only when used)."""
from __future__ import annotations

from itertools import permutations
from typing import Any

import numpy as np

from .._core_fem import TetraSet, TriangleSet
from ._cutting import vertex_masses

__all__ = ["box_tetrahedra", "read_mesh"]

# the faces of a positively oriented tet (a, b, c, d), each ordered so its normal points out of the tet
_FACES = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])


def check_tets(tets: Any, n: int, where: str, nv: int = 4, what: str = "tet") -> np.ndarray:
    """The tets (or triangles, nv = 3) as an (nt, nv) int64 array of different particle indices in 0..n-1."""
    try:
        t = np.array(tets, dtype=np.int64)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: {what}s: expected an (nt, {nv}) array of particle indices, got "
                        f"{type(tets).__name__}") from None
    if t.ndim != 2 or t.shape[1] != nv or len(t) == 0:
        raise ValueError(f"{where}: {what}s: expected an (nt, {nv}) array with nt >= 1, got shape {t.shape}")
    bad = ((t < 0) | (t >= n)).any(1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: {what} {k} = {t[k].tolist()} names a particle outside 0..{n - 1}")
    s = np.sort(t, axis=1)
    bad = (s[:, 1:] == s[:, :-1]).any(1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: {what} {k} = {t[k].tolist()} repeats a particle")
    return np.ascontiguousarray(t)


def triangle_rest_geometry(x0: np.ndarray, tris: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Each triangle's inverse rest edge matrix in its own plane's frame (nt, 2, 2) (first axis along b - a,
    second in the plane toward c) and area (nt,); refuses a degenerate (collinear) triangle."""
    e1 = x0[tris[:, 1]] - x0[tris[:, 0]]
    e2 = x0[tris[:, 2]] - x0[tris[:, 0]]
    cross = np.cross(e1, e2)
    area = 0.5 * np.linalg.norm(cross, axis=1)
    longest = np.stack([np.linalg.norm(e, axis=1) for e in (e1, e2, e2 - e1)], axis=1).max(axis=1)
    flat = area <= 1e-8 * longest ** 2
    if flat.any():
        k = int(np.flatnonzero(flat)[0])
        raise ValueError(f"{where}: triangle {k} = {tris[k].tolist()} is degenerate (area {area[k]:.3g} m^2 for "
                         f"edges up to {longest[k]:.3g} m)")
    l1 = np.linalg.norm(e1, axis=1)
    Dm = np.zeros((len(tris), 2, 2))
    Dm[:, 0, 0] = l1
    Dm[:, 0, 1] = np.einsum("ij,ij->i", e1, e2) / l1
    Dm[:, 1, 1] = 2.0 * area / l1
    return np.ascontiguousarray(np.linalg.inv(Dm)), area


def thicknesses(thickness: Any, nt: int, where: str) -> np.ndarray:
    h = np.array(np.broadcast_to(np.asarray(thickness, dtype=np.float64), (nt,)))
    bad = ~(np.isfinite(h) & (h > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: thickness[{k}] = {float(h[k])!r} must be finite and > 0 (m)")
    return h


def rest_geometry(x0: np.ndarray, tets: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Each tet's inverse rest edge matrix Bm (nt, 3, 3) and volume (nt,); refuses an inverted tet (negative
    volume: its vertices are ordered the other way round) and a degenerate one (flat, volume ~ 0)."""
    Dm = np.stack([x0[tets[:, j]] - x0[tets[:, 0]] for j in (1, 2, 3)], axis=2)  # columns: edges from a
    det = np.linalg.det(Dm)
    edges = np.concatenate([Dm, (x0[tets[:, [2, 3, 3]]] - x0[tets[:, [1, 1, 2]]]).transpose(0, 2, 1)], axis=2)
    longest = np.linalg.norm(edges, axis=1).max(axis=1)
    # a regular tet has det = L^3 / sqrt(2); below 1e-8 of that it is flat to the mesh's own precision
    flat = np.abs(det) <= 1e-8 * longest ** 3
    if flat.any():
        k = int(np.flatnonzero(flat)[0])
        raise ValueError(f"{where}: tet {k} = {tets[k].tolist()} is degenerate (volume {det[k] / 6:.3g} m^3 for "
                         f"edges up to {longest[k]:.3g} m)")
    inverted = det < 0
    if inverted.any():
        k = int(np.flatnonzero(inverted)[0])
        raise ValueError(f"{where}: tet {k} = {tets[k].tolist()} is inverted (volume {det[k] / 6:.3g} m^3 < 0: "
                         f"order its vertices so that (b - a) x (c - a) . (d - a) > 0, e.g. swap two)")
    return np.ascontiguousarray(np.linalg.inv(Dm)), det / 6.0


def lame(young: Any, poisson: Any, nt: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Lame's mu and lambda (nt,) from Young's modulus (> 0) and Poisson's ratio (in (-1, 0.5))."""
    try:
        E = np.array(np.broadcast_to(np.asarray(young, dtype=np.float64), (nt,)))
        nu = np.array(np.broadcast_to(np.asarray(poisson, dtype=np.float64), (nt,)))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: young and poisson: expected a number or {nt} numbers each") from None
    bad = ~(np.isfinite(E) & (E > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: young[{k}] = {float(E[k])!r} must be finite and > 0 (Pa)")
    bad = ~(np.isfinite(nu) & (nu > -1.0) & (nu < 0.5))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: poisson[{k}] = {float(nu[k])!r} must be in (-1, 0.5) (0.5 is incompressible, which "
                         f"linear tets lock on)")
    return E / (2.0 * (1.0 + nu)), E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))


def rayleigh(damping: Any, where: str) -> tuple[float, float]:
    """(alpha_M, beta_K) from a number (beta_K, stiffness-proportional, s) or a pair (alpha_M 1/s, beta_K s)."""
    try:
        d = np.asarray(damping, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        d = np.zeros(0)
    if d.size == 1:
        d = np.array([0.0, d[0]])
    if d.size != 2 or not (np.isfinite(d).all() and (d >= 0).all()):
        raise ValueError(f"{where}: damping: expected beta_K >= 0 (s) or (alpha_M >= 0 (1/s), beta_K >= 0 (s)), "
                         f"got {damping!r}")
    return float(d[0]), float(d[1])


def lumped_masses(n: int, tets: np.ndarray, vol: np.ndarray, density: Any, where: str) -> np.ndarray:
    """density V / 4 to each vertex of each tet (V / 3 of a triangle, V its thickness times area); refuses a
    particle in no element (it would have no mass)."""
    rho = np.array(np.broadcast_to(np.asarray(density, dtype=np.float64), (len(tets),)))
    bad = ~(np.isfinite(rho) & (rho > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: density[{k}] = {float(rho[k])!r} must be finite and > 0 (kg/m^3)")
    m = np.zeros(n)
    nv = tets.shape[1]
    np.add.at(m, tets, np.repeat((rho * vol / nv)[:, None], nv, axis=1))
    lonely = m == 0.0
    if lonely.any():
        raise ValueError(f"{where}: particle {int(np.flatnonzero(lonely)[0])} is in no "
                         f"{'tet' if nv == 4 else 'triangle'} (it would have no mass)")
    return m


def element_sets(n: int, masses: np.ndarray, tet_data: dict | None, tri_data: dict | None) -> list:
    """The compiled sets of a body's tets and membrane triangles (what `DeformableBody.from_tetrahedra` and
    `from_triangles` stored, less what was cut), for its Topology."""
    sets: list = []
    if tet_data is not None:
        d = tet_data
        sets.append(TetraSet(n, d["tets"], d["Bm"], d["vol"], d["mu"], d["lam"], vertex_masses(masses, d["tets"]),
                             d["alpha_m"], d["beta_k"]))
    if tri_data is not None:
        d = tri_data
        sets.append(TriangleSet(n, d["tris"], d["Bm"], d["ha"], d["mu"], d["lam"], vertex_masses(masses, d["tris"]),
                                d["alpha_m"], d["beta_k"]))
    return sets


def surface_triangles(tets: np.ndarray) -> np.ndarray:
    """The faces used by one tet only (nf, 3), each ordered counterclockwise seen from outside."""
    faces = tets[:, _FACES].reshape(-1, 3)
    key = np.sort(faces, axis=1)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return np.ascontiguousarray(faces[counts[inverse.reshape(-1)] == 1])


def box_tetrahedra(lx: float, ly: float, lz: float, nx: int, ny: int, nz: int) -> tuple[np.ndarray, np.ndarray]:
    """A box [0, lx] x [0, ly] x [0, lz] split into nx ny nz cells, each into 6 tets around its main diagonal
    (Kuhn's split: neighbouring cells' faces match), all positively oriented.

    Parameters
    ----------
    lx, ly, lz : float
        The box's sides (m), > 0.
    nx, ny, nz : int
        Cells along each side, >= 1.

    Returns
    -------
    points : ndarray, shape ((nx + 1)(ny + 1)(nz + 1), 3)
        Grid points, index (i (ny + 1) + j)(nz + 1) + k for the point at (i lx / nx, j ly / ny, k lz / nz).
    tets : ndarray of int64, shape (6 nx ny nz, 4)
    """
    sides = np.array([lx, ly, lz], dtype=np.float64)
    cells = (nx, ny, nz)
    if not (np.isfinite(sides).all() and (sides > 0).all()):
        raise ValueError(f"box_tetrahedra: the sides must be finite and > 0, got {sides.tolist()}")
    if not all(isinstance(c, (int, np.integer)) and c >= 1 for c in cells):
        raise ValueError(f"box_tetrahedra: the cell counts must be integers >= 1, got {cells}")
    g = [np.linspace(0.0, s, c + 1) for s, c in zip(sides, cells)]
    X, Y, Z = np.meshgrid(*g, indexing="ij")
    points = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    stride = np.array([(ny + 1) * (nz + 1), nz + 1, 1])
    I, J, K = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    base = (np.stack([I.ravel(), J.ravel(), K.ravel()], axis=1) @ stride)[:, None]
    tets = []
    for perm in permutations(range(3)):
        # the path 0 -> e_p0 -> e_p0 + e_p1 -> (1, 1, 1) along the cell's edges
        corner = np.zeros(3, dtype=np.int64)
        path = [0]
        for p in perm:
            corner[p] = 1
            path.append(int(corner @ stride))
        tets.append(base + np.array(path))
    t = np.concatenate(tets, axis=0)
    e = np.stack([points[t[:, j]] - points[t[:, 0]] for j in (1, 2, 3)], axis=2)
    neg = np.linalg.det(e) < 0
    t[neg] = t[neg][:, [0, 2, 1, 3]]
    return points, np.ascontiguousarray(t)


def read_mesh(path: Any) -> tuple[np.ndarray, np.ndarray]:
    """The points and linear tetrahedra of a mesh file (any format meshio reads: Gmsh .msh, VTK .vtu, ...).

    Needs the optional ``meshio`` (``pip install simtk[fem]``).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    points : ndarray, shape (n, 3)
    tets : ndarray of int64, shape (nt, 4)
        Every "tetra" cell block, in file order (other cells, e.g. boundary triangles, are left out).
    """
    try:
        import meshio
    except ImportError:
        raise ImportError("simtk.deformable.read_mesh needs meshio: pip install meshio (or simtk[fem])") from None
    mesh = meshio.read(path)
    blocks = [np.asarray(c.data, dtype=np.int64) for c in mesh.cells if c.type == "tetra"]
    if not blocks:
        raise ValueError(f"read_mesh: {str(path)!r} has no linear tetrahedra (cell types: "
                         f"{sorted({c.type for c in mesh.cells})})")
    points = np.asarray(mesh.points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"read_mesh: {str(path)!r}: expected 3-D points, got shape {points.shape}")
    return np.ascontiguousarray(points), np.ascontiguousarray(np.concatenate(blocks))
