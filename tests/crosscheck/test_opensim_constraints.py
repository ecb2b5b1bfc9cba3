"""simtk's constraints against Simbody's, run through OpenSim 4.6, on small closed loops.

OpenSim constraint components create Simbody's built-ins directly (OpenSim -> Simbody -> simtk):

- ``PointConstraint(b1, p1, b2, p2)`` -> ``Constraint::Ball`` -> ``Constraint.Ball(b1, p1, b2, p2)``
- ``ConstantDistanceConstraint`` -> ``Constraint::Rod`` -> ``Constraint.Rod``
- ``WeldConstraint(name, f1, X1, f2, X2)`` -> ``Constraint::Weld`` -> ``Constraint.Weld(b1, X1, b2, X2)``
- ``PointOnLineConstraint`` -> ``Constraint::PointOnLine`` -> ``Constraint.PointOnLine``
- ``CoordinateCouplerConstraint`` -> ``Constraint::CoordinateCoupler`` with C(q) = s f(q_i) - q_d
  (OpenSim's CompoundFunction) -> ``Constraint.CoordinateCoupler`` with the same two-argument function
- a prescribed ``Coordinate`` (``setPrescribedFunction``) -> ``Constraint::PrescribedMotion`` ->
  ``Constraint.PrescribedMotion`` with the same function of time

Each loop is assembled by construction: the random tree is built in OpenSim first, put at random
q, and the constraint's free parameters (the second station, the rod length, the weld frame on the
second body, the follower point, the coupler's or the prescription's constant term) are chosen
from OpenSim's kinematics so that the position constraint holds there; then both twins are built
with the constraint. Speeds are random, so the velocity errors are not zero. A second variant of
every case perturbs q off the constraint manifold, where everything is still defined (and position
errors are not zero).

Three variants per case: ``consistent`` (assembled q, speeds projected onto the velocity
constraints), where only physics is compared without conventions (udot, G^T lambda, reactions);
``random-speeds`` and ``perturbed`` (q off the manifold), where Simbody's particular way of writing
the velocity and acceleration equations matters.

Compared: G (m x nu, rows in constraint order), G M^-1 G^T, udot and the multipliers under gravity,
the body and mobility forces of given multipliers, the residual with known multipliers, the
position / velocity / acceleration errors, and the mobilizer reaction forces: all agree to
round-off in every variant (``SWEEP_TOL``; for what comes out of the constrained solve,
``solve_tol`` of the condition numbers of M and of G M^-1 G^T, which reaches 1.4e5 in the spatial
four-bar). The tests at the end check Simbody's conventions that this agreement rests on
against explicit formulas: Ball and Weld rows in the ancestor frame, the reaction on body 1 at its
material point coincident with body 2's station, PointOnLine's perpendicular pair.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from opensim_models import (  # noqa: E402
    SWEEP_TOL,
    BodySpec,
    build_opensim,
    build_simtk,
    chain_specs,
    cond_m,
    mat,
    osim_spatial_vector,
    osim_transform,
    osim_vec3,
    osim_vector,
    random_central_inertia,
    random_coordinates,
    random_specs,
    random_transform,
    rel_err,
    rot,
    solve_tol,
    spatial_vector,
    vec,
)

from simtk import Constraint, Function, Rotation, Stage, Transform  # noqa: E402
from tolerances import tol  # noqa: E402

G = np.array([0.4, -9.81, 0.7])
TOL = SWEEP_TOL  # kinematics, G, the errors, forces of given multipliers; see dyn_tol for the solve's


def dyn_tol(lp) -> float:
    """The constrained solve (M, then G M^-1 G^T for the multipliers) by two implementations."""
    M, G = lp.st.matter.calc_m(lp.s), lp.st.matter.calc_g(lp.s)
    return solve_tol(np.linalg.cond(M), np.linalg.cond(G @ np.linalg.solve(M, G.T)))


# ---------------------------------------------------------------------- the coupler's function
class CouplerFunction(Function):
    """C(x) = polyval(coefficients, x[0]) - x[1]: OpenSim's CompoundFunction for a coupler with
    one independent coordinate (scale factor 1), the dependent coordinate last."""

    def __init__(self, coefficients):
        self.c = np.asarray(coefficients, dtype=float)
        self.dc = np.polyder(self.c)
        self.ddc = np.polyder(self.dc)

    def calc_value(self, x):
        return float(np.polyval(self.c, x[0]) - x[1])

    def calc_derivative(self, deriv_components, x):
        comps = list(deriv_components)
        if comps == [0]:
            return float(np.polyval(self.dc, x[0]))
        if comps == [1]:
            return -1.0
        if comps == [0, 0]:
            return float(np.polyval(self.ddc, x[0]))
        return 0.0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return 2


class TimePolynomial(Function):
    """f(t) = polyval(coefficients, t): OpenSim's PolynomialFunction of time."""

    def __init__(self, coefficients):
        self.c = [np.asarray(coefficients, dtype=float)]
        for _ in range(2):
            self.c.append(np.polyder(self.c[-1]))

    def calc_value(self, x):
        return float(np.polyval(self.c[0], x[0]))

    def calc_derivative(self, deriv_components, x):
        n = len(deriv_components)
        return float(np.polyval(self.c[n], x[0])) if n < 3 else 0.0

    def get_argument_size(self):
        return 1

    def get_max_derivative_order(self):
        return 2


