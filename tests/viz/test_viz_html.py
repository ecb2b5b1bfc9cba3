"""The HTML replay: one offline file whose screenshots show the bodies where the kinematics put them."""
from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import colour_near, png_rgb, project

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Transform,
)
from simtk.simulation import Simulation, StatesTrajectory
from simtk.viz import Decoration, decorate, export_html

RED, BLUE = (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)
CAMERA = {"eye": [0.0, -0.8, 5.0], "target": [0.0, -0.8, 0.0], "up": [0.0, 1.0, 0.0], "fov": 60.0}


def double_pendulum():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)
    info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    p1 = MobilizedBody.Pin(matter.ground, Transform(), info, Transform([0, 1, 0]))
    p2 = MobilizedBody.Pin(p1, Transform(), info, Transform([0, 1, 0]))
    decorate(p1, Decoration.Sphere(0.12, color=RED))
    decorate(p2, Decoration.Sphere(0.12, color=BLUE))
    decorate(p2, Decoration.Line([0, 0, 0], [0, 1, 0], color=(0.2, 0.2, 0.2)))
    return system, p1, p2


@pytest.fixture(scope="module")
def recording():
    system, p1, p2 = double_pendulum()
    state = system.realize_topology()
    p1.set_angle(state, 1.2)
    p2.set_rate(state, 4.0)
    sim = Simulation(system, state, step_size=1 / 30)
    traj = sim.add_output_probe(StatesTrajectory())
    sim.run(1.5)
    return system, p1, p2, traj


def test_file_is_self_contained(recording, tmp_path):
    system, p1, p2, traj = recording
    path = export_html(traj, tmp_path / "dp.html", camera=CAMERA)
    text = path.read_text()
    # Nothing is fetched at view time: no external scripts, styles, images or modules.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "import(" not in text and "fetch(" not in text
    assert "simtk-data" in text and "getContext(\"webgl\"" in text


def test_replay_shows_bodies_where_kinematics_put_them(recording, tmp_path, browser):
    system, p1, p2, traj = recording
    path = export_html(traj, tmp_path / "dp.html", camera=CAMERA, autoplay=True)
    browser.get(path.as_uri())
    assert browser.execute_script("return window.simtkReplay.nFrames") == len(traj)
    canvas = browser.find_element("id", "view")
    w, h = browser.execute_script("var c = document.getElementById('view'); return [c.width, c.height];")

    # Two frames with the upper bob far apart on screen.
    origins = np.array([p1.get_body_transform(s).p for s in traj])
    i = 0
    j = int(np.argmax(np.linalg.norm(origins - origins[0], axis=1)))
    px = {k: project(origins[k], CAMERA["eye"], CAMERA["target"], CAMERA["up"], CAMERA["fov"], w, h) for k in (i, j)}
    assert np.hypot(px[i][0] - px[j][0], px[i][1] - px[j][1]) > 60  # the bob's radius is ~17 px here

    shots = {}
    for k in (i, j):
        browser.execute_script(f"window.simtkReplay.seek({k});")
        assert browser.execute_script("return window.simtkReplay.frame()") == k
        shots[k] = png_rgb(canvas.screenshot_as_png)
        assert shots[k].shape[:2] == (h, w)
        # The lower bob too, at its own pose.
        lower = project(p2.get_body_transform(traj[k]).p, CAMERA["eye"], CAMERA["target"], CAMERA["up"],
                        CAMERA["fov"], w, h)
        assert colour_near(shots[k], lower, (0, 0, 255)), f"frame {k}: no blue at the lower bob's pixel {lower}"
        assert colour_near(shots[k], px[k], (255, 0, 0)), f"frame {k}: no red at the upper bob's pixel {px[k]}"
    # And the bob has left its old place: the pixels follow the pose, not a fixed picture.
    assert not colour_near(shots[j], px[i], (255, 0, 0))
    assert not colour_near(shots[i], px[j], (255, 0, 0))


def test_play_advances_frames(recording, tmp_path, browser):
    system, p1, p2, traj = recording
    path = export_html(traj, tmp_path / "dp.html", camera=CAMERA, autoplay=False, loop=False)
    browser.get(path.as_uri())
    assert browser.execute_script("return window.simtkReplay.frame()") == 0
    browser.find_element("id", "play").click()
    browser.execute_script("return new Promise(r => setTimeout(r, 400));")
    assert browser.execute_script("return window.simtkReplay.frame()") > 0
    # The slider follows the playback and scrubbing it shows that frame.
    browser.execute_script("window.simtkReplay.pause();")
    slider = browser.find_element("id", "slider")
    browser.execute_script("arguments[0].value = 7; arguments[0].dispatchEvent(new Event('input'));", slider)
    assert browser.execute_script("return window.simtkReplay.frame()") == 7
    assert "t = " in browser.find_element("id", "time").text


def test_size_of_forty_bodies_ten_seconds(tmp_path):
    # 40 bodies x 600 frames (10 s at 60 frames/s) must stay under 5 MB.
    from simtk.viz._scene import build_scene
    from simtk.viz.decorations import Placed
    from simtk.viz.html import replay_html

    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    parent, bodies = matter.ground, []
    for k in range(40):
        parent = MobilizedBody.Ball(parent, Transform([0, -0.1, 0]), info, Transform())
        bodies.append(parent)
    placed = [Placed(b, Decoration.Capsule(0.03, 0.05, color=(0.2, 0.5, 0.8)), Transform()) for b in bodies]
    placed += [Placed(b, Decoration.Box([0.02, 0.02, 0.02]), Transform([0, 0.05, 0])) for b in bodies]
    scene = build_scene(system, placed)
    rng = np.random.default_rng(0)
    q = rng.normal(size=(600, 40, 4))
    poses = np.concatenate([q / np.linalg.norm(q, axis=-1, keepdims=True), rng.normal(size=(600, 40, 3))], -1)
    page = replay_html(scene, np.arange(600) / 60, poses)
    assert len(page.encode()) < 5e6
