"""MJCF models: load time, and the cost of one forward-dynamics evaluation against MuJoCo's.

Run: ``python benchmarks/mjcf_models.py`` (needs ``mujoco`` and the ``gymnasium`` / ``dm_control``
wheels, whose model files are read). For each model it prints, as the best of several repeats (CPU
time of this process):

- ``load_mjcf`` in ms (XML read into a description, then built);
- one ``realize(state, Stage.Acceleration)`` after a change of u, in us, and its ratio to one
  ``mj_forward`` of the same model with contacts, equality constraints and limits off (MuJoCo's
  call also computes what simtk does not build, e.g. sensors, so the ratio favours neither exactly);
- the simtk model's mobility count against MuJoCo's ``nv`` (equal: armature is each mobilizer's own
  term of the mass matrix, no rotor bodies or constraints);
- what the armature costs: the same realization with every armature set to zero, as a ratio.

Figures only: nothing is asserted.
"""
from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simtk import Stage  # noqa: E402
from simtk.io import load_mjcf  # noqa: E402

MODELS = [("gymnasium", "envs/mujoco/assets/half_cheetah.xml"), ("gymnasium", "envs/mujoco/assets/humanoid.xml"),
          ("dm_control", "suite/cheetah.xml"), ("dm_control", "suite/humanoid_CMU.xml")]


def best(f, n: int, repeats: int = 5) -> float:
    out = []
    for _ in range(repeats):
        t = time.process_time()
        for _ in range(n):
            f()
        out.append((time.process_time() - t) / n)
    return min(out)


def main() -> None:
    try:
        import mujoco
    except ImportError:
        print("mujoco is not installed")
        return
    warnings.simplefilter("ignore")
    for package, rel in MODELS:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            print(f"{package} is not installed")
            continue
        path = Path(spec.origin).parent / rel
        t_load = best(lambda: load_mjcf(path, limits=False), 1, 3)
        model = load_mjcf(path, limits=False)
        state = model.default_state()
        system = model.system

        def forward():
            state.set_u(state.get_u())
            system.realize(state, Stage.Acceleration)

        t_simtk = best(forward, 50)
        m = mujoco.MjModel.from_xml_path(str(path))
        off = mujoco.mjtDisableBit
        m.opt.disableflags |= off.mjDSBL_CONTACT | off.mjDSBL_EQUALITY | off.mjDSBL_LIMIT
        d = mujoco.MjData(m)
        t_mj = best(lambda: mujoco.mj_forward(m, d), 200)
        for mb in model.joints.values():
            mb.set_armature(0.0)
        state = model.default_state()
        t_zero = best(forward, 50)
        print(f"{package}:{Path(rel).stem:14s} load {1e3 * t_load:6.1f} ms   realize(Acceleration) "
              f"{1e6 * t_simtk:7.0f} us = {t_simtk / t_mj:5.1f} x mj_forward ({1e6 * t_mj:5.0f} us)   "
              f"mobilities {state.get_nu():3d} (MuJoCo nv {m.nv})   armature cost {t_simtk / t_zero:5.3f} x")


if __name__ == "__main__":
    main()
