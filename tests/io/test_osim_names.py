"""OpenSim's names on a model loaded by load_osim: coordinates are components at their OpenSim paths.

OpenSim users address a model as ``/jointset/<joint>/<coordinate>`` with state variables ``value``
and ``speed`` and outputs ``value``, ``speed`` and ``acceleration``, and bodies and forces as
``/bodyset/<body>``, ``/forceset/<force>``. The first tests read a small file written here (no
OpenSim needed); the last ones check against OpenSim 4.6 itself, on a model written by its API and
on OpenSim's published models (found by tests/osim_published.py): every coordinate of OpenSim's
CoordinateSet is reachable by its OpenSim path and name, and values written through simtk by
OpenSim path give OpenSim's accelerations for the same values set by name.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from osim_published import published_model

from simtk import Stage
from simtk.common.component import ComponentNotFoundError
from simtk.io import load_osim
from simtk.io.osim import Coordinate, OsimJoint
from simtk.simulation import OutputProbe, Simulation

#: The issue's tolerance for udot against OpenSim, relative to max(1, max |udot|) (as in test_osim.py).
REL = 1e-9


def _frame(name: str, parent: str, p: str) -> str:
    return (f"<PhysicalOffsetFrame name=\"{name}\"><socket_parent>{parent}</socket_parent>"
            f"<translation>{p}</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>")


def _joint(kind: str, name: str, coords: list, parent: tuple, child: tuple, extra: str = "") -> str:
    cs = "".join(f"<Coordinate name=\"{c}\">{extra}</Coordinate>" for c in coords)
    return (f"<{kind} name=\"{name}\"><socket_parent_frame>{parent[0]}</socket_parent_frame>"
            f"<socket_child_frame>{child[0]}</socket_child_frame><coordinates>{cs}</coordinates>"
            f"<frames>{_frame(*parent)}{_frame(*child)}</frames></{kind}>")


def _body(name: str, m: float, com: str, inertia: str) -> str:
    return f"<Body name=\"{name}\"><mass>{m}</mass><mass_center>{com}</mass_center><inertia>{inertia}</inertia></Body>"


#: An arm (pin shoulder, pin elbow, ball wrist), a spring and a CoordinateActuator (not built).
ARM = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600"><Model name="arm"><gravity>0 -9.80665 0</gravity>
<Ground name="ground"/>
<BodySet name="bodyset"><objects>
{_body("upper", 1.5, "0 -0.2 0", "0.02 0.003 0.02 0 0 0")}
{_body("lower", 1.0, "0 -0.15 0", "0.01 0.002 0.01 0 0 0")}
{_body("hand", 0.5, "0.01 -0.05 0.02", "0.002 0.001 0.0015 0 0 0")}
</objects></BodySet>
<JointSet name="jointset"><objects>
{_joint("PinJoint", "shoulder", ["shoulder_flex"], ("ground_offset", "/ground", "0 0 0"),
        ("upper_offset", "/bodyset/upper", "0 0.2 0"))}
{_joint("PinJoint", "elbow", ["elbow_flex"], ("upper_offset", "/bodyset/upper", "0 -0.2 0"),
        ("lower_offset", "/bodyset/lower", "0 0.15 0"))}
{_joint("BallJoint", "wrist", ["wrist_x", "wrist_y", "wrist_z"], ("lower_offset", "/bodyset/lower", "0 -0.15 0"),
        ("hand_offset", "/bodyset/hand", "0 0.05 0"))}
</objects></JointSet>
<ForceSet name="forceset"><objects>
<PointToPointSpring name="tendon"><socket_body1>/bodyset/upper</socket_body1><socket_body2>/bodyset/lower</socket_body2>
<point1>0 0 0</point1><point2>0 -0.1 0</point2><stiffness>50</stiffness><rest_length>0.1</rest_length></PointToPointSpring>
<RigidTendonMuscle name="biceps"><max_isometric_force>100</max_isometric_force></RigidTendonMuscle>
</objects></ForceSet>
</Model></OpenSimDocument>
"""

COORDS = {"shoulder_flex": "/jointset/shoulder/shoulder_flex", "elbow_flex": "/jointset/elbow/elbow_flex",
          "wrist_x": "/jointset/wrist/wrist_x", "wrist_y": "/jointset/wrist/wrist_y",
          "wrist_z": "/jointset/wrist/wrist_z"}


