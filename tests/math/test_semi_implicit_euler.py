"""SemiImplicitEulerIntegrator: the linearization against finite differences, stability where the
explicit step fails, first-order accuracy, and what it refuses. (Its compiled loop against its Python
path, bitwise on random models, is in test_compiled_loop.py with the other compiled twins.)"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from simtk import Stage
from simtk.math import (
    IntegratorError,
    RungeKuttaMersonIntegrator,
    SemiExplicitEulerIntegrator,
    SemiImplicitEulerIntegrator,
    SimulationDivergedError,
    TimeStepper,
)
from simtk.multibody import (
    Constraint,
    ContactGeometry,
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Rotation, Transform
from tolerances import EPS

#: The floor z < 0 as a HalfSpace frame (its x axis, the inward normal, along -z).
FLOOR = Transform(Rotation.from_matrix(np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])), [0, 0, 0])


def legged(transition_velocity: float = 0.05):
    """A free torso (a sphere under it) with a pinned leg (a sphere at its foot; spring, damper and a
    stop on the pin) on a stiff Hunt-Crossley floor; returns (system, contact, torso, leg)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, 0, -9.81])
    torso = MobilizedBody.Free(matter.ground, Transform(), Body.Rigid(MassProperties(2.0, [0, 0, 0],
                               Inertia([0.02, 0.03, 0.04]))), Transform(), name="torso")
    leg = MobilizedBody.Pin(torso, Transform(Rotation(math.pi / 2, [1, 0, 0]), [0.1, 0, 0]),
                            Body.Rigid(MassProperties(0.3, [0, -0.04, 0], Inertia([0.002, 0.0005, 0.002]))),
                            Transform(), name="leg")
    Force.MobilityLinearSpring(forces, leg, 0, 5.0, 0.1)
    Force.MobilityLinearDamper(forces, leg, 0, 0.5)
    Force.MobilityLinearStop(forces, leg, 0, 200.0, 0.3, -0.2, 0.2)
    hc = Force.HuntCrossley(forces, transition_velocity=transition_velocity)
    law = dict(stiffness=1e7, dissipation=2.0, static_friction=0.9, dynamic_friction=0.6, viscous_friction=0.2)
    hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), FLOOR, **law)
    hc.add_surface(torso, ContactGeometry.Sphere(0.05), Transform([-0.1, 0.0, -0.05]), **law)
    hc.add_surface(leg, ContactGeometry.Sphere(0.03), Transform([0.0, -0.07, 0.0]), **law)
    return system, hc, torso, leg


def _udot_jacobians(system, state, contact, on: bool):
    """(-M d udot/du, -M d udot/dq N) by central differences at ``state`` (contact on or off)."""
    matter = system.get_matter_subsystem()
    s = state.copy() if hasattr(state, "copy") else state
    if not on:
        contact.disable(s)
    system.realize(s, Stage.Acceleration)
    q0, u0 = np.array(s.get_q()), np.array(s.get_u())
    nu = len(u0)

    def udot(q, u):
        s.upd_q()[:] = q
        s.upd_u()[:] = u
        system.realize(s, Stage.Acceleration)
        return np.array(s.get_udot())

    Du, Dq = np.zeros((nu, nu)), np.zeros((nu, nu))
    eps = 1e-6
    for j in range(nu):
        e = np.zeros(nu)
        e[j] = eps
        Du[:, j] = (udot(q0, u0 + e) - udot(q0, u0 - e)) / (2 * eps)
        # a position change along u_j: q moves by N e
        s.upd_q()[:] = q0
        s.upd_u()[:] = e
        system.realize(s, Stage.Velocity)
        dq = np.array(s.get_qdot())
        Dq[:, j] = (udot(q0 + dq, u0) - udot(q0 - dq, u0)) / (2 * eps)
    udot(q0, u0)
    M = np.column_stack([matter.multiply_by_m(s, np.eye(nu)[j]) for j in range(nu)])
    return -M @ Du, -M @ Dq


def _state_in_contact(system, torso, leg, slip: float):
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    q = state.upd_q()  # Free: (quaternion, p_GB), u: (w, v) in Ground; then the leg's angle and rate
    q[4:7] = [0.0, 0.0, 0.0999]  # the torso's sphere 0.1 mm into the floor, the foot's less
    q[7] = 0.05
    u = state.upd_u()
    u[:] = 0.0
    u[3:5] = [slip, 0.3 * slip]
    return state


