"""``Constraint.Jit``: a constraint whose errors and forces are a compiled kernel (issue 31).

The kernel is a C function of the signature in ``core/jit_constraints.pxi``: a numba ``cfunc`` that
``simtk.jit.constraint`` builds around the user's error and force functions, or a Cython ``cdef``
function handed through a PyCapsule (``ConstraintKernel.from_capsule``). The elements that share a
kernel are evaluated together, without the GIL, by one ``JitConstraintSet``; G is taken from the
force application (its rows are the forces of unit multipliers), as for ``Constraint.Custom``, and
the solve and projection around them are the matter subsystem's. This module never imports numba.
"""
from __future__ import annotations

import numpy as np

from ... import _core
from ..forces.jit_force import JitKernelError, _param_vector
from ..tree.mobilized_body import MobilizedBody
from .constraint import Constraint, _matter_of

__all__ = ["ConstraintKernel"]

_K = _core._k
_LEVELS = ("position", "velocity", "acceleration")


class ConstraintKernel:
    """A compiled constraint kernel for ``Constraint.Jit``, with ``mp`` holonomic, ``mv`` nonholonomic
    and ``ma`` acceleration-only equations per element.

    Made by ``simtk.jit.constraint`` (numba) or :meth:`from_capsule` (a Cython ``cdef`` function).
    Subclasses give the kernel's address in ``_jit_address`` and may explain a failure in ``_explain``.

    Parameters
    ----------
    name : str
        The kernel's name, used in messages and (by default) in model files.
    mp, mv, ma : int
        Equations per element at each level (at least one in all).
    """

    def __init__(self, name: str, mp: int = 0, mv: int = 0, ma: int = 0):
        counts = []
        for what, x in (("mp", mp), ("mv", mv), ("ma", ma)):
            if isinstance(x, bool) or int(x) != x or x < 0:
                raise ValueError(f"constraint kernel {name!r}: {what} must be an integer >= 0, got {x!r}")
            counts.append(int(x))
        if sum(counts) == 0:
            raise ValueError(f"constraint kernel {name!r}: it must have at least one equation (mp + mv + ma > 0)")
        self.name = str(name)
        self.mp, self.mv, self.ma = counts
        self._capsule = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} (mp={self.mp}, mv={self.mv}, ma={self.ma})>"

    @classmethod
    def from_capsule(cls, capsule, mp: int = 0, mv: int = 0, ma: int = 0,
                     name: str = "capsule kernel") -> "ConstraintKernel":
        """A kernel from a PyCapsule named ``simtk.jit.constraint_kernel`` holding a C function of the
        signature of ``core/jit_constraints.pxi``.

        Parameters
        ----------
        capsule : PyCapsule
            The kernel.
        mp, mv, ma : int
            Its equations per element.
        name : str
            The name used in messages.
        """
        _K.jit_constraint_capsule_address(capsule)
        k = cls(name, mp, mv, ma)
        k._capsule = capsule
        return k

    def _jit_address(self) -> int:
        """The kernel's address, compiling where needed."""
        if self._capsule is None:
            raise NotImplementedError(f"{type(self).__name__} must give its kernel's address")
        return _K.jit_constraint_capsule_address(self._capsule)

    def _explain(self, what: int, ctx_arrays: tuple, params: np.ndarray) -> BaseException | None:
        """The exception the kernel raises at level ``what`` (0, 1, 2: errors; 3: unit forces) on
        ``ctx_arrays`` (t, q, u, R_GB, p_GB, V_GB, udot, A_GB) with Python's exceptions, or None."""
        return None

    def __reduce__(self):
        if self._capsule is not None:
            raise TypeError(f"{self!r}: a kernel from a capsule cannot be pickled (its code is this process's)")
        return object.__reduce__(self)


