"""The viewers draw deformable bodies: springs as segments, particles as points, solids as their surface,
the vertices following the particles frame by frame.

- the replay file holds each body's springs and surface triangles once (equal to the body's own) and,
  frame by frame, every particle's position: decoded, they are the particles' positions at the
  recorded States to float32 rounding, an attached particle's the station of its rigid body (found
  from the body, not from the deformable body);
- a body with neither springs nor triangles is drawn as points only, a solid as its surface only;
- without a camera the replay frames the particles (each projects inside the picture);
- in Chromium the membrane's surface colour is found where the camera puts its triangles, the
  string's colour at its springs' middles, a fixed particle's pink where it is, in frames apart;
- the live viewer sends the particles' positions as the nodes' vertices at each State reported.
"""
from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from conftest import colour_near, png_rgb, project

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.deformable import DeformableBody, box_tetrahedra
from simtk.viz import Decoration, decorate, export_html
from simtk.viz._deformables import POINT_COLORS, SPRING_COLOR, SURFACE_COLOR

F32 = np.finfo(np.float32).eps
CAMERA = {"eye": [0.9, -0.6, 4.0], "target": [0.9, -0.6, 0.0], "up": [0.0, 1.0, 0.0], "fov": 60.0}
STATION = np.array([0.0, 0.3, 0.0])


def scene():
    """A rigid pendulum; a string fixed at the origin whose last particle rides on it; a membrane in the
    x-y plane hanging from its top edge; a small tet block hanging from two corners."""
    system = MultibodySystem("hybrid")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -10.0, 0.0])
    mp = MassProperties.from_central_inertia(1.0, [0.0, 0.0, 0.0], np.diag([0.01, 0.01, 0.01]))
    pend = MobilizedBody.Pin(matter.ground, Transform(p=[1.5, 0.0, 0.0]), Body.Rigid(mp), Transform(p=[0.0, 0.5, 0.0]))
    decorate(pend, Decoration.Sphere(0.05, color=(0.3, 0.3, 0.9)))
    n = 6
    pts = np.zeros((n, 3))
    pts[:, 0] = np.linspace(0.0, 1.5, n)
    pts[-1] = [1.5, -0.2, 0.0]
    string = DeformableBody.from_segments(system, pts, [[i, i + 1] for i in range(n - 1)], 0.05, 80.0,
                                          rest_lengths=np.full(n - 1, 0.3), name="string")
    string.fix(0)
    string.attach(n - 1, pend, STATION)
    g = np.linspace(0.0, 0.6, 4)
    X, Y = np.meshgrid(g, g, indexing="ij")
    mpts = np.stack([X.ravel() + 0.3, Y.ravel() - 1.5, np.zeros(16)], 1)
    tris = []
    for i in range(3):
        for j in range(3):
            a, b, c, d = 4 * i + j, 4 * (i + 1) + j, 4 * i + j + 1, 4 * (i + 1) + j + 1
            tris += [[a, b, d], [a, d, c]]
    sheet = DeformableBody.from_triangles(system, mpts, tris, 500.0, 2e4, 0.3, 0.002, name="sheet")
    sheet.fix(np.flatnonzero(np.isclose(mpts[:, 1], mpts[:, 1].max())))
    bpts, tets = box_tetrahedra(0.2, 0.1, 0.1, 2, 1, 1)
    bpts += [-0.5, -0.8, 0.0]
    block = DeformableBody.from_tetrahedra(system, bpts, tets, 300.0, 1e4, 0.3, name="block")
    top = np.flatnonzero(np.isclose(bpts[:, 1], bpts[:, 1].max()))
    block.fix([top[0], top[-1]])
    return system, matter, pend, (string, sheet, block)


def recording(system, pend, n=6, dt=0.05):
    s = system.realize_topology()
    system.realize_model(s)
    pend.set_one_q(s, 0, 0.5)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-4)
    integ.initialize(s)
    out = [integ.get_state().copy()]
    for i in range(1, n):
        integ.step_to(dt * i)
        out.append(integ.get_state().copy())
    for st in out:
        system.realize(st, Stage.Position)
    return out


