"""simtk.testing.check_constraint: the seed's distance constraint (§3.2) and a nonholonomic speed
constraint pass; a wrong sign in a velocity error, a missing term in an acceleration error and a
force that is not G^T lambda are caught."""
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
    Transform,
)
from simtk.multibody import Constraint
from simtk.testing import CheckFailure, check_constraint

BODY = Body.Rigid(MassProperties(1.0, [0.1, 0.2, 0.3], Inertia([1.0, 1.2, 0.9])))


class DistanceConstraint(Constraint.Custom.Implementation):
    """Seed §3.2's ExampleConstraint: (|r|^2 - d^2)/2, v.r, a.r + v.v, force lambda r; ``fault``
    breaks one piece."""

    def __init__(self, b1, b2, distance, fault=None):
        super().__init__(b1.get_matter_subsystem(), 1, 0, 0)
        self.body1 = self.add_constrained_body(b1)
        self.body2 = self.add_constrained_body(b2)
        self.distance = distance
        self.fault = fault

    def _r_v(self, state):
        r = self.get_body_origin_location(state, self.body2) - self.get_body_origin_location(state, self.body1)
        v = self.get_body_velocity(state, self.body2)[1] - self.get_body_velocity(state, self.body1)[1]
        return r, v

    def realize_position_errors(self, state, mp, perr):
        r1 = self.get_body_origin_location(state, self.body1)
        r2 = self.get_body_origin_location(state, self.body2)
        perr[0] = ((r1 - r2) @ (r1 - r2) - self.distance ** 2) / 2

    def realize_position_dot_errors(self, state, mp, pverr):
        r, v = self._r_v(state)
        pverr[0] = -(v @ r) if self.fault == "velocity sign" else v @ r

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        r, v = self._r_v(state)
        a = self.get_body_acceleration(state, self.body2)[1] - self.get_body_acceleration(state, self.body1)[1]
        sign = -1.0 if self.fault == "velocity sign" else 1.0  # consistently wrong, as a real bug would be
        paerr[0] = sign * (a @ r + (0.0 if self.fault == "missing v.v" else v @ v))

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        r, _ = self._r_v(state)
        force = multipliers[0] * r
        self.add_in_station_force(state, self.body2, np.zeros(3), force, body_forces_in_a)
        if self.fault != "no reaction":
            self.add_in_station_force(state, self.body1, np.zeros(3), -force, body_forces_in_a)


class SpeedConstraint(Constraint.Custom.Implementation):
    """Nonholonomic: u_j of a mobilizer stays at ``speed``: verr = u_j - speed, vaerr = udot_j."""

    def __init__(self, mobod, which, speed, fault=None):
        super().__init__(mobod.get_matter_subsystem(), 0, 1, 0)
        self.m = self.add_constrained_mobilizer(mobod)
        self.which, self.speed, self.fault = which, speed, fault

    def realize_velocity_errors(self, state, mv, verr):
        verr[0] = self.get_one_u(state, self.m, self.which) - self.speed

    def realize_velocity_dot_errors(self, state, mv, vaerr):
        vaerr[0] = (2.0 if self.fault == "factor" else 1.0) * self.get_one_udot(state, self.m, self.which)

    def apply_velocity_constraint_forces(self, state, mv, multipliers, body_forces_in_a, mobility_forces):
        self.add_in_one_mobility_force(state, self.m, self.which, multipliers[0], mobility_forces)


def two_free_bodies(make_constraint):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    a = MobilizedBody.Free(matter.ground, BODY)
    b = MobilizedBody.Pin(a, Transform([0.3, 0, 0]), BODY, Transform([0, 0.8, 0]))
    c = MobilizedBody.Free(matter.ground, BODY)
    impl = make_constraint(a, b, c)
    Constraint.Custom(impl)
    state = system.realize_topology()
    quat = np.array([0.9, 0.1, 0.2, 0.3]) / np.linalg.norm([0.9, 0.1, 0.2, 0.3])
    a.set_q(state, np.r_[quat, 0.1, 0.2, 0.0])
    c.set_q(state, np.r_[quat[::-1], 1.0, 0.2, 0.1])
    b.set_q(state, [0.5])
    state.upd_u()[:] = np.linspace(-1, 1, state.get_nu())
    return impl, state


def test_seed_distance_constraint_passes():
    impl, state = two_free_bodies(lambda a, b, c: DistanceConstraint(b, c, 1.0))
    report = check_constraint(impl, state, assert_ok=True)
    assert len(report.comparisons) == 4


def test_nonholonomic_constraint_passes():
    impl, state = two_free_bodies(lambda a, b, c: SpeedConstraint(b, 0, 0.7))
    report = check_constraint(impl, state, assert_ok=True)
    assert len(report.comparisons) == 3  # no position level


@pytest.mark.parametrize("make, words", [
    (lambda a, b, c: DistanceConstraint(b, c, 1.0, "velocity sign"), "position-dot errors vs d/dt position errors"),
    (lambda a, b, c: DistanceConstraint(b, c, 1.0, "missing v.v"), "acceleration errors vs d/dt velocity errors"),
    (lambda a, b, c: DistanceConstraint(b, c, 1.0, "no reaction"), "G^T lambda"),
    (lambda a, b, c: SpeedConstraint(b, 0, 0.7, "factor"), "G (from the acceleration errors)"),
])
def test_broken_constraints_are_caught(make, words):
    impl, state = two_free_bodies(make)
    report = check_constraint(impl, state)
    assert not report.ok
    assert any(words in c.quantity for c in report.failures), report.summary()
    with pytest.raises(CheckFailure):
        report.assert_ok()
