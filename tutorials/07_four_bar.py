"""Tutorial 7: a four-bar linkage -- a closed loop made of a tree plus a constraint.

Simbody models a closed kinematic loop as a tree of mobilized bodies (here three Pins: crank,
coupler, rocker) and a constraint that closes it (a ``Constraint.Ball`` joining the rocker's tip to
the second ground pivot). The equations of motion become ``M udot + G^T lambda = f``, ``G udot = b``;
simtk solves them with the O(n) operators and a small dense solve on the multipliers lambda.

The loop is planar, so of the Ball's three equations only two are independent (the out-of-plane
row of G is zero): the multipliers are found by least squares and the redundant one is zero.

Integrators keep the constraint errors within the constraint tolerance (accuracy / 10) by
projecting q and u onto the constraint manifold after steps that drift too far. The energy
changes by the integrator's own truncation error: RK-Merson removes a little energy per step,
a few times the accuracy over these 10 s (about 8e-6 relative at accuracy 1e-6 with the default
RMS norm); projection adds nothing measurable to that.

As in Simbody, the Ball's three equations are written in the common ancestor of its two bodies
(here Ground) and its reaction on the first body acts at that body's material point coincident
with the second body's station.

Run: ``python tutorials/07_four_bar.py``
"""
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
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper

system = MultibodySystem()
matter = SimbodyMatterSubsystem(system)
forces = GeneralForceSubsystem(system)
Force.UniformGravity(forces, matter, [0, -9.81, 0])

# A 1 m, 1 kg rod along its x axis, mass center in the middle.
rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))
crank = MobilizedBody.Pin(matter.Ground(), Transform(), rod, Transform())
coupler = MobilizedBody.Pin(crank, Transform([1, 0, 0]), rod, Transform())
rocker = MobilizedBody.Pin(coupler, Transform([1, 0, 0]), rod, Transform())
# Close the loop: the rocker's tip meets the ground pivot 1.5 m from the first one.
loop = Constraint.Ball(matter.Ground(), [1.5, 0, 0], rocker, [1, 0, 0])

state = system.realize_topology()
for body, angle in ((crank, 1.2), (coupler, -1.9), (rocker, -1.0)):
    body.set_one_q(state, 0, angle)  # a rough guess: the loop is open by a few cm
system.realize(state, Stage.Position)
print("position errors of the guess:", state.get_q_err())
system.project(state, 1e-12)  # Newton projection onto the loop closure
system.realize(state, Stage.Acceleration)
print("after projection:            ", state.get_q_err())
print("equations in use (mp, mv, ma):", loop.get_num_constraint_equations_in_use(state))
print("multipliers (force at the tip, the z one redundant):", loop.get_multipliers(state))

integ = RungeKuttaMersonIntegrator(system)
integ.set_accuracy(1e-6)
ts = TimeStepper(system, integ)
ts.initialize(state)
E0 = system.calc_energy(integ.get_state())
print(f"\n{'t':>5} {'crank':>8} {'max |perr|':>11} {'max |verr|':>11} {'(E - E0)/E0':>13}")
for t in np.linspace(1, 10, 10):
    ts.step_to(t)
    s = integ.get_state()
    system.realize(s, Stage.Velocity)
    print(f"{t:5.1f} {crank.get_one_q(s, 0):8.4f} {np.abs(s.get_q_err()).max():11.2e} "
          f"{np.abs(s.get_u_err()).max():11.2e} {(system.calc_energy(s) - E0) / abs(E0):13.2e}")
print(f"\nconstraint tolerance {integ.get_constraint_tolerance_in_use():g}; {integ.get_num_steps_taken()} steps, "
      f"{integ.get_num_projections()} projections")

# The constraint's force on the rocker, and the pin reactions, now include the loop's load.
s = integ.get_state()
system.realize(s, Stage.Acceleration)
print("force the loop applies to the rocker (at its origin, in Ground):", -loop.get_constrained_body_forces(s)[1])
print("crank pin reaction (torque, force):", matter.calc_mobilizer_reaction_forces(s)[crank.get_mobilized_body_index()])
