"""MobilizedBody.Custom (seed §3.5): closed-form Custom twins of the built-in mobilizers move exactly
as the built-ins do, the seed's CustomTranslation equals Translation, and a faulty implementation
gets a clear error.

The twins here are written as a user would, from the joint definitions (Simbody's meanings of q and
u); the built-ins they are compared with are compiled kernels, an independent implementation."""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
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
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper
from tolerances import assert_close, max_abs_diff, scale_of, tol

#: Round-off margin for two routes to the same kinematics and forward dynamics of a two-body chain
#: (a Custom twin's X_FM, H, HDot and N by its own formulas versus the built-in's): a few hundred flops.
TWIN_MARGIN = 256
#: Agreement after 1 s of simulation at accuracy 1e-10: integration error, not round-off.
TRAJECTORY_ATOL = 1e-8

Impl = MobilizedBody.Custom.Implementation
ZERO = np.zeros((2, 3))


def _spatial(w, v) -> np.ndarray:
    return np.array([w, v], dtype=float)


# ------------------------------------------------------------------------------- closed-form twins
class PinTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 1, 1, 1)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"))

    def multiply_by_h_matrix(self, state, u):
        return _spatial([0, 0, u[0]], [0, 0, 0])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[0][2]])

    def multiply_by_h_dot_matrix(self, state, u):
        return ZERO.copy()

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class SliderTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 1, 1, 0)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform([q[0], 0, 0])

    def multiply_by_h_matrix(self, state, u):
        return _spatial([0, 0, 0], [u[0], 0, 0])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[1][0]])

    def multiply_by_h_dot_matrix(self, state, u):
        return ZERO.copy()

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class UniversalTwin(Impl):
    """R = Rx(q0) Ry(q1); w = x qdot0 + Rx(q0) y qdot1."""

    def __init__(self, matter):
        super().__init__(matter, 2, 2, 2)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "x") * Rotation(q[1], "y"))

    def _h(self, state):
        c0, s0 = np.cos(self.get_q(state)[0]), np.sin(self.get_q(state)[0])
        return np.array([[1, 0], [0, c0], [0, s0]])

    def _hdot(self, state):
        q, u = self.get_q(state), self.get_u(state)
        c0, s0 = np.cos(q[0]), np.sin(q[0])
        return np.array([[0, 0], [0, -s0 * u[0]], [0, c0 * u[0]]])

    def multiply_by_h_matrix(self, state, u):
        return _spatial(self._h(state) @ u, [0, 0, 0])

    def multiply_by_h_transpose(self, state, F):
        return self._h(state).T @ np.asarray(F)[0]

    def multiply_by_h_dot_matrix(self, state, u):
        return _spatial(self._hdot(state) @ u, [0, 0, 0])

    def multiply_by_h_dot_transpose(self, state, F):
        return self._hdot(state).T @ np.asarray(F)[0]


class CylinderTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 2, 2, 1)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"), [0, 0, q[1]])

    def multiply_by_h_matrix(self, state, u):
        return _spatial([0, 0, u[0]], [0, 0, u[1]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[0][2], F[1][2]])

    def multiply_by_h_dot_matrix(self, state, u):
        return ZERO.copy()

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(2)


class PlanarTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 3, 3, 1)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"), [q[1], q[2], 0])

    def multiply_by_h_matrix(self, state, u):
        return _spatial([0, 0, u[0]], [u[1], u[2], 0])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[0][2], F[1][0], F[1][1]])

    def multiply_by_h_dot_matrix(self, state, u):
        return ZERO.copy()

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)


def gimbal_hw(q) -> np.ndarray:
    """w_FM = Hw(q) qdot for body-fixed X-Y-Z angles: [x | Rx(q0) y | Rx(q0) Ry(q1) z]."""
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    return np.array([[1, 0, s1], [0, c0, -s0 * c1], [0, s0, c0 * c1]])


def gimbal_hw_dot(q, qd) -> np.ndarray:
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    return np.array([[0, 0, c1 * qd[1]],
                     [0, -s0 * qd[0], -c0 * c1 * qd[0] + s0 * s1 * qd[1]],
                     [0, c0 * qd[0], -s0 * c1 * qd[0] - c0 * s1 * qd[1]]])


class GimbalTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 3, 3, 3)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation.from_body_fixed_xyz(q))

    def multiply_by_h_matrix(self, state, u):
        return _spatial(gimbal_hw(self.get_q(state)) @ u, [0, 0, 0])

    def multiply_by_h_transpose(self, state, F):
        return gimbal_hw(self.get_q(state)).T @ np.asarray(F)[0]

    def _hd(self, state):
        return gimbal_hw_dot(self.get_q(state), self.get_u(state))

    def multiply_by_h_dot_matrix(self, state, u):
        return _spatial(self._hd(state) @ u, [0, 0, 0])

    def multiply_by_h_dot_transpose(self, state, F):
        return self._hd(state).T @ np.asarray(F)[0]


class CustomTranslation(Impl):
    """The seed's example (§3.5), line for line."""

    def __init__(self, matter):
        super().__init__(matter, 3, 3, 0)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform([q[0], q[1], q[2]])

    def multiply_by_h_matrix(self, state, u):
        return _spatial([0, 0, 0], [u[0], u[1], u[2]])

    def multiply_by_h_transpose(self, state, F):
        return np.array(F[1], dtype=float)

    def multiply_by_h_dot_matrix(self, state, u):
        return _spatial([0, 0, 0], [0, 0, 0])

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)

    def set_q_to_fit_transform(self, state, X_FM, q):
        q[:] = X_FM.p

    def set_u_to_fit_velocity(self, state, V_FM, u):
        u[:] = V_FM[1]


def quaternion_e(q) -> np.ndarray:
    """E(q) (4, 3) with qdot = 1/2 E(q) w for w expressed in F: E = [-v^T ; q0 1 - [v x]]."""
    q0, x, y, z = q
    return np.array([[-x, -y, -z], [q0, z, -y], [-z, q0, x], [y, -x, q0]])


class BallTwin(Impl):
    """Quaternion coordinates, u = w_FM in F: qdot != u, so N, N^-1 and NDot are given."""

    def __init__(self, matter):
        super().__init__(matter, 3, 4, 0)

    def get_default_q(self):
        return np.array([1.0, 0, 0, 0])

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation.from_quaternion(np.asarray(q) / np.linalg.norm(q)))

    def multiply_by_h_matrix(self, state, u):
        return _spatial(u, [0, 0, 0])

    def multiply_by_h_transpose(self, state, F):
        return np.array(F[0], dtype=float)

    def multiply_by_h_dot_matrix(self, state, u):
        return ZERO.copy()

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)

    def multiply_by_n_matrix(self, state, transpose, v):
        E = 0.5 * quaternion_e(self.get_q(state))
        return E.T @ v if transpose else E @ v

    def multiply_by_n_inv_matrix(self, state, transpose, v):
        Einv = 2.0 * quaternion_e(self.get_q(state)).T
        return Einv.T @ v if transpose else Einv @ v

    def multiply_by_n_dot_matrix(self, state, transpose, v):
        q = self.get_q(state)
        qdot = 0.5 * quaternion_e(q) @ self.get_u(state)
        Ed = 0.5 * quaternion_e(qdot)
        return Ed.T @ v if transpose else Ed @ v

    def set_q_to_fit_transform(self, state, X_FM, q):
        q[:] = X_FM.R.to_quaternion()

    def set_u_to_fit_velocity(self, state, V_FM, u):
        u[:] = V_FM[0]