@pytest.fixture
def arm(tmp_path):
    path = tmp_path / "arm.osim"
    path.write_text(ARM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CoordinateActuator is listed as not built
        return load_osim(path)


# ---------------------------------------------------------------------- paths and names
def test_coordinates_are_components_at_their_opensim_paths(arm):
    system = arm.system
    for name, path in COORDS.items():
        c = system.get_component(path)
        assert isinstance(c, Coordinate)
        assert c.get_name() == name and c.get_absolute_path() == path
        assert system.find_component(name) is c          # by name
        assert arm.get_component(name) is c
        assert arm.get_component(path[1:]) is c          # relative to the model, as OpenSim accepts
        assert c.get_mobilized_body() is arm.coordinates[name].mobod
    joint = system.get_component("/jointset/wrist")
    assert isinstance(joint, OsimJoint) and joint.kind == "BallJoint"
    assert [c.get_name() for c in joint.get_child_components()] == ["wrist_x", "wrist_y", "wrist_z"]


def test_opensim_set_paths_reach_simtk_elements_listed_once(arm):
    system = arm.system
    for body in ("upper", "lower", "hand"):
        assert system.get_component(f"/bodyset/{body}") is arm.bodies[body]
    assert system.get_component("/ground") is arm.matter.ground
    assert system.get_component("/forceset/tendon") is arm.force_elements["tendon"][0]
    # Aliases are not second copies: every element is listed once, under its simtk path.
    paths = [c.get_absolute_path() for c in system.get_subcomponents()]
    assert len(paths) == len(set(paths))
    assert len([c for c in system.get_subcomponents() if c is arm.bodies["upper"]]) == 1
    assert system.find_component("upper") is arm.bodies["upper"]


def test_an_element_not_built_is_named_with_the_reason(arm):
    with pytest.raises(ComponentNotFoundError, match=r"biceps.*not build.*RigidTendonMuscle"):
        arm.system.get_component("/forceset/biceps")
    with pytest.raises(ComponentNotFoundError, match="'/jointset/elbow' has no component named 'knee'"):
        arm.system.get_component("/jointset/elbow/knee")


# ---------------------------------------------------------------------- state variables
def test_value_and_speed_are_state_variables_by_opensim_path(arm):
    system = arm.system
    state = arm.initial_state()
    rng = np.random.default_rng(3)
    for name, path in COORDS.items():
        c = system.get_component(path)
        assert c.get_state_variable_names() == ["value", "speed"]
        q, u = (float(x) for x in rng.uniform(-1, 1, 2))
        system.set_state_variable_value(state, path + "/value", q)      # absolute, from the System
        c.set_state_variable_value(state, "speed", u)                   # relative to the coordinate
        assert arm.get_coordinate_value(state, name) == q               # the mobilizer's own slot
        assert arm.get_coordinate_speed(state, name) == u
        assert system.get_state_variable_value(state, path[1:] + "/value") == q  # relative to the model
        assert arm.get_state_variable_value(state, path.split("/", 2)[2] + "/speed") == u  # joint/coordinate/...
        assert c.get_value(state) == q and c.get_speed_value(state) == u
    # Views, not new variables: the System's variables are its mobilizers' q and u, as before.
    assert len(system.get_state_variable_names(state)) == state.get_nq() + state.get_nu() + state.get_nz()


def test_writing_a_value_invalidates_position_and_a_speed_velocity(arm):
    state = arm.initial_state()
    arm.system.realize(state, Stage.Acceleration)
    arm.system.set_state_variable_value(state, "/jointset/elbow/elbow_flex/value", 0.4)
    assert state.get_system_stage() < Stage.Position
    arm.system.realize(state, Stage.Acceleration)
    arm.system.get_component("/jointset/elbow/elbow_flex").set_speed_value(state, 0.7)
    assert Stage.Position <= state.get_system_stage() < Stage.Velocity


def test_an_unknown_variable_names_the_coordinates_variables(arm):
    state = arm.initial_state()
    with pytest.raises(ComponentNotFoundError, match=r"/jointset/elbow/elbow_flex/value"):
        arm.get_state_variable_value(state, "elbow_flex")
    with pytest.raises(ComponentNotFoundError, match="no state variable"):
        arm.system.get_state_variable_value(state, "/jointset/elbow/elbow_flex/angle")


def test_ball_coordinates_need_euler_angles_and_say_so(arm):
    state = arm.system.realize_topology()
    arm.matter.set_use_euler_angles(state, False)
    arm.system.realize_model(state)
    before = np.array(state.get_q())
    with pytest.raises(ValueError, match=r"/jointset/wrist/wrist_x.*Euler-angle mode"):
        arm.system.set_state_variable_value(state, "/jointset/wrist/wrist_x/value", 0.3)
    assert np.array_equal(state.get_q(), before)  # refused before anything changed
    # a pin's coordinate is its q in either mode
    arm.system.set_state_variable_value(state, "/jointset/elbow/elbow_flex/value", 0.3)
    assert arm.coordinates["elbow_flex"].mobod.get_one_q(state, 0) == 0.3


def test_a_locked_coordinate_keeps_its_value(tmp_path):
    path = tmp_path / "locked.osim"
    path.write_text(ARM.replace('<Coordinate name="elbow_flex"></Coordinate>',
                                '<Coordinate name="elbow_flex"><default_value>0.4</default_value>'
                                '<locked>true</locked></Coordinate>'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_osim(path)
    state = m.initial_state()
    m.system.realize(state, Stage.Position)
    c = m.system.get_component("/jointset/elbow/elbow_flex")
    assert c.get_locked(state) and c.get_default_locked()
    # OpenSim leaves a locked coordinate's value (setValue and setStateVariableValue alike): refused here
    for write in (lambda: c.set_value(state, 0.9),
                  lambda: m.system.set_state_variable_value(state, "/jointset/elbow/elbow_flex/value", 0.9),
                  lambda: c.set_state_variable_value(state, "value", 0.9)):
        with pytest.raises(ValueError, match=r"'/jointset/elbow/elbow_flex'.*locked at 0\.4"):
            write()
        assert c.get_value(state) == 0.4 and state.get_system_stage() >= Stage.Position  # nothing changed
    c.set_value(state, 0.4)  # its own value is no change
    c.set_speed_value(state, 0.2)
    m.coordinates["elbow_flex"].lock.disable(state)  # unlocked in this State: the value is free again
    assert not c.get_locked(state)
    c.set_value(state, 0.9)
    assert m.get_coordinate_value(state, "elbow_flex") == 0.9


# ---------------------------------------------------------------------- outputs
def test_coordinate_outputs_record_in_an_output_probe(arm):
    state = arm.initial_state()
    arm.set_coordinate_value(state, "elbow_flex", 0.5)
    sim = Simulation(arm.system, state, step_size=0.005)
    cols = [f"/jointset/elbow/elbow_flex|{o}" for o in ("value", "speed", "acceleration")]
    probe = sim.add_output_probe(OutputProbe(cols + ["/bodyset/lower|position"], interval=0.01), name="rec")
    sim.run(0.1)
    t, values = probe.to_numpy()
    assert len(t) >= 10 and probe.columns[:3] == cols
    end = sim.get_state()
    arm.system.realize(end, Stage.Acceleration)
    c = arm.system.get_component("/jointset/elbow/elbow_flex")
    assert t[-1] == end.get_time()
    assert list(values[-1, :3]) == [c.get_value(end), c.get_speed_value(end), c.get_acceleration_value(end)]
    assert abs(values[-1, 0] - 0.5) > 1e-4  # the elbow fell from 0.5 rad: the samples are of a motion


def test_a_controller_and_an_input_address_coordinates_by_opensim_path(arm):
    from simtk import Function
    from simtk.simulation import InputProbe, PDController

    state = arm.initial_state()
    sim = Simulation(arm.system, state, step_size=0.005)
    target = Function.Constant(0.8, 1)
    sim.add_controller(PDController({"/jointset/elbow/elbow_flex/value": (400.0, 40.0)},
                                    {"/jointset/elbow/elbow_flex/value": target}, inertia_weighted=True,
                                    gravity=arm.force_elements["gravity"][0]), name="pd")
    sim.add_input_probe(InputProbe("/jointset/shoulder/shoulder_flex/speed", [0.0, 1.0], [0.0, 0.0]), name="hold")
    probe = sim.add_output_probe(OutputProbe(["/jointset/elbow/elbow_flex|value"], interval=0.01), name="rec")
    sim.run(1.5)
    _, values = probe.to_numpy()
    assert abs(values[-1, 0] - 0.8) < 0.05  # the PD drove the coordinate named by its OpenSim path


# ---------------------------------------------------------------------- against OpenSim
def _opensim():
    osim = pytest.importorskip("opensim")
    osim.Logger.setLevelString("off")
    return osim


def check_names_and_udot(path, rng, n_states=3, spread=0.5):
    """Every coordinate of OpenSim's CoordinateSet: found in simtk by its OpenSim path and name; the
    same random values written through simtk by OpenSim path and in OpenSim by name give the same
    udot. OpenSim's forces that simtk did not build (muscles, actuators, contact) are switched off
    there. Returns the worst relative udot difference."""
    osim = _opensim()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_osim(path)
    om = osim.Model(str(path))
    fs = om.getForceSet()
    for i in range(fs.getSize()):
        if fs.get(i).getName() not in m.force_elements:
            fs.get(i).set_appliesForce(False)
    s = om.initSystem()
    cs = om.getCoordinateSet()
    coords = [cs.get(i) for i in range(cs.getSize())]
    mine = [m.system.get_component(c.getAbsolutePathString()) for c in coords]
    for c, me in zip(coords, mine):
        assert isinstance(me, Coordinate) and me.get_name() == c.getName()
        assert m.system.find_component(c.getName()) is me
    st = m.initial_state()
    worst = 0.0
    for _ in range(n_states):
        for c, me in zip(coords, mine):
            if c.getLocked(s):
                continue
            q, u = (float(x) for x in rng.uniform(-spread, spread, 2))
            c.setValue(s, q, False)
            c.setSpeedValue(s, u)
            m.system.set_state_variable_value(st, c.getAbsolutePathString() + "/value", q)
            m.system.set_state_variable_value(st, c.getAbsolutePathString() + "/speed", u)
        om.realizeAcceleration(s)
        m.system.realize(st, Stage.Acceleration)
        theirs = np.array([c.getAccelerationValue(s) for c in coords])
        ours = np.array([me.get_output("acceleration").get_value(st) for me in mine])
        for c, me in zip(coords, mine):  # the values read back through OpenSim's paths are OpenSim's
            assert me.get_value(st) == pytest.approx(c.getValue(s), abs=0.0)
        assert np.abs(theirs).max() > 1e-3  # something moves (a threshold, not a tolerance)
        worst = max(worst, float(np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max())))
    return worst


def test_model_written_by_opensim(tmp_path):
    osim = _opensim()
    V = osim.Vec3
    model = osim.Model()
    model.setName("written")
    model.setGravity(V(0.3, -9.81, 0.5))
    rng = np.random.default_rng(7)
    parent = model.getGround()
    for i, J in enumerate([osim.FreeJoint, osim.PinJoint, osim.BallJoint, osim.UniversalJoint, osim.SliderJoint]):
        b = osim.Body(f"b{i}", float(rng.uniform(0.5, 2)), V(*rng.uniform(-0.2, 0.2, 3)),
                      osim.Inertia(*rng.uniform(0.05, 0.1, 3), 0.0, 0.0, 0.0))
        model.addBody(b)
        model.addJoint(J(f"j{i}", parent, V(*rng.uniform(-0.3, 0.3, 3)), V(*rng.uniform(-1, 1, 3)),
                         b, V(*rng.uniform(-0.3, 0.3, 3)), V(*rng.uniform(-1, 1, 3))))
        parent = b
    model.finalizeConnections()
    path = tmp_path / "written.osim"
    model.printToXML(str(path))
    assert check_names_and_udot(path, rng) < REL


PUBLISHED = ["Arm26/arm26.osim", "DoublePendulum/double_pendulum.osim", "Gait10dof18musc/gait10dof18musc.osim",
             "Gait2354_Simbody/gait2354_simbody.osim", "Gait2392_Simbody/gait2392_thelen2003muscle.osim"]


@pytest.mark.parametrize("relpath", PUBLISHED)
def test_published_models(relpath):
    _opensim()
    path = published_model(relpath)
    assert check_names_and_udot(path, np.random.default_rng(11)) < REL
