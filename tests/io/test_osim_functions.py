"""The function forms load_osim reads beyond Simbody's (issue 29): GCVSpline, MultivariatePolynomialFunction
and ExpressionBasedFunction, against OpenSim 4.6's own evaluation and accelerations.

OpenSim's MultivariatePolynomialFunction and ExpressionBasedFunction return the first derivative for
any derivative order (checked below), so a second derivative is checked against finite differences
of OpenSim's first ones, and model accelerations are compared at zero speed where a coupler or a
CustomJoint axis uses one (the second derivatives then do not enter the accelerations).
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from test_osim import REL, add_chain, compare_udot, coupler, new_model, write  # noqa: E402
from test_osim_custom import custom_joint, femur_and_tibia  # noqa: E402

from simtk.io import load_model, load_osim, save_model  # noqa: E402
from simtk.io._lepton import LeptonError  # noqa: E402
from simtk.io._osim_functions import (  # noqa: E402
    ExpressionFunction,
    GCVSplineFunction,
    MultivariatePolynomialFunction,
)
from simtk.io.osim import OsimFileError  # noqa: E402

EPS = np.finfo(float).eps


def gcv_xml(x, y, degree, variance=0.0) -> str:
    return (f"<GCVSpline><half_order>{(degree + 1) // 2}</half_order><error_variance>{variance}</error_variance>"
            f"<x>{' '.join(repr(float(v)) for v in x)}</x><y>{' '.join(repr(float(v)) for v in y)}</y></GCVSpline>")


def opensim_function(tmp_path, xml: str):
    path = tmp_path / "f.xml"
    path.write_text(f'<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">{xml}'
                    "</OpenSimDocument>")
    return osim.Function.safeDownCast(osim.OpenSimObject.makeObjectFromFile(str(path)))


def theirs(f, x, order=0, comps=None):
    v = osim.Vector(list(map(float, np.atleast_1d(x))))
    if order == 0 and comps is None:
        return f.calcValue(v)
    return f.calcDerivative(osim.StdVectorInt(comps if comps is not None else [0] * order), v)


# ---------------------------------------------------------------------- GCVSpline
@pytest.mark.parametrize("degree", [1, 3, 5, 7])
def test_gcv_spline_matches_opensim_inside_at_knots_and_outside(tmp_path, degree):
    """OpenSim's GCVSpline with error variance 0 (its default) and simtk's natural interpolating spline agree
    to round-off in value and derivatives 1 to 3, between, at and beyond the points (where GCVSPL continues
    with the polynomial of degree m - 1)."""
    rng = np.random.default_rng(degree)
    m = (degree + 1) // 2
    for trial in range(4):
        n = int(rng.integers(2 * m, 2 * m + 10))
        hmin = 0.3
        x = np.concatenate([[0.0], np.cumsum(rng.uniform(hmin, 1.0, n - 1))]) + rng.uniform(-3, 3)
        y = rng.normal(size=n)
        ref = osim.GCVSpline.safeDownCast(opensim_function(tmp_path, gcv_xml(x, y, degree)))
        mine = GCVSplineFunction(x, y, degree)
        ts = np.concatenate([rng.uniform(x[0], x[-1], 15), x[[0, 1, -2, -1]],
                             [x[0] - 0.5, x[-1] + 0.7, x[0] - 3.0, x[-1] + 2.0]])
        for k in range(4):
            for t in ts:
                a = theirs(ref, t, k)
                b = mine.calc_derivative([0] * k, [t]) if k else mine.calc_value([t])
                # round-off of a solve on points hmin apart, grown by the distance polynomially and by 1/hmin per
                # derivative
                tol = 2 ** 10 * EPS * max(1.0, np.abs(y).max()) * (1 + abs(t - x[0]) + abs(t - x[-1])) ** m \
                    / hmin ** k
                assert abs(a - b) <= tol, (degree, k, t, a, b)


def test_gcv_spline_in_a_custom_joint_and_a_coupler_with_speeds(tmp_path):
    """A CustomJoint whose translations are GCVSplines of degree 3 and 5 (compiled) and 7 (Python), and a
    coupler through a GCVSpline: accelerations at random states with speeds equal OpenSim's."""
    rng = np.random.default_rng(29)
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0), [0, 0, 1]),
                                       (1, [], osim.Constant(0.0), [1, 0, 0]),
                                       (2, [], osim.Constant(0.0), [0, 1, 0]),
                                       (3, ["k"], osim.LinearFunction(0.1, 0.0)),
                                       (4, ["k"], osim.LinearFunction(0.2, 0.0)),
                                       (5, ["k"], osim.LinearFunction(0.3, 0.0))])
    b3, = add_chain(model, rng, [osim.PinJoint], "c")
    b4 = add_chain(model, rng, [osim.SliderJoint], "d")
    del b3, b4
    coupler(model, "jc1_coord_0", "jd1_coord_0", osim.LinearFunction(0.5, 0.0), "gcv_coupler")
    path = write(model, tmp_path)
    text = path.read_text()
    knots = np.linspace(-2.0, 2.0, 9)
    for i, (deg, ys) in enumerate([(3, 0.05 * np.sin(2 * knots)), (5, -0.3 + 0.03 * knots ** 2),
                                   (7, 0.04 * np.cos(knots))]):
        text, n = re.subn(rf'<LinearFunction name="function">\s*<coefficients>\s*0\.{i + 1} 0</coefficients>\s*'
                          r"</LinearFunction>", gcv_xml(knots, ys, deg).replace("<GCVSpline>",
                                                                                '<GCVSpline name="function">'), text)
        assert n == 1
    text, n = re.subn(r"(<coupled_coordinates_function>)\s*<LinearFunction.*?</LinearFunction>",
                      lambda mo: mo.group(1) + gcv_xml(knots, 0.3 * np.sin(knots), 3), text, flags=re.S)
    assert n == 1
    path.write_text(text)
    assert compare_udot(path, rng, n_states=5, spread=1.5) < REL


