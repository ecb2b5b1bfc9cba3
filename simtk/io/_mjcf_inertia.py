"""Mass properties of MJCF geoms, as MuJoCo's compiler makes them (``inertiafromgeom``).

Each primitive is a solid of uniform density (the geom's ``density``, 1000 by default, or its
``mass`` spread over its volume); a capsule is a cylinder of length ``2 h`` with two hemispherical
caps. The results are (mass, center in the body frame, inertia about the center in the body frame),
summed per body by `combine`.
"""
from __future__ import annotations

import math

import numpy as np

__all__: list[str] = []


def volume(kind: str, size: np.ndarray) -> float:
    """The solid's volume (``size`` as MJCF writes it: radii and half lengths)."""
    if kind == "sphere":
        return 4.0 / 3.0 * math.pi * size[0] ** 3
    if kind == "capsule":
        r, h = size[0], size[1]
        return math.pi * r * r * 2.0 * h + 4.0 / 3.0 * math.pi * r ** 3
    if kind == "cylinder":
        return math.pi * size[0] ** 2 * 2.0 * size[1]
    if kind == "ellipsoid":
        return 4.0 / 3.0 * math.pi * size[0] * size[1] * size[2]
    if kind == "box":
        return 8.0 * size[0] * size[1] * size[2]
    raise ValueError(kind)


def principal_inertia(kind: str, size: np.ndarray, mass: float) -> np.ndarray:
    """The diagonal inertia about the center, in the geom's own frame, of a uniform solid of ``mass``."""
    m = mass
    if kind == "sphere":
        i = 0.4 * m * size[0] ** 2
        return np.array([i, i, i])
    if kind == "capsule":
        r, h = size[0], size[1]
        L = 2.0 * h
        v_cyl = math.pi * r * r * L
        v_sph = 4.0 / 3.0 * math.pi * r ** 3
        rho = m / (v_cyl + v_sph)
        mc, ms = rho * v_cyl, rho * v_sph
        # two hemispheres, centers 3r/8 beyond the cylinder's ends: ms (2r^2/5 + h^2 + 3 h r / 4)
        ixx = mc * (3.0 * r * r + L * L) / 12.0 + ms * (0.4 * r * r + h * h + 0.75 * h * r)
        izz = 0.5 * mc * r * r + 0.4 * ms * r * r
        return np.array([ixx, ixx, izz])
    if kind == "cylinder":
        r, L = size[0], 2.0 * size[1]
        ixx = m * (3.0 * r * r + L * L) / 12.0
        return np.array([ixx, ixx, 0.5 * m * r * r])
    if kind == "ellipsoid":
        a, b, c = size[:3]
        return 0.2 * m * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    if kind == "box":
        a, b, c = 2.0 * size[:3]
        return m / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    raise ValueError(kind)


def combine(parts: list) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, center, inertia about the center) of parts ``(m, c, I_c)`` all in one frame."""
    m = sum(p[0] for p in parts)
    if m <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    c = sum(p[0] * p[1] for p in parts) / m
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        I += Ii + mi * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return m, c, I