class _Packed:
    """The elements of one kernel in a plan, their compiled set and zero stand-ins for missing inputs."""

    __slots__ = ("set", "elements", "kernel", "params", "nparams", "_zeros")

    def __init__(self, elements: list, kernel: ConstraintKernel):
        width = max((e._params.size for e in elements), default=0)
        params = np.zeros((len(elements), width))
        for j, e in enumerate(elements):
            params[j, :e._params.size] = e._params
        self.params, self.nparams = params, np.array([e._params.size for e in elements], dtype=np.int64)
        self.set = _K.JitConstraintSet(kernel._jit_address(), params, self.nparams, kernel.mp, kernel.mv, kernel.ma,
                                       kernel)
        self.elements, self.kernel, self._zeros = elements, kernel, None

    def zeros(self, ws):
        z = self._zeros
        if z is None or z[0].shape[0] != ws.nu or z[1].shape[0] != 6 * ws.nb:
            z = self._zeros = (np.zeros(ws.nu), np.zeros(6 * ws.nb))
        return z


def _flat(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def _inputs(packed: _Packed, kin, level: int) -> tuple:
    """(t, q, u, udot, R, p, V, A) flat, zeros standing for what the level does not read."""
    zu, zb = packed.zeros(kin.ws)
    u = _flat(kin.u) if level >= 1 and kin.u is not None else zu
    V = _flat(kin.V) if level >= 1 and kin.V is not None else zb
    udot = _flat(kin.udot) if level >= 2 and kin.udot is not None else zu
    A = _flat(kin.A) if level >= 2 and kin.A is not None else zb
    return float(kin.t), _flat(kin.q), u, udot, _flat(kin.R), _flat(kin.p), V, A


def _raise_failed(packed: _Packed, bad: int, what: int, inputs: tuple) -> None:
    e = packed.elements[bad]
    t, q, u, udot, R, p, V, A = inputs
    nb = R.size // 9
    ctx = (t, q.copy(), u.copy(), R.reshape(nb, 3, 3).copy(), p.reshape(nb, 3).copy(), V.reshape(nb, 2, 3).copy(),
           udot.copy(), A.reshape(nb, 2, 3).copy())
    cause = packed.kernel._explain(what, ctx, e._params)
    doing = _LEVELS[what] + " errors" if what < 3 else "forces (the application of unit multipliers)"
    raise JitKernelError(f"{e!r}: its kernel {packed.kernel.name!r} failed computing its {doing}"
                         + (f": {type(cause).__name__}: {cause}" if cause is not None else
                            " (an exception inside it: an out-of-range index?)"), e) from cause


def _raise_non_finite(packed: _Packed, values: np.ndarray, doing: str) -> None:
    bad = int(np.flatnonzero(~np.isfinite(values.reshape(len(packed.elements), -1)).all(axis=1))[0])
    e = packed.elements[bad]
    raise FloatingPointError(f"{e!r}: its kernel {packed.kernel.name!r} gave non-finite {doing} in this "
                             f"configuration: {values[bad].reshape(-1)}")


def _errors(packed: _Packed, kin, level: int) -> np.ndarray:
    k = packed.kernel
    width = (k.mp, k.mp + k.mv, k.mp + k.mv + k.ma)[level]
    out = np.empty((len(packed.elements), width))
    inputs = _inputs(packed, kin, level)
    bad = packed.set.errors(level, *inputs, out)
    if bad >= 0:
        _raise_failed(packed, bad, level, inputs)
    if not np.isfinite(out).all():
        _raise_non_finite(packed, out, _LEVELS[level] + " errors")
    return out


class _Jit(Constraint):
    """A constraint computed by a compiled kernel: ``Constraint.Jit(matter, kernel, params)``.

    Parameters
    ----------
    matter : SimbodyMatterSubsystem
        The matter subsystem whose bodies the kernel constrains.
    kernel : ConstraintKernel
        Made by ``simtk.jit.constraint`` (numba) or ``ConstraintKernel.from_capsule`` (Cython).
    params : sequence of float or MobilizedBody
        The element's parameter vector, given to the kernel as ``params``; a MobilizedBody entry is
        its body index (and one of the constrained bodies, in order).
    """

    _forces_may_disagree = True  # user force routines: the solver evaluates the errors at the obtained udot

    def __init__(self, matter, kernel: ConstraintKernel, params=()):
        matter = _matter_of(matter, "Constraint.Jit")
        if not isinstance(kernel, ConstraintKernel):
            raise TypeError("Constraint.Jit: kernel must be made by simtk.jit.constraint or "
                            f"ConstraintKernel.from_capsule, got {type(kernel).__name__}")
        what = f"Constraint.Jit (kernel {kernel.name!r})"
        items = list(params) if not isinstance(params, np.ndarray) else params
        self._params = _param_vector(items, f"{what}: params", matter._system)
        self._params.flags.writeable = False
        bodies = [] if isinstance(items, np.ndarray) else [x._index for x in items if isinstance(x, MobilizedBody)]
        self._bodies = list(dict.fromkeys(bodies))
        self._kernel = kernel
        self._mp, self._mv, self._ma = kernel.mp, kernel.mv, kernel.ma
        try:  # (compiled here, before the element joins the subsystem: a kernel numba refuses adds nothing)
            kernel._jit_address()
        except Exception as exc:
            msg = str(exc).strip()
            raise TypeError(f"{what} in {matter._where()}: the kernel cannot be compiled: "
                            f"{type(exc).__name__}: {msg.splitlines()[0] if msg else ''}") from exc
        super().__init__(matter)

    def __repr__(self) -> str:
        return (f"<Constraint.Jit #{getattr(self, '_index', '?')} {self.get_absolute_path()!r} "
                f"kernel {self._kernel.name!r}>")

    @property
    def _bulk_group(self):
        return id(self._kernel)

    def get_kernel(self) -> ConstraintKernel:
        """The element's compiled kernel."""
        return self._kernel

    def get_params(self) -> np.ndarray:
        """The element's parameter vector (a read-only copy)."""
        return self._params.copy()

    def _constrained_body_indices(self) -> list[int]:
        return list(self._bodies)

    # ------------------------------------------------------------------ bulk protocol (see Constraint)
    @classmethod
    def _pack(cls, elements, plan, state):
        return _Packed(list(elements), elements[0]._kernel)

    @classmethod
    def _loop_rows(cls, packed, eq) -> dict:
        """The spec of the compiled time loop's rows of these elements (core/loop_constraints.pxi, LOOP_JIT)."""
        k = packed.kernel
        return dict(family="jit", address=k._jit_address(), params=packed.params, nparams=packed.nparams, mp=k.mp,
                    mv=k.mv, ma=k.ma, owner=k, eq=np.asarray(eq).reshape(-1), e0=0, s0=0)

    @classmethod
    def _position_errors(cls, packed, kin):
        return _errors(packed, kin, 0)

    @classmethod
    def _velocity_errors(cls, packed, kin):
        return _errors(packed, kin, 1)

    @classmethod
    def _acceleration_errors(cls, packed, kin):
        return _errors(packed, kin, 2)

    @classmethod
    def _force_map(cls, packed, kin, eq, out):
        ws = kin.ws
        nb, nu, n, m = ws.nb, ws.nu, len(packed.elements), packed.set.m
        t, q, u, _, R, p, V, _ = inputs = _inputs(packed, kin, 1)
        BF = np.empty((n, m, 6 * nb))
        MF = np.empty((n, m, nu))
        bad = packed.set.unit_forces(t, q, u, R, p, V, BF, MF)
        if bad >= 0:
            _raise_failed(packed, bad, 3, inputs)
        if not (np.isfinite(BF).all() and np.isfinite(MF).all()):
            _raise_non_finite(packed, np.concatenate([BF.reshape(n, -1), MF.reshape(n, -1)], axis=1), "forces")
        BF = BF.reshape(n, m, nb, 2, 3)
        eq = np.asarray(eq).reshape(n, m)
        for j in range(n):
            # Only the bodies some unit multiplier pushes (Ground's entries do nothing to G).
            bodies = np.flatnonzero(np.any(BF[j] != 0.0, axis=(0, 2, 3)))
            bodies = bodies[bodies > 0]
            if len(bodies):
                out.add_rows(eq[j], np.broadcast_to(bodies, (m, len(bodies))), np.zeros((m * len(bodies), 3)),
                             BF[j][:, bodies])
            k, i = np.nonzero(MF[j])
            if len(k):
                out.add_mobility_forces(eq[j][k], i, MF[j][k, i])
        return None


Constraint.Jit = _Jit
_Jit.__qualname__ = "Constraint.Jit"
_Jit.__name__ = "Jit"
