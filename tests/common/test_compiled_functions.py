"""The built-in Function families compiled into a ``simtk_core.FunctionTable`` (core/functions.pxi).

The expected values are the Python methods' (``calc_value``, ``calc_derivative``: the checked entry
points users call). The compiled evaluators repeat their operations in the same order, so most
results are compared bit for bit; the two that cannot be (Linear's dot product, which numpy leaves to
BLAS, and the derivative coefficients of a Polynomial of degree above 20) within a round-off bound
from EPS and the scale of the terms.
"""
from __future__ import annotations

import math
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Function, _core
from simtk.common.function import FunctionTableBuilder, compile_function
from simtk.io._osim_functions import SimmSplineFunction, _CouplerFunction, _Scaled
from tolerances import assert_close

FAST = settings(max_examples=40, deadline=None)

coef = st.floats(min_value=-10.0, max_value=10.0, allow_nan=False, allow_infinity=False)
arg = st.floats(min_value=-20.0, max_value=20.0, allow_nan=False, allow_infinity=False)


def bits(v) -> int:
    """The IEEE bits of a double (so that -0.0 and 0.0, or two NaNs of another payload, differ)."""
    return int(np.float64(v).view(np.int64))


def assert_bitwise(actual, expected, what=""):
    assert bits(actual) == bits(expected), f"{what}: compiled {actual!r} != Python {expected!r}"


def around(points) -> list[float]:
    """Each point and its neighbouring doubles on both sides: knots, interval ends and the values beside them."""
    out = []
    for p in points:
        out += [p, math.nextafter(p, -math.inf), math.nextafter(p, math.inf)]
    return out


def probe_points(f, lo, hi, data) -> list[float]:
    """Points of a one-argument function: its breakpoints exactly and beside them, the range's ends and
    beyond them on both sides, the midpoints between breakpoints, and a few drawn at random."""
    ends = [lo, hi]
    pts = around(ends) + [lo - 1.0, hi + 1.0, lo - 1e3, hi + 1e3, 0.0]
    drawn = data.draw(st.lists(st.floats(min_value=lo - 2.0, max_value=hi + 2.0), min_size=3, max_size=8))
    return pts + drawn


def check_against_python(f, points, orders, *, what=""):
    """f's compiled value and derivatives of the given orders (along argument 0) at each point, bitwise."""
    table, i = compile_function(f)
    for t in points:
        x = [t] if f.get_argument_size() == 1 else t
        assert_bitwise(table.value(i, x), f.calc_value(x), f"{what} value at {t!r}")
        for n in orders:
            assert_bitwise(table.derivative(i, [0] * n, x), f.calc_derivative([0] * n, x),
                           f"{what} derivative of order {n} at {t!r}")
    X = np.array(points, dtype=float).reshape(len(points), -1)
    # the vectorized form is the scalar one point by point
    np.testing.assert_array_equal(table.values(i, X), [table.value(i, row) for row in X])
    for n in orders:
        np.testing.assert_array_equal(table.derivatives(i, [0] * n, X),
                                      [table.derivative(i, [0] * n, row) for row in X])
    return table, i


# --------------------------------------------------------------------------------------------------------
# The closed-form families
# --------------------------------------------------------------------------------------------------------


@given(c=coef, m=st.integers(0, 5), x=st.lists(arg, min_size=5, max_size=5), comps=st.lists(st.integers(0, 4),
                                                                                              min_size=1, max_size=3))
@FAST
def test_constant_of_several_arguments(c, m, x, comps):
    f = Function.Constant(c, m)
    table, i = compile_function(f)
    assert table.argument_size(i) == m and table.family(i) == "constant"
    assert_bitwise(table.value(i, x[:m]), f.calc_value(x[:m]))
    comps = [k % m for k in comps] if m else []
    if m:
        assert_bitwise(table.derivative(i, comps, x[:m]), f.calc_derivative(comps, x[:m]))
    assert table.max_derivative_order(i) == sys.maxsize


