"""Force.Millard2012EquilibriumMuscle and Force.DeGrooteFregly2016Muscle against OpenSim 4.6, and
their laws checked by other means.

Laws checked:
- each Millard curve (active and passive force-length, force-velocity and its inverse, tendon), with
  default and non-default parameters, equals OpenSim's calcValue / calcDerivative(x, 1) at random x
  inside and outside the Bézier range, to the tolerance of OpenSim's own inverse of x(u);
- on a tug-of-war (a block on a slider between two muscles, one pennated) built alike with OpenSim's
  API and simtk's, at random poses, speeds, activations and excitations, with fibers equilibrated on
  both sides, for every tendon/damping option: fiber lengths, tendon forces (1e-6 of F_max), fiber
  velocities, the state derivatives, and the coordinate's acceleration (1e-6 relative);
- a 0.2 s forward simulation under constant excitations ends where OpenSim's Manager does;
- equilibrium means what it says (fiber force along the tendon = tendon force, for a static muscle);
- the tension is applied along the path: the generalized force is -T dL/dq (a central difference);
- bad input is refused naming the muscle, before anything changes.
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
from simtk.multibody.forces import _bezier
from simtk.multibody.forces.muscles import equilibrate_muscles
from simtk.spatial import Body, MassProperties, Transform

EPS = np.finfo(float).eps
#: OpenSim stops its Newton inverse of x(u) at |x(u) - x| <= 100 eps (SmoothSegmentedFunction's UTOL)
UTOL = 100 * EPS
FMAX = 1000.0
#: (name, origin in ground, pennation at optimal, optimal fiber length, tendon slack length)
MUSCLES = (("left", (-0.3, 0.15, 0.02), 0.0, 0.1, 0.2), ("right", (0.32, 0.1, -0.03), 0.2, 0.12, 0.19))
GRAVITY = (0.0, -9.81, 0.0)
MILLARD, DGF = "Millard2012EquilibriumMuscle", "DeGrooteFregly2016Muscle"
#: (kind, options) cases run against OpenSim
CASES = [(MILLARD, {}), (MILLARD, {"fiber_damping": 0.0}), (MILLARD, {"ignore_tendon_compliance": True}),
         (MILLARD, {"fiber_damping": 0.0, "ignore_tendon_compliance": True}), (DGF, {}),
         (DGF, {"ignore_tendon_compliance": True}), (DGF, {"fiber_damping": 0.05}),
         (DGF, {"ignore_passive_fiber_force": True, "active_force_width_scale": 1.5})]


# ---------------------------------------------------------------------- curves
def _curve_pairs(osim):
    fv = (0.0, 0.25, 5.0, 0.0, 0.15, 1.4, 0.6, 0.9)
    fv2 = (0.1, 0.3, 4.0, 0.05, 0.2, 1.6, 0.3, 0.7)
    return [
        ("fal", osim.ActiveForceLengthCurve(), _bezier.active_force_length(0.47 - 0.0259, 0.73, 1.8123, 0.8616, 0.1),
         (0.2, 2.0)),
        ("fal2", osim.ActiveForceLengthCurve(0.5, 0.75, 1.7, 0.5, 0.0),
         _bezier.active_force_length(0.5, 0.75, 1.7, 0.5, 0.0), (0.2, 2.0)),
        ("fpe", osim.FiberForceLengthCurve(), _bezier.fiber_force_length(0.0, 0.7), (0.8, 2.0)),
        ("fpe2", osim.FiberForceLengthCurve(-0.1, 0.6, 0.3, 3.0, 0.4),
         _bezier.fiber_force_length(-0.1, 0.6, 0.3, 3.0, 0.4), (0.8, 2.0)),
        ("fse", osim.TendonForceLengthCurve(), _bezier.tendon_force_length(0.049), (0.98, 1.08)),
        ("fse2", osim.TendonForceLengthCurve(0.04, 40.0, 0.6, 0.7), _bezier.tendon_force_length(0.04, 40.0, 0.6, 0.7),
         (0.98, 1.08)),
        ("fv", osim.ForceVelocityCurve(), _bezier.force_velocity(*fv), (-1.2, 1.2)),
        ("fv2", osim.ForceVelocityCurve(*fv2), _bezier.force_velocity(*fv2), (-1.2, 1.2)),
        ("fvinv", osim.ForceVelocityInverseCurve(), _bezier.force_velocity_inverse(0.1, 0.25, 5.0, 0.1, 0.15, 1.4, 0.6,
                                                                                     0.9), (-0.1, 1.5)),
    ]


def test_bezier_curves_match_opensim():
    """y and dy/dx as OpenSim's: both sides solve x(u) = x to UTOL, so y agrees to a few UTOL times
    |dy/dx| and dy/dx to a few UTOL times |d2y/dx2| / |dx/du| (bounded here by 1e3 UTOL (1 + |y''|))."""
    osim = pytest.importorskip("opensim")
    rng = np.random.default_rng(0)
    for name, oc, mc, (lo, hi) in _curve_pairs(osim):
        for x in np.concatenate([rng.uniform(lo, hi, 200), [mc.x0, mc.x1]]):
            x = float(x)
            y, dy = mc.value_and_slope(x)
            assert abs(y - oc.calcValue(x)) <= 10 * UTOL * max(1.0, abs(dy)), (name, x)
            tol = 1e3 * UTOL * (1.0 + abs(mc.curvature(x)))
            assert abs(dy - oc.calcDerivative(x, 1)) <= tol * max(1.0, abs(dy)), (name, x)


def test_bezier_slope_is_the_derivative_of_the_value():
    """dy/dx against a central difference of y, and the sections join with continuous value and slope."""
    c = _bezier.active_force_length(0.4441, 0.73, 1.8123, 0.8616, 0.1)
    h = 1e-6
    for x in np.linspace(0.45, 1.8, 97):
        fd = (c.value(x + h) - c.value(x - h)) / (2 * h)
        # truncation h^2 |y'''| / 6 with |y'''| < 1e4 here, plus rounding eps / h
        assert abs(c.slope(x) - fd) <= 1e4 * h * h + 10 * EPS / h
    for px, py in zip(c.px[:-1], c.py[:-1]):
        x = px[5]
        assert c.value(x - 1e-12) == pytest.approx(c.value(x), abs=1e-10)
        assert c.slope(x - 1e-12) == pytest.approx(c.slope(x), abs=1e-8)


# ---------------------------------------------------------------------- tug of war
def _simtk_model(kind, options):
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
        muscles.append(getattr(Force, kind)(forces, path, FMAX, lopt, lts, pen, name=name, **options))
    return system, matter, block, muscles


def _opensim_model(osim, kind, options, excitations):
    m = osim.Model()
    m.setGravity(osim.Vec3(*GRAVITY))
    b = osim.Body("block", 20.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
    m.addBody(b)
    m.addJoint(osim.SliderJoint("slider", m.getGround(), osim.Vec3(0, 0.05, 0), osim.Vec3(0), b, osim.Vec3(0),
                                osim.Vec3(0)))
    controller = osim.PrescribedController()
    for (name, origin, pen, lopt, lts), e in zip(MUSCLES, excitations):
        mu = getattr(osim, kind)()
        mu.setName(name)
        mu.set_max_isometric_force(FMAX)
        mu.set_optimal_fiber_length(lopt)
        mu.set_tendon_slack_length(lts)
        mu.set_pennation_angle_at_optimal(pen)
        for k, v in options.items():
            getattr(mu, "set_" + k)(v)
        mu.addNewPathPoint("origin", m.getGround(), osim.Vec3(*origin))
        mu.addNewPathPoint("insertion", b, osim.Vec3(0))
        m.addForce(mu)
        controller.addActuator(mu)
        controller.prescribeControlForActuator(name, osim.Constant(e))
    m.addController(controller)
    return m


@pytest.mark.parametrize("kind, options", CASES, ids=[f"{k[:6]}-{'-'.join(o) or 'default'}" for k, o in CASES])
@pytest.mark.parametrize("seed", range(3))
def test_matches_opensim(kind, options, seed):
    """Equilibrated fibers at a random pose, speed, activations and excitations: the same fiber
    lengths, tendon forces, fiber velocities, state derivatives and acceleration as OpenSim's."""
    osim = pytest.importorskip("opensim")
    rng = np.random.default_rng(seed)
    q, u = rng.uniform(-0.03, 0.03), rng.uniform(-0.2, 0.2) if seed else 0.0
    acts = rng.uniform(0.05, 1.0, 2)
    excs = rng.uniform(0.0, 1.0, 2)
    m = _opensim_model(osim, kind, options, excs)
    s = m.initSystem()
    coord = m.getCoordinateSet().get(0)
    coord.setValue(s, q)
    coord.setSpeedValue(s, u)
    oms = [m.getMuscles().get(name) for name, *_ in MUSCLES]
    for mu, a in zip(oms, acts):
        mu.setActivation(s, a)
    m.equilibrateMuscles(s)
    m.realizeAcceleration(s)

    system, matter, block, muscles = _simtk_model(kind, options)
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
        all_names = m.getStateVariableNames()
        names = [all_names.get(i).rpartition("/")[2] for i in range(all_names.getSize())
                 if all_names.get(i).startswith(path + "/")]
        assert set(names) == set(mu.get_state_variable_names())
        for var in names:
            want = m.getStateVariableDerivativeValue(s, f"{path}/{var}")
            got = mu.get_state_variable_derivative(state, var)
            assert got == pytest.approx(want, rel=1e-6, abs=1e-8), (name, var)
    udot_os = s.getUDot().get(0)
    udot = matter.get_udot(state)[0]
    assert abs(udot - udot_os) <= 1e-6 * max(1.0, abs(udot_os))


