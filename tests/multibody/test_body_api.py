"""The per-body API of MobilizedBody and the matter subsystem's whole-system sums.

Expected values come from closed forms built with simtk's Transform algebra (X_GB = X_GP X_PF
X_FM ~X_BM), from finite differences in time, from Newton-Euler balances written here per body,
and from sums over the mass properties the bodies were built with.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import (
    BodySpec,
    build,
    new_state,
    random_central_inertia,
    random_model,
    random_transform,
    randomize_state,
    rel_err,
    skew_to_vec,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Force,
    MassProperties,
    MobilizedBody,
    Rotation,
    Stage,
    StageTooLowError,
    Transform,
)
from tolerances import EPS  # round-off margins below are counts of EPS

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
G = np.array([0.0, -9.81, 0.0])
MIXED = ("Pin", "Slider", "Ball", "Free", "Universal", "Gimbal", "Cylinder", "Planar", "Translation", "Bushing",
         "Weld", "FreeLine", "LineOrientation", "Screw")
H = 1e-6


def spec(rng, joint, parent, mass=None):
    m = float(rng.uniform(0.5, 2.5)) if mass is None else mass
    return BodySpec(joint, parent, random_transform(rng), random_transform(rng), m, rng.uniform(-0.4, 0.4, 3),
                    random_central_inertia(rng, m), (0.3,) if joint == "Screw" else ())


def random_realized(seed, joints=MIXED, stage=Stage.Acceleration, gravity=G, discrete=True):
    rng = np.random.default_rng(seed)
    model = random_model(rng, joints, int(rng.integers(3, 8)), gravity=gravity, discrete_forces=discrete)
    state = new_state(model)
    randomize_state(model, state, rng)
    if discrete:
        model.system.realize(state, Stage.Position)
        model.discrete.set_all_mobility_forces(state, rng.uniform(-1, 1, state.get_nu()))
    model.system.realize(state, stage)
    return rng, model, state


def at_time_offset(model, state, dt):
    """A copy of ``state`` moved by dt along its motion to second order (q + dt qdot + dt^2/2
    qdotdot, u + dt udot), realized to Velocity: central differences of it are O(dt^2) accurate."""
    s = state.copy()
    s.set_q(np.array(state.get_q()) + dt * np.array(state.get_qdot()) + 0.5 * dt * dt * np.array(state.get_qdotdot()))
    s.set_u(np.array(state.get_u()) + dt * np.array(state.get_udot()))
    model.system.realize(s, Stage.Velocity)
    return s


# ---------------------------------------------------------------------- coordinates
def test_pin_and_slider_accessors_and_closed_form_poses():
    """Pin set_angle/get_angle/set_rate/get_rate and Slider set_length/get_length/set_rate are the
    body's q and u; the resulting poses are X_GP X_PF X_FM ~X_BM with X_FM = Rz(angle) or
    Translation(length x), and the angular velocity is rate times F's z axis in Ground."""
    rng = np.random.default_rng(1)
    model = build([None, spec(rng, "Pin", 0), spec(rng, "Slider", 1)])
    state = new_state(model)
    pin, slider = model.mobods[1], model.mobods[2]
    pin.set_angle(state, 0.7)
    pin.set_rate(state, -1.3)
    slider.set_length(state, 0.4)
    slider.set_rate(state, 2.0)
    assert pin.get_angle(state) == 0.7 and pin.get_one_q(state, 0) == 0.7 and pin.get_q(state).tolist() == [0.7]
    assert pin.get_rate(state) == -1.3 and pin.get_one_u(state, 0) == -1.3
    assert slider.get_length(state) == 0.4 and slider.get_rate(state) == 2.0
    assert slider.get_u(state).tolist() == [2.0]
    model.system.realize(state, Stage.Velocity)
    s1, s2 = model.specs[1], model.specs[2]
    X_G1 = s1.X_PF * Transform(Rotation(0.7, "z")) * ~s1.X_BM
    X_G2 = X_G1 * s2.X_PF * Transform([0.4, 0.0, 0.0]) * ~s2.X_BM
    for mb, X in ((pin, X_G1), (slider, X_G2)):
        assert mb.get_body_transform(state).is_same_transform(X, (64 * EPS), (64 * EPS))
        assert rel_err(mb.get_body_rotation(state).matrix, X.R.matrix) < (64 * EPS)
        assert rel_err(mb.get_body_origin_location(state), X.p) < (64 * EPS)
    assert pin.get_mobilizer_transform(state).is_same_transform(Transform(Rotation(0.7, "z")), (64 * EPS), (64 * EPS))
    assert rel_err(pin.get_body_angular_velocity(state), -1.3 * (s1.X_PF.R * np.array([0.0, 0, 1]))) < (64 * EPS)
    assert rel_err(pin.get_mobilizer_velocity(state), [[0, 0, -1.3], [0, 0, 0]]) < (64 * EPS)
    assert rel_err(slider.get_mobilizer_velocity(state), [[0, 0, 0], [2.0, 0, 0]]) < (64 * EPS)


