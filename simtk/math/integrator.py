"""Integrator: the base of every time integrator (Simbody's ``Integrator``).

An integrator owns one *advanced* State that it moves forward in time. Each step is attempted on
that State (stage evaluations write y and t into it and realize it to Acceleration) while the last
good step's t, y and ydot are kept in preallocated arrays, so a rejected step is undone by writing
them back. Discrete variables are never touched by an attempt: they change only through
``State.auto_update_discrete_variables`` after a successful step, or in event handlers.

Accuracy (Simbody's meaning)
----------------------------
The local error estimate ``e`` of a step is scaled per variable by the System's unit weights ``w``
(``calc_q_weights``, ``calc_u_weights``, ``calc_z_weights``) and made relative for large values::

    s_i = w_i |e_i| / max(1, w_i max(|y0_i|, |y1_i|))

and the step is accepted when ``err = RMS(s) <= accuracy`` (or ``max(s)`` with the infinity norm).
With ``p = get_method_min_order()`` (the estimate is ``O(h**(p+1))``), an accepted step of size h
predicts the next as ``h min(5, max(0.2, 0.9 (accuracy/err)**(1/(p+1))))`` (5 h when err is 0), at
most the maximum step size; a rejected attempt is tried again with ``h min(0.5, max(0.1, 0.9
(accuracy/err)**(1/(p+1))))``. A step shortened to land on a report or event time does not shrink the
prediction. Both time loops follow this rule.
Constraint errors (``State.get_q_err``/``get_u_err`` divided by the System's unit tolerances) are kept
below the constraint tolerance (``accuracy / 10`` unless set) by ``System.project`` after each step.
The multibody projection, once it runs, iterates until the largest error is at most 1/100 of the
tolerance (or stops improving below it), so that the steps after it have room to drift before the
next one is needed.

Events
------
After every successful step the witness functions of the System's triggered event handlers and
reporters are evaluated; a sign change in an allowed direction is localized by root finding on
re-attempted steps from the step's start, to a time window of ``localization_window * accuracy``
(see ``EventTriggerInfo``). The integrator then stops at the window's upper end (the advanced State
is just after the event) and ``step_to`` returns ``ReachedEventTrigger``; ``get_triggered_events()``
names the handlers and reporters that triggered. Scheduled events are passed to ``step_to`` as
``scheduled_event_time``; steps land on it exactly.
"""
from __future__ import annotations

import math
from enum import IntEnum

import numpy as np

from .. import _core
from .._real import real_float
from ..common.errors import ConstraintViolationError, NonFiniteForceError, StepAdjustment
from ..common.events import SubsystemEventTrigger, TriggeredEventHandler, TriggeredEventReporter
from ..common.stage import ACCELERATION, INSTANCE, MODEL, TIME, VELOCITY, Stage
from ..common.state import State
from ..common.system import System
from ._compiled_loop import CompiledLoopChoice
from ._continuation import IntegratorContinuation
from ._divergence import DivergenceWatch
from ._event_localization import _EventLocalization
from ._integrator_statistics import IntegratorStatistics
from .integrator_errors import (
    IntegratorError,
    NonFiniteDerivativeError,
    SimulationDivergedError,
    SimulationOverError,
    StepSizeTooSmallError,
    diverged_error,
)

__all__ = [
    "Integrator",
    "IntegratorError",
    "StepSizeTooSmallError",
    "NonFiniteDerivativeError",
    "SimulationDivergedError",
    "SimulationOverError",
]

_EPS = float(np.finfo(float).eps)  # a Python float: step sizes stay Python floats on either path
_INF = math.inf


def _positive(value, where: str, allow_zero: bool = False, allow_inf: bool = False) -> float:
    v = real_float(value, where)  # (a TypeError for "1e-3" or a complex: float() would parse the string)
    if math.isnan(v) or (math.isinf(v) and not allow_inf) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{where}: expected a {'non-negative' if allow_zero else 'positive'} "
                         f"{'' if allow_inf else 'finite '}number, got {value!r}")
    return v


