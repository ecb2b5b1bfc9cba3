"""How a Simulation's additions live beside the user's System and leave it as it was built.

A Simulation needs two things in the System it runs: its agents (as a subsystem ``/agents``, so that
what they remember is State: waypoints and retried steps restore it) and one ``Force.DiscreteForces``
(``/forces/driver_inputs``) through which controllers and input probes apply forces (the compiled time
loop holds its values over the steps). Adding them to the user's System for good changed its topology:
every State made before was refused, the model file could not be written, and every Simulation of the
System saw the agents of the others.

So the additions are *attached* only while the Simulation works (``run``, ``rewind``) and *detached*
afterwards. The System is the same object throughout, so everything the agents do during a run with
the user's components (a controller reading ``slider.get_length(state)``, a monitor realizing the
State, the user's integrator) works unchanged. Each mode has its own topology version:

- the user's version, restored exactly on detaching when the user's topology did not change during
  the run, so the States made before keep working;
- the Simulation's own version (drawn from a range user versions never reach, one per Simulation and
  layout), reused on attaching again when nothing changed in between (same user version, same default
  State, no agent added), so the Simulation's State, waypoints and integrator go on without a restart:
  a run split in two is bitwise one run.

A property changed during a run (an input probe writing ``path.property``) is replayed on the user's
States at detaching; one changed between runs makes the next attach a new layout, into which the
Simulation's State is carried. Carrying a State between the two layouts (`Beside.transfer`) is
``System.migrate_state`` (variables by path, discrete variables declared by name) plus the other
discrete variables subsystem by subsystem: the additions only append (``/agents`` is the last
subsystem, the driver's element the last force), so a per-element array of the force subsystem is
the user's entries followed by the driver's.

What a run hands back (``Simulation.get_state()``, a `StatesTrajectory`'s States) is therefore a State
of the System as built, exported after the run; the agents' memory in it is kept beside it (an agent
reads it with ``get_discrete_variable_value`` as before). During a run the agents see the
Simulation's own States.
"""
from __future__ import annotations

import itertools
import math
import weakref
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..common.stage import ACCELERATION, MODEL, Stage
from ..common.state import State
from ..common.subsystem import Subsystem

__all__ = ["Beside", "AgentSubsystem"]

#: Topology versions of the Simulations' layouts: far above any user System's own count (which grows
#: by one per change) and spaced so that changes made during a run (each +1) never meet the next.
_VERSIONS = itertools.count(1 << 40, 1 << 20)

#: The System a Simulation is attached to, by id: one at a time (a run inside another's is refused).
_ATTACHED: dict[int, "Beside"] = {}


class AgentSubsystem(Subsystem):
    """``/agents``: where a simulation's agents join the System, so that what they declare is State."""


def _copy(v: Any) -> Any:
    return v.copy() if isinstance(v, np.ndarray) else v


def _fit(values: list, template: list) -> list:
    """``values`` (a subsystem's discrete variables in one layout) shaped as ``template`` (the same
    subsystem's defaults in the other): entries the other layout does not have are dropped or taken from
    the template, and a per-element array keeps the user's entries (the driver's element is last)."""
    out = []
    for j, t in enumerate(template):
        if j >= len(values):
            out.append(_copy(t))
            continue
        v = values[j]
        if (isinstance(v, np.ndarray) and isinstance(t, np.ndarray) and v.ndim == 1 and t.ndim == 1
                and v.dtype == t.dtype and len(v) != len(t)):
            v = np.concatenate([v[:len(t)], t[len(v):]])
        out.append(_copy(v))
    return out


