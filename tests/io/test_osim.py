"""simtk.io.load_osim against OpenSim 4.6 itself.

Each model is built with OpenSim's Python API, written with ``Model.printToXML``, and then read by
*both* OpenSim (``osim.Model(path)``) and ``load_osim``. At a few random states (every coordinate
set by name in both, so no layout is assumed) the coordinates' accelerations must agree to the
issue's stated 1e-9, relative to max(1, max |udot|). Nothing expected is computed by simtk: the
reference is always OpenSim's.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.removeFileSink()  # OpenSim would write opensim.log into the working directory

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simtk import Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from simtk.io.osim import OsimFileError, SimmSplineFunction  # noqa: E402

#: The issue's tolerance for udot against OpenSim, relative to max(1, max |udot|).
REL = 1e-9

G = (0.3, -9.81, 0.5)


# ---------------------------------------------------------------------- builders (OpenSim side)
def v3(a) -> "osim.Vec3":
    return osim.Vec3(*map(float, a))


def random_body(rng, name: str) -> "osim.Body":
    """A body with a physical, randomly oriented central inertia (a box's) and an offset mass center."""
    m = float(rng.uniform(0.5, 3.0))
    a, b, c = rng.uniform(0.2, 1.0, 3) ** 2
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    I = R @ np.diag(m / 12.0 * np.array([b + c, a + c, a + b])) @ R.T
    return osim.Body(name, m, v3(rng.uniform(-0.3, 0.3, 3)),
                     osim.Inertia(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]))


def add_chain(model, rng, joint_types, prefix="b"):
    """A chain Ground - b1 - b2 ... with the given OpenSim joint classes and random joint frames."""
    bodies = []
    parent = model.getGround()
    for i, J in enumerate(joint_types, start=1):
        b = random_body(rng, f"{prefix}{i}")
        model.addBody(b)
        j = J(f"j{prefix}{i}", parent, v3(rng.uniform(-0.5, 0.5, 3)), v3(rng.uniform(-1, 1, 3)),
              b, v3(rng.uniform(-0.5, 0.5, 3)), v3(rng.uniform(-1, 1, 3)))
        model.addJoint(j)
        bodies.append(b)
        parent = b
    return bodies


def new_model(name="m"):
    model = osim.Model()
    model.setName(name)
    model.setGravity(v3(G))
    return model


def write(model, tmp_path, name="model.osim"):
    path = tmp_path / name
    model.finalizeConnections()
    model.printToXML(str(path))
    return path


# ---------------------------------------------------------------------- the comparison
def coordinate_names(om) -> list:
    cs = om.getCoordinateSet()
    return [cs.get(i).getName() for i in range(cs.getSize())]


def compare_udot(path, rng, n_states=3, spread=0.8, values=None, nonphysical_ok=False):
    """Set the same random q, u in OpenSim (reading ``path``) and simtk; return the worst relative
    udot difference over ``n_states`` states. ``values(rng, names) -> (q, u)`` may choose them;
    ``nonphysical_ok`` lets the model have inertias kept with a warning."""
    om = osim.Model(str(path))
    s = om.initSystem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # these models have nothing unsupported
        if nonphysical_ok:
            warnings.filterwarnings("ignore", "(?s).*inertia no mass distribution has", UserWarning)
        m = load_osim(path)
    st_ = m.initial_state()
    names = coordinate_names(om)
    assert list(m.coordinates) == names
    cs = om.getCoordinateSet()
    worst = 0.0
    for _ in range(n_states):
        if values is None:
            q = {n: float(rng.uniform(-spread, spread)) for n in names}
            u = {n: float(rng.uniform(-spread, spread)) for n in names}
        else:
            q, u = values(rng, names)
        for n in names:
            c = cs.get(n)
            if c.getLocked(s):  # OpenSim refuses to move a locked coordinate: leave it in both
                continue
            c.setValue(s, q[n], False)
            c.setSpeedValue(s, u[n])
            m.set_coordinate_value(st_, n, q[n])
            m.set_coordinate_speed(st_, n, u[n])
        om.realizeAcceleration(s)
        m.system.realize(st_, Stage.Acceleration)
        theirs = np.array([cs.get(n).getAccelerationValue(s) for n in names])
        mine = np.array([m.get_coordinate_acceleration(st_, n) for n in names])
        assert np.abs(theirs).max() > 1e-3  # something moves (a threshold, not a tolerance)
        worst = max(worst, float(np.abs(mine - theirs).max() / max(1.0, np.abs(theirs).max())))
    return worst


