"""Random trees and states for the kernel tests (shared by tests/core)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simtk import _core

QUATERNION_JOINTS = {"Ball", "Free", "LineOrientation", "FreeLine", "Ellipsoid"}


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return quat_to_matrix(q)


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z); independent of the kernels."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def random_inertia(rng: np.random.Generator):
    """Mass, mass center p_BC and a physical inertia about the body origin, in B."""
    m = rng.uniform(0.5, 3.0)
    com = rng.uniform(-0.5, 0.5, size=3)
    dims = rng.uniform(0.1, 1.0, size=3)  # a box: always satisfies the triangle inequality
    a, b, c = dims ** 2
    moments = m / 12.0 * np.array([b + c, a + c, a + b])
    R = random_rotation(rng)
    I_C = R @ np.diag(moments) @ R.T
    I_B = I_C + m * (com @ com * np.eye(3) - np.outer(com, com))
    return m, com, I_B


@dataclass
class RandomTree:
    parent: np.ndarray
    joints: list
    R_PF: np.ndarray
    p_PF: np.ndarray
    R_BM: np.ndarray
    p_BM: np.ndarray
    mass: np.ndarray
    p_BC: np.ndarray
    I_B: np.ndarray
    jparam: np.ndarray

    @property
    def nb(self) -> int:
        return len(self.parent)

    def kernels(self, joints=None):
        return _core.make_tree_kernels(
            self.parent, joints or self.joints, R_PF=self.R_PF, p_PF=self.p_PF, R_BM=self.R_BM,
            p_BM=self.p_BM, mass=self.mass, p_BC=self.p_BC, I_B=self.I_B, jparam=self.jparam)


def random_tree(rng: np.random.Generator, joint_names, nb: int | None = None,
                chain: bool = False, depth_first: bool = False) -> RandomTree:
    """A random tree; ``depth_first`` numbers it in depth-first preorder (each
    subtree contiguous), which Pinocchio's algorithms assume."""
    if nb is None:
        nb = int(rng.integers(5, 16))
    parent = np.zeros(nb, dtype=np.int64)
    parent[0] = -1
    path = [0]   # ancestors of the last body added, for depth-first numbering
    for i in range(1, nb):
        if chain:
            parent[i] = i - 1
        elif depth_first:
            parent[i] = path[int(rng.integers(0, len(path)))]
            path = path[:path.index(parent[i]) + 1] + [i]
        else:
            parent[i] = int(rng.integers(0, i))
    joints = ["Weld"] + [str(rng.choice(joint_names)) for _ in range(1, nb)]
    R_PF = np.array([random_rotation(rng) for _ in range(nb)])
    R_BM = np.array([random_rotation(rng) for _ in range(nb)])
    p_PF = rng.uniform(-1, 1, size=(nb, 3))
    p_BM = rng.uniform(-1, 1, size=(nb, 3))
    mass = np.zeros(nb)
    p_BC = np.zeros((nb, 3))
    I_B = np.zeros((nb, 3, 3))
    for i in range(1, nb):
        mass[i], p_BC[i], I_B[i] = random_inertia(rng)
    jparam = np.zeros((nb, 3))
    jparam[:, 0] = rng.uniform(-0.5, 0.5, size=nb)   # Screw pitch; SphericalCoords az0
    jparam[:, 1] = rng.uniform(-0.5, 0.5, size=nb)   # SphericalCoords ze0
    jparam[:, 2] = rng.integers(0, 16, size=nb)      # SphericalCoords sign/axis flags
    for i in range(1, nb):
        if joints[i] in ("Ellipsoid", "EllipsoidEuler"):
            jparam[i] = rng.uniform(0.2, 1.5, size=3)     # radii
    return RandomTree(parent, joints, R_PF, p_PF, R_BM, p_BM, mass, p_BC, I_B, jparam)


def random_state(rng: np.random.Generator, ws, joints):
    """Random q (unit quaternions, Euler middle angle away from +-pi/2) and u."""
    q = np.zeros(ws.nq)
    for i in range(1, ws.nb):
        a, b = ws.qoff[i], ws.qoff[i + 1]
        q[a:b] = rng.uniform(-1.2, 1.2, size=b - a)
        if joints[i] in QUATERNION_JOINTS:
            quat = rng.normal(size=4)
            q[a:a + 4] = quat / np.linalg.norm(quat)
    u = rng.uniform(-1.5, 1.5, size=ws.nu)
    return q, u


def gravity_forces(ws, g=(0.0, -9.81, 0.0)) -> np.ndarray:
    """Body forces (nb,2,3) of uniform gravity: m g at each mass center, moved to the origin."""
    g = np.asarray(g, dtype=float)
    F = np.zeros((ws.nb, 2, 3))
    for i in range(1, ws.nb):
        f = ws.mass[i] * g
        F[i, 0] = np.cross(ws.p_GC[i] - ws.p_GB[i], f)
        F[i, 1] = f
    return F
