"""Tutorial 2: integrators and events.

Part 1 compares the integrators on one problem with a known answer, a harmonic oscillator
q'' = -q written as a small custom Subsystem: for a range of accuracies, how many steps each
integrator takes and how far it ends from the exact solution (error against steps).

Part 2 drops a ball with a TriggeredEventHandler that reverses its velocity at impact, records the
height with a PeriodicEventReporter, and compares the impact times with the closed form.

Run: ``python tutorials/02_integrators_and_events.py``.
"""
import math

import numpy as np

from simtk import Stage, Subsystem, System
from simtk.common.events import EventTriggerInfo, PeriodicEventReporter, TriggeredEventHandler
from simtk.math import (
    ExplicitEulerIntegrator,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    SemiExplicitEuler2Integrator,
    TimeStepper,
    VerletIntegrator,
)


# ------------------------------------------------------------------------------------------ part 1
class Oscillator(Subsystem):
    """q' = u, u' = -q: one q, one u; qdot written at Velocity, udot (and qdotdot) at Acceleration."""

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [1.0])
        self.allocate_u(state, [0.0])

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[:] = self.get_u(state)

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[:] = -self.get_q(state)
        self.upd_qdotdot(state)[:] = -self.get_q(state)


def compare_integrators(T=10.0):
    system = System("oscillator")
    Oscillator(system)
    exact = np.array([math.cos(T), -math.sin(T)])
    makers = [ExplicitEulerIntegrator, RungeKutta2Integrator, RungeKutta3Integrator, RungeKuttaMersonIntegrator,
              RungeKuttaFeldbergIntegrator, VerletIntegrator, SemiExplicitEuler2Integrator,
              lambda s: ScipyIntegrator(s, "BDF")]
    print(f"Harmonic oscillator to t = {T}: steps taken / final error, per accuracy")
    accuracies = [1e-2, 1e-4, 1e-6]
    print(f"{'integrator':22s}" + "".join(f"{a:>22g}" for a in accuracies))
    for make in makers:
        cells = []
        for acc in accuracies:
            integ = make(system)
            integ.set_accuracy(acc)
            integ.initialize(system.realize_topology())
            integ.step_to(T)
            err = np.linalg.norm(integ.get_state().get_y() - exact)
            cells.append(f"{integ.get_num_steps_taken():>10d} / {err:9.2e}")
        print(f"{integ.get_method_name():22s}" + "".join(f"{c:>22s}" for c in cells))
    print("Higher order pays off as the accuracy tightens: Feldberg needs tens of steps where Euler needs "
          "thousands.\n")


# ------------------------------------------------------------------------------------------ part 2
class FallingBall(Subsystem):
    def __init__(self, system, height, g):
        self.height, self.g = height, g
        super().__init__(system, "ball")

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [self.height])
        self.allocate_u(state, [0.0])

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[:] = self.get_u(state)

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[0] = -self.g
        self.upd_qdotdot(state)[0] = -self.g


class Impact(TriggeredEventHandler):
    """Witness: the height (a Position-stage quantity); only downward crossings count."""

    def __init__(self, ball, restitution):
        super().__init__(Stage.Position, EventTriggerInfo(rising=False, falling=True))
        self.ball, self.e, self.times = ball, restitution, []

    def get_value(self, state):
        return self.ball.get_q(state)[0]

    def handle_event(self, state, accuracy):
        self.times.append(state.get_time())
        self.ball.upd_u(state)[0] *= -self.e
        return False  # keep going


class HeightLog(PeriodicEventReporter):
    def __init__(self, ball, interval):
        super().__init__(interval)
        self.ball, self.rows = ball, []

    def handle_event(self, state):
        self.rows.append((state.get_time(), self.ball.get_q(state)[0]))


def bouncing_ball(h=1.0, g=9.81, e=0.8, T=3.0):
    system = System("ball")
    ball = FallingBall(system, h, g)
    impact = Impact(ball, e)
    log = HeightLog(ball, 0.25)
    system.add_event_handler(impact)
    system.add_event_reporter(log)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    stepper = TimeStepper(system, integ)
    stepper.initialize(system.realize_topology())
    stepper.step_to(T)
    t1 = math.sqrt(2 * h / g)
    exact = [t1]
    while len(exact) < len(impact.times):
        exact.append(exact[-1] + 2 * e ** len(exact) * t1)
    print("Bouncing ball: impact times (simulated, closed form, difference)")
    for ts, te in zip(impact.times, exact):
        print(f"  {ts:.9f}  {te:.9f}  {ts - te:+.1e}")
    print("Height every 0.25 s:", ", ".join(f"{t:g}: {q:.3f}" for t, q in log.rows))
    print(f"{integ.get_num_steps_taken()} steps, {integ.get_num_realizations()} realizations")


if __name__ == "__main__":
    compare_integrators()
    bouncing_ball()
