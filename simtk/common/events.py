"""Event handlers and event reporters (Simbody's ``EventHandler`` / ``EventReporter`` family).

A *handler* may change the State when its event occurs; a *reporter* only looks at it. Both come in
three kinds:

- triggered: a witness function ``get_value(state)`` whose sign change (rising, falling or both, see
  ``EventTriggerInfo``) the integrator localizes in time;
- scheduled: ``get_next_event_time(state, include_current_time)`` names the next time exactly;
- periodic: a scheduled event at every integer multiple ``k * interval`` of an interval.

Add them to a System with ``System.add_event_handler`` / ``add_event_reporter``; a ``TimeStepper``
calls them. ``handle_event`` of a handler returning ``True`` asks the simulation to terminate.
"""
from __future__ import annotations

import math

import numpy as np

from .component import Component
from .stage import STAGE_NAMES, Stage
from .state import State

__all__ = [
    "EventTriggerInfo",
    "TriggeredEventHandler",
    "ScheduledEventHandler",
    "PeriodicEventHandler",
    "TriggeredEventReporter",
    "ScheduledEventReporter",
    "PeriodicEventReporter",
    "ReporterChangedStateError",
]


class ReporterChangedStateError(RuntimeError):
    """An event reporter changed the State it was given to look at."""


class EventTriggerInfo:
    """Which sign changes of a witness function count as an event, and how tightly to localize them.

    Parameters
    ----------
    rising : bool
        Count a change from negative to zero or positive.
    falling : bool
        Count a change from positive to zero or negative.
    localization_window : float
        The required width of the time window that brackets the event, relative to the
        integrator's accuracy: the integrator localizes to ``localization_window * accuracy``
        (times the System's time scale, 1 unless the System says otherwise). Default 0.1.
    """

    __slots__ = ("_rising", "_falling", "_window")

    def __init__(self, rising: bool = True, falling: bool = True, localization_window: float = 0.1):
        self._rising = bool(rising)
        self._falling = bool(falling)
        self.set_required_localization_time_window(localization_window)

    def should_trigger_on_rising_sign_transition(self) -> bool:
        """Whether a negative-to-nonnegative change is an event."""
        return self._rising

    def should_trigger_on_falling_sign_transition(self) -> bool:
        """Whether a positive-to-nonpositive change is an event."""
        return self._falling

    def set_trigger_on_rising_sign_transition(self, value: bool) -> "EventTriggerInfo":
        self._rising = bool(value)
        return self

    def set_trigger_on_falling_sign_transition(self, value: bool) -> "EventTriggerInfo":
        self._falling = bool(value)
        return self

    def get_required_localization_time_window(self) -> float:
        """The localization window relative to accuracy (see the class docstring)."""
        return self._window

    def set_required_localization_time_window(self, window: float) -> "EventTriggerInfo":
        w = float(window)
        if not (w > 0 and math.isfinite(w)):
            raise ValueError(f"EventTriggerInfo: the localization window must be positive and finite, got {window!r}")
        self._window = w
        return self

    def __repr__(self) -> str:
        return f"EventTriggerInfo(rising={self._rising}, falling={self._falling}, localization_window={self._window})"


def _check_stage(stage, where: str) -> Stage:
    try:
        s = Stage(int(stage))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: expected a Stage, got {stage!r}") from exc
    if not Stage.Time <= s <= Stage.Acceleration:
        raise ValueError(f"{where}: a witness function is evaluated at Time to Acceleration, not {s.name}")
    return s


def _check_interval(interval, where: str) -> float:
    try:
        v = float(interval)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: expected a real interval, got {interval!r}") from exc
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{where}: the interval must be positive and finite, got {interval!r}")
    return v


def _next_multiple(t: float, interval: float, include_current_time: bool) -> float:
    """The first ``k * interval`` (k an integer) at or after ``t`` (strictly after without include).

    The value returned is exactly the float ``k * interval``, so that the times reported by a
    periodic event land bitwise on the grid ``[k * interval for k in range(n)]``.
    """
    k = math.floor(t / interval)
    while k * interval > t:
        k -= 1
    while k * interval < t or (not include_current_time and k * interval <= t):
        k += 1
    return k * interval


