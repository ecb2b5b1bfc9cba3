"""simtk's model file: a model read back has the same dynamics, write-read-write gives the same text
(ArtiSynth's §3.4 check), user classes save by their registered names, references may point forward,
and every malformed file ends in a ModelFileError that names the file and the line.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Constraint,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    Property,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.io import load_model, register_class, save_model
from simtk.io.model_file import ModelFileError, ModelFileWarning, model_from_text, model_to_text
from simtk.testing import DEFAULT_MOBILIZERS, multibody_systems, states, transforms
from tolerances import EPS, tol  # noqa: F401


def nonnegative(x):
    x = float(x)
    if not x >= 0:
        raise ValueError(f"must be >= 0, got {x}")
    return x


def a_body(x):
    if not isinstance(x, MobilizedBody):
        raise TypeError(f"expected a MobilizedBody, got {type(x).__name__}")
    return x


# ---------------------------------------------------------------------- extra mobilizers for the strategies
def ellipsoid(parent, X_PF, body, X_BM):
    return MobilizedBody.Ellipsoid(parent, X_PF, body, X_BM, [0.5, 0.7, 0.9])


def screw(parent, X_PF, body, X_BM):
    return MobilizedBody.Screw(parent, X_PF, body, X_BM, -0.35)


def weld(parent, X_PF, body, X_BM):
    return MobilizedBody.Weld(parent, X_PF, body, X_BM)


def reversed_pin(parent, X_PF, body, X_BM):
    return MobilizedBody.Pin(parent, X_PF, body, X_BM, direction=MobilizedBody.Reverse)


def massless_slider(parent, X_PF, body, X_BM):
    return MobilizedBody.Slider(parent, X_PF, Body.Massless(), X_BM)


def odd_name_pin(parent, X_PF, body, X_BM):
    # Quotes, spaces, a backslash, a '#' and non-ASCII text must survive the writer's quoting.
    # (numbered, so that two of them in one model are still distinct siblings)
    n = sum(1 for c in parent.get_root().get_matter_subsystem().get_child_components()
            if c.get_name().startswith('knee "left"'))
    return MobilizedBody.Pin(parent, X_PF, body, X_BM, name=f'knee "left" \\ #{n + 1} é')


KINDS = tuple(DEFAULT_MOBILIZERS) + ("SphericalCoords", "LineOrientation", "FreeLine", ellipsoid, screw, weld,
                                     reversed_pin, massless_slider, odd_name_pin)
ONE_DOF = ("Pin", "Slider", "Screw", "screw", "reversed_pin", "massless_slider", "odd_name_pin")

floats = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)
positive = st.floats(0.1, 5.0, allow_nan=False, allow_infinity=False)
vec3 = st.lists(floats, min_size=3, max_size=3)
unit = vec3.filter(lambda v: np.linalg.norm(v) > 0.3)


@st.composite
def elements(draw, model):
    """Add random built-in forces, constraints and motions to a drawn model."""
    matter, forces, bodies = model.matter, model.forces, model.bodies
    everyone = [matter.ground] + bodies
    one_dof = [b for b, k in zip(bodies, model.kinds) if k in ONE_DOF]
    pick = lambda seq: seq[draw(st.integers(0, len(seq) - 1))]  # noqa: E731
    made = []
    for kind in draw(st.lists(st.sampled_from(FORCE_KINDS), max_size=5)):
        b1, b2 = pick(everyone), pick(everyone)
        if kind == "TwoPointLinearSpring":
            f = Force.TwoPointLinearSpring(forces, b1, draw(vec3), b2, draw(vec3), draw(positive), draw(positive))
        elif kind == "TwoPointLinearDamper":
            f = Force.TwoPointLinearDamper(forces, b1, draw(vec3), b2, draw(vec3), draw(positive))
        elif kind == "TwoPointConstantForce":
            f = Force.TwoPointConstantForce(forces, b1, draw(vec3), b2, draw(vec3), draw(floats))
        elif kind == "ConstantForce":
            f = Force.ConstantForce(forces, b1, draw(vec3), draw(vec3))
        elif kind == "ConstantTorque":
            f = Force.ConstantTorque(forces, b1, draw(vec3))
        elif kind == "GlobalDamper":
            f = Force.GlobalDamper(forces, matter, draw(positive))
        elif kind == "UniformGravity":
            f = Force.UniformGravity(forces, matter, draw(vec3), draw(floats))
        elif kind == "LinearBushing":
            f = Force.LinearBushing(forces, b1, draw(transforms()), b2, draw(transforms()),
                                    draw(st.lists(positive, min_size=6, max_size=6)),
                                    draw(st.lists(positive, min_size=6, max_size=6)))
        elif kind == "DiscreteForces":
            f = Force.DiscreteForces(forces, matter)
        elif one_dof:
            b = pick(one_dof)
            if kind == "MobilityLinearSpring":
                f = Force.MobilityLinearSpring(forces, b, 0, draw(positive), draw(floats))
            elif kind == "MobilityLinearDamper":
                f = Force.MobilityLinearDamper(forces, b, 0, draw(positive))
            elif kind == "MobilityCoulombFriction":
                f = Force.MobilityCoulombFriction(forces, b, 0, draw(positive), draw(positive))
            elif kind == "MobilityConstantForce":
                f = Force.MobilityConstantForce(forces, b, 0, draw(floats))
            elif kind == "CoordinateLimit":
                lo = draw(floats)
                f = Force.CoordinateLimit(forces, b, 0, lo + draw(positive), draw(positive), lo, draw(positive),
                                          draw(positive), draw(positive))
            else:
                lo = draw(floats)
                f = Force.MobilityLinearStop(forces, b, 0, draw(positive), draw(positive), lo, lo + draw(positive))
        else:
            continue
        if draw(st.booleans()) and draw(st.booleans()):
            f.set_disabled_by_default(True)
        made.append(f)
    for kind in draw(st.lists(st.sampled_from(CONSTRAINT_KINDS), max_size=2)):
        b1, b2 = pick(everyone), pick(everyone)
        assume(b1 is not b2)
        if kind == "Rod":
            c = Constraint.Rod(b1, draw(vec3), b2, draw(vec3), draw(positive))
        elif kind == "Ball":
            c = Constraint.Ball(b1, draw(vec3), b2, draw(vec3))
        elif kind == "Weld":
            c = Constraint.Weld(b1, draw(transforms()), b2, draw(transforms()))
        elif kind == "ConstantOrientation":
            c = Constraint.ConstantOrientation(b1, draw(transforms()).R, b2, draw(transforms()).R)
        elif kind == "ConstantAngle":
            c = Constraint.ConstantAngle(b1, draw(unit), b2, draw(unit), draw(st.floats(0.3, 2.8)))
        elif kind == "PointInPlane":
            c = Constraint.PointInPlane(b1, draw(unit), draw(floats), b2, draw(vec3))
        elif kind == "PointOnLine":
            c = Constraint.PointOnLine(b1, draw(unit), draw(vec3), b2, draw(vec3))
        elif kind == "NoSlip1D":
            c = Constraint.NoSlip1D(pick(everyone), draw(vec3), draw(unit), b1, b2)
        elif one_dof:
            b = pick(one_dof)
            if kind == "ConstantCoordinate":
                c = Constraint.ConstantCoordinate(b, 0, draw(floats))
            elif kind == "ConstantSpeed":
                c = Constraint.ConstantSpeed(b, 0, draw(floats))
            else:
                c = Constraint.ConstantAcceleration(b, 0, draw(floats))
        else:
            continue
        if draw(st.booleans()) and draw(st.booleans()):
            c.set_disabled_by_default(True)
        made.append(c)
    for b in bodies:
        if draw(st.integers(0, 4)) == 0 and b.get_name() != "weld" and "weld" not in b.get_name():
            if draw(st.booleans()):
                made.append(Motion.Steady(b, draw(floats)))
            else:
                level = draw(st.sampled_from([Motion.Level.Position, Motion.Level.Velocity, Motion.Level.Acceleration]))
                made.append(Motion.Sinusoid(b, level, draw(floats), draw(floats), draw(floats)))
    return made


FORCE_KINDS = ("TwoPointLinearSpring", "TwoPointLinearDamper", "TwoPointConstantForce", "ConstantForce",
               "ConstantTorque", "GlobalDamper", "UniformGravity", "LinearBushing", "DiscreteForces",
               "MobilityLinearSpring", "MobilityLinearDamper", "MobilityConstantForce", "MobilityLinearStop",
               "CoordinateLimit", "MobilityCoulombFriction")
CONSTRAINT_KINDS = ("Rod", "Ball", "Weld", "ConstantOrientation", "ConstantAngle", "PointInPlane", "PointOnLine",
                    "NoSlip1D", "ConstantCoordinate", "ConstantSpeed", "ConstantAcceleration")


@st.composite
def full_models(draw):
    model = draw(multibody_systems(max_bodies=4, kinds=KINDS))
    draw(elements(model))
    return model


def dynamics(system, state):
    """(udot, multipliers) of ``state``, or the type of the error realizing it raised."""
    try:
        system.realize(state, Stage.Acceleration)
    except Exception as e:  # a singular random model: the copy must fail the same way
        return type(e)
    return np.array(state.get_udot()), np.array(state.get_multipliers())


def state_by_path(source_system, source_state, system):
    """A State of ``system`` with every variable of ``source_state`` set by path."""
    s = system.realize_topology()
    for path in source_system.get_state_variable_names(source_state):
        system.set_state_variable_value(s, path, source_system.get_state_variable_value(source_state, path))
    s.set_time(source_state.get_time())
    return s


# ---------------------------------------------------------------------- round trips
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(model=full_models(), data=st.data())
def test_round_trip_gives_the_same_dynamics_and_the_same_text(model, data):
    check_round_trip(model.system, data.draw(states(model.system)))


def check_round_trip(system, state):
    """Write-read-write gives the same text; the copy has the same elements, and at ``state`` the same
    accelerations and multipliers to round-off (or fails the same way)."""
    text = model_to_text(system)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)  # a random model may fail at Instance, as its original
        loaded = model_from_text(text)
    assert model_to_text(loaded) == text  # ArtiSynth's write-read-write check
    assert [c.get_absolute_path() for c in loaded.get_subcomponents()] == \
        [c.get_absolute_path() for c in system.get_subcomponents()]
    assert [type(c) for c in loaded.get_subcomponents()] == [type(c) for c in system.get_subcomponents()]
    system.realize(state, Stage.Model)
    copy = state_by_path(system, state, loaded)
    np.testing.assert_array_equal(copy.get_y(), state.get_y())
    a, b = dynamics(system, state), dynamics(loaded, copy)
    if isinstance(a, type):
        assert b is a
        return loaded, None
    assert not isinstance(b, type), f"the loaded model fails ({b}) where the original does not"
    for x, y in zip(a, b):
        assert x.shape == y.shape
        scale = max(1.0, float(np.max(np.abs(x), initial=0.0)))
        assert np.max(np.abs(x - y), initial=0.0) <= tol(scale, 1e3)
    return loaded, a


def test_a_file_round_trip_through_save_and_load(tmp_path):
    system = MultibodySystem(name="arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [1, -3, 0.5], 9.80665, name="gravity")
    body = Body.Rigid(MassProperties.from_central_inertia(1.3, [0, -0.2, 0.01], Inertia([0.1, 0.02, 0.1])))
    upper = MobilizedBody.Pin(matter.ground, Transform(Rotation(0.3, [1, 2, 3]), [0, 1, 0]), body, Transform(),
                              name="upper")
    MobilizedBody.Ellipsoid(upper, Transform([0, -0.5, 0]), body, Transform(), [0.1, 0.2, 0.3], name="lower")
    Force.MobilityLinearStop(forces, upper, 0, 100.0, 0.5, -1.0, 1.2, name="stop")
    system.set_default_time_scale(0.37)
    save_model(system, tmp_path / "arm.simtk")
    loaded = load_model(tmp_path / "arm.simtk")
    assert loaded.get_name() == "arm" and loaded.get_default_time_scale() == 0.37
    g0 = system.get_component("/forces/gravity").get_property("gravity")
    np.testing.assert_array_equal(loaded.get_component("/forces/gravity").get_property("gravity"), g0)
    assert type(loaded.get_component("/forces/gravity")) is Force.Gravity
    s0, s1 = system.realize_topology(), loaded.realize_topology()
    assert system.get_state_variable_names(s0) == loaded.get_state_variable_names(s1)
    np.testing.assert_array_equal(s0.get_y(), s1.get_y())


# ---------------------------------------------------------------------- user classes
class Actuator(Force.Custom.Implementation):
    """A user force: gain * activation on one body's first mobility, its body a reference property."""

    gain = Property(3.0, stage=Stage.Instance, check=nonnegative, doc="N m per unit activation")
    offset = Property(0.0, stage=Stage.Instance, doc="a constant added to the torque")
    joint = Property(None, stage=Stage.Instance, check=a_body, doc="the actuated body")

    def __init__(self, joint=None, gain=3.0, offset=0.0):
        super().__init__()
        self.joint, self.gain, self.offset = joint, gain, offset

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        a = self._force.get_state_variable_value(state, "activation")
        u0 = sum(self.joint.get_matter_subsystem().get_mobilized_body(i).get_num_u(state)
                 for i in range(1, self.joint.get_mobilized_body_index()))
        mobility_forces[u0] += self.gain * a + self.offset

    def realize_acceleration(self, state):
        a = self._force.get_state_variable_value(state, "activation")
        self._force.set_state_variable_derivative(state, "activation", 1.0 - a)


