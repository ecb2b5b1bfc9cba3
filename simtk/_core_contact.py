"""The contact-detection kernels' wrappers (``core/contact.pxi``): shape and dtype checks, then the
kernel calls. The compiled core is reached through ``simtk._core``, as everywhere."""
from __future__ import annotations

import math

import numpy as np

from ._core import _array, _k

__all__ = ["CONTACT_SHAPES", "CONTACT_EPA_REL_TOL", "contact_detect", "contact_detect_unchecked",
           "contact_min_separation"]

#: name -> (code, number of used parameters) of the contact shapes.
CONTACT_SHAPES: dict = dict(_k.CONTACT_SHAPES)
#: Relative stopping tolerance of the iterative (EPA) narrow phase, times the pair's largest size.
CONTACT_EPA_REL_TOL: float = float(_k.EPA_REL_TOL)
_N_PARAMS = np.zeros(max(c for c, _ in CONTACT_SHAPES.values()) + 1, dtype=np.int64)
for _code, _npar in CONTACT_SHAPES.values():
    _N_PARAMS[_code] = _npar
_SHAPE_NAMES = {c: name for name, (c, _) in CONTACT_SHAPES.items()}
_HULL = int(CONTACT_SHAPES["ConvexHull"][0])


def _int_array(name: str, x, shape: tuple) -> np.ndarray:
    a = np.asarray(x)
    if a.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name}: expected integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int32)


def _vertices_exclude(codes_a: np.ndarray, prm: np.ndarray, vertices, exclude) -> tuple:
    """A ConvexHull's vertex rows and the excluded pairs, validated: (vertices (m, 3) or None,
    exclude (k, 2) float64 sorted pairs i < j, or None)."""
    ns = codes_a.shape[0]
    verts = None
    hulls = np.flatnonzero(codes_a == _HULL)
    if vertices is not None or hulls.size:
        if vertices is None:
            raise ValueError(f"surface {int(hulls[0])} is a ConvexHull: detection needs its vertices")
        verts = np.asarray(vertices, dtype=np.float64)
        if verts.ndim != 2 or verts.shape[1] != 3:
            raise ValueError(f"vertices: expected shape (m, 3), got {verts.shape}")
        verts = _array("vertices", verts, verts.shape)
    for i in hulls:
        size, nv, first = prm[i]
        if not (size > 0.0 and nv >= 4 and nv == int(nv) and first >= 0 and first == int(first)
                and first + nv <= verts.shape[0]):  # type: ignore[union-attr]
            raise ValueError(f"params[{i}] = {tuple(prm[i])} of a ConvexHull must be (size > 0, vertex count >= 4, "
                             f"first row) with its rows within vertices ({verts.shape[0]} rows)")  # type: ignore
    ex = None
    if exclude is not None and np.size(exclude):
        e = np.asarray(exclude)
        if e.ndim != 2 or e.shape[1] != 2 or not np.issubdtype(e.dtype, np.integer):
            raise ValueError(f"exclude: expected integer pairs of shape (k, 2), got {e.dtype} {e.shape}")
        if e.min() < 0 or e.max() >= ns or (e[:, 0] == e[:, 1]).any():
            raise ValueError(f"exclude: every pair must name two different surfaces among {ns}")
        e = np.unique(np.sort(e, axis=1), axis=0)
        ex = np.ascontiguousarray(e, dtype=np.float64)
    return verts, ex


