"""TimeStepper: drives an Integrator through time and handles the System's events."""
from __future__ import annotations

import math

from ..common.events import (
    ScheduledEventHandler,
    ScheduledEventReporter,
    TriggeredEventHandler,
    TriggeredEventReporter,
    change_mark,
    checked_event_time,
    lowest_stage_changed_since,
    report_without_change,
)
from ..common.stage import Stage
from ..common.state import State
from ..common.system import System
from .integrator import Integrator

__all__ = ["TimeStepper"]


class TimeStepper:
    """Advance a System with an Integrator, calling its event handlers and reporters.

    ``step_to(t)`` loops ``integrator.step_to``: scheduled and periodic handlers run at their times
    (the start time included), triggered handlers where the integrator localized their witness's
    sign change, reporters at their times and triggers. After handlers ran, the integrator is
    reinitialized from the lowest stage they changed; a handler returning True ends the simulation.
    Reporters are checked not to change the State.

    Parameters
    ----------
    system : System
    integrator : Integrator
        An integrator made for ``system``.
    """

    def __init__(self, system: System, integrator: Integrator):
        if not isinstance(system, System):
            raise TypeError(f"TimeStepper: expected a System, got {type(system).__name__}")
        if not isinstance(integrator, Integrator):
            raise TypeError(f"TimeStepper: expected an Integrator, got {type(integrator).__name__}")
        if integrator._system is not system:
            raise ValueError("TimeStepper: the integrator was made for another System")
        self._system = system
        self._integ = integrator
        self._initialized = False
        self._last_status = Integrator.SuccessfulStepStatus.InvalidSuccessfulStepStatus

    def get_integrator(self) -> Integrator:
        return self._integ

    def initialize(self, state: State) -> None:
        """Initialize the integrator from ``state`` and schedule the events (start time included)."""
        self._integ.initialize(state)
        system = self._system
        s = self._integ.get_advanced_state()
        self._handlers = [[h, checked_event_time(h, s, True)] for h in system.get_event_handlers()
                          if isinstance(h, ScheduledEventHandler)]
        self._reporters = [[r, checked_event_time(r, s, True)] for r in system.get_event_reporters()
                           if isinstance(r, ScheduledEventReporter)]
        for h in system.get_event_handlers():
            if not isinstance(h, (ScheduledEventHandler, TriggeredEventHandler)):
                raise TypeError(f"TimeStepper: event handler {h!r} is neither scheduled nor triggered")
        for r in system.get_event_reporters():
            if not isinstance(r, (ScheduledEventReporter, TriggeredEventReporter)):
                raise TypeError(f"TimeStepper: event reporter {r!r} is neither scheduled nor triggered")
        self._initialized = True

    def get_state(self) -> State:
        return self._integ.get_state()

    def get_time(self) -> float:
        return self._integ.get_time()

    # ------------------------------------------------------------------ event handling
    def _run_handlers(self, handlers) -> None:
        """Call ``handlers`` on the advanced State, then reinitialize from the lowest changed stage."""
        integ = self._integ
        s = integ.upd_advanced_state()
        mark = change_mark(s)
        terminate = False
        accuracy = integ.get_accuracy_in_use()
        for h in handlers:
            if h.handle_event(s, accuracy):
                terminate = True
        lowest = lowest_stage_changed_since(s, mark)
        if terminate or lowest != Stage.Infinity:
            integ.reinitialize(lowest if lowest != Stage.Infinity else Stage.Report, terminate)

    def _apply_pending_changes(self) -> None:
        """Apply the System's queued structural changes (``System.request_change``) between steps and go on
        from the migrated State: scheduled events keep their times, new ones start after now.

        The integrator is initialized again from the new State, so its statistics restart.
        """
        system, integ = self._system, self._integ
        new = system.apply_pending_changes(integ.get_advanced_state())
        old = {id(e[0]): e[1] for e in self._handlers + self._reporters}
        integ.initialize(new)
        s = integ.get_advanced_state()

        def schedule(items, kind):
            return [[x, old[id(x)] if id(x) in old else checked_event_time(x, s, False)]
                    for x in items if isinstance(x, kind)]

        self._handlers = schedule(system.get_event_handlers(), ScheduledEventHandler)
        self._reporters = schedule(system.get_event_reporters(), ScheduledEventReporter)

    def _run_reporters(self, reporters, state: State) -> None:
        for r in reporters:
            report_without_change(r, state)

    def _due_scheduled(self) -> None:
        """Handle scheduled handlers and reporters whose time has come."""
        integ = self._integ
        t_adv = integ.get_advanced_state().get_time()
        due = [entry for entry in self._handlers if entry[1] <= t_adv]
        if due:
            self._run_handlers([e[0] for e in due])
            s = integ.get_advanced_state()
            for e in due:
                e[1] = checked_event_time(e[0], s, False)
        t = integ.get_time()
        due = [entry for entry in self._reporters if entry[1] <= t]
        if due:
            s = integ.get_state()
            self._run_reporters([e[0] for e in due], s)
            for e in due:
                e[1] = checked_event_time(e[0], s, False)

    def step_by(self, dt: float) -> "Integrator.SuccessfulStepStatus":
        """``step_to(get_time() + dt)``; ``dt`` must be finite and >= 0."""
        try:
            dt = float(dt)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"TimeStepper.step_by: expected a time interval, got {dt!r}") from exc
        if not (dt >= 0.0 and math.isfinite(dt)):
            raise ValueError(f"TimeStepper.step_by: the interval must be finite and >= 0, got {dt!r}")
        if not self._initialized:
            raise RuntimeError("TimeStepper.step_by: call initialize(state) first")
        return self.step_to(self._integ.get_time() + dt)

    def step_to(self, final_time: float) -> "Integrator.SuccessfulStepStatus":
        """Advance to ``final_time`` (or the end of the simulation), handling events on the way."""
        if not self._initialized:
            raise RuntimeError("TimeStepper.step_to: call initialize(state) first")
        integ = self._integ
        S = Integrator.SuccessfulStepStatus
        try:
            final_time = float(final_time)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"TimeStepper.step_to: expected a time, got {final_time!r}") from exc
        t = integ.get_time()
        if math.isnan(final_time) or final_time < t:
            # Simbody refuses to step backwards; returning "success" would hide a wrong time.
            raise ValueError(f"TimeStepper.step_to: final time {final_time!r} is before the current time {t!r}; "
                             "a simulation only moves forward (initialize() again from an earlier State)")
        while True:
            self._due_scheduled()
            if self._system._pending_changes:  # requested by a handler, or between calls
                self._apply_pending_changes()
            if integ.is_simulation_over():
                return S.EndOfSimulation
            if integ.get_time() >= final_time:
                return self._last_status
            t_event = min((e[1] for e in self._handlers), default=math.inf)
            t_report = min(min((e[1] for e in self._reporters), default=math.inf), final_time)
            status = integ.step_to(t_report, t_event)
            self._last_status = status
            if status == S.ReachedEventTrigger:
                triggered = integ.get_triggered_events()
                reporters = [x for x in triggered if isinstance(x, TriggeredEventReporter)]
                handlers = [x for x in triggered if isinstance(x, TriggeredEventHandler)]
                if reporters:
                    self._run_reporters(reporters, integ.get_state())
                if handlers:
                    self._run_handlers(handlers)
