"""An element of another System is refused wherever a body, a matter subsystem, a force or a State is taken.

Two Systems built alike ('a' and 'b') have bodies of the same indices and paths, so a body of 'b' given to
something of 'a' used to act on 'a''s body of that index (or gravity given 'b''s matter acted on 'a'). Each
entry point below gets one element of 'b' among elements of 'a' (or a State of 'b' with elements of 'a') and
must raise a ValueError that names the foreign element by its path and both Systems, before it changes
anything: the States of both Systems keep their stage and their values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from simtk import (
    Assembler,
    Body,
    Constraint,
    ContactGeometry,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    Markers,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    QValue,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    State,
    Transform,
)
from tolerances import assert_close, scale_of

BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.5, 0.0], Inertia([0.1, 0.1, 0.1])))
S = np.array([0.1, 0.2, 0.3])
F3 = np.array([1.0, -2.0, 0.5])
X = Transform()


@dataclass
class Model:
    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    upper: MobilizedBody
    forearm: MobilizedBody
    discrete: Force
    contact: Force
    state: State


def _model(name: str) -> Model:
    """An arm; 'b''s has a hand more, so that no State of one could pass for a State of the other."""
    system = MultibodySystem(name)
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    upper = MobilizedBody.Pin(matter.ground, X, BODY, X, name="upper")
    forearm = MobilizedBody.Pin(upper, Transform([0.0, -1.0, 0.0]), BODY, X, name="forearm")
    if name == "b":
        MobilizedBody.Slider(forearm, Transform([0.0, -1.0, 0.0]), BODY, X, name="hand")
    discrete = Force.DiscreteForces(forces, matter)
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    contact = Force.HuntCrossley(forces)
    state = system.realize_topology()
    matter.upd_q(state)[:2] = [0.3, -0.7]
    matter.upd_u(state)[:2] = [0.2, 0.5]
    system.realize(state, Stage.Acceleration)
    return Model(system, matter, forces, upper, forearm, discrete, contact, state)


class _Pin(MobilizedBody.Custom.Implementation):
    def __init__(self, matter):
        super().__init__(matter, 1, 1, 1)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"))

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0.0, 0.0, u[0]], [0.0, 0.0, 0.0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[0][2]])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class _NoEquations(Constraint.Custom.Implementation):
    def __init__(self, matter):
        super().__init__(matter, 0, 0, 0)


def _bf(m: Model) -> np.ndarray:
    return np.zeros((m.matter.get_num_bodies(), 2, 3))