#: The time at which every twin is evaluated (prescribed motions depend on it).
T0 = 0.37


# ---------------------------------------------------------------------- constraint recipes
# Each recipe takes (rng, poses) with poses[i] = (R_GB, p_GB) from OpenSim at the assembly q, and
# returns a ConstraintSpec whose free parameters make the position constraint hold there.
@dataclass
class ConstraintSpec:
    kind: str
    args: tuple


def _to_body(pose, p_G):
    R, p = pose
    return R.T @ (p_G - p)


def _station_in_ground(pose, s_B):
    R, p = pose
    return p + R @ s_B


def ball(b1, b2):
    def make(rng, poses, specs):
        s1 = rng.normal(size=3) * 0.4
        return ConstraintSpec("Ball", (b1, s1, b2, _to_body(poses[b2], _station_in_ground(poses[b1], s1))))
    return make


def rod(b1, b2):
    def make(rng, poses, specs):
        s1, s2 = rng.normal(size=3) * 0.4, rng.normal(size=3) * 0.4
        length = float(np.linalg.norm(_station_in_ground(poses[b2], s2) - _station_in_ground(poses[b1], s1)))
        return ConstraintSpec("Rod", (b1, s1, b2, s2, length))
    return make


def weld(b1, b2):
    def make(rng, poses, specs):
        X_B1F = random_transform(rng, 0.3)
        (R1, p1), (R2, p2) = poses[b1], poses[b2]
        X_GB1 = Transform(Rotation.from_matrix(R1), p1)
        X_GB2 = Transform(Rotation.from_matrix(R2), p2)
        return ConstraintSpec("Weld", (b1, X_B1F, b2, ~X_GB2 * X_GB1 * X_B1F))
    return make


def point_on_line(b_line, b_follower):
    def make(rng, poses, specs):
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        p_line = rng.normal(size=3) * 0.4
        p_G = _station_in_ground(poses[b_line], p_line + float(rng.uniform(-0.5, 0.5)) * d)
        return ConstraintSpec("PointOnLine", (b_line, d, p_line, b_follower, _to_body(poses[b_follower], p_G)))
    return make


def coupler(b_ind, k_ind, b_dep, k_dep):
    """q_dep = polynomial(q_ind), constant term chosen so that it holds at the assembly q."""
    def make(rng, poses, specs, qs):
        c = rng.normal(size=3) * 0.6
        c[-1] += qs[b_dep][k_dep] - np.polyval(c, qs[b_ind][k_ind])
        return ConstraintSpec("CoordinateCoupler", (b_ind, k_ind, b_dep, k_dep, c))
    make.needs_q = True
    return make