def test_q_and_u_setters_invalidate_their_stages_and_read_back():
    """set_q / set_one_q drop the State below Position, set_u / set_one_u below Velocity; each
    body's slice of the State's q and u is exactly what was set."""
    rng = np.random.default_rng(2)
    model = build([None, spec(rng, "Ball", 0), spec(rng, "Free", 1), spec(rng, "Gimbal", 2)])
    state = new_state(model)
    ball, free, gimbal = model.mobods[1:]
    assert [mb.get_num_q(state) for mb in model.mobods[1:]] == [4, 7, 3]
    assert [mb.get_num_u(state) for mb in model.mobods[1:]] == [3, 6, 3]
    qb = np.array([0.5, 0.5, -0.5, 0.5])
    ball.set_q(state, qb)
    free.set_u(state, np.arange(6.0))
    gimbal.set_q(state, [0.1, 0.2, 0.3])
    assert np.array_equal(state.get_q()[:4], qb)
    assert np.array_equal(state.get_u()[3:9], np.arange(6.0))
    assert np.array_equal(free.get_u(state), np.arange(6.0))
    assert gimbal.get_one_q(state, 2) == 0.3
    model.system.realize(state, Stage.Acceleration)
    gimbal.set_one_u(state, 1, 0.25)
    assert state.get_system_stage() == Stage.Position
    assert gimbal.get_one_u(state, 1) == 0.25
    model.system.realize(state, Stage.Acceleration)
    free.set_one_q(state, 5, -0.75)
    assert state.get_system_stage() == Stage.Time
    assert free.get_q(state)[5] == -0.75
    with pytest.raises(ValueError):  # getters are read-only views
        free.get_q(state)[0] = 2.0


# ---------------------------------------------------------------------- kinematics vs finite differences
@settings(max_examples=20)
@given(seed=SEEDS)
def test_velocities_and_accelerations_are_time_derivatives(seed):
    """get_body_velocity is the time derivative of the pose (angular: dR/dt R^T), and
    find_station_velocity/acceleration_in_ground are the first and second time derivatives of
    find_station_location_in_ground (= X_GB * station), by central differences along the motion."""
    rng, model, state = random_realized(seed)
    sp, sm = at_time_offset(model, state, H), at_time_offset(model, state, -H)
    for mb in model.mobods[1:]:
        s_B = rng.uniform(-1, 1, 3)
        X = mb.get_body_transform(state)
        p = mb.find_station_location_in_ground(state, s_B)
        assert rel_err(p, X * s_B) < (64 * EPS)
        V = mb.get_body_velocity(state)
        w_fd = skew_to_vec((mb.get_body_rotation(sp).matrix - mb.get_body_rotation(sm).matrix) / (2 * H) @ X.R.matrix.T)
        v_fd = (mb.get_body_origin_location(sp) - mb.get_body_origin_location(sm)) / (2 * H)
        assert rel_err(V[0], w_fd) < 1e-8 and rel_err(V[1], v_fd) < 1e-8
        assert np.array_equal(mb.get_body_angular_velocity(state), V[0])
        assert np.array_equal(mb.get_body_origin_velocity(state), V[1])
        v_S = mb.find_station_velocity_in_ground(state, s_B)
        v_S_fd = (mb.find_station_location_in_ground(sp, s_B) - mb.find_station_location_in_ground(sm, s_B)) / (2 * H)
        assert rel_err(v_S, v_S_fd) < 1e-8
        a_S = mb.find_station_acceleration_in_ground(state, s_B)
        a_S_fd = (mb.find_station_velocity_in_ground(sp, s_B) - mb.find_station_velocity_in_ground(sm, s_B)) / (2 * H)
        assert rel_err(a_S, a_S_fd) < 1e-7
        A = mb.get_body_acceleration(state)
        assert rel_err(A, (np.array(mb.get_body_velocity(sp)) - mb.get_body_velocity(sm)) / (2 * H)) < 1e-7


