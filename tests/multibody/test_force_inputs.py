"""Compiled force sets fed from the State (``Force.Actuators``, ``Force.PathActuator``): their controls are
the evaluation's inputs, not values baked into the shared set.

Checked: a control change is a Dynamics-stage change (no Instance work, the compiled loop kept); the
compiled and Python time loops give bitwise the same trajectory with both kinds, DiscreteForces and a
control changed between runs; the batch rows equal the State API at the State's controls; the functional
forms refuse such a model naming the element; the two kinds' inputs do not collide (each at its offset).
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Force,
    Function,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MultibodySystem,
    PathPoint,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
)
from simtk.spatial import Body, MassProperties, Transform
from tolerances import tol

BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.3, 0.0], np.diag([0.02, 0.01, 0.02])))


def _model(discrete_first: bool = False, discrete: bool = True):
    system = MultibodySystem("fed")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    held = Force.DiscreteForces(forces, matter) if discrete_first else None
    b1 = MobilizedBody.Pin(matter.ground, Transform(), BODY, Transform([0.0, 0.3, 0.0]), name="upper")
    b2 = MobilizedBody.Slider(b1, Transform([0.05, -0.4, 0.0]), BODY, Transform(), name="lower")
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    act = Force.Actuators(forces, matter)
    act.add_coordinate_actuator("hip", b1, 0, 3.0)
    act.add_control_function("hip", Function.Sinusoid(0.4, 5.0, 0.2))
    path = GeometryPath(matter, [PathPoint(matter.ground, [0.2, 0.1, 0.0]), PathPoint(b1, [0.05, -0.2, 0.0]),
                                 PathPoint(b2, [0.0, -0.1, 0.02])], name="line")
    pact = Force.PathActuator(forces, path, 40.0, control=0.25)
    if held is None and discrete:
        held = Force.DiscreteForces(forces, matter)
    return system, matter, act, pact, held


def _state(system, matter, q=(0.3, 0.05), u=(0.2, -0.1)):
    state = system.realize_topology()
    system.realize_model(state)
    matter.upd_q(state)[:] = q
    matter.upd_u(state)[:] = u
    return state


def test_a_control_change_is_a_dynamics_stage_change():
    system, matter, act, pact, held = _model()
    state = _state(system, matter)
    system.realize(state, Stage.Acceleration)
    udot0 = np.array(matter.get_udot(state))
    pact.set_control(state, -0.5)
    assert state.get_system_stage() == Stage.Velocity  # Instance and Position kept
    system.realize(state, Stage.Acceleration)
    udot1 = np.array(matter.get_udot(state))
    # the path's pull changed by 40 * (-0.75) along it: its generalized forces, by virtual work
    gen = pact.get_geometry_path().calc_generalized_forces(state, 40.0 * (-0.75))
    M = matter.calc_m(state)
    assert np.abs(gen).max() > 1.0
    assert np.abs(M @ (udot1 - udot0) - gen).max() <= tol(np.abs(gen).max(), 1e3)


@pytest.mark.parametrize("discrete_first", [False, True])
def test_compiled_loop_equals_python_loop_bitwise_with_both_kinds(discrete_first):
    finals = []
    for compiled in (True, False):
        system, matter, act, pact, held = _model(discrete_first)
        state = _state(system, matter)
        act.set_control(state, "hip", 0.3)
        held.set_all_mobility_forces(state, [0.0571, -0.31])
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_use_compiled_loop(compiled)
        integ.initialize(state)
        integ.step_to(0.2)
        pact.set_control(integ.upd_advanced_state(), 0.8)  # as a controller would: read at the next run
        integ.reinitialize(Stage.Dynamics)
        integ.step_to(0.4)
        finals.append(np.array(integ.get_state().get_y()))
        if compiled:
            assert "calls Python" not in integ.describe_fast_path()
    assert np.array_equal(finals[0], finals[1])


def test_batch_rows_use_the_states_controls():
    system, matter, act, pact, held = _model(discrete=False)
    rng = np.random.default_rng(3)
    q, u = rng.uniform(-0.4, 0.4, (5, 2)), rng.normal(size=(5, 2))
    state = _state(system, matter)
    state.set_time(0.7)
    act.set_control(state, "hip", -0.6)
    pact.set_control(state, 0.9)
    system.realize(state, Stage.Instance)
    rows = matter.calc_udot_batch(q, u, state=state)
    for k in range(5):
        s = state.copy()
        matter.upd_q(s)[:] = q[k]
        matter.upd_u(s)[:] = u[k]
        system.realize(s, Stage.Acceleration)
        assert np.array_equal(rows[k], np.asarray(matter.get_udot(s)))
    with pytest.raises(ValueError, match="functions of time"):
        matter.step_batch(q, u, state=state, h=1e-3)  # its steps would not advance the hip's sin(5 t)


def test_functional_forms_refuse_a_model_fed_from_the_state_by_name():
    system, matter, act, pact, held = _model(discrete=False)
    with pytest.raises(NotImplementedError, match=r"/forces/actuators.*controls held in a State"):
        matter.functional_dynamics()


def test_each_kind_reads_its_own_input():
    # Both kinds in one input vector: a change of one's control moves only its own forces.
    system, matter, act, pact, held = _model()
    state = _state(system, matter)
    system.realize(state, Stage.Velocity)
    before_act = act.calc_force_contribution(state)
    pact.set_control(state, 0.9)
    system.realize(state, Stage.Velocity)
    after_act = act.calc_force_contribution(state)
    assert all(np.array_equal(a, b) for a, b in zip(before_act, after_act))
    system.realize(state, Stage.Acceleration)
    bf, mf = pact.calc_force_contribution(state)
    gen = matter.multiply_by_system_jacobian_transpose(state, bf) + mf
    expected = pact.get_geometry_path().calc_generalized_forces(state, 40.0 * 0.9)
    assert np.abs(gen - expected).max() <= tol(np.abs(expected).max(), 1e2)
