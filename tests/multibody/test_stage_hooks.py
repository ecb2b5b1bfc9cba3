"""The optional realize_<stage> hooks of user implementations (Custom mobilizers and Custom constraints)
run once per realization of their stage, Topology included, and allocate in the stage they belong to."""
from collections import Counter

import numpy as np

from simtk import (
    Body,
    Constraint,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)

STAGES = ("topology", "model", "instance", "time", "position", "velocity", "dynamics", "acceleration", "report")


class CountingSlider(MobilizedBody.Custom.Implementation):
    """A slider along x that counts how often each of its hooks runs."""

    def __init__(self, matter):
        super().__init__(matter, 1, 1, 0)
        self.calls = Counter()

    def realize_topology(self, state):
        self.calls["topology"] += 1
        # Allocating here is allowed, and the index may be kept (seed §2.4).
        self.gain = self.get_matter_subsystem().allocate_discrete_variable(state, Stage.Dynamics, 2.0)

    def realize_model(self, state):
        self.calls["model"] += 1

    def realize_instance(self, state):
        self.calls["instance"] += 1

    def realize_time(self, state):
        self.calls["time"] += 1

    def realize_position(self, state):
        self.calls["position"] += 1

    def realize_velocity(self, state):
        self.calls["velocity"] += 1

    def realize_dynamics(self, state):
        self.calls["dynamics"] += 1

    def realize_acceleration(self, state):
        self.calls["acceleration"] += 1

    def realize_report(self, state):
        self.calls["report"] += 1

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform([q[0], 0, 0])

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0, 0, 0], [u[0], 0, 0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[1][0]])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class CountingAccelerationConstraint(Constraint.Custom.Implementation):
    """udot of one body held at zero (acceleration-only), counting its optional hooks."""

    def __init__(self, matter, mobod):
        super().__init__(matter, 0, 0, 1)
        self.mobilizer = self.add_constrained_mobilizer(mobod)
        self.calls = Counter()

    def realize_time(self, state):
        self.calls["time"] += 1

    def realize_report(self, state):
        self.calls["report"] += 1

    def realize_acceleration_errors(self, state, ma, aerr):
        aerr[0] = self.get_one_udot(state, self.mobilizer, 0)

    def apply_acceleration_constraint_forces(self, state, ma, multipliers, body_forces_in_a, mobility_forces):
        self.add_in_one_mobility_force(state, self.mobilizer, 0, multipliers[0], mobility_forces)


def _system():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    impl = CountingSlider(matter)
    body = MobilizedBody.Custom(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                                Transform(), impl)
    pin = MobilizedBody.Pin(body, Body.Rigid(MassProperties.from_central_inertia(1.0, [1, 0, 0], Inertia(1.0))))
    cimpl = CountingAccelerationConstraint(matter, pin)
    Constraint.Custom(cimpl)
    return system, impl, cimpl


def test_custom_mobilizer_hooks_run_once_per_stage_realization():
    system, impl, _ = _system()
    state = system.realize_topology()
    assert impl.calls["topology"] == 1 and impl.calls["model"] == 1
    system.realize(state, Stage.Report)
    for stage in STAGES[2:]:
        assert impl.calls[stage] == 1, stage
    state.set_time(1.0)  # drops to Instance: Time and above run again, Instance does not
    system.realize(state, Stage.Report)
    assert impl.calls["instance"] == 1
    for stage in STAGES[3:]:
        assert impl.calls[stage] == 2, stage
    state.set_u([0.5, 0.0])  # drops to Position: Time and Position do not run again
    system.realize(state, Stage.Report)
    assert (impl.calls["time"], impl.calls["position"], impl.calls["velocity"], impl.calls["dynamics"]) == (2, 2, 3, 3)
    assert impl.calls["topology"] == 1  # never again: it belongs to the topology


def test_a_variable_allocated_in_the_topology_hook_lives_in_the_state():
    system, impl, _ = _system()
    state = system.realize_topology()
    matter = system.get_matter_subsystem()
    assert matter.get_discrete_variable(state, impl.gain) == 2.0
    matter.set_discrete_variable(state, impl.gain, 3.0)
    assert state.get_system_stage() == Stage.Model  # nothing realized beyond Model yet
    system.realize(state, Stage.Acceleration)
    matter.set_discrete_variable(state, impl.gain, 4.0)
    assert state.get_system_stage() == Stage.Velocity  # it invalidates Dynamics, as allocated
    system.realize_topology()  # topology unchanged: its hooks must not run again
    assert impl.calls["topology"] == 1


def test_custom_constraint_time_and_report_hooks_run():
    system, _, cimpl = _system()
    state = system.realize_topology()
    system.realize(state, Stage.Report)
    assert cimpl.calls == Counter(time=1, report=1)
    state.set_time(0.25)
    system.realize(state, Stage.Acceleration)
    assert cimpl.calls == Counter(time=2, report=1)
    # and the constraint itself holds: no forces and zero speeds make udot zero exactly
    assert state.get_udot()[1] == 0.0
