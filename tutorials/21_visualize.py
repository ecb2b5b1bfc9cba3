"""Tutorial 21: see the motion, live in the browser and as an HTML replay.

Two models are drawn:

1. Simbody's double pendulum (tutorial 03), decorated by hand with `simtk.viz.decorate`: a sphere
   on each bob, a rod to each pin, and Ground's axes.
2. The UR5 arm of example-robot-data (tutorial 18), drawn with its URDF visual meshes as they are
   (COLLADA files with their own colours), moving to a bent pose under a PD controller.

Each is simulated with a `StatesTrajectory` recording at 60 frames/s and written with
`simtk.viz.export_html` to one HTML file that plays offline in any browser (play/pause, a time
slider, drag to orbit). With viser installed (``pip install 'simtk[viz]'``) each run is also shown
live by a `Visualizer` at http://localhost:8080, drawn by a monitor during the simulation, and
then with a slider to scrub the recording.

Run: ``python tutorials/21_visualize.py`` (writes the HTML files and exits), or
``python tutorials/21_visualize.py --serve`` to watch live in real time and keep the viewer open
until Ctrl-C. ``--out DIR`` chooses where the HTML files go (default: the temporary directory).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import tempfile
import time
import warnings
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
    Rotation,
    SimbodyMatterSubsystem,
    Transform,
)
from simtk.simulation import PDController, Simulation, StatesTrajectory
from simtk.viz import Decoration, decorate, export_html

FPS = 60
HAVE_VISER = importlib.util.find_spec("viser") is not None


def double_pendulum():
    """Tutorial 03's pendulum, with decorations: what is drawn is declared beside the model, not in it."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    p1 = MobilizedBody.Pin(matter.ground, Transform(), info, Transform([0, 1, 0]), name="upper")
    p2 = MobilizedBody.Pin(p1, Transform(), info, Transform([0, 1, 0]), name="lower")
    rod = Transform(Rotation(np.pi / 2, [1, 0, 0]), [0, 0.5, 0])  # the cylinder's z axis along the body's y
    for body, color in ((p1, (0.85, 0.2, 0.15)), (p2, (0.15, 0.35, 0.85))):
        decorate(body, Decoration.Sphere(0.12, color=color))
        decorate(body, Decoration.Cylinder(0.025, 1.0, color=(0.6, 0.6, 0.6)), rod)
    decorate(matter.ground, Decoration.Frame(0.3))
    decorate(matter.ground, Decoration.Box([0.15, 0.03, 0.15], color=(0.3, 0.3, 0.3)))
    return system, p1, p2


def ur5_file() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"))
    return path if path.is_file() else None


def run(system, state, duration: float, viz=None, realtime: bool = False, setup=None) -> StatesTrajectory:
    """Simulate, recording at FPS and, with a Visualizer, drawing live at the same rate."""
    sim = Simulation(system, state, step_size=1 / FPS)
    if setup is not None:
        setup(sim)
    traj = sim.add_output_probe(StatesTrajectory())
    if viz is not None:
        sim.add_monitor(viz.monitor(fps=FPS, realtime=realtime))
    summary = sim.run(duration)
    print(f"  {summary}")
    return traj


def pendulum_demo(out: Path, serve: bool, port: int) -> tuple[Path, object]:
    system, p1, p2 = double_pendulum()
    state = system.realize_topology()
    p1.set_angle(state, 1.0)
    p2.set_rate(state, 5.0)
    viz = None
    if HAVE_VISER:
        from simtk.viz import Visualizer

        viz = Visualizer(system, port=port)
        print(f"double pendulum live at {viz.url}")
    traj = run(system, state, 10.0 if serve else 3.0, viz, realtime=serve)
    path = export_html(traj, out / "double_pendulum.html", title="double pendulum")
    print(f"double pendulum: {len(traj)} frames -> {path} ({path.stat().st_size / 1e3:.0f} kB)")
    if viz is not None:
        viz.show_trajectory(traj)
    return path, viz


def robot_demo(out: Path, serve: bool, port: int) -> tuple[Path | None, object]:
    urdf = ur5_file()
    if urdf is None:
        print("UR5: example-robot-data is not installed (pip install example-robot-data); skipped")
        return None, None
    if importlib.util.find_spec("trimesh") is None or importlib.util.find_spec("collada") is None:
        print("UR5: its COLLADA meshes need trimesh and pycollada (pip install 'simtk[viz]'); skipped")
        return None, None
    from simtk.io import load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the file's gazebo plugins and its friction: not used here
        robot = load_urdf(urdf)
    pose = {"shoulder_pan_joint": 0.4, "shoulder_lift_joint": -1.0, "elbow_joint": 1.5,
            "wrist_1_joint": -0.5, "wrist_2_joint": 1.2, "wrist_3_joint": 0.0}
    paths = {name: f"{robot.joints[name].get_absolute_path()}/angle" for name in pose}
    wn = 8.0  # slow enough to watch: a critically damped approach over about half a second

    def control(sim):
        gains = {p: (wn**2, 2 * wn) for p in paths.values()}
        targets = {paths[name]: q for name, q in pose.items()}
        sim.add_controller(PDController(gains, targets, gravity=robot.gravity, inertia_weighted=True), name="hold")

    viz = None
    if HAVE_VISER:
        from simtk.viz import Visualizer

        viz = Visualizer(robot, port=port)  # the UrdfModel: its visual meshes are drawn as the file gives them
        print(f"UR5 live at {viz.url}")
    traj = run(robot.system, robot.default_state(), 2.0, viz, realtime=serve, setup=control)
    path = export_html(traj, out / "ur5.html", robot, title="UR5 reaching a pose")
    print(f"UR5: {len(traj)} frames -> {path} ({path.stat().st_size / 1e6:.2f} MB)")
    if viz is not None:
        viz.show_trajectory(traj)
    return path, viz


def main() -> None:
    ap = argparse.ArgumentParser(description="simtk.viz: live viewer and HTML replay")
    ap.add_argument("--serve", action="store_true", help="watch in real time and keep the viewers open")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "simtk_viz")
    ap.add_argument("--port", type=int, default=8080)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not HAVE_VISER:
        print("viser is not installed: the live viewer is skipped (pip install 'simtk[viz]'); HTML only")
    _, viz1 = pendulum_demo(args.out, args.serve, args.port)
    _, viz2 = robot_demo(args.out, args.serve, args.port + 1)
    viewers = [v for v in (viz1, viz2) if v is not None]
    try:
        if args.serve and viewers:
            print("viewers open (each has a 'Replay' slider); Ctrl-C to stop")
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        for v in viewers:
            v.close()
    print("open the .html files in any browser: they need no network")


if __name__ == "__main__":
    main()
