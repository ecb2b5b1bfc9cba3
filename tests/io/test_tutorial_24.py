"""Tutorial 24 (Arm26 driven by its muscles) runs, records and plots the muscle forces, and writes a
replay with the muscles' paths.

Checked independently of the tutorial's own numbers:
- the motion follows the excitation pattern: the elbow flexes while the flexors fire and comes back
  while the triceps do (the recorded elbow angle);
- each muscle's recorded tendon force peaks within its burst, and its activation rises to near the
  burst's excitation (first-order activation dynamics: > 0.8 of 0.9 after 0.45 s of a 15 ms time constant);
- the replay holds the six muscles' paths; with OpenSim installed, each path's length at the first
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
FLEXORS = ("BIClong", "BICshort", "BRA")
EXTENSORS = ("TRIlong", "TRIlat", "TRImed")


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


def test_tutorial_24_drives_the_arm_with_its_muscles_and_records_their_forces(run):
    _, out, stdout = run
    assert "6 muscles" in stdout, stdout
    head, data = _csv(out / "muscle_arm.csv")
    t = data[:, 0]
    elbow = _column(head, data, "r_elbow_flex|value")
    during_flex = (t >= 0.1) & (t <= 0.7)
    assert elbow[during_flex].max() > elbow[0] + 0.3, "the flexors' burst should flex the elbow"
    k = int(np.argmax(np.where(during_flex, elbow, -np.inf)))
    assert elbow[t >= 1.2].min() < elbow[k] - 0.3, "the triceps' burst should extend the elbow again"
    for names, (on, off) in ((FLEXORS, (0.1, 0.65)), (EXTENSORS, (0.8, 1.25))):
        for n in names:
            force = _column(head, data, f"{n}|tendon_force")
            act = _column(head, data, f"{n}|activation_value")
            burst = (t >= on) & (t <= off + 0.1)
            assert force[burst].max() >= force.max() * (1 - 1e-12), f"{n}: its force peaks outside its burst"
            assert act[(t >= off - 0.05) & (t <= off)].min() > 0.8, n
            assert act[0] < 0.1, n
    png = out / "muscle_arm.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in stdout


def test_tutorial_24_replay_draws_the_muscles_paths(run):
    model, out, _ = run
    text = (out / "muscle_arm.html").read_text()
    D = json.loads(re.search(r'<script type="application/json" id="simtk-data">(.*?)</script>', text, re.S).group(1))
    P = D["paths"]
    assert sorted(P["names"]) == sorted(FLEXORS + EXTENSORS)
    F = len(base64.b64decode(D["times"])) // 4
    counts = np.frombuffer(base64.b64decode(P["counts"]), "<u4").reshape(F, P["n"])
    pts = np.frombuffer(base64.b64decode(P["pts"]), "<f4").reshape(-1, 3).astype(float)
    rgb = np.frombuffer(base64.b64decode(P["rgb"]), "u1").reshape(F, P["n"], 3).astype(int)
    times = np.frombuffer(base64.b64decode(D["times"]), "<f4")
    # red while bursting, blue at rest: the flexors at 0.5 s, the extensors at 1.1 s
    for names, tb in ((FLEXORS, 0.5), (EXTENSORS, 1.1)):
        i = int(np.argmin(np.abs(times - tb)))
        for n in names:
            k = P["names"].index(n)
            assert rgb[i, k, 0] > 180 and rgb[i, k, 2] < 80, (n, rgb[i, k])
            assert rgb[0, k, 2] > 180 and rgb[0, k, 0] < 80, (n, rgb[0, k])
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
        # float32 vertices (1e-7 relative) and the chords' deficit on the wrap arcs
        assert abs(L - Lpoly) <= L * ((np.pi / 24) ** 2 / 24 + 1e-6), (name, L, Lpoly)
