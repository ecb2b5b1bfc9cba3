"""Tutorial 22 (a sweep of 100 spring stiffnesses on Dask) runs, finds the resonance and writes its plot."""
import math
import pathlib
import re
import subprocess
import sys

import pytest

TUTORIAL = pathlib.Path(__file__).parent.parent.parent / "tutorials" / "22_parameter_sweep.py"


def test_tutorial_22_sweeps_on_dask_finds_the_resonance_and_writes_a_png(tmp_path):
    pytest.importorskip("distributed")
    result = subprocess.run([sys.executable, str(TUTORIAL), str(tmp_path)], capture_output=True, text=True,
                            timeout=300, cwd=TUTORIAL.parent.parent)
    assert result.returncode == 0, f"{TUTORIAL.name} failed:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
    out = result.stdout
    assert "on Dask" in out and "100 finished, 0 failed" in out, out
    # the peak is the grid point nearest the resonance: within half a grid step (80 N/m over 99 steps)
    k_peak, k_res = map(float, re.search(r"at k = ([\d.]+) N/m \(resonance m w\^2 = ([\d.]+)", out).groups())
    assert abs(k_peak - k_res) <= 0.5 * 80.0 / 99 + 0.01, out  # + the printed rounding
    # a method bound, not round-off: what is left of the start's transient at t = 4 s, exp(-c t / 2m) = e^-6,
    # times a few for the transient's size relative to the steady amplitude
    error = float(re.search(r"steady-state amplitude: ([\d.e+-]+)", out).group(1))
    assert error <= 4 * math.exp(-6.0), out
    png = tmp_path / "resonance.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in out
