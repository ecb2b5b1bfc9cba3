"""Seeing the motion: decorations on bodies, a live viewer in the browser, a self-contained HTML replay.

- `decorate` fixes a `Decoration` (sphere, cylinder, capsule, box, ellipsoid, frame axes, line,
  half-space, mesh file) on a body; contact surfaces of ``Force.HuntCrossley`` and a `UrdfModel`'s
  visuals are drawn without it; so is the path of every path force (`GeometryPath.get_polyline`),
  a muscle's coloured by its activation (blue 0 to red 1), and every deformable body
  (``simtk.deformable``): its surface, or its particles and springs, following the particles.
- `export_html` writes one HTML file that replays a `StatesTrajectory` offline (numpy only; mesh
  files need ``trimesh``).
- `Visualizer` serves a live 3-D view on localhost with viser (the ``[viz]`` extra), imported only
  when it is first used.

The core never imports this package.
"""
from __future__ import annotations

from typing import Any

from .decorations import (
    Decoration,
    Placed,
    clear_decorations,
    collect,
    contact_decorations,
    decorate,
    get_decorations,
    urdf_decorations,
)
from .html import export_html

__all__ = ["Decoration", "Placed", "decorate", "get_decorations", "clear_decorations", "collect",
           "contact_decorations", "urdf_decorations", "export_html", "Visualizer"]


def __getattr__(name: str) -> Any:
    # The live viewer imports viser, a heavy optional dependency: load it only when asked for.
    if name == "Visualizer":
        from .visualizer import Visualizer

        return Visualizer
    raise AttributeError(f"module 'simtk.viz' has no attribute {name!r}")
