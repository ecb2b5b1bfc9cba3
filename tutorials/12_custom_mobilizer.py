"""A custom mobilizer the hard way: MobilizedBody.Custom (seed §3.5).

Some mobilizers cannot be written as six functions of their coordinates: a rotation kept as a
quaternion, for instance, has qdot != u. For those, subclass ``MobilizedBody.Custom.Implementation``
and write the kinematics yourself:

* ``calc_mobilizer_transform_from_q(state, q)``: X_FM, the pose of the M frame (on the body) in
  the F frame (on the parent);
* ``multiply_by_h_matrix(state, u)``: V_FM = H u, the spatial velocity (angular, then the
  velocity of M's origin), in F; and ``multiply_by_h_transpose(state, F)``, H^T F;
* ``multiply_by_h_dot_matrix`` / ``multiply_by_h_dot_transpose``: the same with HDot, the time
  derivative of H in F;
* ``set_q_to_fit_transform`` / ``set_u_to_fit_velocity`` (optional: the default fits numerically);
* ``multiply_by_n_matrix``, ``multiply_by_n_inv_matrix``, ``multiply_by_n_dot_matrix`` only when
  qdot != u (N defaults to the identity).

The seed's example is CustomTranslation, which behaves exactly like MobilizedBody.Translation.
Here it carries a body hanging from a spring under gravity, next to a twin system built with the
built-in Translation: both move identically. ``simtk.testing.check_mobilizer`` then checks every
method of the implementation against finite differences of its transform, the check to run on
any mobilizer you write.

Run: ``python tutorials/12_custom_mobilizer.py``
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
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper
from simtk.testing import check_mobilizer


class CustomTranslation(MobilizedBody.Custom.Implementation):
    """Three coordinates: the displacements of M's origin along F's X, Y and Z (seed §3.5)."""

    def __init__(self, matter):
        # nu = 3 generalized speeds, nq = 3 generalized coordinates, 0 of them angles.
        super().__init__(matter, 3, 3, 0)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform([q[0], q[1], q[2]])

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0.0, 0.0, 0.0], [u[0], u[1], u[2]]])

    def multiply_by_h_transpose(self, state, F):
        return np.array(F[1], dtype=float)

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))  # H is constant

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)

    def set_q_to_fit_transform(self, state, X_FM, q):
        q[:] = X_FM.p

    def set_u_to_fit_velocity(self, state, V_FM, u):
        u[:] = V_FM[1]


def build(use_custom: bool):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.81)
    info = Body.Rigid(MassProperties(2.0, [0.1, 0, 0], Inertia([0.1, 0.2, 0.2])))
    if use_custom:
        body = MobilizedBody.Custom(matter.ground, Transform(), info, Transform(), CustomTranslation(matter))
    else:
        body = MobilizedBody.Translation(matter.ground, Transform(), info, Transform())
    # A swinging pendulum below it makes the motion less trivial than a mass on a spring.
    bob = MobilizedBody.Pin(body, Transform([0.1, 0, 0]), Body.Rigid(MassProperties(0.5, [0, 0, 0], Inertia(0.01))),
                            Transform([0, 0.6, 0]))
    Force.TwoPointLinearSpring(forces, matter.ground, [0, 0, 0], body, [0, 0, 0], 50.0, 0.3)
    return system, body, bob


def run(use_custom: bool, final_time: float):
    system, body, bob = build(use_custom)
    state = system.realize_topology()
    body.set_q(state, [0.2, -0.4, 0.1])
    body.set_u(state, [0.0, 0.5, -0.3])
    bob.set_q(state, [0.8])
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(final_time)
    end = ts.get_state()
    system.realize(end, Stage.Velocity)
    return system, body, bob, end


def main(final_time: float = 2.0) -> float:
    _, b1, p1, s1 = run(False, final_time)
    system, b2, p2, s2 = run(True, final_time)
    print(f"after {final_time:g} s")
    print(f"  built-in Translation: body at {b1.get_body_origin_location(s1)}, pendulum at {p1.get_one_q(s1, 0):.9f}")
    print(f"  CustomTranslation:    body at {b2.get_body_origin_location(s2)}, pendulum at {p2.get_one_q(s2, 0):.9f}")
    difference = float(max(np.abs(b1.get_body_origin_location(s1) - b2.get_body_origin_location(s2)).max(),
                            abs(p1.get_one_q(s1, 0) - p2.get_one_q(s2, 0))))
    print(f"  largest difference: {difference:.2e}")
    print()
    print(check_mobilizer(b2, s2, assert_ok=True))
    return difference


if __name__ == "__main__":
    main()
