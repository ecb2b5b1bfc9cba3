"""simtk's mobilizers and matter operators against Simbody itself, run through OpenSim 4.6.

Each case is a random tree (3-8 bodies, random joint frames X_PF / X_BM, random physical mass
properties, gravity on) built twice from the same inputs: as a simtk MultibodySystem and as an
OpenSim Model (see ``opensim_models`` for the mapping). OpenSim's matter subsystem runs in Euler
angle mode, so simtk's is switched to Euler angles too; a separate test runs simtk in its default
quaternion mode against the same OpenSim state. Everything is compared body by body (OpenSim
numbers its mobilized bodies its own way) to round-off: a stated count of EPS on the scale of the
quantity (``SWEEP_TOL``), times the condition number of M for what comes out of a solve
(``solve_tol``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from opensim_models import (  # noqa: E402
    ALL_JOINTS,
    JOINTS,
    QUATERNION_JOINTS,
    SWEEP_TOL,
    build_opensim,
    build_simtk,
    check_frames,
    cond_m,
    mat,
    osim_spatial_vector,
    osim_vec3,
    osim_vector,
    random_coordinates,
    random_specs,
    rel_err,
    rot,
    solve_tol,
    spatial,
    spatial_vector,
    vec,
)

from simtk import Stage  # noqa: E402
from tolerances import tol  # noqa: E402

G = np.array([0.4, -9.81, 0.7])
TOL = SWEEP_TOL
#: (id, joints drawn from, number of bodies with Ground, joint forced onto two bodies, seed)
CASES = ([(f"with-{j}", ALL_JOINTS, 5, j, 100 + k) for k, j in enumerate(ALL_JOINTS)]
         + [(f"mixed-{k}", ALL_JOINTS, 8, None, 200 + k) for k in range(3)]
         + [("chain-of-3", ALL_JOINTS, 3, None, 300)])


@dataclass
class Pair:
    specs: list
    st: object      # SimtkTwin
    s: object       # its State (Euler mode), realized to Acceleration
    os: object      # OsimTwin, its state realized to Acceleration
    qs: list
    us: list
    rng: np.random.Generator

    @property
    def nb(self) -> int:
        return len(self.specs)

    def u_perm(self) -> np.ndarray:
        return self.os.u_perm()

    def q_perm(self) -> np.ndarray:
        return np.concatenate(self.os.q_index[1:]).astype(int)

    def osim_u(self, u: np.ndarray) -> np.ndarray:
        """A simtk-ordered (nu,) vector laid out as OpenSim's u."""
        out = np.zeros(self.os.nu)
        out[self.u_perm()] = u
        return out

    def osim_bodies(self, F: np.ndarray) -> np.ndarray:
        """Simtk-indexed (nb, 2, 3) body quantities laid out by OpenSim's mobilized-body index."""
        out = np.zeros_like(F)
        out[self.os.mobod] = F
        return out


def make_pair(case) -> Pair:
    _, joints, nb, must_have, seed = case
    rng = np.random.default_rng(seed)
    specs = random_specs(rng, joints, nb, must_have)
    os_twin = build_opensim(specs, G, rng)
    st = build_simtk(specs, G)
    s = st.new_state(euler=True)
    qs, us = random_coordinates(rng, specs)
    st.set_coordinates(s, qs, us)
    os_twin.set_coordinates(qs, us)
    st.system.realize(s, Stage.Acceleration)
    os_twin.model.realizeAcceleration(os_twin.state)
    return Pair(specs, st, s, os_twin, qs, us, rng)


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def pair(request) -> Pair:
    return make_pair(request.param)


def test_joint_frames_reach_simbody_unchanged(pair):
    """The builder's mapping: OpenSim hands Simbody X_PF and X_BM exactly as specified, and uses
    the Euler-angle layout (one q and one u per coordinate, in mobilizer order)."""
    # each frame goes to OpenSim through a quaternion and comes back from its stored Euler angles:
    # a few dozen flops on rotations (unit entries) and offsets of length < 1
    assert check_frames(pair.os, pair.specs) <= tol(1.0, 256)
    for i in range(1, pair.nb):
        assert len(pair.os.u_index[i]) == pair.st.mobods[i].get_num_u(pair.s)
        assert len(pair.os.q_index[i]) == pair.st.mobods[i].get_num_q(pair.s)


def test_body_poses_and_velocities(pair):
    """X_GB and V_GB = (w_GB, v_GB) of every body equal Simbody's for the same q, u."""
    S = pair.os.state
    for i in range(1, pair.nb):
        b, mb = pair.os.bodies[i], pair.st.mobods[i]
        X = mb.get_body_transform(pair.s)
        assert rel_err(X.R.matrix, rot(b.getRotationInGround(S))) < TOL
        assert rel_err(X.p, vec(b.getPositionInGround(S))) < TOL
        assert rel_err(mb.get_body_velocity(pair.s), spatial(b.getVelocityInGround(S))) < TOL