register_class(Actuator, "test.Actuator")


def actuated(gain: float):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    MobilizedBody.Slider(matter.ground, body, name="other")
    pin = MobilizedBody.Pin(matter.ground, body, name="joint")
    act = Force.Custom(forces, Actuator(pin, gain), name="muscle")
    act.add_state_variable("activation", 0.25)
    return system


def test_a_registered_user_class_round_trips():
    system = actuated(gain=7.5)
    text = model_to_text(system)
    assert "test.Actuator [" in text and "gain=7.5" in text
    assert "offset=" not in text  # a property at its default is not written
    loaded = model_from_text(text)
    assert model_to_text(loaded) == text
    muscle = loaded.get_component("/forces/muscle")
    assert isinstance(muscle.get_implementation(), Actuator)
    assert muscle.get_property("gain") == 7.5
    assert muscle.get_property("joint") is loaded.get_component("/matter/joint")
    s0, s1 = system.realize_topology(), loaded.realize_topology()
    assert loaded.get_state_variable_value(s1, "/forces/muscle/activation") == 0.25
    for s, sys_ in ((s0, system), (s1, loaded)):
        sys_.set_state_variable_value(s, "/forces/muscle/activation", 0.6)
        sys_.realize(s, Stage.Acceleration)
    np.testing.assert_array_equal(s1.get_udot(), s0.get_udot())
    assert s0.get_udot()[1] != 0.0


