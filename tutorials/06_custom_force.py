"""Tutorial 6: a custom Force -- the Python twin of seed 004 §3.1.

Tutorial 5 wrote the pairwise 1/r^2 repulsion as a whole ForceSubsystem. Seed §3.1 writes the same
force the easy way: a ``Force.Custom.Implementation`` with ``calc_force``, ``calc_potential_energy``
and ``depends_only_on_positions``, added to a ``GeneralForceSubsystem`` like any built-in force.

The C++ lines of the seed are shown as ``# C++:`` comments above their Python twins. As in
tutorial 5 the energy is ``+1/r`` (the seed's ``energy -= 1.0/r.norm()`` is the potential of an
attraction; the constant KE + PE printed below confirms the sign).

Because ``depends_only_on_positions()`` returns True, the force is computed once per change of q
and reused when only the speeds change: the call counter below shows it.

Run: ``python tutorials/06_custom_force.py``
"""
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
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper


# C++: class ExampleForce : public Force::Custom::Implementation {
class ExampleForce(Force.Custom.Implementation):
    # C++: ExampleForce(SimbodyMatterSubsystem& matter) : matter(matter) {}
    def __init__(self, matter):
        super().__init__()
        self.matter = matter
        self.calls = 0  # not in the seed: counts calc_force calls to show the caching

    # C++: void calcForce(const State& state, Vector_<SpatialVec>& bodyForces,
    # C++:                Vector_<Vec3>& particleForces, Vector& mobilityForces) const {
    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        self.calls += 1
        matter = self.matter
        # C++: for (MobilizedBodyIndex i(0); i < matter.getNBodies(); i++) {
        for i in range(matter.get_num_bodies()):
            # C++: const MobilizedBody& body1 = matter.getMobilizedBody(i);
            body1 = matter.get_mobilized_body(i)
            # C++: for (MobilizedBodyIndex j(0); j < i; j++) {
            for j in range(i):
                # C++: const MobilizedBody& body2 = matter.getMobilizedBody(j);
                body2 = matter.get_mobilized_body(j)
                # C++: Vec3 r = body1.getBodyOriginLocation(state) - body2.getBodyOriginLocation(state);
                r = body1.get_body_origin_location(state) - body2.get_body_origin_location(state)
                # C++: Real distance = r.norm();
                distance = np.linalg.norm(r)
                # C++: Vec3 force = r/(distance*distance*distance);
                force = r / (distance * distance * distance)
                # C++: bodyForces[i][1] += force;  bodyForces[j][1] -= force;
                body_forces[i, 1] += force
                body_forces[j, 1] -= force

    # C++: Real calcPotentialEnergy(const State& state) const {
    def calc_potential_energy(self, state):
        matter = self.matter
        energy = 0.0
        for i in range(matter.get_num_bodies()):
            body1 = matter.get_mobilized_body(i)
            for j in range(i):
                body2 = matter.get_mobilized_body(j)
                r = body1.get_body_origin_location(state) - body2.get_body_origin_location(state)
                # C++: energy -= 1.0/r.norm();   (the sign of an attraction; see the docstring)
                energy += 1.0 / np.linalg.norm(r)
        return energy

    # C++: bool dependsOnlyOnPositions() const { return true; }
    def depends_only_on_positions(self):
        return True


def main():
    # C++: MultibodySystem system;
    system = MultibodySystem()
    # C++: SimbodyMatterSubsystem matter(system);
    matter = SimbodyMatterSubsystem(system)
    # C++: GeneralForceSubsystem forces(system);
    forces = GeneralForceSubsystem(system)
    # C++: Force::Custom(forces, new ExampleForce(matter));
    implementation = ExampleForce(matter)
    Force.Custom(forces, implementation)

    body_info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    bodies = [MobilizedBody.Free(matter.ground, body_info) for _ in range(3)]
    state = system.realize_topology()
    for body, p in zip(bodies, ([1.0, 0, 0], [-0.5, 0.9, 0], [-0.5, -0.9, 0.2])):
        body.set_q(state, [1, 0, 0, 0, *p])  # unit quaternion, then position

    print("§3.1  Force.Custom: pairwise 1/r^2 repulsion")
    system.realize(state, Stage.Acceleration)
    F = system.get_rigid_body_forces(state)
    for body in bodies:
        i = body.get_mobilized_body_index()
        print(f"  body {i}: force {np.array2string(F[i, 1], precision=4, suppress_small=True)}")
    print(f"  potential energy {system.calc_potential_energy(state):.6f}   (calc_force calls: {implementation.calls})")

    # Only the speeds change: the position-only force is reused, not recomputed.
    bodies[0].set_u(state, [0, 0, 0, 0.0, 0.0, 1.0])
    system.realize(state, Stage.Acceleration)
    print(f"  after set_u:  udot[body 1] {np.array2string(bodies[0].get_udot(state)[3:], precision=4)}"
          f"   (calc_force calls: {implementation.calls})")
    bodies[0].set_q(state, [1, 0, 0, 0, 1.5, 0, 0])
    system.realize(state, Stage.Acceleration)
    print(f"  after set_q:  udot[body 1] {np.array2string(bodies[0].get_udot(state)[3:], precision=4)}"
          f"   (calc_force calls: {implementation.calls})")

    # Let them fly apart for 2 s: a conservative force keeps KE + PE constant.
    system.realize(state, Stage.Velocity)
    e0 = system.calc_energy(state)
    integrator = RungeKuttaMersonIntegrator(system)
    integrator.set_accuracy(1e-8)
    stepper = TimeStepper(system, integrator)
    stepper.initialize(state)
    stepper.step_to(2.0)
    end = stepper.get_state()
    system.realize(end, Stage.Velocity)
    print(f"  after 2 s: KE {system.calc_kinetic_energy(end):.6f} + PE {system.calc_potential_energy(end):.6f}"
          f" = {system.calc_energy(end):.6f} (start {e0:.6f}); {integrator.get_num_steps_taken()} steps")


if __name__ == "__main__":
    main()
