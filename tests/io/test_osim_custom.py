"""load_osim on CustomJoints against OpenSim 4.6: every function form OpenSim writes on a
TransformAxis, and coordinate-level constraints (locks, clamps, prescribed motion, couplers) on a
CustomJoint's coordinates.

As in test_osim.py, each model is written by OpenSim's Python API (or patched as text where the API
cannot make it) and read by both OpenSim and ``load_osim``; the reference is always OpenSim's.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from test_osim import (  # noqa: E402  (after the importorskip on purpose)
    REL,
    add_chain,
    compare_udot,
    coupler,
    new_model,
    random_body,
    spline,
    v3,
    write,
)

from simtk import MobilizedBody, Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from simtk.io.osim import OsimFileError  # noqa: E402


def custom_joint(model, parent, child, spec, name="cj"):
    """A CustomJoint ``name`` from ``parent`` to ``child``; ``spec``: (axis index, coordinates,
    function, direction or None) per TransformAxis set."""
    st_ = osim.SpatialTransform()
    for i, coords, f, *direction in spec:
        direction = direction[0] if direction else None
        ta = st_.updTransformAxis(i)
        names = osim.ArrayStr()
        for c in coords:
            names.append(c)
        ta.setCoordinateNames(names)
        if direction is not None:
            ta.setAxis(v3(direction))
        ta.set_function(f)
    j = osim.CustomJoint(name, parent, v3([0.1, -0.4, 0.05]), v3([0.2, 0, 0.1]), child, v3([0, 0.2, 0]),
                         v3([0, 0.3, 0]), st_)
    model.addJoint(j)
    return j


def femur_and_tibia(rng, name="m"):
    model = new_model(name)
    femur, = add_chain(model, rng, [osim.PinJoint], "femur")
    tibia = random_body(rng, "tibia")
    model.addBody(tibia)
    return model, femur, tibia


# ---------------------------------------------------------------------- functions of a TransformAxis
# Placeholders the API can write on a coordinate-less axis, replaced by the forms OpenSim's own
# scaled models carry (the API cannot hold a MultiplierFunction there without crashing in Python).
_ARGLESS = {
    0.125: '<MultiplierFunction name="function"><function><LinearFunction><coefficients>0.3 5</coefficients>'
           '</LinearFunction></function><scale>0.5</scale></MultiplierFunction>',
    0.25: '<MultiplierFunction name="function"><function><Constant><value>0.2</value></Constant></function>'
           '<scale>1.5</scale></MultiplierFunction>',
    0.375: '<LinearFunction name="function"><coefficients>-0.4 9</coefficients></LinearFunction>',
}


def _constant_axes_model(tmp_path, rng):
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0), [0, 0, 1]),
                                       (1, [], osim.Constant(0.125), [1, 0, 0]),
                                       (2, [], osim.Constant(0.0), [0, 1, 0]),
                                       (3, [], osim.Constant(0.25), None),
                                       (4, [], osim.Constant(0.375), None),
                                       (5, [], osim.Constant(0.1), None)])
    path = write(model, tmp_path)
    text = path.read_text()
    for value, xml in _ARGLESS.items():
        text, n = re.subn(rf'<Constant name="function">\s*<value>{value}</value>\s*</Constant>', xml, text)
        assert n == 1, value
    path.write_text(text)
    return path


def test_axes_without_coordinates_are_constants_as_opensim_evaluates_them(tmp_path):
    """OpenSim calls an axis's function with no argument: a Constant is its value, a LinearFunction
    its *first* coefficient (Simbody's Linear adds coefficient[len(x)], so 'evaluate at 0' would give
    the intercept 9 instead of -0.4), a MultiplierFunction scale times its function's value."""
    rng = np.random.default_rng(41)
    path = _constant_axes_model(tmp_path, rng)
    om = osim.Model(str(path))
    s = om.initSystem()
    om.realizePosition(s)
    m = load_osim(path)
    st_ = m.initial_state()
    theirs = np.array([om.getBodySet().get("tibia").getPositionInGround(s).get(i) for i in range(3)])
    mine = m.bodies["tibia"].get_body_origin_location(st_)
    assert np.abs(mine - theirs).max() <= REL * max(1.0, np.abs(theirs).max())
    assert compare_udot(path, rng, n_states=3, spread=1.0) < REL