def test_unsupported_elements_are_refused_when_saving(tmp_path):
    class Unregistered(Force.Custom.Implementation):
        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            pass

    system = actuated(1.0)
    Force.Custom(system.get_component("/forces"), Unregistered(), name="mystery")
    with pytest.raises(ModelFileError, match=r"/forces/mystery.*register_class"):
        save_model(system, tmp_path / "x.simtk")
    assert not (tmp_path / "x.simtk").exists()


# ---------------------------------------------------------------------- references
FORWARD = '''simtk_model=1
MultibodySystem [ name="fwd"
  GeneralForceSubsystem [ name="forces"
    Force.TwoPointLinearSpring [ name="spring" body1=@"../../matter/tip" body2=@"/matter/ground"
      station1=[ 0.0 0.0 0.0 ] station2=[ 1.0 0.0 0.0 ] stiffness=10.0 rest_length=0.5 ]
  ]
  SimbodyMatterSubsystem [ name="matter"
    MobilizedBody.Pin [ name="tip" parent=@"../base"       # the parent comes later in the file
      mass_properties=MassProperties [ mass=1.0 com=[ 0.0 -1.0 0.0 ] inertia=[ 2.0 1.0 2.0 0.0 0.0 0.0 ] ]
      inboard_frame=Transform [ R=[ 1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0 ] p=[ 0.0 -1.0 0.0 ] ]
      outboard_frame=Transform [ R=[ 1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0 ] p=[ 0.0 0.0 0.0 ] ] ]
    MobilizedBody.Pin [ name="base" parent=@"../ground"
      mass_properties=MassProperties [ mass=2.0 com=[ 0.0 0.0 0.0 ] inertia=[ 1.0 1.0 1.0 0.0 0.0 0.0 ] ]
      inboard_frame=Transform [ R=[ 1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0 ] p=[ 0.0 0.0 0.0 ] ]
      outboard_frame=Transform [ R=[ 1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0 ] p=[ 0.0 0.0 0.0 ] ] ]
  ]
]
'''


def test_forward_references_resolve():
    system = model_from_text(FORWARD)
    tip, base = system.get_component("/matter/tip"), system.get_component("/matter/base")
    assert tip.get_parent_mobilized_body() is base
    assert base.get_mobilized_body_index() < tip.get_mobilized_body_index()
    spring = system.get_component("/forces/spring")
    assert spring.get_property("stiffness") == 10.0
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)
    assert np.isfinite(state.get_udot()).all()


