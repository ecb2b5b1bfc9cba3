"""Tutorial 9: simple constraints -- seed 004 §3.3.

``Constraint.CoordinateCoupler`` enforces a function of some coordinates, c(q) = 0. The seed's
example keeps two coordinates equal, c = q1 - q2, first with a hand-written Function (value and
partial derivatives) and then with the built-in ``Function.Linear`` with coefficients (1, -1, 0).
The C++ lines are shown as ``# C++:`` comments above their Python twins.

A coupler is workless: its power (``calc_power``) is zero and the energy is conserved.

Run: ``python tutorials/09_coordinate_coupler.py``
"""
import sys

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    Function,
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


# C++: class ConstraintFunction : public Function<Real> {
class ConstraintFunction(Function):
    # C++: Real calcValue(const Vector& x) const { return x[0]-x[1]; }
    def calc_value(self, x):
        return x[0] - x[1]

    # C++: Real calcDerivative(const std::vector<int>& derivComponents, const Vector& x) const {
    def calc_derivative(self, deriv_components, x):
        # C++: if (derivComponents.size() == 1) return derivComponents[0] == 0 ? 1 : -1;
        if len(deriv_components) == 1:
            return 1.0 if deriv_components[0] == 0 else -1.0
        return 0.0

    # C++: int getArgumentSize() const { return 2; }
    def get_argument_size(self):
        return 2

    # C++: int getMaxDerivativeOrder() const { return std::numeric_limits<int>::max(); }
    def get_max_derivative_order(self):
        return sys.maxsize


def run(function_name: str):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia([1 / 12, 0.002, 1 / 12])))
    # A double pendulum: two Pins about z.
    body1 = MobilizedBody.Pin(matter.Ground(), Transform(), rod, Transform())
    body2 = MobilizedBody.Pin(body1, Transform([0, -1, 0]), rod, Transform())

    # C++: std::vector<MobilizedBodyIndex> coordBody(2); std::vector<MobilizerQIndex> coordIndex(2);
    # C++: coordBody[0] = body1.getMobilizedBodyIndex(); coordBody[1] = body2.getMobilizedBodyIndex();
    coord_body = [body1.get_mobilized_body_index(), body2.get_mobilized_body_index()]
    # C++: coordIndex[0] = MobilizerQIndex(0); coordIndex[1] = MobilizerQIndex(0);
    coord_index = [0, 0]
    if function_name == "ConstraintFunction":
        # C++: Constraint::CoordinateCoupler constraint(matter, new ConstraintFunction(), coordBody, coordIndex);
        constraint = Constraint.CoordinateCoupler(matter, ConstraintFunction(), coord_body, coord_index)
    else:
        # C++: Vector coefficients(3); coefficients[0] = 1; coefficients[1] = -1; coefficients[2] = 0;
        coefficients = np.array([1.0, -1.0, 0.0])
        # C++: Constraint::CoordinateCoupler constraint(matter, new Function::Linear(coefficients), ...);
        constraint = Constraint.CoordinateCoupler(matter, Function.Linear(coefficients), coord_body, coord_index)

    state = system.realize_topology()
    body1.set_one_q(state, 0, 0.5)
    body2.set_one_q(state, 0, 0.2)  # off the constraint: projection moves both to q1 = q2
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    E0 = system.calc_energy(integ.get_state())
    print(f"--- {function_name}")
    for t in (0.5, 1.0, 1.5, 2.0):
        ts.step_to(t)
        s = integ.get_state()
        system.realize(s, Stage.Acceleration)
        print(f"t={t:.1f}  q1={body1.get_one_q(s, 0): .6f}  q2={body2.get_one_q(s, 0): .6f}  "
              f"power={constraint.calc_power(s): .1e}  energy drift={system.calc_energy(s) - E0: .1e}")
    return np.array(s.get_q())


a = run("ConstraintFunction")
b = run("Function.Linear")
print("the two formulations agree to", np.abs(a - b).max())