# ---------------------------------------------------------------------- joints
@pytest.mark.parametrize("seed", [1, 2])
def test_pin_chain(tmp_path, seed):
    rng = np.random.default_rng(seed)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint] * 5)
    assert compare_udot(write(model, tmp_path), rng) < REL


CHAINS = {
    "ball-universal-gimbal": [osim.BallJoint, osim.UniversalJoint, osim.GimbalJoint],
    "free-slider-planar-weld-pin": [osim.FreeJoint, osim.SliderJoint, osim.PlanarJoint, osim.WeldJoint, osim.PinJoint],
    "gimbal-ball-pin-universal": [osim.GimbalJoint, osim.BallJoint, osim.PinJoint, osim.UniversalJoint],
}


@pytest.mark.parametrize("chain", list(CHAINS))
def test_other_joints(tmp_path, chain):
    rng = np.random.default_rng(len(chain))
    model = new_model()
    add_chain(model, rng, CHAINS[chain])
    assert compare_udot(write(model, tmp_path), rng) < REL


def test_double_pendulum_ball_universal_and_gimbal_tree(tmp_path):
    """Two branches off one body (a tree, bodies added in a scrambled order)."""
    rng = np.random.default_rng(7)
    model = new_model()
    trunk, = add_chain(model, rng, [osim.BallJoint], "t")
    add_chain_from(model, rng, trunk, [osim.UniversalJoint, osim.PinJoint], "l")
    add_chain_from(model, rng, trunk, [osim.GimbalJoint], "r")
    assert compare_udot(write(model, tmp_path), rng) < REL


def add_chain_from(model, rng, parent, joint_types, prefix):
    for i, J in enumerate(joint_types, start=1):
        b = random_body(rng, f"{prefix}{i}")
        model.addBody(b)
        model.addJoint(J(f"j{prefix}{i}", parent, v3(rng.uniform(-0.5, 0.5, 3)), v3(rng.uniform(-1, 1, 3)),
                         b, v3(rng.uniform(-0.5, 0.5, 3)), v3(rng.uniform(-1, 1, 3))))
        parent = b
    return parent


# ---------------------------------------------------------------------- CustomJoint
def spline(xs, ys) -> "osim.SimmSpline":
    f = osim.SimmSpline()
    for x, y in zip(xs, ys):
        f.addPoint(float(x), float(y))
    return f


def knee_model(rng):
    """A femur on a hip pin and a tibia on a CustomJoint knee: rotation about z by knee_angle and
    translations along x and y that are SimmSplines of knee_angle (gait2392's knee), plus a constant
    rotation offset about x and a linear translation along z (slope 0.1)."""
    model = new_model("knee")
    femur, = add_chain(model, rng, [osim.PinJoint], "femur")
    tibia = random_body(rng, "tibia")
    model.addBody(tibia)
    st_ = osim.SpatialTransform()
    knots = np.linspace(-2.1, 0.2, 7)

    def axis(i, coords, f, direction=None):
        ta = st_.updTransformAxis(i)
        names = osim.ArrayStr()
        for c in coords:
            names.append(c)
        ta.setCoordinateNames(names)
        if direction is not None:
            ta.setAxis(v3(direction))
        ta.set_function(f)

    axis(0, ["knee_angle"], osim.LinearFunction(1.0, 0.0), [0, 0, 1])
    axis(1, [], osim.Constant(0.2), [1, 0, 0])
    axis(2, [], osim.Constant(0.0), [0, 1, 0])
    axis(3, ["knee_angle"], spline(knots, 0.05 * np.sin(2 * knots) + rng.normal(size=7) * 0.01))
    axis(4, ["knee_angle"], spline(knots, -0.4 + 0.03 * knots ** 2))
    axis(5, ["knee_angle"], osim.LinearFunction(0.1, 0.01))
    model.addJoint(osim.CustomJoint("knee", femur, v3([0, -0.4, 0]), v3([0, 0, 0.1]), tibia, v3([0, 0.2, 0]),
                                    v3([0, 0, 0]), st_))
    return model


def test_custom_joint_knee_with_splines(tmp_path):
    rng = np.random.default_rng(11)
    model = knee_model(rng)
    # spread 2.5 also evaluates the splines beyond their last knots (linear extrapolation)
    assert compare_udot(write(model, tmp_path), rng, n_states=5, spread=2.5) < REL


