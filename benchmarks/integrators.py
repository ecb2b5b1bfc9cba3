"""Integrator throughput on the harmonic oscillator, against scipy.integrate.solve_ivp.

Run: ``python benchmarks/integrators.py [accuracy] [T]``. For each simtk integrator: steps taken,
wall time, steps per second, realizations per step, final error; for solve_ivp (RK45, DOP853,
BDF) on the same right-hand side written as a plain function: steps, wall time and steps per
second. Ratios compare simtk's steps per second with solve_ivp's RK45 in the same run.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "math"))
from systems import oscillator_system  # noqa: E402

from simtk.math import (  # noqa: E402
    ExplicitEulerIntegrator,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    SemiExplicitEuler2Integrator,
    SemiExplicitEulerIntegrator,
    VerletIntegrator,
)


def rhs(t, y):
    return np.array([y[1], -y[0]])


def run_simtk(make, accuracy, T):
    system, osc = oscillator_system(omega=1.0)
    integ = make(system)
    if integ.method_has_error_control():
        integ.set_accuracy(accuracy)
    integ.initialize(system.realize_topology())
    t0 = time.perf_counter()
    integ.step_to(T)
    wall = time.perf_counter() - t0
    n = integ.get_num_steps_taken()
    err = float(np.linalg.norm(integ.get_state().get_y() - np.array(osc.exact(T))))
    return integ.get_method_name(), n, wall, integ.get_num_realizations() / max(n, 1), err


def run_scipy(method, accuracy, T):
    t0 = time.perf_counter()
    sol = solve_ivp(rhs, (0.0, T), [1.0, 0.0], method=method, rtol=accuracy, atol=accuracy)
    wall = time.perf_counter() - t0
    n = len(sol.t) - 1
    err = float(np.linalg.norm(sol.y[:, -1] - [math.cos(T), -math.sin(T)]))
    return f"solve_ivp {method}", n, wall, sol.nfev / max(n, 1), err


def main(accuracy=1e-6, T=20.0):
    rows = []
    for make in (ExplicitEulerIntegrator, RungeKutta2Integrator, RungeKutta3Integrator, RungeKuttaMersonIntegrator,
                 RungeKuttaFeldbergIntegrator, VerletIntegrator, SemiExplicitEuler2Integrator,
                 lambda s: SemiExplicitEulerIntegrator(s, 1e-3), lambda s: ScipyIntegrator(s, "RK45"),
                 lambda s: ScipyIntegrator(s, "BDF")):
        rows.append(run_simtk(make, accuracy, T))
    ref = {}
    for method in ("RK45", "DOP853", "BDF"):
        row = run_scipy(method, accuracy, T)
        ref[method] = row[1] / row[2]
        rows.append(row)
    print(f"harmonic oscillator, T = {T}, accuracy = {accuracy}")
    print(f"{'method':24s} {'steps':>8s} {'wall s':>8s} {'steps/s':>10s} {'f-evals/step':>12s} {'error':>10s} "
          f"{'vs RK45 steps/s':>15s}")
    for name, n, wall, per_step, err in rows:
        sps = n / wall
        print(f"{name:24s} {n:8d} {wall:8.3f} {sps:10.0f} {per_step:12.2f} {err:10.2e} {sps / ref['RK45']:15.2f}")


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:3]]
    main(*args)