@settings(max_examples=15)
@given(seed=SEEDS)
def test_relative_transforms_and_expressing_vectors(seed):
    """find_body_transform_in_another_body gives X_AB with X_GA X_AB = X_GB (and X_GB itself for
    A = Ground); express_vector_in_ground is R_GB v and express_ground_vector_in_body undoes it."""
    rng, model, state = random_realized(seed, stage=Stage.Position)
    for mb in model.mobods:
        other = model.mobods[int(rng.integers(0, model.nb))]
        X_AB = mb.find_body_transform_in_another_body(state, other)
        assert (other.get_body_transform(state) * X_AB).is_same_transform(mb.get_body_transform(state), (512 * EPS), (512 * EPS))
        assert mb.find_body_transform_in_another_body(state, model.matter.ground).is_same_transform(
            mb.get_body_transform(state), 64 * EPS, 64 * EPS)
        v = rng.uniform(-1, 1, 3)
        vG = mb.express_vector_in_ground(state, v)
        assert rel_err(vG, mb.get_body_rotation(state).matrix @ v) < (64 * EPS)
        assert rel_err(mb.express_ground_vector_in_body(state, vG), v) < (64 * EPS)


# ---------------------------------------------------------------------- applying forces
class _Applied(Force.Custom.Implementation):
    """Applies a fixed body force and a fixed mobility force through the per-body helpers."""

    def __init__(self, mobod, F=None, which_u=None, f=0.0):
        super().__init__()
        self.mobod, self.F, self.which_u, self.f = mobod, F, which_u, f

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        if self.F is not None:
            self.mobod.apply_body_force(state, self.F, body_forces)
        if self.which_u is not None:
            self.mobod.apply_one_mobility_force(state, self.which_u, self.f, mobility_forces)


def test_apply_body_force_on_a_free_body_obeys_newton_euler():
    """A free body at rest with spatial force F = (t about its origin, f) applied by
    apply_body_force has m (a_O + alpha x r) = f and I_O alpha + m r x a_O = t (r the mass center
    offset in Ground), solved here as a 6x6 linear system."""
    rng = np.random.default_rng(3)
    model = build([None, spec(rng, "Free", 0)])
    F = rng.uniform(-2, 2, (2, 3))
    Force.Custom(model.forces, _Applied(model.mobods[1], F=F))
    state = new_state(model)
    model.mobods[1].set_q(state, [0.6, 0.0, 0.8, 0.0, 0.1, 0.2, 0.3])
    model.system.realize(state, Stage.Acceleration)
    s = model.specs[1]
    R = model.mobods[1].get_body_rotation(state).matrix
    r = R @ s.com
    I_O = R @ s.I_B @ R.T
    rx = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    K = np.block([[s.mass * np.eye(3), -s.mass * rx], [s.mass * rx, I_O]])
    a_O, alpha = np.split(np.linalg.solve(K, np.r_[F[1], F[0]]), 2)
    A = model.mobods[1].get_body_acceleration(state)
    assert rel_err(A[0], alpha) < (512 * EPS) and rel_err(A[1], a_O) < (512 * EPS)


