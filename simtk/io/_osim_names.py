"""OpenSim's names on a loaded model: ``/jointset/knee_r/knee_angle_r``, ``/bodyset/tibia_r``, ...

`attach_opensim_names` adds to the System of a loaded ``.osim`` file the sets OpenSim users
address (seed: OpenSim 4 component paths):

- ``/jointset/<joint>`` (an `OsimJoint`) owning ``/jointset/<joint>/<coordinate>`` (a
  `Coordinate`) for every Coordinate of the file. A Coordinate is a view of one q and one u of its
  joint's mobilizer (Euler-angle mode, as OpenSim runs Simbody): its state variables ``value`` and
  ``speed`` read and write those slots (no new State variable; a write invalidates what
  ``upd_q``/``upd_u`` would), and its outputs ``value``, ``speed`` and ``acceleration`` are
  OpenSim's.
- ``/bodyset/<body>``, ``/ground``, ``/forceset/<force>`` and ``/constraintset/<constraint>`` are
  aliases of the simtk elements built for them (``/matter/<body>``, ``/forces/<name>``...): paths
  resolve there, while `Component.get_subcomponents` still lists each element once, under its
  simtk path.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simtk import MobilizedBody, Stage, State
from simtk.common.component import Component
from simtk.common.output import output

from ._osim_reader import _clean_name

if TYPE_CHECKING:
    from ._osim_model import OsimCoordinate, OsimModel

__all__ = ["OsimSet", "OsimJoint", "Coordinate", "attach_opensim_names"]


class OsimSet(Component):
    """One of OpenSim's sets (``jointset``, ``bodyset``, ``forceset``, ``constraintset``).

    A name of the file that simtk did not build (a muscle, say) is refused by path with the reason
    it was not built.
    """

    def __init__(self, not_built: dict | None = None):
        self._not_built = dict(not_built or {})

    def _missing_child_note(self, name: str) -> str:
        note = self._not_built.get(name)
        return "" if note is None else f"; the file has it, but load_osim did not build it: {note}"

    def __repr__(self) -> str:
        return f"<OsimSet {self.get_absolute_path()!r}>"


class OsimJoint(Component):
    """An OpenSim Joint: the mobilizer of ``mobilized_body``; owns its Coordinates."""

    def __init__(self, mobilized_body: MobilizedBody, kind: str):
        self.mobilized_body = mobilized_body
        self.kind = kind

    def get_mobilized_body(self) -> MobilizedBody:
        """The MobilizedBody whose mobilizer this joint is."""
        return self.mobilized_body

    def __repr__(self) -> str:
        return f"<OsimJoint {self.kind or '?'} {self.get_absolute_path()!r}>"


class Coordinate(Component):
    """An OpenSim Coordinate: q ``index`` and u ``index`` of its joint's mobilizer, by name.

    State variables ``value`` and ``speed`` (``get_state_variable_value(state, "value")``, or by
    absolute path ``/jointset/<joint>/<name>/value`` from any component); outputs ``value``
    (Position), ``speed`` (Velocity) and ``acceleration`` (Acceleration).
    """

    def __init__(self, record: "OsimCoordinate"):
        self.record = record

    def __repr__(self) -> str:
        return f"<Coordinate {self.get_absolute_path()!r} (q[{self.record.index}] of {self.record.mobod.get_absolute_path()!r})>"

    # ------------------------------------------------------------------ where it lives
    def get_mobilized_body(self) -> MobilizedBody:
        """The MobilizedBody whose mobilizer's q and u this coordinate is."""
        return self.record.mobod

    def get_mobilizer_q_index(self) -> int:
        """Which q (and u) of the mobilizer this coordinate is."""
        return self.record.index

    def _y_index(self, state: State, kind: str) -> int:
        """Index in y = (q, u, z) of this coordinate's q (``kind`` 'q') or u ('u')."""
        mb = self.record.mobod
        matter = mb._matter
        nq, nu = mb.get_num_q(state), mb.get_num_u(state)
        if nq != nu:
            raise ValueError(f"{self._component_where()}: the State uses quaternions for "
                             f"{mb.get_absolute_path()!r}; OpenSim's coordinates are its q only in Euler-angle "
                             "mode (OsimModel.initial_state(), or matter.set_use_euler_angles(state, True))")
        if kind == "q":
            return matter.get_q_start(state) + matter._q_range(state, mb._index)[0] + self.record.index
        return (state.get_nq() + matter.get_u_start(state) + matter._u_range(state, mb._index)[0]
                + self.record.index)

    def _state_variable_view(self, state: State, leaf: str, value: float | None = None) -> int | None:
        kind = {"value": "q", "speed": "u"}.get(leaf)
        if kind is None:
            return None
        i = self._y_index(state, kind)
        if kind == "q" and value is not None:
            self._refuse_if_locked(state, value)
        return i

    def _refuse_if_locked(self, state: State, value: float) -> None:
        # OpenSim leaves a locked coordinate's value as it is (setValue and setStateVariableValue
        # alike); here a different value is refused, before anything changes.
        if self.get_locked(state) and float(value) != self.get_value(state):
            lock = self.record.lock
            raise ValueError(f"{self._component_where()}: the coordinate is locked at {self.get_value(state)!r}; "
                             f"unlock it (disable {lock.get_absolute_path()!r}) before setting {value!r}")

    def get_state_variable_names(self, state: State | None = None) -> list[str]:
        """``["value", "speed"]``, as in OpenSim (views of the mobilizer's q and u, not new variables)."""
        return ["value", "speed"]

    def get_state_variable_values(self, state: State) -> np.ndarray:
        """``[value, speed]`` (a new array)."""
        return np.array([self.get_value(state), self.get_speed_value(state)])

    def set_state_variable_values(self, state: State, values) -> None:
        """Set ``[value, speed]``; invalidates what ``upd_q`` and ``upd_u`` would."""
        v = list(values)
        if len(v) != 2:
            raise ValueError(f"{self._component_where()}: set_state_variable_values() needs 2 values "
                             f"(value, speed), got {len(v)}")
        self.set_state_variable_value(state, "value", v[0])
        self.set_state_variable_value(state, "speed", v[1])

    # ------------------------------------------------------------------ OpenSim's Coordinate API
    def get_value(self, state: State) -> float:
        """The coordinate's value (its mobilizer's q; Model stage)."""
        return self.record.mobod.get_one_q(state, self.record.index)

    def set_value(self, state: State, value: float) -> None:
        """Set the value, unclamped (as OpenSim's ``setValue``); invalidates Position.

        A locked coordinate whose lock is enabled in ``state`` refuses a different value (OpenSim
        leaves the value as it is; here the refusal is an error, made before any change), here and
        through the state variable ``value``.
        """
        self.set_state_variable_value(state, "value", value)

    def get_speed_value(self, state: State) -> float:
        """The coordinate's speed (its mobilizer's u)."""
        return self.record.mobod.get_one_u(state, self.record.index)

    def set_speed_value(self, state: State, value: float) -> None:
        """Set the speed; invalidates Velocity."""
        self.set_state_variable_value(state, "speed", value)

    def get_acceleration_value(self, state: State) -> float:
        """The coordinate's acceleration (its mobilizer's udot; Acceleration stage)."""
        return float(self.record.mobod.get_udot(state)[self.record.index])

    def get_default_value(self) -> float:
        """The file's ``default_value`` (what `OsimModel.initial_state` sets)."""
        return self.record.default_value

    def get_default_speed_value(self) -> float:
        """The file's ``default_speed_value``."""
        return self.record.default_speed

    def get_range_min(self) -> float:
        """The lower end of the coordinate's range."""
        return self.record.range[0]

    def get_range_max(self) -> float:
        """The upper end of the coordinate's range."""
        return self.record.range[1]

    def get_clamped(self) -> bool:
        """Whether the range is a restriction of assembly (see `OsimModel.make_assembler`)."""
        return self.record.clamped

    def get_default_locked(self) -> bool:
        """Whether the file locks the coordinate."""
        return self.record.locked

    def get_locked(self, state: State) -> bool:
        """Whether the coordinate is held at its value in ``state`` (its lock constraint enabled)."""
        lock = self.record.lock
        return bool(self.record.locked and lock is not None and not lock.is_disabled(state))

    def get_motion_type(self) -> str:
        """``"rotational"``, ``"translational"``, ``"coupled"`` or ``"undefined"``."""
        return self.record.motion_type

    # ------------------------------------------------------------------ outputs (OpenSim's)
    @output(Stage.Position, float, name="value")
    def _output_value(self, state: State) -> float:
        """The coordinate's value."""
        return self.record.mobod.get_one_q(state, self.record.index)

    @output(Stage.Velocity, float, name="speed")
    def _output_speed(self, state: State) -> float:
        """The coordinate's speed."""
        return self.record.mobod.get_one_u(state, self.record.index)

    @output(Stage.Acceleration, float, name="acceleration")
    def _output_acceleration(self, state: State) -> float:
        """The coordinate's acceleration."""
        return float(self.record.mobod.get_udot(state)[self.record.index])