class FreeTwin(BallTwin):
    """Quaternion then p_FM; u = (w_FM, v_FM) in F, so H = 1 and HDot = 0."""

    def __init__(self, matter):
        Impl.__init__(self, matter, 6, 7, 0)

    def get_default_q(self):
        return np.array([1.0, 0, 0, 0, 0, 0, 0])

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation.from_quaternion(np.asarray(q[:4]) / np.linalg.norm(q[:4])), q[4:])

    def multiply_by_h_matrix(self, state, u):
        return np.array(u, dtype=float).reshape(2, 3)

    def multiply_by_h_transpose(self, state, F):
        return np.array(F, dtype=float).reshape(6)

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(6)

    def _n(self, state, which):
        q = self.get_q(state)
        N = np.zeros((7, 6))
        if which == "n":
            N[:4, :3] = 0.5 * quaternion_e(q[:4])
        elif which == "dot":
            N[:4, :3] = 0.5 * quaternion_e(0.5 * quaternion_e(q[:4]) @ self.get_u(state)[:3])
            return N
        N[4:, 3:] = np.eye(3)
        return N

    def multiply_by_n_matrix(self, state, transpose, v):
        N = self._n(state, "n")
        return N.T @ v if transpose else N @ v

    def multiply_by_n_inv_matrix(self, state, transpose, v):
        Ninv = np.zeros((6, 7))
        Ninv[:3, :4] = 2.0 * quaternion_e(self.get_q(state)[:4]).T
        Ninv[3:, 4:] = np.eye(3)
        return Ninv.T @ v if transpose else Ninv @ v

    def multiply_by_n_dot_matrix(self, state, transpose, v):
        Nd = self._n(state, "dot")
        return Nd.T @ v if transpose else Nd @ v

    def set_q_to_fit_transform(self, state, X_FM, q):
        q[:4] = X_FM.R.to_quaternion()
        q[4:] = X_FM.p

    def set_u_to_fit_velocity(self, state, V_FM, u):
        u[:] = np.asarray(V_FM).reshape(6)


CUSTOM_TWINS = {"Pin": PinTwin, "Slider": SliderTwin, "Universal": UniversalTwin, "Cylinder": CylinderTwin,
                "Planar": PlanarTwin, "Gimbal": GimbalTwin, "Translation": CustomTranslation, "Ball": BallTwin,
                "Free": FreeTwin}
TWIN_KINDS = tuple(CUSTOM_TWINS)


# ------------------------------------------------------------------------------- twin mechanisms
def random_transform(rng) -> Transform:
    q = rng.normal(size=4)
    return Transform(Rotation.from_quaternion(q / np.linalg.norm(q)), rng.uniform(-0.5, 0.5, 3))


def random_body(rng) -> Body:
    return Body.Rigid(MassProperties(rng.uniform(0.5, 2.0), rng.uniform(-0.3, 0.3, 3),
                                     Inertia(rng.uniform(0.8, 1.2, 3), rng.uniform(-0.1, 0.1, 3))))


def twin_mechanism(kind: str, make_first, seed: int = 0):
    """Ground -(kind or its twin)-> A -Pin-> B under gravity, with random frames and masses.

    ``make_first(matter, parent, X_PF, body, X_BM)`` makes the first mobilized body."""
    rng = np.random.default_rng(seed)
    frames = [random_transform(rng) for _ in range(4)]
    bodies = [random_body(rng) for _ in range(2)]
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0.3, -1, 0.2], 9.8)
    a = make_first(matter, matter.ground, frames[0], bodies[0], frames[1])
    b = MobilizedBody.Pin(a, frames[2], bodies[1], frames[3])
    return system, matter, a, b


def builtin_first(kind):
    return lambda matter, parent, X_PF, body, X_BM: getattr(MobilizedBody, kind)(parent, X_PF, body, X_BM)


def custom_first(kind):
    return lambda matter, parent, X_PF, body, X_BM: MobilizedBody.Custom(parent, X_PF, body, X_BM,
                                                                         CUSTOM_TWINS[kind](matter))


def builtin_state(system, a, b, seed: int = 1):
    """A random state of the built-in mechanism: (state, q_A, u_A, q_B, u_B)."""
    rng = np.random.default_rng(seed)
    state = system.realize_topology()
    q = rng.uniform(-0.6, 0.6, a.get_num_q(state))
    if len(q) in (4, 7):  # Ball, Free: a unit quaternion first
        q[:4] = rng.normal(size=4)
        q[:4] /= np.linalg.norm(q[:4])
    qa, ua = q, rng.uniform(-1, 1, a.get_num_u(state))
    qb, ub = rng.uniform(-1, 1, 1), rng.uniform(-1, 1, 1)
    a.set_q(state, qa)
    a.set_u(state, ua)
    b.set_q(state, qb)
    b.set_u(state, ub)
    return state, qa, ua, qb, ub


