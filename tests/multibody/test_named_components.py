"""Named components of multibody models: paths, coordinates by name, properties, outputs, change requests.

Laws checked:
- every element of a 40-body model is found again from its absolute path, and from relative paths;
- by-name access to every built-in mobilizer's coordinates reads and writes exactly its q and u;
- every property of every built-in element reads back what was set; a bad value is refused with
  the element's path, the property and the reason, leaving the element and the State unchanged;
  and a good value gives an existing State exactly the results of a model built with that value;
- every built-in output equals the direct API;
- a force added through a change request mid-run acts from then on, with the State migrated.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import ALL_JOINTS, joint_params, random_model

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    Rotation,
    RungeKuttaMersonIntegrator,
    ScheduledEventHandler,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)
from simtk.common.component import ComponentNotFoundError
from simtk.common.property import Property, nonnegative
from tolerances import assert_close


# ---------------------------------------------------------------------- paths
def test_every_element_of_a_40_body_model_round_trips_through_its_path():
    rng = np.random.default_rng(40)
    model = random_model(rng, ALL_JOINTS, 41, gravity=[0, -9.8, 0])
    m = model.matter
    Constraint.Rod(model.mobods[3], [0, 0, 0], model.mobods[7], [0.1, 0, 0], 1.0)
    Force.TwoPointLinearSpring(model.forces, model.mobods[1], [0, 0, 0], model.mobods[2], [0, 0, 0], 1.0, 0.5)
    everything = model.system.get_subcomponents()
    assert len(everything) == 2 + 41 + 1 + 2  # subsystems, bodies with Ground, constraint, forces
    paths = [c.get_absolute_path() for c in everything]
    assert len(set(paths)) == len(paths)
    for c in everything:
        assert model.system.get_component(c.get_absolute_path()) is c
        assert m.get_component(m.get_relative_path_name(c)) is c
        assert c.get_component("..").get_absolute_path() == c.get_absolute_path().rsplit("/", 1)[0] or "/"
    assert m.ground.get_absolute_path() == "/matter/ground"
    assert model.mobods[1].get_absolute_path().startswith("/matter/")


def test_default_names_are_unique_and_given_names_are_kept():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    a = MobilizedBody.Pin(matter.ground, Transform(), body, Transform([0, 1, 0]))
    b = MobilizedBody.Pin(a, Transform(), body, Transform([0, 1, 0]))
    c = MobilizedBody.Pin(b, Transform(), body, Transform([0, 1, 0]), name="forearm")
    assert [x.get_name() for x in (a, b, c)] == ["pin", "pin_1", "forearm"]
    with pytest.raises(ValueError, match="'forearm' exists already"):
        MobilizedBody.Slider(c, body, name="forearm")
    with pytest.raises(ValueError, match="digit"):
        MobilizedBody.Slider(c, body, name="2nd")
    assert matter.find_component("forearm") is c
    with pytest.raises(ComponentNotFoundError, match="no component named 'pins'.*similar: /matter/pin"):
        system.find_component("pins")


# ---------------------------------------------------------------------- coordinates by name
@pytest.mark.parametrize("euler", [False, True])
@pytest.mark.parametrize("joint", ALL_JOINTS)
def test_state_variables_by_name_against_index_access(joint, euler):
    rng = np.random.default_rng(hash(joint) % 2**32)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(2.0, [0.1, 0, 0], Inertia(1.0)))
    mb = getattr(MobilizedBody, joint)(matter.ground, Transform(), body, Transform(), *joint_params(rng, joint),
                                       name="joint")
    state = system.realize_topology()
    matter.set_modeling_option(state, "use_euler_angles", int(euler))
    system.realize(state, Stage.Model)
    nq, nu = mb.get_num_q(state), mb.get_num_u(state)
    names = mb.get_state_variable_names(state)
    assert len(names) == nq + nu
    expected = {"Pin": ["angle", "rate"], "Slider": ["length", "rate"]}.get(
        joint, [f"q{k}" for k in range(nq)] + [f"u{k}" for k in range(nu)])
    assert names == expected
    system.realize(state, Stage.Acceleration)
    q, u = rng.uniform(-0.5, 0.5, nq), rng.uniform(-1, 1, nu)
    for k in range(nq):
        twin = state.copy()
        system.realize(twin, Stage.Acceleration)
        mb.set_state_variable_value(state, names[k], q[k])
        mb.set_one_q(twin, k, q[k])
        assert state.get_system_stage() == twin.get_system_stage()
        assert mb.get_one_q(state, k) == q[k] == system.get_state_variable_value(state, f"/matter/joint/{names[k]}")
    for k in range(nu):
        mb.set_state_variable_value(state, names[nq + k], u[k])
        assert mb.get_one_u(state, k) == u[k] == mb.get_state_variable_value(state, names[nq + k])
    np.testing.assert_array_equal(mb.get_state_variable_values(state), np.concatenate([q, u]))


def test_euler_and_disabled_are_modeling_options():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    ball = MobilizedBody.Ball(matter.ground, Transform(), body, Transform([0, 1, 0]))
    g = Force.UniformGravity(forces, matter, [0, -9.8, 0])
    state = system.realize_topology()
    assert matter.get_modeling_option_names() == ["use_euler_angles"]
    matter.set_modeling_option(state, "use_euler_angles", 1)
    assert matter.get_use_euler_angles(state) and state.get_system_stage() == Stage.Topology
    system.realize(state, Stage.Acceleration)
    assert ball.get_num_q(state) == 3
    g.set_modeling_option(state, "disabled", 1)
    assert g.is_disabled(state) and state.get_system_stage() == Stage.Model  # Simbody: an Instance change
    system.realize(state, Stage.Acceleration)
    np.testing.assert_array_equal(state.get_udot(), 0.0)
    with pytest.raises(ValueError, match="'disabled'.*range\\(2\\)"):
        g.set_modeling_option(state, "disabled", 2)


# ---------------------------------------------------------------------- properties
def base_model():
    """Ground -> Pin -> Ball -> Slider, and a Free body beside them; the elements attach to these."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties.from_central_inertia(1.5, [0.1, -0.2, 0.05], Inertia([0.3, 0.2, 0.25])))
    pin = MobilizedBody.Pin(matter.ground, Transform([0, 0.5, 0]), body, Transform([0, 1, 0]), name="pin")
    ball = MobilizedBody.Ball(pin, Transform([0.2, 0, 0]), body, Transform([0, 0.8, 0]), name="ball")
    slider = MobilizedBody.Slider(ball, Transform(), body, Transform([0.3, 0, 0]), name="slider")
    free = MobilizedBody.Free(matter.ground, Transform([1, 0, 0]), body, Transform(), name="free")
    return system, matter, forces, dict(pin=pin, ball=ball, slider=slider, free=free)


