"""The State: every variable of a System, and the cache computed from them.

Layout
------
Each subsystem owns contiguous blocks of the global arrays::

    y = [ q (nq,) | u (nu,) | z (nz,) ]          one buffer; q, u, z are views of it
    ydot = [ qdot | udot | zdot ]                 derivative cache, same layout
    qdotdot (nq,)
    q_err (nqerr,), u_err (nuerr,), udot_err (nudoterr,), multipliers (nudoterr,)

so an integrator reads and writes ``y`` and ``ydot`` whole while each subsystem sees its own
slices. The q, u, z blocks are laid out when the State reaches Model; the constraint-error blocks
and event-trigger slots when it reaches Instance.

Invalidation
------------
Every subsystem has a stage in the State. Changing a variable drops every subsystem to the stage
before the variable's stage (t: Instance, q: Time, u: Position, z: Velocity, a discrete variable:
the stage before the one it names). Cache entries are not visited: invalidating stage ``s`` only
records ``s`` in a per-stage epoch list, and an entry that depends on stage ``e`` is current when it
was marked after the last invalidation of any stage ``<= e``. Invalidation therefore costs
O(subsystems), whatever the number of cache entries.

Variables allocated while realizing Model (or cache entries and error slots allocated while
realizing Instance) belong to that realization: when Model (or Instance) is invalidated they are
forgotten, and realizing the stage again allocates them anew.
"""
from __future__ import annotations

import copy as _copy
import math
import numbers
import weakref

import numpy as np

from .._core import _k
from . import _rebind
from ._values import _checked_vector, _copied_value, _readonly, _same_value
from .errors import StageOutOfRangeError, StageTooLowError, TopologyVersionError
from .stage import (
    ACCELERATION,
    DYNAMICS,
    INFINITY,
    INSTANCE,
    MODEL,
    POSITION,
    STAGE_NAMES,
    TIME,
    VELOCITY,
    Stage,
)

__all__ = ["State"]

_EMPTY = np.zeros(0)
_EMPTY.flags.writeable = False
_copied_if_finite = _k.copied_if_finite
_set_vector = _k.state_set_vector  # set_q's and set_u's common case in one compiled call


class _DiscreteVariable:
    __slots__ = ("value", "invalidates", "allocated_at", "update_entry")

    def __init__(self, value, invalidates: int, allocated_at: int, update_entry: int = -1):
        self.value = value
        self.invalidates = invalidates
        self.allocated_at = allocated_at
        self.update_entry = update_entry  # cache entry index of an auto-update variable, else -1


class _CacheEntry:
    __slots__ = ("value", "earliest", "latest", "allocated_at", "marked_at")

    def __init__(self, value, earliest: int, latest: int, allocated_at: int):
        self.value = value
        self.earliest = earliest
        self.latest = latest
        self.allocated_at = allocated_at
        self.marked_at = -1  # epoch at which it was last marked realized; -1: never


class _SubsystemState:
    """One subsystem's share of a State: its stage, allocations and array views."""

    __slots__ = (
        "name", "index", "stage",
        "q_blocks", "u_blocks", "z_blocks", "qerr_blocks", "uerr_blocks", "udoterr_blocks",
        "trigger_blocks", "discrete", "cache",
        "q0", "nq", "u0", "nu", "z0", "nz", "qerr0", "nqerr", "uerr0", "nuerr", "udoterr0", "nudoterr",
        "q", "u", "z", "q_ro", "u_ro", "z_ro",
        "qdot", "udot", "zdot", "qdotdot", "qdot_ro", "udot_ro", "zdot_ro", "qdotdot_ro",
        "qerr", "uerr", "udoterr", "multipliers", "qerr_ro", "uerr_ro", "udoterr_ro", "multipliers_ro",
        "triggers",
    )

    def __init__(self, name: str, index: int):
        self.name = name
        self.index = index
        self.stage = 0
        # Allocations are (allocated_at stage, payload) pairs in allocation order, which is also
        # stage order, so forgetting a realization's allocations truncates the tail.
        self.q_blocks: list = []
        self.u_blocks: list = []
        self.z_blocks: list = []
        self.qerr_blocks: list = []
        self.uerr_blocks: list = []
        self.udoterr_blocks: list = []
        self.trigger_blocks: list = []  # (allocated_at, (stage, n))
        self.discrete: list[_DiscreteVariable] = []
        self.cache: list[_CacheEntry] = []
        self.triggers: dict = {}

    def where(self) -> str:
        return f"Subsystem '{self.name}' (#{self.index})"