def kinematics(system, state, bodies) -> dict:
    system.realize(state, Stage.Acceleration)
    return {"X_GB": np.array([m.get_body_transform(state).matrix34() for m in bodies]),
            "V_GB": np.array([m.get_body_velocity(state) for m in bodies]),
            "A_GB": np.array([m.get_body_acceleration(state) for m in bodies])}


def simulate(system, state, t_final: float = 1.0, accuracy: float = 1e-10):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(t_final)
    out = ts.get_state()
    system.realize(out, Stage.Velocity)
    return out


def assert_same(k1: dict, k2: dict, what: str, *, margin: float | None = None, atol: float | None = None) -> None:
    """Each array of ``k1`` equals that of ``k2``: to ``margin`` EPS of its own scale (round-off of
    two computations of the same quantity), or to ``atol`` (a method's error, e.g. an integration).
    The accelerations' terms include the velocity products (w x v, w x w x r, lengths ~1), so their
    scale is at least |V|^2: an acceleration that cancels to zero is compared at that scale."""
    assert (margin is None) != (atol is None), "give either a round-off margin or a method's atol"
    for key in k1:
        err = max_abs_diff(k1[key], k2[key])
        scale = scale_of(k1[key], k2[key])
        if key == "A_GB" and "V_GB" in k1:
            scale = max(scale, scale_of(k1["V_GB"], k2["V_GB"]) ** 2)
        bound = atol if margin is None else tol(scale, margin)
        assert err <= bound, f"{what}: {key} differs by {err:.3g} (> {bound:.3g})"


# ------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", TWIN_KINDS)
def test_custom_twin_kinematics_equal_the_builtin(kind):
    """Same q and u: the Custom twin and the built-in give the same X_GB, V_GB and A_GB (to round-off)."""
    sys1, _, a1, b1 = twin_mechanism(kind, builtin_first(kind))
    s1, qa, ua, qb, ub = builtin_state(sys1, a1, b1)
    sys2, _, a2, b2 = twin_mechanism(kind, custom_first(kind))
    s2 = sys2.realize_topology()
    a2.set_q(s2, qa)
    a2.set_u(s2, ua)
    b2.set_q(s2, qb)
    b2.set_u(s2, ub)
    assert_same(kinematics(sys1, s1, [a1, b1]), kinematics(sys2, s2, [a2, b2]), kind, margin=TWIN_MARGIN)
    assert_close(s2.get_qdotdot(), s1.get_qdotdot(), margin=TWIN_MARGIN, what="qdotdot")
    assert_close(s2.get_qdot(), s1.get_qdot(), margin=64, what="qdot")  # N u: a few flops


@pytest.mark.parametrize("kind", TWIN_KINDS)
def test_custom_twin_trajectory_equals_the_builtin(kind):
    """After 1 s of free motion under gravity the twin and the built-in agree to 1e-8."""
    sys1, _, a1, b1 = twin_mechanism(kind, builtin_first(kind))
    s1, qa, ua, qb, ub = builtin_state(sys1, a1, b1)
    sys2, _, a2, b2 = twin_mechanism(kind, custom_first(kind))
    s2 = sys2.realize_topology()
    for mb, v in ((a2, qa), (b2, qb)):
        mb.set_q(s2, v)
    for mb, v in ((a2, ua), (b2, ub)):
        mb.set_u(s2, v)
    e1, e2 = simulate(sys1, s1), simulate(sys2, s2)
    assert e1.get_time() == 1.0 and e2.get_time() == 1.0  # steps land exactly on the final time
    k1 = {"X_GB": np.array([m.get_body_transform(e1).matrix34() for m in (a1, b1)]),
          "V_GB": np.array([m.get_body_velocity(e1) for m in (a1, b1)])}
    k2 = {"X_GB": np.array([m.get_body_transform(e2).matrix34() for m in (a2, b2)]),
          "V_GB": np.array([m.get_body_velocity(e2) for m in (a2, b2)])}
    assert_same(k1, k2, kind, atol=TRAJECTORY_ATOL)