def prescribed(b, k):
    """q_k of body b = polynomial(t), constant term chosen so that it holds at the assembly q."""
    def make(rng, poses, specs, qs):
        c = rng.normal(size=3) * 0.8
        c[-1] += qs[b][k] - np.polyval(c, T0)
        return ConstraintSpec("PrescribedMotion", (b, k, c))
    make.needs_q = True
    return make


# ---------------------------------------------------------------------- the cases
def planar_four_bar(rng):
    """Crank and coupler on parallel pins in the x-y plane; a Rod from the coupler tip to a ground
    point plays the (massless) rocker: the classic four-bar, one degree of freedom."""
    specs = [None]
    for i, offset in enumerate(([0.0, 0.0, 0.0], [0.3, 0.1, 0.0]), start=1):
        mass = float(rng.uniform(0.5, 2.0))
        specs.append(BodySpec("Pin", i - 1, Transform(Rotation(), offset), Transform(Rotation(), [-0.15, 0.0, 0.0]),
                              mass, np.array([0.1, 0.02, 0.0]), random_central_inertia(rng, mass)))
    return specs


@dataclass(frozen=True)
class Case:
    name: str
    seed: int
    joints: tuple | None          # chain joints; None: see ``specs``
    recipes: tuple
    random_tree: int = 0          # >0: a random tree of that many bodies instead of a chain

    def specs(self, rng):
        if self.name == "planar-four-bar-rod":
            return planar_four_bar(rng)
        if self.random_tree:
            return random_specs(rng, ("Pin", "Slider", "Ball", "Gimbal", "Universal", "Free"), self.random_tree)
        return chain_specs(rng, self.joints)


CASES = [
    Case("spatial-four-bar-ball", 1, ("Pin", "Pin", "Ball"), (ball(0, 3),)),
    Case("planar-four-bar-rod", 2, None, (rod(0, 2),)),
    Case("rod-loop-off-ground", 3, ("Pin", "Gimbal", "Ball"), (rod(1, 3),)),
    Case("ball-loop-off-ground", 9, ("Pin", "Ball", "Gimbal"), (ball(1, 3),)),
    Case("weld-loop-off-ground", 10, ("Pin", "Ball", "Gimbal", "Universal"), (weld(1, 4),)),
    Case("weld-loop", 4, ("Ball", "Gimbal", "Universal", "Slider"), (weld(0, 4),)),
    Case("point-on-line-loop", 5, ("Pin", "Universal", "Pin", "Slider"), (point_on_line(1, 4),)),
    Case("coupler-pin-to-slider", 6, ("Pin", "Slider", "Pin"), (coupler(1, 0, 2, 0),)),
    Case("coupler-euler-angles", 7, ("Ball", "Gimbal"), (coupler(2, 1, 1, 2),)),
    Case("ball-and-coupler", 8, ("Pin", "Pin", "Ball", "Pin"), (ball(0, 3), coupler(1, 0, 4, 0))),
    Case("prescribed-slider", 11, ("Pin", "Slider", "Gimbal"), (prescribed(2, 0),)),
    Case("prescribed-gimbal-angle", 12, ("Universal", "Gimbal"), (prescribed(2, 1),)),
]


# ---------------------------------------------------------------------- building the twins
def _osim_frame(model, bodies, i):
    return model.getGround() if i == 0 else bodies[i]