@pytest.mark.parametrize("kind, options", [(MILLARD, {}), (DGF, {})], ids=["millard", "degroote"])
def test_forward_simulation_matches_opensim_manager(kind, options):
    """0.2 s under constant excitations from equilibrated fibers: the block's coordinate and the
    muscles' states as OpenSim's Manager (RK-Merson, accuracy 1e-8) leaves them."""
    osim = pytest.importorskip("opensim")
    from simtk import RungeKuttaMersonIntegrator, TimeStepper
    excs, acts = (0.9, 0.2), (0.1, 0.5)
    m = _opensim_model(osim, kind, options, excs)
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

    system, matter, block, muscles = _simtk_model(kind, options)
    state = system.realize_topology()
    for mu, a, e in zip(muscles, acts, excs):
        mu.set_activation(state, a)
        mu.set_excitation(state, e)
    equilibrate_muscles(system, state)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(0.2)
    final = ts.get_state()
    assert abs(q_os) > 1e-3  # the block moved
    assert block.get_one_q(final, 0) == pytest.approx(q_os, abs=1e-6)
    for om, mu in zip(oms, muscles):
        assert mu.get_activation(final) == pytest.approx(om.getActivation(end), abs=1e-6)
        assert mu.get_fiber_length(final) == pytest.approx(om.getFiberLength(end), abs=1e-6)