def test_apply_one_mobility_force_closed_forms():
    """A mobility force f on a lone Slider gives udot = f / m; a torque on a lone Pin gives
    udot = tau / I_axis, the inertia about the pin axis through M's origin (parallel axes)."""
    rng = np.random.default_rng(4)
    model = build([None, spec(rng, "Slider", 0)])
    Force.Custom(model.forces, _Applied(model.mobods[1], which_u=0, f=3.0))
    state = new_state(model)
    model.system.realize(state, Stage.Acceleration)
    assert model.mobods[1].get_one_u(state, 0) == 0.0
    assert model.mobods[1].get_udot(state)[0] == pytest.approx(3.0 / model.specs[1].mass, rel=(64 * EPS))

    model = build([None, spec(rng, "Pin", 0)])
    Force.Custom(model.forces, _Applied(model.mobods[1], which_u=0, f=-2.0))
    state = new_state(model)
    model.system.realize(state, Stage.Acceleration)
    s = model.specs[1]
    z_B = s.X_BM.R * np.array([0.0, 0.0, 1.0])
    d = s.com - s.X_BM.p
    I_axis = z_B @ (s.I_C + s.mass * (d @ d * np.eye(3) - np.outer(d, d))) @ z_B
    assert model.mobods[1].get_udot(state)[0] == pytest.approx(-2.0 / I_axis, rel=(512 * EPS))
    with pytest.raises(IndexError):
        model.mobods[1].apply_one_mobility_force(state, 1, 1.0, np.zeros(1))
    with pytest.raises(ValueError):
        model.mobods[1].apply_body_force(state, [1.0, 2.0, 3.0], np.zeros((2, 2, 3)))


# ---------------------------------------------------------------------- reaction forces
def test_hanging_pendulum_reaction_is_its_weight():
    """A pendulum hanging at rest below its pin (mass center straight below M's origin): the
    mobilizer reaction on it at M is the weight, upward, with no torque."""
    model = build([None, BodySpec("Pin", 0, Transform([0.0, 2.0, 0.0]), Transform([0.0, 1.0, 0.0]), 3.0,
                                  np.zeros(3), np.diag([0.1, 0.2, 0.3]))], gravity=G)
    state = new_state(model)
    model.system.realize(state, Stage.Acceleration)
    assert np.abs(state.get_udot()).max() < (64 * EPS)
    F = model.matter.calc_mobilizer_reaction_forces(state)
    assert F.shape == (2, 2, 3)
    assert rel_err(F[1], [[0, 0, 0], [0, 3.0 * 9.81, 0]]) < (64 * EPS)


def test_welded_subtree_reaction_balances_gravity():
    """A body welded to Ground carrying a hanging pendulum at rest: the Weld's reaction is the
    whole subtree's weight upward and the torque about M's origin cancels gravity's,
    -(sum_i (p_Ci - p_M) x m_i g)."""
    rng = np.random.default_rng(5)
    weld = BodySpec("Weld", 0, random_transform(rng), random_transform(rng), 2.0, rng.uniform(-0.3, 0.3, 3),
                    random_central_inertia(rng, 2.0))
    # The pendulum hangs from a point of the welded body, its F frame aligned with Ground.
    # (R_GB = R_PF ~R_BM for a Weld, so R_BF = R_BM ~R_PF makes R_GF the identity.)
    X_PF = Transform(weld.X_BM.R * ~weld.X_PF.R, [0.1, -0.2, 0.3])
    model = build([None, weld, BodySpec("Pin", 1, X_PF, Transform([0, 0.8, 0]), 1.0, np.zeros(3), np.diag([.1, .1, .1]))],
                  gravity=G)
    state = new_state(model)
    model.system.realize(state, Stage.Acceleration)
    assert np.abs(state.get_udot()).max() < (2**13 * EPS)  # the pendulum hangs straight down at rest
    F = model.matter.calc_mobilizer_reaction_forces(state)
    welded, pend = model.mobods[1], model.mobods[2]
    p_M = (welded.get_body_transform(state) * weld.X_BM).p
    total = 3.0 * 9.81
    torque = -sum(np.cross(mb.find_station_location_in_ground(state, s.com) - p_M, s.mass * G)
                  for mb, s in ((welded, weld), (pend, model.specs[2])))
    assert rel_err(F[1, 1], [0, total, 0]) < (512 * EPS)
    assert rel_err(F[1, 0], torque) < (512 * EPS)


def _about(F, from_point, to_point):
    """The spatial force F (torque about from_point, force) with its torque taken about to_point."""
    return np.array([F[0] + np.cross(from_point - to_point, F[1]), F[1]])


