"""Coordinate-level constraints on the q of Custom mobilizers (issue 29).

A coordinate row q_i has the velocity row qdot_i = (N u)_i, so G's entries over the body's speeds are
row i of the mobilizer's N (its ``multiply_by_n_matrix``) and the acceleration row reads qdotdot_i =
(N udot + NDot u)_i. They used to be refused ("not supported yet"). Checked here by independent means:

* twins: a Custom pin with qdot = u against the built-in Pin, and the circling pin of
  ``tests/circle_pin.py`` (u = 2 qdot, N = 1/2) against a built-in Pin whose M frame is offset by L on the
  body (the same motion with the same q, u scaled by 2): the same constraint on the same q gives the same
  accelerations (udot scaled), qdotdot and multipliers to round-off;
* for N != I, finite differences along the motion: pverr = d/dt perr and aerr = d/dt (pverr, verr); and
  ``check_constraint`` on the constraints that do not depend on time;
* a simulation without projection: the position errors stay at their initial value to the
  integrator's accuracy (a wrong N row in G would make the constrained accelerations violate them);
* projection (dq = N du) moves the Custom body's q too; the Assembler (lock_q and goals) with a coupler.
"""
from __future__ import annotations

import numpy as np
import pytest
from circle_pin import CirclePin, L

from simtk import (
    Assembler,
    Body,
    Constraint,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    QValue,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper
from simtk.testing import check_constraint
from tolerances import EPS, max_abs_diff, scale_of, tol

BODY = Body.Rigid(MassProperties(1.3, [0.1, -0.2, 0.05], Inertia([0.4, 0.5, 0.3])))
X_PF = Transform(Rotation(0.4, "x"), [0.1, 0.2, 0.0])
#: A constrained solve on a three-body chain through two routes: a few hundred flops times the condition
#: of G M^-1 G^T (order one here).
MARGIN = 4096
#: Central differences with step H: truncation O(H^2) times third derivatives of order one, plus
#: round-off EPS / H on values of order one.
H = 1e-5
FD_ATOL = 1e-7


class ZPin(MobilizedBody.Custom.Implementation):
    """A pin about z written in Python, qdot = u (the default N = I)."""

    def __init__(self, matter):
        super().__init__(matter, 1, 1, 1)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"), [0.0, 0.0, 0.0])

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0.0, 0.0, u[0]], [0.0, 0.0, 0.0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[0][2]])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class RatioPin(MobilizedBody.Custom.Implementation):
    """A pin about z whose speed is u = (1 + q^2) qdot: N = 1 / (1 + q^2) depends on q, so NDot =
    -2 q qdot / (1 + q^2)^2 is not zero and enters qdotdot = N udot + NDot u (its twin: the built-in Pin,
    u_pin = N u)."""

    def __init__(self, matter):
        super().__init__(matter, 1, 1, 1)

    def _n(self, state) -> float:
        return 1.0 / (1.0 + float(self.get_q(state)[0]) ** 2)

    def _ndot(self, state) -> float:
        q = float(self.get_q(state)[0])
        return -2.0 * q * float(self.get_qdot(state)[0]) / (1.0 + q * q) ** 2

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"), [0.0, 0.0, 0.0])

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0.0, 0.0, self._n(state) * u[0]], [0.0, 0.0, 0.0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([self._n(state) * F[0][2]])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.array([[0.0, 0.0, self._ndot(state) * u[0]], [0.0, 0.0, 0.0]])

    def multiply_by_h_dot_transpose(self, state, F):
        return np.array([self._ndot(state) * F[0][2]])

    def multiply_by_n_matrix(self, state, transpose, v):
        return self._n(state) * np.asarray(v, dtype=float)

    def multiply_by_n_inv_matrix(self, state, transpose, v):
        return np.asarray(v, dtype=float) / self._n(state)

    def multiply_by_n_dot_matrix(self, state, transpose, v):
        return self._ndot(state) * np.asarray(v, dtype=float)


# "pin" and "zpin" are twins with the same u; "circle" and "circle_ref" twins with u_circle = 2 u_ref.
SCALE = {"pin": 1.0, "zpin": 1.0, "circle": 2.0, "circle_ref": 1.0}
TWINS = [("zpin", "pin"), ("circle", "circle_ref")]


def add_constraint(kind: str, matter, first, second):
    """The constraint ``kind`` on the first body's q (and the second's); returns it (or the Motion)."""
    if kind == "coupler":  # 2 q1 - q2 + 0.1 = 0
        return Constraint.CoordinateCoupler(matter, Function.Linear([2.0, -1.0, 0.1]), [first, second], [0, 0])
    if kind == "nonlinear coupler":  # q1^2 + q2 - 0.3 = 0 (a quadratic: f's Hessian enters aerr)
        return Constraint.CoordinateCoupler(matter, _Quadratic(), [first, second], [0, 0])
    if kind == "constant":
        return Constraint.ConstantCoordinate(first, 0, 0.35)
    if kind == "prescribed":
        return Constraint.PrescribedMotion(matter, Function.Sinusoid(0.3, 2.0, 0.1), first, 0)
    if kind == "motion":
        return Motion.Sinusoid(first, Motion.Level.Position, 0.3, 2.0, 0.1)
    if kind == "speed coupler":  # u2 - 0.5 q1 = 0: a coordinate argument of a nonholonomic equation
        return Constraint.SpeedCoupler(matter, Function.Linear([1.0, -0.5, 0.0]), [second], [0], [first], [0])
    raise ValueError(kind)


class _Quadratic(Function):
    """f(x, y) = x^2 + y - 0.3 (derivatives up to order 2)."""

    def calc_value(self, x):
        return float(x[0] ** 2 + x[1] - 0.3)

    def calc_derivative(self, deriv_components, x):
        d = tuple(deriv_components)
        if d == (0,):
            return float(2.0 * x[0])
        if d == (1,):
            return 1.0
        if d == (0, 0):
            return 2.0
        return 0.0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return 2


KINDS = ["coupler", "nonlinear coupler", "constant", "prescribed", "motion", "speed coupler"]


def chain(model: str, kind: str | None):
    """Ground -> first (a Pin, a Custom ZPin, a CirclePin, or the Pin offset by L that moves as it) -> Pin
    -> Pin under gravity, with constraint ``kind``."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    if model == "pin":
        first = MobilizedBody.Pin(matter.ground, X_PF, BODY, Transform())
    elif model == "zpin":
        first = MobilizedBody.Custom(matter.ground, X_PF, BODY, Transform(), ZPin(matter))
    elif model == "circle":
        first = MobilizedBody.Custom(matter.ground, X_PF, BODY, Transform(), CirclePin(matter))
    elif model == "ratio":
        first = MobilizedBody.Custom(matter.ground, X_PF, BODY, Transform(), RatioPin(matter))
    else:  # M at -L along B's x: B's origin is L (cos q, sin q, 0) from F's origin, as the CirclePin's
        first = MobilizedBody.Pin(matter.ground, X_PF, BODY, Transform([-L, 0.0, 0.0]))
    second = MobilizedBody.Pin(first, Transform(Rotation(0.3, "y"), [0.2, 0.3, 0.0]), BODY,
                               Transform([0.0, -0.4, 0.1]))
    MobilizedBody.Pin(second, Transform([0.0, -0.5, 0.2]), BODY, Transform([0.1, 0.3, 0.0]))
    element = add_constraint(kind, matter, first, second) if kind else None
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    return system, matter, first, element, state


def put(state, model: str, q, u, t: float = 0.37) -> None:
    """The same motion in each model: the first u is SCALE times the built-in's."""
    state.set_time(t)
    state.upd_q()[:] = q
    state.upd_u()[:] = u
    state.upd_u()[0] = (1.0 + q[0] ** 2 if model == "ratio" else SCALE[model]) * u[0]


Q = np.array([0.6, -0.4, 0.9])
U = np.array([1.7, -0.8, 1.1])


# ---------------------------------------------------------------------------------------------- twins
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("custom, ref", TWINS, ids=["N = I vs Pin", "N = 1/2 vs offset Pin"])
def test_constrained_accelerations_and_multipliers_equal_the_builtin_twins(custom, ref, kind):
    """The same equation on the same q: udot (in the built-in's units), qdotdot, the multipliers and the
    constraint errors of the Custom model are the built-in twin's to round-off (the multipliers are equal
    because the constraint force is the same physical force: G's row scales with N, the power with u)."""
    out = {}
    for model in (custom, ref):
        system, matter, first, element, state = chain(model, kind)
        put(state, model, Q, U)
        system.realize(state, Stage.Acceleration)
        udot = state.get_udot().copy()
        udot[0] /= SCALE[model]
        out[model] = dict(udot=udot, qdd=state.get_qdotdot().copy(), lam=state.get_multipliers().copy(),
                          errs=np.r_[state.get_q_err(), state.get_u_err(), state.get_udot_err()])
    assert len(out[custom]["lam"]) == len(out[ref]["lam"]) >= 1
    for key in ("udot", "qdd", "lam", "errs"):
        a, b = out[custom][key], out[ref][key]
        scale = scale_of(a, b, U ** 2, 9.8)
        assert max_abs_diff(a, b) <= tol(scale, MARGIN), (key, a, b)
    # the constraint holds at these accelerations (the equation's own acceleration error)
    assert max_abs_diff(out[custom]["errs"][-len(out[custom]["lam"]):], 0.0) <= tol(scale_of(U ** 2, 9.8), MARGIN)


@pytest.mark.parametrize("kind", KINDS)
def test_a_mobilizer_with_ndot_equals_the_builtin_pin(kind):
    """RatioPin (N = 1/(1 + q^2), NDot != 0) against the built-in Pin moving the same way (u_pin = N u):
    qdotdot (which carries NDot u), the other bodies' udot and the multipliers are equal to round-off."""
    out = {}
    for model in ("ratio", "pin"):
        system, matter, first, element, state = chain(model, kind)
        put(state, model, Q, U)
        system.realize(state, Stage.Acceleration)
        out[model] = (state.get_qdotdot().copy(), state.get_udot()[1:].copy(), state.get_multipliers().copy())
    for a, b in zip(out["ratio"], out["pin"]):
        assert max_abs_diff(a, b) <= tol(scale_of(a, b, U ** 2, 9.8), MARGIN), (kind, a, b)


@pytest.mark.parametrize("level", [Motion.Level.Position, Motion.Level.Velocity, Motion.Level.Acceleration])
@pytest.mark.parametrize("custom, ref", TWINS, ids=["N = I vs Pin", "N = 1/2 vs offset Pin"])
def test_locks_at_every_level_equal_the_builtin_twins(custom, ref, level):
    """lock() at each level on the Custom body, beside a coupler on its q: the accelerations are the
    built-in twin's, and so are the constraint forces G^T lambda (the first scaled as u: f u is the power)."""
    out = {}
    for model in (custom, ref):
        system, matter, first, _, state = chain(model, "coupler")
        put(state, model, Q, U)
        first.lock(state, level)
        system.realize(state, Stage.Acceleration)
        udot = state.get_udot().copy()
        udot[0] /= SCALE[model]
        f = matter.multiply_by_g_transpose(state, state.get_multipliers())  # the lock's and the coupler's
        f[0] *= SCALE[model]
        out[model] = (udot, state.get_qdotdot().copy(), f, state.get_u() / [SCALE[model], 1, 1])
    for a, b in zip(out[custom], out[ref]):
        assert max_abs_diff(a, b) <= tol(scale_of(a, b, U ** 2, 9.8), MARGIN), (a, b)


# ---------------------------------------------------------------------------------------------- N != I by derivatives
def _moved(system, state, h: float, stage):
    """A copy moved by h along the realized motion: t + h, q + h qdot, u + h udot."""
    s = state.copy()
    s.set_time(state.get_time() + h)
    s.upd_q()[:] = state.get_q() + h * state.get_qdot()
    s.upd_u()[:] = state.get_u() + h * state.get_udot()
    system.realize(s, stage)
    return s


@pytest.mark.parametrize("model", ["circle", "ratio"])
@pytest.mark.parametrize("kind", KINDS)
def test_errors_are_time_derivatives_of_each_other_when_qdot_is_not_u(kind, model):
    """On the CirclePin (N = 1/2) and the RatioPin (NDot != 0), at a State that violates the constraint: the velocity errors of the
    position equations are d/dt of their position errors, the acceleration errors d/dt of the velocity
    errors (central differences along q + h qdot, u + h udot, t + h)."""
    system, matter, first, element, state = chain(model, kind)
    put(state, model, Q, U)
    system.realize(state, Stage.Acceleration)
    mp = state.get_nq_err()
    sp, sm = _moved(system, state, H, Stage.Velocity), _moved(system, state, -H, Stage.Velocity)
    if mp:
        fd = (sp.get_q_err() - sm.get_q_err()) / (2 * H)
        assert max_abs_diff(state.get_u_err()[:mp], fd) <= FD_ATOL, (state.get_u_err(), fd)
        assert abs(fd[0]) > 1e3 * FD_ATOL  # the check is not vacuous: the errors move
    fd = (sp.get_u_err() - sm.get_u_err()) / (2 * H)
    nv = state.get_nu_err()
    assert max_abs_diff(state.get_udot_err()[:nv], fd) <= FD_ATOL, (state.get_udot_err(), fd)


@pytest.mark.parametrize("kind", ["coupler", "nonlinear coupler", "constant", "speed coupler"])
@pytest.mark.parametrize("model", ["circle", "ratio", "zpin"])
def test_check_constraint_on_custom_mobilizers(model, kind):
    """simtk.testing.check_constraint (errors as derivatives, G against d(verr)/du, G^T lambda against the
    force routines) passes on constraints on a Custom mobilizer's q."""
    system, matter, first, element, state = chain(model, kind)
    put(state, model, Q, U)
    check_constraint(element, state, assert_ok=True)


def test_calc_g_rows_are_n_rows_on_the_circling_pin():
    """G's row of the coupler 2 q1 - q2 + 0.1 over (u1, u2, u3): (2 N, -1, 0) = (1, -1, 0) with N = 1/2, both
    from the force routines (G^T) and from the acceleration-error routines (calc_g)."""
    system, matter, first, element, state = chain("circle", "coupler")
    put(state, "circle", Q, U)
    system.realize(state, Stage.Velocity)
    expected = np.array([[1.0, -1.0, 0.0]])
    assert max_abs_diff(matter.calc_g(state), expected) <= tol(1.0, 16)
    assert max_abs_diff(matter.calc_g_transpose(state).T, expected) <= tol(1.0, 16)


# ---------------------------------------------------------------------------------------------- simulation, projection
def satisfied_state(system, matter, state, model: str):
    put(state, model, Q, U)
    system.project(state, 1e-12)
    system.realize(state, Stage.Velocity)
    return state


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled loop", "python loop"])
@pytest.mark.parametrize("kind", ["coupler", "nonlinear coupler", "prescribed", "motion", "speed coupler"])
@pytest.mark.parametrize("model", ["circle", "ratio"])
def test_constraint_is_kept_along_a_simulation_without_projection(model, kind, compiled):
    """CirclePin (N = 1/2) and RatioPin (NDot != 0): from a projected State, 0.5 s at accuracy 1e-10 with a constraint tolerance so
    loose that no projection runs: the position and velocity errors stay at their (zero) start to the
    integrator's accuracy; the first body turns (the constraint is not trivially kept)."""
    system, matter, first, element, state = chain(model, kind)
    satisfied_state(system, matter, state, model)
    start = np.r_[state.get_q_err(), state.get_u_err()]
    assert max_abs_diff(start, 0.0) <= 1e-10
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    integ.set_constraint_tolerance(1.0)
    integ.set_use_compiled_loop(compiled)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(state.get_time() + 0.5)
    s = ts.get_state()
    system.realize(s, Stage.Velocity)
    assert integ.get_num_projections() == 0
    assert max_abs_diff(np.r_[s.get_q_err(), s.get_u_err()], start) <= 1e-7
    assert abs(s.get_q()[0] - state.get_q()[0]) > 1e-2


def test_compiled_and_python_loops_agree_bitwise():
    """The compiled loop (the fused realization calls the matter's Python constraint solve) and the Python
    loop take the same steps on a CirclePin model with a coupler on its q."""
    runs = []
    for compiled in (True, False):
        system, matter, first, element, state = chain("circle", "coupler")
        satisfied_state(system, matter, state, "circle")
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-6)
        integ.set_use_compiled_loop(compiled)
        ts = TimeStepper(system, integ)
        ts.initialize(state)
        ts.step_to(state.get_time() + 0.3)
        runs.append((ts.get_state().get_y().copy(), integ.get_num_steps_taken()))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