R1 = Rotation(0.3, [1, 2, 3])
R2 = Rotation(-0.7, [0, 1, 1])
BUSH_K, BUSH_C = np.array([5.0, 6, 7, 50, 60, 70]), np.array([0.5, 0.6, 0.7, 1, 2, 3])

# kind -> (factory(matter, forces, bodies, values), default values, {property: (good, bad)})
SPECS = {
    "UniformGravity": (lambda m, f, b, v: Force.UniformGravity(f, m, v["gravity"], v["zero_height"]),
                       dict(gravity=[0, -9.8, 0], zero_height=0.0),
                       dict(gravity=([1, -3, 0.5], [np.nan, 0, 0]), zero_height=(1.5, np.inf))),
    "TwoPointLinearSpring": (lambda m, f, b, v: Force.TwoPointLinearSpring(
        f, b["pin"], v["station1"], b["free"], v["station2"], v["stiffness"], v["rest_length"]),
        dict(station1=[0, 0, 0], station2=[0.1, 0, 0], stiffness=10.0, rest_length=0.5),
        dict(stiffness=(20.0, -1.0), rest_length=(0.7, -1.0), station1=([0.1, 0.2, 0], [1, 2]),
             station2=([0, 0.3, 0], "up"))),
    "TwoPointLinearDamper": (lambda m, f, b, v: Force.TwoPointLinearDamper(
        f, b["slider"], v["station1"], b["free"], v["station2"], v["damping"]),
        dict(station1=[0, 0, 0], station2=[0.1, 0, 0], damping=2.0),
        dict(damping=(3.0, -1.0), station2=([0.2, 0.1, 0], [0, 0, np.inf]))),
    "TwoPointConstantForce": (lambda m, f, b, v: Force.TwoPointConstantForce(
        f, b["ball"], v["station1"], b["free"], v["station2"], v["force"]),
        dict(station1=[0, 0, 0], station2=[0, 0, 0], force=1.0), dict(force=(-2.0, np.nan))),
    "MobilityLinearSpring": (lambda m, f, b, v: Force.MobilityLinearSpring(f, b["pin"], 0, v["stiffness"],
                                                                           v["q_zero"]),
                             dict(stiffness=4.0, q_zero=0.1), dict(stiffness=(8.0, -2.0), q_zero=(-0.3, "zero"))),
    "MobilityLinearDamper": (lambda m, f, b, v: Force.MobilityLinearDamper(f, b["slider"], 0, v["damping"]),
                             dict(damping=1.0), dict(damping=(2.5, -0.1))),
    "MobilityConstantForce": (lambda m, f, b, v: Force.MobilityConstantForce(f, b["ball"], 1, v["force"]),
                              dict(force=1.0), dict(force=(-4.0, None))),
    "MobilityLinearStop": (lambda m, f, b, v: Force.MobilityLinearStop(
        f, b["pin"], 0, v["stiffness"], v["dissipation"], v["q_low"], v["q_high"]),
        dict(stiffness=100.0, dissipation=0.5, q_low=0.3, q_high=0.5),  # the pin (|q| < 0.2) is on the low stop
        dict(stiffness=(200.0, -1.0), dissipation=(0.2, -1.0), q_low=(0.25, 0.6), q_high=(0.45, 0.1))),
    # both limits crossed (q_lo above q_up: the pin, |q| < 0.2, is past each by more than the transition),
    # so that every property changes the force or the energy
    "CoordinateLimit": (lambda m, f, b, v: Force.CoordinateLimit(
        f, b["pin"], 0, v["upper_limit"], v["upper_stiffness"], v["lower_limit"], v["lower_stiffness"], v["damping"],
        v["transition"]),
        dict(upper_limit=-0.5, upper_stiffness=20.0, lower_limit=0.5, lower_stiffness=10.0, damping=0.2,
             transition=0.2),
        dict(upper_limit=(-0.4, np.nan), upper_stiffness=(30.0, -1.0), lower_limit=(0.6, "high"),
             lower_stiffness=(40.0, -2.0), damping=(0.5, -0.1), transition=(0.1, 0.0))),
    "GlobalDamper": (lambda m, f, b, v: Force.GlobalDamper(f, m, v["damping"]), dict(damping=0.3),
                     dict(damping=(0.6, -0.3))),
    "ConstantForce": (lambda m, f, b, v: Force.ConstantForce(f, b["ball"], v["station"], v["force"]),
                      dict(station=[0, 0.1, 0], force=[1, 0, 0]),
                      dict(station=([0.2, 0, 0], [0, 0]), force=([0, 0, 3], [1, np.nan, 0]))),
    "ConstantTorque": (lambda m, f, b, v: Force.ConstantTorque(f, b["ball"], v["torque"]),
                       dict(torque=[0, 0, 1]), dict(torque=([1, 1, 0], 5.0))),
    "LinearBushing": (lambda m, f, b, v: Force.LinearBushing(f, b["slider"], v["frame_on_body1"], b["free"],
                                                             v["frame_on_body2"], v["stiffness"], v["damping"]),
                      dict(frame_on_body1=Transform(), frame_on_body2=Transform(), stiffness=BUSH_K, damping=BUSH_C),
                      dict(stiffness=(2 * BUSH_K, -BUSH_K), damping=(2 * BUSH_C, BUSH_C[:3]),
                           frame_on_body1=(Transform(R1, [0.1, 0, 0]), R1))),
    "Rod": (lambda m, f, b, v: Constraint.Rod(b["pin"], v["station1"], b["free"], v["station2"], v["length"]),
            dict(station1=[0, 0, 0], station2=[0, 0, 0], length=1.2),
            dict(length=(1.5, 0.0), station1=([0.1, 0, 0], [0, 0, 0, 0]), station2=([0, 0.2, 0], None))),
    "Ball": (lambda m, f, b, v: Constraint.Ball(b["slider"], v["station1"], b["free"], v["station2"]),
             dict(station1=[0, 0, 0], station2=[0, 0, 0]),
             dict(station1=([0.1, 0, 0], [np.nan] * 3), station2=([0, 0, 0.2], "here"))),
    "ConstantOrientation": (lambda m, f, b, v: Constraint.ConstantOrientation(
        b["ball"], v["base_rotation"], b["free"], v["follower_rotation"]),
        dict(base_rotation=Rotation(), follower_rotation=Rotation()),
        dict(base_rotation=(R1, np.eye(3)), follower_rotation=(R2, 1.0))),
    "Weld": (lambda m, f, b, v: Constraint.Weld(b["slider"], v["frame_on_body1"], b["free"], v["frame_on_body2"]),
             dict(frame_on_body1=Transform(), frame_on_body2=Transform()),
             dict(frame_on_body1=(Transform(R1, [0, 0.1, 0]), [0, 0, 0]),
                  frame_on_body2=(Transform(R2, [0.2, 0, 0]), "identity"))),
    "ConstantAngle": (lambda m, f, b, v: Constraint.ConstantAngle(b["pin"], v["base_axis"], b["free"],
                                                                  v["follower_axis"], v["angle"]),
                      dict(base_axis=[1, 0, 0], follower_axis=[0, 1, 0], angle=np.pi / 2),
                      dict(base_axis=([0, 0, 1], [0, 0, 0]), follower_axis=([1, 1, 0], [1, 0]),
                           angle=(1.0, np.nan))),
    "PointInPlane": (lambda m, f, b, v: Constraint.PointInPlane(b["ball"], v["normal"], v["height"], b["free"],
                                                                v["point"]),
                     dict(normal=[0, 1, 0], height=0.2, point=[0, 0, 0]),
                     dict(normal=([1, 1, 0], [0, 0, 0]), height=(-0.3, "low"), point=([0.1, 0, 0], [1]))),
    "PointOnLine": (lambda m, f, b, v: Constraint.PointOnLine(b["slider"], v["direction"], v["point_on_line"],
                                                              b["free"], v["point"]),
                    dict(direction=[1, 0, 0], point_on_line=[0, 0, 0], point=[0, 0, 0]),
                    dict(direction=([0, 1, 1], [0, 0, 0]), point_on_line=([0, 0.2, 0], None),
                         point=([0.1, 0.1, 0], [np.inf, 0, 0]))),
    "NoSlip1D": (lambda m, f, b, v: Constraint.NoSlip1D(b["pin"], v["contact_point"], v["direction"], b["ball"],
                                                        b["free"]),
                 dict(contact_point=[0, 0, 0], direction=[1, 0, 0]),
                 dict(contact_point=([0.1, 0.2, 0], [0, 0]), direction=([0, 0, 1], [0, 0, 0]))),
    "ConstantCoordinate": (lambda m, f, b, v: Constraint.ConstantCoordinate(b["slider"], 0, v["value"]),
                           dict(value=0.1), dict(value=(0.4, np.nan))),
    "ConstantSpeed": (lambda m, f, b, v: Constraint.ConstantSpeed(b["pin"], 0, v["speed"]),
                      dict(speed=0.5), dict(speed=(-1.0, "fast"))),
    "ConstantAcceleration": (lambda m, f, b, v: Constraint.ConstantAcceleration(b["slider"], 0, v["acceleration"]),
                             dict(acceleration=0.5), dict(acceleration=(-2.0, np.inf))),
    "Motion.Steady": (lambda m, f, b, v: Motion.Steady(b["ball"], v["u"]), dict(u=[0.1, 0.2, 0.3]),
                      dict(u=([0.3, 0.2, 0.1], [np.nan, 0, 0]))),
    "Motion.Sinusoid": (lambda m, f, b, v: Motion.Sinusoid(b["pin"], Motion.Level.Position, v["amplitude"],
                                                           v["rate"], v["phase"]),
                        dict(amplitude=0.3, rate=2.0, phase=0.1),
                        dict(amplitude=(0.5, np.nan), rate=(3.0, "quick"), phase=(-0.4, np.inf))),
}
BODY_SPECS = dict(mass_properties=(MassProperties(3.0, [0, 0.1, 0], Inertia(2.0)), "heavy"),
                  inboard_frame=(Transform(R1, [0, 0.4, 0.1]), 3),
                  outboard_frame=(Transform(R2, [0.1, 0.7, 0]), [0, 1, 0]))

