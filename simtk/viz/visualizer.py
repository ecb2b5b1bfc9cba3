"""A live 3-D view of a System in the browser, served on localhost by viser.

Why viser: it is a maintained, pip-installable library whose server runs inside the Python process
and whose client is a three.js page it serves itself, so a viewer is one import and one URL, with
no display, no OpenGL context and no separate process on the Python side; it has a scene tree
(each body is a frame node, its decorations are children with fixed poses, so a frame costs one
pose per body) and GUI widgets (the replay slider). Meshcat needs a separate server process and
its Python client is less maintained; Open3D and pyvista open native windows.

`Visualizer.report` draws a State; `Visualizer.reporter` and `Visualizer.monitor` make it a
periodic reporter of a TimeStepper run or a Simulation at a chosen frame rate; `show_trajectory`
adds a slider (and a play switch) that scrubs a recorded `StatesTrajectory`.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Sequence

import numpy as np

from ..common.events import PeriodicEventReporter
from ..common.state import State
from ..simulation.agents import Monitor
from ._deformables import POINT_COLORS, SPRING_COLOR, SURFACE_COLOR, deformable_frames, offsets
from ._paths import PathFrame, path_frames
from ._scene import Scene, build_scene, default_camera, poses_of
from .decorations import Placed, collect

__all__ = ["Visualizer"]


def _import_viser() -> Any:
    try:
        import viser
    except ImportError as e:  # the [viz] extra
        raise ImportError("the live viewer needs viser: pip install 'simtk[viz]'") from e
    return viser


class Visualizer:
    """Serve a live view of ``system`` on ``http://host:port``.

    Parameters
    ----------
    system : MultibodySystem or UrdfModel
        What to draw (a UrdfModel brings its visual geometry).
    host : str
        The interface to serve on; ``127.0.0.1`` keeps the viewer on this machine.
    port : int
        The port (the next free one is taken when it is busy; see `port` and `url`).
    contact : bool
        Draw the contact surfaces of ``Force.HuntCrossley`` elements.
    urdf : {"visuals", "collisions"} or None
        For a UrdfModel, which geometry to draw.
    decorations : iterable of Placed
        More decorations, beside those registered with `decorate`.
    camera : dict, optional
        ``eye``, ``target``, ``up`` (3 floats each), ``fov`` (vertical, degrees): the initial view
        and the one "Reset view" returns to. Framed on the first State reported when None.
    up : str, optional
        The scene's up axis (``"+z"``...); from the system's gravity when None.
    shadows : bool
        Cast shadows (costly where the browser renders without a GPU).
    environment_map : bool
        Light the scene with viser's image-based environment as well as its lights; without it the
        page draws an order of magnitude faster on a browser without a GPU (software WebGL).
    paths : bool
        Draw the GeometryPath of every path force as a polyline through its points and along its
        wrap surfaces, a muscle's coloured by its activation (blue 0 to red 1), redrawn each frame.
    deformables : bool
        Draw the deformable bodies (``simtk.deformable``): a body with a surface (tetrahedra, membrane
        triangles) as that surface, one without as its particles and springs; each frame sends only
        the particles' positions.

    Examples
    --------
    >>> viz = Visualizer(system)                        # doctest: +SKIP
    >>> system.add_event_reporter(viz.reporter(fps=30))  # doctest: +SKIP
    """

    def __init__(self, system: Any, *, host: str = "127.0.0.1", port: int = 8080, contact: bool = True,
                 urdf: str | None = "visuals", decorations: Iterable[Placed] = (), camera: dict | None = None,
                 up: str | None = None, shadows: bool = False,
                 environment_map: bool = True, paths: bool = True, deformables: bool = True) -> None:
        viser = _import_viser()
        sys_, placed = collect(system, contact=contact, urdf=urdf, extra=decorations)
        self.system = sys_
        self.scene: Scene = build_scene(sys_, placed, up=up, paths=paths, deformables=deformables)
        self._server = viser.ViserServer(host=host, port=port, verbose=False)
        self._host = host
        self._server.scene.set_up_direction(self.scene.up)
        self._shadows = bool(shadows)
        self._server.scene.configure_default_lights(cast_shadow=self._shadows)
        if not environment_map:
            self._server.scene.configure_environment_map(None)
        self._frames = self._add_scene()
        self._offsets = offsets(self.scene.deformables)
        self._deformable_nodes: list[dict[str, Any]] | None = None
        self._last: np.ndarray | None = None
        self._camera_set = False
        if camera is not None:
            self.set_camera(**camera)
        self._replay: tuple[np.ndarray, np.ndarray] | None = None
        self._replay_paths: list[list[PathFrame]] | None = None
        self._replay_particles: np.ndarray | None = None
        self._dot: float | None = None
        self._slider: Any = None
        self._time_box: Any = None
        self._play_box: Any = None
        self._player: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------------ set-up
    def _add_scene(self) -> list:
        sc, scene = self._server.scene, self.scene
        frames = []
        for slot, body in enumerate(scene.bodies):
            frames.append(sc.add_frame(f"/simtk/{slot}_{body.name or 'body'}", show_axes=False))
        for k, it in enumerate(scene.items):
            part = scene.geoms[it.geom]
            name = f"{frames[it.slot].name}/{k}"
            rgb = tuple(int(round(255 * c)) for c in it.rgba[:3])
            if part.mode == "triangles":
                sc.add_mesh_simple(name, vertices=part.positions, faces=part.indices.reshape(-1, 3).astype(np.int32),
                                   color=rgb, opacity=None if it.rgba[3] >= 1 else it.rgba[3], side="double",
                                   cast_shadow=self._shadows, receive_shadow=self._shadows,
                                   wxyz=tuple(it.q), position=tuple(it.p))
            else:
                pts = part.positions[part.indices.reshape(-1, 2)]
                sc.add_line_segments(name, pts, colors=rgb, thickness=2.0, thickness_units="screen",
                                     wxyz=tuple(it.q), position=tuple(it.p))
        return frames

    def set_camera(self, eye: Sequence[float], target: Sequence[float], up: Sequence[float] | None = None,
                   fov: float = 45.0) -> None:
        """Set the initial view (and "Reset view"): ``eye``, ``target``, ``up``, vertical ``fov`` in degrees.

        Browsers already connected keep their view until they reset it.
        """
        cam = self._server.initial_camera
        cam.position = tuple(float(x) for x in eye)
        cam.look_at = tuple(float(x) for x in target)
        if up is not None:
            cam.up = tuple(float(x) for x in up)
        cam.fov = float(np.radians(fov))
        self._camera_set = True

    # ------------------------------------------------------------------ properties
    @property
    def port(self) -> int:
        """The port served on."""
        return int(self._server.get_port())

    @property
    def url(self) -> str:
        """The address to open in a browser."""
        host = "localhost" if self._host in ("127.0.0.1", "0.0.0.0", "::") else self._host
        return f"http://{host}:{self.port}"

    @property
    def server(self) -> Any:
        """The viser server, to add one's own scene nodes and GUI."""
        return self._server

    # ------------------------------------------------------------------ drawing
    def report(self, state: State) -> None:
        """Draw ``state`` (realized to Position here if it is not; nothing else in it changes).

        Parameters
        ----------
        state : State
        """
        frames = path_frames(self.scene.paths, [state])[0] if self.scene.paths else None
        particles = deformable_frames(self.scene.deformables, [state])[0] if self.scene.deformables else None
        self._draw(poses_of(self.scene.bodies, [state])[0], frames, particles)

    def _draw_deformables(self, x: np.ndarray) -> None:
        # The nodes are made at the first frame (faces, springs' and points' colours), then only their
        # vertices are assigned: viser sends the changed property alone.
        sc, off = self._server.scene, self._offsets
        if self._deformable_nodes is None:
            size = float(np.linalg.norm(np.ptp(x, axis=0))) if len(x) else 0.0
            dot = 0.01 * size if size > 0 else 0.005
            self._deformable_nodes = []
            for k, d in enumerate(self.scene.deformables):
                xk = x[off[k]:off[k + 1]]
                name = f"/simtk_deformables/{k}_{d.name or 'deformable'}"
                nodes: dict[str, Any] = {}
                if len(d.triangles):
                    nodes["surface"] = sc.add_mesh_simple(f"{name}/surface", vertices=xk,
                                                          faces=d.triangles.astype(np.int32),
                                                          color=_rgb255(SURFACE_COLOR), side="double",
                                                          cast_shadow=self._shadows,
                                                          receive_shadow=self._shadows)
                if len(d.segments):
                    nodes["springs"] = sc.add_line_segments(f"{name}/springs", xk[d.segments],
                                                            colors=_rgb255(SPRING_COLOR), thickness=3.0,
                                                            thickness_units="screen")
                if d.points:
                    for kind, rgb in enumerate(POINT_COLORS):
                        if (d.kinds == kind).any():
                            nodes[f"points{kind}"] = sc.add_point_cloud(
                                f"{name}/points{kind}", xk[d.kinds == kind], colors=_rgb255(rgb),
                                point_size=dot * (1.0 if kind == 0 else 1.6), point_shape="circle",
                                precision="float32")
                self._deformable_nodes.append(nodes)
            return
        for k, (d, nodes) in enumerate(zip(self.scene.deformables, self._deformable_nodes)):
            xk = x[off[k]:off[k + 1]]
            if "surface" in nodes:
                nodes["surface"].vertices = xk
            if "springs" in nodes:
                nodes["springs"].points = xk[d.segments]
            for kind in range(len(POINT_COLORS)):
                if f"points{kind}" in nodes:
                    nodes[f"points{kind}"].points = xk[d.kinds == kind]

    def _draw_paths(self, frames: list[PathFrame]) -> None:
        # A path's vertex count changes with the pose: its nodes are replaced (same names) each frame.
        sc = self._server.scene
        if self._dot is None:
            pts = np.concatenate([f.points for f in frames]) if frames else np.zeros((0, 3))
            size = float(np.linalg.norm(np.ptp(pts, axis=0))) if len(pts) else 0.0
            self._dot = 0.015 * size if size > 0 else 0.005
        for k, f in enumerate(frames):
            rgb = tuple(int(round(255 * c)) for c in f.rgb)
            name = f"/simtk_paths/{k}_{self.scene.paths[k].name or 'path'}"
            if len(f.points) >= 2:
                sc.add_line_segments(f"{name}/line", np.stack([f.points[:-1], f.points[1:]], 1), colors=rgb,
                                     thickness=4.0, thickness_units="screen")
            if f.marks.any():
                sc.add_point_cloud(f"{name}/points", f.points[f.marks].astype(np.float32), colors=rgb,
                                   point_size=self._dot, point_shape="circle", precision="float32")

    def _draw(self, poses: np.ndarray, paths: list[PathFrame] | None = None,
              particles: np.ndarray | None = None) -> None:
        if not self._camera_set:  # frame the first picture drawn
            self.set_camera(**default_camera(self.scene, poses[None], points=particles))
        last = self._last
        # Only bodies that moved are sent: welded and resting bodies cost nothing per frame.
        with self._server.atomic():
            for k, h in enumerate(self._frames):
                row = poses[k]
                if last is not None and np.array_equal(last[k], row):
                    continue
                h.wxyz = row[:4]
                h.position = row[4:]
            if paths:
                self._draw_paths(paths)
            if particles is not None and self.scene.deformables:
                self._draw_deformables(particles)
        self._last = poses.copy()

    def reporter(self, fps: float = 30.0, realtime: bool = False) -> PeriodicEventReporter:
        """A periodic event reporter that draws every ``1/fps`` of simulated time (``system.add_event_reporter``).

        Parameters
        ----------
        fps : float
            Frames per simulated second.
        realtime : bool
            Wait between frames so that the motion is seen at the speed it happens (when the
            simulation runs faster than that).

        Returns
        -------
        PeriodicEventReporter
        """
        return _Reporter(self, fps, realtime)

    def monitor(self, fps: float = 30.0, realtime: bool = False) -> Monitor:
        """A `Monitor` that draws every ``1/fps`` of simulated time (``Simulation.add_monitor``).

        ``1/fps`` must be a whole number of the simulation's steps.

        Parameters
        ----------
        fps : float
        realtime : bool
            As for `reporter`.

        Returns
        -------
        Monitor
        """
        return _VizMonitor(self, fps, realtime)

    # ------------------------------------------------------------------ replay of a recording
    def show_trajectory(self, trajectory: Iterable[State]) -> None:
        """Add a slider that scrubs ``trajectory`` (and a "play" switch), showing its first State.

        Parameters
        ----------
        trajectory : StatesTrajectory or sequence of State
        """
        states = list(trajectory)
        if not states:
            raise ValueError("Visualizer.show_trajectory: the trajectory has no States")
        times = np.array([s.get_time() for s in states])
        self._replay = (times, poses_of(self.scene.bodies, states))
        self._replay_paths = path_frames(self.scene.paths, states) if self.scene.paths else None
        self._replay_particles = deformable_frames(self.scene.deformables, states) if self.scene.deformables else None
        n = len(states)
        gui = self._server.gui
        if self._slider is None:
            folder = gui.add_folder("Replay")
            with folder:
                self._slider = gui.add_slider("frame", min=0, max=max(n - 1, 1), step=1, initial_value=0)
                self._time_box = gui.add_number("time (s)", initial_value=float(times[0]), disabled=True)
                self._play_box = gui.add_checkbox("play", initial_value=False)
            self._slider.on_update(lambda _event: self.show_frame(int(self._slider.value)))
            self._play_box.on_update(lambda _event: self._start_player() if self._play_box.value else None)
        else:
            self._slider.max = max(n - 1, 1)
        self._slider.value = 0
        self.show_frame(0)

    def show_frame(self, i: int) -> None:
        """Draw frame ``i`` of the trajectory given to `show_trajectory`."""
        if self._replay is None:
            raise RuntimeError("Visualizer.show_frame: call show_trajectory first")
        times, poses = self._replay
        i = int(min(max(i, 0), len(times) - 1))
        self._draw(poses[i], self._replay_paths[i] if self._replay_paths is not None else None,
                   self._replay_particles[i] if self._replay_particles is not None else None)
        if self._time_box is not None:
            self._time_box.value = float(times[i])

    def _start_player(self) -> None:
        if self._player is not None and self._player.is_alive():
            return
        self._player = threading.Thread(target=self._play, name="simtk-viz-replay", daemon=True)
        self._player.start()

    def _play(self) -> None:
        # Wall-clock paced: the frame shown is the last one recorded at or before the elapsed time.
        assert self._replay is not None
        times = self._replay[0]
        start = int(self._slider.value) if int(self._slider.value) < len(times) - 1 else 0
        t0, wall0 = times[start], time.perf_counter()
        while not self._closed and self._play_box.value:
            t = t0 + time.perf_counter() - wall0
            i = int(np.searchsorted(times, t, side="right") - 1)
            if i >= len(times) - 1:
                i = len(times) - 1
                self._play_box.value = False
            if i != int(self._slider.value):
                self._slider.value = i  # its callback draws the frame
            time.sleep(1 / 60)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Stop serving."""
        self._closed = True
        self._server.stop()

    def __enter__(self) -> Visualizer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _rgb255(rgb: Sequence[float]) -> tuple[int, int, int]:
    return (int(round(255 * rgb[0])), int(round(255 * rgb[1])), int(round(255 * rgb[2])))


class _Pacer:
    """Sleeps so that simulated time does not run ahead of wall time (when asked to)."""

    def __init__(self, realtime: bool) -> None:
        self.realtime = realtime
        self._origin: tuple[float, float] | None = None

    def wait(self, t: float) -> None:
        if not self.realtime:
            return
        now = time.perf_counter()
        if self._origin is None or t < self._origin[0]:
            self._origin = (t, now)
            return
        ahead = (t - self._origin[0]) - (now - self._origin[1])
        if ahead > 0:
            time.sleep(ahead)


class _Reporter(PeriodicEventReporter):
    """Draws on a Visualizer at every multiple of its interval."""

    def __init__(self, viz: Visualizer, fps: float, realtime: bool) -> None:
        if not fps > 0:
            raise ValueError(f"Visualizer.reporter: fps must be > 0, got {fps!r}")
        super().__init__(1.0 / fps)
        self._viz, self._pacer = viz, _Pacer(realtime)

    def handle_event(self, state: State) -> None:
        self._pacer.wait(state.get_time())
        self._viz.report(state)


class _VizMonitor(Monitor):
    """Draws on a Visualizer every ``1/fps`` of a Simulation."""

    def __init__(self, viz: Visualizer, fps: float, realtime: bool) -> None:
        if not fps > 0:
            raise ValueError(f"Visualizer.monitor: fps must be > 0, got {fps!r}")
        super().__init__(1.0 / fps)
        self._viz, self._pacer = viz, _Pacer(realtime)

    def monitor(self, state: State) -> None:
        self._pacer.wait(state.get_time())
        self._viz.report(state)
