"""A Simulation leaves the System the user built as it was: its agents and driver inputs live beside it.

Laws: after a run (and during another Simulation's) the System has the subsystems, elements and
topology version it had before, so a State made before the run still realizes, reads and steps, and the
model file written after the run is the one written before; each Simulation sees only its own agents;
what a run hands back (its State, its trajectory) is a State of that System; a run split in two is
bitwise one run, and a property changed between the two is seen by the second.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.io import load_model, save_model
from simtk.math.time_stepper import TimeStepper
from simtk.simulation import Controller, Monitor, OutputProbe, PDController, Simulation, StatesTrajectory


def arm(n: int = 3):
    """An n-link planar pin chain under gravity."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    gravity = Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity")
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
    return system, matter, forces, gravity


def structure(system) -> tuple:
    """What the user built: every component's path, and the topology version."""
    return (tuple(c.get_absolute_path() for c in system.get_subcomponents()), system.get_num_subsystems(),
            system.get_system_topology_cache_version())


def held_arm_simulation(system, state, name="hold"):
    sim = Simulation(system, state, step_size=0.01)
    targets = {f"/matter/link{i}/angle": 0.1 * (i + 1) for i in range(system.get_matter_subsystem().get_num_bodies() - 1)}
    sim.add_controller(PDController({p: (50.0, 5.0) for p in targets}, targets), name=name)
    sim.add_output_probe(OutputProbe(["/matter/link0|angle"], interval=0.05), name="rec")
    return sim


# ---------------------------------------------------------------------- the System as built
def test_a_state_made_before_a_run_still_works_with_the_system_after_it():
    system, matter, forces, _ = arm()
    state = system.realize_topology()
    system.set_state_variable_value(state, "/matter/link1/angle", 0.4)
    before = structure(system)
    sim = held_arm_simulation(system, state)
    assert structure(system) == before  # adding agents changes nothing either
    sim.run(0.1)
    assert structure(system) == before
    assert forces.get_num_forces() == 1
    # the State made before the run: realized, read, stepped
    system.realize(state, Stage.Acceleration)
    assert matter.get_component("link1").get_one_q(state, 0) == 0.4
    assert np.isfinite(state.get_udot()).all()
    stepper = TimeStepper(system, SemiExplicitEulerIntegrator(system, 1e-3))
    stepper.initialize(state)
    stepper.step_to(0.01)
    assert stepper.get_state().get_time() == 0.01


def test_save_model_after_a_run_writes_the_system_as_built(tmp_path):
    system, *_ = arm()
    state = system.realize_topology()
    save_model(system, tmp_path / "before.simtk")
    sim = held_arm_simulation(system, state)
    sim.run(0.1)
    save_model(system, tmp_path / "after.simtk")
    assert (tmp_path / "after.simtk").read_text() == (tmp_path / "before.simtk").read_text()
    loaded = load_model(tmp_path / "after.simtk")
    assert [c.get_absolute_path() for c in loaded.get_subcomponents()] == \
        [c.get_absolute_path() for c in system.get_subcomponents()]


class Census(Monitor):
    """Records the paths of every component of the System while the run goes on."""

    def __init__(self, system):
        super().__init__()
        self.system, self.seen = system, set()

    def monitor(self, state):
        self.seen.update(c.get_absolute_path() for c in self.system.get_subcomponents())


def test_two_simulations_of_one_system_do_not_see_each_others_agents():
    system, *_ = arm()
    state = system.realize_topology()
    a = held_arm_simulation(system, state, name="pd")
    census_a = a.add_monitor(Census(system), name="census")
    b = held_arm_simulation(system, state, name="pd")  # the same names: each Simulation has its own agents
    census_b = b.add_monitor(Census(system), name="census")
    free = Simulation(system, state, step_size=0.01)
    census_free = free.add_monitor(Census(system), name="census")
    a.run(0.05)
    b.run(0.05)
    free.run(0.05)
    a.run(0.1)  # a goes on after b's and free's runs
    assert "/agents/pd" in census_a.seen and "/agents/pd" in census_b.seen
    assert "/agents/pd" not in census_free.seen and "/forces/driver_inputs" not in census_free.seen
    assert a.get_time() == 0.1 and b.get_time() == 0.05
    # the runs between a's two did not disturb it: a is bitwise one run of its own to 0.1
    alone = held_arm_simulation(system, state, name="pd")
    alone.run(0.1)
    np.testing.assert_array_equal(a.get_state().get_y(), alone.get_state().get_y())


