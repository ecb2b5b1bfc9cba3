"""Small models whose saved and restored States must continue a simulation bitwise (pickling, snapshots).

Each builder returns ``(system, state)`` with nonzero velocities, discrete variables away from their
defaults and, for the multibody ones, forces and constraints of several kinds; `trajectory` integrates
from a State with an error-controlled or a fixed-step integrator and returns the rows (t, y).
"""
from __future__ import annotations

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    Subsystem,
    System,
    TimeStepper,
    Transform,
)


class Drag(Force.Custom.Implementation):
    """A user force defined at module level (so pickle can find its class): -c u on the first mobility."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] -= self.c * state.get_u()[0]


class Oscillator(Subsystem):
    """z'' = -k z with k a discrete variable declared by name."""

    def __init__(self, system):
        super().__init__(system, name="osc")
        self.add_state_variable("x", 1.0)
        self.add_state_variable("v", 0.0)
        self.add_discrete_variable("k", Stage.Dynamics, 4.0)

    def realize_subsystem_acceleration_impl(self, state):
        x, v = self.get_state_variable_values(state)
        self.set_state_variable_derivative(state, "x", v)
        self.set_state_variable_derivative(state, "v", -self.get_discrete_variable_value(state, "k") * x)


def pendulum(with_damper: bool = False):
    """A Pin and a Ball under gravity, a spring, a user's drag force and discrete mobility forces."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia([0.1, 0.01, 0.1])))
    a = MobilizedBody.Pin(matter.ground, body, name="upper")
    b = MobilizedBody.Ball(a, Transform([0, -1, 0]), body, Transform(), name="lower")
    Force.TwoPointLinearSpring(forces, matter.ground, [0.5, 0, 0], b, [0, -1, 0], 20.0, 0.5, name="spring")
    Force.Custom(forces, Drag(0.3), name="drag")
    push = Force.DiscreteForces(forces, matter, name="push")
    if with_damper:
        Force.GlobalDamper(forces, matter, 0.2, name="damper")
    state = system.realize_topology()
    a.set_angle(state, 0.4)
    b.set_u(state, [0.5, -1.0, 2.0])
    push.set_all_mobility_forces(state, [0.3, 0.0, 0.1, -0.2])
    state.set_time(0.25)
    return system, state


def four_bar():
    """A four-bar loop closed by a Ball constraint, with a disabled speed lock on the crank."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))
    crank = MobilizedBody.Pin(matter.ground, Transform(), rod, Transform())
    coupler = MobilizedBody.Pin(crank, Transform([1, 0, 0]), rod, Transform())
    rocker = MobilizedBody.Pin(coupler, Transform([1, 0, 0]), rod, Transform())
    Constraint.Ball(matter.ground, [1.5, 0, 0], rocker, [1, 0, 0])
    Constraint.ConstantSpeed(crank, 0, 0.0, name="lock").set_disabled_by_default(True)
    state = system.realize_topology()
    state.set_q([1.2, -1.9, -1.0])
    system.project(state, 1e-12)
    return system, state


def oscillator():
    """A plain Subsystem with named state and discrete variables."""
    system = System()
    osc = Oscillator(system)
    state = system.realize_topology()
    osc.set_discrete_variable_value(state, "k", 9.0)
    osc.set_state_variable_value(state, "v", 0.5)
    return system, state


MODELS = {"pendulum": pendulum, "four_bar": four_bar, "oscillator": oscillator}


def trajectory(system, state, fixed: bool, n: int = 30) -> np.ndarray:
    """Rows (t, y) every 5 ms from ``state``: RK-Merson at accuracy 1e-7, or semi-explicit Euler at 1 ms."""
    integ = SemiExplicitEulerIntegrator(system, 1e-3) if fixed else RungeKuttaMersonIntegrator(system)
    if not fixed:
        integ.set_accuracy(1e-7)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    t0 = state.get_time()
    rows = []
    for k in range(1, n + 1):
        ts.step_to(t0 + 0.005 * k)
        rows.append(np.concatenate([[ts.get_time()], ts.get_state().get_y()]))
    return np.array(rows)