def test_custom_joint_natural_cubic_spline_name(tmp_path):
    """OpenSim 4 reads <NaturalCubicSpline> as a SimmSpline; so does load_osim."""
    rng = np.random.default_rng(12)
    path = write(knee_model(rng), tmp_path)
    text = path.read_text()
    assert "SimmSpline" in text
    path.write_text(text.replace("SimmSpline", "NaturalCubicSpline"))
    assert compare_udot(path, rng) < REL


def test_custom_joint_two_coordinates_polynomial(tmp_path):
    """Two coordinates on non-orthogonal axes, a polynomial translation, an unused axis."""
    rng = np.random.default_rng(13)
    model = new_model()
    b1, = add_chain(model, rng, [osim.BallJoint])
    b2 = random_body(rng, "b2")
    model.addBody(b2)
    st_ = osim.SpatialTransform()
    spec = [(0, ["a"], osim.LinearFunction(1.0, 0.0), [0.3, 1.0, 0.2]),
            (1, ["b"], osim.LinearFunction(-1.0, 0.1), [1.0, 0.1, -0.3]),
            (3, ["a"], osim.PolynomialFunction(osim.Vector.createFromMat(np.array([0.2, -0.1, 0.3]))), [1, 0, 0]),
            (5, ["b"], spline([-1, -0.3, 0.4, 1.2], [0.1, -0.2, 0.05, 0.3]), [0.2, 0.3, 1.0])]
    for i, coords, f, direction in spec:
        ta = st_.updTransformAxis(i)
        names = osim.ArrayStr()
        for c in coords:
            names.append(c)
        ta.setCoordinateNames(names)
        ta.setAxis(v3(np.asarray(direction) / np.linalg.norm(direction)))
        ta.set_function(f)
    model.addJoint(osim.CustomJoint("cj", b1, v3([0.1, -0.4, 0]), v3([0.2, 0, 0.1]), b2, v3([0, 0.2, 0]),
                                    v3([0, 0.3, 0]), st_))
    assert compare_udot(write(model, tmp_path), rng, n_states=4, spread=1.2) < REL


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_simm_spline_matches_opensim(n):
    """Value, slope and curvature of SimmSplineFunction equal OpenSim's SimmSpline inside, at the
    knots and outside (tangent-line extrapolation)."""
    rng = np.random.default_rng(n)
    xs = np.cumsum(rng.uniform(0.1, 1.0, n))
    ys = rng.normal(size=n)
    theirs = spline(xs, ys)
    mine = SimmSplineFunction(xs, ys)
    ts = np.concatenate([xs, rng.uniform(xs[0] - 1, xs[-1] + 1, 20)])
    for t in ts:
        v = osim.Vector(1, float(t))
        for order in (0, 1, 2):
            if order == 0:
                a, b = mine.calc_value([t]), theirs.calcValue(v)
            else:
                comps = osim.StdVectorInt()
                for _ in range(order):
                    comps.append(0)
                a, b = mine.calc_derivative([0] * order, [t]), theirs.calcDerivative(comps, v)
            assert abs(a - b) <= REL * max(1.0, abs(b)), (n, t, order, a, b)


# ---------------------------------------------------------------------- coordinates
def test_locked_and_clamped_coordinates(tmp_path):
    rng = np.random.default_rng(21)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint, osim.SliderJoint, osim.PinJoint, osim.UniversalJoint])
    path = write(model, tmp_path)
    text = path.read_text()
    # jb2's slider: clamped to [-0.1, 0.2]; jb3's pin locked at 0.3.
    text = re.sub(r'(<Coordinate name="jb2_coord_0">)',
                  r'\1<default_value>0.15</default_value><range>-0.1 0.2</range><clamped>true</clamped>', text)
    text = re.sub(r'(<Coordinate name="jb3_coord_0">)',
                  r'\1<default_value>0.3</default_value><default_speed_value>0</default_speed_value>'
                  r'<locked>true</locked>', text)
    path.write_text(text)
    om = osim.Model(str(path))
    s = om.initSystem()
    m = load_osim(path)
    st_ = m.initial_state()
    for n in coordinate_names(om):
        assert m.get_coordinate_value(st_, n) == pytest.approx(om.getCoordinateSet().get(n).getValue(s), abs=REL)
    assert m.get_coordinate_value(st_, "jb2_coord_0") == 0.15
    assert m.get_coordinate_value(st_, "jb3_coord_0") == 0.3
    assert m.coordinates["jb3_coord_0"].lock is not None
    assert compare_udot(path, rng, n_states=4, spread=0.4) < REL
    # Clamping is an assembly restriction (as in OpenSim's AssemblySolver), and the lock holds there.
    m.set_coordinate_value(st_, "jb2_coord_0", -0.3)
    m.set_coordinate_value(st_, "jb3_coord_0", 0.3)
    m.make_assembler().assemble(st_)
    assert -0.1 - REL <= m.get_coordinate_value(st_, "jb2_coord_0") <= 0.2 + REL
    assert m.get_coordinate_value(st_, "jb3_coord_0") == 0.3
    # A clamped default outside the range: OpenSim refuses the file, and so does load_osim.
    path.write_text(text.replace("<default_value>0.15</default_value>", "<default_value>0.5</default_value>"))
    with pytest.raises(RuntimeError, match="greater than range maximum"):
        osim.Model(str(path))
    with pytest.raises(OsimFileError, match="jb2_coord_0.*inside its range"):
        load_osim(path)


