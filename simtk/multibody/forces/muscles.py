"""Muscles: force elements with state variables of their own whose tension acts along a GeometryPath.

``Force.Thelen2003Muscle`` is OpenSim's Thelen2003Muscle (``_thelen.py`` holds its law): continuous
state variables ``activation`` and ``fiber_length`` (z, integrated with q and u), its excitation held
in the State (the discrete variable ``excitation``, the input ``<path>:excitation`` of a probe or a
controller; a change invalidates Dynamics), and the tendon force as the tension along its path.

How it is evaluated: once per Dynamics realization, the paths of all enabled muscles are measured by
one compiled call (``path_measures``), each muscle's law runs once in Python (its tension and the
derivatives of its two states, written into zdot), and one compiled call applies every tension along
its path (the GeometryPath kind reading the tensions as its inputs). So a model with muscles keeps the
compiled time loop, which calls this element where the Dynamics hook would; the law itself is not
yet a compiled kind, and the batch kernels refuse it by name.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ... import _core
from ...common.errors import NonFiniteForceError
from ...common.function import Function
from ...common.stage import Stage
from ...common.state import State
from . import _thelen
from ._muscle import _Muscle, _MusclesPacked, _number
from .builtin_forces import _element
from .paths import _CODES, GeometryPath

__all__: list[str] = []

_K = _core._k
_INPUT_LAW = float(_CODES["input"])


@_element("Thelen2003Muscle")
class _Thelen2003Muscle(_Muscle):
    """OpenSim's Thelen2003Muscle along ``path``: first-order activation dynamics, an elastic tendon,
    a fiber at constant pennation height, Thelen's (2003) force-length and force-velocity curves.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    path : GeometryPath
        The muscle-tendon path; its tension is the tendon force.
    max_isometric_force, optimal_fiber_length, tendon_slack_length : float
        Greater than zero (N, m, m).
    pennation_angle_at_optimal : float
        In [0, pi/2) (rad).
    name : str, optional
        The element's name (its path is ``/<forces>/<name>``), named in errors.
    default_activation : float
        The activation a new State starts with (OpenSim's ``default_activation``, 0.05).
    default_fiber_length : float, optional
        The fiber length a new State starts with (default: ``optimal_fiber_length``).
    excitation : float
        The excitation a new State holds, in [0, 1].
    excitation_functions : sequence of Function
        Functions of time added to the held excitation (a PrescribedController's, as OpenSim adds
        its controllers' controls to the default ones).
    **properties : float
        OpenSim's other properties by name: ``max_contraction_velocity`` (10 l_opt/s),
        ``FmaxTendonStrain`` (0.04), ``FmaxMuscleStrain`` (0.6), ``KshapeActive`` (0.45),
        ``KshapePassive`` (5), ``Af`` (0.25), ``Flen`` (1.4), ``fv_linear_extrap_threshold`` (0.95),
        ``maximum_pennation_angle`` (acos 0.1), ``activation_time_constant`` (0.015 s),
        ``deactivation_time_constant`` (0.05 s), ``minimum_activation`` (0.01).

    Raises
    ------
    ValueError, TypeError
        A property out of OpenSim's range (a negative optimal fiber length, ...), an excitation
        outside [0, 1], an unknown property name; the muscle is named and nothing is added.
    """

    def __init__(self, forces, path: GeometryPath, max_isometric_force: float, optimal_fiber_length: float,
                 tendon_slack_length: float, pennation_angle_at_optimal: float = 0.0, *, name: str | None = None,
                 default_activation: float = 0.05, default_fiber_length: float | None = None,
                 excitation: float = 0.0, excitation_functions: Sequence[Function] = (), **properties: float):
        where = f"Force.Thelen2003Muscle {name!r}" if name is not None else "Force.Thelen2003Muscle"
        known = set(_thelen.ThelenParams.__dataclass_fields__)
        for k in properties:
            if k not in known:
                raise TypeError(f"{where}: unknown property {k!r} (known: {', '.join(sorted(known))})")
        values = dict(max_isometric_force=max_isometric_force, optimal_fiber_length=optimal_fiber_length,
                      tendon_slack_length=tendon_slack_length, pennation_angle_at_optimal=pennation_angle_at_optimal,
                      **properties)
        params = _thelen.ThelenParams(**{k: _number(v, f"{where}: {k}") for k, v in values.items()})
        _thelen.check(params, where)
        a0 = _number(default_activation, f"{where}: default_activation")
        l0 = params.optimal_fiber_length if default_fiber_length is None else _number(
            default_fiber_length, f"{where}: default_fiber_length")
        if not l0 > 0.0:
            raise ValueError(f"{where}: default_fiber_length = {l0!r}: must be greater than zero")
        self._params = params
        self._init_muscle(forces, path, name, where, {"activation": a0, "fiber_length": l0}, excitation,
                          excitation_functions)

    # ------------------------------------------------------------------ properties
    def get_properties(self) -> dict:
        """OpenSim's properties of this muscle, by name."""
        return {k: getattr(self._params, k) for k in _thelen.ThelenParams.__dataclass_fields__}

    def get_minimum_fiber_length(self) -> float:
        """The fiber length below which it is clamped (m)."""
        return self._params.min_fiber_length

    # ------------------------------------------------------------------ the law at a state
    def _info(self, state: State, L: float | None = None, Ldot: float | None = None) -> _thelen.ThelenInfo:
        if L is None or Ldot is None:
            L, Ldot = self._path._measures(state, Stage.Velocity)
        try:
            return _thelen.evaluate(self._params, self._z(state, "activation"), self._z(state, "fiber_length"),
                                    L, Ldot)
        except (ArithmeticError, ValueError) as exc:
            raise NonFiniteForceError(f"{self!r}: its law cannot be evaluated at this state ({exc})", self) from None

    def get_activation_rate(self, state: State) -> float:
        """da/dt at the held excitation."""
        return _thelen.activation_rate(self._params, self.get_activation(state), self.get_excitation(state))

    def compute_initial_fiber_equilibrium(self, state: State) -> None:
        """Set the fiber length to the one in equilibrium with the tendon at the State's activation,
        path length and lengthening speed (OpenSim's computeInitialFiberEquilibrium). Refused,
        naming the muscle and changing nothing, when no equilibrium is found."""
        L, Ldot = self._path._measures(state, Stage.Velocity)
        try:
            lce, _ = _thelen.equilibrium(self._params, self.get_activation(state), L, Ldot, repr(self))
        except (ArithmeticError, ValueError) as exc:
            raise ArithmeticError(f"{self!r}: no fiber equilibrium: {exc}") from None
        self.set_fiber_length(state, lce)

    # ------------------------------------------------------------------ bulk protocol
    @classmethod
    def _pack(cls, elements, matter, state):
        laws = [(_INPUT_LAW, 1.0, float(k), 0.0) for k in range(len(elements))]
        fs = GeometryPath._make_set([(e._path, law) for e, law in zip(elements, laws)], state, elements)
        # a disabled muscle's states do not change (OpenSim's zero derivatives)
        enabled = set(map(id, elements))
        for f in elements[0]._forces._forces if elements else ():
            if type(f) is cls and id(f) not in enabled:
                for name in ("activation", "fiber_length"):
                    sub, i = f._slot(name, "state_variable")
                    sub.upd_zdot(state)[i] = 0.0
        return _MusclesPacked(fs, elements)

    @classmethod
    def _calc_bulk(cls, packed, matter, state, body_forces, mobility_forces):
        ws = matter._at(state, Stage.Velocity, f"Force.{cls.__name__} forces").ws
        m = len(packed.elements)
        measures = np.empty((m, 2))
        _K.path_measures(packed.fs, ws, measures)
        tensions = np.empty(m)
        for k, e in enumerate(packed.elements):
            info = e._info(state, float(measures[k, 0]), float(measures[k, 1]))
            if not (math.isfinite(info.tendon_force) and math.isfinite(info.fiber_velocity)):
                raise NonFiniteForceError(f"{e!r}: its tendon force or fiber velocity is not finite at this state", e)
            tensions[k] = info.tendon_force
            sub, i = e._slot("activation", "state_variable")
            zdot = sub.upd_zdot(state)
            zdot[i] = _thelen.activation_rate(e._params, e._z(state, "activation"), e.get_excitation(state))
            _, j = e._slot("fiber_length", "state_variable")
            zdot[j] = info.fiber_velocity
        ws.set_inputs(state.get_time(), tensions)
        bad = packed.fs.add(ws, body_forces, mobility_forces)
        if bad >= 0:
            e = packed.elements[bad]
            raise NonFiniteForceError(f"{e!r}: its forces are not finite in this configuration", e)


def equilibrate_muscles(system, state: State) -> None:
    """Put every enabled muscle of ``system`` in fiber-tendon equilibrium at ``state``'s activations
    (OpenSim's Model::equilibrateMuscles)."""
    for sub in system.get_force_subsystems():
        for f in getattr(sub, "_forces", ()):
            if isinstance(f, _Muscle) and not f.is_disabled(state):
                system.realize(state, Stage.Velocity)
                f.compute_initial_fiber_equilibrium(state)
