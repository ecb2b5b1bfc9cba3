"""Each kind of built-in element's properties (Instance stage) reaches a State realized exactly to Instance.

For every case: a pendulum of two pin links is realized exactly to Instance, one property of one
element is changed, and the State must have dropped to Model; realized to Acceleration again it must
give what a new State of the changed System gives at the same variables (and not what it gave
before the change). A State realized to Instance is the boundary: one realized higher loses
Instance through any lower invalidation too, so only this case shows a change that is not passed on.
"""
import numpy as np
import pytest

from simtk import Stage
from simtk.common.property import Property, nonnegative
from simtk.multibody import (
    Constraint,
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    Motion,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Rotation, Transform
from tolerances import close


class Gain(Force.Custom.Implementation):
    """A user's force with a declared property: a torque gain * q on the first link."""

    gain = Property(1.0, stage=Stage.Instance, check=nonnegative, doc="N m per rad")

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] += -self.gain * state.get_q()[0]


def _pendulum():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    first = MobilizedBody.Pin(matter.ground, Transform(), body, Transform(), name="upper")
    second = MobilizedBody.Pin(first, Transform([0, -0.5, 0]), body, Transform(), name="lower")
    gravity = Force.UniformGravity(forces, matter, [0, -9.81, 0])
    return system, matter, forces, first, second, gravity


# (case, a function building the element into the pendulum and returning it, property, new value)
CASES = [
    ("UniformGravity.gravity", lambda m: m["gravity"], "gravity", [0.0, -5.0, 1.0]),
    ("UniformGravity.zero_height", lambda m: m["gravity"], "zero_height", 0.3),
    ("TwoPointLinearSpring.stiffness",
     lambda m: Force.TwoPointLinearSpring(m["forces"], m["matter"].ground, [0.3, 0, 0], m["second"], [0, -0.5, 0],
                                          20.0, 0.1), "stiffness", 45.0),
    ("TwoPointLinearSpring.station2",
     lambda m: Force.TwoPointLinearSpring(m["forces"], m["matter"].ground, [0.3, 0, 0], m["second"], [0, -0.5, 0],
                                          20.0, 0.1), "station2", [0.1, -0.4, 0.0]),
    ("MobilityLinearSpring.q_zero", lambda m: Force.MobilityLinearSpring(m["forces"], m["first"], 0, 5.0, 0.0),
     "q_zero", 0.4),
    ("MobilityLinearDamper.damping", lambda m: Force.MobilityLinearDamper(m["forces"], m["second"], 0, 0.5),
     "damping", 2.0),
    ("ConstantForce.force", lambda m: Force.ConstantForce(m["forces"], m["second"], [0, -0.5, 0], [1.0, 0, 0]),
     "force", [0.0, 3.0, 0.0]),
    ("Custom implementation's Property", lambda m: Force.Custom(m["forces"], Gain()), "gain", 4.0),
    ("MobilizedBody.mass_properties", lambda m: m["second"], "mass_properties",
     MassProperties.from_central_inertia(2.5, [0, -0.3, 0], Inertia([0.05, 0.002, 0.05]))),
    ("MobilizedBody.inboard_frame", lambda m: m["second"], "inboard_frame", Transform([0.05, -0.45, 0])),
    ("MobilizedBody.outboard_frame", lambda m: m["first"], "outboard_frame",
     Transform(Rotation.from_angle_axis(0.2, [0, 0, 1]), [0.0, 0.05, 0.0])),
    ("Constraint.Rod.length",
     lambda m: Constraint.Rod(m["matter"].ground, [0.6, -0.5, 0], m["second"], [0, -0.5, 0], 0.4), "length", 0.55),
    ("Motion.Sinusoid.amplitude",
     lambda m: Motion.Sinusoid(m["first"], Motion.Level.Acceleration, 1.0, 3.0, 0.2), "amplitude", 2.5),
]


def _results(system, state) -> list[np.ndarray]:
    """What a realization to Acceleration computes from the instance: derivatives, constraint errors and
    the energies (a zero height changes the potential energy alone)."""
    system.realize(state, Stage.Acceleration)
    return [state.get_ydot().copy(), state.get_q_err().copy(), state.get_u_err().copy(),
            state.get_udot_err().copy(), np.array([system.calc_kinetic_energy(state),
                                                   system.calc_potential_energy(state)])]


def _same(a: list, b: list) -> bool:
    scale = max([1.0] + [float(np.max(np.abs(x))) for x in a + b if len(x)])
    return all(close(x, y, scale=scale) for x, y in zip(a, b))


@pytest.mark.parametrize("case,make,prop,value", CASES, ids=[c[0] for c in CASES])
def test_a_builtin_property_change_reaches_a_state_realized_exactly_to_instance(case, make, prop, value):
    system, matter, forces, first, second, gravity = _pendulum()
    element = make(dict(matter=matter, forces=forces, first=first, second=second, gravity=gravity))
    assert element.get_property_info(prop).stage == Stage.Instance
    state = system.realize_topology()
    state.set_q([0.4, -0.7])
    state.set_u([0.3, -0.2])
    system.realize(state, Stage.Instance)
    before = _results(system, state.copy())
    mark = state.get_invalidation_mark()

    element.set_property(prop, value)

    assert state.get_system_stage() == Stage.Model, f"{case}: the State kept {state.get_system_stage()!r}"
    assert state.get_lowest_stage_invalidated_since(mark) == Stage.Instance
    after = _results(system, state)
    fresh = system.realize_topology()
    fresh.set_q([0.4, -0.7])
    fresh.set_u([0.3, -0.2])
    expected = _results(system, fresh)
    assert _same(after, expected), f"{case}: the State computes with the old value"
    assert not _same(before, expected), f"{case}: the change makes no difference here (a test that cannot fail)"
