"""Tutorial 22: a parameter sweep on Dask: the resonance curve of a driven oscillator, 100 stiffnesses.

A 1 kg cart on a slider is held by a spring of stiffness ``k`` and a damper, and pushed by a force
``F0 sin(w t)`` at 1 Hz. Its steady amplitude peaks when the spring's natural frequency meets the
drive, ``k = m w^2``: a resonance. This script sweeps ``k`` over 100 values with
``simtk.ensemble.run``, one simulation per value, each on a worker process of a local Dask cluster
(started and closed by the call; give ``client="tcp://host:8786"`` to use a real cluster instead),
and

1. records the cart's position every 20 ms for 6 s (an output probe per member);
2. fits each member's last 2 s, when the start's transient has died out, with
   ``a sin(w t) + b cos(w t) + d`` (least squares): its amplitude is ``sqrt(a^2 + b^2)``;
3. compares it with the steady-state amplitude ``F0 / sqrt((k - m w^2)^2 + (c w)^2)``;
4. plots both against ``k`` (matplotlib, written to a PNG) and prints a summary.

``make`` is a function of the parameters (``make(k=...)`` returns the System and its State). It is
defined in this script, so Dask sends it to the workers *by value* (cloudpickle), with the user
force class it uses; a function in an installed module would travel by name.

Run: ``python tutorials/22_parameter_sweep.py [output folder]`` (default: a temporary folder).
Needs ``pip install 'simtk[dask]'``; without Dask it runs the same sweep in a serial loop.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    ensemble,
)

MASS = 1.0  # kg
DAMPING = 3.0  # N s/m: the transient decays as exp(-c t / 2m), below e^-6 by t = 4 s
F0, OMEGA = 1.0, 2 * np.pi  # N, rad/s: the drive
T_FINAL, T_STEADY = 6.0, 4.0  # s: simulated, and from when the amplitude is read
SAMPLE = 0.02  # s: the recording interval, also the driver step
STIFFNESS = np.linspace(10.0, 90.0, 100)  # N/m, across the resonance at m w^2 = 39.5


class Drive(Force.Custom.Implementation):
    """The drive: ``F0 sin(w t)`` on the cart's mobility."""

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces[0] += F0 * np.sin(OMEGA * state.get_time())


def make(k: float):
    """The cart at rest at the spring's rest position, spring stiffness ``k``."""
    system = MultibodySystem(name="driven_oscillator")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    cart = MobilizedBody.Slider(matter.ground, Body.Rigid(MassProperties(MASS, [0, 0, 0], Inertia(0.1))), name="cart")
    Force.MobilityLinearSpring(forces, cart, 0, k, 0.0, name="spring")
    Force.MobilityLinearDamper(forces, cart, 0, DAMPING, name="damper")
    Force.Custom(forces, Drive(), name="drive")
    return system, system.realize_topology()


def sweep() -> tuple[ensemble.EnsembleResult | None, np.ndarray, np.ndarray, str]:
    """(the ensemble's result, times, positions (100, n_times), where it ran)."""
    params = [{"k": float(k)} for k in STIFFNESS]
    outputs = ["/matter/cart|length"]
    try:
        import distributed  # noqa: F401  (the optional extra)
    except ImportError:
        print("dask.distributed is not installed (pip install 'simtk[dask]'): a serial loop instead")
        runs = [ensemble.simulate(make, p, T_FINAL, outputs, interval=SAMPLE, step_size=SAMPLE) for p in params]
        return None, runs[0]["time"], np.array([r[outputs[0]] for r in runs]), "a serial loop"
    # no client: a local cluster, one worker process per core, started and closed here
    result = ensemble.run(make, params, T_FINAL, outputs, interval=SAMPLE, step_size=SAMPLE)
    for index, p, error in result.failed:
        print(f"member {index} {p} failed:\n{error}")
    return result, result.time, result[outputs[0]], f"Dask, {result.n_workers} local worker processes"


def main(out_dir: Path) -> None:
    wall0 = time.perf_counter()
    result, t, x, where = sweep()
    wall = time.perf_counter() - wall0
    steady = t >= T_STEADY
    # the drive's frequency is known: a linear least-squares fit of every member at once (not the samples'
    # extremes, which miss the true peak by up to 1 - cos(w dt / 2))
    basis = np.column_stack([np.sin(OMEGA * t[steady]), np.cos(OMEGA * t[steady]), np.ones(steady.sum())])
    coef = np.linalg.lstsq(basis, x[:, steady].T, rcond=None)[0]
    amplitude = np.hypot(coef[0], coef[1])
    theory = F0 / np.sqrt((STIFFNESS - MASS * OMEGA**2) ** 2 + (DAMPING * OMEGA) ** 2)
    error = np.abs(amplitude - theory) / theory
    peak = int(np.argmax(amplitude))
    failed = len(result.failed) if result is not None else 0
    print(f"swept k over {len(STIFFNESS)} values from {STIFFNESS[0]:g} to {STIFFNESS[-1]:g} N/m on {where}: "
          f"{len(STIFFNESS) - failed} finished, {failed} failed, in {wall:.1f} s")
    print(f"{x.shape[1]} samples per member; amplitude read over t >= {T_STEADY:g} s")
    print(f"peak amplitude {amplitude[peak]:.4f} m at k = {STIFFNESS[peak]:.2f} N/m "
          f"(resonance m w^2 = {MASS * OMEGA**2:.2f} N/m, theory's peak {theory.max():.4f} m)")
    print(f"largest relative difference from the steady-state amplitude: {error.max():.2e}")
    print(f"{'k':>7} {'amplitude':>10} {'theory':>10}")
    for i in range(0, len(STIFFNESS), 20):
        print(f"{STIFFNESS[i]:7.2f} {amplitude[i]:10.5f} {theory[i]:10.5f}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'simtk[plot]'): no plot")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(STIFFNESS, theory, "-", color="0.6", label="steady state, theory")
    ax.plot(STIFFNESS, amplitude, ".", label="simulated (ensemble)")
    ax.axvline(MASS * OMEGA**2, color="0.8", linestyle="--", label=r"$k = m\omega^2$")
    ax.set_xlabel("spring stiffness k (N/m)")
    ax.set_ylabel("amplitude (m)")
    ax.set_title("Driven oscillator: a sweep of 100 stiffnesses")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "resonance.png", dpi=100)
    plt.close(fig)
    print(f"wrote {out_dir / 'resonance.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="simtk_")))