def test_gcv_spline_refusals_name_the_element_and_line(tmp_path):
    """Too few points for the degree is refused naming the joint's axis and the line (a smoothing spline is
    read: tests/io/test_osim_gcv_smoothing.py)."""
    rng = np.random.default_rng(5)
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0))])
    path = write(model, tmp_path)
    base = path.read_text()
    pat = r'<LinearFunction name="function">\s*<coefficients>\s*1 0</coefficients>\s*</LinearFunction>'
    few = gcv_xml([0, 1, 2, 3, 4], [0, 1, 0, 1, 0], 5).replace("<GCVSpline>", '<GCVSpline name="function">')
    path.write_text(re.sub(pat, few, base))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "<GCVSpline" in t)
    with pytest.raises(OsimFileError, match=rf":{line}: CustomJoint 'cj' rotation1: GCVSpline: degree 5 "
                                            r"needs at least 6 points"):
        load_osim(path)
    with pytest.raises(ValueError, match="at least 4 points"):
        GCVSplineFunction([0, 1, 2], [0, 1, 0], 3)


# ---------------------------------------------------------------------- MultivariatePolynomialFunction
def mvp_xml(c, dim, order) -> str:
    return (f"<MultivariatePolynomialFunction><coefficients>{' '.join(repr(float(v)) for v in c)}</coefficients>"
            f"<dimension>{dim}</dimension><order>{order}</order></MultivariatePolynomialFunction>")


@pytest.mark.parametrize("dim,order", [(1, 3), (2, 2), (2, 4), (3, 3)])
def test_multivariate_polynomial_matches_opensim(tmp_path, dim, order):
    """Values and first partial derivatives equal OpenSim's (its coefficient order); a second partial is the
    central difference of OpenSim's first ones."""
    rng = np.random.default_rng(10 * dim + order)
    c = rng.normal(size=math.comb(dim + order, order))
    ref = opensim_function(tmp_path, mvp_xml(c, dim, order))
    mine = MultivariatePolynomialFunction(c, dim, order)
    for _ in range(5):
        x = rng.uniform(-1.5, 1.5, dim)
        scale = np.abs(c).sum() * (1 + np.abs(x).max()) ** order
        assert abs(mine.calc_value(x) - theirs(ref, x)) <= 64 * EPS * scale
        for i in range(dim):
            assert abs(mine.calc_derivative([i], x) - theirs(ref, x, comps=[i])) <= 64 * order * EPS * scale
            for j in range(dim):
                h = 1e-4
                e = np.eye(dim)[j] * h
                fd = (theirs(ref, x + e, comps=[i]) - theirs(ref, x - e, comps=[i])) / (2 * h)
                # the central difference's truncation: h^2/6 times a third derivative, bounded by order^3 * scale
                assert abs(mine.calc_derivative([i, j], x) - fd) <= h ** 2 * order ** 3 * scale + 1e6 * EPS * scale


