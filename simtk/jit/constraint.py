"""User constraint kernels compiled with numba, for ``Constraint.Jit`` (Simbody's
``Constraint::Custom::Implementation`` written as plain numpy-style functions)::

    import simtk.jit as sj

    def perr(ctx, params, out):                     # out (mp,)
        ...
    def verr(ctx, params, out):                     # out (mp + mv,): d/dt perr, then the velocity errors
        ...
    def aerr(ctx, params, out):                     # out (mp + mv + ma,), reading ctx.udot and ctx.A_GB
        ...

    @sj.constraint(mp=1, position_errors=perr, velocity_errors=verr, acceleration_errors=aerr)
    def forces(ctx, params, multipliers, body_forces, mobility_forces):
        ...                                         # adds the G^T-side forces of the multipliers

    Constraint.Jit(matter, forces, [body1, body2, distance])

``ctx`` is a :data:`JitConstraintContext`: a force kernel's context (``t``, ``q``, ``u``, ``R_GB``,
``p_GB``, ``V_GB``) and ``udot (nu,)``, ``A_GB (nb,2,3)`` (angular, then the origin's acceleration, in
Ground), so the force helpers (``station_location``, ``add_station_force``, ...) work on it. The
errors are in Ground; G is taken from the force function (its forces for a unit multiplier of each
equation), which must therefore be the gradient of the errors: check it with
``simtk.testing.check_constraint``. A velocity error must be the time derivative of its position
error, and an acceleration error that of its velocity error, evaluated at ``ctx.udot``.
Each function reads only what its level has: position errors ``t``, ``q`` and the poses; velocity
errors and the forces also ``u`` and ``V_GB``; acceleration errors also ``udot`` and ``A_GB`` (what a
level does not have is zeros, or the current values, depending on where it is evaluated).
"""
from __future__ import annotations

import hashlib
from collections import namedtuple
from typing import Any, Callable

import numba
import numpy as np
from numba import carray, types

from ..multibody.constraints.jit_constraint import ConstraintKernel
from ._compile import _check_signature, _code_key, _CompiledOnce, _find, _named
from .helpers import _inline, station_offset

__all__ = ["constraint", "NumbaConstraintKernel", "ConstraintKernel", "JitConstraintContext", "station_acceleration"]

#: What a constraint kernel reads: a force kernel's context and udot (nu,), A_GB (nb,2,3).
JitConstraintContext = namedtuple("JitConstraintContext", ["t", "q", "u", "R_GB", "p_GB", "V_GB", "udot", "A_GB"])

_P = types.CPointer(types.float64)
_I = types.int64
_SIG = types.int64(_I, _I, _I, _I, types.float64, _P, _P, _P, _P, _P, _P, _P, _I, _I, _I, _P, _I, _P, _P, _P, _P)


@_inline
def station_acceleration(ctx, b, s):
    """a_GB + alpha_GB x r + w_GB x (w_GB x r), r = R_GB s: the acceleration of station ``s`` of body
    ``b``, in Ground (from ``ctx.A_GB``)."""
    r = station_offset(ctx, b, s)
    w0, w1, w2 = ctx.V_GB[b, 0, 0], ctx.V_GB[b, 0, 1], ctx.V_GB[b, 0, 2]
    A = ctx.A_GB
    c0, c1, c2 = w1 * r[2] - w2 * r[1], w2 * r[0] - w0 * r[2], w0 * r[1] - w1 * r[0]  # w x r
    return (A[b, 1, 0] + A[b, 0, 1] * r[2] - A[b, 0, 2] * r[1] + w1 * c2 - w2 * c1,
            A[b, 1, 1] + A[b, 0, 2] * r[0] - A[b, 0, 0] * r[2] + w2 * c0 - w0 * c2,
            A[b, 1, 2] + A[b, 0, 0] * r[1] - A[b, 0, 1] * r[0] + w0 * c1 - w1 * c0)


def _nothing(ctx, params, out):  # a level without equations
    pass


