"""The compiled Thelen2003Muscle kind (core/muscles.pxi) against its oracle and in the time loops.

Laws checked:
- the kernel's law (tendon force, fiber velocity, activation rate, fiber length, pennation, forces) is
  the oracle's (``_thelen.evaluate``, ``_thelen.activation_rate``, written independently in Python) at
  random states, to a few ulps of each quantity's scale;
- a realization writes zdot = (da/dt, dl_M/dt) of the oracle, with the excitation's compiled functions
  of time added at the State's time;
- the compiled time loop steps (q, u, z) of a muscle model with no Python per evaluation, and its
  trajectory is bitwise the Python loop's (the same kernel, the same arithmetic);
- the batch kernels refuse muscles naming the muscle; the core refuses rows it cannot read and an
  evaluation that gives no z.
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
from simtk.multibody.forces import _thelen
from simtk.multibody.forces.muscles import equilibrate_muscles
from simtk.spatial import Body, MassProperties, Transform

EPS = np.finfo(float).eps
FMAX = 1000.0
MUSCLES = (("left", (-0.3, 0.15, 0.02), 0.0, 0.1, 0.2), ("right", (0.32, 0.1, -0.03), 0.2, 0.12, 0.19))


def _model(excitation_functions=None):
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
        muscles.append(Force.Thelen2003Muscle(forces, path, FMAX, lopt, lts, pen, name=name,
                                              excitation_functions=fns))
    return system, matter, block, muscles


def _oracle(mu, state, excitation):
    L, Ldot = mu.get_length(state), mu.get_lengthening_speed(state)
    info = _thelen.evaluate(mu._params, mu.get_activation(state), mu.get_fiber_length(state), L, Ldot)
    return info, _thelen.activation_rate(mu._params, mu.get_activation(state), excitation)


def _close(a, b, scale):
    # the kernel repeats the oracle's operations; libm's functions may differ in the last bits
    return abs(a - b) <= 64 * EPS * max(abs(scale), 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_kernel_matches_oracle(seed):
    """At random poses, speeds, activations, fiber lengths and excitations the kernel's law values and
    the zdot a realization writes are the oracle's."""
    rng = np.random.default_rng(seed)
    system, matter, block, muscles = _model()
    state = system.realize_topology()
    block.set_one_q(state, 0, rng.uniform(-0.1, 0.1))
    block.set_one_u(state, 0, rng.uniform(-0.5, 0.5))
    excs = []
    for mu, (_, _, _, lopt, _) in zip(muscles, MUSCLES):
        mu.set_activation(state, rng.uniform(0.0, 1.0))
        mu.set_fiber_length(state, lopt * rng.uniform(0.6, 1.5))
        e = rng.uniform(0.0, 1.0)
        mu.set_excitation(state, e)
        excs.append(e)
    system.realize(state, Stage.Acceleration)
    for mu, e in zip(muscles, excs):
        info, adot = _oracle(mu, state, e)
        values = mu.law_values(state)
        for name in ("tendon_force", "fiber_velocity", "fiber_length", "pennation_angle", "tendon_length",
                     "active_fiber_force", "passive_fiber_force", "fiber_force", "tendon_velocity"):
            scale = FMAX if "force" in name else 1.0
            assert _close(values[name], getattr(info, name), scale), (name, values[name], getattr(info, name))
        assert _close(values["activation_rate"], adot, 1.0 / 0.015)
        assert mu.get_state_variable_derivative(state, "activation") == values["activation_rate"]
        assert mu.get_state_variable_derivative(state, "fiber_length") == values["fiber_velocity"]
        assert _close(mu.get_tendon_force(state), info.tendon_force, FMAX)