def test_seed_custom_translation_equals_translation():
    """Seed §3.5: CustomTranslation behaves as MobilizedBody.Translation, fits included."""
    sys1, _, a1, b1 = twin_mechanism("Translation", builtin_first("Translation"), seed=7)
    s1, qa, ua, qb, ub = builtin_state(sys1, a1, b1, seed=8)
    sys2, _, a2, b2 = twin_mechanism("Translation", custom_first("Translation"), seed=7)
    s2 = sys2.realize_topology()
    sys1.realize(s1, Stage.Velocity)
    a2.set_q_to_fit_transform(s2, a1.get_mobilizer_transform(s1))
    a2.set_u_to_fit_velocity(s2, a1.get_mobilizer_velocity(s1))
    b2.set_q(s2, qb)
    b2.set_u(s2, ub)
    np.testing.assert_array_equal(a2.get_q(s2), qa)
    np.testing.assert_array_equal(a2.get_u(s2), ua)
    assert_same(kinematics(sys1, s1, [a1, b1]), kinematics(sys2, s2, [a2, b2]), "CustomTranslation",
                margin=TWIN_MARGIN)


def test_a_custom_body_can_be_the_child_of_a_custom_body():
    """Two Custom Balls in a chain move as two built-in Balls (the twins' rows don't interfere)."""
    def chain(make):
        system = MultibodySystem()
        matter = SimbodyMatterSubsystem(system)
        forces = GeneralForceSubsystem(system)
        Force.Gravity(forces, matter, [0, -1, 0], 9.8)
        rng = np.random.default_rng(3)
        a = make(matter, matter.ground, random_transform(rng), random_body(rng), random_transform(rng))
        b = make(matter, a, random_transform(rng), random_body(rng), random_transform(rng))
        return system, [a, b]

    sys1, m1 = chain(builtin_first("Ball"))
    sys2, m2 = chain(custom_first("Ball"))
    s1, s2 = sys1.realize_topology(), sys2.realize_topology()
    rng = np.random.default_rng(4)
    for x, y in zip(m1, m2):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        u = rng.normal(size=3)
        x.set_q(s1, q), y.set_q(s2, q), x.set_u(s1, u), y.set_u(s2, u)
    assert_same(kinematics(sys1, s1, m1), kinematics(sys2, s2, m2), "two Balls", margin=TWIN_MARGIN)


class ScaledSlider(Impl):
    """A slider whose length per unit q is a discrete variable of its own (state of its own)."""

    def __init__(self, matter):
        super().__init__(matter, 1, 1, 0)
        self.calls = {"topology": 0, "position": 0}

    def realize_topology(self, state):
        self.calls["topology"] += 1
        self.scale_index = self.get_matter_subsystem().allocate_discrete_variable(state, Stage.Position, 1.0)

    def realize_position(self, state):
        self.calls["position"] += 1

    def scale(self, state):
        return self.get_matter_subsystem().get_discrete_variable(state, self.scale_index)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform([self.scale(state) * q[0], 0, 0])

    def multiply_by_h_matrix(self, state, u):
        return _spatial([0, 0, 0], [self.scale(state) * u[0], 0, 0])

    def multiply_by_h_transpose(self, state, F):
        return np.array([self.scale(state) * F[1][0]])

    def multiply_by_h_dot_matrix(self, state, u):
        return ZERO.copy()

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


