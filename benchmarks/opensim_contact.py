"""A leg landing on its foot, driven by a PrescribedController: simtk against OpenSim's Manager.

The model (built with opensim's Python API, written to a ``.osim`` file and read by
``simtk.io.load_osim``): a pelvis on a PlanarJoint (x, y and the pitch), a thigh, a shank and a foot
on PinJoints; two ContactSpheres under the foot (heel and toe) and one under the knee against a
ContactHalfSpace floor, one HuntCrossleyForce; CoordinateActuators on the hip, knee and ankle whose
controls a PrescribedController gives as functions of time (a constant, a line, a polynomial). No
muscles. Dropped from 5 cm above the floor, the foot lands and slides and the leg folds onto
the knee.

It prints the wall time of ``T_END`` s with simtk's and with OpenSim 4.6's Runge-Kutta-Merson at the
same accuracy, their ratio, the steps each took, the contacts seen and how far apart the final
coordinates are (one model integrated to the same accuracy: they agree to about the accuracy).
Run with ``python benchmarks/opensim_contact.py`` (``--repeats N``: the best of N runs, default 3).
The times include the integrator's (the Manager's) initialization.
"""
from __future__ import annotations

import argparse
import math
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

T_END = 0.3
ACCURACIES = (1e-3, 1e-6)


def _v(*a) -> "osim.Vec3":
    return osim.Vec3(*map(float, a))


def build_leg(path: str) -> None:
    """Write the leg model to ``path``."""
    m = osim.Model()
    m.setName("leg_landing")
    m.setGravity(_v(0, -9.80665, 0))
    segs = [("pelvis", 10.0, 0.2), ("thigh", 7.0, 0.4), ("shank", 3.5, 0.4), ("foot", 1.0, 0.05)]
    bodies = {}
    for name, mass, length in segs:
        bodies[name] = osim.Body(name, mass, _v(0, -length / 2, 0),
                                 osim.Inertia(mass * length ** 2 / 12, mass * length ** 2 / 24, mass * length ** 2 / 12))
        m.addBody(bodies[name])
    m.addJoint(osim.PlanarJoint("ground_pelvis", m.getGround(), _v(0, 0, 0), _v(0, 0, 0),
                                bodies["pelvis"], _v(0, 0, 0), _v(0, 0, 0)))
    for name, parent, child, plen in (("hip", "pelvis", "thigh", 0.2), ("knee", "thigh", "shank", 0.4),
                                      ("ankle", "shank", "foot", 0.4)):
        m.addJoint(osim.PinJoint(name, bodies[parent], _v(0, -plen, 0), _v(0, 0, 0),
                                 bodies[child], _v(0, 0, 0), _v(0, 0, 0)))
    floor = osim.ContactHalfSpace(_v(0, 0, 0), _v(0, 0, -math.pi / 2), m.getGround(), "floor")
    m.addContactGeometry(floor)
    hc = osim.HuntCrossleyForce()
    hc.setName("foot_contact")
    hc.addGeometry("floor")
    for name, body, loc, r in (("heel", "foot", (-0.05, -0.02, 0), 0.03), ("toe", "foot", (0.15, -0.03, 0), 0.02),
                               ("kneecap", "shank", (0.05, 0, 0), 0.04)):
        m.addContactGeometry(osim.ContactSphere(r, _v(*loc), bodies[body], name))
        hc.addGeometry(name)
    hc.setStiffness(2e6)
    hc.setDissipation(1.0)
    hc.setStaticFriction(0.8)
    hc.setDynamicFriction(0.6)
    hc.setViscousFriction(0.2)
    hc.setTransitionVelocity(0.1)
    m.addForce(hc)
    pc = osim.PrescribedController()
    pc.setName("drive")
    for cname, F, f in (("hip_coord_0", 5.0, osim.Constant(0.3)),
                        ("knee_coord_0", 8.0, osim.LinearFunction(-2.0, 0.4)),
                        ("ankle_coord_0", 1.0, osim.PolynomialFunction(osim.Vector([4.0, -1.0, 0.2])))):
        a = osim.CoordinateActuator(cname)
        a.setName(cname.split("_")[0] + "_torque")
        a.setOptimalForce(F)
        m.addForce(a)
        pc.addActuator(a)
        pc.prescribeControlForActuator(a.getName(), f)
    m.addController(pc)
    cs = m.getCoordinateSet()
    defaults = {"ground_pelvis_coord_0": 0.1, "ground_pelvis_coord_2": 0.95 + 0.05,
                "hip_coord_0": 0.4, "knee_coord_0": -0.7, "ankle_coord_0": 0.3}
    m.finalizeConnections()
    for n, v in defaults.items():
        cs.get(n).setDefaultValue(v)
    cs.get("ground_pelvis_coord_1").setDefaultSpeedValue(0.5)
    m.printToXML(path)


def run_simtk(path: str, t_end: float, accuracy: float) -> tuple[float, np.ndarray, int, int, str]:
    """(wall time, final q, steps, contact samples seen, fast path) of simtk's RK-Merson."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything in the model is built
        model = load_osim(path)
    state = model.initial_state()
    contact = model.force_elements["foot_contact"][0]
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_accuracy(accuracy)
    t0 = time.perf_counter()
    integ.initialize(state)
    seen = 0
    for k in range(1, 11):  # ten looks at the contacts on the way, as OpenSim's run is not looked at
        t = t_end * k / 10
        while integ.get_time() < t:
            integ.step_to(t)
        seen += len(contact.get_contacts(integ.get_state()).depth)
    wall = time.perf_counter() - t0
    end = integ.get_state()
    q = np.array([c.mobod.get_q(end)[c.index] for c in model.coordinates.values()])
    return wall, q, integ.get_num_steps_taken(), seen, integ.describe_fast_path()


def main() -> None:
    osim.Logger.setLevelString("Warn")  # not the Manager's report of every run
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "leg_landing.osim")
        build_leg(path)
        print(f"# leg landing on its foot (HuntCrossleyForce, 3 CoordinateActuators under a PrescribedController);"
              f" {T_END} s of RK-Merson; best of {args.repeats}")
        print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
              f"OpenSim {osim.__version__}")
        print(f"{'accuracy':>9} {'simtk s':>9} {'OpenSim s':>10} {'simtk/OpenSim':>14} {'steps':>6} "
              f"{'contacts':>9} {'|q_s - q_O|':>12}")
        for acc in ACCURACIES:
            ours = min((run_simtk(path, T_END, acc) for _ in range(args.repeats)), key=lambda r: r[0])
            theirs = min((run_manager(path, T_END, acc) for _ in range(args.repeats)), key=lambda r: r[0])
            print(f"{acc:9.0e} {ours[0]:9.4f} {theirs[0]:10.4f} {ours[0] / theirs[0]:14.2f} {ours[2]:6d} "
                  f"{ours[3]:9d} {np.abs(ours[1] - theirs[1]).max():12.2e}")
        print(f"# simtk's time loop: {ours[4]}")


if __name__ == "__main__":
    main()