def test_a_cycle_and_a_dangling_reference_are_named():
    cyc = FORWARD.replace('parent=@"../ground"', 'parent=@"../tip"')
    with pytest.raises(ModelFileError, match=r"cycle"):
        model_from_text(cyc, "cyc.simtk")
    dangling = FORWARD.replace('@"../../matter/tip"', '@"../../matter/toe"')
    with pytest.raises(ModelFileError, match=r"dangling.simtk:4:.*toe"):
        model_from_text(dangling, "dangling.simtk")


@pytest.mark.parametrize("bad, expect", [
    ("stiffness=10.0", r":4:.*missing stiffness"),                 # missing argument: the element's line
    ("stiffness=nan", r":5:.*stiffness.*number"),                  # NaN: the item's line
    ("stiffness=-1.0", r":4:.*k"),                                 # refused by the element
    ("stiffness=\"ten\"", r":5:.*stiffness.*number"),              # wrong type
    ("Force.TwoPointLinearSpring", r":4:.*unknown class"),         # unknown class
])
def test_bad_values_are_named_with_their_line(bad, expect):
    good = {"stiffness=10.0": "", "stiffness=nan": "stiffness=nan", "stiffness=-1.0": "stiffness=-1.0",
            'stiffness="ten"': 'stiffness="ten"', "Force.TwoPointLinearSpring": "Force.Sprong"}[bad]
    target = "Force.TwoPointLinearSpring" if bad.startswith("Force.") else "stiffness=10.0"
    text = FORWARD.replace(target, good)
    with pytest.raises(ModelFileError, match=expect):
        model_from_text(text, "bad.simtk")


# ---------------------------------------------------------------------- mutated files
def reference_text() -> str:
    system = MultibodySystem(name="m")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia([0.1, 0.01, 0.1])))
    a = MobilizedBody.Pin(matter.ground, Transform([0, 1, 0]), body, Transform(), name="a")
    b = MobilizedBody.Ball(a, Transform([0, -1, 0]), body, Transform(), name="b")
    c = MobilizedBody.Slider(b, body, name="c")
    Force.TwoPointLinearSpring(forces, matter.ground, [0.5, 0, 0], b, [0, -1, 0], 20.0, 0.5, name="spring")
    Force.MobilityLinearDamper(forces, c, 0, 0.3, name="damper")
    Constraint.Rod(matter.ground, [1, 0, 0], c, [0, 0, 0], 1.5, name="rod")
    Motion.Sinusoid(a, Motion.Level.Position, 0.1, 2.0, 0.0, name="drive")
    Force.Custom(forces, Actuator(a, 2.0), name="act").add_state_variable("activation", 0.1)
    return model_to_text(system)


REFERENCE = reference_text()
JUNK = st.sampled_from(["nan", "inf", "-inf", "1e999", "true", "[", "]", "=", "@\"../x\"", "\"s\"", "Foo",
                        "Transform [ ]", "-1", "0", "1e-320", "@\"/\"", "@\"..\"", "#", "\"", "[ [ [", "é", "$x",
                        "MobilizedBody.Pin", "Force.Custom", "parent=@\"../b\"", "Function.Linear [ ]",
                        "Function.Foo [ x=1 ]", "[ [ 0 ] ]", "Function.Constant [ value=1.0 argument_size=1 ]"])


@st.composite
def mutations(draw, reference: str = REFERENCE):
    text = reference
    tokens = list(re.finditer(r'"(?:[^"\\]|\\.)*"|[^\s]+', reference))
    how = draw(st.sampled_from(["truncate", "replace", "delete_line", "insert", "swap", "cycle"]))
    if how == "truncate":
        return text[:draw(st.integers(0, len(text) - 1))]
    if how == "replace":
        tok = tokens[draw(st.integers(0, len(tokens) - 1))]
        return text[:tok.start()] + draw(JUNK) + text[tok.end():]
    if how == "delete_line":
        lines = text.splitlines(keepends=True)
        del lines[draw(st.integers(0, len(lines) - 1))]
        return "".join(lines)
    if how == "insert":
        i = draw(st.integers(0, len(text)))
        return text[:i] + " " + draw(JUNK) + " " + text[i:]
    if how == "swap":
        i, j = sorted(draw(st.lists(st.integers(0, len(tokens) - 1), min_size=2, max_size=2, unique=True)))
        a, b = tokens[i], tokens[j]
        return text[:a.start()] + b.group() + text[a.end():b.start()] + a.group() + text[b.end():]
    # cycle: a body becomes its own descendant's child
    return text.replace('parent=@"../ground"', 'parent=@"../c"', 1)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutations())
def test_mutated_files_end_in_a_model_file_error_or_a_sound_model(text):
    check_mutant(text)


