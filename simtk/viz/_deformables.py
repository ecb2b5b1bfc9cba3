"""The deformable bodies both viewers draw: springs as segments, particles as points, solids as their surface.

A deformable body's shape is its particles' positions, so unlike a rigid body's decorations it is not a
pose per frame but a vertex array per frame: the connectivity (springs, surface triangles, which
particles are fixed or attached) is sent once, and each frame only the particles' positions, as
float32 (SOFA's visual mapping: a visual surface whose vertices follow the mechanical ones). A body
with surface triangles (tetrahedra, membranes) is drawn as that surface; one without is drawn as its
particles (fixed ones pink, attached ones yellow, as SOFA draws them) and its springs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..common.stage import Stage

__all__ = ["DeformableDrawing", "deformable_drawings", "deformable_frames", "FREE", "FIXED", "ATTACHED",
           "SPRING_COLOR", "SURFACE_COLOR", "POINT_COLORS"]

#: the particle kinds (`DeformableDrawing.kinds`)
FREE, FIXED, ATTACHED = 0, 1, 2
#: a spring's colour, a surface's colour, and a particle's by kind (free, fixed, attached)
SPRING_COLOR = (0.1, 0.6, 0.2)
SURFACE_COLOR = (0.8, 0.35, 0.3)
POINT_COLORS = ((0.15, 0.15, 0.15), (0.95, 0.3, 0.75), (0.95, 0.75, 0.05))


@dataclass
class DeformableDrawing:
    """One deformable body drawn: its ``name``, the ``body``, its springs (ns, 2) and surface triangles
    (nf, 3) as uint32 particle indices, each particle's kind (`FREE`, `FIXED`, `ATTACHED`; uint8), and
    whether its particles are drawn as points (when it has no surface)."""

    name: str
    body: Any
    segments: np.ndarray
    triangles: np.ndarray
    kinds: np.ndarray
    points: bool

    @property
    def num_particles(self) -> int:
        """How many particles (vertices per frame)."""
        return len(self.kinds)


def _is_deformable(sub: Any) -> bool:
    return all(callable(getattr(sub, m, None)) for m in ("get_positions", "get_surface_triangles", "get_segments",
                                                          "get_num_particles"))


def deformable_drawings(system: Any) -> list[DeformableDrawing]:
    """The deformable bodies of ``system`` (subsystems with particles, `DeformableBody`), in subsystem order.

    Parameters
    ----------
    system : MultibodySystem

    Returns
    -------
    list of DeformableDrawing
    """
    out: list[DeformableDrawing] = []
    for i in range(system.get_num_subsystems()):
        sub = system.get_subsystem(i)
        if not _is_deformable(sub):
            continue
        n = int(sub.get_num_particles())
        kinds = np.full(n, FREE, dtype=np.uint8)
        kinds[np.asarray(sub.get_fixed_particles(), dtype=np.int64)] = FIXED
        kinds[np.asarray(sub.get_attached_particles(), dtype=np.int64)] = ATTACHED
        tris = np.asarray(sub.get_surface_triangles(), dtype=np.uint32).reshape(-1, 3)
        segs = np.asarray(sub.get_segments(), dtype=np.uint32).reshape(-1, 2)
        name = getattr(sub, "name", "") or f"deformable{len(out)}"
        out.append(DeformableDrawing(str(name), sub, segs, tris, kinds, points=len(tris) == 0))
    return out


def deformable_frames(drawings: Sequence[DeformableDrawing], states: Sequence[Any]) -> np.ndarray:
    """Every drawing's particle positions at each State, (n_states, sum of particles, 3) float32, the
    drawings' particles one after the other in order.

    States below Position are realized to Position (only their caches change).

    Parameters
    ----------
    drawings : sequence of DeformableDrawing
    states : sequence of State

    Returns
    -------
    ndarray of float32, shape (n_states, N, 3)
    """
    total = sum(d.num_particles for d in drawings)
    out = np.empty((len(states), total, 3), dtype=np.float32)
    for i, s in enumerate(states):
        if drawings and s.get_system_stage() < Stage.Position:
            s.get_system().realize(s, Stage.Position)
        k = 0
        for d in drawings:
            out[i, k:k + d.num_particles] = d.body.get_positions(s)
            k += d.num_particles
    return out


def offsets(drawings: Sequence[DeformableDrawing]) -> np.ndarray:
    """The first particle of each drawing in a frame's rows, and the total: (len(drawings) + 1,)."""
    return np.concatenate([[0], np.cumsum([d.num_particles for d in drawings], dtype=np.int64)]).astype(np.int64)
