"""Constraints in the compiled time loop against the Python loop: the same trajectory, bitwise.

The compiled loop solves the constraint equations it has compiled (Ball, Weld, ConstantOrientation,
ConstantAngle, Rod, PointInPlane, PointOnLine, NoSlip1D, ConstantCoordinate, ConstantSpeed,
ConstantAcceleration, locks at every level, Steady and Sinusoid Motions, whose targets vary with time) in
every derivative and projects q and u onto them after every step (``core/loop_constraints.pxi``), by
the same compiled functions, in the same order, as the Python path's solve and projection. So, as in
``test_compiled_loop.py``, every comparison is exact and the only expected values are the other
path's; closing errors are checked against the constraint tolerance the integrator was given.
"""
from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import simtk_core
from simtk import Function, Stage
from simtk.common.errors import ConstraintViolationError
from simtk.math import NonFiniteDerivativeError, SimulationDivergedError
from simtk.multibody import Constraint, Force, MobilizedBody, Motion
from simtk.multibody.constraints._projection import _least_norm_step
from simtk.spatial import Rotation, Transform
from simtk.testing import multibody_systems, states

sys.path.insert(0, str(Path(__file__).parent))
from test_compiled_loop import (  # noqa: E402
    _MODE_PARAM,
    COMPILED_TWINS,
    CONSTRAINED_TWINS,
    MOBILITIES,
    _configure,
    add_force,
    counting_compiled_steps,
    drive,
    drive_across_a_change,
    force_specs,
    models,
    pin_chain,
    report_times,
    statistics,
    traced_step_to,
    twins,
)

#: Mobilizers of two or more mobilities: a chain of two to four of them closed to Ground has at least
#: four degrees of freedom, so a Ball's three equations are independent (but at singular poses).
RICH_KINDS = tuple(k for k, n in MOBILITIES.items() if n >= 2)


def rich_chains():
    """Chains of two to four multi-dof mobilizers under gravity, with a few more built-in forces."""
    return st.lists(force_specs, min_size=0, max_size=3).flatmap(lambda specs: multibody_systems(
        min_bodies=2, max_bodies=4, kinds=RICH_KINDS, chain=True,
        extend=lambda model: [add_force(model, s) for s in specs]))


_station = st.lists(st.floats(-0.4, 0.4, allow_nan=False, allow_infinity=False), min_size=3, max_size=3)


#: The kinds the compiled loop solves.
KINDS = ("Ball", "Weld", "ConstantOrientation", "ConstantAngle", "Rod", "PointInPlane", "PointOnLine", "NoSlip1D",
         "ConstantCoordinate", "ConstantSpeed", "ConstantAcceleration", "lock", "velocity lock", "acceleration lock",
         "Steady", "Sinusoid q", "Sinusoid u", "Sinusoid udot")
_LOCKS = {"lock": Motion.Level.Position, "velocity lock": Motion.Level.Velocity,
          "acceleration lock": Motion.Level.Acceleration}
_SINUSOIDS = {"Sinusoid q": Motion.Level.Position, "Sinusoid u": Motion.Level.Velocity,
              "Sinusoid udot": Motion.Level.Acceleration}


