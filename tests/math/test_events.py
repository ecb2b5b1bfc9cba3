"""TimeStepper and events: triggered, scheduled, periodic; handlers and reporters."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from systems import DiscreteGain, FallingPoint, bounce_times, oscillator_system  # noqa: E402

from simtk import Stage, System  # noqa: E402
from simtk.common.events import (  # noqa: E402
    EventTriggerInfo,
    PeriodicEventHandler,
    PeriodicEventReporter,
    ReporterChangedStateError,
    ScheduledEventHandler,
    TriggeredEventHandler,
    TriggeredEventReporter,
)
from simtk.math import (  # noqa: E402
    Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    TimeStepper,
    VerletIntegrator,
)
from tolerances import tol  # noqa: E402

S = Integrator.SuccessfulStepStatus


class Bounce(TriggeredEventHandler):
    """Impact when the height falls through zero: u -> -e u; records the impact times."""

    def __init__(self, ball, e):
        super().__init__(Stage.Position, EventTriggerInfo(rising=False, falling=True))
        self.ball, self.e, self.times = ball, e, []

    def get_value(self, state):
        return self.ball.get_q(state)[0]

    def handle_event(self, state, accuracy):
        self.times.append(state.get_time())
        u = self.ball.upd_u(state)
        u[0] = -self.e * u[0]
        return False


@pytest.mark.parametrize("make,accuracy", [
    (RungeKuttaMersonIntegrator, 1e-6), (RungeKutta3Integrator, 1e-6), (VerletIntegrator, 1e-6),
    (RungeKuttaFeldbergIntegrator, 1e-6), (lambda s: ScipyIntegrator(s, "RK45"), 1e-6),
    # BDF's own integration error (not the localization) needs the tighter accuracy for 1e-6 in t.
    (lambda s: ScipyIntegrator(s, "BDF"), 1e-9)])
def test_bouncing_point_impact_times_match_closed_form(make, accuracy):
    """Law: impacts of a point dropped from h = 1 with restitution e = 0.8 happen at
    t1 = sqrt(2h/g), t_{k+1} = t_k + 2 e^k g t1 / g; each localized time is within 1e-6."""
    system = System()
    ball = FallingPoint(system, height=1.0, g=9.81)
    bounce = Bounce(ball, 0.8)
    system.add_event_handler(bounce)
    integ = make(system)
    integ.set_accuracy(accuracy)
    ts = TimeStepper(system, integ)
    ts.initialize(system.realize_topology())
    ts.step_to(2.5)
    expected = [t for t in bounce_times(1.0, 9.81, 0.8, 12) if t < 2.5]
    assert len(bounce.times) == len(expected) >= 4
    assert np.max(np.abs(np.array(bounce.times) - expected)) < 1e-6  # localization and integration error
    assert ts.get_time() == 2.5


def test_event_is_localized_within_window_and_reported_just_after():
    """Law: ReachedEventTrigger stops at the upper end of a window no wider than the required
    localization window that brackets the exact root."""
    system = System()
    ball = FallingPoint(system, height=1.0, g=9.81)
    bounce = Bounce(ball, 0.5)
    bounce.get_trigger_info().set_required_localization_time_window(0.01)
    system.add_event_handler(bounce)
    integ = RungeKuttaFeldbergIntegrator(system)
    integ.set_accuracy(1e-4)
    integ.initialize(system.realize_topology())
    assert integ.step_to(1.0) == S.ReachedEventTrigger
    assert integ.get_triggered_events() == [bounce]
    t_low, t_high = integ.get_event_window()
    t1 = math.sqrt(2 / 9.81)
    # the window's width is a difference of two times near 0.45: its rounding is on their scale
    assert t_low <= t1 <= t_high and t_high - t_low <= 0.01 * 1e-4 + tol(t_high, 16)
    assert integ.get_time() == t_high
    assert integ.get_state().get_q()[0] <= 0


class Recorder(PeriodicEventReporter):
    def __init__(self, interval):
        super().__init__(interval)
        self.times, self.q = [], []

    def handle_event(self, state):
        self.times.append(state.get_time())
        self.q.append(state.get_q()[0])


@pytest.mark.parametrize("make", [RungeKutta3Integrator, lambda s: ScipyIntegrator(s, "BDF")])
def test_periodic_reports_land_exactly_on_their_grid(make):
    """Law: a periodic reporter reports at exactly k * interval for every k with k * interval in
    [0, T], the start time included, with the state at that time (checked against the closed form)."""
    system, osc = oscillator_system()
    rec = Recorder(0.1)
    system.add_event_reporter(rec)
    integ = make(system)
    integ.set_accuracy(1e-7)
    ts = TimeStepper(system, integ)
    ts.initialize(system.realize_topology())
    ts.step_to(2.0)
    assert rec.times == [k * 0.1 for k in range(21)]
    assert np.allclose(rec.q, [osc.exact(t)[0] for t in rec.times], atol=1e-5)  # integration error at 1e-7


class SetGain(ScheduledEventHandler):
    """At time t_event, set the gain k (a Dynamics-stage discrete variable)."""

    def __init__(self, sub, t_event, k):
        self.sub, self.t_event, self.k, self.seen = sub, t_event, k, []

    def get_next_event_time(self, state, include_current_time):
        t = state.get_time()
        return self.t_event if (t < self.t_event or (include_current_time and t == self.t_event)) else math.inf

    def handle_event(self, state, accuracy):
        self.seen.append(state.get_time())
        self.sub.set_discrete_variable(state, self.sub.k_index, self.k)
        return False


@pytest.mark.parametrize("make", [RungeKuttaMersonIntegrator, lambda s: ScipyIntegrator(s, "LSODA")])
def test_scheduled_event_changes_discrete_variable_at_its_exact_time(make):
    """Law: with z' = k, k = 1 then 5 from t = 0.37: z(1) = 0.37 + 5 * 0.63; the handler saw t = 0.37
    exactly."""
    system = System()
    sub = DiscreteGain(system, k=1.0)
    handler = SetGain(sub, 0.37, 5.0)
    system.add_event_handler(handler)
    integ = make(system)
    ts = TimeStepper(system, integ)
    ts.initialize(system.realize_topology())
    ts.step_to(1.0)
    assert handler.seen == [0.37]
    # a piecewise-constant z' is integrated exactly by both methods: round-off over a few steps
    # (LSODA's Nordsieck history included), on the scale of z
    z1 = 0.37 + 5 * 0.63
    assert abs(ts.get_state().get_z()[0] - z1) <= tol(z1, 256)
    assert sub.get_discrete_variable(ts.get_state(), sub.k_index) == 5.0


def test_periodic_handler_fires_at_start_and_every_multiple():
    class Kick(PeriodicEventHandler):
        def __init__(self, sub):
            super().__init__(0.25)
            self.sub, self.times = sub, []

        def handle_event(self, state, accuracy):
            self.times.append(state.get_time())
            self.sub.upd_z(state)[0] += 1.0
            return False

    system = System()
    sub = DiscreteGain(system, k=0.0)
    kick = Kick(sub)
    system.add_event_handler(kick)
    ts = TimeStepper(system, RungeKutta3Integrator(system))
    ts.initialize(system.realize_topology())
    ts.step_to(1.0)
    assert kick.times == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert ts.get_state().get_z()[0] == 5.0


def test_termination_request_ends_the_simulation():
    class StopAtGround(TriggeredEventHandler):
        def __init__(self, ball):
            super().__init__(Stage.Position, EventTriggerInfo(rising=False))
            self.ball = ball

        def get_value(self, state):
            return self.ball.get_q(state)[0]

        def handle_event(self, state, accuracy):
            return True

    system = System()
    ball = FallingPoint(system)
    system.add_event_handler(StopAtGround(ball))
    integ = RungeKuttaFeldbergIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(system.realize_topology())
    assert ts.step_to(10.0) == S.EndOfSimulation
    assert integ.is_simulation_over()
    assert integ.get_termination_reason() == Integrator.TerminationReason.EventHandlerRequestedTermination
    assert ts.get_time() == pytest.approx(math.sqrt(2 / 9.81), abs=1e-6)  # localization at accuracy 1e-6


def test_triggered_reporter_reports_without_handling():
    """Law: a rising/falling witness reporter on q of the oscillator (q = cos t) reports at the
    zeros pi/2 + k pi and the trajectory is unaffected."""

    class ZeroCrossing(TriggeredEventReporter):
        def __init__(self, osc):
            super().__init__(Stage.Position)
            self.osc, self.times = osc, []

        def get_value(self, state):
            return self.osc.get_q(state)[0]

        def handle_event(self, state):
            self.times.append(state.get_time())

    system, osc = oscillator_system()
    rep = ZeroCrossing(osc)
    system.add_event_reporter(rep)
    integ = RungeKuttaFeldbergIntegrator(system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(system, integ)
    ts.initialize(system.realize_topology())
    ts.step_to(7.0)
    # localization and integration error at accuracy 1e-8, not round-off
    assert np.allclose(rep.times, [math.pi / 2 + k * math.pi for k in range(2)], atol=1e-6)
    assert ts.get_state().get_q()[0] == pytest.approx(math.cos(7.0), abs=1e-6)


def test_reporter_that_changes_the_state_is_refused():
    class Meddler(PeriodicEventReporter):
        def __init__(self, osc):
            super().__init__(0.5)
            self.osc = osc

        def handle_event(self, state):
            self.osc.upd_q(state)[0] += 0.0  # an upd_ is a change, even of zero

    system, osc = oscillator_system()
    system.add_event_reporter(Meddler(osc))
    ts = TimeStepper(system, RungeKutta3Integrator(system))
    ts.initialize(system.realize_topology())
    with pytest.raises(ReporterChangedStateError, match="Position"):
        ts.step_to(1.0)


def test_periodic_interval_is_validated():
    with pytest.raises(ValueError):
        PeriodicEventReporter(0.0)
    with pytest.raises(ValueError):
        PeriodicEventHandler(-1.0)
    with pytest.raises(ValueError):
        TriggeredEventHandler(Stage.Report)
