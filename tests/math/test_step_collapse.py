"""The integrators' divergence watch (simtk/math/_divergence.py). Laws: a speed that grows by orders
of magnitude, or steps that stay far below the run's first one for many steps, end the run with
SimulationDivergedError at a check point (the same one on the compiled and Python loops), naming the
variable; the limits are settings, and the watch can be turned off."""
from __future__ import annotations

import math

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator, SimulationDivergedError, TimeStepper
from simtk.math._divergence import CHECK_EVERY

UNIT_BODY = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))


def pendulum():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Transform(), UNIT_BODY, Transform([0, 1, 0]))
    return system, forces, pin


class StiffeningSpring(Force.Custom.Implementation):
    """A spring on the pin whose stiffness grows as k0 exp(t / tau): its motion stays bounded while the
    steps an accurate integrator needs shrink without end (a step-size collapse without growth)."""

    def __init__(self, k0: float, tau: float):
        self.k0, self.tau = k0, tau

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        k = self.k0 * math.exp(state.get_time() / self.tau)
        mobility_forces[0] -= k * state.get_q()[0]

    def calc_potential_energy(self, state):
        return 0.0


class InvertedSpring(Force.Custom.Implementation):
    """A negative stiffness on the pin (an energy source): its motion runs away exponentially."""

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] += 400.0 * state.get_q()[0]

    def calc_potential_energy(self, state):
        return 0.0


def unstable_run(compiled: bool):
    """The pendulum on an inverted spring, through the compiled loop (its Python force called from
    it) or the Python one."""
    system, forces, pin = pendulum()
    Force.Custom(forces, InvertedSpring())
    state = system.realize_topology()
    pin.set_angle(state, 1e-3)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    integ.set_use_compiled_loop(compiled)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    return ts, integ


def test_runaway_speed_is_named_at_a_check_point_alike_on_both_loops():
    outcomes = []
    for compiled in (True, False):
        ts, integ = unstable_run(compiled)
        with pytest.raises(SimulationDivergedError) as info:
            ts.step_to(1e3)
        text = str(info.value)
        assert "diverged" in text and "'/matter/pin'" in text and "grew by a factor" in text
        assert "Likely cause" in text and "set_divergence_detection" in text
        assert integ.get_num_steps_taken() % CHECK_EVERY == 0
        s = integ.get_advanced_state()
        assert np.isfinite(s.get_y()).all() and f"State is left at t = {s.get_time()!r}" in text
        outcomes.append((text, s.get_time(), s.get_y().copy()))
    assert outcomes[0][0] == outcomes[1][0] and outcomes[0][1] == outcomes[1][1]
    assert np.array_equal(outcomes[0][2], outcomes[1][2])


def test_a_larger_growth_limit_lets_the_run_go_further():
    ts, integ = unstable_run(True)
    with pytest.raises(SimulationDivergedError):
        ts.step_to(1e3)
    t_default = integ.get_advanced_state().get_time()
    ts, integ = unstable_run(True)
    integ.set_divergence_detection(max_growth=1e300)
    with pytest.raises(SimulationDivergedError) as info:
        ts.step_to(1e3)
    assert integ.get_advanced_state().get_time() > t_default
    assert "an evaluation failed" in str(info.value)  # the overflow, as without the watch


def test_steps_that_collapse_without_growth_end_the_run():
    system, forces, pin = pendulum()
    Force.Custom(forces, StiffeningSpring(100.0, 0.05))
    state = system.realize_topology()
    pin.set_angle(state, 0.1)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-5)
    integ.set_divergence_detection(min_step_ratio=1e-2, collapse_steps=4 * CHECK_EVERY)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    with pytest.raises(SimulationDivergedError) as info:
        ts.step_to(100.0)
    text = str(info.value)
    assert "steps stayed below 0.01 times its first step" in text and "'/matter/pin'" in text
    assert integ.get_previous_step_size_taken() < 1e-2 * integ.get_actual_initial_step_size_taken()
    assert np.isfinite(integ.get_advanced_state().get_y()).all()


def test_defaults_are_on_and_limits_are_checked():
    system, forces, pin = pendulum()
    integ = RungeKuttaMersonIntegrator(system)
    assert integ.get_divergence_detection() == {"max_growth": 1e6, "min_step_ratio": 1e-6,
                                                "collapse_steps": 64 * CHECK_EVERY}
    with pytest.raises(ValueError, match="max_growth"):
        integ.set_divergence_detection(max_growth=0.5)
    with pytest.raises(ValueError, match="min_step_ratio"):
        integ.set_divergence_detection(min_step_ratio=2.0)
    with pytest.raises(TypeError, match="collapse_steps"):
        integ.set_divergence_detection(collapse_steps="many")
    integ.set_divergence_detection(False)
    assert integ.get_divergence_detection() is None


def test_a_stable_stiff_spring_is_not_stopped():
    """omega = 1000 rad/s under error control: small steps from the start, bounded motion."""
    system, forces, pin = pendulum()
    Force.MobilityLinearSpring(forces, pin, 0, 2e6, 0.0)
    state = system.realize_topology()
    pin.set_angle(state, 0.1)
    system.realize(state, Stage.Velocity)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(1.0)
    assert integ.get_num_steps_taken() > 2 * CHECK_EVERY
    assert ts.get_time() == 1.0