class Integrator(IntegratorStatistics, CompiledLoopChoice, _EventLocalization, DivergenceWatch,
                 IntegratorContinuation):
    """Base class of the integrators: settings, step-size control, events and statistics.

    Subclasses implement ``_attempt_step(t1)`` (one step from the saved start ``(t0, y0, f0)`` to
    ``t1``, writing ``y1`` into the advanced State and the local error estimate into ``self._err``)
    and set the class attributes ``_method_name``, ``_order`` (of the propagated solution),
    ``_error_order`` (order of the lower member of the embedded pair: the error is
    ``O(h**(_error_order + 1))``) and ``_has_error_control``.

    Parameters
    ----------
    system : System
        The System whose States this integrator advances.
    """

    class SuccessfulStepStatus(IntEnum):
        """Why ``step_to`` returned (Simbody's ``Integrator::SuccessfulStepStatus``)."""

        InvalidSuccessfulStepStatus = -1
        ReachedReportTime = 1
        ReachedEventTrigger = 2
        ReachedScheduledEvent = 3
        TimeHasAdvanced = 4
        ReachedStepLimit = 5
        EndOfSimulation = 6
        StartOfContinuousInterval = 7

    class TerminationReason(IntEnum):
        """Why the simulation ended (Simbody's ``Integrator::TerminationReason``)."""

        InvalidTerminationReason = -1
        ReachedFinalTime = 1
        AnUnrecoverableErrorOccurred = 2
        EventHandlerRequestedTermination = 3

    _method_name = "Integrator"
    _order = 1
    _error_order = 1
    _has_error_control = True
    _num_stages = 1  # rows of the stage-derivative buffer K

    def __init__(self, system: System):
        if not isinstance(system, System):
            raise TypeError(f"{type(self).__name__}: expected a System, got {type(system).__name__}")
        self._system = system
        self._accuracy = 1e-3
        self._cons_tol = None  # None: accuracy / 10
        self._fixed_step = None
        self._initial_step = None
        self._min_step = 0.0
        self._max_step = _INF
        self._final_time = _INF
        self._project_every_step = False
        self._use_infinity_norm = False
        self._step_limit = 0  # 0: none
        self._return_every_internal_step = False
        self._adv: State | None = None
        self._use_compiled = True
        self._loop = None  # the compiled loop of this interval (CompiledLoopChoice)
        self._loop_reasons: list[str] = ["not initialized"]
        self._reset_statistics()
        self._sim_over = False
        self._termination = Integrator.TerminationReason.InvalidTerminationReason
        self._triggered_events: list = []
        self._event_window = (math.nan, math.nan)

    # ------------------------------------------------------------------ settings
    def set_accuracy(self, accuracy: float) -> None:
        """Target weighted RMS local error per step (default 1e-3)."""
        self._accuracy = _positive(accuracy, f"{type(self).__name__}.set_accuracy")
        if self._accuracy >= 1:
            raise ValueError(f"{type(self).__name__}.set_accuracy: accuracy must be below 1, got {accuracy!r}")

    def get_accuracy_in_use(self) -> float:
        return self._accuracy

    def set_constraint_tolerance(self, tolerance: float) -> None:
        """Largest acceptable weighted constraint error (default accuracy / 10)."""
        self._cons_tol = _positive(tolerance, f"{type(self).__name__}.set_constraint_tolerance")

    def get_constraint_tolerance_in_use(self) -> float:
        return self._cons_tol if self._cons_tol is not None else self._accuracy / 10

    def set_fixed_step_size(self, h: float) -> None:
        """Take every step with size ``h`` (shorter only to land on a report, event or final time, or to
        respect the maximum step size); error control is off. ``None`` returns to variable steps."""
        self._fixed_step = None if h is None else _positive(h, f"{type(self).__name__}.set_fixed_step_size")

    def set_initial_step_size(self, h: float) -> None:
        """The first step size to try (default: estimated from the derivatives and accuracy)."""
        self._initial_step = _positive(h, f"{type(self).__name__}.set_initial_step_size")

    def set_minimum_step_size(self, h: float) -> None:
        """Error control may not go below this step size (default: a few ulps of t)."""
        self._min_step = _positive(h, f"{type(self).__name__}.set_minimum_step_size", allow_zero=True)

    def set_maximum_step_size(self, h: float) -> None:
        """No step is longer than this (default unlimited)."""
        self._max_step = _positive(h, f"{type(self).__name__}.set_maximum_step_size", allow_inf=True)

    def set_final_time(self, t: float) -> None:
        """The simulation ends here: ``step_to`` returns ``EndOfSimulation`` on reaching it."""
        try:
            v = float(t)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{type(self).__name__}.set_final_time: expected a real number, got {t!r}") from exc
        if math.isnan(v):
            raise ValueError(f"{type(self).__name__}.set_final_time: got NaN")
        self._final_time = v

    def set_project_every_step(self, flag: bool) -> None:
        """Call ``System.project`` after every step, not only when constraint errors are too large."""
        self._project_every_step = bool(flag)

    def set_use_infinity_norm(self, flag: bool) -> None:
        """Use the largest weighted error instead of the RMS for the error test."""
        self._use_infinity_norm = bool(flag)

    def set_internal_step_limit(self, n: int) -> None:
        """Return ``ReachedStepLimit`` after ``n`` internal steps in one ``step_to`` (0: no limit)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{type(self).__name__}.set_internal_step_limit: expected a count >= 0, got {n!r}")
        self._step_limit = int(n)

    def set_return_every_internal_step(self, flag: bool) -> None:
        """Return from ``step_to`` after every internal step (``TimeHasAdvanced``), and report the start
        of each continuous interval (``StartOfContinuousInterval``)."""
        self._return_every_internal_step = bool(flag)

    # ------------------------------------------------------------------ queries
    def get_method_name(self) -> str:
        return self._method_name

    def get_method_min_order(self) -> int:
        return self._error_order if self._has_error_control else self._order

    def get_method_max_order(self) -> int:
        return self._order

    def method_has_error_control(self) -> bool:
        return self._has_error_control

    def _need_init(self, what: str) -> State:
        if self._adv is None:
            raise IntegratorError(f"{type(self).__name__}.{what}: call initialize(state) first")
        return self._adv

    def get_state(self) -> State:
        """The State at ``get_time()`` (the advanced State for integrators that step onto report times)."""
        return self._need_init("get_state()")

    def get_advanced_state(self) -> State:
        """The State the integrator has advanced to (read it; change it only through ``upd_advanced_state``)."""
        return self._need_init("get_advanced_state()")

    def upd_advanced_state(self) -> State:
        """The advanced State, for event handlers to change; call ``reinitialize`` afterwards."""
        return self._need_init("upd_advanced_state()")

    def get_time(self) -> float:
        return self.get_state().get_time()

    def get_advanced_time(self) -> float:
        return self.get_advanced_state().get_time()

    def is_simulation_over(self) -> bool:
        return self._sim_over

    def get_termination_reason(self) -> "Integrator.TerminationReason":
        if not self._sim_over:
            raise IntegratorError(f"{type(self).__name__}.get_termination_reason(): the simulation is not over")
        return self._termination

    def get_triggered_events(self) -> list:
        """The triggered event handlers and reporters whose event ended the last ``step_to``."""
        return list(self._triggered_events)

    def get_event_window(self) -> tuple[float, float]:
        """The time window ``(t_low, t_high)`` that brackets the last triggered event."""
        return self._event_window

    # ------------------------------------------------------------------ initialization
    def initialize(self, state: State) -> None:
        """Start from a copy of ``state``: realize it, project it onto the constraints, evaluate derivatives.

        Raises
        ------
        NonFiniteDerivativeError
            If the derivatives at the initial State are not all finite.
        """
        if not isinstance(state, State):
            raise TypeError(f"{type(self).__name__}.initialize: expected a State, got {type(state).__name__}")
        self._system.realize(state, Stage.Model)  # also refuses a State of another System
        pending = self._pending_continuation_for(state)  # set_continuation() before initialize
        self._adv = state.copy()
        self._reset_statistics()
        self._sim_over = False
        self._termination = Integrator.TerminationReason.InvalidTerminationReason
        self._triggered_events = []
        self._h_pred = math.nan
        self._setup_interval(Stage.Model)
        self._watch_start()
        self._apply_pending(pending)

    def reinitialize(self, stage, should_terminate: bool = False) -> None:
        """Restart after the advanced State was changed (by an event handler) at ``stage`` or above.

        Lower stages need more work: at Model or below the variables may have been laid out anew.
        ``should_terminate`` ends the simulation (``EventHandlerRequestedTermination``).
        """
        self._need_init("reinitialize()")
        if should_terminate:
            self._sim_over = True
            self._termination = Integrator.TerminationReason.EventHandlerRequestedTermination
        self._setup_interval(Stage(int(stage)))

    def _setup_interval(self, stage: Stage) -> None:
        """Begin a continuous interval at the advanced State as it is now."""
        system, s = self._system, self._adv
        system.realize(s, Stage.Instance)
        # What belongs to the instance (the witnesses, constant unit weights, the time loop's choice) is
        # kept across a restart above Instance (a controller's new inputs, an event handler's change of
        # a discrete variable) of the same State: only the restart's numbers are computed again.
        key = self.__dict__.get("_instance_key")
        same_instance = (stage > INSTANCE and key is not None and key[0] is s and key[1] == s._inval_epoch[INSTANCE]
                         and getattr(self, "_ny", -1) == s.get_ny())
        self._instance_key = (s, s._inval_epoch[INSTANCE])
        if not same_instance:
            self._collect_triggered()  # subsystem trigger slots belong to the Instance layout
        ny = s.get_ny()
        if stage <= MODEL or getattr(self, "_ny", -1) != ny:
            self._allocate(ny)
        self._has_constraints = (s.get_nq_err() + s.get_nu_err()) > 0
        if self._has_constraints or self._project_every_step:
            self._project(s)
        self._realize_derivatives_or_raise("at the start of a continuous interval")
        if not same_instance or self._weights_vary:
            self._compute_weights()
        self._save_start()
        # Where this interval began, to tell a diverging simulation from a singular model on failure.
        self._interval_start = (self._t0, self._y0.copy(), self._n_taken)
        self._w0[:] = self._witness_values(self._w0)
        self._sampler = s.copy() if self._witnesses else None
        if stage <= INSTANCE or not math.isfinite(self._h_pred):
            self._h_pred = self._estimate_initial_step()
        self._start_of_interval = True
        self._setup_loop(reuse=same_instance)

    def _allocate(self, ny: int) -> None:
        """Preallocate every per-step buffer for ``ny`` continuous variables."""
        self._ny = ny
        self._K = np.zeros((max(self._num_stages, 1), ny))
        self._K_rows = [self._K[i] for i in range(self._K.shape[0])]
        self._f0 = self._K_rows[0]  # the start derivative is always stage 0
        self._y0 = np.zeros(ny)
        self._err = np.zeros(ny)
        self._wy = np.ones(ny)
        self._t0 = 0.0
        self._allocate_method(ny)

    def _allocate_method(self, ny: int) -> None:
        """Subclass hook: preallocate method-specific buffers."""

    def __setstate__(self, state: dict) -> None:
        # Pickling copies the stage rows and the start derivative apart from K: make them views of it again.
        self.__dict__.update(state)
        K = state.get("_K")
        if K is not None:
            self._K_rows = [K[i] for i in range(K.shape[0])]
            self._f0 = self._K_rows[0]

    def _collect_triggered(self) -> None:
        """The witnesses: triggered handlers and reporters, and every subsystem trigger slot (Instance)."""
        system = self._system
        items = [h for h in system.get_event_handlers() if isinstance(h, TriggeredEventHandler)]
        items += [r for r in system.get_event_reporters() if isinstance(r, TriggeredEventReporter)]
        s = self._adv
        for sub in system._subsystems:
            for stage in range(TIME, ACCELERATION + 1):
                items += [SubsystemEventTrigger(sub, stage, k) for k in range(sub.get_num_event_triggers(s, stage))]
        self._witnesses = items
        self._w_stage = [int(w.get_required_stage()) for w in items]
        self._w_rising = [w.get_trigger_info().should_trigger_on_rising_sign_transition() for w in items]
        self._w_falling = [w.get_trigger_info().should_trigger_on_falling_sign_transition() for w in items]
        self._w0 = np.zeros(len(items))
        self._w1 = np.zeros(len(items))
        self._wl = np.zeros(len(items))

    def _compute_weights(self) -> None:
        system, s = self._system, self._adv
        nq, nu = s.get_nq(), s.get_nu()
        wy = self._wy
        wy[:nq] = system.calc_q_weights(s)
        wy[nq:nq + nu] = system.calc_u_weights(s)
        wy[nq + nu:] = system.calc_z_weights(s)
        if not (_core.all_finite(wy) and (wy > 0).all()):
            raise IntegratorError(f"{type(self).__name__}: the System's unit weights must be positive and finite, "
                                  f"got {wy}")
        # Weights that a System computes from the State (multibody: through N(q) of its quaternions) are
        # refreshed every step; constant ones are computed once per interval (no allocation per step).
        self._weights_vary = system._unit_weights_vary(s)

    def _estimate_initial_step(self) -> float:
        if self._fixed_step is not None:
            return self._fixed_step
        if self._initial_step is not None:
            return min(self._initial_step, self._max_step)
        wy, n = self._wy, self._ny
        # weighted RMS of y0 and of its derivative (np.dot: one call each, where np.mean costs several)
        v = wy * self._y0
        d0 = math.sqrt(float(np.dot(v, v)) / n) if n else 0.0
        v = wy * self._f0
        d1 = math.sqrt(float(np.dot(v, v)) / n) if n else 0.0
        scale = max(d0, 1.0) / d1 if d1 > 1e-12 else 1.0
        h = 0.1 * scale * self._accuracy ** (1.0 / (self._error_order + 1))
        return min(h, self._max_step)

    # ------------------------------------------------------------------ evaluation helpers
    def _set_ty(self, t: float) -> np.ndarray:
        """Put the advanced State at time ``t`` and hand out its writable y (invalidates Time)."""
        s = self._adv
        s.set_time(t)
        return s.upd_y()

    def _realize_derivatives(self):
        """Realize the advanced State to Acceleration; its ydot, or None when not all finite."""
        s = self._adv
        self._system.realize(s, ACCELERATION)
        self._n_realize += 1
        yd = s.get_ydot()
        if not _core.all_finite(yd):
            self._nonfinite = (s.get_time(), _core.first_non_finite(yd), float(yd[_core.first_non_finite(yd)]))
            return None
        return yd

    def _realize_velocity(self) -> np.ndarray:
        """Realize the advanced State to Velocity (for qdot only) and return qdot."""
        s = self._adv
        self._system.realize(s, VELOCITY)
        self._n_realize += 1
        return s.get_qdot()

    def _describe_nonfinite(self) -> str:
        t, i, v = self._nonfinite
        s = self._adv
        nq, nu = s.get_nq(), s.get_nu()
        if i < nq:
            what = f"qdot[{i}]"
        elif i < nq + nu:
            what = f"udot[{i - nq}]"
        else:
            what = f"zdot[{i - nq - nu}]"
        return f"{what} = {v} at t = {t!r}"

    def _realize_derivatives_or_raise(self, when: str) -> None:
        if self._realize_derivatives() is None:
            raise NonFiniteDerivativeError(
                f"{type(self).__name__}: the System's derivative {self._describe_nonfinite()} is not finite {when}")

    def _save_start(self) -> None:
        """Record the advanced State (realized to Acceleration) as the start of the next step."""
        s = self._adv
        self._t0 = s.get_time()
        self._y0[:] = s.get_y()
        self._f0[:] = s.get_ydot()

    def _restore_start(self) -> None:
        """Put the advanced State back to the last good step (t0, y0) and realize it again."""
        y = self._set_ty(self._t0)
        y[:] = self._y0
        self._system.realize(self._adv, ACCELERATION)
        self._n_realize += 1

    def _error_norm(self) -> float:
        """The weighted (RMS or max) norm of ``self._err`` relative to ``y0`` and the current y."""
        # Summed in index order by the compiled core (not by a BLAS), as the compiled loop sums it.
        return _core.error_norm(self._err, self._y0, self._adv.get_y(), self._wy, self._use_infinity_norm)

    def _constraint_error_norm(self, s: State) -> float:
        system = self._system
        worst = 0.0
        # summed in index order by the compiled core, as the compiled time loop sums the quaternion errors
        qe = s.get_q_err()
        if len(qe):
            worst = max(worst, _core.constraint_norm(qe / system.calc_q_err_weights(s), self._use_infinity_norm))
        ue = s.get_u_err()
        if len(ue):
            worst = max(worst, _core.constraint_norm(ue / system.calc_u_err_weights(s), self._use_infinity_norm))
        return worst

    def _project(self, s: State) -> bool:
        """Project onto the constraint manifold if needed (or always when asked); True if y changed."""
        system = self._system
        tol = self.get_constraint_tolerance_in_use()
        if not self._project_every_step:
            system.realize(s, VELOCITY)
            if self._constraint_error_norm(s) <= tol:
                return False
        self._n_project += 1
        return bool(system.project(s, tol))

    # ------------------------------------------------------------------ the method (subclasses)
    def _attempt_step(self, t1: float) -> bool:
        """Step from the saved start to ``t1``: write y1 into the advanced State and the error estimate
        into ``self._err``. Return False if a derivative was not finite."""
        raise NotImplementedError

    # ------------------------------------------------------------------ one successful step
    def _min_step_at(self, t: float) -> float:
        return max(self._min_step, 16 * _EPS * max(1.0, abs(t)))

    def _take_one_step(self, t_max: float) -> None:
        """Advance by one successful step, landing exactly on ``t_max`` when the step reaches it."""
        t0 = self._t0
        fixed = self._fixed_step
        controlled = fixed is None and self._has_error_control
        h = min(fixed, self._max_step) if fixed is not None else max(min(self._h_pred, self._max_step), self._min_step)
        acc = self._accuracy
        p1 = 1.0 / (self._error_order + 1)
        last_nonfinite = False
        element_error = None  # a force element's non-finite force in the last failed attempt
        try:
            while True:
                remaining = t_max - t0
                if h * 1.05 >= remaining:
                    h_try, t1 = remaining, t_max  # land exactly, no rounding drift
                elif not fixed and 2 * h > remaining:
                    h_try = 0.5 * remaining
                    t1 = t0 + h_try
                else:
                    h_try, t1 = h, t0 + h
                self._n_attempted += 1
                try:
                    try:
                        ok = self._attempt_step(t1)
                    except NonFiniteForceError as exc:
                        # A trial step may carry the State where an element's force is not finite (a
                        # muscle's curve beyond its range): with error control that step is refused and
                        # a smaller one tried, as a non-finite derivative is (Simbody's integrators
                        # reject such an attempt); the element is named if no step is small enough.
                        if not controlled:
                            raise
                        element_error, ok = exc, False
                        self._nonfinite = (t1, -1, math.nan)
                    accepted = ok and not controlled
                    if accepted:
                        factor = 1.0
                    elif ok:
                        err = self._error_norm()
                        accepted = err <= acc
                        if accepted:
                            factor = 5.0 if err == 0 else min(5.0, max(0.2, 0.9 * (acc / err) ** p1))
                    if accepted and self._adv._stage < ACCELERATION:
                        # The end of the step is evaluated here, where an element may still veto it.
                        try:
                            end = self._realize_derivatives()
                        except NonFiniteForceError as exc:
                            if not controlled:
                                raise
                            element_error, ok, accepted = exc, False, False
                            self._nonfinite = (t1, -1, math.nan)
                        else:
                            if end is None:
                                raise NonFiniteDerivativeError(
                                    f"{self._method_name}: the System's derivative {self._describe_nonfinite()} is "
                                    f"not finite at the end of an accepted step; the State is left at t = {t0!r}")
                    if accepted:
                        break
                except StepAdjustment as adj:
                    h = self._vetoed(adj, h_try, t0)
                    continue
                if ok:
                    self._n_err_fail += 1
                    last_nonfinite = False
                    factor = min(0.5, max(0.1, 0.9 * (acc / err) ** p1)) if math.isfinite(err) else 0.1
                else:
                    self._n_nonfinite_fail += 1
                    last_nonfinite = True
                    factor = 0.25
                    if element_error is not None and self._nonfinite[1] != -1:
                        element_error = None  # this attempt failed on a derivative, not an element
                if fixed is not None or not self._has_error_control:
                    raise NonFiniteDerivativeError(
                        f"{self._method_name}: the System's derivative {self._describe_nonfinite()} is not finite "
                        f"during a fixed step of size {h_try!r} from t = {t0!r}; the State is left at t = {t0!r}")
                h = h_try * factor
                h_min = self._min_step_at(t0)
                if h < h_min and h_try > h_min and h_try < remaining:
                    h = h_min  # one last try at the minimum
                elif h < h_min:
                    if last_nonfinite and element_error is not None:
                        element_error.add_note(f"{self._method_name}: the force stayed non-finite with steps reduced "
                                               f"to {h_try!r} (minimum step size {h_min!r}) from t = {t0!r}; the "
                                               f"State is left at t = {t0!r}")
                        raise element_error
                    if last_nonfinite:
                        raise NonFiniteDerivativeError(
                            f"{self._method_name}: the System's derivative {self._describe_nonfinite()} is not finite "
                            f"even with steps reduced to {h_try!r} (minimum step size {h_min!r}) from t = {t0!r}; "
                            f"the State is left at t = {t0!r}")
                    raise StepSizeTooSmallError(
                        f"{self._method_name}: meeting accuracy {acc!r} needs a step below the minimum step size "
                        f"{h_min!r} at t = {t0!r} (last error norm {err!r} with step {h_try!r}); the State is left "
                        f"at t = {t0!r}")
        except BaseException as exc:
            self._undo_failed_step(exc, h_try)
            raise
        self._n_taken += 1
        self._h_prev = h_try
        if self._n_taken == 1:
            self._h_first = h_try
        if fixed is None:
            h_next = h_try * factor
            if t1 == t_max and h_try < h:
                h_next = max(h_next, h)  # a step cut short for a report keeps the natural size
            self._h_pred = min(h_next, self._max_step)

    def _undo_failed_step(self, exc: BaseException, h_try: float) -> None:
        """A step of size ``h_try`` failed with ``exc``: put the State back at the last good step; a
        failure of a diverging run raises SimulationDivergedError (from ``exc``). The caller raises ``exc``
        otherwise. (The compiled loop's failed steps end here too.)"""
        self._restore_start()
        if isinstance(exc, (FloatingPointError, NonFiniteDerivativeError)):
            diverged = diverged_error(self, h_try, exc)
            if diverged is not None:
                raise diverged from exc

    def _vetoed(self, adj: StepAdjustment, h_try: float, t0: float) -> float:
        """The step to retry after an element's veto; raises below the minimum step.

        Every method starts its step from the saved (t0, y0, f0), so a retry needs nothing undone.
        """
        self._n_adjust += 1
        self._last_adjustment = adj.reason or str(adj)
        h = h_try * adj.scaling
        h_min = self._min_step_at(t0)
        if h < h_min:
            raise StepSizeTooSmallError(
                f"{self._method_name}: a step adjustment asked for a step of {h!r}, below the minimum step size "
                f"{h_min!r}, at t = {t0!r} (reason: {self._last_adjustment}); the State is left at t = {t0!r}") from adj
        return h

    def _finish_step(self) -> None:
        """After an accepted step (or localized event): project, auto-update, save as the new start."""
        s = self._adv
        if self._has_constraints or self._project_every_step:
            try:
                if self._project(s):
                    self._realize_derivatives_or_raise(f"after projection at t = {s.get_time()!r}")
            except (FloatingPointError, NonFiniteDerivativeError, ConstraintViolationError) as exc:
                # A step that cannot be projected (not finite, or too far off the constraints: a
                # diverging run) is undone like a failed step: the State goes back to the last good
                # step, and divergence is named as such.
                self._restore_start()
                self._n_taken -= 1  # the step is undone
                diverged = diverged_error(self, self._h_prev, exc)
                if diverged is not None:
                    raise diverged from exc
                raise
        mark = s.get_invalidation_mark()
        s.auto_update_discrete_variables()
        if s.get_invalidation_mark() != mark and self._witnesses:
            self._sampler = s.copy()  # keep its discrete variables equal to the advanced State's
        if s._stage < ACCELERATION:
            self._realize_derivatives_or_raise(f"after updating discrete variables at t = {s.get_time()!r}")
        if self._weights_vary:
            self._compute_weights()
        self._save_start()
        self._watch()

    # ------------------------------------------------------------------ event witnesses
    def _check_stepping(self, where: str) -> State:
        s = self._need_init(where)
        if self._sim_over:
            raise SimulationOverError(
                f"{type(self).__name__}.{where}: the simulation is over ({self._termination.name}) at "
                f"t = {self.get_time()!r}; initialize() again to start a new one")
        return s

    def step_to(self, report_time: float, scheduled_event_time: float = _INF) -> "Integrator.SuccessfulStepStatus":
        """Advance until ``report_time``, a scheduled event, a triggered event, the final time, or the step limit.

        Returns the reason as ``Integrator.SuccessfulStepStatus``. Steps land exactly on
        ``report_time``, ``scheduled_event_time`` and the final time.
        """
        S = Integrator.SuccessfulStepStatus
        s = self._check_stepping("step_to()")
        self._renew_after_unpickling()
        report_time = float(report_time)
        scheduled_event_time = float(scheduled_event_time)
        t = s.get_time()
        if math.isnan(report_time) or report_time < t:
            raise ValueError(f"{type(self).__name__}.step_to: report time {report_time!r} is before the current "
                             f"time {t!r}")
        if math.isnan(scheduled_event_time) or scheduled_event_time < t:
            raise ValueError(f"{type(self).__name__}.step_to: scheduled event time {scheduled_event_time!r} is before "
                             f"the current time {t!r}")
        self._triggered_events = []
        if self._start_of_interval and self._return_every_internal_step:
            self._start_of_interval = False
            return S.StartOfContinuousInterval
        self._start_of_interval = False
        if t >= self._final_time:
            return self._end_simulation()
        if t >= report_time:
            return S.ReachedReportTime
        t_event = scheduled_event_time if scheduled_event_time > t else _INF
        n_steps = 0
        while True:
            t_max = min(report_time, t_event, self._final_time)
            if self._loop is not None:
                limit = 1 if self._return_every_internal_step else (
                    self._step_limit - n_steps if self._step_limit else 0)
                chunk = self._watch_chunk()  # the loop returns at the divergence watch's check points
                steps, to_python = self._loop.run(self, t_max, min(limit or chunk, chunk or limit))
                if steps:
                    n_steps += steps
                    self._watch()
                    status = self._status_after_step(report_time, t_event, n_steps)
                    if status is not None:
                        return status
                    if not to_python:
                        continue
                # no step taken, or the next one needs Python: the Python path takes it
            self._take_one_step(t_max)
            n_steps += 1
            t1 = self._adv.get_time()
            if self._witnesses:
                self._witness_values(self._w1)
                hits = self._crossings(self._w0, self._w1)
                bracket = (self._t0, self._w0, t1, self._w1, hits) if hits else self._sample_interior(t1)
                if bracket is not None:
                    t_low, t_high, hits = self._localize(*bracket)
                    self._finish_step()
                    self._w0[:] = self._w1
                    self._triggered_events = [self._witnesses[i] for i in hits]
                    self._event_window = (t_low, t_high)
                    return S.ReachedEventTrigger
                self._finish_step()
                self._w0[:] = self._w1
            else:
                self._finish_step()
            status = self._status_after_step(report_time, t_event, n_steps)
            if status is not None:
                return status

    def _status_after_step(self, report_time: float, t_event: float,
                           n_steps: int) -> "Integrator.SuccessfulStepStatus | None":
        """Why ``step_to`` returns after a successful step, or None to go on."""
        S = Integrator.SuccessfulStepStatus
        t1 = self._adv.get_time()
        if t1 >= t_event:
            return S.ReachedScheduledEvent
        if t1 >= self._final_time:
            return self._end_simulation()
        if t1 >= report_time:
            return S.ReachedReportTime
        if self._return_every_internal_step:
            return S.TimeHasAdvanced
        if self._step_limit and n_steps >= self._step_limit:
            return S.ReachedStepLimit
        return None

    def _end_simulation(self) -> "Integrator.SuccessfulStepStatus":
        self._sim_over = True
        self._termination = Integrator.TerminationReason.ReachedFinalTime
        return Integrator.SuccessfulStepStatus.EndOfSimulation

    def step_by(self, dt: float, scheduled_event_time: float = _INF) -> "Integrator.SuccessfulStepStatus":
        """``step_to(get_time() + dt)``."""
        return self.step_to(self.get_time() + _positive(dt, f"{type(self).__name__}.step_by", allow_zero=True),
                            scheduled_event_time)

    def __repr__(self) -> str:
        t = "uninitialized" if self._adv is None else f"t={self._adv.get_time():g}"
        return f"<{type(self).__name__} {self._method_name}, accuracy={self._accuracy:g}, {t}>"
