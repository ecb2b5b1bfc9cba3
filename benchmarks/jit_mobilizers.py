"""Jitted mobilizer kernels (``MobilizedBody.Jit``, ``simtk.jit.mobilizer``) against the built-in Pin.

The 7-link pin chain of ``_chain.pin_chain``, once with built-in ``MobilizedBody.Pin`` and once with
a numba Pin kernel (``MobilizedBody.Jit``), stepped by semi-explicit Euler at 1 ms and by RK-Merson at
1e-6 in the compiled time loop (the kernels called from the sweeps without the GIL). The figure is
the cost per step relative to the built-in chain (target: jit <= 1.5x), the median of ``--repeat``
runs of 10 s; the final states are compared (same physics, different code: to round-off). The
built-in Pin has a fast path in the position sweep (its R_FM and H_FM are not multiplied out); the jit one goes
through the general path and one C call per body and sweep.

The kernel's compile time is reported separately: the first ``MobilizedBody.Jit`` compiles it
(numba's ``cache=True`` keeps it on disk, so a second run of this script loads it instead).

Run from the repository root with simtk importable: ``python benchmarks/jit_mobilizers.py [--repeat 9]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator
from simtk.multibody import Force, GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from simtk.spatial import Body, Inertia, MassProperties, Transform

N = 7


def _kernel():
    import simtk.jit as sj

    @sj.mobilizer(nu=1)
    def pin(q, params, R, p, H):
        c, s = np.cos(q[0]), np.sin(q[0])
        R[0, 0] = c
        R[0, 1] = -s
        R[1, 0] = s
        R[1, 1] = c
        R[2, 2] = 1.0
        H[0, 0, 2] = 1.0

    return pin


def model(kind: str, kernel=None):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(N):
        X_PF = Transform([0, -0.5, 0]) if i else Transform()
        if kind == "jit":
            parent = MobilizedBody.Jit(parent, X_PF, body, Transform(), kernel, [], name=f"link{i}")
        else:
            parent = MobilizedBody.Pin(parent, X_PF, body, Transform(), name=f"link{i}")
    state = system.realize_topology()
    state.set_q(np.linspace(0.3, -0.2, N))
    state.set_u(np.linspace(-1.0, 1.0, N))
    return system, state


def per_step(kind: str, method: str, t_end: float, kernel) -> tuple[float, np.ndarray, str]:
    system, state = model(kind, kernel)
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
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--t-end", type=float, default=10.0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    import simtk.jit  # noqa: F401
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernel = _kernel()
    model("jit", kernel)
    t_compile = time.perf_counter() - t0
    print(f"import simtk.jit (numba): {t_import:.2f} s; compiling (or loading from numba's cache) the Pin "
          f"kernel and building the model: {t_compile:.2f} s")
    print(f"{'method':28s} {'built-in us/step':>17s} {'jit us/step':>12s} {'jit/built-in':>13s}  loop (jit)")
    for method in ("semi-explicit Euler 1 ms", "RK-Merson 1e-6"):
        times: dict = {k: [] for k in ("builtin", "jit")}
        ends, paths = {}, {}
        for _ in range(args.repeat):
            for kind in ("builtin", "jit"):
                dt, y, path = per_step(kind, method, args.t_end, kernel)
                times[kind].append(dt)
                ends[kind], paths[kind] = y, path
        med = {k: statistics.median(v) for k, v in times.items()}
        diff = float(np.max(np.abs(ends["jit"] - ends["builtin"])))
        print(f"{method:28s} {med['builtin'] * 1e6:17.2f} {med['jit'] * 1e6:12.2f} "
              f"{med['jit'] / med['builtin']:13.2f}  {paths['jit']}  (|y_jit - y_builtin| = {diff:.1e})")


if __name__ == "__main__":
    main()