def linear_scale(c, x) -> float:
    """The scale of a dot product's round-off: the sum of the terms' magnitudes (the result may cancel)."""
    return float(np.sum(np.abs(np.asarray(c[:-1]) * np.asarray(x))) + abs(c[-1]))


@given(c=st.lists(coef, min_size=1, max_size=8), x=st.lists(arg, min_size=7, max_size=7), data=st.data())
@FAST
def test_linear_of_several_arguments(c, x, data):
    """Within (m + 1) EPS of the sum of |c_k x_k| (numpy's dot product is BLAS's, summed in its own order);
    every partial is c_k or 0 exactly."""
    f = Function.Linear(c)
    m = len(c) - 1
    x = x[:m]
    table, i = compile_function(f)
    assert table.argument_size(i) == m
    assert_close(table.value(i, x), f.calc_value(x), margin=m + 1, scale=linear_scale(c, x), what="Linear value")
    if m:
        k = data.draw(st.integers(0, m - 1))
        j = data.draw(st.integers(0, m - 1))
        assert_bitwise(table.derivative(i, [k], x), f.calc_derivative([k], x))
        assert_bitwise(table.derivative(i, [k, j], x), f.calc_derivative([k, j], x))
        assert_bitwise(table.derivative(i, [j, k, j], x), f.calc_derivative([j, k, j], x))
        X = np.array([x, [2.0 * v for v in x]])
        np.testing.assert_array_equal(table.values(i, X), [table.value(i, row) for row in X])


def test_linear_of_one_argument_is_bitwise():
    # a single product and a sum: no order for BLAS to choose
    f = Function.Linear([0.1, 0.7])
    table, i = compile_function(f)
    for t in (0.3, -1e10, 7.0 / 3.0):
        assert_bitwise(table.value(i, t), f.calc_value(t))


@given(c=st.lists(coef, min_size=1, max_size=9), data=st.data())
@FAST
def test_polynomial(c, data):
    """Every order up to the degree + 1 (the last is 0): the derivative coefficients a_i p!/(p-n)! are
    rounded once from the exact integer, as Python's float * int does."""
    f = Function.Polynomial(c)
    pts = probe_points(f, -3.0, 3.0, data)
    check_against_python(f, pts, range(1, len(c) + 1), what=f"Polynomial({c})")


def test_polynomial_of_degree_twenty_is_bitwise_at_every_order():
    rng = np.random.default_rng(20)
    f = Function.Polynomial(rng.uniform(-1, 1, 21))
    check_against_python(f, list(rng.uniform(-1.5, 1.5, 7)), range(1, 22), what="degree 20")


def test_polynomial_of_high_degree_within_round_off():
    """Above 2^63 the falling factorial goes on in double, a rounding per factor, where Python rounds the
    exact integer once: each derivative coefficient within n EPS of Python's, the sum within the Horner
    bound on the terms' magnitudes."""
    rng = np.random.default_rng(26)
    a = rng.uniform(-1, 1, 27)
    f = Function.Polynomial(a)
    N = len(a) - 1
    table, i = compile_function(f)
    for t in rng.uniform(-1.2, 1.2, 5):
        for n in range(1, N + 2):
            d = np.array(f._deriv_coefficients(n)) if n <= N else np.zeros(1)
            scale = float(np.polyval(np.abs(d), abs(t)))
            assert_close(table.derivative(i, [0] * n, t), f.calc_derivative([0] * n, t),
                         margin=2 * (n + 2 * N), scale=scale, what=f"order {n}")


@given(y0=coef, y1=coef, x0=coef, width=st.floats(min_value=1e-3, max_value=10.0), reverse=st.booleans(),
       data=st.data())
