"""Tutorial 17: waypoints (go back in time, rerun bitwise) and step rejection (ArtiSynth §2.5).

A block drops onto a stiff stop. The stop is a user force that refuses a trial step which pushes
the block deeper into it than 8 mm: it raises ``StepAdjustment`` with a shrink factor and a reason,
and the integrator retries the step smaller. A controller with memory (a filter kept as a discrete
variable of the State) then lifts the block back toward 10 cm.

A waypoint saved at t = 0.5 s lets us go back and run the second half again: the rerun matches the
first run bit for bit, controller memory included, because everything the agents remember is in
the State.

Run: ``python tutorials/17_waypoints_and_rejection.py``
"""
from __future__ import annotations

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    StepAdjustment,
    Transform,
)
from simtk.simulation import Controller, Monitor, OutputProbe, Simulation


class Stop(Force.Custom.Implementation):
    """A stiff stop at height 0 (k = 1e5 N/m, c = 200 N s/m) that vetoes steps going deeper than ``limit``."""

    def __init__(self, block, limit):
        super().__init__()
        self.block, self.limit = block, limit

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        x = self.block.get_length(state)
        if x < -self.limit:
            raise StepAdjustment(0.3, f"the block is {-x * 1e3:.1f} mm into the stop (limit {self.limit * 1e3:g} mm)")
        if x < 0:
            mobility_forces[0] += -1e5 * x - 200.0 * self.block.get_rate(state)


class Lift(Controller):
    """From t = 0.4 s, pushes the block toward 0.1 m using a filtered height (its memory is State)."""

    def __init__(self, block):
        super().__init__()
        self.block = block
        self.add_discrete_variable("filtered", Stage.Dynamics, 0.0)

    def compute(self, state):
        y = self.get_discrete_variable_value(state, "filtered")
        y += 0.2 * (self.block.get_length(state) - y)
        self.set_discrete_variable_value(state, "filtered", y)
        lift = 9.81 + 30.0 * (0.1 - y) - 5.0 * self.block.get_rate(state) if state.get_time() >= 0.4 else 0.0
        self.set_input(state, "/matter/block/rate", lift)


class Deepest(Monitor):
    def __init__(self, block):
        super().__init__()
        self.block, self.depth = block, 0.0

    def monitor(self, state):
        self.depth = max(self.depth, -self.block.get_length(state))


def main() -> None:
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    block = MobilizedBody.Slider(matter.ground, Transform(), body, Transform(), name="block")
    Force.MobilityConstantForce(forces, block, 0, -9.81, name="weight")
    Force.Custom(forces, Stop(block, 8e-3), name="stop")
    state = system.realize_topology()
    block.set_length(state, 0.2)

    integ = RungeKuttaMersonIntegrator(system)  # its first tries at the impact go too deep
    integ.set_accuracy(1e-4)
    sim = Simulation(system, state, integrator=integ, step_size=0.02)
    sim.add_controller(Lift(block), name="lift")
    deepest = sim.add_monitor(Deepest(block), name="deepest")
    record = sim.add_output_probe(OutputProbe(["/matter/block|length", "/matter/block|rate"], interval=0.1),
                                  name="height")
    sim.add_waypoint(0.5)
    print(sim.run(1.0))
    print(f"steps retried: {integ.get_num_step_adjustments()}; last reason: "
          f"{integ.get_last_step_adjustment_reason()}")
    print(f"deepest penetration the monitor saw (it looks every 20 ms): {deepest.depth * 1e3:.2f} mm")
    first_t, first = record.to_numpy()
    first_y = np.array(sim.get_state().get_y())

    sim.rewind(0.5)
    print(f"rewound to t = {sim.get_time()}; {len(record)} samples kept")
    print(sim.run(1.0))
    t, again = record.to_numpy()
    same = np.array_equal(first, again) and np.array_equal(first_y, sim.get_state().get_y())
    print(f"the rerun from the waypoint is bitwise the first run: {same}")
    print(f"{'t':>5} {'height (m)':>11} {'rate (m/s)':>11}")
    for k in range(len(t)):
        print(f"{t[k]:5.2f} {again[k, 0]:11.5f} {again[k, 1]:11.5f}")
    assert same


if __name__ == "__main__":
    main()