def check_mutant(text):
    """A mutated file is refused with a ModelFileError naming it, or is a model that round-trips and realizes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            system = model_from_text(text, "mutant.simtk")
        except ModelFileError as e:
            assert "mutant.simtk" in str(e)
            return
    # Accepted: then it is a model the format can describe, and it realizes (or a warning said it does not).
    again = model_to_text(system)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        assert model_to_text(model_from_text(again)) == again
    state = system.realize_topology()
    if any(issubclass(w.category, ModelFileWarning) for w in caught):
        return
    system.realize(state, Stage.Instance)


def test_not_a_model_file(tmp_path):
    p = tmp_path / "x.simtk"
    p.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(ModelFileError, match="x.simtk"):
        load_model(p)
    with pytest.raises(ModelFileError, match=":1:.*simtk_model"):
        model_from_text("MultibodySystem [ ]", "y.simtk")
    with pytest.raises(ModelFileError, match="format 1"):
        model_from_text("simtk_model=2\n", "y.simtk")
    with pytest.raises(ModelFileError, match="deeper"):
        model_from_text("simtk_model=1 x=" + "[ " * 200 + "]" * 200, "deep.simtk")


# ---------------------------------------------------------------------- elements defined by Functions
FAMILIES = ("Constant", "Linear", "Polynomial", "Step", "Sinusoid", "Spline")


def family_function(family: str, m: int = 1):
    """A Function of ``family`` taking ``m`` arguments (m = 1 for the one-argument families), with a nonzero
    slope at 0.3 (inside the Step's interval and the Spline's points), where the tests put coordinates."""
    if family == "Constant":
        return Function.Constant(-1.0 / 3.0, m)
    if family == "Linear":
        return Function.Linear([0.7, -1.1, 0.2, 0.05][:m] + [0.1])
    assert m == 1
    return {"Polynomial": Function.Polynomial([0.5, 1.0 / 3.0, -0.2]),
            "Step": Function.Step(-0.1, 0.9, 0.0, 1.0),
            "Sinusoid": Function.Sinusoid(0.8, 1.7, 0.1),
            "Spline": Function.Spline([-1.0, 0.0, 0.4, 1.1, 2.0], [0.3, -0.2, 0.5, 0.1, 0.7])}[family]


def two_bodies():
    """A Pin and a Slider on it, under gravity, with a State inside every test function's interesting range."""
    system = MultibodySystem(name="funcs")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.1, -9.81, 0.2])
    body = Body.Rigid(MassProperties.from_central_inertia(1.2, [0.1, -0.4, 0.05], Inertia([0.1, 0.03, 0.08])))
    pin = MobilizedBody.Pin(matter.ground, Transform(Rotation(0.4, [1, 1, 0]), [0, 1, 0]), body, Transform(),
                            name="pin")
    slider = MobilizedBody.Slider(pin, Transform([0.2, -0.5, 0]), body, Transform(), name="slider")
    return system, matter, pin, slider, body


def with_element(element: str, family: str):
    system, matter, pin, slider, body = two_bodies()
    arity = 2 if family in ("Constant", "Linear") else 1
    if element == "FunctionBased":
        # The family's function drives the first rotation from q0 (a Constant one is a fixed rotation, and a
        # Linear one drives q0 instead); a translation along a non-unit axis follows q1.
        f = family_function(family) if family != "Constant" else Function.Linear([1.0, 0.0])
        fixed = family_function("Constant", 0)
        MobilizedBody.FunctionBased(
            slider, Transform([0, -0.3, 0.1]), body, Transform([0.05, 0, 0]), 2,
            [f, fixed, Function.Constant(0.0, 0), Function.Linear([1.0, 0.0]), Function.Constant(0.2, 0),
             Function.Polynomial([0.3, 0.0, 0.0]) if family != "Polynomial" else fixed],
            [[0], [], [], [1], [], [1] if family != "Polynomial" else []],
            axes=[[0, 0, 1], [1, 0, 0], [0, 1, 0], [3.0, 0.5, 0], [0, 2.0, 0], [0.1, 0.2, 1.0]], name="fb")
    elif element == "CoordinateCoupler":
        if arity == 2:
            Constraint.CoordinateCoupler(matter, family_function(family, 2), [pin, slider], [0, 0], name="c")
        else:
            Constraint.CoordinateCoupler(matter, family_function(family), [slider.get_mobilized_body_index()], [0],
                                         name="c")
    elif element == "SpeedCoupler":
        if arity == 2:
            Constraint.SpeedCoupler(matter, family_function(family, 2), [slider], [0], [pin], [0], name="c")
        else:
            Constraint.SpeedCoupler(matter, family_function(family), [slider], [0], name="c")
    else:
        f = family_function(family, 1) if family != "Linear" else Function.Linear([0.5, 0.25])
        Constraint.PrescribedMotion(matter, f, pin, 0, name="c")
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.set_q(np.full(len(state.get_q()), 0.3))
    state.set_u(np.linspace(0.3, 0.45, len(state.get_u())))
    state.set_time(0.3)
    return system, state


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("element", ["FunctionBased", "CoordinateCoupler", "SpeedCoupler", "PrescribedMotion"])
def test_function_defined_elements_round_trip(element, family):
    system, state = with_element(element, family)
    text = model_to_text(system)
    assert f"Function.{family} [" in text
    loaded, (udot, multipliers) = check_round_trip(system, state)
    assert len(multipliers) == (0 if element == "FunctionBased" else 1)
    assert np.abs(udot).max() > 0.0
    old = system.get_component("/matter/fb" if element == "FunctionBased" else "/matter/c")
    new = loaded.get_component(old.get_absolute_path())
    fs = old.get_functions() if element == "FunctionBased" else [old.get_function()]
    gs = new.get_functions() if element == "FunctionBased" else [new.get_function()]
    for f, g in zip(fs, gs):  # each function rebuilt exactly: same class, same parameters bit for bit
        assert type(g) is type(f) and repr(g) == repr(f)
        for k, v in f.parameters().items():
            np.testing.assert_array_equal(g.parameters()[k], v)
    if element == "FunctionBased":
        np.testing.assert_array_equal(new.get_axes(), old.get_axes())
        np.testing.assert_array_equal(new.get_given_axes(), old.get_given_axes())


def test_function_based_with_default_axes_and_a_massless_body_round_trips():
    system, matter, pin, slider, body = two_bodies()
    fb = MobilizedBody.FunctionBased(pin, Body.Massless(), 1,
                                     [Function.Constant(0.0, 0)] * 3 + [Function.Linear([1.0, 0.0])] +
                                     [Function.Constant(0.0, 0)] * 2, [[], [], [], [0], [], []], name="fb")
    MobilizedBody.Pin(fb, body, name="tip")
    text = model_to_text(system)
    assert "axes=" not in text and "massless=true" in text
    state = system.realize_topology()
    state.set_q([0.3, 0.1, -0.2, 0.5])
    loaded, _ = check_round_trip(system, state)
    assert loaded.get_component("/matter/fb").get_given_axes() is None


