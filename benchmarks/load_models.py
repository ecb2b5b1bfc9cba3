"""Load times of the importers, and how a URDF load splits between reading and building.

Run: ``python benchmarks/load_models.py`` (OpenSim's published models are found as the tests find
them, ``tests/osim_published.py``; URDFs need ``example-robot-data``). Prints, in milliseconds and
as the best of several repeats (CPU time of this process, so that other processes on the machine
count less):

- ``load_osim`` of gait2392 (23 coordinates; the target is under 100 ms) and Arm26, split into
  ``describe_osim`` (the XML parsed into a model description, no System made) and its ``build()``;
- ``load_urdf`` of a few robots, split into ``describe_urdf`` (the XML parsed into a model
  description, no System made) and the description's ``build()`` (the one builder), and the same
  description's text read back by ``load_model``'s parser and built (``model_from_text``).

Figures only: nothing is asserted.
"""
from __future__ import annotations

import importlib.metadata
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from osim_published import published_model  # noqa: E402

from simtk.io import describe_osim, describe_urdf, load_osim, load_urdf  # noqa: E402
from simtk.io.model_file import model_from_text  # noqa: E402

OSIM = ["Models/Gait2392_Simbody/gait2392_thelen2003muscle.osim", "Models/Arm26/arm26.osim"]
URDF = [("ur_description/urdf/ur5_robot.urdf", False), ("talos_data/robots/talos_reduced.urdf", True),
        ("talos_data/robots/talos_full_v2.urdf", True)]


def best_ms(f, repeats: int = 7) -> float:
    out = []
    for _ in range(repeats):
        t = time.process_time()
        f()
        out.append(time.process_time() - t)
    return 1e3 * min(out)


def main() -> None:
    warnings.simplefilter("ignore")
    for rel in OSIM:
        path = published_model(rel, skip=False)
        if path is None:
            print(f"{rel}: not available (see tests/osim_published.py)")
            continue
        model = load_osim(path)
        print(f"load_osim {Path(rel).name:40s} {len(model.coordinates):3d} coordinates "
              f"{best_ms(lambda: load_osim(path)):7.1f} ms  (describe {best_ms(lambda: describe_osim(path)):5.1f}, "
              f"describe + build {best_ms(lambda: describe_osim(path).build()):5.1f})")
    try:
        robots = Path(importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"))
    except importlib.metadata.PackageNotFoundError:
        print("example-robot-data is not installed: URDF figures skipped")
        return
    print(f"{'load_urdf':40s} {'links':>5s} {'load':>8s} {'describe':>9s} {'build':>8s} {'text+load':>10s}")
    for rel, floating in URDF:
        path = robots / rel
        desc = describe_urdf(path, floating_base=floating)
        text = desc.to_text()
        n = len(desc.matter.children)
        print(f"{Path(rel).name:40s} {n:5d} "
              f"{best_ms(lambda: load_urdf(path, floating_base=floating)):7.1f}  "
              f"{best_ms(lambda: describe_urdf(path, floating_base=floating)):8.1f}  "
              f"{best_ms(lambda: describe_urdf(path, floating_base=floating).build()):7.1f}  "
              f"{best_ms(lambda: model_from_text(text)):9.1f}   (ms; build column: describe + build)")


if __name__ == "__main__":
    main()
