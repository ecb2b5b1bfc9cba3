"""The State's bookkeeping read by slot offset (core/state_ops.pxi): the same as by name.

The compiled bookkeeping (``State._invalidate``, the fused realization) reads the slots of exactly the
registered ``State`` and ``_SubsystemState`` classes by offset and anything else by attribute name. A
State of a subclass takes the by-name path (and the stage hooks instead of the fused realization): every
stage, count and result must be the same as the registered class's, and registering classes without those
slots must be refused without disturbing the registration in force.
"""
from __future__ import annotations

import numpy as np
import pytest

import simtk_core as _k
from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    StageTooLowError,
    TopologyVersionError,
    Transform,
)
from simtk.common.state import State, _SubsystemState


class SubclassedState(State):
    """A State subclass with the same layout (its instances may take over a State's class)."""

    __slots__ = ()


def _chain():
    """Three Pins under gravity with a spring: a plain State, realized by the fused path."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    body = Body.Rigid(MassProperties(1.0, [0.1, 0.0, 0.0], Inertia(0.02)))
    parent = matter.Ground()
    for _ in range(3):
        parent = MobilizedBody.Pin(parent, Transform(p=[0.2, 0.0, 0.0]), body, Transform())
    Force.MobilityLinearSpring(forces, parent, 0, 5.0, 0.1)
    return system, system.realize_topology()


def _subsystem_stages(state) -> list:
    return [state.get_subsystem_stage(i) for i in range(state.get_system().get_num_subsystems())]


def _drive(system, state) -> list:
    """One sequence of changes and realizations; what each step leaves (stages, counts, results)."""
    rng = np.random.default_rng(3)
    seen = []
    for stage, change in ((Stage.Acceleration, "q"), (Stage.Position, "u"), (Stage.Velocity, "q"),
                          (Stage.Acceleration, "t"), (Stage.Dynamics, "u"), (Stage.Acceleration, "q")):
        if change == "q":
            state.set_q(rng.uniform(-1, 1, state.get_nq()))
        elif change == "u":
            state.set_u(rng.uniform(-1, 1, state.get_nu()))
        else:
            state.set_time(state.get_time() + 0.1)
        seen.append((state.get_system_stage(), _subsystem_stages(state)))
        system.realize(state, stage)
        seen.append((state.get_system_stage(), _subsystem_stages(state),
                     [system.get_num_realizations_of_this_stage(s) for s in Stage]))
        if stage >= Stage.Acceleration:
            seen.append(state.get_udot().tobytes())
    return seen


def test_a_state_subclass_goes_by_name_and_leaves_the_same_bookkeeping():
    system, plain = _chain()
    system2, other = _chain()
    other.__class__ = SubclassedState
    system.realize(plain, Stage.Instance)
    system2.realize(other, Stage.Instance)
    expected, got = _drive(system, plain), _drive(system2, other)
    assert got == expected
    # the premises: the registered class is realized by the fused path, the subclass is refused it (the
    # hooks realize it, its bookkeeping by name); both leave plain int stages (a Stage is an int subclass)
    other.set_q(other.get_q())
    assert other._fused.realize_to(system2, other, Stage.Position) is False
    plain.set_q(plain.get_q())
    assert plain._fused.realize_to(system, plain, Stage.Position) is True
    assert all(type(ss.stage) is int for s in (plain, other) for ss in s._subs)


def test_registering_classes_without_the_slots_is_refused_and_changes_nothing():
    class NoSlots:
        pass

    class OtherSlots:
        __slots__ = ("_system",)

    for state_cls, sub_cls in ((NoSlots, _SubsystemState), (OtherSlots, _SubsystemState), (State, NoSlots)):
        with pytest.raises(TypeError, match="is not a slot"):
            _k.register_state_slots(state_cls, sub_cls)
    # the registration in force is untouched: the fused path still realizes and invalidates right
    system, state = _chain()
    system.realize(state, Stage.Acceleration)
    udot = state.get_udot().copy()
    state.set_q(state.get_q())
    assert state.get_system_stage() == Stage.Time
    assert _subsystem_stages(state) == [Stage.Time] * system.get_num_subsystems()
    system.realize(state, Stage.Acceleration)
    np.testing.assert_array_equal(state.get_udot(), udot)


def test_the_operators_per_call_check_refuses_what_the_full_check_refuses():
    """FusedRealizer.ws_for (the matter operators' one-call check) hands out the workspace only for its own
    State, realized far enough and current; otherwise the operators' own checks say why, as before."""
    system, state = _chain()
    matter = system.get_matter_subsystem()
    system.realize(state, Stage.Position)
    fused = state._fused
    assert fused.ws_for(matter, state, int(Stage.Position)) is not None
    assert fused.ws_for(matter, state, int(Stage.Velocity)) is None  # not realized that far
    with pytest.raises(StageTooLowError):
        matter.calc_residual_force_ignoring_constraints(state, np.zeros(3), np.zeros((4, 2, 3)), np.zeros(3))
    other_system, other = _chain()
    other_system.realize(other, Stage.Position)
    assert fused.ws_for(matter, other, int(Stage.Position)) is None  # another State
    assert fused.ws_for(other_system.get_matter_subsystem(), state, int(Stage.Position)) is None  # another matter
    with pytest.raises(ValueError, match="this State belongs to"):
        other_system.get_matter_subsystem().calc_m(state)
    M = matter.calc_m(state)
    MobilizedBody.Pin(matter.Ground(), Transform(), Body.Rigid(MassProperties(1.0, [0.0] * 3, Inertia(0.1))),
                      Transform())  # a new body: the State's topology is stale
    assert fused.ws_for(matter, state, int(Stage.Position)) is None
    with pytest.raises(TopologyVersionError):
        matter.calc_m(state)
    assert M.shape == (3, 3)
