"""The compiled DeGrooteFregly2016Muscle kind (core/degroote.pxi) against its oracle, OpenSim, and in the
time loops.

Laws checked:
- for every tendon/activation/passive option, the kernel's law (tendon force, fiber velocity, the
  activation's and the normalized tendon force's rates, fiber length, pennation, forces, multipliers)
  is the oracle's (``_degroote.DeGrooteLaw.evaluate``, written independently in Python) at random
  states: the kernel repeats the oracle's operations with the same libm functions, so bit for bit;
  and a realization writes those derivatives into zdot;
- the compiled time loop steps (q, u, z) of a DeGroote model with no Python per evaluation, its
  trajectory bitwise the Python loop's (the same kernel, the same arithmetic);
- a forward simulation in the compiled loop ends where OpenSim 4.6's Manager does (RK-Merson, the
  same accuracy), for the options the tug-of-war cross-check in test_muscle_models does not cover;
- the core refuses rows it cannot read (an elastic tendon without a tendon-force state); the batch
  kernels and the functional forms refuse the muscles by name.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Force,
    Function,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MultibodySystem,
    PathPoint,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    _core,
)
from simtk.multibody.forces.muscles import equilibrate_muscles
from simtk.spatial import Body, MassProperties, Transform

FMAX = 1000.0
GRAVITY = (0.0, -9.81, 0.0)
#: (name, origin in ground, pennation at optimal, optimal fiber length, tendon slack length)
MUSCLES = (("left", (-0.3, 0.15, 0.02), 0.0, 0.1, 0.2), ("right", (0.32, 0.1, -0.03), 0.2, 0.12, 0.19))
OPTIONS = [{}, {"ignore_tendon_compliance": True}, {"fiber_damping": 0.05},
           {"ignore_passive_fiber_force": True, "active_force_width_scale": 1.5},
           {"ignore_activation_dynamics": True}, {"ignore_activation_dynamics": True, "ignore_tendon_compliance": True},
           {"ignore_tendon_compliance": True, "fiber_damping": 0.1, "max_contraction_velocity": 6.0}]
LAW = ("tendon_force", "fiber_velocity", "fiber_length", "pennation_angle", "tendon_length", "active_fiber_force",
       "passive_fiber_force", "fiber_force", "tendon_velocity", "active_force_length_multiplier",
       "passive_force_multiplier", "force_velocity_multiplier", "activation")
RATES = {"activation": "activation_rate", "normalized_tendon_force": "normalized_tendon_force_rate"}


def _ids(o):
    return "-".join(o) or "default"


def _model(options, excitation_functions=None):
    system = MultibodySystem("tug")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, GRAVITY)
    block = MobilizedBody.Slider(matter.ground, Transform(p=[0.0, 0.05, 0.0]),
                                 Body.Rigid(MassProperties(20.0, [0.0, 0.0, 0.0], np.diag([0.1, 0.1, 0.1]))),
                                 Transform())
    muscles = []
    for k, (name, origin, pen, lopt, lts) in enumerate(MUSCLES):
        path = GeometryPath(matter, [PathPoint(matter.ground, origin), PathPoint(block, [0.0, 0.0, 0.0])], name=name)
        fns = excitation_functions[k] if excitation_functions else ()
        muscles.append(Force.DeGrooteFregly2016Muscle(forces, path, FMAX, lopt, lts, pen, name=name,
                                                      excitation_functions=fns, **options))
    return system, matter, block, muscles


@pytest.mark.parametrize("options", OPTIONS, ids=_ids)
@pytest.mark.parametrize("seed", range(4))
def test_kernel_matches_oracle_bitwise(options, seed):
    """At random poses, speeds, activations, tendon forces and excitations the kernel's law values and
    the zdot a realization writes are the oracle's, to the last bit."""
    rng = np.random.default_rng(seed)
    system, matter, block, muscles = _model(options)
    state = system.realize_topology()
    block.set_one_q(state, 0, rng.uniform(-0.05, 0.05))
    block.set_one_u(state, 0, rng.uniform(-0.5, 0.5))
    excs = []
    for mu in muscles:
        names = mu.get_state_variable_names()
        if "activation" in names:
            mu.set_activation(state, rng.uniform(0.02, 1.0))
        if "normalized_tendon_force" in names:
            mu.set_normalized_tendon_force(state, rng.uniform(0.0, 1.5))
        e = rng.uniform(0.02, 1.0)
        mu.set_excitation(state, e)
        excs.append(e)
    system.realize(state, Stage.Acceleration)
    for mu, e in zip(muscles, excs):
        names = mu.get_state_variable_names()
        z = tuple(mu.get_state_variable_value(state, n) for n in names)
        info = mu._mlaw.evaluate(z, mu.get_length(state), mu.get_lengthening_speed(state), e)
        values = mu.law_values(state)
        for name in LAW:
            assert values[name] == getattr(info, name), (name, values[name], getattr(info, name))
        assert values["excitation"] == e
        for n, d in zip(names, info.zdot):
            assert values[RATES[n]] == d, (n, values[RATES[n]], d)
            assert mu.get_state_variable_derivative(state, n) == d
        if "activation" not in names:
            assert values["activation_rate"] == 0.0
        if "normalized_tendon_force" not in names:
            assert values["normalized_tendon_force_rate"] == 0.0
        assert mu.get_tendon_force(state) == info.tendon_force
        assert mu.get_fiber_length(state) == info.fiber_length


