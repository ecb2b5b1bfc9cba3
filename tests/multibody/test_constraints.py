"""Every built-in constraint on random trees of Gimbal, Universal and Ball joints.

Each constraint is made feasible at a random reference configuration q*, the State is moved off
it, and then: projection zeroes the position and velocity errors; ``calc_g`` (from the error
routines) equals the transpose of the force map (``calc_g_transpose``) and finite differences of
the velocity errors; the G products equal explicit matrix products; ``calc_projected_m_inv`` equals
G M^-1 G^T with M from the composite-body method; the acceleration errors vanish after realizing
Acceleration; each error is the time derivative of the one before (finite differences along the
motion); and the constrained accelerations satisfy M udot + G^T lambda = f by inverse dynamics.

The random-system helpers here are also used by the other constraint test files.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from tolerances import EPS, assert_close, scale_of, tol  # round-off margins below are counts of EPS

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


# ---------------------------------------------------------------------- random systems
def random_rotation(rng) -> Rotation:
    q = rng.normal(size=4)
    return Rotation.from_quaternion(q / np.linalg.norm(q))


def random_body(rng) -> Body:
    mass = rng.uniform(0.5, 2.0)
    a, b = rng.uniform(0.1, 0.5, 2)
    c = rng.uniform(abs(a - b) + 0.05, a + b - 0.02)
    R = random_rotation(rng).matrix
    I_C = R @ np.diag([a, b, c]) @ R.T
    return Body.Rigid(MassProperties.from_central_inertia(mass, rng.uniform(-0.2, 0.2, 3), Inertia.from_matrix(I_C)))


def random_tree(rng, n: int = 5, joints=("Gimbal", "Universal", "Ball"), gravity: bool = True):
    """A MultibodySystem with ``n`` bodies on random joints; the first two are Gimbal and Universal."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    if gravity:
        Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    bodies = [matter.Ground()]
    for i in range(n):
        joint = ("Gimbal", "Universal")[i] if i < 2 else joints[rng.integers(len(joints))]
        parent = bodies[rng.integers(len(bodies))]
        X_PF = Transform(random_rotation(rng), rng.uniform(-0.6, 0.6, 3))
        X_BM = Transform(random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
        bodies.append(getattr(MobilizedBody, joint)(parent, X_PF, random_body(rng), X_BM))
    return system, matter, forces, bodies


def random_state(system, rng, scale: float = 1.0):
    """A default State with random q (quaternions normalized) and u."""
    state = system.realize_topology()
    state.set_q(rng.uniform(-scale, scale, state.get_nq()))
    system.project(state, 1e-12)  # normalizes the quaternions (no constraints yet); a projection setting
    state.set_u(rng.uniform(-1.0, 1.0, state.get_nu()))
    return state


def _solve_condition(matter, state) -> float:
    """Condition number of G M^-1 G^T over the eigenvalues the constraint solver keeps (above 1e-10
    of the largest; the others are redundant equations, left out), at least 1."""
    G = matter.calc_g(state)
    if not len(G):
        return 1.0
    w = np.linalg.eigvalsh(G @ np.linalg.solve(matter.calc_m(state), G.T))
    if not w[-1] > 0.0:
        return 1.0
    return max(1.0, float(w[-1] / w[w > 1e-10 * w[-1]].min()))


def _pose(state, b):
    X = b.get_body_transform(state)
    return X.R.matrix, np.array(X.p)


def _non_quaternion(bodies, state):
    return [b for b in bodies[1:] if b.get_num_q(state) == b.get_num_u(state)]


def make_feasible_constraint(kind: str, matter, bodies, ref, rng):
    """A constraint of ``kind`` satisfied at the (Position-realized) reference State ``ref``."""
    nb = len(bodies)
    i1 = int(rng.integers(nb))
    i2 = int((i1 + 1 + rng.integers(nb - 1)) % nb)
    b1, b2 = bodies[i1], bodies[i2]
    R1, p1 = _pose(ref, b1)
    R2, p2 = _pose(ref, b2)
    s1 = rng.uniform(-0.5, 0.5, 3)
    coords = _non_quaternion(bodies, ref)
    if kind == "Rod":
        s2 = rng.uniform(-0.5, 0.5, 3)
        L = np.linalg.norm(p2 + R2 @ s2 - p1 - R1 @ s1)
        return Constraint.Rod(b1, s1, b2, s2, L)
    if kind == "Ball":
        s2 = R2.T @ (p1 + R1 @ s1 - p2)
        return Constraint.Ball(b1, s1, b2, s2)
    if kind == "Weld":
        X_B1F = Transform(random_rotation(rng), s1)
        X_GF = b1.get_body_transform(ref) * X_B1F
        X_B2M = ~b2.get_body_transform(ref) * X_GF
        return Constraint.Weld(b1, X_B1F, b2, X_B2M)
    if kind == "PointInPlane":
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        s2 = rng.uniform(-0.5, 0.5, 3)
        h = n @ (R1.T @ (p2 + R2 @ s2 - p1))
        return Constraint.PointInPlane(b1, n, h, b2, s2)
    if kind == "PointOnLine":
        d = rng.normal(size=3)
        s2 = rng.uniform(-0.5, 0.5, 3)
        on_line = R1.T @ (p2 + R2 @ s2 - p1) + rng.uniform(-1, 1) * d
        return Constraint.PointOnLine(b1, d, on_line, b2, s2)
    if kind == "ConstantAngle":
        a_b, a_f = rng.normal(size=3), rng.normal(size=3)
        a_b /= np.linalg.norm(a_b)
        a_f /= np.linalg.norm(a_f)
        cos = (R1 @ a_b) @ (R2 @ a_f)
        if abs(cos) > 0.9:  # stay away from 0 and pi, where one equation cannot hold an angle
            a_f = R2.T @ np.cross(R1 @ a_b, rng.normal(size=3))
            a_f /= np.linalg.norm(a_f)
            cos = 0.0
        return Constraint.ConstantAngle(b1, a_b, b2, a_f, np.arccos(cos))
    if kind == "ConstantOrientation":
        R_BF = random_rotation(rng)
        R_FM = Rotation.from_matrix(R2.T @ R1 @ R_BF.matrix)
        return Constraint.ConstantOrientation(b1, R_BF, b2, R_FM)
    if kind == "NoSlip1D":
        b0 = bodies[int(rng.integers(nb))]
        return Constraint.NoSlip1D(b1, s1, rng.normal(size=3), b0, b2)
    if kind == "ConstantCoordinate":
        b = coords[int(rng.integers(len(coords)))]
        j = int(rng.integers(b.get_num_q(ref)))
        return Constraint.ConstantCoordinate(b, j, b.get_one_q(ref, j))
    if kind == "ConstantSpeed":
        b = bodies[1 + int(rng.integers(nb - 1))]
        return Constraint.ConstantSpeed(b, int(rng.integers(b.get_num_u(ref))), rng.uniform(-1, 1))
    if kind == "ConstantAcceleration":
        b = bodies[1 + int(rng.integers(nb - 1))]
        return Constraint.ConstantAcceleration(b, int(rng.integers(b.get_num_u(ref))), rng.uniform(-1, 1))
    if kind == "CoordinateCoupler":
        ca, cb = coords[0], coords[1]
        ja, jb = int(rng.integers(ca.get_num_q(ref))), int(rng.integers(cb.get_num_q(ref)))
        # a nonlinear coupling: f = sin(qa) + 0.5 qb^2 + c, zero at the reference
        f = _SinPlusSquare(-np.sin(ca.get_one_q(ref, ja)) - 0.5 * cb.get_one_q(ref, jb) ** 2)
        return Constraint.CoordinateCoupler(matter, f, [ca, cb.get_mobilized_body_index()], [ja, jb])
    if kind == "SpeedCoupler":
        ba, bb = bodies[1], bodies[2]
        coef = rng.uniform(0.5, 1.5, 3)
        return Constraint.SpeedCoupler(matter, Function.Linear([coef[0], -coef[1], coef[2]]), [ba, bb], [0, 1])
    if kind == "PrescribedMotion":
        b = coords[int(rng.integers(len(coords)))]
        j = int(rng.integers(b.get_num_q(ref)))
        q0 = b.get_one_q(ref, j)
        return Constraint.PrescribedMotion(matter, _Sine(q0, 0.3, 2.0), b, j)
    raise ValueError(kind)


class _SinPlusSquare(Function):
    """f(x, y) = sin x + y^2 / 2 + c."""

    def __init__(self, c):
        self.c = c

    def calc_value(self, x):
        return np.sin(x[0]) + 0.5 * x[1] ** 2 + self.c

    def calc_derivative(self, comps, x):
        if len(comps) == 1:
            return np.cos(x[0]) if comps[0] == 0 else x[1]
        if len(comps) == 2:
            if comps == (0, 0):
                return -np.sin(x[0])
            return 1.0 if comps == (1, 1) else 0.0
        return 0.0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return 2


class _Sine(Function):
    """f(t) = q0 + a sin(w t)."""

    def __init__(self, q0, a, w):
        self.q0, self.a, self.w = q0, a, w

    def calc_value(self, x):
        return self.q0 + self.a * np.sin(self.w * x[0])

    def calc_derivative(self, comps, x):
        n = len(comps)
        return self.a * self.w ** n * np.sin(self.w * x[0] + n * np.pi / 2)

    def get_argument_size(self):
        return 1

    def get_max_derivative_order(self):
        return 10


KINDS = ("Rod", "Ball", "Weld", "PointInPlane", "PointOnLine", "ConstantAngle", "ConstantOrientation", "NoSlip1D",
         "ConstantCoordinate", "ConstantSpeed", "ConstantAcceleration", "CoordinateCoupler", "SpeedCoupler",
         "PrescribedMotion")
EXPECTED_COUNTS = {"Rod": (1, 0, 0), "Ball": (3, 0, 0), "Weld": (6, 0, 0), "PointInPlane": (1, 0, 0),
                   "PointOnLine": (2, 0, 0), "ConstantAngle": (1, 0, 0), "ConstantOrientation": (3, 0, 0),
                   "NoSlip1D": (0, 1, 0), "ConstantCoordinate": (1, 0, 0), "ConstantSpeed": (0, 1, 0),
                   "ConstantAcceleration": (0, 0, 1), "CoordinateCoupler": (1, 0, 0), "SpeedCoupler": (0, 1, 0),
                   "PrescribedMotion": (1, 0, 0)}


def constrained_system(kind: str, seed: int, n: int = 5):
    """(system, matter, bodies, constraint, state): the State is q* moved off by 0.05, random u."""
    rng = np.random.default_rng(seed)
    system, matter, forces, bodies = random_tree(rng, n)
    ref = random_state(system, rng)
    system.realize(ref, Stage.Position)
    c = make_feasible_constraint(kind, matter, bodies, ref, rng)
    state = system.realize_topology()
    q = np.array(ref.get_q()) + rng.uniform(-0.05, 0.05, ref.get_nq())
    state.set_q(q)
    state.set_u(ref.get_u())
    return system, matter, bodies, c, state


# ---------------------------------------------------------------------- laws
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=12)
@given(seed=SEEDS)
def test_projection_zeroes_errors_and_acceleration_errors_vanish(kind, seed):
    """After System.project the position and velocity errors are zero (to the accuracy asked) and
    after realizing Acceleration so are the acceleration errors; the equation counts are Simbody's."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.realize(state, Stage.Instance)
    assert c.get_num_constraint_equations_in_use(state) == EXPECTED_COUNTS[kind]
    accuracy = 1e-10  # the projection's stopping tolerance bounds the errors it leaves (a method setting)
    system.project(state, accuracy)
    system.realize(state, Stage.Acceleration)
    assert np.abs(state.get_q_err()).max(initial=0) <= accuracy
    assert np.abs(state.get_u_err()).max(initial=0) <= accuracy
    # The acceleration errors are the round-off of the constrained solve, which loses the condition
    # number of G M^-1 G^T (over the equations it keeps: a Weld on too few mobilities is redundant,
    # and nearly so reaches 3e6), on the scale of udot and the velocity products (|u| <= 1, lengths
    # ~1: the floor of 1). Measured up to 4 EPS on that scale.
    aerr_scale = scale_of(state.get_udot(), floor=1.0) * _solve_condition(matter, state)
    assert np.abs(c.get_acceleration_errors(state)).max(initial=0) <= tol(aerr_scale, 128)
    quats = [b for b in bodies[1:] if b.get_num_q(state) == 4]
    for b in quats:  # normalized by the projection: the norm of a unit 4-vector, a few flops
        assert abs(np.linalg.norm(b.get_q(state)) - 1) <= tol(1.0, 64)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=12)
@given(seed=SEEDS)
def test_g_equals_force_map_transpose_and_velocity_error_gradient(kind, seed):
    """calc_g (from the acceleration-error routines) equals calc_g_transpose^T (from the force
    routines) and, in its velocity-level rows, central differences of the velocity errors in u."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.realize(state, Stage.Velocity)
    G = matter.calc_g(state)
    Gt = matter.calc_g_transpose(state)
    scale = 1 + np.abs(G).max()
    # two routes to each entry (the error rows with unit udot, the force map), each a short sweep;
    # the entries are made of unit directions and lever arms of lengths ~1 (the floor of 1)
    assert_close(G, Gt.T, margin=512, scale=scale, what="G vs (G^T)^T")
    mp, mv, ma = c.get_num_constraint_equations_in_use(state)
    u0 = np.array(state.get_u())
    h = 1e-4  # central differences: truncation ~h^2 |verr'''| ~ 1e-8 relative, round-off ~EPS/h
    fd = np.zeros((mp + mv, len(u0)))
    for j in range(len(u0)):
        for sign in (1, -1):
            u = u0.copy()
            u[j] += sign * h
            state.set_u(u)
            system.realize(state, Stage.Velocity)
            fd[:, j] += sign * np.array(state.get_u_err()) / (2 * h)
    np.testing.assert_allclose(G[:mp + mv], fd, atol=1e-7 * scale)  # the finite difference's accuracy
    if ma:  # aerr = udot_i - a: its row is the unit row of u_i
        assert np.count_nonzero(G[mp + mv:]) == 1 and G[mp + mv:].max() == 1.0


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10)
@given(seed=SEEDS)
def test_g_products_and_projected_m_inv(kind, seed):
    """multiply_by_g and multiply_by_g_transpose equal the explicit products with calc_g, and
    calc_projected_m_inv equals G M^-1 G^T with M from calc_m (composite bodies)."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.realize(state, Stage.Velocity)
    rng = np.random.default_rng(seed)
    G = matter.calc_g(state)
    x = rng.normal(size=state.get_nu())
    lam = rng.normal(size=len(G))
    # the terms of G x are |G_ij x_j| <= max|G| sum|x|, G's entries made of unit directions and lever
    # arms of lengths ~1 (the floor of 1); each product is a short sweep over the tree
    scale = scale_of(G, floor=1.0)
    assert_close(matter.multiply_by_g(state, x), G @ x, margin=512, scale=scale * np.abs(x).sum(), what="G x")
    assert_close(matter.multiply_by_g_transpose(state, lam), G.T @ lam, margin=512, scale=scale * np.abs(lam).sum(),
                 what="G^T lambda")
    M = matter.calc_m(state)
    expected = G @ np.linalg.solve(M, G.T)
    # two factorizations of M (condition up to ~200 for these bodies) and the products with G
    assert_close(matter.calc_projected_m_inv(state), expected, margin=2**12, scale=scale_of(expected),
                 what="G M^-1 G^T")


def _ancestor(matter, bodies):
    """Nearest common ancestor of mobilized bodies (by index), from the parent links."""
    def path(b):
        out = [b]
        while b != 0:
            b = matter.get_mobilized_body(b).get_parent_mobilized_body().get_mobilized_body_index()
            out.append(b)
        return out
    paths = [path(b) for b in bodies]
    return next(b for b in paths[0] if all(b in p for p in paths[1:]))


def _simbody_derivative_terms(c, matter, state):
    """What Simbody's error rows add to exact time derivatives, (d perr, d verr) corrections.

    Ball and Weld's translation rows are vectors in the ancestor A whose velocity and acceleration
    rows are taken relative to body 1: pverr = d/dt perr - w x perr and paerr = d/dt pverr + w x
    pverr, w = w_AB1 in A. NoSlip1D's acceleration row is that of the material points P0, P1 at the
    contact point P: d/dt verr = aerr + n . (w_GA x dv + w1 x (vP - v1) - w0 x (vP - v0)),
    dv = v1 - v0, vP the velocity of P itself (fixed on the case body)."""
    mp, mv, _ = c.get_num_constraint_equations_in_use(state)
    d_p, d_v = np.zeros(mp), np.zeros(mp + mv)
    kind = type(c).__name__
    if kind in ("Ball", "Weld"):
        rows = slice(0, 3) if kind == "Ball" else slice(3, 6)
        b1 = matter.get_mobilized_body(c._b1)
        A = matter.get_mobilized_body(_ancestor(matter, [c._b1, c._b2]))
        R_GA = A.get_body_rotation(state).matrix
        w = R_GA.T @ (b1.get_body_angular_velocity(state) - A.get_body_angular_velocity(state))
        d_p[rows] = -np.cross(w, c.get_position_errors(state)[rows])
        d_v[rows] = -np.cross(w, c.get_velocity_errors(state)[rows])
    elif kind == "NoSlip1D":
        case, m0, m1 = (matter.get_mobilized_body(i) for i in (c._bc, c._b0, c._b1))
        A = matter.get_mobilized_body(_ancestor(matter, [c._bc, c._b0, c._b1]))
        P = case.find_station_location_in_ground(state, c._P)
        n = case.get_body_rotation(state).matrix @ c._n
        vP = case.find_station_velocity_in_ground(state, c._P)
        v = [b.get_body_velocity(state)[1] + np.cross(b.get_body_angular_velocity(state),
                                                       P - b.get_body_origin_location(state)) for b in (m0, m1)]
        w0, w1 = m0.get_body_angular_velocity(state), m1.get_body_angular_velocity(state)
        d_v[0] = n @ (np.cross(A.get_body_angular_velocity(state), v[1] - v[0]) + np.cross(w1, vP - v[1])
                      - np.cross(w0, vP - v[0]))
    return d_p, d_v


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10)
@given(seed=SEEDS)
def test_errors_are_successive_time_derivatives(kind, seed):
    """d/dt perr = pverr and d/dt (pverr, verr) = (paerr, vaerr) along the motion (central
    differences with t +- h, q +- h qdot, u +- h udot), off the constraint manifold too; for Ball,
    Weld and NoSlip1D up to the terms by which Simbody's rows differ from exact derivatives there
    (``_simbody_derivative_terms``, zero on the manifold)."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.realize(state, Stage.Acceleration)
    mp, mv, ma = c.get_num_constraint_equations_in_use(state)
    t0, q0, u0 = state.get_time(), np.array(state.get_q()), np.array(state.get_u())
    qdot, udot = np.array(state.get_qdot()), np.array(state.get_udot())
    pverr = c.get_velocity_errors(state)
    aerr = c.get_acceleration_errors(state)
    corr_p, corr_v = _simbody_derivative_terms(c, matter, state)
    h = 1e-5  # central differences along the motion: truncation ~h^2, round-off ~EPS/h ~ 1e-11
    d_perr = np.zeros(mp)
    d_verr = np.zeros(mp + mv)
    for sign in (1, -1):
        s = state.copy()
        s.set_time(t0 + sign * h)
        s.set_q(q0 + sign * h * qdot)
        s.set_u(u0 + sign * h * udot)
        system.realize(s, Stage.Velocity)
        d_perr += sign * c.get_position_errors(s) / (2 * h)
        d_verr += sign * c.get_velocity_errors(s) / (2 * h)
    # the finite differences' accuracy (not round-off)
    np.testing.assert_allclose(d_perr + corr_p, pverr[:mp], atol=1e-6 * (1 + np.abs(pverr).max(initial=0)))
    np.testing.assert_allclose(d_verr - corr_v, aerr[:mp + mv], atol=1e-5 * (1 + np.abs(aerr).max(initial=0)))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10)
