"""Muscle elements whose law is a strategy object: ``Force.Millard2012EquilibriumMuscle`` (``_millard``)
and ``Force.DeGrooteFregly2016Muscle`` (``_degroote``), with the API of ``Force.Thelen2003Muscle``.

Their state variables are OpenSim's: ``activation`` unless activation dynamics are ignored, and the
fiber's state when the tendon is elastic (``fiber_length`` for Millard, ``normalized_tendon_force``
for DeGroote-Fregly's explicit tendon dynamics); the excitation is held in the State as for every
muscle. Both are compiled kinds (core/millard.pxi: its curves' control points packed at Instance;
core/degroote.pxi: its closed-form curves), their laws, states and paths in the core, as the Thelen
muscle's, so the compiled time loop steps them with no Python per evaluation. The law objects
(``_millard``, ``_degroote``) are the kernels' test oracles and give the equilibrium initialization.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ... import _core
from ...common.errors import NonFiniteForceError
from ...common.function import Function
from ...common.stage import Stage
from ...common.state import State
from . import _degroote, _millard
from ._muscle import MuscleInfo, _LawMuscle, _number, make_params
from .builtin_forces import _element
from .muscles import _muscle_set, _ThelenPacked
from .paths import GeometryPath

_K = _core._k
_MILLARD_KIND = _K.FORCE_KINDS["MillardMuscle"][0]
_MILLARD_NP = len(_K.FORCE_KINDS["MillardMuscle"][2])
_DEGROOTE_KIND = _K.FORCE_KINDS["DeGrooteMuscle"][0]
_DEGROOTE_NP = len(_K.FORCE_KINDS["DeGrooteMuscle"][2])
_INFO = {name: k for k, name in enumerate(_K.THELEN_INFO)}
_DG_INFO = {name: k for k, name in enumerate(_K.DEGROOTE_INFO)}
#: the law's value that is a state variable's derivative, by the variable's name
_RATES = {"activation": "activation_rate", "fiber_length": "fiber_velocity",
          "normalized_tendon_force": "normalized_tendon_force_rate"}


def millard_columns(law: "_millard.MillardLaw") -> list:
    """A Millard law's finalized scalars and curves as core/millard.pxi packs them (after za, zl, input)."""
    p = law.params
    own = [p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length, p.pennation_angle_at_optimal,
           p.max_contraction_velocity, law.beta, float(law.damped), float(law.elastic),
           float(p.ignore_activation_dynamics), p.activation_time_constant, p.deactivation_time_constant,
           p.minimum_activation, p.maximum_pennation_angle, law.height, law.max_sin, law.pen_min, law.pen_min_along,
           law.min_fiber_length]
    for name, column, nsec in _K.MILLARD_CURVES:
        c = getattr(law, name)
        # the kernel's section counts are fixed by OpenSim's construction of each curve
        assert len(c.px) == nsec and column == 13 + 3 + len(own), (name, len(c.px), column)
        own += [c.x0, c.x1, c.y0, c.y1, c.dydx0, c.dydx1]
        for px, py in zip(c.px, c.py):
            own += list(px) + list(py)
    return [float(v) for v in own]


def degroote_columns(law: "_degroote.DeGrooteLaw") -> list:
    """A DeGroote-Fregly law's properties and the constants it computes once, as core/degroote.pxi packs
    them (after za, zt, input)."""
    p = law.params
    own = [p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length, p.max_contraction_velocity,
           p.activation_time_constant, p.deactivation_time_constant, p.active_force_width_scale, p.fiber_damping,
           p.passive_fiber_strain_at_one_norm_force, p.activation_dynamics_smoothing, float(law.elastic),
           float(p.ignore_activation_dynamics), float(p.ignore_passive_fiber_force), law.width, law.kT,
           law._pe_offset, law._pe_den]
    assert len(own) + 3 == len(_K.DEGROOTE_COLUMNS)
    return [float(v) for v in own]


__all__: list[str] = []


def _law_values(where: str, fields, values: dict) -> dict:
    out = {}
    for k, v in values.items():
        if k not in fields:
            raise TypeError(f"{where}: unknown property {k!r} (known: {', '.join(sorted(fields))})")
        if isinstance(v, bool) or v is None:
            out[k] = v
        else:
            out[k] = _number(v, f"{where}: {k}")
    return out


