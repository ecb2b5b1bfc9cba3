"""``Force.Actuators``: scalar actuators (OpenSim's CoordinateActuator, TorqueActuator, PointActuator), each
applying ``optimal_force * control``, evaluated by a compiled kernel (``FK_ACTUATOR``, core/forces.pxi).

An actuator's control is a value held in the State (a discrete variable of the element named like the
actuator, so ``/forces/<element>:<name>`` is a named input a simulation's InputProbe or Controller may
write) plus its functions of time (OpenSim's PrescribedController), added in the order given. Built-in
Functions are evaluated in the kernel; a user's Function (no compiled form) is evaluated in Python at
each realization, and then the element is a Python part of the compiled time loop.

The kernel reads the controls and the time of the evaluation (the State's workspace, or the compiled
loop's stepper, never the shared set): in the compiled time loop the held controls are read from the
State at every call, as ``Force.DiscreteForces``' values are, and the functions are evaluated at each
derivative's time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import _core
from ...common.function import Function
from ...common.function._compiled import FunctionTableBuilder
from ...common.stage import Stage
from ...common.state import State
from ..tree.mobilized_body import MobilizedBody
from ._inputs import _InputPacked
from .builtin_forces import _body, _element, _matter_arg, _real, _vec3
from .force import Force

__all__: list[str] = []

_TYPES = {"coordinate": 0, "torque": 1, "point": 2}


@dataclass
class _Actuator:
    name: str
    type: str
    optimal_force: float
    mobod: MobilizedBody
    which_u: int = 0
    mobod_b: MobilizedBody | None = None
    R_BA: np.ndarray = field(default_factory=lambda: np.eye(3))
    vector: np.ndarray = field(default_factory=lambda: np.zeros(3))
    is_global: bool = True
    point: np.ndarray = field(default_factory=lambda: np.zeros(3))
    point_is_global: bool = False
    enabled: bool = True
    functions: list = field(default_factory=list)


class _ActuatorPacked(_InputPacked):
    """The enabled Actuators elements of an instance: their compiled set (reading one input per
    actuator, its control), the held controls' slots, and the functions of time without a compiled
    form (evaluated in Python at each evaluation: the element is then a Python part of the loop)."""

    __slots__ = ("slots", "python_terms")

    def __init__(self, fs, elements: list, slots: list, python_terms: list, offset: int, row_owner: list):
        super().__init__(fs, elements, offset, len(slots), row_owner)
        self.slots = slots
        self.python_terms = python_terms

    @property
    def compiled_only(self) -> bool:
        return not self.python_terms

    def controls(self, state: State) -> np.ndarray:
        """Each actuator's held control in ``state``, plus its functions of time that have no compiled
        form, at the State's time."""
        c = np.array([sub.get_discrete_variable(state, i) for sub, i in self.slots], dtype=float)
        if self.python_terms:
            x = np.array([state.get_time()])
            for k, f in self.python_terms:
                c[k] += f.calc_value_unchecked(x)
        return c


