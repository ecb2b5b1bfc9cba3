"""Cost of drawing: the live viewer's Python side per frame, and the HTML replay's export and size.

A 40-link pin chain (benchmarks/_chain.py), each link decorated with a capsule and a sphere, moving
under gravity:

* ``report``     ``Visualizer.report(state)`` per frame (poses of the 40 bodies, sent to viser), the
  State already realized to Position as it is in a reporter; the target is at most 5 ms;
* ``export``     ``export_html`` of a 10 s recording at 60 frames/s (600 States): wall time and the
  file's size, whose target is under 5 MB.

Run ``python benchmarks/viz.py`` (needs the ``[viz]`` extra for the live part; it is skipped without).
"""
from __future__ import annotations

import argparse
import socket
import tempfile
import time
from pathlib import Path

import numpy as np
from _chain import pin_chain

from simtk import Rotation, Stage, Transform
from simtk.simulation import Simulation, StatesTrajectory
from simtk.viz import Decoration, decorate, export_html

N, FPS, T_FINAL = 40, 60, 10.0


def model():
    system = pin_chain(N)
    matter = system.get_matter_subsystem()
    for i in range(1, matter.get_num_bodies()):
        b = matter.get_mobilized_body(i)
        decorate(b, Decoration.Capsule(0.03, 0.2, color=(0.3, 0.5, 0.8)),
                 Transform(Rotation(np.pi / 2, [1, 0, 0]), [0, -0.25, 0]))
        decorate(b, Decoration.Sphere(0.05, color=(0.8, 0.3, 0.2)))
    state = system.realize_topology()
    for i in range(N):
        system.set_state_variable_value(state, f"/matter/link{i}/angle", 0.02 * (i + 1))
    return system, state


def record(system, state):
    sim = Simulation(system, state, step_size=1 / FPS)
    traj = sim.add_output_probe(StatesTrajectory())
    sim.run(T_FINAL)
    return traj


def bench_report(system, traj, repeat: int) -> float | None:
    try:
        import viser  # noqa: F401
    except ImportError:
        return None
    from simtk.viz import Visualizer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Visualizer(system, port=port) as viz:
        states = list(traj)
        for s in states:
            system.realize(s, Stage.Position)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            for s in states:
                viz.report(s)
            best = min(best, (time.perf_counter() - t0) / len(states))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    system, state = model()
    t0 = time.perf_counter()
    traj = record(system, state)
    print(f"recorded {len(traj)} States of a {N}-body chain in {time.perf_counter() - t0:.2f} s")

    per_frame = bench_report(system, traj, args.repeat)
    if per_frame is None:
        print("report: skipped (viser is not installed: pip install 'simtk[viz]')")
    else:
        print(f"report:  {1e3 * per_frame:.2f} ms per frame for {N} bodies (target <= 5 ms)")

    with tempfile.TemporaryDirectory() as d:
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            path = export_html(traj, Path(d) / "chain.html")
            best = min(best, time.perf_counter() - t0)
        size = path.stat().st_size
    print(f"export:  {best:.2f} s for {len(traj)} frames, file {size / 1e6:.2f} MB (target < 5 MB)")


if __name__ == "__main__":
    main()