def test_axis_without_coordinates_with_a_function_opensim_cannot_evaluate_is_refused(tmp_path):
    rng = np.random.default_rng(42)
    path = _constant_axes_model(tmp_path, rng)
    text = path.read_text()
    text = text.replace(_ARGLESS[0.375], '<PolynomialFunction name="function"><coefficients>0.2 -0.1 0.3'
                                         '</coefficients></PolynomialFunction>')
    path.write_text(text)
    with pytest.raises(OsimFileError, match=r"CustomJoint 'cj' translation2: a PolynomialFunction of no coordinate"):
        load_osim(path)


def test_sine_step_piecewise_functions(tmp_path):
    """Sine (with its offset), StepFunction, PiecewiseLinearFunction, PiecewiseConstantFunction and a
    MultiplierFunction of a SimmSpline, each on a coordinate's axis; spread 2 reaches beyond every
    table's ends."""
    rng = np.random.default_rng(43)
    model, femur, tibia = femur_and_tibia(rng)
    plf = osim.PiecewiseLinearFunction()
    for x, y in [(-1.2, 0.1), (-0.3, -0.2), (0.4, 0.05), (1.1, 0.3)]:
        plf.addPoint(x, y)
    pcf = osim.PiecewiseConstantFunction()
    for x, y in [(-0.5, 0.02), (0.1, -0.03), (0.9, 0.04)]:
        pcf.addPoint(x, y)
    custom_joint(model, femur, tibia, [(0, ["a"], osim.Sine(0.8, 1.3, 0.2, 0.1), [0, 0, 1]),
                                       (1, ["b"], osim.StepFunction(-0.5, 0.6, -0.3, 0.4), [1, 0, 0]),
                                       # b also turns linearly: a step alone leaves b no inertia outside it
                                       (2, ["b"], osim.LinearFunction(1.0, 0.0), [0, 1, 0]),
                                       (3, ["a"], plf, None),
                                       (4, ["b"], pcf, None),
                                       (5, ["a"], spline([-1, -0.3, 0.4, 1.2], [0.1, -0.2, 0.05, 0.3]), None)])
    path = write(model, tmp_path)
    text = path.read_text()
    for tag in ("<Sine", "<StepFunction", "<PiecewiseLinearFunction", "<PiecewiseConstantFunction"):
        assert tag in text
    # a MultiplierFunction of the spline (what OpenSim's Scale tool writes; the API cannot make it in Python)
    text, n = re.subn(r'(<SimmSpline name="function">.*?</SimmSpline>)',
                      lambda mo: '<MultiplierFunction name="function"><function>' + mo.group(1).replace(
                          ' name="function"', '') + '</function><scale>0.7</scale></MultiplierFunction>',
                      text, flags=re.S)
    assert n == 1
    path.write_text(text)
    assert compare_udot(path, rng, n_states=6, spread=2.0) < REL


# ---------------------------------------------------------------------- inertias as OpenSim takes them
def test_nonphysical_inertia_is_kept_as_opensim_keeps_it(tmp_path):
    """A toe whose principal moments (0, 0, 0.001) and a shank whose (0.01, 0.01, 0.05) violate the
    triangle inequality: OpenSim loads them as written, and so does load_osim by default (with one
    warning naming both); "repair" and "error" are the other policies."""
    rng = np.random.default_rng(44)
    model = new_model()
    b1, b2 = add_chain(model, rng, [osim.BallJoint, osim.PinJoint])
    for b, I in ((b1, (0.01, 0.01, 0.05)), (b2, (0.0, 0.0, 0.001))):
        b.setInertia(osim.Inertia(*I))
    path = write(model, tmp_path)
    with pytest.warns(UserWarning, match=r"2 body\(ies\) with an inertia no mass distribution has, kept as "
                                         r"written.*b1 \(line \d+: .*triangle inequality.*b2"):
        m = load_osim(path)
    assert set(m.nonphysical_inertias) == {"b1", "b2"}
    central = m.bodies["b1"].get_default_mass_properties().central_inertia().matrix
    assert np.array_equal(central, np.diag([0.01, 0.01, 0.05]))
    assert compare_udot(path, rng, n_states=3, spread=1.0, nonphysical_ok=True) < REL
    with pytest.warns(UserWarning, match="replaced by the nearest physical one"):
        repaired = load_osim(path, nonphysical_inertia="repair")
    lam = np.linalg.eigvalsh(repaired.bodies["b1"].get_default_mass_properties().central_inertia().matrix)
    assert lam[2] <= lam[0] + lam[1] + 8 * np.finfo(float).eps * lam[2]
    with pytest.raises(OsimFileError, match=r"model.osim:\d+: Body 'b1': invalid mass properties: .*triangle"):
        load_osim(path, nonphysical_inertia="error")
    with pytest.raises(ValueError, match="nonphysical_inertia must be one of"):
        load_osim(path, nonphysical_inertia="ignore")


