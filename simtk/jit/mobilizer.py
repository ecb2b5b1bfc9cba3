"""User mobilizer kernels compiled with numba, run by the core's sweeps at built-in speed (issue 31).

Write a mobilizer's X_FM(q) and H_FM(q), and optionally HDot_FM, as plain numpy-style functions::

    import simtk.jit as sj

    def screw_hdot(q, qdot, v, params, out):   # HDot_FM(q, qdot) v; a constant H needs none
        pass

    @sj.mobilizer(nu=1)
    def screw(q, params, R, p, H):
        c, s = np.cos(q[0]), np.sin(q[0])
        R[0, 0] = c; R[0, 1] = -s; R[1, 0] = s; R[1, 1] = c; R[2, 2] = 1.0
        p[2] = params[0] * q[0]
        H[0, 0, 2] = 1.0; H[0, 1, 2] = params[0]

    MobilizedBody.Jit(parent, X_PF, body, X_BM, screw, [pitch])

``position(q, params, R, p, H)`` fills R_FM (3,3), p_FM (3,) and the columns of H_FM (nu, 2, 3):
column j is (angular, linear) velocity of M in F, in F, per unit u_j, so V_FM = sum_j H[j] u_j.
``hdot(q, qdot, v, params, out)`` fills out (2, 3) = HDot_FM(q, qdot) v, HDot the time derivative of
H_FM in F along qdot (the sweeps call it with v = qdot = u). The outputs are zeroed before each call.
qdot = u (nq = nu): a mobilizer whose qdot is not u is a ``MobilizedBody.Custom``.

The kernels are compiled (with bounds checks, and ``cache=True``) when the first ``MobilizedBody.Jit``
using them is made, into C functions the core calls without the GIL (``core/jit_mobilizers.pxi``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    import numba
    from numba import carray, types
except ImportError as exc:  # pragma: no cover - exercised only without numba
    raise ImportError("simtk.jit needs numba: pip install 'simtk[jit]'") from exc

from ..multibody.tree.jit_mobilizer import JitMobilizerError, MobilizerKernel
from ._compile import _check_signature, _code_key, _CompiledOnce, _find, _named

__all__ = ["mobilizer", "NumbaMobilizerKernel", "MobilizerKernel", "JitMobilizerError"]

_P = types.CPointer(types.float64)
_POSITION_SIG = types.int64(_P, types.int64, _P, types.int64, _P, _P, _P)
_HDOT_SIG = types.int64(_P, _P, _P, types.int64, _P, types.int64, _P)


def _mob_named(fn: Callable, dispatcher: Any, what: str) -> Any:
    # as the force trampolines' dispatchers: named by the user's function, so numba's cache finds them
    return _named(dispatcher, _code_key(fn), f"mobilizer.{what}")


def _position_trampoline(fn: Callable, cache: bool):
    # The user's function inlined into a body that takes pointers and sizes only (numba passes an array
    # argument as seven fields and counts references on each: several times a Pin's cost).
    kernel = _mob_named(fn, numba.njit(inline="always", boundscheck=True)(fn), "position-inlined")

    def body(q, n, prm, nprm, R, p, H):
        kernel(carray(q, (n,)), carray(prm, (nprm,)), carray(R, (3, 3)), carray(p, (3,)), carray(H, (n, 2, 3)))
    body = _mob_named(fn, numba.njit(boundscheck=True, cache=cache)(body), "position")

    @numba.cfunc(_POSITION_SIG, nopython=True, cache=cache)
    def trampoline(q, n, prm, nprm, R, p, H):
        try:
            body(q, n, prm, nprm, R, p, H)
        except Exception:
            return 1
        return 0
    return trampoline


def _hdot_trampoline(fn: Callable, cache: bool):
    kernel = _mob_named(fn, numba.njit(inline="always", boundscheck=True)(fn), "hdot-inlined")

    def body(q, qd, v, n, prm, nprm, out):
        kernel(carray(q, (n,)), carray(qd, (n,)), carray(v, (n,)), carray(prm, (nprm,)), carray(out, (2, 3)))
    body = _mob_named(fn, numba.njit(boundscheck=True, cache=cache)(body), "hdot")

    @numba.cfunc(_HDOT_SIG, nopython=True, cache=cache)
    def trampoline(q, qd, v, n, prm, nprm, out):
        try:
            body(q, qd, v, n, prm, nprm, out)
        except Exception:
            return 1
        return 0
    return trampoline


class NumbaMobilizerKernel(_CompiledOnce, MobilizerKernel):
    """A mobilizer kernel written in Python and compiled by numba (made by :func:`mobilizer`).

    ``py_func`` and ``hdot_py_func`` are the user's functions; ``dispatcher`` and ``hdot_dispatcher``
    their numba-compiled forms, callable from Python with numpy arrays.
    """

    def __init__(self, position: Callable, nu: int, hdot: Callable | None = None, cache: bool = True):
        position = getattr(position, "py_func", position)
        _check_signature(position, ("q", "params", "R", "p", "H"), "simtk.jit.mobilizer")
        if hdot is not None:
            hdot = getattr(hdot, "py_func", hdot)
            _check_signature(hdot, ("q", "qdot", "v", "params", "out"), "simtk.jit.mobilizer: hdot")
        super().__init__(getattr(position, "__qualname__", repr(position)), nu, hdot is not None)
        self.py_func = position
        self.hdot_py_func = hdot
        self.cache = bool(cache)
        self._compiled: tuple | None = None
        self._error: BaseException | None = None
        self.dispatcher = numba.njit(boundscheck=True, cache=self.cache)(position)
        self.hdot_dispatcher = numba.njit(boundscheck=True, cache=self.cache)(hdot) if hdot is not None else None

    def __reduce__(self):
        # a kernel decorated at a module's top level is found again by name (see NumbaForceKernel)
        fn = self.py_func
        if _find(fn.__module__, fn.__qualname__) is self:
            return (_find, (fn.__module__, fn.__qualname__))
        return (NumbaMobilizerKernel, (self.py_func, self.nu, self.hdot_py_func, self.cache))

    def _build(self, cache: bool) -> tuple:
        return (_position_trampoline(self.py_func, cache),
                _hdot_trampoline(self.hdot_py_func, cache) if self.hdot_py_func is not None else None)


    def _jit_addresses(self) -> tuple[int, int]:
        self.compile()
        assert self._compiled is not None
        position, hdot = self._compiled
        return int(position.address), int(hdot.address) if hdot is not None else 0

    def _explain(self, q, qdot, v, params) -> BaseException | None:
        try:
            if v is None:
                self.dispatcher(np.array(q, dtype=float), np.array(params, dtype=float), np.zeros((3, 3)),
                                np.zeros(3), np.zeros((self.nu, 2, 3)))
            elif self.hdot_dispatcher is not None:
                self.hdot_dispatcher(np.array(q, dtype=float), np.array(qdot, dtype=float), np.array(v, dtype=float),
                                     np.array(params, dtype=float), np.zeros((2, 3)))
        except Exception as exc:
            return exc
        return None


def mobilizer(position: Callable | None = None, *, nu: int, nq: int | None = None, hdot: Callable | None = None,
              cache: bool = True) -> Any:
    """Make a mobilizer kernel for ``MobilizedBody.Jit`` from ``position(q, params, R, p, H)``.

    Parameters
    ----------
    position : callable
        Fills R_FM (3, 3), p_FM (3,) and the H_FM columns (nu, 2, 3; angular then linear, in F) at q (nu,).
    nu : int
        The number of mobilities, 1 to 6.
    nq : int, optional
        The number of coordinates: nu (qdot = u), the only value taken.
    hdot : callable, optional
        ``hdot(q, qdot, v, params, out)`` fills out (2, 3) = HDot_FM(q, qdot) v. Without it HDot = 0
        (H_FM constant in F, as a Pin's or a Screw's).
    cache : bool
        numba's ``cache=True``: the compiled code is kept on disk between runs.

    Returns
    -------
    NumbaMobilizerKernel, or a decorator making one when ``position`` is not given.
    """
    if nq is not None and nq != nu:
        raise NotImplementedError(f"simtk.jit.mobilizer: nq = {nq} != nu = {nu}: a jit mobilizer has qdot = u; "
                                  "write one whose qdot is N(q) u as a MobilizedBody.Custom")

    def make(f: Callable) -> NumbaMobilizerKernel:
        return NumbaMobilizerKernel(f, nu, hdot, cache)
    return make if position is None else make(position)
