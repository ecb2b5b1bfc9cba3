"""Tutorial 5: a custom ForceSubsystem -- the Python twin of seed 004 §2.2, §2.3 and §2.4.

"Advanced Programming with SimTK" builds a Coulomb-like force in three steps:

* §2.2  a ``ForceSubsystem`` that makes every pair of bodies repel with a 1/r^2 force;
* §2.3  the same with a force strength that is a *parameter* (a topological property: changing it
        invalidates every existing State);
* §2.4  the same with the force strength held in a *discrete state variable* (changing it in a State
        only invalidates Dynamics and above).

In C++ every subsystem is a pair of classes (a handle ``ExampleSubsystem`` and its implementation
``ExampleSubsystemImpl : ForceSubsystem::Guts``, plus ``cloneImpl()``); in Python one class does
both, so the handle, ``adoptSubsystemGuts`` and ``cloneImpl`` disappear. The C++ lines of the seed
are shown as ``# C++:`` comments above their Python twins.

One correction: the seed writes the energy as ``energy -= 1.0/r.norm()``, which is the potential of an
*attraction*. The force ``r/|r|^3`` on body i pushes it away from body j, whose potential is
``+1/|r|`` (its gradient is ``-r/|r|^3``). We use ``+``; the constant total energy printed at the end
of part 1 confirms the sign.

Run: ``python tutorials/05_custom_force_subsystem.py``
"""
import numpy as np

from simtk import (
    Body,
    ForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    TopologyVersionError,
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper


# ------------------------------------------------------------------------------------------ §2.2
# C++: class ExampleSubsystemImpl : public ForceSubsystem::Guts {
class ExampleSubsystem(ForceSubsystem):
    """Every pair of mobilized bodies (Ground included) repels with a force r/|r|^3."""

    # C++: ExampleSubsystem(MultibodySystem& system) {
    # C++:     adoptSubsystemGuts(new ExampleSubsystemImpl());   // Guts named ("Example", "1.0")
    # C++:     system.addForceSubsystem(*this);
    def __init__(self, system):
        super().__init__(system, "Example", "1.0")  # ForceSubsystem calls system.add_force_subsystem(self)

    def force_strength(self, state) -> float:
        return 1.0

    # C++: int realizeSubsystemDynamicsImpl(const State& state) const {
    def realize_subsystem_dynamics_impl(self, state):
        # C++: const MultibodySystem& system = MultibodySystem::downcast(getSystem());
        system = self.get_system()
        # C++: const SimbodyMatterSubsystem& matter = system.getMatterSubsystem();
        matter = system.get_matter_subsystem()
        # C++: Vector_<SpatialVec>& forces = system.updRigidBodyForces(state, Stage::Dynamics);
        forces = system.upd_rigid_body_forces(state, Stage.Dynamics)  # (nb, 2, 3): torque, force
        strength = self.force_strength(state)
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
                force = strength * r / (distance * distance * distance)
                # C++: forces[i][1] += force;  forces[j][1] -= force;
                forces[i, 1] += force
                forces[j, 1] -= force

    # C++: Real calcPotentialEnergy(const State& state) const {
    def calc_potential_energy(self, state):
        matter = self.get_system().get_matter_subsystem()
        strength = self.force_strength(state)
        energy = 0.0
        for i in range(matter.get_num_bodies()):
            body1 = matter.get_mobilized_body(i)
            for j in range(i):
                body2 = matter.get_mobilized_body(j)
                r = body1.get_body_origin_location(state) - body2.get_body_origin_location(state)
                # C++: energy -= 1.0/r.norm();   (the sign of an attraction; see the docstring)
                energy += strength / np.linalg.norm(r)
        return energy


def build(subsystem_class):
    """Three Free bodies around Ground's origin, and the repulsion subsystem."""
    # C++: MultibodySystem system;  SimbodyMatterSubsystem matter(system);  ExampleSubsystem example(system);
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    example = subsystem_class(system)
    body_info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    bodies = [MobilizedBody.Free(matter.ground, body_info) for _ in range(3)]
    return system, matter, example, bodies


def place(state, bodies):
    """Origins at the corners of a triangle around Ground's origin; at rest."""
    for body, p in zip(bodies, ([1.0, 0, 0], [-0.5, 0.9, 0], [-0.5, -0.9, 0.2])):
        body.set_q(state, [1, 0, 0, 0, *p])  # unit quaternion, then position


def part_2_2():
    print("§2.2  a ForceSubsystem: pairwise 1/r^2 repulsion")
    system, matter, example, bodies = build(ExampleSubsystem)
    state = system.realize_topology()
    place(state, bodies)
    system.realize(state, Stage.Acceleration)
    F = system.get_rigid_body_forces(state)
    for body in bodies:
        i = body.get_mobilized_body_index()
        print(f"  body {i}: force {np.array2string(F[i, 1], precision=4, suppress_small=True)}, "
              f"acceleration {np.array2string(body.get_body_origin_acceleration(state), precision=4, suppress_small=True)}")
    print(f"  potential energy {system.calc_potential_energy(state):.6f}")

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
          f" = {system.calc_energy(end):.6f} (start {e0:.6f})")