# ---------------------------------------------------------------------- locks, prescriptions, clamps, couplers
def _two_coordinate_knee(tmp_path, rng, coordinate_xml: dict, name="model.osim"):
    """femur on a pin, tibia on a CustomJoint of coordinates k (rotation about z, SimmSpline
    translations) and s (a slide along z); ``coordinate_xml`` adds properties to a Coordinate."""
    model, femur, tibia = femur_and_tibia(rng)
    knots = np.linspace(-2.1, 0.6, 7)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0), [0, 0, 1]),
                                       (1, [], osim.Constant(0.2), [1, 0, 0]),
                                       (2, [], osim.Constant(0.0), [0, 1, 0]),
                                       (3, ["k"], spline(knots, 0.05 * np.sin(2 * knots))),
                                       (4, ["k"], spline(knots, -0.4 + 0.03 * knots ** 2)),
                                       (5, ["s"], osim.LinearFunction(1.0, 0.0))])
    path = write(model, tmp_path, name)
    text = path.read_text()
    for cname, xml in coordinate_xml.items():
        text, n = re.subn(rf'(<Coordinate name="{cname}">)', rf"\1{xml}", text)
        assert n == 1, cname
    path.write_text(text)
    return path


def test_locked_custom_joint_coordinate(tmp_path):
    """OpenSim locks a coordinate with a prescribed constant motion: its udot is 0 and the others
    feel the lock; load_osim builds the same on the FunctionBased mobilizer (Hamner's subtalar,
    ToyLanding's platform, Rajagopal's lumbar)."""
    rng = np.random.default_rng(51)
    path = _two_coordinate_knee(tmp_path, rng, {"s": "<default_value>0.05</default_value><locked>true</locked>"})
    m = load_osim(path)
    assert m.coordinates["s"].lock is not None
    st_ = m.initial_state()
    assert m.get_coordinate_value(st_, "s") == 0.05
    assert compare_udot(path, rng, n_states=4, spread=1.0) < REL
    m.system.realize(st_, Stage.Acceleration)
    assert m.get_coordinate_acceleration(st_, "s") == 0.0


def test_prescribed_custom_joint_coordinate(tmp_path):
    """A CustomJoint coordinate prescribed by a Sine of time: its udot is the Sine's second derivative
    at t = 0 in both, and the other coordinates feel the prescribed motion."""
    rng = np.random.default_rng(52)
    sine = ("<prescribed>true</prescribed><prescribed_function><Sine><amplitude>0.5</amplitude><omega>2</omega>"
            "<phase>0.3</phase><offset>0.1</offset></Sine></prescribed_function>")
    path = _two_coordinate_knee(tmp_path, rng, {"k": sine})
    assert load_osim(path).coordinates["k"].lock is not None
    assert compare_udot(path, rng, n_states=4, spread=1.0) < REL


def test_clamped_custom_joint_coordinate_at_its_limit(tmp_path):
    """A clamped CustomJoint coordinate whose default is its range's upper end: the same initial
    values and accelerations as OpenSim's, and the assembler keeps it in its range, as OpenSim's
    AssemblySolver does."""
    rng = np.random.default_rng(53)
    path = _two_coordinate_knee(tmp_path, rng, {"k": "<default_value>0.5</default_value><range>-1.5 0.5</range>"
                                                     "<clamped>true</clamped>"})
    om = osim.Model(str(path))
    s = om.initSystem()
    m = load_osim(path)
    st_ = m.initial_state()
    for n in ("k", "s", "jfemur1_coord_0"):
        assert m.get_coordinate_value(st_, n) == om.getCoordinateSet().get(n).getValue(s)
    assert compare_udot(path, rng, n_states=3, spread=0.4) < REL
    m.set_coordinate_value(st_, "k", 0.9)
    m.make_assembler().assemble(st_)
    assert -1.5 <= m.get_coordinate_value(st_, "k") <= 0.5 + REL