def test_multivariate_polynomial_coupler_of_two_coordinates(tmp_path):
    """A CoordinateCouplerConstraint with two independent coordinates and a MultivariatePolynomialFunction:
    accelerations equal OpenSim's at zero speed."""
    rng = np.random.default_rng(61)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint, osim.PinJoint, osim.SliderJoint])
    cc = osim.CoordinateCouplerConstraint()
    cc.setName("mvp")
    names = osim.ArrayStr()
    names.append("jb1_coord_0")
    names.append("jb2_coord_0")
    cc.setIndependentCoordinateNames(names)
    cc.setDependentCoordinateName("jb3_coord_0")
    cc.setFunction(osim.LinearFunction(1.0, 0.0))
    model.addConstraint(cc)
    path = write(model, tmp_path)
    c = [0.1, -0.3, 0.2, 0.5, 0.4, -0.25]  # 1, y, y^2, x, xy, x^2
    text, n = re.subn(r"(<coupled_coordinates_function>)\s*<LinearFunction.*?</LinearFunction>",
                      lambda mo: mo.group(1) + mvp_xml(c, 2, 2), path.read_text(), flags=re.S)
    assert n == 1
    path.write_text(text)
    m = load_osim(path)
    f = m.constraints["mvp"][0].get_function()
    # the coupler's function of (x, y, dep): scale * p(x, y) - dep, p written out by hand
    x, y = 0.3, -0.7
    assert abs(f.calc_value([x, y, 0.0]) - (0.1 - 0.3 * y + 0.2 * y * y + 0.5 * x + 0.4 * x * y - 0.25 * x * x)) \
        <= 16 * EPS
    assert compare_udot(path, rng, n_states=4, spread=1.0, values=_at_rest) < REL


def _at_rest(rng, names):
    return {n: float(rng.uniform(-1, 1)) for n in names}, {n: 0.0 for n in names}


# ---------------------------------------------------------------------- ExpressionBasedFunction
_LEAVES = ["x", "y", "0.5", "2", "1.5e-1"]
_UNARY = ["sin", "cos", "exp", "atan", "tanh", "sqrt", "square", "cube", "sinh", "cosh", "erf", "erfc", "abs",
          "log", "recip", "sec", "csc", "tan", "cot", "asin", "acos"]


def random_expression(rng, depth=3) -> str:
    if depth == 0 or rng.random() < 0.2:
        return str(rng.choice(_LEAVES))
    k = rng.integers(0, 7)
    a = random_expression(rng, depth - 1)
    b = random_expression(rng, depth - 1)
    if k == 0:
        return f"({a})+({b})"
    if k == 1:
        return f"({a})-{b}" if rng.random() < 0.5 else f"-{a}*{b}"
    if k == 2:
        return f"({a})*({b})"
    if k == 3:
        return f"({a})/(2+square({b}))"
    if k == 4:
        return f"square({a})^{rng.choice(['2', '0.5', '-1'])}"
    if k == 5:
        return f"{rng.choice(['min', 'max'])}({a},{b})"
    f = str(rng.choice(_UNARY))
    inner = {"sqrt": f"1+square({a})", "log": f"2+sin({a})", "recip": f"2+cos({a})", "asin": f"0.5*sin({a})",
             "acos": f"0.5*cos({a})", "sec": f"0.3*sin({a})", "csc": f"1+0.3*cos({a})", "tan": f"0.5*atan({a})",
             "cot": f"1+0.2*sin({a})"}.get(f, a)
    return f"{f}({inner})"


def expr_xml(text, variables) -> str:
    return f"<ExpressionBasedFunction><expression>{text}</expression><variables>{variables}</variables>" \
           "</ExpressionBasedFunction>"