@FAST
def test_step(y0, y1, x0, width, reverse, data):
    """Orders 1 to 3; at the interval's ends exactly the value is y0 or y1 and the derivatives 0; the
    fourth order is NaN (the family has none)."""
    x1 = x0 - width if reverse else x0 + width
    f = Function.Step(y0, y1, x0, x1)
    lo, hi = min(x0, x1), max(x0, x1)
    pts = probe_points(f, lo, hi, data) + [x0 + 0.5 * (x1 - x0), x0 + 0.25 * (x1 - x0)]
    table, i = check_against_python(f, pts, (1, 2, 3), what=f"Step({y0}, {y1}, {x0}, {x1})")
    assert table.value(i, x0) == y0 and table.value(i, x1) == y1
    assert table.derivative(i, [0], x1) == 0.0 and table.derivative(i, [0, 0], x0) == 0.0
    assert math.isnan(table.derivative(i, [0] * 4, 0.5 * (x0 + x1)))
    assert table.max_derivative_order(i) == 3


@given(a=coef, w=coef, p=coef, data=st.data())
@FAST
def test_sinusoid(a, w, p, data):
    """Orders 1 to 6 (every phase of sin, cos, -sin, -cos): libm's sin, cos and pow, as Python's."""
    f = Function.Sinusoid(a, w, p)
    check_against_python(f, probe_points(f, -5.0, 5.0, data), range(1, 7), what=f"Sinusoid({a}, {w}, {p})")


# --------------------------------------------------------------------------------------------------------
# The splines
# --------------------------------------------------------------------------------------------------------


@st.composite
def knots(draw, min_n: int, max_n: int = 12):
    n = draw(st.integers(min_n, max_n))
    x0 = draw(st.floats(min_value=-5.0, max_value=5.0))
    steps = draw(st.lists(st.floats(min_value=0.05, max_value=2.0), min_size=n - 1, max_size=n - 1))
    x = np.concatenate([[x0], x0 + np.cumsum(steps)])
    y = draw(st.lists(st.floats(min_value=-5.0, max_value=5.0), min_size=n, max_size=n))
    return x, np.array(y)


@given(k=st.integers(1, 5), data=st.data())
@FAST
def test_spline_of_every_degree(k, data):
    """Every order to k + 1 (0 there), at every knot exactly and beside it (a knot starts its piece), at
    the ends and beyond them (the end pieces extended)."""
    x, y = data.draw(knots(k + 1))
    f = Function.Spline(x, y, k)
    bp = f._bp
    pts = probe_points(f, bp[0], bp[-1], data) + around(bp) + [0.5 * (a + b) for a, b in zip(bp, bp[1:])]
    check_against_python(f, pts, range(1, k + 2), what=f"Spline of degree {k}")


def test_spline_at_a_knot_takes_the_piece_it_starts():
    # a linear spline's slope jumps at its middle knot: the derivative there is the right piece's
    f = Function.Spline([0.0, 1.0, 2.0], [0.0, 1.0, 3.0], 1)
    table, i = compile_function(f)
    assert table.derivative(i, [0], 1.0) == f.calc_derivative([0], 1.0) == 2.0
    assert table.derivative(i, [0], math.nextafter(1.0, 0.0)) == 1.0
    assert table.value(i, 3.0) == f.calc_value(3.0) and table.value(i, -1.0) == f.calc_value(-1.0)


@given(data=st.data())
@FAST
def test_simm_spline(data):
    """OpenSim's SimmSpline: the tangent line outside the knots (f'' = 0 there), orders 1 and 2; a third
    order is NaN (OpenSim's limit, the Python class's too)."""
    x, y = data.draw(knots(2))
    f = SimmSplineFunction(x, y)
    pts = probe_points(f, x[0], x[-1], data) + around(x.tolist())
    table, i = check_against_python(f, pts, (1, 2), what=f"SimmSpline of {len(x)} points")
    assert math.isnan(table.derivative(i, [0, 0, 0], float(x[0])))
    assert table.family(i) == "simm_spline" and table.max_derivative_order(i) == 2


