"""A run that blows up ends fast with SimulationDivergedError naming the variable and its controller
(issue 28: a 7-link chain under a PD law far beyond its 100 Hz rate spun for minutes on ever smaller
steps). Laws: the error comes within a bounded number of steps, the compiled driver, the Python driver
and the Python loop fail at the same step with the same words, and a stable run is not stopped."""
from __future__ import annotations

import numpy as np
import pytest

from simtk.math import RungeKuttaMersonIntegrator
from simtk.math._divergence import CHECK_EVERY
from simtk.multibody import Force, GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from simtk.simulation import PDController, Simulation, SimulationDivergedError
from simtk.spatial import Body, Inertia, MassProperties, Transform

MODES = ("compiled driver", "Python driver", "Python loop")


def chain(n: int) -> MultibodySystem:
    """benchmarks/_chain.py's pin chain: links of 0.5 m and 1 kg hanging from Ground, named link0..."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
    return system


def pd_run(n: int, kp: float, kd: float, mode: str = "compiled driver"):
    system = chain(n)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    if mode == "Python loop":
        integ.set_use_compiled_loop(False)
    sim = Simulation(system, system.realize_topology(), integrator=integ, step_size=0.01)
    if mode != "compiled driver":
        sim._use_compiled_driver = False
    gains = {f"/matter/link{i}/angle": (kp, kd) for i in range(n)}
    sim.add_controller(PDController(gains, {p: 0.2 for p in gains}), name="pd")
    return sim, integ


def test_the_issue_chain_under_gains_beyond_its_rate_fails_within_bounded_steps():
    # Unfixed, these three driver steps alone take 3.5 million steps (a minute); the fourth never ends.
    sim, integ = pd_run(7, 1e6, 1e4)
    with pytest.raises(SimulationDivergedError) as info:
        sim.run(0.03)
    text = str(info.value)
    assert "diverged" in text and "'/matter/link" in text and "grew by a factor" in text
    # the controller is named, with its gains against its rate and the coordinate's inertia
    assert "'/agents/pd' (PDController)" in text and "kp = 1e+06, kd = 10000" in text and "0.01 s" in text
    assert "kd dt / M" in text
    assert integ.get_num_steps_taken() < 1_000_000
    assert integ.get_num_steps_taken() % CHECK_EVERY == 0  # caught at a check point
    left = integ.get_advanced_state()
    assert np.isfinite(left.get_y()).all() and 0 < left.get_time() < 0.03
    assert info.value.variable_index is not None


def test_every_driver_and_loop_fail_alike():
    """The compiled loop returns to Python at the watch's check points: the three paths stop at the
    same step, with the same message and State."""
    outcomes = []
    for mode in MODES:
        sim, integ = pd_run(3, 1e6, 1e4, mode)
        with pytest.raises(SimulationDivergedError) as info:
            sim.run(1.0)
        s = integ.get_advanced_state()
        outcomes.append((str(info.value), s.get_time(), s.get_y().copy(), integ.get_num_steps_taken()))
    for o in outcomes[1:]:
        assert o[0] == outcomes[0][0] and o[1] == outcomes[0][1] and o[3] == outcomes[0][3]
        assert np.array_equal(o[2], outcomes[0][2])


def test_stable_gains_run_to_the_end_and_bitwise_alike():
    """Gains the rate holds: no false alarm over many check points, and the returns to Python at the
    check points leave the compiled trajectory bitwise the Python one."""
    finals = []
    for mode in MODES:
        sim, integ = pd_run(3, 50.0, 5.0, mode)
        integ.set_maximum_step_size(1e-4)  # many steps: the watch looks many times
        sim.run(0.5)
        assert integ.get_num_steps_taken() > 4 * CHECK_EVERY
        finals.append(integ.get_advanced_state().get_y().copy())
    for f in finals[1:]:
        assert np.array_equal(f, finals[0])


def test_turned_off_the_watch_lets_the_run_go_on():
    sim, integ = pd_run(3, 1e6, 1e4)
    integ.set_divergence_detection(False)
    assert integ.get_divergence_detection() is None
    sim.run(0.01)  # one driver step: growing, but not stopped
    assert integ.get_advanced_state().get_time() == 0.01