def close_loop(model, state, kind: str, j: int, i: int, s2, angles) -> tuple:
    """Add a constraint of ``kind`` between body ``j`` and body ``i`` (Ground when 0) that ``state``
    satisfies: a Ball holding station ``s2`` of body ``j`` where it is on body ``i``; a Weld holding
    the frame at ``s2`` rotated by body-fixed ``angles`` where it is; a ConstantOrientation keeping
    that frame's orientation; a ConstantAngle keeping the angle the two bodies' axes (their x and
    the rotated frame's y) make now (None, None when that is within 0.3 of 0 or pi); a Rod
    keeping the distance from station ``s2`` to station ``angles`` of body ``i`` (None, None when it
    is below 0.05); a PointInPlane (PointOnLine) holding station ``s2`` in the plane (on the line)
    through where it is now, normal to (along) the rotated frame's x axis; a NoSlip1D (no relative
    velocity along that axis at that point, fixed on body ``i``); a ConstantCoordinate
    (ConstantSpeed, ConstantAcceleration) holding body ``j``'s first q (u, udot: ``s2[0]``) at its
    value; a lock of body ``j`` at its position (its speeds held at 0), speeds or zero accelerations
    (an Instance change of the new State); a Motion of body ``j``: Steady at its speeds, or a
    Sinusoid of amplitude ``angles[0]``, rate ``10 angles[1]`` and phase ``10 angles[2]`` at the level
    the kind names (None, None for a Position-level one on a quaternion mobilizer, which Motions
    refuse). Returns the constraint (the body for a lock or Motion) and the new System's State with
    ``state``'s t, q and u."""
    matter = model.matter
    b2 = model.bodies[j]
    b1 = matter.get_mobilized_body(i)
    model.system.realize(state, Stage.Position)
    X_GB2, X_GB1 = b2.get_body_transform(state), b1.get_body_transform(state)
    X_B2M = Transform(Rotation.from_body_fixed_xyz(angles), s2)
    X_B1F = (~X_GB1) * (X_GB2 * X_B2M)  # where the frame on body j is now, on body i
    if kind == "Ball":
        c = Constraint.Ball(b1, X_B1F.p, b2, s2)
    elif kind == "Weld":
        c = Constraint.Weld(b1, X_B1F, b2, X_B2M)
    elif kind == "ConstantOrientation":
        c = Constraint.ConstantOrientation(b1, X_B1F.R, b2, X_B2M.R)
    elif kind == "Rod":
        length = float(np.linalg.norm(X_GB2.shift_frame_station_to_base(s2) - X_GB1.shift_frame_station_to_base(angles)))
        if length < 0.05:
            return None, None
        c = Constraint.Rod(b1, angles, b2, s2, length)
    elif kind == "NoSlip1D":  # body i the case and moving body 0, at the frame's place, along its x
        c = Constraint.NoSlip1D(b1, X_B1F.p, X_B1F.R.matrix[:, 0], b1, b2)
    elif kind == "ConstantCoordinate":
        c = Constraint.ConstantCoordinate(b2, 0, float(b2.get_q(state)[0]))
    elif kind == "ConstantSpeed":
        c = Constraint.ConstantSpeed(b2, 0, float(b2.get_u(state)[0]))
    elif kind == "ConstantAcceleration":
        c = Constraint.ConstantAcceleration(b2, 0, float(s2[0]))
    elif kind == "Steady":
        Motion.Steady(b2, np.array(b2.get_u(state)))
        c = b2
    elif kind in _SINUSOIDS:
        if kind == "Sinusoid q" and b2.get_num_q(state) != b2.get_num_u(state):
            return None, None
        Motion.Sinusoid(b2, _SINUSOIDS[kind], angles[0], 10.0 * angles[1], 10.0 * angles[2])
        c = b2
    elif kind in _LOCKS:
        c = b2
    elif kind in ("PointInPlane", "PointOnLine"):
        axis = X_B1F.R.matrix[:, 0]
        if kind == "PointInPlane":
            c = Constraint.PointInPlane(b1, axis, float(axis @ X_B1F.p), b2, s2)
        else:
            c = Constraint.PointOnLine(b1, axis, X_B1F.p, b2, s2)
    else:
        axis_f = X_B2M.R.matrix[:, 1]
        b_G, f_G = X_GB1.R.matrix[:, 0], X_GB2.R.matrix @ axis_f
        angle = float(np.arccos(np.clip(b_G @ f_G, -1.0, 1.0)))
        if not 0.3 < angle < np.pi - 0.3:  # as in Simbody, not near 0 or pi
            return None, None
        c = Constraint.ConstantAngle(b1, [1.0, 0, 0], b2, axis_f, angle)
    closed = model.system.realize_topology()
    model.system.realize(closed, Stage.Model)
    closed.set_time(state.get_time())
    closed.upd_q()[:] = state.get_q()
    closed.upd_u()[:] = state.get_u()
    if kind in _LOCKS:
        b2.lock(closed, _LOCKS[kind])
    return c, closed


# ---------------------------------------------------------------------------------------------- random loops
@pytest.mark.parametrize("mode", ["default", "fixed_step", "project_every_step", "constraint_tolerance",
                                  "infinity_norm", "step_limit"])
