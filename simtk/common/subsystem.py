"""Subsystem: a flat partition of a System's variables, cache and work."""
from __future__ import annotations

import copy as _copy
from typing import TYPE_CHECKING, Any

import numpy as np

from ._values import _checked_discrete_value, _checked_vector, _readonly
from .component import Component, check_component_name
from .errors import CacheEntryOutOfDateError, StageOutOfRangeError, StageTooLowError
from .stage import (
    ACCELERATION,
    INFINITY,
    INSTANCE,
    MODEL,
    POSITION,
    REPORT,
    STAGE_NAMES,
    TOPOLOGY,
    VELOCITY,
    Stage,
)
from .state import State, _CacheEntry, _DiscreteVariable, _SubsystemState

if TYPE_CHECKING:
    from .system import System

__all__ = ["Subsystem"]

_NO_VALUE = object()


def _stage_arg(stage, where: str) -> int:
    try:
        s = int(stage)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: expected a Stage, got {stage!r}") from exc
    if not 0 <= s <= INFINITY:
        raise ValueError(f"{where}: {stage!r} is not a Stage")
    return s


def _as_block(init, where: str) -> np.ndarray:
    a = np.array(init, dtype=np.float64, ndmin=1)
    if a.ndim != 1:
        raise ValueError(f"{where}: initial values must be a vector, got shape {a.shape}")
    return _checked_vector(a, len(a), where)


