"""Batched dynamics: K configurations of one multibody system in one compiled call.

`BatchDynamics` is a mixin of `MatterTree` (so its methods are the matter subsystem's):
:meth:`~BatchDynamics.calc_udot_batch`, :meth:`~BatchDynamics.calc_m_batch`,
:meth:`~BatchDynamics.calc_inverse_dynamics_batch` and :meth:`~BatchDynamics.step_batch` take
arrays with one row per configuration and loop over the rows in one ``nogil`` kernel call, on
several threads when the compiled core has OpenMP (``simtk.set_num_threads``, or ``threads=``).

What a batch means
------------------
The *instance* (mass properties, enabled forces, Euler-angle mode, ...) is that of a State
realized to Instance (``state=``), or of the System's default State when none is given. Each row
is then one (q, u) of that instance, and

    udot = M(q)^-1 (f_sys(q, u) + tau - bias(q, u))

where f_sys are the System's *built-in* force elements (gravity, springs, dampers, stops,
constant forces, bushings, contact: the compiled kinds of ``GeneralForceSubsystem``) and tau the
applied mobility forces of the row, like MuJoCo's ``qfrc_applied``. The arithmetic is that of the
one-at-a-time path, in the same order, so each row equals, bitwise, what the State API gives for
the same q, u and tau (``realize(state, Dynamics)`` then
``calc_acceleration_ignoring_constraints(state, mobility_forces + tau, body_forces)``).

Refused (NotImplementedError, with the reason): Custom mobilizers (Python writes their rows),
force elements evaluated in Python (``Force.Custom``, ``Force.DiscreteForces``,
user ``ForceSubsystem``s), and enabled constraints, locks or prescribed Motions (the batch has no
constraint solver). Quaternions are used as given (the kinematics normalize them, as when
realizing); a zero quaternion is refused.

Threads
-------
A batched call releases the GIL and splits the rows statically among its threads; the results do
not depend on the thread count. Several Python threads may each run batched calls (or realize
States) at the same time as long as each uses its own States: see ``docs/threads.md``.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from ... import _core
from ...common.errors import NonFiniteForceError, StageTooLowError
from ...common.stage import INSTANCE, Stage
from ...common.state import State
from ._functional import FunctionalDynamics

__all__ = ["BatchDynamics"]

_all_finite = _core._k.all_finite
_SHIFT = 1 << 32  # the kernels report a force failure as set * _SHIFT + element

# The per-State batch workspace: keyed by the matter's Instance cache (a new one at every Instance
# realization), so it lives exactly as long as the instance it was built for. A lock per entry
# keeps two threads from sharing its scratch; a thread that finds it busy builds its own.
_batches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_batches_lock = threading.Lock()
# The System's default State (realized to Instance), per matter subsystem, for calls without state=.
_defaults: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_defaults_lock = threading.Lock()


class _Entry:
    __slots__ = ("batch", "packed", "lock", "quat_q")

    def __init__(self, batch, packed: tuple, quat_q: np.ndarray):
        self.batch = batch
        self.packed = packed
        self.lock = threading.Lock()
        self.quat_q = quat_q


def _controls(packed: tuple, state: State):
    """(time, inputs) of ``state`` for the sets fed from the State among ``packed`` (None if none)."""
    for p in packed:
        if p.fs.ninputs:  # (a set fed from the State: its packed form gives the whole input vector)
            return state.get_time(), p.inputs(state)
    # kernels that read the time (Force.Jit's) get the State's, held over the batch
    if any(getattr(p, "reads_time", False) for p in packed):
        return state.get_time(), np.zeros(0)
    return None


def _rows(name: str, x, K: int | None, n: int) -> np.ndarray:
    # (dtype == float64 is the native byte order: a swapped float64 is converted, not read as doubles)
    a = x if type(x) is np.ndarray and x.dtype == np.float64 and x.flags.c_contiguous and x.flags.aligned else \
        np.ascontiguousarray(x, dtype=np.float64)
    if a.ndim == 1 and K is None:
        a = a.reshape(1, -1)
    if a.ndim != 2 or a.shape[1] != n or (K is not None and a.shape[0] != K):
        want = f"({'K' if K is None else K}, {n})"
        raise ValueError(f"{name}: expected shape {want}, got {np.shape(x)}")
    if not _all_finite(a.reshape(-1)):
        k, i = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{name}[{k}, {i}] is not finite ({a[k, i]!r})")
    return a


class BatchDynamics:
    """The batched operators of the matter subsystem (a mixin of MatterTree; see the module)."""

    # ------------------------------------------------------------------ the instance and its batch
    def _batch_state(self, state: State | None) -> State:
        if state is not None:
            if not isinstance(state, State):
                raise TypeError(f"{self._where()}: batched dynamics: state= expects a State, got {type(state).__name__}")
            if state._stage < INSTANCE:
                err = StageTooLowError(f"{self._where()}: batched dynamics", Stage.Instance, state.get_system_stage())
                # what to do about it, beside what is wrong
                err.args = (f"{err}: call system.realize(state, Stage.Instance) first (or pass no state=, for the "
                            "System's default State)",)
                raise err
            return state
        system = self.get_system()
        with _defaults_lock:
            held = _defaults.get(self)
            version = system.get_system_topology_cache_version()
            if held is None or held[0] != version:
                default = system.realize_topology()
                held = (version, default)
                _defaults[self] = held
            system.realize(held[1], Stage.Instance)  # again after a parameter change invalidated it
            return held[1]

    def _batch_packed(self, state: State) -> tuple:
        """The System's built-in force sets in the order the one-at-a-time path adds them."""
        packed: list = []
        for sub in self.get_system().get_force_subsystems():
            getter = getattr(sub, "_batch_force_sets", None)
            if getter is None:
                raise NotImplementedError(
                    f"{self._where()}: batched dynamics: force subsystem {sub.get_name()!r} "
                    f"({type(sub).__name__}) evaluates its forces in Python, which the batch kernels cannot "
                    "run; apply them through tau, or use the State API one configuration at a time")
            packed.extend(getter(state))
        return tuple(packed)

    def _batch_entry(self, state: State, constraints_solved_by_caller: bool = False) -> _Entry:
        # One entry per Instance cache: the force sets belong to the same instance (a change of any
        # subsystem's Instance makes a new matter cache), so a found entry is current. The batch
        # kernels have no constraint solver: a caller that solves the constraints itself (the
        # compiled time loop) says so.
        cache = self._at(state, INSTANCE, "batched dynamics")
        entry = _batches.get(cache)
        if entry is not None and (constraints_solved_by_caller or not cache.plan.m):
            return entry
        packed = self._batch_packed(state)
        layout = cache.layout
        if layout.custom:
            raise NotImplementedError(
                f"{self._where()}: batched dynamics: {layout.custom[0]!r} is a Custom mobilizer, whose "
                "kinematics run in Python; the batch kernels run only the built-in mobilizers")
        if cache.plan.m and not constraints_solved_by_caller:
            raise NotImplementedError(
                f"{self._where()}: batched dynamics: {cache.plan.m} constraint equations are enabled "
                "(constraints, locks or prescribed Motions); the batch kernels have no constraint solver. "
                "Disable them in the State passed as state=, or use the State API")
        quat_q = np.ascontiguousarray(layout.qoff[layout.quaternion_bodies], dtype=np.int64)
        entry = _Entry(_core.make_tree_batch(cache.ws, tuple(p.fs for p in packed)), packed, quat_q)
        with _batches_lock:
            _batches[cache] = entry
        return entry

    def _batch_inputs(self, state, q, u, extra=(), *, need_u=True):
        state = self._batch_state(state)
        entry = self._batch_entry(state)
        b = entry.batch
        qa = _rows("q", q, None, b.nq)
        K = qa.shape[0]
        out = [qa]
        if need_u:
            out.append(_rows("u", u, K, b.nu))
        for name, x in extra:
            out.append(None if x is None else _rows(name, x, K, b.nu))
        if len(entry.quat_q):
            zero = _core._k.first_zero_quaternion(qa, entry.quat_q)
            if zero is not None:
                k, o = zero
                raise ValueError(f"{self._where()}: q[{k}] has a zero quaternion (q[{k}, {o}:{o + 4}]), "
                                 "which is no rotation")
        return entry, K, out, _controls(entry.packed, state)

    @staticmethod
    def _threads(threads) -> int:
        if threads is None:
            return _core.get_num_threads()
        if isinstance(threads, bool) or int(threads) != threads or threads < 1:
            raise ValueError(f"threads: expected an integer >= 1, got {threads!r}")
        return int(threads)

    def _batch_run(self, entry: _Entry, controls, method: str, *args):
        """Run ``entry.batch.<method>(*args)`` holding its lock, or on a private batch if busy; the
        sets that read inputs get ``controls``, the State's (time, inputs) (``_batch_inputs``)."""
        batch = entry.batch
        if entry.lock.acquire(blocking=False):
            try:
                if controls is not None:
                    batch.set_inputs(*controls)
                return getattr(batch, method)(*args)
            finally:
                entry.lock.release()
        batch = _core.make_tree_batch(batch.ws, batch.sets)
        if controls is not None:
            batch.set_inputs(*controls)
        return getattr(batch, method)(*args)

    def _batch_check(self, entry: _Entry, bad: np.ndarray | None, out: np.ndarray, what: str,
                     first_bad: int = -1) -> None:
        if bad is not None:
            if first_bad >= 0:
                k = first_bad
                s, e = divmod(int(bad[k]), _SHIFT)
                p = entry.packed[s]
                element = p.elements[e] if getattr(p, "row_owner", None) is None else p.row_owner[e]
                raise NonFiniteForceError(f"{what}: row {k}: {element!r}: its forces are not finite in this "
                                          f"configuration{element._singularity_hint()}", element)
        if not _all_finite(out.reshape(-1)):
            k = int(np.argwhere(~np.isfinite(out.reshape(out.shape[0], -1)))[0, 0])
            raise FloatingPointError(f"{what}: row {k} is not finite; realize that configuration with the State "
                                     "API for a diagnosis (a singular articulated inertia, an overflow)")

    # ------------------------------------------------------------------ public
    def calc_udot_batch(self, q, u, tau=None, *, state: State | None = None, threads: int | None = None) -> np.ndarray:
        """Forward dynamics of K configurations: ``udot = M^-1 (f_sys + tau - bias)`` for each row.

        Parameters
        ----------
        q : array_like, shape (K, nq)
            Coordinates, one configuration per row (quaternions for Ball, Free, ... unless the
            instance uses Euler angles; they need not be normalized).
        u : array_like, shape (K, nu)
            Generalized speeds.
        tau : array_like, shape (K, nu), optional
            Applied mobility forces, added to the System's built-in force elements.
        state : State, optional
            The instance to use (realized to Instance at least); default: the System's default State.
        threads : int, optional
            Thread count (default ``simtk.get_num_threads()``).

        Returns
        -------
        ndarray, shape (K, nu)
            udot of each row: bitwise the one-at-a-time result.

        Raises
        ------
        NotImplementedError
            For Custom mobilizers, forces evaluated in Python, or enabled constraints (see the module).
        NonFiniteForceError, FloatingPointError
            When a row's forces or accelerations are not finite (the first such row is named).
        """
        entry, K, (qa, ua, ta), controls = self._batch_inputs(state, q, u, (("tau", tau),))
        out = np.empty((K, entry.batch.nu))
        bad = np.empty(K, dtype=np.int64)  # every row is written
        first = self._batch_run(entry, controls, "forward", qa, ua, ta, out, bad, self._threads(threads))
        self._batch_check(entry, bad, out, "calc_udot_batch()", first)
        return out

    def calc_m_batch(self, q, *, state: State | None = None, threads: int | None = None) -> np.ndarray:
        """Mass matrices of K configurations, shape (K, nu, nu), by the composite-body method.

        ``q`` is (K, nq); ``state`` and ``threads`` as for :meth:`calc_udot_batch`. Each M[k] is
        bitwise ``calc_m`` of a State with that q.
        """
        entry, K, (qa,), controls = self._batch_inputs(state, q, None, need_u=False)
        nu = entry.batch.nu
        out = np.zeros((K, nu, nu))
        self._batch_run(entry, controls, "mass_matrix", qa, out, self._threads(threads))
        self._batch_check(entry, None, out, "calc_m_batch()")
        return out

    def calc_inverse_dynamics_batch(self, q, u, udot, *, state: State | None = None,
                                    threads: int | None = None) -> np.ndarray:
        """Inverse dynamics of K configurations: the applied mobility forces ``tau`` (K, nu) that,
        with the System's built-in forces, give the accelerations ``udot`` (K, nu):
        ``tau = M udot + bias - f_sys`` (recursive Newton-Euler), the inverse of
        :meth:`calc_udot_batch`. Each row is bitwise
        ``calc_residual_force_ignoring_constraints(state, f_sys, F_sys, udot)``."""
        entry, K, (qa, ua, da), controls = self._batch_inputs(state, q, u, (("udot", udot),))
        out = np.empty((K, entry.batch.nu))
        bad = np.empty(K, dtype=np.int64)  # every row is written
        first = self._batch_run(entry, controls, "inverse", qa, ua, da, out, bad, self._threads(threads))
        self._batch_check(entry, bad, out, "calc_inverse_dynamics_batch()", first)
        return out

    def functional_dynamics(self, state: State | None = None) -> FunctionalDynamics:
        """A `FunctionalDynamics` over the instance of ``state`` (default: the System's default State):
        ``calc_udot(q, u, tau)``, ``calc_m(q)`` and ``calc_inverse_dynamics(q, u, udot)`` of one
        configuration per call, each one compiled call (Pinocchio's ``aba``, ``crba``, ``rnea``).

        It refuses what the batched calls refuse (NotImplementedError). Its results are bitwise
        those of the batched calls and of the State API. Use one per thread.
        """
        state = self._batch_state(state)
        entry = self._batch_entry(state)
        fed = [p for p in entry.packed if p.fs.ninputs]
        if fed:
            raise NotImplementedError(
                f"{self._where()}: functional dynamics: {fed[0].elements[0]!r} reads controls held in a State, "
                "which the functional forms (functions of q, u, tau) do not take; apply its forces through tau, "
                "or use calc_udot_batch(..., state=) or the State API")
        return FunctionalDynamics(self, entry)

    def step_batch(self, q, u, tau=None, *, h: float, n_steps: int = 1, scheme: str = "semi_explicit_euler",
                   state: State | None = None, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Advance K configurations by ``n_steps`` fixed steps of size ``h`` in one call.

        Parameters
        ----------
        q, u, tau :
            As for :meth:`calc_udot_batch`; ``tau`` is held constant over the steps.
        h : float
            Step size (> 0).
        n_steps : int
            Number of steps (>= 0).
        scheme : {"semi_explicit_euler", "rk4"}
            Semi-explicit Euler: ``u1 = u0 + h udot(q0, u0)``, ``q1 = q0 + h N(q0) u1``.
            RK4: the classical four-stage Runge-Kutta on ``(q, u)``. Either way quaternions are
            normalized at the end of every step, as the integrators' projection does.
        state, threads :
            As for :meth:`calc_udot_batch`.

        Returns
        -------
        (q, u) : ndarrays, shapes (K, nq) and (K, nu)
            The configurations after the steps (new arrays; the inputs are not changed).
        """
        if scheme not in _core.BATCH_SCHEMES:
            raise ValueError(f"step_batch(): scheme must be one of {sorted(_core.BATCH_SCHEMES)}, got {scheme!r}")
        h = float(h)
        if not (np.isfinite(h) and h > 0.0):
            raise ValueError(f"step_batch(): h must be a finite step size > 0, got {h!r}")
        if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 0:
            raise ValueError(f"step_batch(): n_steps must be an integer >= 0, got {n_steps!r}")
        entry, K, (qa, ua, ta), controls = self._batch_inputs(state, q, u, (("tau", tau),))
        q1, u1 = qa.copy(), ua.copy()
        bad = np.full(K, -1, dtype=np.int64)  # rows are not written when there is no step to take
        first = self._batch_run(entry, controls, "step", q1, u1, ta, h, int(n_steps), _core.BATCH_SCHEMES[scheme], bad,
                                self._threads(threads))
        self._batch_check(entry, bad, np.concatenate([q1, u1], axis=1), "step_batch()", first)
        return q1, u1
