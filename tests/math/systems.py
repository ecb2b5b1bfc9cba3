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
