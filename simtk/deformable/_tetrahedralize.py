"""Tetrahedra inside a closed triangle surface (gmsh, extra ``[fem]``), for `DeformableBody.from_tetrahedra`."""
from __future__ import annotations

import ctypes
import signal
import threading
from typing import Any

import numpy as np

__all__ = ["tetrahedralize"]


def _closed_surface(vertices: Any, triangles: Any) -> tuple[np.ndarray, np.ndarray]:
    where = "tetrahedralize"
    try:
        V = np.array(vertices, dtype=np.float64)
        F = np.array(triangles)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: vertices must be an (n, 3) array of numbers and triangles an (m, 3) array of "
                        "indices") from None
    if V.ndim != 2 or V.shape[1] != 3 or len(V) < 4 or not np.isfinite(V).all():
        raise ValueError(f"{where}: vertices must be an (n, 3) array of finite numbers with n >= 4, got shape "
                         f"{V.shape}")
    if F.ndim != 2 or F.shape[1] != 3 or len(F) < 4 or not np.issubdtype(F.dtype, np.integer):
        raise ValueError(f"{where}: triangles must be an (m, 3) integer array with m >= 4, got {F.shape} of {F.dtype}")
    if F.min() < 0 or F.max() >= len(V):
        raise ValueError(f"{where}: a triangle's vertex index is outside 0..{len(V) - 1}")
    # closed and consistently oriented: every directed edge once, and its reverse once
    edges = np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]])
    directed = {(int(a), int(b)) for a, b in edges}
    if len(directed) != len(edges):
        raise ValueError(f"{where}: the surface is not consistently oriented (a directed edge appears twice)")
    for a, b in edges:
        if (int(b), int(a)) not in directed:
            raise ValueError(f"{where}: the surface is not closed: edge ({int(a)}, {int(b)}) has no neighbour")
    return V, F.astype(np.int64)


def _restore_sigpipe(saved: Any) -> None:
    """Put back the SIGPIPE disposition gmsh's C initialization resets to the default (which would make a
    later write to a closed socket or pipe kill the process instead of raising BrokenPipeError)."""
    if not hasattr(signal, "SIGPIPE"):
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, saved)
    elif saved == signal.SIG_IGN:  # (signal.signal is main-thread only; the disposition is process-wide)
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal(int(signal.SIGPIPE), ctypes.c_void_p(1))  # SIG_IGN


def tetrahedralize(vertices: Any, triangles: Any, max_edge: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fill a closed triangle surface with tetrahedra (gmsh's 3-D Delaunay mesher).

    The surface's triangles are kept as the mesh's boundary faces and its vertices as the first
    points; gmsh adds the interior points. Needs the ``gmsh`` package (``pip install simtk[fem]``).

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        The surface's vertices (m).
    triangles : array_like, shape (m, 3)
        Its triangles, indices into ``vertices``, oriented consistently (all outward or all inward);
        the surface must be closed (every edge shared by two triangles).
    max_edge : float, optional
        The largest edge length of the tetrahedra inside (m); None lets gmsh grade them from the
        surface's edges.

    Returns
    -------
    points : ndarray, shape (p, 3)
        ``vertices`` first, unchanged, then the interior points.
    tets : ndarray, shape (k, 4)
        Indices into ``points``, each positively oriented (positive signed volume).

    Raises
    ------
    ValueError
        The surface is not closed, not consistently oriented, or gmsh cannot mesh it.
    ImportError
        gmsh is not installed.
    """
    V, F = _closed_surface(vertices, triangles)
    if max_edge is not None and not (isinstance(max_edge, (int, float)) and np.isfinite(max_edge) and max_edge > 0):
        raise ValueError(f"tetrahedralize: max_edge must be a finite number > 0 or None, got {max_edge!r}")
    try:
        import gmsh
    except ImportError:
        raise ImportError("tetrahedralize needs gmsh: pip install simtk[fem] (or pip install gmsh)") from None
    owner = not gmsh.isInitialized()
    saved_pipe = signal.getsignal(signal.SIGPIPE) if hasattr(signal, "SIGPIPE") else None
    if owner:
        # not interruptible: gmsh would otherwise set Ctrl-C to kill the process
        gmsh.initialize(readConfigFiles=False, interruptible=False)
        _restore_sigpipe(saved_pipe)
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("simtk_tetrahedralize")
        # the surface as a discrete entity with the given mesh, closed by a surface loop into a volume:
        # gmsh meshes the inside and keeps the surface's triangles
        surface = gmsh.model.addDiscreteEntity(2)
        gmsh.model.mesh.addNodes(2, surface, np.arange(1, len(V) + 1), V.reshape(-1))
        gmsh.model.mesh.addElementsByType(surface, 2, [], (F + 1).reshape(-1))
        loop = gmsh.model.geo.addSurfaceLoop([surface])
        gmsh.model.geo.addVolume([loop])
        gmsh.model.geo.synchronize()
        if max_edge is not None:
            gmsh.option.setNumber("Mesh.MeshSizeMax", float(max_edge))
        try:
            gmsh.model.mesh.generate(3)
        except Exception as exc:  # gmsh raises a bare Exception with its last error
            raise ValueError(f"tetrahedralize: gmsh could not mesh the inside: {exc}") from None
        tags, coords, _ = gmsh.model.mesh.getNodes()
        types, _, nodes = gmsh.model.mesh.getElements(3)
    finally:
        gmsh.model.remove()
        if owner:
            gmsh.finalize()
            _restore_sigpipe(saved_pipe)
    if 4 not in list(types):
        raise ValueError("tetrahedralize: gmsh made no tetrahedra (is the surface self-intersecting?)")
    tet_nodes = np.asarray(nodes[list(types).index(4)], dtype=np.int64).reshape(-1, 4)
    tags = np.asarray(tags, dtype=np.int64)
    coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    # the surface's vertices keep their indices (tags 1..n); gmsh's new points follow in tag order
    order = np.argsort(tags)
    tags, coords = tags[order], coords[order]
    if len(tags) < len(V) or not np.array_equal(tags[:len(V)], np.arange(1, len(V) + 1)):
        raise ValueError("tetrahedralize: gmsh renumbered the surface's vertices")
    index = np.full(int(tags.max()) + 1, -1, dtype=np.int64)
    index[tags] = np.arange(len(tags))
    tets = index[tet_nodes]
    points = np.concatenate([V, coords[len(V):]])
    a = points[tets]
    vol = np.einsum("ij,ij->i", a[:, 1] - a[:, 0], np.cross(a[:, 2] - a[:, 0], a[:, 3] - a[:, 0]))
    flip = vol < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return points, tets
