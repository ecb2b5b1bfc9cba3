"""Muscles: force elements with state variables of their own whose tension acts along a GeometryPath.

``Force.Thelen2003Muscle`` is OpenSim's Thelen2003Muscle (``_thelen.py`` holds its law): continuous
state variables ``activation`` and ``fiber_length`` (z, integrated with q and u), its excitation held
in the State (the discrete variable ``excitation``, the input ``<path>:excitation`` of a probe or a
controller; a change invalidates Dynamics), and the tendon force as the tension along its path.

How it is evaluated: the enabled muscles of an instance are one compiled set of the force kind
``ThelenMuscle`` (``core/muscles.pxi``): per muscle its path's length and speed, Thelen's law, the
derivatives of its two states written into zdot, the tendon force applied along its path, in one
nogil call. The set is fed from the State as the actuators' are (``_inputs``): the held excitations
are the evaluation's inputs, the excitation functions of time compiled terms of the set, the states
the evaluation's z. So a realization calls the kernel once, and the compiled time loop steps
(q, u, z) with no Python per evaluation (Runge-Kutta methods), the excitations held over its steps.
The getters (tendon force, fiber velocity, ...) read the same kernel (``thelen_info``);
``_thelen.py`` is its test oracle, and gives the equilibrium initialization. The batch kernels and
the functional forms refuse muscles by name (their z are not rows of a batch).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ... import _core
from ...common.errors import NonFiniteForceError
from ...common.function import Function
from ...common.function._compiled import FunctionTableBuilder
from ...common.stage import Stage
from ...common.state import State
from . import _thelen
from ._inputs import _InputPacked
from ._muscle import _Muscle, _number
from .builtin_forces import _element
from .paths import _CODES, GeometryPath

__all__: list[str] = []

_K = _core._k
_KIND = _K.FORCE_KINDS["ThelenMuscle"][0]
_NP = len(_K.FORCE_KINDS["ThelenMuscle"][2])
_PROPERTIES = tuple(_thelen.ThelenParams.__dataclass_fields__)
_INFO = {name: k for k, name in enumerate(_K.THELEN_INFO)}
_NO_LAW = (float(_CODES["tension"]), 0.0, 0.0, 0.0)  # (a muscle's path rows carry no law of the path kind)
assert _K.THELEN_COLUMNS[3:] == _PROPERTIES, "core/muscles.pxi's columns are ThelenParams' fields"


class _ThelenPacked(_InputPacked):
    """The enabled Thelen muscles of an instance: their compiled set (one input per muscle, its held
    excitation; its states read from z), and the excitation functions without a compiled form
    (evaluated in Python at each evaluation: the element is then a Python part of the time loop)."""

    __slots__ = ("slots", "python_terms")

    def __init__(self, fs, elements: list, offset: int, python_terms: list):
        super().__init__(fs, elements, offset, len(elements))
        self.slots = [e._slot("excitation", "discrete_variable") for e in elements]
        self.python_terms = python_terms

    @property
    def compiled_only(self) -> bool:
        return not self.python_terms

    def controls(self, state: State) -> np.ndarray:
        """Each muscle's held excitation, plus its functions of time that have no compiled form."""
        c = np.array([sub.get_discrete_variable(state, i) for sub, i in self.slots], dtype=float)
        if self.python_terms:
            x = np.array([state.get_time()])
            for k, f in self.python_terms:
                c[k] += f.calc_value_unchecked(x)
        return c

    def add(self, ws, state: State, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        """The muscles' forces, and their states' derivatives written into the State's zdot."""
        ws.set_z(state._z, state._zdot)
        try:
            super().add(ws, state, body_forces, mobility_forces)
        finally:
            ws.set_z(None, None)  # (a workspace keeps no State's arrays past the evaluation)


def _muscle_set(elements: list, state: State, input_offset: int, kind: int = _KIND, npk: int = _NP) -> tuple:
    """(one compiled muscle set of ``kind`` (ThelenMuscle, MillardMuscle) of ``elements``, element k
    reading input ``input_offset + k``, the (k, function) terms without a compiled form); each
    element gives its own columns (``_own_columns``)."""
    builder = FunctionTableBuilder()
    bodies: list = []
    stations: list = []
    params: list = []
    terms: list = []
    python_terms: list = []
    nq, nu = state.get_nq(), state.get_nu()
    for k, e in enumerate(elements):
        b, st, p = e._path._pack_rows(state, k, _NO_LAW, builder, e)
        own = e._own_columns(state, nq, nu, input_offset + k)
        bodies += b
        stations += st
        params += [row + own for row in p]
        for f in e._excitation_functions:
            i = builder.try_add(f)
            if i is None:
                python_terms.append((k, f))
            else:
                terms.append((k, i))
    fs = _K.ForceSet(kind, np.array(bodies, dtype=np.int64).reshape(-1, 1), np.array(stations).reshape(-1, 1, 3),
                     np.array(params).reshape(-1, npk), np.zeros((len(params), 2), dtype=np.int64),
                     builder.build() if len(builder) else None, np.array(terms, dtype=np.int64).reshape(-1, 2))
    return fs, python_terms


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

    _reads_inputs = True  # its excitations: the evaluation's inputs (see _inputs)
    _compiled_state = True  # its compiled set writes the derivatives of all its state variables

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

    def _own_columns(self, state: State, nq: int, nu: int, input_index: int) -> list:
        # core/muscles.pxi's THELEN_COLUMNS
        za, zl = (self._resolve_variable(state, name) - nq - nu for name in ("activation", "fiber_length"))
        return [float(za), float(zl), float(input_index)] + [float(getattr(self._params, f)) for f in _PROPERTIES]

    # ------------------------------------------------------------------ properties
    def get_properties(self) -> dict:
        """OpenSim's properties of this muscle, by name."""
        return {k: getattr(self._params, k) for k in _thelen.ThelenParams.__dataclass_fields__}

    def get_minimum_fiber_length(self) -> float:
        """The fiber length below which it is clamped (m)."""
        return self._params.min_fiber_length

    # ------------------------------------------------------------------ the law at a state
    def law_values(self, state: State) -> dict:
        """The muscle's law at ``state`` as the compiled kernel evaluates it (needs Velocity): by
        name (``tendon_force``, ``fiber_velocity``, ``activation_rate``, ``fiber_length`` (clamped
        at its minimum), ``pennation_angle``, ``tendon_length``, ``active_fiber_force``,
        ``passive_fiber_force``, ``fiber_force``, ``activation`` (clamped to [a_min, 1]), the
        multipliers, ``tendon_velocity``, ``clamped``, ``excitation``, ``length``,
        ``lengthening_speed``)."""
        row = self._kernel_row(state)
        return {name: float(row[k]) for name, k in _INFO.items()}

    def _kernel_row(self, state: State) -> np.ndarray:
        ws = self._path._matter._at(state, Stage.Velocity, f"{self!r}: its law").ws
        fs, python_terms = _muscle_set([self], state, 0)
        e = float(self.get_discrete_variable_value(state, "excitation"))
        if python_terms:
            t = np.array([state.get_time()])
            e += sum(float(f.calc_value(t)) for _, f in python_terms)
        ws.set_inputs(state.get_time(), np.array([e]))
        out = np.empty((1, len(_INFO)))
        _K.thelen_info(fs, ws, np.ascontiguousarray(state.get_z()), out)
        return out[0]

    def _value(self, state: State, name: str) -> float:
        v = float(self._kernel_row(state)[_INFO[name]])
        if not math.isfinite(v):
            raise NonFiniteForceError(f"{self!r}: its {name.replace('_', ' ')} is not finite at this state", self)
        return v

    def get_tendon_force(self, state: State) -> float:
        """The tendon force, which is the tension along the path (N; needs Velocity)."""
        return self._value(state, "tendon_force")

    def get_tension(self, state: State) -> float:
        """The tension along the path: the tendon force."""
        return self.get_tendon_force(state)

    def get_fiber_force(self, state: State) -> float:
        """The fiber force, active and passive (N; needs Velocity)."""
        return self._value(state, "fiber_force")

    def get_active_fiber_force(self, state: State) -> float:
        """a f_L f_V F_max (N; needs Velocity)."""
        return self._value(state, "active_fiber_force")

    def get_passive_fiber_force(self, state: State) -> float:
        """f_PE F_max (N; needs Velocity)."""
        return self._value(state, "passive_fiber_force")

    def get_fiber_velocity(self, state: State) -> float:
        """d(fiber length)/dt from the force-velocity curve (m/s; needs Velocity)."""
        return self._value(state, "fiber_velocity")

    def get_tendon_length(self, state: State) -> float:
        """Path length minus the fiber's length along the tendon (m; needs Velocity)."""
        return self._value(state, "tendon_length")

    def get_pennation_angle(self, state: State) -> float:
        """The fiber's pennation angle (rad; needs Velocity)."""
        return self._value(state, "pennation_angle")

    def get_activation_rate(self, state: State) -> float:
        """da/dt at the excitation (needs Velocity)."""
        return self._value(state, "activation_rate")

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
    def _pack(cls, elements, matter, state, input_offset: int = 0):
        fs, python_terms = _muscle_set(elements, state, input_offset)
        # a disabled muscle's states do not change (OpenSim's zero derivatives)
        enabled = set(map(id, elements))
        for f in elements[0]._forces._forces if elements else ():
            if type(f) is cls and id(f) not in enabled:
                for name in ("activation", "fiber_length"):
                    sub, i = f._slot(name, "state_variable")
                    sub.upd_zdot(state)[i] = 0.0
        return _ThelenPacked(fs, elements, input_offset, python_terms)

    @classmethod
    def _calc_bulk(cls, packed, matter, state, body_forces, mobility_forces):
        packed.add(matter._at(state, Stage.Velocity, f"Force.{cls.__name__} forces").ws, state, body_forces,
                   mobility_forces)


def equilibrate_muscles(system, state: State) -> None:
    """Put every enabled muscle of ``system`` in fiber-tendon equilibrium at ``state``'s activations
    (OpenSim's Model::equilibrateMuscles)."""
    for sub in system.get_force_subsystems():
        for f in getattr(sub, "_forces", ()):
            if isinstance(f, _Muscle) and not f.is_disabled(state):
                system.realize(state, Stage.Velocity)
                f.compute_initial_fiber_equilibrium(state)
