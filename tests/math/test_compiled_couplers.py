"""The constraints a Function defines in the compiled time loop: the same trajectory as the Python loop, bitwise.

``Constraint.CoordinateCoupler`` (f(q) = 0), ``Constraint.SpeedCoupler`` (f(u, q) = 0, whose row of G
depends on u) and ``Constraint.PrescribedMotion`` (q = f(t)) are solved in the compiled loop's steps
(``core/loop_couplers.pxi``) when their functions compile (the built-in families and OpenSim's, through
``FunctionTableBuilder``), from the same operations in the same order as their Python classes. So every
comparison here is exact, as in ``test_compiled_loop.py``, and the only expected values are the Python
path's; the closing errors are checked against the constraint tolerance the integrator was given. A
user's Function (or a subclass of a built-in one) keeps the Python loop, which says why.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from simtk import Function, Stage
from simtk.io._osim_functions import _CouplerFunction, _Scaled
from simtk.io.osim import SimmSplineFunction
from simtk.multibody import Constraint

sys.path.insert(0, str(Path(__file__).parent))
from test_compiled_loop import (  # noqa: E402
    COMPILED_TWINS,
    CONSTRAINED_TWINS,
    counting_compiled_steps,
    drive,
    models,
    pin_chain,
    report_times,
    twins,
)

#: The families of built-in Function the couplers are drawn from (the brief's and two more).
FAMILIES = ("Linear", "Polynomial", "Spline", "SimmSpline", "Multiplier", "Step", "Sinusoid")
KINDS = ("CoordinateCoupler", "SpeedCoupler", "PrescribedMotion")
_KNOTS = np.linspace(-3.0, 3.0, 7)
_VALUES = np.array([0.4, -0.1, 0.3, 0.05, -0.2, 0.25, 0.1])


def one_argument(family: str, scale: float = 1.0) -> Function:
    """A function of one argument of ``family``, smooth and of moderate slope on [-3, 3]."""
    if family == "Linear":
        return Function.Linear([0.7 * scale, 0.05])
    if family == "Polynomial":
        return Function.Polynomial([0.1 * scale, -0.2, 0.7, 0.05])
    if family == "Spline":
        return Function.Spline(_KNOTS, scale * _VALUES, degree=3)
    if family == "SimmSpline":
        return SimmSplineFunction(_KNOTS, scale * _VALUES)
    if family == "Multiplier":  # OpenSim's MultiplierFunction
        return _Scaled(SimmSplineFunction(_KNOTS, _VALUES[::-1]), 0.8 * scale)
    if family == "Step":
        return Function.Step(-0.2 * scale, 0.3, -1.0, 1.5)
    return Function.Sinusoid(0.4 * scale, 1.3, 0.2)


def add_constraint(kind: str, family: str, matter, state, qa, qb, qc):
    """A constraint of ``kind`` whose function is of ``family``, on the coordinates (or speeds) ``qa``,
    ``qb`` and ``qc`` ((body, index) pairs); returns it and ``set_start(state)``, which puts ``state``
    on (or near) its manifold.

    CoordinateCoupler: 0.7 qa - qb + 0.05 (Linear), else OpenSim's coupler 1.3 g(qa) - qb.
    SpeedCoupler: ua - 0.6 ub + 0.3 qc + 0.1 (Linear: with a coordinate), else 0.9 g(ua) - ub (nonlinear
    in u for most families: its row of G changes with u).
    PrescribedMotion: qa = g(t).
    """
    (ba, ia), (bb, ib), (bc, ic) = qa, qb, qc
    g = one_argument(family)
    if kind == "CoordinateCoupler":
        f = Function.Linear([0.7, -1.0, 0.05]) if family == "Linear" else _CouplerFunction(g, 1.3)
        c = Constraint.CoordinateCoupler(matter, f, [ba, bb], [ia, ib])

        def set_start(s):
            bb.set_one_q(s, ib, 0.0)
            bb.set_one_q(s, ib, -f.calc_value(np.array([ba.get_one_q(s, ia), 0.0])))
    elif kind == "SpeedCoupler":
        if family == "Linear":
            f = Function.Linear([1.0, -0.6, 0.3, 0.1])
            c = Constraint.SpeedCoupler(matter, f, [ba, bb], [ia, ib], [bc], [ic])
        else:
            f = _CouplerFunction(g, 0.9)
            c = Constraint.SpeedCoupler(matter, f, [ba, bb], [ia, ib])

        def set_start(s):
            if family != "Linear":
                bb.set_one_u(s, ib, 0.0)
                bb.set_one_u(s, ib, -f.calc_value(np.array([ba.get_one_u(s, ia), 0.0])))
    else:
        c = Constraint.PrescribedMotion(matter, g, ba, ia)

        def set_start(s):
            ba.set_one_q(s, ia, g.calc_value(np.array([s.get_time()])))
    return c, set_start


def coupled_chain(kind: str, family: str, first: str = "Pin"):
    """pin_chain(3, first) with a constraint of ``kind`` and ``family`` between links 0 and 2 (a Gimbal's
    middle coordinate when ``first`` is Gimbal: a coordinate whose N row is not a unit row), link 1's
    coordinate for a SpeedCoupler's; returns (system, State on the constraint, the constraint)."""
    system, matter, forces, bodies = pin_chain(3, first)
    ia = 1 if first == "Gimbal" else 0
    c, set_start = add_constraint(kind, family, matter, None, (bodies[0], ia), (bodies[2], 0), (bodies[1], 0))
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.upd_q()[:] = np.linspace(0.3, -0.4, state.get_nq())
    state.upd_u()[:] = np.linspace(-0.8, 1.1, state.get_nu())
    set_start(state)
    return system, state, c