def _trampoline(fns: tuple, cache: bool):
    # The C entry point of core/jit_constraints.pxi: the context as arrays over the core's buffers, the
    # user's functions inlined (see simtk.jit._bodies for why), any exception inside the status 1.
    keys = [_code_key(f) for f in fns]
    key = None if None in keys else hashlib.sha256("".join(keys).encode()).hexdigest()  # type: ignore[arg-type]
    kp, kv, ka, kf = (_named(numba.njit(inline="always", boundscheck=True)(f), k, "inlined") for f, k in zip(fns, keys))

    def body(what, mp, mv, ma, t, q, u, ud, R, p, V, A, nb, nq, nu, prm, nprm, lam, err, bf, mf):
        ctx = JitConstraintContext(t, carray(q, (nq,)), carray(u, (nu,)), carray(R, (nb, 3, 3)), carray(p, (nb, 3)),
                                   carray(V, (nb, 2, 3)), carray(ud, (nu,)), carray(A, (nb, 2, 3)))
        params = carray(prm, (nprm,))
        if what == 0:
            kp(ctx, params, carray(err, (mp,)))
        elif what == 1:
            kv(ctx, params, carray(err, (mp + mv,)))
        elif what == 2:
            ka(ctx, params, carray(err, (mp + mv + ma,)))
        else:
            kf(ctx, params, carray(lam, (mp + mv + ma,)), carray(bf, (nb, 2, 3)), carray(mf, (nu,)))

    inner = _named(numba.njit(boundscheck=True, cache=cache)(body), key, "constraint")

    @numba.cfunc(_SIG, nopython=True, cache=cache)
    def trampoline(what, mp, mv, ma, t, q, u, ud, R, p, V, A, nb, nq, nu, prm, nprm, lam, err, bf, mf):
        try:
            inner(what, mp, mv, ma, t, q, u, ud, R, p, V, A, nb, nq, nu, prm, nprm, lam, err, bf, mf)
        except Exception:
            return 1
        return 0
    return trampoline


class NumbaConstraintKernel(_CompiledOnce, ConstraintKernel):
    """A constraint kernel written in Python and compiled by numba (made by :func:`constraint`).

    ``py_funcs`` are the user's (position_errors, velocity_errors, acceleration_errors, apply_forces)
    (None where a level has no equations); ``dispatchers`` their numba-compiled forms, callable from
    Python with a :data:`JitConstraintContext` of numpy arrays.
    """

    def __init__(self, apply_forces: Callable, position_errors: Callable | None = None,
                 velocity_errors: Callable | None = None, acceleration_errors: Callable | None = None,
                 mp: int = 0, mv: int = 0, ma: int = 0, cache: bool = True, name: str | None = None):
        what = "simtk.jit.constraint"
        fns: list = []
        for label, fn, names, needed in (
                ("position_errors", position_errors, ("ctx", "params", "perr"), mp > 0),
                ("velocity_errors", velocity_errors, ("ctx", "params", "verr"), mp + mv > 0),
                ("acceleration_errors", acceleration_errors, ("ctx", "params", "aerr"), True),
                ("apply_forces", apply_forces, ("ctx", "params", "multipliers", "body_forces", "mobility_forces"),
                 True)):
            if fn is None:
                if needed:
                    raise TypeError(f"{what}: {label} is required with mp={mp}, mv={mv}, ma={ma}")
                fns.append(None)
                continue
            fn = getattr(fn, "py_func", fn)
            _check_signature(fn, names, f"{what}: {label}")
            fns.append(fn)
        super().__init__(name if name is not None else getattr(fns[3], "__qualname__", repr(fns[3])), mp, mv, ma)
        self.py_funcs = tuple(fns)
        self.cache = bool(cache)
        self._compiled: Any = None
        self._error: BaseException | None = None
        self.dispatchers = tuple(numba.njit(boundscheck=True, cache=self.cache)(f) if f is not None else None
                                 for f in fns)

    def __reduce__(self):
        # A kernel decorated at a module's top level is found again by name (see NumbaForceKernel).
        fn = self.py_funcs[3]
        for qualname in (fn.__qualname__, self.name):
            if _find(fn.__module__, qualname) is self:
                return (_find, (fn.__module__, qualname))
        f = self.py_funcs
        return (NumbaConstraintKernel, (f[3], f[0], f[1], f[2], self.mp, self.mv, self.ma, self.cache, self.name))

    def _build(self, cache: bool):
        # The trampoline is compiled in each process, not cached: a process that loaded one kernel's
        # cached trampoline and compiled another's saved an entry that a later process loaded as the
        # wrong kernel's code (seen with numba 0.6x: two kernels cached, the second one's errors written
        # by the first one's functions). The user's functions (``dispatchers``) are cached.
        f = self.py_funcs
        return _trampoline(tuple(x if x is not None else _nothing for x in f[:3]) + (f[3],), False)


    def _jit_address(self) -> int:
        self.compile()
        return int(self._compiled.address)

    def _explain(self, what: int, ctx_arrays: tuple, params: np.ndarray) -> BaseException | None:
        ctx = JitConstraintContext(*ctx_arrays)
        nb, nu = ctx.p_GB.shape[0], ctx.u.shape[0]
        m = self.mp + self.mv + self.ma
        prm = np.array(params, dtype=float)
        try:
            if what < 3:
                d = self.dispatchers[what]
                if d is not None:
                    d(ctx, prm, np.zeros((self.mp, self.mp + self.mv, m)[what]))
            else:
                for k in range(m):
                    lam = np.zeros(m)
                    lam[k] = 1.0
                    self.dispatchers[3](ctx, prm, lam, np.zeros((nb, 2, 3)), np.zeros(nu))
        except Exception as exc:
            return exc
        return None


