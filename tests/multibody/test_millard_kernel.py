"""The compiled Millard2012EquilibriumMuscle kind (core/millard.pxi) against its oracle and in the time loops.

Laws checked:
- each packed curve the kernel evaluates (its Bezier sections' control points packed at Instance)
  gives the oracle's Curve.value_and_slope (``_bezier``, Python) at random x in and outside its range;
- for every tendon/damping/activation option, the kernel's law (tendon force, fiber velocity,
  activation rate, fiber length, pennation, forces, multipliers) is the oracle's
  (``_millard.MillardLaw.evaluate``, written independently in Python) at random states, to a few ulps
  of each quantity's scale, and a realization writes the oracle's state derivatives into zdot;
- the compiled time loop steps (q, u, z) of a Millard model with no Python per evaluation, its
  trajectory bitwise the Python loop's (the same kernel, the same arithmetic);
- the core refuses rows it cannot read (an elastic tendon without a fiber-length state).
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
from simtk.multibody.forces.muscle_models import millard_columns
from simtk.multibody.forces.muscles import equilibrate_muscles
from simtk.spatial import Body, MassProperties, Transform

EPS = np.finfo(float).eps
FMAX = 1000.0
MUSCLES = (("left", (-0.3, 0.15, 0.02), 0.0, 0.1, 0.2), ("right", (0.32, 0.1, -0.03), 0.2, 0.12, 0.19))
OPTIONS = [{}, {"fiber_damping": 0.0}, {"ignore_tendon_compliance": True},
           {"fiber_damping": 0.0, "ignore_tendon_compliance": True}, {"ignore_activation_dynamics": True},
           {"ignore_activation_dynamics": True, "ignore_tendon_compliance": True}]


def _model(options, excitation_functions=None):
    system = MultibodySystem("tug")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, (0.0, -9.81, 0.0))
    block = MobilizedBody.Slider(matter.ground, Transform(p=[0.0, 0.05, 0.0]),
                                 Body.Rigid(MassProperties(20.0, [0.0, 0.0, 0.0], np.diag([0.1, 0.1, 0.1]))),
                                 Transform())
    muscles = []
    for k, (name, origin, pen, lopt, lts) in enumerate(MUSCLES):
        path = GeometryPath(matter, [PathPoint(matter.ground, origin), PathPoint(block, [0.0, 0.0, 0.0])], name=name)
        fns = excitation_functions[k] if excitation_functions else ()
        muscles.append(Force.Millard2012EquilibriumMuscle(forces, path, FMAX, lopt, lts, pen, name=name,
                                                          excitation_functions=fns, **options))
    return system, matter, block, muscles


def _close(a, b, scale, ulps=64):
    # the kernel repeats the oracle's operations; libm's functions may differ in the last bits, and a
    # Newton iteration may then stop one step apart (within its tolerance): hence the few ulps of scale
    return abs(a - b) <= ulps * EPS * max(abs(scale), 1.0)


@pytest.mark.parametrize("name", ["fal", "fv", "fv_inv", "fpe", "fse"])
def test_packed_curves_match_oracle(name):
    """The kernel's evaluation of a packed curve is the oracle's, in and outside the Bezier range."""
    system, matter, block, muscles = _model({"fiber_damping": 0.0})
    law = muscles[1]._mlaw
    cols = np.array([0.0] * 16 + millard_columns(law))
    column, nsec = {n: (c, s) for n, c, s in _core._k.MILLARD_CURVES}[name]
    curve = getattr(law, name)
    rng = np.random.default_rng(3)
    lo, hi = curve.x0, curve.x1
    xs = np.concatenate([rng.uniform(lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo), 300), [lo, hi]])
    for x in xs:
        y, dy = _core._k.millard_curve(cols, column, nsec, float(x))
        y0, dy0 = curve.value_and_slope(float(x))
        assert _close(y, y0, max(abs(curve.y0), abs(curve.y1))), (x, y, y0)
        assert _close(dy, dy0, max(abs(dy0), 1.0), 256), (x, dy, dy0)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(o) or "default")
@pytest.mark.parametrize("seed", range(4))
def test_kernel_matches_oracle(options, seed):
    """At random poses, speeds, activations, fiber lengths and excitations the kernel's law values and
    the zdot a realization writes are the oracle's."""
    rng = np.random.default_rng(seed)
    system, matter, block, muscles = _model(options)
    state = system.realize_topology()
    block.set_one_q(state, 0, rng.uniform(-0.05, 0.05))
    block.set_one_u(state, 0, rng.uniform(-0.3, 0.3))
    excs = []
    for mu, (_, _, _, lopt, _) in zip(muscles, MUSCLES):
        if "activation" in mu.get_state_variable_names():
            mu.set_activation(state, rng.uniform(0.0, 1.0))
        if "fiber_length" in mu.get_state_variable_names():
            mu.set_fiber_length(state, lopt * rng.uniform(0.7, 1.4))
        e = rng.uniform(0.0, 1.0)
        mu.set_excitation(state, e)
        excs.append(e)
    system.realize(state, Stage.Acceleration)
    checked = 0
    for mu, e in zip(muscles, excs):
        z = tuple(mu.get_state_variable_value(state, n) for n in mu.get_state_variable_names())
        try:
            info = mu._mlaw.evaluate(z, mu.get_length(state), mu.get_lengthening_speed(state), e)
        except ArithmeticError:
            # the oracle refuses (no convergence): the kernel gives NaN
            assert not np.isfinite(mu.law_values(state)["tendon_force"])
            continue
        values = mu.law_values(state)
        for name in ("tendon_force", "fiber_velocity", "fiber_length", "pennation_angle", "tendon_length",
                     "active_fiber_force", "passive_fiber_force", "fiber_force", "tendon_velocity",
                     "active_force_length_multiplier", "passive_force_multiplier", "force_velocity_multiplier",
                     "activation"):
            scale = FMAX if "force" in name and "multiplier" not in name else 1.0
            assert _close(values[name], getattr(info, name), scale), (name, values[name], getattr(info, name))
        assert bool(values["clamped"]) == info.clamped
        for n, d in zip(mu.get_state_variable_names(), info.zdot):
            k = "activation_rate" if n == "activation" else "fiber_velocity"
            assert _close(values[k], d, 1.0 / 0.01), (n, values[k], d)
            assert mu.get_state_variable_derivative(state, n) == values[k]
        assert _close(mu.get_tendon_force(state), info.tendon_force, FMAX)
        checked += 1
    assert checked >= 1


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