@pytest.mark.parametrize("kind", ["coupler", "nonlinear coupler", "constant"])
def test_projection_moves_the_custom_coordinate(kind):
    """project(): Newton steps dq = N du, with the Custom body's rows of N: the errors go to the accuracy
    asked, and the Custom body's q moved (it carries most of the least-norm step: its N is 1/2)."""
    system, matter, first, element, state = chain("circle", kind)
    put(state, "circle", Q, U)
    system.realize(state, Stage.Position)
    assert abs(state.get_q_err()[0]) > 0.1
    system.project(state, 1e-10)
    system.realize(state, Stage.Position)
    assert max_abs_diff(state.get_q_err(), 0.0) <= 1e-10
    assert abs(state.get_q()[0] - Q[0]) > 1e-3


def test_assembler_with_a_coupler_on_the_circling_pin():
    """lock_q on the CirclePin's q: the coupler 2 q1 - q2 + 0.1 = 0 is met by q2 = 2 q1 + 0.1 (closed
    form); then with q1 free and a QValue goal on it, q1 reaches the goal and q2 follows."""
    system, matter, first, element, state = chain("circle", "coupler")
    put(state, "circle", Q, U)
    asm = Assembler(system).set_accuracy(1e-12)
    asm.lock_q(first, 0)
    asm.assemble(state)
    q = state.get_q()
    assert q[0] == Q[0]
    assert abs(q[1] - (2 * Q[0] + 0.1)) <= 1e-10
    asm.unlock_q(first, 0)
    asm.adopt_assembly_goal(QValue(first, 0, -0.25))
    asm.assemble(state)
    q = state.get_q()
    assert abs(q[0] + 0.25) <= 1e-5
    assert abs(q[1] - (2 * q[0] + 0.1)) <= 1e-10