@settings(max_examples=20)
@given(seed=SEEDS, with_mobility_forces=st.booleans())
def test_reactions_satisfy_newton_euler_per_body(seed, with_mobility_forces):
    """For every body: the reaction on it (calc_mobilizer_reaction_forces, at M's origin) plus its
    applied forces (gravity, DiscreteForces body forces) minus what it passes to each child
    through their mobilizers equals its momentum rate (I_C alpha + w x I_C w, m a_C) about its
    mass center. The reaction includes the mobility forces the mobilizer applies and nothing else
    along its mobilities: H^T F_reaction = f (the mobilizer's own columns of the system Jacobian,
    at the body origin); so with no mobility forces a Ball transmits no torque about its center
    and a Free joint nothing at all."""
    rng, model, state = random_realized(seed, joints=("Pin", "Slider", "Ball", "Free", "Weld", "Gimbal", "Universal"),
                                        discrete=True, stage=Stage.Position)
    f = rng.uniform(-1, 1, state.get_nu()) if with_mobility_forces else np.zeros(state.get_nu())
    model.discrete.set_all_mobility_forces(state, f)
    F_app = rng.uniform(-1, 1, (model.nb, 2, 3))
    F_app[0] = 0
    model.discrete.set_all_body_forces(state, F_app)
    model.system.realize(state, Stage.Acceleration)
    reactions = model.matter.calc_mobilizer_reaction_forces(state)
    J = model.matter.calc_system_jacobian(state).reshape(model.nb, 6, -1)

    u_start = 0
    for i, (mb, s) in enumerate(zip(model.mobods[1:], model.specs[1:]), start=1):
        X = mb.get_body_transform(state)
        p_C = X * s.com
        p_M = (X * s.X_BM).p
        net = _about(reactions[i], p_M, p_C) + _about(F_app[i], X.p, p_C) + np.array([np.zeros(3), s.mass * G])
        for j, (cb, cs) in enumerate(zip(model.mobods[1:], model.specs[1:]), start=1):
            if cs.parent == i:
                net -= _about(reactions[j], (cb.get_body_transform(state) * cs.X_BM).p, p_C)
        w = mb.get_body_angular_velocity(state)
        I_C = X.R.matrix @ s.I_C @ X.R.matrix.T
        alpha = mb.get_body_angular_acceleration(state)
        rate = np.array([I_C @ alpha + np.cross(w, I_C @ w), s.mass * mb.find_station_acceleration_in_ground(state, s.com)])
        assert rel_err(net, rate) < (2**16 * EPS)
        n = mb.get_num_u(state)
        H = J[i, :, u_start:u_start + n]  # (6, n): this mobilizer's columns, at the body origin
        assert rel_err(H.T @ _about(reactions[i], p_M, X.p).reshape(6), f[u_start:u_start + n]) < (2**16 * EPS)
        u_start += n
        if not with_mobility_forces and s.joint == "Ball":
            assert np.abs(reactions[i, 0]).max() < (2**16 * EPS) * max(1, np.abs(reactions[i]).max())
        if not with_mobility_forces and s.joint == "Free":
            assert np.abs(reactions[i]).max() < (2**16 * EPS)


