"""A jitted constraint (``Constraint.Jit``, ``simtk.jit.constraint``) against the built-in one it rewrites.

The four-bar of the tests (three 0.5 m pin links, the last one's tip held at a Ground point) closed by
``Constraint.Ball`` (built-in), by a ball written as a numba kernel (Constraint.Jit), and by the same
ball as a ``Constraint.Custom`` (Python) for scale. Each model is stepped by semi-explicit Euler at
1 ms and by RK-Merson at 1e-8, the constraint solved and projected in each step (the built-in and the
jitted one inside the compiled time loop); the figure is the cost per step relative to the built-in
model, the median of ``--repeat`` runs. The final states of the jitted and built-in runs are compared.

The kernel's compile time is reported separately (its C entry point is compiled once per process).

Run from the repository root with simtk importable: ``python benchmarks/jit_constraints.py [--repeat 5]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _chain import pin_chain

from simtk import Constraint
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator

TIP, S2 = np.array([0.6, -0.7, 0.0]), np.array([0.0, -0.5, 0.0])


def _kernel():
    import simtk.jit as sj

    def perr(ctx, params, out):
        p1 = sj.station_location(ctx, int(params[0]), params[1:4])
        p2 = sj.station_location(ctx, int(params[4]), params[5:8])
        for i in range(3):
            out[i] = p2[i] - p1[i]

    def verr(ctx, params, out):
        v1 = sj.station_velocity(ctx, int(params[0]), params[1:4])
        v2 = sj.station_velocity(ctx, int(params[4]), params[5:8])
        for i in range(3):
            out[i] = v2[i] - v1[i]

    def aerr(ctx, params, out):
        a1 = sj.station_acceleration(ctx, int(params[0]), params[1:4])
        a2 = sj.station_acceleration(ctx, int(params[4]), params[5:8])
        for i in range(3):
            out[i] = a2[i] - a1[i]

    @sj.constraint(mp=3, position_errors=perr, velocity_errors=verr, acceleration_errors=aerr)
    def ball(ctx, params, multipliers, body_forces, mobility_forces):
        f = (multipliers[0], multipliers[1], multipliers[2])
        sj.add_station_force(ctx, body_forces, int(params[4]), params[5:8], f)
        sj.add_station_force(ctx, body_forces, int(params[0]), params[1:4], sj.scale3(-1.0, f))

    return ball


class _PyBall(Constraint.Custom.Implementation):
    def __init__(self, link):
        super().__init__(link.upd_matter_subsystem(), 3, 0, 0)
        self.ground = self.add_constrained_body(link.upd_matter_subsystem().Ground())
        self.link = self.add_constrained_body(link)

    def realize_position_errors(self, state, mp, perr):
        perr[:] = self.get_station_location(state, self.link, S2) - TIP

    def realize_position_dot_errors(self, state, mp, pverr):
        pverr[:] = self.get_station_velocity(state, self.link, S2)

    def realize_position_dot_dot_errors(self, state, mp, paerr):
        paerr[:] = self.get_station_acceleration(state, self.link, S2)

    def apply_position_constraint_forces(self, state, mp, multipliers, body_forces, mobility_forces):
        self.add_in_station_force(state, self.link, S2, multipliers, body_forces)
        self.add_in_station_force(state, self.ground, TIP, -multipliers, body_forces)


_BALL = None


def model(kind: str):
    global _BALL
    system = pin_chain(3)
    matter = system.get_matter_subsystem()
    link = matter.get_mobilized_body(3)
    if kind == "builtin":
        Constraint.Ball(matter.Ground(), TIP, link, S2)
    elif kind == "jit":
        _BALL = _BALL or _kernel()
        Constraint.Jit(matter, _BALL, [matter.Ground(), *TIP, link, *S2])
    else:
        Constraint.Custom(_PyBall(link))
    state = system.realize_topology()
    state.set_q([0.3, -0.5, 0.4])
    state.set_u([1.0, 0.0, 0.0])
    return system, state


def per_step(kind: str, method: str, t_end: float) -> tuple[float, np.ndarray, str]:
    system, state = model(kind)
    euler = method.startswith("semi")
    integ = SemiExplicitEulerIntegrator(system, 1e-3) if euler else RungeKuttaMersonIntegrator(system)
    if not euler:
        integ.set_accuracy(1e-8)
    integ.set_constraint_tolerance(1e-10)
    integ.initialize(state)
    path = integ.describe_fast_path().split(":")[0] + ("" if "calls Python" not in integ.describe_fast_path()
                                                       else ", calls Python")
    t0 = time.perf_counter()
    integ.step_to(t_end)
    dt = time.perf_counter() - t0
    return dt / max(1, integ.get_num_steps_taken()), integ.get_state().get_y().copy(), path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    import simtk.jit  # noqa: F401
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    model("jit")
    print(f"import simtk.jit (numba): {t_import:.2f} s; compiling the ball kernel and building the model: "
          f"{time.perf_counter() - t0:.2f} s")
    print(f"{'method':28s} {'built-in us/step':>17s} {'jit us/step':>12s} {'jit/built-in':>13s} "
          f"{'Custom/built-in':>16s}  loop (jit; Custom)")
    for method in ("semi-explicit Euler 1 ms", "RK-Merson 1e-8"):
        times: dict = {k: [] for k in ("builtin", "jit", "custom")}
        ends, paths = {}, {}
        for _ in range(args.repeat):
            for kind in ("builtin", "jit"):
                dt, y, path = per_step(kind, method, args.t_end)
                times[kind].append(dt)
                ends[kind], paths[kind] = y, path
        dt, _, paths["custom"] = per_step("custom", method, min(args.t_end, 0.2))
        times["custom"].append(dt)
        med = {k: statistics.median(v) for k, v in times.items()}
        diff = float(np.max(np.abs(ends["jit"] - ends["builtin"])))
        print(f"{method:28s} {med['builtin'] * 1e6:17.2f} {med['jit'] * 1e6:12.2f} "
              f"{med['jit'] / med['builtin']:13.2f} {med['custom'] / med['builtin']:16.1f}  {paths['jit']}; "
              f"{paths['custom']}  (|y_jit - y_builtin| = {diff:.1e})")


if __name__ == "__main__":
    main()
