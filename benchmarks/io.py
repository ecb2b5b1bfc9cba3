"""Time URDF loading: simtk's ``load_urdf`` against ``pinocchio.buildModelFromUrdf`` on the same files.

Run: ``python benchmarks/io.py`` (needs ``example-robot-data``; Pinocchio is timed when installed).

The main case is Unitree's B1 with a Z1 arm (40 links); the others show how the time grows with
the number of links. simtk's figure is the load alone (parse, checks, bodies and force elements;
warnings silenced) and the load plus ``realize_topology`` (the first default State); Pinocchio's is
its parse and model build. Each figure is the best of several repeats, in milliseconds. The
target for the 40-link file is under 50 ms for simtk's load.
"""
from __future__ import annotations

import importlib.metadata
import sys
import timeit
import warnings
from pathlib import Path

from simtk.io import load_urdf

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

FILES = [
    "b1_description/urdf/b1-z1.urdf",  # 40 links, the reference case
    "ur_description/urdf/ur5_robot.urdf",
    "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "talos_data/robots/talos_reduced.urdf",
    "tiago_description/robots/tiago_dual.urdf",
]


def robots_dir() -> Path:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        sys.exit("example-robot-data is not installed: pip install example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


def best_ms(fn, number: int = 5, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def load_quietly(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(path)


def main() -> None:
    root = robots_dir()
    print(f"{'file':28} {'links':>5} {'simtk load':>11} {'+topology':>10} {'pinocchio':>10} {'ratio':>6}")
    for rel in FILES:
        path = root / rel
        model = load_quietly(path)
        t_load = best_ms(lambda: load_quietly(path))
        t_topo = best_ms(lambda: load_quietly(path).system.realize_topology())
        if pin is not None:
            t_pin = best_ms(lambda: pin.buildModelFromUrdf(str(path)))
            pin_cols = f"{t_pin:8.2f}ms {t_load / t_pin:6.1f}"
        else:
            pin_cols = f"{'-':>10} {'-':>6}"
        print(f"{path.stem:28} {len(model.frames):5d} {t_load:9.2f}ms {t_topo:8.2f}ms {pin_cols}")
    print("ratio = simtk load / pinocchio build; target: simtk load of the 40-link file under 50 ms")


if __name__ == "__main__":
    main()
