"""Self-consistency of the matter subsystem's operators on random trees of EVERY built-in mobilizer.

Each property checks one operator against a different algorithm or against finite differences:
CRBA (calc_m) against RNEA (calc_residual_force_ignoring_constraints), ABA (realized udot)
against a dense solve with both, the O(n) M and M^-1 operators against each other, Euler-angle
against quaternion coordinates, and every Jacobian (and its bias) against finite differences of
the realized poses and velocities along qdot = N u.

Trees are drawn from hypothesis seeds over all mobilizers, and for every mobilizer type a
deterministic tree where it is every other body, so each one is surely exercised.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import (
    ALL_JOINTS,
    QUATERNION_JOINTS,
    BodySpec,
    build,
    joint_params,
    new_state,
    quaternion_q_to_euler_q,
    random_central_inertia,
    random_specs,
    random_transform,
    randomize_state,
    rel_err,
    skew_to_vec,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simtk import Rotation, Stage
from tolerances import EPS  # round-off margins below are counts of EPS

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
G = np.array([0.3, -9.81, 0.6])
H_FD = 1e-6          # central-difference step along qdot = N u
FD_TOL = 2e-8        # relative; truncation O(h^2) and round-off O(eps / h) measured at ~1e-10


def focus_specs(rng: np.random.Generator, joint: str, nb: int = 7) -> list:
    """Random tree whose odd-numbered bodies all use ``joint`` (the others a random mobilizer)."""
    specs = random_specs(rng, ALL_JOINTS, nb)
    for i in range(1, nb, 2):
        s = specs[i]
        specs[i] = BodySpec(joint, s.parent, s.X_PF, s.X_BM, s.mass, s.com, s.I_C, joint_params(rng, joint))
    return specs


def make(rng: np.random.Generator, specs: list, euler: bool):
    """Model with gravity and DiscreteForces, a random state with random applied forces."""
    model = build(specs, gravity=G, discrete_forces=True)
    state = new_state(model, euler)
    randomize_state(model, state, rng, speed=1.2)
    model.system.realize(state, Stage.Position)
    nu = state.get_nu()
    model.discrete.set_all_mobility_forces(state, rng.uniform(-2, 2, nu))
    F = rng.uniform(-1, 1, (model.nb, 2, 3))
    F[0] = 0.0
    model.discrete.set_all_body_forces(state, F)
    return model, state


def realized_poses(model, state):
    """(R_GB, p_GB) of every body, read through the per-body API, (nb, 3, 3) and (nb, 3)."""
    X = [mb.get_body_transform(state) for mb in model.mobods]
    return np.array([x.R.matrix for x in X]), np.array([x.p for x in X])


def with_q(model, state, q, stage=Stage.Position):
    """A copy of ``state`` with coordinates ``q``, realized to ``stage``."""
    s = state.copy()
    s.set_q(q)
    model.system.realize(s, stage)
    return s


# ---------------------------------------------------------------------- properties
def check_mass_matrix(model, state, rng):
    """M (calc_m, CRBA) is symmetric positive definite, and column j equals
    residual(e_j) - residual(0) from inverse dynamics (RNEA) at the state's nonzero velocity:
    both residuals carry the same velocity bias and forces, so it cancels."""
    matter = model.matter
    model.system.realize(state, Stage.Dynamics)
    nu = state.get_nu()
    M = matter.calc_m(state)
    assert M.shape == (nu, nu)
    assert np.abs(M - M.T).max() <= (512 * EPS) * np.abs(M).max()
    np.linalg.cholesky(M)  # raises unless positive definite
    f = model.system.get_mobility_forces(state)
    F = model.system.get_rigid_body_forces(state)
    r0 = matter.calc_residual_force_ignoring_constraints(state, f, F, np.zeros(nu))
    cols = np.column_stack([matter.calc_residual_force_ignoring_constraints(state, f, F, e) - r0
                            for e in np.eye(nu)])
    assert rel_err(cols, M) < (2**16 * EPS)


def check_forward_dynamics(model, state, rng):
    """ABA's realized udot solves M udot = f + J^T F - bias, with M from CRBA and
    bias = residual(udot = 0, no forces) from RNEA: the residual of the realized udot is ~0 and it
    equals the dense solve to within the conditioning of M."""
    matter = model.matter
    model.system.realize(state, Stage.Acceleration)
    nu = state.get_nu()
    udot = np.array(state.get_udot())
    f = model.system.get_mobility_forces(state)
    F = model.system.get_rigid_body_forces(state)
    M = matter.calc_m(state)
    bias = matter.calc_residual_force_ignoring_constraints(state, np.zeros(nu), np.zeros_like(F), np.zeros(nu))
    rhs = f + matter.multiply_by_system_jacobian_transpose(state, F) - bias
    assert rel_err(M @ udot, rhs) < (2**16 * EPS)
    assert rel_err(matter.calc_residual_force_ignoring_constraints(state, f, F, udot), np.zeros(nu)) < (2**16 * EPS) * max(
        1.0, np.abs(rhs).max())
    assert rel_err(udot, np.linalg.solve(M, rhs)) < (64 * EPS) * np.linalg.cond(M) + (2**13 * EPS)
    # The same forces through calc_acceleration_ignoring_constraints, on a copy of the realized state.
    udot2, A = matter.calc_acceleration_ignoring_constraints(state, f, F)
    assert rel_err(udot2, udot) < (512 * EPS)
    assert np.array_equal(state.get_udot(), udot)  # the operator left the realized results alone


def check_m_operators(model, state, rng):
    """multiply_by_m(x) = M x, multiply_by_m_inv(multiply_by_m(x)) = x, calc_m_inv = inv(calc_m)."""
    matter = model.matter
    nu = state.get_nu()
    M = matter.calc_m(state)
    x = rng.uniform(-1, 1, nu)
    Mx = matter.multiply_by_m(state, x)
    assert rel_err(Mx, M @ x) < (2**13 * EPS)
    cond = np.linalg.cond(M)
    assert rel_err(matter.multiply_by_m_inv(state, Mx), x) < (64 * EPS) * cond + (512 * EPS)
    assert rel_err(matter.calc_m_inv(state) @ M, np.eye(nu)) < (64 * EPS) * cond + (512 * EPS)
    assert rel_err(matter.calc_m_inv(state), np.linalg.inv(M)) < (64 * EPS) * cond * max(1.0, np.abs(np.linalg.inv(M)).max())


def check_velocity_jacobians(model, state, rng):
    """multiply_by_system_jacobian(u) (and calc_system_jacobian u) equals finite differences of the
    realized body poses along qdot = N u (calc_qdot); the body velocities realized from the
    state's own u are J u; calc_station_jacobian and calc_frame_jacobian columns equal finite
    differences of station positions / frame poses along qdot = N e_j."""
    matter, system = model.matter, model.system
    system.realize(state, Stage.Velocity)
    nu, nb = state.get_nu(), model.nb
    q = np.array(state.get_q())
    u = rng.uniform(-1, 1, nu)
    V = matter.multiply_by_system_jacobian(state, u)
    assert V.shape == (nb, 2, 3)

    def fd_velocities(direction_u):
        qdot = matter.calc_qdot(state, direction_u)
        Rp, pp = realized_poses(model, with_q(model, state, q + H_FD * qdot))
        Rm, pm = realized_poses(model, with_q(model, state, q - H_FD * qdot))
        R0, _ = realized_poses(model, state)
        w = np.array([skew_to_vec((Rp[i] - Rm[i]) / (2 * H_FD) @ R0[i].T) for i in range(nb)])
        return np.stack([w, (pp - pm) / (2 * H_FD)], axis=1)

    scale = max(1.0, np.abs(V).max())
    assert np.abs(V - fd_velocities(u)).max() < FD_TOL * scale
    J = matter.calc_system_jacobian(state)
    assert J.shape == (6 * nb, nu)
    assert rel_err(J @ u, V.reshape(-1)) < (512 * EPS)
    assert rel_err(J @ np.array(state.get_u()), np.array([mb.get_body_velocity(state) for mb in model.mobods]).reshape(-1)) < (512 * EPS)
    # qdot realized for the state's own u is N u.
    assert rel_err(state.get_qdot(), matter.calc_qdot(state, state.get_u())) < (64 * EPS)

    bodies = [model.mobods[int(i)] for i in rng.integers(0, nb, 3)]
    stations = rng.uniform(-1, 1, (3, 3))
    Js = matter.calc_station_jacobian(state, bodies, stations)
    Jf = matter.calc_frame_jacobian(state, bodies, stations)
    assert Js.shape == (9, nu) and Jf.shape == (18, nu)
    for j in range(nu):
        e = np.zeros(nu)
        e[j] = 1.0
        qdot = matter.calc_qdot(state, e)
        sp, sm = with_q(model, state, q + H_FD * qdot), with_q(model, state, q - H_FD * qdot)
        for k, (b, s) in enumerate(zip(bodies, stations)):
            v_fd = (b.find_station_location_in_ground(sp, s) - b.find_station_location_in_ground(sm, s)) / (2 * H_FD)
            dR = (b.get_body_rotation(sp).matrix - b.get_body_rotation(sm).matrix) / (2 * H_FD)
            w_fd = skew_to_vec(dR @ b.get_body_rotation(state).matrix.T)
            assert np.abs(Js[3 * k:3 * k + 3, j] - v_fd).max() < FD_TOL * max(1.0, np.abs(v_fd).max())
            assert np.abs(Jf[6 * k + 3:6 * k + 6, j] - v_fd).max() < FD_TOL * max(1.0, np.abs(v_fd).max())
            assert np.abs(Jf[6 * k:6 * k + 3, j] - w_fd).max() < FD_TOL * max(1.0, np.abs(w_fd).max())


def check_jacobian_transpose(model, state, rng):
    """Power balance: F . (J u) == u . (J^T F) for random body forces F and speeds u; and J^T F
    equals the transpose of the dense calc_system_jacobian applied to F."""
    matter = model.matter
    nu = state.get_nu()
    u = rng.uniform(-1, 1, nu)
    F = rng.uniform(-1, 1, (model.nb, 2, 3))
    JtF = matter.multiply_by_system_jacobian_transpose(state, F)
    lhs = float(np.sum(F * matter.multiply_by_system_jacobian(state, u)))
    assert abs(lhs - float(u @ JtF)) < (2**13 * EPS) * max(1.0, abs(lhs), np.abs(JtF).max())
    assert rel_err(JtF, matter.calc_system_jacobian(state).T @ F.reshape(-1)) < (512 * EPS)


def check_bias_and_accelerations(model, state, rng):
    """calc_bias_for_system_jacobian (JDot u) equals the central difference of the body
    velocities at fixed u along qdot = N u; the realized body accelerations are J udot + JDot u;
    qdotdot equals N udot plus the difference of N(q) u along the motion."""
    matter, system = model.matter, model.system
    system.realize(state, Stage.Acceleration)
    q = np.array(state.get_q())
    qdot = np.array(state.get_qdot())
    sp = with_q(model, state, q + H_FD * qdot, Stage.Velocity)
    sm = with_q(model, state, q - H_FD * qdot, Stage.Velocity)
    Vp = np.array([mb.get_body_velocity(sp) for mb in model.mobods])
    Vm = np.array([mb.get_body_velocity(sm) for mb in model.mobods])
    bias = matter.calc_bias_for_system_jacobian(state)
    fd = (Vp - Vm) / (2 * H_FD)
    assert np.abs(bias - fd).max() < FD_TOL * max(1.0, np.abs(fd).max())
    udot = np.array(state.get_udot())
    A = np.array([mb.get_body_acceleration(state) for mb in model.mobods])
    expected = matter.multiply_by_system_jacobian(state, udot) + bias
    assert rel_err(A, expected) < (2**13 * EPS)
    qdd_fd = (np.array(sp.get_qdot()) - np.array(sm.get_qdot())) / (2 * H_FD) + matter.calc_qdot(state, udot)
    assert np.abs(state.get_qdotdot() - qdd_fd).max() < FD_TOL * max(1.0, np.abs(qdd_fd).max())


CHECKS = [check_mass_matrix, check_forward_dynamics, check_m_operators, check_velocity_jacobians,
          check_jacobian_transpose, check_bias_and_accelerations]


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__[6:])
@settings(max_examples=30)
@given(seed=SEEDS, euler=st.booleans())
def test_random_trees_of_all_mobilizers(check, seed, euler):
    """Each law of this module holds on random trees mixing every built-in mobilizer, in
    quaternion and in Euler-angle mode."""
    rng = np.random.default_rng(seed)
    model, state = make(rng, random_specs(rng, ALL_JOINTS, int(rng.integers(3, 9))), euler)
    assume(state.get_nu() > 0)  # a tree of Welds only: see test_a_tree_of_welds_has_empty_operators
    check(model, state, rng)


def test_a_tree_of_welds_has_empty_operators():
    """With no mobilities at all, every operator returns its empty result and realizing to
    Acceleration works (the bodies' accelerations are zero)."""
    rng = np.random.default_rng(0)
    specs = random_specs(rng, ["Weld"], 4)
    model, state = make(rng, specs, euler=False)
    matter = model.matter
    model.system.realize(state, Stage.Acceleration)
    assert state.get_nu() == 0 and state.get_udot().shape == (0,)
    assert matter.calc_m(state).shape == (0, 0) and matter.calc_m_inv(state).shape == (0, 0)
    assert matter.multiply_by_m(state, np.zeros(0)).shape == (0,)
    assert matter.multiply_by_m_inv(state, np.zeros(0)).shape == (0,)
    assert matter.calc_system_jacobian(state).shape == (6 * model.nb, 0)
    assert matter.multiply_by_system_jacobian_transpose(state, np.ones((model.nb, 2, 3))).shape == (0,)
    F = model.system.get_rigid_body_forces(state)
    assert matter.calc_residual_force_ignoring_constraints(state, np.zeros(0), F, np.zeros(0)).shape == (0,)
    for mb in model.mobods:
        assert np.all(mb.get_body_acceleration(state) == 0.0)


@pytest.mark.parametrize("joint, euler", [(j, False) for j in ALL_JOINTS] +
                         [(j, True) for j in ALL_JOINTS if j in QUATERNION_JOINTS])
def test_every_mobilizer_in_every_law(joint, euler):
    """Every law of this module holds on a tree where ``joint`` is every other body (quaternion
    mobilizers also in Euler-angle mode)."""
    rng = np.random.default_rng(sum(map(ord, joint)))
    model, state = make(rng, focus_specs(rng, joint), euler)
    for check in CHECKS:
        check(model, state, rng)


@settings(max_examples=30)
@given(seed=SEEDS)
def test_euler_and_quaternion_modes_agree(seed):
    """The same physical state (quaternions converted to body-fixed X-Y-Z angles with
    simtk.Rotation, u unchanged: both modes use the same generalized speeds) gives the same body
    poses, velocities, mass matrix and udot in both modes."""
    rng = np.random.default_rng(seed)
    specs = random_specs(rng, ALL_JOINTS, int(rng.integers(3, 9)))
    for i in range(1, len(specs), 2):  # make sure quaternion mobilizers are present
        joint = ("Ball", "Free", "Ellipsoid", "LineOrientation", "FreeLine")[int(rng.integers(0, 5))]
        s = specs[i]
        specs[i] = BodySpec(joint, s.parent, s.X_PF, s.X_BM, s.mass, s.com, s.I_C, joint_params(rng, joint))
    model = build(specs, gravity=G, discrete_forces=True)
    sq = new_state(model)
    randomize_state(model, sq, rng)
    se = new_state(model, euler=True)
    assert model.matter.get_use_euler_angles(se) and not model.matter.get_use_euler_angles(sq)
    for mb, spec in zip(model.mobods[1:], specs[1:]):
        mb.set_q(se, quaternion_q_to_euler_q(spec.joint, np.array(mb.get_q(sq))))
        mb.set_u(se, mb.get_u(sq))
    assert se.get_nu() == sq.get_nu()
    assert se.get_nq() == sq.get_nq() - sum(1 for s in specs[1:] if s.joint in QUATERNION_JOINTS)
    tau = rng.uniform(-2, 2, sq.get_nu())
    for s in (sq, se):
        model.discrete.set_all_mobility_forces(s, tau)
        model.system.realize(s, Stage.Acceleration)
    for mb in model.mobods[1:]:
        assert mb.get_body_transform(se).R.is_same_rotation(mb.get_body_transform(sq).R, (2**13 * EPS))
        assert rel_err(mb.get_body_origin_location(se), mb.get_body_origin_location(sq)) < (2**13 * EPS)
        assert rel_err(mb.get_body_velocity(se), mb.get_body_velocity(sq)) < (2**13 * EPS)
    Mq = model.matter.calc_m(sq)
    assert rel_err(model.matter.calc_m(se), Mq) < (2**13 * EPS)
    assert rel_err(se.get_udot(), sq.get_udot()) < (2**13 * EPS) * np.linalg.cond(Mq)


def test_euler_angle_switch_is_a_model_change():
    """set_use_euler_angles drops the State to Topology and changes nq (one fewer per quaternion
    mobilizer) but not nu; defaults are the identity rotation in both modes."""
    rng = np.random.default_rng(7)
    specs = [None] + [BodySpec(j, i, random_transform(rng), random_transform(rng), 1.0, np.zeros(3),
                               random_central_inertia(rng, 1.0), joint_params(rng, j))
                      for i, j in enumerate(("Ball", "Free", "Pin", "FreeLine"))]
    model = build(specs)
    state = new_state(model)
    assert (state.get_nq(), state.get_nu()) == (4 + 7 + 1 + 7, 3 + 6 + 1 + 5)
    model.matter.set_use_euler_angles(state, True)
    assert state.get_system_stage() < Stage.Model
    model.system.realize(state, Stage.Position)
    assert (state.get_nq(), state.get_nu()) == (3 + 6 + 1 + 6, 3 + 6 + 1 + 5)
    for mb, spec in zip(model.mobods[1:], specs[1:]):
        assert mb.get_mobilizer_transform(state).R.is_same_rotation(Rotation(), 0.0)


# ---------------------------------------------------------------------- operators have no side effects
def _observables(model, state, stage) -> list:
    """Everything the public API reports about a State realized to ``stage``."""
    matter = model.matter
    out = [np.array(state.get_q()), np.array(state.get_u())]
    for mb in model.mobods:
        X = mb.get_body_transform(state)
        out += [X.R.matrix.copy(), X.p.copy()]
        if stage >= Stage.Velocity:
            out.append(np.array(mb.get_body_velocity(state)))
        if stage >= Stage.Acceleration:
            out.append(np.array(mb.get_body_acceleration(state)))
    if stage >= Stage.Velocity:
        out += [np.array(state.get_qdot()), matter.calc_bias_for_system_jacobian(state),
                np.array(matter.calc_kinetic_energy(state)), matter.calc_system_momentum_about_ground_origin(state)]
    if stage >= Stage.Acceleration:
        out += [np.array(state.get_udot()), np.array(state.get_qdotdot()), matter.calc_mobilizer_reaction_forces(state)]
    return out


def _call_every_operator(model, state, rng, stage) -> None:
    matter, nu, nq, nb = model.matter, state.get_nu(), state.get_nq(), model.nb
    matter.calc_m(state)
    matter.calc_m_inv(state)
    matter.multiply_by_m(state, rng.normal(size=nu))
    matter.multiply_by_m_inv(state, rng.normal(size=nu))
    matter.multiply_by_system_jacobian(state, rng.normal(size=nu))
    matter.multiply_by_system_jacobian_transpose(state, rng.normal(size=(nb, 2, 3)))
    matter.calc_system_jacobian(state)
    matter.calc_station_jacobian(state, [model.mobods[-1]], [[0.1, 0.2, 0.3]])
    matter.calc_frame_jacobian(state, [model.mobods[-1]], [[0.1, 0.2, 0.3]])
    matter.multiply_by_n(state, False, rng.normal(size=nu))
    matter.multiply_by_n(state, True, rng.normal(size=nq))
    matter.multiply_by_n_inv(state, False, rng.normal(size=nq))
    matter.calc_qdot(state, rng.normal(size=nu))
    if stage >= Stage.Velocity:
        matter.calc_residual_force_ignoring_constraints(state, rng.normal(size=nu), rng.normal(size=(nb, 2, 3)),
                                                        rng.normal(size=nu))
        matter.calc_acceleration_ignoring_constraints(state, rng.normal(size=nu), rng.normal(size=(nb, 2, 3)))
    if stage >= Stage.Acceleration:
        matter.calc_mobilizer_reaction_forces(state)


@settings(max_examples=20)
@given(seed=SEEDS, euler=st.booleans(), stage=st.sampled_from([Stage.Position, Stage.Velocity, Stage.Acceleration]))
def test_operators_leave_the_realized_state_alone(seed, euler, stage):
    """The operators share the compiled workspace with the realized results as scratch: calling
    every one of them with random arguments changes nothing the State reports (bit for bit), and
    realizing the remaining stages afterwards gives what a State that never saw them gives."""
    rng = np.random.default_rng(seed)
    model, state = make(rng, random_specs(rng, ALL_JOINTS, int(rng.integers(3, 9))), euler)
    assume(state.get_nu() > 0)
    reference = state.copy()
    model.system.realize(reference, Stage.Acceleration)
    model.system.realize(state, stage)
    before = _observables(model, state, stage)
    _call_every_operator(model, state, rng, stage)
    for a, b in zip(before, _observables(model, state, stage)):
        assert np.array_equal(a, b)
    model.system.realize(state, Stage.Acceleration)
    for a, b in zip(_observables(model, reference, Stage.Acceleration), _observables(model, state, Stage.Acceleration)):
        assert np.array_equal(a, b)
