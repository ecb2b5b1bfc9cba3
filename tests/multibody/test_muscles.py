"""Force.Thelen2003Muscle against OpenSim 4.6's Thelen2003Muscle, and its laws checked by other means.

Laws checked:
- on a tug-of-war (a block on a slider between two muscles, one pennated) built alike with OpenSim's
  API and simtk's, at random poses, speeds, activations and excitations, with fibers equilibrated on
  both sides: fiber lengths, tendon forces (to 1e-6 of F_max), fiber velocities, activation and
  fiber-length derivatives, and the coordinate's acceleration (1e-6 relative);
- equilibrium means what it says: at the equilibrated fiber length of a static muscle, the fiber force
  along the tendon equals the tendon force and the fiber velocity is zero;
- the tension is applied along the path: the generalized force equals -T dL/dq (a central difference);
- bad input (a negative optimal fiber length, an excitation outside [0, 1]) is refused naming the
  muscle, before anything changes.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from simtk import (
    Force,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MultibodySystem,
    PathPoint,
    SimbodyMatterSubsystem,
    Stage,
)
from simtk.multibody.forces.muscles import equilibrate_muscles
from simtk.spatial import Body, MassProperties, Transform

EPS = np.finfo(float).eps
FMAX = 1000.0
#: (name, origin in ground, pennation at optimal, optimal fiber length, tendon slack length)
MUSCLES = (("left", (-0.3, 0.15, 0.02), 0.0, 0.1, 0.2), ("right", (0.32, 0.1, -0.03), 0.2, 0.12, 0.19))
GRAVITY = (0.0, -9.81, 0.0)


def _simtk_model():
    system = MultibodySystem("tug")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, GRAVITY)
    block = MobilizedBody.Slider(matter.ground, Transform(p=[0.0, 0.05, 0.0]),
                                 Body.Rigid(MassProperties(20.0, [0.0, 0.0, 0.0], np.diag([0.1, 0.1, 0.1]))),
                                 Transform())
    muscles = []
    for name, origin, pen, lopt, lts in MUSCLES:
        path = GeometryPath(matter, [PathPoint(matter.ground, origin), PathPoint(block, [0.0, 0.0, 0.0])], name=name)
        muscles.append(Force.Thelen2003Muscle(forces, path, FMAX, lopt, lts, pen, name=name))
    return system, matter, block, muscles


def _opensim_model(osim, excitations):
    m = osim.Model()
    m.setName("tug")
    m.setGravity(osim.Vec3(*GRAVITY))
    b = osim.Body("block", 20.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
    m.addBody(b)
    m.addJoint(osim.SliderJoint("slider", m.getGround(), osim.Vec3(0, 0.05, 0), osim.Vec3(0), b, osim.Vec3(0),
                                osim.Vec3(0)))
    controller = osim.PrescribedController()
    for (name, origin, pen, lopt, lts), e in zip(MUSCLES, excitations):
        mu = osim.Thelen2003Muscle(name, FMAX, lopt, lts, pen)
        mu.addNewPathPoint("origin", m.getGround(), osim.Vec3(*origin))
        mu.addNewPathPoint("insertion", b, osim.Vec3(0))
        m.addForce(mu)
        controller.addActuator(mu)
        controller.prescribeControlForActuator(name, osim.Constant(e))
    m.addController(controller)
    return m


@pytest.mark.parametrize("seed", range(4))
def test_thelen_matches_opensim(seed):
    """Equilibrated fibers at a random pose, speed, activations and excitations: the same fiber
    lengths, tendon forces, derivatives and acceleration as OpenSim's."""
    osim = pytest.importorskip("opensim")
    rng = np.random.default_rng(seed)
    q, u = rng.uniform(-0.03, 0.03), rng.uniform(-0.2, 0.2) if seed else 0.0
    acts = rng.uniform(0.05, 1.0, 2)
    excs = rng.uniform(0.0, 1.0, 2)
    m = _opensim_model(osim, excs)
    s = m.initSystem()
    coord = m.getCoordinateSet().get(0)
    coord.setValue(s, q)
    coord.setSpeedValue(s, u)
    oms = [m.getMuscles().get(name) for name, *_ in MUSCLES]
    for mu, a in zip(oms, acts):
        mu.setActivation(s, a)
    m.equilibrateMuscles(s)
    m.realizeAcceleration(s)

    system, matter, block, muscles = _simtk_model()
    state = system.realize_topology()
    block.set_one_q(state, 0, q)
    block.set_one_u(state, 0, u)
    for mu, a, e in zip(muscles, acts, excs):
        mu.set_activation(state, a)
        mu.set_excitation(state, e)
    equilibrate_muscles(system, state)
    system.realize(state, Stage.Acceleration)

    for om, mu in zip(oms, muscles):
        name = mu.get_name()
        assert mu.get_length(state) == pytest.approx(om.getLength(s), abs=1e-12)
        assert mu.get_fiber_length(state) == pytest.approx(om.getFiberLength(s), abs=1e-9), name
        assert abs(mu.get_tendon_force(state) - om.getTendonForce(s)) <= 1e-6 * FMAX, name
        assert mu.get_fiber_velocity(state) == pytest.approx(om.getFiberVelocity(s), abs=1e-7), name
        path = om.getAbsolutePathString()
        for var in ("activation", "fiber_length"):
            want = m.getStateVariableDerivativeValue(s, f"{path}/{var}")
            got = mu.get_state_variable_derivative(state, var)
            assert got == pytest.approx(want, rel=1e-6, abs=1e-8), (name, var)
    udot_os = s.getUDot().get(0)
    udot = matter.get_udot(state)[0]
    assert abs(udot - udot_os) <= 1e-6 * max(1.0, abs(udot_os))


