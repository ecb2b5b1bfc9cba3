"""Tutorial 8: a custom Constraint -- the Python twin of seed 004 §3.2.

The seed's ``ExampleConstraint`` keeps the distance between two body origins fixed: one holonomic
equation (mp, mv, ma) = (1, 0, 0), written as its error and two time derivatives

    perr = (r.r - d^2)/2,   pverr = v.r,   paerr = a.r + v.v

plus the forces for given multipliers. All kinematics come from the Implementation's helpers and
are measured in the constrained bodies' common ancestor (Ground here). The C++ lines are shown as
``# C++:`` comments above their Python twins; ``getBodyOriginLocation(state, body, true)``'s third
argument is accepted and ignored.

We then check it the way the seed suggests: it must move exactly like the built-in
``Constraint.Rod`` between the same points.

Run: ``python tutorials/08_custom_constraint.py``
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


# C++: class ExampleConstraint : public Constraint::Custom::Implementation {
class ExampleConstraint(Constraint.Custom.Implementation):
    # C++: ExampleConstraint(MobilizedBody& b1, MobilizedBody& b2, Real distance) :
    # C++:     Implementation(b1.updMatterSubsystem(), 1, 0, 0), distance(distance) {
    def __init__(self, b1, b2, distance):
        super().__init__(b1.upd_matter_subsystem(), 1, 0, 0)
        self.distance = distance
        # C++: body1 = addConstrainedBody(b1);  body2 = addConstrainedBody(b2);
        self.body1 = self.add_constrained_body(b1)
        self.body2 = self.add_constrained_body(b2)

    # C++: void realizePositionErrors(const State& state, int mp, Real* perr) const {
    def realize_position_errors(self, state, mp, perr):
        r1 = self.get_body_origin_location(state, self.body1, True)
        r2 = self.get_body_origin_location(state, self.body2, True)
        # C++: perr[0] = ((r1-r2).normSqr()-distance*distance)/2;
        perr[0] = ((r1 - r2) @ (r1 - r2) - self.distance * self.distance) / 2

    # C++: void realizePositionDotErrors(const State& state, int mp, Real* pverr) const {
    def realize_position_dot_errors(self, state, mp, pverr):
        r = self.get_body_origin_location(state, self.body2, True) - self.get_body_origin_location(state, self.body1, True)
        v = self.get_body_velocity(state, self.body2, True)[1] - self.get_body_velocity(state, self.body1, True)[1]
        pverr[0] = v @ r

    # C++: void realizePositionDotDotErrors(const State& state, int mp, Real* paerr) const {
    def realize_position_dot_dot_errors(self, state, mp, paerr):
        r = self.get_body_origin_location(state, self.body2, True) - self.get_body_origin_location(state, self.body1, True)
        v = self.get_body_velocity(state, self.body2, True)[1] - self.get_body_velocity(state, self.body1, True)[1]
        a = self.get_body_acceleration(state, self.body2, True)[1] - self.get_body_acceleration(state, self.body1, True)[1]
        paerr[0] = a @ r + v @ v

    # C++: void applyPositionConstraintForces(const State& state, int mp, const Real* multipliers,
    # C++:     Vector_<SpatialVec>& bodyForcesInA, Vector& mobilityForces) const {
    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        r = self.get_body_origin_location(state, self.body2, True) - self.get_body_origin_location(state, self.body1, True)
        force = multipliers[0] * r
        self.add_in_station_force(state, self.body2, np.zeros(3), force, body_forces_in_a)
        self.add_in_station_force(state, self.body1, np.zeros(3), -force, body_forces_in_a)


def build(custom: bool):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    # Two free-swinging pendulums whose bobs are held 1 m apart.
    p1 = MobilizedBody.Ball(matter.Ground(), Transform([0, 0, 0]), body, Transform([0, 1, 0]))
    p2 = MobilizedBody.Ball(matter.Ground(), Transform([1, 0, 0]), body, Transform([0, 1, 0]))
    if custom:
        # C++: Constraint::Custom(new ExampleConstraint(p1, p2, 1.0));
        c = Constraint.Custom(ExampleConstraint(p1, p2, 1.0))
    else:
        c = Constraint.Rod(p1, [0, 0, 0], p2, [0, 0, 0], 1.0)
    return system, matter, p1, p2, c


def main():
    finals = []
    for custom in (False, True):
        system, matter, p1, p2, c = build(custom)
        state = system.realize_topology()
        p1.set_q(state, [np.cos(0.3), 0.0, 0.0, np.sin(0.3)])  # swung 0.6 rad toward the other bob
        p2.set_q(state, [np.cos(0.3), 0.0, 0.0, np.sin(0.3)])  # (so the distance starts at 1 m)
        p1.set_u(state, [1.5, 0.0, 0.0])  # an out-of-plane kick; projection makes u consistent
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-8)
        ts = TimeStepper(system, integ)
        ts.initialize(state)
        ts.step_to(2.0)
        s = integ.get_state()
        system.realize(s, Stage.Acceleration)
        d = np.linalg.norm(np.array(p2.get_body_origin_location(s)) - p1.get_body_origin_location(s))
        name = "custom ExampleConstraint" if custom else "Constraint.Rod          "
        print(f"{name}: distance {d:.12f}, multiplier {c.get_multipliers(s)[0]: .6f}, "
              f"acceleration error {c.get_acceleration_errors(s)[0]: .1e}")
        finals.append(np.array(s.get_q()))
    print("largest difference of the final q:", np.abs(finals[1] - finals[0]).max(),
          "(the Rod's multiplier is the custom one times the distance: their errors differ by that factor)")


if __name__ == "__main__":  # (tutorial 27 imports ExampleConstraint and build from here)
    main()
