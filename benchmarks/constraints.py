"""Cost of a constrained forward-dynamics evaluation against the number of constraint equations m.

A chain of 100 bodies on Pin joints (nu = 100) under gravity, with m ``Constraint.Rod`` equations
tying evenly spaced bodies to Ground points (each satisfied at the reference pose). One evaluation
is ``set_q`` + ``realize(state, Stage.Acceleration)``: the force map and G (m O(n) sweeps), M^-1 G^T
(m O(n) sweeps), A = G M^-1 G^T, its (pseudo-)inverse (O(m^3)) and the solve for the multipliers.

The times for m >= 1 are fitted by least squares to ``t = a + b m + c m^3`` and the script prints
the fit and its residuals: a is the fixed Python cost of having constraints at all, b the
per-equation cost (two O(n) sweeps and the Python work per column of G), c the dense O(m^3) part
(Cholesky of A, or an eigen-decomposition when A is singular, as at m = n = 100 where the rods
leave no freedom and some are redundant). The dense product G (M^-1 G^T) is O(m^2 n) flops but
BLAS makes it a small fraction here.

Run with ``python benchmarks/constraints.py [--n 100] [--repeat 5]``.
"""
from __future__ import annotations

import argparse
import platform
import timeit

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)


def chain(n: int, m: int):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.05, 0, 0], Inertia([1e-4, 1e-3, 1e-3])))
    bodies = [matter.Ground()]
    for i in range(n):
        bodies.append(MobilizedBody.Pin(bodies[-1], Transform([0.1, 0, 0]) if i else Transform(), body, Transform()))
    rng = np.random.default_rng(0)
    q_ref = rng.uniform(-0.2, 0.2, n)
    ref = system.realize_topology()
    ref.set_q(q_ref)
    system.realize(ref, Stage.Position)
    picked = [bodies[1 + (k * n) // max(m, 1)] for k in range(m)]
    tip = np.array([0.1, 0.0, 0.0])  # each rod holds a body's tip 0.3 m below a Ground anchor
    anchors = [b.find_station_location_in_ground(ref, tip) + [0.0, 0.3, 0.0] for b in picked]
    for b, anchor in zip(picked, anchors):
        Constraint.Rod(matter.Ground(), anchor, b, tip, 0.3)
    state = system.realize_topology()
    state.set_q(q_ref)
    return system, state


def time_eval(system, state, repeat: int) -> float:
    q = np.array(state.get_q())

    def one():
        state.set_q(q)
        system.realize(state, Stage.Acceleration)

    one()
    number = 20
    return min(timeit.repeat(one, number=number, repeat=repeat)) / number


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ms = [0, 1, 2, 5, 10, 20, 40, 60, 80, 100]
    times = []
    print(f"chain of {args.n} Pin bodies; python {platform.python_version()}, numpy {np.__version__}")
    print(f"{'m':>4} {'us/eval':>10} {'us per equation':>16}")
    base = None
    for m in ms:
        system, state = chain(args.n, m)
        t = time_eval(system, state, args.repeat) * 1e6
        times.append(t)
        base = t if base is None else base
        per = (t - base) / m if m else 0.0
        print(f"{m:4d} {t:10.1f} {per:16.2f}")
    # m = 0 takes the unconstrained path (plain ABA): fit the constrained evaluations only
    ms_a, t_a = np.array(ms[1:], float), np.array(times[1:])
    X = np.stack([np.ones_like(ms_a), ms_a, ms_a ** 3], axis=1)
    coef, *_ = np.linalg.lstsq(X, t_a, rcond=None)
    fit = X @ coef
    print(f"\nfit t = a + b m + c m^3: a = {coef[0]:.1f} us, b = {coef[1]:.2f} us/equation, c = {coef[2]:.2e} us")
    print("relative residuals of the fit:", np.round((t_a - fit) / t_a, 3))


if __name__ == "__main__":
    main()