CASES = [(kind, p) for kind, (_, _, props) in SPECS.items() for p in props] + [("body", p) for p in BODY_SPECS]


def _same(a, b) -> bool:
    if isinstance(a, Transform):
        return np.array_equal(a.R.matrix, b.R.matrix) and np.array_equal(a.p, b.p)
    if isinstance(a, Rotation):
        return np.array_equal(a.matrix, b.matrix)
    if isinstance(a, MassProperties):
        return a.mass == b.mass and np.array_equal(a.com, b.com) and np.array_equal(a.inertia.matrix,
                                                                                   b.inertia.matrix)
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def _build(kind, values):
    system, matter, forces, bodies = base_model()
    if kind == "body":
        return system, bodies["ball"]
    factory, defaults, _ = SPECS[kind]
    return system, factory(matter, forces, bodies, {**defaults, **values})


def _results(system, state):
    system.realize(state, Stage.Acceleration)
    return np.concatenate([state.get_udot(), state.get_q_err(), state.get_u_err(),
                           [system.calc_potential_energy(state), state.get_time()]])


def _expected_value(kind, prop, good):
    """What a property reads back: a unit vector is normalized, a Rotation kept as a Rotation."""
    if prop in ("base_axis", "follower_axis", "normal", "direction"):
        g = np.asarray(good, dtype=float)
        return g / np.linalg.norm(g)
    if prop == "u":
        return np.asarray(good, dtype=float)
    return good


