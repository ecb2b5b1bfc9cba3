"""User force kernels compiled with numba, run by the core at built-in speed (optional extra ``[jit]``).

(Mobilizer kernels, ``@simtk.jit.mobilizer`` for ``MobilizedBody.Jit``: see ``simtk.jit.mobilizer``.)

Write the math of a force as a plain numpy-style function and decorate it::

    import simtk.jit as sj

    @sj.force
    def spring(ctx, params, body_forces, mobility_forces):
        b1, b2, k, x0 = int(params[0]), int(params[4]), params[8], params[9]
        p1 = sj.station_location(ctx, b1, params[1:4])
        p2 = sj.station_location(ctx, b2, params[5:8])
        d = sj.sub3(p2, p1)
        L = sj.norm3(d)
        f = sj.scale3(-k * (L - x0) / L, d)     # on station 2
        sj.add_station_force(ctx, body_forces, b2, params[5:8], f)
        sj.add_station_force(ctx, body_forces, b1, params[1:4], sj.scale3(-1.0, f))

    Force.Jit(forces, matter, spring, [b1, *s1, b2, *s2, k, x0])

``ctx`` is a :data:`JitContext` (``t``, ``q``, ``u``, ``R_GB (nb,3,3)``, ``p_GB (nb,3)``,
``V_GB (nb,2,3)``); the kernel adds into ``body_forces (nb,2,3)`` (torque about the body origin,
then force, in Ground) and ``mobility_forces (nu,)``. A potential energy kernel
``energy(ctx, params) -> float`` is optional (``@force(potential_energy=energy)``).

The kernel is compiled (with bounds checks, and ``cache=True``) when the first ``Force.Jit`` using it
is made, into a C function the core calls without the GIL (see ``core/jit_forces.pxi``). This module
imports numba; ``import simtk`` does not.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    import numba
    from numba import carray, types
except ImportError as exc:  # pragma: no cover - exercised only without numba
    raise ImportError("simtk.jit needs numba: pip install 'simtk[jit]'") from exc

from ..multibody.forces.jit_force import ForceKernel, JitKernelError
from ._compile import _check_signature, _code_key, _CompiledOnce, _find, _named
from .helpers import (
    JitContext,
    add3,
    add_body_torque,
    add_mobility_force,
    add_station_force,
    cross3,
    dot3,
    norm3,
    scale3,
    station_location,
    station_offset,
    station_velocity,
    sub3,
)
from .mobilizer import JitMobilizerError, MobilizerKernel, NumbaMobilizerKernel, mobilizer

__all__ = ["mobilizer", "NumbaMobilizerKernel", "MobilizerKernel", "JitMobilizerError",
           "force", "NumbaForceKernel", "ForceKernel", "JitKernelError", "JitContext", "station_location",
           "station_offset", "station_velocity", "add_station_force", "add_body_torque", "add_mobility_force",
           "add3", "sub3", "scale3", "dot3", "cross3", "norm3"]

_P = types.CPointer(types.float64)
_FORCE_SIG = types.int64(types.float64, _P, _P, _P, _P, _P, types.int64, types.int64, types.int64, _P,
                         types.int64, _P, _P)
_ENERGY_SIG = types.int64(types.float64, _P, _P, _P, _P, _P, types.int64, types.int64, types.int64, _P,
                          types.int64, _P)


def _bodies(fn: Callable, energy: bool, cache: bool) -> Any:
    # The trampoline's body: the context as arrays over the core's buffers (no copy, no allocation) and
    # the user's function inlined (numba's IR inlining). Called as a function of its own, numba passes
    # every array as its seven fields and counts references on each, several times the kernel's cost;
    # this body is called with pointers and sizes only. (A raise inlined into the trampoline's try
    # would not be caught: numba catches the errors of calls.)
    key = _code_key(fn)
    kernel = _named(numba.njit(inline="always", boundscheck=True)(fn), key, "inlined")
    if energy:
        def body(t, q, u, R, p, V, nb, nq, nu, prm, nprm, out):
            ctx = JitContext(t, carray(q, (nq,)), carray(u, (nu,)), carray(R, (nb, 3, 3)), carray(p, (nb, 3)),
                             carray(V, (nb, 2, 3)))
            carray(out, (1,))[0] = kernel(ctx, carray(prm, (nprm,)))
    else:
        def body(t, q, u, R, p, V, nb, nq, nu, prm, nprm, bf, mf):  # type: ignore[misc]
            ctx = JitContext(t, carray(q, (nq,)), carray(u, (nu,)), carray(R, (nb, 3, 3)), carray(p, (nb, 3)),
                             carray(V, (nb, 2, 3)))
            kernel(ctx, carray(prm, (nprm,)), carray(bf, (nb, 2, 3)), carray(mf, (nu,)))
    return _named(numba.njit(boundscheck=True, cache=cache)(body), key, "energy" if energy else "force")


def _force_trampoline(fn: Callable, cache: bool):
    # The C entry point of core/jit_forces.pxi around the user's kernel; any exception inside is the status 1.
    body = _bodies(fn, False, cache)

    @numba.cfunc(_FORCE_SIG, nopython=True, cache=cache)
    def trampoline(t, q, u, R, p, V, nb, nq, nu, prm, nprm, bf, mf):
        try:
            body(t, q, u, R, p, V, nb, nq, nu, prm, nprm, bf, mf)
        except Exception:
            return 1
        return 0
    return trampoline


def _energy_trampoline(fn: Callable, cache: bool):
    body = _bodies(fn, True, cache)

    @numba.cfunc(_ENERGY_SIG, nopython=True, cache=cache)
    def trampoline(t, q, u, R, p, V, nb, nq, nu, prm, nprm, out):
        try:
            body(t, q, u, R, p, V, nb, nq, nu, prm, nprm, out)
        except Exception:
            return 1
        return 0
    return trampoline


class NumbaForceKernel(_CompiledOnce, ForceKernel):
    """A force kernel written in Python and compiled by numba (made by :func:`force`).

    ``py_func`` and ``energy_py_func`` are the user's functions; ``dispatcher`` and
    ``energy_dispatcher`` their numba-compiled forms, callable from Python with a
    :data:`JitContext` of numpy arrays (a Python twin of the element can call them).
    """

    def __init__(self, fn: Callable, potential_energy: Callable | None = None,
                 depends_only_on_positions: bool = False, cache: bool = True):
        fn = getattr(fn, "py_func", fn)
        _check_signature(fn, ("ctx", "params", "body_forces", "mobility_forces"), "simtk.jit.force")
        if potential_energy is not None:
            potential_energy = getattr(potential_energy, "py_func", potential_energy)
            _check_signature(potential_energy, ("ctx", "params"), "simtk.jit.force: potential_energy")
        super().__init__(getattr(fn, "__qualname__", repr(fn)), depends_only_on_positions,
                         potential_energy is not None)
        self.py_func = fn
        self.energy_py_func = potential_energy
        self.cache = bool(cache)
        self._compiled: tuple | None = None
        self._error: BaseException | None = None
        self.dispatcher = numba.njit(boundscheck=True, cache=self.cache)(fn)
        self.energy_dispatcher = (numba.njit(boundscheck=True, cache=self.cache)(potential_energy)
                                  if potential_energy is not None else None)

    def __reduce__(self):
        # A kernel decorated at a module's top level is that module's attribute, not its function: found
        # again by name (pickling the function by reference would find the kernel, not the function).
        fn = self.py_func
        if _find(fn.__module__, fn.__qualname__) is self:
            return (_find, (fn.__module__, fn.__qualname__))
        return (NumbaForceKernel, (self.py_func, self.energy_py_func, self.depends_only_on_positions, self.cache))

    def _build(self, cache: bool) -> tuple:
        add = _force_trampoline(self.py_func, cache)
        energy = (_energy_trampoline(self.energy_py_func, cache) if self.energy_py_func is not None
                  else None)
        return add, energy


    def _jit_addresses(self) -> tuple[int, int]:
        self.compile()
        assert self._compiled is not None
        add, energy = self._compiled
        return int(add.address), int(energy.address) if energy is not None else 0

    def _explain(self, ctx_arrays: tuple, params: np.ndarray, energy: bool) -> BaseException | None:
        nb, nu = ctx_arrays[3].shape[0], ctx_arrays[2].shape[0]
        ctx = JitContext(*ctx_arrays)
        try:
            if energy:
                if self.energy_dispatcher is not None:
                    self.energy_dispatcher(ctx, np.array(params, dtype=float))
            else:
                self.dispatcher(ctx, np.array(params, dtype=float), np.zeros((nb, 2, 3)), np.zeros(nu))
        except Exception as exc:
            return exc
        return None

    def __call__(self, ctx: Any, params: Any, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Run the compiled kernel from Python (``ctx`` a :data:`JitContext` of numpy arrays)."""
        self.dispatcher(ctx, params, body_forces, mobility_forces)


