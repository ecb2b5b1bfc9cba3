"""Tutorial 18: a real robot from its URDF file, holding a pose under a PD controller.

The UR5 arm of the example-robot-data package is loaded with `simtk.io.load_urdf`: one mobilized
body per link (named after the link, so the shoulder lift joint's coordinate is
``/matter/upper_arm_link/angle``), gravity, and stops at the joint limits. The arm starts at its
zero pose, stretched out horizontally, and a PD controller with gravity compensation brings it to a
bent pose and holds it there. After one simulated second the script prints each joint's tracking
error.

Run: ``python tutorials/18_urdf_robot.py`` (needs the ``example-robot-data`` package: ``pip install
example-robot-data``).
"""
from __future__ import annotations

import importlib.metadata
import warnings
from pathlib import Path

import numpy as np

from simtk.io import load_urdf
from simtk.simulation import PDController, Simulation


def ur5_file() -> Path | None:
    """The UR5's URDF in the installed example-robot-data package, or None."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"))
    return path if path.is_file() else None


def main() -> None:
    path = ur5_file()
    if path is None:
        print("example-robot-data is not installed: pip install example-robot-data")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. meshes the package does not ship; this run needs none
        robot = load_urdf(path)
    print(f"loaded {robot.name!r}: {len(robot.bodies)} links, {len(robot.joints)} joints, "
          f"{robot.default_state().get_nu()} degrees of freedom")

    # The pose to hold, by URDF joint name (rad).
    pose = {"shoulder_pan_joint": 0.4, "shoulder_lift_joint": -1.0, "elbow_joint": 1.5,
            "wrist_1_joint": -0.5, "wrist_2_joint": 1.2, "wrist_3_joint": 0.0}
    paths = {name: f"{robot.joints[name].get_absolute_path()}/angle" for name in pose}

    state = robot.default_state()
    sim = Simulation(robot.system, state, step_size=0.002)
    # Inertia-weighted gains act per unit of acceleration (1/s^2, 1/s): a critically damped
    # response with natural frequency 20 rad/s on every joint, however different their inertias.
    wn = 20.0
    gains = {p: (wn**2, 2 * wn) for p in paths.values()}
    targets = {paths[name]: q for name, q in pose.items()}
    sim.add_controller(PDController(gains, targets, gravity=robot.gravity, inertia_weighted=True), name="hold")
    summary = sim.run(1.0)
    print(summary)

    final = sim.get_state()
    print(f"{'joint':22} {'target':>8} {'reached':>9} {'error':>9}")
    errors = []
    for name, target in pose.items():
        q = robot.joints[name].get_one_q(final, 0)
        errors.append(q - target)
        print(f"{name:22} {target:8.3f} {q:9.5f} {q - target:9.2e}")
    print(f"final tracking error: max {np.abs(errors).max():.2e} rad after {final.get_time():.2f} s")


if __name__ == "__main__":
    main()
