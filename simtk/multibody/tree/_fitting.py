"""Best-fit coordinates of each built-in mobilizer for a desired X_FM (``set_q_to_fit_transform``).

Each fit keeps what the mobilizer can represent and drops the rest, as Simbody does: a Pin keeps
the rotation about z, a Slider the translation along x, and so on.
"""
from __future__ import annotations

import numpy as np

from ... import _core
from ...spatial import Rotation, Transform

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
        return _spherical_coords(R, p, params)
    raise NotImplementedError(f"set_q_to_fit_transform is not implemented for the {name} mobilizer")


def _spherical_coords(R: np.ndarray, p: np.ndarray, params: np.ndarray) -> np.ndarray:
    """SphericalCoords: R_FM = Rz(az) Ry(ze) gives the angles, p_FM along M's axis the translation.

    ``params`` = (az0, ze0, flags) as the compiled core reads them: az = sAz q0 + az0,
    ze = sZe q1 + ze0, p = sT q2 (M's z axis, or x with flag 4); flags 1, 2, 8 negate az, ze, t.
    """
    az0, ze0, flags = float(params[0]), float(params[1]), int(params[2])
    s_az = -1.0 if flags & 1 else 1.0
    s_ze = -1.0 if flags & 2 else 1.0
    s_t = -1.0 if flags & 8 else 1.0
    axis = 0 if flags & 4 else 2
    az = np.arctan2(-R[0, 1], R[1, 1])
    ze = np.arctan2(-R[2, 0], R[2, 2])
    t = float(R[:, axis] @ p)
    return np.array([s_az * (az - az0), s_ze * (ze - ze0), s_t * t])


_NAMES = {v[0]: k for k, v in _core.JOINT_TYPES.items()}
