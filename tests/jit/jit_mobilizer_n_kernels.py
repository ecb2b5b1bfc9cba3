"""Mobilizer kernels with qdot = N(q) u for the jit mobilizer tests, at a module's top level so numba caches them.

Each writes a built-in mobilizer's kinematics (core/joints.pxi's BallEuler and Ball) from their
definitions: u is the angular velocity w_FM in F, q body-fixed X-Y-Z angles or a quaternion.
"""
from __future__ import annotations

import numba
import numpy as np

import simtk.jit as sj


@numba.njit(cache=True)
def _euler_rotation(q, R):
    # R = Rx(q0) Ry(q1) Rz(q2)
    c0, s0, c1, s1, c2, s2 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[2]), np.sin(q[2])
    R[0, 0] = c1 * c2
    R[0, 1] = -c1 * s2
    R[0, 2] = s1
    R[1, 0] = s0 * s1 * c2 + c0 * s2
    R[1, 1] = -s0 * s1 * s2 + c0 * c2
    R[1, 2] = -s0 * c1
    R[2, 0] = -c0 * s1 * c2 + s0 * s2
    R[2, 1] = c0 * s1 * s2 + s0 * c2
    R[2, 2] = c0 * c1


def euler_n(q, params, N):
    # w = Hw(q) qdot with Hw = [x | Rx(q0) y | Rx(q0) Ry(q1) z]; N = Hw^-1 (singular at cos q1 = 0)
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    N[0, 0] = 1.0
    N[0, 1] = s0 * s1 / c1
    N[0, 2] = -c0 * s1 / c1
    N[1, 1] = c0
    N[1, 2] = s0
    N[2, 1] = -s0 / c1
    N[2, 2] = c0 / c1


def euler_ndot(q, qdot, params, NDot):
    # d/dt of euler_n's entries along qdot (t = 1/c1, dt/dt = s1 t^2 qdot1)
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    t = 1.0 / c1
    a, b = qdot[0], qdot[1]
    NDot[0, 1] = c0 * s1 * t * a + s0 * t * t * b
    NDot[0, 2] = s0 * s1 * t * a - c0 * t * t * b
    NDot[1, 1] = -s0 * a
    NDot[1, 2] = c0 * a
    NDot[2, 1] = -c0 * t * a - s0 * s1 * t * t * b
    NDot[2, 2] = -s0 * t * a + c0 * s1 * t * t * b


@sj.mobilizer(nq=3, nu=3, n=euler_n, ndot=euler_ndot)
def ball_euler(q, params, R, p, H):
    # H = (identity, 0): u is w_FM in F; constant, so no hdot
    _euler_rotation(q, R)
    H[0, 0, 0] = 1.0
    H[1, 0, 1] = 1.0
    H[2, 0, 2] = 1.0


def euler_ndot_wrong(q, qdot, params, NDot):
    # euler_ndot without the qdot1 terms: check_mobilizer must find it
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    t = 1.0 / c1
    a = qdot[0]
    NDot[0, 1] = c0 * s1 * t * a
    NDot[0, 2] = s0 * s1 * t * a
    NDot[1, 1] = -s0 * a
    NDot[1, 2] = c0 * a
    NDot[2, 1] = -c0 * t * a
    NDot[2, 2] = -s0 * t * a


ball_euler_wrong_ndot = sj.mobilizer(ball_euler.py_func, nq=3, nu=3, n=euler_n, ndot=euler_ndot_wrong)


@numba.njit(cache=True)
def _quat_rotation(q, R):
    # R of the normalized quaternion (w, x, y, z)
    n = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@numba.njit(cache=True)
def _half_e(q, s, out):
    # out (4, 3) = s E(q): the quaternion rate s (0, w) * q as a matrix of w
    out[0, 0] = -s * q[1]
    out[0, 1] = -s * q[2]
    out[0, 2] = -s * q[3]
    out[1, 0] = s * q[0]
    out[1, 1] = s * q[3]
    out[1, 2] = -s * q[2]
    out[2, 0] = -s * q[3]
    out[2, 1] = s * q[0]
    out[2, 2] = s * q[1]
    out[3, 0] = s * q[2]
    out[3, 1] = -s * q[1]
    out[3, 2] = s * q[0]


def quat_n(q, params, N):
    _half_e(q, 0.5, N)


def quat_ndot(q, qdot, params, NDot):
    # E is linear in q: NDot = 1/2 E(qdot)
    _half_e(qdot, 0.5, NDot)


def quat_ninv(q, params, Ninv):
    # Simbody's N^-1 = 2 E(q)^T (a left inverse of N when |q| = 1)
    E = np.zeros((4, 3))
    _half_e(q, 2.0, E)
    for a in range(3):
        for b in range(4):
            Ninv[a, b] = E[b, a]


@sj.mobilizer(nq=4, nu=3, n=quat_n, ninv=quat_ninv, ndot=quat_ndot)
def ball_quat(q, params, R, p, H):
    _quat_rotation(q, R)
    H[0, 0, 0] = 1.0
    H[1, 0, 1] = 1.0
    H[2, 0, 2] = 1.0


# the same ball with the core's least-squares N^-1 = (N^T N)^-1 N^T
ball_quat_lsq = sj.mobilizer(ball_quat.py_func, nq=4, nu=3, n=quat_n, ndot=quat_ndot)


def n_nan_past_one(q, params, N):
    # an N that turns NaN beyond q0 = 1
    N[0, 0] = np.nan if q[0] > 1.0 else 1.0
    N[1, 1] = 1.0
    N[2, 2] = 1.0


ball_euler_nan_n = sj.mobilizer(ball_euler.py_func, nq=3, nu=3, n=n_nan_past_one)


def n_reads_past(q, params, N):
    # q[5] of 3 coordinates: the bounds check raises IndexError
    N[0, 0] = q[5]


ball_euler_bad_index_n = sj.mobilizer(ball_euler.py_func, nq=3, nu=3, n=n_reads_past)


def ndot_nan_when_fast(q, qdot, params, NDot):
    # euler_ndot, NaN while |qdot0| > 5
    euler_ndot_inner(q, qdot, params, NDot)
    if abs(qdot[0]) > 5.0:
        NDot[0, 0] = np.nan


euler_ndot_inner = numba.njit(cache=True)(euler_ndot)
ball_euler_nan_ndot = sj.mobilizer(ball_euler.py_func, nq=3, nu=3, n=euler_n, ndot=ndot_nan_when_fast)
