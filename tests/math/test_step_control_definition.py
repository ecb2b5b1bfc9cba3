"""Step-size control and projection against their definitions, on both time loops.

The compiled loop is tested elsewhere against the Python one, bitwise; a rule written wrongly into
both would pass that. Here every step the integrator takes is replayed from its documented
definition (``simtk/math/integrator.py``, "Accuracy"), independently of either loop:

- the method's error estimate of the step, recomputed from the step's start with the method's own
  formulas (a Runge-Kutta table, Verlet's, semi-explicit Euler's) on a separate State;
- its weighted norm: every accepted step is within the accuracy, every rejected attempt is not;
- each rejected attempt shrinks the step by ``min(0.5, max(0.1, 0.9 (acc/err)**(1/(p+1))))`` and the
  accepted one predicts the next by ``min(5, max(0.2, 0.9 (acc/err)**(1/(p+1))))``, p the method's
  minimum order;
- after each step of a constrained model the constraint errors are within the tolerance, and a
  projection leaves the largest of them within its Newton target, 1/100 of that tolerance.

The comparisons allow the round-off of recomputing the estimate (a margin times EPS times the
scale of the terms it is computed from); a wrong exponent changes the predicted step by percents.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from simtk import Stage
from simtk.math import (
    ExplicitEulerIntegrator,
    Integrator,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    SemiExplicitEuler2Integrator,
    VerletIntegrator,
)
from simtk.multibody import (
    Constraint,
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Transform
from tolerances import EPS

S = Integrator.SuccessfulStepStatus

METHODS = [ExplicitEulerIntegrator, RungeKutta2Integrator, RungeKutta3Integrator, RungeKuttaMersonIntegrator,
           RungeKuttaFeldbergIntegrator, VerletIntegrator, SemiExplicitEuler2Integrator]
LOOPS = [True, False]

#: the recomputed estimate differs from the integrator's by round-off in the terms it is made of
#: (y, and h times the stage derivatives), amplified by the derivative's sensitivity to y over a few
#: stages of a three-link chain (|df/dy| of order 100 here): 1e4 EPS of that scale
ESTIMATE_MARGIN = 1e4


def _chain(n: int = 3):
    """Links of 0.5 m and 1 kg hanging from Ground by pins, under gravity, started swinging."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent, bodies = matter.ground, []
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
        bodies.append(parent)
    return system, matter, bodies


