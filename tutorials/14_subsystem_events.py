"""A Subsystem's own event triggers -- the Python twin of seed 004 §2.5.4.

Seed §2.5.4 lets a Subsystem define triggered events itself instead of adding EventHandler objects:
it allocates trigger slots at Instance stage, writes each trigger function's value while realizing
its stage (C++: ``state.updEventsByStage(getMySubsystemIndex(), stage)[eventIndex] = value;``) and
handles the events when a value changes sign. Here a ball bounces on the floor; its height is the
trigger function, and the impact times are compared with the closed form.

Run: ``python tutorials/14_subsystem_events.py``
"""
import math

from simtk import RungeKuttaMersonIntegrator, Stage, Subsystem, System, TimeStepper

G, H0, RESTITUTION = 9.81, 1.0, 0.8


class BouncingBall(Subsystem):
    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [H0])  # height
        self.allocate_u(state, [0.0])  # vertical speed
        self.impacts = []

    def realize_subsystem_instance_impl(self, state):
        # C++: createTriggeredEvent(...) at Instance stage returns the trigger's index.
        self.height_trigger = self.allocate_event_triggers(state, Stage.Position, 1)

    def realize_subsystem_position_impl(self, state):
        # C++: state.updEventsByStage(getMySubsystemIndex(), stage)[eventIndex] = value;
        self.upd_event_triggers_by_stage(state, Stage.Position)[self.height_trigger] = self.get_q(state)[0]

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[0] = self.get_u(state)[0]

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[0] = -G
        self.upd_qdotdot(state)[0] = -G

    def handle_event_trigger(self, state, stage, index, accuracy):
        # C++: handleEvents(...) is given the IDs of the events that occurred.
        u = self.upd_u(state)
        if u[0] < 0:
            u[0] = -RESTITUTION * u[0]
            self.impacts.append(state.get_time())
        return False  # do not end the simulation


def main():
    system = System()
    ball = BouncingBall(system)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(system, integ)
    ts.initialize(system.realize_topology())
    ts.step_to(3.0)

    v = math.sqrt(2 * G * H0)
    exact = [v / G]
    while len(exact) < len(ball.impacts):
        v *= RESTITUTION
        exact.append(exact[-1] + 2 * v / G)
    print(f"{'impact':>6} {'simulated t (s)':>16} {'closed form t (s)':>18} {'error':>9}")
    for k, (t, te) in enumerate(zip(ball.impacts, exact), start=1):
        print(f"{k:6d} {t:16.9f} {te:18.9f} {t - te:+9.1e}")


if __name__ == "__main__":
    main()
