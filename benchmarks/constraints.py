"""Cost of a constrained forward-dynamics evaluation against the number of constraint equations m.

A chain of 100 bodies on Pin joints (nu = 100) under gravity, with m ``Constraint.Rod`` equations
tying evenly spaced bodies to Ground points (each satisfied at the reference pose), and the
four-bar of tutorial 7 (three Pins closed by a Ball). Two evaluations are timed:

- ``set_q`` + ``realize(state, Stage.Acceleration)``: everything per q (position errors, G as m
  O(n) kernel sweeps, M^-1 G^T as m more, A = G M^-1 G^T and its factorization) and per u;
- ``set_u`` + ``realize(state, Stage.Acceleration)``: only the per-u work (velocity errors G u,
  the bias accelerations of the constraint stations in one kernel call, the multipliers from the
  kept factorization, and the corrections of udot, the body accelerations and qdotdot), since
  everything that depends on q only is kept while q is.

The set_q times for m >= 1 are fitted by least squares to ``t = a + b m + c m^3`` and the script
prints the fit: a is the fixed cost of having constraints at all, b the per-equation cost (two O(n)
sweeps and the Python work per row of G), c the dense O(m^3) part (Cholesky of A, or an
eigen-decomposition when A is singular, as at m = n = 100 where the rods leave no freedom and some
are redundant).

Run with ``OPENBLAS_NUM_THREADS=1 python benchmarks/constraints.py [--n 100] [--repeat 5]`` (on a
busy 2-core machine a multi-threaded BLAS can stall the dense products for milliseconds).
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


def time_eval(system, state, repeat: int, what: str = "q") -> float:
    q = np.array(state.get_q())
    u = np.array(state.get_u()) + 0.1

    def one():
        if what == "q":
            state.set_q(q)
        else:
            state.set_u(u)
        system.realize(state, Stage.Acceleration)

    one()
    number = 200
    return min(timeit.repeat(one, number=number, repeat=repeat)) / number


def four_bar():
    """Tutorial 7's four-bar: crank, coupler and rocker on Pins; a Ball closes the loop at Ground."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))
    crank = MobilizedBody.Pin(matter.Ground(), Transform(), rod, Transform())
    coupler = MobilizedBody.Pin(crank, Transform([1, 0, 0]), rod, Transform())
    rocker = MobilizedBody.Pin(coupler, Transform([1, 0, 0]), rod, Transform())
    ball = Constraint.Ball(matter.Ground(), [1.5, 0, 0], rocker, [1, 0, 0])
    state = system.realize_topology()
    for body, angle in ((crank, 1.2), (coupler, -1.9), (rocker, -1.0)):
        body.set_one_q(state, 0, angle)
    system.project(state, 1e-12)
    return system, state, ball


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ms = [0, 1, 2, 5, 10, 20, 40, 60, 80, 100]
    times = []
    print(f"chain of {args.n} Pin bodies; python {platform.python_version()}, numpy {np.__version__}")
    print(f"{'m':>4} {'set_q us':>10} {'x m=0':>7} {'set_u us':>10} {'x m=0':>7}")
    base_q = base_u = None
    for m in ms:
        system, state = chain(args.n, m)
        tq = time_eval(system, state, args.repeat, "q") * 1e6
        tu = time_eval(system, state, args.repeat, "u") * 1e6
        times.append(tq)
        base_q = tq if base_q is None else base_q
        base_u = tu if base_u is None else base_u
        print(f"{m:4d} {tq:10.1f} {tq / base_q:7.2f} {tu:10.1f} {tu / base_u:7.2f}")
    system, state, ball = four_bar()
    fq, fu = (time_eval(system, state, args.repeat, w) * 1e6 for w in "qu")
    ball.disable(state)
    system.realize(state, Stage.Acceleration)
    dq, du = (time_eval(system, state, args.repeat, w) * 1e6 for w in "qu")
    print(f"\nfour-bar (m = 3): set_q {fq:.1f} us, set_u {fu:.1f} us; with the Ball disabled: set_q {dq:.1f} us, "
          f"set_u {du:.1f} us")
    # m = 0 takes the unconstrained path (plain ABA): fit the constrained evaluations only
    ms_a, t_a = np.array(ms[1:], float), np.array(times[1:])
    X = np.stack([np.ones_like(ms_a), ms_a, ms_a ** 3], axis=1)
    coef, *_ = np.linalg.lstsq(X, t_a, rcond=None)
    fit = X @ coef
    print(f"\nset_q fit t = a + b m + c m^3: a = {coef[0]:.1f} us, b = {coef[1]:.2f} us/equation, c = {coef[2]:.2e} us")
    print("relative residuals of the fit:", np.round((t_a - fit) / t_a, 3))


if __name__ == "__main__":
    main()
