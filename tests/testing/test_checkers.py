"""simtk.testing checkers: they pass on correct extensions and catch deliberately broken ones, naming
the worst mismatch when asked to assert."""
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
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.testing import CheckFailure, check_caching, check_force, check_mobilizer, check_realize_is_pure

Impl = MobilizedBody.Custom.Implementation
BODY = Body.Rigid(MassProperties(1.2, [0.1, -0.2, 0.3], Inertia([1.0, 1.4, 0.9], [0.05, -0.02, 0.01])))


# ------------------------------------------------------------------------------------------ mobilizers
def hw(q):
    """Body-fixed X-Y-Z angles: w_FM = Hw(q) qdot."""
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    return np.array([[1, 0, s1], [0, c0, -s0 * c1], [0, s0, c0 * c1]])


def hw_dot(q, qd):
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    return np.array([[0, 0, c1 * qd[1]], [0, -s0 * qd[0], -c0 * c1 * qd[0] + s0 * s1 * qd[1]],
                     [0, c0 * qd[0], -s0 * c1 * qd[0] - c0 * s1 * qd[1]]])


class Gimbal(Impl):
    """A correct Custom gimbal (u = qdot); ``fault`` breaks one method."""

    def __init__(self, matter, fault=None):
        super().__init__(matter, 3, 3, 3)
        self.fault = fault

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation.from_body_fixed_xyz(q))

    def _h(self, state):
        H = hw(self.get_q(state))
        if self.fault == "H":  # the third axis not carried by the second rotation: disagrees with X_FM
            H = H.copy()
            H[:, 2] = hw([self.get_q(state)[0], 0, 0])[:, 2]
        return H

    def _hd(self, state):
        HD = hw_dot(self.get_q(state), self.get_u(state))
        if self.fault == "HDot":  # a sign error in one term
            HD = HD.copy()
            HD[1, 1] = -HD[1, 1]
        return HD

    def multiply_by_h_matrix(self, state, u):
        return np.array([self._h(state) @ u, [0, 0, 0]])

    def multiply_by_h_transpose(self, state, F):
        f = self._h(state).T @ np.asarray(F)[0]
        return f[::-1].copy() if self.fault == "HT" else f  # components in the wrong order

    def multiply_by_h_dot_matrix(self, state, u):
        return np.array([self._hd(state) @ u, [0, 0, 0]])

    def multiply_by_h_dot_transpose(self, state, F):
        return self._hd(state).T @ np.asarray(F)[0]


def quat_e(q):
    q0, x, y, z = q
    return np.array([[-x, -y, -z], [q0, z, -y], [-z, q0, x], [y, -x, q0]])


class QuaternionBall(Impl):
    """A correct quaternion ball (u = w_FM in F); ``fault`` breaks N, N^-1 or NDot."""

    def __init__(self, matter, fault=None):
        super().__init__(matter, 3, 4, 0)
        self.fault = fault

    def get_default_q(self):
        return np.array([1.0, 0, 0, 0])

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation.from_quaternion(np.asarray(q) / np.linalg.norm(q)))

    def multiply_by_h_matrix(self, state, u):
        return np.array([u, [0, 0, 0]], dtype=float)

    def multiply_by_h_transpose(self, state, F):
        return np.array(F[0], dtype=float)

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)

    def _n(self, q):
        return (1.0 if self.fault == "N" else 0.5) * quat_e(q)  # the classic missing 1/2

    def multiply_by_n_matrix(self, state, transpose, v):
        N = self._n(self.get_q(state))
        return N.T @ v if transpose else N @ v

    def multiply_by_n_inv_matrix(self, state, transpose, v):
        Ninv = (1.0 if self.fault == "Ninv" else 2.0) * quat_e(self.get_q(state)).T
        return Ninv.T @ v if transpose else Ninv @ v

    def multiply_by_n_dot_matrix(self, state, transpose, v):
        if self.fault == "NDot":
            return np.zeros(3 if transpose else 4)
        ND = 0.5 * quat_e(self._n(self.get_q(state)) @ self.get_u(state))
        return ND.T @ v if transpose else ND @ v