def test_custom_mobilizer_with_state_of_its_own():
    """A discrete variable allocated by the implementation scales the motion; changing it
    invalidates Position, and the position hook runs once per realization."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    impl = ScaledSlider(matter)
    body = MobilizedBody.Custom(matter.ground, Body.Rigid(MassProperties(1, [0, 0, 0], Inertia(1))), impl)
    state = system.realize_topology()
    body.set_q(state, [0.5])
    body.set_u(state, [2.0])
    system.realize(state, Stage.Velocity)
    assert impl.calls["position"] == 1
    # identity frames and unit-free scalings: products with 1 and 0, and 3 * 0.5, 3 * 2, are exact
    np.testing.assert_array_equal(body.get_body_origin_location(state), [0.5, 0, 0])
    matter.set_discrete_variable(state, impl.scale_index, 3.0)
    assert state.get_system_stage() < Stage.Position
    system.realize(state, Stage.Velocity)
    assert impl.calls["position"] == 2
    np.testing.assert_array_equal(body.get_body_origin_location(state), [1.5, 0, 0])
    np.testing.assert_array_equal(body.get_body_origin_velocity(state), [6.0, 0, 0])
    copy = state.copy()
    system.realize(copy, Stage.Velocity)
    np.testing.assert_array_equal(body.get_body_origin_location(copy), [1.5, 0, 0])


def test_default_fits_of_a_custom_mobilizer():
    """Without fit overrides, q and u are fitted numerically: X_FM(q_fit) equals the target."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = MobilizedBody.Custom(matter.ground, Body.Rigid(MassProperties(1, [0, 0, 0], Inertia(1))),
                                GimbalTwin(matter))
    state = system.realize_topology()
    target = Transform(Rotation.from_body_fixed_xyz([0.3, -0.4, 1.1]))
    body.set_q_to_fit_transform(state, target)
    system.realize(state, Stage.Position)
    # the fit's least squares runs to its tightest stopping tests on a zero-residual problem: it stops at the round-off
    # of the residual, angles of ~1 rad (and no translation)
    assert body.get_mobilizer_transform(state).is_same_transform(target, tol(1.0, 2**10), tol(1.0, 2**10))
    V = _spatial([0.2, -0.7, 1.3], [0, 0, 0])
    body.set_u_to_fit_velocity(state, V)
    system.realize(state, Stage.Velocity)
    # a 6x3 least-squares solve with H (unit columns), then H u again
    assert_close(body.get_mobilizer_velocity(state), V, margin=256, scale=scale_of(V), what="fitted velocity")


def test_euler_angle_mode_leaves_custom_coordinates_alone():
    """Switching the matter to Euler angles changes the built-in Ball's q, not a Custom's."""
    sys2, matter, a2, b2 = twin_mechanism("Ball", custom_first("Ball"))
    state = sys2.realize_topology()
    matter.set_use_euler_angles(state, True)
    sys2.realize(state, Stage.Model)
    assert a2.get_num_q(state) == 4 and a2.get_num_u(state) == 3
    np.testing.assert_array_equal(a2.get_q(state), [1, 0, 0, 0])


# ------------------------------------------------------------------------------- errors
class _NoN(Impl):
    def __init__(self, matter):
        super().__init__(matter, 3, 4, 0)


class _Broken(PinTwin):
    def __init__(self, matter, fault):
        super().__init__(matter)
        self.fault = fault

    def calc_mobilizer_transform_from_q(self, state, q):
        if self.fault == "type":
            return np.eye(4)
        return super().calc_mobilizer_transform_from_q(state, q)

    def multiply_by_h_matrix(self, state, u):
        if self.fault == "shape":
            return np.zeros(6)
        if self.fault == "nan":
            return _spatial([0, 0, np.nan], [0, 0, 0])
        return super().multiply_by_h_matrix(state, u)


def _one_body(impl_factory):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    MobilizedBody.Custom(matter.ground, Body.Rigid(MassProperties(1, [0, 0, 0], Inertia(1))), impl_factory(matter))
    return system


@pytest.mark.parametrize("fault, error, words", [("type", TypeError, "must return a Transform"),
                                                 ("shape", ValueError, "(2, 3)"),
                                                 ("nan", FloatingPointError, "non-finite H")])
def test_faulty_implementations_get_clear_errors(fault, error, words):
    system = _one_body(lambda m: _Broken(m, fault))
    state = system.realize_topology()
    with pytest.raises(error, match=None) as info:
        system.realize(state, Stage.Position)
    assert words in str(info.value) and "_Broken" in str(info.value)


