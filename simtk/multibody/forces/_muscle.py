"""The parts every muscle element shares, whatever its law: state variables named as OpenSim names
them, the excitation held in the State, the getters of the law's quantities, outputs; and
``_LawMuscle``, a muscle whose law is a strategy object (``_millard``, ``_degroote``).

A law object is plain Python over floats: the test oracle of its compiled kind (core/millard.pxi,
core/degroote.pxi, which the elements evaluate), and the equilibrium initialization:

- ``state_names``: its continuous state variables, OpenSim's names, activation first when it has
  one, then the fiber's (``fiber_length``, ``normalized_tendon_force``) when the tendon is elastic;
- ``defaults(optimal_fiber_length)``: a new State's values of those states;
- ``evaluate(z, L, Ldot, e) -> MuscleInfo``: the muscle at its states ``z`` (a tuple in the order of
  ``state_names``), path length and lengthening speed, excitation; its ``zdot`` are the states'
  derivatives, its ``tendon_force`` the tension along the path;
- ``equilibrium(z, L, Ldot, where) -> z``: the states with the fiber in equilibrium with the tendon
  (OpenSim's computeInitialFiberEquilibrium), activation unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ... import _core
from ...common.function import Function
from ...common.output import output
from ...common.stage import Stage
from ...common.state import State
from .paths import _CODES, GeometryPath, _PathForce

__all__: list[str] = []

_K = _core._k
_INPUT_LAW = float(_CODES["input"])


def _number(x: Any, what: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected a finite number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{what}: expected a finite number, got {x!r}")
    return v


@dataclass
class MuscleInfo:
    """What OpenSim's MuscleLengthInfo, FiberVelocityInfo and MuscleDynamicsInfo hold (the parts used),
    and the derivatives of the law's states."""

    activation: float
    fiber_length: float
    pennation_angle: float
    tendon_length: float
    fiber_velocity: float
    tendon_velocity: float
    active_force_length_multiplier: float
    passive_force_multiplier: float
    force_velocity_multiplier: float
    fiber_force: float
    active_fiber_force: float
    passive_fiber_force: float
    tendon_force: float
    clamped: bool
    zdot: tuple = ()


def make_params(cls: type, values: dict, where: str):
    """A law's parameter dataclass ``cls`` from OpenSim's property names (its three required fields, the
    isometric force and lengths, then ``values``; unknown names refused, naming ``where``)."""
    known = cls.__dataclass_fields__
    for k in values:
        if k not in known:
            raise TypeError(f"{where}: unknown property {k!r} (known: {', '.join(sorted(known))})")
    return replace(cls(1.0, 1.0, 1.0), **values)


def first_order_activation_rate(a: float, e: float, tau_act: float, tau_deact: float, a_min: float) -> float:
    """da/dt of OpenSim's MuscleFirstOrderActivationDynamicModel (a clamped to [a_min, 1])."""
    a = min(1.0, max(a_min, a))
    if e > a:
        return (e - a) / (tau_act * (0.5 + 1.5 * a))
    return (e - a) * (0.5 + 1.5 * a) / tau_deact