def test_forward_dynamics_under_gravity(pair):
    """udot, qdotdot and body accelerations A_GB under gravity equal Simbody's forward dynamics."""
    S = pair.os.state
    dyn_tol = solve_tol(cond_m(pair.st.matter, pair.s))
    assert rel_err(pair.s.get_udot(), vec(S.getUDot())[pair.u_perm()]) < dyn_tol
    assert rel_err(pair.s.get_qdotdot(), vec(S.getQDotDot())[pair.q_perm()]) < dyn_tol
    for i in range(1, pair.nb):
        A = spatial(pair.os.bodies[i].getAccelerationInGround(S))
        assert rel_err(pair.st.mobods[i].get_body_acceleration(pair.s), A) < dyn_tol


def test_mass_matrix_and_inverse(pair):
    """M (CRBA) and M^-1 equal Simbody's calcM / calcMInv, rows and columns mapped by body."""
    sm, S, p = pair.os.matter, pair.os.state, pair.u_perm()
    M, Mi = osim.Matrix(), osim.Matrix()
    sm.calcM(S, M)
    sm.calcMInv(S, Mi)
    assert rel_err(pair.st.matter.calc_m(pair.s), mat(M)[np.ix_(p, p)]) < TOL
    inv_tol = solve_tol(cond_m(pair.st.matter, pair.s))
    assert rel_err(pair.st.matter.calc_m_inv(pair.s), mat(Mi)[np.ix_(p, p)]) < inv_tol
    v = pair.rng.normal(size=len(p))
    out = osim.Vector()
    sm.multiplyByM(S, osim_vector(pair.osim_u(v)), out)
    assert rel_err(pair.st.matter.multiply_by_m(pair.s, v), vec(out)[p]) < TOL
    sm.multiplyByMInv(S, osim_vector(pair.osim_u(v)), out)
    assert rel_err(pair.st.matter.multiply_by_m_inv(pair.s, v), vec(out)[p]) < inv_tol


def test_inverse_dynamics_residual(pair):
    """calc_residual_force_ignoring_constraints(f, F, udot) = M udot + C - f - J^T F equals
    Simbody's for random applied mobility forces f, body forces F and a random udot."""
    rng, p = pair.rng, pair.u_perm()
    nu = len(p)
    F = rng.normal(size=(pair.nb, 2, 3))
    F[0] = 0.0
    f, a = rng.normal(size=nu), rng.normal(size=nu)
    r = osim.Vector()
    pair.os.matter.calcResidualForceIgnoringConstraints(
        pair.os.state, osim_vector(pair.osim_u(f)), osim_spatial_vector(pair.osim_bodies(F)),
        osim_vector(pair.osim_u(a)), r)
    assert rel_err(pair.st.matter.calc_residual_force_ignoring_constraints(pair.s, f, F, a), vec(r)[p]) < TOL


def _n_products(pair: Pair) -> dict:
    """simtk's and Simbody's N v, N^T w, N^-1 w, N^-T v and qdot for random v (nu,), w (nq,), as
    (mine, theirs, simtk indices of the result) per product; OpenSim's results mapped to simtk's
    q / u layout."""
    sm, S, p, qp = pair.os.matter, pair.os.state, pair.u_perm(), pair.q_perm()
    rng, mt, s = pair.rng, pair.st.matter, pair.s
    v, w = rng.normal(size=len(p)), rng.normal(size=len(qp))
    w_os = np.zeros(pair.os.nq)
    w_os[qp] = w
    out = {}
    r = osim.Vector()
    sm.multiplyByN(S, False, osim_vector(pair.osim_u(v)), r)
    out["N"] = (mt.multiply_by_n(s, False, v), vec(r)[qp], "q")
    # Simbody leaves the unused quaternion slot of Ball/Free/Ellipsoid at zero in Euler mode.
    assert np.abs(np.delete(vec(r), qp)).max(initial=0.0) == 0.0
    sm.multiplyByN(S, True, osim_vector(w_os), r)
    out["N^T"] = (mt.multiply_by_n(s, True, w), vec(r)[p], "u")
    sm.multiplyByNInv(S, False, osim_vector(w_os), r)
    out["N^-1"] = (mt.multiply_by_n_inv(s, False, w), vec(r)[p], "u")
    sm.multiplyByNInv(S, True, osim_vector(pair.osim_u(v)), r)
    out["N^-T"] = (mt.multiply_by_n_inv(s, True, v), vec(r)[qp], "q")
    out["qdot"] = (s.get_qdot(), vec(S.getQDot())[qp], "q")
    return out


