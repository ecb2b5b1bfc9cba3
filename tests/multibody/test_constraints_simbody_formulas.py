"""The geometric built-ins against Simbody's own equations, transcribed literally.

Simbody writes each built-in's errors in the ancestor frame A of its constrained bodies, from the
bodies' kinematics relative to A (X_AB, V_AB, A_AB), in ``ConstraintImpl.h``. OpenSim can build
only some of them (those are cross-checked in ``tests/crosscheck``); here every geometric kind is
checked against a transcription of Simbody's formulas, evaluated with A-frame kinematics computed
independently from the Ground-frame body kinematics:

- the position and velocity errors equal the formulas', off the constraint manifold and with
  speeds that violate the velocity constraints;
- G equals the velocity formula applied to the body velocities of unit speeds (it is linear in u);
- the formulas' acceleration errors vanish at simtk's constrained accelerations (simtk's own are
  zero there, so any difference in a bias term would show).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from test_constraints import SEEDS, constrained_system

from simtk import Stage
from tolerances import assert_close, scale_of

#: Round-off margin for the transcribed formulas against simtk's rows: two independent evaluations,
#: each a few dozen flops on top of kinematics relative to the ancestor (itself a few dozen).
MARGIN = 2**10

GEOMETRIC = ("Ball", "Weld", "Rod", "PointInPlane", "PointOnLine", "ConstantAngle", "ConstantOrientation",
             "NoSlip1D")


# ---------------------------------------------------------------------- A-frame kinematics
class Relative:
    """Kinematics of bodies relative to an ancestor body ``a``, from Ground-frame arrays."""

    def __init__(self, R, p, V, A, a):
        self.R, self.p, self.V, self.A, self.a = R, p, V, A, a

    def X(self, b):
        R_GA, p_A = self.R[self.a], self.p[self.a]
        return R_GA.T @ self.R[b], R_GA.T @ (self.p[b] - p_A)

    def vel(self, b):
        R_GA, r = self.R[self.a], self.p[b] - self.p[self.a]
        (wA, vA), (wB, vB) = self.V[self.a], self.V[b]
        return R_GA.T @ (wB - wA), R_GA.T @ (vB - vA - np.cross(wA, r))

    def acc(self, b):
        R_GA, r = self.R[self.a], self.p[b] - self.p[self.a]
        (wA, vA), (wB, vB) = self.V[self.a], self.V[b]
        (alA, aA), (alB, aB) = self.A[self.a], self.A[b]
        vrel = vB - vA - np.cross(wA, r)
        return (R_GA.T @ (alB - alA - np.cross(wA, wB)),
                R_GA.T @ (aB - aA - np.cross(alA, r) - np.cross(wA, vB - vA) - np.cross(wA, vrel)))

    # Simbody's findStation* helpers (stations in the body frame, results in A)
    def station(self, b, s):
        R_AB, p_AB = self.X(b)
        return p_AB + R_AB @ s

    def station_vel(self, b, s):
        R_AB, _ = self.X(b)
        w, v = self.vel(b)
        return v + np.cross(w, R_AB @ s)

    def station_acc(self, b, s):
        R_AB, _ = self.X(b)
        r = R_AB @ s
        (w, _), (al, a) = self.vel(b), self.acc(b)
        return a + np.cross(al, r) + np.cross(w, np.cross(w, r))


def ancestor(matter, bodies) -> int:
    def path(b):
        out = [b]
        while b != 0:
            b = matter.get_mobilized_body(b).get_parent_mobilized_body().get_mobilized_body_index()
            out.append(b)
        return out
    paths = [path(b) for b in bodies]
    return next(b for b in paths[0] if all(b in p for p in paths[1:]))


def perp(d):
    """UnitVec3::perp: d x (the axis of the smallest |d_k|), normalized."""
    a = np.abs(d)
    k = (0 if a[0] <= a[2] else 2) if a[0] <= a[1] else (1 if a[1] <= a[2] else 2)
    x = np.cross(d, np.eye(3)[k])
    return x / np.linalg.norm(x)


# ---------------------------------------------------------------------- the formulas, per kind
def _orientation(k, B, F, RB, RF):
    """ConstantOrientation's rows (also Weld's first three): axes pairs (RF x, RB y), (RF y, RB z), (RF z, RB x)."""
    R_AB, R_AF = k.X(B)[0] @ RB, k.X(F)[0] @ RF
    pairs = [(R_AF[:, 0], R_AB[:, 1]), (R_AF[:, 1], R_AB[:, 2]), (R_AF[:, 2], R_AB[:, 0])]
    return pairs


def _angle_rows(k, B, F, pairs, level, cos=0.0):
    w_AB, w_AF = k.vel(B)[0], k.vel(F)[0]
    out = []
    for f, b in pairs:
        if level == 0:
            out.append(f @ b - cos)
        elif level == 1:
            out.append((w_AF - w_AB) @ np.cross(f, b))
        else:
            b_AB, b_AF = k.acc(B)[0], k.acc(F)[0]
            out.append((b_AF - b_AB) @ np.cross(f, b)
                       + (w_AF - w_AB) @ (np.cross(np.cross(w_AF, f), b) - np.cross(np.cross(w_AB, b), f)))
    return out


def _ball_rows(k, B1, s1, B2, s2, level):
    p_AS = k.station(B2, s2)
    if level == 0:
        return list(p_AS - k.station(B1, s1))
    R_AB, p_AB = k.X(B1)
    p_BC = R_AB.T @ (p_AS - p_AB)
    if level == 1:
        return list(k.station_vel(B2, s2) - k.station_vel(B1, p_BC))
    return list(k.station_acc(B2, s2) - k.station_acc(B1, p_BC))


def _plane_rows(k, B, n_B, h, F, s, level):
    p_AS = k.station(F, s)
    R_AB, p_AB = k.X(B)
    p_BC = R_AB.T @ (p_AS - p_AB)
    n_A = R_AB @ n_B
    if level == 0:
        return [p_BC @ n_B - h]
    v_AS, v_AC = k.station_vel(F, s), k.station_vel(B, p_BC)
    if level == 1:
        return [(v_AS - v_AC) @ n_A]
    w_AB = k.vel(B)[0]
    return [((k.station_acc(F, s) - k.station_acc(B, p_BC)) - 2 * np.cross(w_AB, v_AS - v_AC)) @ n_A]


def simbody_rows(c, matter, k, level):
    """The errors of constraint ``c`` at ``level`` (0, 1, 2) from Simbody's formulas."""
    kind = type(c).__name__
    if kind == "Ball":
        return _ball_rows(k, c._b1, c._s1, c._b2, c._s2, level)
    if kind == "Weld":
        return (_angle_rows(k, c._b1, c._b2, _orientation(k, c._b1, c._b2, c._R1, c._R2), level)
                + _ball_rows(k, c._b1, c._s1, c._b2, c._s2, level))
    if kind == "ConstantOrientation":
        return _angle_rows(k, c._b1, c._b2, _orientation(k, c._b1, c._b2, c._R1, c._R2), level)
    if kind == "ConstantAngle":
        b_A, f_A = k.X(c._b1)[0] @ c._ab, k.X(c._b2)[0] @ c._af
        return _angle_rows(k, c._b1, c._b2, [(f_A, b_A)], level, np.cos(c._angle))
    if kind == "PointInPlane":
        return _plane_rows(k, c._b1, c._n, c._h, c._b2, c._s, level)
    if kind == "PointOnLine":
        x = perp(c._d)
        y = np.cross(c._d, x)
        return sum((_plane_rows(k, c._b1, n, n @ c._o, c._b2, c._s, level) for n in (x, y)), [])
    if kind == "Rod":
        p = k.station(c._b2, c._s2) - k.station(c._b1, c._s1)
        r = np.linalg.norm(p)
        Cz = p / r
        if level == 0:
            return [r - c._length]
        pd = k.station_vel(c._b2, c._s2) - k.station_vel(c._b1, c._s1)
        if level == 1:
            return [pd @ Cz]
        pdd = k.station_acc(c._b2, c._s2) - k.station_acc(c._b1, c._s1)
        return [pdd @ Cz + pd @ ((pd - (pd @ Cz) * Cz) / r)]
    if kind == "NoSlip1D":
        if level == 0:
            return []
        R_AC, p_AC = k.X(c._bc)
        p_AP = p_AC + R_AC @ c._P
        n_A = R_AC @ c._n
        stations = []
        for b in (c._b0, c._b1):
            R_AB, p_AB = k.X(b)
            stations.append(R_AB.T @ (p_AP - p_AB))
        v0, v1 = k.station_vel(c._b0, stations[0]), k.station_vel(c._b1, stations[1])
        if level == 1:
            return [(v1 - v0) @ n_A]
        a0, a1 = k.station_acc(c._b0, stations[0]), k.station_acc(c._b1, stations[1])
        return [(a1 - a0 - np.cross(k.vel(c._bc)[0], v1 - v0)) @ n_A]
    raise ValueError(kind)