#: (name, call(a, b), the foreign element's words in the message): each call gives one element of 'b'.
CASES: list[tuple[str, Callable[[Model, Model], object], str]] = [
    # force elements taking a matter subsystem
    ("Force.UniformGravity", lambda a, b: Force.UniformGravity(a.forces, b.matter, [0, -1, 0]), "'/matter'"),
    ("Force.Gravity", lambda a, b: Force.Gravity(a.forces, b.matter, [0, -1, 0], 9.81), "'/matter'"),
    ("Force.GlobalDamper", lambda a, b: Force.GlobalDamper(a.forces, b.matter, 0.1), "'/matter'"),
    ("Force.DiscreteForces", lambda a, b: Force.DiscreteForces(a.forces, b.matter), "'/matter'"),
    # force elements taking bodies
    ("Force.TwoPointLinearSpring",
     lambda a, b: Force.TwoPointLinearSpring(a.forces, a.upper, S, b.forearm, S, 10.0, 0.5), "'/matter/forearm'"),
    ("Force.TwoPointLinearDamper",
     lambda a, b: Force.TwoPointLinearDamper(a.forces, b.upper, S, a.forearm, S, 1.0), "'/matter/upper'"),
    ("Force.TwoPointConstantForce",
     lambda a, b: Force.TwoPointConstantForce(a.forces, a.upper, S, b.forearm, S, 1.0), "'/matter/forearm'"),
    ("Force.MobilityLinearSpring",
     lambda a, b: Force.MobilityLinearSpring(a.forces, b.forearm, 0, 1.0, 0.0), "'/matter/forearm'"),
    ("Force.MobilityLinearDamper", lambda a, b: Force.MobilityLinearDamper(a.forces, b.forearm, 0, 1.0),
     "'/matter/forearm'"),
    ("Force.MobilityConstantForce", lambda a, b: Force.MobilityConstantForce(a.forces, b.forearm, 0, 1.0),
     "'/matter/forearm'"),
    ("Force.MobilityLinearStop",
     lambda a, b: Force.MobilityLinearStop(a.forces, b.forearm, 0, 1.0, 0.1, -1.0, 1.0), "'/matter/forearm'"),
    ("Force.CoordinateLimit",
     lambda a, b: Force.CoordinateLimit(a.forces, b.forearm, 0, 1.0, 10.0, -1.0, 10.0, 0.1, 0.05),
     "'/matter/forearm'"),
    ("Force.ConstantForce", lambda a, b: Force.ConstantForce(a.forces, b.forearm, S, F3), "'/matter/forearm'"),
    ("Force.ConstantTorque", lambda a, b: Force.ConstantTorque(a.forces, b.forearm, F3), "'/matter/forearm'"),
    ("Force.LinearBushing",
     lambda a, b: Force.LinearBushing(a.forces, a.upper, X, b.forearm, X, np.ones(6), np.ones(6)), "'/matter/forearm'"),
    ("Force.HuntCrossley.add_surface",
     lambda a, b: a.contact.add_surface(b.forearm, ContactGeometry.Sphere(0.1)),
     "'/matter/forearm'"),
    ("Force.SmoothSphereHalfSpace",
     lambda a, b: Force.SmoothSphereHalfSpace(a.forces, b.forearm, S, 0.1, a.matter.ground), "'/matter/forearm'"),
    ("Force.HuntCrossley.calc_min_separation", lambda a, b: a.contact.calc_min_separation(b.state), "State"),
    # Force.DiscreteForces' helpers: a body, or a State, of the other System
    ("DiscreteForces.set_one_mobility_force",
     lambda a, b: a.discrete.set_one_mobility_force(a.state, b.forearm, 0, 1.0), "'/matter/forearm'"),
    ("DiscreteForces.get_one_mobility_force",
     lambda a, b: a.discrete.get_one_mobility_force(a.state, b.forearm, 0), "'/matter/forearm'"),
    ("DiscreteForces.set_one_body_force",
     lambda a, b: a.discrete.set_one_body_force(a.state, b.forearm, np.ones((2, 3))), "'/matter/forearm'"),
    ("DiscreteForces.get_one_body_force", lambda a, b: a.discrete.get_one_body_force(a.state, b.forearm),
     "'/matter/forearm'"),
    ("DiscreteForces.add_force_to_body_point",
     lambda a, b: a.discrete.add_force_to_body_point(a.state, b.forearm, S, F3), "'/matter/forearm'"),
    ("DiscreteForces.set_all_mobility_forces",
     lambda a, b: a.discrete.set_all_mobility_forces(b.state, [1.0, 2.0]), "State"),
    ("DiscreteForces.set_all_body_forces",
     lambda a, b: a.discrete.set_all_body_forces(b.state, np.zeros((3, 2, 3))), "State"),
    ("DiscreteForces.clear_all_forces", lambda a, b: a.discrete.clear_all_forces(b.state), "State"),
    # MobilizedBody's force helpers given a State of the other System
    ("MobilizedBody.apply_body_force", lambda a, b: a.forearm.apply_body_force(b.state, np.ones((2, 3)), _bf(a)),
     "State"),
    ("MobilizedBody.apply_body_torque", lambda a, b: a.forearm.apply_body_torque(b.state, F3, _bf(a)), "State"),
    ("MobilizedBody.apply_force_to_body_point",
     lambda a, b: a.forearm.apply_force_to_body_point(b.state, S, F3, _bf(a)), "State"),
    ("MobilizedBody.apply_one_mobility_force",
     lambda a, b: a.forearm.apply_one_mobility_force(b.state, 0, 1.0, np.zeros(2)), "State"),
    ("MobilizedBody.find_body_transform_in_another_body",
     lambda a, b: a.forearm.find_body_transform_in_another_body(a.state, b.upper), "'/matter/upper'"),
    # the matter subsystem's helpers for user forces: a body, or a State, of the other System
    ("matter.add_in_station_force",
     lambda a, b: a.matter.add_in_station_force(a.state, b.forearm, S, F3, _bf(a)), "'/matter/forearm'"),
    ("matter.add_in_body_torque", lambda a, b: a.matter.add_in_body_torque(a.state, b.forearm, F3, _bf(a)),
     "'/matter/forearm'"),
    ("matter.add_in_mobility_force",
     lambda a, b: a.matter.add_in_mobility_force(a.state, b.forearm, 0, 1.0, np.zeros(2)), "'/matter/forearm'"),
    ("matter.add_in_station_force(State)",
     lambda a, b: a.matter.add_in_station_force(b.state, a.forearm, S, F3, _bf(a)), "State"),
    ("matter.add_in_body_torque(State)", lambda a, b: a.matter.add_in_body_torque(b.state, a.forearm, F3, _bf(a)),
     "State"),
    ("matter.add_in_mobility_force(State)",
     lambda a, b: a.matter.add_in_mobility_force(b.state, a.forearm, 0, 1.0, np.zeros(2)), "State"),
    ("matter.calc_station_jacobian", lambda a, b: a.matter.calc_station_jacobian(a.state, [b.forearm], [S]),
     "'/matter/forearm'"),
    # constraints between bodies: the first body's System is the constraint's
    ("Constraint.Rod", lambda a, b: Constraint.Rod(a.upper, S, b.forearm, S, 1.0), "'/matter/forearm'"),
    ("Constraint.Ball", lambda a, b: Constraint.Ball(a.upper, S, b.forearm, S), "'/matter/forearm'"),
    ("Constraint.Weld", lambda a, b: Constraint.Weld(a.upper, X, b.forearm, X), "'/matter/forearm'"),
    ("Constraint.ConstantOrientation",
     lambda a, b: Constraint.ConstantOrientation(a.upper, Rotation(), b.forearm, Rotation()), "'/matter/forearm'"),
    ("Constraint.ConstantAngle", lambda a, b: Constraint.ConstantAngle(a.upper, [1, 0, 0], b.forearm, [0, 1, 0]),
     "'/matter/forearm'"),
    ("Constraint.PointInPlane", lambda a, b: Constraint.PointInPlane(a.upper, [0, 1, 0], 0.0, b.forearm, S),
     "'/matter/forearm'"),
    ("Constraint.PointOnLine", lambda a, b: Constraint.PointOnLine(a.upper, [1, 0, 0], S, b.forearm, S),
     "'/matter/forearm'"),
    ("Constraint.NoSlip1D",
     lambda a, b: Constraint.NoSlip1D(a.matter.ground, S, [1, 0, 0], a.upper, b.forearm), "'/matter/forearm'"),
    ("Constraint.CoordinateCoupler",
     lambda a, b: Constraint.CoordinateCoupler(a.matter, Function.Linear([1.0, -1.0, 0.0]), [a.upper, b.forearm],
                                               [0, 0]), "'/matter/forearm'"),
    ("Constraint.SpeedCoupler",
     lambda a, b: Constraint.SpeedCoupler(a.matter, Function.Linear([1.0, -1.0, 0.0]), [b.upper, a.forearm],
                                          [0, 0]), "'/matter/upper'"),
    ("Constraint.PrescribedMotion",
     lambda a, b: Constraint.PrescribedMotion(a.matter, Function.Linear([1.0, 0.0]), b.forearm, 0),
     "'/matter/forearm'"),
    ("Constraint.Custom.Implementation.add_constrained_body",
     lambda a, b: _NoEquations(a.matter).add_constrained_body(b.forearm), "'/matter/forearm'"),
    ("Constraint.Custom.Implementation.add_constrained_mobilizer",
     lambda a, b: _NoEquations(a.matter).add_constrained_mobilizer(b.forearm), "'/matter/forearm'"),
    # a custom mobilizer whose implementation was made for the other System's matter
    ("MobilizedBody.Custom", lambda a, b: MobilizedBody.Custom(a.forearm, BODY, _Pin(b.matter)), "'/matter'"),
    # the Assembler: bodies, conditions and the State
    ("Assembler.lock_mobilizer", lambda a, b: Assembler(a.system).lock_mobilizer(b.forearm), "'/matter/forearm'"),
    ("Assembler.unlock_mobilizer", lambda a, b: Assembler(a.system).unlock_mobilizer(b.forearm),
     "'/matter/forearm'"),
    ("Assembler.lock_q", lambda a, b: Assembler(a.system).lock_q(b.forearm, 0), "'/matter/forearm'"),
    ("Assembler.unlock_q", lambda a, b: Assembler(a.system).unlock_q(b.forearm, 0), "'/matter/forearm'"),
    ("Assembler.restrict_q", lambda a, b: Assembler(a.system).restrict_q(b.forearm, 0, -1.0, 1.0),
     "'/matter/forearm'"),
    ("Assembler.adopt_assembly_goal(Markers)", lambda a, b: _markers_goal(a, b), "'/matter/forearm'"),
    ("Assembler.adopt_assembly_error(QValue)",
     lambda a, b: Assembler(a.system).adopt_assembly_error(QValue(b.forearm, 0, 0.1)), "'/matter/forearm'"),
    ("Assembler.assemble", lambda a, b: Assembler(a.system).assemble(b.state), "State"),
]


