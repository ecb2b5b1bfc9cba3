"""Force kernels for the jit tests, and their Python twins (Force.Custom with the same math written
through the MobilizedBody API: another kinematics path than the kernels' R_GB, p_GB, V_GB).

Parameter layouts:
  spring_damper   (b1, s1x, s1y, s1z, b2, s2x, s2y, s2z, k, x0, c): along the line between the
                  stations, tension k (L - x0) + c dL/dt pulls them together; PE k/2 (L - x0)^2
  mobility        (q index, u index, k, q0, a, w): -k (q - q0) + a sin(w t) on the mobility; PE k/2 (q - q0)^2
  torque_damper   (b, tx, ty, tz, c): torque (tx, ty, tz) - c w_GB on body b
"""
from __future__ import annotations

import math

import numpy as np

import simtk.jit as sj
from simtk.multibody import Force


def _spring_damper_energy(ctx, params):
    p1 = sj.station_location(ctx, int(params[0]), params[1:4])
    p2 = sj.station_location(ctx, int(params[4]), params[5:8])
    x = sj.norm3(sj.sub3(p2, p1)) - params[9]
    return 0.5 * params[8] * x * x


@sj.force(potential_energy=_spring_damper_energy)
def spring_damper(ctx, params, body_forces, mobility_forces):
    b1, b2 = int(params[0]), int(params[4])
    s1, s2 = params[1:4], params[5:8]
    d = sj.sub3(sj.station_location(ctx, b2, s2), sj.station_location(ctx, b1, s1))
    L = sj.norm3(d)
    if L == 0.0:
        return
    e = sj.scale3(1.0 / L, d)
    Ldot = sj.dot3(sj.sub3(sj.station_velocity(ctx, b2, s2), sj.station_velocity(ctx, b1, s1)), e)
    tension = params[8] * (L - params[9]) + params[10] * Ldot
    f2 = sj.scale3(-tension, e)
    sj.add_station_force(ctx, body_forces, b2, s2, f2)
    sj.add_station_force(ctx, body_forces, b1, s1, sj.scale3(-1.0, f2))


def _mobility_energy(ctx, params):
    x = ctx.q[int(params[0])] - params[3]
    return 0.5 * params[2] * x * x


@sj.force(potential_energy=_mobility_energy)
def mobility(ctx, params, body_forces, mobility_forces):
    iq, iu = int(params[0]), int(params[1])
    sj.add_mobility_force(ctx, mobility_forces, iu,
                          -params[2] * (ctx.q[iq] - params[3]) + params[4] * math.sin(params[5] * ctx.t))


@sj.force
def torque_damper(ctx, params, body_forces, mobility_forces):
    b = int(params[0])
    w = ctx.V_GB[b, 0]
    sj.add_body_torque(ctx, body_forces, b, (params[1] - params[4] * w[0], params[2] - params[4] * w[1],
                                             params[3] - params[4] * w[2]))


# ----------------------------------------------------------------------------- the Python twins
class SpringDamperTwin(Force.Custom.Implementation):
    def __init__(self, matter, params):
        super().__init__()
        self.matter, self.p = matter, np.array(params, dtype=float)

    def _geometry(self, state):
        p = self.p
        B1, B2 = self.matter.get_mobilized_body(int(p[0])), self.matter.get_mobilized_body(int(p[4]))
        d = B2.find_station_location_in_ground(state, p[5:8]) - B1.find_station_location_in_ground(state, p[1:4])
        return B1, B2, d, float(np.linalg.norm(d))

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        p = self.p
        B1, B2, d, L = self._geometry(state)
        e = d / L
        Ldot = float(e @ (B2.find_station_velocity_in_ground(state, p[5:8])
                          - B1.find_station_velocity_in_ground(state, p[1:4])))
        f2 = -(p[8] * (L - p[9]) + p[10] * Ldot) * e
        for B, s, f in ((B2, p[5:8], f2), (B1, p[1:4], -f2)):
            r = B.find_station_location_in_ground(state, s) - B.get_body_origin_location(state)
            body_forces[B.get_mobilized_body_index()] += np.array([np.cross(r, f), f])

    def calc_potential_energy(self, state):
        return 0.5 * self.p[8] * (self._geometry(state)[3] - self.p[9]) ** 2


class MobilityTwin(Force.Custom.Implementation):
    def __init__(self, matter, params):
        super().__init__()
        self.matter, self.p = matter, np.array(params, dtype=float)

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        p = self.p
        q = self.matter.get_q(state)[int(p[0])]
        mobility_forces[int(p[1])] += -p[2] * (q - p[3]) + p[4] * math.sin(p[5] * state.get_time())

    def calc_potential_energy(self, state):
        return 0.5 * self.p[2] * (self.matter.get_q(state)[int(self.p[0])] - self.p[3]) ** 2


class TorqueDamperTwin(Force.Custom.Implementation):
    def __init__(self, matter, params):
        super().__init__()
        self.matter, self.p = matter, np.array(params, dtype=float)

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        B = self.matter.get_mobilized_body(int(self.p[0]))
        w = B.get_body_velocity(state)[0]
        body_forces[int(self.p[0]), 0] += self.p[1:4] - self.p[4] * w


KERNELS = {"spring_damper": (spring_damper, SpringDamperTwin), "mobility": (mobility, MobilityTwin),
           "torque_damper": (torque_damper, TorqueDamperTwin)}
