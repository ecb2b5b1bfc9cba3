"""Constraints against independent descriptions of the same mechanism.

- A Weld constraint equals a Weld mobilizer, motion and reaction forces included.
- A four-bar cut at one pin equals the same four-bar cut at another (two Pins joined by a Ball).
- The seed's custom distance constraint (§3.2) moves exactly like the built-in Rod; a custom
  point-coincidence constraint written in a moving ancestor frame equals the built-in Ball; the
  custom nonholonomic and acceleration-only families equal ConstantSpeed and ConstantAcceleration.
- Couplers do no work; a prescribed motion's work equals the energy it adds.
- A four-bar simulated for 10 s keeps its constraint errors within the tolerance and its energy
  within the accuracy asked.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from test_constraints import SEEDS, _Sine, constrained_system, random_body, random_rotation, random_state, random_tree

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
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)
from tolerances import EPS  # round-off margins below are counts of EPS


def _mechanical_system():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    return system, matter, forces


# ---------------------------------------------------------------------- Weld constraint vs Weld mobilizer
@settings(max_examples=8)
@given(seed=SEEDS)
def test_weld_constraint_equals_weld_mobilizer(seed):
    """A body held by Constraint.Weld on a Free mobilizer moves as the same body on a Weld mobilizer,
    and minus its constrained body force is the Weld mobilizer's reaction (shifted to M)."""
    rng = np.random.default_rng(seed)
    link_body, welded_body = random_body(rng), random_body(rng)
    X_PF = Transform(random_rotation(rng), rng.uniform(-0.5, 0.5, 3))
    X_BM = Transform(random_rotation(rng), rng.uniform(-0.5, 0.5, 3))
    X_link = Transform(random_rotation(rng), rng.uniform(-0.5, 0.5, 3))
    q, u = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)

    sysA, matA, _ = _mechanical_system()
    linkA = MobilizedBody.Gimbal(matA.Ground(), X_link, link_body, Transform())
    weldA = MobilizedBody.Weld(linkA, X_PF, welded_body, X_BM)
    sA = sysA.realize_topology()
    linkA.set_q(sA, q)
    linkA.set_u(sA, u)
    sysA.realize(sA, Stage.Acceleration)

    sysB, matB, _ = _mechanical_system()
    linkB = MobilizedBody.Gimbal(matB.Ground(), X_link, link_body, Transform())
    freeB = MobilizedBody.Free(matB.Ground(), welded_body)
    weld = Constraint.Weld(linkB, X_PF, freeB, X_BM)
    sB = sysB.realize_topology()
    linkB.set_q(sB, q)
    linkB.set_u(sB, u)
    sysB.realize(sB, Stage.Velocity)
    freeB.set_q_to_fit_transform(sB, weldA.get_body_transform(sA))
    sysB.realize(sB, Stage.Position)
    freeB.set_u_to_fit_velocity(sB, weldA.get_body_velocity(sA))
    sysB.project(sB, 1e-12)
    sysB.realize(sB, Stage.Acceleration)

    np.testing.assert_allclose(linkB.get_udot(sB), linkA.get_udot(sA), atol=1e-9)
    np.testing.assert_allclose(freeB.get_body_acceleration(sB), weldA.get_body_acceleration(sA), atol=1e-9)
    # reactions: the Weld mobilizer's, at M in Ground, vs minus the constraint's force on B at its origin
    R_A = matA.calc_mobilizer_reaction_forces(sA)
    F_B = -weld.get_constrained_body_forces(sB)[1]
    p_GB = np.array(freeB.get_body_origin_location(sB))
    p_GM = freeB.find_station_location_in_ground(sB, X_BM.p)
    F_M = np.array([F_B[0] - np.cross(p_GM - p_GB, F_B[1]), F_B[1]])
    np.testing.assert_allclose(F_M, R_A[weldA.get_mobilized_body_index()], atol=1e-8)
    R_B = matB.calc_mobilizer_reaction_forces(sB)
    np.testing.assert_allclose(R_B[linkB.get_mobilized_body_index()], R_A[linkA.get_mobilized_body_index()],
                               atol=1e-8)
    np.testing.assert_allclose(R_B[freeB.get_mobilized_body_index()], 0.0, atol=1e-8)  # a Free joint carries nothing


