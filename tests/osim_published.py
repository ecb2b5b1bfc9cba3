"""Where the tests find OpenSim's published models (opensim-org/opensim-models), never copied here.

`published_model` looks in ``$SIMTK_OPENSIM_MODELS`` (a checkout of that repository, or its
``Models`` folder), then in the local git mirror of it, whose files it extracts once into a cache
folder under the system's temporary directory. Tests skip when neither is available. A path is
relative to the repository's root (``"Models/Arm26/arm26.osim"``) or to its ``Models`` folder
(``"Arm26/arm26.osim"``).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

#: The git mirror of opensim-org/opensim-models (a bare repository).
MIRROR = Path("/work/.mirror/opensim-org+opensim-models/repo")


def _git(*args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(MIRROR), *args], check=True, capture_output=True,
                          text=True).stdout


def _roots() -> list[Path]:
    env = os.environ.get("SIMTK_OPENSIM_MODELS")
    return [Path(env), Path(env).parent] if env else []


def published_model(relpath: str, skip: bool = True) -> Path | None:
    """The file ``relpath`` of the repository (e.g. ``"Models/Arm26/arm26.osim"``); when it cannot be
    found, the calling test is skipped, or None is returned with ``skip=False`` (scripts outside pytest).

    A ``relpath`` under ``Models/`` is also looked up relative to a ``$SIMTK_OPENSIM_MODELS`` that
    is the ``Models`` folder itself.
    """
    if not relpath.startswith("Models/"):
        relpath = "Models/" + relpath
    path = _find(relpath)
    if path is None and skip:
        import pytest  # only tests skip; scripts may run without pytest

        pytest.skip(f"{relpath}: OpenSim's published models are not available (set SIMTK_OPENSIM_MODELS to a "
                    "checkout of opensim-org/opensim-models)")
    return path


def _find(relpath: str) -> Path | None:
    for root in _roots():
        for p in (root / relpath, root / relpath.removeprefix("Models/")):
            if p.is_file():
                return p
    if not (MIRROR / "HEAD").is_file():
        return None
    try:
        head = _git("rev-parse", "HEAD").strip()
        out = Path(tempfile.gettempdir()) / f"simtk-opensim-models-{head[:12]}" / relpath
        if not out.is_file():
            data = subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"{head}:{relpath}"], check=True,
                                  capture_output=True).stdout
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(out.suffix + f".{os.getpid()}")
            tmp.write_bytes(data)
            tmp.replace(out)  # whole or absent, for concurrent test processes
        return out
    except (OSError, subprocess.CalledProcessError):
        return None


def published_models(pattern: str = "Models/*/*.osim") -> list[str]:
    """The repository paths matching ``pattern`` (for parametrizing), from wherever they are found."""
    for root in _roots():
        base = root if (root / "Models").is_dir() else root.parent
        found = sorted(str(p.relative_to(base)) for p in base.glob(pattern))
        if found:
            return found
    if not (MIRROR / "HEAD").is_file():
        return []
    try:
        names = _git("ls-tree", "-r", "--name-only", "HEAD", "Models").split()
    except (OSError, subprocess.CalledProcessError):
        return []
    return sorted(n for n in names if Path(n).match(pattern))


def require_published_model(relpath: str) -> Path:
    """`published_model`, skipping the test when the file cannot be found."""
    path = published_model(relpath, skip=True)
    assert path is not None
    return path
