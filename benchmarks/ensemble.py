"""Throughput of an ensemble: 64 one-second simulations, a serial loop against a local Dask cluster.

Each member is a 5-link pin chain under gravity released from its own first-link angle, simulated
for 1 s by `simtk.ensemble.simulate` (a `Simulation`, 10 ms driver steps, RK-Merson at accuracy
1e-6) and read at the final time. Timed:

* ``serial``          a loop over `simulate` in this process;
* ``dask (cold)``     `simtk.ensemble.run` with no client: it starts a local cluster of worker processes,
                      runs, and closes it (what a user's first call costs);
* ``dask (warm)``     `simtk.ensemble.run` on a cluster started beforehand (the cluster's start not timed).

Printed: wall time and simulations per second of each, and whether the ensemble equals the serial
loop bitwise. Run ``python benchmarks/ensemble.py [--members 64] [--workers N]`` (N: the cores).
"""
from __future__ import annotations

import argparse
import logging
import time

import numpy as np
from _chain import pin_chain

from simtk import ensemble

OUTPUTS = ["/|kinetic_energy", "/|potential_energy", "/matter/link0|angle"]
T_FINAL = 1.0


def make(angle: float = 0.5):
    """A 5-link chain with its first link at ``angle`` (rad) and the others at 0.1 rad, at rest."""
    system = pin_chain(5)
    state = system.realize_topology()
    for i in range(5):
        system.set_state_variable_value(state, f"/matter/link{i}/angle", angle if i == 0 else 0.1)
    return system, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: the cores)")
    args = parser.parse_args()
    params = [{"angle": a} for a in np.linspace(0.1, 1.5, args.members)]
    n = len(params)

    t0 = time.perf_counter()
    serial = [ensemble.simulate(make, p, T_FINAL, OUTPUTS) for p in params]
    t_serial = time.perf_counter() - t0

    t0 = time.perf_counter()
    cold = ensemble.run(make, params, T_FINAL, OUTPUTS, n_workers=args.workers, progress=False)
    t_cold = time.perf_counter() - t0

    from distributed import Client, LocalCluster

    workers = cold.n_workers
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        ensemble.run(make, params[:workers], T_FINAL, OUTPUTS, client=client, progress=False)  # imports on workers
        t0 = time.perf_counter()
        warm = ensemble.run(make, params, T_FINAL, OUTPUTS, client=client, progress=False)
        t_warm = time.perf_counter() - t0

    same = all(np.array_equal(r[o], np.array([s[o] for s in serial])) for r in (cold, warm) for o in OUTPUTS)
    print(f"{n} one-second simulations (5-link chain, RK-Merson 1e-6), {workers} worker processes")
    print(f"{'':14} {'wall s':>8} {'sims/s':>8}")
    for name, t in (("serial", t_serial), ("dask (cold)", t_cold), ("dask (warm)", t_warm)):
        print(f"{name:14} {t:8.2f} {n / t:8.1f}")
    print(f"speed-up warm / serial: {t_serial / t_warm:.2f}x; ensemble equals the serial loop bitwise: {same}")


if __name__ == "__main__":
    main()
