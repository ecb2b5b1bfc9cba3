"""What `load_osim` returns: the model with its elements by OpenSim name."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simtk import (
    Assembler,
    MobilizedBody,
    Stage,
    State,
)

from ._loaded_model import LoadedModel


# ====================================================================== the result
@dataclass
class OsimCoordinate:
    """One OpenSim Coordinate: where it lives in simtk and its defaults.

    ``mobod.get_one_q(state, index)`` is its value and ``mobod.get_one_u(state, index)`` its speed
    (in a State in Euler-angle mode, as `OsimModel.initial_state` makes).
    """

    name: str
    joint: str
    mobod: MobilizedBody
    index: int
    default_value: float = 0.0
    default_speed: float = 0.0
    range: tuple = (-10.0, 10.0)
    clamped: bool = False
    locked: bool = False
    motion_type: str = "undefined"   # "rotational", "translational", "coupled" or "undefined"
    lock: Any = None                 # the Constraint.PrescribedMotion of a locked or prescribed coordinate

    def clamp(self, value: float) -> float:
        """``value`` clamped to the range if the coordinate is clamped, else unchanged."""
        if self.clamped:
            return float(min(max(value, self.range[0]), self.range[1]))
        return float(value)


@dataclass
class OsimModel(LoadedModel):
    """What `load_osim` returns: the System and the OpenSim names of its parts.

    Attributes
    ----------
    system, matter, forces :
        The MultibodySystem, its SimbodyMatterSubsystem (``/matter``) and GeneralForceSubsystem
        (``/forces``).
    bodies : dict
        OpenSim body name -> MobilizedBody (``"ground"`` -> ``matter.ground``).
    joints : dict
        OpenSim joint name -> the MobilizedBody whose mobilizer it is.
    coordinates : dict
        OpenSim coordinate name -> `OsimCoordinate`, in the file's order.
    force_elements : dict
        OpenSim force name -> list of simtk Force elements built for it (``"gravity"`` included).
    constraints : dict
        OpenSim constraint name -> list of simtk Constraints.
    actuators : dict
        OpenSim actuator name -> `OsimActuator` (CoordinateActuator, TorqueActuator, PointActuator),
        all applied by one ``Force.Actuators`` (``actuation``, ``/forces/actuators``; None without
        actuators) at ``optimal_force`` times their control (see `set_control`).
    controllers : dict
        PrescribedController name -> list of (actuator index, Function of time) it adds.
    warnings : list of str
        The elements not built (also issued as one UserWarning).
    path : str
        The file read.
    loop_welds : dict
        OpenSim joint name -> the ``Constraint.Weld`` that holds the slave copy of its child body (the
        one the joint mobilizes, ``joints[name]``) to the body, for each joint that closes a loop.
    nonphysical_inertias : dict
        OpenSim body name -> why its inertia is not one of a mass distribution (and its line), for
        the bodies whose inertia was kept as written or repaired (see ``load_osim``).
    """

    coordinates: dict = field(default_factory=dict)
    force_elements: dict = field(default_factory=dict)
    constraints: dict = field(default_factory=dict)
    actuators: dict = field(default_factory=dict)
    controllers: dict = field(default_factory=dict)
    actuation: Any = None
    loop_welds: dict = field(default_factory=dict)

    def initial_state(self) -> State:
        """A State in Euler-angle mode (OpenSim's) with every coordinate at its default value and
        speed, realized to Position."""
        state = self.system.realize_topology()
        self.matter.set_use_euler_angles(state, True)
        self.system.realize_model(state)
        for c in self.coordinates.values():
            c.mobod.set_one_q(state, c.index, c.default_value)
            c.mobod.set_one_u(state, c.index, c.default_speed)
        self.system.realize(state, Stage.Position)
        return state

    def _coord(self, name: str) -> OsimCoordinate:
        try:
            return self.coordinates[name]
        except KeyError:
            raise KeyError(f"{self.path}: no coordinate named {name!r} (there are "
                           f"{', '.join(self.coordinates) or 'none'})") from None

    def get_component(self, path: str) -> Any:
        """The component at an OpenSim path (``/jointset/knee_r/knee_angle_r``, ``/bodyset/tibia_r``,
        or relative to the model: ``jointset/knee_r``), a simtk path (``/matter/tibia_r``) or, when no
        path matches, the one component with that name or path ending (``knee_angle_r``).

        Raises
        ------
        ComponentNotFoundError
            Nothing, or more than one component, matches (the message lists candidates).
        """
        from simtk.common.component import ComponentNotFoundError
        try:
            return self.system.get_component(path if path.startswith("/") else "/" + path)
        except ComponentNotFoundError as exc:
            if path.startswith("/"):
                raise
            try:
                return self.system.find_component(path)
            except ComponentNotFoundError as exc2:
                raise ComponentNotFoundError(f"{self.path}: {exc2} ({exc})") from None

    def _variable_path(self, name: str) -> str:
        """The absolute path of state variable ``name``: absolute, relative to the model, or
        ``<component name or path ending>/<variable>`` (``knee_r/knee_angle_r/value``)."""
        owner, _, leaf = name.rpartition("/")
        if name.startswith("/"):
            return name
        if not owner:
            # A bare component name is no variable; its path makes the error list the variables it has.
            try:
                return self.system.find_component(name).get_absolute_path()
            except LookupError:
                return "/" + name
        return self.get_component(owner).get_absolute_path() + "/" + leaf

    def get_state_variable_value(self, state: State, name: str) -> float:
        """A state variable by OpenSim path (``/jointset/knee_r/knee_angle_r/value``), path relative
        to the model (``jointset/knee_r/knee_angle_r/speed``), or component name and variable
        (``knee_angle_r/value``), or a simtk path (``/matter/tibia_r/q0``)."""
        return self.system.get_state_variable_value(state, self._variable_path(name))

    def set_state_variable_value(self, state: State, name: str, value: float) -> None:
        """Set a state variable named as in `get_state_variable_value` (invalidates what ``upd_q``/
        ``upd_u`` would)."""
        self.system.set_state_variable_value(state, self._variable_path(name), value)

    def set_coordinate_value(self, state: State, name: str, value: float) -> None:
        """Set coordinate ``name``'s q, as given: like OpenSim's ``Coordinate.setValue``, which does
        not clamp either (a clamped range is an assembly restriction: see `make_assembler`)."""
        c = self._coord(name)
        c.mobod.set_one_q(state, c.index, float(value))

    def make_assembler(self) -> Assembler:
        """An ``Assembler`` that, like OpenSim's AssemblySolver, keeps every clamped coordinate
        within its range and every locked coordinate where it is."""
        asm = Assembler(self.system)
        for c in self.coordinates.values():
            if c.locked:
                asm.lock_q(c.mobod, c.index)
            elif c.clamped:
                asm.restrict_q(c.mobod, c.index, c.range[0], c.range[1])
        return asm

    def set_coordinate_speed(self, state: State, name: str, value: float) -> None:
        """Set coordinate ``name``'s u."""
        c = self._coord(name)
        c.mobod.set_one_u(state, c.index, float(value))

    def get_coordinate_value(self, state: State, name: str) -> float:
        """Coordinate ``name``'s q."""
        c = self._coord(name)
        return c.mobod.get_one_q(state, c.index)

    def get_coordinate_speed(self, state: State, name: str) -> float:
        """Coordinate ``name``'s u."""
        c = self._coord(name)
        return c.mobod.get_one_u(state, c.index)

    def get_coordinate_acceleration(self, state: State, name: str) -> float:
        """Coordinate ``name``'s udot (the State realized to Acceleration)."""
        c = self._coord(name)
        return float(c.mobod.get_udot(state)[c.index])

    # ------------------------------------------------------------------ controls
    def _actuator(self, name: str):
        try:
            return self.actuators[name]
        except KeyError:
            raise KeyError(f"{self.path}: no actuator named {name!r} (there are "
                           f"{', '.join(list(self.actuators) + list(self._path_actuators())) or 'none'})") from None

    def _path_actuators(self) -> dict:
        """The model's PathActuators (``Force.PathActuator``), by OpenSim name."""
        from simtk import Force  # (the io package imports simtk's elements lazily)

        return {k: v[0] for k, v in self.force_elements.items()
                if len(v) == 1 and isinstance(v[0], Force.PathActuator)}

    def set_control(self, state: State, name: str, value: float) -> None:
        """Hold actuator ``name``'s control at ``value`` in ``state`` (invalidates Dynamics).

        The actuator applies ``optimal_force * (value + prescribed)``, where ``prescribed`` is what
        enabled PrescribedControllers add at the State's time (OpenSim adds its controllers'
        controls to the default ones in the same way). A bad name or value changes nothing. In a
        ``Simulation`` the same value is the named input ``/forces/actuators:<name>`` (an
        ``InputProbe``'s or a ``Controller``'s target; ``OsimActuator.var`` is the variable's name);
        a PathActuator's is ``<its path>:control``.
        """
        v = float(value)
        path_actuator = self._path_actuators().get(name)
        a = self._actuator(name) if path_actuator is None else None
        if not np.isfinite(v):
            raise ValueError(f"{self.path}: actuator {name!r}: expected a finite control, got {value!r}")
        if path_actuator is not None:
            path_actuator.set_control(state, v)
        else:
            self.actuation.set_discrete_variable_value(state, a.var, v)

    def get_control(self, state: State, name: str) -> float:
        """Actuator ``name``'s control in ``state``: the held value plus its prescribed functions of time."""
        path_actuator = self._path_actuators().get(name)
        if path_actuator is not None:
            return path_actuator.get_control(state)
        a = self._actuator(name)
        return float(self.actuation.get_controls(state)[a.index])

    def get_controls(self, state: State) -> dict:
        """Every actuator's control in ``state``, by name."""
        c = self.actuation.get_controls(state) if self.actuators else []
        out = {a.name: float(c[a.index]) for a in self.actuators.values()}
        out.update({k: e.get_control(state) for k, e in self._path_actuators().items()})
        return out

    # ------------------------------------------------------------------ muscles
    @property
    def muscles(self) -> dict:
        """The model's muscles (``Force.Thelen2003Muscle``, ``Force.Millard2012EquilibriumMuscle``,
        ``Force.DeGrooteFregly2016Muscle``), by OpenSim name. Their
        ``compute_moment_arm(state, coordinate)`` also takes an OpenSim coordinate name."""
        from simtk.multibody.forces._muscle import _Muscle  # (the io package imports simtk's elements lazily)

        found = {k: v[0] for k, v in self.force_elements.items() if len(v) == 1 and isinstance(v[0], _Muscle)}
        for m in found.values():
            m._coordinate_names = self._coordinate_of_name
        return found

    def _coordinate_of_name(self, name: str) -> tuple:
        c = self._coord(name)
        return (c.mobod, c.index)

    def equilibrate_muscles(self, state: State) -> None:
        """Put every enabled muscle's fiber in equilibrium with its tendon at ``state``'s activations,
        pose and speeds (OpenSim's ``Model::equilibrateMuscles``); refused naming the muscle when a
        muscle has no equilibrium."""
        from simtk.multibody.forces.muscles import equilibrate_muscles

        equilibrate_muscles(self.system, state)