# --------------------------------------------------------------------------------------------------------
# Combinators: OpenSim's MultiplierFunction and coupler function, nested
# --------------------------------------------------------------------------------------------------------


@given(s1=coef, s2=coef, data=st.data())
@FAST
def test_nested_multipliers_of_splines_and_polynomials(s1, s2, data):
    x, y = data.draw(knots(4))
    inner = [Function.Spline(x, y, 3), SimmSplineFunction(x, y), Function.Polynomial([1.5, -2.0, 0.25]),
             Function.Step(1.0, -2.0, float(x[1]), float(x[2])), Function.Sinusoid(2.0, 3.0, 0.1)]
    for g in inner:
        f = _Scaled(_Scaled(g, s1), s2)
        pts = probe_points(f, float(x[0]), float(x[-1]), data) + around(x.tolist())
        table, i = check_against_python(f, pts, (1, 2), what=f"Scaled(Scaled({type(g).__qualname__}))")
        assert table.family(i) == "scaled" and len(table) == 3


@given(s=coef, data=st.data())
@FAST
def test_coupler_over_multiplier(s, data):
    """C(q, q_dep) = s f(q) - q_dep: each partial bitwise, the dependent coordinate's -1 or 0."""
    x, y = data.draw(knots(4))
    g = _CouplerFunction(_Scaled(Function.Spline(x, y, 3), 0.5), s)
    table, i = compile_function(g)
    assert table.argument_size(i) == 2
    for t in probe_points(g, float(x[0]), float(x[-1]), data):
        q = [t, data.draw(arg)]
        assert_bitwise(table.value(i, q), g.calc_value(q), f"value at {q}")
        for comps in ([0], [1], [0, 0], [0, 1], [1, 0], [1, 1]):
            assert_bitwise(table.derivative(i, comps, q), g.calc_derivative(comps, q), f"{comps} at {q}")


@given(c=st.lists(coef, min_size=3, max_size=4), s=coef, x=st.lists(arg, min_size=4, max_size=4))
@FAST
def test_coupler_of_a_linear_function_of_several_arguments(c, s, x):
    f = Function.Linear(c)
    m = len(c) - 1
    g = _Scaled(_CouplerFunction(f, s), 2.0)
    table, i = compile_function(g)
    q = x[:m + 1]
    # Linear's round-off, times s and 2, then the exact doubling of s f - q_dep's rounding
    assert_close(table.value(i, q), g.calc_value(q), margin=m + 4,
                 scale=2.0 * (abs(s) * linear_scale(c, q[:m]) + abs(q[m])), what="coupler value")
    for comps in ([0], [m], [m - 1, 0], [m, 0], [0, 0, m]):
        assert_bitwise(table.derivative(i, comps, q), g.calc_derivative(comps, q), f"{comps}")


def test_a_shared_operand_is_one_entry():
    f = Function.Polynomial([1.0, 2.0])
    b = FunctionTableBuilder()
    i = b.add(_Scaled(f, 2.0))
    j = b.add(_Scaled(f, 3.0))
    assert b.add(f) == 0 and len(b) == 3
    table = b.build()
    assert table.value(i, 1.0) == 6.0 and table.value(j, 1.0) == 9.0


# --------------------------------------------------------------------------------------------------------
# What cannot be compiled, and bad tables
# --------------------------------------------------------------------------------------------------------


class UserFunction(Function):
    def calc_value(self, x):
        return x[0] - x[1]

    def calc_derivative(self, deriv_components, x):
        return (1.0 if deriv_components[0] == 0 else -1.0) if len(deriv_components) == 1 else 0.0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return sys.maxsize


class DoubledPolynomial(Function.Polynomial):
    """A subclass of a built-in that changes its value: it inherits _compile but is not the built-in."""

    def calc_value(self, x):
        return 2.0 * super().calc_value(x)


