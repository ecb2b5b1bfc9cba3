"""The viewers draw the paths of path forces: polylines through their points and along their wraps,
a muscle's coloured by its activation (blue at 0, red at 1), other path forces in a fixed colour.

- the replay file holds, frame by frame, each path's polyline (its points at that State) and colour;
- in Chromium the replay shows the muscle's colour where the camera puts its path's segments, and the
  colour changes with the activation;
- the live viewer sends each path's segments and colour when a State is reported.
"""
from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from conftest import colour_near, png_rgb, project

from simtk import (
    Force,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MultibodySystem,
    PathPoint,
    PathWrap,
    SimbodyMatterSubsystem,
    Stage,
    WrapCylinder,
)
from simtk.spatial import Body, MassProperties, Transform
from simtk.viz import export_html

CAMERA = {"eye": [0.0, -0.3, 1.4], "target": [0.0, -0.3, 0.0], "up": [0.0, 1.0, 0.0], "fov": 60.0}


def arm():
    """A shoulder and an elbow pin about z; a muscle wrapping over a cylinder at the elbow; a spring."""
    system = MultibodySystem("arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.2, 0.0], np.diag([0.02, 0.01, 0.02])))
    b1 = MobilizedBody.Pin(matter.ground, Transform(), mp, Transform(p=[0.0, 0.0, 0.0]))
    b2 = MobilizedBody.Pin(b1, Transform(p=[0.0, -0.4, 0.0]), mp, Transform())
    cyl = WrapCylinder(b1, Transform(p=[0.0, -0.4, 0.0]), 0.04, 0.3, name="elbow")
    mpath = GeometryPath(matter, [PathPoint(b1, [0.045, -0.15, 0.0]), PathPoint(b1, [0.045, -0.35, 0.0]),
                                  PathPoint(b2, [0.045, -0.2, 0.0])],
                         name="triceps_path", wraps=[PathWrap(cyl)])
    muscle = Force.Thelen2003Muscle(forces, mpath, 500.0, 0.1, 0.15, 0.0, name="triceps")
    spath = GeometryPath(matter, [PathPoint(matter.ground, [-0.2, 0.0, 0.0]), PathPoint(b2, [-0.03, -0.3, 0.0])],
                         name="spring_path")
    spring = Force.PathSpring(forces, spath, 10.0, 0.1, 0.0, name="spring")
    return system, matter, (b1, b2), muscle, spring


def states(system, matter, muscle):
    """Frames with the elbow bent more and more and the activation going from 0 to 1."""
    out = []
    for i, (q2, a) in enumerate(zip(np.linspace(-0.2, -1.6, 5), np.linspace(0.0, 1.0, 5))):
        s = system.realize_topology()
        system.realize_model(s)
        matter.upd_q(s)[:] = [0.2, q2]
        muscle.set_activation(s, a)
        s.set_time(0.1 * i)
        system.realize(s, Stage.Position)
        out.append(s)
    return out


def payload(path):
    text = path.read_text()
    m = re.search(r'<script type="application/json" id="simtk-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def decode(s, dtype):
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def test_replay_file_holds_each_paths_polyline_and_colour(tmp_path):
    system, matter, _, muscle, spring = arm()
    traj = states(system, matter, muscle)
    D = payload(export_html(traj, tmp_path / "arm.html", camera=CAMERA))
    P = D["paths"]
    assert P["n"] == 2 and P["names"] == ["triceps", "spring"]
    counts = decode(P["counts"], "<u4").reshape(len(traj), 2)
    pts = decode(P["pts"], "<f4").reshape(-1, 3)
    marks = decode(P["marks"], "u1")
    rgb = decode(P["rgb"], "u1").reshape(len(traj), 2, 3).astype(int)
    k = 0
    wrapped = 0
    for i, s in enumerate(traj):
        for j, force in enumerate((muscle, spring)):
            path = force.get_geometry_path()
            want = path.get_polyline(s)
            assert counts[i, j] == len(want)
            np.testing.assert_array_equal(pts[k:k + len(want)], want.astype(np.float32))
            # the marked vertices are the path's points and tangent points, in order
            np.testing.assert_array_equal(pts[k:k + len(want)][marks[k:k + len(want)] == 1],
                                          path.get_path_points(s).astype(np.float32))
            wrapped += j == 0 and len(want) > 4
            k += len(want)
    assert k == len(pts)
    assert wrapped >= 2, "the poses should wrap the muscle over the elbow"
    # The muscle goes from blue (activation 0) through purple to red (1); the spring keeps its colour.
    assert rgb[0, 0, 2] > 200 and rgb[0, 0, 0] < 60
    assert rgb[-1, 0, 0] > 200 and rgb[-1, 0, 2] < 60
    assert np.all(np.diff(rgb[:, 0, 0]) > 0) and np.all(np.diff(rgb[:, 0, 2]) < 0)
    assert np.all(rgb[:, 1] == rgb[0, 1]) and not np.array_equal(rgb[0, 1], rgb[0, 0])
    # And without paths, none are written.
    assert payload(export_html(traj, tmp_path / "bare.html", camera=CAMERA, paths=False))["paths"] is None


def test_replay_page_draws_the_muscle_in_its_activation_colour(tmp_path, browser):
    system, matter, _, muscle, spring = arm()
    traj = states(system, matter, muscle)
    D = payload(path := export_html(traj, tmp_path / "arm.html", camera=CAMERA, autoplay=False))
    rgb = decode(D["paths"]["rgb"], "u1").reshape(len(traj), 2, 3)
    browser.get(path.as_uri())
    assert browser.execute_script("return window.simtkReplay.nPaths") == 2
    canvas = browser.find_element("id", "view")
    w, h = browser.execute_script("var c = document.getElementById('view'); return [c.width, c.height];")
    for i in (0, len(traj) - 1):
        browser.execute_script(f"window.simtkReplay.seek({i});")
        img = png_rgb(canvas.screenshot_as_png)
        for force, k in ((muscle, 0), (spring, 1)):
            poly = force.get_geometry_path().get_polyline(traj[i])
            seg = np.linalg.norm(np.diff(poly, axis=0), axis=1)
            j = int(np.argmax(seg))  # the middle of the longest segment: away from the other path
            xy = project((poly[j] + poly[j + 1]) / 2, CAMERA["eye"], CAMERA["target"], CAMERA["up"],
                         CAMERA["fov"], w, h)
            assert colour_near(img, xy, rgb[i, k], radius=1), f"frame {i}: path {k} not drawn at {xy}"
    # The two frames' muscle colours differ (blue at activation 0, red at 1): both were found above.
    assert rgb[0, 0, 2] > 200 and rgb[-1, 0, 0] > 200


def test_live_viewer_sends_the_paths(monkeypatch):
    pytest.importorskip("viser", reason="the live viewer needs viser (pip install 'simtk[viz]')")
    import socket

    from simtk.viz import Visualizer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    system, matter, _, muscle, spring = arm()
    traj = states(system, matter, muscle)
    with Visualizer(system, port=port, camera=CAMERA, environment_map=False) as viz:
        sent = {}
        real = viz.server.scene.add_line_segments

        def spy(name, points, colors, **kw):
            sent[name] = (np.asarray(points), colors)
            return real(name, points, colors, **kw)

        monkeypatch.setattr(viz.server.scene, "add_line_segments", spy)
        for s in (traj[0], traj[-1]):
            sent.clear()
            viz.report(s)
            assert len(sent) == 2
            for (name, (segs, colors)), force in zip(sorted(sent.items()), (muscle, spring)):
                poly = force.get_geometry_path().get_polyline(s)
                np.testing.assert_array_equal(segs[:, 0], poly[:-1])
                np.testing.assert_array_equal(segs[:, 1], poly[1:])
            muscle_rgb = sent[min(sent)][1]
            assert (muscle_rgb[2] > 200) if s is traj[0] else (muscle_rgb[0] > 200)


def test_live_page_draws_the_muscle_red_when_active(browser):
    pytest.importorskip("viser", reason="the live viewer needs viser (pip install 'simtk[viz]')")
    import time

    from test_viz_live import canvas_shot, free_port, reddish

    from simtk.viz import Visualizer

    # The arm left of centre: viser's control panel covers the top right of the page.
    camera = {"eye": [0.3, -0.3, 1.0], "target": [0.3, -0.3, 0.0], "up": [0.0, 1.0, 0.0], "fov": 60.0}
    system, matter, _, muscle, spring = arm()
    s = states(system, matter, muscle)[2]  # a pose where the muscle wraps
    with Visualizer(system, port=free_port(), camera=camera, environment_map=False) as viz:
        browser.get(viz.url)
        for a, want in ((1.0, True), (0.0, False)):
            muscle.set_activation(s, a)
            system.realize(s, Stage.Position)
            viz.report(s)
            poly = muscle.get_geometry_path().get_polyline(s)
            j = int(np.argmax(np.linalg.norm(np.diff(poly, axis=0), axis=1)))
            end = time.monotonic() + 20.0
            while True:
                shot = canvas_shot(browser)
                if shot is not None:
                    img, (w, h) = shot
                    xy = project((poly[j] + poly[j + 1]) / 2, camera["eye"], camera["target"], camera["up"],
                                 camera["fov"], w, h)
                    if reddish(img, xy, radius=1) == want:
                        break
                assert time.monotonic() < end, f"activation {a}: the muscle's pixel {xy} is{'' if want else ' still'} " \
                                               f"{'not ' if want else ''}red"
                time.sleep(0.2)


def test_a_disabled_path_force_is_not_drawn(tmp_path):
    system, matter, _, muscle, spring = arm()
    traj = states(system, matter, muscle)
    spring.disable(traj[1])
    D = payload(export_html(traj, tmp_path / "arm.html", camera=CAMERA))
    counts = decode(D["paths"]["counts"], "<u4").reshape(len(traj), 2)
    assert counts[1, 1] == 0 and counts[0, 1] == counts[2, 1] == 2
    assert np.all(counts[:, 0] >= 3)