# ---------------------------------------------------------------------- a four-bar cut two ways
def _rod_body() -> Body:
    return Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))


def four_bar(cut: str, ground_length: float = 1.5):
    """Crank, coupler, rocker of length 1; pivots at the origin and (ground_length, 0, 0).

    cut "ground": the rocker hangs from the coupler and a Ball closes it to the ground pivot;
    cut "coupler": the rocker hangs from the ground pivot and a Ball joins it to the coupler.
    """
    system, matter, forces = _mechanical_system()
    g = matter.Ground()
    crank = MobilizedBody.Pin(g, Transform(), _rod_body(), Transform())
    coupler = MobilizedBody.Pin(crank, Transform([1, 0, 0]), _rod_body(), Transform())
    if cut == "ground":
        rocker = MobilizedBody.Pin(coupler, Transform([1, 0, 0]), _rod_body(), Transform())
        ball = Constraint.Ball(g, [ground_length, 0, 0], rocker, [1, 0, 0])
    else:
        rocker = MobilizedBody.Pin(g, Transform([ground_length, 0, 0]), _rod_body(), Transform())
        ball = Constraint.Ball(coupler, [1, 0, 0], rocker, [1, 0, 0])
    return system, matter, (crank, coupler, rocker), ball


@settings(max_examples=8)
@given(seed=SEEDS)
def test_four_bar_cut_at_different_pins_moves_the_same(seed):
    """Two Pins joined by a Ball constraint: closing the loop at the ground pivot or at the
    coupler-rocker pin gives the same accelerations of every link and the same energy."""
    rng = np.random.default_rng(seed)
    sysA, matA, (c1, c2, c3), _ = four_bar("ground")
    sA = sysA.realize_topology()
    c1.set_one_q(sA, 0, rng.uniform(0.6, 2.0))
    c2.set_one_q(sA, 0, -1.6)
    c3.set_one_q(sA, 0, -1.2)
    c1.set_one_u(sA, 0, rng.uniform(-2, 2))
    sysA.project(sA, 1e-12)
    sysA.realize(sA, Stage.Acceleration)
    th = [b.get_one_q(sA, 0) for b in (c1, c2, c3)]
    w = [b.get_one_u(sA, 0) for b in (c1, c2, c3)]

    sysB, matB, (d1, d2, d3), _ = four_bar("coupler")
    sB = sysB.realize_topology()
    d1.set_one_q(sB, 0, th[0])
    d2.set_one_q(sB, 0, th[1])
    d3.set_one_q(sB, 0, sum(th) + np.pi)  # the rocker's x axis now points from the ground pivot
    d1.set_one_u(sB, 0, w[0])
    d2.set_one_u(sB, 0, w[1])
    d3.set_one_u(sB, 0, sum(w))
    sysB.realize(sB, Stage.Acceleration)
    assert np.abs(sB.get_q_err()).max() < 1e-10 and np.abs(sB.get_u_err()).max() < 1e-10
    a = [b.get_one_u(sA, 0) for b in (c1, c2, c3)]
    del a
    udA = [b.get_udot(sA)[0] for b in (c1, c2, c3)]
    udB = [b.get_udot(sB)[0] for b in (d1, d2, d3)]
    np.testing.assert_allclose([udB[0], udB[1], udB[2]], [udA[0], udA[1], sum(udA)], atol=1e-9)
    assert sysB.calc_energy(sB) == pytest.approx(sysA.calc_energy(sA), abs=1e-10)


def _simulate_four_bar(accuracy: float, T: float = 10.0, reports: int = 20):
    """RK-Merson (infinity norm) on the four-bar for T seconds: (largest relative energy change,
    largest |perr| and |verr| over the reports, constraint tolerance, integrator)."""
    system, matter, links, ball = four_bar("ground")
    s = system.realize_topology()
    for b, q in zip(links, (1.2, -1.9, -1.0)):
        b.set_one_q(s, 0, q)
    system.project(s, 1e-14)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    integ.set_use_infinity_norm(True)
    ts = TimeStepper(system, integ)
    ts.initialize(s)
    E0 = system.calc_energy(integ.get_state())
    drift = perr = verr = 0.0
    for t in np.linspace(T / reports, T, reports):
        ts.step_to(t)
        st = integ.get_state()
        system.realize(st, Stage.Velocity)
        perr = max(perr, np.abs(st.get_q_err()).max())
        verr = max(verr, np.abs(st.get_u_err()).max())
        drift = max(drift, abs(system.calc_energy(st) - E0) / abs(E0))
    assert integ.get_time() == T
    return drift, perr, verr, integ.get_constraint_tolerance_in_use(), integ


