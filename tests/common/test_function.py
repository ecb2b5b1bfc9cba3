"""Tests of simtk.common.function: the Function base class and its built-ins.

Expected values come from closed forms, central finite differences, numpy.polyder and an independently
built scipy spline, never from the code under test.
"""
from __future__ import annotations

import math
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk.common.function import Function, require_function
from tolerances import EPS  # round-off margins below are counts of EPS

FAST = settings(max_examples=40, deadline=None)

finite = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False, allow_infinity=False)


def central_diff(g, x, i, h):
    """Central difference of g along argument i at x (O(h^2) error)."""
    xp = np.array(x, dtype=float)
    xm = np.array(x, dtype=float)
    xp[i] += h
    xm[i] -= h
    return (g(xp) - g(xm)) / (2.0 * h)


# --------------------------------------------------------------------------------------------------------
# A user subclass, written as in "Advanced Programming with SimTK" section 3.3
# --------------------------------------------------------------------------------------------------------


class ConstraintFunction(Function):
    def calc_value(self, x):
        return x[0] - x[1]

    def calc_derivative(self, deriv_components, x):
        if len(deriv_components) == 1:
            return 1 if deriv_components[0] == 0 else -1
        return 0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return sys.maxsize


class ProductFunction(Function):
    """f(x0, x1) = x0^2 x1, with every partial written by hand (mixed partials exercise the components)."""

    def calc_value(self, x):
        return x[0] ** 2 * x[1]

    def calc_derivative(self, c, x):
        n0, n1 = c.count(0), c.count(1)
        if n1 > 1 or n0 > 2:
            return 0.0
        d0 = {0: x[0] ** 2, 1: 2 * x[0], 2: 2.0}[n0]
        return d0 * (x[1] if n1 == 0 else 1.0)

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return 3


class TestUserSubclass:
    def test_seed_constraint_function_value_and_derivatives(self):
        f = ConstraintFunction()
        assert f.calc_value([3.0, 1.25]) == 1.75
        assert f.calc_value(np.array([-2.0, 5.0])) == -7.0
        assert f.calc_derivative([0], [3.0, 1.0]) == 1.0
        assert f.calc_derivative([1], [3.0, 1.0]) == -1.0
        assert f.calc_derivative([0, 1], [3.0, 1.0]) == 0.0
        assert f.calc_derivative([1, 1, 0], [3.0, 1.0]) == 0.0
        assert isinstance(f.calc_value([3, 1]), float)
        assert isinstance(f.calc_derivative(np.array([0]), np.array([3, 1])), float)
        assert f.calc_derivative((np.int64(1),), (3.0, 1.0)) == -1.0

    def test_seed_constraint_function_checks_input(self):
        f = ConstraintFunction()
        with pytest.raises(ValueError, match=r"ConstraintFunction.*2 argument"):
            f.calc_value([1.0])
        with pytest.raises(ValueError, match=r"ConstraintFunction.*scalar"):
            f.calc_value(1.0)
        with pytest.raises(ValueError, match=r"ConstraintFunction.*component 2"):
            f.calc_derivative([2], [1.0, 2.0])
        with pytest.raises(ValueError, match=r"ConstraintFunction.*x\[1\].*not finite"):
            f.calc_value([1.0, math.inf])

    def test_unchecked_twin_is_the_users_method(self):
        f = ConstraintFunction()
        x = np.array([4.0, 1.5])
        assert f.calc_value_unchecked(x) == 2.5
        assert f.calc_derivative_unchecked((1,), x) == -1

    def test_mixed_partials_by_finite_differences(self):
        """Law: the user's hand-written partials agree with central differences of the value and of the
        lower-order partials, for every component sequence up to order 2."""
        f = ProductFunction()
        x = np.array([0.7, -1.3])
        h = 1e-5
        for i in range(2):
            fd = central_diff(f.calc_value, x, i, h)
            assert f.calc_derivative([i], x) == pytest.approx(fd, rel=1e-8, abs=1e-9)
            for j in range(2):
                fd2 = central_diff(lambda y: f.calc_derivative([j], y), x, i, h)
                assert f.calc_derivative([i, j], x) == pytest.approx(fd2, rel=1e-7, abs=1e-8)
        assert f.calc_derivative([0, 1], x) == f.calc_derivative([1, 0], x) == pytest.approx(2 * x[0])

    def test_subclass_of_subclass_calling_super(self):
        class Shifted(ConstraintFunction):
            def calc_value(self, x):
                return super().calc_value(x) + 10.0

        f = Shifted()
        assert f.calc_value([1.0, 2.0]) == 9.0
        assert f.calc_derivative([0], [1.0, 2.0]) == 1.0
        with pytest.raises(ValueError, match="Shifted"):
            f.calc_value([1.0, 2.0, 3.0])

    def test_missing_methods_refused_at_construction(self):
        class Incomplete(Function):
            def calc_value(self, x):
                return 0.0

        with pytest.raises(TypeError, match="Incomplete"):
            Incomplete()

    def test_non_finite_or_non_scalar_result_is_an_error(self):
        class Bad(ConstraintFunction):
            def calc_value(self, x):
                return math.log(x[0]) if x[0] > 0 else math.nan

            def calc_derivative(self, c, x):
                return np.array([1.0, 2.0])

        f = Bad()
        with pytest.raises(ValueError, match=r"Bad\.calc_value\(\) returned nan"):
            f.calc_value([-1.0, 0.0])
        with pytest.raises(TypeError, match=r"Bad\.calc_derivative\(\) must return a real scalar"):
            f.calc_derivative([0], [1.0, 0.0])

    def test_order_limit_of_user_function(self):
        f = ProductFunction()
        with pytest.raises(ValueError, match=r"ProductFunction.*order 4.*3"):
            f.calc_derivative([0, 0, 0, 1], [1.0, 1.0])

    def test_vectorized_helpers_fall_back_to_point_loop(self):
        f = ProductFunction()
        X = np.array([[1.0, 2.0], [-0.5, 3.0], [2.0, -1.0]])
        np.testing.assert_allclose(f.calc_values(X), X[:, 0] ** 2 * X[:, 1])
        np.testing.assert_allclose(f.calc_derivatives([0], X), 2 * X[:, 0] * X[:, 1])
        with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
            f.calc_values(X[:, 0])


