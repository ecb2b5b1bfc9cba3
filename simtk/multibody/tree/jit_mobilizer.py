"""``MobilizedBody.Jit``: a mobilizer whose kinematics are compiled kernels (issue 31, the mobilizer half).

The kernels are C functions of the signatures in ``core/jit_mobilizers.pxi``: numba ``cfunc``
trampolines that ``simtk.jit.mobilizer`` builds around the user's ``position(q, params, R, p, H)``
and ``hdot(q, qdot, v, params, out)``, or Cython ``cdef`` functions handed through PyCapsules
(``MobilizerKernel.from_capsule``). The body is a compiled joint kind of the core (code
``JIT_JOINT_CODES[n]``, qdot = u, or ``JITN_JOINT_CODES[nq, nu]`` with N kernels, qdot = N(q) u): the
realization, the fused realization, the compiled time loop, the batch and the functional forms call its
kernels directly, without the GIL.

A ``MobilizedBody.Jit`` is also a ``MobilizedBody.Custom`` whose implementation calls the same
compiled kernels from Python (through ctypes), so that ``simtk.testing.check_mobilizer`` checks
every method of it and the fitting defaults work. This module never imports numba.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _core
from ...spatial import Rotation, Transform
from .custom_mobilizer import Custom, CustomImplementation
from .mobilized_body import MobilizedBody

if TYPE_CHECKING:
    from ...common.state import State

__all__ = ["MobilizerKernel", "JitMobilizerError", "JitMobilizerImplementation", "JitMobilizerNImplementation", "Jit"]

_K = _core._k
_D = ctypes.POINTER(ctypes.c_double)
_POSITION_C = ctypes.CFUNCTYPE(ctypes.c_int64, _D, ctypes.c_int64, _D, ctypes.c_int64, _D, _D, _D)
_HDOT_C = ctypes.CFUNCTYPE(ctypes.c_int64, _D, _D, _D, ctypes.c_int64, _D, ctypes.c_int64, _D)
_NMAT_C = ctypes.CFUNCTYPE(ctypes.c_int64, _D, _D, ctypes.c_int64, ctypes.c_int64, _D, ctypes.c_int64, _D)


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_D)


class JitMobilizerError(RuntimeError):
    """A compiled mobilizer kernel failed (an exception inside it, e.g. an out-of-range index)."""


def _param_vector(params, what: str) -> np.ndarray:
    """``params`` as a finite float vector (a MobilizedBody entry becomes its index)."""
    try:
        items = list(np.asarray(params, dtype=object).reshape(-1))
    except TypeError:
        raise TypeError(f"{what}: params must be a sequence of numbers, got {type(params).__name__}") from None
    out = np.empty(len(items))
    for i, x in enumerate(items):
        try:
            out[i] = x._index if isinstance(x, MobilizedBody) else float(x)
        except (TypeError, ValueError):
            raise TypeError(f"{what}: params[{i}] must be a number, got {x!r}") from None
        if not np.isfinite(out[i]):
            raise ValueError(f"{what}: params[{i}] must be finite, got {x!r}")
    return out


def _count(x, name: str, what: str, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 1 <= int(x) <= hi:
        raise ValueError(f"jit mobilizer {name!r}: {what} must be an int from 1 to {hi}, got {x!r}")
    return int(x)


class MobilizerKernel:
    """The compiled kernels of a jit mobilizer with ``nu`` mobilities for ``MobilizedBody.Jit``.

    Made by ``simtk.jit.mobilizer`` (numba) or by :meth:`from_capsule` (Cython ``cdef`` functions).
    Subclasses give the kernels' addresses in ``_jit_addresses`` and may explain a failure in
    ``_explain``. Without an N kernel qdot = u (nq = nu); with one qdot = N(q) u.

    Parameters
    ----------
    name : str
        The kernel's name, used in messages.
    nu : int
        The number of mobilities, 1 to 6.
    has_hdot : bool
        Whether there is an HDot kernel (without one HDot = 0, as for a Pin or a Screw).
    nq : int, optional
        The number of coordinates, 1 to 7 (default nu); other than nu needs an N kernel.
    has_n, has_ninv, has_ndot : bool
        Whether there are kernels for N (nq, nu), a left inverse N^-1 (nu, nq) and NDot (nq, nu).
        Without an N^-1 kernel the core takes (N^T N)^-1 N^T; without an NDot kernel NDot = 0.
    """

    def __init__(self, name: str, nu: int, has_hdot: bool = True, *, nq: int | None = None, has_n: bool = False,
                 has_ninv: bool = False, has_ndot: bool = False):
        self.name = str(name)
        self.nu = _count(nu, self.name, "nu", 6)
        self.nq = self.nu if nq is None else _count(nq, self.name, "nq", _core.JIT_MAX_NQ)
        self.has_hdot = bool(has_hdot)
        self.has_n = bool(has_n)
        if self.nq != self.nu and not self.has_n:
            raise ValueError(f"jit mobilizer {self.name!r}: nq = {self.nq} != nu = {self.nu}, so qdot = u cannot "
                             "hold: give an N kernel (qdot = N(q) u)")
        if (has_ninv or has_ndot) and not self.has_n:
            raise ValueError(f"jit mobilizer {self.name!r}: an N^-1 or NDot kernel needs an N kernel")
        self.has_ninv = bool(has_ninv)
        self.has_ndot = bool(has_ndot)
        self._capsules: tuple = ()
        self._cfuncs: tuple | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} nu={self.nu}" + (f" nq={self.nq} N>" if self.has_n else ">")

    def _joint_code(self) -> int:
        """The core's joint code of a body with these kernels."""
        return _core.JITN_JOINT_CODES[self.nq, self.nu] if self.has_n else _core.JIT_JOINT_CODES[self.nu]

    @classmethod
    def from_capsule(cls, position: Any, hdot: Any = None, *, nu: int, name: str = "capsule mobilizer",
                     nq: int | None = None, n: Any = None, ninv: Any = None, ndot: Any = None) -> "MobilizerKernel":
        """A kernel from PyCapsules named ``simtk.jit.mobilizer_position`` (and ``simtk.jit.mobilizer_hdot``,
        ``simtk.jit.mobilizer_nmat`` for N, N^-1 and NDot) holding C functions of the signatures of
        ``core/jit_mobilizers.pxi``.

        Parameters
        ----------
        position, hdot : PyCapsule
            The position kernel, and the HDot kernel or None (HDot = 0).
        nu : int
            The number of mobilities (1 to 6).
        name : str
            The name used in messages.
        nq : int, optional
            The number of coordinates (1 to 7; default nu).
        n, ninv, ndot : PyCapsule, optional
            The N, N^-1 and NDot kernels (qdot = N(q) u); without ``n`` qdot = u.
        """
        _K.jit_mobilizer_capsule_address(position, _K.JIT_MOBILIZER_CAPSULE)
        if hdot is not None:
            _K.jit_mobilizer_capsule_address(hdot, _K.JIT_HDOT_CAPSULE)
        for c in (n, ninv, ndot):
            if c is not None:
                _K.jit_mobilizer_capsule_address(c, _K.JIT_NMAT_CAPSULE)
        k = cls(name, nu, hdot is not None, nq=nq, has_n=n is not None, has_ninv=ninv is not None,
                has_ndot=ndot is not None)
        k._capsules = (position, hdot, n, ninv, ndot)
        return k

    def _jit_addresses(self) -> tuple[int, ...]:
        """(position kernel address, HDot kernel address or 0), and with an N kernel the addresses of N,
        N^-1 and NDot (0: none); compiling where needed."""
        if not self._capsules:
            raise NotImplementedError(f"{type(self).__name__} must give its kernels' addresses")
        position, hdot, n, ninv, ndot = self._capsules
        out = (_K.jit_mobilizer_capsule_address(position, _K.JIT_MOBILIZER_CAPSULE),
               _K.jit_mobilizer_capsule_address(hdot, _K.JIT_HDOT_CAPSULE) if hdot is not None else 0)
        if n is None:
            return out
        return out + tuple(_K.jit_mobilizer_capsule_address(c, _K.JIT_NMAT_CAPSULE) if c is not None else 0
                           for c in (n, ninv, ndot))

    def _explain(self, q: np.ndarray, qdot: np.ndarray | None, v: np.ndarray | None,
                 params: np.ndarray, what: str = "") -> BaseException | None:
        """The exception the position kernel (HDot's if ``v`` is given; N's, N^-1's or NDot's if ``what`` is
        "n", "ninv" or "ndot") raises with Python's exceptions at these arguments, or None (unknown)."""
        return None

    def __reduce__(self):
        if self._capsules:
            raise TypeError(f"{self!r}: a kernel from a capsule cannot be pickled (its code is this process's)")
        return object.__reduce__(self)

    # ------------------------------------------------------------------ calling the compiled code from Python
    def _c(self) -> tuple:
        if self._cfuncs is None:
            addr = self._jit_addresses()
            pos, hdot = addr[:2]
            self._cfuncs = (_POSITION_C(pos), _HDOT_C(hdot) if hdot else None,
                            *(_NMAT_C(a) if a else None for a in (tuple(addr[2:]) or (0, 0, 0))))
        return self._cfuncs

    def _fail(self, what: str, q, qdot, v, params, where: str) -> JitMobilizerError:
        cause = self._explain(q, qdot, v, params, what)
        return JitMobilizerError(f"{where}: its kernel {self.name!r} ({what}) failed at q = {q}"
                              + (f": {type(cause).__name__}: {cause}" if cause is not None else
                                 " (an exception inside it: an out-of-range index?)"))

    def evaluate_position(self, q, params, where: str = "") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R_FM (3,3), p_FM (3,), H_FM (nu,2,3)) from the compiled position kernel at ``q`` (nq,)."""
        n = self.nu
        qa = np.ascontiguousarray(q, dtype=np.float64).reshape(self.nq)
        pa = np.ascontiguousarray(params, dtype=np.float64).reshape(-1)
        R, p, H = np.zeros((3, 3)), np.zeros(3), np.zeros((n, 2, 3))
        if self._c()[0](_ptr(qa), n, _ptr(pa), pa.shape[0], _ptr(R), _ptr(p), _ptr(H)) != 0:
            raise self._fail("position", qa, None, None, pa, where or repr(self))
        return R, p, H

    def evaluate_hdot(self, q, qdot, v, params, where: str = "") -> np.ndarray:
        """HDot_FM(q, qdot) v (2, 3) from the compiled HDot kernel (zeros without one)."""
        n = self.nu
        qa, qd, va = (np.ascontiguousarray(x, dtype=np.float64).reshape(k) for x, k in
                      ((q, self.nq), (qdot, self.nq), (v, n)))
        pa = np.ascontiguousarray(params, dtype=np.float64).reshape(-1)
        out = np.zeros((2, 3))
        fn = self._c()[1]
        if fn is not None and fn(_ptr(qa), _ptr(qd), _ptr(va), n, _ptr(pa), pa.shape[0], _ptr(out)) != 0:
            raise self._fail("hdot", qa, qd, va, pa, where or repr(self))
        return out

    def evaluate_n(self, q, params, where: str = "", which: str = "n", qdot=None) -> np.ndarray:
        """N (nq, nu) from the compiled N kernel at ``q`` (``which="n"``), a left inverse N^-1 (nu, nq)
        (``"ninv"``: its kernel's, else (N^T N)^-1 N^T as the core takes it) or NDot (nq, nu) along
        ``qdot`` (``"ndot"``: zeros without its kernel). Identity and zeros without an N kernel."""
        nq, nu = self.nq, self.nu
        if not self.has_n:
            return np.zeros((nq, nu)) if which == "ndot" else np.eye(nq)
        k = {"n": 2, "ninv": 3, "ndot": 4}[which]
        fn = self._c()[k]
        if fn is None:
            if which == "ndot":
                return np.zeros((nq, nu))
            N = self.evaluate_n(q, params, where)
            try:
                return np.linalg.solve(N.T @ N, N.T)
            except np.linalg.LinAlgError:
                raise FloatingPointError(f"{where or repr(self)}: its kernel {self.name!r} gave an N of rank "
                                         f"< nu = {nu} at q = {np.asarray(q)}: N has no left inverse") from None
        qa = np.ascontiguousarray(q, dtype=np.float64).reshape(nq)
        qd = np.ascontiguousarray(np.zeros(nq) if qdot is None else qdot, dtype=np.float64).reshape(nq)
        pa = np.ascontiguousarray(params, dtype=np.float64).reshape(-1)
        out = np.zeros((nu, nq) if which == "ninv" else (nq, nu))
        if fn(_ptr(qa), _ptr(qd), nq, nu, _ptr(pa), pa.shape[0], _ptr(out)) != 0:
            raise self._fail(which, qa, qd, None, pa, where or repr(self))
        if not np.isfinite(out).all():
            raise FloatingPointError(f"{where or repr(self)}: its kernel {self.name!r} ({which}) gave a non-finite "
                                     f"matrix at q = {qa}")
        return out


class JitMobilizerImplementation(CustomImplementation):
    """The ``MobilizedBody.Custom.Implementation`` of a jit mobilizer: its methods run the compiled kernels.

    Parameters
    ----------
    matter : SimbodyMatterSubsystem
        The matter subsystem the body joins.
    kernel : MobilizerKernel
        The compiled kernels.
    params : numpy.ndarray
        The body's parameter vector (given to the kernels).
    """

    def __init__(self, matter, kernel: MobilizerKernel, params: np.ndarray):
        super().__init__(matter, kernel.nu, kernel.nq)
        self.kernel = kernel
        self.params = params

    def _where(self) -> str:
        return repr(self._mobod) if self._mobod is not None else f"MobilizedBody.Jit ({self.kernel.name!r})"

    def _position(self, q) -> tuple:
        R, p, H = self.kernel.evaluate_position(q, self.params, self._where())
        if not (np.isfinite(R).all() and np.isfinite(p).all() and np.isfinite(H).all()):
            raise FloatingPointError(f"{self._where()}: its kernel {self.kernel.name!r} gave non-finite "
                                     f"X_FM or H_FM at q = {np.asarray(q)}")
        return R, p, H

    def calc_mobilizer_transform_from_q(self, state: "State", q: np.ndarray) -> Transform:
        """X_FM(q) from the position kernel."""
        R, p, _ = self._position(q)
        return Transform._trusted(Rotation._trusted(R), p)

    def calc_h_columns(self, state: "State") -> np.ndarray:
        """The columns of H_FM (nu, 2, 3) at the State's q."""
        return self._position(self.get_q(state))[2]

    def multiply_by_h_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        """H u (2, 3)."""
        return np.tensordot(np.asarray(u, dtype=float), self.calc_h_columns(state), axes=(0, 0))

    def multiply_by_h_transpose(self, state: "State", F: np.ndarray) -> np.ndarray:
        """H^T F (nu,)."""
        return self.calc_h_columns(state).reshape(self._nu, 6) @ np.asarray(F, dtype=float).reshape(6)

    def _hdot_columns(self, state: "State") -> np.ndarray:
        q, u = self.get_q(state), self.get_u(state)
        e = np.eye(self._nu)
        return np.array([self.kernel.evaluate_hdot(q, u, e[j], self.params, self._where()) for j in range(self._nu)])

    def multiply_by_h_dot_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        """HDot u (2, 3), HDot at the State's q and qdot (= its u)."""
        return self.kernel.evaluate_hdot(self.get_q(state), self.get_u(state), u, self.params, self._where())

    def multiply_by_h_dot_transpose(self, state: "State", F: np.ndarray) -> np.ndarray:
        """HDot^T F (nu,)."""
        return self._hdot_columns(state).reshape(self._nu, 6) @ np.asarray(F, dtype=float).reshape(6)


class JitMobilizerNImplementation(JitMobilizerImplementation):
    """The implementation of a jit mobilizer with an N kernel (qdot = N(q) u): HDot is taken along that qdot,
    and the N methods run the N, N^-1 and NDot kernels (see ``MobilizerKernel.evaluate_n``)."""

    def _n(self, q, which: str = "n", qdot=None) -> np.ndarray:
        return self.kernel.evaluate_n(q, self.params, self._where(), which, qdot)

    def _qdot(self, state: "State") -> np.ndarray:
        q = self.get_q(state)
        return self._n(q) @ np.asarray(self.get_u(state), dtype=float)

    def _hdot_columns(self, state: "State") -> np.ndarray:
        q, qd = self.get_q(state), self._qdot(state)
        e = np.eye(self._nu)
        return np.array([self.kernel.evaluate_hdot(q, qd, e[j], self.params, self._where()) for j in range(self._nu)])

    def multiply_by_h_dot_matrix(self, state: "State", u: np.ndarray) -> np.ndarray:
        """HDot u (2, 3), HDot at the State's q and qdot = N u."""
        return self.kernel.evaluate_hdot(self.get_q(state), self._qdot(state), u, self.params, self._where())

    def multiply_by_n_matrix(self, state: "State", transpose: bool, v: np.ndarray) -> np.ndarray:
        """N v (nq,) for v (nu,), or N^T v (nu,) for v (nq,), from the N kernel."""
        N = self._n(self.get_q(state))
        return (N.T if transpose else N) @ np.asarray(v, dtype=float)

    def multiply_by_n_inv_matrix(self, state: "State", transpose: bool, v: np.ndarray) -> np.ndarray:
        """N^-1 v (nu,) for v (nq,), or N^-T v (nq,) for v (nu,) (the N^-1 kernel's, else (N^T N)^-1 N^T)."""
        Ni = self._n(self.get_q(state), "ninv")
        return (Ni.T if transpose else Ni) @ np.asarray(v, dtype=float)

    def multiply_by_n_dot_matrix(self, state: "State", transpose: bool, v: np.ndarray) -> np.ndarray:
        """NDot v (nq,) for v (nu,), or NDot^T v, NDot along qdot = N u (zero without an NDot kernel)."""
        q = self.get_q(state)
        Nd = self._n(q, "ndot", self._qdot(state))
        return (Nd.T if transpose else Nd) @ np.asarray(v, dtype=float)


class Jit(Custom):
    """A mobilized body whose mobilizer is compiled kernels: ``MobilizedBody.Jit(parent, X_PF, body, X_BM, kernel, params)``.

    Also ``MobilizedBody.Jit(parent, body, kernel, params)`` (identity frames).

    Parameters
    ----------
    parent : MobilizedBody
        The inboard body.
    X_PF, X_BM : Transform
        The F frame on the parent and the M frame on this body.
    body : Body
        Mass properties.
    kernel : MobilizerKernel
        Made by ``@simtk.jit.mobilizer`` (numba) or ``MobilizerKernel.from_capsule`` (Cython).
    params : sequence of float, optional
        The body's parameter vector, given to the kernels as ``params`` (finite numbers).

    Notes
    -----
    The kernels run in the compiled sweeps (joint code ``JIT_JOINT_CODES[nu]``, qdot = u, or
    ``JITN_JOINT_CODES[nq, nu]`` for a kernel with N kernels, qdot = N(q) u). A kernel
    that fails or gives a non-finite value stops the realization with an error naming this body
    (the State is left below the stage, its variables untouched).
    """

    _joint = "Custom"

    def __init__(self, parent: MobilizedBody, *args, direction: str = MobilizedBody.Forward):
        name = "MobilizedBody.Jit"
        if not isinstance(parent, MobilizedBody):
            raise TypeError(f"{name}: the parent must be a MobilizedBody, got {type(parent).__name__}")
        k = next((j for j, a in enumerate(args) if isinstance(a, MobilizerKernel)), None)
        if k is None:
            raise TypeError(f"{name}: expected a MobilizerKernel (made by @simtk.jit.mobilizer) after the body")
        kernel, rest = args[k], args[k + 1:]
        if len(rest) > 1:
            raise TypeError(f"{name}: expected at most the params after the kernel, got {len(rest)} arguments")
        name = f"{name} (kernel {kernel.name!r})"
        matter = parent.get_matter_subsystem()
        params = _param_vector(rest[0] if rest else (), f"{name}: params")
        params.flags.writeable = False
        try:  # (compiled here, before the body joins the tree: a kernel numba refuses adds nothing)
            kernel._jit_addresses()
        except Exception as exc:
            raise type(exc)(f"{name}: its kernel cannot be compiled: {exc}") from exc
        self._kernel = kernel
        impl = (JitMobilizerNImplementation if kernel.has_n else JitMobilizerImplementation)(matter, kernel, params)
        super().__init__(parent, *args[:k], impl, direction=direction)

    def get_kernel(self) -> MobilizerKernel:
        """The kernel the constructor took."""
        return self._kernel

    def get_params(self) -> np.ndarray:
        """The parameter vector (read-only)."""
        return self._impl.params

    def _custom_joint_code(self) -> int | None:
        return self._kernel._joint_code()

    def _jit_failure(self, state: "State", stage: str) -> None:
        """Raise the error of this body's kernel failing at ``stage`` (the sweep found it)."""
        impl = self._impl
        q = np.array(self._raw_q(state))
        impl._position(q)  # raises the kernel's own error, or the non-finite values'
        if stage == "velocity":
            u = np.array(self._raw_u(state))
            if self._kernel.has_n:  # (raises the N kernel's own error, or the non-finite N's)
                impl._n(q)
            HDu = impl.multiply_by_h_dot_matrix(state, u)
            if not np.isfinite(HDu).all():
                raise FloatingPointError(f"{self!r}: its kernel {self._kernel.name!r} gave a non-finite HDot_FM u "
                                         f"at q = {q}, u = {u}")
        if stage == "acceleration" and self._kernel.has_n:  # (NDot's, along qdot = N u)
            impl._n(q, "ndot", impl._n(q) @ np.array(self._raw_u(state)))
        raise FloatingPointError(f"{self!r}: its kernel {self._kernel.name!r} failed at {stage} (q = {q})")

    @staticmethod
    def _jit_table(bodies: list, nb: int):
        """The core's records (``JitMobilizers``) of the jit mobilizers ``bodies`` of a tree of ``nb`` bodies
        (called by the matter subsystem through one of them)."""
        return _jit_table(bodies, nb)


def _jit_table(bodies: list, nb: int):
    rec = np.full(nb, -1, dtype=np.int64)
    npk = max(len(b.get_params()) for b in bodies)
    params = np.zeros((len(bodies), npk))
    for r, b in enumerate(bodies):
        rec[b._index] = r
        params[r, :len(b.get_params())] = b.get_params()
    return _K.JitMobilizers(rec, params, [len(b.get_params()) for b in bodies], [b.get_kernel() for b in bodies])


Jit.__qualname__ = "MobilizedBody.Jit"
MobilizedBody.Jit = Jit
