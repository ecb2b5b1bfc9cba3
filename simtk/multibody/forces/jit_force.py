"""``Force.Jit``: a force element whose math is a compiled kernel (issue 31).

The kernel is a C function of the signature in ``core/jit_forces.pxi``: a numba ``cfunc`` that
``simtk.jit.force`` builds around the user's ``kernel(ctx, params, body_forces, mobility_forces)``,
or a Cython ``cdef`` function handed through a PyCapsule (``ForceKernel.from_capsule``). The elements
that share a kernel are packed into one compiled set of the core's kind FK_JIT, so the realization,
the fused realization, the compiled time loop, the batch and the functional forms call the kernel
directly, without the GIL. This module never imports numba.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import _core
from ...common.errors import NonFiniteForceError
from ...common.stage import Stage
from ...common.state import State
from ..tree.mobilized_body import MobilizedBody
from .builtin_forces import _matter_arg
from .force import Force, _Packed

__all__ = ["ForceKernel", "JitKernelError"]

_K = _core._k


class JitKernelError(RuntimeError):
    """A compiled force kernel failed (an exception inside it, e.g. an out-of-range body index).

    ``element`` is the ``Force.Jit`` element whose kernel failed.
    """

    def __init__(self, message: str, element=None):
        super().__init__(message)
        self.element = element


class ForceKernel:
    """A compiled force kernel (and optionally its potential energy kernel) for ``Force.Jit``.

    Made by ``simtk.jit.force`` (numba) or by :meth:`from_capsule` (a Cython ``cdef`` function).
    Subclasses give the kernels' addresses in ``_jit_addresses`` and may explain a failure in
    ``_explain``.

    Parameters
    ----------
    name : str
        The kernel's name, used in messages.
    depends_only_on_positions : bool
        Whether its forces depend on nothing above Position (they are then cached while only u changes).
    has_energy : bool
        Whether it has a potential energy kernel.
    """

    def __init__(self, name: str, depends_only_on_positions: bool = False, has_energy: bool = False):
        self.name = str(name)
        self.depends_only_on_positions = bool(depends_only_on_positions)
        self.has_energy = bool(has_energy)
        self._capsules: tuple = ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    @classmethod
    def from_capsule(cls, force: Any, energy: Any = None, name: str = "capsule kernel",
                     depends_only_on_positions: bool = False) -> "ForceKernel":
        """A kernel from PyCapsules named ``simtk.jit.force_kernel`` (and ``simtk.jit.energy_kernel``)
        holding C functions of the signatures of ``core/jit_forces.pxi``.

        Parameters
        ----------
        force, energy : PyCapsule
            The force kernel, and the potential energy kernel or None.
        name : str
            The name used in messages.
        depends_only_on_positions : bool
            Whether its forces depend on nothing above Position.
        """
        _K.capsule_address(force, _K.JIT_FORCE_CAPSULE)
        if energy is not None:
            _K.capsule_address(energy, _K.JIT_ENERGY_CAPSULE)
        k = cls(name, depends_only_on_positions, energy is not None)
        k._capsules = (force, energy)
        return k

    def _jit_addresses(self) -> tuple[int, int]:
        """(force kernel address, energy kernel address or 0), compiling where needed."""
        if not self._capsules:
            raise NotImplementedError(f"{type(self).__name__} must give its kernels' addresses")
        force, energy = self._capsules
        return (_K.capsule_address(force, _K.JIT_FORCE_CAPSULE),
                _K.capsule_address(energy, _K.JIT_ENERGY_CAPSULE) if energy is not None else 0)

    def _explain(self, ctx_arrays: tuple, params: np.ndarray, energy: bool) -> BaseException | None:
        """The exception the kernel raises when run on ``ctx_arrays`` (t, q, u, R_GB, p_GB, V_GB) and
        ``params`` with Python's exceptions (the energy kernel's if ``energy``), or None (unknown)."""
        return None

    def __reduce__(self):
        if self._capsules:
            raise TypeError(f"{self!r}: a kernel from a capsule cannot be pickled (its code is this process's)")
        return object.__reduce__(self)


def _param_vector(params, what: str, system) -> np.ndarray:
    """``params`` as a float vector; a MobilizedBody entry becomes its index (of ``system``)."""
    if isinstance(params, np.ndarray):
        items: Sequence = params.reshape(-1).tolist() if params.ndim <= 1 else [params]
    else:
        try:
            items = list(params)
        except TypeError:
            raise TypeError(f"{what}: params must be a sequence of numbers and MobilizedBody, got "
                            f"{type(params).__name__}") from None
    out = np.empty(len(items))
    for i, x in enumerate(items):
        if isinstance(x, MobilizedBody):
            if x._matter._system is not system:
                raise ValueError(f"{what}: params[{i}] is {x!r}, a body of another System")
            out[i] = x._index
            continue
        try:
            v = float(x)
        except (TypeError, ValueError):
            raise TypeError(f"{what}: params[{i}] must be a number or a MobilizedBody, got {x!r}") from None
        if not np.isfinite(v):
            raise ValueError(f"{what}: params[{i}] must be finite, got {v!r}")
        out[i] = v
    return out


def _ctx_arrays(ws) -> tuple:
    """(t, q, u, R_GB, p_GB, V_GB) of a workspace, copies in the kernels' shapes."""
    nb = ws.nb
    return (_K.get_tree_time(ws), np.array(ws.q, dtype=float), np.array(ws.u, dtype=float),
            np.array(ws.R_GB, dtype=float).reshape(nb, 3, 3), np.array(ws.p_GB, dtype=float).reshape(nb, 3),
            np.array(ws.V_GB, dtype=float).reshape(nb, 2, 3))


