"""Errors name a body by its path (``'/matter/forearm'``), not by its index ("body 2 pose").

The matter subsystem's per-body reads (pose, velocity, acceleration of a body or of its mobilizer) said
"body 3 pose needs stage Position"; a custom constraint's "constrained mobilizer 1 has no q[4]" did not
say which body that is. Each is asked here of a State realized too low (or with an index out of range),
and the message must carry the body's path and not the bare index.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    Constraint,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    StageTooLowError,
    Transform,
)

BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.5, 0.0], Inertia([0.1, 0.2, 0.15])))


def _arm():
    system = MultibodySystem("arm")
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    upper = MobilizedBody.Pin(matter.ground, Transform(), BODY, Transform(), name="upper")
    forearm = MobilizedBody.Pin(upper, Transform([0.0, -1.0, 0.0]), BODY, Transform(), name="forearm")
    MobilizedBody.Slider(forearm, Transform([0.0, -1.0, 0.0]), BODY, Transform(), name="hand")
    return system, matter, forearm


# The reads whose stage check used to name the body by its index, with the stage each one needs.
READS = {
    "get_body_rotation": (Stage.Position, lambda b, s: b.get_body_rotation(s), "pose of body"),
    "express_vector_in_ground": (Stage.Position, lambda b, s: b.express_vector_in_ground(s, [1.0, 0.0, 0.0]),
                                 "pose of body"),
    "get_mobilizer_transform": (Stage.Position, lambda b, s: b.get_mobilizer_transform(s),
                                "pose of the mobilizer of"),
    "get_body_angular_velocity": (Stage.Velocity, lambda b, s: b.get_body_angular_velocity(s), "velocity of body"),
    "get_mobilizer_velocity": (Stage.Velocity, lambda b, s: b.get_mobilizer_velocity(s),
                               "velocity of the mobilizer of"),
    "get_body_origin_acceleration": (Stage.Acceleration, lambda b, s: b.get_body_origin_acceleration(s),
                                     "acceleration of body"),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_a_read_too_early_names_the_body_by_its_path(name):
    system, matter, forearm = _arm()
    needed, read, words = READS[name]
    state = system.realize_topology()
    system.realize(state, Stage(int(needed) - 1))
    with pytest.raises(StageTooLowError) as info:
        read(forearm, state)
    text = str(info.value)
    assert f"{words} '/matter/forearm'" in text, text
    assert f"body {forearm.get_mobilized_body_index()}" not in text, text
    system.realize(state, needed)
    read(forearm, state)  # and it reads once realized


class _Reader(Constraint.Custom.Implementation):
    """No equations: registers the hand's and the forearm's mobilizers."""

    def __init__(self, matter, mobods):
        super().__init__(matter, 0, 0, 0)
        for m in mobods:
            self.add_constrained_mobilizer(m)


@pytest.mark.parametrize("which", ["q", "u", "udot_force"])
def test_a_constrained_mobilizer_out_of_range_is_named_by_its_path(which):
    system, matter, forearm = _arm()
    hand = matter.get_mobilized_body(3)
    impl = _Reader(matter, [hand, forearm])
    Constraint.Custom(impl)
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)
    with pytest.raises(IndexError) as info:
        if which == "q":
            impl.get_one_q(state, 1, 4)
        elif which == "u":
            impl.get_one_u(state, 1, 4)
        else:
            impl.add_in_one_mobility_force(state, 1, 4, 1.0, np.zeros(2))
    text = str(info.value)
    assert "constrained mobilizer 1 ('/matter/forearm')" in text, text
