"""A gait-like OpenSim model of CustomJoints, 1 s with Runge-Kutta-Merson: simtk against OpenSim.

The model (built with opensim's Python API, written to a ``.osim`` file and loaded by
``simtk.io.load_osim``) has 19 coordinates, all on CustomJoints, as OpenSim's gait models have them:
a pelvis of six coordinates on Ground (three rotations, three translations), a lumbar joint of three
rotations, and per leg a hip of three rotations, a knee of one coordinate whose two translations are
SimmSplines of the knee angle (OpenSim's knee) and an ankle of one; gravity and a
SpringGeneralizedForce (a spring and a damper) on every coordinate of the lumbar joint and the legs.
Every coordinate starts with a speed, so all the joints move.

For each accuracy (1e-3, 1e-6) it prints the wall time of a 1 s simulation with

* simtk, FunctionBased as a Python (Custom) mobilizer: what every version before the compiled kind
  ran (``FunctionBased._use_compiled_kind = False``; its kinematics in Python per body per stage);
* simtk, FunctionBased as the compiled kind (the kernels compute it: the compiled time loop runs);
* OpenSim 4.6's Manager (Simbody's RungeKuttaMersonIntegrator underneath) at the same accuracy,

the ratios between them, the steps each took, and how far apart the final coordinates are (the
three are one model integrated to the same accuracy: they agree to about the accuracy).

Run with ``python benchmarks/opensim_gait.py`` (``--repeats N``: the best of N runs, default 3). The
times include the integrator's (the Manager's) initialization.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import opensim as osim

# this checkout's simtk (and its built core), whatever another checkout installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules, also when a test imports it
from _opensim_manager import run_manager  # noqa: E402

from simtk.io import load_osim  # noqa: E402
from simtk.math import RungeKuttaMersonIntegrator  # noqa: E402
from simtk.multibody.tree.function_based import FunctionBased  # noqa: E402

T_END = 1.0
ACCURACIES = (1e-3, 1e-6)

#: (name, parent, mass, mass center, central inertia diagonal, joint location in the parent,
#:  joint kind) of each body; the kinds are "free" (6 coordinates), "ball3" (three rotations),
#:  "knee" (one coordinate, spline translations) and "hinge" (one rotation about z)
BODIES = [
    ("pelvis", "ground", 11.8, (-0.07, 0, 0), (0.10, 0.09, 0.05), (0, 0.95, 0), "free"),
    ("torso", "pelvis", 26.8, (0, 0.32, 0), (1.47, 0.76, 1.43), (-0.10, 0.08, 0), "ball3"),
    ("femur_r", "pelvis", 9.3, (0, -0.17, 0), (0.13, 0.034, 0.14), (-0.07, -0.07, 0.084), "ball3"),
    ("tibia_r", "femur_r", 3.7, (0, -0.19, 0), (0.050, 0.005, 0.051), (0, 0, 0), "knee"),
    ("foot_r", "tibia_r", 1.3, (0.1, 0.03, 0), (0.0014, 0.0039, 0.0041), (0, -0.43, 0), "hinge"),
    ("femur_l", "pelvis", 9.3, (0, -0.17, 0), (0.13, 0.034, 0.14), (-0.07, -0.07, -0.084), "ball3"),
    ("tibia_l", "femur_l", 3.7, (0, -0.19, 0), (0.050, 0.005, 0.051), (0, 0, 0), "knee"),
    ("foot_l", "tibia_l", 1.3, (0.1, 0.03, 0), (0.0014, 0.0039, 0.0041), (0, -0.43, 0), "hinge"),
]

#: OpenSim gait2392's knee: the tibia's translation in the femur as SimmSplines of the knee angle
KNEE_ANGLE = [-2.0944, -1.74533, -1.39626, -1.0472, -0.698132, -0.349066, -0.174533, 0.197344, 0.337395,
              0.490178, 1.52716, 2.0944]
KNEE_X = [-0.0032, 0.00179, 0.00411, 0.0041, 0.00212, -0.001, -0.0031, -0.005227, -0.005435, -0.005574,
          -0.005435, -0.00525]
KNEE_Y = [-0.4226, -0.4082, -0.399, -0.3976, -0.4, -0.4022, -0.4051, -0.4101, -0.4125, -0.4145, -0.4163,
          -0.4183]


def _vec3(v) -> "osim.Vec3":
    return osim.Vec3(*map(float, v))


def _transform_axis(st, k: int, axis, coord: str | None, function=None) -> None:
    ta = st.updTransformAxis(k)
    ta.setAxis(_vec3(axis))
    if coord is not None:
        names = osim.ArrayStr()
        names.append(coord)
        ta.setCoordinateNames(names)
        ta.set_function(function if function is not None else osim.LinearFunction(1.0, 0.0))


def _spatial_transform(name: str, kind: str) -> "osim.SpatialTransform":
    st = osim.SpatialTransform()
    rot = [(0, 0, 1), (1, 0, 0), (0, 1, 0)]  # OpenSim's order for the hips and pelvis: flexion first
    for k in range(3):
        _transform_axis(st, k, rot[k], None)
        _transform_axis(st, 3 + k, np.eye(3)[k], None)
    if kind in ("free", "ball3"):
        for k in range(3):
            _transform_axis(st, k, rot[k], f"{name}_r{k}")
    if kind == "free":
        for k in range(3):
            _transform_axis(st, 3 + k, np.eye(3)[k], f"{name}_t{k}")
    if kind in ("knee", "hinge"):
        _transform_axis(st, 0, (0, 0, 1), f"{name}_angle")
    if kind == "knee":
        for k, ys in ((3, KNEE_X), (4, KNEE_Y)):
            spline = osim.SimmSpline()
            for x, y in zip(KNEE_ANGLE, ys):
                spline.addPoint(x, y)
            _transform_axis(st, k, np.eye(3)[k - 3], f"{name}_angle", spline)
    return st


def build_osim(path: str) -> int:
    """Write the model to ``path``; returns its number of coordinates."""
    model = osim.Model()
    model.setName("gait_custom_joints")
    model.setGravity(osim.Vec3(0, -9.80665, 0))
    made = {"ground": model.getGround()}
    rng = np.random.default_rng(2392)
    for name, parent, m, com, I, loc, kind in BODIES:
        body = osim.Body(name, m, _vec3(com), osim.Inertia(*I))
        model.addBody(body)
        joint = osim.CustomJoint(f"{name}_joint", made[parent], _vec3(loc), osim.Vec3(0), body, osim.Vec3(0),
                                 osim.Vec3(0), _spatial_transform(name, kind))
        model.addJoint(joint)
        made[name] = body
        for k in range(joint.numCoordinates()):
            c = joint.upd_coordinates(k)
            c.setRangeMin(-10.0)
            c.setRangeMax(10.0)
            c.setDefaultSpeedValue(float(rng.uniform(-1.5, 1.5)))
            if kind == "knee":
                c.setDefaultValue(-0.5)
            elif kind != "free":
                c.setDefaultValue(float(rng.uniform(-0.3, 0.3)))
            if kind != "free":
                spring = osim.SpringGeneralizedForce(c.getName())
                spring.setName(f"{c.getName()}_spring")
                spring.setStiffness(40.0)
                spring.setRestLength(c.getDefaultValue())
                spring.setViscosity(2.0)
                model.addForce(spring)
    model.finalizeConnections()
    model.printToXML(path)
    return model.getNumCoordinates()


def run_simtk(path: str, accuracy: float, compiled: bool) -> tuple[float, np.ndarray, int, str]:
    """(wall time, final q, steps, fast path) of 1 s of simtk's RK-Merson."""
    FunctionBased._use_compiled_kind = compiled
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_osim(path)
    finally:
        FunctionBased._use_compiled_kind = True
    state = model.initial_state()
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_accuracy(accuracy)
    t0 = time.perf_counter()
    integ.initialize(state)
    while integ.get_time() < T_END:
        integ.step_to(T_END)
    wall = time.perf_counter() - t0
    end = integ.get_state()
    q = np.array([c.mobod.get_q(end)[c.index] for c in model.coordinates.values()])
    return wall, q, integ.get_num_steps_taken(), integ.describe_fast_path()