class _JitPacked(_Packed):
    """The packed elements of one kernel; a failure is diagnosed element by element."""

    __slots__ = ("kernel",)
    reads_time = True

    def __init__(self, fs, elements: list, kernel: ForceKernel):
        super().__init__(fs, elements)
        self.kernel = kernel

    def raise_if_bad(self, bad: int, ws=None) -> None:
        if bad < 0:
            return
        e = self.elements[bad]
        if ws is None:
            raise NonFiniteForceError(f"{e!r}: its kernel failed or its forces are not finite in this "
                                      "configuration", e)
        bf, mf = np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu)
        if _K.jit_element(self.fs, ws, bad, bf, mf) != 0:
            cause = self.kernel._explain(_ctx_arrays(ws), e._params, False)
            raise JitKernelError(f"{e!r}: its kernel {self.kernel.name!r} failed"
                                 + (f": {type(cause).__name__}: {cause}" if cause is not None else
                                    " (an exception inside it: an out-of-range index?)"), e) from cause
        raise NonFiniteForceError(f"{e!r}: its kernel {self.kernel.name!r} gave non-finite forces in this "
                                  "configuration", e)


class _Jit(Force):
    """A force element computed by a compiled kernel: ``Force.Jit(forces, matter, kernel, params)``.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    matter : SimbodyMatterSubsystem
        The matter subsystem whose bodies the kernel acts on.
    kernel : ForceKernel
        Made by ``@simtk.jit.force`` (numba) or ``ForceKernel.from_capsule`` (Cython).
    params : sequence of float or MobilizedBody
        The element's parameter vector, given to the kernel as ``params``; a MobilizedBody entry is
        its body index.
    depends_only_on_positions : bool, optional
        Overrides the kernel's: whether the forces depend on nothing above Position (then they are
        computed once per change of q and reused while only u changes).
    """

    def __init__(self, forces, matter, kernel: ForceKernel, params=(), depends_only_on_positions: bool | None = None):
        what = "Force.Jit"
        _matter_arg(matter, f"{what}: matter", forces)
        if not isinstance(kernel, ForceKernel):
            raise TypeError(f"{what}: kernel must be made by @simtk.jit.force or ForceKernel.from_capsule, got "
                            f"{type(kernel).__name__}")
        what = f"Force.Jit (kernel {kernel.name!r})"
        self._params = _param_vector(params, f"{what}: params", matter._system)
        self._params.flags.writeable = False
        self._kernel = kernel
        self._position_only_flag = (kernel.depends_only_on_positions if depends_only_on_positions is None
                                    else bool(depends_only_on_positions))
        try:  # (compiled here, before the element joins the subsystem: a kernel numba refuses adds nothing)
            kernel._jit_addresses()
        except Exception as exc:
            raise TypeError(f"{what} in {forces._where()}: the kernel cannot be compiled: "
                            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                            ) from exc
        super().__init__(forces)

    def __repr__(self) -> str:
        return (f"<Force.Jit #{getattr(self, '_index', '?')} {self.get_absolute_path()!r} "
                f"kernel {self._kernel.name!r}>")

    def get_kernel(self) -> ForceKernel:
        """The element's compiled kernel."""
        return self._kernel

    def get_params(self) -> np.ndarray:
        """The element's parameter vector (a read-only copy)."""
        return self._params.copy()

    def _position_only_here(self) -> bool:
        return self._position_only_flag

    def _group_key(self):
        return (self._position_only_flag, id(self._kernel))

    def _singularity_hint(self) -> str:
        return f" (or its kernel {self._kernel.name!r} failed: realize this State for the kernel's error)"

    @classmethod
    def _pack(cls, elements, matter, state):
        kernel = elements[0]._kernel
        add, energy = kernel._jit_addresses()
        width = max((e._params.size for e in elements), default=0)
        params = np.zeros((len(elements), width))
        for j, e in enumerate(elements):
            params[j, :e._params.size] = e._params
        fs = _K.jit_force_set(params, [e._params.size for e in elements], add, energy, kernel)
        return _JitPacked(fs, elements, kernel)

    @classmethod
    def _calc_bulk(cls, packed, matter, state: State, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        need = Stage.Position if packed.elements[0]._position_only_flag else Stage.Velocity
        ws = matter._at(state, need, "Force.Jit forces").ws
        _K.set_tree_time(ws, state.get_time())
        packed.raise_if_bad(packed.fs.add(ws, body_forces, mobility_forces), ws)

    @classmethod
    def _energy_bulk(cls, packed, matter, state: State) -> float:
        if not packed.kernel.has_energy:
            return 0.0
        ws = matter._at(state, Stage.Position, "Force.Jit potential energy").ws
        _K.set_tree_time(ws, state.get_time())
        total = 0.0
        for j, e in enumerate(packed.elements):
            status, value = _K.jit_element_energy(packed.fs, ws, j)
            if status != 0:
                cause = packed.kernel._explain(_ctx_arrays(ws), e._params, True)
                raise JitKernelError(f"{e!r}: its energy kernel failed"
                                     + (f": {type(cause).__name__}: {cause}" if cause is not None else ""),
                                     e) from cause
            if not np.isfinite(value):
                raise NonFiniteForceError(f"{e!r}: its potential energy is not finite in this configuration", e)
            total += value
        return total


Force.Jit = _Jit
_Jit.__qualname__ = "Force.Jit"
_Jit.__name__ = "Jit"