def force(fn: Callable | None = None, *, potential_energy: Callable | None = None,
          depends_only_on_positions: bool = False, cache: bool = True) -> Any:
    """Make a force kernel for ``Force.Jit`` from ``fn(ctx, params, body_forces, mobility_forces)``.

    Parameters
    ----------
    fn : callable
        The kernel (plain Python in numba's subset; it adds into ``body_forces`` and ``mobility_forces``).
    potential_energy : callable, optional
        ``energy(ctx, params) -> float``, the elements' potential energy.
    depends_only_on_positions : bool
        Whether the forces depend on nothing above Position (they are then cached while only u changes).
    cache : bool
        numba's ``cache=True``: the compiled code is kept on disk between runs.

    Returns
    -------
    NumbaForceKernel, or a decorator making one when ``fn`` is not given.
    """
    def make(f: Callable) -> NumbaForceKernel:
        return NumbaForceKernel(f, potential_energy, depends_only_on_positions, cache)
    return make if fn is None else make(fn)


# Constraint kernels (after the helpers above, which simtk.jit.constraint uses).
from .constraint import (  # noqa: E402
    ConstraintKernel,
    JitConstraintContext,
    NumbaConstraintKernel,
    constraint,
    station_acceleration,
)

__all__ += ["constraint", "NumbaConstraintKernel", "ConstraintKernel", "JitConstraintContext", "station_acceleration"]