def test_four_bar_ten_seconds_keeps_constraints_and_energy():
    """A four-bar simulated for 10 s keeps its constraint errors within the constraint tolerance
    (infinity norm, at every report) and its energy within the accuracy asked (relative, at every
    report): RK-Merson at accuracy 1e-10.

    The energy change is RK-Merson's truncation error, which removes energy steadily at a rate
    proportional to the accuracy: about 3x the accuracy over these 10 s at 1e-6, 2x at 1e-8,
    0.94x at 1e-10 (an unconstrained triple pendulum behaves the same; projection contributes
    nothing measurable: the same drift with constraint tolerances from 1e-6 to 1e-9 or projection
    after every step). So the per-step accuracy bounds the 10 s energy change only from ~1e-10 on.
    """
    drift, perr, verr, tol, integ = _simulate_four_bar(1e-10)
    assert perr <= tol and verr <= tol
    assert drift <= 1e-10
    assert integ.get_num_projections() > 0


def test_four_bar_energy_change_scales_with_the_accuracy():
    """At accuracy 1e-6 the four-bar's energy changes over 10 s by less than 5x the accuracy
    (measured 3.3x), with the constraint errors within the tolerance at every report."""
    drift, perr, verr, tol, integ = _simulate_four_bar(1e-6)
    assert perr <= tol and verr <= tol
    assert drift <= 5e-6


# ---------------------------------------------------------------------- Custom constraints
class ExampleConstraint(Constraint.Custom.Implementation):
    """The seed's custom distance constraint between two body origins (§3.2)."""

    def __init__(self, b1, b2, distance):
        super().__init__(b1.upd_matter_subsystem(), 1, 0, 0)
        self.distance = distance
        self.body1 = self.add_constrained_body(b1)
        self.body2 = self.add_constrained_body(b2)

    def realize_position_errors(self, state, mp, perr):
        r1 = self.get_body_origin_location(state, self.body1, True)
        r2 = self.get_body_origin_location(state, self.body2, True)
        perr[0] = ((r1 - r2) @ (r1 - r2) - self.distance ** 2) / 2

    def realize_position_dot_errors(self, state, mp, pverr):
        r = self.get_body_origin_location(state, self.body2, True) - self.get_body_origin_location(state, self.body1, True)
        v = self.get_body_velocity(state, self.body2, True)[1] - self.get_body_velocity(state, self.body1, True)[1]
        pverr[0] = v @ r

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        r = self.get_body_origin_location(state, self.body2, True) - self.get_body_origin_location(state, self.body1, True)
        v = self.get_body_velocity(state, self.body2, True)[1] - self.get_body_velocity(state, self.body1, True)[1]
        a = self.get_body_acceleration(state, self.body2, True)[1] - self.get_body_acceleration(state, self.body1, True)[1]
        paerr[0] = a @ r + v @ v

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        r = self.get_body_origin_location(state, self.body2, True) - self.get_body_origin_location(state, self.body1, True)
        force = multipliers[0] * r
        self.add_in_station_force(state, self.body2, np.zeros(3), force, body_forces_in_a)
        self.add_in_station_force(state, self.body1, np.zeros(3), -force, body_forces_in_a)


def _pair_system(seed: int, make):
    """A random tree with a constraint between bodies 3 and 4 (a pair with a common non-Ground
    ancestor when the tree allows), made by ``make(matter, b1, b2, ref)``."""
    rng = np.random.default_rng(seed)
    system, matter, forces, bodies = random_tree(rng, 5)
    ref = random_state(system, rng)
    system.realize(ref, Stage.Position)
    c = make(matter, bodies[3], bodies[4], ref)
    state = system.realize_topology()
    state.set_q(np.array(ref.get_q()) + rng.uniform(-0.03, 0.03, ref.get_nq()))
    state.set_u(ref.get_u())
    return system, matter, bodies, c, state