# ---------------------------------------------------------------------- system sums
@settings(max_examples=20)
@given(seed=SEEDS)
def test_system_mass_center_momentum_and_energy_are_sums_over_bodies(seed):
    """calc_system_mass, the mass center location and velocity, the momentum about the Ground
    origin and the kinetic energy equal the sums over the bodies' own mass properties and
    per-body kinematics."""
    rng, model, state = random_realized(seed, stage=Stage.Velocity)
    matter = model.matter
    masses = np.array([s.mass for s in model.specs[1:]])
    p_C = np.array([mb.find_station_location_in_ground(state, s.com) for mb, s in zip(model.mobods[1:], model.specs[1:])])
    v_C = np.array([mb.find_station_velocity_in_ground(state, s.com) for mb, s in zip(model.mobods[1:], model.specs[1:])])
    assert matter.calc_system_mass(state) == pytest.approx(masses.sum(), rel=(64 * EPS))
    assert rel_err(matter.calc_system_mass_center_location_in_ground(state), masses @ p_C / masses.sum()) < (64 * EPS)
    assert rel_err(matter.calc_system_mass_center_velocity_in_ground(state), masses @ v_C / masses.sum()) < (64 * EPS)
    L, P, KE = np.zeros(3), np.zeros(3), 0.0
    for mb, s, m, p, v in zip(model.mobods[1:], model.specs[1:], masses, p_C, v_C):
        R = mb.get_body_rotation(state).matrix
        w = mb.get_body_angular_velocity(state)
        I_C = R @ s.I_C @ R.T
        L += I_C @ w + np.cross(p, m * v)
        P += m * v
        KE += 0.5 * m * v @ v + 0.5 * w @ I_C @ w
    assert rel_err(matter.calc_system_momentum_about_ground_origin(state), [L, P]) < (512 * EPS)
    assert matter.calc_kinetic_energy(state) == pytest.approx(KE, rel=(2**13 * EPS))
    assert model.system.calc_kinetic_energy(state) == pytest.approx(KE, rel=(2**13 * EPS))


# ---------------------------------------------------------------------- errors
def test_bad_coordinates_are_refused_and_leave_the_state_unchanged():
    """Wrong lengths, NaN or infinity in set_q/set_u/set_one_q raise ValueError naming the body,
    out-of-range indices raise IndexError, and the State (values and stage) is untouched."""
    rng = np.random.default_rng(6)
    model = build([None, spec(rng, "Ball", 0), spec(rng, "Pin", 1)])
    state = new_state(model)
    ball, pin = model.mobods[1:]
    model.system.realize(state, Stage.Acceleration)
    q0, u0 = np.array(state.get_q()), np.array(state.get_u())
    bad_calls = [
        (ValueError, "Ball #1", lambda: ball.set_q(state, [1.0, 0.0])),
        (ValueError, "Ball #1", lambda: ball.set_q(state, [1.0, 0.0, np.nan, 0.0])),
        (ValueError, "Pin #2", lambda: pin.set_q(state, [np.inf])),
        (ValueError, "Pin #2", lambda: pin.set_q(state, [0.1, 0.2])),
        (ValueError, "Ball #1", lambda: ball.set_u(state, [1.0, 2.0, 3.0, 4.0])),
        (ValueError, "Ball #1", lambda: ball.set_u(state, [1.0, np.nan, 3.0])),
        (ValueError, "Pin #2", lambda: pin.set_one_q(state, 0, np.nan)),
        (ValueError, "Pin #2", lambda: pin.set_angle(state, float("inf"))),
        (IndexError, "Pin #2", lambda: pin.set_one_q(state, 1, 0.0)),
        (IndexError, "Ball #1", lambda: ball.get_one_q(state, 4)),
        (IndexError, "Ball #1", lambda: ball.set_one_u(state, -1, 0.0)),
    ]
    for exc, name, call in bad_calls:
        with pytest.raises(exc, match=name):
            call()
        assert state.get_system_stage() == Stage.Acceleration
        assert np.array_equal(state.get_q(), q0) and np.array_equal(state.get_u(), u0)


@pytest.mark.parametrize("getter, needed", [
    (lambda mb, s: mb.get_body_transform(s), "Position"),
    (lambda mb, s: mb.find_station_location_in_ground(s, [0, 0, 1.0]), "Position"),
    (lambda mb, s: mb.get_body_velocity(s), "Velocity"),
    (lambda mb, s: mb.find_station_velocity_in_ground(s, [0, 0, 1.0]), "Velocity"),
    (lambda mb, s: mb.get_body_acceleration(s), "Acceleration"),
    (lambda mb, s: mb.find_station_acceleration_in_ground(s, [0, 0, 1.0]), "Acceleration"),
    (lambda mb, s: mb.get_matter_subsystem().calc_m(s), "Position"),
    (lambda mb, s: mb.get_matter_subsystem().calc_mobilizer_reaction_forces(s), "Acceleration"),
    (lambda mb, s: mb.get_matter_subsystem().calc_system_momentum_about_ground_origin(s), "Velocity"),
])
def test_reading_below_the_needed_stage_names_the_stage(getter, needed):
    """Every getter refuses a State realized one stage too low with StageTooLowError naming the
    stage it needs."""
    rng = np.random.default_rng(7)
    model = build([None, spec(rng, "Pin", 0)], gravity=G)
    state = new_state(model)
    model.system.realize(state, Stage[needed].prev())
    with pytest.raises(StageTooLowError, match=needed):
        getter(model.mobods[1], state)
    model.system.realize(state, Stage[needed])
    getter(model.mobods[1], state)  # and works once realized