def _contact_surfaces(codes, params, R_GS, p_GS, clique) -> tuple:
    """The surfaces of `contact_detect` validated: (codes int32, params, R, p, clique int32)."""
    codes_a = np.asarray(codes)
    if codes_a.ndim != 1:
        raise ValueError(f"codes: expected a 1-d array of shape (ns,), got shape {codes_a.shape}")
    ns = codes_a.shape[0]
    codes_a = _int_array("codes", codes_a, (ns,))
    bad = np.flatnonzero((codes_a < 0) | (codes_a >= _N_PARAMS.size))
    if bad.size:
        raise ValueError(f"codes[{bad[0]}] = {int(codes_a[bad[0]])} is not a contact shape code; known: "
                         f"{ {name: c for name, (c, _) in CONTACT_SHAPES.items()} }")
    prm = _array("params", params, (ns, 3))
    R = _array("R_GS", R_GS, (ns, 3, 3))
    p = _array("p_GS", p_GS, (ns, 3))
    cl = _int_array("clique", clique, (ns,))
    used = np.arange(3)[None, :] < _N_PARAMS[codes_a][:, None]
    bad = (used & ~(prm > 0.0)) | (~used & (prm != 0.0))
    bad[codes_a == _HULL] = False  # (size, count, first row): checked with the vertices
    bad_i, bad_j = np.nonzero(bad)
    if bad_i.size:
        i, j = int(bad_i[0]), int(bad_j[0])
        name = _SHAPE_NAMES[int(codes_a[i])]
        need = "> 0" if used[i, j] else "0 (unused)"
        raise ValueError(f"params[{i}, {j}] = {float(prm[i, j])!r} of a {name} must be {need}")
    if ns:
        err = np.abs(np.einsum("nij,nkj->nik", R, R) - np.eye(3)).max(axis=(1, 2))
        bad = np.flatnonzero((err > 1e-9) | (np.linalg.det(R) < 0))
        if bad.size:
            raise ValueError(f"R_GS[{bad[0]}] is not a rotation matrix")
    return codes_a, prm, R, p, cl


def contact_detect(codes, params, R_GS, p_GS, clique, vertices=None, exclude=None) -> tuple:
    """Validate the surfaces and detect their contacts (see `simtk.multibody.contact._detection.detect`).

    Returns ``(surf (nc, 2) int64, p_G (nc, 3), n_G (nc, 3), depth (nc,), R1 (nc,), R2 (nc,))`` in the
    kernel's order (not sorted).
    """
    codes_a, prm, R, p, cl = _contact_surfaces(codes, params, R_GS, p_GS, clique)
    return contact_detect_unchecked(codes_a, prm, R, p, cl, *_vertices_exclude(codes_a, prm, vertices, exclude))


def contact_detect_unchecked(codes_a, prm, R, p, cl, vertices=None, exclude=None) -> tuple:
    """`contact_detect` for surfaces already valid and of the kernel's types: int32 codes and
    cliques, C-contiguous float64 params (ns, 3), rotations R (ns, 3, 3) and origins p (ns, 3), the
    hulls' vertices (m, 3) and the excluded pairs as `_vertices_exclude` returns them. For a caller
    that builds them itself each step (a contact force from its bodies' poses)."""
    ns = codes_a.shape[0]
    if ns < 2:
        return (np.zeros((0, 2), np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0),
                np.zeros(0))
    cap = 4 * ns + 16
    while True:
        out = (np.empty((cap, 2), np.int64), np.empty((cap, 3)), np.empty((cap, 3)), np.empty(cap),
               np.empty(cap), np.empty(cap))
        nc = int(_k.contact_detect(codes_a, prm, R, p, cl, *out, vertices, exclude))
        if nc <= cap:
            return tuple(a[:nc] for a in out)
        cap = nc


def contact_min_separation(codes, params, R_GS, p_GS, clique, body, margin: float, vertices=None,
                           exclude=None) -> float:
    """Validate the surfaces and return the least signed separation (positive apart) over the pairs
    on different bodies (``body``, shape (ns,)) that `contact_detect` would consider, or ``margin``
    (> 0) when no pair is within it (see `simtk.multibody.contact._detection.min_separation`)."""
    codes_a, prm, R, p, cl = _contact_surfaces(codes, params, R_GS, p_GS, clique)
    b = _int_array("body", body, (codes_a.shape[0],))
    m = float(margin)
    if not (m > 0 and math.isfinite(m)):
        raise ValueError(f"margin must be positive and finite, got {margin!r}")
    verts, ex = _vertices_exclude(codes_a, prm, vertices, exclude)
    return float(_k.contact_min_separation(codes_a, prm, R, p, cl, b, m, verts, ex))
