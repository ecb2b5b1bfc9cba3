"""Jitted force kernels (``Force.Jit``, ``simtk.jit``) against the built-in elements they rewrite.

The 7-link pin chain of ``_chain.pin_chain`` with a spring and a damper between each pair of
neighbouring links (six of each), once as ``Force.TwoPointLinearSpring``/``TwoPointLinearDamper``
and once as two numba kernels (``Force.Jit``), and once more as ``Force.Custom`` (Python) for scale.
Each model is stepped by semi-explicit Euler at 1 ms and by RK-Merson at 1e-6, in the compiled time
loop (the jitted kernels called from it without the GIL); the figure is the cost per step relative to
the built-in model (target: jit <= 1.5x), the median of ``--repeat`` runs. The final states of the
jitted and built-in runs are compared (same physics, different code: to round-off).

The kernels' compile time is reported separately: the first ``Force.Jit`` compiles them (numba's
``cache=True`` keeps them on disk, so a second run of this script loads them instead).

Run from the repository root with simtk importable: ``python benchmarks/jit_forces.py [--repeat 5]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _chain import pin_chain

from simtk import Force
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator

K, X0, C = 40.0, 0.45, 0.3
S1, S2 = np.array([0.0, -0.4, 0.05]), np.array([0.0, -0.1, 0.05])


def _kernels():
    import simtk.jit as sj

    @sj.force(depends_only_on_positions=True)
    def spring(ctx, params, body_forces, mobility_forces):
        b1, b2 = int(params[0]), int(params[4])
        d = sj.sub3(sj.station_location(ctx, b2, params[5:8]), sj.station_location(ctx, b1, params[1:4]))
        L = sj.norm3(d)
        if L == 0.0:
            return
        f = sj.scale3(-params[8] * (L - params[9]) / L, d)
        sj.add_station_force(ctx, body_forces, b2, params[5:8], f)
        sj.add_station_force(ctx, body_forces, b1, params[1:4], sj.scale3(-1.0, f))

    @sj.force
    def damper(ctx, params, body_forces, mobility_forces):
        b1, b2 = int(params[0]), int(params[4])
        d = sj.sub3(sj.station_location(ctx, b2, params[5:8]), sj.station_location(ctx, b1, params[1:4]))
        L = sj.norm3(d)
        if L == 0.0:
            return
        e = sj.scale3(1.0 / L, d)
        v = sj.sub3(sj.station_velocity(ctx, b2, params[5:8]), sj.station_velocity(ctx, b1, params[1:4]))
        f = sj.scale3(-params[8] * sj.dot3(v, e), e)
        sj.add_station_force(ctx, body_forces, b2, params[5:8], f)
        sj.add_station_force(ctx, body_forces, b1, params[1:4], sj.scale3(-1.0, f))

    return spring, damper


class _PySpringDamper(Force.Custom.Implementation):
    def __init__(self, matter, b1, b2, k, x0, c):
        super().__init__()
        self.matter, self.b1, self.b2, self.k, self.x0, self.c = matter, b1, b2, k, x0, c

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        p1 = self.b1.find_station_location_in_ground(state, S1)
        p2 = self.b2.find_station_location_in_ground(state, S2)
        d = p2 - p1
        L = float(np.linalg.norm(d))
        e = d / L
        v = self.b2.find_station_velocity_in_ground(state, S2) - self.b1.find_station_velocity_in_ground(state, S1)
        f = -(self.k * (L - self.x0) + self.c * float(v @ e)) * e
        self.matter.add_in_station_force(state, self.b2.get_mobilized_body_index(), S2, f, body_forces)
        self.matter.add_in_station_force(state, self.b1.get_mobilized_body_index(), S1, -f, body_forces)


def model(kind: str):
    system = pin_chain(7)
    matter = system.get_matter_subsystem()
    forces = system.get_force_subsystems()[0]
    links = [matter.get_mobilized_body(i) for i in range(1, matter.get_num_bodies())]
    if kind == "jit":
        spring, damper = _kernels()
    for b1, b2 in zip(links[:-1], links[1:]):
        if kind == "builtin":
            Force.TwoPointLinearSpring(forces, b1, S1, b2, S2, K, X0)
            Force.TwoPointLinearDamper(forces, b1, S1, b2, S2, C)
        elif kind == "jit":
            Force.Jit(forces, matter, spring, [b1, *S1, b2, *S2, K, X0])
            Force.Jit(forces, matter, damper, [b1, *S1, b2, *S2, C])
        else:
            Force.Custom(forces, _PySpringDamper(matter, b1, b2, K, X0, C))
    state = system.realize_topology()
    state.set_q(np.linspace(0.3, -0.2, 7))
    state.set_u(np.linspace(-1.0, 1.0, 7))
    return system, state


def per_step(kind: str, method: str, t_end: float) -> tuple[float, np.ndarray, str]:
    system, state = model(kind)
    integ = (SemiExplicitEulerIntegrator(system, 1e-3) if method == "semi-explicit Euler 1 ms"
             else RungeKuttaMersonIntegrator(system))
    if method != "semi-explicit Euler 1 ms":
        integ.set_accuracy(1e-6)
    integ.initialize(state)
    path = integ.describe_fast_path().split(":")[0]
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
    t_compile = time.perf_counter() - t0
    print(f"import simtk.jit (numba): {t_import:.2f} s; compiling (or loading from numba's cache) the two "
          f"kernels and building the model: {t_compile:.2f} s")
    print(f"{'method':28s} {'built-in us/step':>17s} {'jit us/step':>12s} {'jit/built-in':>13s} "
          f"{'Custom/built-in':>16s}  loop (jit)")
    for method in ("semi-explicit Euler 1 ms", "RK-Merson 1e-6"):
        times: dict = {k: [] for k in ("builtin", "jit", "custom")}
        ends, paths = {}, {}
        for _ in range(args.repeat):
            for kind in ("builtin", "jit"):
                dt, y, path = per_step(kind, method, args.t_end)
                times[kind].append(dt)
                ends[kind], paths[kind] = y, path
        dt, _, _ = per_step("custom", method, min(args.t_end, 0.2))
        times["custom"].append(dt)
        med = {k: statistics.median(v) for k, v in times.items()}
        diff = float(np.max(np.abs(ends["jit"] - ends["builtin"])))
        print(f"{method:28s} {med['builtin'] * 1e6:17.2f} {med['jit'] * 1e6:12.2f} "
              f"{med['jit'] / med['builtin']:13.2f} {med['custom'] / med['builtin']:16.1f}  {paths['jit']}"
              f"  (|y_jit - y_builtin| = {diff:.1e})")


if __name__ == "__main__":
    main()
