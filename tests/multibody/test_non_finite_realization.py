"""A non-finite q or u written through ``upd_q()`` / ``upd_u()`` is refused when Position / Velocity is
realized, naming the coordinate or speed and its body, on every realization path (the fused kernels,
the fused plan with Python parts, the matter's own hooks); and forward dynamics that overflows says what
overflowed (the positions, the speeds, the applied forces: naming the body or the coordinate) instead of
diagnosing a massless body.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    SingularArticulatedInertiaError,
    Stage,
    Transform,
)

_BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.25, 0.0], Inertia(0.1)))


class _Nothing(Force.Custom.Implementation):
    """A Python force that adds nothing: its presence puts the fused realization on its staged plan."""

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        pass

    def calc_potential_energy(self, state):
        return 0.0


PATHS = ["fused", "staged", "hooks", "constrained"]


def _model(path: str):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    arm = MobilizedBody.Pin(matter.ground, Transform(), _BODY, Transform(), name="arm")
    hand = MobilizedBody.Free(arm, Transform([0, -0.5, 0]), _BODY, Transform(), name="hand")
    if path == "staged":
        Force.Custom(forces, _Nothing())
    if path == "constrained":
        Constraint.Rod(matter.ground, [0, 1, 0], hand, [0, 0, 0], 2.0)
    state = system.realize_topology()
    if path == "hooks":
        state._fused = False
    system.realize(state, Stage.Acceleration)
    return system, {"arm": arm, "hand": hand}, state


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("index, body", [(0, "arm"), (5, "hand")])
def test_a_non_finite_q_is_refused_at_position(path, value, index, body):
    system, bodies, state = _model(path)
    state.upd_q()[index] = value
    with pytest.raises(FloatingPointError) as info:
        system.realize(state, Stage.Position)
    message = str(info.value)
    assert f"q[{index}]" in message and f"/matter/{body}" in message and "finite" in message
    assert not isinstance(info.value, SingularArticulatedInertiaError)
    assert state.get_system_stage() < Stage.Position  # nothing was left realized from the NaN
    with pytest.raises(FloatingPointError):  # and it stays refused
        system.realize(state, Stage.Dynamics)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("index, body", [(0, "arm"), (3, "hand")])
def test_a_non_finite_u_is_refused_at_velocity(path, value, index, body):
    system, bodies, state = _model(path)
    state.upd_u()[index] = value
    system.realize(state, Stage.Position)  # the coordinates are fine
    with pytest.raises(FloatingPointError) as info:
        system.realize(state, Stage.Velocity)
    message = str(info.value)
    assert f"u[{index}]" in message and f"/matter/{body}" in message and "finite" in message
    assert "massless" not in message
    assert state.get_system_stage() == Stage.Position


@pytest.mark.parametrize("path", PATHS)
def test_every_speed_infinite_is_named_as_such_not_as_a_massless_body(path):
    system, bodies, state = _model(path)
    state.upd_u()[:] = np.inf
    with pytest.raises(FloatingPointError, match=r"u\[0\].*/matter/arm.*finite") as info:
        system.realize(state, Stage.Acceleration)
    assert not isinstance(info.value, SingularArticulatedInertiaError)
    assert any("Velocity" in note for note in getattr(info.value, "__notes__", ())), "refused at Velocity"


@pytest.mark.parametrize("path", ["fused", "hooks"])
def test_overflowing_positions_are_named_as_such(path):
    system, bodies, state = _model(path)
    state.upd_q()[5] = 1e200  # the hand's x: its inertia about the Ground origin overflows
    with pytest.raises(FloatingPointError, match="positions overflowed.*/matter/hand") as info:
        system.realize(state, Stage.Acceleration)
    assert not isinstance(info.value, SingularArticulatedInertiaError)
    assert "massless" not in str(info.value)


@pytest.mark.parametrize("path", ["fused", "hooks"])
def test_overflowing_speeds_are_named_as_such(path):
    system, bodies, state = _model(path)
    state.upd_u()[1:4] = 1e200  # the hand's angular velocity: its gyroscopic force overflows
    with pytest.raises(FloatingPointError, match="velocities overflowed.*/matter/hand") as info:
        system.realize(state, Stage.Acceleration)
    assert not isinstance(info.value, SingularArticulatedInertiaError)


def _forced(kind: str, path: str):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    arm = MobilizedBody.Pin(matter.ground, Transform(), _BODY, Transform(), name="arm")
    hand = MobilizedBody.Pin(arm, Transform([0, -0.5, 0]), _BODY, Transform(), name="hand")
    for _ in range(2):  # each finite, their sum not
        if kind == "mobility":
            Force.MobilityConstantForce(forces, hand, 0, 1e308)
        else:
            Force.ConstantForce(forces, hand, [0, 0, 0], [1e308, 0, 0])
    state = system.realize_topology()
    if path == "hooks":
        state._fused = False
    return system, state


@pytest.mark.parametrize("path", ["fused", "hooks"])
def test_overflowing_mobility_forces_name_the_coordinate(path):
    system, state = _forced("mobility", path)
    with pytest.raises(FloatingPointError, match=r"applied forces are not finite.*mobility force on u\[1\].*"
                                                 r"/matter/hand.*overflowed") as info:
        system.realize(state, Stage.Acceleration)
    assert not isinstance(info.value, SingularArticulatedInertiaError)


@pytest.mark.parametrize("path", ["fused", "hooks"])
def test_overflowing_body_forces_name_the_body(path):
    system, state = _forced("body", path)
    with pytest.raises(FloatingPointError, match="applied forces are not finite.*body force on .*/matter/hand"):
        system.realize(state, Stage.Acceleration)


def test_finite_forces_too_large_for_the_accelerations_are_named():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    light = Body.Rigid(MassProperties.from_central_inertia(1e-300, [0, 0, 0], Inertia(1e-300)))
    slider = MobilizedBody.Slider(matter.ground, Transform(), light, Transform(), name="slider")
    Force.MobilityConstantForce(forces, slider, 0, 1e300)
    state = system.realize_topology()
    with pytest.raises(FloatingPointError, match="overflowed.*largest mobility force is 1e\\+300.*/matter/slider") as info:
        system.realize(state, Stage.Acceleration)
    assert not isinstance(info.value, SingularArticulatedInertiaError)


def test_a_massless_body_is_still_diagnosed_as_one():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    MobilizedBody.Pin(matter.ground, Transform(), Body.Massless(), Transform(), name="ghost")
    state = system.realize_topology()
    with pytest.raises(SingularArticulatedInertiaError, match="/matter/ghost.*massless"):
        system.realize(state, Stage.Acceleration)
