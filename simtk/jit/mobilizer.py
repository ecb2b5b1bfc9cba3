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
H_FM in F along qdot (the sweeps call it with v = u). The outputs are zeroed before each call.
Without more qdot = u (nq = nu). A mobilizer whose qdot is N(q) u (Euler angles with u the angular
velocity, say, or nq != nu) gives ``n(q, params, N)`` writing N (nq, nu), and ``ndot(q, qdot, params,
NDot)`` unless N is constant; ``ninv(q, params, Ninv)`` is optional (the core's default N^-1 is the
least-squares left inverse (N^T N)^-1 N^T)::

    @sj.mobilizer(nq=3, nu=3, n=euler_n, ndot=euler_ndot, hdot=None)
    def ball_euler(q, params, R, p, H): ...

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
_NMAT_SIG = types.int64(_P, _P, types.int64, types.int64, _P, types.int64, _P)


def _mob_named(fn: Callable, dispatcher: Any, what: str) -> Any:
    # as the force trampolines' dispatchers: named by the user's function, so numba's cache finds them
    return _named(dispatcher, _code_key(fn), f"mobilizer.{what}")


def _position_trampoline(fn: Callable, cache: bool, nq: int = 0):
    # The user's function inlined into a body that takes pointers and sizes only (numba passes an array
    # argument as seven fields and counts references on each: several times a Pin's cost). q has n
    # entries (qdot = u), or nq (a constant here) for a kernel with an N kernel; H has n columns.
    tag = f"-nq{nq}" if nq else ""
    kernel = _mob_named(fn, numba.njit(inline="always", boundscheck=True)(fn), f"position-inlined{tag}")

    def body(q, n, prm, nprm, R, p, H):
        m = nq if nq else n
        kernel(carray(q, (m,)), carray(prm, (nprm,)), carray(R, (3, 3)), carray(p, (3,)), carray(H, (n, 2, 3)))
    body = _mob_named(fn, numba.njit(boundscheck=True, cache=cache)(body), f"position{tag}")

    @numba.cfunc(_POSITION_SIG, nopython=True, cache=cache)
    def trampoline(q, n, prm, nprm, R, p, H):
        try:
            body(q, n, prm, nprm, R, p, H)
        except Exception:
            return 1
        return 0
    return trampoline


def _hdot_trampoline(fn: Callable, cache: bool, nq: int = 0):
    tag = f"-nq{nq}" if nq else ""
    kernel = _mob_named(fn, numba.njit(inline="always", boundscheck=True)(fn), f"hdot-inlined{tag}")

    def body(q, qd, v, n, prm, nprm, out):
        m = nq if nq else n
        kernel(carray(q, (m,)), carray(qd, (m,)), carray(v, (n,)), carray(prm, (nprm,)), carray(out, (2, 3)))
    body = _mob_named(fn, numba.njit(boundscheck=True, cache=cache)(body), f"hdot{tag}")

    @numba.cfunc(_HDOT_SIG, nopython=True, cache=cache)
    def trampoline(q, qd, v, n, prm, nprm, out):
        try:
            body(q, qd, v, n, prm, nprm, out)
        except Exception:
            return 1
        return 0
    return trampoline


def _nmat_trampoline(fn: Callable, what: str, cache: bool):
    # N (nq, nu) and NDot (nq, nu) from n(q, params, N) / ndot(q, qdot, params, NDot); N^-1 (nu, nq) from
    # ninv(q, params, Ninv): one C signature for the three (core/jit_mobilizers.pxi)
    kernel = _mob_named(fn, numba.njit(inline="always", boundscheck=True)(fn), f"{what}-inlined")
    if what == "ndot":
        def body(q, qd, nq, nu, prm, nprm, out):
            kernel(carray(q, (nq,)), carray(qd, (nq,)), carray(prm, (nprm,)), carray(out, (nq, nu)))
    elif what == "ninv":
        def body(q, qd, nq, nu, prm, nprm, out):
            kernel(carray(q, (nq,)), carray(prm, (nprm,)), carray(out, (nu, nq)))
    else:
        def body(q, qd, nq, nu, prm, nprm, out):
            kernel(carray(q, (nq,)), carray(prm, (nprm,)), carray(out, (nq, nu)))
    body = _mob_named(fn, numba.njit(boundscheck=True, cache=cache)(body), what)

    @numba.cfunc(_NMAT_SIG, nopython=True, cache=cache)
    def trampoline(q, qd, nq, nu, prm, nprm, out):
        try:
            body(q, qd, nq, nu, prm, nprm, out)
        except Exception:
            return 1
        return 0
    return trampoline


