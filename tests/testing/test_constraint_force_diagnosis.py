"""A Constraint.Custom whose force routine is wrong (issue 28): the acceleration errors reported are
those of the accelerations obtained, and check_constraint's headline names the force comparison.

The constrained solve takes G^T from the force routines and the right-hand side from the error
routines. When the two disagree the accelerations it obtains violate the constraint; the errors used
to be reported from the solve's own linear model (aerr(udot0) - A lambda, zero), so
``get_acceleration_errors()`` said 0 and check_constraint's worst mismatch was "acceleration errors
vs d/dt velocity errors" instead of the force routine's own comparison.
"""
from __future__ import annotations

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
from simtk.multibody import Constraint
from simtk.testing import CheckFailure, check_constraint
from tolerances import max_abs_diff, scale_of, tol

BODY = Body.Rigid(MassProperties(1.0, [0.1, 0.2, 0.3], Inertia([1.0, 1.2, 0.9])))
FORCES = "constraint forces for multipliers lambda (J^T F + f) vs G^T lambda"
#: A few dozen flops on the realized accelerations (the errors' own formulas, twice).
MARGIN = 256


class Distance(Constraint.Custom.Implementation):
    """(|r|^2 - d^2)/2 between two body origins; ``fault`` "double force" applies 2 lambda r."""

    def __init__(self, b1, b2, distance, fault=None):
        super().__init__(b1.get_matter_subsystem(), 1, 0, 0)
        self.body1 = self.add_constrained_body(b1)
        self.body2 = self.add_constrained_body(b2)
        self.distance, self.fault = distance, fault

    def _r_v(self, state):
        r = self.get_body_origin_location(state, self.body2) - self.get_body_origin_location(state, self.body1)
        v = self.get_body_velocity(state, self.body2)[1] - self.get_body_velocity(state, self.body1)[1]
        return r, v

    def realize_position_errors(self, state, mp, perr):
        r, _ = self._r_v(state)
        perr[0] = (r @ r - self.distance ** 2) / 2

    def realize_position_dot_errors(self, state, mp, pverr):
        r, v = self._r_v(state)
        pverr[0] = v @ r

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        r, v = self._r_v(state)
        a = self.get_body_acceleration(state, self.body2)[1] - self.get_body_acceleration(state, self.body1)[1]
        paerr[0] = a @ r + v @ v

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        r, _ = self._r_v(state)
        force = (2.0 if self.fault == "double force" else 1.0) * multipliers[0] * r
        self.add_in_station_force(state, self.body2, np.zeros(3), force, body_forces_in_a)
        self.add_in_station_force(state, self.body1, np.zeros(3), -force, body_forces_in_a)


class Speed(Constraint.Custom.Implementation):
    """u_0 of ``mobod`` stays at ``speed``; ``fault`` "wrong mobility" pushes another body's mobility."""

    def __init__(self, mobod, other, speed, fault=None):
        super().__init__(mobod.get_matter_subsystem(), 0, 1, 0)
        self.m = self.add_constrained_mobilizer(mobod)
        self.o = self.add_constrained_mobilizer(other)
        self.speed, self.fault = speed, fault

    def realize_velocity_errors(self, state, mv, verr):
        verr[0] = self.get_one_u(state, self.m, 0) - self.speed

    def realize_velocity_dot_errors(self, state, mv, vaerr):
        vaerr[0] = self.get_one_udot(state, self.m, 0)

    def apply_velocity_constraint_forces(self, state, mv, multipliers, body_forces_in_a, mobility_forces):
        if self.fault == "wrong mobility":
            self.add_in_one_mobility_force(state, self.o, 2, multipliers[0], mobility_forces)
        else:
            self.add_in_one_mobility_force(state, self.m, 0, multipliers[0], mobility_forces)


def model(kind: str, fault=None):
    """Free a, Pin b on a, Free c, under gravity, the constraint on them, in a moving state."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    a = MobilizedBody.Free(matter.ground, BODY)
    b = MobilizedBody.Pin(a, Transform([0.3, 0, 0]), BODY, Transform([0, 0.8, 0]))
    c = MobilizedBody.Free(matter.ground, BODY)
    if kind == "distance":
        impl = Distance(b, c, 1.0, fault)
    else:
        impl = Speed(b, a, 0.7, fault)
    constraint = Constraint.Custom(impl)
    state = system.realize_topology()
    quat = np.array([0.9, 0.1, 0.2, 0.3]) / np.linalg.norm([0.9, 0.1, 0.2, 0.3])
    a.set_q(state, np.r_[quat, 0.1, 0.2, 0.0])
    c.set_q(state, np.r_[quat[::-1], 1.0, 0.2, 0.1])
    b.set_q(state, [0.5])
    state.upd_u()[:] = np.linspace(-1, 1, state.get_nu())
    return system, constraint, (a, b, c), state


def real_acceleration_error(kind: str, bodies, state) -> tuple[float, float]:
    """The constraint's acceleration error from the realized body accelerations (the public API,
    not the solver), and the scale of the terms it is computed from."""
    a, b, c = bodies
    if kind == "speed":
        udot = b.get_udot(state)[0]
        return float(udot), abs(float(udot))
    r = np.asarray(c.get_body_transform(state).p) - np.asarray(b.get_body_transform(state).p)
    v = c.get_body_velocity(state)[1] - b.get_body_velocity(state)[1]
    acc = c.get_body_acceleration(state)[1] - b.get_body_acceleration(state)[1]
    return float(acc @ r + v @ v), scale_of(acc, v) * scale_of(r, v, floor=1.0)


@pytest.mark.parametrize("kind, fault", [("distance", "double force"), ("speed", "wrong mobility")])
def test_a_wrong_force_routine_is_the_headline_and_its_violation_is_reported(kind, fault):
    system, constraint, bodies, state = model(kind, fault)
    s = state.copy()
    system.realize(s, Stage.Acceleration)
    reported = constraint.get_acceleration_errors(s)
    real, scale = real_acceleration_error(kind, bodies, s)
    assert abs(real) > tol(scale, 1e6), "the fault must leave the constraint violated"
    assert max_abs_diff(reported, [real]) <= tol(scale, MARGIN), (reported, real)

    report = check_constraint(constraint, state)
    assert report.worst.quantity == FORCES, report.summary()
    assert report.summary().splitlines()[1].startswith(f"worst MISMATCH: {FORCES}")
    assert [c.quantity for c in report.failures] == [FORCES], report.summary()
    with pytest.raises(CheckFailure, match="G\\^T lambda"):
        report.assert_ok()


@pytest.mark.parametrize("kind", ["distance", "speed"])
def test_correct_custom_constraints_still_report_satisfied_accelerations(kind):
    """Evaluating the errors again at the obtained accelerations keeps a correct constraint at 0."""
    system, constraint, bodies, state = model(kind)
    system.realize(state, Stage.Acceleration)
    real, scale = real_acceleration_error(kind, bodies, state)
    scale = max(scale, scale_of(state.get_udot()))
    assert abs(constraint.get_acceleration_errors(state)[0]) <= tol(scale, MARGIN)
    assert abs(real) <= tol(scale, MARGIN)
    check_constraint(constraint, state, assert_ok=True)
