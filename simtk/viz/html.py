"""A recorded motion as one self-contained HTML file that plays offline in any browser with WebGL.

`export_html` writes the scene's geometry and the bodies' poses at every recorded State into the
page (and the deformable bodies' particles, float32, with their springs and surface triangles once),
beside a small WebGL renderer written for it (``replay.js``, no libraries and no network at view
time). Positions are quantized to 16 bits within each part's bounding box (a micrometre on a 10 cm
part) and poses are float32, both base64-encoded: 40 bodies x 600 frames take under 1 MB.

The page has play/pause, a time slider, a speed choice and a loop switch; drag to orbit, shift- or
right-drag to pan, wheel to zoom, space to play or pause, arrow keys to step.
"""
from __future__ import annotations

import base64
import html
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ._deformables import POINT_COLORS, SPRING_COLOR, SURFACE_COLOR, deformable_frames
from ._paths import PathFrame, path_frames
from ._scene import Scene, build_scene, default_camera, poses_of
from .decorations import Placed, collect

__all__ = ["export_html", "replay_html"]


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _geom_payload(scene: Scene) -> list[dict]:
    out = []
    for part in scene.geoms:
        pos = np.asarray(part.positions, dtype=float).reshape(-1, 3)
        lo = pos.min(0) if len(pos) else np.zeros(3)
        hi = pos.max(0) if len(pos) else np.zeros(3)
        span = np.where(hi > lo, hi - lo, 1.0)
        q = np.rint((pos - lo) / span * 65535).astype("<u2")
        hi = lo + span  # the decoder maps 65535 to lo + span
        wide = len(pos) > 65535
        idx = np.asarray(part.indices).astype("<u4" if wide else "<u2")
        out.append({"mode": part.mode, "pos": _b64(q), "lo": lo.tolist(), "hi": hi.tolist(), "idx": _b64(idx),
                    "wide": wide})
    return out


def _paths_payload(scene: Scene, frames: Sequence[Sequence[PathFrame]], n: int) -> dict:
    """Per frame and path: its vertex count, then all vertices (float32), marks (uint8) and colours."""
    npaths = len(scene.paths)
    if len(frames) != n or any(len(f) != npaths for f in frames):
        raise ValueError(f"replay_html: paths must hold {npaths} PathFrame(s) for each of the {n} frames")
    counts = np.array([len(pf.points) for f in frames for pf in f], dtype="<u4")
    pts = [pf.points for f in frames for pf in f]
    marks = [pf.marks for f in frames for pf in f]
    rgb = np.array([pf.rgb for f in frames for pf in f], dtype=float).reshape(-1, 3)
    return {
        "n": npaths,
        "names": [d.name for d in scene.paths],
        "counts": _b64(counts),
        "pts": _b64(np.concatenate(pts).astype("<f4") if pts else np.zeros(0, "<f4")),
        "marks": _b64(np.concatenate(marks).astype("u1") if marks else np.zeros(0, "u1")),
        "rgb": _b64(np.rint(np.clip(rgb, 0, 1) * 255).astype("u1")),
    }


def _deformables_payload(scene: Scene, frames: np.ndarray, n: int) -> dict:
    """Each body's connectivity once (uint32 indices, uint8 kinds), then every frame's particles (float32)."""
    total = sum(d.num_particles for d in scene.deformables)
    if frames.shape != (n, total, 3):
        raise ValueError(f"replay_html: deformables must be ({n}, {total}, 3) (the particles of each frame), "
                         f"got {frames.shape}")
    bodies = [{"name": d.name, "n": d.num_particles, "segs": _b64(d.segments.astype("<u4")),
               "tris": _b64(d.triangles.astype("<u4")), "kinds": _b64(d.kinds.astype("u1")), "points": d.points,
               "spring": list(SPRING_COLOR), "surface": list(SURFACE_COLOR)} for d in scene.deformables]
    return {"bodies": bodies, "total": total, "pointColors": [list(c) for c in POINT_COLORS],
            "pts": _b64(frames.astype("<f4"))}


def replay_html(scene: Scene, times: np.ndarray, poses: np.ndarray, *, camera: dict | None = None,
                title: str = "simtk replay", autoplay: bool = True, loop: bool = True,
                background: Sequence[float] = (1.0, 1.0, 1.0),
                paths: Sequence[Sequence[PathFrame]] | None = None,
                deformables: np.ndarray | None = None) -> str:
    """The replay page of ``scene`` with slot ``poses`` (n, n_slots, 7) at ``times`` (n,), as a string.

    Parameters
    ----------
    scene : Scene
    times : ndarray, shape (n,)
    poses : ndarray, shape (n, n_slots, 7)
        w, x, y, z, px, py, pz of each slot's body.
    camera : dict, optional
        ``eye``, ``target``, ``up`` (3 floats each) and ``fov`` (vertical, degrees); framed on the
        motion when None.
    title : str
    autoplay, loop : bool
    background : 3 floats in [0, 1]
    paths : sequence of sequence of PathFrame, optional
        ``paths[i][k]``: the scene's path k at frame i (``_paths.path_frames``); none drawn when None.
    deformables : ndarray, shape (n, N, 3), optional
        The particles of the scene's deformable bodies at each frame (``_deformables.deformable_frames``);
        none drawn when None.

    Returns
    -------
    str
    """
    times = np.asarray(times, dtype=float)
    poses = np.asarray(poses, dtype=float)
    if poses.shape != (len(times), len(scene.bodies), 7):
        raise ValueError(f"replay_html: poses must be (n, {len(scene.bodies)}, 7) for {len(times)} times, "
                         f"got {poses.shape}")
    if deformables is not None:
        deformables = np.asarray(deformables, dtype=np.float32)
    cam = dict(default_camera(scene, poses, points=deformables)) if camera is None else dict(camera)
    for key in ("eye", "target", "up"):
        cam[key] = [float(x) for x in np.asarray(cam[key], dtype=float).ravel()]
    cam["fov"] = float(cam.get("fov", 45.0))
    data = {
        "geoms": _geom_payload(scene),
        "items": [{"slot": it.slot, "geom": it.geom, "q": [float(x) for x in it.q], "p": [float(x) for x in it.p],
                   "rgba": list(it.rgba)} for it in scene.items],
        "nslots": len(scene.bodies),
        "times": _b64(times.astype("<f4")),
        "poses": _b64(poses.astype("<f4")),
        "camera": cam,
        "background": [float(c) for c in background],
        "autoplay": bool(autoplay),
        "loop": bool(loop),
        "paths": None if paths is None else _paths_payload(scene, paths, len(times)),
        "deformables": None if deformables is None or not scene.deformables
        else _deformables_payload(scene, deformables, len(times)),
    }
    # "</" cannot appear in the JSON's strings (base64 and numbers) except in a title: escape "<" anyway.
    payload = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    script = resources.files("simtk.viz").joinpath("replay.js").read_text(encoding="utf-8")
    return _PAGE.format(title=html.escape(title), payload=payload, script=script)


