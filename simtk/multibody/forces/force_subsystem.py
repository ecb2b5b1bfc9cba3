"""Force subsystems: ForceSubsystem (a base for user subsystems) and GeneralForceSubsystem."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _core
from ...common.stage import Stage
from ...common.state import State
from ...common.subsystem import Subsystem
from ._inputs import _InputPacked, lay_out_inputs
from .force import _Packed

if TYPE_CHECKING:
    from ..multibody_system import MultibodySystem
    from .force import Force

__all__ = ["ForceSubsystem", "GeneralForceSubsystem"]

# The compiled entry points of the Dynamics hook, called without _core's checks: the arrays are the
# matter's accumulators and this subsystem's own caches, allocated with the right shapes.
_add_force_sets = _core._k.add_force_sets
_accumulate_forces = _core._k.accumulate_forces
_set_tree_time = _core._k.set_tree_time


class ForceSubsystem(Subsystem):
    """A Subsystem that applies forces (seed §2.2); its constructor calls ``system.add_force_subsystem``.

    Add forces in ``realize_subsystem_dynamics_impl`` into
    ``system.upd_rigid_body_forces(state, Stage.Dynamics)`` and
    ``system.upd_mobility_forces(state, Stage.Dynamics)``, and override
    ``calc_potential_energy(state)`` for a conservative force.
    """

    def __init__(self, system: "MultibodySystem", name: str = "", version: str = ""):
        super().__init__(None, name, version)
        system.add_force_subsystem(self)

    def calc_potential_energy(self, state: State) -> float:
        """This subsystem's potential energy (0 unless overridden)."""
        return 0.0


class _PositionForces:
    """The part of the force total that depends only on positions, reused while only u changes."""

    __slots__ = ("body_forces", "mobility_forces")

    def __init__(self, nb: int, nu: int):
        self.body_forces = np.zeros((nb, 2, 3))
        self.mobility_forces = np.zeros(nu)

    def __deepcopy__(self, memo):
        new = _PositionForces.__new__(_PositionForces)
        new.body_forces, new.mobility_forces = self.body_forces.copy(), self.mobility_forces.copy()
        return new


class _ForceGroups:
    """Per-instance plan: the enabled elements grouped by how they are evaluated.

    Position-only elements go into the cached position part, the others are evaluated at every
    Dynamics realization. Built-in kinds are compiled ``ForceSet``s, evaluated by one call per
    group; other bulk kinds (DiscreteForces) and Force.Custom elements run in Python.
    """

    __slots__ = ("position_groups", "velocity_groups", "position_sets", "velocity_sets", "position_packed",
                 "velocity_packed", "position_python", "velocity_python", "custom_position", "custom_velocity",
                 "enabled", "has_customs", "has_position", "has_velocity", "reads_time")

    def __init__(self):
        self.position_groups: list = []  # (force class, packed parameters), for energies
        self.velocity_groups: list = []
        self.position_sets: tuple = ()  # compiled ForceSets of the built-in kinds
        self.velocity_sets: tuple = ()
        self.position_packed: tuple = ()  # their _Packed (to name an element in an error)
        self.velocity_packed: tuple = ()
        self.position_python: list = []  # (force class, packed) of the other bulk kinds
        self.velocity_python: list = []
        self.custom_position: list = []  # Force.Custom elements, one Python call each
        self.custom_velocity: list = []
        self.enabled: list = []
        self.has_customs = False
        self.has_position = False
        self.has_velocity = False
        self.reads_time = False  # a compiled set reads the evaluation's time (Force.Jit's kernels)

    def __deepcopy__(self, memo):
        return self  # never changed after Instance: copies of a State share it