def _not_built(warnings: list) -> dict:
    """OpenSim name -> the warning's note, for the elements listed as not built."""
    out: dict[str, str] = {}
    for note in warnings:
        name = note.split(" (", 1)[0]
        out.setdefault(_clean_name(name), note)
    return out


def attach_opensim_names(model: "OsimModel", joint_kinds: dict | None = None) -> None:
    """Add OpenSim's sets and paths to ``model.system`` (see the module docstring).

    ``joint_kinds`` maps joint names to their OpenSim type (``"PinJoint"``...), kept on `OsimJoint`.
    """
    system = model.system
    not_built = _not_built(model.warnings)
    jointset = OsimSet(not_built)
    system._adopt_component(jointset, "jointset")
    joints: dict[str, OsimJoint] = {}
    for jname, mobod in model.joints.items():
        j = OsimJoint(mobod, (joint_kinds or {}).get(jname, ""))
        jointset._adopt_component(j, _clean_name(jname))
        joints[jname] = j
    for cname, rec in model.coordinates.items():
        joints[rec.joint]._adopt_component(Coordinate(rec), _clean_name(cname))

    bodyset = OsimSet(not_built)
    system._adopt_component(bodyset, "bodyset")
    for bname, mobod in model.bodies.items():
        if mobod.is_ground():
            if "ground" not in system._c_children:
                system._add_alias("ground", mobod)
        else:
            bodyset._add_alias(_clean_name(bname), mobod)

    for set_name, elements in (("forceset", model.force_elements), ("constraintset", model.constraints)):
        holder = OsimSet(not_built)
        system._adopt_component(holder, set_name)
        for name, made in elements.items():
            if name == "gravity" and set_name == "forceset":
                continue  # the model's gravity, not an element of OpenSim's ForceSet
            if len(made) == 1:
                holder._add_alias(_clean_name(name), made[0])
            else:  # one OpenSim force built as several simtk elements: a group of aliases by simtk name
                group = OsimSet()
                holder._adopt_component(group, _clean_name(name))
                for e in made:
                    group._add_alias(e.get_name(), e)
