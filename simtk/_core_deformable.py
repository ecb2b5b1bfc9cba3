"""Deformable bodies' element sets (core/deformable.pxi), beside ``simtk._core`` as the contact wrappers
are: each set is checked once when made, and each call checks only its per-call arrays."""
from __future__ import annotations

import numpy as np

from ._core import _k

__all__ = ["SpringSet"]


class SpringSet:
    """Springs between particles (core/deformable.pxi), checked once: ``seg`` (ns, 2) particle indices below
    ``n``, stiffness ``k``, rest length ``L0`` and damping ``c`` (ns,) finite and non-negative. Each call checks only
    the per-call arrays' shapes: x, v, dx, dv and the outputs (n, 3) float64 C-contiguous."""

    __slots__ = ("n", "seg", "k", "L0", "c")

    def __init__(self, n: int, seg, k, L0, c):
        self.n = int(n)
        self.seg = np.ascontiguousarray(seg, dtype=np.int64).reshape(-1, 2)
        ns = len(self.seg)
        if ns and (self.seg.min() < 0 or self.seg.max() >= self.n):
            raise ValueError(f"SpringSet: a particle index is outside 0..{self.n - 1}")
        self.k, self.L0, self.c = (np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), (ns,)))
                                   for a in (k, L0, c))
        for name, a in (("stiffness", self.k), ("rest length", self.L0), ("damping", self.c)):
            if not (np.isfinite(a).all() and (a >= 0).all()):
                raise ValueError(f"SpringSet: every {name} must be finite and >= 0")

    def _x(self, name: str, x) -> np.ndarray:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (self.n, 3)
                and x.flags.c_contiguous):
            raise ValueError(f"SpringSet: {name} must be a C-contiguous float64 array of shape ({self.n}, 3)")
        return x

    def add_forces(self, x, v, f) -> float:
        """Add the springs' forces into f (n, 3); their elastic energy."""
        return _k.spring_forces(self._x("x", x), self._x("v", v), self.seg, self.k, self.L0, self.c,
                                self._x("f", f))

    def add_derivative_product(self, x, dx, dv, alpha: float, beta: float, out, definite: bool = False) -> None:
        """out += alpha K dx + beta D dv, K = -df/dx and D = -df/dv at positions x (``definite``: K without
        compressed springs' negative transverse term, positive semidefinite)."""
        _k.spring_force_derivative_product(self._x("x", x), self.seg, self.k, self.L0, self.c, self._x("dx", dx),
                                           self._x("dv", dv), float(alpha), float(beta), self._x("out", out),
                                           bool(definite))