# ---------------------------------------------------------------------- element getters
def test_getters_return_what_the_constructors_took():
    system, matter, pin, slider, body = two_bodies()
    fns = [Function.Sinusoid(1.0, 2.0), Function.Constant(0.1, 0), Function.Linear([1.0, 2.0, 0.0]),
           Function.Constant(0.0, 0), Function.Constant(0.0, 0), Function.Linear([0.5, 0.0])]
    axes = [[2.0, 0, 0], [0, 1.0, 0], [0, 0, 3.0], [1.0, 1.0, 0], [0, 1.0, 0], [0, 0, 1.0]]
    fb = MobilizedBody.FunctionBased(slider, body, 2, fns, [[1], [], [0, 1], [], [], [0]], axes=axes)
    assert fb.get_n_mobilities() == 2
    assert all(a is b for a, b in zip(fb.get_functions(), fns))
    assert [list(c) for c in fb.get_coord_indices()] == [[1], [], [0, 1], [], [], [0]]
    np.testing.assert_array_equal(fb.get_given_axes(), axes)
    np.testing.assert_array_equal(fb.get_axes()[0], [1.0, 0, 0])  # normalized, unlike the given ones
    f = Function.Linear([1.0, -1.0, 0.0])
    cc = Constraint.CoordinateCoupler(matter, f, [pin, slider.get_mobilized_body_index()], [0, 0])
    assert cc.get_function() is f and cc.get_coord_bodies() == [pin, slider] and cc.get_coord_indices() == [0, 0]
    g = Function.Linear([1.0, 2.0, 3.0, 0.0])
    sc = Constraint.SpeedCoupler(matter, g, [slider, pin], [0, 0], [pin], [0])
    assert sc.get_function() is g and sc.get_speed_bodies() == [slider, pin] and sc.get_speed_indices() == [0, 0]
    assert sc.get_coord_bodies() == [pin] and sc.get_coord_indices() == [0]
    sc0 = Constraint.SpeedCoupler(matter, Function.Linear([1.0, 0.0]), [slider], [0])
    assert sc0.get_coord_bodies() == [] and sc0.get_coord_indices() == []
    h = Function.Step(0.0, 1.0, 0.0, 2.0)
    pm = Constraint.PrescribedMotion(matter, h, slider, 0)
    assert pm.get_function() is h and pm.get_body() is slider and pm.get_coord_index() == 0


# ---------------------------------------------------------------------- users' Functions
class Ramp(Function):
    """A user's Function, f(t) = slope t + offset, its parameters declared Properties."""

    slope = Property(1.0, stage=Stage.Instance, doc="per unit of t")
    offset = Property(0.0, stage=Stage.Instance, doc="f(0)")

    def __init__(self, slope=1.0, offset=0.0):
        self.slope, self.offset = slope, offset

    def calc_value(self, x):
        return self.slope * x[0] + self.offset

    def calc_derivative(self, deriv_components, x):
        return self.slope if len(deriv_components) == 1 else 0.0

    def get_argument_size(self):
        return 1

    def get_max_derivative_order(self):
        return 2


register_class(Ramp, "test.Ramp")


def test_a_registered_user_function_round_trips():
    system, matter, pin, slider, body = two_bodies()
    Constraint.PrescribedMotion(matter, Ramp(slope=0.3), slider, 0, name="ramp")
    text = model_to_text(system)
    assert "function=test.Ramp [ slope=0.3 ]" in text  # offset is at its default
    state = system.realize_topology()
    state.set_time(2.0)
    state.set_q([0.2, 0.6])
    loaded, (udot, lam) = check_round_trip(system, state)
    f = loaded.get_component("/matter/ramp").get_function()
    assert type(f) is Ramp and (f.slope, f.offset) == (0.3, 0.0)
    assert lam[0] != 0.0


def test_unregistered_functions_are_refused_when_saving(tmp_path):
    class Unregistered(Ramp):
        pass

    class MyLinear(Function.Linear):  # a subclass of a family is not the family
        pass

    for f in (Unregistered(), MyLinear([1.0, 0.0])):
        system, matter, pin, slider, body = two_bodies()
        Constraint.PrescribedMotion(matter, f, slider, 0, name="drive")
        with pytest.raises(ModelFileError, match=rf"/matter/drive.*function.*{type(f).__qualname__}.*register_class"):
            save_model(system, tmp_path / "x.simtk")
        assert not (tmp_path / "x.simtk").exists()
    with pytest.raises(ValueError, match="built in"):
        register_class(Function.Linear, "my.Linear")
    with pytest.raises(ValueError, match="taken"):
        register_class(Unregistered, "Function.Linear")


# ---------------------------------------------------------------------- malformed Function items
def function_reference_text() -> str:
    system, matter, pin, slider, body = two_bodies()
    MobilizedBody.FunctionBased(slider, body, 1, [Function.Sinusoid(1.0, 2.0)] + [Function.Constant(0.0, 0)] * 2 +
                                [Function.Step(0.0, 1.0, 0.0, 1.0), Function.Constant(0.5, 0), Function.Constant(0.25, 0)],
                                [[0], [], [], [0], [], []], name="fb")
    Constraint.CoordinateCoupler(matter, Function.Linear([1.0, -1.0, 0.0]), [pin, slider], [0, 0], name="cc")
    Constraint.PrescribedMotion(matter, Function.Spline([0.0, 1.0, 2.0], [0.0, 0.5, 0.2], 2), pin, 0, name="pm")
    return model_to_text(system)


FUNCTION_REFERENCE = function_reference_text()


