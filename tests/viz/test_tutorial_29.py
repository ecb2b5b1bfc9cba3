"""Tutorial 29 (the hybrid pendulum and the liver poked by a probe) writes replays that draw what it simulates.

Checked from the replays' data alone, by geometry the tutorial does not compute:
- the string's fixed particle stays at the origin; its last particle rides on the pinned body, so it stays
  0.5 m (the station's distance) from the pin at (2, 0, 0), while it swings;
- the liver's drawn surface is closed (each edge shared by exactly two triangles, consistently oriented);
  its fixed vertices stay where they started; the vertices attached to the probe move as one rigid
  piece along the slider's x axis (their relative positions kept, y and z unchanged), in then out;
- the bar cut through its middle is drawn as two closed surfaces (each edge shared by two triangles of
  its own piece); the lower piece falls as free fall says (g t^2 / 2 from rest, within its own size), the
  upper piece stays where it hangs.
"""
from __future__ import annotations

import base64
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).parent.parent.parent
TUTORIAL = ROOT / "tutorials" / "29_hybrid_pendulum_and_liver.py"
F32 = np.finfo(np.float32).eps


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    where = tmp_path_factory.mktemp("t29")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(TUTORIAL), str(where)], capture_output=True, text=True, timeout=300,
                            cwd=ROOT, env=env)
    assert result.returncode == 0, f"{TUTORIAL.name} failed:\n{result.stderr[-3000:]}"
    return where


def deformables(path):
    text = path.read_text()
    D = json.loads(re.search(r'<script type="application/json" id="simtk-data">(.*?)</script>', text, re.S).group(1))
    df = D["deformables"]
    pts = np.frombuffer(base64.b64decode(df["pts"]), "<f4").reshape(-1, df["total"], 3).astype(float)
    bodies = {b["name"]: {k: np.frombuffer(base64.b64decode(b[k]), dt) for k, dt in
                          (("segs", "<u4"), ("tris", "<u4"), ("kinds", "u1"))} for b in df["bodies"]}
    return bodies, pts


def test_the_string_is_fixed_at_the_origin_and_rides_on_the_pendulum(out):
    bodies, pts = deformables(out / "hybrid_pendulum.html")
    string = bodies["string"]
    assert np.flatnonzero(string["kinds"] == 1).tolist() == [0]
    assert np.flatnonzero(string["kinds"] == 2).tolist() == [10]
    np.testing.assert_array_equal(pts[:, 0], 0.0)
    r = np.linalg.norm(pts[:, 10] - [2.0, 0.0, 0.0], axis=1)
    np.testing.assert_allclose(r, 0.5, atol=8 * F32)
    assert np.ptp(pts[:, 10, 1]) > 0.2  # it swings


def test_the_liver_surface_is_closed_and_the_probe_carries_its_vertices_rigidly(out):
    bodies, pts = deformables(out / "liver_probe.html")
    liver = bodies["liver"]
    tris = liver["tris"].reshape(-1, 3)
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    # closed and consistently oriented: every directed edge once, and its reverse once
    assert len({tuple(e) for e in directed.tolist()}) == len(directed)
    assert {tuple(e) for e in directed.tolist()} == {tuple(e) for e in directed[:, ::-1].tolist()}
    scale = np.abs(pts).max()
    fixed = np.flatnonzero(liver["kinds"] == 1)
    assert len(fixed) >= 2
    np.testing.assert_allclose(pts[:, fixed], np.broadcast_to(pts[0, fixed], pts[:, fixed].shape), atol=2 * F32 * scale)
    held = np.flatnonzero(liver["kinds"] == 2)
    assert len(held) >= 3
    shift = pts[:, held] - pts[0, held]
    # one rigid translation along x per frame: the same for every held vertex, nothing in y or z
    np.testing.assert_allclose(shift, np.broadcast_to(shift[:, :1], shift.shape), atol=8 * F32 * scale)
    np.testing.assert_allclose(shift[..., 1:], 0.0, atol=8 * F32 * scale)
    assert shift[:, 0, 0].max() > 0.01 and shift[:, 0, 0].min() < -0.01  # pushed in, then pulled out
    # the free tissue follows: it moves (the whole blob swings on its two spots), more near the probe
    free = np.flatnonzero(liver["kinds"] == 0)
    move = np.linalg.norm(pts[:, free] - pts[0, free], axis=2).max(0)
    x0 = pts[0, free, 0]
    near, far = x0 < np.quantile(x0, 0.2), x0 > np.quantile(x0, 0.8)
    assert move[near].mean() > move[far].mean() > 1e-3


def test_the_cut_bar_is_two_closed_pieces_and_the_lower_one_falls(out):
    bodies, pts = deformables(out / "cut_bar.html")
    tris = bodies["bar"]["tris"].reshape(-1, 3).astype(np.int64)
    # the pieces: triangles joined through shared vertices (union-find)
    parent = np.arange(pts.shape[1])

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b, c in tris:
        ra, rb, rc = find(a), find(b), find(c)
        parent[rb] = ra
        parent[find(rc)] = ra
    roots = np.array([find(t[0]) for t in tris])
    pieces = [tris[roots == r] for r in np.unique(roots)]
    assert len(pieces) == 2
    y0 = pts[0, :, 1]
    lower = max(pieces, key=lambda p: -y0[p].mean())
    upper = min(pieces, key=lambda p: -y0[p].mean())
    for piece in pieces:
        e = np.sort(np.concatenate([piece[:, [0, 1]], piece[:, [1, 2]], piece[:, [2, 0]]]), axis=1)
        _, counts = np.unique(e, axis=0, return_counts=True)
        assert (counts == 2).all()
    t = (len(pts) - 1) / 25.0  # the tutorial's 25 frames per second
    drop_lower = y0[np.unique(lower)].mean() - pts[-1, np.unique(lower), 1].mean()
    drop_upper = np.abs(pts[-1, np.unique(upper)] - pts[0, np.unique(upper)]).max()
    assert abs(drop_lower - 0.5 * 10.0 * t ** 2) < 0.02  # its vertices' mean, not its centre of mass: 2 cm
    assert drop_upper < 0.02
