"""Reversed quaternion mobilizers keep a q-error slot (|q| - 1) and are normalized by projection, like
their forward twins."""
import numpy as np
import pytest

from simtk import (
    Body,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from tolerances import assert_close, tol


@pytest.mark.parametrize("kind", ["Ball", "Free"])
@pytest.mark.parametrize("direction", [MobilizedBody.Forward, MobilizedBody.Reverse])
def test_quaternion_error_and_projection(kind, direction):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.3, 0.1, 0.0], Inertia(0.2, 0.3, 0.4)))
    mobod = getattr(MobilizedBody, kind)(matter.ground, Transform([0, 1, 0]), body, Transform(), direction=direction)
    state = system.realize_topology()
    q = mobod.get_q(state).copy()
    q[:4] = [2.0, 0.3, -0.2, 0.1]
    mobod.set_q(state, q)
    system.realize(state, Stage.Position)
    # |q| - 1: a norm of ~2 less one, a few flops on the scale of |q|
    assert_close(state.get_q_err(), [np.linalg.norm(q[:4]) - 1.0], margin=64, scale=np.linalg.norm(q[:4]),
                 what="q_err")
    rotation_before = mobod.get_body_rotation(state).matrix.copy()
    assert system.project(state, 1e-10)  # (the projection's tolerance; normalizing is direct)
    system.realize(state, Stage.Position)
    assert abs(np.linalg.norm(mobod.get_q(state)[:4]) - 1.0) <= tol(1.0, 64)  # a unit quaternion
    assert abs(state.get_q_err()[0]) <= tol(1.0, 64)
    # Normalizing a quaternion does not move the body: R is built from the normalized quaternion
    # (unit entries; q / |q| normalized once more differs by a rounding or two).
    assert_close(mobod.get_body_rotation(state).matrix, rotation_before, margin=64, scale=1.0, what="R")


def test_euler_mode_has_no_quaternion_error():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    MobilizedBody.Ball(matter.ground, Transform(), body, Transform(), direction=MobilizedBody.Reverse)
    state = system.realize_topology()
    matter.set_use_euler_angles(state, True)
    system.realize(state, Stage.Position)
    assert state.get_nq() == 3 and len(state.get_q_err()) == 0