def test_construction_errors():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = Body.Rigid(MassProperties(1, [0, 0, 0], Inertia(1)))
    with pytest.raises(ValueError, match="multiply_by_n_matrix"):
        MobilizedBody.Custom(matter.ground, body, _NoN(matter))
    with pytest.raises(TypeError, match="Implementation"):
        MobilizedBody.Custom(matter.ground, body)
    with pytest.raises(ValueError, match="nu = 7"):
        PinTwin.__bases__[0](matter, 7, 7, 0)
    impl = PinTwin(matter)
    MobilizedBody.Custom(matter.ground, body, impl)
    with pytest.raises(ValueError, match="already belongs"):
        MobilizedBody.Custom(matter.ground, body, impl)
    other = SimbodyMatterSubsystem(MultibodySystem())
    with pytest.raises(ValueError, match="belongs to .*, not to this System"):
        MobilizedBody.Custom(matter.ground, body, PinTwin(other))
    with pytest.raises(NotImplementedError, match="reversed"):
        MobilizedBody.Custom(matter.ground, Transform(), body, Transform(), PinTwin(matter),
                             direction=MobilizedBody.Reverse)


# ------------------------------------------------------------------------------- reversed mobilizers
REVERSIBLE = ("Pin", "Slider", "Screw", "Universal", "Cylinder", "BendStretch", "Planar", "Gimbal", "Translation",
              "Ball", "Free", "Bushing", "SphericalCoords", "Ellipsoid", "LineOrientation", "FreeLine")


def _extra(kind):
    return {"Screw": (0.2,), "Ellipsoid": (np.array([0.5, 0.7, 0.9]),)}.get(kind, ())


@pytest.mark.parametrize("euler", [False, True])
@pytest.mark.parametrize("kind", REVERSIBLE)
def test_reversed_transform_is_the_inverse_of_the_forward_one(kind, euler):
    """Same q: X_FM of the reversed mobilizer is the inverse of the forward one's (Simbody's definition),
    and its H, HDot and N agree with finite differences of that transform (simtk.testing)."""
    from simtk.testing import check_mobilizer

    rng = np.random.default_rng(11)
    X1, X2 = random_transform(rng), random_transform(rng)
    body = random_body(rng)
    out = {}
    for direction in (MobilizedBody.Forward, MobilizedBody.Reverse):
        system = MultibodySystem()
        matter = SimbodyMatterSubsystem(system)
        forces = GeneralForceSubsystem(system)
        Force.Gravity(forces, matter, [0, -1, 0], 9.8)
        a = getattr(MobilizedBody, kind)(matter.ground, X1, body, X2, *_extra(kind), direction=direction)
        MobilizedBody.Pin(a, X2, body, X1)
        state = system.realize_topology()
        matter.set_use_euler_angles(state, euler)
        system.realize(state, Stage.Model)
        r = np.random.default_rng(1)
        q = a.get_q(state) + r.uniform(-0.5, 0.5, a.get_num_q(state))
        if kind in ("Ball", "Free", "Ellipsoid", "LineOrientation", "FreeLine") and not euler:
            q[:4] /= np.linalg.norm(q[:4])
        a.set_q(state, q)
        a.set_u(state, r.uniform(-1, 1, a.get_num_u(state)))
        system.realize(state, Stage.Acceleration)
        out[direction] = (a, state)
    (fa, fs), (ra, rs) = out[MobilizedBody.Forward], out[MobilizedBody.Reverse]
    assert ra.is_reversed() and not fa.is_reversed()
    X_rev, X_inv = ra.get_mobilizer_transform(rs).matrix34(), (~fa.get_mobilizer_transform(fs)).matrix34()
    assert_close(X_rev, X_inv, margin=64, scale=scale_of(X_rev, X_inv), what="reversed X_FM")  # one inversion
    np.testing.assert_array_equal(ra.get_qdot(rs), fa.get_qdot(fs))
    check_mobilizer(ra, rs, assert_ok=True)


def _two_bodies(kind, reverse: bool, seed: int = 21):
    """Two bodies A and B joined by ``kind`` (F on A, M on B), floating. Forward tree: Ground -Free-> A
    -kind-> B. Reverse tree: Ground -Free-> B -kind(Reverse)-> A, the joint's frames unchanged, so its q
    and u mean the same in both trees."""
    rng = np.random.default_rng(seed)
    X_AF, X_BM = random_transform(rng), random_transform(rng)
    body_a, body_b = random_body(rng), random_body(rng)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0.2, -1, 0.1], 9.8)
    if not reverse:
        a = MobilizedBody.Free(matter.ground, body_a)
        b = getattr(MobilizedBody, kind)(a, X_AF, body_b, X_BM, *_extra(kind))
        joint = b
    else:
        b = MobilizedBody.Free(matter.ground, body_b)
        a = getattr(MobilizedBody, kind)(b, X_BM, body_a, X_AF, *_extra(kind), direction=MobilizedBody.Reverse)
        joint = a
    return system, a, b, joint