class _StrategyMuscle(_LawMuscle):
    _law_module = _millard

    def _setup(self, forces, path, where, name, values: dict, default_activation, default_fiber_length,
               excitation, excitation_functions) -> None:
        mod = self._law_module
        params = make_params(mod.PARAMS, _law_values(where, mod.PARAMS.__dataclass_fields__, values), where)
        law = mod.LAW(params, where)
        a0 = _number(default_activation, f"{where}: default_activation")
        l0 = params.optimal_fiber_length if default_fiber_length is None else _number(
            default_fiber_length, f"{where}: default_fiber_length")
        if not l0 > 0.0:
            raise ValueError(f"{where}: default_fiber_length = {l0!r}: must be greater than zero")
        self._mlaw = law
        self._params = params
        self._default_values = {"activation": a0, "fiber_length": l0}
        self._init_muscle(forces, path, name, where, law.defaults(a0, l0), excitation, excitation_functions)

    def _default_state(self, name: str) -> float:
        return self._default_values[name]

    # ------------------------------------------------------------------ the compiled kind
    # per law: its force kind and row width, its kernel's info function and columns, the order of its
    # z columns (za, then the fiber's), its own columns (after za, zl or zt, input), why it is not finite
    _kind = _MILLARD_KIND
    _np = _MILLARD_NP
    _info_names = _INFO
    _z_columns = ("activation", "fiber_length")
    _why_not_finite = "the fiber velocity is singular or its Newton iteration does not converge"
    _reads_inputs = True  # its excitations: the evaluation's inputs (see _inputs)
    _compiled_state = True  # its compiled set writes the derivatives of its state variables

    @staticmethod
    def _law_info(fs, ws, z, out) -> None:
        _K.millard_info(fs, ws, z, out)

    def _law_columns(self) -> list:
        return millard_columns(self._mlaw)

    def _own_columns(self, state: State, nq: int, nu: int, input_index: int) -> list:
        # the kind's columns: a variable that is not a state is -1
        z = [float(self._resolve_variable(state, n) - nq - nu) if n in self._state_names else -1.0
             for n in self._z_columns]
        return z + [float(input_index)] + self._law_columns()

    @classmethod
    def _pack(cls, elements, matter, state, input_offset: int = 0):
        fs, python_terms = _muscle_set(elements, state, input_offset, cls._kind, cls._np)
        # a disabled muscle's states do not change (OpenSim's zero derivatives)
        enabled = set(map(id, elements))
        for f in elements[0]._forces._forces if elements else ():
            if type(f) is cls and id(f) not in enabled:
                for name in f._state_names:
                    sub, i = f._slot(name, "state_variable")
                    sub.upd_zdot(state)[i] = 0.0
        return _ThelenPacked(fs, elements, input_offset, python_terms)

    @classmethod
    def _calc_bulk(cls, packed, matter, state, body_forces, mobility_forces):
        packed.add(matter._at(state, Stage.Velocity, f"Force.{cls.__name__} forces").ws, state, body_forces,
                   mobility_forces)

    def _kernel_row(self, state: State) -> np.ndarray:
        ws = self._path._matter._at(state, Stage.Velocity, f"{self!r}: its law").ws
        fs, python_terms = _muscle_set([self], state, 0, self._kind, self._np)
        e = float(self.get_discrete_variable_value(state, "excitation"))
        if python_terms:
            t = np.array([state.get_time()])
            e += sum(float(f.calc_value(t)) for _, f in python_terms)
        ws.set_inputs(state.get_time(), np.array([e]))
        out = np.empty((1, len(self._info_names)))
        self._law_info(fs, ws, np.ascontiguousarray(state.get_z()), out)
        return out[0]

    def law_values(self, state: State) -> dict:
        """The muscle's law at ``state`` as the compiled kernel evaluates it (needs Velocity), by the
        names of ``Force.Thelen2003Muscle.law_values`` (``activation_rate`` 0 when activation is not a
        state; a DeGrooteFregly2016Muscle's also ``normalized_tendon_force_rate``, 0 with a rigid
        tendon)."""
        row = self._kernel_row(state)
        return {name: float(row[k]) for name, k in self._info_names.items()}

    def _info(self, state: State, L: float | None = None, Ldot: float | None = None) -> MuscleInfo:
        # the getters read the kernel (the law object's evaluate is the tests' oracle)
        r = self._kernel_row(state)
        if not np.isfinite(r).all():
            raise NonFiniteForceError(f"{self!r}: its law cannot be evaluated at this state ({self._why_not_finite})",
                                      self)
        info = self._info_names
        zdot = tuple(float(r[info[_RATES[n]]]) for n in self._state_names)
        g = [float(r[info[n]]) for n in ("activation", "fiber_length", "pennation_angle", "tendon_length",
                                         "fiber_velocity", "tendon_velocity", "active_force_length_multiplier",
                                         "passive_force_multiplier", "force_velocity_multiplier", "fiber_force",
                                         "active_fiber_force", "passive_fiber_force", "tendon_force")]
        return MuscleInfo(*g, r[info["clamped"]] != 0.0, zdot)