class _Muscle(_PathForce):
    """What every muscle element shares (not an element itself)."""

    _state_names: tuple[str, ...] = ("activation", "fiber_length")

    def _init_muscle(self, forces, path: GeometryPath, name: str | None, where: str, states: dict,
                     excitation: float, excitation_functions: Sequence[Function]) -> None:
        # everything is checked before the element is added (a refused muscle leaves nothing behind)
        e0 = self._excitation_value(excitation, f"{where}: excitation")
        functions = list(excitation_functions)
        for k, f in enumerate(functions):
            if not isinstance(f, Function) or f.get_argument_size() != 1:
                raise TypeError(f"{where}: excitation_functions[{k}]: expected a Function of time (one argument), "
                                f"got {f!r}")
        self._excitation_functions = tuple(functions)
        self._defaults = dict(states)
        self._state_names = tuple(states)
        self._default_excitation = e0
        _PathForce.__init__(self, forces, path)
        if name is not None:
            self.set_name(name)
        for k, v in states.items():
            self.add_state_variable(k, v)
        self.add_discrete_variable("excitation", Stage.Dynamics, e0)

    @staticmethod
    def _excitation_value(x: Any, what: str) -> float:
        v = _number(x, what)
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{what}: an excitation must be in [0, 1], got {x!r}")
        return v

    # ------------------------------------------------------------------ properties
    def get_max_isometric_force(self) -> float:
        """F_max (N)."""
        return self._params.max_isometric_force

    def get_optimal_fiber_length(self) -> float:
        """l_opt (m)."""
        return self._params.optimal_fiber_length

    def get_tendon_slack_length(self) -> float:
        """The tendon's slack length (m)."""
        return self._params.tendon_slack_length

    def get_state_variable_names(self) -> tuple[str, ...]:
        """The muscle's continuous state variables, as OpenSim names them."""
        return self._state_names

    def compute_moment_arm(self, state: State, coordinate: Any) -> float:
        """The path's moment arm about ``coordinate``: (mobod, which_q), or a coordinate's name when
        the muscle was read from an OpenSim model (``OsimModel.muscles``)."""
        if isinstance(coordinate, str):
            resolve = getattr(self, "_coordinate_names", None)
            if resolve is None:
                raise TypeError(f"{self!r}.compute_moment_arm: a coordinate name needs a muscle of an OpenSim "
                                "model; give (mobod, which_q)")
            coordinate = resolve(coordinate)
        return self._path.compute_moment_arm(state, coordinate)

    def _default_state(self, name: str) -> float:
        return self._defaults[name]

    # ------------------------------------------------------------------ state
    def _z(self, state: State, name: str) -> float:
        sub, i = self._slot(name, "state_variable")
        return float(sub.get_z(state)[i])

    def get_activation(self, state: State) -> float:
        """The activation state variable."""
        return self._z(state, "activation")

    def set_activation(self, state: State, value: float) -> None:
        """Set the activation state variable (invalidates Dynamics)."""
        self.set_state_variable_value(state, "activation", _number(value, f"{self!r}.set_activation: value"))

    def get_fiber_length(self, state: State) -> float:
        """The fiber-length state variable (m)."""
        return self._z(state, "fiber_length")

    def set_fiber_length(self, state: State, value: float) -> None:
        """Set the fiber-length state variable (invalidates Dynamics). Zero is allowed: it is the
        minimum fiber length of an unpennated Thelen fiber, where OpenSim's equilibrium puts a fiber
        that the path leaves no room for."""
        v = _number(value, f"{self!r}.set_fiber_length: value")
        if not v >= 0.0:
            raise ValueError(f"{self!r}.set_fiber_length: a fiber length must not be negative, got {value!r}")
        self.set_state_variable_value(state, "fiber_length", v)

    def get_excitation(self, state: State) -> float:
        """The excitation: the one held in ``state`` plus the excitation functions at its time."""
        e = float(self.get_discrete_variable_value(state, "excitation"))
        if self._excitation_functions:
            t = np.array([state.get_time()])
            e += sum(float(f.calc_value(t)) for f in self._excitation_functions)
        return e

    def get_excitation_functions(self) -> tuple:
        """The functions of time added to the held excitation."""
        return self._excitation_functions

    def set_excitation(self, state: State, value: float) -> None:
        """Hold ``value`` in [0, 1] as the excitation (invalidates Dynamics; refused outside [0, 1])."""
        self.set_discrete_variable_value(state, "excitation",
                                         self._excitation_value(value, f"{self!r}.set_excitation: value"))

    # ------------------------------------------------------------------ the law's quantities
    def _info(self, state: State, L: float | None = None, Ldot: float | None = None):
        raise NotImplementedError

    def get_tendon_force(self, state: State) -> float:
        """The tendon force, which is the tension along the path (N; needs Velocity)."""
        return self._info(state).tendon_force

    def get_tension(self, state: State) -> float:
        """The tension along the path: the tendon force."""
        return self.get_tendon_force(state)

    def get_fiber_force(self, state: State) -> float:
        """The fiber force, active and passive (N; needs Velocity)."""
        return self._info(state).fiber_force

    def get_active_fiber_force(self, state: State) -> float:
        """a f_L f_V F_max (N; needs Velocity)."""
        return self._info(state).active_fiber_force

    def get_passive_fiber_force(self, state: State) -> float:
        """The passive fiber force (N; needs Velocity)."""
        return self._info(state).passive_fiber_force

    def get_fiber_velocity(self, state: State) -> float:
        """d(fiber length)/dt (m/s; needs Velocity)."""
        return self._info(state).fiber_velocity

    def get_tendon_length(self, state: State) -> float:
        """Path length minus the fiber's length along the tendon (m; needs Position)."""
        return self._info(state).tendon_length

    def get_pennation_angle(self, state: State) -> float:
        """The fiber's pennation angle (rad; needs Position)."""
        return self._info(state).pennation_angle

    @output(Stage.Velocity, float, name="tendon_force")
    def _output_tendon_force(self, state) -> float:
        """The tendon force."""
        return self.get_tendon_force(state)

    @output(Stage.Velocity, float, name="fiber_force")
    def _output_fiber_force(self, state) -> float:
        """The fiber force."""
        return self.get_fiber_force(state)

    @output(Stage.Velocity, float, name="fiber_velocity")
    def _output_fiber_velocity(self, state) -> float:
        """The fiber velocity."""
        return self.get_fiber_velocity(state)

    @output(Stage.Position, float, name="activation_value")
    def _output_activation(self, state) -> float:
        """The activation."""
        return self.get_activation(state)

    @output(Stage.Position, float, name="fiber_length_value")
    def _output_fiber_length(self, state) -> float:
        """The fiber length."""
        return self.get_fiber_length(state)

    def compute_initial_fiber_equilibrium(self, state: State) -> None:
        raise NotImplementedError