# --------------------------------------------------------------------------------------------------------
# Input validation common to every function
# --------------------------------------------------------------------------------------------------------


class TestValidation:
    @pytest.mark.parametrize(
        "call, exc, pattern",
        [
            (lambda: Function.Linear([1, -1, 0]).calc_value([1.0, 2.0, 3.0]), ValueError, "2 argument"),
            (lambda: Function.Linear([1, -1, 0]).calc_value([[1.0, 2.0]]), ValueError, r"shape \(1, 2\)"),
            (lambda: Function.Polynomial([1, 0]).calc_value(math.nan), ValueError, "not finite"),
            (lambda: Function.Polynomial([1, 0]).calc_value([1j]), TypeError, "real"),
            (lambda: Function.Polynomial([1, 0]).calc_value("1"), TypeError, "real"),
            (lambda: Function.Polynomial([1, 0]).calc_derivative([], 1.0), ValueError, "order 0"),
            (lambda: Function.Polynomial([1, 0]).calc_derivative([1], 1.0), ValueError, "component 1"),
            (lambda: Function.Polynomial([1, 0]).calc_derivative([-1], 1.0), ValueError, "component -1"),
            (lambda: Function.Polynomial([1, 0]).calc_derivative(0, 1.0), TypeError, "sequence"),
            (lambda: Function.Polynomial([1, 0]).calc_derivative([0.0], 1.0), TypeError, "ints"),
            (lambda: Function.Polynomial([1, 0]).calc_derivative([True], 1.0), TypeError, "ints"),
            (lambda: Function.Step(0, 1, 0, 1).calc_derivative([0] * 4, 0.5), ValueError, "order 4"),
            (lambda: Function.Constant(2.0, 0).calc_derivative([0], []), ValueError, "0 arguments"),
            (lambda: Function.Constant(2.0, 0).calc_value(1.0), ValueError, "0 arguments"),
            (lambda: Function.Linear([1, 2]).calc_values([[1.0], [math.inf]]), ValueError, "point 1"),
        ],
    )
    def test_bad_arguments(self, call, exc, pattern):
        with pytest.raises(exc, match=pattern):
            call()

    def test_error_names_the_function_class(self):
        with pytest.raises(ValueError, match=r"Function\.Sinusoid\.calc_value\(\)"):
            Function.Sinusoid(1, 1).calc_value([1.0, 2.0])

    @pytest.mark.parametrize(
        "make, exc, pattern",
        [
            (lambda: Function.Constant(math.inf), ValueError, "value"),
            (lambda: Function.Constant(1.0, -1), ValueError, "argument_size"),
            (lambda: Function.Constant(1.0, 1.5), TypeError, "argument_size"),
            (lambda: Function.Linear([]), ValueError, "at least 1"),
            (lambda: Function.Linear([[1, 2]]), ValueError, "1-D"),
            (lambda: Function.Linear([1, math.nan]), ValueError, r"coefficients\[1\]"),
            (lambda: Function.Polynomial([]), ValueError, "at least 1"),
            (lambda: Function.Polynomial(["a"]), TypeError, "real"),
            (lambda: Function.Step(0, 1, 2.0, 2.0), ValueError, "zero-length"),
            (lambda: Function.Step(0, math.nan, 0, 1), ValueError, "y1"),
            (lambda: Function.Sinusoid(1, math.inf), ValueError, "frequency"),
            (lambda: Function.Sinusoid(1, 1j), TypeError, "frequency"),
            (lambda: Function.Spline([0, 1, 1, 2], [0, 1, 2, 3]), ValueError, "strictly increasing"),
            (lambda: Function.Spline([0, 2, 1, 3], [0, 1, 2, 3]), ValueError, r"x\[1\] = 2.0"),
            (lambda: Function.Spline([0, 1, 2], [0, 1, 2]), ValueError, "at least 4"),
            (lambda: Function.Spline([0, 1, 2, 3], [0, 1, 2]), ValueError, "4 entries but y has 3"),
            (lambda: Function.Spline([0, 1, 2, 3], [0, 1, math.nan, 3]), ValueError, r"y\[2\]"),
            (lambda: Function.Spline([0, 1, 2, 3], [0, 1, 2, 3], degree=0), ValueError, "degree"),
            (lambda: Function.Spline([0, 1, 2, 3], [0, 1, 2, 3], degree=6), ValueError, "degree"),
        ],
    )
    def test_bad_construction(self, make, exc, pattern):
        with pytest.raises(exc, match=pattern):
            make()

    def test_require_function(self):
        f = Function.Step(0, 1, 0, 1)
        assert require_function(f, argument_size=1, min_derivative_order=2) is f
        with pytest.raises(ValueError, match=r"Coupler #1: Function\.Step.*order 3.*4"):
            require_function(f, min_derivative_order=4, owner="Coupler #1")
        with pytest.raises(ValueError, match="takes 1 argument.*2 will be passed"):
            require_function(f, argument_size=2)
        with pytest.raises(TypeError, match="expected a simtk Function"):
            require_function(lambda x: x)

    def test_builtins_are_immutable_and_picklable(self):
        c = [1.0, -2.0, 0.5]
        f = Function.Linear(c)
        c[0] = 100.0  # the caller's list is not shared
        assert f.calc_value([1.0, 1.0]) == -0.5
        with pytest.raises(ValueError):
            f.get_coefficients()[0] = 3.0
        xs = np.linspace(0.0, 2.0, 6)
        for g in (f, Function.Spline(xs, xs**2), Function.Step(1, 2, 3, 4), Function.Constant(3.0, 0)):
            h = pickle.loads(pickle.dumps(g))
            assert type(h) is type(g)
            m = g.get_argument_size()
            x = np.full(m, 0.75)
            assert h.calc_value(x) == g.calc_value(x)