# ---------------------------------------------------------------------------------------------- handlers
class _Triggered(Component):
    """What triggered handlers and reporters share: a stage, trigger info and a witness function."""

    def _init_triggered(self, stage, info: EventTriggerInfo | None) -> None:
        self._stage = _check_stage(stage, f"{type(self).__name__}")
        if info is None:
            info = EventTriggerInfo()
        if not isinstance(info, EventTriggerInfo):
            raise TypeError(f"{type(self).__name__}: trigger info must be an EventTriggerInfo, got {info!r}")
        self._trigger_info = info

    def get_required_stage(self) -> Stage:
        """The stage the State must be realized to for ``get_value``."""
        return self._stage

    def get_trigger_info(self) -> EventTriggerInfo:
        """Which sign changes count and how tightly to localize them (modifiable in place)."""
        return self._trigger_info

    def get_value(self, state: State) -> float:
        """The witness function; an event occurs where it changes sign. Override this."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_value(state)")


class TriggeredEventHandler(_Triggered):
    """An event that happens when a witness function of the State changes sign.

    Subclass it, implement ``get_value(state)`` (the State is realized at least to ``stage``) and
    ``handle_event(state, accuracy)``, which may change the State and returns ``True`` to ask the
    simulation to terminate.

    Parameters
    ----------
    stage : Stage
        The stage the witness function depends on (Time to Acceleration).
    trigger_info : EventTriggerInfo, optional
        Rising/falling selection; both by default.
    """

    def __init__(self, stage, trigger_info: EventTriggerInfo | None = None):
        self._init_triggered(stage, trigger_info)

    def handle_event(self, state: State, accuracy: float) -> bool:
        """React to the event (change ``state`` as needed); return True to end the simulation."""
        raise NotImplementedError(f"{type(self).__name__} must implement handle_event(state, accuracy)")


class SubsystemEventTrigger(TriggeredEventHandler):
    """One trigger slot a Subsystem allocated (seed §2.5.4), seen by integrators as a witness.

    The subsystem writes the slot's value while realizing ``stage`` (``upd_event_triggers_by_stage``)
    and reacts in ``Subsystem.handle_event_trigger(state, stage, index, accuracy)``. Integrators make
    these from the State's Instance layout; users do not construct them.
    """

    def __init__(self, subsystem, stage, index: int):
        super().__init__(stage)
        self._subsystem = subsystem
        self._index = int(index)

    def get_value(self, state: State) -> float:
        return float(state.get_event_triggers_by_stage(self._subsystem.get_my_subsystem_index(), self._stage)
                     [self._index])

    def handle_event(self, state: State, accuracy: float) -> bool:
        return bool(self._subsystem.handle_event_trigger(state, self._stage, self._index, accuracy))

    def __repr__(self) -> str:
        return f"<event trigger {self._index} of {self._subsystem!r} at {self._stage.name}>"


class ScheduledEventHandler(Component):
    """An event that happens at times known in advance.

    Subclass it and implement ``get_next_event_time(state, include_current_time)`` and
    ``handle_event(state, accuracy)``.
    """

    def get_next_event_time(self, state: State, include_current_time: bool) -> float:
        """The next time the event occurs (``inf`` for never); may be the current time when asked."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_next_event_time(state, include_current_time)")

    def handle_event(self, state: State, accuracy: float) -> bool:
        """React to the event; return True to end the simulation."""
        raise NotImplementedError(f"{type(self).__name__} must implement handle_event(state, accuracy)")


class PeriodicEventHandler(ScheduledEventHandler):
    """A scheduled event at every integer multiple of ``interval``, the start time included.

    Parameters
    ----------
    interval : float
        The event period, > 0.
    """

    def __init__(self, interval: float):
        self._interval = _check_interval(interval, f"{type(self).__name__}")

    def get_event_interval(self) -> float:
        return self._interval

    def set_event_interval(self, interval: float) -> None:
        self._interval = _check_interval(interval, f"{type(self).__name__}.set_event_interval")

    def get_next_event_time(self, state: State, include_current_time: bool) -> float:
        return _next_multiple(state.get_time(), self._interval, include_current_time)