class _LawMuscle(_Muscle):
    """A muscle whose law is a strategy object ``self._mlaw`` (see the module's notes)."""

    def _states(self, state: State) -> tuple:
        return tuple(self._z(state, n) for n in self._state_names)

    def get_properties(self) -> dict:
        """OpenSim's properties of this muscle, by name (None: an optional property left out)."""
        p = self._mlaw.params
        return {k: getattr(p, k) for k in type(p).__dataclass_fields__}

    def get_minimum_fiber_length(self) -> float:
        """The fiber length below which it is clamped (m)."""
        return self._mlaw.min_fiber_length

    def get_activation(self, state: State) -> float:
        """The activation: its state variable, or the clamped excitation when activation dynamics are
        ignored."""
        if "activation" in self._state_names:
            return self._z(state, "activation")
        return self._mlaw.clamp_activation(self.get_excitation(state))

    def get_fiber_length(self, state: State) -> float:
        """The fiber length (m): its state variable, or the law's (rigid tendon, or a tendon-force
        state; needs Position)."""
        if "fiber_length" in self._state_names:
            return self._z(state, "fiber_length")
        return self._info(state).fiber_length

    def get_activation_rate(self, state: State) -> float:
        """da/dt at the held excitation (0 when activation is not a state)."""
        if "activation" not in self._state_names:
            return 0.0
        return self._info(state).zdot[0]

    def compute_initial_fiber_equilibrium(self, state: State) -> None:
        """Put the fiber in equilibrium with the tendon at the State's activation and path length
        (OpenSim's computeInitialFiberEquilibrium; nothing to do for a rigid tendon). Refused, naming
        the muscle and changing nothing, when no equilibrium is found."""
        if len(self._state_names) == int("activation" in self._state_names):
            return
        L, Ldot = self._path._measures(state, Stage.Velocity)
        try:
            z = self._mlaw.equilibrium(self._states(state), L, Ldot, self.get_excitation(state), repr(self))
        except (ArithmeticError, ValueError) as exc:
            raise ArithmeticError(f"{self!r}: no fiber equilibrium: {exc}") from None
        for n, v in zip(self._state_names, z):
            if n != "activation":
                self.set_state_variable_value(state, n, float(v))