@pytest.mark.parametrize("kind, prop", CASES)
def test_property_set_read_back_refused_and_effective(kind, prop):
    good, bad = (BODY_SPECS if kind == "body" else SPECS[kind][2])[prop]
    system, element = _build(kind, {})
    state = system.realize_topology()
    rng = np.random.default_rng(7)
    state.set_time(0.3)
    state.set_q(state.get_q() + rng.uniform(-0.2, 0.2, state.get_nq()))
    state.set_u(rng.uniform(-1, 1, state.get_nu()))
    before_value, before = element.get_property(prop), _results(system, state)
    y0 = np.array(state.get_y())
    with pytest.raises((TypeError, ValueError)) as info:
        element.set_property(prop, bad)
    assert element.get_absolute_path() in str(info.value) and f"property {prop!r}" in str(info.value)
    assert _same(element.get_property(prop), before_value)
    assert state.get_system_stage() == Stage.Acceleration and np.array_equal(state.get_y(), y0)
    np.testing.assert_array_equal(_results(system, state), before)

    element.set_property(prop, good)
    assert _same(element.get_property(prop), _expected_value(kind, prop, good))
    assert state.get_system_stage() < Stage.Instance  # every live State loses the property's stage at once
    after = _results(system, state)
    if kind == "body":
        system2, mb2 = _build(kind, {})
        mb2.set_property(prop, good)  # a body property has no constructor argument of its own: set it fresh
    else:
        system2, _ = _build(kind, {prop: good})
    fresh = system2.realize_topology()
    fresh.set_time(0.3)
    fresh.set_y(y0)
    np.testing.assert_array_equal(after, _results(system2, fresh))
    inert = {("MobilityLinearStop", "q_high")}  # the pin rests on the low stop: the high one does nothing
    assert not np.array_equal(after, before) or (kind, prop) in inert  # the change matters