@pytest.mark.parametrize("independent", ["k", "s"])
def test_coupler_on_a_custom_joint_simtk_evaluates_in_python(tmp_path, independent):
    """A CustomJoint with a Sine with an offset has no compiled form: simtk evaluates it in Python (a
    Custom mobilizer), and a coupler on its coordinate k or s (it was refused) moves it as OpenSim does."""
    rng = np.random.default_rng(54)
    path = _two_coordinate_knee(tmp_path, rng, {})
    text = path.read_text()
    text, n = re.subn(r'(<TransformAxis name="translation3">.*?)<LinearFunction name="function">.*?</LinearFunction>',
                      r'\1<Sine name="function"><amplitude>0.3</amplitude><omega>1.5</omega><phase>0.2</phase>'
                      r'<offset>0.05</offset></Sine>', text, count=1, flags=re.S)
    assert n == 1
    path.write_text(text)
    model = osim.Model(str(path))
    cc = osim.CoordinateCouplerConstraint()
    cc.setName("pc_coupler")
    names = osim.ArrayStr()
    names.append(independent)
    cc.setIndependentCoordinateNames(names)
    cc.setDependentCoordinateName("jfemur1_coord_0")
    cc.setFunction(osim.LinearFunction(0.5, 0.0))
    model.addConstraint(cc)
    model.initSystem()
    path2 = write(model, tmp_path, "model2.osim")
    m = load_osim(path2)
    assert m.joints["cj"]._custom_joint_code() is None  # evaluated in Python
    assert compare_udot(path2, rng, n_states=3, spread=0.4) < REL


@pytest.mark.parametrize("J", [osim.PinJoint, osim.SliderJoint, osim.UniversalJoint])
def test_locks_prescribed_motion_and_couplers_on_reversed_joints(tmp_path, J):
    """The reversed joints of test_joints_opensim_reverses with a locked and a prescribed coordinate of
    the one at Ground and a coupler onto the inner one's (simtk makes reversed mobilizers Custom ones;
    the constraints were refused): the accelerations are OpenSim's."""
    rng = np.random.default_rng(83)
    model = new_model()
    c1 = random_body(rng, "c1")
    model.addBody(c1)
    model.addJoint(J("rev_ground", c1, v3([0.1, 0.2, 0]), v3([0.3, 0, 0.2]), model.getGround(), v3([0.0, 0.5, 0]),
                     v3([0, 0.2, 0])))
    b1, = add_chain(model, rng, [osim.PinJoint])
    b2 = random_body(rng, "b2")
    model.addBody(b2)
    model.addJoint(J("rev_inner", b2, v3([0.2, -0.1, 0.1]), v3([0.1, 0.4, 0]), b1, v3([0.0, -0.3, 0.1]),
                     v3([0.2, 0, -0.1])))
    model.initSystem()
    coords = model.getCoordinateSet()
    names = [coords.get(i).getName() for i in range(coords.getSize())]
    ground = [x for x in names if x.startswith("rev_ground")]
    inner = [x for x in names if x.startswith("rev_inner")]
    cc = osim.CoordinateCouplerConstraint()
    cc.setName("cc")
    independent = osim.ArrayStr()
    independent.append("jb1_coord_0")
    cc.setIndependentCoordinateNames(independent)
    cc.setDependentCoordinateName(inner[-1])
    cc.setFunction(osim.LinearFunction(0.5, 0.1))
    model.addConstraint(cc)
    coords.get(ground[0]).set_locked(True)
    coords.get(ground[0]).setDefaultValue(0.2)
    if len(ground) > 1:
        coords.get(ground[1]).set_prescribed(True)
        coords.get(ground[1]).setPrescribedFunction(osim.Sine(0.4, 2.0, 0.3, 0.0))
    model.initSystem()
    path = write(model, tmp_path)
    m = load_osim(path)
    assert m.joints["rev_ground"].is_reversed() and m.joints["rev_inner"].is_reversed()
    assert m.coordinates[ground[0]].lock is not None
    assert compare_udot(path, rng, n_states=4, spread=0.5) < REL