LAW_OPTIONS = OPTIONS + [{"pennation_angle_at_optimal": 0.4, "passive_fiber_strain_at_one_norm_force": 0.45,
                          "tendon_strain_at_one_norm_force": 0.06, "activation_dynamics_smoothing": 10.0}]


@pytest.mark.parametrize("options", LAW_OPTIONS, ids=_ids)
def test_law_matches_oracle_bitwise_at_many_points(options):
    """The kernel's law alone (no path: ``degroote_law_at``) at 4000 random states, path lengths and
    speeds, excitations: every value the oracle gives, bit for bit (the Gaussians' squares included,
    which Python takes with libm's pow: x * x differs from it for ~1e-3 of the arguments, so a kernel
    that squared by products would fail here); where the oracle raises (no tendon length below the
    curve's asymptote, an overflowing fiber velocity), a value of the kernel is not finite."""
    from simtk.multibody.forces import _degroote
    from simtk.multibody.forces._muscle import make_params
    from simtk.multibody.forces.muscle_models import degroote_columns
    values = dict(max_isometric_force=FMAX, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                  **{k: v for k, v in options.items()})
    law = _degroote.DeGrooteLaw(make_params(_degroote.DeGrooteParams, values, "m"), "m")
    cols = np.array([0.0] * 13 + [0.0, 1.0, 0.0] + degroote_columns(law))
    names = law.state_names
    rng = np.random.default_rng(7)
    raised = 0
    for _ in range(4000):
        a, ntf, e = rng.uniform(0.01, 1.0), rng.uniform(-0.1, 1.8), rng.uniform(0.0, 1.0)
        L, Ldot = 0.2 + 0.1 * rng.uniform(0.3, 1.8), rng.uniform(-1.0, 1.0)
        z = tuple(a if n == "activation" else ntf for n in names)
        row = _core._k.degroote_law_at(cols, a, ntf, L, Ldot, e)
        values_k = dict(zip(_core._k.DEGROOTE_INFO, row))
        try:
            info = law.evaluate(z, L, Ldot, e)
        except (ArithmeticError, ValueError):
            raised += 1
            assert not np.isfinite(row[:3]).all() or not np.isfinite(values_k["normalized_tendon_force_rate"])
            continue
        for name in LAW:
            assert values_k[name] == getattr(info, name), (name, values_k[name], getattr(info, name))
        for n, d in zip(names, info.zdot):
            assert values_k[RATES[n]] == d, (n, values_k[RATES[n]], d)
    assert raised < 4000 // 2


def test_non_finite_law_is_refused_naming_the_muscle():
    """A tendon force state below the tendon curve's asymptote (-c3) has no tendon length: the kernel's
    values are not finite, the realization refuses naming the muscle, the getter too."""
    from simtk.common.errors import NonFiniteForceError
    system, matter, block, muscles = _model({})
    state = system.realize_topology()
    muscles[1].set_normalized_tendon_force(state, -0.5)
    with pytest.raises(NonFiniteForceError, match="right"):
        system.realize(state, Stage.Acceleration)
    with pytest.raises(NonFiniteForceError, match="right"):
        muscles[1].get_tendon_force(state)
    with pytest.raises(ValueError):
        muscles[1]._mlaw.evaluate((0.5, -0.5), muscles[1].get_length(state), 0.0, 0.1)  # (the oracle refuses too)


def _run(options, compiled: bool, t_end: float = 0.1):
    system, matter, block, muscles = _model(options, ([Function.Linear([2.0, 0.0])], []))
    state = system.realize_topology()
    for mu, a, e in zip(muscles, (0.1, 0.5), (0.3, 0.2)):
        if "activation" in mu.get_state_variable_names():
            mu.set_activation(state, a)
        mu.set_excitation(state, e)
    equilibrate_muscles(system, state)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    integ.set_use_compiled_loop(compiled)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    text = integ.describe_fast_path()
    ts.step_to(t_end)
    return ts.get_state(), integ, text, muscles, block


