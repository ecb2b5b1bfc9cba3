"""The live viewer: served on localhost, opened in headless Chromium, bodies drawn where the State puts them."""
from __future__ import annotations

import socket
import time

import numpy as np
import pytest
from conftest import png_rgb, project
from test_viz_html import double_pendulum

from simtk import Stage
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper
from simtk.simulation import Simulation, StatesTrajectory

pytest.importorskip("viser", reason="the live viewer needs viser (pip install 'simtk[viz]')")

# The bodies appear left of centre: viser's control panel covers the top right of the page.
# Software WebGL (no GPU in CI) draws viser's image-based lighting slowly: the tests light without it.
FAST = {"environment_map": False}
CAMERA = {"eye": [1.6, -0.8, 5.0], "target": [1.6, -0.8, 0.0], "up": [0.0, 1.0, 0.0], "fov": 60.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reddish(img: np.ndarray, xy, radius: int = 2) -> bool:
    """Whether the pixels about ``xy`` are red: three.js lights the sphere from above (its centre is dark
    red) and tone-maps, so look at the hue, not the value; the white page and the grey line are not red."""
    x, y = int(round(xy[0])), int(round(xy[1]))
    if not (0 <= x < img.shape[1] and 0 <= y < img.shape[0]):
        return False
    p = img[max(y - radius, 0):y + radius + 1, max(x - radius, 0):x + radius + 1].reshape(-1, 3).astype(int)
    return bool(np.mean((p[:, 0] >= 25) & (p[:, 1] <= 0.35 * p[:, 0]) & (p[:, 2] <= 0.35 * p[:, 0])) > 0.5)


def canvas_shot(browser):
    """A screenshot of the page cropped to viser's (largest) canvas and that canvas's size, or None before it exists."""
    box = browser.execute_script(
        "let best = null; for (const c of document.querySelectorAll('canvas')) {"
        " const r = c.getBoundingClientRect(); if (!best || r.width * r.height > best.width * best.height) best = r; }"
        " return best && best.width > 0 ? [best.left, best.top, best.width, best.height] : null;")
    if box is None:
        return None
    x, y, w, h = box
    img = png_rgb(browser.get_screenshot_as_png())
    return img[int(y):int(y + h), int(x):int(x + w)], (w, h)


def wait_for(browser, point, present: bool = True, timeout: float = 20.0):
    """Screenshots until red is (or is not) at the projection of ``point``; the last one and the pixel."""
    end = time.monotonic() + timeout
    while True:
        shot = canvas_shot(browser)
        if shot is None:
            assert time.monotonic() < end, "the viewer page drew no canvas"
            time.sleep(0.2)
            continue
        img, (w, h) = shot
        xy = project(point, CAMERA["eye"], CAMERA["target"], CAMERA["up"], CAMERA["fov"], w, h)
        if reddish(img, xy) == present or time.monotonic() > end:
            return img, xy
        time.sleep(0.2)


@pytest.fixture
def pendulum():
    system, p1, p2 = double_pendulum()
    state = system.realize_topology()
    p1.set_angle(state, 1.2)
    return system, p1, p2, state


def test_live_view_follows_reported_states(pendulum, browser):
    from simtk.viz import Visualizer

    system, p1, p2, state = pendulum
    with Visualizer(system, port=free_port(), camera=CAMERA, **FAST) as viz:
        assert viz.url.startswith("http://localhost:")
        system.realize(state, Stage.Position)
        viz.report(state)
        first = p1.get_body_transform(state).p.copy()
        browser.get(viz.url)
        img, xy = wait_for(browser, first)
        assert reddish(img, xy), f"no red at the upper bob's pixel {xy} in the live view"

        # Another State: the bob is drawn at its new place and has left the old one.
        later = state.copy()
        p1.set_angle(later, -0.9)
        viz.report(later)
        second = p1.get_body_transform(later).p.copy()
        img, xy2 = wait_for(browser, second)
        assert reddish(img, xy2), f"no red at the upper bob's new pixel {xy2}"
        assert np.hypot(xy[0] - xy2[0], xy[1] - xy2[1]) > 60
        assert not reddish(img, xy), "the bob is still drawn where it was"


def test_reporter_and_monitor_draw_during_runs(pendulum):
    from simtk.viz import Visualizer

    system, p1, p2, state = pendulum
    with Visualizer(system, port=free_port(), camera=CAMERA, **FAST) as viz:
        drawn = []
        real_report = viz.report
        viz.report = lambda s: (drawn.append(s.get_time()), real_report(s))[1]  # type: ignore[method-assign]
        sim = Simulation(system, state.copy(), step_size=0.01)
        sim.add_monitor(viz.monitor(fps=20))
        sim.run(0.5)
        assert np.allclose(drawn, np.arange(1, 11) / 20)
        # The last drawn pose is the State's.
        final = sim.get_state()
        assert np.allclose(viz._last[0, 4:], p1.get_body_transform(final).p)

        drawn.clear()
        system.add_event_reporter(viz.reporter(fps=10))
        s = system.realize_topology()
        p1.set_angle(s, 1.2)
        ts = TimeStepper(system, RungeKuttaMersonIntegrator(system))
        ts.initialize(s)
        ts.step_to(0.5)
        assert np.allclose(drawn, np.arange(0, 6) / 10)


def test_slider_scrubs_a_recorded_trajectory(pendulum, browser):
    from selenium.webdriver.common.keys import Keys

    from simtk.viz import Visualizer

    system, p1, p2, state = pendulum
    sim = Simulation(system, state, step_size=1 / 30)
    traj = sim.add_output_probe(StatesTrajectory())
    sim.run(0.6)  # the upper bob swings from 1.2 rad towards the bottom
    with Visualizer(system, port=free_port(), camera=CAMERA, **FAST) as viz:
        viz.show_trajectory(traj)
        browser.get(viz.url)
        img, xy = wait_for(browser, p1.get_body_transform(traj[0]).p)
        assert reddish(img, xy)
        # Scrub in the browser: focus the slider and press End (the last frame).
        slider = None
        end = time.monotonic() + 10
        while slider is None and time.monotonic() < end:
            found = browser.find_elements("css selector", "[role=slider]")
            slider = found[0] if found else None
            time.sleep(0.1)
        assert slider is not None, "no slider on the page"
        slider.send_keys(Keys.END)
        last = p1.get_body_transform(traj[len(traj) - 1]).p
        img, xy2 = wait_for(browser, last)
        assert reddish(img, xy2), "scrubbing to the end did not draw the last State"
        assert int(viz._slider.value) == len(traj) - 1
        assert not reddish(img, xy)
