"""Removing a deformable body's elements between steps (cutting; SOFA's topology changes).

An element keeps the index it was given at construction for the body's whole life, so a removal names
the same element however many removals came before it, and removing one twice is an error rather than
the silent removal of whichever element moved into its place. The body's element data stays as built;
a mask per kind says which elements are gone, and the compiled sets are made from the rest.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["KINDS", "removal_indices", "crossing", "vertex_masses"]

# the element kinds, as messages and DeformableBody.get_remaining_element_indices name them
KINDS = ("segment", "tet", "triangle")


def removal_indices(where: str, kind: str, indices: Any, removed: np.ndarray) -> np.ndarray:
    """``indices`` as a sorted int64 array of elements of ``kind`` that exist and are not removed yet;
    raises naming the first bad one (nothing is changed here, so a refused call leaves the body as it was)."""
    try:
        raw = np.atleast_1d(np.asarray(indices))
        if raw.ndim != 1 or not (raw.size == 0 or np.issubdtype(raw.dtype, np.integer)):
            raise TypeError
        idx = raw.astype(np.int64)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: expected {kind} indices (integers), got {indices!r}") from None
    n = len(removed)
    for i in idx:
        if not 0 <= i < n:
            raise IndexError(f"{where}: {kind} {int(i)} is outside 0..{n - 1} (the body has {n} {kind}s)")
    uniq, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{where}: {kind} {int(uniq[counts > 1][0])} is listed twice")
    gone = removed[uniq]
    if gone.any():
        raise ValueError(f"{where}: {kind} {int(uniq[gone][0])} was removed already")
    return uniq


def crossing(x: np.ndarray, conn: np.ndarray, point: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Which elements (rows of ``conn``) have a vertex strictly on each side of the plane through ``point``
    with ``normal`` (unit), (ne,) bool. A vertex within rounding of the plane is on neither side, so an
    element that only touches the plane is not cut."""
    if len(conn) == 0:
        return np.zeros(0, dtype=bool)
    d = (x - point) @ normal
    # rounding of (x - p) . n is a few eps times the coordinates' size
    tol = 16.0 * np.finfo(float).eps * (float(np.abs(x).max()) + float(np.abs(point).max()) + 1e-300)
    dv = d[conn]
    return (dv > tol).any(axis=1) & (dv < -tol).any(axis=1)


def vertex_masses(masses: np.ndarray, conn: np.ndarray) -> np.ndarray:
    """The particles' masses where some element of ``conn`` uses them, 0 elsewhere: the mass-proportional
    (Rayleigh alpha_M) damping of a set acts only on its own elements' particles, so a particle a cut has
    left without elements falls freely."""
    used = np.zeros(len(masses), dtype=bool)
    used[conn.reshape(-1)] = True
    return np.where(used, masses, 0.0)