def one_custom_body(make_impl, seed=0):
    """Ground -Custom-> A -Pin-> B under gravity, in a random state."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    a = MobilizedBody.Custom(matter.ground, Transform(Rotation(0.3, "x"), [0.1, 0.2, 0]), BODY,
                             Transform([0, 0.5, 0]), make_impl(matter))
    b = MobilizedBody.Pin(a, Transform([0.2, 0, 0]), BODY, Transform([0, 0.7, 0]))
    state = system.realize_topology()
    q = a.get_q(state) + rng.uniform(-0.6, 0.6, a.get_num_q(state))
    if len(q) == 4:  # a unit quaternion (N^-1 N = |q|^2)
        q /= np.linalg.norm(q)
    a.set_q(state, q)
    a.set_u(state, rng.uniform(-1, 1, a.get_num_u(state)))
    b.set_q(state, [0.4])
    b.set_u(state, [-0.8])
    return system, a, b, state


@pytest.mark.parametrize("make", [Gimbal, QuaternionBall])
def test_correct_custom_mobilizers_pass(make):
    """Every comparison of a correct implementation is within tolerance; the State is not touched."""
    system, a, b, state = one_custom_body(make)
    before = state.get_y().copy(), state.get_system_stage()
    report = check_mobilizer(a, state, assert_ok=True)
    assert report.ok and len(report.comparisons) >= 10
    assert np.array_equal(state.get_y(), before[0]) and state.get_system_stage() == before[1]


@pytest.mark.parametrize("make, fault, quantity", [
    (Gimbal, "H", "V_FM = H u vs d/dt X_FM"),
    (Gimbal, "HDot", "H udot + HDot u vs d/dt V_FM"),
    (Gimbal, "HT", "multiply_by_h_transpose"),
    (QuaternionBall, "N", "V_FM = H u vs d/dt X_FM"),
    (QuaternionBall, "Ninv", "multiply_by_n_inv_matrix"),
    (QuaternionBall, "NDot", "qdotdot = N udot + NDot u vs d/dt qdot"),
])
def test_broken_custom_mobilizers_are_caught(make, fault, quantity):
    """Each deliberate fault fails the comparison that tests it, and assert_ok names a failing one."""
    system, a, b, state = one_custom_body(lambda m: make(m, fault))
    report = check_mobilizer(a, state)
    assert not report.ok
    assert any(quantity in c.quantity for c in report.failures), report.summary()
    with pytest.raises(CheckFailure) as info:
        check_mobilizer(a, state, assert_ok=True)
    worst = info.value.report.worst
    assert not worst.ok and worst.quantity in str(info.value)


@pytest.mark.parametrize("kind", ["Pin", "Universal", "Planar", "Gimbal", "Ball", "Free", "Bushing", "Screw"])
def test_builtin_mobilizers_pass(kind):
    """The compiled built-ins agree with finite differences of their own transforms."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    args = (0.2,) if kind == "Screw" else ()
    a = getattr(MobilizedBody, kind)(matter.ground, Transform(Rotation(0.4, "z")), BODY, Transform([0.1, 0.3, 0]),
                                     *args)
    state = system.realize_topology()
    rng = np.random.default_rng(5)
    q = a.get_q(state) + rng.uniform(-0.5, 0.5, a.get_num_q(state))
    if kind in ("Ball", "Free"):
        q[:4] /= np.linalg.norm(q[:4])
    a.set_q(state, q)
    a.set_u(state, rng.uniform(-1, 1, a.get_num_u(state)))
    check_mobilizer(a, state, assert_ok=True)