@pytest.mark.parametrize("kind", [MILLARD, DGF])
def test_equilibrium_balances_fiber_and_tendon(kind):
    """A static muscle equilibrated: fiber force along the tendon = tendon force, fiber at rest."""
    system, matter, block, muscles = _simtk_model(kind, {})
    state = system.realize_topology()
    block.set_one_q(state, 0, 0.01)
    for mu, a in zip(muscles, (0.3, 0.8)):
        mu.set_activation(state, a)
    equilibrate_muscles(system, state)
    system.realize(state, Stage.Velocity)
    for mu in muscles:
        along = mu.get_fiber_force(state) * math.cos(mu.get_pennation_angle(state))
        # Millard stops at 1e-8 F_max, DeGroote's bisection at 1e-10 of the normalized force
        assert abs(along - mu.get_tendon_force(state)) <= 1e-7 * FMAX
        assert abs(mu.get_fiber_velocity(state)) <= 1e-6
        assert mu.get_tendon_force(state) > 0.0


@pytest.mark.parametrize("kind", [MILLARD, DGF])
def test_tension_applied_along_path(kind):
    """The muscle's generalized force is -T dL/dq (virtual work), dL/dq by a central difference."""
    system, matter, block, muscles = _simtk_model(kind, {})
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
    assert gen[0] == pytest.approx(-muscles[0].get_tendon_force(state) * dLdq, rel=1e-7)


@pytest.mark.parametrize("kind", [MILLARD, DGF])
def test_bad_input_refused_naming_the_muscle(kind):
    system, matter, block, muscles = _simtk_model(kind, {})
    forces = system.get_force_subsystems()[0]
    n = forces.get_num_forces()
    path = GeometryPath(matter, [PathPoint(matter.ground, [0.0, 0.1, 0.0]), PathPoint(block, [0.0, 0.0, 0.0])])
    make = getattr(Force, kind)
    with pytest.raises(ValueError, match=r"'soleus'.*optimal_fiber_length"):
        make(forces, path, FMAX, -0.1, 0.2, name="soleus")
    with pytest.raises(ValueError, match=r"'soleus'.*excitation"):
        make(forces, path, FMAX, 0.1, 0.2, name="soleus", excitation=1.5)
    with pytest.raises(TypeError, match=r"'soleus'.*unknown property 'bogus'"):
        make(forces, path, FMAX, 0.1, 0.2, name="soleus", bogus=1.0)
    if kind == MILLARD:
        with pytest.raises(ValueError, match=r"'soleus'.*TendonForceLengthCurve.*must be all given"):
            make(forces, path, FMAX, 0.1, 0.2, name="soleus", TendonForceLengthCurve_curviness=0.5)
        with pytest.raises(ValueError, match=r"'soleus'.*minimum_activation"):
            make(forces, path, FMAX, 0.1, 0.2, name="soleus", fiber_damping=0.0, minimum_activation=0.0)
    assert forces.get_num_forces() == n
    state = system.realize_topology()
    before = muscles[0].get_excitation(state)
    with pytest.raises(ValueError, match=r"left.*\[0, 1\]"):
        muscles[0].set_excitation(state, -0.2)
    assert muscles[0].get_excitation(state) == before
