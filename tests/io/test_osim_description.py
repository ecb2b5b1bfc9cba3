"""The OpenSim reader parses into the one model description; the one builder makes the System.

Checked here: reading an .osim file (OpenSim's published models, and a model written here with
every kind the reader describes: smooth and Hunt-Crossley contact, the three actuators and a
PrescribedController, OpenSim's own functions, expression-based forces, path forces, a mesh in
Hunt-Crossley contact,
a loop, couplers and a locked coordinate) makes no
MultibodySystem, and the description is plain model-format data carrying the file's lines; its
model-file text, read back by ``load_model``'s parser into a System by the same builder, has at
random states (controls and time set) the accelerations of the System ``load_osim`` returned, to
round-off; and the errors, the reader's and the builder's, name the file, the line and the element.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from osim_published import published_model

import simtk
from simtk import Stage
from simtk.io import OsimFileError, describe_osim, load_osim
from simtk.io._model_parser import _Node
from simtk.io._model_registry import _Ref, _Word
from simtk.io.model_file import model_from_text
from tolerances import EPS, scale_of

PUBLISHED = ["Models/Arm26/arm26.osim", "Models/Gait2392_Simbody/gait2392_thelen2003muscle.osim",
             "Models/ToyLanding/ToyLandingModel_activeAFO.osim",  # contact, a bushing, an actuator, locks
             "Models/Rajagopal/Rajagopal2016.osim",  # couplers, locked coordinates, 17 actuators
             "Models/Jumper/DynamicJumperModel.osim",  # couplers, locks, contact, coordinate limits
             "Models/BouncingBlock/bouncing_block.osim"]  # point-on-line, springs, bushing, contact

_V = "<mass_center>0 0 0</mass_center><inertia>0.1 0.12 0.09 0.01 0 0</inertia>"
# Every kind the reader describes, in a small model written by hand.
KINDS = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
<Model name="kinds">
  <gravity>0.3 -9.81 0.2</gravity>
  <Ground name="ground"/>
  <BodySet name="bodyset"><objects>
    <Body name="block"><mass>2</mass>{_V}</Body>
    <Body name="link"><mass>1</mass><mass_center>0 -0.2 0</mass_center><inertia>0.05 0.02 0.05 0 0 0</inertia></Body>
    <Body name="arm"><mass>0.5</mass><mass_center>0.1 0 0</mass_center><inertia>0.01 0.02 0.02 0 0 0</inertia></Body>
    <Body name="rod"><mass>0.3</mass><mass_center>0 0.1 0</mass_center><inertia>0.01 0.01 0.02 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet name="jointset"><objects>
    <FreeJoint name="free"><socket_parent_frame>/ground</socket_parent_frame>
      <socket_child_frame>/bodyset/block</socket_child_frame>
      <coordinates><Coordinate name="fx"/><Coordinate name="fy"/><Coordinate name="fz"/>
        <Coordinate name="tx"/><Coordinate name="ty"><default_value>0.3</default_value></Coordinate>
        <Coordinate name="tz"/></coordinates></FreeJoint>
    <PinJoint name="pin"><socket_parent_frame>block_offset</socket_parent_frame>
      <socket_child_frame>/bodyset/link</socket_child_frame>
      <frames><PhysicalOffsetFrame name="block_offset"><socket_parent>/bodyset/block</socket_parent>
        <translation>0.1 0 0</translation><orientation>0.2 0 0.1</orientation></PhysicalOffsetFrame></frames>
      <coordinates><Coordinate name="knee"><default_value>0.2</default_value></Coordinate></coordinates></PinJoint>
    <CustomJoint name="custom"><socket_parent_frame>/bodyset/link</socket_parent_frame>
      <socket_child_frame>/bodyset/arm</socket_child_frame>
      <coordinates><Coordinate name="bend"/><Coordinate name="slide"><locked>true</locked>
        <default_value>0.05</default_value></Coordinate></coordinates>
      <SpatialTransform>
        <TransformAxis name="rotation1"><coordinates>bend</coordinates><axis>1 0 0</axis>
          <LinearFunction><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
        <TransformAxis name="translation1"><coordinates>bend</coordinates><axis>1 0 0</axis>
          <MultiplierFunction><function><SimmSpline><x>-2 -1 0 1 2</x><y>0 0.01 0.03 0.02 0.04</y></SimmSpline>
          </function><scale>1.5</scale></MultiplierFunction></TransformAxis>
        <TransformAxis name="translation2"><coordinates>slide</coordinates><axis>0 1 0</axis></TransformAxis>
        <TransformAxis name="translation3"><coordinates>bend slide</coordinates><axis>0 0 1</axis>
          <MultivariatePolynomialFunction><coefficients>0.01 0.5 0.02 -0.1 0.3 0.05</coefficients>
          <dimension>2</dimension><order>2</order></MultivariatePolynomialFunction></TransformAxis>
      </SpatialTransform></CustomJoint>
    <PinJoint name="hinge"><socket_parent_frame>/bodyset/arm</socket_parent_frame>
      <socket_child_frame>/bodyset/rod</socket_child_frame><coordinates><Coordinate name="hinge_q"/></coordinates>
    </PinJoint>
    <FreeJoint name="closing"><socket_parent_frame>/bodyset/block</socket_parent_frame>
      <socket_child_frame>/bodyset/rod</socket_child_frame><coordinates><Coordinate name="c0"/><Coordinate name="c1"/>
        <Coordinate name="c2"/><Coordinate name="c3"/><Coordinate name="c4"/><Coordinate name="c5"/></coordinates>
    </FreeJoint>
  </objects></JointSet>
  <ConstraintSet name="constraintset"><objects>
    <CoordinateCouplerConstraint name="couple"><independent_coordinate_names>knee</independent_coordinate_names>
      <dependent_coordinate_name>bend</dependent_coordinate_name>
      <coupled_coordinates_function><Sine><amplitude>0.5</amplitude><omega>2</omega><phase>0.1</phase>
        <offset>0.2</offset></Sine></coupled_coordinates_function><scale_factor>0.8</scale_factor>
    </CoordinateCouplerConstraint>
    <CoordinateCouplerConstraint name="couple2"><independent_coordinate_names>knee hinge_q</independent_coordinate_names>
      <dependent_coordinate_name>c5</dependent_coordinate_name>
      <coupled_coordinates_function><ExpressionBasedFunction><expression>0.3*sin(x)+0.1*y^2</expression>
        <variables>x y</variables></ExpressionBasedFunction></coupled_coordinates_function>
    </CoordinateCouplerConstraint>
  </objects></ConstraintSet>
  <ContactGeometrySet name="contactgeometryset"><objects>
    <ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><location>0 0.01 0.02</location>
      <orientation>0.1 0.05 -1.5707963267948966</orientation></ContactHalfSpace>
    <ContactSphere name="heel"><socket_frame>/bodyset/block</socket_frame><location>0.1 -0.1 0.05</location>
      <radius>0.05</radius></ContactSphere>
    <ContactSphere name="tip"><socket_frame>/bodyset/link</socket_frame><location>0 -0.3 0</location>
      <radius>0.04</radius></ContactSphere>
    <ContactMesh name="shell"><socket_frame>/bodyset/link</socket_frame><filename>shell.obj</filename></ContactMesh>
  </objects></ContactGeometrySet>
  <ForceSet name="forceset"><objects>
    <SmoothSphereHalfSpaceForce name="heel_floor"><socket_sphere>/contactgeometryset/heel</socket_sphere>
      <socket_half_space>/contactgeometryset/floor</socket_half_space><stiffness>1e6</stiffness>
      <dissipation>2</dissipation><static_friction>0.8</static_friction><dynamic_friction>0.5</dynamic_friction>
    </SmoothSphereHalfSpaceForce>
    <HuntCrossleyForce name="contact"><transition_velocity>0.2</transition_velocity>
      <HuntCrossleyForce::ContactParametersSet><objects><HuntCrossleyForce::ContactParameters>
        <geometry>floor tip shell</geometry><stiffness>1e6</stiffness><dissipation>1</dissipation>
        <static_friction>0.8</static_friction><dynamic_friction>0.6</dynamic_friction>
        <viscous_friction>0.1</viscous_friction></HuntCrossleyForce::ContactParameters></objects>
      </HuntCrossleyForce::ContactParametersSet></HuntCrossleyForce>
    <CoordinateLimitForce name="knee_limit"><coordinate>knee</coordinate><upper_limit>10</upper_limit>
      <upper_stiffness>2</upper_stiffness><lower_limit>-20</lower_limit><lower_stiffness>3</lower_stiffness>
      <damping>0.01</damping><transition>5</transition></CoordinateLimitForce>
    <SpringGeneralizedForce name="knee_spring"><coordinate>knee</coordinate><stiffness>4</stiffness>
      <rest_length>0.1</rest_length><viscosity>0.3</viscosity></SpringGeneralizedForce>
    <ExpressionBasedCoordinateForce name="knee_expr"><coordinate>knee</coordinate>
      <expression>-2*q-0.1*qdot^3</expression></ExpressionBasedCoordinateForce>
    <ExpressionBasedPointToPointForce name="tether"><body1>block</body1><point1>0 0.1 0</point1><body2>rod</body2>
      <point2>0.1 0 0</point2><expression>5*(d-0.2)+0.5*ddot</expression></ExpressionBasedPointToPointForce>
    <PathSpring name="band"><stiffness>50</stiffness><resting_length>0.1</resting_length>
      <dissipation>0.2</dissipation><GeometryPath name="path"><PathPointSet><objects>
        <PathPoint name="p1"><socket_parent_frame>/bodyset/block</socket_parent_frame><location>0 0.1 0</location>
        </PathPoint>
        <ConditionalPathPoint name="p2"><socket_parent_frame>/bodyset/link</socket_parent_frame>
          <location>0.05 -0.1 0</location><socket_coordinate>/jointset/pin/knee</socket_coordinate>
          <range>-1 1</range></ConditionalPathPoint>
        <MovingPathPoint name="p3"><socket_parent_frame>/bodyset/arm</socket_parent_frame>
          <socket_x_coordinate>/jointset/pin/knee</socket_x_coordinate>
          <socket_y_coordinate>/jointset/pin/knee</socket_y_coordinate>
          <socket_z_coordinate>/jointset/pin/knee</socket_z_coordinate>
          <x_location><SimmSpline><x>-1 0 1 2</x><y>0.1 0.12 0.15 0.1</y></SimmSpline></x_location>
          <y_location><LinearFunction><coefficients>0.05 -0.02</coefficients></LinearFunction></y_location>
          <z_location><Constant><value>0.03</value></Constant></z_location></MovingPathPoint>
        <PathPoint name="p4"><socket_parent_frame>/bodyset/rod</socket_parent_frame><location>0 0.2 0</location>
        </PathPoint>
      </objects></PathPointSet></GeometryPath></PathSpring>
    <PathActuator name="cable"><optimal_force>20</optimal_force><GeometryPath name="path"><PathPointSet><objects>
        <PathPoint name="a"><socket_parent_frame>/ground</socket_parent_frame><location>0 1 0</location></PathPoint>
        <PathPoint name="b"><socket_parent_frame>/bodyset/block</socket_parent_frame><location>0 0 0.1</location>
        </PathPoint></objects></PathPointSet></GeometryPath></PathActuator>
    <CoordinateActuator name="knee_motor"><coordinate>knee</coordinate><optimal_force>3</optimal_force>
    </CoordinateActuator>
    <TorqueActuator name="twist"><bodyA>/jointset/pin/block_offset</bodyA><bodyB>link</bodyB><axis>1 2 3</axis>
      <torque_is_global>false</torque_is_global><optimal_force>2</optimal_force></TorqueActuator>
    <PointActuator name="thrust"><body>block</body><point>0.3 0.1 -0.2</point><direction>1 1 0</direction>
      <point_is_global>true</point_is_global><force_is_global>true</force_is_global>
      <optimal_force>7</optimal_force></PointActuator>
  </objects></ForceSet>
  <ControllerSet name="controllerset"><objects>
    <PrescribedController name="drive"><socket_actuators>/forceset/knee_motor /forceset/thrust</socket_actuators>
      <FunctionSet><objects>
        <Sine><amplitude>0.5</amplitude><omega>3</omega><phase>0.2</phase><offset>-0.1</offset></Sine>
        <PiecewiseConstantFunction><x>0 0.5 1</x><y>1 -2 0.5</y></PiecewiseConstantFunction>
      </objects></FunctionSet></PrescribedController>
    <PrescribedController name="drive2"><socket_actuators>/forceset/twist</socket_actuators>
      <FunctionSet><objects><GCVSpline><half_order>3</half_order><error_variance>0</error_variance>
        <x>0 0.2 0.4 0.6 0.8 1</x><y>0 0.5 -0.2 0.3 0.1 -0.4</y></GCVSpline></objects></FunctionSet>
    </PrescribedController>
  </objects></ControllerSet>
</Model>
</OpenSimDocument>
"""