# ---------------------------------------------------------------------------------------------- reporters
class TriggeredEventReporter(_Triggered):
    """Report when a witness function changes sign; ``handle_event(state)`` must not change the State."""

    def __init__(self, stage, trigger_info: EventTriggerInfo | None = None):
        self._init_triggered(stage, trigger_info)

    def handle_event(self, state: State) -> None:
        """Look at ``state`` (realize it to Report if needed); never change it."""
        raise NotImplementedError(f"{type(self).__name__} must implement handle_event(state)")


class ScheduledEventReporter(Component):
    """Report at times known in advance; ``handle_event(state)`` must not change the State."""

    def get_next_event_time(self, state: State, include_current_time: bool) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement get_next_event_time(state, include_current_time)")

    def handle_event(self, state: State) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement handle_event(state)")


class PeriodicEventReporter(ScheduledEventReporter):
    """Report at every integer multiple of ``interval``, the start time included."""

    def __init__(self, interval: float):
        self._interval = _check_interval(interval, f"{type(self).__name__}")

    def get_event_interval(self) -> float:
        return self._interval

    def set_event_interval(self, interval: float) -> None:
        self._interval = _check_interval(interval, f"{type(self).__name__}.set_event_interval")

    def get_next_event_time(self, state: State, include_current_time: bool) -> float:
        return _next_multiple(state.get_time(), self._interval, include_current_time)


# ---------------------------------------------------------------------------------------------- naming
def event_where(x) -> str:
    """How errors name an event handler or reporter: its class and its path (or name, not adopted)."""
    if isinstance(x, SubsystemEventTrigger):
        return repr(x)
    kind = type(x).__qualname__
    try:
        if x.get_owner() is not None:
            return f"{kind} {x.get_absolute_path()!r}"
        return f"{kind} named {x.get_name()!r}"
    except Exception:  # a name must never hide the error it is part of
        return kind


def checked_event_time(x, state: State, include_current_time: bool) -> float:
    """``x.get_next_event_time(state, include_current_time)`` as a float, refusing NaN and non-numbers
    with the handler named (infinity means never)."""
    value = x.get_next_event_time(state, include_current_time)
    try:
        t = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{event_where(x)}.get_next_event_time returned {value!r} at t = {state.get_time()!r}; "
                        "it must return a time (a float; inf for never)") from exc
    if math.isnan(t):
        raise ValueError(f"{event_where(x)}.get_next_event_time returned NaN at t = {state.get_time()!r}; it must "
                         "return a time (inf for never)")
    return t


# ---------------------------------------------------------------------------------------------- change tracking
def change_mark(state: State) -> int:
    """A mark to pass to ``lowest_stage_changed_since`` later (the State's invalidation epoch)."""
    return state.get_invalidation_mark()


def lowest_stage_changed_since(state: State, mark: int) -> Stage:
    """The lowest stage invalidated in ``state`` since ``mark`` (``Stage.Infinity`` if none).

    Any ``upd_*``/``set_*`` of a variable invalidates its stage, so this is the stage an
    integrator must be reinitialized from after an event handler ran.
    """
    return state.get_lowest_stage_invalidated_since(mark)


def report_without_change(reporter, state: State) -> None:
    """Call ``reporter.handle_event(state)`` and raise if it changed t, y or any variable of ``state``.

    A change is any invalidation (every ``upd_*``/``set_*`` of a variable, discrete ones included)
    or any difference in t or y afterwards.
    """
    mark = state.get_invalidation_mark()
    t = state.get_time()
    y_before = state.get_y().copy() if state.get_system_stage() >= Stage.Model else None
    reporter.handle_event(state)
    lowest = lowest_stage_changed_since(state, mark)
    if lowest != Stage.Infinity:
        raise ReporterChangedStateError(
            f"event reporter {reporter!r} changed the State (it invalidated stage {STAGE_NAMES[lowest]}); "
            "reporters may only look at the State: use an event handler to change it")
    if state.get_time() != t or (y_before is not None and not np.array_equal(state.get_y(), y_before)):
        raise ReporterChangedStateError(
            f"event reporter {reporter!r} changed the State's time or continuous variables; reporters may "
            "only look at the State: use an event handler to change it")