def test_equilibrium_balances_fiber_and_tendon():
    """A static muscle equilibrated: fiber force along the tendon = tendon force, fiber at rest."""
    system, matter, block, muscles = _simtk_model()
    state = system.realize_topology()
    block.set_one_q(state, 0, 0.01)
    for mu, a in zip(muscles, (0.3, 0.8)):
        mu.set_activation(state, a)
    equilibrate_muscles(system, state)
    system.realize(state, Stage.Velocity)
    for mu in muscles:
        along = mu.get_fiber_force(state) * math.cos(mu.get_pennation_angle(state))
        assert abs(along - mu.get_tendon_force(state)) <= 1e-8 * FMAX * 10
        assert abs(mu.get_fiber_velocity(state)) <= 1e-6
        assert mu.get_tendon_force(state) > 0.0


def test_tension_applied_along_path():
    """The muscle's generalized force is -T dL/dq (virtual work), dL/dq by a central difference."""
    system, matter, block, muscles = _simtk_model()
    state = system.realize_topology()
    muscles[1].disable(state)
    system.get_force_subsystems()[0].get_force(0).disable(state)  # gravity
    q0 = 0.013
    block.set_one_q(state, 0, q0)
    muscles[0].set_activation(state, 0.6)
    equilibrate_muscles(system, state)
    system.realize(state, Stage.Velocity)
    bf, mf = muscles[0].calc_force_contribution(state)
    gen = matter.multiply_by_system_jacobian_transpose(state, bf) + mf
    h = 1e-6
    lengths = []
    for dq in (h, -h):
        block.set_one_q(state, 0, q0 + dq)
        system.realize(state, Stage.Position)
        lengths.append(muscles[0].get_length(state))
    block.set_one_q(state, 0, q0)
    system.realize(state, Stage.Velocity)
    dLdq = (lengths[0] - lengths[1]) / (2 * h)
    T = muscles[0].get_tendon_force(state)
    assert gen[0] == pytest.approx(-T * dLdq, rel=1e-7)


def test_bad_input_refused_naming_the_muscle():
    system, matter, block, muscles = _simtk_model()
    forces = system.get_force_subsystems()[0]
    n = forces.get_num_forces()
    path = GeometryPath(matter, [PathPoint(matter.ground, [0.0, 0.1, 0.0]), PathPoint(block, [0.0, 0.0, 0.0])])
    with pytest.raises(ValueError, match=r"'soleus'.*optimal_fiber_length"):
        Force.Thelen2003Muscle(forces, path, FMAX, -0.1, 0.2, name="soleus")
    with pytest.raises(ValueError, match=r"'soleus'.*excitation"):
        Force.Thelen2003Muscle(forces, path, FMAX, 0.1, 0.2, name="soleus", excitation=1.5)
    assert forces.get_num_forces() == n
    state = system.realize_topology()
    before = muscles[0].get_excitation(state)
    with pytest.raises(ValueError, match=r"left.*\[0, 1\]"):
        muscles[0].set_excitation(state, -0.2)
    assert muscles[0].get_excitation(state) == before


def test_forward_simulation_matches_opensim_manager():
    """0.2 s under constant excitations from equilibrated fibers: the block's coordinate, the
    activations and fiber lengths as OpenSim's Manager (RK-Merson, accuracy 1e-8) leaves them; the
    steps are the compiled loop's, calling the muscles' law as its one Python part."""
    osim = pytest.importorskip("opensim")
    from simtk import RungeKuttaMersonIntegrator, TimeStepper
    excs = (0.9, 0.2)
    acts = (0.1, 0.5)
    m = _opensim_model(osim, excs)
    s = m.initSystem()
    oms = [m.getMuscles().get(name) for name, *_ in MUSCLES]
    for mu, a in zip(oms, acts):
        mu.setActivation(s, a)
    m.equilibrateMuscles(s)
    manager = osim.Manager(m)
    manager.setIntegratorAccuracy(1e-8)
    manager.initialize(s)
    end = manager.integrate(0.2)
    q_os = m.getCoordinateSet().get(0).getValue(end)

    system, matter, block, muscles = _simtk_model()
    state = system.realize_topology()
    for mu, a, e in zip(muscles, acts, excs):
        mu.set_activation(state, a)
        mu.set_excitation(state, e)
    equilibrate_muscles(system, state)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    assert "compiled time loop" in integ.describe_fast_path()
    ts.step_to(0.2)
    final = ts.get_state()
    assert abs(q_os) > 1e-3  # the block moved
    assert block.get_one_q(final, 0) == pytest.approx(q_os, abs=1e-6)
    for om, mu in zip(oms, muscles):
        assert mu.get_activation(final) == pytest.approx(om.getActivation(end), abs=1e-6)
        assert mu.get_fiber_length(final) == pytest.approx(om.getFiberLength(end), abs=1e-6)
