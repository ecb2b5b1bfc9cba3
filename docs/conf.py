"""Sphinx configuration: the API reference from the numpydoc docstrings, the tutorials as pages.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (CI treats warnings as errors).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "simtk"
author = "the simtk developers"
copyright = "2026, the simtk developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "myst_parser"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
default_role = "code"  # single backquotes name code in the docstrings, as in numpydoc's convention
exclude_patterns = ["_build", "tolerance_audit.md", "generated/tutorials/*.txt"]
html_theme = "alabaster"
html_static_path: list[str] = []
suppress_warnings = ["ref.python"]  # a name documented under two paths (simtk.X and its module) is expected


def _tutorial_pages(app) -> None:
    """One page per ``tutorials/NN_*.py``: its docstring as the text, then the whole script."""
    out = Path(app.srcdir) / "generated" / "tutorials"
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for script in sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py")):
        text = script.read_text()
        m = re.match(r'\s*(?:#.*\n)*\s*"""(.*?)"""', text, re.S)
        doc = m.group(1).strip() if m else script.stem
        title, _, body = doc.partition("\n")
        page = [title, "=" * len(title), "", "::", ""]
        page += ["    " + line for line in body.strip().splitlines()]
        page += ["", f".. literalinclude:: ../../../tutorials/{script.name}", "   :language: python", ""]
        (out / f"{script.stem}.rst").write_text("\n".join(page))
        entries.append(f"   generated/tutorials/{script.stem}")
    (Path(app.srcdir) / "tutorials_toc.rst").write_text(
        "Tutorials\n=========\n\nEach tutorial is a script in ``tutorials/`` that runs as it is.\n\n"
        ".. toctree::\n   :maxdepth: 1\n\n" + "\n".join(entries) + "\n")


def setup(app):
    app.connect("builder-inited", _tutorial_pages)