@pytest.mark.parametrize("slip", [0.0, 0.02, 0.5])
def test_damping_matrix_is_the_forces_derivative_in_speed(slip):
    """D = -dQ/du of the linearization equals the contact's, spring's, damper's and stop's derivative
    by central differences (M d udot/du with the contact on, less with it off: the Coriolis terms
    cancel), at rest (the friction law's slope at zero), slipping below the transition speed, and
    sliding (where Stribeck's falling part is left out: compared on what it keeps)."""
    system, hc, torso, leg = legged()
    state = _state_in_contact(system, torso, leg, slip)
    integ = SemiImplicitEulerIntegrator(system, 0.01)
    integ.initialize(state)
    s = integ.get_advanced_state()
    D, K = integ._linearizer().matrices(np.array(s.get_q()), np.array(s.get_u()))
    D_on, _ = _udot_jacobians(system, s.copy(), hc, True)
    D_off, _ = _udot_jacobians(system, s.copy(), hc, False)
    D_fd = D_on - D_off
    # the joint's damper is in both runs: add it back from the difference of the full derivative
    D_fd[6, 6] += 0.5
    scale = np.abs(D_fd).max()
    if slip == 0.5:
        # sliding above the transition speed: dynamic friction with viscous 0.2, Stribeck falling part
        # clamped; the normal and the across-slip parts are exact
        normal = np.abs(D - D_fd).max()
        assert normal <= 0.05 * scale, (normal, scale)
    else:
        assert np.abs(D - D_fd).max() <= 1e-6 * scale, np.abs(D - D_fd).max() / scale
    assert scale > 1.0  # (the contact is on)


def test_stiffness_matrix_is_the_forces_derivative_in_position():
    """K = -(dQ/dq) N equals the central differences' up to what it leaves out by design (the change
    of the contact point's lever arm and of the gravity torque: small beside the contact's stiffness)."""
    system, hc, torso, leg = legged()
    state = _state_in_contact(system, torso, leg, 0.0)
    integ = SemiImplicitEulerIntegrator(system, 0.01)
    integ.initialize(state)
    s = integ.get_advanced_state()
    _, K = integ._linearizer().matrices(np.array(s.get_q()), np.array(s.get_u()))
    _, K_on = _udot_jacobians(system, s.copy(), hc, True)
    scale = np.abs(K_on).max()
    assert scale > 1e4
    assert np.abs(K - K_on).max() <= 0.02 * scale, np.abs(K - K_on).max() / scale
    # the leg's spring and stop stiffness (its coordinate is within the stop's range: spring only)
    assert K[6, 6] == pytest.approx(K_on[6, 6], rel=0.02)


def test_stiff_contact_at_10_ms_where_semi_explicit_euler_diverges():
    """The legged body dropped on the stiff floor (10^7 N/m^1.5) at 10 ms steps: semi-explicit Euler
    diverges; semi-implicit Euler lands, settles at rest on the floor and stays finite."""
    system, hc, torso, leg = legged()
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.upd_q()[4:7] = [0.0, 0.0, 0.3]
    explicit = TimeStepper(system, SemiExplicitEulerIntegrator(system, 0.01))
    explicit.initialize(state)
    with pytest.raises(SimulationDivergedError):
        explicit.step_to(3.0)
    implicit = TimeStepper(system, SemiImplicitEulerIntegrator(system, 0.01))
    implicit.initialize(state)
    implicit.step_to(3.0)
    end = implicit.get_state()
    system.realize(end, Stage.Velocity)
    assert np.isfinite(end.get_y()).all()
    assert np.abs(end.get_u()).max() < 1e-3  # at rest
    p = torso.get_body_transform(end).p
    assert 0.03 < p[2] < 0.12, p  # resting on its sphere (radius 0.05, 5 cm below the origin) and its foot


def _pendulum(damping: float):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    pin = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0],
                            Inertia([0.01, 0.01, 0.01]))), Transform(), name="link")
    Force.MobilityLinearDamper(forces, pin, 0, damping)
    Force.MobilityLinearSpring(forces, pin, 0, 3.0, 0.2)
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    pin.set_one_q(state, 0, 1.0)
    return system, state


def test_first_order_accuracy():
    """On a smooth damped pendulum the error at t = 1 s halves with the step (order 1), and is the size of
    semi-explicit Euler's (the same step with the forces' change over it linearized)."""
    system, state = _pendulum(0.4)
    ref = TimeStepper(system, RungeKuttaMersonIntegrator(system))
    ref.get_integrator().set_accuracy(1e-11)
    ref.initialize(state)
    ref.step_to(1.0)
    y_ref = np.array(ref.get_state().get_y())
    errors, explicit = [], []
    for h in (0.01, 0.005, 0.0025, 0.00125):
        for cls, out in ((SemiImplicitEulerIntegrator, errors), (SemiExplicitEulerIntegrator, explicit)):
            ts = TimeStepper(system, cls(system, h))
            ts.initialize(state)
            ts.step_to(1.0)
            out.append(np.abs(np.array(ts.get_state().get_y()) - y_ref).max())
    ratios = [a / b for a, b in zip(errors, errors[1:])]
    assert all(1.8 < r < 2.2 for r in ratios), ratios
    assert all(0.2 < a / b < 5.0 for a, b in zip(errors, explicit)), (errors, explicit)