# ---------------------------------------------------------------------- other constraints
def test_point_on_line_constraint(tmp_path):
    """PointOnLineConstraint (bouncing_block's planar locks): a Pin-Ball-Pin chain whose tip stays on
    a line fixed on the first body, and a body held on a line of Ground; then the same with the line
    body given through an offset frame (the joint's), which OpenSim reduces to its base body."""
    rng = np.random.default_rng(61)
    model = new_model()
    b = add_chain(model, rng, [osim.PinJoint, osim.BallJoint, osim.PinJoint])
    model.addConstraint(osim.PointOnLineConstraint(b[0], v3([0.3, 1.0, -0.2]), v3([0.1, 0.0, 0.2]),
                                                   b[2], v3([0.05, 0.2, 0.0])))
    f = add_chain(model, rng, [osim.FreeJoint], "f")
    model.addConstraint(osim.PointOnLineConstraint(model.getGround(), v3([0.0, 1.0, 0.0]), v3([0.0, 0.0, 0.0]),
                                                   f[0], v3([0.0, 0.0, 0.0])))
    path = write(model, tmp_path)
    assert compare_udot(path, rng, n_states=4) < REL
    text = path.read_text()
    text, n = re.subn(r"<socket_line_body>/bodyset/b1</socket_line_body>",
                      "<socket_line_body>/jointset/jb2/b1_offset</socket_line_body>", text)
    assert n == 1
    path.write_text(text)
    assert compare_udot(path, rng, n_states=4) < REL


@pytest.mark.parametrize("kind", ["PointConstraint", "ConstantDistanceConstraint"])
def test_point_and_distance_constraints_on_an_offset_frame(tmp_path, kind):
    """OpenSim takes a PointConstraint's and a ConstantDistanceConstraint's locations in the socket's
    base body even when the socket names an offset frame (the frame's transform is not applied):
    load_osim applied it, and the accelerations differed from OpenSim's by O(1)."""
    rng = np.random.default_rng(62)
    model = new_model()
    p = add_chain(model, rng, [osim.PinJoint] * 4, "p")
    if kind == "PointConstraint":  # on Ground's offset frame (jp1's parent frame)
        model.addConstraint(osim.PointConstraint(p[3], v3([0.1, 0.2, 0.0]), model.getGround(), v3([0.5, -0.8, 0.1])))
        text, n = re.subn(r"<socket_body_2>/ground</socket_body_2>",
                          r"<socket_body_2>/jointset/jp1/ground_offset</socket_body_2>", write(model, tmp_path).read_text())
    else:  # on p4's offset frame (jp4's child frame)
        model.addConstraint(osim.ConstantDistanceConstraint(p[3], v3([0.2, 0.0, 0.1]), p[1], v3([0.0, 0.1, 0.0]),
                                                            0.7))
        text, n = re.subn(r"<socket_body_1>/bodyset/p4</socket_body_1>",
                          r"<socket_body_1>/jointset/jp4/p4_offset</socket_body_1>", write(model, tmp_path).read_text())
    path = tmp_path / "model.osim"
    assert n == 1
    path.write_text(text)
    assert compare_udot(path, rng, n_states=3) < REL


@pytest.mark.parametrize("compiled", [True, False])
def test_one_coordinate_driving_three_rotations_with_speed(tmp_path, monkeypatch, compiled):
    """Rajagopal's walker knee: one coordinate turns about x linearly and about z and y through
    SimmSplines, and translates along y and z (permuted translation axes); compared at nonzero
    speeds, which is where the velocity terms (HDot u) of several coupled rotations show: OpenSim's
    are Simbody's FunctionBased's (hdot="simbody"), not the exact derivative (they differed by 5e-3).
    Both the compiled kind and the Python path."""
    monkeypatch.setattr(MobilizedBody.FunctionBased, "_use_compiled_kind", compiled)
    rng = np.random.default_rng(71)
    model, femur, tibia = femur_and_tibia(rng)
    knots = np.linspace(0.0, 2.1, 8)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0), [1, 0, 0]),
                                       (1, ["k"], spline(knots, 0.3 * np.sin(knots)), [0, 0, 1]),
                                       (2, ["k"], spline(knots, -0.2 * knots + 0.1 * knots ** 2), [0, 1, 0]),
                                       (3, ["k"], spline(knots, 0.05 * np.cos(knots)), [0, 1, 0]),
                                       (4, ["k"], spline(knots, -0.4 + 0.03 * knots ** 2), [0, 0, 1]),
                                       (5, [], osim.Constant(0.0), [1, 0, 0])])

    def values(rng, names):
        return ({n: float(rng.uniform(0.2, 1.9)) for n in names}, {n: float(rng.uniform(-2, 2)) for n in names})

    path = write(model, tmp_path)
    assert load_osim(path).joints["cj"].get_hdot() == "simbody"
    assert compare_udot(path, rng, n_states=5, values=values) < REL


