"""The public multibody API against Pinocchio, an independent implementation, on random trees.

The simtk side is built only through MultibodySystem / SimbodyMatterSubsystem / MobilizedBody.* and
forces are applied by Force elements (UniformGravity, DiscreteForces); the Pinocchio model is built
from the same *inputs* (frames, mass properties), never from simtk's caches.

Mapping of Simbody's meanings to Pinocchio's:

- Pinocchio's joint frame of body i is our M frame. Its placement in the parent's joint frame is
  X_PF (parent Ground) or ~X_BM(parent) * X_PF.
- Inertias go into the M frame: mass center ~X_BM * p_BC, central inertia R_MB I_C R_MB^T.
- Pin = JointModelRZ and Slider = JointModelPX (same q, u).
- Ball = JointModelSpherical: q (w,x,y,z) -> (x,y,z,w); our u = w_FM in F, Pinocchio's v = w_FM in
  M, so u = R_FM v and udot = R_FM vdot (since w x w = 0).
- Free = JointModelFreeFlyer: q (quat, p_FM) -> (p_FM, quat xyzw); Pinocchio's v = (v_M, w_M) in
  M, ours u = (w_F, v_F) in F: u = T v with T = [[0, R], [R, 0]] and
  udot = T vdot + (0, R (w_M x v_M)).
- Hence M_pin = T^T M T and generalized forces map as tau_pin = T^T tau (same power).
- Our body forces (torque about the body origin, force; in Ground) become Pinocchio's external
  forces at the joint (M) origin, expressed in M.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import new_state, random_model, randomize_state, rel_err
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Stage
from tolerances import tol

pin = pytest.importorskip("pinocchio")

JOINTS = ("Pin", "Slider", "Ball", "Free")
G = np.array([0.4, -9.81, 0.7])
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
#: Two implementations of a recursive sweep over up to 12 bodies (and the maps T): round-off of
#: the scale rel_err divides by, max(1, max|expected|), the model's unit lengths and speeds at
#: least. Measured up to ~25 EPS.
TOL = tol(1.0, 2**10)
#: Forward dynamics: the round-off of the solve grows with the condition number of M (up to ~1.5e4
#: for these trees; measured up to 4.2 cond(M) EPS).
ABA_MARGIN = 256


def aba_tol(model, state) -> float:
    return tol(np.linalg.cond(model.matter.calc_m(state)), ABA_MARGIN)


def build_pinocchio(model):
    """The Pinocchio model of the same tree (depth-first numbering, so joint id == body index)."""
    pm = pin.Model()
    pm.gravity = pin.Motion(G, np.zeros(3))
    kinds = {"Pin": pin.JointModelRZ, "Slider": pin.JointModelPX, "Ball": pin.JointModelSpherical,
             "Free": pin.JointModelFreeFlyer}
    for i, spec in enumerate(model.specs[1:], start=1):
        X_PF = spec.X_PF
        placement = X_PF if spec.parent == 0 else ~model.specs[spec.parent].X_BM * X_PF
        jid = pm.addJoint(spec.parent, kinds[spec.joint](), pin.SE3(placement.R.matrix.copy(), placement.p.copy()),
                          f"j{i}")
        assert jid == i
        X_MB = ~spec.X_BM
        R_MB = X_MB.R.matrix
        pm.appendBodyToJoint(jid, pin.Inertia(spec.mass, X_MB * spec.com, R_MB @ spec.I_C @ R_MB.T),
                             pin.SE3.Identity())
    return pm


def velocity_map(model, state, v_pin=None):
    """T (nu, nu) with u = T v_pin, and the vector Tdot v_pin (zero when v_pin is None)."""
    nu = state.get_nu()
    T, Tdot_v = np.zeros((nu, nu)), np.zeros(nu)
    a = 0
    for mb, spec in zip(model.mobods[1:], model.specs[1:]):
        R = mb.get_mobilizer_transform(state).R.matrix
        n = mb.get_num_u(state)
        if spec.joint in ("Pin", "Slider"):
            T[a, a] = 1.0
        elif spec.joint == "Ball":
            T[a:a + 3, a:a + 3] = R
        else:  # Free
            T[a:a + 3, a + 3:a + 6] = R
            T[a + 3:a + 6, a:a + 3] = R
            if v_pin is not None:
                Tdot_v[a + 3:a + 6] = R @ np.cross(v_pin[a + 3:a + 6], v_pin[a:a + 3])
        a += n
    return T, Tdot_v


def pinocchio_q(model, state) -> np.ndarray:
    parts = []
    for mb, spec in zip(model.mobods[1:], model.specs[1:]):
        q = np.array(mb.get_q(state))
        if spec.joint == "Ball":
            q = np.r_[q[1:4], q[0]]
        elif spec.joint == "Free":
            q = np.r_[q[4:7], q[1:4], q[0]]
        parts.append(q)
    return np.concatenate(parts)


def setup(seed: int, discrete_forces: bool = True):
    """A random depth-first tree of Pin/Slider/Ball/Free, a random state, and its Pinocchio twin."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, JOINTS, nb=int(rng.integers(4, 13)), gravity=G, discrete_forces=discrete_forces,
                         depth_first=True)
    state = new_state(model)
    randomize_state(model, state, rng, speed=1.5)
    model.system.realize(state, Stage.Position)
    T, _ = velocity_map(model, state)
    v_pin = np.linalg.solve(T, np.array(state.get_u()))
    T, Tdot_v = velocity_map(model, state, v_pin)
    pm = build_pinocchio(model)
    return rng, model, state, pm, pm.createData(), pinocchio_q(model, state), v_pin, T, Tdot_v