def add_osim_constraints(cspecs):
    def add(model, bodies, joints):
        for n, c in enumerate(cspecs):
            a = c.args
            if c.kind == "Ball":
                oc = osim.PointConstraint(_osim_frame(model, bodies, a[0]), osim_vec3(a[1]),
                                          _osim_frame(model, bodies, a[2]), osim_vec3(a[3]))
            elif c.kind == "Rod":
                oc = osim.ConstantDistanceConstraint(_osim_frame(model, bodies, a[0]), osim_vec3(a[1]),
                                                     _osim_frame(model, bodies, a[2]), osim_vec3(a[3]), a[4])
            elif c.kind == "Weld":
                oc = osim.WeldConstraint(f"weld{n}", _osim_frame(model, bodies, a[0]), osim_transform(a[1]),
                                         _osim_frame(model, bodies, a[2]), osim_transform(a[3]))
            elif c.kind == "PointOnLine":
                oc = osim.PointOnLineConstraint(_osim_frame(model, bodies, a[0]), osim_vec3(a[1]), osim_vec3(a[2]),
                                                _osim_frame(model, bodies, a[3]), osim_vec3(a[4]))
            elif c.kind == "PrescribedMotion":
                b, k, coefficients = a
                coord = joints[b].upd_coordinates(k)
                coord.setPrescribedFunction(osim.PolynomialFunction(osim_vector(coefficients)))
                coord.setDefaultIsPrescribed(True)
                continue  # the Coordinate owns its Simbody PrescribedMotion
            else:
                b_ind, k_ind, b_dep, k_dep, coefficients = a
                oc = osim.CoordinateCouplerConstraint()
                names = osim.ArrayStr()
                names.append(joints[b_ind].get_coordinates(k_ind).getName())
                oc.setIndependentCoordinateNames(names)
                oc.setDependentCoordinateName(joints[b_dep].get_coordinates(k_dep).getName())
                f = osim.PolynomialFunction(osim_vector(coefficients))
                oc.setFunction(f)
                f.thisown = False  # the constraint may have adopted it: never free it from Python
            oc.setName(f"constraint{n}")
            model.addConstraint(oc)
    return add


def add_simtk_constraints(st, cspecs) -> list:
    mob = st.mobods
    out = []
    for c in cspecs:
        a = c.args
        if c.kind == "Ball":
            out.append(Constraint.Ball(mob[a[0]], a[1], mob[a[2]], a[3]))
        elif c.kind == "Rod":
            out.append(Constraint.Rod(mob[a[0]], a[1], mob[a[2]], a[3], a[4]))
        elif c.kind == "Weld":
            out.append(Constraint.Weld(mob[a[0]], a[1], mob[a[2]], a[3]))
        elif c.kind == "PointOnLine":
            out.append(Constraint.PointOnLine(mob[a[0]], a[1], a[2], mob[a[3]], a[4]))
        elif c.kind == "PrescribedMotion":
            b, k, coefficients = a
            out.append(Constraint.PrescribedMotion(st.matter, TimePolynomial(coefficients), mob[b], k))
        else:
            b_ind, k_ind, b_dep, k_dep, coefficients = a
            # Simbody's coordinate indices are MobilizerQIndex; OpenSim's coordinate k of these
            # joints is the mobilizer's q k (checked by the builder's probe).
            out.append(Constraint.CoordinateCoupler(st.matter, CouplerFunction(coefficients),
                                                    [mob[b_ind], mob[b_dep]], [k_ind, k_dep]))
    return out


@dataclass
class LoopPair:
    case: Case
    specs: list
    cspecs: list
    st: object
    s: object
    os: object
    constraints: list
    rng: np.random.Generator
    variant: str

    @property
    def nb(self) -> int:
        return len(self.specs)

    def u_perm(self) -> np.ndarray:
        return self.os.u_perm()

    def osim_u(self, u):
        out = np.zeros(self.os.nu)
        out[self.u_perm()] = u
        return out

    def osim_bodies(self, F):
        out = np.zeros_like(F)
        out[self.os.mobod] = F
        return out


VARIANTS = ("consistent", "random-speeds", "perturbed")


