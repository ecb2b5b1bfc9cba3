"""Small custom Subsystems with closed-form solutions, shared by the numerics tests."""
from __future__ import annotations

import math

import numpy as np

from simtk import Stage, Subsystem, System


class Oscillator(Subsystem):
    """q'' = -omega^2 q as q' = u, u' = -omega^2 q; exact q = A cos(omega t + phi)."""

    def __init__(self, system, omega=1.0, q0=1.0, u0=0.0):
        self.omega, self.q0, self.u0 = omega, q0, u0
        super().__init__(system, "oscillator")

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [self.q0])
        self.allocate_u(state, [self.u0])

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[:] = self.get_u(state)

    def realize_subsystem_acceleration_impl(self, state):
        a = -self.omega ** 2 * self.get_q(state)[0]
        self.upd_udot(state)[0] = a
        self.upd_qdotdot(state)[0] = a

    def exact(self, t, q0=None, u0=None, t0=0.0):
        """(q, u) at t from (q0, u0) at t0."""
        q0 = self.q0 if q0 is None else q0
        u0 = self.u0 if u0 is None else u0
        w, s = self.omega, t - t0
        c, sn = math.cos(w * s), math.sin(w * s)
        return q0 * c + u0 / w * sn, -q0 * w * sn + u0 * c


def oscillator_system(omega=1.0, q0=1.0, u0=0.0):
    system = System("oscillator")
    osc = Oscillator(system, omega, q0, u0)
    return system, osc


class StiffLinear(Subsystem):
    """z' = A z with A = [[-lam, 0], [0, -1]] in z... written as z0' = -lam (z0 - cos t) - sin t, z1' = -z1.

    Exact: z0 = cos t + (z0(0) - 1) e^{-lam t}, z1 = z1(0) e^{-t}. Stiff for large lam.
    """

    def __init__(self, system, lam=1e4, z0=(2.0, 1.0)):
        self.lam, self.z0 = lam, z0
        super().__init__(system, "stiff")

    def realize_subsystem_topology_impl(self, state):
        self.allocate_z(state, list(self.z0))

    def realize_subsystem_acceleration_impl(self, state):
        t = state.get_time()
        z = self.get_z(state)
        zd = self.upd_zdot(state)
        zd[0] = -self.lam * (z[0] - math.cos(t)) - math.sin(t)
        zd[1] = -z[1]

    def exact(self, t):
        return np.array([math.cos(t) + (self.z0[0] - 1) * math.exp(-self.lam * t), self.z0[1] * math.exp(-t)])


class FallingPoint(Subsystem):
    """A point at height q with speed u falling under gravity g (u' = -g)."""

    def __init__(self, system, height=1.0, g=9.81):
        self.height, self.g = height, g
        super().__init__(system, "ball")

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [self.height])
        self.allocate_u(state, [0.0])

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[:] = self.get_u(state)

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[0] = -self.g
        self.upd_qdotdot(state)[0] = -self.g


def bounce_times(h, g, e, n):
    """The first n impact times of a point dropped from rest at height h with restitution e."""
    t1 = math.sqrt(2 * h / g)
    v = g * t1
    times = [t1]
    for k in range(1, n):
        times.append(times[-1] + 2 * (e ** k) * v / g)
    return times


class DiscreteGain(Subsystem):
    """z' = k with k a discrete variable (invalidates Dynamics)."""

    def __init__(self, system, k=1.0):
        self.k0 = k
        super().__init__(system, "gain")

    def realize_subsystem_topology_impl(self, state):
        self.allocate_z(state, [0.0])
        self.k_index = self.allocate_discrete_variable(state, Stage.Dynamics, self.k0)

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_zdot(state)[0] = self.get_discrete_variable(state, self.k_index)