# ---------------------------------------------------------------------- joints OpenSim reverses, loops
@pytest.mark.parametrize("J", [osim.PinJoint, osim.SliderJoint, osim.UniversalJoint, osim.GimbalJoint])
def test_joints_opensim_reverses(tmp_path, J):
    """A joint whose child is Ground, and one whose child (b1) is reached from Ground before its
    parent (b2): OpenSim mobilizes the parent through the joint reversed, keeping the coordinates'
    meaning; load_osim builds the same reversed mobilizers (they were refused)."""
    rng = np.random.default_rng(81)
    model = new_model()
    c1 = random_body(rng, "c1")
    model.addBody(c1)
    model.addJoint(J("rev_ground", c1, v3([0.1, 0.2, 0]), v3([0.3, 0, 0.2]), model.getGround(), v3([0.0, 0.5, 0]),
                     v3([0, 0.2, 0])))
    b1, = add_chain(model, rng, [osim.PinJoint])
    b2 = random_body(rng, "b2")
    model.addBody(b2)
    model.addJoint(J("rev_inner", b2, v3([0.2, -0.1, 0.1]), v3([0.1, 0.4, 0]), b1, v3([0.0, -0.3, 0.1]),
                     v3([0.2, 0, -0.1])))
    path = write(model, tmp_path)
    m = load_osim(path)
    assert m.joints["rev_ground"].is_reversed() and m.joints["rev_inner"].is_reversed()
    assert m.bodies["c1"] is m.joints["rev_ground"] and m.bodies["b2"] is m.joints["rev_inner"]
    assert compare_udot(path, rng, n_states=4) < REL


def test_loop_of_joints_is_cut_as_opensim_cuts_it(tmp_path):
    """A Ball-Ball-Pin chain whose last body is also on a ball joint to Ground (4 degrees of freedom
    left): OpenSim's graph maker reaches b3 through 'loop' at the first level, so jb3 closes the loop
    and mobilizes a copy of b3 welded to it; the two share b3's mass, the copy with OpenSim's inertia
    (see _osim_tree._slave_mass: an equal split is off by 1e-2). load_osim refused the file."""
    rng = np.random.default_rng(82)
    model = new_model()
    b = add_chain(model, rng, [osim.BallJoint, osim.BallJoint, osim.PinJoint])
    model.addJoint(osim.BallJoint("loop", model.getGround(), v3([0.5, -1.0, 0.2]), v3([0, 0, 0]), b[2],
                                  v3([0.1, 0.2, 0]), v3([0, 0, 0])))
    path = write(model, tmp_path)
    m = load_osim(path)
    assert set(m.loop_welds) == {"jb3"} and m.joints["jb3"] is not m.bodies["b3"]
    assert m.bodies["b3"] is m.joints["loop"]
    assert compare_udot(path, rng, n_states=4) < REL


def test_reversed_custom_joints_are_refused_with_the_reason(tmp_path):
    rng = np.random.default_rng(83)
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, tibia, femur, [(0, ["k"], osim.LinearFunction(1.0, 0.0))])
    path = write(model, tmp_path, "model2.osim")
    with pytest.raises(OsimFileError, match=r"CustomJoint 'cj': OpenSim would reverse it .* not supported"):
        load_osim(path)