@pytest.mark.parametrize("options", OPTIONS[:5], ids=_ids)
def test_compiled_loop_steps_degroote_natively_and_bitwise(options):
    """The compiled loop integrates (q, u, z) with the DeGroote muscles in the core (no Python part), and
    its trajectory is the Python loop's (the State API's realizations) bit for bit; the block moves."""
    fast, integ_c, text_c, muscles, block = _run(options, True)
    slow, integ_p, text_p, _, _ = _run(options, False)
    assert text_c.startswith("compiled time loop") and "calls Python" not in text_c, text_c
    assert "2 muscles are compiled" in text_c, text_c
    assert text_p.startswith("Python time loop")
    assert np.array_equal(fast.get_y(), slow.get_y())
    assert fast.get_time() == slow.get_time() == pytest.approx(0.1)
    assert integ_c.get_num_steps_taken() == integ_p.get_num_steps_taken()
    assert abs(block.get_one_q(fast, 0)) > 1e-6


def _opensim_model(osim, options, excitations):
    m = osim.Model()
    m.setGravity(osim.Vec3(*GRAVITY))
    b = osim.Body("block", 20.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
    m.addBody(b)
    m.addJoint(osim.SliderJoint("slider", m.getGround(), osim.Vec3(0, 0.05, 0), osim.Vec3(0), b, osim.Vec3(0),
                                osim.Vec3(0)))
    controller = osim.PrescribedController()
    for (name, origin, pen, lopt, lts), e in zip(MUSCLES, excitations):
        mu = osim.DeGrooteFregly2016Muscle()
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


@pytest.mark.parametrize("options", [OPTIONS[3], OPTIONS[6], {"fiber_damping": 0.05}], ids=_ids)
def test_compiled_loop_matches_opensim_manager(options):
    """0.2 s under constant excitations from equilibrated fibers, stepped by the compiled loop: the
    block's coordinate and speed, the activations, fiber lengths and tendon forces as OpenSim's
    Manager (RK-Merson, accuracy 1e-8) leaves them; both integrators' errors are ~1e-8 relative,
    hence 1e-6 of each quantity's scale."""
    osim = pytest.importorskip("opensim")
    excs, acts = (0.9, 0.2), (0.1, 0.5)
    m = _opensim_model(osim, options, excs)
    s = m.initSystem()
    oms = [m.getMuscles().get(name) for name, *_ in MUSCLES]
    for mu, a in zip(oms, acts):
        mu.setActivation(s, a)
    m.equilibrateMuscles(s)
    manager = osim.Manager(m)
    manager.setIntegratorAccuracy(1e-8)
    manager.initialize(s)
    end = manager.integrate(0.2)
    m.realizeVelocity(end)
    coord = m.getCoordinateSet().get(0)

    system, matter, block, muscles = _model(options)
    state = system.realize_topology()
    for mu, a, e in zip(muscles, acts, excs):
        mu.set_activation(state, a)
        mu.set_excitation(state, e)
    equilibrate_muscles(system, state)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    integ.set_use_compiled_loop(True)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    assert integ.describe_fast_path().startswith("compiled time loop")
    ts.step_to(0.2)
    final = ts.get_state()
    system.realize(final, Stage.Velocity)
    assert abs(coord.getValue(end)) > 1e-3  # the block moved
    assert block.get_one_q(final, 0) == pytest.approx(coord.getValue(end), abs=1e-6)
    assert block.get_one_u(final, 0) == pytest.approx(coord.getSpeedValue(end), abs=1e-5)
    for om, mu in zip(oms, muscles):
        assert mu.get_activation(final) == pytest.approx(om.getActivation(end), abs=1e-6)
        assert mu.get_fiber_length(final) == pytest.approx(om.getFiberLength(end), abs=1e-6)
        assert abs(mu.get_tendon_force(final) - om.getTendonForce(end)) <= 1e-6 * FMAX


def test_core_refuses_unreadable_rows():
    """An elastic-tendon row without a tendon-force state, activation dynamics without an activation
    state, or a bad input index, is refused by the core."""
    system, matter, block, muscles = _model({})
    state = system.realize_topology()
    system.realize(state, Stage.Velocity)
    fs = muscles[0]._pack(muscles, matter, state).fs
    for col, value, why in ((14, -1.0, "tendon force state"), (13, -1.0, "activation state"),
                            (15, -1.0, "bad index"), (13, 0.5, "bad index"), (20, np.nan, "not finite")):
        params = np.array(fs.params)
        params[0, col] = value
        with pytest.raises(ValueError, match=why):
            _core._k.ForceSet(fs.kind, fs.bodies, fs.stations, params, fs.index, fs.functions, fs.terms)


def test_batch_and_functional_forms_refuse_degroote_muscles_by_name():
    system, matter, block, muscles = _model({})
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    with pytest.raises(NotImplementedError, match="left"):
        matter.calc_udot_batch(np.zeros((2, 1)), np.zeros((2, 1)), state=state)
    with pytest.raises(NotImplementedError):
        matter.functional_dynamics(state)
