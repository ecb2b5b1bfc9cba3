"""System: an ordered set of Subsystems realized together, stage by stage."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .errors import StageOutOfRangeError
from .stage import ACCELERATION, INSTANCE, MODEL, POSITION, REPORT, STAGE_NAMES, TOPOLOGY, VELOCITY, Stage
from .state import State
from .subsystem import Subsystem

__all__ = ["System"]

_HOOK_NAMES = (
    None,
    "realize_subsystem_topology_impl",
    "realize_subsystem_model_impl",
    "realize_subsystem_instance_impl",
    "realize_subsystem_time_impl",
    "realize_subsystem_position_impl",
    "realize_subsystem_velocity_impl",
    "realize_subsystem_dynamics_impl",
    "realize_subsystem_acceleration_impl",
    "realize_subsystem_report_impl",
)


class System:
    """A System: Subsystems that share one State and are realized in a fixed order.

    The System owns the topology (its subsystems and their properties); every variable lives in
    a State made by ``realize_topology()``. ``realize(state, stage)`` brings a State up one stage at
    a time, calling each subsystem's hook for that stage exactly once.

    Parameters
    ----------
    name : str
        Used in messages and ``repr``.
    """

    def __init__(self, name: str = ""):
        self._name = name or type(self).__name__
        self._subsystems: list[Subsystem] = []
        self._topology_version = 0
        self._default_state: State | None = None
        self._num_realizations = [0] * 11
        # Per stage, the (subsystem index, bound hook or None) pairs in realization order. A None hook
        # means the subsystem kept the base class's empty hook, so realizing only advances its stage.
        self._plan: list[list[tuple[int, object]]] = [[] for _ in range(11)]
        self._event_handlers: list = []
        self._event_reporters: list = []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self._name}' with {len(self._subsystems)} subsystems>"

    def __deepcopy__(self, memo):
        return self  # a topology object: copies of a State share it, never clone it

    # ------------------------------------------------------------------ topology
    def adopt_subsystem(self, sub: Subsystem) -> int:
        """Take ``sub`` into this System; returns its subsystem index. Changes the topology."""
        if not isinstance(sub, Subsystem):
            raise TypeError(f"{self!r}: adopt_subsystem() takes a Subsystem, got {type(sub).__name__}")
        if sub._system is not None:
            raise ValueError(f"{sub!r} already belongs to {sub._system!r}")
        sub._system = self
        sub._index = len(self._subsystems)
        self._subsystems.append(sub)
        self.invalidate_system_topology_cache()
        return sub._index

    def get_num_subsystems(self) -> int:
        """How many subsystems this System has."""
        return len(self._subsystems)

    def get_subsystem(self, i: int) -> Subsystem:
        """Subsystem ``i``."""
        return self._subsystems[i]

    def get_name(self) -> str:
        """The System's name."""
        return self._name

    def invalidate_system_topology_cache(self) -> None:
        """Declare the topology changed: States made before are refused from now on."""
        self._topology_version += 1
        self._default_state = None

    def get_system_topology_cache_version(self) -> int:
        """A counter that changes whenever the topology changes."""
        return self._topology_version

    def is_topology_realized(self) -> bool:
        """Whether ``realize_topology()`` has run since the last topology change."""
        return self._default_state is not None

    def add_event_handler(self, handler) -> None:
        """Add an event handler (``TriggeredEventHandler``, ``ScheduledEventHandler``, ...).

        Handlers belong to the topology: adding one invalidates existing States.
        """
        self._event_handlers.append(handler)
        self.invalidate_system_topology_cache()

    def add_event_reporter(self, reporter) -> None:
        """Add an event reporter; reporters observe a State and never change it."""
        self._event_reporters.append(reporter)
        self.invalidate_system_topology_cache()

    def get_event_handlers(self) -> tuple:
        """The event handlers added so far."""
        return tuple(self._event_handlers)

    def get_event_reporters(self) -> tuple:
        """The event reporters added so far."""
        return tuple(self._event_reporters)

    def _realization_order(self, stage: int) -> Sequence[Subsystem]:
        """The subsystems in the order they are realized at ``stage``; subclasses may reorder."""
        return self._subsystems

    def _make_plan(self) -> None:
        base = Subsystem.__dict__
        plan = [[] for _ in range(11)]
        for g in range(TOPOLOGY, REPORT + 1):
            name = _HOOK_NAMES[g]
            for sub in self._realization_order(g):
                overridden = getattr(type(sub), name) is not base[name]
                plan[g].append((sub._index, getattr(sub, name) if overridden else None))
        self._plan = plan

    def realize_topology(self) -> State:
        """Realize the topology and return a new default State, realized to Model.

        The subsystems' topology hooks run only when the topology changed since the last call;
        otherwise this is a copy of the stored default State.
        """
        if self._default_state is None:
            if not self._subsystems:
                raise RuntimeError(f"{self!r}: a System needs at least one subsystem to realize its topology")
            self._make_plan()
            state = State._for_system(self, [s._name for s in self._subsystems], self._topology_version)
            self._realize_allocating_stage(state, TOPOLOGY)
            self._realize_allocating_stage(state, MODEL)
            self._default_state = state
        return self._default_state.copy()

    def get_default_state(self) -> State:
        """A new copy of the default State (``realize_topology()`` must have been called)."""
        if self._default_state is None:
            raise RuntimeError(f"{self!r}: the topology is not realized; call realize_topology() first")
        return self._default_state.copy()

    # ------------------------------------------------------------------ realization
    def realize_model(self, state: State) -> None:
        """Realize ``state`` to Model (allocating what Model-stage variables ask for)."""
        self.realize(state, Stage.Model)

    def realize(self, state: State, stage=Stage.Report) -> None:
        """Realize ``state`` up to ``stage``, one stage at a time; a no-op if it is there already.

        Each stage runs every subsystem's hook once, in realization order. If a hook raises, the
        whole State is left below that stage, so realizing again redoes the stage from its start.
        """
        if state._system is not self or state._topology_version != self._topology_version:
            state._check_system(self)
        g = state._stage
        if g >= stage:
            return
        if stage > REPORT:
            raise StageOutOfRangeError(f"{self!r}: realize() goes up to Report, not {Stage(stage).name}")
        while g < stage:
            g += 1
            if g <= INSTANCE:
                self._realize_allocating_stage(state, g)
            else:
                self._realize_stage(state, g)

    def _realize_stage(self, state: State, g: int) -> None:
        subs = state._subs
        state._hi = g if state._hi < g else state._hi
        for idx, hook in self._plan[g]:
            ss = subs[idx]
            if ss.stage < g:
                if hook is not None:
                    try:
                        hook(state)
                    except Exception as exc:
                        # Subsystems realized before this one may have written into shared results (force
                        # accumulators): drop them all below g so that a retry redoes the whole stage.
                        state._invalidate(g)
                        exc.add_note(f"while realizing {STAGE_NAMES[g]} of subsystem '{ss.name}' (#{idx})")
                        raise
                ss.stage = g
        state._stage = g
        self._num_realizations[g] += 1

    def _realize_allocating_stage(self, state: State, g: int) -> None:
        """Topology, Model and Instance: the hooks allocate, then the State lays out what they allocated.

        Subsystems stay one below ``g`` while their hooks run (so allocations know which realization
        they belong to) and all advance together once the layout exists.
        """
        subs = state._subs
        for idx, hook in self._plan[g]:
            ss = subs[idx]
            if ss.stage < g and hook is not None:
                try:
                    hook(state)
                except Exception as exc:
                    # Hooks before this one allocated already: forget it all so a retry starts clean.
                    state._forget_allocations(g)
                    exc.add_note(f"while realizing {STAGE_NAMES[g]} of subsystem '{ss.name}' (#{idx})")
                    raise
        if g == MODEL:
            state._layout_model()
        elif g == INSTANCE:
            state._layout_instance()
        for ss in subs:
            if ss.stage < g:
                ss.stage = g
        state._stage = g
        state._hi = max(state._hi, g)
        self._num_realizations[g] += 1

    def get_num_realizations_of_this_stage(self, stage) -> int:
        """How many times this System has realized ``stage`` (in any State)."""
        return self._num_realizations[int(stage)]

    # ------------------------------------------------------------------ time scale
    _default_time_scale = 0.1

    def get_default_time_scale(self) -> float:
        """The time over which the System's state changes noticeably (s); sizes event windows."""
        return self._default_time_scale

    def set_default_time_scale(self, t_scale: float) -> None:
        """Set the default time scale (a positive finite time)."""
        v = float(t_scale)
        if not (v > 0.0 and np.isfinite(v)):
            raise ValueError(f"{self!r}: the time scale must be positive and finite, got {t_scale!r}")
        self._default_time_scale = v

    # ------------------------------------------------------------------ projection and weights
    def project(self, state: State, accuracy: float) -> bool:
        """Move q and then u onto the constraint manifold to within ``accuracy``.

        Each subsystem's ``project_q_impl`` runs after realizing Position and ``project_u_impl``
        after realizing Velocity. A System without constraints changes nothing. Returns True when
        any variable changed.
        """
        changed = False
        self.realize(state, Stage.Position)
        for sub in self._subsystems:
            changed |= bool(sub.project_q_impl(state, accuracy))
        self.realize(state, Stage.Velocity)
        for sub in self._subsystems:
            changed |= bool(sub.project_u_impl(state, accuracy))
        return changed

    def calc_u_weights(self, state: State) -> np.ndarray:
        """Scale of each u for error control: a change of 1/weight is 'one unit' (default ones)."""
        return np.ones(state.get_nu())

    def calc_z_weights(self, state: State) -> np.ndarray:
        """Scale of each z for error control (default ones)."""
        return np.ones(state.get_nz())

    def calc_q_weights(self, state: State) -> np.ndarray:
        """Scale of each q for error control (default ones; multibody derives them from u through N)."""
        return np.ones(state.get_nq())

    def calc_q_err_weights(self, state: State) -> np.ndarray:
        """Unit tolerances of the position constraint errors (default ones)."""
        return np.ones(state.get_nq_err())

    def calc_u_err_weights(self, state: State) -> np.ndarray:
        """Unit tolerances of the velocity constraint errors (default ones)."""
        return np.ones(state.get_nu_err())