class Subsystem(Component):
    """A Subsystem: allocates variables and cache in a State and computes them stage by stage.

    Subclass it and override any of the ``realize_subsystem_<stage>_impl(state)`` hooks; each
    is called once per realization of its stage, in subsystem order, by ``System.realize``. Hooks
    are looked up on the class when the topology is realized: override them in a subclass, not by
    assigning to an instance.
    Allocate in the hooks of the stages that allow it:

    ============================== =========================================
    what                           allowed while realizing
    ============================== =========================================
    q, u, z                        Topology, Model
    discrete variables             Topology, Model
    cache entries                  Topology, Model, Instance
    constraint-error slots         Topology, Model, Instance
    event-trigger slots            Topology, Model, Instance
    ============================== =========================================

    What is allocated while realizing Topology is kept for the life of the topology, and its
    index may be stored on the subsystem (seed §2.4); what is allocated while realizing Model or
    Instance is re-allocated whenever that stage is realized again, so store those indices in a
    cache entry of the State, never on the subsystem.

    Parameters
    ----------
    system : System, optional
        When given, the new subsystem is adopted by it.
    name, version : str
        Used in messages and ``repr``.
    """

    def __init__(self, system: "System | None" = None, name: str = "", version: str = ""):
        self._component_fields()
        if name:
            self._c_name = check_component_name(name, f"{type(self).__name__}()")
        self._version = version
        self._system = None
        self._index = -1
        if system is not None:
            system.adopt_subsystem(self)

    # ------------------------------------------------------------------ hooks (override these)
    def realize_subsystem_topology_impl(self, state: State) -> None:
        """Allocate topology-lifetime variables and cache; may store their indices on ``self``."""

    def realize_subsystem_model_impl(self, state: State) -> None:
        """Allocate what depends on Model-stage variables (store indices in the State)."""

    def realize_subsystem_instance_impl(self, state: State) -> None:
        """Compute per-instance quantities (parameters); allocate constraint-error slots."""

    def realize_subsystem_time_impl(self, state: State) -> None:
        """Compute what depends on t."""

    def realize_subsystem_position_impl(self, state: State) -> None:
        """Compute what depends on q."""

    def realize_subsystem_velocity_impl(self, state: State) -> None:
        """Compute what depends on u; set qdot here if this subsystem has q."""

    def realize_subsystem_dynamics_impl(self, state: State) -> None:
        """Compute forces and what depends on z."""

    def realize_subsystem_acceleration_impl(self, state: State) -> None:
        """Compute udot, zdot (and qdotdot)."""

    def realize_subsystem_report_impl(self, state: State) -> None:
        """Compute what is only needed for output."""

    def project_q_impl(self, state: State, accuracy: float) -> bool:
        """Move q onto this subsystem's position constraint manifold; return True if q changed."""
        return False

    def project_u_impl(self, state: State, accuracy: float) -> bool:
        """Move u onto this subsystem's velocity constraint manifold; return True if u changed."""
        return False

    # ------------------------------------------------------------------ identity
    def get_system(self) -> "System":
        """The System that adopted this subsystem."""
        if self._system is None:
            raise RuntimeError(f"Subsystem '{self._name}' has not been adopted by a System")
        return self._system

    def get_my_subsystem_index(self) -> int:
        """This subsystem's index in its System (and in every State of it)."""
        if self._system is None:
            raise RuntimeError(f"Subsystem '{self._name}' has not been adopted by a System")
        return self._index

    @property
    def _name(self) -> str:
        return self.get_name()

    def _default_stem(self) -> str:
        return type(self).__name__  # a subsystem is named after its class unless named

    def get_version(self) -> str:
        """The version string given at construction."""
        return self._version

    def invalidate_subsystem_topology_cache(self) -> None:
        """Declare that a topological property of this subsystem changed (seed §2.3).

        Every State made before is refused from now on; ``System.realize_topology()`` makes new ones.
        """
        if self._system is not None:
            self._system.invalidate_system_topology_cache()

    def _where(self) -> str:
        return f"Subsystem '{self._name}' (#{self._index})"

    # ------------------------------------------------------------------ named variables
    def _allocate_declared(self, state: State) -> None:
        """Allocate the variables declared by name on this subsystem and the components below it
        (`Component.add_discrete_variable` and friends); runs first while realizing Topology."""
        for comp in [self] + self.get_subcomponents():
            if comp._owning_subsystem() is not self:
                continue
            slots = comp.__dict__["_c_slots"] = {}
            for name, (kind, spec) in comp.__dict__.get("_c_declared", {}).items():
                if kind == "state_variable":
                    i = self.allocate_z(state, [spec[0]])
                elif kind == "discrete_variable":
                    i = self.allocate_discrete_variable(state, spec[0], spec[1])
                elif kind == "cache_variable":
                    i = self.allocate_lazy_cache_entry(state, spec[1], spec[0])
                else:  # modeling_option
                    i = self.allocate_discrete_variable(state, spec[1], 0)
                slots[name] = (kind, self, i)

    def _state_variable_names(self, state: State) -> tuple[list[str], list[str], list[str]]:
        """The names of this subsystem's q, u and z, relative to it (``q0``, ``u0``, ``z0``... unless
        declared with `add_state_variable` or named by a subclass)."""
        ss = self._ss(state)
        z = [f"z{i}" for i in range(ss.nz)]
        for comp in [self] + self.get_subcomponents():
            for name, (kind, _sub, i) in comp.__dict__.get("_c_slots", {}).items():
                if kind == "state_variable" and _sub is self:
                    z[i] = self.get_relative_path_name(comp) + "/" + name if comp is not self else name
        return [f"q{i}" for i in range(ss.nq)], [f"u{i}" for i in range(ss.nu)], z

    def _describe_variable(self, state: State, kind: str, i: int) -> str:
        """Name this subsystem's ``kind`` ('q', 'u' or 'z') variable ``i`` for an error message;
        subsystems that know better (the matter subsystem names the body) override it."""
        return f"{kind}[{i}] of {self._where()}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self._name}' #{self._index}>"

    def __deepcopy__(self, memo):
        return self  # a topology object: copies of a State share it, never clone it

    # ------------------------------------------------------------------ State access
    def _ss(self, state: State) -> _SubsystemState:
        system = self._system
        if state._system is not system or state._topology_version != system._topology_version:
            if system is None:
                raise RuntimeError(f"Subsystem '{self._name}' has not been adopted by a System")
            state._check_system(system)
        return state._subs[self._index]

    def _need(self, ss: _SubsystemState, stage: int, what: str) -> None:
        if ss.stage < stage:
            raise StageTooLowError(f"{self._where()}: {what}", stage, ss.stage)

    def _allocating(self, state: State, what: str, last_allowed: int) -> tuple[_SubsystemState, int]:
        """The subsystem's share of ``state`` and the stage being realized, checked for ``what``."""
        ss = self._ss(state)
        at = ss.stage + 1
        if at > last_allowed:
            raise StageOutOfRangeError(
                f"{self._where()}: {what} is allowed only while realizing Topology"
                f"{'' if last_allowed == TOPOLOGY else ' to ' + STAGE_NAMES[last_allowed]}, but the subsystem is "
                f"already realized to {STAGE_NAMES[ss.stage]}")
        return ss, at

    # ------------------------------------------------------------------ continuous variables
    def _allocate_continuous(self, state: State, blocks_name: str, init, what: str) -> int:
        ss, at = self._allocating(state, what, MODEL)
        block = _as_block(init, f"{self._where()}: {what}")
        blocks = getattr(ss, blocks_name)
        start = sum(len(b) for _, b in blocks)
        blocks.append((at, block))
        return start

    def allocate_q(self, state: State, init) -> int:
        """Allocate a block of generalized coordinates with initial values ``init``.

        Returns the block's start index in this subsystem's q (``get_q(state)[index]``).
        Allowed while realizing Topology or Model.
        """
        return self._allocate_continuous(state, "q_blocks", init, "allocate_q()")

    def allocate_u(self, state: State, init) -> int:
        """Allocate a block of generalized speeds; returns its start in this subsystem's u."""
        return self._allocate_continuous(state, "u_blocks", init, "allocate_u()")

    def allocate_z(self, state: State, init) -> int:
        """Allocate a block of auxiliary variables; returns its start in this subsystem's z."""
        return self._allocate_continuous(state, "z_blocks", init, "allocate_z()")

    def _laid_out(self, state: State, what: str) -> _SubsystemState:
        ss = self._ss(state)
        if ss.stage < MODEL:
            raise StageTooLowError(f"{self._where()}: {what}", MODEL, ss.stage)
        return ss

    def get_q(self, state: State) -> np.ndarray:
        """This subsystem's q, read-only."""
        return self._laid_out(state, "get_q()").q_ro

    def get_u(self, state: State) -> np.ndarray:
        """This subsystem's u, read-only."""
        return self._laid_out(state, "get_u()").u_ro

    def get_z(self, state: State) -> np.ndarray:
        """This subsystem's z, read-only."""
        return self._laid_out(state, "get_z()").z_ro

    def upd_q(self, state: State) -> np.ndarray:
        """This subsystem's q, writable; invalidates Position (for the whole System) now."""
        ss = self._laid_out(state, "upd_q()")
        state._invalidate(POSITION)
        return ss.q

    def upd_u(self, state: State) -> np.ndarray:
        """This subsystem's u, writable; invalidates Velocity now."""
        ss = self._laid_out(state, "upd_u()")
        state._invalidate(VELOCITY)
        return ss.u

    def upd_z(self, state: State) -> np.ndarray:
        """This subsystem's z, writable; invalidates Dynamics now."""
        ss = self._laid_out(state, "upd_z()")
        state._invalidate(Stage.Dynamics)
        return ss.z

    def get_q_start(self, state: State) -> int:
        """Where this subsystem's q block starts in the System's q."""
        return self._laid_out(state, "get_q_start()").q0

    def get_u_start(self, state: State) -> int:
        """Where this subsystem's u block starts in the System's u."""
        return self._laid_out(state, "get_u_start()").u0

    def get_z_start(self, state: State) -> int:
        """Where this subsystem's z block starts in the System's z."""
        return self._laid_out(state, "get_z_start()").z0

    # ------------------------------------------------------------------ derivative cache
    def get_qdot(self, state: State) -> np.ndarray:
        """This subsystem's qdot, read-only; valid from Velocity."""
        ss = self._laid_out(state, "get_qdot()")
        self._need(ss, VELOCITY, "get_qdot()")
        return ss.qdot_ro

    def get_udot(self, state: State) -> np.ndarray:
        """This subsystem's udot, read-only; valid from Acceleration."""
        ss = self._laid_out(state, "get_udot()")
        self._need(ss, ACCELERATION, "get_udot()")
        return ss.udot_ro

    def get_zdot(self, state: State) -> np.ndarray:
        """This subsystem's zdot, read-only; valid from Acceleration."""
        ss = self._laid_out(state, "get_zdot()")
        self._need(ss, ACCELERATION, "get_zdot()")
        return ss.zdot_ro

    def get_qdotdot(self, state: State) -> np.ndarray:
        """This subsystem's qdotdot, read-only; valid from Acceleration."""
        ss = self._laid_out(state, "get_qdotdot()")
        self._need(ss, ACCELERATION, "get_qdotdot()")
        return ss.qdotdot_ro

    def upd_qdot(self, state: State) -> np.ndarray:
        """Writable qdot of this subsystem (a cache: writing it invalidates nothing)."""
        return self._laid_out(state, "upd_qdot()").qdot

    def upd_udot(self, state: State) -> np.ndarray:
        """Writable udot of this subsystem (a cache: writing it invalidates nothing)."""
        return self._laid_out(state, "upd_udot()").udot

    def upd_zdot(self, state: State) -> np.ndarray:
        """Writable zdot of this subsystem (a cache: writing it invalidates nothing)."""
        return self._laid_out(state, "upd_zdot()").zdot

    def upd_qdotdot(self, state: State) -> np.ndarray:
        """Writable qdotdot of this subsystem (a cache: writing it invalidates nothing)."""
        return self._laid_out(state, "upd_qdotdot()").qdotdot

    # ------------------------------------------------------------------ constraint errors
    def _allocate_count(self, state: State, blocks_name: str, n: int, what: str) -> int:
        ss, at = self._allocating(state, what, INSTANCE)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{self._where()}: {what}: expected a count >= 0, got {n!r}")
        blocks = getattr(ss, blocks_name)
        start = sum(b for _, b in blocks)
        blocks.append((at, int(n)))
        return start

    def allocate_q_err(self, state: State, n: int) -> int:
        """Allocate ``n`` position constraint-error slots; returns their start in this subsystem's block."""
        return self._allocate_count(state, "qerr_blocks", n, "allocate_q_err()")

    def allocate_u_err(self, state: State, n: int) -> int:
        """Allocate ``n`` velocity constraint-error slots."""
        return self._allocate_count(state, "uerr_blocks", n, "allocate_u_err()")

    def allocate_udot_err(self, state: State, n: int) -> int:
        """Allocate ``n`` acceleration constraint-error slots (and as many multipliers)."""
        return self._allocate_count(state, "udoterr_blocks", n, "allocate_udot_err()")

    def _instance_laid_out(self, state: State, what: str) -> _SubsystemState:
        ss = self._ss(state)
        if ss.stage < INSTANCE:
            raise StageTooLowError(f"{self._where()}: {what}", INSTANCE, ss.stage)
        return ss

    def get_q_err(self, state: State) -> np.ndarray:
        """This subsystem's position errors, read-only; valid from Position."""
        ss = self._instance_laid_out(state, "get_q_err()")
        self._need(ss, POSITION, "get_q_err()")
        return ss.qerr_ro

    def get_u_err(self, state: State) -> np.ndarray:
        """This subsystem's velocity errors, read-only; valid from Velocity."""
        ss = self._instance_laid_out(state, "get_u_err()")
        self._need(ss, VELOCITY, "get_u_err()")
        return ss.uerr_ro

    def get_udot_err(self, state: State) -> np.ndarray:
        """This subsystem's acceleration errors, read-only; valid from Acceleration."""
        ss = self._instance_laid_out(state, "get_udot_err()")
        self._need(ss, ACCELERATION, "get_udot_err()")
        return ss.udoterr_ro

    def upd_q_err(self, state: State) -> np.ndarray:
        """Writable position errors of this subsystem (cache; set while realizing Position)."""
        return self._instance_laid_out(state, "upd_q_err()").qerr

    def upd_u_err(self, state: State) -> np.ndarray:
        """Writable velocity errors of this subsystem (cache; set while realizing Velocity)."""
        return self._instance_laid_out(state, "upd_u_err()").uerr

    def upd_udot_err(self, state: State) -> np.ndarray:
        """Writable acceleration errors of this subsystem (cache; set while realizing Acceleration)."""
        return self._instance_laid_out(state, "upd_udot_err()").udoterr

    def get_multipliers(self, state: State) -> np.ndarray:
        """This subsystem's Lagrange multipliers, read-only; valid from Acceleration."""
        ss = self._instance_laid_out(state, "get_multipliers()")
        self._need(ss, ACCELERATION, "get_multipliers()")
        return ss.multipliers_ro

    def upd_multipliers(self, state: State) -> np.ndarray:
        """Writable multipliers of this subsystem (cache; set while realizing Acceleration)."""
        return self._instance_laid_out(state, "upd_multipliers()").multipliers

    # ------------------------------------------------------------------ event triggers
    def allocate_event_triggers(self, state: State, stage, n: int) -> int:
        """Allocate ``n`` trigger-function slots evaluated at ``stage`` (Time to Acceleration).

        Returns the start index in this subsystem's triggers of that stage, written while realizing
        ``stage`` through ``upd_event_triggers_by_stage``.
        """
        where = f"{self._where()}: allocate_event_triggers()"
        s = _stage_arg(stage, where)
        if not Stage.Time <= s <= Stage.Acceleration:
            raise ValueError(f"{where}: triggers are evaluated at Time to Acceleration, not {STAGE_NAMES[s]}")
        ss, at = self._allocating(state, "allocate_event_triggers()", INSTANCE)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{where}: expected a count >= 0, got {n!r}")
        start = sum(m for _, (st, m) in ss.trigger_blocks if st == s)
        ss.trigger_blocks.append((at, (s, int(n))))
        return start

    def upd_event_triggers_by_stage(self, state: State, stage) -> np.ndarray:
        """Writable trigger values of ``stage`` for this subsystem (cache)."""
        ss = self._instance_laid_out(state, "upd_event_triggers_by_stage()")
        arr = ss.triggers.get(int(stage))
        if arr is None:
            raise IndexError(f"{self._where()}: no event triggers were allocated at stage {Stage(stage).name}")
        return arr

    def get_num_event_triggers(self, state: State, stage) -> int:
        """How many trigger slots of ``stage`` this subsystem allocated in ``state`` (Instance)."""
        ss = self._instance_laid_out(state, "get_num_event_triggers()")
        return len(ss.triggers.get(int(stage), ()))

    def handle_event_trigger(self, state: State, stage, index: int, accuracy: float) -> bool:
        """React to trigger ``index`` of ``stage`` changing sign; return True to end the simulation.

        Override this in a subsystem that allocates event triggers (seed §2.5.4): integrators watch
        every allocated slot and call this where its value changes sign.
        """
        raise NotImplementedError(
            f"{self._where()} allocated event triggers but does not override handle_event_trigger()")

    def get_event_triggers_by_stage(self, state: State, stage) -> np.ndarray:
        """This subsystem's trigger values of ``stage``, read-only; valid from that stage."""
        self._ss(state)
        return state.get_event_triggers_by_stage(self._index, stage)

    # ------------------------------------------------------------------ discrete variables
    def allocate_discrete_variable(self, state: State, invalidates, value) -> int:
        """Allocate a discrete variable holding ``value``; changing it invalidates ``invalidates``.

        ``value`` may be any Python object; its kind (array shape and dtype, number, or type) is
        fixed from now on. Allowed while realizing Topology or Model; ``invalidates`` must be a stage
        after the one being realized and at most Report. Returns the variable's index.
        """
        where = f"{self._where()}: allocate_discrete_variable()"
        inv = _stage_arg(invalidates, where)
        ss, at = self._allocating(state, "allocate_discrete_variable()", MODEL)
        if not at < inv <= REPORT:
            raise StageOutOfRangeError(
                f"{where}: a variable allocated while realizing {STAGE_NAMES[at]} must invalidate a stage from "
                f"{STAGE_NAMES[at + 1]} to Report, not {STAGE_NAMES[inv]}")
        # The value must be one that set_discrete_variable would accept in its place (finite numbers).
        stored = _checked_discrete_value(value, _stored(value), where)
        ss.discrete.append(_DiscreteVariable(stored, inv, at))
        return len(ss.discrete) - 1

    def allocate_auto_update_discrete_variable(self, state: State, invalidates, value, update_depends_on) -> int:
        """Allocate a discrete variable whose next value is computed as a cache entry.

        The update value is a lazy cache entry that depends on ``update_depends_on``; components
        compute it while realizing (``upd_discrete_var_update_value`` then
        ``mark_discrete_var_update_value_realized``) and integrators swap it into the variable at the
        end of each successful step (``State.auto_update_discrete_variables``).
        """
        where = f"{self._where()}: allocate_auto_update_discrete_variable()"
        dep = _stage_arg(update_depends_on, where)
        i = self.allocate_discrete_variable(state, invalidates, value)
        ss = state._subs[self._index]
        at = ss.stage + 1
        if dep < at:
            ss.discrete.pop()
            raise StageOutOfRangeError(f"{where}: update_depends_on must be {STAGE_NAMES[at]} or later")
        ss.cache.append(_CacheEntry(_copy.deepcopy(ss.discrete[i].value), dep, INFINITY, at))
        ss.discrete[i].update_entry = len(ss.cache) - 1
        return i

    def _dv(self, state: State, i: int, what: str):
        ss = self._ss(state)
        if type(i) is int and 0 <= i < len(ss.discrete):
            return ss, ss.discrete[i]
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(ss.discrete):
            raise IndexError(f"{self._where()}: {what}: no discrete variable {i!r} (it has {len(ss.discrete)})")
        return ss, ss.discrete[i]

    def get_num_discrete_variables(self, state: State) -> int:
        """How many discrete variables this subsystem has allocated in ``state`` (indices 0 .. n-1)."""
        return len(self._ss(state).discrete)

    def get_discrete_variable(self, state: State, i: int) -> Any:
        """The value of discrete variable ``i`` (arrays come back read-only)."""
        _, v = self._dv(state, i, "get_discrete_variable()")
        val = v.value
        return _readonly(val) if isinstance(val, np.ndarray) else val

    def upd_discrete_variable(self, state: State, i: int) -> Any:
        """The stored object of variable ``i`` for in-place change; invalidates its stage now.

        Immutable values (numbers, strings) cannot be changed in place: use ``set_discrete_variable``.
        """
        _, v = self._dv(state, i, "upd_discrete_variable()")
        state._invalidate(v.invalidates)
        return v.value

    def set_discrete_variable(self, state: State, i: int, value) -> None:
        """Replace the value of variable ``i`` (same kind as allocated); invalidates its stage."""
        _, v = self._dv(state, i, "set_discrete_variable()")
        new = _checked_discrete_value(v.value, value, f"{self._where()}: set_discrete_variable({i})")
        state._invalidate(v.invalidates)
        v.value = new

    def get_discrete_variable_invalidated_stage(self, state: State, i: int) -> Stage:
        """The stage that changing variable ``i`` invalidates."""
        _, v = self._dv(state, i, "get_discrete_variable_invalidated_stage()")
        return Stage(v.invalidates)

    def _update_entry(self, state: State, i: int, what: str):
        ss, v = self._dv(state, i, what)
        if v.update_entry < 0:
            raise ValueError(f"{self._where()}: {what}: discrete variable {i} is not an auto-update variable")
        return ss, ss.cache[v.update_entry], v

    def get_discrete_var_update_index(self, state: State, i: int) -> int:
        """The cache entry index holding auto-update variable ``i``'s next value."""
        return self._dv(state, i, "get_discrete_var_update_index()")[1].update_entry

    def get_discrete_var_update_value(self, state: State, i: int) -> Any:
        """The next value of auto-update variable ``i`` (must be current)."""
        _, _, v = self._update_entry(state, i, "get_discrete_var_update_value()")
        return self.get_cache_entry(state, v.update_entry)

    def upd_discrete_var_update_value(self, state: State, i: int) -> Any:
        """The stored next value of auto-update variable ``i`` for in-place change (validity unchanged)."""
        return self._update_entry(state, i, "upd_discrete_var_update_value()")[1].value

    def set_discrete_var_update_value(self, state: State, i: int, value) -> None:
        """Replace the next value of auto-update variable ``i`` and mark it realized."""
        ss, e, v = self._update_entry(state, i, "set_discrete_var_update_value()")
        e.value = _checked_discrete_value(v.value, value, f"{self._where()}: set_discrete_var_update_value({i})")
        self.mark_cache_value_realized(state, v.update_entry)

    def is_discrete_var_update_value_realized(self, state: State, i: int) -> bool:
        """Whether the next value of auto-update variable ``i`` is current."""
        ss, e, _ = self._update_entry(state, i, "is_discrete_var_update_value_realized()")
        return state._cache_is_current(ss, e)

    def mark_discrete_var_update_value_realized(self, state: State, i: int) -> None:
        """Mark the next value of auto-update variable ``i`` as current."""
        _, _, v = self._update_entry(state, i, "mark_discrete_var_update_value_realized()")
        self.mark_cache_value_realized(state, v.update_entry)

    # ------------------------------------------------------------------ cache entries
    def allocate_cache_entry(self, state: State, earliest, latest, value=_NO_VALUE) -> int:
        """Allocate a cache entry: ``(state, earliest, latest, value)`` or ``(state, stage, value)``.

        The entry's value depends on variables of stage ``earliest`` and lower; it is guaranteed
        current once the subsystem is realized to ``latest`` (compute it in that stage's hook, or
        earlier and mark it realized). ``latest = Stage.Infinity`` makes it lazy. Allowed while
        realizing Topology, Model or Instance; ``earliest`` may not be below the stage being realized.
        Returns the entry's index.
        """
        if value is _NO_VALUE:
            latest, value = earliest, latest
        where = f"{self._where()}: allocate_cache_entry()"
        e = _stage_arg(earliest, where)
        lt = _stage_arg(latest, where)
        ss, at = self._allocating(state, "allocate_cache_entry()", INSTANCE)
        if e < at:
            raise StageOutOfRangeError(
                f"{where}: earliest stage {STAGE_NAMES[e]} is below the stage being realized ({STAGE_NAMES[at]})")
        if lt < e:
            raise StageOutOfRangeError(f"{where}: latest stage {STAGE_NAMES[lt]} is below earliest {STAGE_NAMES[e]}")
        ss.cache.append(_CacheEntry(value, e, lt, at))
        return len(ss.cache) - 1

    def allocate_lazy_cache_entry(self, state: State, earliest, value) -> int:
        """Allocate a cache entry computed only on demand (latest = Infinity)."""
        return self.allocate_cache_entry(state, earliest, INFINITY, value)

    def _ce(self, state: State, i: int, what: str):
        ss = self._ss(state)
        if type(i) is int and 0 <= i < len(ss.cache):
            return ss, ss.cache[i]
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(ss.cache):
            raise IndexError(f"{self._where()}: {what}: no cache entry {i!r} (it has {len(ss.cache)})")
        return ss, ss.cache[i]

    def get_cache_entry(self, state: State, i: int) -> Any:
        """The value of cache entry ``i``, which must be current (arrays come back read-only).

        Raises ``StageTooLowError`` below the entry's earliest stage and
        ``CacheEntryOutOfDateError`` between earliest and latest when it has not been marked
        realized since its inputs last changed.
        """
        ss, e = self._ce(state, i, "get_cache_entry()")
        st = ss.stage
        if st < e.latest:
            if st < e.earliest - 1:
                raise StageTooLowError(f"{self._where()}: get_cache_entry({i})", e.earliest, st)
            if e.marked_at < state._last_invalidation(e.earliest):
                raise CacheEntryOutOfDateError(
                    f"{self._where()}: cache entry {i} (earliest {STAGE_NAMES[e.earliest]}, latest "
                    f"{STAGE_NAMES[e.latest]}) is out of date: the subsystem is at {STAGE_NAMES[st]} and the "
                    "entry has not been marked realized since its inputs changed")
        val = e.value
        return _readonly(val) if isinstance(val, np.ndarray) else val

    def _writable_ce(self, state: State, i: int, what: str):
        """Cache entry ``i`` for writing: as Simbody's ``updCacheEntry``, the stage before the entry's
        earliest must be realized, or the value written would be computed from stale inputs."""
        ss, e = self._ce(state, i, what)
        if ss.stage < e.earliest - 1:
            raise StageTooLowError(f"{self._where()}: {what[:-2]}({i})", e.earliest - 1, ss.stage)
        return e

    def upd_cache_entry(self, state: State, i: int) -> Any:
        """The stored object of cache entry ``i``, for in-place change; its validity is unchanged.

        Allowed once the stage before the entry's earliest stage is realized (Simbody's rule).
        """
        return self._writable_ce(state, i, "upd_cache_entry()").value

    def set_cache_entry(self, state: State, i: int, value) -> None:
        """Replace the value of cache entry ``i``; its validity is unchanged.

        Allowed once the stage before the entry's earliest stage is realized (Simbody's rule).
        """
        self._writable_ce(state, i, "set_cache_entry()").value = value

    def is_cache_value_realized(self, state: State, i: int) -> bool:
        """Whether cache entry ``i`` is current (same test as ``get_cache_entry``)."""
        ss, e = self._ce(state, i, "is_cache_value_realized()")
        return state._cache_is_current(ss, e)

    is_cache_value_current = is_cache_value_realized

    def mark_cache_value_realized(self, state: State, i: int) -> None:
        """Mark cache entry ``i`` current; allowed once the stage before its earliest is realized."""
        ss, e = self._ce(state, i, "mark_cache_value_realized()")
        if ss.stage < e.earliest - 1:
            raise StageTooLowError(f"{self._where()}: mark_cache_value_realized({i})", e.earliest - 1, ss.stage)
        e.marked_at = state._epoch

    def mark_cache_value_not_realized(self, state: State, i: int) -> None:
        """Mark cache entry ``i`` not current (it stays current at or above its latest stage)."""
        self._ce(state, i, "mark_cache_value_not_realized()")[1].marked_at = -1

    def get_stage(self, state: State) -> Stage:
        """The stage this subsystem is realized to in ``state``."""
        return Stage(self._ss(state).stage)


def _stored(value):
    """The object a State keeps for a discrete variable's initial value (arrays are copied)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    return value
