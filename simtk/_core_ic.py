"""The implicit step's incomplete Cholesky preconditioner for deformable bodies (core/deformable_ic.pxi),
beside ``simtk._core`` as the element wrappers are: the pattern and each element set's slots are checked once
when made, so that the kernels, which index through them, cannot write outside their arrays; each call checks
only its per-call arrays."""
from __future__ import annotations

import numpy as np

from ._core import _k
from ._core_deformable import SpringSet
from ._core_fem import TetraSet

__all__ = ["IncompleteCholesky"]


def _index_array(a, name: str) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.int64)
    if a.ndim not in (1, 2):
        raise ValueError(f"IncompleteCholesky: {name} must be a 1-D or 2-D integer array")
    return a


class IncompleteCholesky:
    """IC(0) of one body's free particles' block of M + h D + h^2 K, on the lower CSR pattern (``indptr``,
    ``indices``: rows ascending, columns ascending, the diagonal last) that core/deformable_ic.pxi describes.

    ``fidx`` (n,) maps each particle to its free index (-1: no variables); ``sets`` pairs each element set
    (SpringSet, TetraSet or TriangleSet of n particles) with its slots (ne, nv^2)."""

    __slots__ = ("n", "fidx", "indptr", "indices", "sets", "a", "L", "diag", "pos")

    def __init__(self, n: int, fidx, indptr, indices, sets: list) -> None:
        self.n = int(n)
        self.fidx = _index_array(fidx, "fidx")
        self.indptr = _index_array(indptr, "indptr")
        self.indices = _index_array(indices, "indices")
        nf = int(self.fidx.max(initial=-1)) + 1
        rows = len(self.indptr) - 1
        ip, ix = self.indptr, self.indices
        if self.fidx.shape != (self.n,) or self.fidx.min(initial=-1) < -1 or rows != 3 * nf:
            raise ValueError(f"IncompleteCholesky: fidx must be ({self.n},) free indices or -1, with 3 rows each")
        if ip[0] != 0 or (np.diff(ip) < 1).any() or ip[-1] != len(ix):
            raise ValueError("IncompleteCholesky: indptr must start at 0, grow by at least 1 and end at len(indices)")
        row = np.repeat(np.arange(rows), np.diff(ip))
        last = ip[1:] - 1
        if (ix < 0).any() or (ix > row).any() or (ix[last] != np.arange(rows)).any() or (
                np.diff(ix)[np.diff(row) == 0] <= 0).any():
            raise ValueError("IncompleteCholesky: each row's columns must ascend to its diagonal")
        self.sets = []
        for es, slot in sets:
            self.sets.append((es, self._check_slot(es, slot)))
        self.a = np.zeros(len(ix))
        self.L = np.zeros(len(ix))
        self.diag = last
        self.pos = np.full(rows, -1, dtype=np.int64)  # the factor's scratch (all -1 between calls)

    def _check_slot(self, es, slot) -> np.ndarray:
        # every slot >= 0 names a block of two free particles inside the rows of the first: for f_a > f_b three
        # columns before the rows' diagonal block, for f_a == f_b the diagonal block itself
        if not isinstance(es, (SpringSet, TetraSet)) or es.n != self.n:
            raise ValueError(f"IncompleteCholesky: expected element sets of {self.n} particles, got {es!r}")
        el = es.seg if isinstance(es, SpringSet) else es.tets
        nv = el.shape[1]
        slot = _index_array(slot, "slot")
        if slot.shape != (len(el), nv * nv):
            raise ValueError(f"IncompleteCholesky: slot must be ({len(el)}, {nv * nv}), got {slot.shape}")
        fa = np.repeat(self.fidx[el], nv, axis=1)
        fb = np.tile(self.fidx[el], (1, nv))
        on = slot >= 0
        s, fa, fb = slot[on], fa[on], fb[on]
        rowlen = np.diff(self.indptr)[np.maximum(3 * fa, 0)]  # row 3 fa (its shortest)
        ok = (fa >= 0) & (fb >= 0) & (s % 3 == 0) & np.where(fa == fb, s + 1 == rowlen, (fa > fb) & (s + 4 <= rowlen))
        if not ok.all():
            raise ValueError("IncompleteCholesky: a slot names a block outside its particle's rows")
        return slot

    def _x(self, x) -> np.ndarray:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (self.n, 3)
                and x.flags.c_contiguous):
            raise ValueError(f"IncompleteCholesky: x must be a C-contiguous float64 array of shape ({self.n}, 3)")
        return x

    def _v(self, v, name: str) -> np.ndarray:
        if not (isinstance(v, np.ndarray) and v.dtype == np.float64 and v.shape == (len(self.diag),)
                and v.flags.c_contiguous):
            raise ValueError(f"IncompleteCholesky: {name} must be a C-contiguous float64 array of shape "
                             f"({len(self.diag)},)")
        return v

    def assemble(self, x, alpha: float, beta: float) -> None:
        """a = the lower blocks of alpha K + beta D of every element at positions x (the masses come in
        `factor`); Rayleigh sets give beta beta_K K, their alpha_M M part is the caller's."""
        self.a[:] = 0.0
        x = self._x(x)
        for es, slot in self.sets:
            if isinstance(es, SpringSet):
                _k.spring_lower_blocks(x, es.seg, es.k, es.L0, es.c, self.fidx, slot, self.indptr, float(alpha),
                                       float(beta), True, self.a)
            else:
                _k.fem_lower_blocks(x, es.tets, es.Bm, es.vol, es.mu, es.lam, es.R, es.xR, self.fidx, slot,
                                    self.indptr, float(alpha) + float(beta) * es.beta_k, self.a)

    def factor(self, diag_add, shift: float = 0.0) -> bool:
        """L = IC(0) of a + diag(diag_add) + shift diag(a); False at a pivot that is not positive."""
        return bool(_k.ic0_factor(self.indptr, self.indices, self.a, self._v(diag_add, "diag_add"), float(shift),
                                  self.L, self.pos))

    def solve(self, r, z) -> None:
        """z = (L L^T)^-1 r (z not r)."""
        _k.ic0_solve(self.indptr, self.indices, self.L, self._v(r, "r"), self._v(z, "z"))