@_element("Millard2012EquilibriumMuscle")
class _Millard2012EquilibriumMuscle(_StrategyMuscle):
    """OpenSim's Millard2012EquilibriumMuscle along ``path``: quintic Bézier force-length,
    force-velocity, passive and tendon curves, an elastic or rigid tendon, optional fiber damping,
    first-order activation dynamics, a fiber at constant pennation height.

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
        Functions of time added to the held excitation (a PrescribedController's).
    **properties : float or bool
        OpenSim's other properties by name: ``max_contraction_velocity`` (10 l_opt/s),
        ``fiber_damping`` (0.1; below 0.001 the undamped model), ``activation_time_constant``
        (0.01 s), ``deactivation_time_constant`` (0.04 s), ``minimum_activation`` (0.01),
        ``maximum_pennation_angle`` (acos 0.1), ``ignore_tendon_compliance`` (False: then the state
        ``fiber_length``), ``ignore_activation_dynamics`` (False: then the state ``activation``), and
        the curves' properties as ``<Curve>_<property>``, e.g. ``ActiveForceLengthCurve_minimum_value``,
        ``TendonForceLengthCurve_strain_at_one_norm_force`` (``_millard.CURVES`` lists them).

    Raises
    ------
    ValueError, TypeError
        A property out of OpenSim's range (a negative optimal fiber length, a curve that cannot be
        built, ...), an excitation outside [0, 1], an unknown property; the muscle is named and
        nothing is added.
    """

    _law_module = _millard

    def __init__(self, forces, path: GeometryPath, max_isometric_force: float, optimal_fiber_length: float,
                 tendon_slack_length: float, pennation_angle_at_optimal: float = 0.0, *, name: str | None = None,
                 default_activation: float = 0.05, default_fiber_length: float | None = None,
                 excitation: float = 0.0, excitation_functions: Sequence[Function] = (), **properties):
        where = f"Force.Millard2012EquilibriumMuscle {name!r}" if name is not None else \
            "Force.Millard2012EquilibriumMuscle"
        values = dict(max_isometric_force=max_isometric_force, optimal_fiber_length=optimal_fiber_length,
                      tendon_slack_length=tendon_slack_length, pennation_angle_at_optimal=pennation_angle_at_optimal,
                      **properties)
        self._setup(forces, path, where, name, values, default_activation, default_fiber_length, excitation,
                    excitation_functions)

    def get_fiber_damping(self) -> float:
        """The fiber's damping coefficient in use (0 for the undamped model)."""
        return self._mlaw.beta

    def set_fiber_length(self, state: State, value: float) -> None:
        """Set the fiber-length state variable (refused with a rigid tendon, which has none)."""
        if "fiber_length" not in self._state_names:
            raise ValueError(f"{self!r}.set_fiber_length: a rigid-tendon muscle's fiber length follows its path; "
                             "it is not a state variable")
        super().set_fiber_length(state, value)