@pytest.mark.parametrize("f", [UserFunction(), DoubledPolynomial([1.0, 0.0]), _Scaled(UserFunction(), 2.0),
                               _CouplerFunction(_Scaled(UserFunction(), 2.0), 1.0)],
                         ids=["user", "subclass of a built-in", "multiplier of a user's", "nested user's"])
def test_a_users_function_is_not_compilable(f):
    b = FunctionTableBuilder()
    b.add(Function.Constant(1.0))
    with pytest.raises(NotImplementedError, match=r"(UserFunction|DoubledPolynomial) has no compiled form"):
        b.add(f)
    assert b.try_add(f) is None
    assert len(b) == 1 and len(b.build()) == 1  # nothing left of the failed attempt
    assert not FunctionTableBuilder.compilable(UserFunction())
    with pytest.raises(TypeError, match="expected a simtk Function"):
        b.add(lambda x: x)


def entries_and_params():
    """A valid table: Polynomial (entry 0), Scaled of it (entry 1)."""
    b = FunctionTableBuilder()
    b.add(_Scaled(Function.Polynomial([1.0, 2.0]), 3.0))
    return b.build().entries.copy(), b.build().params.copy()


def spline_table():
    table, _ = compile_function(Function.Spline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.0, 2.0], 2))
    return table.entries.copy(), table.params.copy()


def _edit(make, row, col, value, *more):
    """The table ``make`` gives with entries[row, col] = value (and more (row, col, value) after it)."""
    e, p = make()
    e[row, col] = value
    for r, c, v in zip(more[::3], more[1::3], more[2::3]):
        e[r, c] = v
    return e, p


def _edit_par(make, k, value):
    e, p = make()
    p[k] = value
    return e, p


FAMILY, NARGS, MAXORD, POFF, PLEN, CHILD, AUX0, AUX1 = range(8)


@pytest.mark.parametrize("bad, pattern", [
    (lambda: _edit(entries_and_params, 1, CHILD, 1), r"child 1 is not an earlier entry"),
    (lambda: _edit(entries_and_params, 1, CHILD, 5), r"child 5 is not an earlier entry"),
    (lambda: _edit(entries_and_params, 1, CHILD, -1), r"child -1 is not an earlier entry"),
    (lambda: _edit(entries_and_params, 0, CHILD, 0), r"child 0 given to a family without one"),
    (lambda: _edit(entries_and_params, 0, FAMILY, 99), r"unknown family code 99"),
    (lambda: _edit(entries_and_params, 0, POFF, 2), r"parameters \[2, 2 \+ 2\) outside the 3 given"),
    (lambda: _edit(entries_and_params, 0, PLEN, -1), r"outside"),
    (lambda: _edit(entries_and_params, 0, NARGS, 2), r"takes 2 argument\(s\), the family takes 1"),
    (lambda: _edit(entries_and_params, 1, NARGS, 2), r"its child 0 takes 1"),
    (lambda: _edit(entries_and_params, 0, MAXORD, -1), r"negative"),
    (lambda: _edit(entries_and_params, 1, PLEN, 2, 1, POFF, 0), r"2 parameters, the family reads 1"),
    (lambda: _edit_par(entries_and_params, 2, math.nan), r"params\[2\] = nan is not finite"),
    (lambda: _edit(spline_table, 0, AUX1, 6), r"degree 6"),
    (lambda: _edit(spline_table, 0, AUX0, 9), r"parameters, the family reads"),
    (lambda: _edit_par(spline_table, 2, 0.5), r"knots 1 and 2 not increasing"),
])
def test_bad_tables_are_refused_when_built(bad, pattern):
    e, p = bad()
    with pytest.raises(ValueError, match=pattern):
        _core.FunctionTable(e, p)


