"""Tutorial 19 (save a model and a State, resume bitwise) runs to completion and reports bitwise equality."""
import pathlib
import subprocess
import sys

TUTORIAL = pathlib.Path(__file__).parent.parent.parent / "tutorials" / "19_save_and_resume.py"


def test_tutorial_19_runs_and_resumes_bitwise():
    result = subprocess.run([sys.executable, str(TUTORIAL)], capture_output=True, text=True, timeout=300,
                            cwd=TUTORIAL.parent.parent)
    assert result.returncode == 0, f"{TUTORIAL.name} failed:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
    assert "bitwise equal over" in result.stdout and ": True" in result.stdout.splitlines()[-1]