def test_zero_height_changes_only_the_potential_energy():
    system, g = _build("UniformGravity", {})
    state = system.realize_topology()
    pe0 = g.get_output("potential_energy").get_value(_realized(system, state))
    g.set_property("zero_height", 1.5)
    pe1 = g.get_output("potential_energy").get_value(_realized(system, state))
    total_mass = 4 * 1.5
    assert_close(pe1 - pe0, -9.8 * 1.5 * total_mass, scale=max(abs(pe0), abs(pe1), 88.2))


def _realized(system, state):
    system.realize(state, Stage.Acceleration)
    return state


# ---------------------------------------------------------------------- outputs
def test_every_builtin_output_equals_the_direct_api():
    system, matter, forces, b = base_model()
    spring = Force.TwoPointLinearSpring(forces, b["pin"], [0, 0, 0], b["free"], [0.1, 0, 0], 10.0, 0.5)
    damper = Force.TwoPointLinearDamper(forces, b["slider"], [0, 0, 0], b["free"], [0, 0, 0], 2.0)
    push = Force.TwoPointConstantForce(forces, b["ball"], [0, 0, 0], b["free"], [0, 0, 0], 3.0)
    gravity = Force.UniformGravity(forces, matter, [0, -9.8, 0])
    state = system.realize_topology()
    rng = np.random.default_rng(3)
    state.set_q(state.get_q() + rng.uniform(-0.3, 0.3, state.get_nq()))
    state.set_u(rng.uniform(-1, 1, state.get_nu()))
    system.realize(state, Stage.Acceleration)
    for mb in b.values():
        val = {n: mb.get_output(n).get_value(state) for n in mb.get_output_names()}
        assert _same(val["transform"], mb.get_body_transform(state))
        np.testing.assert_array_equal(val["position"], mb.get_body_origin_location(state))
        np.testing.assert_array_equal(val["velocity"], mb.get_body_velocity(state))
        np.testing.assert_array_equal(val["acceleration"], mb.get_body_acceleration(state))
        np.testing.assert_array_equal(val["q"], mb.get_q(state))
        np.testing.assert_array_equal(val["u"], mb.get_u(state))
        np.testing.assert_array_equal(val["udot"], mb.get_udot(state))
    assert b["pin"].get_output("angle").get_value(state) == b["pin"].get_angle(state)
    assert b["pin"].get_output("rate").get_value(state) == b["pin"].get_rate(state)
    assert b["slider"].get_output("length").get_value(state) == b["slider"].get_length(state)
    assert b["slider"].get_output("rate_dot").get_value(state) == b["slider"].get_udot(state)[0]
    # forces: energy and power against the element's own contribution and the mass-weighted velocities
    for f in (spring, damper, push, gravity):
        assert f.get_output("potential_energy").get_value(state) == f.calc_potential_energy_contribution(state)
        F, fm = f.calc_force_contribution(state)
        power = fm @ state.get_u() + sum(float(np.sum(F[k] * matter.get_mobilized_body(k).get_body_velocity(state)))
                                         for k in range(matter.get_num_bodies()))
        terms = max(np.abs(F).max(), np.abs(fm).max(initial=0)) * max(1.0, np.abs(state.get_u()).max())
        assert_close(f.get_output("power").get_value(state), power, scale=terms)
    # tension from the stations' positions and velocities, computed here
    p1 = b["pin"].find_station_location_in_ground(state, [0, 0, 0])
    p2 = b["free"].find_station_location_in_ground(state, [0.1, 0, 0])
    assert_close(spring.get_output("tension").get_value(state), 10.0 * (np.linalg.norm(p2 - p1) - 0.5),
                 scale=10.0 * (np.abs(p1).max() + np.abs(p2).max() + 0.5))
    d = b["free"].get_body_origin_location(state) - b["slider"].get_body_origin_location(state)
    v = b["free"].get_body_origin_velocity(state) - b["slider"].get_body_origin_velocity(state)
    # c (d . v) / |d|: its terms are bounded by c |v| (Cauchy-Schwarz); a few dozen flops on two routes
    assert_close(damper.get_output("tension").get_value(state), 2.0 * d @ v / np.linalg.norm(d),
                 margin=64, scale=2.0 * np.linalg.norm(v))
    assert push.get_output("tension").get_value(state) == -3.0
    # the system's
    assert system.get_output("kinetic_energy").get_value(state) == system.calc_kinetic_energy(state)
    assert system.get_output("potential_energy").get_value(state) == system.calc_potential_energy(state)
    np.testing.assert_array_equal(system.get_output("momentum").get_value(state),
                                  matter.calc_system_momentum_about_ground_origin(state))
    np.testing.assert_array_equal(system.get_output("mass_center").get_value(state),
                                  matter.calc_system_mass_center_location_in_ground(state))