# ---------------------------------------------------------------------- constraints
def coupler(model, ind: str, dep: str, f, name="coupler"):
    cc = osim.CoordinateCouplerConstraint()
    cc.setName(name)
    names = osim.ArrayStr()
    names.append(ind)
    cc.setIndependentCoordinateNames(names)
    cc.setDependentCoordinateName(dep)
    cc.setFunction(f)
    model.addConstraint(cc)


def test_coordinate_coupler_constraint(tmp_path):
    rng = np.random.default_rng(31)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint, osim.SliderJoint, osim.PinJoint, osim.GimbalJoint])
    coupler(model, "jb1_coord_0", "jb2_coord_0", osim.LinearFunction(0.7, 0.1), "lin")
    coupler(model, "jb3_coord_0", "jb4_coord_1", spline([-1, -0.2, 0.5, 1.0], [0.2, -0.1, 0.3, 0.1]), "spl")
    assert compare_udot(write(model, tmp_path), rng, n_states=4) < REL


def test_coupler_on_custom_joint_coordinate(tmp_path):
    """A CoordinateCoupler between a Pin's coordinate and a CustomJoint's (the compiled FunctionBased
    kind), each way round: the Rajagopal knee's patella and the wrist's couplers are of this kind."""
    rng = np.random.default_rng(32)
    model = knee_model(rng)
    coupler(model, "jfemur1_coord_0", "knee_angle", osim.LinearFunction(-1.0, 0.0), "hip_knee")
    assert compare_udot(write(model, tmp_path), rng, n_states=4) < REL
    model = knee_model(np.random.default_rng(33))
    coupler(model, "knee_angle", "jfemur1_coord_0", spline([-2, -0.5, 0.3, 1.0], [0.2, -0.1, 0.3, 0.1]), "knee_hip")
    assert compare_udot(write(model, tmp_path, "model2.osim"), rng, n_states=4, spread=1.5) < REL


def test_weld_and_point_constraints(tmp_path):
    """A Ball-Gimbal-Ball chain whose last body is welded to Ground through offset frames, and a
    Pin chain closed by a PointConstraint and a ConstantDistanceConstraint (states off the
    constraint manifold: the acceleration equations are still defined)."""
    rng = np.random.default_rng(41)
    model = new_model()
    b = add_chain(model, rng, [osim.BallJoint, osim.GimbalJoint, osim.BallJoint])
    model.addConstraint(osim.WeldConstraint("weld", b[2], osim.Transform(osim.Rotation(0.3, v3([1, 1, 0])),
                                                                         v3([0.1, 0.2, 0.0])),
                                            model.getGround(), osim.Transform(v3([0.3, -0.5, 0.2]))))
    p = add_chain(model, rng, [osim.PinJoint] * 4, "p")
    model.addConstraint(osim.PointConstraint(p[3], v3([0.1, 0.2, 0.0]), model.getGround(), v3([0.5, -0.8, 0.1])))
    model.addConstraint(osim.ConstantDistanceConstraint(p[0], v3([0.2, 0.0, 0.1]), p[2], v3([0.0, 0.1, 0.0]),
                                                        0.7))
    assert compare_udot(write(model, tmp_path), rng, n_states=4) < REL