@pytest.mark.parametrize("kind", ["Pin", "Slider", "Universal", "Cylinder", "Planar", "Gimbal", "Ball"])
def test_reversed_mobilizer_gives_the_motion_of_the_forward_tree(kind):
    """The same two-body mechanism built from either end (the joint reversed in the second tree, with
    the same q and u) moves identically for 1 s under gravity (1e-8)."""
    sys1, a1, b1, j1 = _two_bodies(kind, False)
    s1 = sys1.realize_topology()
    rng = np.random.default_rng(3)
    qa = rng.normal(size=4)
    a1.set_q(s1, np.r_[qa / np.linalg.norm(qa), rng.uniform(-1, 1, 3)])
    a1.set_u(s1, rng.uniform(-1, 1, 6))
    qj = j1.get_q(s1) + rng.uniform(-0.5, 0.5, j1.get_num_q(s1))
    if kind == "Ball":
        qj /= np.linalg.norm(qj)
    j1.set_q(s1, qj)
    j1.set_u(s1, rng.uniform(-1, 1, j1.get_num_u(s1)))
    sys1.realize(s1, Stage.Velocity)

    sys2, a2, b2, j2 = _two_bodies(kind, True)
    s2 = sys2.realize_topology()
    j2.set_q(s2, j1.get_q(s1))
    j2.set_u(s2, j1.get_u(s1))
    X_GB = b1.get_body_transform(s1)
    b2.set_q(s2, np.r_[X_GB.R.to_quaternion(), X_GB.p])  # Free with identity frames: q = (quaternion, p_GB)
    b2.set_u(s2, b1.get_body_velocity(s1).reshape(6))  # u = (w_GB, v_GB)
    bodies1, bodies2 = [a1, b1], [a2, b2]
    assert_same(kinematics(sys1, s1, bodies1), kinematics(sys2, s2, bodies2), f"reversed {kind} at t = 0",
                margin=TWIN_MARGIN)
    e1, e2 = simulate(sys1, s1), simulate(sys2, s2)
    k1 = {"X_GB": np.array([m.get_body_transform(e1).matrix34() for m in bodies1]),
          "V_GB": np.array([m.get_body_velocity(e1) for m in bodies1])}
    k2 = {"X_GB": np.array([m.get_body_transform(e2).matrix34() for m in bodies2]),
          "V_GB": np.array([m.get_body_velocity(e2) for m in bodies2])}
    assert_same(k1, k2, f"reversed {kind} after 1 s", atol=TRAJECTORY_ATOL)


def test_reversed_fit_and_weld():
    """set_q_to_fit_transform of a reversed mobilizer fits the inverse; a reversed Weld is a Weld."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = Body.Rigid(MassProperties(1, [0, 0, 0], Inertia(1)))
    g = MobilizedBody.Gimbal(matter.ground, Transform(), body, Transform(), direction=MobilizedBody.Reverse)
    w = MobilizedBody.Weld(g, Transform([0, 1, 0]), body, Transform(), direction=MobilizedBody.Reverse)
    state = system.realize_topology()
    target = Transform(Rotation.from_body_fixed_xyz([0.2, -0.3, 0.4]))
    g.set_q_to_fit_transform(state, target)
    system.realize(state, Stage.Position)
    # the built-in Gimbal fit is closed form (Euler angles of the inverse rotation, angles ~0.5 rad)
    assert g.get_mobilizer_transform(state).is_same_transform(target, tol(1.0, 64), tol(1.0, 64))
    assert_close(g.get_q(state), (~target).R.to_body_fixed_xyz(), margin=64, scale=1.0, what="fitted q")
    assert w.get_num_q(state) == 0 and w.get_mobilizer_transform(state).is_same_transform(Transform(), 0, 0)