def test_bodies_and_states_of_another_system_are_refused():
    """A body of another matter subsystem given to this matter's operators, or a State of another
    System given to a body, raises ValueError instead of reading the wrong arrays."""
    rng = np.random.default_rng(8)
    A = build([None, spec(rng, "Pin", 0)])
    B = build([None, spec(rng, "Pin", 0)])
    sA, sB = new_state(A), new_state(B)
    A.system.realize(sA, Stage.Position)
    B.system.realize(sB, Stage.Position)
    with pytest.raises(ValueError, match="belongs to .*, not to this System"):
        A.matter.calc_station_jacobian(sA, [B.mobods[1]], [[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="belongs to .*, not to this System"):
        A.matter.add_in_station_force(sA, B.mobods[1], [0, 0, 0], [1, 0, 0], np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="State belongs to"):
        B.mobods[1].get_body_transform(sA)
    with pytest.raises(ValueError, match="State belongs to"):
        B.mobods[1].set_q(sA, [0.3])
    assert A.mobods[1].get_q(sA)[0] == 0.0


@pytest.mark.parametrize("joint", ["Pin", "Slider"])
def test_reversed_pin_and_slider_are_forward_ones_with_negated_coordinates(joint):
    """Simbody's reversed mobilizer has X_FM(q) = ~X_MF(q) with the forward joint function: for
    a Pin or Slider that is the forward joint at -q moving at -u. The same body under gravity and a
    mobility force f (which becomes -f) then has the same poses, velocities and accelerations, and
    udot is negated."""
    rng = np.random.default_rng(9)
    s1 = spec(rng, joint, 0)
    bodies = []
    for direction, sign in ((MobilizedBody.Forward, -1.0), (MobilizedBody.Reverse, 1.0)):
        model = build([None], gravity=G)
        mp = MassProperties.from_central_inertia(s1.mass, s1.com, s1.I_C)
        mb = getattr(MobilizedBody, joint)(model.matter.ground, s1.X_PF, Body.Rigid(mp), s1.X_BM, direction=direction)
        Force.MobilityConstantForce(model.forces, mb, 0, sign * 0.7)
        state = new_state(model)
        mb.set_one_q(state, 0, sign * 0.4)
        mb.set_one_u(state, 0, sign * -1.1)
        model.system.realize(state, Stage.Acceleration)
        bodies.append((mb, state))
    (fwd, sf), (rev, sr) = bodies
    assert rev.get_body_transform(sr).is_same_transform(fwd.get_body_transform(sf), (64 * EPS), (64 * EPS))
    assert rel_err(rev.get_body_velocity(sr), fwd.get_body_velocity(sf)) < (64 * EPS)
    assert rel_err(rev.get_body_acceleration(sr), fwd.get_body_acceleration(sf)) < (512 * EPS)
    assert rev.get_udot(sr)[0] == pytest.approx(-fwd.get_udot(sf)[0], rel=(512 * EPS))
    # X_FM of the reversed joint at q is ~X_FM of the forward one at q, i.e. the forward one at -q.
    assert rev.get_mobilizer_transform(sr).is_same_transform(fwd.get_mobilizer_transform(sf), (64 * EPS), (64 * EPS))


def test_unknown_direction_is_refused():
    """direction must be MobilizedBody.Forward or MobilizedBody.Reverse; anything else raises
    ValueError and adds no body."""
    rng = np.random.default_rng(10)
    model = build([None, spec(rng, "Pin", 0)])
    n = model.matter.get_num_bodies()
    with pytest.raises(ValueError, match="direction"):
        MobilizedBody.Slider(model.mobods[1], Body.Rigid(), direction="Sideways")
    assert model.matter.get_num_bodies() == n
