"""Paths wrapping over WrapCylinder, WrapSphere and WrapEllipsoid (each quadrant; each of the ellipsoid's
methods), read by ``load_osim``, against OpenSim 4.6: at random poses (the wrap active at some, inactive at others) lengths to 1e-9 m,
lengthening speeds to 1e-9 m/s and moment arms (OpenSim's ``computeMomentArm``) to 1e-8 m; a path
over two objects (OpenSim's repeated passes and tangent-point sliding) the same way; published
models' wrapped paths (Arm26's elbow, Gait10dof18musc's and Leg6Dof9Musc's knees) read as
PathActuators' paths.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.removeFileSink()

from simtk import Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402

LEN_TOL = 1e-9
ARM_TOL = 1e-8


def v3(*a) -> "osim.Vec3":
    return osim.Vec3(*map(float, a))


def wrap_model(kind: str, quadrant: str, second: str | None = None, method: str = "hybrid") -> "osim.Model":
    """Two pins (an elbow-like q1 on b0); a wrap object at the elbow on b0 (and optionally a second on
    b1); a PathActuator over it from b0 to b1 and a PathSpring from the ground to b1."""
    m = osim.Model()
    m.setName("wraps")
    b0 = osim.Body("b0", 1.0, v3(0, -0.2, 0), osim.Inertia(0.02, 0.01, 0.03))
    b1 = osim.Body("b1", 1.0, v3(0, -0.2, 0), osim.Inertia(0.02, 0.01, 0.03))
    m.addBody(b0)
    m.addBody(b1)
    j0 = osim.PinJoint("j0", m.getGround(), v3(0, 0, 0), v3(0, 0, 0), b0, v3(0, 0.2, 0), v3(0, 0, 0))
    j0.updCoordinate().setName("q0")
    j1 = osim.PinJoint("j1", b0, v3(0, -0.4, 0), v3(0, 0, 0.1), b1, v3(0.0, 0.0, 0), v3(0, 0, 0))
    j1.updCoordinate().setName("q1")
    m.addJoint(j0)
    m.addJoint(j1)

    def make(k, name, body, where, rot, radius):
        w = {"cylinder": osim.WrapCylinder, "sphere": osim.WrapSphere, "ellipsoid": osim.WrapEllipsoid}[k]()
        w.setName(name)
        if k == "ellipsoid":
            w.set_dimensions(v3(radius, 1.4 * radius, 0.8 * radius))
        else:
            w.set_radius(radius)
        if k == "cylinder":
            w.set_length(0.2)
        w.set_translation(v3(*where))
        w.set_xyz_body_rotation(v3(*rot))
        w.set_quadrant(quadrant)
        body.addWrapObject(w)
        return w

    w0 = make(kind, "w0", b0, (0.0, -0.4, 0.0), (0.1, 0.2, 0.05), 0.04)
    act = osim.PathActuator()
    act.setName("act")
    act.setOptimalForce(10.0)
    act.addNewPathPoint("p0", b0, v3(0.06, -0.1, 0.01))
    act.addNewPathPoint("p1", b0, v3(0.05, -0.3, 0.0))
    act.addNewPathPoint("p2", b1, v3(0.05, -0.15, -0.01))
    act.updGeometryPath().addPathWrap(w0)
    act.updGeometryPath().updWrapSet().get(0).set_method(method)
    if second is not None:
        w1 = make(second, "w1", b1, (0.01, -0.25, 0.0), (0.0, 0.1, 0.0), 0.03)
        act.addNewPathPoint("p3", b1, v3(-0.04, -0.35, 0.02))
        act.updGeometryPath().addPathWrap(w1)
    m.addForce(act)
    spring = osim.PathSpring("spring", 0.3, 100.0, 0.1)
    spring.updGeometryPath().appendNewPathPoint("s0", m.getGround(), v3(0.08, 0.1, 0.0))
    spring.updGeometryPath().appendNewPathPoint("s1", b1, v3(0.06, -0.1, 0.0))
    spring.updGeometryPath().addPathWrap(w0)
    spring.updGeometryPath().updWrapSet().get(0).set_method(method)
    m.addForce(spring)
    return m


def write(model, tmp_path, name="wraps.osim"):
    path = tmp_path / name
    model.finalizeConnections()
    model.printToXML(str(path))
    return path


def _path_of(f):
    a = osim.PathActuator.safeDownCast(f)
    if a is not None:
        return a.getGeometryPath()
    return osim.PathSpring.safeDownCast(f).getGeometryPath()


def compare(om, m, names, coords, rng, n, lo=-1.5, hi=1.5, fixed=None):
    """Worst |L|, |Ldot|, moment-arm differences over n random poses; and how many paths wrapped."""
    s = om.initSystem()
    st = m.initial_state()
    cs = om.getCoordinateSet()
    all_coords = [cs.get(i).getName() for i in range(cs.getSize())]
    worst = np.zeros(3)
    wrapped = unwrapped = 0
    for _ in range(n):
        for c in all_coords:
            if cs.get(c).getLocked(s):
                continue
            r = cs.get(c).getRangeMin(), cs.get(c).getRangeMax()
            q = float(rng.uniform(max(lo, r[0]), min(hi, r[1]))) if fixed is None else fixed
            u = float(rng.uniform(-1.0, 1.0))
            cs.get(c).setValue(s, q, False)
            cs.get(c).setSpeedValue(s, u)
            m.set_coordinate_value(st, c, q)
            m.set_coordinate_speed(st, c, u)
        om.realizeVelocity(s)
        m.system.realize(st, Stage.Velocity)
        for name in names:
            theirs = _path_of(om.getForceSet().get(name))
            mine = m.force_elements[name][0]
            npts = sum(1 for i in range(theirs.getPathPointSet().getSize())
                       if theirs.getPathPointSet().get(i).isActive(s))
            if theirs.getCurrentPath(s).getSize() > npts:
                wrapped += 1
            else:
                unwrapped += 1
            worst[0] = max(worst[0], abs(mine.get_length(st) - theirs.getLength(s)))
            worst[1] = max(worst[1], abs(mine.get_lengthening_speed(st) - theirs.getLengtheningSpeed(s)))
            for c in coords:
                arm = mine.compute_moment_arm(st, (m.coordinates[c].mobod, m.coordinates[c].index))
                worst[2] = max(worst[2], abs(arm - theirs.computeMomentArm(s, cs.get(c))))
    return worst, wrapped, unwrapped


@pytest.mark.parametrize("kind", ["cylinder", "sphere"])
@pytest.mark.parametrize("quadrant", ["all", "+x", "-x", "+y", "-y", "+z", "-z"])
def test_wrap_object_each_quadrant(tmp_path, kind, quadrant):
    path = write(wrap_model(kind, quadrant), tmp_path)
    om = osim.Model(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything is built
        m = load_osim(path)
    worst, wrapped, unwrapped = compare(om, m, ["act", "spring"], ["q0", "q1"], np.random.default_rng(7), 30)
    assert worst[0] <= LEN_TOL and worst[1] <= LEN_TOL and worst[2] <= ARM_TOL, worst
    assert wrapped and unwrapped, (wrapped, unwrapped)


@pytest.mark.parametrize("method", ["hybrid", "midpoint", "axial"])
@pytest.mark.parametrize("quadrant", ["all", "+x", "-x", "+y", "-y", "+z", "-z"])
def test_wrap_ellipsoid_each_method_and_quadrant(tmp_path, method, quadrant):
    """OpenSim's WrapEllipsoid (its wrapping plane by the method, its iterative tangent points, its
    1 mm polyline on the surface) at random poses, wrapped and not."""
    path = write(wrap_model("ellipsoid", quadrant, method=method), tmp_path)
    om = osim.Model(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything is built
        m = load_osim(path)
    worst, wrapped, unwrapped = compare(om, m, ["act", "spring"], ["q0", "q1"], np.random.default_rng(11), 30)
    assert worst[0] <= LEN_TOL and worst[1] <= LEN_TOL and worst[2] <= ARM_TOL, worst
    assert wrapped and unwrapped, (wrapped, unwrapped)


@pytest.mark.parametrize("kinds", [("cylinder", "sphere"), ("sphere", "cylinder"), ("cylinder", "cylinder"),
                                   ("sphere", "sphere"), ("ellipsoid", "cylinder"), ("cylinder", "ellipsoid")])
@pytest.mark.parametrize("quadrant", ["all", "-y", "+x"])
def test_path_over_two_wrap_objects(tmp_path, kinds, quadrant):
    """Both objects restricted to the quadrant (one a cylinder with a quadrant is issue 30's case:
    see also test_opensim_paths' gastrocnemius test)."""
    path = write(wrap_model(kinds[0], quadrant, kinds[1]), tmp_path)
    om = osim.Model(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything is built
        m = load_osim(path)
    worst, wrapped, unwrapped = compare(om, m, ["act"], ["q0", "q1"], np.random.default_rng(8), 40)
    assert worst[0] <= LEN_TOL and worst[1] <= LEN_TOL and worst[2] <= ARM_TOL, worst
    assert wrapped, wrapped


@pytest.mark.parametrize("kind,method", [("cylinder", "hybrid"), ("ellipsoid", "midpoint")])
def test_wrapped_paths_round_trip_through_the_model_text(tmp_path, kind, method):
    """The description's text and save_model's text (from the built components) rebuild the wrap
    objects (an ellipsoid with its PathWrap's method): the spring's generalized forces at random
    states are the same."""
    from simtk.io.model_file import model_from_text, model_to_text

    path = write(wrap_model(kind, "+x", "sphere", method=method), tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the two-object path is noted)
        m = load_osim(path)
    spring = m.force_elements["spring"][0]
    rng = np.random.default_rng(9)
    for text in (m.description.to_text(), model_to_text(m.system)):
        assert "wrap_kinds" in text
        again = model_from_text(text, "wraps.simtk")
        st = m.initial_state()
        sb = again.realize_topology()
        again.realize_model(sb)
        other = next(f for f in again.get_component("/forces").get_child_components() if "spring" in f.get_name())
        for _ in range(4):
            q = rng.uniform(-1.5, 1.5, st.get_nq())
            st.set_q(q)
            sb.set_q(q)
            m.system.realize(st, Stage.Position)
            again.realize(sb, Stage.Position)
            assert other.get_length(sb) == spring.get_length(st)
            assert np.array_equal(other.get_geometry_path().calc_generalized_forces(sb, 3.0),
                                  spring.get_geometry_path().calc_generalized_forces(st, 3.0))