def _distance(ref, b1, b2):
    return float(np.linalg.norm(np.array(b2.get_body_origin_location(ref)) - b1.get_body_origin_location(ref)))


@settings(max_examples=10)
@given(seed=SEEDS)
def test_seed_custom_distance_constraint_equals_rod(seed):
    """The seed's ExampleConstraint gives the same projected configuration, accelerations and
    constraint forces as Constraint.Rod between the body origins (its multiplier is the Rod's
    divided by the distance, since its error is (r.r - d^2)/2)."""
    sysA, matA, bA, rod, sA = _pair_system(seed, lambda m, b1, b2, ref: Constraint.Rod(
        b1, np.zeros(3), b2, np.zeros(3), _distance(ref, b1, b2)))
    sysB, matB, bB, cus, sB = _pair_system(seed, lambda m, b1, b2, ref: Constraint.Custom(
        ExampleConstraint(b1, b2, _distance(ref, b1, b2))))
    for s, sys_ in ((sA, sysA), (sB, sysB)):
        sys_.project(s, 1e-12)
        sys_.realize(s, Stage.Acceleration)
    # Both projections land on the manifold (not at the same point: the Newton sequences differ).
    assert abs(rod.get_position_errors(sA)[0]) < (2**13 * EPS) and abs(cus.get_position_errors(sB)[0]) < (2**13 * EPS)
    sB.set_q(sA.get_q())
    sB.set_u(sA.get_u())
    sysB.realize(sB, Stage.Acceleration)
    np.testing.assert_allclose(sB.get_udot(), sA.get_udot(), atol=1e-8 * (1 + np.abs(sA.get_udot()).max()))
    d = rod.get_default_rod_length()
    assert cus.get_multipliers(sB)[0] * d == pytest.approx(rod.get_multipliers(sA)[0], rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(cus.get_constrained_body_forces(sB), rod.get_constrained_body_forces(sA), atol=1e-8)
    assert abs(cus.get_acceleration_errors(sB)[0]) < 1e-9


def test_seed_custom_distance_constraint_simulates_like_rod():
    """Integrated for 1 s, the seed's custom constraint and the Rod give the same trajectory."""
    out = []
    start = None
    for make in (lambda m, b1, b2, ref: Constraint.Rod(b1, np.zeros(3), b2, np.zeros(3), _distance(ref, b1, b2)),
                 lambda m, b1, b2, ref: Constraint.Custom(ExampleConstraint(b1, b2, _distance(ref, b1, b2)))):
        system, matter, bodies, c, s = _pair_system(11, make)
        if start is None:
            system.project(s, 1e-12)
            start = np.array(s.get_y())
        s.set_y(start)  # the same initial point on the manifold for both
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-8)
        ts = TimeStepper(system, integ)
        ts.initialize(s)
        ts.step_to(1.0)
        out.append(np.array(integ.get_state().get_q()))
    np.testing.assert_allclose(out[1], out[0], atol=1e-5)