@pytest.mark.parametrize("old, new, expect", [
    ("coefficients=[ 1.0 -1.0 0.0 ]", "coefficients=[ 1.0 0.0 ]", r"takes 1 argument.*passes 2"),  # wrong arity
    ("coefficients=[ 1.0 -1.0 0.0 ]", "coefficients=[ 1.0 nan 0.0 ]", r"coefficients.*finite"),    # NaN
    ("amplitude=1.0", "amplitude=nan", r"amplitude.*finite"),
    ("Function.Linear", "Function.Lineal", r"unknown Function class 'Function.Lineal'"),           # unknown family
    ("Function.Linear [ coefficients=[ 1.0 -1.0 0.0 ] ]", "1.0", r"function.*expected a Function"),
    (" x1=1.0", "", r"Function.Step.*missing x1="),                                                # too few
    ("phase=0.0", "phase=0.0 period=1.0", r"unknown item 'period'"),                               # too many
    ("x1=1.0", "x1=0.0", r"Function.Step.*zero-length"),                                           # refused
    ("degree=2", "degree=9", r"Function.Spline.*degree"),
    ("degree=2", "degree=2.0", r"degree.*integer"),
    ("value=0.25 argument_size=0", "value=0.25 argument_size=-1", r"argument_size.*integer"),
    ("coord_bodies=[ @\"../pin\" @\"../slider\" ]", "coord_bodies=@\"../pin\"", r"coord_bodies.*list of references"),
    ("coord_indices=[ 0 0 ]", "coord_indices=[ 0 ]", r"coord_indices.*list of 2 integers"),
    ("coord_indices=[ [ 0 ] [ ] [ ] [ 0 ] [ ] [ ] ]", "coord_indices=[ [ 0 ] [ ] [ ] [ 0 ] [ ] ]", r"6 lists"),
    ("Function.Sinusoid [ amplitude=1.0 frequency=2.0 phase=0.0 ]", "Transform [ p=[ 0 0 0 ] ]",
     r"functions\[0\].*expected a Function"),
])
def test_malformed_function_items_are_named_with_their_line(old, new, expect):
    assert FUNCTION_REFERENCE.count(old) == 1, old
    start = FUNCTION_REFERENCE.index(old)
    line = FUNCTION_REFERENCE.count("\n", 0, start) + 1
    with pytest.raises(ModelFileError, match=rf"bad\.simtk:{line}:.*{expect}"):
        model_from_text(FUNCTION_REFERENCE.replace(old, new), "bad.simtk")


def test_the_function_reference_loads():
    # The mutations below start from a good file (else every mutant would be refused for the same reason).
    assert model_to_text(model_from_text(FUNCTION_REFERENCE)) == FUNCTION_REFERENCE


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutations(FUNCTION_REFERENCE))
def test_mutated_function_files_end_in_a_model_file_error_or_a_sound_model(text):
    check_mutant(text)


# ---------------------------------------------------------------------- random models with Function-defined elements
@st.composite
def functions_of(draw, m: int):
    """A random built-in Function of ``m`` arguments with second derivatives."""
    family = draw(st.sampled_from(FAMILIES if m == 1 else ("Constant", "Linear")))
    if family == "Constant":
        return Function.Constant(draw(floats), m)
    if family == "Linear":
        return Function.Linear(draw(st.lists(floats, min_size=m + 1, max_size=m + 1)))
    if family == "Polynomial":
        return Function.Polynomial(draw(st.lists(floats, min_size=1, max_size=4)))
    if family == "Step":
        x0 = draw(floats)
        return Function.Step(draw(floats), draw(floats), x0, x0 + draw(positive))
    if family == "Sinusoid":
        return Function.Sinusoid(draw(floats), draw(floats), draw(floats))
    k = draw(st.integers(1, 5))
    gaps = draw(st.lists(positive, min_size=k + 1, max_size=k + 3))
    return Function.Spline(np.cumsum(gaps) - 2.0, draw(st.lists(floats, min_size=len(gaps), max_size=len(gaps))), k)


@st.composite
def function_elements(draw, model):
    """Add FunctionBased mobilizers and couplers / prescribed motions with random Functions to a drawn model."""
    matter = model.matter
    pick = lambda seq: seq[draw(st.integers(0, len(seq) - 1))]  # noqa: E731
    for k in range(draw(st.integers(0, 2))):
        n = draw(st.integers(1, 3))
        coords = [sorted(draw(st.sets(st.integers(0, n - 1), max_size=min(n, 2)))) for _ in range(6)]
        # Each coordinate drives one slot of its own through a Linear function of nonzero slope, so that
        # the random functions elsewhere rarely make the mobilizer singular.
        own = draw(st.permutations(range(6)))[:n]
        for j, slot in enumerate(own):
            coords[slot] = [j]
        axes = None
        if draw(st.booleans()):  # a rotated, non-unit set of axes: the file keeps them as given
            R = draw(transforms()).R.matrix
            axes = np.vstack([R.T, R.T]) * np.array(draw(st.lists(positive, min_size=6, max_size=6)))[:, None]
        body = Body.Rigid(MassProperties.from_central_inertia(draw(positive), draw(vec3), Inertia([0.2, 0.3, 0.4])))
        functions = [draw(functions_of(len(c))) for c in coords]
        for slot in own:
            functions[slot] = Function.Linear([draw(st.sampled_from([-1.0, 1.0])) * draw(positive), draw(floats)])
        MobilizedBody.FunctionBased(pick([matter.ground] + model.bodies), draw(transforms()), body,
                                    draw(transforms()), n, functions, coords, axes=axes, name=f"fb{k}")
    # Coordinate-level constraints on the one-coordinate bodies (a reversed Pin, which the core makes a Custom
    # one, included).
    coords = [b for b, kind in zip(model.bodies, model.kinds) if kind in ONE_DOF]
    if not coords:
        return
    for kind in draw(st.lists(st.sampled_from(["CoordinateCoupler", "SpeedCoupler", "PrescribedMotion"]),
                              min_size=1, max_size=2)):
        if kind == "CoordinateCoupler":
            bodies = draw(st.lists(st.sampled_from(coords), min_size=1, max_size=2, unique=True))
            Constraint.CoordinateCoupler(matter, draw(functions_of(len(bodies))), bodies, [0] * len(bodies))
        elif kind == "SpeedCoupler":
            ub = draw(st.lists(st.sampled_from(coords), min_size=1, max_size=2, unique=True))
            qb = draw(st.lists(st.sampled_from(coords), max_size=1))
            Constraint.SpeedCoupler(matter, draw(functions_of(len(ub) + len(qb))), ub, [0] * len(ub), qb,
                                    [0] * len(qb))
        else:
            Constraint.PrescribedMotion(matter, draw(functions_of(1)), pick(coords), 0)