def main() -> None:
    osim.Logger.setLevelString("Warn")  # not the Manager's report of every run
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gait_custom_joints.osim")
        n = build_osim(path)
        print(f"# OpenSim gait-like model: {len(BODIES)} bodies on CustomJoints, {n} coordinates; "
              f"1 s of RK-Merson; best of {args.repeats}")
        print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
              f"OpenSim {osim.__version__}")
        print(f"{'accuracy':>9} {'simtk before s':>15} {'simtk after s':>14} {'OpenSim s':>10} "
              f"{'before/after':>13} {'after/OpenSim':>14} {'steps (b/a/O)':>15} {'|q_a - q_O|':>12}")
        for acc in ACCURACIES:
            before = min((run_simtk(path, acc, False) for _ in range(args.repeats)), key=lambda r: r[0])
            after = min((run_simtk(path, acc, True) for _ in range(args.repeats)), key=lambda r: r[0])
            peer = min((run_manager(path, T_END, acc) for _ in range(args.repeats)), key=lambda r: r[0])
            peer = (*peer[:2], run_manager(path, T_END, acc, count=True)[2])
            assert after[3].startswith("compiled time loop"), after[3]
            print(f"{acc:9.0e} {before[0]:15.4f} {after[0]:14.4f} {peer[0]:10.4f} {before[0] / after[0]:13.1f} "
                  f"{after[0] / peer[0]:14.2f} {f'{before[2]}/{after[2]}/{peer[2]}':>15} "
                  f"{np.abs(after[1] - peer[1]).max():12.2e}")
        print(f"# before: {before[3]}")
        print(f"# after:  {after[3]}")


if __name__ == "__main__":
    main()
