"""Variable steps for stiff deformable scenes: ImplicitExtrapolationIntegrator beside ScipyIntegrator BDF.

Run: ``python benchmarks/deformable_variable.py [T]``. Two scenes, each integrated from the same
State over T (default 0.2 s) by both methods at the same accuracy (the Integrator's weighted RMS
local error; SciPy's rtol = atol = accuracy), and by RK-Merson at 1e-9 as the reference:

- "block": a Pin-jointed rigid arm carrying a soft block of corotational tets (4 x 2 x 2 cells,
  96 tets, E = 2e5 Pa, Rayleigh damping), its end face attached to the arm, started at 0.5 rad;
- "string": ten 1 g particles on springs of 1e6 N/m (damping 1 N s/m) hanging from a fixed point,
  turned 0.3 rad from the vertical.

Printed per method (the extrapolation with 2 and 3 rows): steps (and attempts), wall time,
realizations, the largest difference of the final y from the reference and from BDF's. BDF uses SciPy's finite-difference dense
Jacobian: its cost per Jacobian grows with the square of the state size.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    SimbodyMatterSubsystem,
    Transform,
)
from simtk.deformable import DeformableBody, ImplicitExtrapolationIntegrator, box_tetrahedra

G = np.array([0.0, -9.81, 0.0])


def block():
    system = MultibodySystem("arm_and_block")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    mp = MassProperties.from_central_inertia(2.0, [0.0, 0.0, 0.0], np.diag([0.005, 0.05, 0.05]))
    arm = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(mp), Transform(p=[-0.25, 0.0, 0.0]))
    lx, w = 0.5, 0.1
    pts, tets = box_tetrahedra(lx, w, w, 4, 2, 2)
    pts += [0.5, -w / 2, -w / 2]
    body = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, 2e5, 0.3, (0.0, 0.01), name="block")
    for i in np.flatnonzero(pts[:, 0] == 0.5):
        body.attach(int(i), arm, pts[i] - [0.25, 0.0, 0.0])
    s = system.realize_topology()
    system.realize_model(s)
    arm.set_one_q(s, 0, 0.5)
    return system, s


def string(n: int = 10, m: float = 1e-3, k: float = 1e6, c: float = 1.0, L: float = 0.05, angle: float = 0.3):
    system = MultibodySystem("stiff_string")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    r = L * np.arange(n + 1) + np.concatenate([[0.0], np.cumsum((n - np.arange(n)) * m * -G[1] / k)])
    pts = np.zeros((n + 1, 3))
    pts[:, 0], pts[:, 1] = r * math.sin(angle), -r * math.cos(angle)
    body = DeformableBody.from_segments(system, pts, np.array([[i, i + 1] for i in range(n)]), m, k, c,
                                        rest_lengths=np.full(n, L), name="string")
    body.fix(0)
    s = system.realize_topology()
    system.realize_model(s)
    return system, s


def run(make_scene, make_integrator, accuracy: float, T: float) -> dict:
    system, s = make_scene()
    integ = make_integrator(system)
    integ.set_accuracy(accuracy)
    integ.initialize(s)
    t0 = time.perf_counter()
    integ.step_to(T)
    wall = time.perf_counter() - t0
    return dict(name=integ.get_method_name(), y=integ.get_state().get_y().copy(), wall=wall,
                steps=integ.get_num_steps_taken(), attempts=integ.get_num_steps_attempted(),
                realizations=integ.get_num_realizations())


def main() -> None:
    T = float(sys.argv[1]) if len(sys.argv) > 1 else 0.2
    for label, make_scene in (("block", block), ("string", string)):
        ref = run(make_scene, RungeKuttaMersonIntegrator, 1e-9, T)
        print(f"{label}: {len(ref['y'])} state variables, {T} s; reference RK-Merson at 1e-9: {ref['steps']} steps "
              f"in {ref['wall']:.2f} s")
        for acc in (1e-3, 1e-5):
            b = run(make_scene, lambda system: ScipyIntegrator(system, "BDF"), acc, T)
            results = [(f"ImplicitExtrapolation rows={rows}",
                     run(make_scene, lambda system, rows=rows: ImplicitExtrapolationIntegrator(system, rows=rows),
                         acc, T)) for rows in (2, 3)]
            for label_r, r in results + [("ScipyIntegrator BDF", b)]:
                line = (f"  accuracy {acc:g} {label_r:>29}: {r['steps']:6d} steps ({r['attempts']:6d} attempts), "
                        f"{r['wall']:7.3f} s, {r['realizations']:7d} realizations, |y - ref| "
                        f"{float(np.abs(r['y'] - ref['y']).max()):.2e}")
                if r is not b:
                    line += (f", |y - y_BDF| {float(np.abs(r['y'] - b['y']).max()):.2e}, wall BDF / this "
                             f"{b['wall'] / r['wall']:.2f}")
                print(line)


if __name__ == "__main__":
    main()
