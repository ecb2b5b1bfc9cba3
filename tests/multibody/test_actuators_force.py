"""``Force.Actuators`` built directly (no OpenSim): each kind's forces against the formulas, controls held
in the State plus compiled and Python functions of time, and checks that refuse before anything changes.

Tolerances: a force is a product of a few numbers and a rotation applied to a vector, a few roundings of
its magnitude: ``tol(scale, 1e1)``.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from tolerances import tol

BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.5, 0.0], Inertia([0.1, 0.2, 0.15])))


class _Ramp(Function):
    """A user's Function (no compiled form): 2 t."""

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 1

    def calc_value(self, x) -> float:
        return 2.0 * float(x[0])

    def calc_derivative(self, components, x) -> float:
        return 2.0 if len(components) == 1 else 0.0


def _model():
    system = MultibodySystem("arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    upper = MobilizedBody.Pin(matter.ground, Transform(), BODY, Transform(), name="upper")
    forearm = MobilizedBody.Ball(upper, Transform([0.0, -1.0, 0.0]), BODY, Transform(), name="forearm")
    act = Force.Actuators(forces, matter)
    act.add_coordinate_actuator("elbow", forearm, 2, 3.0)
    act.add_torque_actuator("twist", forearm, [0.0, 0.6, 0.8], 2.0, body_b=upper, torque_is_global=False)
    act.add_point_actuator("push", forearm, [1.0, 0.0, 0.0], [0.1, -0.4, 0.2], 5.0, point_is_global=True)
    return system, matter, upper, forearm, act


def _state(system, matter, t=0.0):
    state = system.realize_topology()
    system.realize_model(state)
    matter.upd_q(state)[:] = [0.4, 0.9, 0.1, -0.2, 0.3]
    matter.upd_u(state)[:] = [0.3, 0.1, -0.2, 0.4]
    state.set_time(t)
    return state


def test_each_kind_applies_optimal_force_times_control():
    system, matter, upper, forearm, act = _model()
    act.add_control_function("elbow", Function.Sinusoid(1.0, 2.0, 0.0))  # compiled: sin(2 t)
    act.add_control_function("push", _Ramp())                             # Python: 2 t
    state = _state(system, matter, t=0.5)
    for name, c in (("elbow", 0.25), ("twist", -0.5), ("push", 0.75)):
        act.set_control(state, name, c)
    system.realize(state, Stage.Velocity)
    bf, mf = act.calc_force_contribution(state)
    c_elbow, c_push = 0.25 + np.sin(1.0), 0.75 + 1.0
    assert act.get_controls(state) == pytest.approx([c_elbow, -0.5, c_push], abs=tol(2.0, 1e1))
    expected_mf = np.zeros(4)
    expected_mf[1 + 2] = 3.0 * c_elbow  # the Ball's third u (after the Pin's one)
    assert np.abs(mf - expected_mf).max() <= tol(3.0, 1e1)
    R = forearm.get_body_rotation(state).matrix
    torque = R @ (2.0 * -0.5 * np.array([0.0, 0.6, 0.8]))
    X = forearm.get_body_transform(state)
    p_B = X.R.matrix.T @ (np.array([0.1, -0.4, 0.2]) - X.p)
    force = R @ (5.0 * c_push * np.array([1.0, 0.0, 0.0]))
    expected_bf = np.zeros((3, 2, 3))
    expected_bf[2, 0] = torque + np.cross(R @ p_B, force)
    expected_bf[2, 1] = force
    expected_bf[1, 0] = -torque
    assert np.abs(bf - expected_bf).max() <= tol(10.0, 1e1)


def test_compiled_loop_holds_controls_and_evaluates_functions_of_time_bitwise_as_python():
    finals = []
    for compiled in (True, False):
        system, matter, upper, forearm, act = _model()
        act.add_control_function("twist", Function.Sinusoid(0.5, 3.0, 0.1))
        state = _state(system, matter)
        act.set_control(state, "elbow", 0.2)
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_use_compiled_loop(compiled)
        integ.initialize(state)
        integ.step_to(0.2)
        act.set_control(integ.upd_advanced_state(), "push", -0.4)  # as a handler would: read at the next run
        integ.reinitialize(Stage.Dynamics)
        integ.step_to(0.4)
        finals.append(np.array(integ.get_state().get_y()))
        if compiled:
            assert "calls Python" not in integ.describe_fast_path()
    assert np.array_equal(finals[0], finals[1])


def test_refused_calls_change_nothing():
    system, matter, upper, forearm, act = _model()
    state = _state(system, matter)
    act.set_control(state, "elbow", 0.5)
    with pytest.raises(KeyError, match=r"/forces/actuators.*no actuator named 'knee'"):
        act.set_control(state, "knee", 1.0)
    with pytest.raises(ValueError, match=r"/forces/actuators.*'elbow'.*finite"):
        act.set_control(state, "elbow", float("inf"))
    assert act.get_control(state, "elbow") == 0.5
    with pytest.raises(TypeError, match="Function of one argument"):
        act.add_control_function("elbow", Function.Linear([1.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match="axis"):
        act.add_torque_actuator("bad", forearm, [0.0, np.nan, 1.0], 1.0)
    assert act.get_actuator_names() == ["elbow", "twist", "push"]


def test_a_speed_the_mobilizer_lacks_is_refused_naming_the_element():
    system, matter, upper, forearm, act = _model()
    act.add_coordinate_actuator("nope", upper, 1, 1.0)  # a Pin has one u
    state = system.realize_topology()
    with pytest.raises(IndexError, match=r"/forces/actuators.*'nope'.*no u\[1\]"):
        system.realize_model(state)
        system.realize(state, Stage.Instance)


def test_discrete_forces_added_before_the_actuators_sum_as_in_the_compiled_loop():
    # The compiled loop adds the actuators' set with the built-in sets and the held DiscreteForces after
    # them; the Python path must add them in that order too, whichever element was made first.
    finals = []
    for compiled in (True, False):
        system = MultibodySystem("arm")
        matter = SimbodyMatterSubsystem(system)
        forces = GeneralForceSubsystem(system)
        held = Force.DiscreteForces(forces, matter)  # before the actuators
        upper = MobilizedBody.Pin(matter.ground, Transform(), BODY, Transform(), name="upper")
        forearm = MobilizedBody.Ball(upper, Transform([0.0, -1.0, 0.0]), BODY, Transform(), name="forearm")
        Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
        for k in range(3):  # built-in mobility forces, so that the order of three terms shows
            Force.MobilityConstantForce(forces, forearm, k, 0.37 + 0.11 * k)
        act = Force.Actuators(forces, matter)
        act.add_coordinate_actuator("elbow", forearm, 2, 3.0)
        act.add_torque_actuator("twist", forearm, [0.0, 0.6, 0.8], 2.0, body_b=upper)
        state = _state(system, matter)
        act.set_control(state, "elbow", 0.3123)
        act.set_control(state, "twist", -0.7071)
        held.set_all_mobility_forces(state, [0.1, 0.2, -0.3, 0.0571])
        held.set_one_body_force(state, forearm, [[0.1, 0.0, 0.3], [1.0, -2.0, 0.5]])
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_use_compiled_loop(compiled)
        integ.initialize(state)
        integ.step_to(0.3)
        finals.append(np.array(integ.get_state().get_y()))
        if compiled:
            assert "calls Python" not in integ.describe_fast_path()
    assert np.array_equal(finals[0], finals[1])


def test_threads_simulating_states_of_one_system_with_other_controls_do_not_share_them():
    # The packed set is shared by every State of an instance; the controls are each evaluation's own
    # (the State's workspace, the stepper's inputs), so concurrent runs do not read each other's.
    import threading

    system, matter, upper, forearm, act = _model()
    base = _state(system, matter)
    system.realize(base, Stage.Instance)
    controls = [0.9, -0.6, 0.3, -1.2]

    def run(c, out, k):
        state = base.copy()
        act.set_control(state, "elbow", c)
        act.set_control(state, "twist", -c)
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-8)
        integ.initialize(state)
        integ.step_to(0.5)
        out[k] = np.array(integ.get_state().get_y())

    alone = [None] * len(controls)
    for k, c in enumerate(controls):
        run(c, alone, k)
    together = [None] * len(controls)
    for _ in range(3):  # (an interleaving that mixes them is likely in one of a few rounds)
        threads = [threading.Thread(target=run, args=(c, together, k)) for k, c in enumerate(controls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k in range(len(controls)):
            assert np.array_equal(together[k], alone[k]), f"run {k} (control {controls[k]})"
