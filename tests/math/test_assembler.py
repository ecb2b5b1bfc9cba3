"""Assembler: satisfies the constraints from far-off guesses and fits goals.

Checked by independent means: the constraint errors after assembly, marker locations recomputed by
forward kinematics against observations generated from a known configuration, locked coordinates
left untouched and q ranges respected.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from simtk import Assembler, Markers, QValue, Stage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "multibody"))
from test_constraints import SEEDS, random_state, random_tree  # noqa: E402
from test_constraints_equivalences import four_bar  # noqa: E402


def test_four_bar_assembles_from_a_bad_guess():
    """From all-zero angles (links in a straight line, the loop 1.5 m open) the loop closes."""
    system, matter, links, ball = four_bar("ground")
    s = system.realize_topology()
    system.realize(s, Stage.Position)
    assert np.abs(s.get_q_err()).max() > 1.0
    asm = Assembler(system).set_tolerance(1e-10)
    asm.assemble(s)
    system.realize(s, Stage.Position)
    assert np.abs(s.get_q_err()).max() <= asm.get_tolerance_in_use()  # the solver's own tolerance


def test_locks_goals_and_ranges():
    """A locked crank keeps its angle; a q range picks the loop's branch; a QValue goal is met as
    closely as the closed loop allows."""
    system, matter, (crank, coupler, rocker), ball = four_bar("ground")
    # with the crank at 1 rad the coupler's relative angle is -0.84 on one branch, -2.60 on the other
    for lo, hi, expected in ((-1.5, 0.0, -0.84), (-np.pi, -1.5, -2.60)):
        s = system.realize_topology()
        crank.set_one_q(s, 0, 1.0)
        asm = Assembler(system)
        asm.lock_mobilizer(crank)
        asm.restrict_q(coupler, 0, lo, hi)
        asm.assemble(s)
        system.realize(s, Stage.Position)
        assert crank.get_one_q(s, 0) == 1.0
        assert lo <= coupler.get_one_q(s, 0) <= hi
        assert coupler.get_one_q(s, 0) == pytest.approx(expected, abs=0.01)  # (expected is given to 0.01)
        assert np.abs(s.get_q_err()).max() <= asm.get_tolerance_in_use()  # the default, 1e-9
    # a goal on the crank: reachable, so it is met
    s = system.realize_topology()
    asm = Assembler(system)
    asm.adopt_assembly_goal(QValue(crank, 0, 0.8), 1.0)
    cost = asm.assemble(s)
    # goals are optimized to the assembler's accuracy (1e-6), not to round-off
    assert crank.get_one_q(s, 0) == pytest.approx(0.8, abs=1e-4)
    assert cost < 1e-8


@settings(max_examples=6)
@given(seed=SEEDS)
def test_markers_fit_recovers_marker_locations(seed):
    """Markers observed at a random configuration of a random tree (Gimbal, Universal, Ball) are
    matched after assembling from q = 0: the recomputed marker locations equal the observations."""
    rng = np.random.default_rng(seed)
    system, matter, forces, bodies = random_tree(rng, 4)
    target = random_state(system, rng, scale=0.8)
    system.realize(target, Stage.Position)
    markers = Markers()
    obs = []
    for b in bodies[1:]:
        for _ in range(3):
            station = rng.uniform(-0.5, 0.5, 3)
            markers.add_marker(b, station)
            obs.append(b.find_station_location_in_ground(target, station))
    markers.move_all_observations(np.array(obs))
    s = system.realize_topology()
    asm = Assembler(system)
    asm.adopt_assembly_goal(markers, 1.0)
    cost = asm.assemble(s)
    assert cost < 1e-8  # goals are optimized to the assembler's accuracy (1e-6), not to round-off
    for i in range(markers.get_num_markers()):
        np.testing.assert_allclose(markers.find_current_marker_location(s, i), obs[i], atol=1e-4)


def test_markers_with_a_closed_loop_and_as_errors():
    """Markers on a four-bar are fitted subject to the loop closure; a marker set adopted as an
    error is met exactly."""
    system, matter, (crank, coupler, rocker), ball = four_bar("ground")
    ref = system.realize_topology()
    crank.set_one_q(ref, 0, 1.1)
    coupler.set_one_q(ref, 0, -1.5)
    rocker.set_one_q(ref, 0, -1.3)
    system.project(ref, 1e-12)  # (a projection setting)
    system.realize(ref, Stage.Position)
    markers = Markers()
    markers.add_marker(coupler, [0.5, 0, 0], name="mid")
    markers.move_all_observations([coupler.find_station_location_in_ground(ref, [0.5, 0, 0]) + [0.0, 0.0, 0.2]])
    s = system.realize_topology()  # a start on the reference's branch (assembly is a local search)
    for b, q in zip((crank, coupler, rocker), (0.9, -1.2, -1.0)):
        b.set_one_q(s, 0, q)
    asm = Assembler(system)
    asm.adopt_assembly_goal(markers)
    asm.assemble(s)
    system.realize(s, Stage.Position)
    assert np.abs(s.get_q_err()).max() <= asm.get_tolerance_in_use()
    # the z offset cannot be reached by a planar linkage; the in-plane part is fitted
    p = markers.find_current_marker_location(s, markers.get_marker_index("mid"))
    np.testing.assert_allclose(p[:2], markers.get_observations()[0, :2], atol=1e-4)  # to the goal's accuracy

    exact = Markers()
    exact.add_marker(crank, [1.0, 0, 0])
    exact.move_all_observations([[np.cos(0.7), np.sin(0.7), 0.0]])
    s = system.realize_topology()
    asm = Assembler(system)
    asm.adopt_assembly_error(exact)
    asm.assemble(s)
    # an error is met to the tolerance (1e-9 on the marker's distance, 1 m from the pin: radians)
    assert crank.get_one_q(s, 0) == pytest.approx(0.7, abs=10 * asm.get_tolerance_in_use())


def test_impossible_assembly_is_reported():
    system, matter, (crank, coupler, rocker), ball = four_bar("ground", ground_length=3.5)  # links too short
    s = system.realize_topology()
    with pytest.raises(RuntimeError, match="could not satisfy"):
        Assembler(system).assemble(s)