@pytest.mark.parametrize("options", OPTIONS[:4], ids=lambda o: "-".join(o) or "default")
def test_compiled_loop_steps_millard_natively_and_bitwise(options):
    """The compiled loop integrates (q, u, z) with the Millard muscles in the core (no Python part), and
    its trajectory is the Python loop's bit for bit; the block moves."""
    fast, integ_c, text_c, muscles, block = _run(options, True)
    slow, integ_p, text_p, _, _ = _run(options, False)
    assert text_c.startswith("compiled time loop") and "calls Python" not in text_c, text_c
    assert "2 muscles are compiled" in text_c, text_c
    assert text_p.startswith("Python time loop")
    assert np.array_equal(fast.get_y(), slow.get_y())
    assert fast.get_time() == slow.get_time() == pytest.approx(0.1)
    assert integ_c.get_num_steps_taken() == integ_p.get_num_steps_taken()
    assert abs(block.get_one_q(fast, 0)) > 1e-6


def test_core_refuses_unreadable_rows():
    """An elastic-tendon row without a fiber-length state, or a bad input index, is refused by the core."""
    system, matter, block, muscles = _model({})
    state = system.realize_topology()
    system.realize(state, Stage.Velocity)
    fs = muscles[0]._pack(muscles, matter, state).fs
    for col, value, why in ((14, -1.0, "fiber-length state"), (15, -1.0, "bad index"), (13, 0.5, "bad index")):
        params = np.array(fs.params)
        params[0, col] = value
        with pytest.raises(ValueError, match=why):
            _core._k.ForceSet(fs.kind, fs.bodies, fs.stations, params, fs.index, fs.functions, fs.terms)


def test_batch_and_functional_forms_refuse_millard_muscles_by_name():
    system, matter, block, muscles = _model({})
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    with pytest.raises(NotImplementedError, match="left"):
        matter.calc_udot_batch(np.zeros((2, 1)), np.zeros((2, 1)), state=state)
    with pytest.raises(NotImplementedError):
        matter.functional_dynamics(state)