def test_excitation_functions_of_time_are_compiled():
    """An excitation function of time is a compiled term of the set: da/dt at time t is the oracle's
    at the held excitation plus f(t); the compiled loop holds no Python part for it."""
    f = Function.Linear([0.5, 0.1])  # 0.5 t + 0.1
    system, matter, block, muscles = _model(([f], []))
    state = system.realize_topology()
    state.set_time(0.7)
    muscles[0].set_excitation(state, 0.2)
    system.realize(state, Stage.Acceleration)
    e = 0.2 + 0.5 * 0.7 + 0.1
    _, adot = _oracle(muscles[0], state, e)
    assert _close(muscles[0].get_state_variable_derivative(state, "activation"), adot, 1.0 / 0.015)
    integ = RungeKuttaMersonIntegrator(system)
    integ.initialize(state)
    text = integ.describe_fast_path()
    assert "2 muscles are compiled" in text and "calls Python" not in text, text


def _run(compiled: bool, t_end: float = 0.1, disable_right: bool = False):
    system, matter, block, muscles = _model(([Function.Linear([2.0, 0.0])], []))
    state = system.realize_topology()
    for mu, a, e in zip(muscles, (0.1, 0.5), (0.3, 0.2)):
        mu.set_activation(state, a)
        mu.set_excitation(state, e)
    equilibrate_muscles(system, state)
    if disable_right:
        muscles[1].disable(state)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    integ.set_use_compiled_loop(compiled)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    text = integ.describe_fast_path()
    ts.step_to(t_end)
    return ts.get_state(), integ, text, muscles, block


@pytest.mark.parametrize("disable_right", [False, True])
def test_compiled_loop_steps_muscles_natively_and_bitwise(disable_right):
    """The compiled loop integrates (q, u, z) with the muscles in the core (no Python part), and its
    trajectory is the Python loop's bit for bit; the block moves and the activations follow. A
    disabled muscle's states stay where they were (zero derivatives on both paths)."""
    fast, integ_c, text_c, muscles, block = _run(True, disable_right=disable_right)
    slow, integ_p, text_p, _, _ = _run(False, disable_right=disable_right)
    assert text_c.startswith("compiled time loop") and "calls Python" not in text_c, text_c
    assert f"{1 if disable_right else 2} muscles are compiled" in text_c, text_c
    if disable_right:
        assert muscles[1].get_activation(fast) == 0.5
    assert text_p.startswith("Python time loop")
    assert np.array_equal(fast.get_y(), slow.get_y())
    assert fast.get_time() == slow.get_time() == pytest.approx(0.1)
    assert integ_c.get_num_steps_taken() == integ_p.get_num_steps_taken()
    assert abs(block.get_one_q(fast, 0)) > 1e-5
    # the left muscle's excitation 0.3 + 2 t rises above its activation 0.1: the activation rises
    assert muscles[0].get_activation(fast) > 0.1


def test_batch_and_functional_forms_refuse_muscles_by_name():
    system, matter, block, muscles = _model()
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    with pytest.raises(NotImplementedError, match="left"):
        matter.calc_udot_batch(np.zeros((2, 1)), np.zeros((2, 1)), state=state)
    with pytest.raises(NotImplementedError):
        matter.functional_dynamics(state)


def test_core_refuses_unreadable_rows_and_missing_z():
    """A muscle set whose rows name a negative z index is refused; an evaluation without z is
    refused before the kernel reads anything."""
    system, matter, block, muscles = _model()
    state = system.realize_topology()
    system.realize(state, Stage.Velocity)
    fs = muscles[0]._pack(muscles, matter, state).fs
    params = np.array(fs.params)
    params[0, 13] = -1.0
    with pytest.raises(ValueError, match="bad index"):
        _core._k.ForceSet(fs.kind, fs.bodies, fs.stations, params, fs.index, fs.functions, fs.terms)
    ws = matter._cache(state).ws
    ws.set_inputs(0.0, np.zeros(fs.ninputs))
    ws.set_z(None, None)
    bf, mf = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(1)
    with pytest.raises(ValueError, match="state variables z"):
        fs.add(ws, bf, mf)
    assert not bf.any() and not mf.any()