@given(seed=SEEDS)
def test_constrained_accelerations_satisfy_inverse_dynamics(kind, seed):
    """M udot + C + G^T lambda - f = 0 by RNEA (calc_residual_force), and calc_acceleration with
    the applied forces reproduces the realized udot."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.project(state, 1e-10)
    system.realize(state, Stage.Acceleration)
    f = system.get_mobility_forces(state)
    F = system.get_rigid_body_forces(state)
    udot = state.get_udot()
    lam = state.get_multipliers()
    r = matter.calc_residual_force(state, f, F, udot, lam)
    # r cancels M udot + C + G^T lambda against f: its scale is those terms, the products as the sums
    # of |M_ij udot_j| and |G_ji lambda_j| (their rows cancel too); the solve and an RNEA sweep
    G = matter.calc_g(state)
    terms = scale_of(np.abs(matter.calc_m(state)) @ np.abs(udot), f, F, np.abs(G.T) @ np.abs(lam))
    assert np.abs(r).max() <= tol(terms, 2**10)
    udot2, A = matter.calc_acceleration(state, f, F)
    # the same solve again (identical bits on one machine; a BLAS may order sums differently)
    assert_close(udot2, udot, margin=64, scale=scale_of(udot), what="calc_acceleration udot")
    assert_close(A, matter._at(state, Stage.Acceleration, "").A_GB, margin=64, scale=scale_of(A), what="A_GB")


# ---------------------------------------------------------------------- caching of the q-dependent operators
def _fresh_results(system, state):
    """udot, multipliers and errors of a new State with the same variables, realized from scratch."""
    fresh = system.realize_topology()
    fresh.copy_variables_from(state)
    system.realize(fresh, Stage.Acceleration)
    return [np.array(x) for x in (fresh.get_udot(), fresh.get_multipliers(), fresh.get_q_err(), fresh.get_u_err(),
                                  fresh.get_udot_err(), fresh.get_qdotdot())]


def _results(state):
    return [np.array(x) for x in (state.get_udot(), state.get_multipliers(), state.get_q_err(), state.get_u_err(),
                                  state.get_udot_err(), state.get_qdotdot())]


#: Reused and rebuilt operators do the same computations on the same inputs (identical bits on one
#: machine); a BLAS may still order a factorization's sums differently, so allow its round-off.
CACHE_MARGIN = 2**10


def _assert_same_results(actual, fresh):
    """The results of a reusing realization equal those realized from scratch, to round-off of
    the constrained solve; the scale is the largest of the results (udot and the multipliers are
    the terms the errors and qdotdot are computed from), at least the unit lengths and speeds."""
    scale = scale_of(*fresh, floor=1.0)
    for name, a, b in zip(("udot", "multipliers", "q_err", "u_err", "udot_err", "qdotdot"), actual, fresh):
        assert_close(a, b, margin=CACHE_MARGIN, scale=scale, what=name)


@pytest.mark.parametrize("kind", ["Rod", "Ball", "Weld", "PointOnLine", "NoSlip1D", "CoordinateCoupler",
                                  "SpeedCoupler"])
def test_q_dependent_operators_are_reused_while_only_u_changes(kind):
    """G, M^-1 G^T and A's factorization are computed once per q and reused while only u changes
    (except for a force map that depends on u: SpeedCoupler); a change of q, or disabling and
    enabling the constraint, rebuilds them. At every step the results equal a State realized from
    scratch with the same variables, and simtk.testing.check_caching agrees."""
    from simtk.testing import check_caching

    system, matter, bodies, c, state = constrained_system(kind, 4)
    system.realize(state, Stage.Acceleration)
    g = matter._gmap(state)
    rng = np.random.default_rng(0)
    state.set_u(np.array(state.get_u()) + rng.normal(size=state.get_nu()) * 0.1)
    system.realize(state, Stage.Acceleration)
    assert (matter._gmap(state) is g) == (kind != "SpeedCoupler")
    _assert_same_results(_results(state), _fresh_results(system, state))
    state.set_q(np.array(state.get_q()) + rng.normal(size=state.get_nq()) * 0.01)
    system.realize(state, Stage.Acceleration)
    assert matter._gmap(state) is not g
    _assert_same_results(_results(state), _fresh_results(system, state))
    c.disable(state)
    system.realize(state, Stage.Acceleration)
    assert matter.calc_g_transpose(state).shape[1] == sum(matter.get_num_constraint_equations(state))
    udot_free, _ = matter.calc_acceleration_ignoring_constraints(state, system.get_mobility_forces(state),
                                                                 system.get_rigid_body_forces(state))
    # the realized udot and calc_acceleration_ignoring_constraints: the same articulated-body solve
    assert_close(state.get_udot(), udot_free, margin=64, scale=scale_of(udot_free), what="unconstrained udot")
    c.enable(state)
    system.realize(state, Stage.Acceleration)
    fresh = _fresh_results(system, state)
    _assert_same_results(_results(state), fresh)
    # check_caching compares each output against atol + rtol * max|output|
    check_caching(system, state, rtol=CACHE_MARGIN * EPS, atol=tol(scale_of(*fresh, floor=1.0), CACHE_MARGIN),
                  assert_ok=True)


# ---------------------------------------------------------------------- enabling and bookkeeping
def test_disable_is_an_instance_change_and_removes_the_equations():
    """Disabling a constraint drops the State to Model (Instance invalidated) and its equations disappear;
    the constrained motion then equals the unconstrained one."""
    system, matter, bodies, c, state = constrained_system("Ball", 3)
    system.realize(state, Stage.Acceleration)
    assert state.get_nq_err() >= 3
    c.disable(state)
    assert c.is_disabled(state)
    assert state.get_system_stage() < Stage.Instance
    system.realize(state, Stage.Acceleration)
    assert c.get_num_constraint_equations_in_use(state) == (0, 0, 0)
    assert len(c.get_multipliers(state)) == 0
    udot_free, _ = matter.calc_acceleration_ignoring_constraints(state, system.get_mobility_forces(state),
                                                                 system.get_rigid_body_forces(state))
    # the realized udot and calc_acceleration_ignoring_constraints: the same articulated-body solve
    assert_close(state.get_udot(), udot_free, margin=64, scale=scale_of(udot_free), what="unconstrained udot")
    c.enable(state)
    system.realize(state, Stage.Acceleration)
    assert c.get_num_constraint_equations_in_use(state) == (3, 0, 0)


def test_disabled_by_default_and_multiple_constraints_layout():
    """Equations are numbered holonomic first, then nonholonomic, then acceleration-only, and the
    quaternion errors follow the constraint position errors in q_err."""
    rng = np.random.default_rng(7)
    system, matter, forces, bodies = random_tree(rng, 4, joints=("Ball",))
    speed = Constraint.ConstantSpeed(bodies[1], 0, 0.5)
    Constraint.ConstantAcceleration(bodies[2], 1, 0.2)
    coord = Constraint.ConstantCoordinate(bodies[1], 1, 0.1)
    off = Constraint.Rod(bodies[3], [0, 0, 0], bodies[4], [0.1, 0, 0], 1.0)
    off.set_disabled_by_default(True)
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)
    assert off.is_disabled(state)
    assert matter.get_num_constraint_equations(state) == (1, 1, 1)
    n_quat = 2  # bodies 3 and 4 are Balls with quaternions
    assert state.get_nq_err() == 1 + n_quat and state.get_nu_err() == 2 and state.get_nudot_err() == 3
    # the coordinate and speed errors are one subtraction each, q - 0.1 and u - 0.5: exact
    assert coord.get_position_errors(state)[0] == bodies[1].get_one_q(state, 1) - 0.1
    assert speed.get_velocity_errors(state)[0] == bodies[1].get_one_u(state, 0) - 0.5
    # the accelerations come out of the constrained solve: round-off of udot's scale
    udot_scale = scale_of(state.get_udot())
    assert abs(state.get_udot()[matter._u_range(state, 2)[0] + 1] - 0.2) <= tol(udot_scale, 2**10)
    assert abs(bodies[1].get_udot(state)[0]) <= tol(udot_scale, 2**10)  # d/dt of a constant speed


def test_bad_arguments_are_reported_clearly():
    rng = np.random.default_rng(1)
    system, matter, forces, bodies = random_tree(rng, 3)
    with pytest.raises(ValueError, match="length must be positive"):
        Constraint.Rod(bodies[1], [0, 0, 0], bodies[2], [0, 0, 0], 0.0)
    with pytest.raises(ValueError, match="3-vector"):
        Constraint.Ball(bodies[1], [0, 0], bodies[2], [0, 0, 0])
    with pytest.raises(ValueError, match="nonzero"):
        Constraint.PointInPlane(bodies[1], [0, 0, 0], 0.0, bodies[2], [0, 0, 0])
    with pytest.raises(ValueError, match="takes 1 arguments, but 2"):
        Constraint.CoordinateCoupler(matter, Function.Linear([1.0, 0.0]), [1, 2], [0, 0])
    Constraint.ConstantCoordinate(bodies[2], 5, 0.0)  # Universal has 2 q: found at Instance
    with pytest.raises(IndexError, match="has no q\\[5\\]"):
        system.realize(system.realize_topology(), Stage.Instance)