_N_ARGS = {"n": ("q", "params", "N"), "ninv": ("q", "params", "Ninv"), "ndot": ("q", "qdot", "params", "NDot")}


class NumbaMobilizerKernel(_CompiledOnce, MobilizerKernel):
    """A mobilizer kernel written in Python and compiled by numba (made by :func:`mobilizer`).

    ``py_func`` and ``hdot_py_func`` are the user's functions; ``dispatcher`` and ``hdot_dispatcher``
    their numba-compiled forms, callable from Python with numpy arrays; ``n_py_funcs`` the N, N^-1 and
    NDot functions (None where not given).
    """

    def __init__(self, position: Callable, nu: int, hdot: Callable | None = None, cache: bool = True, *,
                 nq: int | None = None, n: Callable | None = None, ninv: Callable | None = None,
                 ndot: Callable | None = None):
        position = getattr(position, "py_func", position)
        _check_signature(position, ("q", "params", "R", "p", "H"), "simtk.jit.mobilizer")
        if hdot is not None:
            hdot = getattr(hdot, "py_func", hdot)
            _check_signature(hdot, ("q", "qdot", "v", "params", "out"), "simtk.jit.mobilizer: hdot")
        nfs = {}
        for what, f in (("n", n), ("ninv", ninv), ("ndot", ndot)):
            if f is not None:
                f = getattr(f, "py_func", f)
                _check_signature(f, _N_ARGS[what], f"simtk.jit.mobilizer: {what}")
            nfs[what] = f
        super().__init__(getattr(position, "__qualname__", repr(position)), nu, hdot is not None, nq=nq,
                         has_n=n is not None, has_ninv=ninv is not None, has_ndot=ndot is not None)
        self.py_func = position
        self.hdot_py_func = hdot
        self.n_py_funcs = nfs
        self.cache = bool(cache)
        self._compiled: tuple | None = None
        self._error: BaseException | None = None
        self.dispatcher = numba.njit(boundscheck=True, cache=self.cache)(position)
        self.hdot_dispatcher = numba.njit(boundscheck=True, cache=self.cache)(hdot) if hdot is not None else None
        self.n_dispatchers = {w: numba.njit(boundscheck=True, cache=self.cache)(f) if f is not None else None
                              for w, f in nfs.items()}

    def __reduce__(self):
        # a kernel decorated at a module's top level is found again by name (see NumbaForceKernel)
        fn = self.py_func
        if _find(fn.__module__, fn.__qualname__) is self:
            return (_find, (fn.__module__, fn.__qualname__))
        if not self.has_n:
            return (NumbaMobilizerKernel, (self.py_func, self.nu, self.hdot_py_func, self.cache))
        return (_numba_n_kernel, (self.py_func, self.nu, self.hdot_py_func, self.cache, self.nq,
                                  self.n_py_funcs["n"], self.n_py_funcs["ninv"], self.n_py_funcs["ndot"]))

    def _build(self, cache: bool) -> tuple:
        if not self.has_n:
            return (_position_trampoline(self.py_func, cache),
                    _hdot_trampoline(self.hdot_py_func, cache) if self.hdot_py_func is not None else None)
        return (_position_trampoline(self.py_func, cache, self.nq),
                _hdot_trampoline(self.hdot_py_func, cache, self.nq) if self.hdot_py_func is not None else None,
                *(_nmat_trampoline(f, w, cache) if f is not None else None for w, f in self.n_py_funcs.items()))


    def _jit_addresses(self) -> tuple[int, ...]:
        self.compile()
        assert self._compiled is not None
        return tuple(int(f.address) if f is not None else 0 for f in self._compiled)

    def _explain(self, q, qdot, v, params, what: str = "") -> BaseException | None:
        nq, nu = self.nq, self.nu
        try:
            if what in ("n", "ninv", "ndot"):
                f = self.n_dispatchers[what] if what != "ninv" or self.n_dispatchers["ninv"] is not None \
                    else self.n_dispatchers["n"]
                qa, pa = np.array(q, dtype=float), np.array(params, dtype=float)
                if what == "ndot":
                    f(qa, np.array(qdot, dtype=float), pa, np.zeros((nq, nu)))
                elif f is self.n_dispatchers["ninv"]:
                    f(qa, pa, np.zeros((nu, nq)))
                else:
                    f(qa, pa, np.zeros((nq, nu)))
            elif v is None:
                self.dispatcher(np.array(q, dtype=float), np.array(params, dtype=float), np.zeros((3, 3)),
                                np.zeros(3), np.zeros((self.nu, 2, 3)))
            elif self.hdot_dispatcher is not None:
                self.hdot_dispatcher(np.array(q, dtype=float), np.array(qdot, dtype=float), np.array(v, dtype=float),
                                     np.array(params, dtype=float), np.zeros((2, 3)))
        except Exception as exc:
            return exc
        return None


