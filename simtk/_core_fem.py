"""Deformable bodies' finite elements (core/deformable_fem.pxi), beside ``simtk._core`` as the contact and
spring wrappers are: each set is checked once when made, and each call checks only its per-call arrays."""
from __future__ import annotations

import numpy as np

from ._core import _k

__all__ = ["TetraSet", "TriangleSet"]


class TetraSet:
    """Corotational linear tetrahedra (core/deformable_fem.pxi), with SpringSet's interface: ``tets`` (nt, 4)
    particle indices below ``n``, ``Bm`` (nt, 3, 3) inverse rest edge matrices, volume, Lame ``mu`` and ``lam``
    (nt,), vertex masses ``vmass`` (n,) and Rayleigh coefficients (damping force -(alpha_m m v + beta_k K v)).
    It keeps each tet's rotation for the positions it last saw (products at the same x reuse them), so one set is
    not for use from two threads at once."""

    __slots__ = ("n", "tets", "Bm", "vol", "mu", "lam", "vmass", "alpha_m", "beta_k", "R", "xR", "w", "C", "xC")
    _shape = (4, 9, 9)  # vertices, Bm and rotation entries per element
    _kernels = ("tet_forces", "tet_derivative_product")

    def __init__(self, n: int, tets, Bm, vol, mu, lam, vmass, alpha_m: float, beta_k: float):
        nv, nb, nr = self._shape
        self.n = int(n)
        self.tets = np.ascontiguousarray(tets, dtype=np.int64).reshape(-1, nv)
        nt = len(self.tets)
        if nt == 0 or self.tets.min() < 0 or self.tets.max() >= self.n:
            raise ValueError(f"{type(self).__name__}: expected at least one element with particle indices in "
                             f"0..{self.n - 1}")
        self.Bm = np.ascontiguousarray(Bm, dtype=np.float64).reshape(nt, nb)
        self.vol, self.mu, self.lam = (np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), (nt,)))
                                       for a in (vol, mu, lam))
        self.vmass = np.ascontiguousarray(vmass, dtype=np.float64).reshape(self.n)
        self.alpha_m, self.beta_k = float(alpha_m), float(beta_k)
        for name, a in (("Bm", self.Bm), ("volume", self.vol), ("mu", self.mu), ("lambda", self.lam),
                        ("vertex mass", self.vmass), ("damping", np.array([self.alpha_m, self.beta_k]))):
            if not (np.isfinite(a).all() and (name == "Bm" or (a >= 0).all())):
                raise ValueError(f"{type(self).__name__}: every {name} must be finite"
                                 + ("" if name == "Bm" else " and >= 0"))
        self.R = np.zeros((nt, nr))
        self.xR = np.full((self.n, 3), np.nan)  # no rotations yet: the first product computes them
        self.w = np.zeros((self.n, 3))
        # the tets' product keeps Bm R^T per tet beside the x it belongs to (the membranes' has no use for it)
        self.C = np.zeros((nt, 9)) if nv == 4 else np.zeros((0, 9))
        self.xC = np.full((self.n, 3), np.nan)

    def _x(self, name: str, x) -> np.ndarray:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (self.n, 3)
                and x.flags.c_contiguous):
            raise ValueError(f"{type(self).__name__}: {name} must be a C-contiguous float64 array of shape "
                             f"({self.n}, 3)")
        return x

    def add_forces(self, x, v, f) -> float:
        """Add the elements' elastic and damping forces into f (n, 3); their elastic energy."""
        return getattr(_k, self._kernels[0])(self._x("x", x), self._x("v", v), self.tets, self.Bm, self.vol,
                                             self.mu, self.lam, self.vmass, self.alpha_m, self.beta_k, self.R,
                                             self.xR, self._x("f", f))

    def add_derivative_product(self, x, dx, dv, alpha: float, beta: float, out, definite: bool = False) -> None:
        """out += alpha K dx + beta D dv, K = -df/dx with the rotations frozen at x (positive semidefinite
        whatever ``definite``), D = -df/dv."""
        args = (self._x("x", x), self.tets, self.Bm, self.vol, self.mu, self.lam, self.vmass, self.alpha_m,
                self.beta_k, self.R, self.xR)
        if self._shape[0] == 4:
            args += (self.C, self.xC)
        getattr(_k, self._kernels[1])(*args, self._x("dx", dx), self._x("dv", dv), float(alpha), float(beta), self.w,
                                      self._x("out", out))


class TriangleSet(TetraSet):
    """Corotational membrane triangles (core/deformable_fem.pxi), TetraSet's interface: ``tets`` are (nt, 3)
    triangles, ``Bm`` (nt, 2, 2) inverse rest edge matrices in each triangle's plane, ``vol`` thickness times
    area, ``lam`` the plane-stress lambda' = 2 mu lambda / (lambda + 2 mu)."""

    __slots__ = ()
    _shape = (3, 4, 6)
    _kernels = ("tri_forces", "tri_derivative_product")

