"""A Custom mobilizer whose HDot reads its own qdot (issue 28): qdot is this realization's.

HDot is d/dt H(q) = (dH/dq) qdot, so an implementation naturally writes it with ``get_qdot(state)``.
The library used to fill qdot after calling ``multiply_by_h_dot_matrix``, which then read the qdot
of the previous realization (zero on a fresh State): the accelerations were silently wrong.

The mobilizer here is a pin about z whose body origin runs on a circle of radius L around the axis
(X_FM = (Rz(q), L (cos q, sin q, 0))), with qdot != u (u = 2 qdot), so
H u = (0, 0, u/2 | L/2 (-sin q, cos q, 0) u) and HDot u = L/2 (-cos q, -sin q, 0) qdot u. Its twin
writes qdot as u/2 from ``get_u``; the built-in reference is a Pin whose M frame is offset by L on
the body (the same motion, u scaled by 2).
"""
from __future__ import annotations

import numpy as np
import pytest
from circle_pin import CirclePin, L

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
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper
from tolerances import max_abs_diff, scale_of, tol

#: Two routes to the same forward dynamics of a three-body chain: a few hundred flops.
MARGIN = 512
#: Agreement after 0.5 s at accuracy 1e-10: integration error, not round-off.
TRAJECTORY_ATOL = 1e-7

BODY = Body.Rigid(MassProperties(1.3, [0.1, -0.2, 0.05], Inertia([0.4, 0.5, 0.3])))


class QdotFrom(CirclePin):
    """The circling pin; ``qdot_from`` is "qdot" (reads get_qdot, as the issue's user did) or "u"."""

    def __init__(self, matter, qdot_from: str):
        super().__init__(matter)
        self.qdot_from = qdot_from

    def _qdot(self, state) -> float:
        if self.qdot_from == "qdot":
            return super()._qdot(state)
        return 0.5 * float(self.get_u(state)[0])


def chain(kind: str):
    """Ground -> tilted circling pin (Custom reading qdot or u, or the built-in Pin) -> Pin -> Pin,
    under gravity: the first body's HDot u enters every body's acceleration."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    X_PF = Transform(Rotation(0.4, "x"), [0.1, 0.2, 0.0])
    if kind == "builtin":
        # M sits at -L along B's x: B's origin is L (cos q, sin q, 0) from F's origin.
        first = MobilizedBody.Pin(matter.ground, X_PF, BODY, Transform([-L, 0.0, 0.0]))
    else:
        first = MobilizedBody.Custom(matter.ground, X_PF, BODY, Transform(), QdotFrom(matter, kind))
    second = MobilizedBody.Pin(first, Transform(Rotation(0.3, "y"), [0.2, 0.3, 0.0]), BODY,
                               Transform([0.0, -0.4, 0.1]))
    MobilizedBody.Pin(second, Transform([0.0, -0.5, 0.2]), BODY, Transform([0.1, 0.3, 0.0]))
    state = system.realize_topology()
    return system, first, state


def put(system, first, state, kind: str, q, u) -> None:
    """The same motion in each model: the built-in Pin's u is qdot, the Custom's u is 2 qdot."""
    system.realize(state, Stage.Model)
    state.upd_q()[:] = q
    state.upd_u()[:] = u
    if kind != "builtin":
        state.upd_u()[0] = 2.0 * u[0]


def udot_same_motion(system, state, kind: str) -> np.ndarray:
    """udot in the built-in's units (the Custom's first udot halved)."""
    system.realize(state, Stage.Acceleration)
    udot = state.get_udot().copy()
    if kind != "builtin":
        udot[0] *= 0.5
    return udot


Q = np.array([0.6, -0.4, 0.9])
U = np.array([1.7, -0.8, 1.1])


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "python hooks"])
@pytest.mark.parametrize("kind", ["qdot", "u"])
def test_hdot_reading_qdot_gives_the_builtin_accelerations(kind, fused):
    """A fresh State, then a second realization at other speeds (the stale qdot would be the first's):
    both give the built-in Pin's accelerations to round-off, through the fused realization and
    through the stage hooks alone."""
    ref_sys, ref_first, ref = chain("builtin")
    system, first, state = chain(kind)
    if not fused:
        state._fused = False
    for u in (U, -2.0 * U):
        put(ref_sys, ref_first, ref, "builtin", Q, u)
        put(system, first, state, kind, Q, u)
        expected = udot_same_motion(ref_sys, ref, "builtin")
        actual = udot_same_motion(system, state, kind)
        scale = scale_of(expected, u ** 2)
        assert max_abs_diff(actual, expected) <= tol(scale, MARGIN), (kind, u, actual, expected)
        assert max_abs_diff(first.get_implementation().get_qdot(state), [0.5 * state.get_u()[0]]) == 0.0
    assert bool(state._fused) is fused


def test_velocity_hook_sees_this_realizations_qdot():
    """The implementation's realize_velocity runs after qdot = N u (and before HDot u)."""
    seen = []

    class Hooked(QdotFrom):
        def realize_velocity(self, state):
            seen.append(float(self.get_qdot(state)[0]))

    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = MobilizedBody.Custom(matter.ground, BODY, Hooked(matter, "qdot"))
    state = system.realize_topology()
    for u in (1.5, -3.0):
        body.set_u(state, [u])
        system.realize(state, Stage.Velocity)
        assert seen[-1] == 0.5 * u


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled loop", "python loop"])
def test_simulation_with_hdot_reading_qdot_follows_the_builtin(compiled):
    """An integrator's steps (its compiled loop, which realizes the State's Python parts, and its
    Python loop) follow the built-in Pin's trajectory."""
    out = {}
    for kind in ("builtin", "qdot"):
        system, first, state = chain(kind)
        put(system, first, state, kind, Q, U)
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-10)
        integ.set_use_compiled_loop(compiled)
        ts = TimeStepper(system, integ)
        ts.initialize(state)
        ts.step_to(0.5)
        s = ts.get_state()
        system.realize(s, Stage.Velocity)
        u = s.get_u().copy()
        if kind != "builtin":
            u[0] *= 0.5
        out[kind] = np.r_[s.get_q(), u]
    err = max_abs_diff(out["qdot"], out["builtin"])
    assert err <= TRAJECTORY_ATOL, (out["qdot"], out["builtin"])
