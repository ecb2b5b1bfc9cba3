"""System: an ordered set of Subsystems realized together, stage by stage."""
from __future__ import annotations

import math
import uuid
import weakref
from typing import Sequence

import numpy as np

from .component import Component
from .errors import StageOutOfRangeError, StageTooLowError
from .stage import INSTANCE, MODEL, REPORT, STAGE_NAMES, TOPOLOGY, Stage
from .state import State
from .subsystem import Subsystem

__all__ = ["System"]


def _same_kind(a, b) -> bool:
    """Whether discrete value ``b`` can stand for ``a``: the same type, and for arrays the same shape and dtype."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype)
    return type(a) is type(b)


def _copy_value(v):
    return v.copy() if isinstance(v, np.ndarray) else v

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


class System(Component):
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
        self._component_fields()
        # Every State of this System that is still alive, so that a property change invalidates them
        # at once (as Simbody invalidates the States it hands out); weak, so States die as usual.
        self._live_states: weakref.WeakSet = weakref.WeakSet()
        self._pending_changes: list = []
        # Shared by this System and its pickled copies (not by a System built alike): a State of a copy
        # is taken back only by a System of the same lineage (simtk.common._rebind).
        self._lineage = uuid.uuid4().hex

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
        self._adopt_component(sub)  # refuses a duplicate explicit name before anything changes
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
        if isinstance(handler, Component):
            self._adopt_component(handler)
        self._event_handlers.append(handler)
        self.invalidate_system_topology_cache()

    def add_event_reporter(self, reporter) -> None:
        """Add an event reporter; reporters observe a State and never change it."""
        if isinstance(reporter, Component):
            self._adopt_component(reporter)
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
        while g < INSTANCE and g < stage:
            g += 1
            self._realize_allocating_stage(state, g)
        # Time and up. Every subsystem is at g here (invalidation lowers them all, realization raises
        # them all), so no subsystem's stage needs checking: the State's stage was the one check. Each
        # subsystem is marked realized right after its hook, for the hooks after it to see.
        plan, subs, counts = self._plan, state._subs, self._num_realizations
        while g < stage:
            g += 1
            if state._hi < g:
                state._hi = g
            for idx, hook in plan[g]:
                if hook is not None:
                    try:
                        hook(state)
                    except Exception as exc:
                        # Subsystems realized before this one may have written into shared results (force
                        # accumulators): drop them all below g so that a retry redoes the whole stage.
                        state._invalidate(g)
                        exc.add_note(f"while realizing {STAGE_NAMES[g]} of subsystem '{subs[idx].name}' (#{idx})")
                        raise
                subs[idx].stage = g
            state._stage = g
            counts[g] += 1

    def _realize_allocating_stage(self, state: State, g: int) -> None:
        """Topology, Model and Instance: the hooks allocate, then the State lays out what they allocated.

        Subsystems stay one below ``g`` while their hooks run (so allocations know which realization
        they belong to) and all advance together once the layout exists.
        """
        subs = state._subs
        for idx, hook in self._plan[g]:
            ss = subs[idx]
            if ss.stage < g and (hook is not None or g == TOPOLOGY):
                try:
                    if g == TOPOLOGY:
                        self._subsystems[idx]._allocate_declared(state)
                    if hook is not None:
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
        if g == MODEL:
            # Every State knows its variables by path, so it can be migrated after the topology changes.
            state._names = self._build_variable_directory(state)
            state._named_discrete = self._named_discrete_slots()

    # ------------------------------------------------------------------ variables by path
    def _build_variable_directory(self, state: State) -> dict[str, int]:
        """Absolute path of every continuous variable -> its index in y = (q, u, z)."""
        directory: dict[str, int] = {}
        nq, nu = len(state._q), len(state._u)
        for sub, ss in zip(self._subsystems, state._subs):
            names = sub._state_variable_names(state)
            base = sub.get_absolute_path() + "/"
            for kind_names, off in ((names[0], ss.q0), (names[1], nq + ss.u0), (names[2], nq + nu + ss.z0)):
                for i, name in enumerate(kind_names):
                    path = base + name
                    if path in directory:
                        raise ValueError(f"{sub!r}: two state variables are named {path!r}")
                    directory[path] = off + i
        return directory

    def _named_discrete_slots(self) -> dict[str, tuple[int, int]]:
        """``<component path>:<name>`` of every discrete variable and modeling option declared by name ->
        (subsystem index, discrete variable index)."""
        out = {}
        for comp in self.get_subcomponents():
            for name, (kind, sub, i) in comp.__dict__.get("_c_slots", {}).items():
                if kind in ("discrete_variable", "modeling_option"):
                    out[f"{comp.get_absolute_path()}:{name}"] = (sub._index, i)
        return out

    def _variable_directory(self, state: State | None) -> dict[str, int]:
        if state is None:
            if self._default_state is None:
                self.realize_topology()
            state = self._default_state
        elif state._system is not self or state._topology_version != self._topology_version:
            state._check_system(self)
        if state._stage < MODEL:
            state._need(MODEL, "state variables by name")
        return state._names

    def get_state_variable_value(self, state: State, name: str) -> float:
        """The value of the continuous variable at absolute path ``name`` (one dictionary lookup)."""
        if state._system is not self or state._topology_version != self._topology_version or state._stage < MODEL:
            return super().get_state_variable_value(state, name)  # the checked path says what is wrong
        i = state._names.get(name)
        if i is None:
            return super().get_state_variable_value(state, name)
        return float(state._y[i])

    def set_state_variable_value(self, state: State, name: str, value: float) -> None:
        """Set the continuous variable at absolute path ``name``; invalidates what ``set_q``/``set_u``/``set_z`` would."""
        i = state._names.get(name) if state._system is self and state._stage >= MODEL else None
        if i is None or state._topology_version != self._topology_version or type(value) is not float \
                or not math.isfinite(value):
            return super().set_state_variable_value(state, name, value)  # checks, converts and explains
        nq, nu = len(state._q), len(state._u)
        if i < nq:
            state.upd_q()[i] = value
        elif i < nq + nu:
            state.upd_u()[i - nq] = value
        else:
            state.upd_z()[i - nq - nu] = value

    # ------------------------------------------------------------------ property changes
    def _parameter_changed(self, stage: Stage, component: Component) -> None:
        """A property of ``component`` changed: every live State of this topology loses ``stage`` and above."""
        # Moves the key of the structural signature (simtk.common._rebind) that States of copies are compared by.
        self._parameter_epoch = self.__dict__.get("_parameter_epoch", 0) + 1
        if stage <= TOPOLOGY:
            self.invalidate_system_topology_cache()
            return
        for state in list(self._live_states):
            if state._topology_version == self._topology_version and state._stage >= stage:
                state.invalidate_all(stage)
        self._default_state = None  # made again, with the new value, by the next realize_topology()

    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d["_live_states"] = None  # a weak set does not pickle; the copy starts its own
        d.pop("_signature_cache", None)
        return d

    def __setstate__(self, d: dict) -> None:
        live = self.__dict__.get("_live_states")  # States unpickled before this System registered already
        self.__dict__.update(d)
        self._live_states = live if live is not None else weakref.WeakSet()

    # ------------------------------------------------------------------ change requests (Ptolemy's)
    def request_change(self, change) -> None:
        """Queue ``change(system)``, a structural edit (add or remove an element, a Topology property), to
        be applied between steps by `apply_pending_changes` (a TimeStepper does it for you)."""
        if not callable(change):
            raise TypeError(f"{self!r}: request_change() takes a callable change(system), got {change!r}")
        self._pending_changes.append(change)

    def has_pending_changes(self) -> bool:
        """Whether changes were requested and not yet applied."""
        return bool(self._pending_changes)

    def apply_pending_changes(self, state: State) -> State:
        """Apply the queued changes and return ``state`` migrated into the new topology.

        ``state`` is read before the first change runs, so every variable whose path still exists
        afterwards keeps its value. If a change raises, the ones after it stay queued.
        """
        snapshot = self._snapshot(state)
        while self._pending_changes:
            change = self._pending_changes.pop(0)
            change(self)
        return self._restore(snapshot)

    def migrate_state(self, old_state: State) -> State:
        """A new default State with every variable of ``old_state`` whose path still exists.

        Carries the time, the continuous variables by path, the discrete variables and modeling options
        declared by name, and a subsystem's other discrete variables (a force's on/off flag, discrete
        forces, locks) when the subsystem at the same path has the same number of them, each of the same
        kind; ``old_state`` may be of an older topology of this System, or of another System with the same
        paths (an unpickled copy, a model rebuilt by a script).
        """
        return self._restore(self._snapshot(old_state))

    def _snapshot(self, state: State) -> dict:
        # Paths are the interface: a State of another System (an unpickled copy, an older model) migrates too.
        if state._names is None or state._y is None:  # never realized to Model: nothing laid out to carry
            raise StageTooLowError("System.migrate_state(old_state)", MODEL, state._stage)
        y = np.array(state._y)
        discrete = {key: _copy_value(state._subs[sx].discrete[i].value)
                    for key, (sx, i) in (state._named_discrete or {}).items()}
        options = {}
        if state._system is self and state._topology_version == self._topology_version:
            for comp in self.get_subcomponents():
                for name, (n, get, _set) in comp._builtin_modeling_options().items():
                    options[(comp, name)] = int(get(state))
        by_index = {}
        if state._topology_version == state._system._topology_version:  # its System still names its subsystems
            by_index = {sub.get_absolute_path(): [_copy_value(v.value) for v in state._subs[sx].discrete]
                        for sx, sub in enumerate(state._system._subsystems)}
        return {"t": state._t, "y": {p: float(y[i]) for p, i in state._names.items()},
                "discrete": discrete, "options": options, "by_index": by_index}

    def _restore(self, snap: dict) -> State:
        new = self.realize_topology()
        for (comp, name), value in snap["options"].items():
            if comp.get_root() is self:
                comp._builtin_modeling_options()[name][2](new, value)
        # Two passes: the values that change the layout (invalidating Model or below) first, then Model is
        # realized, then the rest. A variable allocated at Model (a deformable body's loads) is made anew
        # whenever Model is realized, so a value set before that would be lost.
        for late in (False, True):
            for sub in self._subsystems:
                values = snap["by_index"].get(sub.get_absolute_path())
                if values is None or len(values) != sub.get_num_discrete_variables(new):
                    continue
                kinds_match = all(_same_kind(sub.get_discrete_variable(new, i), v) for i, v in enumerate(values))
                if kinds_match:  # the same layout: the same variables (a partial match could pair unrelated ones)
                    for i, v in enumerate(values):
                        if (sub.get_discrete_variable_invalidated_stage(new, i) > MODEL) == late:
                            sub.set_discrete_variable(new, i, v)
            slots = self._named_discrete_slots()
            for key, value in snap["discrete"].items():
                if key in slots:
                    sx, i = slots[key]
                    sub = self._subsystems[sx]
                    if (sub.get_discrete_variable_invalidated_stage(new, i) > MODEL) == late:
                        sub.set_discrete_variable(new, i, value)
            self.realize(new, Stage.Model)
        y = np.array(new.get_y())
        for path, i in new._names.items():
            if path in snap["y"]:
                y[i] = snap["y"][path]
        new.set_y(y)
        new.set_time(snap["t"])
        return new

    def _compiled_derivatives(self, state: State, need_state: bool = False) -> tuple:
        """``((batch, quaternion_q, quaternion_bodies, constraints, state_derivative, held), None)`` when the
        compiled time loop can evaluate this System's derivatives at ``state``'s instance (a
        ``simtk_core.TreeBatch``; the offsets in y of the quaternion coordinates it must project, and
        their bodies; a ``simtk_core.LoopConstraints`` it solves and projects, or None; a
        ``simtk_core.StateDerivative`` when the derivatives come from ``state`` itself, realized with
        the Python parts it calls, or None; the force elements whose values the loop holds over its
        steps), else ``(None, reason)``.

        A System computes its derivatives in Python unless it says otherwise; the multibody system
        does when all its elements are built in."""
        return None, f"{type(self).__name__} computes its derivatives in Python (its subsystems' realize hooks)"

    def _implicit_linearizer(self, state: State) -> tuple:
        """``(Linearizer, None)``: the compiled linearization of this System's forces that
        ``SemiImplicitEulerIntegrator`` solves with, or ``(None, why not)``; the multibody system has one."""
        return None, f"{type(self).__name__} has no compiled linearization of its forces"

    def _describe_y(self, state: State, i: int) -> str:
        """Name entry ``i`` of y = (q, u, z) by its subsystem (and body, where the subsystem knows it)."""
        nq, nu = state.get_nq(), state.get_nu()
        kind, j = ("q", i) if i < nq else ("u", i - nq) if i < nq + nu else ("z", i - nq - nu)
        for ss in state._subs:
            start, n = {"q": (ss.q0, ss.nq), "u": (ss.u0, ss.nu), "z": (ss.z0, ss.nz)}[kind]
            if start <= j < start + n:
                try:
                    return self._subsystems[ss.index]._describe_variable(state, kind, j - start)
                except Exception:  # a description must never hide the error it explains
                    return f"{kind}[{j - start}] of {ss.where()}"
        return f"y[{i}]"

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

    def _unit_weights_vary(self, state: State) -> bool:
        """Whether ``calc_*_weights`` may change with the State within a continuous interval (integrators
        then refresh them every step; otherwise once per interval). True when a subclass overrides any."""
        base = System.__dict__
        t = type(self)
        return any(getattr(t, n) is not base[n] for n in ("calc_q_weights", "calc_u_weights", "calc_z_weights"))

    def calc_q_err_weights(self, state: State) -> np.ndarray:
        """Unit tolerances of the position constraint errors (default ones)."""
        return np.ones(state.get_nq_err())

    def calc_u_err_weights(self, state: State) -> np.ndarray:
        """Unit tolerances of the velocity constraint errors (default ones)."""
        return np.ones(state.get_nu_err())