@pytest.fixture(scope="module")
def recorded():
    system, matter, pend, bodies = scene()
    return system, pend, bodies, recording(system, pend)


def payload(path):
    m = re.search(r'<script type="application/json" id="simtk-data">(.*?)</script>', path.read_text(), re.S)
    return json.loads(m.group(1))


def decode(s, dtype):
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def test_replay_holds_the_connectivity_once_and_the_particles_per_frame(recorded, tmp_path):
    system, pend, bodies, traj = recorded
    D = payload(export_html(traj, tmp_path / "hybrid.html", camera=CAMERA))["deformables"]
    assert [b["name"] for b in D["bodies"]] == ["string", "sheet", "block"]
    assert D["total"] == sum(b.get_num_particles() for b in bodies)
    pts = decode(D["pts"], "<f4").reshape(len(traj), D["total"], 3)
    start = 0
    for body, B in zip(bodies, D["bodies"]):
        n = body.get_num_particles()
        assert B["n"] == n
        np.testing.assert_array_equal(decode(B["tris"], "<u4").reshape(-1, 3), body.get_surface_triangles())
        np.testing.assert_array_equal(decode(B["segs"], "<u4").reshape(-1, 2), body.get_segments())
        kinds = decode(B["kinds"], "u1")
        np.testing.assert_array_equal(np.flatnonzero(kinds == 1), body.get_fixed_particles())
        np.testing.assert_array_equal(np.flatnonzero(kinds == 2), body.get_attached_particles())
        for i, s in enumerate(traj):
            want = body.get_positions(s)
            scale = np.abs(want).max()
            np.testing.assert_allclose(pts[i, start:start + n], want, rtol=0, atol=2 * F32 * scale)
        start += n
    string, sheet, block = bodies
    # the string's spring indices are those it was built with; the sheet's triangles the 18 given
    assert decode(D["bodies"][0]["segs"], "<u4").tolist() == [v for i in range(5) for v in (i, i + 1)]
    assert len(decode(D["bodies"][1]["tris"], "<u4")) == 18 * 3
    # the attached particle is where the pendulum's station is (asked of the rigid body), and moves
    ends = np.array([pend.find_station_location_in_ground(s, STATION) for s in traj])
    np.testing.assert_allclose(pts[:, 5], ends, rtol=0, atol=2 * F32 * np.abs(ends).max())
    assert np.ptp(ends[:, 0]) > 1e-2
    # free particles move, fixed ones stay where they were given
    assert np.abs(pts[-1, 6:] - pts[0, 6:]).max() > 1e-3
    np.testing.assert_array_equal(pts[:, 0], 0.0)
    # only the drawing's data per frame: float32 x, y, z of each particle
    assert len(base64.b64decode(D["pts"])) == 4 * 3 * D["total"] * len(traj)


def test_points_only_without_springs_or_triangles_and_surface_only_for_solids(tmp_path):
    system = MultibodySystem("dust")
    SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, system.get_matter_subsystem(), [0.0, -10.0, 0.0])
    dust = DeformableBody(system, [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0]], 0.01, name="dust")
    bpts, tets = box_tetrahedra(0.1, 0.1, 0.1, 1, 1, 1)
    DeformableBody.from_tetrahedra(system, bpts + [0.3, 0.0, 0.0], tets, 300.0, 1e4, 0.3, name="cube")
    s = system.realize_topology()
    system.realize_model(s)
    system.realize(s, Stage.Position)
    D = payload(export_html([s], tmp_path / "dust.html", camera=CAMERA))["deformables"]
    b_dust, b_cube = D["bodies"]
    assert b_dust["points"] is True and b_dust["n"] == 3
    assert len(decode(b_dust["segs"], "<u4")) == 0 and len(decode(b_dust["tris"], "<u4")) == 0
    assert b_cube["points"] is False and len(decode(b_cube["segs"], "<u4")) == 0
    assert len(decode(b_cube["tris"], "<u4")) == 12 * 3  # a cube's 6 faces, 2 triangles each
    np.testing.assert_array_equal(decode(D["pts"], "<f4").reshape(-1, 3)[:3], dust.get_positions(s).astype(np.float32))
    # and without deformables asked for, none are written
    assert payload(export_html([s], tmp_path / "bare.html", camera=CAMERA, deformables=False))["deformables"] is None