def test_expression_function_matches_opensim_on_random_expressions(tmp_path):
    """Random expressions over every Lepton function and operator: values and first partials equal OpenSim's
    (to round-off relative to the size of the terms), second partials the central differences of
    OpenSim's first ones. Precedence cases (-2^2, 2^3^2, x*-y^2, 2^-1) included."""
    rng = np.random.default_rng(7)
    texts = ["-2^2+x", "2^3^2*x", "x*-y^2", "2^-1*y", "--x", "a*2;a=x+y", "step(x)*y+delta(y)", "x^y"]
    texts += [random_expression(rng) for _ in range(60)]
    checked = 0
    for text in texts:
        ref = opensim_function(tmp_path, expr_xml(text, "x y"))
        mine = ExpressionFunction(text, "x y")
        for _ in range(3):
            xy = rng.uniform(0.2, 1.3, 2)
            v = theirs(ref, xy)
            if not np.isfinite(v) or abs(v) > 1e6:
                continue
            scale = 1.0 + abs(v)
            assert abs(mine.calc_value(xy) - v) <= 1e3 * EPS * scale, text
            for i in range(2):
                d = theirs(ref, xy, comps=[i])
                assert abs(mine.calc_derivative([i], xy) - d) <= 1e4 * EPS * (1 + abs(d) + scale), text
                h = 1e-5
                e = np.eye(2)[1 - i] * h
                fd = (theirs(ref, xy + e, comps=[i]) - theirs(ref, xy - e, comps=[i])) / (2 * h)
                # truncation h^2 f''' / 6 plus the differences' round-off EPS |f'| / h
                tol = 1e-6 * (1 + abs(fd)) + 1e3 * EPS * (1 + abs(d)) / h
                assert abs(mine.calc_derivative([i, 1 - i], xy) - fd) <= tol, text
            checked += 1
    assert checked > 100


def test_malformed_expression_is_refused_with_the_element_and_line(tmp_path):
    """A CustomJoint axis with an ExpressionBasedFunction of two coordinates reads; a malformed expression
    (what OpenSim's Lepton refuses too) names the joint, the axis and the line."""
    rng = np.random.default_rng(71)
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["a"], osim.LinearFunction(1.0, 0.0), [0, 0, 1]),
                                       (1, ["b"], osim.LinearFunction(1.0, 0.0), [1, 0, 0]),
                                       (2, [], osim.Constant(0.0), [0, 1, 0]),
                                       (3, ["a", "b"], osim.Constant(0.25))])
    path = write(model, tmp_path)
    base = path.read_text()
    pat = r'<Constant name="function">\s*<value>0.25</value>\s*</Constant>'
    good = expr_xml("0.1*sin(p)*q-0.05*q^2", "p q").replace("<ExpressionBasedFunction>",
                                                           '<ExpressionBasedFunction name="function">')
    text, n = re.subn(pat, good, base)
    assert n == 1
    path.write_text(text)
    assert compare_udot(path, rng, n_states=4, spread=1.0, values=_at_rest) < REL
    for bad, why in [("0.1*sin(p)*q-", "expected a number"), ("0.1*sinus(p)", "unknown function 'sinus'"),
                     ("0.1*r", "unknown variable 'r'"), ("p q", "unexpected text")]:
        path.write_text(text.replace("0.1*sin(p)*q-0.05*q^2", bad))
        line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "<expression>" in t)
        with pytest.raises(OsimFileError, match=rf":{line}: CustomJoint 'cj' translation1: malformed "
                                                rf"<expression>: .*{re.escape(why)}"):
            load_osim(path)
    with pytest.raises(LeptonError):
        ExpressionFunction("x**2", "x")


def test_new_functions_save_and_load_with_the_model_format(tmp_path):
    """A model holding the three functions is written by save_model and read back by load_model; the
    rebuilt functions give the same values."""
    from simtk import (
        Body,
        Constraint,
        GeneralForceSubsystem,
        MassProperties,
        MobilizedBody,
        MultibodySystem,
        SimbodyMatterSubsystem,
        Transform,
    )
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], [0.1, 0.1, 0.1]))
    a = MobilizedBody.Pin(matter.ground, Transform(), body, Transform(), name="a")
    b = MobilizedBody.Slider(a, Transform(), body, Transform(), name="b")
    c = MobilizedBody.Slider(b, Transform(), body, Transform(), name="c")
    d = MobilizedBody.Slider(c, Transform(), body, Transform(), name="d")
    fs = [GCVSplineFunction(np.arange(6.0), np.sin(np.arange(6.0)), 5),
          MultivariatePolynomialFunction([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], 3, 2),
          ExpressionFunction("x*cos(y)-z*x; z=y^2", "x y z")]
    Constraint.CoordinateCoupler(matter, fs[0], [a], [0], name="k0")
    Constraint.CoordinateCoupler(matter, fs[1], [a, b, c], [0, 0, 0], name="k1")
    Constraint.CoordinateCoupler(matter, fs[2], [b, c, d], [0, 0, 0], name="k2")
    path = tmp_path / "m.simtk"
    save_model(system, path)
    again = load_model(path)
    for k, f in enumerate(fs):
        g = again.get_component(f"/matter/k{k}").get_function()
        assert type(g) is type(f)
        for x in np.random.default_rng(k).uniform(-1, 1, (4, f.get_argument_size())):
            assert g.calc_value(x) == f.calc_value(x)