class AncestorBall(Constraint.Custom.Implementation):
    """Point coincidence written entirely in the ancestor frame A, through the A-frame helpers."""

    def __init__(self, b1, s1, b2, s2):
        super().__init__(b1.get_matter_subsystem(), 3, 0, 0)
        self.s1, self.s2 = np.asarray(s1, float), np.asarray(s2, float)
        self.c1 = self.add_constrained_body(b1)
        self.c2 = self.add_constrained_body(b2)

    def _station(self, state, cb, s):
        X = self.get_body_transform(state, cb)
        return X.R.matrix @ s, np.array(X.p)

    def _moving(self, state, cb, s):
        r, p = self._station(state, cb, s)
        w, v = self.get_body_velocity(state, cb)
        return r, p, w, v

    def realize_position_errors(self, state, mp, perr):
        r1, p1 = self._station(state, self.c1, self.s1)
        r2, p2 = self._station(state, self.c2, self.s2)
        perr[:] = (p2 + r2) - (p1 + r1)

    def realize_position_dot_errors(self, state, mp, pverr):
        r1, _, w1, v1 = self._moving(state, self.c1, self.s1)
        r2, _, w2, v2 = self._moving(state, self.c2, self.s2)
        pverr[:] = (v2 + np.cross(w2, r2)) - (v1 + np.cross(w1, r1))

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        out = np.zeros(3)
        for cb, s, sign in ((self.c2, self.s2, 1.0), (self.c1, self.s1, -1.0)):
            r, _, w, v = self._moving(state, cb, s)
            al, a = self.get_body_acceleration(state, cb)
            out += sign * (a + np.cross(al, r) + np.cross(w, np.cross(w, r)))
        paerr[:] = out

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        f = np.asarray(multipliers, float)
        self.add_in_station_force(state, self.c2, self.s2, f, body_forces_in_a)
        self.add_in_station_force(state, self.c1, self.s1, -f, body_forces_in_a)


def _common_ancestor_pair(seed):
    """A chain ground -> base (Gimbal) -> two Universal branches: the branches' ancestor is base."""
    rng = np.random.default_rng(seed)
    system, matter, forces = _mechanical_system()
    base = MobilizedBody.Gimbal(matter.Ground(), Transform(random_rotation(rng), [0, 1, 0]), random_body(rng),
                                Transform())
    b1 = MobilizedBody.Universal(base, Transform(random_rotation(rng), [0.5, 0, 0]), random_body(rng),
                                 Transform(random_rotation(rng), [0.2, 0, 0]))
    b2 = MobilizedBody.Ball(base, Transform(random_rotation(rng), [-0.5, 0, 0]), random_body(rng),
                            Transform(random_rotation(rng), [0.3, 0.1, 0]))
    ref = random_state(system, rng)
    system.realize(ref, Stage.Position)
    s1 = rng.uniform(-0.4, 0.4, 3)
    X1, X2 = b1.get_body_transform(ref), b2.get_body_transform(ref)
    s2 = X2.R.matrix.T @ (X1.p + X1.R.matrix @ s1 - X2.p)
    return system, matter, base, b1, b2, s1, s2, ref, rng


@settings(max_examples=8)
@given(seed=SEEDS)
def test_custom_constraint_in_moving_ancestor_equals_ball(seed):
    """A coincident-point constraint written with the ancestor-frame helpers (the ancestor is a
    moving body) gives the built-in Ball's accelerations, forces and multipliers (the built-in's
    equations are also in the ancestor frame, as Simbody's are)."""
    results = []
    start = None
    for custom in (False, True):
        system, matter, base, b1, b2, s1, s2, ref, rng = _common_ancestor_pair(seed)
        if custom:
            impl = AncestorBall(b1, s1, b2, s2)
            c = Constraint.Custom(impl)
            assert impl.get_ancestor_mobilized_body() is base
        else:
            c = Constraint.Ball(b1, s1, b2, s2)
        s = system.realize_topology()
        s.set_q(np.array(ref.get_q()) + rng.uniform(-0.05, 0.05, ref.get_nq()))
        s.set_u(rng.uniform(-1, 1, ref.get_nu()))
        if start is None:
            system.project(s, 1e-12)
            start = np.array(s.get_y())
        s.set_y(start)  # projections from off the manifold land at different points: start both here
        system.realize(s, Stage.Acceleration)
        assert np.abs(s.get_q_err()).max() < 1e-10 and np.abs(s.get_u_err()).max() < 1e-10
        results.append((system, matter, c, s, base))
    (sysA, matA, ball, sA, baseA), (sysB, matB, cus, sB, baseB) = results
    np.testing.assert_allclose(sB.get_q(), sA.get_q(), atol=1e-10)
    np.testing.assert_allclose(sB.get_u(), sA.get_u(), atol=1e-10)
    np.testing.assert_allclose(sB.get_udot(), sA.get_udot(), atol=1e-8 * (1 + np.abs(sA.get_udot()).max()))
    # Both are written in the ancestor frame (the built-in as Simbody's Ball is): same multipliers.
    np.testing.assert_allclose(cus.get_multipliers(sB), ball.get_multipliers(sA), atol=1e-7)
    np.testing.assert_allclose(cus.get_constrained_body_forces(sB), ball.get_constrained_body_forces(sA), atol=1e-7)
    assert np.abs(cus.get_acceleration_errors(sB)).max() < 1e-9
    G = matB.calc_g(sB)
    np.testing.assert_allclose(G, matB.calc_g_transpose(sB).T, atol=1e-10)


