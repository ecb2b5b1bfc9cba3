"""A Custom mobilizer whose HDot needs its qdot, shared by the tests of issue 28's velocity terms.

A pin about z whose body origin runs on a circle of radius ``L`` around the axis
(X_FM = (Rz(q), L (cos q, sin q, 0))), with qdot != u (u = 2 qdot), so
H u = (0, 0, u/2 | L/2 (-sin q, cos q, 0) u) and HDot u = L/2 (-cos q, -sin q, 0) qdot u.
Subclasses say where ``_qdot`` comes from (a faithful one reads ``get_qdot``; the tests' twins and
faults read it otherwise).
"""
from __future__ import annotations

import numpy as np

from simtk import MobilizedBody, Rotation, Transform

L = 0.7


class CirclePin(MobilizedBody.Custom.Implementation):
    """The circling pin; its HDot reads qdot from ``_qdot`` (``get_qdot`` unless overridden)."""

    def __init__(self, matter):
        super().__init__(matter, 1, 1, 1)

    def _qdot(self, state) -> float:
        return float(self.get_qdot(state)[0])

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"), [L * np.cos(q[0]), L * np.sin(q[0]), 0.0])

    def _h(self, state) -> np.ndarray:
        q = self.get_q(state)[0]
        return np.array([[0.0, 0.0, 0.5], [-0.5 * L * np.sin(q), 0.5 * L * np.cos(q), 0.0]])

    def _hdot(self, state) -> np.ndarray:
        q = self.get_q(state)[0]
        return np.array([[0.0, 0.0, 0.0], [-0.5 * L * np.cos(q), -0.5 * L * np.sin(q), 0.0]]) * self._qdot(state)

    def multiply_by_h_matrix(self, state, u):
        return self._h(state) * u[0]

    def multiply_by_h_transpose(self, state, F):
        return np.array([np.sum(self._h(state) * F)])

    def multiply_by_h_dot_matrix(self, state, u):
        return self._hdot(state) * u[0]

    def multiply_by_h_dot_transpose(self, state, F):
        return np.array([np.sum(self._hdot(state) * F)])

    def multiply_by_n_matrix(self, state, transpose, v):
        return 0.5 * np.asarray(v, dtype=float)

    def multiply_by_n_inv_matrix(self, state, transpose, v):
        return 2.0 * np.asarray(v, dtype=float)

    def multiply_by_n_dot_matrix(self, state, transpose, v):
        return np.zeros(1)