# ---------------------------------------------------------------------- forces
def test_springs_bushings_and_limit_forces(tmp_path):
    rng = np.random.default_rng(51)
    model = new_model()
    b = add_chain(model, rng, [osim.PinJoint, osim.SliderJoint, osim.BallJoint, osim.PinJoint])
    model.addForce(osim.PointToPointSpring(model.getGround(), v3([0.2, 0.3, 0]), b[2], v3([0.1, 0, 0.2]), 20.0, 0.3))
    model.addForce(osim.PointToPointSpring(b[0], v3([0, 0.1, 0]), b[3], v3([0.1, 0, 0]), 7.0, 0.5))
    model.addForce(osim.BushingForce("bushing", b[0], osim.Transform(v3([0.1, 0.2, 0])), b[2],
                                     osim.Transform(osim.Rotation(0.4, v3([0, 1, 1])), v3([0, 0, 0.1])),
                                     v3([10, 20, 30]), v3([4, 5, 6]), v3([0.5, 1, 1.5]), v3([0.1, 0.2, 0.3])))
    # rotational: limits in degrees, stiffness per degree; translational: metres
    clf = osim.CoordinateLimitForce("jb1_coord_0", 10.0, 2.0, -15.0, 3.0, 0.05, 8.0)
    clf.setName("pin_limit")
    model.addForce(clf)
    clf2 = osim.CoordinateLimitForce("jb2_coord_0", 0.1, 200.0, -0.2, 100.0, 5.0, 0.05)
    clf2.setName("slider_limit")
    model.addForce(clf2)
    gs = osim.SpringGeneralizedForce("jb4_coord_0")
    gs.setName("genspring")
    gs.setStiffness(3.0)
    gs.setRestLength(0.2)
    gs.setViscosity(0.4)
    model.addForce(gs)
    path = write(model, tmp_path)
    m = load_osim(path)
    assert type(m.force_elements["pin_limit"][0]).__name__ == "CoordinateLimit"  # compiled

    def values(rng, names):
        # the pin and the slider beyond, inside the transition of, and within their limits
        q = {n: float(rng.uniform(-0.8, 0.8)) for n in names}
        q["jb1_coord_0"] = float(np.radians(rng.choice([rng.uniform(11, 30), rng.uniform(-40, -16),
                                                        rng.uniform(-10, 5)])))
        q["jb2_coord_0"] = float(rng.choice([rng.uniform(0.1, 0.2), rng.uniform(-0.4, -0.2), 0.0]))
        return q, {n: float(rng.uniform(-1, 1)) for n in names}

    assert compare_udot(path, rng, n_states=8, values=values) < REL


def test_limit_force_potential_energy(tmp_path):
    """The CoordinateLimitForce energy (in the transition and beyond) equals OpenSim's."""
    rng = np.random.default_rng(52)
    model = new_model()
    model.setGravity(v3([0, 0, 0]))
    add_chain(model, rng, [osim.PinJoint])
    clf = osim.CoordinateLimitForce("jb1_coord_0", 10.0, 2.0, -15.0, 3.0, 0.05, 8.0)
    clf.setName("lim")
    model.addForce(clf)
    path = write(model, tmp_path)
    om = osim.Model(str(path))
    s = om.initSystem()
    m = load_osim(path)
    st_ = m.initial_state()
    for deg in (12.0, 25.0, -17.0, -40.0):
        om.getCoordinateSet().get("jb1_coord_0").setValue(s, np.radians(deg), False)
        om.realizeVelocity(s)
        m.set_coordinate_value(st_, "jb1_coord_0", np.radians(deg))
        m.system.realize(st_, Stage.Velocity)
        theirs = om.calcPotentialEnergy(s)
        assert theirs > 1e-6
        assert abs(m.system.calc_potential_energy(st_) - theirs) <= REL * max(1.0, theirs)