def constrained_bodies(c):
    if type(c).__name__ == "NoSlip1D":
        return [c._bc, c._b0, c._b1]
    return [c._b1, c._b2]


def _scales(p, V, A):
    """Scales of the terms of the position, velocity and acceleration rows: lever arms (the body
    origins, at least the unit of length of the stations and unit directions) times one, the body
    velocities, and the body accelerations plus squared angular velocities."""
    L = scale_of(p, floor=1.0)
    w = scale_of(V)
    return L, L * w, L * (scale_of(A) + w * w)


def _arrays(matter, state):
    nb = matter.get_num_bodies()
    R = np.array([matter.get_mobilized_body(i).get_body_rotation(state).matrix for i in range(nb)])
    p = np.array([matter.get_mobilized_body(i).get_body_origin_location(state) for i in range(nb)])
    return R, p


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", GEOMETRIC)
@settings(max_examples=10)
@given(seed=SEEDS)
def test_errors_and_g_equal_simbody_formulas_in_the_ancestor_frame(kind, seed):
    """Position and velocity errors equal Simbody's formulas off the manifold; G equals the velocity
    formula applied to unit speeds; the acceleration formula vanishes at the constrained udot."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.realize(state, Stage.Acceleration)
    nb = matter.get_num_bodies()
    R, p = _arrays(matter, state)
    V = np.array([matter.get_mobilized_body(i).get_body_velocity(state) for i in range(nb)])
    A = np.array([matter.get_mobilized_body(i).get_body_acceleration(state) for i in range(nb)])
    k = Relative(R, p, V, A, ancestor(matter, constrained_bodies(c)))
    mp, mv, _ = c.get_num_constraint_equations_in_use(state)
    perr = np.array(simbody_rows(c, matter, k, 0))
    verr = np.array(simbody_rows(c, matter, k, 1))
    aerr = np.array(simbody_rows(c, matter, k, 2))
    if not (kind == "NoSlip1D" and c._b0 == c._b1):  # (the same body on both sides: verr = 0)
        assert np.abs(perr).max(initial=0) + np.abs(verr).max() > 1e-3  # off the manifold indeed
    L, v_scale, a_scale = _scales(p, V, A)
    assert_close(c.get_position_errors(state), perr, margin=MARGIN, scale=L, what="perr")
    assert_close(c.get_velocity_errors(state), verr, margin=MARGIN, scale=v_scale, what="verr")
    assert_close(aerr, c.get_acceleration_errors(state), margin=MARGIN, scale=a_scale, what="aerr")
    # G: the velocity formula is linear in u; evaluate it for each unit speed.
    nu = state.get_nu()
    G = np.zeros((mp + mv, nu))
    for j in range(nu):
        e = np.zeros(nu)
        e[j] = 1.0
        kj = Relative(R, p, matter.multiply_by_system_jacobian(state, e), A, k.a)
        G[:, j] = simbody_rows(c, matter, kj, 1)
    # a unit speed: G's entries are lever arms times unit directions
    assert_close(matter.calc_g(state)[c._slots(state)], G, margin=MARGIN, scale=L, what="G")
    assert_close(matter.calc_g_transpose(state).T[c._slots(state)], G, margin=MARGIN, scale=L, what="(G^T)^T")


@pytest.mark.parametrize("kind", GEOMETRIC)
@settings(max_examples=6)
@given(seed=SEEDS)
def test_accelerations_for_forces_agree_with_simbody_formulas(kind, seed):
    """For random applied forces (calc_acceleration), Simbody's acceleration formula at the returned
    accelerations equals what the constraint's rows predict from the realized ones: aerr is affine
    in udot, aerr(udot) = aerr(udot_r) + G (udot - udot_r): zero when the constraints are consistent
    (a Weld on too few mobilities off the manifold is not)."""
    system, matter, bodies, c, state = constrained_system(kind, seed)
    system.realize(state, Stage.Acceleration)
    rng = np.random.default_rng(seed)
    nb, nu = matter.get_num_bodies(), state.get_nu()
    udot, A = matter.calc_acceleration(state, rng.normal(size=nu), rng.normal(size=(nb, 2, 3)))
    R, p = _arrays(matter, state)
    V = np.array([matter.get_mobilized_body(i).get_body_velocity(state) for i in range(nb)])
    k = Relative(R, p, V, A, ancestor(matter, constrained_bodies(c)))
    G = matter.calc_g(state)[c._slots(state)]
    expected = c.get_acceleration_errors(state) + G @ (udot - state.get_udot())
    # the terms: both sets of body accelerations (A and the realized ones) and the velocity products
    A_r = np.array([matter.get_mobilized_body(i).get_body_acceleration(state) for i in range(nb)])
    a_scale = max(_scales(p, V, A)[2], _scales(p, V, A_r)[2])
    assert_close(simbody_rows(c, matter, k, 2), expected, margin=MARGIN, scale=a_scale, what="aerr(udot)")


@settings(max_examples=6)
@given(seed=SEEDS)
def test_several_elements_of_each_kind_evaluated_together(seed):
    """Two elements of every geometric kind in one system (so each kind is evaluated for several
    elements at once): each element's errors equal Simbody's formulas, and the formulas'
    acceleration errors at the constrained udot equal the realized ones."""
    from test_constraints import make_feasible_constraint, random_state, random_tree

    rng = np.random.default_rng(seed)
    system, matter, forces, bodies = random_tree(rng, 7)
    q_ref = np.array(random_state(system, rng).get_q())
    cs = []
    for kind in GEOMETRIC * 2:
        ref = system.realize_topology()  # (each constraint added is a new topology)
        ref.set_q(q_ref)
        system.realize(ref, Stage.Position)
        cs.append(make_feasible_constraint(kind, matter, bodies, ref, rng))
    state = system.realize_topology()
    state.set_q(q_ref + rng.uniform(-0.05, 0.05, len(q_ref)))
    state.set_u(rng.uniform(-1, 1, state.get_nu()))
    system.realize(state, Stage.Acceleration)
    nb = matter.get_num_bodies()
    R, p = _arrays(matter, state)
    V = np.array([matter.get_mobilized_body(i).get_body_velocity(state) for i in range(nb)])
    A = np.array([matter.get_mobilized_body(i).get_body_acceleration(state) for i in range(nb)])
    L, v_scale, a_scale = _scales(p, V, A)
    for c in cs:
        k = Relative(R, p, V, A, ancestor(matter, constrained_bodies(c)))
        assert_close(c.get_position_errors(state), simbody_rows(c, matter, k, 0), margin=MARGIN, scale=L, what="perr")
        assert_close(c.get_velocity_errors(state), simbody_rows(c, matter, k, 1), margin=MARGIN, scale=v_scale,
                     what="verr")
        assert_close(simbody_rows(c, matter, k, 2), c.get_acceleration_errors(state), margin=MARGIN, scale=a_scale,
                     what="aerr")


def test_rod_with_coincident_stations_uses_body_1_z_axis():
    """When a Rod's two stations coincide, Simbody takes body 1's z axis as the rod direction Cz
    (and the acceleration row dv . (w_A1 x Cz) - 2 Cz . (w_GA x dv) + Cz . da): simtk does too.
    The stations are two body origins joined by a Pin with identity frames: exactly coincident."""
    from test_constraints import random_body, random_rotation, random_tree

    from simtk import Constraint, MobilizedBody, Transform

    rng = np.random.default_rng(3)
    system, matter, forces, bodies = random_tree(rng, 2)
    b1 = MobilizedBody.Gimbal(bodies[2], Transform(random_rotation(rng), [0.2, 0.1, -0.3]), random_body(rng),
                              Transform())
    b2 = MobilizedBody.Pin(b1, Transform(), random_body(rng), Transform())
    s1 = s2 = np.zeros(3)
    rod = Constraint.Rod(b1, s1, b2, s2, 0.25)
    state = system.realize_topology()
    state.set_q(rng.uniform(-1, 1, state.get_nq()))
    state.set_u(rng.uniform(-1, 1, state.get_nu()))
    system.realize(state, Stage.Acceleration)
    assert rod.get_position_errors(state)[0] == -0.25  # |0| - 0.25: exact
    z1 = b1.get_body_rotation(state).matrix[:, 2]
    J = matter.calc_station_jacobian(state, [b2, b1], [s2, s1])
    nb = matter.get_num_bodies()
    R, p = _arrays(matter, state)
    V = np.array([matter.get_mobilized_body(i).get_body_velocity(state) for i in range(nb)])
    A = np.array([matter.get_mobilized_body(i).get_body_acceleration(state) for i in range(nb)])
    L, v_scale, a_scale = _scales(p, V, A)
    assert_close(matter.calc_g(state)[0], z1 @ (J[:3] - J[3:]), margin=MARGIN, scale=L, what="G")
    assert_close(matter.calc_g_transpose(state)[:, 0], z1 @ (J[:3] - J[3:]), margin=MARGIN, scale=L, what="(G^T)^T")
    k = Relative(R, p, V, A, ancestor(matter, [rod._b1, rod._b2]))
    R_AB1 = k.X(rod._b1)[0]
    Cz = R_AB1[:, 2]
    pd = k.station_vel(rod._b2, s2) - k.station_vel(rod._b1, s1)
    pdd = k.station_acc(rod._b2, s2) - k.station_acc(rod._b1, s1)
    aerr = pdd @ Cz + pd @ np.cross(k.vel(rod._b1)[0], Cz)  # Simbody: Czd = w_AF x Cz (F = body 1)
    assert_close(rod.get_velocity_errors(state)[0], pd @ Cz, margin=MARGIN, scale=v_scale, what="verr")
    assert_close(aerr, rod.get_acceleration_errors(state)[0], margin=MARGIN, scale=a_scale, what="aerr")