def make_loop_pair(case: Case, variant: str) -> LoopPair:
    """Twins of ``case`` at its assembly q. Speeds: ``consistent`` projects random speeds onto the
    velocity constraints (with Simbody's G), ``random-speeds`` keeps them random, ``perturbed`` also
    moves q off the constraint manifold."""
    rng = np.random.default_rng(case.seed)
    specs = case.specs(rng)
    qs, us = random_coordinates(rng, specs, spread=0.8)
    tree = build_opensim(specs, G)
    tree.set_coordinates(qs, us)
    tree.model.realizePosition(tree.state)
    poses = [(np.eye(3), np.zeros(3))] + [
        (rot(b.getRotationInGround(tree.state)), vec(b.getPositionInGround(tree.state))) for b in tree.bodies[1:]]
    cspecs = [r(rng, poses, specs, qs) if getattr(r, "needs_q", False) else r(rng, poses, specs)
              for r in case.recipes]
    if variant == "perturbed":
        qs = [None] + [q + rng.normal(size=len(q)) * 0.05 for q in qs[1:]]
    os_twin = build_opensim(specs, G, rng, add_components=add_osim_constraints(cspecs))
    os_twin.state.setTime(T0)
    os_twin.set_coordinates(qs, us)
    if variant == "consistent":
        us = _project_speeds(os_twin, us)
        os_twin.set_coordinates(qs, us)
    st = build_simtk(specs, G)
    constraints = add_simtk_constraints(st, cspecs)
    s = st.new_state(euler=True)
    s.set_time(T0)
    st.set_coordinates(s, qs, us)
    st.system.realize(s, Stage.Acceleration)
    os_twin.model.realizeAcceleration(os_twin.state)
    return LoopPair(case, specs, cspecs, st, s, os_twin, constraints, rng, variant)


def _project_speeds(os_twin, us) -> list:
    """Per-body speeds with zero velocity errors (G u + c = 0, linear in u): u - G^+ uerr(u)."""
    os_twin.model.realizeVelocity(os_twin.state)
    Gm = osim.Matrix()
    os_twin.matter.calcG(os_twin.state, Gm)
    Gn = mat(Gm)
    u = vec(os_twin.state.getU())
    u = u - np.linalg.pinv(Gn) @ vec(os_twin.state.getUErr())
    return [None] + [u[os_twin.u_index[i]] for i in range(1, os_twin.nb)]


@pytest.fixture(scope="module", params=[(c, v) for c in CASES for v in VARIANTS],
                ids=[f"{c.name}-{v}" for c in CASES for v in VARIANTS])
def lpair(request) -> LoopPair:
    return make_loop_pair(*request.param)


# ---------------------------------------------------------------------- tests
def test_constraint_equation_counts(lpair):
    """Same number of constraint equations (multipliers) in both; all holonomic."""
    m = sum(c.get_num_constraint_equations_in_use(lpair.s)[0] for c in lpair.constraints)
    assert m == lpair.os.state.getNMultipliers() == len(lpair.s.get_multipliers())
    assert all(c.get_num_constraint_equations_in_use(lpair.s)[1:] == (0, 0) for c in lpair.constraints)


def test_assembly_by_construction(lpair):
    """Checks the test's own construction: Simbody finds the loop closed (position errors ~0) at the
    assembly q and open in the perturbed variant; the consistent speeds satisfy G u = 0."""
    S = lpair.os.state
    perr = np.abs(vec(S.getQErr())).max()
    verr = np.abs(vec(S.getUErr())).max()
    # closed by construction: round-off of OpenSim's poses and of the parameters computed from them
    # (positions of ~1); the consistent speeds come from a least-squares projection with pinv(G)
    if lpair.variant == "perturbed":
        assert perr > 1e-4  # (thresholds of "open", not tolerances)
    else:
        assert perr <= tol(1.0, 2**10)
    if lpair.variant == "consistent":
        assert verr <= tol(np.linalg.cond(lpair.st.matter.calc_g(lpair.s)) * np.abs(vec(S.getU())).max(), 2**10)
    else:
        assert verr > 1e-6


