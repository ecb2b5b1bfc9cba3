"""Tutorial 16: a simulation driven by agents (ArtiSynth's probes and controllers, seed 000 §2).

A two-link arm hangs under gravity. Nothing in the script loops over time by hand:

- an input probe drives the shoulder: a torque time series (a few samples, interpolated linearly)
  written into the generalized force on the shoulder's speed, ``/matter/shoulder/rate``;
- a PD controller with gravity compensation makes the elbow follow a sinusoid (a ``Function``);
- an output probe records the two angles, the elbow's rate and the system's energy every 10 ms;
- the run prints its summary line; the recording is written as CSV and as a PNG plot.

Run: ``python tutorials/16_simulation_with_probes.py [output folder]`` (default: a temporary folder).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from simtk import (
    Body,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Transform,
)
from simtk.simulation import InputProbe, OutputProbe, PDController, Simulation


def build():
    system = MultibodySystem(name="arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    gravity = Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity")
    segment = Body.Rigid(MassProperties.from_central_inertia(1.2, [0, -0.15, 0], Inertia([0.01, 0.001, 0.01])))
    shoulder = MobilizedBody.Pin(matter.ground, Transform(), segment, Transform(), name="shoulder")
    MobilizedBody.Pin(shoulder, Transform([0, -0.3, 0]), segment, Transform(), name="elbow")
    return system, gravity


def main(out_dir: Path) -> None:
    system, gravity = build()
    state = system.realize_topology()
    sim = Simulation(system, state, step_size=0.005)

    # torque samples for the shoulder (N m), linear in between, held after the last one
    sim.add_input_probe(InputProbe("/matter/shoulder/rate", [0.0, 0.5, 1.0, 1.5, 2.0],
                                   [0.0, 4.0, 4.0, -2.0, 0.0], interpolation="linear"), name="shoulder_torque")
    target = Function.Sinusoid(0.6, 2 * np.pi * 0.5, 0.0)  # elbow angle, rad
    sim.add_controller(PDController({"/matter/elbow/angle": (900.0, 60.0)}, {"/matter/elbow/angle": target},
                                    gravity=gravity, inertia_weighted=True), name="elbow_pd")
    probe = sim.add_output_probe(OutputProbe(["/matter/shoulder|angle", "/matter/elbow|angle", "/matter/elbow|rate",
                                              "/|kinetic_energy", "/|potential_energy"], interval=0.01),
                                 name="recording")

    summary = sim.run(3.0)
    print(summary)

    t, values = probe.to_numpy()
    elbow = probe.column("/matter/elbow|angle")
    err = elbow - np.array([target.calc_value([x]) for x in t])
    print(f"{len(t)} samples; elbow tracking error after 1 s: max {np.abs(err[t >= 1.0]).max():.2e} rad")
    print(f"{'t':>5} {'shoulder':>9} {'elbow':>9} {'target':>9}")
    for k in range(0, len(t), 50):
        print(f"{t[k]:5.2f} {values[k, 0]:9.4f} {values[k, 1]:9.4f} {target.calc_value([t[k]]):9.4f}")

    out_dir.mkdir(parents=True, exist_ok=True)
    probe.to_csv(out_dir / "arm.csv")
    print(f"wrote {out_dir / 'arm.csv'}")
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        print("matplotlib is not installed (pip install 'simtk[plot]'): no plot")
        return
    probe.plot(columns=["/matter/shoulder|angle", "/matter/elbow|angle"], path=out_dir / "arm.png")
    print(f"wrote {out_dir / 'arm.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="simtk_")))
