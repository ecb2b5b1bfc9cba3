"""Geometry paths in the compiled time loop: OpenSim's Gait10dof18musc with its 18 muscles as PathSprings.

The published ``subject01_metabolics_path_spring.osim`` (found by tests/osim_published.py) is
rewritten with every muscle replaced by a PathSpring along the muscle's own path (stiffness 2000 N/m,
resting length 0.9 of its default length, dissipation 0.05 s/m): 19 path springs with fixed,
conditional and moving points, no wrapping. It prints the wall time of a ``T_END`` s simulation with
Runge-Kutta-Merson at 1e-4 in

* simtk with the path springs (the kind GeometryPath, compiled: the compiled time loop runs),
* simtk with them disabled (the rest of the model alone),
* OpenSim 4.6's Manager on the same file,

and the ratios between them, and how far apart the final coordinates of simtk and OpenSim are (the
accelerations agree to round-off, see tests/crosscheck/test_opensim_paths.py; the final coordinates
differ by the integrators' error, which shrinks with the accuracy: ~2e-2 at 1e-4 after 1 s of this
stiff fall, 5e-7 at 1e-8 after 0.3 s).

Run with ``python benchmarks/paths.py`` (``--repeats N``: the best of N runs, default 3).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import opensim as osim

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _opensim_manager import run_manager  # noqa: E402
from osim_published import published_model  # noqa: E402

from simtk import Force, Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from simtk.math import RungeKuttaMersonIntegrator  # noqa: E402

T_END = 1.0
ACCURACY = 1e-4


def springs_file(folder: Path) -> Path:
    src = published_model("Models/Gait10dof18musc/subject01_metabolics_path_spring.osim", skip=False)
    if src is None:
        raise SystemExit("OpenSim's published models are not available (see tests/osim_published.py)")
    om = osim.Model(str(src))
    s = om.initSystem()
    lengths = {}
    for i in range(om.getMuscles().getSize()):
        mu = om.getMuscles().get(i)
        lengths[mu.getName()] = mu.getGeometryPath().getLength(s)
    tree = ET.parse(src)
    for fs in tree.getroot().iter("ForceSet"):
        for objs in fs.findall("objects"):
            for el in objs:
                if el.get("name") in lengths:
                    el.tag = "PathSpring"
                    for c in list(el):
                        if c.tag != "GeometryPath":
                            el.remove(c)
                    for tag, v in (("resting_length", 0.9 * lengths[el.get("name")]), ("stiffness", 2000.0),
                                   ("dissipation", 0.05)):
                        ET.SubElement(el, tag).text = repr(v)
    out = folder / "gait_path_springs.osim"
    tree.write(out)
    return out


def run_simtk(path: Path, with_paths: bool) -> tuple[float, np.ndarray, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_osim(path)
    state = m.initial_state()
    if not with_paths:
        for made in m.force_elements.values():
            for f in made:
                if isinstance(f, (Force.PathSpring, Force.PathActuator)):
                    f.disable(state)
    m.system.realize(state, Stage.Acceleration)
    integ = RungeKuttaMersonIntegrator(m.system)
    integ.set_accuracy(ACCURACY)
    t0 = time.perf_counter()
    integ.initialize(state)
    integ.step_to(T_END)
    wall = time.perf_counter() - t0
    st = integ.get_state()
    return wall, np.array([m.get_coordinate_value(st, n) for n in m.coordinates]), integ.describe_fast_path()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    osim.Logger.setLevelString("error")
    with tempfile.TemporaryDirectory() as d:
        path = springs_file(Path(d))
        best = {}
        for _ in range(args.repeats):
            for key, fn in (("paths", lambda: run_simtk(path, True)), ("none", lambda: run_simtk(path, False)),
                            ("opensim", lambda: run_manager(str(path), T_END, ACCURACY))):
                r = fn()
                if key not in best or r[0] < best[key][0]:
                    best[key] = r
    print(f"Gait10dof18musc, 19 path springs, {T_END} s, RK-Merson {ACCURACY:g} (best of {args.repeats})")
    print(f"  simtk with paths:     {best['paths'][0]:.3f} s   ({best['paths'][2].split(';')[0]})")
    print(f"  simtk paths disabled: {best['none'][0]:.3f} s")
    print(f"  OpenSim Manager:      {best['opensim'][0]:.3f} s")
    print(f"  ratio OpenSim / simtk (paths): {best['opensim'][0] / best['paths'][0]:.1f}")
    print(f"  ratio simtk paths / no paths:  {best['paths'][0] / best['none'][0]:.2f}")
    print(f"  max |q_simtk - q_opensim| at the end: {np.abs(best['paths'][1] - best['opensim'][1]).max():.2e}")


if __name__ == "__main__":
    main()