def test_udot_under_gravity(lpair):
    """Constrained forward dynamics under gravity: udot and the body accelerations equal Simbody's.
    With consistent speeds this is pure physics (independent of how the rows are written)."""
    S = lpair.os.state
    assert rel_err(lpair.s.get_udot(), vec(S.getUDot())[lpair.u_perm()]) < dyn_tol(lpair)
    for i in range(1, lpair.nb):
        A = np.array([vec(lpair.os.bodies[i].getAngularAccelerationInGround(S)),
                      vec(lpair.os.bodies[i].getLinearAccelerationInGround(S))])
        assert rel_err(lpair.st.mobods[i].get_body_acceleration(lpair.s), A) < dyn_tol(lpair)


def test_constraint_generalized_forces(lpair):
    """The constraint's generalized force G^T lambda (each side from its own G and multipliers) is
    the same: independent of the row convention, it is M udot + C - f."""
    lam_os = vec(lpair.os.state.getMultipliers())
    Gt = osim.Vector()
    lpair.os.matter.multiplyByGTranspose(lpair.os.state, osim_vector(lam_os), Gt)
    mine = lpair.st.matter.multiply_by_g_transpose(lpair.s, lpair.s.get_multipliers())
    assert rel_err(mine, vec(Gt)[lpair.u_perm()]) < dyn_tol(lpair)


def test_reaction_forces_with_constraints(lpair):
    """Mobilizer reaction forces of the constrained motion (bodies 1..nb-1) equal Simbody's."""
    RF = osim.VectorOfSpatialVec()
    lpair.os.matter.calcMobilizerReactionForces(lpair.os.state, RF)
    theirs = spatial_vector(RF, lpair.nb)[lpair.os.mobod]
    assert rel_err(lpair.st.matter.calc_mobilizer_reaction_forces(lpair.s)[1:], theirs[1:]) < dyn_tol(lpair)


def test_constraint_matrix_G(lpair):
    """G = d(acceleration errors)/d(udot) (m x nu) equals Simbody's calcG, columns mapped by body."""
    Gm = osim.Matrix()
    lpair.os.matter.calcG(lpair.os.state, Gm)
    assert rel_err(lpair.st.matter.calc_g(lpair.s), mat(Gm)[:, lpair.u_perm()]) < TOL


def test_projected_inverse_mass_matrix(lpair):
    """G M^-1 G^T (m x m) equals Simbody's calcProjectedMInv."""
    P = osim.Matrix()
    lpair.os.matter.calcProjectedMInv(lpair.os.state, P)
    assert rel_err(lpair.st.matter.calc_projected_m_inv(lpair.s), mat(P)) < solve_tol(cond_m(lpair.st.matter, lpair.s))


def test_multipliers(lpair):
    """The multipliers equal Simbody's (same sign: M udot + G^T lambda = f), state-wide and per
    constraint in constraint order."""
    theirs = vec(lpair.os.state.getMultipliers())
    assert rel_err(lpair.s.get_multipliers(), theirs) < dyn_tol(lpair)
    assert rel_err(np.concatenate([c.get_multipliers(lpair.s) for c in lpair.constraints]), theirs) < dyn_tol(lpair)


def test_constraint_errors(lpair):
    """Position, velocity and acceleration errors equal Simbody's (qErr, uErr, udotErr: in Euler
    mode there are no quaternion errors, so these are the constraints' own, in constraint order)."""
    S = lpair.os.state
    cs = lpair.constraints
    assert rel_err(np.concatenate([c.get_position_errors(lpair.s) for c in cs]), vec(S.getQErr())) < TOL
    assert rel_err(np.concatenate([c.get_velocity_errors(lpair.s) for c in cs]), vec(S.getUErr())) < TOL
    # (the acceleration errors are those at the solved udot: the solve's tolerance)
    assert rel_err(np.concatenate([c.get_acceleration_errors(lpair.s) for c in cs]), vec(S.getUDotErr())) \
        < dyn_tol(lpair)


