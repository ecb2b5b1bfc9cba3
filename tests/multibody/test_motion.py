"""Prescribed motion (Motion.Steady, Sinusoid, Custom) and mobilizer locks.

Laws: the prescribed q/u/udot follow their functions of time; the force a Motion applies is the
inverse-dynamics force of the prescribed mobility (RNEA residual) and zero on the others; a
Position lock holds q still, a Velocity lock holds u, and locking is an Instance-stage change.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from test_constraints import SEEDS, random_body, random_rotation, random_state, random_tree

from simtk import (
    MobilizedBody,
    Motion,
    RungeKuttaMersonIntegrator,
    Stage,
    TimeStepper,
    Transform,
)
from tolerances import scale_of, tol

#: The prescribed udot, and the forces, come out of the constrained solve and an RNEA sweep over
#: the chain: round-off of the scale of their terms.
SOLVE_MARGIN = 2**10
#: A u held by a Motion (Velocity level, Steady, a lock) is integrated from a udot the solve makes
#: exact to round-off, and a locked q from that u: they keep their values to round-off accumulated
#: over the run's steps (~100 at accuracy 1e-8), of the scale of the value plus |udot| t. (Beyond
#: that, the projection to the integrator's constraint tolerance, accuracy / 10, would step in.)
HELD_MARGIN = 2**13
#: A q (or u) prescribed at a higher derivative is integrated from it: integration error at
#: accuracy 1e-8 (measured up to ~1e-9), not round-off.
INTEGRATED_ATOL = 1e-6


def _held_tol(value_scale: float, st) -> float:
    return tol(value_scale + scale_of(st.get_udot()) * st.get_time(), HELD_MARGIN)


def _rnea_terms(system, matter, st) -> float:
    """The scale of the inverse-dynamics residual's terms: the mobility and body forces, and M udot
    as the sums of |M_ij udot_j| (its rows cancel where M is ill-conditioned: a Gimbal near lock)."""
    return scale_of(np.abs(matter.calc_m(st)) @ np.abs(st.get_udot()), system.get_mobility_forces(st),
                    system.get_rigid_body_forces(st))


def _chain(seed, joints=("Pin", "Pin", "Gimbal")):
    rng = np.random.default_rng(seed)
    system, matter, forces, _ = random_tree(rng, 0)
    bodies = [matter.Ground()]
    for j in joints:
        bodies.append(getattr(MobilizedBody, j)(bodies[-1], Transform(random_rotation(rng), rng.uniform(-0.5, 0.5, 3)),
                                                random_body(rng), Transform([0.4, 0, 0])))
    return system, matter, bodies, rng


def _run(system, state, t_end, n=10, accuracy=1e-8):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    for t in np.linspace(t_end / n, t_end, n):
        ts.step_to(t)
        st = integ.get_state()
        system.realize(st, Stage.Acceleration)
        yield t, st


def _inverse_dynamics_force(system, matter, state):
    """Generalized force that produces the realized udot: M udot + C - f - J^T F (RNEA)."""
    return matter.calc_residual_force_ignoring_constraints(
        state, system.get_mobility_forces(state), system.get_rigid_body_forces(state), state.get_udot())


@settings(max_examples=5)
@given(seed=SEEDS)
def test_position_sinusoid_is_followed_and_its_force_is_inverse_dynamics(seed):
    """q(t) = A sin(w t + p) (and its derivatives) for the prescribed Pin, and the Motion's force
    equals the RNEA residual on that mobility while the free mobilities have zero residual."""
    system, matter, bodies, rng = _chain(seed)
    A, w, p = 0.7, 3.0, 0.4
    motion = Motion.Sinusoid(bodies[2], Motion.Level.Position, A, w, p)
    s = random_state(system, rng)
    u2 = matter._u_range(s, 2)[0]
    for t, st in _run(system, s, 1.0, n=5):
        q = bodies[2].get_one_q(st, 0)
        assert q == pytest.approx(A * np.sin(w * t + p), abs=INTEGRATED_ATOL)
        assert bodies[2].get_one_u(st, 0) == pytest.approx(A * w * np.cos(w * t + p), abs=INTEGRATED_ATOL)
        udot_tol = tol(scale_of(st.get_udot()), SOLVE_MARGIN)
        assert abs(bodies[2].get_udot(st)[0] + A * w * w * np.sin(w * t + p)) <= udot_tol
        r = _inverse_dynamics_force(system, matter, st)
        tau = motion.get_motion_forces(st)
        force_tol = tol(_rnea_terms(system, matter, st), SOLVE_MARGIN)
        assert abs(tau[0] - r[u2]) <= force_tol
        r[u2] = 0.0
        assert np.abs(r).max() <= force_tol


def test_steady_and_acceleration_level_motions():
    """Motion.Steady holds every u of a Gimbal at its value; an Acceleration-level Sinusoid gives
    udot = A sin(w t + p) so u grows by its integral."""
    system, matter, bodies, rng = _chain(3)
    Motion.Steady(bodies[3], [0.2, -0.1, 0.3])
    Motion.Sinusoid(bodies[1], Motion.Level.Acceleration, 1.5, 2.0, 0.0)
    s = random_state(system, rng)
    bodies[1].set_one_u(s, 0, 0.0)
    bodies[3].set_u(s, [0.2, -0.1, 0.3])  # already satisfied: projection leaves u alone
    for t, st in _run(system, s, 1.0, n=4):
        np.testing.assert_allclose(bodies[3].get_u(st), [0.2, -0.1, 0.3], rtol=0, atol=_held_tol(0.3, st))
        udot_tol = tol(scale_of(st.get_udot()), SOLVE_MARGIN)
        np.testing.assert_allclose(bodies[3].get_udot(st), 0.0, atol=udot_tol)
        assert abs(bodies[1].get_udot(st)[0] - 1.5 * np.sin(2.0 * t)) <= udot_tol
        assert bodies[1].get_one_u(st, 0) == pytest.approx(0.75 * (1 - np.cos(2.0 * t)), abs=INTEGRATED_ATOL)


class _Ramp(Motion.Custom.Implementation):
    """Velocity level: u = c t for every u of the mobilizer."""

    def __init__(self, c):
        self.c = c

    def get_level(self, state):
        return Motion.Level.Velocity

    def calc_prescribed_velocity(self, state, nu):
        return np.full(nu, self.c * state.get_time())

    def calc_prescribed_velocity_dot(self, state, nu):
        return np.full(nu, self.c)


def test_custom_motion():
    """A Motion.Custom at Velocity level: u = c t, udot = c along the run."""
    system, matter, bodies, rng = _chain(4)
    Motion.Custom(bodies[1], _Ramp(0.5))
    s = random_state(system, rng)
    for t, st in _run(system, s, 0.6, n=3):
        assert abs(bodies[1].get_one_u(st, 0) - 0.5 * t) <= _held_tol(0.5 * t, st)  # RK integrates a constant exactly
        assert abs(bodies[1].get_udot(st)[0] - 0.5) <= tol(scale_of(st.get_udot()), SOLVE_MARGIN)


def test_lock_holds_q_and_is_an_instance_change():
    """lock(state) holds the mobilizer's q and zeroes its u; it invalidates Instance; unlock frees it."""
    system, matter, bodies, rng = _chain(5)
    s = random_state(system, rng)
    system.realize(s, Stage.Acceleration)
    q_before = np.array(bodies[3].get_q(s))
    bodies[3].lock(s)
    assert bodies[3].is_locked(s)
    assert bodies[3].get_lock_level(s) == Motion.Level.Position
    assert s.get_system_stage() < Stage.Instance
    np.testing.assert_array_equal(bodies[3].get_u(s), 0.0)
    for t, st in _run(system, s, 0.5, n=3):
        np.testing.assert_allclose(bodies[3].get_q(st), q_before, rtol=0, atol=_held_tol(scale_of(q_before), st))
        np.testing.assert_allclose(bodies[3].get_u(st), 0.0, atol=_held_tol(0.0, st))
        r = _inverse_dynamics_force(system, matter, st)
        u0, n = matter._u_range(st, 3)
        # the free mobilities move freely: a zero residual, to round-off of its terms
        np.testing.assert_allclose(r[:u0], 0.0, atol=tol(_rnea_terms(system, matter, st), SOLVE_MARGIN))
    bodies[3].unlock(s)
    assert not bodies[3].is_locked(s)
    system.realize(s, Stage.Acceleration)
    assert np.abs(bodies[3].get_udot(s)).max() > 1e-6  # gravity moves it again (a threshold, not a tolerance)


def test_lock_at_and_velocity_lock():
    """lock_at sets and holds q (Position) or u (Velocity); a ball's quaternion can be locked too."""
    system, matter, bodies, rng = _chain(6, joints=("Pin", "Ball", "Pin"))
    s = random_state(system, rng)
    bodies[1].lock_at(s, 0.3)
    bodies[3].lock_at(s, 0.8, Motion.Level.Velocity)
    quat = np.array(bodies[2].get_q(s))
    bodies[2].lock(s)
    for t, st in _run(system, s, 0.5, n=3):
        assert abs(bodies[1].get_one_q(st, 0) - 0.3) <= _held_tol(0.3, st)
        assert abs(bodies[3].get_one_u(st, 0) - 0.8) <= _held_tol(0.8, st)
        np.testing.assert_allclose(bodies[2].get_q(st), quat, rtol=0, atol=_held_tol(1.0, st))  # a unit quaternion
    with pytest.raises(ValueError, match="expected a finite scalar or 1 values"):
        bodies[1].lock_at(s, [1.0, 2.0])