def _markers_goal(a: Model, b: Model):
    markers = Markers()
    markers.add_marker(b.forearm, S)
    return Assembler(a.system).adopt_assembly_goal(markers)


def _snapshot(m: Model) -> tuple:
    return m.state.get_system_stage(), m.state.get_y().copy(), m.system.get_system_topology_cache_version()


@pytest.mark.parametrize("name,call,foreign", CASES, ids=[c[0] for c in CASES])
def test_an_element_of_another_system_is_refused(name, call, foreign):
    a, b = _model("a"), _model("b")
    before_a, before_b = _snapshot(a), _snapshot(b)
    with pytest.raises(ValueError) as info:
        call(a, b)
    text = str(info.value)
    assert foreign in text, text
    # both Systems are named, the foreign element's as the other one
    assert ("belongs to MultibodySystem 'b', not to this System MultibodySystem 'a'" in text
            or "belongs to MultibodySystem 'a', not to this System MultibodySystem 'b'" in text), text
    for m, before in ((a, before_a), (b, before_b)):
        stage, y, version = _snapshot(m)
        assert stage == before[0], f"{name} changed the stage of {m.system!r}"
        assert np.array_equal(y, before[1])
        assert version == before[2], f"{name} changed the topology of {m.system!r}"


def test_the_forces_of_another_system_do_not_act_here():
    """The first defect seen: gravity given the other System's matter acted on this one; now refused, and a
    force of 'a' built with 'a''s own elements still acts (the check refuses only what it should)."""
    a, b = _model("a"), _model("b")
    with pytest.raises(ValueError, match=r"Force.UniformGravity: matter subsystem '/matter' belongs to "
                                         r"MultibodySystem 'b', not to this System MultibodySystem 'a'"):
        Force.UniformGravity(a.forces, b.matter, [0.0, 0.0, -9.81])
    Force.UniformGravity(a.forces, a.matter, [0.0, 0.0, -9.81])
    state = a.system.realize_topology()
    a.system.realize(state, Stage.Acceleration)