class GeneralForceSubsystem(ForceSubsystem):
    """The subsystem that holds ``Force`` elements (gravity, springs, dampers, custom forces, ...).

    Built-in elements of one kind are evaluated together in one vectorized call per stage; a
    ``Force.Custom`` runs its Python code once per realization. Forces whose value depends only on
    positions are cached and reused when only u (or z) changes.
    """

    def __init__(self, system: "MultibodySystem", name: str = "forces"):
        super().__init__(system, name)
        self._forces: list["Force"] = []
        self._matter_subsystem = None  # found on first use; a System's matter never changes once set

    # ------------------------------------------------------------------ elements
    def _adopt_force(self, force: "Force") -> int:
        self._adopt_component(force)
        self._forces.append(force)
        self.invalidate_subsystem_topology_cache()
        return len(self._forces) - 1

    def get_num_forces(self) -> int:
        """How many force elements this subsystem holds."""
        return len(self._forces)

    def get_force(self, i: int) -> "Force":
        """Force element ``i``."""
        return self._forces[i]

    def _matter(self):
        matter = self._matter_subsystem
        if matter is None:
            matter = self._matter_subsystem = self.get_system().get_matter_subsystem()
        return matter

    # ------------------------------------------------------------------ realization
    def realize_subsystem_topology_impl(self, state: State) -> None:
        defaults = np.array([f._disabled_by_default for f in self._forces], dtype=bool)
        self._disabled_index = self.allocate_discrete_variable(state, Stage.Instance, defaults)
        self._groups_index = self.allocate_cache_entry(state, Stage.Instance, Stage.Instance, _ForceGroups())
        for f in self._forces:
            f._realize_hook(state, "topology")

    def realize_subsystem_model_impl(self, state: State) -> None:
        for f in self._forces:
            f._realize_hook(state, "model")

    def realize_subsystem_instance_impl(self, state: State) -> None:
        matter = self._matter()
        disabled = self.get_discrete_variable(state, self._disabled_index)
        groups = _ForceGroups()
        by_class: dict = {}
        for f, off in zip(self._forces, disabled):
            if off:
                continue
            groups.enabled.append(f)
            if f._is_custom:
                (groups.custom_position if f._depends_only_on_positions() else groups.custom_velocity).append(f)
            else:
                by_class.setdefault((type(f), f._group_key()), []).append(f)
        fed: list = []  # the sets fed from the State (see _inputs): one input vector, laid out in order
        for (cls, _), elements in by_class.items():
            if getattr(cls, "_reads_inputs", False):
                packed = cls._pack(elements, matter, state, input_offset=sum(p.n_inputs for p in fed))
                fed.append(packed)
            else:
                packed = cls._pack(elements, matter, state)
            (groups.position_groups if elements[0]._position_only_here() else groups.velocity_groups).append(
                (cls, packed))
        lay_out_inputs(fed)
        for part in ("position", "velocity"):
            bulk = getattr(groups, f"{part}_groups")
            compiled = [packed for _, packed in bulk if isinstance(packed, _Packed)]
            setattr(groups, f"{part}_packed", tuple(compiled))
            setattr(groups, f"{part}_sets", tuple(p.fs for p in compiled))
            # the kinds compiled but fed from the State (the actuators' controls) first: the compiled time
            # loop adds their sets before the forces it holds, and the sums must be the same
            python = [(c, p) for c, p in bulk if not isinstance(p, _Packed)]
            setattr(groups, f"{part}_python", sorted(python, key=lambda cp: not getattr(cp[0], "_reads_inputs", False)))
        groups.reads_time = any(p.reads_time for p in groups.position_packed + groups.velocity_packed)
        groups.has_customs = bool(groups.custom_position or groups.custom_velocity)
        groups.has_position = bool(groups.position_groups or groups.custom_position)
        groups.has_velocity = bool(groups.velocity_groups or groups.custom_velocity)
        self.set_cache_entry(state, self._groups_index, groups)
        # Sized by this instance's mobilities, so allocated here (Instance may still allocate; a change of
        # Instance forgets it and allocates it again, with the same index).
        self._position_index = self.allocate_lazy_cache_entry(
            state, Stage.Position, _PositionForces(matter.get_num_bodies(), matter.get_num_mobilities(state)))
        for f in groups.enabled:
            f._realize_hook(state, "instance")

    # Stage hooks from Time on run only from System.realize (State already checked), so they read
    # their cache entries directly; with no custom elements they return at once.
    def _groups(self, state: State) -> _ForceGroups:
        return state._subs[self._index].cache[self._groups_index].value

    def realize_subsystem_time_impl(self, state: State) -> None:
        if state._subs[self._index].cache[self._groups_index].value.has_customs:
            self._custom_hooks(state, "time")

    def realize_subsystem_position_impl(self, state: State) -> None:
        if state._subs[self._index].cache[self._groups_index].value.has_customs:
            self._custom_hooks(state, "position")

    def realize_subsystem_velocity_impl(self, state: State) -> None:
        if state._subs[self._index].cache[self._groups_index].value.has_customs:
            self._custom_hooks(state, "velocity")

    def realize_subsystem_dynamics_impl(self, state: State) -> None:
        # Runs once per evaluation of the equations of motion: with built-in elements only it is a
        # few attribute reads and one compiled call per group (plus one to add the cached part).
        ss = state._subs[self._index]
        groups = ss.cache[self._groups_index].value
        if groups.has_customs:
            self._custom_hooks(state, "dynamics")
        matter = self._matter()
        # the matter's Instance cache, read directly as matter._accumulators() does (the State
        # is checked by System.realize before any hook runs)
        mcache = state._subs[matter._index].cache[matter._cache_index].value
        ws = mcache.ws
        if groups.reads_time:
            _set_tree_time(ws, state.get_time())
        if groups.has_position:
            entry = ss.cache[self._position_index]
            cached = entry.value
            if not state._cache_is_current(ss, entry):
                failed = _add_force_sets(groups.position_sets, ws, cached.body_forces, cached.mobility_forces, True)
                if failed is not None:
                    groups.position_packed[failed[0]].raise_if_bad(failed[1], ws)
                if groups.position_python or groups.custom_position:
                    self._add_python_forces(state, matter, groups.position_python, groups.custom_position,
                                            cached.body_forces, cached.mobility_forces)
                entry.marked_at = state._epoch
            _accumulate_forces(cached.body_forces, cached.mobility_forces, mcache.body_forces, mcache.mobility_forces)
        if groups.has_velocity:
            failed = _add_force_sets(groups.velocity_sets, ws, mcache.body_forces, mcache.mobility_forces, False)
            if failed is not None:
                groups.velocity_packed[failed[0]].raise_if_bad(failed[1], ws)
            if groups.velocity_python or groups.custom_velocity:
                self._add_python_forces(state, matter, groups.velocity_python, groups.custom_velocity,
                                        mcache.body_forces, mcache.mobility_forces)

    def realize_subsystem_acceleration_impl(self, state: State) -> None:
        if state._subs[self._index].cache[self._groups_index].value.has_customs:
            self._custom_hooks(state, "acceleration")

    def realize_subsystem_report_impl(self, state: State) -> None:
        self._custom_hooks(state, "report")

    def _custom_hooks(self, state: State, stage: str) -> None:
        groups = self._groups(state)
        if not groups.has_customs:
            return
        for f in groups.custom_position:
            f._realize_hook(state, stage)
        for f in groups.custom_velocity:
            f._realize_hook(state, stage)

    @staticmethod
    def _add_python_forces(state, matter, python_groups, customs, body_forces, mobility_forces) -> None:
        for cls, p in python_groups:
            cls._calc_bulk(p, matter, state, body_forces, mobility_forces)
        for f in customs:
            f._calc_custom(state, body_forces, mobility_forces)

    # ------------------------------------------------------------------ batched dynamics
    def _batch_force_sets(self, state: State) -> tuple:
        """The packed built-in sets of ``state``'s instance, in the order Dynamics adds them (the
        position part, then the velocity part), for the matter's batched calls; refuses what only
        Python can evaluate."""
        if type(self).realize_subsystem_dynamics_impl is not GeneralForceSubsystem.realize_subsystem_dynamics_impl:
            raise NotImplementedError(f"{self._where()}: {type(self).__name__} overrides the Dynamics hook, which "
                                      "the batch kernels cannot run")
        groups = self.get_cache_entry(state, self._groups_index)
        # (the sets fed from the State are compiled: the batch gives them the State's inputs)
        fed = [p for _, p in groups.velocity_python if isinstance(p, _InputPacked) and p.compiled_only]
        stateful = [p for p in fed if p.fs.nz]
        if stateful:
            raise NotImplementedError(
                f"{self._where()}: batched dynamics: {stateful[0].elements[0]!r} has state variables (z: a muscle's "
                "activation and fiber length) whose derivatives the batch kernels do not integrate; disable it in "
                "the State passed as state=, or use the State API or an integrator (whose compiled time loop "
                "steps them)")
        python = ([f for f in groups.custom_position + groups.custom_velocity]
                  + [p.elements[0] for _, p in groups.position_python + groups.velocity_python
                     if getattr(p, "elements", None) and not any(p is x for x in fed)])
        if python:
            raise NotImplementedError(
                f"{self._where()}: batched dynamics: {python[0]!r} is evaluated in Python, which the batch "
                "kernels cannot run; disable it in the State passed as state= (and apply its forces through "
                "tau), or use the State API one configuration at a time")
        if groups.position_python or len(groups.velocity_python) > len(fed):
            raise NotImplementedError(f"{self._where()}: batched dynamics: some force elements are evaluated in "
                                      "Python, which the batch kernels cannot run")
        return groups.position_packed + groups.velocity_packed + tuple(fed)

    # ------------------------------------------------------------------ energy
    def calc_potential_energy(self, state: State) -> float:
        """Total potential energy of the enabled elements (needs Position)."""
        groups = self.get_cache_entry(state, self._groups_index)
        matter = self._matter()
        energy = 0.0
        for cls, packed in groups.position_groups + groups.velocity_groups:
            energy += cls._energy_bulk(packed, matter, state)
        for f in groups.custom_position + groups.custom_velocity:
            energy += f.calc_potential_energy_contribution(state)
        return float(energy)

    # ------------------------------------------------------------------ enabling
    def _set_disabled(self, state: State, index: int, flag: bool) -> None:
        disabled = self.get_discrete_variable(state, self._disabled_index)
        if bool(disabled[index]) != flag:
            new = disabled.copy()
            new[index] = flag
            self.set_discrete_variable(state, self._disabled_index, new)

    def _is_disabled(self, state: State, index: int) -> bool:
        return bool(self.get_discrete_variable(state, self._disabled_index)[index])
