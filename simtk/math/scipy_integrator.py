"""ScipyIntegrator: any ``scipy.integrate.OdeSolver`` (BDF, Radau, LSODA, ...) driving a System."""
from __future__ import annotations

import math

import numpy as np
import scipy.integrate as _si

from .. import _core
from ..common.stage import ACCELERATION
from ..common.state import State
from .integrator import Integrator, IntegratorError, NonFiniteDerivativeError, StepSizeTooSmallError

__all__ = ["ScipyIntegrator"]

_METHODS = {name: getattr(_si, name) for name in ("BDF", "Radau", "LSODA", "RK45", "RK23", "DOP853")}
_ORDERS = {"BDF": (1, 5), "Radau": (5, 5), "LSODA": (1, 12), "RK45": (4, 5), "RK23": (2, 3), "DOP853": (7, 8)}


class _NonFinite(Exception):
    pass


class ScipyIntegrator(Integrator):
    """Integrate with a SciPy ODE solver, for stiff systems in particular.

    The solver sees ``dy/dt = f(t, y)`` evaluated by realizing a private scratch copy of the State to
    Acceleration. Its tolerances follow the accuracy: ``rtol = accuracy`` and
    ``atol_i = accuracy / w_i`` with the System's unit weights ``w``, which is the scipy form of the
    weighted, relative-for-large-values error measure the other integrators use (but scipy applies
    it to its own error estimate and norm).

    The solver takes its own steps; report times are served by its dense output (``get_state()``
    is then an interpolated State at the report time, ``get_advanced_state()`` the solver's), while
    scheduled events and the final time bound the solver's steps so they are reached exactly. A
    triggered event is localized on the dense output, and the advanced State is backed up to just
    after it; the solver restarts from there.

    Parameters
    ----------
    system : System
    method : str or type
        ``"BDF"``, ``"Radau"``, ``"LSODA"``, ``"RK45"``, ``"RK23"``, ``"DOP853"``, or an
        ``OdeSolver`` subclass.
    **options
        Passed to the solver (e.g. ``jac_sparsity``).

    Notes
    -----
    ``get_num_steps_attempted()`` equals the steps taken (scipy does not report rejected steps)
    and ``get_num_error_test_failures()`` stays 0.
    """

    _has_error_control = True

    def __init__(self, system, method="BDF", **options):
        super().__init__(system)
        if isinstance(method, str):
            if method not in _METHODS:
                raise ValueError(f"ScipyIntegrator: unknown method {method!r}; use one of {sorted(_METHODS)} or an "
                                 "OdeSolver subclass")
            self._solver_cls = _METHODS[method]
            name = method
        elif isinstance(method, type) and issubclass(method, _si.OdeSolver):
            self._solver_cls = method
            name = method.__name__
        else:
            raise TypeError(f"ScipyIntegrator: method must be a name or an OdeSolver subclass, got {method!r}")
        self._method_name = f"Scipy{name}"
        self._error_order, self._order = _ORDERS.get(name, (1, 1))
        self._options = dict(options)
        self._solver = None

    # ------------------------------------------------------------------ interval setup
    def _allocate_method(self, ny: int) -> None:
        self._scratch = None
        self._interp = None

    def _setup_interval(self, stage) -> None:
        super()._setup_interval(stage)
        self._solver = None
        self._dense = None
        self._copy_helpers()
        self._t_checked = self._t0  # events and reports delivered up to here
        self._use_interp = False

    def _continuation_extra(self) -> dict:
        raise IntegratorError(f"{type(self).__name__}: its continuation (the step-size history inside scipy's "
                              "solver) cannot be saved; a run resumed from a saved State restarts the solver")

    def _copy_helpers(self) -> None:
        # Private copies share the advanced State's discrete variables (copied by value).
        self._scratch = self._adv.copy()
        self._interp = self._adv.copy()

    def get_state(self) -> State:
        s = self._need_init("get_state()")
        return self._interp if self._use_interp else s

    # ------------------------------------------------------------------ the right-hand side
    def _rhs(self, t, y):
        s = self._scratch
        s.set_time(t)
        s.upd_y()[:] = y
        self._system.realize(s, ACCELERATION)
        self._n_realize += 1
        yd = s.get_ydot()
        if not _core.all_finite(yd):
            self._nonfinite = (float(t), _core.first_non_finite(yd), float(yd[_core.first_non_finite(yd)]))
            raise _NonFinite()
        return np.array(yd)

    def _make_solver(self, t_bound: float) -> None:
        s = self._adv
        atol = self._accuracy / self._wy
        kw = dict(rtol=max(self._accuracy, 100 * np.finfo(float).eps), atol=atol, vectorized=False)
        if math.isfinite(self._max_step):
            kw["max_step"] = self._max_step
        if self._initial_step is not None and self._n_taken == 0:
            kw["first_step"] = min(self._initial_step, t_bound - s.get_time())
        kw.update(self._options)
        try:
            self._solver = self._solver_cls(self._rhs, s.get_time(), np.array(s.get_y()), t_bound, **kw)
        except _NonFinite:
            raise NonFiniteDerivativeError(
                f"{self._method_name}: the System's derivative {self._describe_nonfinite()} is not finite") from None
        self._bound = t_bound

    # ------------------------------------------------------------------ interpolation
    def _interp_to(self, t: float) -> State:
        s = self._interp
        s.set_time(t)
        s.upd_y()[:] = self._dense(t)
        self._system.realize(s, ACCELERATION)
        self._n_realize += 1
        return s

    def _witness_at(self, s: State, out: np.ndarray) -> np.ndarray:
        adv = self._adv
        self._adv = s  # _witness_values reads self._adv
        try:
            return self._witness_values(out)
        finally:
            self._adv = adv

    def _localize_dense(self, t_low, w_low, t_high, w_high, hits):
        """Bracket the earliest allowed sign change in [t_low, t_high] on the dense output."""
        window = max(self._localization_window(hits), 4 * np.finfo(float).eps * max(1.0, abs(t_high)))
        wl, wh = w_low.copy(), w_high.copy()
        side, fl, fh = 0, 1.0, 1.0
        for _ in range(200):
            width = t_high - t_low
            if width <= window:
                break
            best = None
            for i in hits:
                a, b = wl[i] * fl, wh[i] * fh
                tc = t_low + width * (a / (a - b)) if a != b else t_low + 0.5 * width
                best = tc if best is None or tc < best else best
            delta = min(0.25 * window, 0.25 * width)
            tc = min(max(best, t_low + delta), t_high - delta)
            wc = self._witness_at(self._interp_to(tc), np.empty(len(self._witnesses)))
            new_hits = self._crossings(wl, wc)
            if new_hits:
                t_high, wh, hits = tc, wc, new_hits
                fh, fl, side = 1.0, (fl * 0.5 if side == 1 else 1.0), 1
            else:
                t_low, wl = tc, wc
                fl, fh, side = 1.0, (fh * 0.5 if side == -1 else 1.0), -1
        return t_low, t_high, wh, hits

    # ------------------------------------------------------------------ stepping
    def _solver_step(self) -> None:
        solver = self._solver
        self._n_attempted += 1
        try:
            message = solver.step()
        except _NonFinite:
            self._solver = None
            raise NonFiniteDerivativeError(
                f"{self._method_name}: the System's derivative {self._describe_nonfinite()} is not finite; the State "
                f"is left at t = {self._adv.get_time()!r}") from None
        if solver.status == "failed":
            self._solver = None
            cls = StepSizeTooSmallError if "step size" in str(message).lower() else IntegratorError
            raise cls(f"{self._method_name}: the scipy solver failed at t = {solver.t!r}: {message}; the State is "
                      f"left at t = {self._adv.get_time()!r}")
        s = self._adv
        y = self._set_ty(solver.t)
        y[:] = solver.y
        self._realize_derivatives_or_raise(f"at t = {solver.t!r}")
        self._dense = solver.dense_output()
        self._n_taken += 1
        h = solver.t - solver.t_old
        self._h_prev = h
        if self._n_taken == 1:
            self._h_first = h
        if self._has_constraints or self._project_every_step:
            if self._project(s):
                self._realize_derivatives_or_raise(f"after projection at t = {s.get_time()!r}")
                self._solver = None  # the solver's y is no longer the State's
        mark = s.get_invalidation_mark()
        s.auto_update_discrete_variables()
        if s.get_invalidation_mark() != mark:
            self._realize_derivatives_or_raise(f"after updating discrete variables at t = {s.get_time()!r}")
            self._copy_helpers()
        if self._weights_vary:
            self._compute_weights()
        self._save_start()

    def step_to(self, report_time: float, scheduled_event_time: float = math.inf):
        S = Integrator.SuccessfulStepStatus
        s = self._check_stepping("step_to()")
        report_time, scheduled_event_time = float(report_time), float(scheduled_event_time)
        t_now = self.get_time()
        if math.isnan(report_time) or report_time < t_now:
            raise ValueError(f"{type(self).__name__}.step_to: report time {report_time!r} is before the current time "
                             f"{t_now!r}")
        t_adv = s.get_time()
        if math.isnan(scheduled_event_time) or scheduled_event_time < t_adv:
            raise ValueError(f"{type(self).__name__}.step_to: scheduled event time {scheduled_event_time!r} is before "
                             f"the advanced time {t_adv!r}")
        self._triggered_events = []
        if self._start_of_interval and self._return_every_internal_step:
            self._start_of_interval = False
            return S.StartOfContinuousInterval
        self._start_of_interval = False
        if t_now >= report_time:
            return S.ReachedReportTime
        t_event = scheduled_event_time if scheduled_event_time > t_adv else math.inf
        t_stop = min(self._final_time, t_event)
        n_steps = 0
        while True:
            t_adv = self._adv.get_time()
            if self._t_checked < t_adv:
                # Deliver (t_checked, min(t_adv, report_time)]: events first, then the report.
                t_end = min(t_adv, report_time)
                interpolated = t_end < t_adv
                end_state = self._interp_to(t_end) if interpolated else self._adv
                if self._witnesses:
                    w_end = self._witness_at(end_state, np.empty(len(self._witnesses)))
                    hits = self._crossings(self._w0, w_end)
                    if hits:
                        return self._back_up_to_event(self._t_checked, self._w0, t_end, w_end, hits)
                    # A sign change hidden between the ends (up and down again): sample inside.
                    t_a, w_a = self._t_checked, self._w0
                    for th in self._SAMPLES:
                        ts = self._t_checked + th * (t_end - self._t_checked)
                        w_s = self._witness_at(self._interp_to(ts), np.empty(len(self._witnesses)))
                        hits = self._crossings(w_a, w_s)
                        if hits:
                            return self._back_up_to_event(t_a, w_a, ts, w_s, hits)
                        t_a, w_a = ts, w_s
                    self._w0[:] = w_end
                self._t_checked = t_end
                self._use_interp = interpolated
                if not interpolated:
                    if t_adv >= t_event:
                        return S.ReachedScheduledEvent
                    if t_adv >= self._final_time:
                        return self._end_simulation()
                if t_end >= report_time:
                    return S.ReachedReportTime
                if self._return_every_internal_step:
                    return S.TimeHasAdvanced
                if self._step_limit and n_steps >= self._step_limit:
                    return S.ReachedStepLimit
            if t_adv >= self._final_time:
                return self._end_simulation()
            if self._solver is None or self._solver.status != "running" or self._bound != t_stop:
                self._make_solver(t_stop)
            self._solver_step()
            n_steps += 1

    def _back_up_to_event(self, t_low, w_low, t_end, w_end, hits):
        t_low, t_high, w_high, hits = self._localize_dense(t_low, w_low, t_end, w_end, hits)
        y = self._set_ty(t_high)
        y[:] = self._dense(t_high)
        self._realize_derivatives_or_raise(f"at the event time {t_high!r}")
        self._save_start()
        self._solver = None
        self._t_checked = t_high
        self._use_interp = False
        self._w0[:] = self._witness_values(self._w0)
        self._triggered_events = [self._witnesses[i] for i in hits]
        self._event_window = (t_low, t_high)
        return Integrator.SuccessfulStepStatus.ReachedEventTrigger
