"""Tutorial 18 (a URDF robot holding a pose) runs and reaches its pose.

tests/test_tutorials.py runs every tutorial for completion; this one also reads the result line.
"""
import importlib.metadata
import pathlib
import re
import subprocess
import sys

import pytest

TUTORIAL = pathlib.Path(__file__).parent.parent.parent / "tutorials" / "18_urdf_robot.py"


def test_tutorial_18_holds_the_pose():
    try:
        importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    result = subprocess.run([sys.executable, str(TUTORIAL)], capture_output=True, text=True, timeout=300,
                            cwd=TUTORIAL.parent.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    match = re.search(r"final tracking error: max (\S+) rad after (\S+) s", result.stdout)
    assert match, result.stdout
    # a critically damped 20 rad/s response has decayed by e^-20 (1 + 20) ~ 4e-8 after 1 s; the
    # 500 Hz control and integration leave more, but far less than a millirad
    assert float(match.group(1)) < 1e-4 and float(match.group(2)) == pytest.approx(1.0)