def test_forces_from_multipliers(lpair):
    """Body and mobility forces of random multipliers equal Simbody's
    calcConstraintForcesFromMultipliers, and G^T lambda its multiplyByGTranspose."""
    m = lpair.os.state.getNMultipliers()
    lam = lpair.rng.normal(size=m)
    F, f = osim.VectorOfSpatialVec(), osim.Vector()
    lpair.os.matter.calcConstraintForcesFromMultipliers(lpair.os.state, osim_vector(lam), F, f)
    F_mine, f_mine = lpair.st.matter.calc_constraint_forces_from_multipliers(lpair.s, lam)
    assert rel_err(F_mine, spatial_vector(F, lpair.nb)[lpair.os.mobod]) < TOL
    assert rel_err(f_mine, vec(f)[lpair.u_perm()]) < TOL
    Gt = osim.Vector()
    lpair.os.matter.multiplyByGTranspose(lpair.os.state, osim_vector(lam), Gt)
    assert rel_err(lpair.st.matter.multiply_by_g_transpose(lpair.s, lam), vec(Gt)[lpair.u_perm()]) < TOL


def test_residual_with_known_multipliers(lpair):
    """calc_residual_force(f, F, udot, lambda) = M udot + C + G^T lambda - f - J^T F equals
    Simbody's calcResidualForce for random inputs."""
    rng, p = lpair.rng, lpair.u_perm()
    nu, m = len(p), lpair.os.state.getNMultipliers()
    F = rng.normal(size=(lpair.nb, 2, 3))
    F[0] = 0.0
    f, a, lam = rng.normal(size=nu), rng.normal(size=nu), rng.normal(size=m)
    r = osim.Vector()
    lpair.os.matter.calcResidualForce(lpair.os.state, osim_vector(lpair.osim_u(f)),
                                      osim_spatial_vector(lpair.osim_bodies(F)), osim_vector(lpair.osim_u(a)),
                                      osim_vector(lam), r)
    assert rel_err(lpair.st.matter.calc_residual_force(lpair.s, f, F, a, lam), vec(r)[p]) < TOL


# ---------------------------------------------------------------------- Simbody's conventions, explicitly
def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _coincident_point(lp, b1: int, b2: int, s2):
    """Body 2's station S in Ground and body 1's station C (in body 1) of the material point at S."""
    p_S = lp.st.mobods[b2].find_station_location_in_ground(lp.s, s2)
    X1 = lp.st.mobods[b1].get_body_transform(lp.s)
    return p_S, X1.R.matrix.T @ (p_S - np.asarray(X1.p))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["ball-loop-off-ground", "weld-loop-off-ground"])
def test_ball_and_weld_rows_are_in_the_ancestor_frame(name, variant):
    """Simbody writes a Ball's rows (a Weld's translation rows) in the ancestor A of the two bodies
    (body 1 here): G rows = R_AG (J_S - J_C), S body 2's station and C body 1's material point at
    S, and perr = R_AG (p_S - p_P). Both libraries' G and position errors equal these, built here
    from station Jacobians and poses."""
    lp = make_loop_pair(_case(name), variant)
    c = lp.cspecs[0]
    b1, b2 = c.args[0], c.args[2]
    s1, s2 = (c.args[1], c.args[3]) if c.kind == "Ball" else (c.args[1].p, c.args[3].p)
    rows = slice(0, 3) if c.kind == "Ball" else slice(3, 6)
    R_AG = lp.st.mobods[b1].get_body_rotation(lp.s).matrix.T  # the ancestor is body 1
    p_S, s_C = _coincident_point(lp, b1, b2, s2)
    J = lp.st.matter.calc_station_jacobian(lp.s, [b2, b1], [s2, s_C])
    expected = R_AG @ (J[:3] - J[3:])
    Gm = osim.Matrix()
    lp.os.matter.calcG(lp.os.state, Gm)
    assert rel_err(mat(Gm)[rows][:, lp.u_perm()], expected) < TOL
    assert rel_err(lp.st.matter.calc_g(lp.s)[rows], expected) < TOL
    p_P = lp.st.mobods[b1].find_station_location_in_ground(lp.s, s1)
    assert rel_err(vec(lp.os.state.getQErr())[rows], R_AG @ (p_S - p_P)) < TOL
    assert rel_err(lp.constraints[0].get_position_errors(lp.s)[rows], R_AG @ (p_S - p_P)) < TOL