def _slots(pair: Pair, which: str, joints) -> np.ndarray:
    """simtk's q or u indices of the bodies whose joint is in ``joints``."""
    idx, start = [], 0
    for mb, spec in zip(pair.st.mobods[1:], pair.specs[1:]):
        n = mb.get_num_q(pair.s) if which == "q" else mb.get_num_u(pair.s)
        if spec.joint in joints:
            idx.extend(range(start, start + n))
        start += n
    return np.array(idx, dtype=int)


def test_kinematic_coupling_N(pair):
    """qdot = N u, N^T, N^-1 and N^-T products equal Simbody's multiplyByN / multiplyByNInv, on the
    built-in mobilizers' rows (FunctionBased rows: see the xfail below). N is block diagonal, so
    these rows do not depend on the FunctionBased ones."""
    builtin = set(JOINTS)
    for name, (mine, theirs, kind) in _n_products(pair).items():
        k = _slots(pair, kind, builtin)
        assert rel_err(mine[k], theirs[k]) < TOL, name


def test_kinematic_coupling_N_of_function_based():
    """The FunctionBased rows of N v, N^T w, N^-1 w, N^-T v equal Simbody's (qdot = u there)."""
    pair = make_pair(next(c for c in CASES if c[0] == "with-FunctionBased"))
    products = _n_products(pair)
    k_q = _slots(pair, "q", {"FunctionBased"})
    assert rel_err(products["qdot"][0][k_q], products["qdot"][1][k_q]) < TOL  # the realized qdot is right
    for name, (mine, theirs, kind) in products.items():
        k = _slots(pair, kind, {"FunctionBased"})
        assert len(k) > 0
        assert rel_err(mine[k], theirs[k]) < TOL, name


def test_jacobians(pair):
    """System Jacobian (6 nb, nu; rows per body: angular then linear, Ground included), station
    and frame Jacobians, and the system Jacobian bias JDot u equal Simbody's."""
    sm, S, p, nb = pair.os.matter, pair.os.state, pair.u_perm(), pair.nb
    mt, s = pair.st.matter, pair.s
    J = osim.Matrix()
    sm.calcSystemJacobian(S, J)
    J_os = mat(J).reshape(nb, 6, -1)[pair.os.mobod][:, :, p].reshape(6 * nb, len(p))
    assert rel_err(mt.calc_system_jacobian(s), J_os) < TOL
    for _ in range(2):
        b = int(pair.rng.integers(1, nb))
        station = pair.rng.normal(size=3)
        JS, JF = osim.Matrix(), osim.Matrix()
        sm.calcStationJacobian(S, int(pair.os.mobod[b]), osim_vec3(station), JS)
        sm.calcFrameJacobian(S, int(pair.os.mobod[b]), osim_vec3(station), JF)
        assert rel_err(mt.calc_station_jacobian(s, [pair.st.mobods[b]], [station]), mat(JS)[:, p]) < TOL
        assert rel_err(mt.calc_frame_jacobian(s, [pair.st.mobods[b]], [station]), mat(JF)[:, p]) < TOL
    bias = osim.VectorOfSpatialVec()
    sm.calcBiasForSystemJacobian(S, bias)
    assert rel_err(mt.calc_bias_for_system_jacobian(s), spatial_vector(bias, nb)[pair.os.mobod]) < TOL


def test_energy_momentum_mass_center(pair):
    """Kinetic energy, spatial momentum about the Ground origin, system mass and mass center
    location and velocity equal Simbody's."""
    sm, S, mt, s = pair.os.matter, pair.os.state, pair.st.matter, pair.s
    assert rel_err(mt.calc_kinetic_energy(s), sm.calcKineticEnergy(S)) < TOL
    assert rel_err(mt.calc_system_momentum_about_ground_origin(s),
                   spatial(sm.calcSystemMomentumAboutGroundOrigin(S))) < TOL
    assert rel_err(mt.calc_system_mass(s), sm.calcSystemMass(S)) < TOL
    assert rel_err(mt.calc_system_mass_center_location_in_ground(s),
                   vec(sm.calcSystemMassCenterLocationInGround(S))) < TOL
    assert rel_err(mt.calc_system_mass_center_velocity_in_ground(s),
                   vec(sm.calcSystemMassCenterVelocityInGround(S))) < TOL