@settings(max_examples=25)
@given(seed=SEEDS)
def test_mass_matrix_matches_crba(seed):
    """calc_m: T^T M T equals Pinocchio's CRBA mass matrix for the same configuration."""
    rng, model, state, pm, data, q_pin, v_pin, T, _ = setup(seed, discrete_forces=False)
    M = model.matter.calc_m(state)
    M_pin = pin.crba(pm, data, q_pin)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    assert rel_err(T.T @ M @ T, M_pin) < TOL


@settings(max_examples=25)
@given(seed=SEEDS)
def test_forward_dynamics_matches_aba(seed):
    """Realized udot (gravity element + DiscreteForces mobility forces) = T vdot + Tdot v with
    Pinocchio's ABA given tau_pin = T^T tau and the same gravity."""
    rng, model, state, pm, data, q_pin, v_pin, T, Tdot_v = setup(seed)
    tau = rng.uniform(-3, 3, state.get_nu())
    model.discrete.set_all_mobility_forces(state, tau)
    model.system.realize(state, Stage.Acceleration)
    vdot = pin.aba(pm, data, q_pin, v_pin, T.T @ tau)
    assert rel_err(state.get_udot(), T @ vdot + Tdot_v) < aba_tol(model, state)


@settings(max_examples=15)
@given(seed=SEEDS)
def test_forward_dynamics_with_body_forces_matches_aba_fext(seed):
    """Body forces applied with DiscreteForces.set_all_body_forces (torque about the body origin,
    force; in Ground) give the same udot as Pinocchio's ABA with the equivalent external forces
    at each joint frame, expressed in it."""
    rng, model, state, pm, data, q_pin, v_pin, T, Tdot_v = setup(seed)
    F = rng.uniform(-2, 2, (model.nb, 2, 3))
    F[0] = 0.0
    model.discrete.set_all_body_forces(state, F)
    fext = [pin.Force.Zero()]
    for i, mb in enumerate(model.mobods[1:], start=1):
        X_GB = mb.get_body_transform(state)
        X_GM = X_GB * model.specs[i].X_BM
        torque_M = F[i, 0] + np.cross(X_GB.p - X_GM.p, F[i, 1])  # moved from B's origin to M's
        R_MG = X_GM.R.matrix.T
        fext.append(pin.Force(R_MG @ F[i, 1], R_MG @ torque_M))
    model.system.realize(state, Stage.Acceleration)
    vdot = pin.aba(pm, data, q_pin, v_pin, np.zeros(state.get_nu()), fext)
    assert rel_err(state.get_udot(), T @ vdot + Tdot_v) < aba_tol(model, state)


@settings(max_examples=25)
@given(seed=SEEDS)
def test_inverse_dynamics_matches_rnea(seed):
    """calc_residual_force_ignoring_constraints with the gravity element's body forces:
    T^T residual(udot) = rnea(q, v, vdot) for udot = T vdot + Tdot v."""
    rng, model, state, pm, data, q_pin, v_pin, T, Tdot_v = setup(seed, discrete_forces=False)
    model.system.realize(state, Stage.Dynamics)
    F_gravity = model.system.get_rigid_body_forces(state, Stage.Dynamics)
    vdot = rng.uniform(-2, 2, state.get_nu())
    residual = model.matter.calc_residual_force_ignoring_constraints(
        state, np.zeros(state.get_nu()), F_gravity, T @ vdot + Tdot_v)
    assert rel_err(T.T @ residual, pin.rnea(pm, data, q_pin, v_pin, vdot)) < TOL


@settings(max_examples=8)
@given(seed=SEEDS)
def test_body_kinematics_match_forward_kinematics(seed):
    """get_body_transform and get_body_velocity agree with Pinocchio's placements and (local)
    velocities of the M frames, moved to the body origin."""
    rng, model, state, pm, data, q_pin, v_pin, T, _ = setup(seed, discrete_forces=False)
    model.system.realize(state, Stage.Velocity)
    pin.forwardKinematics(pm, data, q_pin, v_pin)
    for i, mb in enumerate(model.mobods[1:], start=1):
        X_GB = mb.get_body_transform(state)
        X_GM = X_GB * model.specs[i].X_BM
        oMi = data.oMi[i]
        assert rel_err(X_GM.R.matrix, oMi.rotation) < TOL
        assert rel_err(X_GM.p, oMi.translation) < TOL
        w_G = oMi.rotation @ data.v[i].angular
        v_M = oMi.rotation @ data.v[i].linear
        V = mb.get_body_velocity(state)
        assert rel_err(V[0], w_G) < TOL
        assert rel_err(V[1], v_M + np.cross(w_G, X_GB.p - X_GM.p)) < TOL
