"""MobilizedBody.FunctionBased (seed §3.4): function-based twins of the built-ins move as the built-ins
do, the seed's two-coordinate example has its closed-form motion, H and HDot agree with finite
differences of the transform for coupled spline joints, and bad arguments get clear errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_custom_mobilizers import (
    TRAJECTORY_ATOL,
    TWIN_KINDS,
    TWIN_MARGIN,
    assert_same,
    builtin_first,
    builtin_state,
    gimbal_hw,
    kinematics,
    simulate,
    twin_mechanism,
)

from simtk import (
    Body,
    Function,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from tolerances import assert_close, scale_of, tol

C0 = lambda: Function.Constant(0.0, 0)  # noqa: E731
IDENTITY = lambda: Function.Linear([1.0, 0.0])  # noqa: E731
UNIT_BODY = Body.Rigid(MassProperties(1.0, [0.1, -0.2, 0.05], Inertia([1.0, 1.3, 0.8])))

#: For each built-in: which of the six functions (0-2 rotations about X, Y, Z; 3-5 translations)
#: is the identity of which coordinate. Ball and Free become body-fixed X-Y-Z angles.
SLOTS = {"Pin": {2: 0}, "Slider": {3: 0}, "Universal": {0: 0, 1: 1}, "Cylinder": {2: 0, 5: 1},
         "Planar": {2: 0, 3: 1, 4: 2}, "Gimbal": {0: 0, 1: 1, 2: 2}, "Translation": {3: 0, 4: 1, 5: 2},
         "Ball": {0: 0, 1: 1, 2: 2}, "Free": {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5}}


def function_based_first(kind):
    slots = SLOTS[kind]

    def make(matter, parent, X_PF, body, X_BM):
        functions = [IDENTITY() if k in slots else C0() for k in range(6)]
        indices = [[slots[k]] if k in slots else [] for k in range(6)]
        return MobilizedBody.FunctionBased(parent, X_PF, body, X_BM, len(slots), functions, indices)

    return make


def twin_coordinates(kind, qa, ua):
    """The function-based twin's q and u for the built-in's (closed forms: angles of the quaternion,
    angle rates Hw(q)^-1 w for the rotations; the other kinds share their coordinates)."""
    if kind not in ("Ball", "Free"):
        return qa, ua
    angles = Rotation.from_quaternion(qa[:4]).to_body_fixed_xyz()
    rates = np.linalg.solve(gimbal_hw(angles), ua[:3])
    return np.concatenate([angles, qa[4:]]), np.concatenate([rates, ua[3:]])


def _twins(kind):
    sys1, _, a1, b1 = twin_mechanism(kind, builtin_first(kind))
    s1, qa, ua, qb, ub = builtin_state(sys1, a1, b1)
    sys2, _, a2, b2 = twin_mechanism(kind, function_based_first(kind))
    s2 = sys2.realize_topology()
    q2, u2 = twin_coordinates(kind, qa, ua)
    a2.set_q(s2, q2)
    a2.set_u(s2, u2)
    b2.set_q(s2, qb)
    b2.set_u(s2, ub)
    return (sys1, s1, [a1, b1]), (sys2, s2, [a2, b2])


@pytest.mark.parametrize("kind", TWIN_KINDS)
def test_function_based_twin_kinematics_equal_the_builtin(kind):
    """Equivalent coordinates: the same X_GB, V_GB and A_GB as the built-in (to round-off)."""
    (sys1, s1, m1), (sys2, s2, m2) = _twins(kind)
    assert_same(kinematics(sys1, s1, m1), kinematics(sys2, s2, m2), kind, margin=TWIN_MARGIN)


@pytest.mark.parametrize("kind", TWIN_KINDS)
def test_function_based_twin_trajectory_equals_the_builtin(kind):
    """After 1 s of motion under gravity the body poses and velocities agree to 1e-8."""
    (sys1, s1, m1), (sys2, s2, m2) = _twins(kind)
    e1, e2 = simulate(sys1, s1), simulate(sys2, s2)
    k1 = {"X_GB": np.array([m.get_body_transform(e1).matrix34() for m in m1]),
          "V_GB": np.array([m.get_body_velocity(e1) for m in m1])}
    k2 = {"X_GB": np.array([m.get_body_transform(e2).matrix34() for m in m2]),
          "V_GB": np.array([m.get_body_velocity(e2) for m in m2])}
    assert_same(k1, k2, kind, atol=TRAJECTORY_ATOL)


def _single(functions, indices, n, axes=None, X_PF=None, X_BM=None):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = MobilizedBody.FunctionBased(matter.ground, UNIT_BODY, n, functions, indices, axes=axes, X_PF=X_PF,
                                       X_BM=X_BM)
    return system, matter, body


def test_seed_example_translation_along_x_and_rotation_about_y():
    """Seed §3.4: q0 turns about Y, q1 slides along X: X_FM = (Ry(q0), (q1, 0, 0)), V_FM = ((0, u0, 0), (u1, 0, 0))."""
    functions = [C0(), Function.Linear([1, 0]), C0(), Function.Linear([1, 0]), C0(), C0()]
    indices = [[], [0], [], [1], [], []]
    system, matter, body = _single(functions, indices, 2)
    state = system.realize_topology()
    body.set_q(state, [0.7, -0.3])
    body.set_u(state, [1.5, 2.0])
    system.realize(state, Stage.Acceleration)
    X = body.get_mobilizer_transform(state)
    # a rotation of 0.7 rad and a translation of 0.3 through one linear function each: a few flops
    assert X.is_same_transform(Transform(Rotation(0.7, "y"), [-0.3, 0, 0]), tol(1.0, 64), tol(1.0, 64))
    assert_close(body.get_mobilizer_velocity(state), [[0, 1.5, 0], [2.0, 0, 0]], margin=64, scale=2.0, what="V_FM")
    np.testing.assert_array_equal(state.get_qdot(), state.get_u())
    np.testing.assert_array_equal(state.get_qdotdot(), state.get_udot())


def test_rotation_about_a_given_axis_is_a_pin_with_turned_frames():
    """A rotation about axis a equals a Pin whose F and M frames are turned so that their z is a."""
    z = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    x = np.cross([0, 1, 0], z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R_turn = Rotation.from_matrix(np.column_stack([x, y, z]))  # F' = F turned so that z' = a
    axes = [z, x, y, [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    functions = [IDENTITY(), C0(), C0(), C0(), C0(), C0()]
    sys_fb, _, fb = _single(functions, [[0], [], [], [], [], []], 1, axes=axes)
    sys_pin = MultibodySystem()
    matter = SimbodyMatterSubsystem(sys_pin)
    pin = MobilizedBody.Pin(matter.ground, Transform(R_turn), UNIT_BODY, Transform(R_turn))
    s1, s2 = sys_fb.realize_topology(), sys_pin.realize_topology()
    for s, mb in ((s1, fb), (s2, pin)):
        mb.set_q(s, [0.9])
        mb.set_u(s, [-1.7])
    k1, k2 = kinematics(sys_fb, s1, [fb]), kinematics(sys_pin, s2, [pin])
    assert_same(k1, k2, "turned axis", margin=TWIN_MARGIN)


class _Bilinear(Function):
    """f(x, y) = c x y + x^2 / 2: a two-argument function with a full Hessian."""

    def __init__(self, c):
        self.c = c

    def calc_value(self, x):
        return self.c * x[0] * x[1] + 0.5 * x[0] ** 2

    def calc_derivative(self, comps, x):
        if len(comps) == 1:
            return self.c * x[1] + x[0] if comps[0] == 0 else self.c * x[0]
        if len(comps) == 2:
            return 1.0 if comps == (0, 0) else (self.c if comps[0] != comps[1] else 0.0)
        return 0.0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return 3


def coupled_joint():
    """Two coordinates: every function active, a spline knee-like coupling, a bilinear function fed
    the coordinates in reverse order, and non-orthogonal axes."""
    xs = np.linspace(-2.0, 2.0, 9)
    functions = [Function.Spline(xs, 0.3 * np.sin(xs)), Function.Linear([1.0, 0.5, 0.1]),
                 _Bilinear(0.7), Function.Spline(xs, 0.05 * xs ** 2), Function.Linear([0.2, 0.0]),
                 Function.Spline(xs, 0.1 * np.cos(xs))]
    indices = [[0], [0, 1], [1, 0], [0], [1], [1]]
    axes = [[1, 0, 0], [0.2, 1, 0], [0, 0.3, 1], [1, 0.1, 0], [0, 1, 0], [0.1, 0, 1]]
    return functions, indices, axes


def _rotvec_from_skew(W):
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


@settings(max_examples=15)
@given(q=st.lists(st.floats(-1.5, 1.5), min_size=2, max_size=2), u=st.lists(st.floats(-2, 2), min_size=2,
                                                                              max_size=2))
def test_h_and_hdot_agree_with_finite_differences_of_the_transform(q, u):
    """V_FM = d/dt X_FM along qdot = u, and A_FM = d/dt V_FM along (u, udot), by central differences
    (the body is attached to Ground with identity frames, so A_GB is the mobilizer's acceleration)."""
    functions, indices, axes = coupled_joint()
    system, matter, body = _single(functions, indices, 2, axes=axes)
    state = system.realize_topology()
    q, u = np.array(q), np.array(u)
    body.set_q(state, q)
    body.set_u(state, u)
    system.realize(state, Stage.Acceleration)
    V = body.get_mobilizer_velocity(state).copy()
    A = body.get_body_acceleration(state).copy()
    udot = body.get_udot(state).copy()
    h = 1e-5  # central differences: truncation ~h^2, round-off ~EPS/h; the atol below are theirs

    def at(qq, uu, stage):
        s = system.realize_topology()
        body.set_q(s, qq)
        body.set_u(s, uu)
        system.realize(s, stage)
        return s

    sp, sm = at(q + h * u, u + h * udot, Stage.Velocity), at(q - h * u, u - h * udot, Stage.Velocity)
    Xp, Xm = body.get_mobilizer_transform(sp), body.get_mobilizer_transform(sm)
    R = body.get_mobilizer_transform(state).R.matrix
    w_fd = _rotvec_from_skew((Xp.R.matrix - Xm.R.matrix) / (2 * h) @ R.T)
    v_fd = (Xp.p - Xm.p) / (2 * h)
    scale = 1 + np.abs(V).max()
    np.testing.assert_allclose(V, [w_fd, v_fd], atol=1e-7 * scale)
    A_fd = (body.get_mobilizer_velocity(sp) - body.get_mobilizer_velocity(sm)) / (2 * h)
    np.testing.assert_allclose(A, A_fd, atol=1e-6 * (1 + np.abs(A).max()))


def test_implementation_methods_agree_with_the_realized_rows():
    """The generic Custom interface of the implementation (used by fitting and checkers) gives the
    same H, H^T (as the transpose of H) and HDot as the fast per-stage path."""
    functions, indices, axes = coupled_joint()
    system, matter, body = _single(functions, indices, 2, axes=axes)
    impl = body.get_implementation()
    state = system.realize_topology()
    body.set_q(state, [0.4, -0.9])
    body.set_u(state, [1.1, 0.6])
    system.realize(state, Stage.Acceleration)
    u = body.get_u(state)
    # Each product is a few flops per entry on two routes; the scale is that of its terms: H's columns
    # (and HDot's) times the vector's largest entry.
    F = np.array([[0.3, -1.0, 2.0], [0.5, 0.1, -0.7]])
    H = impl.calc_h_columns(state).reshape(2, 6)
    HD = np.stack([impl.multiply_by_h_dot_matrix(state, e) for e in np.eye(2)]).reshape(2, 6)
    assert_close(impl.multiply_by_h_matrix(state, u), body.get_mobilizer_velocity(state), margin=64,
                 scale=scale_of(H) * scale_of(u), what="H u")
    assert_close(impl.multiply_by_h_transpose(state, F), H @ F.reshape(6), margin=64, scale=scale_of(H) * scale_of(F),
                 what="H^T F")
    # A_GB = H udot + HDot u for a body on Ground with identity frames.
    A = body.get_body_acceleration(state)
    HDu = impl.multiply_by_h_dot_matrix(state, u)
    udot = body.get_udot(state)
    assert_close(A, impl.multiply_by_h_matrix(state, udot) + HDu, margin=64,
                 scale=scale_of(H) * scale_of(udot) + scale_of(HD) * scale_of(u), what="H udot + HDot u")
    assert_close(impl.multiply_by_h_dot_transpose(state, F), HD @ F.reshape(6), margin=64,
                 scale=scale_of(HD) * scale_of(F), what="HDot^T F")


def test_fit_recovers_the_coordinates_of_a_coupled_joint():
    """set_q_to_fit_transform finds q whose X_FM is the target; set_u_to_fit_velocity inverts H."""
    functions, indices, axes = coupled_joint()
    system, matter, body = _single(functions, indices, 2, axes=axes)
    target_state = system.realize_topology()
    body.set_q(target_state, [0.5, -0.4])
    body.set_u(target_state, [0.8, -1.2])
    system.realize(target_state, Stage.Velocity)
    X, V = body.get_mobilizer_transform(target_state), body.get_mobilizer_velocity(target_state).copy()
    state = system.realize_topology()
    body.set_q(state, [0.4, -0.3])  # a nearby starting guess
    body.set_q_to_fit_transform(state, X)
    # the fit's least squares runs to its tightest stopping tests on a zero-residual problem: q to round-off of ~1
    assert_close(body.get_q(state), [0.5, -0.4], margin=2**10, scale=1.0, what="fitted q")
    body.set_u_to_fit_velocity(state, V)
    assert_close(body.get_u(state), [0.8, -1.2], margin=2**10, scale=1.0, what="fitted u")  # a 6x2 lstsq


def test_knee_from_splines_conserves_energy():
    """A one-coordinate knee (rotation and translations from splines) swinging under gravity keeps
    its total energy to the integrator's accuracy: H and HDot are consistent with the transform."""
    from simtk import Force, GeneralForceSubsystem

    angles = np.linspace(-2.2, 0.3, 12)
    functions = [C0(), C0(), IDENTITY(), Function.Spline(angles, 0.01 * np.sin(2 * angles)),
                 Function.Spline(angles, -0.4 + 0.005 * angles ** 2), C0()]
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    thigh = MobilizedBody.Pin(matter.ground, UNIT_BODY)
    shank = MobilizedBody.FunctionBased(thigh, UNIT_BODY, 1, functions, [[], [], [0], [0], [0], []])
    state = system.realize_topology()
    thigh.set_q(state, [0.3])
    shank.set_q(state, [-0.8])
    shank.set_u(state, [2.0])
    system.realize(state, Stage.Velocity)
    e0 = system.calc_energy(state)
    end = simulate(system, state, 1.0, 1e-9)
    assert abs(system.calc_energy(end) - e0) < 1e-6 * (1 + abs(e0))  # integration error at accuracy 1e-9


def test_state_copies_keep_their_own_scratch():
    """Two States of one system realize independently (per-State scratch, not per body)."""
    functions, indices, axes = coupled_joint()
    system, matter, body = _single(functions, indices, 2, axes=axes)
    s1 = system.realize_topology()
    body.set_q(s1, [0.2, 0.3])
    body.set_u(s1, [1.0, -1.0])
    system.realize(s1, Stage.Position)
    s2 = s1.copy()
    body.set_q(s2, [-0.5, 0.9])
    system.realize(s2, Stage.Position)
    system.realize(s1, Stage.Acceleration)  # s1's velocity must use s1's Position results
    ref = system.realize_topology()
    body.set_q(ref, [0.2, 0.3])
    body.set_u(ref, [1.0, -1.0])
    system.realize(ref, Stage.Acceleration)
    np.testing.assert_array_equal(body.get_body_acceleration(s1), body.get_body_acceleration(ref))


@pytest.mark.parametrize("change, error, words", [
    (dict(functions=[C0()] * 5), ValueError, "needs 6 functions"),
    (dict(indices=[[0], [], [], [], [], [2]]), ValueError, "coord_indices[5] has 2"),
    (dict(functions=[C0(), C0(), IDENTITY(), C0(), C0(), C0()], indices=[[], [], [0], [], [], []]), ValueError,
     "coordinate 1 is passed to no function"),
    (dict(indices=[[0, 1], [], [], [], [], [1]]), ValueError, "takes 1 argument"),
    (dict(axes=[[1, 0, 0], [2, 0, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]), ValueError, "parallel"),
    (dict(axes=[[0, 0, 0]] * 6), ValueError, "is zero"),
    (dict(n=0), ValueError, "n_mobilities"),
    (dict(functions=[IDENTITY(), C0(), C0(), C0(), C0(), "sin"]), TypeError, "functions[5]"),
])
def test_construction_errors(change, error, words):
    args = dict(functions=[IDENTITY(), C0(), C0(), C0(), C0(), IDENTITY()], indices=[[0], [], [], [], [], [1]], n=2,
                axes=None)
    args.update(change)
    with pytest.raises(error) as info:
        _single(args["functions"], args["indices"], args["n"], axes=args["axes"])
    assert words in str(info.value)
