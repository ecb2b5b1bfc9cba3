"""Every tutorial runs to completion (they are the Python twins of the seed's examples and must keep working)."""
import pathlib
import subprocess
import sys

import pytest

TUTORIALS = sorted((pathlib.Path(__file__).parent.parent / "tutorials").glob("[0-9][0-9]_*.py"))


def test_every_seed_chapter_has_tutorials():
    assert len(TUTORIALS) >= 14


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path):
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                            cwd=path.parent.parent)
    assert result.returncode == 0, f"{path.name} failed:\n{result.stderr[-3000:]}"
    assert result.stdout.strip(), f"{path.name} printed nothing"
    assert "Traceback" not in result.stderr
