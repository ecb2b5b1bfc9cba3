"""Jitted helpers for force kernels: the kinematics of stations and the ways to apply forces.

Vectors are 3-tuples (or anything indexable by 0..2, e.g. a slice ``params[1:4]``), so a kernel
allocates nothing. Body forces are (torque about the body origin, force) in Ground, as everywhere in
simtk. A body index outside ``0 <= b < nb`` raises IndexError (the element's error names it).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numba

__all__ = ["JitContext", "station_location", "station_offset", "station_velocity", "add_station_force",
           "add_body_torque", "add_mobility_force", "add3", "sub3", "scale3", "dot3", "cross3", "norm3"]

#: What a kernel reads: time t, q (nq,), u (nu,), and the bodies' R_GB (nb,3,3), p_GB (nb,3), V_GB (nb,2,3)
#: (angular velocity first, then the origin's velocity, in Ground).
JitContext = namedtuple("JitContext", ["t", "q", "u", "R_GB", "p_GB", "V_GB"])

_inline = numba.njit(inline="always", cache=True)


@_inline
def _check_body(ctx, b):
    if b < 0 or b >= ctx.p_GB.shape[0]:
        raise IndexError("a body index is out of range (0 <= b < nb)")


@_inline
def station_offset(ctx, b, s):
    """R_GB s: station ``s`` (in body ``b``) relative to the body origin, expressed in Ground."""
    _check_body(ctx, b)
    R = ctx.R_GB
    return (R[b, 0, 0] * s[0] + R[b, 0, 1] * s[1] + R[b, 0, 2] * s[2],
            R[b, 1, 0] * s[0] + R[b, 1, 1] * s[1] + R[b, 1, 2] * s[2],
            R[b, 2, 0] * s[0] + R[b, 2, 1] * s[1] + R[b, 2, 2] * s[2])


@_inline
def station_location(ctx, b, s):
    """p_GB + R_GB s: where station ``s`` of body ``b`` is, in Ground."""
    r = station_offset(ctx, b, s)
    p = ctx.p_GB
    return (p[b, 0] + r[0], p[b, 1] + r[1], p[b, 2] + r[2])


@_inline
def station_velocity(ctx, b, s):
    """v_GB + w_GB x (R_GB s): the velocity of station ``s`` of body ``b``, in Ground."""
    r = station_offset(ctx, b, s)
    V = ctx.V_GB
    return (V[b, 1, 0] + V[b, 0, 1] * r[2] - V[b, 0, 2] * r[1],
            V[b, 1, 1] + V[b, 0, 2] * r[0] - V[b, 0, 0] * r[2],
            V[b, 1, 2] + V[b, 0, 0] * r[1] - V[b, 0, 1] * r[0])


@_inline
def add_station_force(ctx, body_forces, b, s, f):
    """Apply force ``f`` (in Ground) at station ``s`` of body ``b``: torque (R_GB s) x f, force f."""
    r = station_offset(ctx, b, s)
    body_forces[b, 0, 0] += r[1] * f[2] - r[2] * f[1]
    body_forces[b, 0, 1] += r[2] * f[0] - r[0] * f[2]
    body_forces[b, 0, 2] += r[0] * f[1] - r[1] * f[0]
    body_forces[b, 1, 0] += f[0]
    body_forces[b, 1, 1] += f[1]
    body_forces[b, 1, 2] += f[2]


@_inline
def add_body_torque(ctx, body_forces, b, torque):
    """Apply a pure torque (in Ground) to body ``b``."""
    _check_body(ctx, b)
    body_forces[b, 0, 0] += torque[0]
    body_forces[b, 0, 1] += torque[1]
    body_forces[b, 0, 2] += torque[2]


@_inline
def add_mobility_force(ctx, mobility_forces, i, f):
    """Add generalized force ``f`` on mobility ``i`` (0 <= i < nu)."""
    if i < 0 or i >= mobility_forces.shape[0]:
        raise IndexError("a mobility index is out of range (0 <= i < nu)")
    mobility_forces[i] += f


@_inline
def add3(a, b):
    """a + b."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@_inline
def sub3(a, b):
    """a - b."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@_inline
def scale3(c, a):
    """c a."""
    return (c * a[0], c * a[1], c * a[2])


@_inline
def dot3(a, b):
    """a . b."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_inline
def cross3(a, b):
    """a x b."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@_inline
def norm3(a):
    """|a|."""
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