@_element("Actuators")
class _Actuators(Force):
    """Scalar actuators applying ``optimal_force * control``, evaluated in the compiled core.

    Each actuator is added by name (`add_coordinate_actuator`, `add_torque_actuator`,
    `add_point_actuator`); its control is a discrete variable of this element of that name (a change
    invalidates Dynamics; the named input ``<element path>:<name>``) plus the functions of time given
    to `add_control_function`, in order. An actuator whose control is 0 applies nothing.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    matter : SimbodyMatterSubsystem
        The matter subsystem of the same System.
    name : str
        The element's name (its path is ``/<forces>/<name>``); default ``"actuators"``.
    """

    #: its set is compiled, its controls read from the State (see GeneralForceSubsystem's groups)
    _reads_inputs = True

    def __init__(self, forces, matter, name: str = "actuators"):
        self._matter_subsystem = _matter_arg(matter, "Force.Actuators: matter", forces)
        self._actuators: list[_Actuator] = []
        super().__init__(forces)
        self.set_name(name)

    # ------------------------------------------------------------------ building
    def _new(self, a: _Actuator) -> int:
        if any(b.name == a.name for b in self._actuators):
            raise ValueError(f"{self!r}: an actuator named {a.name!r} exists already")
        self.add_discrete_variable(a.name, Stage.Dynamics, 0.0)  # (checks the name; invalidates topology)
        self._actuators.append(a)
        return len(self._actuators) - 1

    def _where(self, method: str) -> str:
        return f"{self!r}.{method}"

    def add_coordinate_actuator(self, name: str, mobod: MobilizedBody, which_u: int, optimal_force: float,
                                enabled: bool = True) -> int:
        """Add a generalized force ``optimal_force * control`` on speed ``which_u`` of ``mobod``.

        Parameters
        ----------
        name : str
            The actuator's (and its control variable's) name.
        mobod : MobilizedBody
            The body whose mobilizer the speed is of.
        which_u : int
            The speed's index among the mobilizer's u (checked when the instance is realized).
        optimal_force : float
            The force per unit control.
        enabled : bool
            False: the actuator applies nothing (OpenSim's ``appliesForce``).

        Returns
        -------
        int
            The actuator's index.
        """
        w = self._where("add_coordinate_actuator()")
        return self._new(_Actuator(name, "coordinate", _real(optimal_force, f"{w}: optimal_force"),
                                   _body(mobod, f"{w}: mobod", forces=self._forces), which_u=int(which_u),
                                   enabled=bool(enabled)))

    def add_torque_actuator(self, name: str, body_a: MobilizedBody, axis, optimal_force: float,
                            body_b: MobilizedBody | None = None, R_BA=None, torque_is_global: bool = True,
                            enabled: bool = True) -> int:
        """Add a torque ``optimal_force * control * axis`` on ``body_a`` and its opposite on ``body_b``.

        Parameters
        ----------
        name : str
            The actuator's name.
        body_a, body_b : MobilizedBody
            The bodies (``body_b`` None: no reaction).
        axis : array_like, shape (3,)
            A unit axis: in Ground if ``torque_is_global``, else in frame A of ``body_a``.
        optimal_force : float
            The torque per unit control.
        R_BA : array_like, shape (3, 3), optional
            Frame A's orientation in ``body_a`` (identity by default).
        torque_is_global, enabled : bool
            As OpenSim's properties (``enabled``: ``appliesForce``).

        Returns
        -------
        int
        """
        w = self._where("add_torque_actuator()")
        return self._new(_Actuator(
            name, "torque", _real(optimal_force, f"{w}: optimal_force"), _body(body_a, f"{w}: body_a", forces=self._forces),
            mobod_b=None if body_b is None else _body(body_b, f"{w}: body_b", forces=self._forces),
            R_BA=_rotation(R_BA, f"{w}: R_BA"), vector=_vec3(axis, f"{w}: axis"), is_global=bool(torque_is_global),
            enabled=bool(enabled)))

    def add_point_actuator(self, name: str, body: MobilizedBody, direction, point, optimal_force: float,
                           force_is_global: bool = False, point_is_global: bool = False, R_BA=None,
                           enabled: bool = True) -> int:
        """Add a force ``optimal_force * control * direction`` at ``point`` of ``body``.

        Parameters
        ----------
        name : str
            The actuator's name.
        body : MobilizedBody
            The body the force is applied to.
        direction : array_like, shape (3,)
            A unit direction: in Ground if ``force_is_global``, else in ``body``'s frame (rotated by ``R_BA``).
        point : array_like, shape (3,)
            In ``body``'s frame, or a point of Ground (the body's point there now) if ``point_is_global``.
        optimal_force : float
            The force per unit control.
        force_is_global, point_is_global, enabled : bool
            As OpenSim's properties.
        R_BA : array_like, shape (3, 3), optional
            The direction's frame in ``body`` (identity by default).

        Returns
        -------
        int
        """
        w = self._where("add_point_actuator()")
        return self._new(_Actuator(
            name, "point", _real(optimal_force, f"{w}: optimal_force"), _body(body, f"{w}: body", forces=self._forces),
            R_BA=_rotation(R_BA, f"{w}: R_BA"), vector=_vec3(direction, f"{w}: direction"),
            is_global=bool(force_is_global), point=_vec3(point, f"{w}: point"), point_is_global=bool(point_is_global),
            enabled=bool(enabled)))

    def add_control_function(self, name: str, function: Function) -> None:
        """Add ``function`` of time (one argument) to actuator ``name``'s control (after those added before).

        A built-in Function is evaluated in the compiled kernel; any other in Python (the element is then
        a Python part of the compiled time loop).
        """
        w = self._where("add_control_function()")
        if not isinstance(function, Function) or function.get_argument_size() != 1:
            raise TypeError(f"{w}: expected a Function of one argument (time), got {function!r}")
        self._actuator(name, w).functions.append(function)
        self._forces.invalidate_subsystem_topology_cache()

    def _actuator(self, name: str, where: str) -> _Actuator:
        for a in self._actuators:
            if a.name == name:
                return a
        raise KeyError(f"{where}: no actuator named {name!r} (there are: "
                       f"{', '.join(a.name for a in self._actuators) or 'none'})")

    def get_num_actuators(self) -> int:
        """How many actuators the element holds."""
        return len(self._actuators)

    def get_actuator_names(self) -> list[str]:
        """The actuators' names, in index order."""
        return [a.name for a in self._actuators]

    # ------------------------------------------------------------------ controls
    def set_control(self, state: State, name: str, value: float) -> None:
        """Hold actuator ``name``'s control at ``value`` in ``state`` (invalidates Dynamics); a bad name
        or a value that is not a finite number changes nothing."""
        w = self._where("set_control()")
        self._actuator(name, w)
        v = float(value)
        if not np.isfinite(v):
            raise ValueError(f"{w}: actuator {name!r}: expected a finite control, got {value!r}")
        self.set_discrete_variable_value(state, name, v)

    def get_controls(self, state: State) -> np.ndarray:
        """Every actuator's control in ``state`` (held plus its functions at the State's time), by index."""
        c = np.array([float(self.get_discrete_variable_value(state, a.name)) for a in self._actuators])
        x = np.array([state.get_time()])
        for k, a in enumerate(self._actuators):
            for f in a.functions:
                c[k] += f.calc_value_unchecked(x)
        return c

    def get_control(self, state: State, name: str) -> float:
        """Actuator ``name``'s control in ``state``: the held value plus its functions of time."""
        self._actuator(name, self._where("get_control()"))
        return float(self.get_controls(state)[[a.name for a in self._actuators].index(name)])

    # ------------------------------------------------------------------ bulk protocol
    @classmethod
    def _pack(cls, elements, matter, state, input_offset: int = 0):
        rows, bodies, stations, index, slots, terms, python_terms = [], [], [], [], [], [], []
        owners: list = []
        builder = FunctionTableBuilder()
        for e in elements:
            for a in e._actuators:
                k = len(rows)
                slots.append(e._slot(a.name, "discrete_variable"))
                owners.append(e)
                u = 0
                if a.type == "coordinate":
                    u0, n = matter._u_range(state, a.mobod._index)
                    if not 0 <= a.which_u < n:
                        raise IndexError(f"{e!r}: actuator {a.name!r}: {a.mobod!r} has no u[{a.which_u}] (it has {n})")
                    u = u0 + a.which_u
                b2 = a.mobod_b
                rows.append([_TYPES[a.type], a.optimal_force, float(a.enabled), *a.R_BA.reshape(-1), *a.vector,
                             float(a.is_global), float(a.point_is_global), float(b2 is not None)])
                bodies.append([a.mobod._index, 0 if b2 is None else b2._index])
                stations.append([a.point, np.zeros(3)])
                index.append([input_offset + k, u])  # (its input: the actuator's control)
                for f in a.functions:
                    i = builder.try_add(f)
                    if i is None:
                        python_terms.append((k, f))
                    else:
                        terms.append((k, i))
        fs = _core._k.ForceSet(_core.FORCE_KINDS["Actuator"][0], np.array(bodies, dtype=np.int64).reshape(-1, 2),
                               np.array(stations, dtype=float).reshape(-1, 2, 3),
                               np.array(rows, dtype=float).reshape(-1, 18), np.array(index, dtype=np.int64).reshape(-1, 2),
                               builder.build() if terms else None, np.array(terms, dtype=np.int64).reshape(-1, 2))
        return _ActuatorPacked(fs, list(elements), slots, python_terms, input_offset, owners)

    @classmethod
    def _calc_bulk(cls, packed, matter, state, body_forces, mobility_forces):
        packed.add(matter._at(state, Stage.Position, "Force.Actuators forces").ws, state, body_forces, mobility_forces)


def _rotation(R, what: str) -> np.ndarray:
    if R is None:
        return np.eye(3)
    a = np.asarray(R, dtype=np.float64)
    if a.shape != (3, 3) or not np.isfinite(a).all():
        raise ValueError(f"{what}: expected a finite 3x3 rotation matrix, got {R!r}")
    return a.copy()