# ------------------------------------------------------------------------------------------ the definition
class Reference:
    """The methods' steps and error estimates, computed from their formulas on a State of its own."""

    def __init__(self, system, integ):
        self.system, self.integ = system, integ
        self.scratch = system.realize_topology()
        system.realize(self.scratch, Stage.Model)
        self.nq = self.scratch.get_nq()

    def f(self, t: float, y: np.ndarray) -> np.ndarray:
        s = self.scratch
        s.set_time(t)
        s.set_y(y)
        self.system.realize(s, Stage.Acceleration)
        return s.get_ydot().copy()

    def qdot(self, t: float, y: np.ndarray) -> np.ndarray:
        s = self.scratch
        s.set_time(t)
        s.set_y(y)
        self.system.realize(s, Stage.Velocity)
        return s.get_qdot().copy()

    def qdotdot(self, t: float, y: np.ndarray) -> np.ndarray:
        self.f(t, y)
        return self.scratch.get_qdotdot().copy()

    def step(self, t0: float, y0: np.ndarray, h: float, history) -> tuple[np.ndarray, np.ndarray, float]:
        """(y1, error estimate, the scale of the terms both are computed from) of one step of size h;
        ``history``: Verlet's (previous start's ydot, previous step size), or None."""
        cls = type(self.integ)
        if cls is VerletIntegrator:
            return self._verlet(t0, y0, h, history)
        if cls is SemiExplicitEuler2Integrator:
            return self._semi_explicit(t0, y0, h)
        c, A, b, e = cls._c, cls._A, cls._b, cls._e
        K = []
        for i in range(len(c)):
            K.append(self.f(t0 + c[i] * h, y0 + h * sum((A[i][j] * K[j] for j in range(i)), np.zeros_like(y0))))
        y1 = y0 + h * sum((bi * k for bi, k in zip(b, K)), np.zeros_like(y0))
        err = h * sum(ei * k for ei, k in zip(e, K))
        return y1, err, _scale(y0, y1, h, K)

    def _semi_explicit(self, t0, y0, h):
        nq, t1 = self.nq, t0 + h
        f0 = self.f(t0, y0)
        y1 = y0 + h * f0  # u and z with their start derivatives
        y1[:nq] = y0[:nq]
        y1[:nq] = y0[:nq] + h * self.qdot(t1, y1)  # q with qdot at the new u
        f1 = self.f(t1, y1)
        err = 0.5 * h * (f1 - f0)
        err[:nq] = y1[:nq] - y0[:nq] - 0.5 * h * (f0[:nq] + f1[:nq])
        return y1, err, _scale(y0, y1, h, [f0, f1])

    def _verlet(self, t0, y0, h, history):
        nq, t1 = self.nq, t0 + h
        f0 = self.f(t0, y0)
        qdd0 = self.scratch.get_qdotdot().copy()
        y = y0 + h * f0
        y[:nq] += 0.5 * h * h * qdd0
        fp = self.f(t1, y)  # the predicted end
        y[nq:] = y0[nq:] + 0.5 * h * (f0[nq:] + fp[nq:])
        f1 = self.f(t1, y)  # the corrected end
        err = np.empty_like(y0)
        err[:nq] = y[:nq] - y0[:nq] - 0.5 * h * (f0[:nq] + f1[:nq])
        err[nq:] = 0.5 * h * np.abs(f1[nq:] - fp[nq:])
        if history is None:
            err[nq:] += 0.5 * h * np.abs(f1[nq:] - f0[nq:])
        else:
            a_prev, hp = history
            a2 = ((f1[nq:] - f0[nq:]) / h - (f0[nq:] - a_prev) / hp) * (2.0 / (h + hp))
            err[nq:] += np.abs(a2) * h ** 3 / 12.0
        return y, err, _scale(y0, y, h, [f0, fp, f1, qdd0 * h])


def _scale(y0, y1, h, K) -> float:
    return max(float(np.max(np.abs(y0))), float(np.max(np.abs(y1))), h * max(float(np.max(np.abs(k))) for k in K))


def error_norm(err, y0, y1, w) -> float:
    """The documented accuracy measure: RMS of w |e| / max(1, w max(|y0|, |y1|))."""
    s = w * np.abs(err) / np.maximum(1.0, w * np.maximum(np.abs(y0), np.abs(y1)))
    return math.sqrt(float(np.mean(s * s)))


def growth(acc: float, err: float, p: int) -> float:
    """The documented factor of the next step after an accepted one."""
    return 5.0 if err == 0 else min(5.0, max(0.2, 0.9 * (acc / err) ** (1.0 / (p + 1))))


def shrink(acc: float, err: float, p: int) -> float:
    """The documented factor of the next attempt after a rejected one."""
    return min(0.5, max(0.1, 0.9 * (acc / err) ** (1.0 / (p + 1))))


def _weights(system, state) -> np.ndarray:
    return np.concatenate([system.calc_q_weights(state), system.calc_u_weights(state), system.calc_z_weights(state)])


