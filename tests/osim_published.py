"""Where the tests find the published OpenSim models (opensim-org/opensim-models), never copied here.

``published_model("Models/Arm26/arm26.osim")`` is that file of a checkout named by
``$SIMTK_OPENSIM_MODELS``, else extracted from the local git mirror of the repository into a
temporary directory; the test is skipped when neither has it.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

_MIRROR = Path("/work/.mirror/opensim-org+opensim-models/repo")
_extracted: dict[str, Path] = {}


def _git_dir() -> Path | None:
    for d in (_MIRROR / ".git", _MIRROR):
        if (d / "HEAD").is_file():
            return d
    return None


def published_model(relpath: str) -> Path | None:
    """The path of published model ``relpath`` (relative to the repository's root); skips if absent."""
    root = os.environ.get("SIMTK_OPENSIM_MODELS")
    if root and (Path(root) / relpath).is_file():
        return Path(root) / relpath
    if relpath in _extracted:
        return _extracted[relpath]
    git = _git_dir()
    if git is not None:
        r = subprocess.run(["git", "--git-dir", str(git), "show", f"HEAD:{relpath}"], capture_output=True)
        if r.returncode == 0:
            out = Path(tempfile.mkdtemp(prefix="osim_published_")) / Path(relpath).name
            out.write_bytes(r.stdout)
            _extracted[relpath] = out
            return out
    pytest.skip(f"published OpenSim model {relpath} not found (set SIMTK_OPENSIM_MODELS to a checkout of "
                "opensim-org/opensim-models)")
    return None
