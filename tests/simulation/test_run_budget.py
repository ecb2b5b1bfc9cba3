"""Simulation.run's budgets and progress (simtk/simulation/_run_guard.py). Laws: a run that uses up
``max_steps`` or ``max_wall_time`` raises RunBudgetExceededError saying how far it got, with the State
left there and a later run going on from it, even inside one endless driver step; progress without
tqdm is a plain line when asked for."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from simtk.math import RungeKuttaMersonIntegrator
from simtk.math._divergence import CHECK_EVERY
from simtk.multibody import Force, GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from simtk.simulation import RunBudgetExceededError, Simulation
from simtk.simulation._run_guard import PlainProgress
from simtk.spatial import Body, Inertia, MassProperties, Transform


def stiff_pendulum(max_step: float = 1e-5, step_size: float = 0.01):
    """A pin pendulum whose integrator may take only small steps: many steps per driver step."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    pin = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                            Transform([0, 1, 0]))
    state = system.realize_topology()
    pin.set_angle(state, 0.5)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_maximum_step_size(max_step)
    return Simulation(system, state, integrator=integ, step_size=step_size, progress=False), integ


def test_a_step_budget_stops_inside_a_long_driver_step_and_the_next_run_goes_on():
    sim, integ = stiff_pendulum(step_size=0.05)  # 5000 steps per driver step
    with pytest.raises(RunBudgetExceededError) as info:
        sim.run(0.1, max_steps=2500)
    e = info.value
    text = str(e)
    assert "max_steps" in text and "2500" in text and "to 0.1" in text.split("on the way from")[1]
    assert e.steps == 3 * CHECK_EVERY and 0 < e.t_reached < 0.05  # at the first check point past it
    assert f"t = {e.t_reached!r}" in text and "% of the run" in text
    assert sim.get_integrator().get_advanced_state().get_time() == e.t_reached
    assert np.isfinite(integ.get_advanced_state().get_y()).all()
    summary = sim.run(0.1)  # no budget: the run goes on from where it stopped
    assert summary.t_end == 0.1


def test_a_wall_time_budget_says_how_far_it_got():
    sim, integ = stiff_pendulum()
    with pytest.raises(RunBudgetExceededError) as info:
        sim.run(1.0, max_wall_time=1e-9)
    assert "max_wall_time" in str(info.value) and info.value.t_reached < 1.0
    assert info.value.wall_seconds > 1e-9
    # the budget is of one call: a later call without one reaches the end
    assert sim.run(0.02).t_end == 0.02


def test_a_budget_not_used_up_changes_nothing():
    ref, _ = stiff_pendulum(1e-3)
    ref.run(0.1)
    sim, _ = stiff_pendulum(1e-3)
    sim.run(0.1, max_steps=10**9, max_wall_time=1e6)
    assert np.array_equal(sim.get_state().get_y(), ref.get_state().get_y())


@pytest.mark.parametrize("kw", [{"max_steps": 0}, {"max_steps": 2.5}, {"max_wall_time": -1.0},
                                {"max_wall_time": "1"}])
def test_bad_budgets_are_refused(kw):
    sim, _ = stiff_pendulum()
    (name,) = kw
    with pytest.raises((TypeError, ValueError), match=rf"Simulation.run: {name} must be"):
        sim.run(0.01, **kw)


def test_progress_without_tqdm_is_a_plain_line_when_asked(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    sim, _ = stiff_pendulum(1e-3)
    sim._progress, sim._progress_after = True, 0.0
    sim.run(0.05)
    assert sim.progress_shown
    auto, _ = stiff_pendulum(1e-3)
    auto._progress, auto._progress_after = None, 0.0
    auto.run(0.05)
    assert not auto.progress_shown
    bar = PlainProgress(2.0, every=0.0)
    bar.n = 0.5
    bar.refresh()
    assert "simulating: 0.5 of 2 s (25.0%)" in capsys.readouterr().err
