"""OpenSim's smoothing GCVSpline (error_variance not 0, issue 29) against OpenSim 4.6's own fit.

GCVSPL chooses the smoothing parameter p by a search that stops when its bracket's relative width
(r2 - r1)/(r1 + r2) is at most 1e-6 and takes the midpoint. Two implementations whose criterion values
differ by round-off may take the other half of a bracket where two criterion values nearly tie, which
moves p by up to the last brackets' width (golden ratio x 2e-6 of p); the spline then moves by
p ds/dp times that. The tolerance of the comparison is that bound (p ds/dp by central differences of
simtk's own fit) plus the round-off of the interpolating case; measured, most fits agree to round-off
and the others stay within the bound.

Where the criterion has no interior minimum its search runs to an end of p's range, and there OpenSim's
evaluation, not the termination, limits agreement: toward p -> 0 it forms the residual y - s by
cancellation (absolute error ~ eps |y|), so its criterion turns to noise once the residual is ~ sqrt(eps)
of the data; toward p -> oo its band system's condition grows as p el and its criterion's decrease
shrinks as 1 / (p el), which meet near p el ~ 1/sqrt(eps). simtk's forms have neither cancellation nor
that conditioning and reach the limit (interpolation, or the least-squares polynomial of degree m - 1);
OpenSim stops O(sqrt(eps)) of the data's scale from it.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from test_osim import REL, add_chain, compare_udot, coupler, write  # noqa: E402
from test_osim_custom import custom_joint, femur_and_tibia  # noqa: E402
from test_osim_functions import gcv_xml, opensim_function, theirs  # noqa: E402

from simtk.io import load_model, load_osim, save_model  # noqa: E402
from simtk.io._gcvspl import _CLAMP, _Penalty, basis_scale  # noqa: E402
from simtk.io._osim_functions import GCVSplineFunction  # noqa: E402
from simtk.io.osim import OsimFileError  # noqa: E402

EPS = np.finfo(float).eps
P_MOVE = 1.618033983 * 2e-6 * 1.25  # the last brackets' relative width, with a margin


def fit_at(x, y, degree, p):
    """The spline through simtk's smoothed values at smoothing parameter p."""
    values = _Penalty(x, (degree + 1) // 2).fit(y, p)[0]
    return GCVSplineFunction(x, values, degree)


def ev(f, t, k):
    return f.calc_derivative([0] * k, [t]) if k else f.calc_value([t])


def noisy(rng, m, sigma):
    n = int(rng.integers(2 * m + 6, 2 * m + 16))
    hmin = 0.3
    x = np.concatenate([[0.0], np.cumsum(rng.uniform(hmin, 1.0, n - 1))]) + rng.uniform(-3, 3)
    return x, np.sin(x) + sigma * rng.normal(size=n), hmin


@pytest.mark.parametrize("degree", [1, 3, 5, 7])
def test_smoothing_gcv_spline_matches_opensim(tmp_path, degree):
    """Values and derivatives 1 to 3 between, at and beyond the points, for random noisy data and error
    variances of 1/4, 1 and 4 times the noise's, and a negative one (p by cross-validation), agree with
    OpenSim's within the search's termination bound plus round-off."""
    rng = np.random.default_rng(100 + degree)
    m = (degree + 1) // 2
    worst = 0.0
    for variance_factor in (0.25, 1.0, 4.0, -1.0):
        sigma = 0.1
        x, y, hmin = noisy(rng, m, sigma)
        variance = variance_factor * sigma ** 2
        ref = osim.GCVSpline.safeDownCast(opensim_function(tmp_path, gcv_xml(x, y, degree, variance)))
        mine = GCVSplineFunction(x, y, degree, variance)
        p = mine.smoothing_parameter
        assert p > 0.0
        pel = p * basis_scale(x, m)
        at_end = pel <= _CLAMP * (1 + 1e-12) or pel * _CLAMP >= 1 - 1e-12
        lo, hi = fit_at(x, y, degree, p * (1 - 1e-3)), fit_at(x, y, degree, p * (1 + 1e-3))
        ts = np.concatenate([rng.uniform(x[0], x[-1], 12), x[[0, 1, -2, -1]],
                             [x[0] - 0.5, x[-1] + 0.7, x[0] - 3.0, x[-1] + 2.0]])
        for k in range(4):
            for t in ts:
                a, b = theirs(ref, t, k), ev(mine, t, k)
                p_dsdp = abs(ev(hi, t, k) - ev(lo, t, k)) / 2e-3
                roundoff = 2 ** 10 * EPS * max(1.0, np.abs(y).max()) * (1 + abs(t - x[0]) + abs(t - x[-1])) ** m \
                    / hmin ** k
                tol = P_MOVE * p_dsdp + roundoff * (2 ** 10 / np.sqrt(EPS) if at_end else 1.0)
                assert abs(a - b) <= tol, (degree, variance, k, t, a, b, tol)
                worst = max(worst, abs(a - b) / tol)
    print(f"degree {degree}: worst |simtk - OpenSim| / tolerance {worst:.2e}")


@pytest.mark.parametrize("degree", [3, 5])
def test_oversmoothing_tends_to_the_least_squares_polynomial(tmp_path, degree):
    """With a variance far above the data's departure from a polynomial of degree m - 1, the criterion
    decreases for every p and the fit is that polynomial fitted by least squares (numpy's polyfit, an
    independent solve), to round-off and the upper clamp's 1 / (p el) = 1e-15. OpenSim's search doubles p
    until the round-off of its band system (condition growing as p el) hides the decrease of its
    criterion; it stops at a p el that round-off decides (measured 1e8 to 3e10, at least 1e7 on random
    data), so the bound is simtk's distance from the limit at p el = 1e6, two orders of magnitude short
    of the earliest stop measured."""
    rng = np.random.default_rng(7 + degree)
    m = (degree + 1) // 2
    x = np.sort(rng.uniform(-2, 2, 12))
    y = np.polyval(rng.normal(size=m), x) + 0.05 * rng.normal(size=x.size)
    mine = GCVSplineFunction(x, y, degree, 10.0)
    poly = np.polyfit(x, y, m - 1)
    early = fit_at(x, y, degree, 1e6 / basis_scale(x, m))
    ts = np.concatenate([np.linspace(x[0] - 1, x[-1] + 1, 25), x])
    bound = max(abs(early.calc_value([t]) - mine.calc_value([t])) for t in ts)
    ref = osim.GCVSpline.safeDownCast(opensim_function(tmp_path, gcv_xml(x, y, degree, 10.0)))
    for t in ts:
        assert abs(mine.calc_value([t]) - np.polyval(poly, t)) <= 2 ** 10 * (EPS + _CLAMP) * (1 + np.abs(y).max()) \
            * (1 + abs(t - x[0]) + abs(t - x[-1])) ** m
        assert abs(theirs(ref, t) - mine.calc_value([t])) <= bound


def test_smoothing_gcv_spline_in_a_custom_joint_and_a_coupler(tmp_path):
    """CustomJoint axes and a coupler through smoothing GCVSplines (degrees
    3, 5 and 7, positive and negative error variances): accelerations with speeds equal OpenSim's, to
    REL plus the splines' termination bound (value and two derivatives, from simtk's own fits) times 100
    for the accelerations' gain on them (unit lengths, speeds up to 1.5: squares and sums of a few)."""
    rng = np.random.default_rng(31)
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0), [0, 0, 1]),
                                       (1, [], osim.Constant(0.0), [1, 0, 0]),
                                       (2, [], osim.Constant(0.0), [0, 1, 0]),
                                       (3, ["k"], osim.LinearFunction(0.1, 0.0)),
                                       (4, ["k"], osim.LinearFunction(0.2, 0.0)),
                                       (5, ["k"], osim.LinearFunction(0.3, 0.0))])
    add_chain(model, rng, [osim.PinJoint], "c")
    add_chain(model, rng, [osim.SliderJoint, osim.PinJoint], "d")
    coupler(model, "jc1_coord_0", "jd1_coord_0", osim.LinearFunction(0.5, 0.0), "gcv_coupler")
    path = write(model, tmp_path)
    text = path.read_text()
    knots = np.linspace(-2.0, 2.0, 13)
    noise = np.random.default_rng(3).normal(size=(4, knots.size))
    specs = [(3, 0.05 * np.sin(2 * knots) + 0.005 * noise[0], 2.5e-5),
             (5, -0.3 + 0.03 * knots ** 2 + 0.003 * noise[1], -1.0),
             (7, 0.04 * np.cos(knots) + 0.004 * noise[2], 1.6e-5),
             (3, 0.3 * np.sin(knots) + 0.01 * noise[3], 1e-4)]
    bound = 0.0
    for deg, ys, var in specs:
        f = GCVSplineFunction(knots, ys, deg, var)
        p = f.smoothing_parameter
        lo, hi = fit_at(knots, ys, deg, p * (1 - 1e-3)), fit_at(knots, ys, deg, p * (1 + 1e-3))
        for t in np.linspace(-2.5, 2.5, 21):
            for k in range(3):
                bound = max(bound, P_MOVE * abs(ev(hi, t, k) - ev(lo, t, k)) / 2e-3)
    for i, (deg, ys, var) in enumerate(specs[:3]):
        text, n = re.subn(rf'<LinearFunction name="function">\s*<coefficients>\s*0\.{i + 1} 0</coefficients>\s*'
                          r"</LinearFunction>", gcv_xml(knots, ys, deg, var).replace("<GCVSpline>",
                                                                                     '<GCVSpline name="function">'),
                          text)
        assert n == 1
    deg, ys, var = specs[3]
    text, n = re.subn(r"(<coupled_coordinates_function>)\s*<LinearFunction.*?</LinearFunction>",
                      lambda mo: mo.group(1) + gcv_xml(knots, ys, deg, var), text, flags=re.S)
    assert n == 1
    path.write_text(text)
    worst = compare_udot(path, rng, n_states=5, spread=1.5)
    print(f"worst relative udot difference {worst:.2e}, bound {REL + 100 * bound:.2e}")
    assert worst < REL + 100 * bound