# ---------------------------------------------------------------------- unsupported elements
def test_muscle_gives_one_warning(tmp_path):
    rng = np.random.default_rng(61)
    model = new_model()
    b = add_chain(model, rng, [osim.PinJoint, osim.PinJoint])
    # (Thelen, Millard and explicit DeGrooteFregly muscles are built now: implicit tendon dynamics are not)
    muscle = osim.DeGrooteFregly2016Muscle()
    muscle.setName("biceps")
    muscle.set_tendon_compliance_dynamics_mode("implicit")
    muscle.addNewPathPoint("origin", model.getGround(), v3([0, 0.1, 0]))
    muscle.addNewPathPoint("insertion", b[1], v3([0, 0.1, 0]))
    model.addForce(muscle)
    model.addMarker(osim.Marker("knee_marker", b[0], v3([0, 0, 0])))
    path = write(model, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_osim(path)
    mine = [w for w in caught if "not built" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    text = str(mine[0].message)
    for word in ("biceps", "DeGrooteFregly2016Muscle", "implicit", "knee_marker", "Marker", str(path)):
        assert word in text
    assert "biceps" not in m.force_elements and "jb2_coord_0" in m.coordinates


def test_bad_file_errors_name_file_and_line(tmp_path):
    rng = np.random.default_rng(71)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint])
    good = write(model, tmp_path).read_text()
    bad = tmp_path / "bad.osim"
    bad.write_text(good[: len(good) // 2])
    with pytest.raises(OsimFileError, match=r"bad\.osim:\d+: expected well-formed XML"):
        load_osim(bad)
    lines = good.splitlines()
    k = next(i for i, l in enumerate(lines) if "<mass>" in l)
    lines[k] = "<mass>heavy</mass>"
    bad.write_text("\n".join(lines))
    with pytest.raises(OsimFileError, match=rf"\.osim:{k + 1}: <mass> of Body 'b1': expected numbers"):
        load_osim(bad)
    bad.write_text(good.replace("<socket_parent>/bodyset/b1</socket_parent>",
                                "<socket_parent>/bodyset/nobody</socket_parent>"))
    with pytest.raises(OsimFileError, match=r"'/bodyset/nobody' names nothing"):
        load_osim(bad)


# ---------------------------------------------------------------------- fuzzing
def _base_text(tmp_path_factory) -> str:
    rng = np.random.default_rng(81)
    model = knee_model(rng)
    b = model.getBodySet().get("tibia")
    model.addForce(osim.PointToPointSpring(model.getGround(), v3([0, 0.1, 0]), b, v3([0.1, 0, 0]), 5.0, 0.2))
    model.addConstraint(osim.PointConstraint(b, v3([0.1, 0.2, 0.0]), model.getGround(), v3([0.5, -0.8, 0.1])))
    return write(model, tmp_path_factory.mktemp("fuzz")).read_text()


@pytest.fixture(scope="module")
def base_text(tmp_path_factory):
    return _base_text(tmp_path_factory)


_BAD_WORDS = ["abc", "nan", "NaN", "inf", "-inf", "1e999", "", "1 2 3 4 5 6 7", "true", "/bodyset/nothing", "..",
              "<", "&amp;"]
_TAGS = ["Body", "PinJoint", "CustomJoint", "SimmSpline", "Foo", "PhysicalOffsetFrame", "Coordinate", "Constant",
         "PointConstraint", "objects", "BodySet"]


@st.composite
def mutations(draw, text: str):
    kind = draw(st.sampled_from(["truncate", "value", "insert", "socket", "retag", "delete_line"]))
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text) - 1))]
    if kind == "value":
        spans = [m.span(1) for m in re.finditer(r">([^<>]+)</", text)]
        a, b = draw(st.sampled_from(spans))
        return text[:a] + draw(st.sampled_from(_BAD_WORDS)) + text[b:]
    lines = text.split("\n")
    if kind == "insert":
        k = draw(st.integers(1, len(lines) - 1))
        tag = draw(st.sampled_from(_TAGS))
        lines.insert(k, f'<{tag} name="x{k}">{draw(st.sampled_from(_BAD_WORDS[:6]))}</{tag}>')
        return "\n".join(lines)
    if kind == "socket":
        spans = [m.span(1) for m in re.finditer(r"<socket_\w+>([^<]*)</", text)]
        a, b = draw(st.sampled_from(spans))
        return text[:a] + draw(st.sampled_from(["/bodyset/nothing", "missing", "../..", "/", "/ground/x", "."])) \
            + text[b:]
    if kind == "retag":
        tags = sorted(set(re.findall(r"<(\w+)[ >]", text)))
        old, new = draw(st.sampled_from(tags)), draw(st.sampled_from(_TAGS))
        return re.sub(rf"<(/?){old}([ >/])", rf"<\g<1>{new}\g<2>", text)
    k = draw(st.integers(0, len(lines) - 1))
    del lines[k]
    return "\n".join(lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_files_end_in_clear_error_or_warning(tmp_path, base_text, data):
    text = data.draw(mutations(base_text))
    path = tmp_path / "mutant.osim"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = load_osim(path)
        except OsimFileError as exc:
            assert str(path) in str(exc) and exc.reason
            return
    # loaded: it is a usable system
    s = m.initial_state()
    m.system.realize(s, Stage.Velocity)