def _forget_from(blocks: list, stage: int) -> None:
    while blocks and blocks[-1][0] >= stage:
        blocks.pop()


def _count(blocks: list) -> int:
    return sum(len(b) if not isinstance(b, int) else b for _, b in blocks)


class State:
    """All the variables of a System and the cache computed from them.

    A State is made by ``System.realize_topology()`` (and copied with ``copy()``); it is
    realized stage by stage with ``System.realize(state, stage)`` and invalidates itself when a
    variable changes. Getters return read-only views; ``upd_*`` methods hand out writable storage
    and invalidate at the moment they are called, as in Simbody.

    ``==`` is deliberately not defined (States compare by identity).
    """

    __slots__ = (
        "_system", "_topology_version", "_subs", "_stage", "_hi", "_epoch", "_inval_epoch", "_t",
        "_y", "_q", "_u", "_z", "_y_ro", "_q_ro", "_u_ro", "_z_ro",
        "_ydot", "_qdot", "_udot", "_zdot", "_qdotdot", "_ydot_ro", "_qdot_ro", "_udot_ro", "_zdot_ro",
        "_qdotdot_ro",
        "_qerr", "_uerr", "_udoterr", "_multipliers", "_qerr_ro", "_uerr_ro", "_udoterr_ro", "_multipliers_ro",
        "_names", "_named_discrete", "_fused",
        "__weakref__",
    )

    def __init__(self):
        self._system = None
        self._topology_version = -1
        self._subs: list[_SubsystemState] = []
        self._stage = 0  # the system stage: the lowest of the subsystem stages
        self._hi = 0  # the highest subsystem stage (differs from _stage only mid-realization)
        self._epoch = 0
        # A System's compiled realization of this State's instance: None (not looked at yet), False
        # (none: realized by the stage hooks), or an object the System runs instead of the hooks.
        self._fused = None
        self._inval_epoch = [0] * 11
        self._t = 0.0
        self._names = None  # absolute path -> index in y, made when Model is realized
        self._named_discrete = None  # "<path>:<name>" -> (subsystem, index) of by-name discrete variables
        for name in ("_y", "_q", "_u", "_z", "_ydot", "_qdot", "_udot", "_zdot", "_qdotdot",
                     "_qerr", "_uerr", "_udoterr", "_multipliers"):
            setattr(self, name, None)
            setattr(self, name + "_ro", None)

    # ------------------------------------------------------------------ construction (System only)
    @classmethod
    def _for_system(cls, system, subsystem_names: list[str], topology_version: int) -> "State":
        s = cls()
        s._system = system
        s._topology_version = topology_version
        s._subs = [_SubsystemState(n, i) for i, n in enumerate(subsystem_names)]
        system._live_states.add(s)
        return s

    def _layout_model(self) -> None:
        """Lay out q, u, z and their derivative cache from the blocks allocated so far."""
        subs = self._subs
        nq = sum(_count(ss.q_blocks) for ss in subs)
        nu = sum(_count(ss.u_blocks) for ss in subs)
        nz = sum(_count(ss.z_blocks) for ss in subs)
        y = np.empty(nq + nu + nz)
        self._y, self._q, self._u, self._z = y, y[:nq], y[nq:nq + nu], y[nq + nu:]
        ydot = np.zeros(nq + nu + nz)
        self._ydot, self._qdot, self._udot, self._zdot = ydot, ydot[:nq], ydot[nq:nq + nu], ydot[nq + nu:]
        self._qdotdot = np.zeros(nq)
        for name in ("_y", "_q", "_u", "_z", "_ydot", "_qdot", "_udot", "_zdot", "_qdotdot"):
            setattr(self, name + "_ro", _readonly(getattr(self, name)))
        oq = ou = oz = 0
        for ss in subs:
            ss.q0, ss.nq = oq, _count(ss.q_blocks)
            ss.u0, ss.nu = ou, _count(ss.u_blocks)
            ss.z0, ss.nz = oz, _count(ss.z_blocks)
            for blocks, arr, off in ((ss.q_blocks, self._q, oq), (ss.u_blocks, self._u, ou),
                                     (ss.z_blocks, self._z, oz)):
                for _, init in blocks:
                    arr[off:off + len(init)] = init
                    off += len(init)
            self._point_model_views(ss)
            oq += ss.nq
            ou += ss.nu
            oz += ss.nz

    def _point_model_views(self, ss: _SubsystemState) -> None:
        qs, us, zs = slice(ss.q0, ss.q0 + ss.nq), slice(ss.u0, ss.u0 + ss.nu), slice(ss.z0, ss.z0 + ss.nz)
        ss.q, ss.u, ss.z = self._q[qs], self._u[us], self._z[zs]
        ss.qdot, ss.udot, ss.zdot, ss.qdotdot = self._qdot[qs], self._udot[us], self._zdot[zs], self._qdotdot[qs]
        ss.q_ro, ss.u_ro, ss.z_ro = _readonly(ss.q), _readonly(ss.u), _readonly(ss.z)
        ss.qdot_ro, ss.udot_ro, ss.zdot_ro = _readonly(ss.qdot), _readonly(ss.udot), _readonly(ss.zdot)
        ss.qdotdot_ro = _readonly(ss.qdotdot)

    def _layout_instance(self) -> None:
        """Lay out constraint-error slots, multipliers and event-trigger slots."""
        subs = self._subs
        nqe = sum(_count(ss.qerr_blocks) for ss in subs)
        nue = sum(_count(ss.uerr_blocks) for ss in subs)
        nae = sum(_count(ss.udoterr_blocks) for ss in subs)
        self._qerr, self._uerr, self._udoterr = np.zeros(nqe), np.zeros(nue), np.zeros(nae)
        self._multipliers = np.zeros(nae)
        for name in ("_qerr", "_uerr", "_udoterr", "_multipliers"):
            setattr(self, name + "_ro", _readonly(getattr(self, name)))
        oq = ou = oa = 0
        for ss in subs:
            ss.qerr0, ss.nqerr = oq, _count(ss.qerr_blocks)
            ss.uerr0, ss.nuerr = ou, _count(ss.uerr_blocks)
            ss.udoterr0, ss.nudoterr = oa, _count(ss.udoterr_blocks)
            self._point_instance_views(ss)
            ss.triggers = {}
            for _, (stage, n) in ss.trigger_blocks:
                ss.triggers[stage] = np.zeros(len(ss.triggers.get(stage, _EMPTY)) + n)
            oq += ss.nqerr
            ou += ss.nuerr
            oa += ss.nudoterr

    def _point_instance_views(self, ss: _SubsystemState) -> None:
        ss.qerr = self._qerr[ss.qerr0:ss.qerr0 + ss.nqerr]
        ss.uerr = self._uerr[ss.uerr0:ss.uerr0 + ss.nuerr]
        ss.udoterr = self._udoterr[ss.udoterr0:ss.udoterr0 + ss.nudoterr]
        ss.multipliers = self._multipliers[ss.udoterr0:ss.udoterr0 + ss.nudoterr]
        for name in ("qerr", "uerr", "udoterr", "multipliers"):
            setattr(ss, name + "_ro", _readonly(getattr(ss, name)))

    # ------------------------------------------------------------------ invalidation
    # _invalidate(stage): drop every subsystem below ``stage``; forget the allocations made at
    # ``stage`` or later. Compiled (core/state_ops.pxi): every set_q, set_u and upd_y pays it.
    # _inval_epoch[s] is the epoch of the last invalidation at or below s (epochs only grow).
    _invalidate = _k.state_invalidate

    def _forget_allocations(self, stage: int) -> None:
        for ss in self._subs:
            for blocks in (ss.q_blocks, ss.u_blocks, ss.z_blocks, ss.qerr_blocks, ss.uerr_blocks,
                           ss.udoterr_blocks, ss.trigger_blocks):
                _forget_from(blocks, stage)
            while ss.discrete and ss.discrete[-1].allocated_at >= stage:
                ss.discrete.pop()
            while ss.cache and ss.cache[-1].allocated_at >= stage:
                ss.cache.pop()

    def _last_invalidation(self, stage: int) -> int:
        """Epoch of the last invalidation of any stage at or below ``stage``."""
        return self._inval_epoch[stage]

    def invalidate_all(self, stage) -> None:
        """Invalidate ``stage`` and everything above it, in every subsystem.

        Invalidating Model or Instance also forgets what was allocated while realizing that stage;
        it is allocated again when the stage is realized again. Topology cannot be invalidated in a
        State: change the System and call ``System.realize_topology()`` for a new State.
        """
        stage = int(stage)
        if not MODEL <= stage <= INFINITY:
            raise StageOutOfRangeError(
                f"State.invalidate_all({STAGE_NAMES[stage] if 0 <= stage <= 10 else stage}): only Model and "
                "higher stages can be invalidated in a State; a topology change goes through the System")
        if stage == INFINITY:
            return
        self._invalidate(stage)

    def invalidate_all_cache_at_or_above(self, stage) -> None:
        """Invalidate the cache of ``stage`` and above without touching any variable's allocation.

        ``stage`` must be Instance or higher (lower stages own variables, see ``invalidate_all``).
        """
        stage = int(stage)
        if not INSTANCE <= stage <= INFINITY:
            raise StageOutOfRangeError(
                f"State.invalidate_all_cache_at_or_above({STAGE_NAMES[stage] if 0 <= stage <= 10 else stage}): "
                "the stage must be Instance or higher")
        if stage != INFINITY:
            self._invalidate(stage)

    # ------------------------------------------------------------------ checks
    def _need(self, stage: int, where: str) -> None:
        if self._stage < stage:
            raise StageTooLowError(f"State.{where}", stage, self._stage)

    def _check_system(self, system) -> None:
        """Refuse a State that belongs to another System or to an older topology of this one.

        A State of a structurally identical copy of ``system`` (one pickled alone, back from a worker)
        is taken into ``system`` instead: see ``simtk.common._rebind``.
        """
        if self._system is not system:
            if _rebind.is_structural_copy(self, system):
                _rebind.take_into(self, system)
                return
            raise ValueError(
                f"this State belongs to {self._system!r}, not to {system!r}; use a State made by "
                "this System's realize_topology()")
        if self._topology_version != system._topology_version:
            raise TopologyVersionError(
                f"this State was made for topology version {self._topology_version} of {system!r}, which "
                f"is now at version {system._topology_version}; call realize_topology() for a new State")

    def _check_current(self, where: str) -> None:
        """Refuse writing into a State made before its System's topology changed."""
        system = self._system
        if system is not None and system._topology_version != self._topology_version:
            raise TopologyVersionError(
                f"State.{where}: this State was made for topology version {self._topology_version} of "
                f"{system!r}, which is now at version {system._topology_version}; call realize_topology() for a "
                "new State")

    # ------------------------------------------------------------------ stages
    def get_system(self):
        """The System this State belongs to.

        An unpickled State brings a copy of its System along; the original System takes it as its own
        (this returns the original then) when the copy is structurally identical to it.
        """
        return self._system

    def get_system_stage(self) -> Stage:
        """The stage the whole System is realized to (the lowest subsystem stage)."""
        return Stage(self._stage)

    def get_subsystem_stage(self, i: int) -> Stage:
        """The stage subsystem ``i`` is realized to."""
        return Stage(self._subs[i].stage)

    def get_num_subsystems(self) -> int:
        """How many subsystems this State holds variables for."""
        return len(self._subs)

    # ------------------------------------------------------------------ time
    def get_time(self) -> float:
        """The time t."""
        return self._t

    def set_time(self, t: float) -> None:
        """Set t; every subsystem drops to Instance (Time - 1)."""
        if type(t) is not float:  # the time loop's case first: the ABC checks cost more than the rest
            if isinstance(t, (bool, np.bool_)) or not isinstance(t, (numbers.Real, np.floating, np.integer)):
                raise TypeError(f"State.set_time: expected a real number, got {t!r}")
        v = float(t)
        if not math.isfinite(v):
            raise ValueError(f"State.set_time: time must be finite, got {v}")
        self._invalidate(TIME)
        self._t = v

    # ------------------------------------------------------------------ continuous variables
    def get_nq(self) -> int:
        """Number of generalized coordinates q."""
        self._need(MODEL, "get_nq()")
        return len(self._q)

    def get_nu(self) -> int:
        """Number of generalized speeds u."""
        self._need(MODEL, "get_nu()")
        return len(self._u)

    def get_nz(self) -> int:
        """Number of auxiliary variables z."""
        self._need(MODEL, "get_nz()")
        return len(self._z)

    def get_ny(self) -> int:
        """Number of continuous variables, nq + nu + nz."""
        self._need(MODEL, "get_ny()")
        return len(self._y)

    def get_q(self) -> np.ndarray:
        """All generalized coordinates, (nq,), read-only."""
        if self._stage < MODEL:
            raise StageTooLowError("State.get_q()", MODEL, self._stage)
        return self._q_ro

    def get_u(self) -> np.ndarray:
        """All generalized speeds, (nu,), read-only."""
        if self._stage < MODEL:
            raise StageTooLowError("State.get_u()", MODEL, self._stage)
        return self._u_ro

    def get_z(self) -> np.ndarray:
        """All auxiliary variables, (nz,), read-only."""
        if self._stage < MODEL:
            raise StageTooLowError("State.get_z()", MODEL, self._stage)
        return self._z_ro

    def get_y(self) -> np.ndarray:
        """All continuous variables [q, u, z], (ny,), read-only."""
        if self._stage < MODEL:
            raise StageTooLowError("State.get_y()", MODEL, self._stage)
        return self._y_ro

    def upd_q(self) -> np.ndarray:
        """Writable q, (nq,); invalidates Position now."""
        self._need(MODEL, "upd_q()")
        self._check_current("upd_q()")
        self._invalidate(POSITION)
        return self._q

    def upd_u(self) -> np.ndarray:
        """Writable u, (nu,); invalidates Velocity now."""
        self._need(MODEL, "upd_u()")
        self._check_current("upd_u()")
        self._invalidate(VELOCITY)
        return self._u

    def upd_z(self) -> np.ndarray:
        """Writable z, (nz,); invalidates Dynamics now."""
        self._need(MODEL, "upd_z()")
        self._check_current("upd_z()")
        self._invalidate(DYNAMICS)
        return self._z

    def upd_y(self) -> np.ndarray:
        """Writable y = [q, u, z], (ny,); invalidates Position now."""
        self._need(MODEL, "upd_y()")
        self._check_current("upd_y()")
        self._invalidate(POSITION)
        return self._y

    def set_q(self, values) -> None:
        """Copy ``values`` (nq,) into q after checking length and finiteness; invalidates Position."""
        if not _set_vector(self, self._q, values, POSITION):  # the common case, in one compiled call
            self._set_checked(self._q, values, POSITION, "set_q()")

    def set_u(self, values) -> None:
        """Copy ``values`` (nu,) into u after checking length and finiteness; invalidates Velocity."""
        if not _set_vector(self, self._u, values, VELOCITY):
            self._set_checked(self._u, values, VELOCITY, "set_u()")

    def _set_checked(self, dst: np.ndarray, values, stage: int, what: str) -> None:
        # set_q's and set_u's general case: any State, any real vector, and the reason of a refusal
        if self._stage < MODEL:
            raise StageTooLowError(f"State.{what}", MODEL, self._stage)
        self._check_current(what)
        if not _copied_if_finite(dst, values):  # else converted, or refused with the reason
            dst[:] = _checked_vector(values, len(dst), f"State.{what}")
        self._invalidate(stage)

    def set_z(self, values) -> None:
        """Copy ``values`` (nz,) into z after checking length and finiteness; invalidates Dynamics."""
        if self._stage < MODEL:
            raise StageTooLowError("State.set_z()", MODEL, self._stage)
        self._check_current("set_z()")
        a = _checked_vector(values, len(self._z), "State.set_z()")
        self._invalidate(DYNAMICS)
        self._z[:] = a

    def set_y(self, values) -> None:
        """Copy ``values`` (ny,) into y after checking length and finiteness; invalidates Position."""
        if self._stage < MODEL:
            raise StageTooLowError("State.set_y()", MODEL, self._stage)
        self._check_current("set_y()")
        a = _checked_vector(values, len(self._y), "State.set_y()")
        self._invalidate(POSITION)
        self._y[:] = a

    # ------------------------------------------------------------------ derivative cache
    def get_qdot(self) -> np.ndarray:
        """dq/dt, (nq,), read-only; valid from Velocity."""
        if self._stage < VELOCITY:
            raise StageTooLowError("State.get_qdot()", VELOCITY, self._stage)
        return self._qdot_ro

    def get_udot(self) -> np.ndarray:
        """du/dt, (nu,), read-only; valid from Acceleration."""
        if self._stage < ACCELERATION:
            raise StageTooLowError("State.get_udot()", ACCELERATION, self._stage)
        return self._udot_ro

    def get_zdot(self) -> np.ndarray:
        """dz/dt, (nz,), read-only; valid from Acceleration."""
        if self._stage < ACCELERATION:
            raise StageTooLowError("State.get_zdot()", ACCELERATION, self._stage)
        return self._zdot_ro

    def get_ydot(self) -> np.ndarray:
        """dy/dt = [qdot, udot, zdot], (ny,), read-only; valid from Acceleration."""
        if self._stage < ACCELERATION:
            raise StageTooLowError("State.get_ydot()", ACCELERATION, self._stage)
        return self._ydot_ro

    def get_qdotdot(self) -> np.ndarray:
        """d2q/dt2, (nq,), read-only; valid from Acceleration."""
        if self._stage < ACCELERATION:
            raise StageTooLowError("State.get_qdotdot()", ACCELERATION, self._stage)
        return self._qdotdot_ro

    # ------------------------------------------------------------------ constraint errors
    def get_nq_err(self) -> int:
        """Number of position constraint errors."""
        self._need(INSTANCE, "get_nq_err()")
        return len(self._qerr)

    def get_nu_err(self) -> int:
        """Number of velocity constraint errors."""
        self._need(INSTANCE, "get_nu_err()")
        return len(self._uerr)

    def get_nudot_err(self) -> int:
        """Number of acceleration constraint errors (and of multipliers)."""
        self._need(INSTANCE, "get_nudot_err()")
        return len(self._udoterr)

    def get_q_err(self) -> np.ndarray:
        """Position constraint errors, (nqerr,), read-only; valid from Position."""
        self._need(POSITION, "get_q_err()")
        return self._qerr_ro

    def get_u_err(self) -> np.ndarray:
        """Velocity constraint errors, (nuerr,), read-only; valid from Velocity."""
        self._need(VELOCITY, "get_u_err()")
        return self._uerr_ro

    def get_udot_err(self) -> np.ndarray:
        """Acceleration constraint errors, (nudoterr,), read-only; valid from Acceleration."""
        self._need(ACCELERATION, "get_udot_err()")
        return self._udoterr_ro

    def get_multipliers(self) -> np.ndarray:
        """Lagrange multipliers, (nudoterr,), read-only; valid from Acceleration."""
        self._need(ACCELERATION, "get_multipliers()")
        return self._multipliers_ro

    # ------------------------------------------------------------------ event triggers
    def get_event_triggers_by_stage(self, subsystem: int, stage) -> np.ndarray:
        """Subsystem ``subsystem``'s trigger-function values of ``stage``, read-only; valid from that stage."""
        ss = self._subs[subsystem]
        if ss.stage < int(stage):
            raise StageTooLowError(f"{ss.where()}: get_event_triggers_by_stage({Stage(stage).name})",
                                   stage, ss.stage)
        return _readonly(ss.triggers.get(int(stage), _EMPTY))

    # ------------------------------------------------------------------ discrete variables (subsystem-indexed)
    def _discrete(self, sx: int, i: int) -> _DiscreteVariable:
        ss = self._subs[sx]
        if not 0 <= i < len(ss.discrete):
            raise IndexError(f"{ss.where()}: no discrete variable {i} (it has {len(ss.discrete)})")
        return ss.discrete[i]

    def _cache_entry(self, sx: int, i: int) -> _CacheEntry:
        ss = self._subs[sx]
        if not 0 <= i < len(ss.cache):
            raise IndexError(f"{ss.where()}: no cache entry {i} (it has {len(ss.cache)})")
        return ss.cache[i]

    def _cache_is_current(self, ss: _SubsystemState, e: _CacheEntry) -> bool:
        st = ss.stage
        if st >= e.latest:
            return True
        # While stage `earliest` itself is being realized the subsystem is one below it; an entry
        # computed and marked then is current.
        if st < e.earliest - 1:
            return False
        return e.marked_at >= self._last_invalidation(e.earliest)

    def _auto_update_variables(self) -> int:
        """How many auto-update discrete variables this State has."""
        return sum(1 for ss in self._subs for v in ss.discrete if v.update_entry >= 0)

    def auto_update_discrete_variables(self) -> None:
        """Swap each auto-update discrete variable with its update value where that value is current.

        Integrators call this at the end of every successful step, so a component's memory (a
        filter state, a stick/slip flag) advances once per step while realization stays pure.
        """
        # Decide every swap before invalidating anything: invalidation by the first swap would make
        # the update values of later variables look stale.
        due = []
        for ss in self._subs:
            for v in ss.discrete:
                if v.update_entry >= 0 and self._cache_is_current(ss, ss.cache[v.update_entry]):
                    due.append((v, ss.cache[v.update_entry]))
        if not due:
            return
        for v, e in due:
            v.value, e.value = e.value, v.value
            e.marked_at = -1
        self._invalidate(min(v.invalidates for v, _ in due))

    # ------------------------------------------------------------------ change tracking
    def get_invalidation_mark(self) -> int:
        """A mark that ``get_lowest_stage_invalidated_since`` compares against later."""
        return self._epoch

    def get_lowest_stage_invalidated_since(self, mark: int) -> Stage:
        """The lowest stage invalidated since ``mark`` was taken (``Stage.Infinity`` if none).

        Every ``set_*``/``upd_*`` of a variable invalidates its stage, so this is the stage an
        integrator must restart from after an event handler ran.
        """
        for stage, epoch in enumerate(self._inval_epoch):
            if epoch > mark:
                return Stage(stage)
        return Stage.Infinity

    def copy_variables_from(self, other: "State") -> None:
        """Make t, y and every discrete variable equal to ``other``'s (a State of the same System).

        The cheap way to reuse a State: no cache is copied, and each change invalidates only what
        it must (a discrete variable: its own stage; t: Time; y: Position). Discrete variables go
        first, so a Model-stage variable that differs re-lays out this State before y is copied.
        """
        if other._system is not self._system and self._system is not None \
                and _rebind.is_structural_copy(other, self._system):
            _rebind.take_into(other, self._system)  # a State of a pickled copy of this System
        if other._system is not self._system or other._topology_version != self._topology_version:
            raise ValueError("copy_variables_from: the States belong to different Systems or topologies")
        if other._stage < MODEL:
            raise StageTooLowError("State.copy_variables_from(other)", MODEL, other._stage)
        self._copy_discrete_values_from(other)
        if self._stage < MODEL:
            self._system.realize(self, Stage.Model)
            self._copy_discrete_values_from(other)  # those allocated at Model exist only now
        if len(self._y) != len(other._y) or \
                any(len(a.discrete) != len(b.discrete) for a, b in zip(self._subs, other._subs)):
            raise ValueError("copy_variables_from: the States have different layouts")
        if self._t != other._t:
            self._invalidate(TIME)
            self._t = other._t
        self._invalidate(POSITION)
        self._y[:] = other._y

    def _copy_discrete_values_from(self, other: "State") -> None:
        for mine, theirs in zip(self._subs, other._subs):
            for v, w in zip(mine.discrete, theirs.discrete):
                if not _same_value(v.value, w.value):
                    self._invalidate(v.invalidates)
                    v.value = _copy.deepcopy(w.value)

    # ------------------------------------------------------------------ copying
    def copy(self) -> "State":
        """An independent State with the same variables, realized at most to Instance.

        Simbody's copy semantics: all variables are copied, and so is the cache of Instance and
        lower stages; everything above Instance must be realized again in the copy.
        """
        new = State()
        new._system = self._system
        new._topology_version = self._topology_version
        new._stage, new._hi = self._stage, self._hi
        new._epoch = self._epoch
        new._inval_epoch = list(self._inval_epoch)
        new._t = self._t
        if self._system is not None:
            self._system._live_states.add(new)
        new._names, new._named_discrete = self._names, self._named_discrete  # never mutated: shared
        # Components and Systems referenced from cache values are shared, never cloned.
        memo = {}
        system = self._system
        if system is not None:
            memo[id(system)] = system
            for sub in system._subsystems:
                memo[id(sub)] = sub
        new._subs = [self._copy_subsystem_state(ss, memo) for ss in self._subs]
        if self._y is not None and self._stage >= MODEL:
            y = self._y.copy()
            nq, nu = len(self._q), len(self._u)
            new._y, new._q, new._u, new._z = y, y[:nq], y[nq:nq + nu], y[nq + nu:]
            ydot = self._ydot.copy()
            new._ydot, new._qdot, new._udot, new._zdot = ydot, ydot[:nq], ydot[nq:nq + nu], ydot[nq + nu:]
            new._qdotdot = self._qdotdot.copy()
            for name in ("_y", "_q", "_u", "_z", "_ydot", "_qdot", "_udot", "_zdot", "_qdotdot"):
                setattr(new, name + "_ro", _readonly(getattr(new, name)))
            for ss in new._subs:
                new._point_model_views(ss)
        if self._qerr is not None and self._stage >= INSTANCE:
            new._qerr, new._uerr = self._qerr.copy(), self._uerr.copy()
            new._udoterr, new._multipliers = self._udoterr.copy(), self._multipliers.copy()
            for name in ("_qerr", "_uerr", "_udoterr", "_multipliers"):
                setattr(new, name + "_ro", _readonly(getattr(new, name)))
            for ss in new._subs:
                new._point_instance_views(ss)
        if new._hi > INSTANCE:
            new._invalidate(TIME)
        return new

    @staticmethod
    def _copy_subsystem_state(ss: _SubsystemState, memo: dict) -> _SubsystemState:
        c = _SubsystemState.__new__(_SubsystemState)
        c.name, c.index, c.stage = ss.name, ss.index, ss.stage
        # (attribute by attribute, not by name: a State's copy runs this per subsystem)
        c.q_blocks, c.u_blocks, c.z_blocks = list(ss.q_blocks), list(ss.u_blocks), list(ss.z_blocks)
        c.qerr_blocks, c.uerr_blocks = list(ss.qerr_blocks), list(ss.uerr_blocks)  # payloads are never
        c.udoterr_blocks, c.trigger_blocks = list(ss.udoterr_blocks), list(ss.trigger_blocks)  # mutated: shared
        if hasattr(ss, "nz"):  # laid out at Model
            c.q0, c.nq, c.u0, c.nu, c.z0, c.nz = ss.q0, ss.nq, ss.u0, ss.nu, ss.z0, ss.nz
        if hasattr(ss, "nudoterr"):  # laid out at Instance
            c.qerr0, c.nqerr, c.uerr0, c.nuerr = ss.qerr0, ss.nqerr, ss.uerr0, ss.nuerr
            c.udoterr0, c.nudoterr = ss.udoterr0, ss.nudoterr
        c.discrete = [_DiscreteVariable(_copied_value(v.value, memo), v.invalidates, v.allocated_at,
                                        v.update_entry) for v in ss.discrete]
        c.cache = []
        for e in ss.cache:
            ce = _CacheEntry(_copied_value(e.value, memo), e.earliest, e.latest, e.allocated_at)
            ce.marked_at = e.marked_at
            c.cache.append(ce)
        c.triggers = {k: v.copy() for k, v in ss.triggers.items()}
        return c

    def __getstate__(self):
        # The compiled realization holds pointers into this State's arrays: not pickled, rebuilt.
        slots = {k: getattr(self, k) for k in State.__slots__ if k != "__weakref__" and hasattr(self, k)}
        slots["_fused"] = None
        return (None, slots)

    def __setstate__(self, st) -> None:
        # Default pickling of a slotted object, then the registration a property change relies on.
        slots = st[1] if isinstance(st, tuple) else st
        for k, v in (slots or {}).items():
            object.__setattr__(self, k, v)
        self._repoint_views()
        system = self._system
        if system is not None:
            system.__dict__.setdefault("_live_states", weakref.WeakSet()).add(self)

    def _repoint_views(self) -> None:
        """Make q, u, z (and their derivatives, errors, and each subsystem's slices) views of y again:
        pickling copies every array apart, and a write through one must be seen through the others."""
        if getattr(self, "_y", None) is not None and self._stage >= MODEL:
            y, ydot = self._y, self._ydot
            nq, nu = len(self._q), len(self._u)
            self._q, self._u, self._z = y[:nq], y[nq:nq + nu], y[nq + nu:]
            self._qdot, self._udot, self._zdot = ydot[:nq], ydot[nq:nq + nu], ydot[nq + nu:]
            for name in ("_y", "_q", "_u", "_z", "_ydot", "_qdot", "_udot", "_zdot", "_qdotdot"):
                setattr(self, name + "_ro", _readonly(getattr(self, name)))
            for ss in self._subs:
                self._point_model_views(ss)
        if getattr(self, "_qerr", None) is not None and self._stage >= INSTANCE:
            for name in ("_qerr", "_uerr", "_udoterr", "_multipliers"):
                setattr(self, name + "_ro", _readonly(getattr(self, name)))
            for ss in self._subs:
                self._point_instance_views(ss)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __repr__(self) -> str:
        if self._stage >= MODEL:
            sizes = f"nq={len(self._q)}, nu={len(self._u)}, nz={len(self._z)}"
        else:
            sizes = "variables not laid out"
        return f"<State t={self._t:g}, stage={STAGE_NAMES[self._stage]}, {sizes}>"


# The compiled bookkeeping (State._invalidate, the fused realization) reads these classes' slots by
# offset: resolved once, here (core/state_ops.pxi).
_k.register_state_slots(State, _SubsystemState)
