"""Tutorial 24 (Arm26 driven by its muscles) runs, records and plots the muscle forces, and writes a
replay with the muscles' paths.

Checked independently of the tutorial's own numbers:
- the motion follows the excitation pattern: the elbow flexes while the flexors fire and comes back
  while the triceps do (the recorded elbow angle);
- each muscle's activation reaches its plateau within its burst (first-order dynamics, 15 ms to rise)
  and its tendon force rises; the triceps' force peaks while they fire;
- the replay holds the muscles' paths; with OpenSim installed, each path's length at the first
  frame (the recorded pose) is OpenSim's length at that pose, within the chord's deficit of the sampled
  wrap arcs (L (pi/24)^2 / 24).
"""
import base64
import csv
import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from osim_published import published_model

TUTORIAL = pathlib.Path(__file__).parent.parent.parent / "tutorials" / "24_muscle_arm.py"
FLEXORS = ("BICshort", "BRA")  # the muscles the tutorial drives (BIClong, TRIlong rest)
EXTENSORS = ("TRIlat", "TRImed")
ELLIPSOID_WRAPPED = ("BIClong", "TRIlong")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    model = published_model("Arm26/arm26.osim")
    out = tmp_path_factory.mktemp("t24")
    result = subprocess.run([sys.executable, str(TUTORIAL), str(out)], capture_output=True, text=True, timeout=600,
                            cwd=TUTORIAL.parent.parent)
    assert result.returncode == 0, f"{TUTORIAL.name} failed:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
    return model, out, result.stdout


def _csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    head = rows[0]
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return head, data


def _column(head, data, suffix):
    hits = [i for i, h in enumerate(head) if h.endswith(suffix)]
    assert len(hits) == 1, (suffix, head)
    return data[:, hits[0]]


def _muscles(stdout):
    names = re.search(r"\d+ muscles: (.*)", stdout).group(1).split(", ")
    assert set(names) <= set(FLEXORS + EXTENSORS + ELLIPSOID_WRAPPED) and set(FLEXORS + EXTENSORS) <= set(names)
    return names


def test_tutorial_24_drives_the_arm_with_its_muscles_and_records_their_forces(run):
    _, out, stdout = run
    names = _muscles(stdout)
    head, data = _csv(out / "muscle_arm.csv")
    t = data[:, 0]
    elbow = _column(head, data, "r_elbow_flex|value")
    during_flex = (t >= 0.1) & (t <= 0.8)
    assert elbow[during_flex].max() > elbow[0] + 0.3, "the flexors' burst should flex the elbow"
    k = int(np.argmax(np.where(during_flex, elbow, -np.inf)))
    assert elbow[t >= 1.2].min() < elbow[k] - 0.3, "the triceps' burst should extend the elbow again"
    for n in (n for n in names if n in FLEXORS + EXTENSORS):
        force = _column(head, data, f"{n}|tendon_force")
        act = _column(head, data, f"{n}|activation_value")
        on, off = (0.1, 0.6) if n in FLEXORS else (0.8, 1.2)
        # first-order activation dynamics (15 ms to rise): at the burst's plateau by its end, from rest
        assert act[(t >= off - 0.05) & (t <= off)].min() >= 0.95 * act.max() > 2 * act[0], n
        assert force[(t >= on + 0.1) & (t <= off)].min() > 1.3 * force[0], f"{n}: no force in its burst"
        if n in EXTENSORS:  # shortening while they fire: their force peaks in their burst
            assert on <= t[np.argmax(force)] <= off + 0.1, n
    png = out / "muscle_arm.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in stdout


def test_tutorial_24_replay_draws_the_muscles_paths(run):
    model, out, stdout = run
    text = (out / "muscle_arm.html").read_text()
    D = json.loads(re.search(r'<script type="application/json" id="simtk-data">(.*?)</script>', text, re.S).group(1))
    P = D["paths"]
    assert sorted(P["names"]) == sorted(_muscles(stdout))
    F = len(base64.b64decode(D["times"])) // 4
    counts = np.frombuffer(base64.b64decode(P["counts"]), "<u4").reshape(F, P["n"])
    pts = np.frombuffer(base64.b64decode(P["pts"]), "<f4").reshape(-1, 3).astype(float)
    rgb = np.frombuffer(base64.b64decode(P["rgb"]), "u1").reshape(F, P["n"], 3).astype(int)
    times = np.frombuffer(base64.b64decode(D["times"]), "<f4")
    # redder while bursting than at rest: the flexors at 0.5 s, the extensors at 1.1 s
    for names, tb in ((FLEXORS, 0.5), (EXTENSORS, 1.1)):
        i = int(np.argmin(np.abs(times - tb)))
        for n in (n for n in names if n in P["names"]):
            k = P["names"].index(n)
            # activation >= 0.12 while bursting, 0.02 at rest: 0.1 of the way from blue to red (> 12 of 255)
            assert rgb[i, k, 0] > rgb[0, k, 0] + 12 and rgb[i, k, 2] < rgb[0, k, 2] - 12, (n, rgb[i, k], rgb[0, k])
            assert rgb[0, k, 2] > 200 and rgb[0, k, 0] < 60, (n, rgb[0, k])
    osim = pytest.importorskip("opensim")
    osim.Logger.setLevelString("off")
    om = osim.Model(str(model))
    s = om.initSystem()
    # the first frame is the initial pose: the coordinates' defaults
    om.realizePosition(s)
    lengths = np.cumsum(np.r_[0, counts[0]])
    for k, name in enumerate(P["names"]):
        poly = pts[lengths[k]:lengths[k + 1]]
        L = om.getMuscles().get(name).getGeometryPath().getLength(s)
        Lpoly = np.linalg.norm(np.diff(poly, axis=0), axis=1).sum()
        # float32 vertices (1e-7 relative) and the chords' deficit on the wrap arcs (an ellipsoid's
        # samples are thinned from the kernel's polyline, so their turn may pass max_angle by a piece)
        deficit = (np.pi / 24) ** 2 / (8 if name in ELLIPSOID_WRAPPED else 24)
        assert abs(L - Lpoly) <= L * (deficit + 1e-6), (name, L, Lpoly)
