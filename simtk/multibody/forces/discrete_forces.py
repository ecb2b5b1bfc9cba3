"""``Force.DiscreteForces``: forces set from outside (a controller, an event handler) and held in the State.

Every setter checks all it is given before it touches the State: the State and the bodies are of this
element's System, indices are integers in range, values are finite real numbers (a complex number or a
string is refused, as the State's own setters refuse them, never converted). Only then does it take the
values for writing, which invalidates Dynamics; a refused call leaves the State as it was, stage included.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..._real import finite_float, real_index
from ...common._ownership import check_system
from ...common._values import _checked_vector
from ...common.output import output
from ...common.stage import Stage
from ...common.state import State
from ..tree.mobilized_body import MobilizedBody
from .builtin_forces import _body, _DiscreteForceValues, _element, _matter_arg, _mobility
from .force import Force

__all__: list[str] = []


def _array(x, shape: tuple, where: str) -> np.ndarray:
    # finite real numbers of exactly ``shape`` (the State setters' rules: no complex, no strings)
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: expected real numbers of shape {shape}, got {x!r}") from exc
    if raw.shape != shape:
        raise ValueError(f"{where}: expected shape {shape}, got shape {raw.shape}")
    return _checked_vector(raw.reshape(-1), raw.size, where).reshape(shape)


@_element("DiscreteForces")
class _DiscreteForces(Force):
    """Forces set from outside (a controller, an event handler) and held in the State.

    Changing them invalidates Dynamics. Mobility forces are indexed like the matter's u; body forces are
    (torque, force) in Ground, the force at the body origin.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    matter : SimbodyMatterSubsystem
        The matter subsystem of the same System.
    """

    def __init__(self, forces, matter):
        self._matter_subsystem = _matter_arg(matter, "Force.DiscreteForces: matter", forces)
        self._dv = None
        super().__init__(forces)

    def _realize_hook(self, state, stage):
        if stage == "topology":
            self._dv = self._forces.allocate_discrete_variable(
                state, Stage.Dynamics, _DiscreteForceValues(self._matter_subsystem.get_num_bodies()))

    def _values(self, state) -> _DiscreteForceValues:
        return self._forces.get_discrete_variable(state, self._dv)

    def _upd_values(self, state) -> _DiscreteForceValues:
        values = self._forces.upd_discrete_variable(state, self._dv)
        nu = self._matter_subsystem.get_num_mobilities(state)
        if len(values.mobility_forces) != nu:
            values.mobility_forces = np.zeros(nu)
        return values

    # ------------------------------------------------------------------ checks (before anything changes)
    def _where(self, method: str) -> str:
        return f"{self!r}.{method}"

    def _state(self, state, method: str) -> None:
        system = self._forces._system
        if not isinstance(state, State) or state._system is not system:
            if not isinstance(state, State):
                raise TypeError(f"{self._where(method)}: expected a State, got {type(state).__name__}")
            check_system(self._where(method), state, system, "State")

    def _mobod(self, state, mobod, method: str) -> MobilizedBody:
        self._state(state, method)
        return _body(mobod, f"{self._where(method)}: mobod", system=self._forces._system)

    # ------------------------------------------------------------------ mobility forces
    def set_all_mobility_forces(self, state: State, f) -> None:
        """Replace all mobility forces, (nu,); invalidates Dynamics.

        Parameters
        ----------
        state : State
            A State of this element's System, realized to Model.
        f : array_like, shape (nu,)
            Finite real numbers, indexed like the matter's u.
        """
        self._state(state, "set_all_mobility_forces()")
        a = _array(f, (self._matter_subsystem.get_num_mobilities(state),), self._where("set_all_mobility_forces()"))
        self._upd_values(state).mobility_forces[:] = a

    def get_all_mobility_forces(self, state: State) -> np.ndarray:
        """The mobility forces applied, (nu,), a copy."""
        self._state(state, "get_all_mobility_forces()")
        values = self._values(state)
        nu = self._matter_subsystem.get_num_mobilities(state)
        return values.mobility_forces.copy() if len(values.mobility_forces) == nu else np.zeros(nu)

    @output(Stage.Dynamics, np.ndarray, name="mobility_forces")
    def _output_mobility_forces(self, state: State) -> np.ndarray:
        """The generalized forces (nu,) this element applies (a driver's inputs), a copy."""
        return np.array(self.get_all_mobility_forces(state))

    def set_one_mobility_force(self, state: State, mobod: MobilizedBody, which_u: int, f: float) -> None:
        """Set the force on speed ``which_u`` of ``mobod``; invalidates Dynamics.

        Parameters
        ----------
        state : State
            A State of this element's System, realized to Model.
        mobod : MobilizedBody
            A body of this element's System.
        which_u : int
            The speed's index among the mobilizer's u.
        f : float
            A finite real number.
        """
        method = "set_one_mobility_force()"
        b = self._mobod(state, mobod, method)
        _, ui = _mobility(self._matter_subsystem, state, self, b, real_index(which_u, f"{self._where(method)}: which_u"),
                          False)
        v = finite_float(f, f"{self._where(method)}: f")
        self._upd_values(state).mobility_forces[ui] = v

    def get_one_mobility_force(self, state: State, mobod: MobilizedBody, which_u: int) -> float:
        """The force on speed ``which_u`` of ``mobod`` (Simbody's ``getOneMobilityForce``)."""
        method = "get_one_mobility_force()"
        b = self._mobod(state, mobod, method)
        _, ui = _mobility(self._matter_subsystem, state, self, b, real_index(which_u, f"{self._where(method)}: which_u"),
                          False)
        return float(self.get_all_mobility_forces(state)[ui])

    # ------------------------------------------------------------------ body forces
    def set_all_body_forces(self, state: State, F) -> None:
        """Replace all body forces, (nb, 2, 3) in Ground; invalidates Dynamics.

        Parameters
        ----------
        state : State
            A State of this element's System.
        F : array_like, shape (nb, 2, 3)
            Finite real numbers: (torque, force) of each body, in Ground, the force at the body origin.
        """
        self._state(state, "set_all_body_forces()")
        a = _array(F, (self._matter_subsystem.get_num_bodies(), 2, 3), self._where("set_all_body_forces()"))
        self._upd_values(state).body_forces[:] = a

    def get_all_body_forces(self, state: State) -> np.ndarray:
        """The body forces applied, (nb, 2, 3), a copy."""
        self._state(state, "get_all_body_forces()")
        return self._values(state).body_forces.copy()

    def set_one_body_force(self, state: State, mobod: MobilizedBody, F) -> None:
        """Set the spatial force on ``mobod`` (Simbody's ``setOneBodyForce``); invalidates Dynamics.

        Parameters
        ----------
        state : State
            A State of this element's System.
        mobod : MobilizedBody
            A body of this element's System.
        F : array_like, shape (2, 3)
            Finite real numbers: (torque, force) in Ground, the force at the body origin.
        """
        method = "set_one_body_force()"
        b = self._mobod(state, mobod, method)
        a = _array(F, (2, 3), f"{self._where(method)}: F")
        self._upd_values(state).body_forces[b._index] = a

    def get_one_body_force(self, state: State, mobod: MobilizedBody) -> np.ndarray:
        """The spatial force (2, 3) applied to ``mobod``, a copy (Simbody's ``getOneBodyForce``)."""
        b = self._mobod(state, mobod, "get_one_body_force()")
        return self._values(state).body_forces[b._index].copy()

    def add_force_to_body_point(self, state: State, mobod: MobilizedBody, station, force) -> None:
        """Add a force (in Ground) at a station of ``mobod`` (needs Position); invalidates Dynamics.

        Parameters
        ----------
        state : State
            A State of this element's System, realized to Position.
        mobod : MobilizedBody
            A body of this element's System.
        station : array_like, shape (3,)
            p_BS, the point of application in the body's frame; finite real numbers.
        force : array_like, shape (3,)
            The force in Ground; finite real numbers.
        """
        method = "add_force_to_body_point()"
        b = self._mobod(state, mobod, method)
        f = _array(force, (3,), f"{self._where(method)}: force")
        r = b.express_vector_in_ground(state, _array(station, (3,), f"{self._where(method)}: station"))
        values = self._upd_values(state)
        values.body_forces[b._index, 0] += np.cross(r, f)
        values.body_forces[b._index, 1] += f

    def clear_all_forces(self, state: State) -> None:
        """Remove every force this element applies; invalidates Dynamics."""
        self._state(state, "clear_all_forces()")
        values = self._upd_values(state)
        values.body_forces[:] = 0.0
        values.mobility_forces[:] = 0.0

    # ------------------------------------------------------------------ bulk protocol
    @classmethod
    def _pack(cls, elements, matter, state):
        return SimpleNamespace(elements=list(elements))

    @classmethod
    def _calc_bulk(cls, packed, matter, state, body_forces, mobility_forces):
        for e in packed.elements:
            values = e._values(state)
            body_forces += values.body_forces
            if len(values.mobility_forces) == len(mobility_forces):
                mobility_forces += values.mobility_forces