@pytest.mark.parametrize("name", CONSTRAINED_TWINS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_random_loops_agree_bitwise(name, mode, data):
    """Law: a random tree of built-in mobilizers closed or driven by one of the compiled kinds (KINDS;
    between a body and Ground or another body, so that a Ball's equations are measured in Ground or
    in a moving ancestor; Motions whose targets vary with time, evaluated at every stage's time)
    runs in the compiled loop, with the same trajectory,
    statistics and advanced State after every ``step_to`` as the Python loop, bitwise. Where the
    compiled factor refuses A (a loop with fewer degrees of freedom than equations: A is singular),
    the step goes back to Python, which takes A's eigen-decomposition; the trajectory is still the
    same."""
    rich = data.draw(st.booleans(), label="a chain of multi-dof mobilizers closed to Ground")
    model = data.draw(rich_chains() if rich else models(max_bodies=4), label="model")
    state = data.draw(states(model.system), label="state")
    nb = len(model.bodies)
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    j = nb - 1 if rich else data.draw(st.integers(0, nb - 1), label="constrained body")
    i = 0 if rich else data.draw(st.integers(0, nb).filter(lambda k: k != j + 1), label="other body (0: Ground)")
    c, state = close_loop(model, state, kind, j, i, data.draw(_station, label="station"),
                          data.draw(_station, label="frame angles"))
    assume(c is not None)
    param = data.draw(_MODE_PARAM[mode], label="param")
    reports = data.draw(report_times, label="report times")
    a, b = twins(model.system, COMPILED_TWINS[name], _configure(mode, param, 1e-3, 0.0))
    ra, rb = _initialize(a, state), _initialize(b, state)
    assert type(ra) is type(rb), (ra, rb)
    assume(ra is None)  # a configuration whose velocity projection fails fails alike on both paths
    why = a.describe_fast_path()
    m = a.get_advanced_state().get_nudot_err()
    assert why.startswith("compiled time loop:") and f"{m} constraint equations" in why, why
    with counting_compiled_steps() as compiled_steps:
        seen, ended = drive(a, b, reports, max_steps=800)
    event(f"compiled steps: {'all' if compiled_steps[0] == a.get_num_steps_taken() else 'some' if compiled_steps[0] else 'none'}")


def _initialize(integ, state):
    try:
        integ.initialize(state)
    except Exception as exc:  # compared by type between the paths
        return exc
    return None


# ---------------------------------------------------------------------------------------------- well-posed loops
def within_tolerance(integ) -> bool:
    """The integrator's own test after a step: the RMS of the (unit-weighted) position errors and that
    of the velocity errors are within the constraint tolerance."""
    s, tol = integ.get_state(), integ.get_constraint_tolerance_in_use()
    return all(np.sqrt(np.mean(e * e)) <= tol for e in (s.get_q_err(), s.get_u_err()) if len(e))


def _start(system):
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    return state


def four_bar():
    """Three 0.5 m pin links from Ground, the tip held by a Ball at a Ground point: a planar
    four-bar whose out-of-plane equation is a row of zeros (left out of the factor)."""
    system, matter, forces, bodies = pin_chain(3)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    return system, _start(system)


def spatial_loop():
    """A Ball-mobilized link and a Pin link, closed to a second Ball-mobilized link (hanging from
    another Ground point) by a Ball between the two tips: the equations are in Ground, the
    quaternions projected too."""
    system, matter, forces, bodies = pin_chain(2, "Ball")
    other = MobilizedBody.Ball(matter.ground, Transform([0.7, 0.0, 0.2]), bodies[0].get_body(), Transform())
    Constraint.Ball(bodies[1], [0, -0.5, 0], other, [0, -0.25, 0])
    return system, _start(system)


def relative_loop():
    """A Free base carrying two branches (a Ball and a Pin link; a Pin link) whose tips a Ball ties
    together: the branches' common ancestor is the moving base, so the equations are measured in
    its frame."""
    system, matter, forces, bodies = pin_chain(1, "Free")
    base = bodies[0]
    link = bodies[0].get_body()
    a1 = MobilizedBody.Ball(base, Transform([0.2, -0.5, 0]), link, Transform())
    a2 = MobilizedBody.Pin(a1, Transform([0, -0.5, 0]), link, Transform())
    b1 = MobilizedBody.Pin(base, Transform([-0.2, -0.5, 0]), link, Transform())
    Constraint.Ball(a2, [0, -0.5, 0], b1, [0.0, -0.25, 0])
    return system, _start(system)


def _bent_chain(kinds):
    """Links on the given mobilizers, each turned by a different rotation (as far as its mobilizer
    fits it) away from the straight hanging pose; returns a model-like namespace and its State."""
    system, matter, forces, bodies = pin_chain(1, kinds[0])
    link = bodies[0].get_body()
    for kind in kinds[1:]:
        bodies.append(getattr(MobilizedBody, kind)(bodies[-1], Transform([0, -0.5, 0]), link, Transform()))
    state = _start(system)
    for i, mb in enumerate(bodies):
        mb.set_q_to_fit_transform(state, Transform(Rotation.from_body_fixed_xyz([0.4 - 0.3 * i, 0.2 * i + 0.1, 0.5])))
    return SimpleNamespace(system=system, matter=matter, bodies=bodies), state


def welded_chain():
    """Three Ball-mobilized links, bent, the frame at the tip welded where it is to Ground: six
    equations on nine mobilities."""
    model, state = _bent_chain(["Ball", "Ball", "Ball"])
    _, state = close_loop(model, state, "Weld", 2, 0, [0, -0.5, 0], [0.3, -0.2, 0.5])
    return model.system, state


def oriented_pair():
    """A Ball link and a Pin link, bent; the second keeps its orientation in Ground
    (ConstantOrientation) and, on a third Pin link, an axis keeps its angle to Ground's x
    (ConstantAngle): rows of the Angle family only."""
    model, state = _bent_chain(["Ball", "Pin", "Pin"])
    _, state = close_loop(model, state, "ConstantOrientation", 1, 0, [0, 0, 0], [0.2, 0.1, -0.3])
    c, state = close_loop(model, state, "ConstantAngle", 2, 0, [0, 0, 0], [0.9, 0.4, 0.2])
    assert c is not None
    return model.system, state


def rods_and_planes():
    """A Ball link, a Pin link and a Pin link, bent: the tip kept at its distance from a Ground point
    (Rod), the middle link's end in a plane of Ground (PointInPlane) and the first link's end on a
    line of Ground (PointOnLine): rows of the Rod and Plane families, whose fast rows read the
    stations' velocities."""
    model, state = _bent_chain(["Ball", "Pin", "Pin"])
    steps = [("Rod", 2, [0, -0.5, 0], [0.3, -1.4, 0.2]), ("PointInPlane", 1, [0, -0.5, 0], [0.2, 0.5, 0.1]),
             ("PointOnLine", 0, [0, -0.5, 0], [0.9, -0.3, 0.4])]
    for kind, j, s2, other in steps:
        c, state = close_loop(model, state, kind, j, 0, s2, other)
        assert c is not None
    return model.system, state


def held_coordinates():
    """The four-bar with a fourth link: its first Pin held at its angle (ConstantCoordinate), the
    fourth's speed held (ConstantSpeed), and a Ball-mobilized fifth link locked (its three speeds
    held at 0): rows of G that are rows of N and unit rows, and velocity-level equations."""
    system, matter, forces, bodies = pin_chain(4)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    Constraint.ConstantCoordinate(bodies[0], 0, -0.2)
    Constraint.ConstantSpeed(bodies[3], 0, 0.5)
    tail = MobilizedBody.Ball(bodies[3], Transform([0, -0.5, 0]), bodies[0].get_body(), Transform())
    state = _start(system)
    tail.set_q_to_fit_transform(state, Transform(Rotation.from_body_fixed_xyz([0.3, 0.2, 0.1])))
    tail.lock(state)
    return system, state


def knife_edge():
    """A Chaplygin sled: a body on a Planar mobilizer (x, y, rotation about z) whose point at its
    origin cannot slide along its own y axis (NoSlip1D with the sled as the case body), carrying a
    Pin pendulum; a nonholonomic, velocity-level equation."""
    system, matter, forces, bodies = pin_chain(1, "Planar")
    sled = bodies[0]
    MobilizedBody.Pin(sled, Transform([0.1, 0.0, 0.0]), sled.get_body(), Transform())
    Constraint.NoSlip1D(sled, [0.0, 0.0, 0.0], [0.0, 1.0, 0.0], matter.ground, sled)
    return system, _start(system)


#: the crank drive of driven_four_bar: q0(t) = a sin(w t + p)
CRANK = (0.4, 3.0, 0.2)


def driven_four_bar(with_motion: bool = False):
    """The four-bar with its first link driven (Motion.Sinusoid at Position level, CRANK): a
    holonomic equation whose target moves with time, beside the Ball's three. (system, State), and
    the Motion when asked."""
    system, matter, forces, bodies = pin_chain(3)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    motion = Motion.Sinusoid(bodies[0], Motion.Level.Position, *CRANK)
    return (system, _start(system), motion) if with_motion else (system, _start(system))


#: the accelerations of driven_accelerations: link 0's udot (ConstantAcceleration), link 1's
#: udot(t) = a sin(w t + p) (Motion.Sinusoid at Acceleration level)
ACCELERATIONS = (0.3, (0.5, 3.0, 0.2))


def driven_accelerations():
    """A pin chain with acceleration-only equations: link 0's udot held (ConstantAcceleration), link
    1's moved along a sinusoid (an Acceleration-level Motion), and a Ball-mobilized tail locked at
    Acceleration level (udot = 0); five equations, none with a position or velocity error."""
    system, matter, forces, bodies = pin_chain(3)
    Constraint.ConstantAcceleration(bodies[0], 0, ACCELERATIONS[0])
    Motion.Sinusoid(bodies[1], Motion.Level.Acceleration, *ACCELERATIONS[1])
    tail = MobilizedBody.Ball(bodies[2], Transform([0, -0.5, 0]), bodies[0].get_body(), Transform())
    state = _start(system)
    tail.set_q_to_fit_transform(state, Transform(Rotation.from_body_fixed_xyz([0.3, 0.2, 0.1])))
    tail.lock(state, Motion.Level.Acceleration)
    return system, state


def driven_speeds():
    """A pin chain whose first link turns steadily (Motion.Steady) and whose second swings at a
    prescribed sinusoidal speed (a Velocity-level Motion), closed by a Rod from its tip to Ground."""
    system, matter, forces, bodies = pin_chain(4)
    Motion.Steady(bodies[0], 0.8)
    Motion.Sinusoid(bodies[1], Motion.Level.Velocity, 0.6, 2.0, 0.4)
    state = _start(system)
    _, state = close_loop(SimpleNamespace(system=system, matter=matter, bodies=bodies), state, "Rod", 3, 0,
                          [0, -0.5, 0], [0.2, -1.0, 0.3])
    return system, state


def ladder(rungs: int = 22):
    """Two chains of Ball-mobilized links hanging from Ground points 0.2 m apart, bent alike in the y-z
    plane, tied link by link by a Ball at the middle of the gap (the ladder's rungs): 3 equations per
    rung, 66 for 22 rungs, more than factor_kept's own loops take (LAPACK's dpotrf factors them), on
    twice as many mobilities (and pin_chain's first link beside them, free)."""
    system, matter, forces, bodies = pin_chain(1, "Ball")
    link = bodies[0].get_body()
    left = [MobilizedBody.Ball(matter.ground, Transform([-0.1, 0, 0]), link, Transform())]
    right = [MobilizedBody.Ball(matter.ground, Transform([0.1, 0, 0]), link, Transform())]
    for chain in (left, right):
        for _ in range(rungs - 1):
            chain.append(MobilizedBody.Ball(chain[-1], Transform([0, -0.5, 0]), link, Transform()))
    for a, b in zip(left, right):
        Constraint.Ball(a, [0.1, -0.5, 0], b, [-0.1, -0.5, 0])
    state = _start(system)
    for i, (a, b) in enumerate(zip(left, right)):  # the same turn about x on both sides keeps every rung closed
        turn = Transform(Rotation.from_body_fixed_xyz([0.3 * math.sin(i), 0, 0]))
        a.set_q_to_fit_transform(state, turn)
        b.set_q_to_fit_transform(state, turn)
    return system, state


LOOPS = {"four-bar": (four_bar, 3), "spatial": (spatial_loop, 3), "relative": (relative_loop, 3),
         "weld": (welded_chain, 6), "orientation and angle": (oriented_pair, 4),
         "rod, plane and line": (rods_and_planes, 4), "held coordinates and a lock": (held_coordinates, 8),
         "knife edge": (knife_edge, 1), "driven four-bar": (driven_four_bar, 4),
         "driven accelerations": (driven_accelerations, 5), "driven speeds": (driven_speeds, 3)}


@pytest.mark.parametrize("loop", list(LOOPS))
@pytest.mark.parametrize("name", CONSTRAINED_TWINS)
def test_well_posed_loops_run_every_step_compiled_bitwise(name, loop):
    """Law: on a loop whose constraint matrix has full rank (but for rows of zeros), the compiled loop
    takes every step, bitwise as the Python loop, and keeps the closing errors within the constraint
    tolerance."""
    make, m = LOOPS[loop]
    a = _run_compiled_and_python(*make(), name, m, [0.1, 0.3])
    assert a.get_num_steps_taken() > 0 and within_tolerance(a)
    assert a.get_num_projections() > 0 or a.get_state().get_nu_err() == 0  # acceleration-only rows: none


def _run_compiled_and_python(system, state, name: str, m: int, report_times):
    """Twins of integrator ``name`` from ``state`` with varied speeds, through ``report_times``: the
    compiled one says it solves ``m`` equations and takes every step, bitwise as the Python one (which
    ``drive`` compares after every call); returns the compiled one."""
    state.upd_u()[:] = np.linspace(-1.0, 1.5, state.get_nu())
    a, b = twins(system, COMPILED_TWINS[name], lambda integ: integ.set_accuracy(1e-4))
    a.initialize(state)
    b.initialize(state)
    why = a.describe_fast_path()
    assert why.startswith("compiled time loop:") and f"{m} constraint equations" in why, why
    with counting_compiled_steps() as compiled_steps:
        seen, ended = drive(a, b, report_times, max_steps=5000)
    assert ended == "reached" and compiled_steps[0] == a.get_num_steps_taken()
    return a


@pytest.mark.parametrize("name", ["RungeKuttaMerson", "Verlet"])
def test_more_equations_than_the_own_cholesky_takes_run_compiled_bitwise(name):
    """Law: past ``LAPACK_CHOLESKY_ABOVE`` equations (LAPACK's dpotrf factors them, for both paths in the
    same compiled call) the compiled loop still takes every step, bitwise as the Python loop, projects
    after every step and keeps the closing errors within the constraint tolerance."""
    m = 66
    assert m > simtk_core.LAPACK_CHOLESKY_ABOVE  # the premise: the factor is LAPACK's
    a = _run_compiled_and_python(*ladder(), name, m, [0.01, 0.02])
    assert a.get_num_steps_taken() > 20 and a.get_num_projections() > 0 and within_tolerance(a)


def test_a_driven_crank_follows_its_sinusoid():
    """Law: the driven four-bar's crank angle and speed follow q0(t) = a sin(w t + p) (and its
    derivative) within the constraint tolerance at every report, in the compiled loop, with the targets
    evaluated at each stage's time."""
    system, state = driven_four_bar()
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.set_accuracy(1e-5)
    integ.initialize(state)
    a, w, p = CRANK
    crank = system.get_matter_subsystem().get_mobilized_body(1)
    tol = integ.get_constraint_tolerance_in_use()
    with counting_compiled_steps() as compiled_steps:
        for t in np.linspace(0.1, 2.0, 8):
            integ.step_to(t)
            s = integ.get_state()
            assert abs(crank.get_q(s)[0] - a * np.sin(w * t + p)) <= 2.0 * tol  # RMS of 4 rows <= tol
            assert abs(crank.get_u(s)[0] - a * w * np.cos(w * t + p)) <= 2.0 * tol
            assert within_tolerance(integ)
    assert compiled_steps[0] == integ.get_num_steps_taken() > 0


def test_acceleration_rows_give_the_prescribed_accelerations():
    """Law: in the compiled loop the acceleration-only equations hold to round-off in every
    evaluation: link 0's udot is the ConstantAcceleration's value, link 1's the Motion's a sin(w t + p),
    the locked tail's zero; so link 0's speed grows linearly (integrated exactly but for round-off)
    and link 1's follows -a/w cos(w t + p) + a/w cos(p) + u1(0) to the integrator's accuracy."""
    system, state = driven_accelerations()
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.set_accuracy(1e-7)
    integ.initialize(state)
    matter = system.get_matter_subsystem()
    link0, link1, tail = (matter.get_mobilized_body(i) for i in (1, 2, 4))
    u0 = np.array(integ.get_state().get_u())
    a0, (a, w, p) = ACCELERATIONS
    eps = np.finfo(float).eps
    with counting_compiled_steps() as compiled_steps:
        for t in np.linspace(0.1, 1.0, 4):
            integ.step_to(t)
            s = integ.get_state()
            # the solve removes the unconstrained accelerations' excess: its round-off is relative to them
            free, _ = matter.calc_acceleration_ignoring_constraints(s, system.get_mobility_forces(s),
                                                                    system.get_rigid_body_forces(s))
            tol = 256 * eps * (1.0 + np.abs(free).max())
            assert abs(link0.get_udot(s)[0] - a0) <= tol
            assert abs(link1.get_udot(s)[0] - a * np.sin(w * t + p)) <= tol
            assert np.abs(tail.get_udot(s)).max() <= tol
            assert abs(link0.get_u(s)[0] - (u0[0] + a0 * t)) <= 1e3 * eps * (1.0 + a0 * t)
            exact = u0[1] + (a / w) * (np.cos(p) - np.cos(w * t + p))
            assert abs(link1.get_u(s)[0] - exact) <= 10 * integ.get_accuracy_in_use()
    assert compiled_steps[0] == integ.get_num_steps_taken() > 0


@pytest.mark.parametrize("name", ["RungeKuttaMerson", "Verlet"])
def test_a_pickled_constrained_integrator_continues_bitwise(name):
    """Law: an integrator of a welded chain pickled mid-run (its compiled stepper and constraint arrays
    are built again) continues bitwise as the original, in the compiled loop."""
    system, state = welded_chain()
    a = COMPILED_TWINS[name](system)
    a.initialize(state)
    a.step_to(0.1)
    b = pickle.loads(pickle.dumps(a))
    assert "6 constraint equations" in b.describe_fast_path(), b.describe_fast_path()
    a.step_to(0.3)
    with counting_compiled_steps() as compiled_steps:
        b.step_to(0.3)
    assert compiled_steps[0] > 0
    np.testing.assert_array_equal(b.get_state().get_y(), a.get_state().get_y())
    assert statistics(b) == statistics(a)


@pytest.mark.parametrize("name", ["RungeKuttaMerson", "SemiExplicitEuler"])
def test_a_constraint_disabled_mid_run_is_followed_alike(name):
    """Law: disabling the Ball of the four-bar in the advanced State between calls (and reinitializing
    at Instance) frees the chain on both loops alike; the compiled loop then runs without constraint
    equations."""
    system, state = four_bar()
    ball = system.get_matter_subsystem().get_constraint(0)
    a, b = twins(system, COMPILED_TWINS[name], lambda integ: integ.set_accuracy(1e-4))
    for integ in (a, b):
        integ.initialize(state)
    drive(a, b, [0.1])
    for integ in (a, b):
        ball.disable(integ.upd_advanced_state())
        integ.reinitialize(Stage.Instance)
    why = a.describe_fast_path()
    assert why.startswith("compiled time loop:") and "constraint equations" not in why, why
    with counting_compiled_steps() as compiled_steps:
        seen, ended = drive(a, b, [0.3])
    assert ended == "reached" and compiled_steps[0] > 0
    assert len(a.get_state().get_q_err()) == 0


@pytest.mark.parametrize("reinitialize", [True, False], ids=["reinitialized", "not-reinitialized"])
@pytest.mark.parametrize("name", ["RungeKuttaMerson", "Verlet"])
def test_a_motion_changed_mid_run_is_followed_alike(name, reinitialize):
    """Law: the driven four-bar's crank amplitude changed between ``step_to`` calls (an Instance-stage
    Property: every live State is invalidated) is followed by both loops alike, the compiled one taking
    its targets from the new plan, whether or not the integrator is then reinitialized."""
    system, state, motion = driven_four_bar(with_motion=True)
    a, b = twins(system, COMPILED_TWINS[name], lambda integ: integ.set_accuracy(1e-4))
    ended, compiled = drive_across_a_change(a, b, state, lambda: setattr(motion, "amplitude", 0.3), reinitialize,
                                            before=0.2)
    assert ended == "reached" and compiled > 0
    a_, w, p = 0.3, CRANK[1], CRANK[2]
    crank = a.get_state().get_q()[0]
    assert abs(crank - a_ * np.sin(w * 0.6 + p)) <= 2.0 * a.get_constraint_tolerance_in_use()


@pytest.mark.parametrize("name", ["Verlet", "SemiExplicitEuler", "RungeKuttaMerson"])
def test_a_diverging_constrained_run_fails_alike_and_leaves_a_good_state(name):
    """Law: a constrained run that diverges (the four-bar with a stiff spring and a fixed step far too
    large) raises the same error on both loops (divergence, a derivative that is not finite, or
    constraints that cannot be met) and leaves the advanced State at the last good step: finite and
    projected, never the step that could not be."""
    system, matter, forces, bodies = pin_chain(3)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    Force.MobilityLinearSpring(forces, bodies[0], 0, 1e7, 0.5)
    state = _start(system)
    a, b = twins(system, COMPILED_TWINS[name], lambda integ: integ.set_fixed_step_size(0.02))
    a.initialize(state)
    b.initialize(state)
    seen, ended = drive(a, b, [1.0, 2.0])  # compares the outcomes and the States after every call
    assert ended == "raised", seen[-1]
    assert seen[-1][0] in (SimulationDivergedError, NonFiniteDerivativeError, ConstraintViolationError), seen[-1]
    assert np.isfinite(a.get_advanced_state().get_y()).all()
    assert within_tolerance(a)  # the last good step, projected: not the step that could not be


def test_the_four_bar_keeps_its_closure_over_a_long_run():
    """The compiled loop's projection holds the four-bar closed over 3 s at accuracy 1e-3 (the
    closing errors stay within the tolerance, by the integrator's RMS norm, at every report), and its energy drifts no more than the
    integrator's accuracy allows (the loop is conservative: gravity only)."""
    system, state = four_bar()
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.set_accuracy(1e-3)
    integ.initialize(state)
    s = integ.get_state()
    e0 = system.calc_energy(s)
    scale = abs(system.calc_potential_energy(s)) + 9.81 * 3 * 1.0  # m g h over the chain's height
    with counting_compiled_steps() as compiled_steps:
        for t in np.linspace(0.25, 3.0, 12):
            integ.step_to(t)
            assert within_tolerance(integ)
    s = integ.get_state()
    assert compiled_steps[0] == integ.get_num_steps_taken()
    assert abs(system.calc_energy(s) - e0) <= 1e-2 * scale


def test_a_ball_loop_step_to_does_not_allocate_per_step():
    """Law: the constrained compiled loop allocates nothing per step (traced growth and peak of n and
    2n fixed steps are the same few KB)."""
    system, state = four_bar()
    integ = COMPILED_TWINS["SemiExplicitEuler"](system)
    integ.set_fixed_step_size(1e-3)
    integ.initialize(state)
    integ.step_to(0.05)
    traced_step_to(integ, 20, 1e-3)
    for _ in range(3):
        steps1, growth1, peak1 = traced_step_to(integ, 500, 1e-3)
        steps2, growth2, peak2 = traced_step_to(integ, 1000, 1e-3)
        if abs(growth2 - growth1) < 1024 and abs(peak2 - peak1) < 1024:
            break
    assert abs(steps1 - 500) <= 1 and abs(steps2 - 1000) <= 1
    assert max(growth1, growth2, peak1, peak2) < 8 * 1024, (growth1, growth2, peak1, peak2)
    assert abs(growth2 - growth1) < 1024 and abs(peak2 - peak1) < 1024


class _UserSum(Function):
    """u0 + u1 written in Python: a user's Function, which the core cannot evaluate."""

    def calc_value(self, x):
        return float(x[0]) + float(x[1])

    def calc_derivative(self, deriv_components, x):
        return 1.0 if len(deriv_components) == 1 else 0.0

    def get_argument_size(self):
        return 2

    def get_max_derivative_order(self):
        return 2


def test_other_constraint_kinds_are_solved_in_python_and_say_so():
    """A SpeedCoupler whose function is a user's (Python evaluates it; one of a built-in Function is
    solved by the loop itself: test_compiled_couplers.py) beside a Ball: the compiled loop evaluates the
    State's own realization (the matter's hooks solve the constraints in Python), and
    ``describe_fast_path`` names the kinds and the function that is not compiled; so does a Custom
    constraint, naming its kind."""
    system, matter, forces, bodies = pin_chain(3)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    Constraint.SpeedCoupler(matter, _UserSum(), bodies[:2], [0, 0])
    state = system.realize_topology()
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.initialize(state)
    why = integ.describe_fast_path()
    assert why.startswith("compiled time loop: ") and "(Ball, SpeedCoupler) are solved in Python" in why, why
    assert "_UserSum has no compiled form" in why, why
    assert "the matter subsystem's stage hooks" in why and "us per evaluation" in why, why
    system, matter, forces, bodies = pin_chain(3)
    Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
    Constraint.Custom(_HeldAcceleration(matter, bodies[0]))
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.initialize(system.realize_topology())
    why = integ.describe_fast_path()
    assert why.startswith("compiled time loop: ") and "(Ball, Custom) are solved in Python" in why, why
    assert "a Custom constraint is not compiled" in why, why


class _HeldAcceleration(Constraint.Custom.Implementation):
    """udot of one body held at zero (acceleration-only), in Python."""

    def __init__(self, matter, mobod):
        super().__init__(matter, 0, 0, 1)
        self.mobilizer = self.add_constrained_mobilizer(mobod)

    def realize_acceleration_errors(self, state, ma, aerr):
        aerr[0] = self.get_one_udot(state, self.mobilizer, 0)

    def apply_acceleration_constraint_forces(self, state, ma, multipliers, body_forces_in_a, mobility_forces):
        self.add_in_one_mobility_force(state, self.mobilizer, 0, multipliers[0], mobility_forces)


# ---------------------------------------------------------------------------------------------- the Newton step
@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 8), extra=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_the_least_norm_step_is_lstsq_s_for_full_row_rank(m, extra, seed):
    """The position projection's Newton step P^T (P P^T)^-1 r is the least-norm solution that LAPACK's
    least squares gives, to round-off relative to the condition of P P^T."""
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(m, m + extra))
    r = rng.normal(size=m)
    dx = _least_norm_step(P, r)
    ref = np.linalg.lstsq(P, r, rcond=None)[0]
    cond = np.linalg.cond(P) ** 2
    assume(cond < 1e6)
    tol = 64 * cond * np.finfo(float).eps * (np.linalg.norm(ref) + 1.0)
    assert np.linalg.norm(dx - ref) <= tol
    assert np.linalg.norm(P @ dx - r) <= 64 * cond * np.finfo(float).eps * (np.linalg.norm(r) + 1.0)