def test_smoothing_gcv_spline_saves_and_loads(tmp_path):
    """The model format keeps the error variance: the rebuilt spline is the same fit (equal values); a
    file written before the parameter existed (no error_variance=) still loads, as interpolation."""
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
    x = np.arange(10.0)
    y = np.sin(x) + 0.1 * np.random.default_rng(2).normal(size=10)
    f = GCVSplineFunction(x, y, 3, 0.01)
    Constraint.CoordinateCoupler(matter, f, [a], [0], name="k0")
    path = tmp_path / "m.simtk"
    save_model(system, path)
    g = load_model(path).get_component("/matter/k0").get_function()
    assert g.smoothing_parameter == f.smoothing_parameter > 0.0
    for t in np.linspace(-1, 11, 13):
        assert g.calc_value([t]) == f.calc_value([t])
    text = path.read_text()
    old, n = re.subn(r"\s*error_variance=[^\s\]]+", "", text)
    assert n == 1
    path.write_text(old)
    g = load_model(path).get_component("/matter/k0").get_function()
    assert g.smoothing_parameter == 0.0 and g.calc_value([3.0]) == pytest.approx(y[3], abs=2 ** 6 * EPS)


def test_gcv_spline_bad_error_variance_and_too_few_points_name_the_element_and_line(tmp_path):
    """A non-numeric error_variance, and too few points for a smoothing spline's degree, are refused naming
    the joint's axis and the line; a negative variance is read (OpenSim then estimates it)."""
    rng = np.random.default_rng(5)
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0))])
    path = write(model, tmp_path)
    base = path.read_text()
    pat = r'<LinearFunction name="function">\s*<coefficients>\s*1 0</coefficients>\s*</LinearFunction>'
    bad = gcv_xml(np.arange(6.0), np.sin(np.arange(6.0)), 3, 0.1).replace("<error_variance>0.1", "<error_variance>abc")
    path.write_text(re.sub(pat, bad.replace("<GCVSpline>", '<GCVSpline name="function">'), base))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "<error_variance>" in t)
    with pytest.raises(OsimFileError, match=rf":{line}: .*error_variance.*expected numbers"):
        load_osim(path)
    few = gcv_xml(np.arange(5.0), np.sin(np.arange(5.0)), 5, 0.1)
    path.write_text(re.sub(pat, few.replace("<GCVSpline>", '<GCVSpline name="function">'), base))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "<GCVSpline" in t)
    with pytest.raises(OsimFileError, match=rf":{line}: CustomJoint 'cj' rotation1: GCVSpline: degree 5 "
                                            r"needs at least 6 points"):
        load_osim(path)
    ok = gcv_xml(np.arange(8.0), np.sin(np.arange(8.0)), 3, -1.0)
    path.write_text(re.sub(pat, ok.replace("<GCVSpline>", '<GCVSpline name="function">'), base))
    load_osim(path)
    with pytest.raises(ValueError, match="error_variance must be finite"):
        GCVSplineFunction(np.arange(6.0), np.zeros(6), 3, float("nan"))