def test_more_bad_tables():
    step, _ = compile_function(Function.Step(0.0, 1.0, 0.0, 1.0))
    e, p = step.entries.copy(), step.params.copy()
    p[3] = p[2]
    with pytest.raises(ValueError, match="zero-length"):
        _core.FunctionTable(e, p)
    e, p = step.entries.copy(), step.params.copy()
    e[0, MAXORD] = 4
    with pytest.raises(ValueError, match=r"max order 4 above the family's \(3\)"):
        _core.FunctionTable(e, p)
    # a combinator may not claim more derivatives than its operand has
    simm, _ = compile_function(_Scaled(SimmSplineFunction([0.0, 1.0, 2.0], [0.0, 1.0, 0.0]), 2.0))
    e, p = simm.entries.copy(), simm.params.copy()
    e[1, MAXORD] = 3
    with pytest.raises(ValueError, match="above its child's"):
        _core.FunctionTable(e, p)
    # a coupler passes n arguments to an operand of n
    cpl, _ = compile_function(_CouplerFunction(Function.Linear([1.0, 2.0, 3.0]), 1.0))
    e, p = cpl.entries.copy(), cpl.params.copy()
    e[1, AUX0] = 1
    with pytest.raises(ValueError, match="one more than its child"):
        _core.FunctionTable(e, p)
    with pytest.raises(ValueError, match=r"shape \(n, 8\)"):
        _core.FunctionTable(np.zeros((1, 7), dtype=np.int64), p)
    with pytest.raises(TypeError, match="integers"):
        _core.FunctionTable(np.zeros((1, 8)), p)


def test_combinators_nested_deeper_than_the_limit_are_refused():
    f = Function.Polynomial([1.0, 0.0])
    for _ in range(64):
        f = _Scaled(f, 1.0)
    table, i = compile_function(f)  # 64 levels: the limit
    assert table.value(i, 2.0) == 2.0
    with pytest.raises(ValueError, match="nested deeper than 64"):
        compile_function(_Scaled(f, 1.0))


# --------------------------------------------------------------------------------------------------------
# The Python entry points of the table
# --------------------------------------------------------------------------------------------------------


def test_table_entry_points():
    f = Function.Linear([1.0, -2.0, 0.5])
    table, i = compile_function(f)
    x = [3.0, 1.0]
    assert table.value(i, x) == table.value(i, np.array(x)) == table.value(i, (3, 1)) == 1.5
    assert table.derivative(i, [], x) == 1.5  # no component: the value
    assert table.derivative(i, np.array([1]), x) == -2.0
    assert table.values(i, [x, [0.0, 0.0]]).tolist() == [1.5, 0.5]
    assert table.derivatives(i, [0], np.zeros((3, 2))).tolist() == [1.0] * 3
    with pytest.raises(IndexError, match="entry 1 out of range"):
        table.value(1, x)
    with pytest.raises(ValueError, match="component 2 out of range"):
        table.derivative(i, [2], x)
    with pytest.raises(ValueError, match=r"takes 2 argument\(s\)"):
        table.value(i, [1.0])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        table.values(i, [1.0, 2.0])
    assert math.isnan(table.value(i, [math.nan, 0.0]))  # not checked: a NaN propagates
    # a function of no arguments
    table, i = compile_function(Function.Constant(4.0, 0))
    assert table.value(i, []) == 4.0 and table.values(i, np.zeros((2, 0))).tolist() == [4.0, 4.0]


def test_a_table_pickles_and_is_immutable():
    table, i = compile_function(Function.Spline([0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 2.0, 1.0]))
    again = pickle.loads(pickle.dumps(table))
    assert again.value(i, 1.7) == table.value(i, 1.7)
    # a float is a point of one argument, for the derivatives too
    assert table.derivative(i, [0, 0], 1.7) == table.derivative(i, (0, 0), np.array([1.7]))
    with pytest.raises(ValueError):
        table.params[0] = 1.0
    assert table.entries.dtype == np.int64 and table.entries.shape == (1, 8)