# ---------------------------------------------------------------------- change requests
class AddSpringAt(ScheduledEventHandler):
    def __init__(self, t, make):
        self.t, self.make, self.made = t, make, []

    def get_next_event_time(self, state, include_current_time):
        now = state.get_time()
        return self.t if now < self.t or (include_current_time and now == self.t) else np.inf

    def handle_event(self, state, accuracy):
        self.get_root().request_change(lambda system: self.made.append(self.make()))
        return False


def test_force_added_by_a_change_request_mid_run_acts_from_then_on():
    """A free body at rest with no gravity stays put until t = 1, when a spring (k = 4, m = 1, from a
    Ground station 1 m away, rest length 0) is added: from then on x(t) = cos(2 (t - 1)) exactly."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    block = MobilizedBody.Slider(matter.ground, Transform(), body, Transform(), name="block")
    handler = AddSpringAt(1.0, lambda: Force.TwoPointLinearSpring(forces, matter.ground, [0, 0, 0], block,
                                                                   [0, 0, 0], 4.0, 0.0, name="spring"))
    system.add_event_handler(handler)
    state = system.realize_topology()
    block.set_length(state, 1.0)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(0.999)
    assert ts.get_state().get_q()[0] == 1.0 and not handler.made  # nothing acts before the change
    ts.step_to(2.5)
    end = ts.get_state()
    assert handler.made and system.get_component("/forces/spring") is handler.made[0]
    assert end.get_time() == 2.5
    # global error of RK-Merson at accuracy 1e-10 over 1.5 s of a unit oscillation; 1e3 margin
    assert abs(block.get_state_variable_value(end, "length") - np.cos(3.0)) < 1e-7
    assert abs(block.get_state_variable_value(end, "rate") + 2 * np.sin(3.0)) < 1e-7


def test_a_refused_name_adds_nothing():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    a = MobilizedBody.Pin(matter.ground, body, name="arm")
    Force.MobilityLinearSpring(forces, a, 0, 1.0, 0.0, name="spring")
    n_bodies, n_forces, version = matter.get_num_bodies(), forces.get_num_forces(), \
        system.get_system_topology_cache_version()
    with pytest.raises(ValueError, match="'arm' exists already"):
        MobilizedBody.Slider(matter.ground, body, name="arm")
    with pytest.raises(ValueError, match="'spring' exists already"):
        Force.MobilityLinearDamper(forces, a, 0, 1.0, name="spring")
    with pytest.raises(ValueError, match="'null' is reserved"):
        Constraint.ConstantSpeed(a, 0, 1.0, name="null")
    assert (matter.get_num_bodies(), forces.get_num_forces(), matter.get_num_constraints()) == (n_bodies, n_forces, 0)
    assert system.get_system_topology_cache_version() == version
    assert [c.get_name() for c in matter.get_child_components()] == ["ground", "arm"]


class Activation(Force.Custom.Implementation):
    """A first-order actuator: a' = (target - a) / tau, torque = a * gain on a pin, with ``a`` a
    state variable declared by name on the force (so it is called /forces/<name>/activation)."""

    gain = Property(3.0, stage=Stage.Instance, check=nonnegative, doc="N m per unit activation")

    def __init__(self, pin, target, tau):
        super().__init__()
        self.pin, self.target, self.tau = pin, target, tau

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        a = self._force.get_state_variable_value(state, "activation")
        mobility_forces[0] += self.gain * a  # the pin's only speed is u[0] of this one-body model

    def realize_acceleration(self, state):
        a = self._force.get_state_variable_value(state, "activation")
        self._force.set_state_variable_derivative(state, "activation", (self.target - a) / self.tau)


def test_a_custom_force_names_its_own_state_variable_and_property():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    pin = MobilizedBody.Pin(matter.ground, body, name="joint")
    muscle = Force.Custom(forces, Activation(pin, 1.0, 0.1), name="muscle")
    muscle.add_state_variable("activation", 0.0)
    assert muscle.get_property_names() == ["gain"]
    state = system.realize_topology()
    assert system.get_state_variable_names() == ["/matter/joint/angle", "/matter/joint/rate",
                                                 "/forces/muscle/activation"]
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(0.5)
    end = ts.get_state()
    tau, gain = 0.1, 3.0
    # a(t) = 1 - exp(-t / tau); udot = gain a (unit inertia): u(t) = gain (t - tau (1 - exp(-t / tau)))
    a = 1 - np.exp(-0.5 / tau)
    # global error of RK-Merson at accuracy 1e-10 over 0.5 s (5 time constants), not round-off
    assert abs(muscle.get_state_variable_value(end, "activation") - a) < 1e-8
    assert abs(pin.get_rate(end) - gain * (0.5 - tau * a)) < 1e-8
    muscle.get_implementation().gain = 6.0  # through the element: validated, and States see it
    assert muscle.get_property("gain") == 6.0
    with pytest.raises(ValueError, match="'/forces/muscle'.*'gain'"):
        muscle.set_property("gain", -1.0)
