"""Tutorial 4: an n-link pendulum chain, its energy drift and the cost of a step.

n identical links (1 kg, 0.5 m, a thin rod's inertia) hang one below the other from Pin joints
and start from a bent pose, at rest. Gravity is the only force, so the total energy must stay
constant: its drift measures the integrator's error. The chain is simulated with the
Runge-Kutta-Merson integrator and the script prints, once per simulated second, the energy and
the tip height, then the energy drift and the wall-clock time per step and per realization.

It also shows the matter subsystem's operators on the final state: the mass matrix M (n x n) from
``calc_m`` and the inverse-dynamics check that M udot + bias = applied forces.

Run: ``python tutorials/04_chain.py [n_links] [final_time] [accuracy]``
(defaults 10 links, 3 s, 1e-8).
"""
from __future__ import annotations

import sys
import time

import numpy as np

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
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper

LINK = 0.5  # m


def build(n: int):
    """A MultibodySystem with n Pin links in a chain under gravity; returns (system, matter, links)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])

    # A thin rod along y, 1 kg, mass center at its middle (the body origin is its top end, where
    # the pin is). MassProperties wants the inertia about the body origin: build it from the
    # central inertia.
    mass = 1.0
    rod = Inertia([mass * LINK ** 2 / 12, 1e-4, mass * LINK ** 2 / 12])
    body = Body.Rigid(MassProperties.from_central_inertia(mass, [0.0, -LINK / 2, 0.0], rod))

    links = []
    parent, X_PF = matter.ground, Transform()
    for _ in range(n):
        # Each pin sits at the bottom end of the previous link (its top end for the first link).
        link = MobilizedBody.Pin(parent, X_PF, body, Transform())
        links.append(link)
        parent, X_PF = link, Transform([0.0, -LINK, 0.0])
    return system, matter, links


def main(n: int = 10, final_time: float = 3.0, accuracy: float = 1e-8) -> float:
    system, matter, links = build(n)
    state = system.realize_topology()
    for i, link in enumerate(links):  # a bent start: alternating angles, at rest
        link.set_angle(state, 0.6 if i == 0 else 0.2 * (-1) ** i)
    system.realize(state, Stage.Acceleration)
    energy0 = system.calc_energy(state)
    tip = links[-1]

    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    stepper = TimeStepper(system, integ)
    stepper.initialize(state)

    print(f"{n}-link pendulum chain, RK-Merson at accuracy {accuracy:g}")
    print(f"{'t (s)':>6} {'energy (J)':>14} {'tip height (m)':>15}")
    t, wall = 0.0, 0.0
    while t < final_time - 1e-12:
        t = min(t + 1.0, final_time)
        t0 = time.perf_counter()
        stepper.step_to(t)
        wall += time.perf_counter() - t0
        s = stepper.get_state()
        system.realize(s, Stage.Velocity)
        height = tip.find_station_location_in_ground(s, [0.0, -LINK, 0.0])[1]
        print(f"{s.get_time():6.1f} {system.calc_energy(s):14.9f} {height:15.6f}")

    s = stepper.get_state()
    system.realize(s, Stage.Acceleration)
    drift = abs(system.calc_energy(s) - energy0) / abs(energy0)
    steps, realizations = integ.get_num_steps_taken(), integ.get_num_realizations()
    print(f"relative energy drift over {final_time:g} s: {drift:.2e}")
    print(f"{steps} steps, {realizations} realizations in {wall:.2f} s: "
          f"{1e6 * wall / max(steps, 1):.0f} us per step, {1e6 * wall / max(realizations, 1):.1f} us per realization")

    # The operators on the final state: M from composite-body inertias, and inverse dynamics
    # reproducing the applied (gravity) forces from the realized accelerations.
    M = matter.calc_m(s)
    residual = matter.calc_residual_force_ignoring_constraints(
        s, system.get_mobility_forces(s), system.get_rigid_body_forces(s), s.get_udot())
    print(f"mass matrix {M.shape}, condition number {np.linalg.cond(M):.3g}; "
          f"|inverse-dynamics residual of the realized udot| = {np.abs(residual).max():.1e}")
    return drift


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 10, float(args[1]) if len(args) > 1 else 3.0,
         float(args[2]) if len(args) > 2 else 1e-8)
