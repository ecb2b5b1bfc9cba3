"""Jitted mobilizers with an N kernel (qdot = N(q) u) against the built-in Ball in Euler angles.

A chain of 7 balls (body-fixed X-Y-Z angles, u = w_FM) under gravity, once with the built-in Ball in a
State that uses Euler angles (``JOINT_TYPES["BallEuler"]``) and once with numba kernels for X_FM, H_FM,
N and NDot (``MobilizedBody.Jit``), stepped by semi-explicit Euler at 1 ms and by RK-Merson at 1e-6 in
the compiled time loop. The figure is the cost per step relative to the built-in chain, the median of
``--repeat`` runs; the final states are compared (same physics, different code). The jit body calls
its N kernel once per velocity sweep (qdot) and N and NDot once per acceleration (qdotdot), besides the
position kernel: three or four C calls per body and evaluation, and a 3x3 product each.

Run from the repository root with simtk importable: ``python benchmarks/jit_mobilizers_n.py [--repeat 5]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from simtk import Stage
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator
from simtk.multibody import Force, GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from simtk.spatial import Body, Inertia, MassProperties, Transform

N = 7


def _kernel():
    import simtk.jit as sj

    def n(q, params, N):
        c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
        N[0, 0] = 1.0
        N[0, 1] = s0 * s1 / c1
        N[0, 2] = -c0 * s1 / c1
        N[1, 1] = c0
        N[1, 2] = s0
        N[2, 1] = -s0 / c1
        N[2, 2] = c0 / c1

    def ndot(q, qdot, params, NDot):
        c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
        t = 1.0 / c1
        a, b = qdot[0], qdot[1]
        NDot[0, 1] = c0 * s1 * t * a + s0 * t * t * b
        NDot[0, 2] = s0 * s1 * t * a - c0 * t * t * b
        NDot[1, 1] = -s0 * a
        NDot[1, 2] = c0 * a
        NDot[2, 1] = -c0 * t * a - s0 * s1 * t * t * b
        NDot[2, 2] = -s0 * t * a + c0 * s1 * t * t * b

    @sj.mobilizer(nq=3, nu=3, n=n, ndot=ndot)
    def ball_euler(q, params, R, p, H):
        c0, s0, c1, s1, c2, s2 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[2]), np.sin(q[2])
        R[0, 0] = c1 * c2
        R[0, 1] = -c1 * s2
        R[0, 2] = s1
        R[1, 0] = s0 * s1 * c2 + c0 * s2
        R[1, 1] = -s0 * s1 * s2 + c0 * c2
        R[1, 2] = -s0 * c1
        R[2, 0] = -c0 * s1 * c2 + s0 * s2
        R[2, 1] = c0 * s1 * s2 + s0 * c2
        R[2, 2] = c0 * c1
        H[0, 0, 0] = 1.0
        H[1, 0, 1] = 1.0
        H[2, 0, 2] = 1.0

    return ball_euler


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
            parent = MobilizedBody.Ball(parent, X_PF, body, Transform(), name=f"link{i}")
    state = system.realize_topology()
    if kind != "jit":
        matter.set_use_euler_angles(state, True)
        system.realize(state, Stage.Model)
    state.set_q(np.linspace(0.3, -0.2, 3 * N))
    state.set_u(np.linspace(-1.0, 1.0, 3 * N))
    return system, state


def per_step(kind: str, method: str, t_end: float, kernel) -> tuple[float, np.ndarray, str]:
    system, state = model(kind, kernel)
    euler = method.startswith("semi-explicit")
    integ = SemiExplicitEulerIntegrator(system, 1e-3) if euler else RungeKuttaMersonIntegrator(system)
    if not euler:
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
    kernel = _kernel()
    model("jit", kernel)
    print(f"compiling (or loading from numba's cache) the kernels and building the model: "
          f"{time.perf_counter() - t0:.2f} s")
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
