"""The driver's steps in the compiled loop (simtk/simulation/_compiled_driver.py): bitwise the Python driver.

A run whose controllers are PDControllers with constant targets takes its driver steps in
``TreeStepper.run_ticks`` (the PD law, the integrator's restart, its steps), returning to Python where a
recorder is due. The reference is the same run with every driver step in Python
(``sim._use_compiled_driver = False``), with the compiled time loop and without it: the final State, the
recordings, the integrator's statistics and the run's summary must be equal, exactly.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Function
from simtk.math import (
    RungeKutta3Integrator,
    RungeKuttaMersonIntegrator,
    SemiExplicitEuler2Integrator,
    SemiExplicitEulerIntegrator,
    SimulationDivergedError,
    VerletIntegrator,
)
from simtk.math._compiled_loop import CompiledLoop
from simtk.multibody import Force, GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from simtk.simulation import InputProbe, OutputProbe, PDController, Simulation
from simtk.spatial import Body, Inertia, MassProperties, Transform

INTEGRATORS = {
    "SemiExplicitEuler": lambda s: SemiExplicitEulerIntegrator(s, 1e-3),
    "SemiExplicitEuler2": SemiExplicitEuler2Integrator,
    "RungeKutta3": RungeKutta3Integrator,
    "RungeKuttaMerson": RungeKuttaMersonIntegrator,
    "Verlet": VerletIntegrator,
}

MODES = ("compiled driver", "Python driver", "Python loop")


def chain(n: int, first: str = "Pin"):
    """A hanging chain of ``n`` links (the first one's mobilizer ``first``), under gravity."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(n):
        kind = first if i == 0 else "Pin"
        parent = getattr(MobilizedBody, kind)(parent, Transform([0, -0.5, 0]) if i else Transform(), body,
                                              Transform(), name=f"link{i}")
    return system


class Ticks:
    """Counts the driver steps the compiled loop takes (CompiledLoop.run_ticks patched)."""

    def __init__(self, monkeypatch):
        self.n = 0
        original = CompiledLoop.run_ticks

        def run_ticks(loop, *args):
            done, code = original(loop, *args)
            self.n += done
            return done, code

        monkeypatch.setattr(CompiledLoop, "run_ticks", run_ticks)


def run(mode: str, make, n=4, first="Pin", step=2e-3, t_end=0.3, gains=None, targets=None, record=0.01, u0=0.3,
        runs=1, extra=None):
    """One simulation of a PD-held chain; returns (y, recording, statistics, summary counts)."""
    system = chain(n, first)
    state = system.realize_topology()
    state.upd_u()[:] = u0
    integ = make(system)
    if mode == "Python loop":
        integ.set_use_compiled_loop(False)
    sim = Simulation(system, state, integrator=integ, step_size=step)
    if mode != "compiled driver":
        sim._use_compiled_driver = False
    first_pd = 1 if first != "Pin" else 0  # a Ball or Free first link is left free
    paths = [f"/matter/link{i}/angle" for i in range(first_pd, n)]
    gains = gains or {p: (30.0 + 2 * i, 3.0 + 0.1 * i) for i, p in enumerate(paths)}
    targets = targets or {p: 0.1 * i - 0.2 for i, p in enumerate(paths)}
    sim.add_controller(PDController(gains, targets))
    probe = None
    if record:
        probe = sim.add_output_probe(OutputProbe(["/matter/link1|q", "/matter/link1|u"], interval=record))
    if extra is not None:
        extra(sim)
    summaries = []
    for k in range(runs):
        summary = sim.run(t_end * (k + 1) / runs)
        summaries.append((summary.driver_steps, summary.integrator_steps, summary.rejected_steps,
                          summary.realizations))
    s = sim.get_state()
    recording = probe._data[:probe._n].copy() if probe is not None else np.zeros(0)
    stats = (integ.get_num_steps_taken(), integ.get_num_steps_attempted(), integ.get_num_realizations(),
             integ.get_num_error_test_failures(), integ.get_num_projections(), integ.get_predicted_next_step_size(),
             integ.get_previous_step_size_taken(), s.get_time())
    return s.get_y().copy(), recording, stats, summaries, s.get_ydot().copy()


def assert_same(results: dict) -> None:
    ref = results["Python loop"]
    for mode, r in results.items():
        assert np.array_equal(r[0], ref[0]), f"{mode}: y differs: {r[0]} vs {ref[0]}"
        assert np.array_equal(r[1], ref[1]), f"{mode}: the recordings differ"
        assert r[2] == ref[2], f"{mode}: statistics {r[2]} vs {ref[2]}"
        assert r[3] == ref[3], f"{mode}: summaries {r[3]} vs {ref[3]}"
        assert np.array_equal(r[4], ref[4]), f"{mode}: ydot differs"


@pytest.mark.parametrize("first", ["Pin", "Ball", "Free"])
@pytest.mark.parametrize("name", list(INTEGRATORS))
def test_pd_runs_in_the_compiled_driver_bitwise(name, first, monkeypatch):
    """Law: a PD-held chain (quaternions included) runs its driver steps in the compiled loop, with the
    final State, the recording, the statistics and the summaries of the Python driver, bitwise."""
    ticks = Ticks(monkeypatch)
    results = {}
    for mode in MODES:
        before = ticks.n
        results[mode] = run(mode, INTEGRATORS[name], first=first, runs=2)
        if mode == "compiled driver":
            assert ticks.n - before == results[mode][3][0][0] + results[mode][3][1][0], (
                "every driver step was taken in the compiled loop")
        else:
            assert ticks.n == before
    assert_same(results)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 5), name=st.sampled_from(list(INTEGRATORS)),
       step=st.sampled_from([1e-3, 2e-3, 5e-3, 0.01]), record=st.sampled_from([0, 0.01, 0.015, 0.05]),
       kp=st.floats(0.0, 200.0), kd=st.floats(0.0, 20.0), target=st.floats(-1.0, 1.0), u0=st.floats(-2, 2),
       runs=st.integers(1, 3))