def test_two_systems_of_one_name_are_told_apart():
    a, b = _model("arm"), _model("arm")
    with pytest.raises(ValueError, match=r"belongs to MultibodySystem 'arm' \(id 0x[0-9a-f]+\), not to this "
                                         r"System MultibodySystem 'arm' \(id 0x[0-9a-f]+\)"):
        a.discrete.set_one_mobility_force(a.state, b.forearm, 0, 1.0)


def test_the_helpers_still_take_their_own_system():
    """The same calls with elements of one System do what they did (the checks refuse only strangers)."""
    a = _model("a")
    bf, mf = _bf(a), np.zeros(2)
    a.forearm.apply_body_force(a.state, np.ones((2, 3)), bf)
    a.forearm.apply_body_torque(a.state, F3, bf)
    a.matter.add_in_body_torque(a.state, a.forearm, F3, bf)
    a.matter.add_in_station_force(a.state, a.forearm, S, F3, bf)
    a.matter.add_in_mobility_force(a.state, a.forearm, 0, 1.5, mf)
    a.forearm.apply_one_mobility_force(a.state, 0, 1.5, mf)
    R = a.forearm.get_body_rotation(a.state).matrix
    expected = np.ones((2, 3)) + np.array([2 * F3 + np.cross(R @ S, F3), F3])
    assert_close(bf[2], expected, margin=16, scale=scale_of(expected, np.ones((2, 3)), 2 * F3, S, F3))
    assert mf[1] == 3.0
    a.discrete.set_one_mobility_force(a.state, a.forearm, 0, 2.5)
    assert a.discrete.get_one_mobility_force(a.state, a.forearm, 0) == 2.5