# ------------------------------------------------------------------------------------------ §2.3
class ExampleSubsystemWithParameter(ExampleSubsystem):
    """§2.3: the strength is a topological property of the subsystem."""

    # C++: ExampleSubsystemImpl() : ForceSubsystem::Guts("Example", "1.0"), defaultForceStrength(1.0) {}
    def __init__(self, system):
        self._default_force_strength = 1.0
        super().__init__(system)

    # C++: void setDefaultForceStrength(Real strength) {
    # C++:     defaultForceStrength = strength;
    # C++:     invalidateSubsystemTopologyCache();
    def set_default_force_strength(self, strength: float) -> None:
        self._default_force_strength = float(strength)
        self.invalidate_subsystem_topology_cache()

    # C++: Real getDefaultForceStrength() const { return defaultForceStrength; }
    def get_default_force_strength(self) -> float:
        return self._default_force_strength

    def force_strength(self, state) -> float:
        return self._default_force_strength


def part_2_3():
    print("§2.3  the strength as a parameter: a topology change")
    system, matter, example, bodies = build(ExampleSubsystemWithParameter)
    old = system.realize_topology()
    place(old, bodies)
    system.realize(old, Stage.Dynamics)
    f1 = system.get_rigid_body_forces(old)[1, 1].copy()
    example.set_default_force_strength(2.0)
    try:
        system.realize(old, Stage.Acceleration)
    except TopologyVersionError as error:
        print(f"  the old State is refused: {type(error).__name__}")
    state = system.realize_topology()  # a State of the new topology
    place(state, bodies)
    system.realize(state, Stage.Dynamics)
    f2 = system.get_rigid_body_forces(state)[1, 1]
    print(f"  force on body 1 with strength 1: {np.array2string(f1, precision=4)}")
    print(f"  force on body 1 with strength 2: {np.array2string(f2, precision=4)}")


# ------------------------------------------------------------------------------------------ §2.4
class ExampleSubsystemWithStateVariable(ExampleSubsystemWithParameter):
    """§2.4: the strength lives in the State as a discrete variable; the parameter is its default."""

    # C++: int realizeSubsystemTopologyImpl(State& state) const {
    # C++:     forceStrengthIndex = allocateDiscreteVariable(state, Stage::Dynamics,
    # C++:                                                   new Value<Real>(defaultForceStrength));
    def realize_subsystem_topology_impl(self, state):
        # Storing an index allocated at Topology on the subsystem is allowed (seed §2.4): every
        # realization of this topology allocates the same index.
        self._force_strength_index = self.allocate_discrete_variable(state, Stage.Dynamics,
                                                                     self._default_force_strength)

    # C++: void setForceStrength(State& state, Real strength) const {
    # C++:     Value<Real>::updDowncast(updDiscreteVariable(state, forceStrengthIndex)) = strength;
    def set_force_strength(self, state, strength: float) -> None:
        self.set_discrete_variable(state, self._force_strength_index, float(strength))

    # C++: Real getForceStrength(const State& state) const {
    # C++:     return Value<Real>::downcast(getDiscreteVariable(state, forceStrengthIndex));
    def get_force_strength(self, state) -> float:
        return self.get_discrete_variable(state, self._force_strength_index)

    # C++: Real forceStrength = getForceStrength(state);   (in realizeSubsystemDynamicsImpl)
    force_strength = get_force_strength


def part_2_4():
    print("§2.4  the strength as a discrete state variable: a Dynamics change")
    system, matter, example, bodies = build(ExampleSubsystemWithStateVariable)
    state = system.realize_topology()
    place(state, bodies)
    system.realize(state, Stage.Acceleration)
    print(f"  default strength {example.get_force_strength(state)}, stage {state.get_system_stage().name}, "
          f"udot[body 1] {np.array2string(bodies[0].get_udot(state)[3:], precision=4)}")
    example.set_force_strength(state, 3.0)
    print(f"  set_force_strength(state, 3.0): stage drops to {state.get_system_stage().name}")
    system.realize(state, Stage.Acceleration)
    print(f"  strength {example.get_force_strength(state)}, udot[body 1] "
          f"{np.array2string(bodies[0].get_udot(state)[3:], precision=4)}, PE {system.calc_potential_energy(state):.6f}")
    print(f"  a new State still has the default: {example.get_force_strength(system.realize_topology())}")


if __name__ == "__main__":
    part_2_2()
    part_2_3()
    part_2_4()
