"""The paths both viewers draw: each GeometryPath of a path force, as a polyline in Ground per frame.

A path's shape changes with the pose (conditional points drop out, wraps come and go), so unlike a
body's decorations it cannot be tessellated once: each frame asks the path for its polyline
(`GeometryPath.get_polyline`), its points (marked), and its colour, which for a muscle follows its
activation (blue at 0 to red at 1) and is fixed for other path forces (springs, actuators).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..common.stage import Stage

__all__ = ["PathDrawing", "PathFrame", "path_drawings", "activation_color", "path_frames",
           "PATH_COLOR", "RELAXED", "ACTIVE"]

#: the colour of a path force that is not a muscle
PATH_COLOR = (0.85, 0.55, 0.1)
#: a muscle's colour at activation 0 and at 1
RELAXED = (0.1, 0.25, 0.95)
ACTIVE = (0.95, 0.1, 0.1)


@dataclass
class PathDrawing:
    """One path drawn: its force's ``name``, the ``force`` and its ``path``; ``muscle`` when the colour
    follows an activation."""

    name: str
    force: Any
    path: Any
    muscle: bool


@dataclass
class PathFrame:
    """A path at one State: the polyline (m, 3) in Ground, which of its vertices are path or tangent
    points (``marks``, bool (m,)), and its colour."""

    points: np.ndarray
    marks: np.ndarray
    rgb: tuple[float, float, float]


def path_drawings(system: Any) -> list[PathDrawing]:
    """The path forces of ``system`` (those with a ``get_geometry_path``), in force-subsystem order.

    Parameters
    ----------
    system : MultibodySystem

    Returns
    -------
    list of PathDrawing
    """
    out: list[PathDrawing] = []
    for sub in system.get_force_subsystems():
        for i in range(sub.get_num_forces()):
            f = sub.get_force(i)
            getter = getattr(f, "get_geometry_path", None)
            if getter is None:
                continue
            path = getter()
            name = getattr(f, "name", "") or getattr(path, "name", "") or f"path{len(out)}"
            out.append(PathDrawing(str(name), f, path, callable(getattr(f, "get_activation", None))))
    return out


def activation_color(a: float) -> tuple[float, float, float]:
    """The colour of activation ``a``: `RELAXED` at 0 to `ACTIVE` at 1, linearly (clamped to [0, 1]).

    Parameters
    ----------
    a : float

    Returns
    -------
    tuple of 3 floats
    """
    t = float(np.clip(a, 0.0, 1.0)) if np.isfinite(a) else 0.0
    return tuple(float(r + t * (v - r)) for r, v in zip(RELAXED, ACTIVE))  # type: ignore[return-value]


def _frame(d: PathDrawing, state: Any, max_angle: float) -> PathFrame:
    if d.force.is_disabled(state):  # it applies no tension: nothing to see
        return PathFrame(np.zeros((0, 3)), np.zeros(0, dtype=bool), PATH_COLOR)
    poly, marks = d.path._polyline(state, max_angle)
    rgb = activation_color(d.force.get_activation(state)) if d.muscle else PATH_COLOR
    return PathFrame(poly, marks, rgb)


def path_frames(drawings: Sequence[PathDrawing], states: Sequence[Any],
                max_angle: float = np.pi / 24) -> list[list[PathFrame]]:
    """Each drawing's `PathFrame` at each State: ``out[i][k]`` is drawing k at State i.

    States below Position are realized to Position (only their caches change).

    Parameters
    ----------
    drawings : sequence of PathDrawing
    states : sequence of State
    max_angle : float
        The largest turn (rad) about a wrap surface between consecutive points.

    Returns
    -------
    list of list of PathFrame
    """
    out = []
    for s in states:
        if drawings and s.get_system_stage() < Stage.Position:
            s.get_system().realize(s, Stage.Position)
        out.append([_frame(d, s, max_angle) for d in drawings])
    return out