# ------------------------------------------------------------------------------------------ step-size control
@pytest.mark.parametrize("compiled", LOOPS, ids=["compiled loop", "Python loop"])
@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.__name__)
def test_every_step_follows_the_documented_step_size_control(cls, compiled):
    """Kills the exponent 1/p in place of 1/(p+1) (in either loop, or both), and any other change of
    the accept/reject test or of the growth and shrink factors."""
    system, matter, bodies = _chain()
    acc = 1e-5
    integ = cls(system)
    integ.set_accuracy(acc)
    integ.set_return_every_internal_step(True)
    integ.set_use_compiled_loop(compiled)
    state = system.realize_topology()
    state.set_q([1.2, -0.5, 0.8])
    state.set_u([0.0, 2.0, -1.0])
    integ.initialize(state)
    assert integ.describe_fast_path().startswith("compiled time loop" if compiled else "Python time loop")
    p = integ.get_method_min_order()
    ref = Reference(system, integ)
    w = _weights(system, integ.get_state())
    T = 100.0  # never reached: no step is cut short to land on it
    history = None
    checked = discriminating = rejections = 0
    while integ.get_num_steps_taken() < 60:
        s = integ.get_state()
        t0, y0, f0 = s.get_time(), s.get_y().copy(), s.get_ydot().copy()
        h = integ.get_predicted_next_step_size()
        attempted, failed = integ.get_num_steps_attempted(), integ.get_num_error_test_failures()
        status = integ.step_to(T)
        if status == S.StartOfContinuousInterval:
            continue
        assert status == S.TimeHasAdvanced
        n_failed = integ.get_num_error_test_failures() - failed
        assert integ.get_num_steps_attempted() - attempted == n_failed + 1
        rel = 0.0  # the relative uncertainty of the replayed step size
        ambiguous = False
        for _ in range(n_failed):
            y_try, err, scale = ref.step(t0, y0, h, history)
            errn = error_norm(err, y0, y_try, w)
            d = ESTIMATE_MARGIN * EPS * scale * float(np.max(w))
            ambiguous |= abs(errn - acc) <= d
            assert errn > acc - d, f"{cls.__name__}: an attempt of error {errn!r} <= accuracy was rejected"
            h *= shrink(acc, errn, p)
            rel += d / errn
            rejections += 1
        t1, y1, h_taken = integ.get_time(), integ.get_state().get_y().copy(), integ.get_previous_step_size_taken()
        assert abs(h_taken - h) <= (rel + 16 * EPS) * h, f"{cls.__name__}: took {h_taken!r}, the rule gives {h!r}"
        assert t1 == t0 + h_taken
        y1_ref, err, scale = ref.step(t0, y0, h_taken, history)
        d = ESTIMATE_MARGIN * EPS * scale * float(np.max(w))
        assert np.max(np.abs(y1_ref - y1)) <= ESTIMATE_MARGIN * EPS * scale, f"{cls.__name__}: not the method's step"
        errn = error_norm(err, y0, y1, w)
        assert errn <= acc + d, f"{cls.__name__}: a step of error {errn!r} > accuracy {acc!r} was accepted"
        ambiguous |= abs(errn - acc) <= d
        if not ambiguous:
            expected = h_taken * growth(acc, errn, p)
            tolerance = (rel + d / errn + 64 * EPS) * expected
            got = integ.get_predicted_next_step_size()
            assert abs(got - expected) <= tolerance, (
                f"{cls.__name__}: after a step of {h_taken!r} with error {errn!r}, the next step is {got!r}; "
                f"h 0.9 (acc/err)^(1/(p+1)) gives {expected!r}")
            checked += 1
            wrong = h_taken * min(5.0, max(0.2, 0.9 * (acc / errn) ** (1.0 / p)))
            discriminating += abs(wrong - expected) > 100 * tolerance
        history = (f0[ref.nq:], h_taken)  # Verlet's next step: this start's accelerations and step size
    assert checked >= 50 and discriminating >= 10, (checked, discriminating)
    if cls in (RungeKutta3Integrator, RungeKuttaMersonIntegrator, RungeKuttaFeldbergIntegrator):
        assert rejections > 0  # this start makes them reject a few attempts: the shrink rule was replayed


# ------------------------------------------------------------------------------------------ projection
#: the projection's documented Newton target, as a fraction of the tolerance it is given
NEWTON_TARGET = 0.01


def _four_bar():
    """Three pin links from Ground, the tip held at a Ground point by a Ball: the compiled loop solves
    and projects its equations itself, the Python loop through ``System.project``."""
    system, matter, bodies = _chain()
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    return system, state


def _largest(errors: np.ndarray) -> float:
    return float(np.max(np.abs(errors))) if len(errors) else 0.0


def _rms(errors: np.ndarray) -> float:
    return math.sqrt(float(np.mean(errors * errors))) if len(errors) else 0.0


def _constrained_steps(cls, compiled: bool, every_step: bool, n_steps: int = 80):
    """(integrator, per step: (projected, q_err, u_err)) of a run on the four-bar at accuracy 1e-3,
    whose steps drift off the constraints by about 1/20 of the tolerance each (between 1/100 and
    1/10 of it on most steps: where the Newton target decides whether a projection iterates)."""
    system, state = _four_bar()
    integ = cls(system)
    integ.set_accuracy(1e-3)
    integ.set_project_every_step(every_step)
    integ.set_return_every_internal_step(True)
    integ.set_use_compiled_loop(compiled)
    integ.initialize(state)
    path = integ.describe_fast_path()
    assert path.startswith("compiled time loop" if compiled else "Python time loop"), path
    steps = []
    while integ.get_num_steps_taken() < n_steps:
        projections = integ.get_num_projections()
        if integ.step_to(100.0) == S.StartOfContinuousInterval:
            continue
        s = integ.get_state()
        assert s.get_system_stage() >= Stage.Velocity
        steps.append((integ.get_num_projections() > projections, s.get_q_err().copy(), s.get_u_err().copy()))
    return integ, steps