def osim_reactions(pair) -> np.ndarray:
    """Simbody's calcMobilizerReactionForces, rows reordered to simtk's body numbering."""
    RF = osim.VectorOfSpatialVec()
    pair.os.matter.calcMobilizerReactionForces(pair.os.state, RF)
    return spatial_vector(RF, pair.nb)[pair.os.mobod]


def test_mobilizer_reaction_forces_on_bodies(pair):
    """Reaction on each body from its parent through its mobilizer, at M's origin, in Ground
    (Simbody's convention), under gravity."""
    mine = pair.st.matter.calc_mobilizer_reaction_forces(pair.s)
    # the reactions come from the accelerations: a solve's tolerance
    assert rel_err(mine[1:], osim_reactions(pair)[1:]) < solve_tol(cond_m(pair.st.matter, pair.s))


def test_simbody_slot_0_is_the_reaction_on_ground(pair):
    """Pins down Simbody's meaning of slot 0 (Ground), for the xfail below: the force the
    'universe' applies to Ground at its origin, which is the sum over Ground's children c of their
    reactions F_c moved from M_c to the Ground origin (Ground has no mass and no acceleration)."""
    theirs = osim_reactions(pair)
    expected = np.zeros((2, 3))
    for i in range(1, pair.nb):
        if pair.specs[i].parent == 0:
            p_GM = pair.st.mobods[i].find_station_location_in_ground(pair.s, pair.specs[i].X_BM.p)
            expected[0] += theirs[i, 0] + np.cross(p_GM, theirs[i, 1])
            expected[1] += theirs[i, 1]
    assert rel_err(theirs[0], expected) < TOL
    assert np.abs(theirs[0]).max() > 1e-3  # gravity makes it non-trivial


def test_mobilizer_reaction_force_on_ground(pair):
    """simtk's slot 0 equals Simbody's (see the test above for what it means)."""
    mine = pair.st.matter.calc_mobilizer_reaction_forces(pair.s)
    assert rel_err(mine[0], osim_reactions(pair)[0]) < solve_tol(cond_m(pair.st.matter, pair.s))


# ---------------------------------------------------------------------- quaternion mode
QUAT_CASES = [(f"quaternions-{k}", ("Ball", "Free", "Ellipsoid", "Pin", "Gimbal"), 6, "Ball" if k == 0 else "Free",
               400 + k) for k in range(3)]


@pytest.mark.parametrize("case", QUAT_CASES, ids=[c[0] for c in QUAT_CASES])
def test_quaternion_mode_against_simbody_euler_mode(case):
    """simtk in its default (quaternion) mode, at the same X_FM and the same u as OpenSim's Euler
    mode, gives the same physics: u means w_FM (in F) in both modes, so X_GB, V_GB, udot, M and the
    residual agree; and the quaternion rows of N u and of qdotdot are Simbody's quaternion
    kinematics (Rotation::convertAngVelToQuaternionDot, ...DotDot) for w_FM = u."""
    pair = make_pair(case)
    st, specs = pair.st, pair.specs
    s = st.new_state(euler=False)
    st.set_coordinates(s, pair.qs, pair.us)
    st.system.realize(s, Stage.Acceleration)
    S, p = pair.os.state, pair.u_perm()
    for i in range(1, pair.nb):
        b, mb = pair.os.bodies[i], st.mobods[i]
        assert rel_err(mb.get_body_transform(s).R.matrix, rot(b.getRotationInGround(S))) < TOL
        assert rel_err(mb.get_body_origin_location(s), vec(b.getPositionInGround(S))) < TOL
        assert rel_err(mb.get_body_velocity(s), spatial(b.getVelocityInGround(S))) < TOL
    assert rel_err(s.get_udot(), vec(S.getUDot())[p]) < solve_tol(cond_m(st.matter, s))
    M = osim.Matrix()
    pair.os.matter.calcM(S, M)
    assert rel_err(st.matter.calc_m(s), mat(M)[np.ix_(p, p)]) < TOL
    checked = 0
    for i in range(1, pair.nb):
        if specs[i].joint not in QUATERNION_JOINTS:
            continue
        mb = st.mobods[i]
        quat, w, wdot = mb.get_q(s)[:4], mb.get_u(s)[:3], mb.get_udot(s)[:3]
        v4 = osim.Vec4(*map(float, quat))
        qdot = vec(osim.Rotation.convertAngVelToQuaternionDot(v4, osim_vec3(w)))
        qdotdot = vec(osim.Rotation.convertAngVelDotToQuaternionDotDot(v4, osim_vec3(w), osim_vec3(wdot)))
        assert rel_err(mb.get_qdot(s)[:4], qdot) < TOL
        assert rel_err(mb.get_qdotdot(s)[:4], qdotdot) < TOL
        checked += 1
    assert checked >= 1