def test_random_pd_runs_agree_bitwise(n, name, step, record, kp, kd, target, u0, runs):
    """Law: for random chains, gains, targets, driver steps, recording intervals (not a multiple of the
    step included) and runs split into several calls, the compiled driver equals the Python driver."""
    gains = {f"/matter/link{i}/angle": (kp * (1 + 0.1 * i), kd) for i in range(n)}
    targets = {p: target for p in gains}
    results = {mode: run(mode, INTEGRATORS[name], n=n, step=step, t_end=0.12, gains=gains, targets=targets,
                         record=record, u0=u0, runs=runs) for mode in MODES}
    assert_same(results)


def test_a_run_rewound_to_a_waypoint_is_bitwise_the_first(monkeypatch):
    """A waypoint is stored between compiled stretches, and a rerun from it repeats the first run."""
    ticks = Ticks(monkeypatch)
    system = chain(3)
    state = system.realize_topology()
    state.upd_u()[:] = 0.5
    sim = Simulation(system, state, integrator=RungeKuttaMersonIntegrator(system), step_size=1e-3)
    gains = {f"/matter/link{i}/angle": (40.0, 4.0) for i in range(3)}
    sim.add_controller(PDController(gains, {p: 0.3 for p in gains}))
    sim.run(0.05)
    sim.add_waypoint(0.1)
    sim.run(0.2)
    first = sim.get_state().get_y().copy()
    assert ticks.n == 200
    sim.rewind(0.1)
    sim.run(0.2)
    assert np.array_equal(sim.get_state().get_y(), first)


def test_agents_the_core_cannot_run_keep_the_python_driver(monkeypatch):
    """An input probe, a PD target that is a Function, or a recorder every driver step keeps every
    driver step in Python, with the results as before."""
    ticks = Ticks(monkeypatch)
    probe = lambda sim: sim.add_input_probe(InputProbe("/matter/link0/rate", [0.0, 1.0], [0.0, 1.0]))  # noqa: E731
    moving = {"/matter/link0/angle": Function.Sinusoid(0.3, 2, 0), "/matter/link1/angle": 0.1}
    for extra, targets, record in ((probe, None, 0.01), (None, moving, 0.01), (None, None, None)):
        kw = dict(extra=extra, record=record if record else 0)
        if targets is not None:
            kw.update(n=2, gains={p: (20.0, 2.0) for p in targets}, targets=targets)
        if record is None:
            kw["extra"] = lambda sim: sim.add_output_probe(OutputProbe(["/matter/link0|q"]))
        results = {mode: run(mode, RungeKuttaMersonIntegrator, t_end=0.05, **kw) for mode in MODES}
        assert_same(results)
    assert ticks.n == 0


def test_a_diverging_pd_run_fails_alike():
    """Gains far beyond what the step holds: both drivers end in the same error, the State at the
    same last good step."""
    outcomes = []
    for mode in MODES:
        gains = {f"/matter/link{i}/angle": (1e7, 1e4) for i in range(3)}
        system = chain(3)
        state = system.realize_topology()
        integ = SemiExplicitEulerIntegrator(system, 1e-2)
        if mode == "Python loop":
            integ.set_use_compiled_loop(False)
        sim = Simulation(system, state, integrator=integ, step_size=1e-2)
        if mode != "compiled driver":
            sim._use_compiled_driver = False
        sim.add_controller(PDController(gains, {p: 0.5 for p in gains}))
        with pytest.raises((SimulationDivergedError, FloatingPointError, ArithmeticError)) as info:
            sim.run(5.0)
        s = integ.get_advanced_state()
        outcomes.append((type(info.value), str(info.value), s.get_time(), s.get_y().copy()))
    for o in outcomes[1:]:
        assert o[0] == outcomes[0][0] and o[1] == outcomes[0][1] and o[2] == outcomes[0][2]
        assert np.array_equal(o[3], outcomes[0][3])