def within_tolerance(integ) -> bool:
    """The integrator's own test after a step: the RMS of the position errors and that of the velocity
    errors are within the constraint tolerance."""
    s, tol = integ.get_state(), integ.get_constraint_tolerance_in_use()
    return all(np.sqrt(np.mean(e * e)) <= tol for e in (s.get_q_err(), s.get_u_err()) if len(e))


def run_twins(system, state, name: str, configure=None, reports=(0.1, 0.3)):
    """Twins of integrator ``name`` from ``state`` through ``reports``: the compiled one takes every step,
    bitwise as the Python one (``drive`` compares after every call); returns the compiled one."""
    a, b = twins(system, COMPILED_TWINS[name], configure)
    a.initialize(state)
    b.initialize(state)
    why = a.describe_fast_path()
    assert why.startswith("compiled time loop:") and "1 constraint equations" in why, why
    with counting_compiled_steps() as compiled_steps:
        seen, ended = drive(a, b, list(reports), max_steps=5000)
    assert ended == "reached" and compiled_steps[0] == a.get_num_steps_taken() > 0
    return a


# ---------------------------------------------------------------------------------------------- every family
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", CONSTRAINED_TWINS)
def test_every_family_runs_compiled_bitwise(name, kind, family):
    """Law: a coupler or prescribed motion of any built-in family of Function runs every step in the
    compiled loop, bitwise as the Python loop, its errors within the constraint tolerance."""
    system, state, _ = coupled_chain(kind, family)
    a = run_twins(system, state, name, lambda integ: integ.set_accuracy(1e-4))
    assert within_tolerance(a)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["RungeKuttaMerson", "SemiExplicitEuler2", "Verlet"])
def test_projected_after_every_step_alike(name, kind, family):
    """Law: with a constraint tolerance so tight that every step is projected (Newton steps on q for a
    CoordinateCoupler and a PrescribedMotion, mass-weighted corrections of u, with G rebuilt at each u for
    a SpeedCoupler) on a Gimbal's coordinate (N is not the identity there), the compiled loop projects
    as often and to the same bits as the Python loop, and the errors end within the tolerance."""
    system, state, _ = coupled_chain(kind, family, first="Gimbal")

    def configure(integ):
        integ.set_accuracy(1e-3)
        integ.set_constraint_tolerance(1e-12)

    a = run_twins(system, state, name, configure)
    assert a.get_num_projections() > 0 and within_tolerance(a)


