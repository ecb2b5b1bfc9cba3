"""STAND-IN for the detection side (issue 12): delete when ``geometry.py`` and ``_detection.py`` land.

A minimal ``ContactGeometry`` (HalfSpace, Sphere) and ``detect`` with the conventions of CONTRACT.md,
for sphere/half-space and sphere/sphere pairs only, so that the contact forces can be built and
tested before the real detection exists. ``hunt_crossley.py`` imports ``detect`` from the real
``_detection`` when it exists and from here otherwise; the tests do the same for ``ContactGeometry``.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["ContactGeometry", "Contacts", "detect"]

_HALF_SPACE, _SPHERE = 0, 1


class ContactGeometry:
    """Stand-in geometry: an immutable ``shape_code`` and ``params`` (3 floats) per shape."""

    __slots__ = ("shape_code", "params")

    def __init__(self, shape_code: int, params: tuple[float, float, float]):
        self.shape_code = shape_code
        self.params = params

    @staticmethod
    def HalfSpace() -> "ContactGeometry":
        """The half-space x > 0 of its frame (outward normal -x)."""
        return ContactGeometry(_HALF_SPACE, (0.0, 0.0, 0.0))

    @staticmethod
    def Sphere(radius: float) -> "ContactGeometry":
        """A sphere centred on its frame's origin."""
        if not radius > 0:
            raise ValueError(f"Sphere: radius must be > 0, got {radius!r}")
        return ContactGeometry(_SPHERE, (float(radius), 0.0, 0.0))


class Contacts:
    """The contacts found by ``detect`` (see CONTRACT.md for the meaning of each array)."""

    def __init__(self, rows: list):
        n = len(rows)
        self.surf1 = np.array([r[0] for r in rows], dtype=np.int64).reshape(n)
        self.surf2 = np.array([r[1] for r in rows], dtype=np.int64).reshape(n)
        self.p_G = np.array([r[2] for r in rows], dtype=np.float64).reshape(n, 3)
        self.n_G = np.array([r[3] for r in rows], dtype=np.float64).reshape(n, 3)
        self.depth = np.array([r[4] for r in rows], dtype=np.float64).reshape(n)
        self.R1 = np.array([r[5] for r in rows], dtype=np.float64).reshape(n)
        self.R2 = np.array([r[6] for r in rows], dtype=np.float64).reshape(n)


def _half_space_sphere(R_H, p_H, c, r):
    """(point, normal from the half-space into the sphere, depth) or None."""
    x = R_H[:, 0]
    depth = r + float(x @ (c - p_H))  # the sphere's deepest point, measured into the material
    if depth <= 0:
        return None
    n = -x
    return c - n * r + 0.5 * depth * n, n, depth  # the sphere's deepest point, back by d/2


def detect(codes, params, R_GS, p_GS, clique) -> Contacts:
    """All overlapping sphere/half-space and sphere/sphere pairs, ``surf1 < surf2``."""
    ns = len(codes)
    rows = []
    for i in range(ns):
        for j in range(i + 1, ns):
            if clique[i] >= 0 and clique[i] == clique[j]:
                continue
            ci, cj = int(codes[i]), int(codes[j])
            if ci == _HALF_SPACE and cj == _SPHERE:
                hit = _half_space_sphere(R_GS[i], p_GS[i], p_GS[j], params[j][0])
                if hit is not None:
                    rows.append((i, j, hit[0], hit[1], hit[2], math.inf, params[j][0]))
            elif ci == _SPHERE and cj == _HALF_SPACE:
                hit = _half_space_sphere(R_GS[j], p_GS[j], p_GS[i], params[i][0])
                if hit is not None:  # the normal must point from i (the sphere) into j
                    rows.append((i, j, hit[0], -hit[1], hit[2], params[i][0], math.inf))
            elif ci == _SPHERE and cj == _SPHERE:
                d = p_GS[j] - p_GS[i]
                dist = float(np.linalg.norm(d))
                r1, r2 = params[i][0], params[j][0]
                depth = r1 + r2 - dist
                if depth > 0 and dist > 0:
                    n = d / dist
                    rows.append((i, j, p_GS[i] + (r1 - 0.5 * depth) * n, n, depth, r1, r2))
    return Contacts(rows)