def test_a_stiff_damper_is_stable_and_dissipative():
    """A damper 10^4 times what the explicit step tolerates (h c / I = 4e4 at 10 ms): semi-implicit Euler's
    energy never grows and the pendulum comes to rest at the spring's and gravity's balance."""
    system, state = _pendulum(1e3)
    ts = TimeStepper(system, SemiImplicitEulerIntegrator(system, 0.01))
    ts.initialize(state)
    energies = []
    for k in range(1, 41):
        ts.step_to(0.05 * k)
        s = ts.get_state()
        system.realize(s, Stage.Dynamics)
        energies.append(system.calc_energy(s))
    assert all(b <= a + 1e3 * EPS * abs(a) for a, b in zip(energies, energies[1:])), energies
    explicit = TimeStepper(system, SemiExplicitEulerIntegrator(system, 0.01))
    explicit.initialize(state)
    with pytest.raises(SimulationDivergedError):
        explicit.step_to(2.0)


def test_a_pickled_integrator_goes_on_as_the_original():
    """Pickled mid-run (its compiled solve is not pickled but built again), a copy ends where the original
    does, bitwise."""
    import pickle
    system, hc, torso, leg = legged()
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.upd_q()[4:7] = [0.0, 0.0, 0.2]
    ts = TimeStepper(system, SemiImplicitEulerIntegrator(system, 0.005))
    ts.initialize(state)
    ts.step_to(0.3)
    copy = pickle.loads(pickle.dumps(ts))
    ts.step_to(0.6)
    copy.step_to(0.6)
    assert np.array_equal(ts.get_state().get_y(), copy.get_state().get_y())


def test_refusals_name_what_the_step_cannot_do():
    """Constraint equations and a missing step size are refused with the reason, before stepping."""
    with pytest.raises(IntegratorError, match="fixed step size"):
        SemiImplicitEulerIntegrator(_pendulum(0.1)[0], None)  # type: ignore[arg-type]
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia([0.1, 0.1, 0.1])))
    a = MobilizedBody.Pin(matter.ground, Transform(), body, Transform([0, 0.5, 0]), name="a")
    b = MobilizedBody.Pin(a, Transform([0, -0.5, 0]), body, Transform([0, 0.5, 0]), name="b")
    Constraint.Ball(matter.ground, [0.5, -1.0, 0], b, [0, -0.5, 0])
    state = system.realize_topology()
    integ = SemiImplicitEulerIntegrator(system, 0.01)
    with pytest.raises(IntegratorError, match="constraint equations"):
        integ.initialize(state)
        integ.step_to(0.1)


@pytest.mark.skipif(importlib.util.find_spec("gymnasium") is None, reason="gymnasium is not installed")
@pytest.mark.parametrize("name", ["half_cheetah", "hopper", "walker2d", "ant"])
def test_gymnasium_models_at_their_own_10_ms_step(name):
    """The gymnasium MJCF models with contact (loaded with contact=True) dropped from their default pose
    run 2 s at their own time step with zero controls: semi-explicit Euler diverges, semi-implicit Euler
    ends finite and nearly at rest on the floor."""
    import warnings

    from simtk.io import load_mjcf
    from simtk.simulation import Simulation
    spec = importlib.util.find_spec("gymnasium")
    path = Path(spec.origin).parent / "envs/mujoco/assets" / f"{name}.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_mjcf(path, contact=True)
    assert model.timestep == pytest.approx(0.01) or model.timestep == pytest.approx(0.002)
    h = 0.01
    sim = Simulation(model.system, model.default_state(), integrator=SemiImplicitEulerIntegrator(model.system, h),
                     step_size=0.5)
    sim.run(2.0)
    qpos, qvel = model.state_to_mujoco(sim.get_state())
    assert np.isfinite(qpos).all() and np.isfinite(qvel).all()
    assert np.abs(qvel).max() < (10.0 if name == "hopper" else 0.1), np.abs(qvel).max()
    explicit = Simulation(model.system, model.default_state(),
                          integrator=SemiExplicitEulerIntegrator(model.system, h), step_size=0.5)
    with pytest.raises(SimulationDivergedError):
        explicit.run(2.0)