def constraint(apply_forces: Callable | None = None, *, mp: int = 0, mv: int = 0, ma: int = 0,
               position_errors: Callable | None = None, velocity_errors: Callable | None = None,
               acceleration_errors: Callable | None = None, cache: bool = True, name: str | None = None) -> Any:
    """Make a constraint kernel for ``Constraint.Jit`` (decorating its force function).

    Parameters
    ----------
    apply_forces : callable
        ``apply_forces(ctx, params, multipliers, body_forces, mobility_forces)``: adds the G^T-side
        forces of ``multipliers (mp+mv+ma,)`` into ``body_forces (nb,2,3)`` (torque about the body
        origin, then force, in Ground) and ``mobility_forces (nu,)``; G is taken from it.
    mp, mv, ma : int
        Holonomic, nonholonomic and acceleration-only equations per element.
    position_errors : callable
        ``position_errors(ctx, params, perr)`` writes ``perr (mp,)`` (required when mp > 0).
    velocity_errors : callable
        ``velocity_errors(ctx, params, verr)`` writes ``verr (mp+mv,)``: d/dt perr, then the
        nonholonomic errors (required when mp + mv > 0).
    acceleration_errors : callable
        ``acceleration_errors(ctx, params, aerr)`` writes ``aerr (mp+mv+ma,)``: d/dt verr, then the
        acceleration-only errors, at ``ctx.udot`` and ``ctx.A_GB``.
    cache : bool
        numba's ``cache=True`` for the functions as Python calls them (``dispatchers``); the C entry
        point around them is compiled once per process.
    name : str, optional
        The kernel's name in messages and model files (default: ``apply_forces``'s ``__qualname__``);
        a kernel bound to this name in its module pickles by reference.

    Returns
    -------
    NumbaConstraintKernel, or a decorator making one when ``apply_forces`` is not given.
    """
    def make(f: Callable) -> NumbaConstraintKernel:
        return NumbaConstraintKernel(f, position_errors, velocity_errors, acceleration_errors, mp, mv, ma, cache, name)
    return make if apply_forces is None else make(apply_forces)
