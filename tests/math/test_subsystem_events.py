"""Event triggers owned by a Subsystem (seed §2.5.4): allocated at Instance, written while realizing
their stage, watched by every integrator and handled by ``Subsystem.handle_event_trigger``."""
import math

import numpy as np
import pytest

from simtk import RungeKuttaMersonIntegrator, ScipyIntegrator, Stage, Subsystem, System, TimeStepper, VerletIntegrator

G, H0, E = 9.81, 1.0, 0.8


class BouncingPoint(Subsystem):
    """A point falling from H0 under gravity that bounces with restitution E; its own trigger is its height."""

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [H0])
        self.allocate_u(state, [0.0])
        self.bounces = []

    def realize_subsystem_instance_impl(self, state):
        self.trigger = self.allocate_event_triggers(state, Stage.Position, 1)

    def realize_subsystem_position_impl(self, state):
        self.upd_event_triggers_by_stage(state, Stage.Position)[self.trigger] = self.get_q(state)[0]

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[0] = self.get_u(state)[0]

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[0] = -G
        self.upd_qdotdot(state)[0] = -G

    def handle_event_trigger(self, state, stage, index, accuracy):
        assert (stage, index) == (Stage.Position, self.trigger)
        u = self.upd_u(state)
        if u[0] < 0:  # falling through the floor: bounce
            u[0] = -E * u[0]
            self.bounces.append(state.get_time())
        return False


def _closed_form_impacts(n):
    """t_1 = sqrt(2 H0 / G); each later flight lasts 2 v_k / G with v_k = E^k sqrt(2 G H0)."""
    v = math.sqrt(2 * G * H0)
    times = [v / G]
    for _ in range(n - 1):
        v *= E
        times.append(times[-1] + 2 * v / G)
    return np.array(times)


@pytest.mark.parametrize("make", [
    lambda s: RungeKuttaMersonIntegrator(s),
    lambda s: VerletIntegrator(s),
    lambda s: ScipyIntegrator(s, "RK45"),
], ids=["Merson", "Verlet", "scipy-RK45"])
def test_subsystem_trigger_localizes_impacts_to_the_closed_form(make):
    system = System()
    point = BouncingPoint(system)
    state = system.realize_topology()
    integ = make(system)
    integ.set_accuracy(1e-7)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(1.8)
    expected = _closed_form_impacts(3)
    assert len(point.bounces) == 3
    np.testing.assert_allclose(point.bounces, expected, atol=1e-6)  # localization and integration error at 1e-7


def test_a_subsystem_that_allocates_triggers_must_handle_them():
    class Forgetful(BouncingPoint):
        handle_event_trigger = Subsystem.handle_event_trigger

    system = System()
    Forgetful(system)
    ts = TimeStepper(system, RungeKuttaMersonIntegrator(system))
    ts.initialize(system.realize_topology())
    with pytest.raises(NotImplementedError, match="handle_event_trigger"):
        ts.step_to(1.0)


def test_trigger_slots_are_read_only_outside_their_subsystem_and_need_their_stage():
    system = System()
    point = BouncingPoint(system)
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    assert point.get_num_event_triggers(state, Stage.Position) == 1
    assert point.get_num_event_triggers(state, Stage.Velocity) == 0
    from simtk import StageTooLowError
    with pytest.raises(StageTooLowError):
        state.get_event_triggers_by_stage(0, Stage.Position)
    system.realize(state, Stage.Position)
    values = state.get_event_triggers_by_stage(0, Stage.Position)
    assert values[0] == H0 and not values.flags.writeable
