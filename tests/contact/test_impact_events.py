"""Impact events of Force.HuntCrossley (issue 12): the least signed separation as an event witness.

The witness's values are checked against closed forms (a sphere over a plane, two bricks apart, a
pair on one body left out); a ball dropped from a known height: RK-Merson localizes first contact
at the free-fall time sqrt(2 h / g) within its event window, and a callback sees each impact.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from test_detection import FAST, PAIRS, SEEDS, call, pair_tolerance, random_pair, reference_depth, size_of

from simtk import (
    Body,
    ContactGeometry,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)
from simtk.math import Integrator
from simtk.multibody.contact._detection import min_separation
from simtk.multibody.contact.hunt_crossley import ImpactEvent
from tolerances import tol

S = Integrator.SuccessfulStepStatus
G, RADIUS, HEIGHT = 9.81, 0.1, 0.3
#: A half-space whose material is y < 0 (its frame's x axis along -y).
X_FLOOR = Transform(Rotation(-math.pi / 2, np.array([0.0, 0.0, 1.0])))
MATERIAL = dict(stiffness=1e6, dissipation=0.5)


def _ball(**force_args):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -G, 0.0])
    mp = MassProperties.from_central_inertia(1.0, np.zeros(3), Inertia.from_matrix(np.eye(3) * 4e-3))
    ball = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    hc = Force.HuntCrossley(forces, **force_args)
    hc.add_surface(ball, ContactGeometry.Sphere(RADIUS), **MATERIAL)
    hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), X_FLOOR, **MATERIAL)
    return system, ball, hc, matter.ground


def test_witness_is_the_signed_separation():
    """The least over the candidate pairs of their distance (or minus their depth)."""
    system, ball, hc, ground = _ball()
    # on the ball: a brick 1 m aside and a second sphere overlapping the first (one body: never a
    # pair); on the ground, a brick over the ball's brick: bottom face at y = 0.4
    hc.add_surface(ball, ContactGeometry.Brick([0.05, 0.05, 0.05]), Transform(p=[1.0, 0.0, 0.0]), **MATERIAL)
    hc.add_surface(ball, ContactGeometry.Sphere(RADIUS), Transform(p=[0.05, 0.0, 0.0]), **MATERIAL)
    hc.add_surface(ground, ContactGeometry.Brick([0.1, 0.1, 0.1]), Transform(p=[1.0, 0.5, 0.0]), **MATERIAL)
    state = system.realize_topology()
    for y in (0.3, 0.33, 0.2, 0.12, 0.08, 0.36):
        ball.set_q(state, [1.0, 0.0, 0.0, 0.0, 0.0, y, 0.0])
        system.realize(state, Stage.Position)
        # the brick pair: 0.4 - (y + 0.05) (face on face: the separating axis is the distance);
        # the spheres and the floor: y - r; the brick and the floor: y - 0.05
        expected = min(0.35 - y, y - RADIUS, y - 0.05)
        assert hc.calc_min_separation(state) == pytest.approx(expected, abs=tol(1, 16))


def test_impact_event_localizes_first_contact_at_the_free_fall_time():
    """Law: RK-Merson stops at the upper end of a window no wider than the event's localization
    window (0.1 x accuracy) that brackets sqrt(2 h / g): free fall is quadratic in time, which the
    method integrates exactly, so the window brackets the analytic time up to round-off."""
    system, ball, hc, _ = _ball(impact_events=True)
    event = hc.get_impact_event()
    assert isinstance(event, ImpactEvent)
    state = system.realize_topology()
    ball.set_q(state, [1.0, 0.0, 0.0, 0.0, 0.0, RADIUS + HEIGHT, 0.0])
    accuracy = 1e-6
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    integ.initialize(state)
    assert integ.step_to(1.0) == S.ReachedEventTrigger
    assert integ.get_triggered_events() == [event]
    t_low, t_high = integ.get_event_window()
    t1 = math.sqrt(2 * HEIGHT / G)
    window = event.get_trigger_info().get_required_localization_time_window() * accuracy
    assert t_low - tol(t1, 16) <= t1 <= t_high + tol(t1, 16)
    assert t_high - t_low <= window + tol(t_high, 16)
    assert integ.get_time() == t_high
    system.realize(integ.get_state(), Stage.Position)
    assert hc.calc_min_separation(integ.get_state()) <= 0  # just after first contact


def test_without_impact_events_the_step_goes_over_first_contact():
    system, ball, hc, _ = _ball()
    assert hc.get_impact_event() is None
    state = system.realize_topology()
    ball.set_q(state, [1.0, 0.0, 0.0, 0.0, 0.0, RADIUS + HEIGHT, 0.0])
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    integ.initialize(state)
    assert integ.step_to(1.0) == S.ReachedReportTime


def test_callback_sees_every_impact_and_the_handler_changes_nothing_without_one():
    seen = []
    system, ball, hc, _ = _ball()
    event = hc.enable_impact_events(lambda st: seen.append((st.get_time(), hc.calc_min_separation(st))))
    assert hc.enable_impact_events(event.callback) is event  # once per force
    state = system.realize_topology()
    ball.set_q(state, [1.0, 0.0, 0.0, 0.0, 0.0, RADIUS + HEIGHT, 0.0])
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(0.8)  # first contact at 0.247 s, the next after the rebound (e < 1)
    assert len(seen) >= 2 and event.impacts == [t for t, _ in seen]
    assert seen[0][0] == pytest.approx(math.sqrt(2 * HEIGHT / G), abs=1e-6)
    assert all(d <= 0 for _, d in seen)
    # no callback: the handler leaves the State alone (the trajectory is the one without events,
    # to the integrator's accuracy)
    ref = _ball()
    plain = _ball(impact_events=True)
    outs = []
    for sysm, b, _, _ in (ref, plain):
        st = sysm.realize_topology()
        b.set_q(st, [1.0, 0.0, 0.0, 0.0, 0.0, RADIUS + HEIGHT, 0.0])
        integ = RungeKuttaMersonIntegrator(sysm)
        integ.set_accuracy(1e-8)
        ts = TimeStepper(sysm, integ)
        ts.initialize(st)
        ts.step_to(0.5)
        outs.append(b.get_q(ts.get_state())[5])
    assert len(plain[2].get_impact_event().impacts) >= 1
    assert outs[0] == pytest.approx(outs[1], abs=1e-5)  # both within accuracy 1e-8 of the truth x 0.5 s


@pytest.mark.parametrize("k1, k2", PAIRS)
@FAST
@given(seed=SEEDS)
def test_pair_separation_against_the_support_function_reference(k1, k2, seed):
    """Overlapping: minus the depth detection reports. Apart: the distance, which is
    max over n of -(h_1(n) + h_2(-n)) (the reference's minimum is within its resolution, 1e-6 of the
    scene's size, of it): exact for the closed-form pairs, to the stated tolerance for the EPA pairs,
    a positive lower bound for brick-brick."""
    rng = np.random.default_rng(seed)
    g1, X1, g2, X2 = random_pair(rng, k1, k2)
    codes = np.array([g1.shape_code, g2.shape_code], np.int32)
    params = np.array([g1.params, g2.params])
    Rs, ps = np.array([X1[0], X2[0]]), np.array([X1[1], X2[1]])
    sep = min_separation(codes, params, Rs, ps, np.array([-1, -1], np.int32), np.array([0, 1], np.int32), 100.0)
    size = size_of(g1, g2) + float(np.abs(X2[1]).max())
    eps = pair_tolerance(k1, k2, size)
    c = call([g1, g2], list(Rs), list(ps))
    if len(c):
        assert sep == pytest.approx(-float(np.max(c.depth)), abs=eps)
        return
    coarse, ref = reference_depth(g1, X1, g2, X2)
    if ref >= -1e-6 * size:
        return          # touching within the reference's resolution
    distance = -ref     # a lower bound of the distance, within the reference's resolution of it
    assert sep > 0
    if (k1, k2) == ("Brick", "Brick"):
        assert sep <= distance + 1e-6 * size    # the separating axes' lower bound
    else:  # exact, or Gilbert's iteration to its stated tolerance
        assert sep == pytest.approx(distance, abs=1e-6 * size + eps)
