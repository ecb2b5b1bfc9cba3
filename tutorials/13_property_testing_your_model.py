"""Property-testing your own extensions with simtk.testing and hypothesis.

A force or constraint you write yourself has laws it must obey that no example-based test pins
down: a conservative force is minus the gradient of its energy; a constraint's velocity error is
the time derivative of its position error, and its forces are the transpose of its Jacobian; and
realizing a State must neither change a state variable nor depend on stale cache. ``simtk.testing``
checks those laws numerically, and its hypothesis strategies (``multibody_systems``, ``states``)
draw the systems and states to check them on, so a mistake that shows only in some configurations
is found, and shrunk to a small example.

This file is both a tutorial and a test module:

* ``pytest tutorials/13_property_testing_your_model.py`` runs the property tests;
* ``python tutorials/13_property_testing_your_model.py`` runs each of them once and prints what one
  check reports, then shows the checker catching a deliberately wrong energy.

The extensions under test are a nonlinear ligament (``Force.Custom``, an exponential spring that
is slack below its rest length) and the seed's distance constraint (``Constraint.Custom``, §3.2).
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Force
from simtk.multibody import Constraint
from simtk.testing import (
    check_caching,
    check_constraint,
    check_force,
    check_realize_is_pure,
    multibody_systems,
    states,
)


# ------------------------------------------------------------------------------- the user's extensions
class Ligament(Force.Custom.Implementation):
    """Tension T(l) = k (exp(s (l - l0)) - 1) / s between two body stations when stretched beyond l0.

    Its energy is the integral of T: PE = k/s ((exp(s (l - l0)) - 1)/s - (l - l0)) for l > l0, else 0.
    """

    def __init__(self, matter, body1, station1, body2, station2, k=100.0, s=5.0, rest_length=0.1, energy_scale=1.0):
        super().__init__()
        self.matter = matter
        self.b1, self.s1 = body1, np.asarray(station1, dtype=float)
        self.b2, self.s2 = body2, np.asarray(station2, dtype=float)
        self.k, self.s, self.l0 = k, s, rest_length
        self.energy_scale = energy_scale  # 1 for the correct energy; tests below break it on purpose

    def _geometry(self, state):
        p1 = self.b1.find_station_location_in_ground(state, self.s1)
        p2 = self.b2.find_station_location_in_ground(state, self.s2)
        r = p2 - p1
        return r, float(np.linalg.norm(r))

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        r, length = self._geometry(state)
        stretch = length - self.l0
        if stretch <= 0 or length == 0:
            return
        tension = self.k * np.expm1(self.s * stretch) / self.s
        pull = tension * r / length  # on body 1 toward body 2, and the opposite on body 2
        self.matter.add_in_station_force(state, self.b1, self.s1, pull, body_forces)
        self.matter.add_in_station_force(state, self.b2, self.s2, -pull, body_forces)

    def calc_potential_energy(self, state):
        _, length = self._geometry(state)
        stretch = length - self.l0
        if stretch <= 0:
            return 0.0
        return self.energy_scale * self.k / self.s * (np.expm1(self.s * stretch) / self.s - stretch)

    def depends_only_on_positions(self):
        return True


class DistanceConstraint(Constraint.Custom.Implementation):
    """Seed §3.2: the body origins of b1 and b2 stay ``distance`` apart."""

    def __init__(self, b1, b2, distance):
        super().__init__(b1.get_matter_subsystem(), 1, 0, 0)
        self.body1 = self.add_constrained_body(b1)
        self.body2 = self.add_constrained_body(b2)
        self.distance = distance

    def _rva(self, state, with_acceleration=False):
        r = self.get_body_origin_location(state, self.body2) - self.get_body_origin_location(state, self.body1)
        v = self.get_body_velocity(state, self.body2)[1] - self.get_body_velocity(state, self.body1)[1]
        if not with_acceleration:
            return r, v
        a = self.get_body_acceleration(state, self.body2)[1] - self.get_body_acceleration(state, self.body1)[1]
        return r, v, a

    def realize_position_errors(self, state, mp, perr):
        r = self.get_body_origin_location(state, self.body2) - self.get_body_origin_location(state, self.body1)
        perr[0] = (r @ r - self.distance ** 2) / 2

    def realize_position_dot_errors(self, state, mp, pverr):
        r, v = self._rva(state)
        pverr[0] = v @ r

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        r, v, a = self._rva(state, with_acceleration=True)
        paerr[0] = a @ r + v @ v

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        r, _ = self._rva(state)
        force = multipliers[0] * r
        self.add_in_station_force(state, self.body2, np.zeros(3), force, body_forces_in_a)
        self.add_in_station_force(state, self.body1, np.zeros(3), -force, body_forces_in_a)


# ------------------------------------------------------------------------------- attaching them to drawn systems
def add_ligament(model, energy_scale=1.0):
    """Ligament from the first body to the last, rest length short enough to be stretched."""
    impl = Ligament(model.matter, model.bodies[0], [0.05, 0.1, 0], model.bodies[-1], [-0.05, 0.0, 0.1],
                    rest_length=0.05, energy_scale=energy_scale)
    Force.Custom(model.forces, impl)
    model.ligament = impl


def add_distance_constraint(model):
    impl = DistanceConstraint(model.bodies[0], model.bodies[-1], 0.5)
    Constraint.Custom(impl)
    model.constraint = impl


#: Mobilizers whose bodies can move their origins freely enough for the distance constraint.
MOBILE = ("Free", "Translation", "Planar", "Cylinder", "Slider", "Pin", "Gimbal", "Ball")


# ------------------------------------------------------------------------------- the property tests
@settings(max_examples=10, deadline=None)
@given(model=multibody_systems(min_bodies=2, max_bodies=4, extend=add_ligament), data=st.data())
def test_ligament_is_minus_the_gradient_of_its_energy(model, data):
    """Law: J^T F (the ligament's generalized force) = -dPE/dq N, in any system and state."""
    state = data.draw(states(model.system))
    check_force(model.ligament, state, assert_ok=True)


@settings(max_examples=5, deadline=None)
@given(model=multibody_systems(min_bodies=2, max_bodies=3, extend=add_ligament), data=st.data())
def test_ligament_realizes_purely_and_caches_correctly(model, data):
    """Laws: realizing changes no state variable; cached results (it claims to depend on q only)
    equal results computed from scratch after changes of u, q and t."""
    state = data.draw(states(model.system))
    check_realize_is_pure(model.system, state, assert_ok=True)
    check_caching(model.system, state, assert_ok=True)


@settings(max_examples=8, deadline=None)
@given(model=multibody_systems(min_bodies=2, max_bodies=3, kinds=MOBILE, extend=add_distance_constraint),
       data=st.data())
def test_distance_constraint_errors_are_successive_derivatives(model, data):
    """Laws: pverr = d/dt perr, paerr = d/dt pverr, and the constraint forces are G^T lambda."""
    state = data.draw(states(model.system))
    check_constraint(model.constraint, state, assert_ok=True)


def main() -> int:
    """Run each property test once; then show a check failing on a deliberately wrong energy."""
    tests = [test_ligament_is_minus_the_gradient_of_its_energy, test_ligament_realizes_purely_and_caches_correctly,
             test_distance_constraint_errors_are_successive_derivatives]
    for test in tests:
        test()
        print(f"passed: {test.__name__}")
    # One concrete case, printed: the ligament with an energy twice too large. A drawn state may
    # leave it slack (no force, no energy: nothing to compare), so draw until it is stretched.
    example = multibody_systems(min_bodies=2, max_bodies=2, kinds=("Free",),
                                extend=lambda m: add_ligament(m, energy_scale=2.0)).example()
    for _ in range(100):
        report = check_force(example.ligament, states(example.system).example())
        if report.failures:
            break
    print()
    print("a ligament whose energy is twice too large:")
    print(report.summary())
    return len(tests)


if __name__ == "__main__":
    main()