def _numba_n_kernel(position, nu, hdot, cache, nq, n, ninv, ndot) -> NumbaMobilizerKernel:
    return NumbaMobilizerKernel(position, nu, hdot, cache, nq=nq, n=n, ninv=ninv, ndot=ndot)


def mobilizer(position: Callable | None = None, *, nu: int, nq: int | None = None, hdot: Callable | None = None,
              n: Callable | None = None, ninv: Callable | None = None, ndot: Callable | None = None,
              cache: bool = True) -> Any:
    """Make a mobilizer kernel for ``MobilizedBody.Jit`` from ``position(q, params, R, p, H)``.

    Parameters
    ----------
    position : callable
        Fills R_FM (3, 3), p_FM (3,) and the H_FM columns (nu, 2, 3; angular then linear, in F) at q (nq,).
    nu : int
        The number of mobilities, 1 to 6.
    nq : int, optional
        The number of coordinates, 1 to 7 (default nu); other than nu needs ``n``.
    hdot : callable, optional
        ``hdot(q, qdot, v, params, out)`` fills out (2, 3) = HDot_FM(q, qdot) v, the derivative along
        qdot (nq,; = N u), applied to v (nu,). Without it HDot = 0 (H_FM constant in F, as a Pin's).
    n : callable, optional
        ``n(q, params, N)`` fills N (nq, nu), qdot = N(q) u. Without it qdot = u.
    ninv : callable, optional
        ``ninv(q, params, Ninv)`` fills a left inverse of N (nu, nq), u = Ninv qdot. Without it the core
        takes (N^T N)^-1 N^T, which is exact for every N of full column rank.
    ndot : callable, optional
        ``ndot(q, qdot, params, NDot)`` fills NDot (nq, nu), the time derivative of N along qdot, so that
        qdotdot = N udot + NDot u. Without it NDot = 0 (N constant).
    cache : bool
        numba's ``cache=True``: the compiled code is kept on disk between runs.

    Returns
    -------
    NumbaMobilizerKernel, or a decorator making one when ``position`` is not given.
    """
    def make(f: Callable) -> NumbaMobilizerKernel:
        if n is None and ninv is None and ndot is None and (nq is None or nq == nu):
            return NumbaMobilizerKernel(f, nu, hdot, cache)  # (the qdot = u kind, as before)
        return NumbaMobilizerKernel(f, nu, hdot, cache, nq=nq, n=n, ninv=ninv, ndot=ndot)
    return make if position is None else make(position)