def test_custom_ancestor_is_that_of_the_constrained_bodies_only():
    """As in Simbody, a Custom constraint's ancestor A is the common ancestor of its constrained
    bodies (one body: itself); constrained mobilizers do not count, and with no constrained body A
    is Ground. The helpers then measure in A: body 1's own transform is the identity."""
    system, matter, base, b1, b2, s1, s2, ref, rng = _common_ancestor_pair(0)

    class OnOneBody(Constraint.Custom.Implementation):
        def __init__(self, body, mobilizer):
            super().__init__(matter, 0, 0, 1)
            self.cb = self.add_constrained_body(body)
            self.cm = self.add_constrained_mobilizer(mobilizer)

        def realize_acceleration_errors(self, state, ma, aerr):
            aerr[0] = self.get_one_udot(state, self.cm, 0)

        def apply_acceleration_constraint_forces(self, state, ma, multipliers, body_forces_in_a, mobility_forces):
            self.add_in_one_mobility_force(state, self.cm, 0, multipliers[0], mobility_forces)

    one = OnOneBody(b1, b2)
    Constraint.Custom(one)
    assert one.get_ancestor_mobilized_body() is b1
    s = system.realize_topology()
    s.set_q(ref.get_q())
    system.realize(s, Stage.Acceleration)
    X = one.get_body_transform(s, one.cb)
    np.testing.assert_allclose(X.R.matrix, np.eye(3), atol=(64 * EPS))
    np.testing.assert_allclose(X.p, 0.0, atol=(64 * EPS))
    assert abs(b2.get_udot(s)[0]) < (2**13 * EPS)

    class MobilizersOnly(Constraint.Custom.Implementation):
        def __init__(self, mobilizer):
            super().__init__(matter, 0, 0, 1)
            self.cm = self.add_constrained_mobilizer(mobilizer)

    only = MobilizersOnly(b1)
    Constraint.Custom(only)
    assert only.get_ancestor_mobilized_body() is matter.Ground()


class CustomSpeed(Constraint.Custom.Implementation):
    """Nonholonomic: u[which] of one mobilizer is held at ``speed``."""

    def __init__(self, mobod, which, speed):
        super().__init__(mobod.get_matter_subsystem(), 0, 1, 0)
        self.m = self.add_constrained_mobilizer(mobod)
        self.which, self.speed = which, speed

    def realize_velocity_errors(self, state, mv, verr):
        verr[0] = self.get_one_u(state, self.m, self.which) - self.speed

    def realize_velocity_dot_errors(self, state, mv, vaerr):
        vaerr[0] = self.get_one_udot(state, self.m, self.which)

    def apply_velocity_constraint_forces(self, state, mv, multipliers, body_forces_in_a, mobility_forces):
        self.add_in_one_mobility_force(state, self.m, self.which, multipliers[0], mobility_forces)


class CustomAcceleration(Constraint.Custom.Implementation):
    """Acceleration-only: udot[which] of one mobilizer equals ``a``."""

    def __init__(self, mobod, which, a):
        super().__init__(mobod.get_matter_subsystem(), 0, 0, 1)
        self.m = self.add_constrained_mobilizer(mobod)
        self.which, self.a = which, a

    def realize_acceleration_errors(self, state, ma, aerr):
        aerr[0] = self.get_one_udot(state, self.m, self.which) - self.a

    def apply_acceleration_constraint_forces(self, state, ma, multipliers, body_forces_in_a, mobility_forces):
        self.add_in_one_mobility_force(state, self.m, self.which, multipliers[0], mobility_forces)


