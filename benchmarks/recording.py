"""Cost of the simulation driver and of recording, against a bare TimeStepper loop, in one run.

A 7-link pin chain under gravity, RK-Merson at accuracy 1e-6, simulated for 10 s:

* ``bare``       a ``TimeStepper.step_to`` loop to every 10 ms (what a script does by hand);
* ``driver``     ``Simulation.run`` with a 10 ms step and no agents;
* ``recording``  ``Simulation.run`` with an output probe of 10 outputs every 10 ms.

Printed: the wall time of each (best of ``--repeat``) and the ratios driver / bare (the driver's own
overhead) and recording / driver (the cost of recording). Run ``python benchmarks/recording.py``.
"""
from __future__ import annotations

import argparse
import time

from _chain import pin_chain

from simtk import RungeKuttaMersonIntegrator, TimeStepper
from simtk.simulation import OutputProbe, Simulation

T_FINAL, DT = 10.0, 0.01


def chain():
    system = pin_chain(7)
    state = system.realize_topology()
    for i in range(7):
        system.set_state_variable_value(state, f"/matter/link{i}/angle", 0.3 if i == 0 else 0.1 * (-1) ** i)
    return system, state


def integrator(system):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    return integ


def bare() -> tuple[float, int]:
    system, state = chain()
    integ = integrator(system)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    t0 = time.perf_counter()
    for k in range(1, int(round(T_FINAL / DT)) + 1):
        ts.step_to(k * DT)
    return time.perf_counter() - t0, integ.get_num_steps_taken()


def driver(record: bool) -> tuple[float, int]:
    system, state = chain()
    integ = integrator(system)
    sim = Simulation(system, state, integrator=integ, step_size=DT, progress=False)
    if record:
        outputs = [f"/matter/link{i}|angle" for i in range(7)] + ["/matter/link6|position", "/|kinetic_energy",
                                                                  "/|potential_energy"]
        sim.add_output_probe(OutputProbe(outputs, interval=DT), name="recording")
    t0 = time.perf_counter()
    sim.run(T_FINAL)
    return time.perf_counter() - t0, integ.get_num_steps_taken()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    best = {}
    for _ in range(args.repeat):  # interleaved, so that a slow spell of the machine hits all three
        for name, fn in (("bare", bare), ("driver", lambda: driver(False)), ("recording", lambda: driver(True))):
            wall, steps = fn()
            if name not in best or wall < best[name][0]:
                best[name] = (wall, steps)
    print(f"7-link chain, RK-Merson 1e-6, {T_FINAL:g} s simulated, stops every {DT * 1e3:g} ms (best of {args.repeat})")
    for name, (wall, steps) in best.items():
        print(f"  {name:<10s} {wall:8.3f} s  {steps:6d} integrator steps  {wall / steps * 1e6:7.1f} us per step")
    print(f"driver overhead: driver / bare = {best['driver'][0] / best['bare'][0]:.3f}")
    print(f"recording 10 outputs every {DT * 1e3:g} ms: recording / driver = "
          f"{best['recording'][0] / best['driver'][0]:.3f}")


if __name__ == "__main__":
    main()