def test_two_runs_with_the_same_agent_names_do_not_collide():
    system, *_ = arm()
    state = system.realize_topology()
    first = held_arm_simulation(system, state, name="pd")
    first.run(0.05)
    second = held_arm_simulation(system, state, name="pd")
    second.run(0.05)
    np.testing.assert_array_equal(first.get_state().get_y(), second.get_state().get_y())


# ---------------------------------------------------------------------- results in terms of the System
class Memory(Controller):
    """A controller with memory (a discrete variable): the number of driver steps it took."""

    def __init__(self):
        super().__init__()
        self.add_discrete_variable("count", Stage.Dynamics, 0)

    def compute(self, state):
        self.set_discrete_variable_value(state, "count", self.get_discrete_variable_value(state, "count") + 1)
        self.set_input(state, "/matter/link0/rate", 0.1)


def test_results_are_states_of_the_system_as_built():
    system, matter, forces, gravity = arm(2)
    state = system.realize_topology()
    gravity.disable(state)  # a discrete variable of the user's force subsystem: carried both ways
    sim = Simulation(system, state, integrator=SemiExplicitEulerIntegrator(system, 1e-3), step_size=0.01)
    memory = sim.add_controller(Memory(), name="memory")
    traj = sim.add_output_probe(StatesTrajectory(interval=0.05), name="traj")
    sim.run(0.1)
    end = sim.get_state()
    assert end.get_system() is system and end.get_time() == 0.1
    system.realize(end, Stage.Acceleration)
    assert gravity.is_disabled(end)
    assert memory.get_discrete_variable_value(end, "count") == 10
    assert [s.get_time() for s in traj] == [0.0, 0.05, 0.1]
    for s in traj:
        system.realize(s, Stage.Velocity)
        assert gravity.is_disabled(s)
    # free of gravity, pushed by 0.1 N m on link0 alone: the rates grow linearly (semi-explicit Euler is exact)
    assert matter.get_component("link0").get_one_u(end, 0) > 0
    sim.run(0.2)
    assert memory.get_discrete_variable_value(sim.get_state(), "count") == 20


def test_a_run_split_in_two_is_bitwise_one_run():
    system, *_ = arm()
    state = system.realize_topology()
    one = held_arm_simulation(system, state)
    one.run(0.2)
    two = held_arm_simulation(system, state)
    two.run(0.1)
    two.run(0.2)
    np.testing.assert_array_equal(two.get_state().get_y(), one.get_state().get_y())


def test_a_property_changed_between_runs_is_seen_by_the_next_run():
    system, matter, forces, gravity = arm(1)
    state = system.realize_topology()
    matter.get_component("link0").set_one_q(state, 0, 1.0)  # swinging under gravity
    sim = Simulation(system, state, integrator=SemiExplicitEulerIntegrator(system, 1e-3), step_size=0.01)
    sim.run(0.1)
    gravity.set_property("gravity", [0.0, 0.0, 0.0])
    u_before = matter.get_component("link0").get_one_u(sim.get_state(), 0)
    sim.run(0.2)
    # no force at all: the rate is constant (up to the round-off of the steps' arithmetic)
    u_after = matter.get_component("link0").get_one_u(sim.get_state(), 0)
    assert u_before != 0 and u_after == pytest.approx(u_before, rel=1e-12)


class Changer(Monitor):
    """Requests a structural change of the user's System once, at ``t``: a damper on link0."""

    def __init__(self, system, t):
        super().__init__()
        self.system, self.t, self.done = system, t, False

    def monitor(self, state):
        if not self.done and state.get_time() >= self.t:
            self.done = True
            forces = self.system.get_component("/forces")
            link0 = self.system.get_component("/matter/link0")
            self.system.request_change(lambda s: Force.MobilityLinearDamper(forces, link0, 0, 1.0, name="damp"))