@pytest.fixture
def kinds(tmp_path) -> Path:
    # a body name as TorqueActuator's bodyA; an offset frame there is read through its path
    text = KINDS.replace("<lower_stiffness>3</lower_stiffness>", "<lower_stiffness>3</lower_stiffness>")
    text = text.replace("<bodyA>/jointset/pin/block_offset</bodyA>", "<bodyA>/jointset/pin/block_offset</bodyA>")
    path = tmp_path / "kinds.osim"
    path.write_text(text)
    return path


def _published(rel: str) -> Path:
    path = published_model(rel)
    assert path is not None
    return path


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return load_osim(path)


def _describe(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return describe_osim(path)


def _plain(v) -> bool:
    """A model-format value: numbers, strings, booleans, lists, references, typed values."""
    if isinstance(v, _Node):
        return all(_plain(x) for x, _ in v.items.values())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return isinstance(v, (bool, int, float, str, _Ref, _Word))


def _check_plain_and_unbuilt(path: Path, monkeypatch) -> None:
    made = []
    original = simtk.MultibodySystem.__init__

    def counting(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(simtk.MultibodySystem, "__init__", counting)
    desc = _describe(path)
    assert made == []  # every element needs a subsystem of a System: none was made while reading
    lines = path.read_text().count("\n") + 1
    nodes = desc.nodes()
    assert nodes
    for n in nodes:
        assert 1 <= n.line <= lines and n.element, (n.path, n.line, n.element)
        for k, (v, _) in n.items.items():
            assert _plain(v), (n.path, k, v)
    system, comps = desc.build()
    assert made == [system]
    assert set(comps) >= {n.path for n in nodes}


@pytest.mark.parametrize("rel", PUBLISHED)
def test_reading_a_published_model_makes_no_system(rel, monkeypatch):
    _check_plain_and_unbuilt(_published(rel), monkeypatch)


def test_reading_every_kind_makes_no_system(kinds, monkeypatch):
    _check_plain_and_unbuilt(kinds, monkeypatch)
    text = _describe(kinds).to_text()
    for kind in ("Force.SmoothSphereHalfSpace", "Force.HuntCrossley", "Force.Actuators", "Force.CoordinateLimit",
                 "Constraint.CoordinateCoupler", "Constraint.PrescribedMotion", "Constraint.Weld",
                 "MobilizedBody.FunctionBased", "OpenSim.SimmSpline", "OpenSim.Multiplier", "OpenSim.SineOffset",
                 "OpenSim.PiecewiseConstant", "OpenSim.CoordinateCoupler", "control_functions=", "OpenSim.GCVSpline",
                 "OpenSim.MultivariatePolynomial", "OpenSim.Expression", "OpenSim.ExpressionBasedCoordinateForce",
                 "OpenSim.ExpressionBasedPointToPointForce", "Force.PathSpring", "Force.PathActuator"):
        assert kind in text, kind


def _compare(model, again, rng, n: int = 3) -> None:
    """load_osim's System and the one read from the description's text: the same accelerations at the
    same random states, controls and times."""
    sa = model.initial_state()
    sb = again.realize_topology()
    again.get_matter_subsystem().set_use_euler_angles(sb, True)
    again.realize_model(sb)
    assert (sa.get_nq(), sa.get_nu(), sa.get_nz()) == (sb.get_nq(), sb.get_nu(), sb.get_nz())
    actuation = again.get_component("/forces/actuators") if model.actuators else None
    for _ in range(n):
        q = sa.get_q() + rng.uniform(-0.3, 0.3, sa.get_nq())
        u = rng.uniform(-1.0, 1.0, sa.get_nu())
        t = float(rng.uniform(0.0, 1.0))
        controls = {a.var: float(rng.uniform(-1.0, 1.0)) for a in model.actuators.values()}
        cable = float(rng.uniform(0.0, 1.0))
        out = []
        for system, state in ((model.system, sa), (again, sb)):
            state.set_time(t)
            state.set_q(q)
            state.set_u(u)
            for name, c in controls.items():
                (model.actuation if system is model.system else actuation).set_control(state, name, c)
            if "cable" in model.force_elements:  # a PathActuator holds its own control
                system.get_component("/forces/cable").set_control(state, cable)
            system.realize(state, Stage.Acceleration)
            out.append(state.get_udot().copy())
        ua, ub = out
        assert np.isfinite(ua).all()
        # the same builder on the same values (written with repr, read back exactly): any difference is
        # round-off of a rebuilt value carried through the O(n) sweeps
        assert np.max(np.abs(ua - ub), initial=0.0) <= 64 * (len(u) + 1) * EPS * scale_of(ua, floor=1.0)


@pytest.mark.parametrize("rel", PUBLISHED)
def test_published_text_round_trips_to_load_osims_accelerations(rel):
    model = _load(_published(rel))
    again = model_from_text(model.description.to_text(), Path(rel).stem + ".simtk")
    _compare(model, again, np.random.default_rng(5))


def test_every_kind_round_trips_to_load_osims_accelerations(kinds):
    model = _load(kinds)
    assert set(model.actuators) == {"knee_motor", "twist", "thrust"} and set(model.controllers) == {"drive", "drive2"}
    assert model.force_elements["contact"][0].get_num_surfaces() == 2  # the mesh adds none (OpenSim's too)
    # OpenSim grows the tree level by level from Ground: block, then link and rod, then arm; hinge closes the loop
    assert list(model.loop_welds) == ["hinge"] and model.coordinates["slide"].lock is not None
    again = model_from_text(model.description.to_text(), "kinds.simtk")
    _compare(model, again, np.random.default_rng(9), n=5)


def test_the_description_is_what_load_osim_built(kinds):
    """load_osim's result keeps the description it built from, and its records name the built
    components at the description's paths."""
    model = _load(kinds)
    d = model.description
    assert model.components["/matter/link"] is model.bodies["link"]
    assert model.coordinates["knee"].mobod is model.joints["pin"] is model.bodies["link"]
    assert model.actuation is model.components["/forces/actuators"]
    paths = {n.path for n in d.nodes()}
    assert {"/matter/block", "/matter/arm", "/matter/slide_lock", "/forces/contact", "/forces/heel_floor",
            "/forces/actuators", "/forces/gravity", "/matter/couple"} <= paths
    node = next(n for n in d.nodes() if n.path == "/forces/knee_limit")
    assert node.element == "CoordinateLimitForce 'knee_limit'"
    assert (kinds.read_text().splitlines()[node.line - 1].lstrip()
            .startswith('<CoordinateLimitForce name="knee_limit">'))


def test_reader_errors_name_file_line_and_element(kinds):
    text = kinds.read_text()
    bad = text.replace("<radius>0.04</radius>", "<radius>-0.04</radius>")
    kinds.write_text(bad)
    with pytest.raises(OsimFileError) as info:
        describe_osim(kinds)
    e = info.value
    assert e.file == str(kinds) and e.line == bad[:bad.index("-0.04")].count("\n") + 1
    assert "ContactSphere 'tip'" in str(e) and "radius" in str(e)


def test_builder_errors_name_file_line_and_element(kinds):
    """What only an element's constructor or property check refuses is raised by the builder as an
    OsimFileError at the OpenSim element's line, naming it."""
    text = kinds.read_text()
    bad = text.replace("<dissipation>2</dissipation>", "<dissipation>-2</dissipation>")
    kinds.write_text(bad)
    desc = _describe(kinds)  # the reader leaves the value to the element
    with pytest.raises(OsimFileError) as info:
        desc.build()
    e = info.value
    line = bad[:bad.index('<SmoothSphereHalfSpaceForce name="heel_floor">')].count("\n") + 1
    assert e.file == str(kinds) and e.line == line, str(e)
    assert e.element == "SmoothSphereHalfSpaceForce 'heel_floor'" and "dissipation" in str(e), str(e)
    with pytest.raises(OsimFileError, match=r"kinds\.osim:\d+: SmoothSphereHalfSpaceForce 'heel_floor': .*dissipation"):
        load_osim(kinds)


def test_save_model_of_a_loaded_model_round_trips(kinds):
    """The kinds the reader describes are written from the built components too (save_model's own
    getters, not the description): the text loads into the same dynamics."""
    from simtk.io.model_file import model_to_text
    model = _load(kinds)
    again = model_from_text(model_to_text(model.system), "saved.simtk")
    _compare(model, again, np.random.default_rng(4))