# --------------------------------------------------------------------------------------------------------
# Built-ins, closed forms
# --------------------------------------------------------------------------------------------------------


class TestConstant:
    def test_value_and_derivatives(self):
        f = Function.Constant(2.5, 3)
        assert f.get_argument_size() == 3
        assert f.calc_value([1.0, -4.0, 9.0]) == 2.5
        assert f.calc_derivative([2], [1.0, -4.0, 9.0]) == 0.0
        assert f.calc_derivative([0, 1, 2, 0], [1.0, -4.0, 9.0]) == 0.0
        assert f.get_max_derivative_order() >= 2**31 - 1

    def test_seed_zero_arguments(self):
        """Function::Constant(0, 0) of the FunctionBased example: no arguments at all."""
        f = Function.Constant(0, 0)
        assert f.get_argument_size() == 0
        assert f.calc_value([]) == 0.0
        assert f.calc_value(np.empty(0)) == 0.0
        assert f.calc_values(np.empty((4, 0))).tolist() == [0.0] * 4

    def test_default_one_argument_accepts_scalar(self):
        assert Function.Constant(-1.0).calc_value(7.0) == -1.0


class TestLinear:
    def test_seed_coupler_coefficients(self):
        """(A, B, C) = (1, -1, 0) gives q0 - q1, the coupler of section 3.3."""
        f = Function.Linear([1, -1, 0])
        assert f.get_argument_size() == 2
        assert f.calc_value([3.0, 1.25]) == 1.75
        assert f.calc_derivative([0], [0.0, 0.0]) == 1.0
        assert f.calc_derivative([1], [0.0, 0.0]) == -1.0

    def test_seed_function_based_coefficients(self):
        """(1, 0) of section 3.4: one argument, f(q) = q."""
        f = Function.Linear([1, 0])
        assert f.get_argument_size() == 1
        assert f.calc_value(0.3) == 0.3
        assert f.calc_derivative([0], 0.3) == 1.0
        assert f.calc_derivative([0, 0], 0.3) == 0.0

    def test_last_coefficient_is_the_constant(self):
        assert Function.Linear([2.0, 3.0, 5.0]).calc_value([0.0, 0.0]) == 5.0
        assert Function.Linear([4.0]).calc_value([]) == 4.0

    @FAST
    @given(st.lists(finite, min_size=2, max_size=5), st.data())
    def test_exactly_affine(self, coefs, data):
        """Law: f(x) = sum c_i x_i + c_m, so f(a x + (1-a) y) = a f(x) + (1-a) f(y) and the partials are
        the coefficients."""
        m = len(coefs) - 1
        f = Function.Linear(coefs)
        vec = st.lists(finite, min_size=m, max_size=m)
        x = np.array(data.draw(vec))
        y = np.array(data.draw(vec))
        a = data.draw(st.floats(0.0, 1.0))
        expect = math.fsum([c * xi for c, xi in zip(coefs, x)]) + coefs[-1]
        assert f.calc_value(x) == pytest.approx(expect, abs=(2**13 * EPS))
        assert f.calc_value(a * x + (1 - a) * y) == pytest.approx(
            a * f.calc_value(x) + (1 - a) * f.calc_value(y), abs=2**16 * EPS
        )
        for i in range(m):
            assert f.calc_derivative([i], x) == coefs[i]

    def test_partials_and_mixed_partials_by_finite_differences(self):
        """Law: first partials match central differences; every second (mixed) partial is zero, matching the
        four-point mixed difference of the value."""
        f = Function.Linear([0.5, -2.0, 3.0, 1.5])
        x = np.array([0.3, -0.7, 1.1])
        h = 1e-4
        for i in range(3):
            assert f.calc_derivative([i], x) == pytest.approx(central_diff(f.calc_value, x, i, h), rel=1e-9)
            for j in range(3):
                ei, ej = np.eye(3)[i] * h, np.eye(3)[j] * h
                mixed = (
                    f.calc_value(x + ei + ej)
                    - f.calc_value(x + ei - ej)
                    - f.calc_value(x - ei + ej)
                    + f.calc_value(x - ei - ej)
                ) / (4 * h * h)
                assert f.calc_derivative([i, j], x) == 0.0
                assert mixed == pytest.approx(0.0, abs=1e-6)
                assert f.calc_derivative([i, j, i], x) == 0.0

    def test_vectorized(self):
        f = Function.Linear([1.0, 2.0, -1.0])
        X = np.array([[0.0, 0.0], [1.0, 1.0], [-2.0, 0.5]])
        np.testing.assert_allclose(f.calc_values(X), [-1.0, 2.0, -2.0])
        np.testing.assert_array_equal(f.calc_derivatives([1], X), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(f.calc_derivatives([1, 0], X), [0.0, 0.0, 0.0])


class TestPolynomial:
    def test_coefficients_are_in_decreasing_powers(self):
        """Simbody: f(x) = a x^n + b x^(n-1) + ... + c."""
        assert Function.Polynomial([1.0, 0.0, 0.0]).calc_value(3.0) == 9.0
        assert Function.Polynomial([2.0, 3.0]).calc_value(10.0) == 23.0
        assert Function.Polynomial([7.0]).calc_value(-4.0) == 7.0

    def test_cubic_closed_form_derivatives(self):
        f = Function.Polynomial([2.0, -1.0, 0.5, 3.0])  # 2x^3 - x^2 + x/2 + 3
        x = 1.5
        assert f.calc_value(x) == pytest.approx(2 * x**3 - x**2 + 0.5 * x + 3)
        assert f.calc_derivative([0], x) == pytest.approx(6 * x**2 - 2 * x + 0.5)
        assert f.calc_derivative([0, 0], x) == pytest.approx(12 * x - 2)
        assert f.calc_derivative([0, 0, 0], x) == pytest.approx(12.0)
        assert f.calc_derivative([0] * 4, x) == 0.0
        assert f.calc_derivative([0] * 40, x) == 0.0

    @FAST
    @given(st.lists(finite, min_size=1, max_size=7), st.floats(-2.0, 2.0))
    def test_random_polynomial_derivatives(self, coefs, x):
        """Law: f^(n) equals numpy.polyder's n-th derivative for every n, and f' (f'', f''') equals the
        central difference of f (f', f'')."""
        f = Function.Polynomial(coefs)
        scale = sum(abs(c) for c in coefs) * 64.0 + 1.0
        assert f.calc_value(x) == pytest.approx(np.polyval(coefs, x), abs=(2**13 * EPS) * scale)
        for n in range(1, len(coefs) + 2):
            ref = np.polyval(np.polyder(coefs, n), x) if n < len(coefs) else 0.0
            assert f.calc_derivative([0] * n, x) == pytest.approx(ref, abs=(2**16 * EPS) * scale * 8**n)
        h = 1e-5
        lower = f.calc_value
        for n in range(1, 4):
            fd = central_diff(lambda y, g=lower: g(y), [x], 0, h)
            assert f.calc_derivative([0] * n, x) == pytest.approx(fd, abs=1e-9 * scale * 8**n)
            lower = lambda y, n=n: f.calc_derivative([0] * n, y)  # noqa: E731

    def test_vectorized(self):
        f = Function.Polynomial([1.0, 0.0, -1.0])
        t = np.array([-1.0, 0.0, 2.0])
        np.testing.assert_allclose(f.calc_values(t), t**2 - 1)
        np.testing.assert_allclose(f.calc_derivatives([0], t), 2 * t)
        np.testing.assert_array_equal(f.calc_derivatives([0, 0, 0], t), 0.0)


class TestStep:
    def test_endpoints_and_outside(self):
        f = Function.Step(-1.0, 3.0, 2.0, 4.0)
        assert f.calc_value(2.0) == -1.0
        assert f.calc_value(4.0) == 3.0
        assert f.calc_value(-10.0) == -1.0
        assert f.calc_value(10.0) == 3.0
        assert f.calc_value(3.0) == pytest.approx(1.0)  # the quintic passes 1/2 at the midpoint

    def test_simbody_quintic(self):
        """Simbody's stepUp is 10 s^3 - 15 s^4 + 6 s^5 on s in [0, 1]."""
        f = Function.Step(0.0, 1.0, 0.0, 1.0)
        for s in (0.1, 0.25, 0.6, 0.9):
            assert f.calc_value(s) == pytest.approx(10 * s**3 - 15 * s**4 + 6 * s**5, rel=(64 * EPS))
            assert f.calc_derivative([0], s) == pytest.approx(30 * s**2 - 60 * s**3 + 30 * s**4)
            assert f.calc_derivative([0, 0], s) == pytest.approx(60 * s - 180 * s**2 + 120 * s**3)
            assert f.calc_derivative([0, 0, 0], s) == pytest.approx(60 - 360 * s + 360 * s**2)
        assert f.get_max_derivative_order() == 3

    def test_step_down_when_x1_below_x0(self):
        f = Function.Step(5.0, 1.0, 2.0, 0.0)
        assert f.calc_value(2.0) == 5.0
        assert f.calc_value(3.0) == 5.0
        assert f.calc_value(0.0) == 1.0
        assert f.calc_value(-1.0) == 1.0
        # Running the same step forward in x: g(x) = f(2 - x) with g from x=0 to 2.
        g = Function.Step(5.0, 1.0, 0.0, 2.0)
        for x in (0.2, 0.7, 1.5):
            assert f.calc_value(x) == pytest.approx(g.calc_value(2.0 - x))
            assert f.calc_derivative([0], x) == pytest.approx(-g.calc_derivative([0], 2.0 - x))
            assert f.calc_derivative([0, 0], x) == pytest.approx(g.calc_derivative([0, 0], 2.0 - x))

    @FAST
    @given(finite, finite, finite, st.floats(0.1, 3.0), st.booleans())
    def test_monotone_and_symmetric(self, y0, y1, x0, width, down):
        """Law: f moves monotonically from y0 to y1 across the interval and f(x0 + s dx) + f(x1 - s dx) =
        y0 + y1 (stepUp(s) + stepUp(1 - s) = 1)."""
        x1 = x0 - width if down else x0 + width
        f = Function.Step(y0, y1, x0, x1)
        s = np.linspace(0.0, 1.0, 41)
        vals = np.array([f.calc_value(x0)] + [f.calc_value(x0 + si * (x1 - x0)) for si in s[1:-1]]
                        + [f.calc_value(x1)])
        assert vals[0] == y0 and vals[-1] == y1
        diffs = np.diff(vals) * np.sign(y1 - y0)
        assert (diffs >= -(2**13 * EPS)).all()
        assert (np.minimum(y0, y1) <= vals).all() and (vals <= np.maximum(y0, y1)).all()
        for si in s:
            a = f.calc_value(x0 + si * (x1 - x0))
            b = f.calc_value(x1 - si * (x1 - x0))
            assert a + b == pytest.approx(y0 + y1, abs=(2**13 * EPS) * (1 + abs(y0) + abs(y1)))

    def test_c2_at_both_ends(self):
        """Law: f' and f'' are zero at x0 and x1 and tend to zero from inside (f' ~ 30 s^2, f'' ~ 60 s),
        so f is C2 across the ends; f''' jumps (Simbody guarantees nothing there)."""
        f = Function.Step(1.0, 2.0, 0.0, 1.0)
        for end, inward in ((0.0, 1.0), (1.0, -1.0)):
            assert f.calc_derivative([0], end) == 0.0
            assert f.calc_derivative([0, 0], end) == 0.0
            for eps in (1e-2, 1e-4, 1e-6):
                x = end + inward * eps
                assert abs(f.calc_derivative([0], x)) <= 31 * eps**2
                assert abs(f.calc_derivative([0, 0], x)) <= 61 * eps
                assert abs(f.calc_value(x) - f.calc_value(end)) <= 11 * eps**3 + (64 * EPS)
            assert abs(f.calc_derivative([0, 0, 0], end + inward * 1e-6)) == pytest.approx(60.0, rel=1e-4)

    def test_derivatives_by_finite_differences(self):
        """Law: f^(n) is the central difference of f^(n-1), for n = 1, 2, 3, inside the interval of a step
        with unit-free scaling (y1 - y0 = 3, x1 - x0 = -0.5)."""
        f = Function.Step(2.0, 5.0, 1.0, 0.5)
        h = 1e-6
        for x in (0.55, 0.7, 0.8, 0.95):
            lower = f.calc_value
            for n in range(1, 4):
                fd = central_diff(lambda y, g=lower: g(y), [x], 0, h)
                assert f.calc_derivative([0] * n, x) == pytest.approx(fd, rel=1e-5, abs=1e-5)
                lower = lambda y, n=n: f.calc_derivative([0] * n, y)  # noqa: E731
        for x in (0.2, 1.5):
            assert [f.calc_derivative([0] * n, x) for n in (1, 2, 3)] == [0.0, 0.0, 0.0]

    def test_vectorized(self):
        f = Function.Step(0.0, 1.0, 0.0, 1.0)
        t = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
        np.testing.assert_allclose(f.calc_values(t), [0.0, 0.0, 0.5, 1.0, 1.0])
        np.testing.assert_allclose(f.calc_derivatives([0], t), [0.0, 0.0, 30 / 16, 0.0, 0.0])
        np.testing.assert_allclose(f.calc_derivatives([0, 0, 0], t), [0.0, 0.0, -30.0, 0.0, 0.0])
        # An interval whose width does not round-trip through its reciprocal still ends exactly at y1.
        g = Function.Step(1.0, 0.0, 1.0, 1.0 + 0.99999)
        t = np.array([1.0, 1.0 + 0.99999, 3.0, 0.0])
        np.testing.assert_array_equal(g.calc_values(t), [1.0, 0.0, 0.0, 1.0])
        assert g.calc_value(1.0 + 0.99999) == 0.0
        down = Function.Step(2.0, 4.0, 1.0, -1.0)
        t = np.array([2.0, 1.0, 0.0, -1.0, -2.0])
        np.testing.assert_allclose(down.calc_values(t), [2.0, 2.0, 3.0, 4.0, 4.0])
        np.testing.assert_allclose(down.calc_derivatives([0], t), [0.0, 0.0, -30 / 16, 0.0, 0.0])


class TestSinusoid:
    def test_frequency_is_in_radians_per_unit(self):
        f = Function.Sinusoid(2.0, 2 * math.pi, 0.0)  # period 1
        assert f.calc_value(0.25) == pytest.approx(2.0)
        assert f.calc_value(0.75) == pytest.approx(-2.0)
        assert f.calc_value(0.3) == pytest.approx(f.calc_value(1.3))

    def test_closed_form_derivatives(self):
        a, w, p = 1.5, 3.0, 0.4
        f = Function.Sinusoid(a, w, p)
        x = 0.7
        th = w * x + p
        expect = [a * math.sin(th), a * w * math.cos(th), -a * w**2 * math.sin(th), -a * w**3 * math.cos(th)]
        assert f.calc_value(x) == pytest.approx(expect[0])
        for n in range(1, 9):
            assert f.calc_derivative([0] * n, x) == pytest.approx(w ** (n - n % 4) * expect[n % 4], rel=(512 * EPS))

    def test_phase_defaults_to_zero(self):
        assert Function.Sinusoid(1.0, 1.0).calc_value(0.0) == 0.0

    @FAST
    @given(finite, finite, finite, st.floats(-3.0, 3.0))
    def test_derivatives_by_finite_differences(self, a, w, p, x):
        """Law: f^(n) is the central difference of f^(n-1) for n = 1, 2, 3."""
        f = Function.Sinusoid(a, w, p)
        h = 1e-5
        lower = f.calc_value
        for n in range(1, 4):
            fd = central_diff(lambda y, g=lower: g(y), [x], 0, h)
            tol = 1e-7 * (1 + abs(a)) * (1 + abs(w)) ** (n + 2)
            assert f.calc_derivative([0] * n, x) == pytest.approx(fd, abs=tol)
            lower = lambda y, n=n: f.calc_derivative([0] * n, y)  # noqa: E731

    def test_vectorized(self):
        f = Function.Sinusoid(2.0, 0.5, 0.1)
        t = np.linspace(-2.0, 2.0, 7)
        np.testing.assert_allclose(f.calc_values(t), 2.0 * np.sin(0.5 * t + 0.1))
        np.testing.assert_allclose(f.calc_derivatives([0, 0, 0], t), -2.0 * 0.125 * np.cos(0.5 * t + 0.1))


class TestSpline:
    @pytest.mark.parametrize("degree", [1, 2, 3, 4, 5])
    def test_interpolates_its_points(self, degree):
        rng = np.random.default_rng(degree)
        x = np.sort(rng.uniform(-2.0, 2.0, 9))
        y = rng.normal(size=9)
        f = Function.Spline(x, y, degree)
        assert f.get_degree() == degree
        for xi, yi in zip(x, y):
            assert f.calc_value(xi) == pytest.approx(yi, abs=(2**13 * EPS))
        np.testing.assert_allclose(f.calc_values(x), y, atol=(2**13 * EPS))

    def test_cubic_reproduces_a_cubic(self):
        """A not-a-knot cubic spline through samples of a cubic polynomial is that polynomial, including
        outside the data (the end pieces are extended)."""
        p = [0.5, -1.0, 2.0, -3.0]  # decreasing powers
        x = np.array([-1.0, -0.4, 0.1, 0.5, 1.3, 2.0])
        f = Function.Spline(x, np.polyval(p, x))
        for t in np.linspace(-1.5, 2.5, 23):
            assert f.calc_value(t) == pytest.approx(np.polyval(p, t), abs=(2**16 * EPS))
            for n in (1, 2, 3):
                assert f.calc_derivative([0] * n, t) == pytest.approx(
                    np.polyval(np.polyder(p, n), t), abs=1e-9
                )
            assert f.calc_derivative([0] * 4, t) == 0.0
            assert f.calc_derivative([0] * 9, t) == 0.0

    def test_linear_spline_is_piecewise_linear_interpolation(self):
        x = np.array([0.0, 1.0, 1.5, 3.0])
        y = np.array([1.0, -1.0, 2.0, 2.5])
        f = Function.Spline(x, y, degree=1)
        t = np.linspace(0.0, 3.0, 31)
        np.testing.assert_allclose(f.calc_values(t), np.interp(t, x, y), atol=(64 * EPS))
        assert f.calc_derivative([0], 1.25) == pytest.approx(6.0)
        assert f.calc_derivative([0, 0], 1.25) == 0.0

    def test_matches_scipy_cubic_spline(self):
        """Consistency with an independently built scipy CubicSpline (also not-a-knot)."""
        from scipy.interpolate import CubicSpline

        x = np.array([0.0, 0.3, 0.5, 1.1, 1.7, 2.0, 2.8])
        y = np.cos(2 * x) + x
        f = Function.Spline(x, y)
        ref = CubicSpline(x, y)
        t = np.linspace(0.0, 2.8, 57)
        np.testing.assert_allclose(f.calc_values(t), ref(t), atol=(2**13 * EPS))
        for n in (1, 2):
            np.testing.assert_allclose(f.calc_derivatives([0] * n, t), ref(t, n), atol=1e-10)
            np.testing.assert_allclose([f.calc_derivative([0] * n, ti) for ti in t], ref(t, n), atol=1e-10)
        inner = 0.5 * (x[:-1] + x[1:])  # f''' jumps at knots: compare away from them
        np.testing.assert_allclose(f.calc_derivatives([0, 0, 0], inner), ref(inner, 3), atol=1e-9)

    def test_cubic_is_c2_at_interior_knots(self):
        """Law: value, f' and f'' have equal left and right limits at each interior knot, while the third
        derivative jumps.

        Each one-sided limit is extrapolated linearly from two points on that side (error O(eps^2)), so
        only the piece on that side is evaluated."""
        x = np.array([0.0, 0.4, 1.0, 1.3, 2.0, 2.2])
        f = Function.Spline(x, np.exp(-x) * np.sin(3 * x))
        eps = 1e-5

        def limits(g, xk):
            return 2 * g(xk - eps) - g(xk - 2 * eps), 2 * g(xk + eps) - g(xk + 2 * eps)

        jumps = []
        for xk in x[2:-2]:  # x[1] and x[-2] are not-a-knot: the third derivative is continuous there
            for n in (0, 1, 2, 3):
                g = f.calc_value if n == 0 else (lambda t, n=n: f.calc_derivative([0] * n, t))
                left, right = limits(g, xk)
                if n < 3:
                    assert left == pytest.approx(right, abs=1e-7)
                else:
                    jumps.append(abs(left - right))
        assert max(jumps) > 1e-3

    @FAST
    @given(st.integers(1, 5), st.floats(0.05, 0.95))
    def test_derivatives_by_finite_differences(self, degree, frac):
        """Law: for n < k, f^(n) is the central difference of f^(n-1) (the spline is C^(k-1)); f^(n) = 0
        for n > k."""
        x = np.linspace(0.0, 2.0, 9)
        f = Function.Spline(x, np.sin(2 * x) + 0.3 * x**2, degree)
        t = 2.0 * frac
        h = 1e-6
        lower = f.calc_value
        for n in range(1, degree):
            fd = central_diff(lambda y, g=lower: g(y), [t], 0, h)
            assert f.calc_derivative([0] * n, t) == pytest.approx(fd, rel=1e-4, abs=1e-4)
            lower = lambda y, n=n: f.calc_derivative([0] * n, y)  # noqa: E731
        assert f.calc_derivative([0] * (degree + 1), t) == 0.0

    def test_scalar_and_array_arguments(self):
        x = np.linspace(0.0, 1.0, 5)
        f = Function.Spline(x, x**3)
        assert f.calc_value(0.5) == f.calc_value([0.5]) == f.calc_value(np.array([0.5]))
        assert f.calc_value(0.5) == pytest.approx(0.125)


# --------------------------------------------------------------------------------------------------------
# parameters(): the constructor's arguments, as model files store them
# --------------------------------------------------------------------------------------------------------

PARAMETERS = [
    (Function.Constant, {"value": -0.75, "argument_size": 3}),
    (Function.Linear, {"coefficients": [0.1, -2.5, 1.0 / 3.0]}),
    (Function.Polynomial, {"coefficients": [2.0, 0.0, -1.0 / 7.0, 3.0]}),
    (Function.Step, {"y0": 0.2, "y1": -1.3, "x0": 0.1, "x1": 0.9}),
    (Function.Sinusoid, {"amplitude": 0.4, "frequency": 2.0 / 3.0, "phase": -0.1}),
    (Function.Spline, {"x": [0.0, 0.3, 1.1, 2.0, 2.5], "y": [1.0, -0.2, 0.7, 0.1, 1.0 / 3.0], "degree": 3}),
]


@pytest.mark.parametrize("cls, args", PARAMETERS, ids=[c.__qualname__ for c, _ in PARAMETERS])
def test_parameters_return_what_the_constructor_took(cls, args):
    f = cls(**args)
    got = f.parameters()
    assert list(got) == list(args)  # the constructor's names, in its order
    for name, taken in args.items():
        assert np.array_equal(np.asarray(got[name], dtype=float), np.asarray(taken, dtype=float))
        assert type(got[name]) is not list  # numbers as floats/ints, vectors as arrays
    again = cls(**got)
    assert repr(again) == repr(f)
    m = f.get_argument_size()
    xs = np.linspace(-0.5, 3.0, 2 * (m or 1) * 7).reshape(-1, m) if m else np.zeros((3, 0))
    np.testing.assert_array_equal(again.calc_values(xs), f.calc_values(xs))  # rebuilt bit for bit


def test_parameter_arrays_are_read_only():
    for f in (Function.Linear([1.0, 2.0]), Function.Polynomial([1.0, 2.0]), Function.Spline([0, 1, 2], [0, 1, 0], 1)):
        for value in f.parameters().values():
            if isinstance(value, np.ndarray):
                with pytest.raises(ValueError):
                    value[0] = 5.0


def test_step_getters():
    f = Function.Step(0.2, -1.3, 0.9, 0.1)
    assert (f.get_start_value(), f.get_end_value(), f.get_start_point(), f.get_end_point()) == (0.2, -1.3, 0.9, 0.1)