def test_a_change_the_user_requests_during_a_run_stays_and_the_additions_go():
    system, matter, forces, _ = arm()
    state = system.realize_topology()
    sim = held_arm_simulation(system, state)
    sim.add_monitor(Changer(system, 0.05), name="changer")
    sim.run(0.1)
    paths = structure(system)[0]
    assert "/forces/damp" in paths and not any(p.startswith("/agents") or "driver" in p for p in paths)
    assert [forces.get_force(i).get_force_index() for i in range(forces.get_num_forces())] == [0, 1]
    fresh = system.realize_topology()
    system.realize(fresh, Stage.Acceleration)
    system.realize(sim.get_state(), Stage.Acceleration)
    sim.run(0.2)  # and the simulation goes on in the changed System
    assert sim.get_time() == 0.2 and np.isfinite(sim.get_state().get_y()).all()


def test_a_simulation_run_from_inside_another_run_of_the_same_system_is_refused():
    system, *_ = arm()
    state = system.realize_topology()
    inner = Simulation(system, state, step_size=0.01)

    class Nested(Monitor):
        def monitor(self, s):
            inner.run(0.01)

    outer = Simulation(system, state, step_size=0.01)
    outer.add_monitor(Nested(), name="nested")
    with pytest.raises(RuntimeError, match="another Simulation"):
        outer.run(0.01)
    before = structure(system)
    inner.run(0.01)  # both usable afterwards, the System as built
    assert structure(system) == before


def test_a_property_an_input_probe_changes_during_a_run_is_seen_by_the_states_made_before():
    # the property stays changed (an input to the System, documented so); the user's States see it at once,
    # as they see any property change
    from simtk.simulation import InputProbe

    system, matter, forces, gravity = arm(1)
    before = system.realize_topology()
    matter.get_component("link0").set_one_q(before, 0, 0.5)
    system.realize(before, Stage.Acceleration)
    assert before.get_udot()[0] != 0  # swinging under gravity
    sim = Simulation(system, before, step_size=0.1)
    sim.add_input_probe(InputProbe("/forces/gravity.gravity", [0.0, 1.0], [[0.0, 0.0, 0.0]] * 2), name="off")
    sim.run(0.2)
    system.realize(before, Stage.Acceleration)
    assert before.get_udot()[0] == 0.0


def test_a_diverged_state_is_handed_back_as_it_is():
    system, matter, *_ = arm(2)
    sim = Simulation(system, system.realize_topology(), step_size=0.01)
    sim.run(0.01)
    own = sim._current_state().copy()
    own._y[1] = np.inf  # what a diverged step leaves (set_y refuses it)
    out = sim._beside.export(own)
    assert out.get_system() is system and out.get_time() == 0.01
    assert system.get_state_variable_value(out, "/matter/link1/angle") == np.inf
    assert system.get_state_variable_value(out, "/matter/link0/angle") == own._y[0]


def test_the_modeling_options_of_the_starting_state_are_kept():
    # Euler angles chosen in the user's State (a Model-stage discrete variable of the matter): the run, and
    # a PDController of those angles, use them; before, the State was carried by path only and lost them
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    MobilizedBody.Ball(matter.ground, Transform(),
                       Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia(0.1))), Transform(),
                       name="ball")
    state = system.realize_topology()
    matter.set_use_euler_angles(state, True)
    system.realize(state, Stage.Model)
    state.upd_q()[:] = [0.3, 0.0, 0.0]
    sim = Simulation(system, state, step_size=0.01)
    sim.add_controller(PDController({"/matter/ball/q0": (10.0, 1.0)}, {"/matter/ball/q0": 0.0}), name="pd")
    sim.run(0.1)
    end = sim.get_state()
    assert matter.get_use_euler_angles(end) and end.get_nq() == 3
    assert 0 < end.get_q()[0] < 0.3  # pulled toward 0 from 0.3
