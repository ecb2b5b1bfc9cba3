"""A driven closed chain simulated by simtk's compiled time loop and by OpenSim's Manager: the same motion.

A planar chain of pin links (0.5 m, 1 kg, mass center at mid-length) hangs from Ground under
gravity; its tip is held where it starts by a ball-and-socket (simtk ``Constraint.Ball``, OpenSim
``PointConstraint``: Simbody's Ball) and one joint's angle is driven along q(t) = a sin(w t + p)
(simtk ``Motion.Sinusoid`` at Position level, which the compiled loop evaluates at each stage's time;
OpenSim a Coordinate prescribed by ``Sine(a, w, p, 0)``: Simbody's PrescribedMotion constraint).
Both start from the same State (simtk's projection of u = 0 onto the drive's speed and the loop's
velocity constraint) and run RK-Merson at the same accuracy; the angles and speeds at the end agree
to what that accuracy allows, which a drive evaluated at the wrong stage times, with the wrong
derivatives or not at all would miss by orders of magnitude.
"""
from __future__ import annotations

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from simtk import (  # noqa: E402
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator  # noqa: E402

LINK, MASS, COM, I_C = 0.5, 1.0, [0.0, -0.25, 0.0], [0.02, 0.001, 0.02]
TIP = [0.0, -LINK, 0.0]
ACCURACY = 1e-8
T_END = 0.5


def tip_position(q: np.ndarray) -> np.ndarray:
    """The tip station in Ground for pin angles q (the chain's planar forward kinematics)."""
    angles = np.cumsum(q)
    return LINK * np.array([np.sin(angles).sum(), -np.cos(angles).sum(), 0.0])


def simtk_chain(q0, drive):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(MASS, COM, Inertia(I_C)))
    links, parent = [], matter.ground
    for i in range(len(q0)):
        parent = MobilizedBody.Pin(parent, Transform([0, -LINK, 0]) if i else Transform(), body, Transform())
        links.append(parent)
    Constraint.Ball(matter.ground, tip_position(q0), links[-1], TIP)
    j, a, w, p = drive
    Motion.Sinusoid(links[j], Motion.Level.Position, a, w, p)
    state = system.realize_topology()
    state.set_q(q0)
    system.project(state, 1e-12)
    return system, state


def opensim_chain(q0, drive):
    model = osim.Model()
    model.setGravity(osim.Vec3(0, -9.81, 0))
    parent = model.getGround()
    for i in range(len(q0)):
        body = osim.Body(f"link{i}", MASS, osim.Vec3(*COM), osim.Inertia(*I_C))
        model.addBody(body)
        joint = osim.PinJoint(f"pin{i}", parent, osim.Vec3(0, -LINK if i else 0.0, 0), osim.Vec3(0, 0, 0),
                              body, osim.Vec3(0, 0, 0), osim.Vec3(0, 0, 0))
        joint.updCoordinate().setDefaultValue(float(q0[i]))
        model.addJoint(joint)
        parent = body
    model.addConstraint(osim.PointConstraint(model.getGround(), osim.Vec3(*tip_position(q0)), parent, osim.Vec3(*TIP)))
    j, a, w, p = drive
    coord = osim.PinJoint.safeDownCast(model.getJointSet().get(f"pin{j}")).updCoordinate()
    coord.setPrescribedFunction(osim.Sine(a, w, p, 0.0))
    coord.setDefaultIsPrescribed(True)
    state = model.initSystem()
    return model, state, [model.getCoordinateSet().get(i) for i in range(len(q0))]


@pytest.mark.parametrize("n", [5, 8])
def test_a_driven_closed_chain_moves_as_in_opensim(n):
    """Law: from the same start, simtk's compiled loop and OpenSim's Manager (RK-Merson, accuracy 1e-8)
    end a driven closed chain at the same angles and speeds, within 1e3 times the accuracy."""
    rng = np.random.default_rng(20 + n)
    q0 = rng.uniform(-0.5, 0.5, n)
    j = int(np.argmin(np.abs(q0)))
    a = max(0.2, 1.2 * abs(q0[j]))
    drive = (j, a, np.pi, float(np.arcsin(q0[j] / a)))
    system, state = simtk_chain(q0, drive)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(ACCURACY)
    integ.initialize(state)
    assert integ.describe_fast_path().startswith("compiled time loop:"), integ.describe_fast_path()
    integ.step_to(T_END)
    end = integ.get_state()

    model, ostate, coords = opensim_chain(q0, drive)
    s = osim.State(ostate)
    s.setTime(0.0)
    for c, q, u in zip(coords, state.get_q(), state.get_u()):
        c.setValue(s, float(q), False)
        c.setSpeedValue(s, float(u))
    manager = osim.Manager(model)
    manager.setIntegratorMethod(osim.Manager.IntegratorMethod_RungeKuttaMerson)
    manager.setIntegratorAccuracy(ACCURACY)
    manager.setWriteToStorage(False)
    manager.setRecordStatesTrajectory(False)
    manager.initialize(s)
    oend = manager.integrate(T_END)
    q_os = np.array([c.getValue(oend) for c in coords])
    u_os = np.array([c.getSpeedValue(oend) for c in coords])

    system.realize(end, Stage.Velocity)
    tol = 1e3 * ACCURACY
    np.testing.assert_allclose(end.get_q(), q_os, rtol=0, atol=tol)
    np.testing.assert_allclose(end.get_u(), u_os, rtol=0, atol=tol * (1.0 + np.abs(u_os).max()))
    assert abs(end.get_q()[j] - a * np.sin(np.pi * T_END + drive[3])) <= tol  # the drive holds
