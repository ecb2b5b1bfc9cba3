"""simtk.testing at speeds that are all nonzero (issue 28).

A zero speed hides a mobilizer's velocity terms: at u = 0, ``H udot + HDot u`` tests H alone, so a
wrong HDot passed ``check_mobilizer`` and a property test whose `states` drew u = 0 (hypothesis
favours 0.0) never saw it. Now `states` draws every u nonzero, and `check_mobilizer` checks HDot u
against d/dt (H u) at speeds of the mobilizer that are all nonzero, whatever the State's are.

The mobilizer: a pin about z whose body origin runs on a circle of radius L, with u = 2 qdot, so
HDot u = L/2 (-cos q, -sin q, 0) qdot u (in the velocity row). Its faults: "u as qdot" (a wrong
velocity term: qdot taken to be u) and "stale qdot" (qdot remembered from the last Acceleration
realization, as an implementation caching it in a hook would).
"""
from __future__ import annotations

import numpy as np
import pytest
from circle_pin import CirclePin
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.testing import CheckFailure, check_mobilizer, multibody_systems, nonzero_speeds, states

BODY = Body.Rigid(MassProperties(1.3, [0.1, -0.2, 0.05], Inertia([0.4, 0.5, 0.3])))
HDOT_CHECK = "HDot u vs d/dt (H u) at fixed u"


class FaultyPin(CirclePin):
    """The circling pin, with its HDot's qdot right or wrong as ``fault`` says."""

    def __init__(self, matter, fault=None):
        super().__init__(matter)
        self.fault = fault
        self.remembered_qdot = 0.0

    def realize_acceleration(self, state):
        self.remembered_qdot = float(self.get_qdot(state)[0])

    def _qdot(self, state) -> float:
        if self.fault == "u as qdot":
            return float(self.get_u(state)[0])
        if self.fault == "stale qdot":
            return self.remembered_qdot
        return super()._qdot(state)


def circle_pin_system(fault=None, own_u: float = 0.0):
    """Ground -FaultyPin-> A -Pin-> B under gravity; A's own speed ``own_u`` (0: the hiding case)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    a = MobilizedBody.Custom(matter.ground, Transform(Rotation(0.4, "x")), BODY, Transform(),
                             FaultyPin(matter, fault))
    b = MobilizedBody.Pin(a, Transform([0.2, 0.3, 0.0]), BODY, Transform([0.0, -0.4, 0.1]))
    state = system.realize_topology()
    a.set_q(state, [0.6])
    a.set_u(state, [own_u])
    b.set_q(state, [-0.4])
    b.set_u(state, [1.2])
    return system, a, state


def test_a_correct_mobilizer_passes_at_rest_and_moving():
    for own_u in (0.0, 1.5):
        system, a, state = circle_pin_system(None, own_u)
        report = check_mobilizer(a, state, assert_ok=True)
        assert any(HDOT_CHECK in c.quantity for c in report.comparisons)


@pytest.mark.parametrize("fault", ["u as qdot", "stale qdot"])
def test_a_wrong_hdot_is_caught_where_the_mobilizer_is_at_rest(fault):
    """At the State's u = 0 for this mobilizer the HDot check moves it: the fault is the worst mismatch."""
    system, a, state = circle_pin_system(fault, own_u=0.0)
    with pytest.raises(CheckFailure) as info:
        check_mobilizer(a, state, assert_ok=True)
    report = info.value.report
    assert HDOT_CHECK in report.worst.quantity, report.summary()
    assert any("hide HDot" in n for n in report.notes)


@pytest.mark.parametrize("fault", ["u as qdot", "stale qdot"])
def test_a_wrong_hdot_is_caught_at_the_states_own_speeds(fault):
    """Moving already: the State's speeds are used (no note), and an HDot comparison fails."""
    system, a, state = circle_pin_system(fault, own_u=1.5)
    report = check_mobilizer(a, state)
    assert any("HDot" in c.quantity for c in report.failures), report.summary()
    assert not any("hide HDot" in n for n in report.notes)


@settings(max_examples=25)
@given(model=multibody_systems(max_bodies=4), data=st.data())
def test_drawn_states_have_every_speed_nonzero(model, data):
    """Law: every drawn u is nonzero and within u_scale, with random signs and magnitudes."""
    state = data.draw(states(model.system, u_scale=2.0))
    u = state.get_u()
    assert np.all(u != 0.0) and np.all(np.abs(u) >= 0.2) and np.all(np.abs(u) <= 2.0), u


@settings(max_examples=10)
@given(u=nonzero_speeds(5, u_scale=3.0, u_min=0.5))
def test_nonzero_speeds_bounds(u):
    assert u.shape == (5,) and np.all(np.abs(u) >= 0.5) and np.all(np.abs(u) <= 3.0)


def test_nonzero_speeds_refuses_bad_bounds():
    with pytest.raises(ValueError, match="u_min"):
        nonzero_speeds(3, u_scale=1.0, u_min=0.0)
    with pytest.raises(ValueError, match="u_scale"):
        nonzero_speeds(3, u_scale=float("nan"))


@settings(max_examples=3)
@given(u=nonzero_speeds(3, u_scale=0.0))
def test_zero_u_scale_draws_states_at_rest(u):
    assert np.array_equal(u, np.zeros(3))


@settings(max_examples=5)
@given(data=st.data())
def test_a_property_test_over_drawn_states_catches_the_wrong_velocity_term(data):
    """The whole loop a user writes: drawn states of a system with the faulty mobilizer fail."""
    system, a, _ = circle_pin_system("u as qdot")
    state = data.draw(states(system, q_scale=0.5))
    system.realize(state, Stage.Velocity)
    assert a.get_u(state)[0] != 0.0
    report = check_mobilizer(a, state)
    assert not report.ok and any("HDot" in c.quantity for c in report.failures), report.summary()