@pytest.mark.parametrize("compiled", LOOPS, ids=["compiled loop", "Python loop"])
@pytest.mark.parametrize("cls", [RungeKutta3Integrator, RungeKuttaMersonIntegrator], ids=lambda c: c.__name__)
def test_projecting_every_step_reaches_the_newton_target(cls, compiled):
    """Kills a Newton tolerance looser than 1/100 of the tolerance (in ``_projection.py`` for the Python
    loop, ``core/stepper.pxi`` for the compiled one): a drift between the two targets is then left."""
    integ, steps = _constrained_steps(cls, compiled, every_step=True)
    target = NEWTON_TARGET * integ.get_constraint_tolerance_in_use()
    bound = target + 64 * EPS  # round-off of the errors of unit-sized links
    assert all(projected for projected, _, _ in steps)
    for k, (_, q_err, u_err) in enumerate(steps):
        assert _largest(q_err) <= bound, f"step {k}: position error {_largest(q_err)!r} after projection > {target!r}"
        assert _largest(u_err) <= bound, f"step {k}: velocity error {_largest(u_err)!r} after projection > {target!r}"


@pytest.mark.parametrize("compiled", LOOPS, ids=["compiled loop", "Python loop"])
@pytest.mark.parametrize("cls", [RungeKutta3Integrator, RungeKuttaMersonIntegrator], ids=lambda c: c.__name__)
def test_constraint_errors_stay_within_the_tolerance_and_projections_reach_the_target(cls, compiled):
    """Projecting only when needed: after every step the errors (the integrator's RMS measure, unit
    weights here) are within the tolerance; after a step that projected they are within the Newton
    target; and the steps that did not project do drift past that target (so the check of the
    projected ones is not met by chance)."""
    integ, steps = _constrained_steps(cls, compiled, every_step=False)
    tol = integ.get_constraint_tolerance_in_use()
    target = NEWTON_TARGET * tol
    bound = target + 64 * EPS
    drifted = 0
    for k, (projected, q_err, u_err) in enumerate(steps):
        assert _rms(q_err) <= tol and _rms(u_err) <= tol, f"step {k}: constraint errors above the tolerance {tol!r}"
        if projected:
            assert _largest(q_err) <= bound and _largest(u_err) <= bound, f"step {k}: projection stopped short"
        else:
            drifted += _largest(q_err) > bound
    assert sum(projected for projected, _, _ in steps) >= 5 and drifted >= 5


def test_system_project_meets_the_newton_target_from_a_small_violation():
    """``System.project`` alone (the Python loop's projection): from errors between 1/100 and 1/10 of
    the accuracy asked for, it iterates down to 1/100."""
    system, state = _four_bar()
    tol = 1e-4
    system.project(state, tol)  # assembled
    system.realize(state, Stage.Velocity)
    assert _largest(state.get_q_err()) <= NEWTON_TARGET * tol
    q = state.get_q().copy()
    direction = np.array([1.0, -0.6, 0.3])
    # a step along a direction the constraints do not allow, sized so the largest error is 5/100 of tol
    state.set_q(q + 1e-6 * direction)
    system.realize(state, Stage.Position)
    per_unit = _largest(state.get_q_err()) / 1e-6
    state.set_q(q + 0.05 * tol / per_unit * direction)
    system.realize(state, Stage.Velocity)
    assert NEWTON_TARGET * tol < _largest(state.get_q_err()) < 0.1 * tol
    assert system.project(state, tol)
    system.realize(state, Stage.Velocity)
    assert _largest(state.get_q_err()) <= NEWTON_TARGET * tol + 64 * EPS
    assert _largest(state.get_u_err()) <= NEWTON_TARGET * tol + 64 * EPS
