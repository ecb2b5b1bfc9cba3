"""Failures are diagnosed truthfully: each cause is provoked and its error names the real culprit.

Laws: a simulation whose State grows without bound raises `SimulationDivergedError` naming the
variable that grew and how fast, and advises a smaller step; a genuinely singular articulated
inertia raises `SingularArticulatedInertiaError` naming the body and the mobility; a force element
that produces NaN raises `NonFiniteForceError` naming the element (and is not mistaken for
divergence); constraints that cannot be met raise `ConstraintViolationError` naming the constraint.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Assembler,
    Body,
    Constraint,
    ConstraintViolationError,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    NonFiniteDerivativeError,
    NonFiniteForceError,
    RungeKuttaMersonIntegrator,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    SimulationDivergedError,
    SingularArticulatedInertiaError,
    Stage,
    TimeStepper,
    Transform,
)

UNIT_BODY = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))


def pendulum_with_spring(stiffness: float):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Transform(), UNIT_BODY, Transform([0, 1, 0]))
    Force.MobilityLinearSpring(forces, pin, 0, stiffness, 0.0)
    return system, matter, forces, pin


def test_divergence_of_a_too_large_fixed_step_is_named_with_its_growth():
    # omega = sqrt(k / I) = 1000 rad/s with h = 0.01: omega h = 10 > 2, so semi-explicit Euler is unstable.
    system, matter, forces, pin = pendulum_with_spring(1e6)
    state = system.realize_topology()
    pin.set_angle(state, 0.1)
    ts = TimeStepper(system, SemiExplicitEulerIntegrator(system, 1e-2))
    ts.initialize(state)
    with pytest.raises(SimulationDivergedError) as info:
        ts.step_to(100.0)
    text = str(info.value)
    assert "diverged" in text and "'/matter/pin'" in text
    assert "per step" in text and "e-folding time" in text
    assert "smaller step" in text and "RungeKuttaMersonIntegrator" in text
    assert "singular" not in text.split("(The failure")[0]
    assert isinstance(info.value, NonFiniteDerivativeError)  # still caught by the older handlers
    left = ts.get_state()
    assert 0 < left.get_time() < 100 and np.isfinite(left.get_y()).all()


def test_same_model_with_error_control_does_not_diverge():
    system, matter, forces, pin = pendulum_with_spring(1e6)
    state = system.realize_topology()
    pin.set_angle(state, 0.1)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-4)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(0.01)
    # energy 0.5 k q0^2 = 5e3 J bounds |u|: 0.5 I u^2 <= 5e3 -> |u| <= 100, with slack for the accuracy
    assert np.abs(ts.get_state().get_u()).max() < 110


def test_singular_articulated_inertia_names_the_body_and_mobility():
    # A thin rod along x on a Ball joint at its mass center has no inertia about x: D is singular
    # about the Ball's first mobility (the x axis), and only there.
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    rod = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia([0.0, 0.1, 0.1])))
    ball = MobilizedBody.Ball(matter.ground, Transform(), rod, Transform())
    state = system.realize_topology()
    ball.set_u(state, [1.0, 0.0, 0.0])
    with pytest.raises(SingularArticulatedInertiaError) as info:
        system.realize(state, Stage.Acceleration)
    e = info.value
    assert e.body is ball and e.mobility == 0
    text = str(e)
    assert "'/matter/ball'" in text and "mobility 0" in text and "singular" in text
    assert "diverged" not in text


def test_massless_leaf_body_is_singular_not_divergent():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    arm = MobilizedBody.Pin(matter.ground, Transform(), UNIT_BODY, Transform([0, 1, 0]))
    tip = MobilizedBody.Slider(arm, Transform([0, -1, 0]), Body.Massless(), Transform())
    state = system.realize_topology()
    with pytest.raises(SingularArticulatedInertiaError) as info:
        system.realize(state, Stage.Acceleration)
    assert info.value.body is tip and "'/matter/slider'" in str(info.value)
    # through an integrator, at the start of the run: a singular model is not called divergence
    with pytest.raises(SingularArticulatedInertiaError):
        RungeKuttaMersonIntegrator(system).initialize(system.realize_topology())


class NaNAfter(Force.Custom.Implementation):
    """A user force that returns NaN once t passes ``t_bad``."""

    def __init__(self, pin, t_bad):
        self.pin, self.t_bad = pin, t_bad

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        if state.get_time() > self.t_bad:
            mobility_forces[0] += np.nan

    def calc_potential_energy(self, state):
        return 0.0


@pytest.mark.parametrize("t_bad", [-1.0, 0.05])
def test_non_finite_user_force_names_the_element(t_bad):
    system, matter, forces, pin = pendulum_with_spring(10.0)
    bad = Force.Custom(forces, NaNAfter(pin, t_bad))
    state = system.realize_topology()
    pin.set_angle(state, 0.1)
    ts = TimeStepper(system, SemiExplicitEulerIntegrator(system, 1e-3))
    with pytest.raises(NonFiniteForceError) as info:
        ts.initialize(state)
        ts.step_to(1.0)
    assert info.value.element is bad
    text = str(info.value)
    assert repr(bad) in text and "NaNAfter.calc_force" in text and "non-finite force" in text
    assert not isinstance(info.value, SimulationDivergedError)


def unreachable_loop():
    """A three-link chain (each link 1 m) whose tip is tied to a ground point 10 m away."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))
    a = MobilizedBody.Pin(matter.ground, Transform(), rod, Transform())
    b = MobilizedBody.Pin(a, Transform([1, 0, 0]), rod, Transform())
    c = MobilizedBody.Pin(b, Transform([1, 0, 0]), rod, Transform())
    loop = Constraint.Ball(matter.ground, [10.0, 0, 0], c, [1, 0, 0])
    return system, loop


def test_unsatisfiable_constraint_is_named_by_projection():
    system, loop = unreachable_loop()
    state = system.realize_topology()
    with pytest.raises(ConstraintViolationError) as info:
        system.project(state, 1e-8)
    assert info.value.constraint is loop and repr(loop) in str(info.value)
    assert abs(info.value.error) > 1.0  # the tip is 10 - 3 m short at best
    assert "cannot be satisfied" in str(info.value)


def test_unsatisfiable_constraint_is_named_by_the_assembler():
    system, loop = unreachable_loop()
    state = system.realize_topology()
    with pytest.raises(ConstraintViolationError) as info:
        Assembler(system).assemble(state)
    assert info.value.constraint is loop and repr(loop) in str(info.value)


def test_a_zero_quaternion_is_refused_naming_the_body_not_turned_into_nan():
    """Found by the fuzz test: q = 0 on a Ball made NaN positions silently."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    ball = MobilizedBody.Ball(matter.ground, Transform(), UNIT_BODY, Transform([0, 1, 0]), name="shoulder")
    state = system.realize_topology()
    state.set_q(np.zeros(4))
    with pytest.raises(ValueError, match="'/matter/shoulder'.*quaternion is zero"):
        system.realize(state, Stage.Position)
    assert state.get_system_stage() < Stage.Position
    ball.set_q(state, [1.0, 0, 0, 0])
    system.realize(state, Stage.Position)
    assert np.isfinite(ball.get_body_origin_location(state)).all()