# ------------------------------------------------------------------------------------------ forces
class StationSpring(Force.Custom.Implementation):
    """F = -k p at a body's origin: energy k |p|^2 / 2. ``energy_factor`` != 1 breaks the energy;
    ``damping`` adds a velocity term; ``position_only`` claims no dependence on u."""

    def __init__(self, body, k, energy_factor=1.0, damping=0.0, position_only=False):
        super().__init__()
        self.body, self.k, self.factor, self.c, self.position_only = body, k, energy_factor, damping, position_only

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        f = -self.k * self.body.get_body_origin_location(state)
        if self.c:
            f = f - self.c * self.body.get_body_origin_velocity(state)
        body_forces[self.body.get_mobilized_body_index(), 1] += f

    def calc_potential_energy(self, state):
        p = self.body.get_body_origin_location(state)
        return self.factor * 0.5 * self.k * float(p @ p)

    def depends_only_on_positions(self):
        return self.position_only


def spring_system(**spring):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    gravity = Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    a = MobilizedBody.Free(matter.ground, Transform(), BODY, Transform([0.2, 0.1, 0]))
    b = MobilizedBody.Pin(a, Transform([0.3, 0, 0]), BODY, Transform([0, 1, 0]))
    impl = StationSpring(b, 3.0, **spring)
    Force.Custom(forces, impl)
    state = system.realize_topology()
    a.set_q(state, [0.9, 0.1, 0.2, 0.3, 0.3, 0.2, 0.1] / np.r_[np.linalg.norm([0.9, 0.1, 0.2, 0.3]) * np.ones(4),
                                                                np.ones(3)])
    b.set_q(state, [0.4])
    state.upd_u()[:] = 0.3
    return system, impl, gravity, state


def test_conservative_forces_pass():
    system, impl, gravity, state = spring_system(damping=0.5)  # at rest the damper drops out
    check_force(impl, state, assert_ok=True)
    check_force(gravity, state, assert_ok=True)


@pytest.mark.parametrize("factor", [-1.0, 2.0])
def test_force_inconsistent_with_its_energy_is_caught(factor):
    system, impl, gravity, state = spring_system(energy_factor=factor)
    report = check_force(impl, state)
    assert not report.ok
    with pytest.raises(CheckFailure, match="-dPE/dq"):
        report.assert_ok()


def test_a_damper_is_not_conservative_when_moving():
    """Evaluated with the State's own u (at_rest=False) a damped spring fails: a damper has no energy."""
    system, impl, gravity, state = spring_system(damping=0.5)
    assert not check_force(impl, state, at_rest=False).ok


# ------------------------------------------------------------------------------------------ realization
class CountingForce(Force.Custom.Implementation):
    """Counts its evaluations in a discrete variable: realizing changes a state variable (impure)."""

    def realize_topology(self, state):
        self.index = self.get_force_subsystem().allocate_discrete_variable(state, Stage.Report, np.zeros(1))

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        sub = self.get_force_subsystem()
        sub.set_discrete_variable(state, self.index, sub.get_discrete_variable(state, self.index) + 1)


def test_realize_is_pure_passes_on_a_pure_system():
    system, impl, gravity, state = spring_system(damping=0.5)
    report = check_realize_is_pure(system, state, assert_ok=True)
    assert len(report.comparisons) > 0


def test_an_extension_that_writes_state_variables_is_caught():
    system, impl, gravity, state = spring_system()
    Force.Custom(impl.get_force_subsystem(), CountingForce())
    state = system.realize_topology()
    report = check_realize_is_pure(system, state)
    assert not report.ok
    first = report.failures[0]
    assert "discrete variable" in first.quantity and "Dynamics" in first.quantity


def test_caching_passes_when_dependencies_are_declared():
    system, impl, gravity, state = spring_system(damping=0.5, position_only=False)
    check_caching(system, state, assert_ok=True)


def test_a_force_that_hides_its_velocity_dependence_is_caught():
    """A damper that claims depends_only_on_positions() is reused after u changes: stale forces."""
    system, impl, gravity, state = spring_system(damping=0.5, position_only=True)
    report = check_caching(system, state)
    assert not report.ok
    assert any("after change 0 (u)" in c.where for c in report.failures)
    with pytest.raises(CheckFailure, match="cached vs recomputed"):
        report.assert_ok()