@_element("DeGrooteFregly2016Muscle")
class _DeGrooteFregly2016Muscle(_StrategyMuscle):
    """OpenSim's DeGrooteFregly2016Muscle along ``path``: De Groote et al.'s (2016) analytic
    active and passive force-length, force-velocity and tendon curves; an elastic tendon whose
    state is ``normalized_tendon_force`` (OpenSim's explicit tendon dynamics), or a rigid one
    (``ignore_tendon_compliance``); fiber damping; first-order activation dynamics (tanh-smoothed).

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
        The element's name, named in errors.
    default_activation : float
        The activation a new State starts with (0.5, OpenSim's default).
    default_normalized_tendon_force : float
        The normalized tendon force a new State starts with (0.5, OpenSim's default).
    excitation : float
        The excitation a new State holds, in [0, 1].
    excitation_functions : sequence of Function
        Functions of time added to the held excitation (a PrescribedController's).
    **properties : float or bool
        OpenSim's other properties by name (``_degroote.DeGrooteParams`` lists them and their
        defaults): ``max_contraction_velocity``, ``activation_time_constant``,
        ``deactivation_time_constant``, ``fiber_damping``, ``passive_fiber_strain_at_one_norm_force``,
        ``tendon_strain_at_one_norm_force``, ``active_force_width_scale``, ``ignore_tendon_compliance``,
        ``ignore_activation_dynamics``, ``ignore_passive_fiber_force``.

    Raises
    ------
    ValueError, TypeError
        A property out of OpenSim's range, an excitation outside [0, 1], an unknown property; the
        muscle is named and nothing is added.
    """

    _law_module = _degroote
    _kind = _DEGROOTE_KIND
    _np = _DEGROOTE_NP
    _info_names = _DG_INFO
    _z_columns = ("activation", "normalized_tendon_force")
    _why_not_finite = ("the normalized tendon force is at or below -c3, the activation or the active "
                       "force-length is zero, or the fiber velocity overflows")

    @staticmethod
    def _law_info(fs, ws, z, out) -> None:
        _K.degroote_info(fs, ws, z, out)

    def _law_columns(self) -> list:
        return degroote_columns(self._mlaw)

    def __init__(self, forces, path: GeometryPath, max_isometric_force: float, optimal_fiber_length: float,
                 tendon_slack_length: float, pennation_angle_at_optimal: float = 0.0, *, name: str | None = None,
                 default_activation: float = 0.5, default_normalized_tendon_force: float = 0.5,
                 excitation: float = 0.0, excitation_functions: Sequence[Function] = (), **properties):
        where = f"Force.DeGrooteFregly2016Muscle {name!r}" if name is not None else "Force.DeGrooteFregly2016Muscle"
        values = dict(max_isometric_force=max_isometric_force, optimal_fiber_length=optimal_fiber_length,
                      tendon_slack_length=tendon_slack_length, pennation_angle_at_optimal=pennation_angle_at_optimal,
                      **properties)
        self._setup(forces, path, where, name, values, default_activation, default_normalized_tendon_force,
                    excitation, excitation_functions)

    def get_normalized_tendon_force(self, state: State) -> float:
        """The tendon force over F_max: its state variable (elastic tendon) or the law's."""
        if "normalized_tendon_force" in self._state_names:
            return self._z(state, "normalized_tendon_force")
        return self.get_tendon_force(state) / self._params.max_isometric_force

    def set_normalized_tendon_force(self, state: State, value: float) -> None:
        """Set the normalized tendon force state variable (elastic tendon only)."""
        if "normalized_tendon_force" not in self._state_names:
            raise ValueError(f"{self!r}.set_normalized_tendon_force: a rigid-tendon muscle has no tendon-force "
                             "state variable")
        self.set_state_variable_value(state, "normalized_tendon_force",
                                      _number(value, f"{self!r}.set_normalized_tendon_force: value"))

    def set_fiber_length(self, state: State, value: float) -> None:
        """Refused: a DeGrooteFregly2016Muscle's fiber length follows from its path and tendon force."""
        raise ValueError(f"{self!r}.set_fiber_length: the fiber length is not a state variable of a "
                         "DeGrooteFregly2016Muscle (set its normalized_tendon_force, or equilibrate it)")