@pytest.mark.parametrize("family", FAMILIES)
def test_prescribed_motion_follows_its_function(family):
    """Law: in the compiled loop a prescribed coordinate and its speed follow f(t) and f'(t) at every
    report time, within the constraint tolerance (the targets are evaluated at each stage's time)."""
    system, state, c = coupled_chain("PrescribedMotion", family)
    a = run_twins(system, state, "RungeKuttaMerson", lambda integ: integ.set_accuracy(1e-5), reports=[0.2])
    s, tol = a.get_state(), a.get_constraint_tolerance_in_use()
    f, body = c.get_function(), c.get_body()
    t = np.array([s.get_time()])
    assert abs(body.get_one_q(s, 0) - f.calc_value(t)) <= tol
    assert abs(body.get_one_u(s, 0) - f.calc_derivative([0], t)) <= tol


def test_several_couplers_and_other_kinds_in_one_loop():
    """Law: couplers of different families beside each other and beside a Ball closing a loop (the
    Coincident rows) share one function table and one solve, bitwise as the Python loop."""
    system, matter, forces, bodies = pin_chain(5)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    c1, s1 = add_constraint("CoordinateCoupler", "SimmSpline", matter, None, (bodies[3], 0), (bodies[4], 0),
                            (bodies[0], 0))
    c2, s2 = add_constraint("SpeedCoupler", "Polynomial", matter, None, (bodies[4], 0), (bodies[3], 0),
                            (bodies[0], 0))
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    s1(state)
    s2(state)
    for name in ("RungeKuttaFeldberg", "Verlet"):
        a, b = twins(system, COMPILED_TWINS[name], lambda integ: integ.set_accuracy(1e-4))
        a.initialize(state)
        b.initialize(state)
        assert "5 constraint equations" in a.describe_fast_path()
        with counting_compiled_steps() as compiled_steps:
            seen, ended = drive(a, b, [0.1, 0.2], max_steps=5000)
        assert ended == "reached" and compiled_steps[0] == a.get_num_steps_taken() > 0
        assert within_tolerance(a)


# ---------------------------------------------------------------------------------------------- random models
_coefficients = st.lists(st.floats(-0.8, 0.8, allow_nan=False, allow_infinity=False), min_size=2, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_models_with_a_coupler_agree_bitwise(data):
    """Law: on random trees of built-in mobilizers (quaternions included, but not as coupled coordinates)
    with a coupler or prescribed motion of a random family between random coordinates, the compiled
    loop's trajectory, statistics and State equal the Python loop's bitwise after every ``step_to``."""
    model = data.draw(models(max_bodies=4), label="model")
    state = model.system.realize_topology()
    model.system.realize(state, Stage.Model)
    plain = [b for b in model.bodies if b.get_num_q(state) == b.get_num_u(state)]
    assume(plain)
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    family = data.draw(st.sampled_from(FAMILIES), label="family")
    picks = []
    for label in ("a", "b", "c"):
        b = data.draw(st.sampled_from(plain), label=f"{label}: body")
        picks.append((b, data.draw(st.integers(0, b.get_num_q(state) - 1), label=f"{label}: index")))
    assume(kind == "PrescribedMotion" or picks[0] != picks[1])
    nq = [b.get_num_q(state) for b in plain]
    c, set_start = add_constraint(kind, family, model.matter, None, *picks)
    state = model.system.realize_topology()
    model.system.realize(state, Stage.Model)
    for b, n in zip(plain, nq):
        for i in range(n):
            b.set_one_q(state, i, data.draw(st.floats(-0.5, 0.5, allow_nan=False), label="q"))
    state.upd_u()[:] = data.draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=state.get_nu(),
                                          max_size=state.get_nu()), label="u")
    set_start(state)
    name = data.draw(st.sampled_from(CONSTRAINED_TWINS), label="integrator")
    # (an internal step limit lets drive() truncate a model stiff for the method inside one step_to)
    a, b = twins(model.system, COMPILED_TWINS[name],
                 lambda integ: (integ.set_accuracy(1e-3), integ.set_internal_step_limit(200)))
    errors = []
    for integ in (a, b):
        try:
            integ.initialize(state)
        except Exception as exc:  # a start the projection cannot fix fails alike on both paths
            errors.append((type(exc), str(exc)))
    assert len(errors) in (0, 2) and (not errors or errors[0] == errors[1]), errors
    assume(not errors)
    assert a.describe_fast_path().startswith("compiled time loop:"), a.describe_fast_path()
    with counting_compiled_steps() as compiled_steps:
        seen, ended = drive(a, b, data.draw(report_times, label="report times"), max_steps=600)
    event(f"run {ended}; compiled steps: "
          f"{'all' if compiled_steps[0] == a.get_num_steps_taken() else 'some' if compiled_steps[0] else 'none'}")