@pytest.mark.parametrize("family", ["nonholonomic", "acceleration"])
@settings(max_examples=6)
@given(seed=SEEDS)
def test_custom_nonholonomic_and_acceleration_only_families_equal_builtins(family, seed):
    """Custom constraints of the nonholonomic and acceleration-only families give the same
    accelerations and multipliers as ConstantSpeed and ConstantAcceleration."""
    out = []
    for custom in (False, True):
        rng = np.random.default_rng(seed)
        system, matter, forces, bodies = random_tree(rng, 4)
        b = bodies[2]
        if family == "nonholonomic":
            c = Constraint.Custom(CustomSpeed(b, 1, 0.3)) if custom else Constraint.ConstantSpeed(b, 1, 0.3)
        else:
            c = Constraint.Custom(CustomAcceleration(b, 1, -0.7)) if custom else Constraint.ConstantAcceleration(b, 1, -0.7)
        s = random_state(system, rng)
        system.project(s, 1e-12)
        system.realize(s, Stage.Acceleration)
        out.append((s, c))
    (sA, a), (sB, b_) = out
    np.testing.assert_allclose(sB.get_u(), sA.get_u(), atol=(2**13 * EPS))
    np.testing.assert_allclose(sB.get_udot(), sA.get_udot(), atol=1e-9)
    np.testing.assert_allclose(b_.get_multipliers(sB), a.get_multipliers(sA), atol=1e-9)


def test_custom_implementation_errors_are_clear():
    system, matter, forces = _mechanical_system()
    body = MobilizedBody.Pin(matter.Ground(), _rod_body())

    class Empty(Constraint.Custom.Implementation):
        pass

    with pytest.raises(ValueError, match="register at least one"):
        Constraint.Custom(Empty(matter, 1, 0, 0))
    with pytest.raises(TypeError, match="Implementation"):
        Constraint.Custom(object())
    impl = Empty(matter, 1, 0, 0)
    impl.add_constrained_body(body)
    Constraint.Custom(impl)
    s = system.realize_topology()
    with pytest.raises(NotImplementedError, match="realize_position_errors"):
        system.realize(s, Stage.Position)


# ---------------------------------------------------------------------- work
def _simulate_power(system, state, c, t_end=1.0, n=200, accuracy=1e-9):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    st = integ.get_state()
    system.realize(st, Stage.Acceleration)
    times, power, energy = [0.0], [c.calc_power(st)], [system.calc_energy(st)]
    for t in np.linspace(t_end / n, t_end, n):
        ts.step_to(t)
        st = integ.get_state()
        system.realize(st, Stage.Acceleration)
        times.append(t)
        power.append(c.calc_power(st))
        energy.append(system.calc_energy(st))
    return np.array(times), np.array(power), np.array(energy)


@pytest.mark.parametrize("kind", ["CoordinateCoupler", "SpeedCoupler"])
def test_couplers_do_no_work(kind):
    """A time-invariant coupler's power is zero along the motion and the energy is conserved."""
    system, matter, bodies, c, s = constrained_system(kind, 5)
    if kind == "SpeedCoupler":  # no constant term: f(u) = a u1 - b u2 is workless
        c._f = Function.Linear([0.8, -1.1, 0.0])
    system.project(s, 1e-12)
    times, power, energy = _simulate_power(system, s, c)
    assert np.abs(power).max() < 1e-6
    assert np.abs(energy - energy[0]).max() < 1e-5 * abs(energy[0])


def test_prescribed_motion_work_equals_energy_change_and_is_zero_when_held():
    """A PrescribedMotion q = q0 + a sin(w t) adds exactly its integrated power to the energy; a
    constant prescription (holding the coordinate) does no work."""
    for a, expect_work in ((0.3, True), (0.0, False)):
        system, matter, bodies, c, s = constrained_system("PrescribedMotion", 2)
        c._f = _Sine(c._f.q0, a, 2.0)
        s.set_q(s.get_q())
        system.project(s, 1e-12)
        times, power, energy = _simulate_power(system, s, c, n=400)
        work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(times))])
        scale = 1 + np.abs(energy).max()
        np.testing.assert_allclose(energy - energy[0], work, atol=1e-4 * scale)
        if expect_work:
            assert np.abs(work).max() > 1e-2
        else:
            assert np.abs(power).max() < 1e-6
