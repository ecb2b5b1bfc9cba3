"""Where tests find OpenSim's published models (opensim-org/opensim-models), never copied into the repository.

``published_model("Arm26/arm26.osim")`` looks in ``$SIMTK_OPENSIM_MODELS`` (a checkout's ``Models``
directory, or the checkout itself), then extracts the file from a local git mirror of the repository
into a per-user cache directory; when neither has it, the calling test is skipped with the reason.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

#: Git directories of local mirrors of opensim-org/opensim-models, tried in order.
MIRRORS = ("/work/.mirror/opensim-org+opensim-models/repo", "/work/.mirror/opensim-org+opensim-models/repo/.git")


def _from_env(relpath: str) -> Path | None:
    root = os.environ.get("SIMTK_OPENSIM_MODELS")
    if not root:
        return None
    for base in (Path(root), Path(root) / "Models"):
        if (base / relpath).is_file():
            return base / relpath
    return None


def _from_mirror(relpath: str) -> Path | None:
    cache = Path(tempfile.gettempdir()) / f"simtk-opensim-models-{os.getuid() if hasattr(os, 'getuid') else 0}"
    out = cache / relpath
    if out.is_file():
        return out
    for git_dir in MIRRORS:
        if not Path(git_dir).is_dir():
            continue
        res = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:Models/{relpath}"],
                             capture_output=True, timeout=60)
        if res.returncode == 0:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(out.suffix + f".{os.getpid()}")
            tmp.write_bytes(res.stdout)
            tmp.replace(out)  # atomic: parallel test workers never read half a file
            return out
    return None


def published_model(relpath: str, skip: bool = True) -> Path | None:
    """The path of published model ``relpath`` (relative to the repository's ``Models``, e.g.
    ``"Arm26/arm26.osim"``, or from its root, ``"Models/Arm26/arm26.osim"``). When it is not available here: skips the calling test, or returns
    None with ``skip=False`` (scripts outside pytest)."""
    relpath = relpath.removeprefix("Models/")  # also as a path from the repository's root
    path = _from_env(relpath) or _from_mirror(relpath)
    if path is None and skip:
        import pytest  # only tests skip; scripts may run without pytest

        pytest.skip(f"OpenSim's published model {relpath} is not available: set SIMTK_OPENSIM_MODELS to a "
                    "checkout of opensim-org/opensim-models")
    return path