@st.composite
def function_models(draw):
    model = draw(multibody_systems(max_bodies=3, kinds=KINDS))
    draw(function_elements(model))
    return model


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(model=function_models(), data=st.data())
def test_random_function_defined_elements_round_trip(model, data):
    state = data.draw(states(model.system))
    state.set_time(data.draw(floats))
    check_round_trip(model.system, state)


# ---------------------------------------------------------------------- user constraints and mobilizers
class OriginDistance(Constraint.Custom.Implementation):
    """A user constraint: the origins of two bodies at a distance (seed 004 §3.2's example), with its
    bodies and length as declared properties so that it saves by its registered name."""

    body1 = Property(None, stage=Stage.Topology, check=a_body, doc="the first body")
    body2 = Property(None, stage=Stage.Topology, check=a_body, doc="the second body")
    distance = Property(1.0, stage=Stage.Instance, check=nonnegative, doc="the distance between the origins")

    def __init__(self, matter=None, body1=None, body2=None, distance=1.0):
        super().__init__(matter if matter is not None else body1.upd_matter_subsystem(), 1, 0, 0)
        self.body1, self.body2, self.distance = body1, body2, distance
        self._c1, self._c2 = self.add_constrained_body(body1), self.add_constrained_body(body2)

    def _r_v_a(self, state, level):
        out = [self.get_body_origin_location(state, self._c2, True) - self.get_body_origin_location(state, self._c1, True)]
        if level >= 1:
            out.append(self.get_body_velocity(state, self._c2, True)[1] - self.get_body_velocity(state, self._c1, True)[1])
        if level >= 2:
            out.append(self.get_body_acceleration(state, self._c2, True)[1]
                       - self.get_body_acceleration(state, self._c1, True)[1])
        return out

    def realize_position_errors(self, state, mp, perr):
        (r,) = self._r_v_a(state, 0)
        perr[0] = (r @ r - self.distance ** 2) / 2

    def realize_position_dot_errors(self, state, mp, pverr):
        r, v = self._r_v_a(state, 1)
        pverr[0] = v @ r

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        r, v, a = self._r_v_a(state, 2)
        paerr[0] = a @ r + v @ v

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces_in_a, mobility_forces):
        (r,) = self._r_v_a(state, 0)
        self.add_in_station_force(state, self._c2, np.zeros(3), multipliers[0] * r, body_forces_in_a)
        self.add_in_station_force(state, self._c1, np.zeros(3), -multipliers[0] * r, body_forces_in_a)


class AxisSlider(MobilizedBody.Custom.Implementation):
    """A user mobilizer: one coordinate, a translation along a declared unit axis of F."""

    axis = Property((1.0, 0.0, 0.0), stage=Stage.Topology, doc="the direction of travel in F")

    def __init__(self, matter=None, axis=(1.0, 0.0, 0.0)):
        super().__init__(matter, 1, 1, 0)
        a = np.asarray(axis, dtype=float)
        self.axis = tuple(float(x) for x in a / np.linalg.norm(a))

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(np.asarray(self.axis) * q[0])

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0.0, 0.0, 0.0], np.asarray(self.axis) * u[0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([np.asarray(F[1]) @ np.asarray(self.axis)])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


register_class(OriginDistance, "test.OriginDistance")
register_class(AxisSlider, "test.AxisSlider")


def user_elements_model():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    p1 = MobilizedBody.Ball(matter.ground, Transform(), body, Transform([0, 1, 0]), name="p1")
    slide = MobilizedBody.Custom(matter.ground, Transform([1, 0, 0]), body, Transform(),
                                 AxisSlider(matter, axis=(0.0, -3.0, 4.0)), name="slide")
    p2 = MobilizedBody.Ball(slide, Transform(), body, Transform([0, 1, 0]), name="p2")
    Constraint.Custom(OriginDistance(body1=p1, body2=p2, distance=1.25), name="link")
    return system


def test_a_registered_user_constraint_and_mobilizer_round_trip():
    system = user_elements_model()
    text = model_to_text(system)
    assert "test.OriginDistance [" in text and "test.AxisSlider [" in text and "distance=1.25" in text
    loaded = model_from_text(text)
    assert model_to_text(loaded) == text  # write-read-write (ArtiSynth's check)
    link = loaded.get_component("/matter/link").get_implementation()
    assert isinstance(link, OriginDistance) and link.distance == 1.25
    assert link.body2 is loaded.get_component("/matter/p2")  # the reference resolved to the new model
    assert isinstance(loaded.get_component("/matter/slide").get_implementation(), AxisSlider)
    rng = np.random.default_rng(5)
    s0, s1 = system.realize_topology(), loaded.realize_topology()
    y = rng.uniform(-0.5, 0.5, len(s0.get_y()))
    for sys_, s in ((system, s0), (loaded, s1)):
        s.set_y(y)
        sys_.project(s, 1e-12)
        sys_.realize(s, Stage.Acceleration)
    assert s0.get_multipliers().any()  # the constraint acts
    scale = max(1.0, float(np.abs(s0.get_udot()).max()))
    np.testing.assert_allclose(s1.get_udot(), s0.get_udot(), rtol=0, atol=tol(scale, 2**10))
    np.testing.assert_allclose(s1.get_multipliers(), s0.get_multipliers(), rtol=0,
                               atol=tol(max(1.0, float(np.abs(s0.get_multipliers()).max())), 2**10))