def test_bodies_without_a_path_to_ground_get_opensims_free_joints(tmp_path):
    """A body in no joint, and a chain d1 -> d2 whose root has no joint to Ground: OpenSim's graph maker
    adds the FreeJoints 'free_loose' and 'free_d1' (after the file's joints, coordinates
    free_<body>_coord_0..5) and prints them into the file. Without them in the file load_osim gave the
    first no coordinates and refused the second; it now adds the same joints, so that the file
    stripped of them loads as the file with them (which agrees with OpenSim). (OpenSim 4.6 itself
    fails to initialize from the stripped file: 'an invalid MobilizedBodyIndex'.)"""
    rng = np.random.default_rng(84)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint])
    model.addBody(random_body(rng, "loose"))
    d1, d2 = random_body(rng, "d1"), random_body(rng, "d2")
    model.addBody(d1)
    model.addBody(d2)
    model.addJoint(osim.PinJoint("jd", d1, v3([0.1, -0.3, 0]), v3([0.2, 0, 0.1]), d2, v3([0, 0.2, 0]),
                                 v3([0, 0.1, 0.3])))
    full = write(model, tmp_path)
    assert compare_udot(full, rng, n_states=2) < REL
    text, n = re.subn(r'<FreeJoint name="free_(loose|d1)">.*?</FreeJoint>', "", full.read_text(), flags=re.S)
    assert n == 2
    stripped = tmp_path / "stripped.osim"
    stripped.write_text(text)
    with pytest.warns(UserWarning, match=r"loose \(Body without a joint, line \d+\): joined to Ground by FreeJoint "
                                         r"'free_loose'.*d1 \(Body, line \d+\): no chain of joints reaches Ground"):
        m = load_osim(stripped)
    ref = load_osim(full)
    assert list(m.joints) == list(ref.joints) == ["jb1", "jd", "free_loose", "free_d1"]
    assert list(m.coordinates) == list(ref.coordinates)
    a, b = m.initial_state(), ref.initial_state()
    for _ in range(3):
        for name in m.coordinates:
            q, u = rng.uniform(-0.8, 0.8, 2)
            for model_, st_ in ((m, a), (ref, b)):
                model_.set_coordinate_value(st_, name, q)
                model_.set_coordinate_speed(st_, name, u)
        m.system.realize(a, Stage.Acceleration)
        ref.system.realize(b, Stage.Acceleration)
        mine = np.array([m.get_coordinate_acceleration(a, n) for n in m.coordinates])
        theirs = np.array([ref.get_coordinate_acceleration(b, n) for n in m.coordinates])
        assert np.abs(mine - theirs).max() <= REL * max(1.0, np.abs(theirs).max())


def test_functions_simtk_does_not_read_leave_couplers_and_prescriptions_in_the_warning(tmp_path):
    """A function simtk does not read (a tag it does not know) in a coupler and in a prescribed_function:
    the file loads, the coupler and the prescription are listed in the one warning as not built (the
    file was refused); on a TransformAxis it stays an error naming it."""
    rng = np.random.default_rng(91)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint, osim.PinJoint, osim.PinJoint])
    coupler(model, "jb1_coord_0", "jb2_coord_0", osim.LinearFunction(0.7, 0.1), "gcv_coupler")
    path = write(model, tmp_path)
    gcv = '<FutureFunction name="function"><x>-1 -0.5 0 0.5 1 1.5</x></FutureFunction>'
    text, n = re.subn(r"(<coupled_coordinates_function>)\s*<LinearFunction.*?</LinearFunction>",
                      lambda mo: mo.group(1) + gcv.replace(' name="function"', ""), path.read_text(), flags=re.S)
    assert n == 1
    text, n = re.subn(r'(<Coordinate name="jb3_coord_0">)',
                      lambda mo: mo.group(1) + "<prescribed>true</prescribed><prescribed_function>"
                      + gcv.replace(' name="function"', "") + "</prescribed_function>", text)
    assert n == 1
    path.write_text(text)
    with pytest.warns(UserWarning, match=r"2 element\(s\) of the model were not built: jb3_coord_0 \(Coordinate, "
                                         r"line \d+\): its prescribed_function <FutureFunction> is not one simtk reads; not "
                                         r"prescribed; gcv_coupler \(CoordinateCouplerConstraint, line \d+\): its "
                                         r"function <FutureFunction> is not one simtk reads; the constraint is not built"):
        m = load_osim(path)
    assert "gcv_coupler" not in m.constraints and m.coordinates["jb3_coord_0"].lock is None
    model, femur, tibia = femur_and_tibia(rng)
    custom_joint(model, femur, tibia, [(0, ["k"], osim.LinearFunction(1.0, 0.0))])
    path = write(model, tmp_path, "model2.osim")
    text, n = re.subn(r'<LinearFunction name="function">\s*<coefficients>\s*1 0</coefficients>\s*</LinearFunction>',
                      gcv, path.read_text())
    assert n == 1
    path.write_text(text)
    with pytest.raises(OsimFileError, match=r"CustomJoint 'cj' rotation1: function type <FutureFunction> is not "
                                            r"supported"):
        load_osim(path)
