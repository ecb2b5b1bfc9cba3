"""A GeometryPath's current points and its polyline for drawing (get_path_points, get_polyline).

Checked by independent means:
- the points of an unwrapped path are its active points' stations mapped to Ground by the bodies'
  transforms here (a conditional point outside its range is dropped, a moving point is where its
  functions put it);
- over a cylinder or a sphere, the tangent points lie on the surface and the segments into them are
  tangent to it (the geometric condition, written here), every sample of the drawn arc lies on the
  surface, and the polyline's length tends to the path's length L as the samples get closer, within
  the chord's deficit L max_angle^2 / 24 (a wrong way round would miss by a whole arc);
- over an ellipsoid, every drawn point lies on the surface, in one plane with the tangent points
  (OpenSim's wrap lies in its wrapping plane), and the polyline's length tends to the path's as the
  samples get closer (the kernel's own length is over its 1 mm polyline, so the bound adds that
  polyline's deficit);
- a bad sampling angle is refused, naming the path.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    ConditionalPathPoint,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MovingPathPoint,
    MultibodySystem,
    PathPoint,
    PathWrap,
    SimbodyMatterSubsystem,
    Stage,
    WrapCylinder,
    WrapEllipsoid,
    WrapSphere,
)
from simtk.common.function import Function
from simtk.spatial import Body, MassProperties, Transform

EPS = np.finfo(float).eps
R = 0.04


def _two_pins():
    system = MultibodySystem("paths")
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    mp = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.2, 0.0], np.diag([0.02, 0.01, 0.02])))
    b1 = MobilizedBody.Pin(matter.ground, Transform(), mp, Transform(p=[0.0, 0.2, 0.0]))
    b2 = MobilizedBody.Pin(b1, Transform(p=[0.0, -0.4, 0.0]), mp, Transform())
    return system, matter, b1, b2


def _state(system, matter, q):
    state = system.realize_topology()
    system.realize_model(state)
    matter.upd_q(state)[:] = q
    system.realize(state, Stage.Position)
    return state


def _in_ground(body, state, station):
    X = body.get_body_transform(state)
    return X.R.matrix @ np.asarray(station, dtype=float) + np.asarray(X.p, dtype=float)


def test_points_are_the_active_stations_in_ground():
    system, matter, b1, b2 = _two_pins()
    fx = Function.Linear([0.1, 0.02])  # x = 0.1 q + 0.02 on the moving point
    points = [PathPoint(b1, [0.03, -0.1, 0.01]),
              ConditionalPathPoint(b1, [0.05, -0.3, 0.0], coordinate=(b2, 0), lo=-0.5, hi=0.5),
              MovingPathPoint(b2, fx, -0.1, 0.02, coordinate=(b2, 0)),
              PathPoint(b2, [0.0, -0.3, 0.0])]
    path = GeometryPath(matter, points, name="biceps")
    for q2, active in ((0.2, True), (1.1, False), (-0.9, False), (-0.3, True)):
        state = _state(system, matter, [0.4, q2])
        want = [_in_ground(b1, state, points[0].location)]
        if active:
            want.append(_in_ground(b1, state, points[1].location))
        want.append(_in_ground(b2, state, [0.1 * q2 + 0.02, -0.1, 0.02]))
        want.append(_in_ground(b2, state, points[3].location))
        got = path.get_path_points(state)
        assert got.shape == (len(want), 3), f"q2 = {q2}: conditional point active = {active}"
        np.testing.assert_allclose(got, np.array(want), rtol=0, atol=64 * EPS)
        # Without wraps the polyline is the points themselves.
        np.testing.assert_array_equal(path.get_polyline(state), got)
        seg = np.linalg.norm(np.diff(got, axis=0), axis=1).sum()
        assert abs(seg - path.get_length(state)) <= 64 * EPS * seg


def _wrapped(kind):
    system, matter, b1, b2 = _two_pins()
    X = Transform(p=[0.0, -0.4, 0.0])
    obj = WrapCylinder(b1, X, R, 0.3, name="elbow") if kind == "cylinder" else WrapSphere(b1, X, R, name="elbow")
    path = GeometryPath(matter, [PathPoint(b1, [0.045, -0.15, 0.0]), PathPoint(b1, [0.045, -0.35, 0.01]),
                                 PathPoint(b2, [0.045, -0.2, -0.01])], name="triceps", wraps=[PathWrap(obj)])
    return system, matter, (b1, b2), obj, path


@pytest.mark.parametrize("kind", ["cylinder", "sphere"])
def test_wrapped_polyline_lies_on_the_surface_and_has_the_paths_length(kind):
    system, matter, (b1, b2), obj, path = _wrapped(kind)
    wrapped = 0
    for q2 in np.linspace(-2.4, 2.4, 25):
        state = _state(system, matter, [0.3, q2])
        pts = path.get_path_points(state)
        L = path.get_length(state)
        X = b1.get_body_transform(state)
        R_GW = X.R.matrix @ obj.X_BW.R.matrix
        p_GW = np.asarray(X.p) + X.R.matrix @ np.asarray(obj.X_BW.p)

        def in_w(p):
            return (np.atleast_2d(p) - p_GW) @ R_GW

        def radius(pw):
            return np.hypot(pw[:, 0], pw[:, 1]) if kind == "cylinder" else np.linalg.norm(pw, axis=1)

        if len(pts) == 3:  # not wrapped here: straight segments
            np.testing.assert_array_equal(path.get_polyline(state), pts)
            continue
        assert len(pts) == 5
        wrapped += 1
        r1, r2 = in_w(pts[2:4])
        np.testing.assert_allclose(radius(np.array([r1, r2])), R, rtol=1e-9)
        # tangency: the segment into r1 (and out of r2) is perpendicular to the surface's normal there
        for p, r in ((in_w(pts[1])[0], r1), (in_w(pts[4])[0], r2)):
            n = np.array([r[0], r[1], 0.0]) if kind == "cylinder" else r
            d = r - p
            assert abs(d @ n) <= 1e-7 * np.linalg.norm(d) * np.linalg.norm(n)
        for max_angle in (np.pi / 24, 1e-2):
            poly = path.get_polyline(state, max_angle)
            np.testing.assert_array_equal(poly[:2], pts[:2])
            np.testing.assert_array_equal(poly[-1], pts[-1])
            arc = in_w(poly[2:-1])  # r1, the samples, r2
            np.testing.assert_allclose(radius(arc), R, rtol=1e-9)
            rad = arc * [1.0, 1.0, 0.0] if kind == "cylinder" else arc  # the turn is about the axis
            a, b = rad[:-1], rad[1:]
            turns = np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), np.einsum("ij,ij->i", a, b))
            assert turns.max() <= max_angle * (1 + 1e-9)
            Lpoly = np.linalg.norm(np.diff(poly, axis=0), axis=1).sum()
            assert -1e3 * EPS * L <= L - Lpoly <= L * max_angle ** 2 / 24 + 1e3 * EPS * L, (q2, max_angle)
    assert wrapped >= 5, "the poses chosen should wrap the path"


@pytest.mark.parametrize("method", ["hybrid", "midpoint", "axial"])
def test_ellipsoid_polyline_lies_on_the_surface_in_the_wrapping_plane(method):
    system, matter, b1, b2 = _two_pins()
    dims = np.array([0.05, 0.035, 0.06])
    obj = WrapEllipsoid(b1, Transform(p=[0.0, -0.4, 0.0]), dims, name="elbow")
    path = GeometryPath(matter, [PathPoint(b1, [0.045, -0.15, 0.0]), PathPoint(b1, [0.06, -0.35, 0.01]),
                                 PathPoint(b2, [0.06, -0.2, -0.01])], name="triceps",
                        wraps=[PathWrap(obj, method=method)])
    wrapped = sampled = 0
    for q2 in np.linspace(-2.4, 2.4, 25):
        state = _state(system, matter, [0.3, q2])
        pts = path.get_path_points(state)
        L = path.get_length(state)
        if len(pts) == 3:
            np.testing.assert_array_equal(path.get_polyline(state), pts)
            continue
        wrapped += 1
        X = b1.get_body_transform(state)
        R_GW = X.R.matrix @ obj.X_BW.R.matrix
        p_GW = np.asarray(X.p) + X.R.matrix @ np.asarray(obj.X_BW.p)
        lengths = []
        for max_angle in (np.pi / 12, np.pi / 48):
            poly = path.get_polyline(state, max_angle)
            np.testing.assert_array_equal(poly[:3], pts[:3])
            np.testing.assert_array_equal(poly[-2:], pts[-2:])
            arc = (poly[2:-1] - p_GW) @ R_GW  # r1, the samples, r2 in W
            # the samples on the surface (the tangent points are only as close as OpenSim's tangent
            # search converges)
            np.testing.assert_allclose(np.sum((arc[1:-1] / dims) ** 2, axis=1), 1.0, rtol=1e-9, atol=0)
            if len(arc) > 3:
                sampled += 1
                # one plane: the samples' offsets from r1 have rank 2 at most
                sv = np.linalg.svd(arc[1:] - arc[0], compute_uv=False)
                assert sv[-1] <= 1e-9 * sv[0], sv
            lengths.append(np.linalg.norm(np.diff(poly, axis=0), axis=1).sum())
            # a chord's deficit below L max_angle^2 / 8 (the turn between samples is below ~max_angle)
            assert -1e3 * EPS * L <= L - lengths[-1] <= L * max_angle ** 2 / 8 + 1e3 * EPS * L, (q2, max_angle)
        assert abs(L - lengths[1]) <= abs(L - lengths[0]) + 1e3 * EPS * L
    assert wrapped >= 5 and sampled >= 5, "the poses chosen should wrap the path, some of them a long way"


def test_bad_sampling_angle_is_refused_naming_the_path():
    system, matter, _, _, path = _wrapped("sphere")
    state = _state(system, matter, [0.3, 1.0])
    for bad in (0.0, -1.0, "x"):
        with pytest.raises(ValueError, match="triceps"):
            path.get_polyline(state, bad)


def test_core_path_points_refuses_what_it_cannot_write_safely():
    """The compiled entry point checks the set's kind, the element and the output's size before writing."""
    from simtk import _core

    k = _core._k
    system, matter, _, obj, path = _wrapped("cylinder")
    state = _state(system, matter, [0.3, -1.0])
    fs = path._make_set([(path, (float(k.PATH_CODES["tension"]), 0.0, 0.0, 0.0))], state, [path])
    ws = matter._at(state, Stage.Position, "test").ws
    small = np.full((4, 6), 7.0)  # 3 points + 2 tangent points need 5 rows
    with pytest.raises(ValueError, match=r"out: expected .* \(>= 5, 6\)"):
        k.path_points(fs, ws, 0, small)
    assert np.all(small == 7.0)  # untouched
    with pytest.raises(ValueError, match="no element 1"):
        k.path_points(fs, ws, 1, np.zeros((5, 6)))
    out = np.zeros((5, 6))
    assert k.path_points(fs, ws, 0, out) == 5
    assert list(out[:, 3]) == [0, 0, 1, 2, 0]  # point, point, tangent in, tangent out, point