def export_html(trajectory: Iterable[Any], path: str | os.PathLike, system: Any = None, *, contact: bool = True,
                urdf: str | None = "visuals", decorations: Iterable[Placed] = (), camera: dict | None = None,
                title: str | None = None, autoplay: bool = True, loop: bool = True,
                background: Sequence[float] = (1.0, 1.0, 1.0), up: str | None = None, paths: bool = True,
                deformables: bool = True) -> Path:
    """Write a self-contained HTML file that replays ``trajectory``.

    Parameters
    ----------
    trajectory : StatesTrajectory or sequence of State
        The recorded States, in time order (realized to Position here if they are not).
    path : str or path-like
        The ``.html`` file to write.
    system : MultibodySystem or UrdfModel, optional
        What to draw; the States' System when None. Give the `UrdfModel` to draw its visuals.
    contact : bool
        Draw the contact surfaces of ``Force.HuntCrossley`` elements.
    urdf : {"visuals", "collisions"} or None
        For a UrdfModel, which geometry to draw.
    decorations : iterable of Placed
        More decorations, beside those registered with `decorate`.
    camera : dict, optional
        ``eye``, ``target``, ``up``, ``fov`` (degrees); framed on the motion when None.
    title : str, optional
    autoplay, loop : bool
        Start playing when opened; start over at the end.
    background : 3 floats in [0, 1]
    up : str, optional
        The up axis (``"+z"``...) for the default camera; from gravity when None.
    paths : bool
        Draw the GeometryPath of every path force (muscles coloured by activation, blue 0 to red 1),
        as a polyline through its points, along its wrap surfaces.
    deformables : bool
        Draw the deformable bodies (``simtk.deformable``): a body with a surface (tetrahedra, membrane
        triangles) as that surface, one without as its particles and springs; the vertices follow the
        particles frame by frame.

    Returns
    -------
    Path
        The file written.
    """
    states = list(trajectory)
    if not states:
        raise ValueError("export_html: the trajectory has no States")
    source = states[0].get_system() if system is None else system
    sys_, placed = collect(source, contact=contact, urdf=urdf, extra=decorations)
    scene = build_scene(sys_, placed, up=up, paths=paths, deformables=deformables)
    times = np.array([s.get_time() for s in states])
    poses = poses_of(scene.bodies, states)
    frames = path_frames(scene.paths, states) if scene.paths else None
    particles = deformable_frames(scene.deformables, states) if scene.deformables else None
    name = title if title is not None else f"{getattr(sys_, 'name', '') or 'simtk'} replay"
    page = replay_html(scene, times, poses, camera=camera, title=name, autoplay=autoplay, loop=loop,
                       background=background, paths=frames, deformables=particles)
    out = Path(path)
    out.write_text(page, encoding="utf-8")
    return out


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  html, body {{ margin: 0; height: 100%; font: 14px system-ui, sans-serif; overflow: hidden; }}
  body {{ display: flex; flex-direction: column; }}
  #view {{ flex: 1 1 auto; min-height: 0; width: 100%; display: block; }}
  #bar {{ flex: 0 0 40px; display: flex; align-items: center; gap: 10px; padding: 0 10px;
          background: #f1f1f1; border-top: 1px solid #ccc; }}
  #slider {{ flex: 1 1 auto; }}
  #time {{ font-variant-numeric: tabular-nums; min-width: 7.5em; }}
  #msg {{ position: absolute; top: 8px; left: 10px; color: #b00; }}
  #title {{ color: #555; }}
</style>
</head>
<body>
<canvas id="view"></canvas>
<div id="msg"></div>
<div id="bar">
  <button id="play">Play</button>
  <input id="slider" type="range" min="0" max="0" step="1" value="0">
  <span id="time">t = 0.000 s</span>
  <select id="speed"><option value="0.25">0.25x</option><option value="0.5">0.5x</option>
    <option value="1" selected>1x</option><option value="2">2x</option></select>
  <label><input id="loop" type="checkbox"> loop</label>
  <button id="reset">Reset view</button>
  <span id="title">{title}</span>
</div>
<script type="application/json" id="simtk-data">{payload}</script>
<script>
{script}
</script>
</body>
</html>
"""
