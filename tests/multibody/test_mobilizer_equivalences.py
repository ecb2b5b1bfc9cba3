"""Compound mobilizers equal chains of simple ones joined by massless links, and the fitting
methods (set_q_to_fit_transform, set_u_to_fit_velocity) invert the mobilizer's own kinematics.

A Pin turns about z and a Slider moves along x of its F and M frames; an alignment rotation A
given as both X_PF and X_BM of a link (A ~A around the elementary motion) turns that axis into
A z or A x. So ``X_FM_J(q) = prod_j A_j X_FM_j(q_j) ~A_j`` makes a chain of links, the first
with X_PF = X_PF_J * A_0 and the last with X_BM = X_BM_J * A_k, move body B exactly as the
compound mobilizer J does. Massless intermediate bodies (Body.Massless()) add no inertia, so the
dynamics must agree too.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from builders import (
    ALL_JOINTS,
    QUATERNION_JOINTS,
    BodySpec,
    build,
    joint_params,
    new_state,
    random_central_inertia,
    random_q,
    random_transform,
    rel_err,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Rotation, Stage, Transform
from tolerances import close, tol

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
G = np.array([0.2, -9.81, 0.4])
#: rel_err divides by max(1, max|expected|): the scale of the terms, at least the model's unit
#: lengths and speeds. J and its chain are two sweeps over up to 9 bodies (the chain's with
#: massless links): round-off of a tree sweep for poses and velocities; the accelerations come out
#: of the forward-dynamics solve as well, whose round-off grows with the condition number of M (up
#: to ~2e4 here, the error up to ~7 cond(M) EPS), so their tolerance is ``SWEEP_MARGIN * cond(M)``.
SWEEP_MARGIN = 256
TOL = tol(1.0, SWEEP_MARGIN)
#: The fits invert X_FM(q) and H(q) in closed form or by a least-squares solve of H (condition
#: < 2 at these q); angles in radians and lengths of ~1: measured up to 20 EPS (Ellipsoid's u).
FIT_TOL = tol(1.0, 2**10)

I3 = Rotation()
PIN_X, PIN_Y, PIN_Z = ("Pin", Rotation(math.pi / 2, "y")), ("Pin", Rotation(-math.pi / 2, "x")), ("Pin", I3)
SL_X, SL_Y, SL_Z = ("Slider", I3), ("Slider", Rotation(math.pi / 2, "z")), ("Slider", Rotation(-math.pi / 2, "y"))

#: compound joint -> (links (joint, alignment A), q permutation, u permutation): chain q = q_J[perm_q].
EQUIVALENCES = {
    "Gimbal": ([PIN_X, PIN_Y, PIN_Z], [0, 1, 2], [0, 1, 2]),
    "Bushing": ([SL_X, SL_Y, SL_Z, PIN_X, PIN_Y, PIN_Z], [3, 4, 5, 0, 1, 2], [3, 4, 5, 0, 1, 2]),
    "Universal": ([PIN_X, PIN_Y], [0, 1], [0, 1]),
    "Cylinder": ([PIN_Z, SL_Z], [0, 1], [0, 1]),
    "Planar": ([SL_X, SL_Y, PIN_Z], [1, 2, 0], [1, 2, 0]),
    "BendStretch": ([PIN_Z, SL_X], [0, 1], [0, 1]),
    "Translation": ([SL_X, SL_Y, SL_Z], [0, 1, 2], [0, 1, 2]),
    "Free": ([("Translation", I3), ("Ball", I3)], [4, 5, 6, 0, 1, 2, 3], [3, 4, 5, 0, 1, 2]),
}


def test_alignment_rotations_turn_the_axes():
    """The alignment rotations map z (Pin) or x (Slider) onto the intended axis."""
    z, x = np.array([0.0, 0, 1]), np.array([1.0, 0, 0])
    for (_, A), axis in zip((PIN_X, PIN_Y, PIN_Z), np.eye(3)):
        assert close(A * z, axis, margin=64, scale=1.0)  # a unit vector: cos and sin of pi/2, a product
    for (_, A), axis in zip((SL_X, SL_Y, SL_Z), np.eye(3)):
        assert close(A * x, axis, margin=64, scale=1.0)


def twin_models(rng, joint: str):
    """Two systems: Ground -Free- base -J- B -Pin- child, and the same with J replaced by its chain.

    Returns (model_J, model_chain, index of B and child in each).
    """
    links, _, _ = EQUIVALENCES[joint]

    def spec(j, parent, X_PF=None, X_BM=None, mass=None):
        m = float(rng.uniform(0.5, 2.5)) if mass is None else mass
        return BodySpec(j, parent, X_PF or random_transform(rng), X_BM or random_transform(rng), m,
                        rng.uniform(-0.4, 0.4, 3), random_central_inertia(rng, m), joint_params(rng, j))

    base = spec("Free", 0)
    B = spec(joint, 1)
    child = spec("Pin", 2)
    model_J = build([None, base, B, child], gravity=G, discrete_forces=True)

    chain = [None, base]
    for k, (j, A) in enumerate(links):
        first, last = k == 0, k == len(links) - 1
        X_PF = B.X_PF * Transform(A) if first else Transform(A)
        X_BM = B.X_BM * Transform(A) if last else Transform(A)
        if last:
            chain.append(BodySpec(j, len(chain) - 1, X_PF, X_BM, B.mass, B.com, B.I_C))
        else:
            chain.append(BodySpec(j, len(chain) - 1, X_PF, X_BM, 0.0, np.zeros(3), np.zeros((3, 3))))
    n_B = len(chain) - 1
    chain.append(BodySpec("Pin", n_B, child.X_PF, child.X_BM, child.mass, child.com, child.I_C))
    model_C = build(chain, gravity=G, discrete_forces=True)
    return model_J, model_C, (2, 3), (n_B, n_B + 1)


@pytest.mark.parametrize("joint", sorted(EQUIVALENCES))
@settings(max_examples=12)
@given(seed=SEEDS)
def test_compound_mobilizer_equals_chain_of_simple_ones(joint, seed):
    """Same q and u (permuted) in J and in its chain of Pins/Sliders with massless links give the
    same poses, velocities and accelerations of B and of its child, and the same udot, under
    gravity, mobility forces and body forces."""
    rng = np.random.default_rng(seed)
    model_J, model_C, (b_J, c_J), (b_C, c_C) = twin_models(rng, joint)
    _, perm_q, perm_u = EQUIVALENCES[joint]
    sJ, sC = new_state(model_J), new_state(model_C)
    base_q, base_u = random_q(rng, "Free", 7), rng.uniform(-1, 1, 6)
    qJ, uJ = random_q(rng, joint, len(perm_q)), rng.uniform(-1.5, 1.5, len(perm_u))
    q_child, u_child = rng.uniform(-1, 1, 1), rng.uniform(-1, 1, 1)
    # Forces: one on each mobility of J (mapped like u), the child's hinge, and body forces on B.
    fJ, f_child = rng.uniform(-2, 2, len(perm_u)), rng.uniform(-2, 2, 1)
    F_B, F_child = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))

    for model, s, b, c, q, u, f in ((model_J, sJ, b_J, c_J, qJ, uJ, fJ),
                                     (model_C, sC, b_C, c_C, qJ[perm_q], uJ[perm_u], fJ[perm_u])):
        mob = model.mobods
        mob[1].set_q(s, base_q)
        mob[1].set_u(s, base_u)
        mob[c].set_q(s, q_child)
        mob[c].set_u(s, u_child)
        # The compound's coordinates: spread over the chain's links in order.
        i0 = 2
        qa = ua = 0
        for mb in mob[i0:c]:
            nq, nu = mb.get_num_q(s), mb.get_num_u(s)
            mb.set_q(s, q[qa:qa + nq])
            mb.set_u(s, u[ua:ua + nu])
            for k in range(nu):
                model.discrete.set_one_mobility_force(s, mb, k, f[ua + k])
            qa, ua = qa + nq, ua + nu
        assert (qa, ua) == (len(q), len(u))
        model.discrete.set_one_mobility_force(s, mob[c], 0, f_child[0])
        model.system.realize(s, Stage.Position)
        F = np.zeros((model.nb, 2, 3))
        F[b], F[c] = F_B, F_child
        model.discrete.set_all_body_forces(s, F)
        model.system.realize(s, Stage.Acceleration)

    dyn_tol = tol(np.linalg.cond(model_J.matter.calc_m(sJ)), SWEEP_MARGIN)
    for (mJ, mC) in ((model_J.mobods[b_J], model_C.mobods[b_C]), (model_J.mobods[c_J], model_C.mobods[c_C])):
        XJ, XC = mJ.get_body_transform(sJ), mC.get_body_transform(sC)
        assert rel_err(XC.R.matrix, XJ.R.matrix) < TOL
        assert rel_err(XC.p, XJ.p) < TOL
        assert rel_err(mC.get_body_velocity(sC), mJ.get_body_velocity(sJ)) < TOL
        assert rel_err(mC.get_body_acceleration(sC), mJ.get_body_acceleration(sJ)) < dyn_tol
    udot_J = np.array(sJ.get_udot())
    udot_C = np.array(sC.get_udot())
    n = len(perm_u)
    assert rel_err(udot_C[:6], udot_J[:6]) < dyn_tol                       # the Free base
    assert rel_err(udot_C[6:6 + n], udot_J[6:6 + n][perm_u]) < dyn_tol     # J's mobilities
    assert rel_err(udot_C[-1], udot_J[-1]) < dyn_tol                       # the child's hinge


def test_massless_chain_alone_is_refused_with_a_clear_error():
    """A massless body with no massive body outboard of it has a singular articulated inertia:
    realizing Acceleration raises naming the body, rather than returning NaN."""
    rng = np.random.default_rng(3)
    specs = [None, BodySpec("Pin", 0, random_transform(rng), random_transform(rng), 0.0, np.zeros(3),
                            np.zeros((3, 3)))]
    model = build(specs, gravity=G)
    state = new_state(model)
    with pytest.raises(FloatingPointError, match="Pin #1"):
        model.system.realize(state, Stage.Acceleration)


# ---------------------------------------------------------------------- fitting
def one_body(rng, joint, euler=False):
    spec = BodySpec(joint, 0, random_transform(rng), random_transform(rng), 1.5, rng.uniform(-0.3, 0.3, 3),
                    random_central_inertia(rng, 1.5), joint_params(rng, joint))
    model = build([None, spec])
    state = new_state(model, euler)
    return model, state, model.mobods[1]


def _fit_q_round_trip(joint, euler, seed):
    rng = np.random.default_rng(seed)
    model, state, mb = one_body(rng, joint, euler)
    mb.set_q(state, random_q(rng, joint, mb.get_num_q(state), euler))
    model.system.realize(state, Stage.Position)
    X_FM = mb.get_mobilizer_transform(state)
    mb.set_q(state, random_q(rng, joint, mb.get_num_q(state), euler))  # somewhere else
    mb.set_q_to_fit_transform(state, X_FM)
    model.system.realize(state, Stage.Position)
    X = mb.get_mobilizer_transform(state)
    assert X.R.is_same_rotation(X_FM.R, FIT_TOL)
    assert rel_err(X.p, X_FM.p) < FIT_TOL


@pytest.mark.parametrize("joint, euler", [(j, False) for j in ALL_JOINTS if j != "SphericalCoords"] +
                         [(j, True) for j in ALL_JOINTS if j in QUATERNION_JOINTS])
@settings(max_examples=10)
@given(seed=SEEDS)
def test_set_q_to_fit_transform_round_trips(joint, euler, seed):
    """For an X_FM the mobilizer can reach (its own X_FM(q) at a random q), set_q_to_fit_transform
    finds coordinates reproducing it exactly (the coordinates themselves may differ, e.g. the
    quaternion's sign)."""
    _fit_q_round_trip(joint, euler, seed)


@pytest.mark.parametrize("q_true, q_start", [
    ([0.9, 0.45, 0.3], [0.9 - np.pi, -0.45, 0.3]),   # (az + pi, -ze, t) has the same translation
    ([0.7, 0.4, 0.0], [0.0, 0.0, 0.0]),              # t = 0: the translation says nothing of az, ze
])
def test_set_q_to_fit_transform_spherical_coords_keeps_the_rotation(q_true, q_start):
    """SphericalCoords has R_FM = Rz(az) Ry(ze) and p_FM = t (R_FM z): a reachable X_FM fixes az,
    ze from the rotation (the translation alone cannot: (az + pi, -ze) gives the same p_FM, and
    t = 0 gives none), so the fit must reproduce the rotation too, whatever q it starts from."""
    rng = np.random.default_rng(0)
    model, state, mb = one_body(rng, "SphericalCoords")
    mb.set_q(state, q_true)
    model.system.realize(state, Stage.Position)
    X_FM = mb.get_mobilizer_transform(state)
    mb.set_q(state, q_start)
    mb.set_q_to_fit_transform(state, X_FM)
    model.system.realize(state, Stage.Position)
    X = mb.get_mobilizer_transform(state)
    assert rel_err(X.p, X_FM.p) < FIT_TOL
    assert X.R.is_same_rotation(X_FM.R, FIT_TOL)


@pytest.mark.parametrize("joint", [j for j in ALL_JOINTS if j != "Weld"])
@settings(max_examples=12)
@given(seed=SEEDS, euler=st.booleans())
def test_set_u_to_fit_velocity_round_trips(joint, seed, euler):
    """A V_FM the mobilizer produces (get_mobilizer_velocity at random u) is fitted back to the
    same u by set_u_to_fit_velocity."""
    rng = np.random.default_rng(seed)
    model, state, mb = one_body(rng, joint, euler)
    mb.set_q(state, random_q(rng, joint, mb.get_num_q(state), euler))
    u = rng.uniform(-1, 1, mb.get_num_u(state))
    mb.set_u(state, u)
    model.system.realize(state, Stage.Velocity)
    V_FM = np.array(mb.get_mobilizer_velocity(state))
    mb.set_u(state, np.zeros(len(u)))
    model.system.realize(state, Stage.Position)
    mb.set_u_to_fit_velocity(state, V_FM)
    assert rel_err(mb.get_u(state), u) < FIT_TOL


def test_fitting_keeps_what_a_pin_or_slider_can_represent():
    """An unreachable X_FM or V_FM is projected: a Pin keeps the rotation about z (and w_z), a
    Slider the translation along x (and v_x), as in Simbody."""
    rng = np.random.default_rng(5)
    model, state, pin = one_body(rng, "Pin")
    model.system.realize(state, Stage.Position)
    X = Transform(Rotation(0.7, "z") * Rotation(0.1, "x"), [0.3, -0.2, 0.5])
    pin.set_q_to_fit_transform(state, X)
    # not round-off: the projected angle of Rz(0.7) Rx(0.1) is near 0.7, not equal to it
    assert pin.get_angle(state) == pytest.approx(0.7, abs=0.02)
    pin.set_q_to_fit_transform(state, Transform(Rotation(-1.1, "z"), [1.0, 2.0, 3.0]))
    # reachable rotations: an angle back from its cosine and sine (a few flops on the angle's scale)
    assert abs(pin.get_angle(state) + 1.1) <= tol(1.1, 64)
    model.system.realize(state, Stage.Position)  # fitting u needs H_FM at the current q
    pin.set_u_to_fit_velocity(state, [[0.1, -0.2, 0.9], [1.0, 2.0, 3.0]])
    assert abs(pin.get_rate(state) - 0.9) <= tol(3.0, 64)  # a projection of V_FM (entries up to 3)

    model, state, slider = one_body(rng, "Slider")
    model.system.realize(state, Stage.Position)
    slider.set_q_to_fit_transform(state, Transform(Rotation(0.4, "y"), [0.25, 7.0, -3.0]))
    assert abs(slider.get_length(state) - 0.25) <= tol(7.0, 64)  # a projection of p_FM (entries up to 7)
    model.system.realize(state, Stage.Position)
    slider.set_u_to_fit_velocity(state, [[0.1, -0.2, 0.9], [-1.5, 2.0, 3.0]])
    assert abs(slider.get_rate(state) + 1.5) <= tol(3.0, 64)