# ---------------------------------------------------------------------------------------------- users' functions
class UserLinear(Function):
    """c_0 x_0 + ... + c_m written in Python: a user's Function, without a compiled form."""

    def __init__(self, coefficients):
        self._c = [float(c) for c in coefficients]

    def calc_value(self, x):
        return sum(c * float(v) for c, v in zip(self._c, x)) + self._c[-1]

    def calc_derivative(self, deriv_components, x):
        return self._c[deriv_components[0]] if len(deriv_components) == 1 else 0.0

    def get_argument_size(self):
        return len(self._c) - 1

    def get_max_derivative_order(self):
        return 2


class ShiftedSpline(SimmSplineFunction):
    """A subclass of a built-in: it may compute something else, so it is a user's Function too."""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("user", ["UserLinear", "ShiftedSpline"])
def test_a_users_function_is_solved_in_python_and_says_why(kind, user):
    """Law: a coupler or prescribed motion whose function is a user's (or a subclass of a built-in, or
    has one as its operand) is solved by the matter's Python (the compiled loop then evaluates the
    State's own realization), and ``describe_fast_path`` names the constraint, the function's class and
    the reason; both paths still agree bitwise."""
    system, matter, forces, bodies = pin_chain(3)
    if kind == "PrescribedMotion":
        f = UserLinear([0.5, 0.1]) if user == "UserLinear" else ShiftedSpline(_KNOTS, _VALUES)
        Constraint.PrescribedMotion(matter, f, bodies[1], 0, name="coupling")
    else:
        # a user's function, or a built-in combinator (OpenSim's coupler) over a subclass of a built-in
        f = UserLinear([0.7, -1.0, 0.05]) if user == "UserLinear" else _CouplerFunction(ShiftedSpline(_KNOTS, _VALUES), 1.0)
        getattr(Constraint, kind)(matter, f, [bodies[0], bodies[2]], [0, 0], name="coupling")
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    a, b = twins(system, COMPILED_TWINS["RungeKuttaMerson"], lambda integ: integ.set_accuracy(1e-4))
    a.initialize(state)
    b.initialize(state)
    why = a.describe_fast_path()
    assert why.startswith("compiled time loop: ") and "the matter subsystem's stage hooks" in why, why
    for text in (f"constraints ({kind}) are solved in Python", "/matter/coupling'>", f"{__name__}.{user} has no compiled form",
                 "a user's Function"):
        assert text in why, f"{text!r} not in {why!r}"
    with counting_compiled_steps() as compiled_steps:
        drive(a, b, [0.1])
    assert compiled_steps[0] == a.get_num_steps_taken() > 0
