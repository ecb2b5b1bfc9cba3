"""What `load_osim` returns: the model with its elements by OpenSim name."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simtk import (
    Assembler,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    State,
)


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
class OsimModel:
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

    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    coordinates: dict = field(default_factory=dict)
    force_elements: dict = field(default_factory=dict)
    constraints: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    path: str = ""
    nonphysical_inertias: dict = field(default_factory=dict)
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