def _simbody_perp(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Simbody's UnitVec3::perp() (cross with the axis of the smallest |component|) and y = d x x."""
    a = np.abs(d)
    k = (0 if a[0] <= a[2] else 2) if a[0] <= a[1] else (1 if a[1] <= a[2] else 2)
    e = np.zeros(3)
    e[k] = 1.0
    x = np.cross(d, e)
    x /= np.linalg.norm(x)
    return x, np.cross(d, x)


@pytest.mark.parametrize("variant", VARIANTS)
def test_point_on_line_rows_use_simbody_perpendiculars(variant):
    """Simbody's PointOnLine rows are the point's offsets along UnitVec3::perp's pair (x_o, y_o)
    in the line body; simtk's rows are the same: the 2x2 map T between the two G's is the
    identity, and the multipliers and position errors agree."""
    lp = make_loop_pair(_case("point-on-line-loop"), variant)
    d = lp.cspecs[0].args[1]
    xo, yo = _simbody_perp(d)
    Gm = osim.Matrix()
    lp.os.matter.calcG(lp.os.state, Gm)
    G_os, G_mine = mat(Gm)[:, lp.u_perm()], lp.st.matter.calc_g(lp.s)
    T = G_mine @ np.linalg.pinv(G_os)
    # the pseudo-inverse loses cond(G) (a 2 x nu matrix of full row rank)
    pinv_tol = tol(np.linalg.cond(G_os), 2**10)
    assert rel_err(T, np.eye(2)) < pinv_tol and rel_err(T @ G_os, G_mine) < pinv_tol
    assert rel_err(lp.s.get_multipliers(), vec(lp.os.state.getMultipliers())) < dyn_tol(lp)
    assert rel_err(lp.constraints[0].get_position_errors(lp.s), vec(lp.os.state.getQErr())) < TOL
    # And Simbody's rows really are the perp() basis: position errors = (x_o, y_o) . (p_S - P) in B.
    X_GB = lp.st.mobods[lp.cspecs[0].args[0]].get_body_transform(lp.s)
    p_S = lp.st.mobods[lp.cspecs[0].args[3]].find_station_location_in_ground(lp.s, lp.cspecs[0].args[4])
    p_PC = (~X_GB * p_S) - lp.cspecs[0].args[2]
    assert rel_err(np.array([xo @ p_PC, yo @ p_PC]), vec(lp.os.state.getQErr())) < TOL


@pytest.mark.parametrize("name", ["spatial-four-bar-ball", "ball-and-coupler"])
def test_ball_reaction_on_body_1_acts_at_the_coincident_point(name):
    """Off the manifold, Simbody's Ball puts body 1's reaction -f at the spatial location of body 2's
    station (not at body 1's own station): on Ground (body 1 here) its torque about the origin is
    p_S2 x (-f_on_2). simtk's constraint forces for the same multipliers are Simbody's."""
    lp = make_loop_pair(_case(name), "perturbed")
    lam = lp.rng.normal(size=lp.os.state.getNMultipliers())
    F, f = osim.VectorOfSpatialVec(), osim.Vector()
    lp.os.matter.calcConstraintForcesFromMultipliers(lp.os.state, osim_vector(lam), F, f)
    theirs = spatial_vector(F, lp.nb)[lp.os.mobod]
    mine, _ = lp.st.matter.calc_constraint_forces_from_multipliers(lp.s, lam)
    c = lp.cspecs[0]
    p_S2 = lp.st.mobods[c.args[2]].find_station_location_in_ground(lp.s, c.args[3])
    p_P1 = lp.st.mobods[c.args[0]].find_station_location_in_ground(lp.s, c.args[1])
    assert np.linalg.norm(p_S2 - p_P1) > 1e-3  # off the manifold: the two points differ (a threshold)
    assert rel_err(theirs[0, 0], np.cross(p_S2, theirs[0, 1])) < TOL
    assert rel_err(mine, theirs) < TOL