@pytest.mark.parametrize("m", [simtk_core.LAPACK_CHOLESKY_ABOVE + 1, 100])
def test_the_least_norm_step_above_the_threshold_is_lstsq_s(m):
    """With more rows than factor_kept's own loops take (LAPACK's dpotrf factors P P^T), the step is still
    the least-norm one, to round-off relative to the condition of P P^T."""
    rng = np.random.default_rng(m)
    P = rng.normal(size=(m, 2 * m))
    r = rng.normal(size=m)
    dx = _least_norm_step(P, r)
    ref = np.linalg.lstsq(P, r, rcond=None)[0]
    cond = np.linalg.cond(P) ** 2
    assert np.linalg.norm(dx - ref) <= 64 * m * cond * np.finfo(float).eps * (np.linalg.norm(ref) + 1.0)
    assert not np.array_equal(dx, ref)  # the premise: not lstsq's own answer (the compiled factor gave it)


def test_the_least_norm_step_falls_back_to_lstsq_when_rank_deficient():
    """Dependent rows (a Ball on a one-dof loop): the compiled factor refuses P P^T and the step is
    LAPACK's least-squares one, exactly."""
    rng = np.random.default_rng(3)
    P = rng.normal(size=(3, 5))
    P[2] = P[0] + 2.0 * P[1]
    r = rng.normal(size=3)
    assert np.array_equal(_least_norm_step(P, r), np.linalg.lstsq(P, r, rcond=None)[0])
