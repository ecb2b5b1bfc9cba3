"""The implicit step's preconditioner for one deformable body: IC(0) of its free particles' block of
M (1 + h alpha_M) + h D + h^2 K (core/deformable_ic.pxi says why IC(0) and how the pattern is laid out).

The pattern (which particles share an element) is fixed by the Topology, so it is built once per
integration interval; each step assembles the blocks at the step's start and factors them in place
(no allocation), and each conjugate-gradient iteration applies the factor's two triangular solves.
"""
from __future__ import annotations

import numpy as np

from .._core_deformable import SpringSet
from .._core_ic import IncompleteCholesky

__all__ = ["ParticlePreconditioner"]

# Manteuffel shifts tried, in turn, when IC(0) meets a pivot that is not positive (M + h D + h^2 K is positive
# definite, but an incomplete factor of it need not exist); the shifted factor is still a preconditioner
_SHIFTS = (0.0, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def _pairs(elems: np.ndarray, fidx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # each element's ordered vertex pairs (a, b) at column nv a + b: the free index of a, of b
    nv = elems.shape[1]
    f = fidx[elems]
    return np.repeat(f, nv, axis=1), np.tile(f, (1, nv))


class ParticlePreconditioner:
    """z = (L L^T)^-1 r on a body's free particles' generalized speeds (3 per free particle, State order).

    Parameters
    ----------
    body : DeformableBody
        Realized to Topology (its element sets and free particles are known).
    """

    def __init__(self, body) -> None:
        n = body.get_num_particles()
        free = body._free
        nf = len(free)
        fidx = np.full(n, -1, dtype=np.int64)
        fidx[free] = np.arange(nf)
        sets = body._element_sets
        # the lower pairs f_a > f_b of free particles sharing an element: each free particle's lower neighbours
        keys = [np.zeros(0, dtype=np.int64)]
        for es in sets:
            fa, fb = _pairs(es.seg if isinstance(es, SpringSet) else es.tets, fidx)
            low = (fb >= 0) & (fa > fb)
            keys.append(fa[low] * nf + fb[low])
        edges = np.unique(np.concatenate(keys))
        ea, eb = edges // max(nf, 1), edges % max(nf, 1)
        nl = np.bincount(ea, minlength=nf)
        first = np.concatenate([[0], np.cumsum(nl)])
        # rows 3 f + i: 3 nl(f) + i + 1 entries, the neighbours' 3 columns each, then 3 f .. 3 f + i
        lengths = (3 * nl[:, None] + np.arange(1, 4)[None, :]).reshape(-1)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        indices = np.empty(indptr[-1], dtype=np.int64)
        for f in range(nf):
            nb = 3 * eb[first[f]:first[f + 1]]
            cols = np.concatenate([(nb[:, None] + np.arange(3)[None, :]).reshape(-1), 3 * f + np.arange(3)])
            for i in range(3):
                r = 3 * f + i
                indices[indptr[r]:indptr[r + 1]] = cols[:len(nb) * 3 + i + 1]
        with_slots = []
        for es in sets:
            fa, fb = _pairs(es.seg if isinstance(es, SpringSet) else es.tets, fidx)
            slot = np.full(fa.shape, -1, dtype=np.int64)
            low = (fb >= 0) & (fa > fb)
            rank = np.searchsorted(edges, fa[low] * nf + fb[low]) - first[fa[low]]
            slot[low] = 3 * rank
            diag = (fa >= 0) & (fa == fb)
            slot[diag] = 3 * nl[fa[diag]]
            with_slots.append((es, slot))
        self._ic = IncompleteCholesky(n, fidx, indptr, indices, with_slots)
        m = np.repeat(body.get_masses()[free], 3)
        am = np.zeros(3 * nf)
        for es in sets:
            if not isinstance(es, SpringSet):
                am += es.alpha_m * np.repeat(es.vmass[free], 3)
        self._m, self._am = m, am
        self._dadd = np.zeros(3 * nf)

    def update(self, x: np.ndarray, h: float) -> bool:
        """Assemble at positions x (n, 3) for step h and factor; False when no shift gives a factor (a
        non-finite x)."""
        ic = self._ic
        ic.assemble(x, h * h, h)
        np.multiply(self._am, h, out=self._dadd)
        self._dadd += self._m
        for shift in _SHIFTS:
            if ic.factor(self._dadd, shift):
                return True
        return False

    def solve(self, r: np.ndarray, z: np.ndarray) -> None:
        """z = the preconditioned r (3 nf,), z not r."""
        self._ic.solve(r, z)
