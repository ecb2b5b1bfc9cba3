"""Mobilizer kernels of the jit mobilizer tests, at a module's top level so numba caches them.

Each one writes a built-in mobilizer's kinematics (core/joints.pxi's Pin, Screw, Universal) from
their definitions: the tests compare the two.
"""
from __future__ import annotations

import numpy as np

import simtk.jit as sj


@sj.mobilizer(nu=1)
def pin(q, params, R, p, H):
    # rotation about F's z: R = Rz(q), p = 0, H = (z, 0)
    c, s = np.cos(q[0]), np.sin(q[0])
    R[0, 0] = c
    R[0, 1] = -s
    R[1, 0] = s
    R[1, 1] = c
    R[2, 2] = 1.0
    H[0, 0, 2] = 1.0


@sj.mobilizer(nu=1)
def screw(q, params, R, p, H):
    # rotation about z by q and translation along z by pitch q (params[0] the pitch)
    c, s = np.cos(q[0]), np.sin(q[0])
    R[0, 0] = c
    R[0, 1] = -s
    R[1, 0] = s
    R[1, 1] = c
    R[2, 2] = 1.0
    p[2] = params[0] * q[0]
    H[0, 0, 2] = 1.0
    H[0, 1, 2] = params[0]


def universal_hdot(q, qdot, v, params, out):
    # H column 1 is Rx(q0) y = (0, c, s), turning with qdot0 about x: d/dt = qdot0 (0, -s, c)
    c, s = np.cos(q[0]), np.sin(q[0])
    out[0, 1] = -s * qdot[0] * v[1]
    out[0, 2] = c * qdot[0] * v[1]


@sj.mobilizer(nu=2, hdot=universal_hdot)
def universal(q, params, R, p, H):
    # R = Rx(q0) Ry(q1); H = [(x, 0), (Rx(q0) y, 0)]
    c0, s0, c1, s1 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    R[0, 0] = c1
    R[0, 2] = s1
    R[1, 0] = s0 * s1
    R[1, 1] = c0
    R[1, 2] = -s0 * c1
    R[2, 0] = -c0 * s1
    R[2, 1] = s0
    R[2, 2] = c0 * c1
    H[0, 0, 0] = 1.0
    H[1, 0, 1] = c0
    H[1, 0, 2] = s0


def universal_wrong_hdot(q, qdot, v, params, out):
    # the sign of HDot flipped: check_mobilizer must find it
    c, s = np.cos(q[0]), np.sin(q[0])
    out[0, 1] = s * qdot[0] * v[1]
    out[0, 2] = -c * qdot[0] * v[1]


universal_wrong = sj.mobilizer(universal.py_func, nu=2, hdot=universal_wrong_hdot)


@sj.mobilizer(nu=1)
def nan_past_one(q, params, R, p, H):
    # a Pin whose H is NaN beyond q = 1
    R[0, 0] = 1.0
    R[1, 1] = 1.0
    R[2, 2] = 1.0
    H[0, 0, 2] = np.nan if q[0] > 1.0 else 1.0


@sj.mobilizer(nu=1)
def reads_past_params(q, params, R, p, H):
    # params[3] of a shorter vector: the bounds check raises IndexError
    R[0, 0] = 1.0
    R[1, 1] = 1.0
    R[2, 2] = 1.0
    H[0, 0, 2] = params[3]


def nan_hdot_when_fast(q, qdot, v, params, out):
    # a Universal's HDot, NaN while |qdot0| > 5
    c, s = np.cos(q[0]), np.sin(q[0])
    out[0, 1] = -s * qdot[0] * v[1]
    out[0, 2] = c * qdot[0] * v[1]
    if abs(qdot[0]) > 5.0:
        out[1, 0] = np.nan


universal_nan_hdot = sj.mobilizer(universal.py_func, nu=2, hdot=nan_hdot_when_fast)