def test_default_camera_frames_the_particles(recorded, tmp_path):
    system, pend, bodies, traj = recorded
    D = payload(export_html(traj, tmp_path / "framed.html"))
    cam = D["camera"]
    w, h = 800, 600
    for s in traj:
        for body in bodies:
            for p in body.get_positions(s):
                x, y = project(p, cam["eye"], cam["target"], cam["up"], cam["fov"], w, h)
                assert 0 <= x <= w and 0 <= y <= h, (body.name, p, (x, y))


def _rgb(c):
    return np.rint(np.asarray(c) * 255).astype(int)


def test_replay_page_draws_the_surface_springs_and_fixed_particles(recorded, tmp_path, browser):
    system, pend, bodies, traj = recorded
    string, sheet, block = bodies
    path = export_html(traj, tmp_path / "hybrid.html", camera=CAMERA, autoplay=False, contact=False)
    browser.get(path.as_uri())
    assert browser.execute_script("return window.simtkReplay.nDeformables") == 3
    canvas = browser.find_element("id", "view")
    w, h = browser.execute_script("var c = document.getElementById('view'); return [c.width, c.height];")

    def px(p):
        return project(p, CAMERA["eye"], CAMERA["target"], CAMERA["up"], CAMERA["fov"], w, h)

    tris = sheet.get_surface_triangles()
    seen = []
    for i in (0, len(traj) - 1):
        browser.execute_script(f"window.simtkReplay.seek({i});")
        img = png_rgb(canvas.screenshot_as_png)
        x = sheet.get_positions(traj[i])
        # the sheet faces the camera (in the x-y plane, seen along z): lit at nearly full colour
        for t in tris[::5]:
            xy = px(x[t].mean(0))
            assert colour_near(img, xy, _rgb(SURFACE_COLOR), radius=1, tol=50), f"frame {i}: sheet not at {xy}"
        xs = string.get_positions(traj[i])
        for a, b in string.get_segments()[1:-1]:  # away from the end particles' squares
            xy = px((xs[a] + xs[b]) / 2)
            assert colour_near(img, xy, _rgb(SPRING_COLOR), radius=0), f"frame {i}: spring {a}-{b} not at {xy}"
        assert colour_near(img, px(xs[0]), _rgb(POINT_COLORS[1]), radius=1), f"frame {i}: fixed particle"
        seen.append(px(x[tris[0]].mean(0)))
    # the sheet's vertices followed its particles: its first triangle is drawn elsewhere at the end
    assert np.hypot(*np.subtract(seen[0], seen[1])) > 2


def test_live_viewer_sends_the_particles_as_vertices(recorded):
    pytest.importorskip("viser", reason="the live viewer needs viser (pip install 'simtk[viz]')")
    from test_viz_live import free_port

    from simtk.viz import Visualizer

    system, pend, bodies, traj = recorded
    string, sheet, block = bodies
    with Visualizer(system, port=free_port(), camera=CAMERA, environment_map=False) as viz:
        for s in (traj[0], traj[-1], traj[2]):
            viz.report(s)
            nodes = viz._deformable_nodes
            assert nodes is not None and len(nodes) == 3
            xs, xm, xb = (b.get_positions(s).astype(np.float32) for b in bodies)
            np.testing.assert_array_equal(nodes[0]["springs"].points, xs[string.get_segments()])
            np.testing.assert_array_equal(nodes[0]["points1"].points, xs[[0]])
            np.testing.assert_array_equal(nodes[0]["points2"].points, xs[[5]])
            np.testing.assert_array_equal(nodes[1]["surface"].vertices, xm)
            np.testing.assert_array_equal(nodes[2]["surface"].vertices, xb)
            np.testing.assert_array_equal(nodes[2]["surface"].faces, block.get_surface_triangles())
            assert "points0" not in nodes[2] and "springs" not in nodes[1]