class Beside:
    """The additions of one Simulation (its agents' subsystem and driver-input force) and the two
    layouts of its System: the user's and the Simulation's."""

    def __init__(self, system) -> None:
        self.system: Any = system
        self.sub = AgentSubsystem(None, name="agents")
        self.driver: Any = None  # the Force.DiscreteForces, made at the first attach that needs it
        self.attached = False
        self.stale = True  # the Simulation's layout must be made again (agents added)
        self.ext_version: int | None = None
        self.ext_default: State | None = None
        self.ext_plan: Any = None
        self.user_version: int | None = None  # the user's layout as it was left at the last detach
        self.user_default: State | None = None
        self._paths: dict[int, list[str]] = {}  # topology version -> its subsystems' paths, in order
        self._lowest_changed = 10**9

    # ------------------------------------------------------------------ attaching
    @contextmanager
    def during(self, needs_forces: bool) -> Iterator[None]:
        """The System with the additions for the duration of the block (re-entrant)."""
        if self.attached:
            yield
            return
        self.attach(needs_forces)
        try:
            yield
        finally:
            self.detach()

    def attach(self, needs_forces: bool) -> None:
        system = self.system
        other = _ATTACHED.get(id(system))
        if other is not None:
            raise RuntimeError(f"{system!r} is being run by another Simulation; one Simulation runs a System "
                               "at a time (a Simulation cannot be run from inside another's run)")
        base, base_default, base_plan = system._topology_version, system._default_state, system._plan
        user_paths = [s.get_absolute_path() for s in system._subsystems]
        reuse = (not self.stale and self.ext_version is not None and base == self.user_version
                 and base_default is self.user_default and (self.driver is not None or not needs_forces))
        try:
            system.adopt_subsystem(self.sub)
            forces = self._force_subsystem()
            if forces is not None and (self.driver is not None or needs_forces):
                if self.driver is None:
                    self.driver = self._make_driver(forces)
                else:
                    self.driver._index = forces._adopt_force(self.driver)
        except BaseException:
            self._remove()
            system._topology_version, system._default_state, system._plan = base, base_default, base_plan
            raise
        self._base = (base, base_default, base_plan)
        if reuse:
            system._topology_version, system._default_state, system._plan = \
                self.ext_version, self.ext_default, self.ext_plan
        else:
            system._topology_version, system._default_state = next(_VERSIONS), None
            if base != self.user_version:
                # the user's layout changed: the layouts known so far pair nothing safely with it
                self._paths = {}
        self._paths[base] = user_paths
        self._paths[system._topology_version] = [s.get_absolute_path() for s in system._subsystems]
        self._attach_version = system._topology_version
        self.stale = False
        # property changes while attached are replayed on the user's States at detaching
        self._lowest_changed = 10**9
        original = type(system)._parameter_changed.__get__(system)

        def parameter_changed(stage, component):
            self._lowest_changed = min(self._lowest_changed, int(stage))
            original(stage, component)

        system._parameter_changed = parameter_changed
        _ATTACHED[id(system)] = self
        self.attached = True

    def detach(self) -> None:
        system = self.system
        self.attached = False
        del _ATTACHED[id(system)]
        system.__dict__.pop("_parameter_changed", None)
        changed = system._topology_version != self._attach_version  # a change the user requested in the run
        self.ext_version, self.ext_default, self.ext_plan = \
            system._topology_version, system._default_state, system._plan
        self._remove()
        base, base_default, base_plan = self._base
        if changed:
            system.invalidate_system_topology_cache()
            self.ext_version = None
        else:
            system._topology_version, system._default_state, system._plan = base, base_default, base_plan
            if self._lowest_changed < 10**9:
                system._parameter_changed(Stage(max(self._lowest_changed, MODEL)), None)
        if system._default_state is None and system._subsystems:
            try:  # a default State to compare with at the next attach, which so sees a property changed since
                system.realize_topology()
            except Exception:  # noqa: BLE001 - the user's own change made the System unrealizable: theirs to see
                pass
        self.user_version, self.user_default = system._topology_version, system._default_state

    def _remove(self) -> None:
        """Take the additions out of the System (what ``attach`` put in; the last subsystem and force)."""
        system: Any = self.system
        sub, driver = self.sub, self.driver
        if driver is not None and driver.get_owner() is not None:
            forces = driver._forces
            forces._forces.remove(driver)
            forces._disown_component(driver)
            for i, f in enumerate(forces._forces):
                f._index = i
        if sub._system is not None and sub._system is system:
            system._subsystems.remove(sub)
            system._disown_component(sub)
            for i, s in enumerate(system._subsystems):
                s._index = i
            sub._system, sub._index = None, -1

    def _force_subsystem(self):
        from ..multibody.forces import GeneralForceSubsystem

        subs = [c for c in self.system.get_child_components() if isinstance(c, GeneralForceSubsystem)]
        return subs[0] if subs else None

    def _make_driver(self, forces):
        from ..multibody.forces import Force

        name, k = "driver_inputs", 0
        taken = {c.get_name() for c in forces.get_child_components()}
        while name in taken:  # a user's element of that name stays the user's
            k += 1
            name = f"driver_inputs_{k}"
        return Force.DiscreteForces(forces, self.system.get_matter_subsystem(), name=name)

    # ------------------------------------------------------------------ States between the layouts
    def transfer(self, state: State) -> State:
        """``state`` (of the user's layout or the Simulation's) as a new State of the layout the System is
        in now: time, variables by path, named discrete variables, and the other discrete variables of
        each subsystem when the layout ``state`` was made in is known."""
        system = self.system
        snap = system._snapshot(state)
        # a diverged State is handed back as it is, for inspection (State.set_y refuses what is not finite)
        diverged = {p: v for p, v in snap["y"].items() if not math.isfinite(v)}
        snap["y"].update(dict.fromkeys(diverged, 0.0))
        paths = self._paths.get(state._topology_version) if state._system is system else None
        if paths is not None:
            default = system.realize_topology()
            here = {s.get_absolute_path(): s for s in system._subsystems}
            by_path = {}
            for sx, path in enumerate(paths):
                sub = here.get(path)
                if sub is None or sub is self.sub:  # the agents' variables are declared by name: carried so
                    continue
                template = [sub.get_discrete_variable(default, i) for i in range(sub.get_num_discrete_variables(default))]
                by_path[path] = _fit([v.value for v in state._subs[sx].discrete], template)
            snap["by_index"] = by_path
        out = system._restore(snap)
        for p, v in diverged.items():
            out._y[out._names[p]] = v
        return out

    def export(self, state: State, memory: "weakref.WeakKeyDictionary | None" = None) -> State:
        """The Simulation's ``state`` as a State of the System as built (which must be detached), realized
        as far as ``state`` was (up to Acceleration); the agents' memory goes to ``memory``."""
        out = self.transfer(state)
        stage = min(state._stage, ACCELERATION)
        if stage > out._stage and np.isfinite(out._y).all():
            self.system.realize(out, Stage(stage))
        if memory is not None:
            named = state._named_discrete or {}
            memory[out] = {key: _copy(state._subs[sx].discrete[i].value) for key, (sx, i) in named.items()
                           if key.startswith("/agents/")}
        return out
