"""Compiled muscles in the time loop: OpenSim's published muscle models beside OpenSim's Manager (issue 30).

The published ``leg6dof9musc.osim`` (9 Thelen2003Muscles, a knee coupler), the same leg with its
muscles replaced by DeGrooteFregly2016Muscles (``degroote_leg``: OpenSim's ``replaceMuscles``, explicit
elastic tendons, a PrescribedController holding every excitation at ``DEGROOTE_EXCITATION``, the
default activations at it and the default tendon forces at OpenSim's equilibrium), ``gait10dof18musc.osim``
(10 coordinates, 18 Millard2012EquilibriumMuscles with elastic damped tendons, its wrap sets empty)
and ``gait2392_millard2012muscle.osim`` (23 coordinates, 92 Millard muscles), found by
tests/osim_published.py, are each read by ``load_osim`` and simulated from its default State for its
``t_end`` s with Runge-Kutta-Merson at ``ACCURACY``:

* simtk: every muscle is a compiled kind (ThelenMuscle, core/muscles.pxi; MillardMuscle,
  core/millard.pxi; DeGrooteMuscle, core/degroote.pxi: its curves, law, path and states in the core), so
  the compiled time loop steps
  (q, u, z) without calling Python per evaluation (``describe_fast_path`` is printed);
* OpenSim 4.6's Manager on the same file, the same method and accuracy, one run
  (``_opensim_manager.run_manager``).

It prints the wall times, their ratio, how many muscles were built, and how far apart the final
coordinates are (the integrators' errors differ at this accuracy).

Run with ``python benchmarks/muscles.py`` (``--repeats N``: the best of N runs, default 1; ``--quick``: the
two small models only).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import opensim as osim

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _opensim_manager import run_manager  # noqa: E402
from osim_published import published_model  # noqa: E402

from simtk import Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from simtk.math import RungeKuttaMersonIntegrator  # noqa: E402

#: label -> (published file, seconds simulated, whether its muscles are replaced by DeGroote-Fregly's)
MODELS = {"Leg6Dof9Musc (Thelen)": ("Models/Leg6Dof9Musc/leg6dof9musc.osim", 0.5, False),
          "Leg6Dof9Musc (DeGrooteFregly)": ("Models/Leg6Dof9Musc/leg6dof9musc.osim", 0.5, True),
          "Gait10dof18musc (Millard)": ("Models/Gait10dof18musc/gait10dof18musc.osim", 0.2, False),
          "Gait2392 (Millard)": ("Models/Gait2392_Simbody/gait2392_millard2012muscle.osim", 0.2, False)}
ACCURACY = 1e-5
#: the DeGroote leg's excitations and initial activations. At 0.2 a trial step of simtk's integrator
#: takes the medial gastrocnemius' slackening tendon force below the tendon curve's asymptote near
#: t = 0.19 s, where the law is not finite and the muscle raises (OpenSim's integrator rejects such a
#: step and goes on); with no controller (activations decaying from 0.05) OpenSim's Manager stops too.
DEGROOTE_EXCITATION = 0.5


def degroote_leg(path: str, out: str) -> str:
    """Write to ``out`` the model at ``path`` with its muscles replaced by DeGrooteFregly2016Muscles (see
    the module's notes) and return ``out``."""
    m = osim.Model(path)
    osim.DeGrooteFregly2016Muscle.replaceMuscles(m)
    controller = osim.PrescribedController()
    controller.setName("excitations")
    muscles = [osim.DeGrooteFregly2016Muscle.safeDownCast(m.getMuscles().get(i))
               for i in range(m.getMuscles().getSize())]
    for mu in muscles:
        mu.set_default_activation(DEGROOTE_EXCITATION)
        controller.addActuator(mu)
        controller.prescribeControlForActuator(mu.getName(), osim.Constant(DEGROOTE_EXCITATION))
    m.addController(controller)
    state = m.initSystem()
    m.equilibrateMuscles(state)
    for mu in muscles:
        mu.set_default_normalized_tendon_force(
            m.getStateVariableValue(state, mu.getAbsolutePathString() + "/normalized_tendon_force"))
    m.printToXML(out)
    return out


def run_simtk(path: str, t_end: float) -> tuple[float, np.ndarray, str, int, int]:
    """(wall time, final coordinates, describe_fast_path, muscles built, muscles in the file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_osim(path)
    state = m.initial_state()
    m.system.realize(state, Stage.Acceleration)
    integ = RungeKuttaMersonIntegrator(m.system)
    integ.set_accuracy(ACCURACY)
    t0 = time.perf_counter()
    integ.initialize(state)
    integ.step_to(t_end)
    wall = time.perf_counter() - t0
    st = integ.get_state()
    n_file = osim.Model(path).getMuscles().getSize()
    return (wall, np.array([m.get_coordinate_value(st, n) for n in m.coordinates]), integ.describe_fast_path(),
            len(m.muscles), n_file)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="the two small models only")
    args = ap.parse_args()
    osim.Logger.setLevelString("error")
    tmp = tempfile.TemporaryDirectory()
    for label, (model, t_end, degroote) in MODELS.items():
        if args.quick and "2392" in label:
            continue
        src = published_model(model, skip=False)
        if src is None:
            raise SystemExit("OpenSim's published models are not available (see tests/osim_published.py)")
        path = str(src)
        if degroote:
            path = degroote_leg(path, str(Path(tmp.name) / "leg6dof9musc_degroote.osim"))
        best: dict = {}
        for _ in range(args.repeats):
            for key, fn in (("simtk", lambda: run_simtk(path, t_end)),
                            ("opensim", lambda: run_manager(path, t_end, ACCURACY))):
                r = fn()
                if key not in best or r[0] < best[key][0]:
                    best[key] = r
        wall, q, why, built, n_file = best["simtk"]
        print(f"{label}, {built} of {n_file} muscles built, {t_end} s, RK-Merson "
              f"{ACCURACY:g} (best of {args.repeats})")
        print(f"  simtk:           {wall:.3f} s   ({why})")
        print(f"  OpenSim Manager: {best['opensim'][0]:.3f} s")
        print(f"  ratio OpenSim / simtk: {best['opensim'][0] / wall:.1f}")
        print(f"  max |q_simtk - q_opensim| at the end: {np.abs(q - best['opensim'][1]).max():.2e}")


if __name__ == "__main__":
    main()
