"""Best-fit coordinates of each built-in mobilizer for a desired X_FM (``set_q_to_fit_transform``).

Each fit keeps what the mobilizer can represent and drops the rest, as Simbody does: a Pin keeps
the rotation about z, a Slider the translation along x, and so on.
"""
from __future__ import annotations

import numpy as np

from .. import _core
from ..spatial import Rotation, Transform

__all__ = ["fit_q"]


def _angle_about_z(R: np.ndarray) -> float:
    return float(np.arctan2(R[1, 0] - R[0, 1], R[0, 0] + R[1, 1]))


def _xyz(R: Rotation) -> np.ndarray:
    return np.asarray(R.to_body_fixed_xyz(), dtype=np.float64)


def _universal(R: np.ndarray) -> np.ndarray:
    # R = Rx(a) Ry(b) Rz(0): take a from the image of z, b from it as well.
    a = np.arctan2(-R[1, 2], R[2, 2])
    b = np.arctan2(R[0, 2], np.hypot(R[1, 2], R[2, 2]))
    return np.array([a, b])


def fit_q(code: int, X_FM: Transform, q_now: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Coordinates of joint type ``code`` whose X_FM is closest to ``X_FM``."""
    R, p = X_FM.R.matrix, np.asarray(X_FM.p)
    name = _NAMES[code]
    if name == "Weld":
        return np.zeros(0)
    if name == "Pin":
        return np.array([_angle_about_z(R)])
    if name == "Slider":
        return np.array([p[0]])
    if name == "Screw":
        return np.array([_angle_about_z(R)])
    if name == "Cylinder":
        return np.array([_angle_about_z(R), p[2]])
    if name == "Planar":
        return np.array([_angle_about_z(R), p[0], p[1]])
    if name == "BendStretch":
        a = _angle_about_z(R)
        return np.array([a, np.cos(a) * p[0] + np.sin(a) * p[1]])
    if name == "Translation":
        return p.copy()
    if name == "Universal":
        return _universal(R)
    if name in ("Gimbal", "BallEuler"):
        return _xyz(X_FM.R)
    if name in ("Bushing", "FreeEuler"):
        return np.concatenate([_xyz(X_FM.R), p])
    # Ellipsoid and LineOrientation are fitted by their rotation (the position on the ellipsoid
    # follows from it, and a line has no spin to fit); FreeLine adds the translation.
    if name in ("Ball", "Ellipsoid", "LineOrientation"):
        return np.asarray(X_FM.R.to_quaternion(), dtype=np.float64)
    if name in ("EllipsoidEuler", "LineOrientationEuler"):
        return _xyz(X_FM.R)
    if name in ("Free", "FreeLine"):
        return np.concatenate([X_FM.R.to_quaternion(), p])
    if name == "FreeLineEuler":
        return np.concatenate([_xyz(X_FM.R), p])
    if name == "SphericalCoords":
        return _fit_translation_numerically(code, params, p, q_now)
    raise NotImplementedError(f"set_q_to_fit_transform is not implemented for the {name} mobilizer")


def _fit_translation_numerically(code: int, params: np.ndarray, p_target: np.ndarray, q_now: np.ndarray) -> np.ndarray:
    """q minimizing |p_FM(q) - p_target|, with p_FM from a one-body workspace of the same joint.

    Used where the joint's translation fixes its coordinates (SphericalCoords, whose offsets and
    flag bits make a closed form error-prone); the kernel itself defines the convention.
    """
    from scipy.optimize import least_squares

    eye = np.eye(3)
    ws = _core.make_tree_kernels([0, 0], [0, code], R_PF=[eye, eye], p_PF=np.zeros((2, 3)), R_BM=[eye, eye],
                                 p_BM=np.zeros((2, 3)), mass=[0.0, 1.0], p_BC=np.zeros((2, 3)),
                                 I_B=[np.zeros((3, 3)), eye], jparam=[np.zeros(3), params])

    def residual(q):
        ws.realize_position(np.ascontiguousarray(q))
        return ws.p_FM[1] - p_target

    return least_squares(residual, np.asarray(q_now, dtype=np.float64), xtol=1e-15, ftol=1e-15, gtol=1e-15).x


_NAMES = {v[0]: k for k, v in _core.JOINT_TYPES.items()}