# ---------------------------------------------------------------------------------------------- paths that refuse
def test_compiled_rows_refuse_coordinates_of_python_mobilizers():
    """The compiled loop's coordinate rows evaluate N by joint type: a plan with a Custom body's coordinate
    is left to the Python solve, and the reason names the body."""
    from simtk.multibody.constraints._compiled import loop_constraints_spec

    system, matter, first, element, state = chain("circle", "coupler")
    system.realize(state, Stage.Instance)
    spec, why = loop_constraints_spec(matter, matter._cache(state).plan)
    assert spec is None and repr(first) in why and "N" in why
    system, matter, first, element, state = chain("circle_ref", "coupler")
    system.realize(state, Stage.Instance)
    spec, why = loop_constraints_spec(matter, matter._cache(state).plan)
    assert spec is not None and why is None


def test_batch_refuses_the_custom_mobilizer_by_name():
    """The batched kernels have no Custom rows: a model with a coupler on a Custom body is refused, naming it."""
    system, matter, first, element, state = chain("circle", "coupler")
    system.realize(state, Stage.Instance)
    with pytest.raises(NotImplementedError, match="Custom mobilizer"):
        matter.calc_udot_batch(Q[None, :], U[None, :], state=state)


def test_margins_are_round_off():
    assert tol(10.0, MARGIN) < 1e-10 and FD_ATOL > 10 * EPS / H
