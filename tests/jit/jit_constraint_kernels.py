"""Constraint kernels for the jit tests (module-level, so numba caches them and model files find them).

Parameter layouts:
  ball        (b1, s1x, s1y, s1z, b2, s2x, s2y, s2z): station s2 of body b2 at station s1 of body b1;
              perr = p2 - p1 in Ground (3 holonomic equations), forces +lambda at s2 and -lambda at s1
  distance    (b1, b2, d): the seed's §3.2 example, the bodies' origins at distance d:
              perr = (|r|^2 - d^2) / 2, r = p2 - p1
  ball_until  (ball..., t_fail): the ball, whose position errors raise after t > t_fail
  ball_wrong_forces (ball...): the ball with its forces at the body origins (not G^T: a wrong kernel)
"""
from __future__ import annotations

import math

import simtk.jit as sj


def _ball_perr(ctx, params, perr):
    p1 = sj.station_location(ctx, int(params[0]), params[1:4])
    p2 = sj.station_location(ctx, int(params[4]), params[5:8])
    for i in range(3):
        perr[i] = p2[i] - p1[i]


def _ball_verr(ctx, params, verr):
    v1 = sj.station_velocity(ctx, int(params[0]), params[1:4])
    v2 = sj.station_velocity(ctx, int(params[4]), params[5:8])
    for i in range(3):
        verr[i] = v2[i] - v1[i]


def _ball_aerr(ctx, params, aerr):
    a1 = sj.station_acceleration(ctx, int(params[0]), params[1:4])
    a2 = sj.station_acceleration(ctx, int(params[4]), params[5:8])
    for i in range(3):
        aerr[i] = a2[i] - a1[i]


def _ball_forces(ctx, params, multipliers, body_forces, mobility_forces):
    f = (multipliers[0], multipliers[1], multipliers[2])
    sj.add_station_force(ctx, body_forces, int(params[4]), params[5:8], f)
    sj.add_station_force(ctx, body_forces, int(params[0]), params[1:4], sj.scale3(-1.0, f))


ball = sj.constraint(_ball_forces, mp=3, position_errors=_ball_perr, velocity_errors=_ball_verr,
                     acceleration_errors=_ball_aerr, name="ball")


_ORIGIN = (0.0, 0.0, 0.0)


def _dist_perr(ctx, params, perr):
    r = sj.sub3(sj.station_location(ctx, int(params[1]), _ORIGIN), sj.station_location(ctx, int(params[0]), _ORIGIN))
    perr[0] = 0.5 * (sj.dot3(r, r) - params[2] * params[2])


def _dist_verr(ctx, params, verr):
    b1, b2 = int(params[0]), int(params[1])
    r = sj.sub3(sj.station_location(ctx, b2, _ORIGIN), sj.station_location(ctx, b1, _ORIGIN))
    v = sj.sub3(sj.station_velocity(ctx, b2, _ORIGIN), sj.station_velocity(ctx, b1, _ORIGIN))
    verr[0] = sj.dot3(v, r)


def _dist_aerr(ctx, params, aerr):
    b1, b2 = int(params[0]), int(params[1])
    r = sj.sub3(sj.station_location(ctx, b2, _ORIGIN), sj.station_location(ctx, b1, _ORIGIN))
    v = sj.sub3(sj.station_velocity(ctx, b2, _ORIGIN), sj.station_velocity(ctx, b1, _ORIGIN))
    a = sj.sub3(sj.station_acceleration(ctx, b2, _ORIGIN), sj.station_acceleration(ctx, b1, _ORIGIN))
    aerr[0] = sj.dot3(a, r) + sj.dot3(v, v)


@sj.constraint(mp=1, position_errors=_dist_perr, velocity_errors=_dist_verr, acceleration_errors=_dist_aerr)
def distance(ctx, params, multipliers, body_forces, mobility_forces):
    b1, b2 = int(params[0]), int(params[1])
    r = sj.sub3(sj.station_location(ctx, b2, _ORIGIN), sj.station_location(ctx, b1, _ORIGIN))
    f = sj.scale3(multipliers[0], r)
    sj.add_station_force(ctx, body_forces, b2, _ORIGIN, f)
    sj.add_station_force(ctx, body_forces, b1, _ORIGIN, sj.scale3(-1.0, f))


def _nan_perr(ctx, params, perr):
    perr[0] = ctx.q[0] + params[0] * math.inf   # NaN when params[0] is 0


def _nan_verr(ctx, params, verr):
    verr[0] = ctx.u[0]


def _nan_aerr(ctx, params, aerr):
    aerr[0] = ctx.udot[0]


@sj.constraint(mp=1, position_errors=_nan_perr, velocity_errors=_nan_verr, acceleration_errors=_nan_aerr)
def nan_coordinate(ctx, params, multipliers, body_forces, mobility_forces):
    mobility_forces[0] += multipliers[0]


def _until_perr(ctx, params, perr):
    if ctx.t > params[8]:
        raise ValueError("the test kernel fails after t_fail")
    p1 = sj.station_location(ctx, int(params[0]), params[1:4])
    p2 = sj.station_location(ctx, int(params[4]), params[5:8])
    for i in range(3):
        perr[i] = p2[i] - p1[i]


ball_until = sj.constraint(_ball_forces, mp=3, position_errors=_until_perr, velocity_errors=_ball_verr,
                           acceleration_errors=_ball_aerr, name="ball")


_ZERO = (0.0, 0.0, 0.0)


def _ball_forces_at_origins(ctx, params, multipliers, body_forces, mobility_forces):
    # wrong on purpose: the forces at the body origins, not at the stations (not G^T of the ball's errors)
    f = (multipliers[0], multipliers[1], multipliers[2])
    sj.add_station_force(ctx, body_forces, int(params[4]), _ZERO, f)
    sj.add_station_force(ctx, body_forces, int(params[0]), _ZERO, sj.scale3(-1.0, f))


ball_wrong_forces = sj.constraint(_ball_forces_at_origins, mp=3, position_errors=_ball_perr,
                                  velocity_errors=_ball_verr, acceleration_errors=_ball_aerr,
                                  name="ball_wrong_forces")
