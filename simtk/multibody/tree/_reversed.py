"""Reversed built-in mobilizers (``direction=MobilizedBody.Reverse``), as Simbody defines them.

A reversed mobilizer uses the built-in joint function with the roles of F and M exchanged: with
X_MF(q) the forward joint's transform, H_MF its mobility columns and u its speeds unchanged,

    X_FM = ~X_MF(q)
    H_FM_w = -R_FM H_MF_w,   H_FM_v = -p_FM x H_FM_w - R_FM H_MF_v          (Simbody theory manual)
    HDot_FM u: w = -R_FM HDot_MF_w u
               v = -v_FM x w_FM - p_FM x w - w_FM x (R_FM v_MF) - R_FM HDot_MF_v u

(w_FM, v_FM) = H_FM u and v_MF = H_MF_v u; qdot = N u and qdotdot are the forward joint's.

The compiled kernels know only forward joints, so a reversed body is handled as a Custom body
whose rows Python writes: the forward joint's quantities come from a private one-joint kernel
workspace per State (unit mass, so that its qdotdot can be had for any udot through inverse then
forward dynamics). A reversed quaternion joint is not normalized by projection (its transform
normalizes the quaternion, so the motion is unaffected).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _core
from ...common.stage import Stage
from ...spatial import Transform

if TYPE_CHECKING:
    from ...common.state import State
    from .mobilized_body import MobilizedBody

__all__ = ["Reversal"]

_WELD = _core.JOINT_TYPES["Weld"][0]


def _cross(a, b) -> np.ndarray:
    a0, a1, a2 = a
    b0, b1, b2 = b
    return np.array((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0))


class _OneJoint:
    """A one-joint kernel workspace for the forward joint, in a State's cache."""

    def __init__(self, code: int, params: np.ndarray, ws=None):
        self.code = code
        self.params = params
        if ws is None:
            eye = np.tile(np.eye(3), (2, 1, 1))
            ws = _core.make_tree_kernels([0, 0], [_WELD, code], R_PF=eye, p_PF=np.zeros((2, 3)), R_BM=eye,
                                         p_BM=np.zeros((2, 3)), mass=np.array([0.0, 1.0]), p_BC=np.zeros((2, 3)),
                                         I_B=eye, jparam=np.stack([np.zeros(3), params]))
        self.ws = ws
        self.zero_u = np.zeros(ws.nu)
        self.zero_F = np.zeros((2, 2, 3))
        self.f = np.zeros(ws.nu)
        self.R_FM = np.eye(3)  # the reversed transform of the last Position realization
        self.p_FM = np.zeros(3)

    def __deepcopy__(self, memo):
        new = _OneJoint(self.code, self.params, self.ws.copy())
        new.R_FM, new.p_FM = self.R_FM.copy(), self.p_FM.copy()
        return new


class Reversal:
    """The reversed-direction kinematics of one built-in mobilized body (see the module docstring)."""

    def __init__(self, mobod: "MobilizedBody"):
        cls = type(mobod)
        self.mobod = mobod
        self.forward = cls._joint
        self.forward_euler = cls._euler_joint
        for joint in (self.forward, self.forward_euler):
            if joint is not None and joint not in _core.JOINT_TYPES:
                raise NotImplementedError(f"MobilizedBody.{cls.__name__}: the {joint} mobilizer is not implemented yet")
        self.scratch_index = -1

    # ------------------------------------------------------------------ layout
    def _joint(self, state: "State") -> str:
        matter = self.mobod._matter
        euler = bool(matter.get_discrete_variable(state, matter._euler_index))
        return self.forward_euler if (euler and self.forward_euler) else self.forward

    def sizes(self, state: "State") -> tuple[int, int]:
        _, nq, nu, _ = _core.JOINT_TYPES[self._joint(state)]
        return nq, nu

    def uses_quaternion(self, state: "State") -> bool:
        return bool(_core.JOINT_TYPES[self._joint(state)][3])

    def default_q(self, state: "State") -> np.ndarray:
        _, nq, _, quaternion = _core.JOINT_TYPES[self._joint(state)]
        q = np.zeros(nq)
        if quaternion:
            q[0] = 1.0
        return q

    def instance(self, state: "State") -> None:
        code = _core.JOINT_TYPES[self._joint(state)][0]
        self.scratch_index = self.mobod._matter.allocate_lazy_cache_entry(
            state, Stage.Position, _OneJoint(code, np.asarray(self.mobod._params, dtype=np.float64)))

    def _one(self, state: "State") -> _OneJoint:
        return state._subs[self.mobod._matter._index].cache[self.scratch_index].value

    # ------------------------------------------------------------------ per stage
    def position(self, state: "State", ws) -> None:
        i = self.mobod._index
        one = self._one(state)
        q0, q1 = int(ws.qoff[i]), int(ws.qoff[i + 1])
        u0, u1 = int(ws.uoff[i]), int(ws.uoff[i + 1])
        m = self.mobod._matter
        one.ws.realize_position(np.ascontiguousarray(state._subs[m._index].q[q0:q1]))
        ws.qerr[i] = one.ws.qerr[1]  # the quaternion's |q| - 1 (0 for joints without one), for projection
        R_MF, p_MF = one.ws.R_FM[1], one.ws.p_FM[1]
        R = R_MF.T.copy()
        p = -(R @ p_MF)
        one.R_FM, one.p_FM = R, p
        ws.R_FM[i] = R
        ws.p_FM[i] = p
        if u1 > u0:
            H_MF = one.ws.H_FM  # (nu, 2, 3)
            Hw = -(H_MF[:, 0] @ R.T)  # rows: -R h_w
            Hv = -np.cross(p, Hw) - H_MF[:, 1] @ R.T
            ws.H_FM[u0:u1, 0] = Hw
            ws.H_FM[u0:u1, 1] = Hv

    def velocity(self, state: "State", ws) -> None:
        i = self.mobod._index
        one = self._one(state)
        q0, q1 = int(ws.qoff[i]), int(ws.qoff[i + 1])
        u0, u1 = int(ws.uoff[i]), int(ws.uoff[i + 1])
        m = self.mobod._matter
        u = np.ascontiguousarray(state._subs[m._index].u[u0:u1])
        one.ws.realize_velocity(u)
        ws.qdot[q0:q1] = one.ws.qdot
        if u1 == u0:
            ws.HDotu_FM[i] = 0.0
            return
        R, p = one.R_FM, one.p_FM
        H = ws.H_FM[u0:u1]
        w_FM = u @ H[:, 0]
        v_FM = u @ H[:, 1]
        HD_MF = one.ws.HDotu_FM[1]
        v_MF = one.ws.V_FM[1, 1]
        w = -(R @ HD_MF[0])
        v = -_cross(v_FM, w_FM) - _cross(p, w) - _cross(w_FM, R @ v_MF) - R @ HD_MF[1]
        ws.HDotu_FM[i, 0] = w
        ws.HDotu_FM[i, 1] = v

    def acceleration(self, state: "State", ws) -> None:
        i = self.mobod._index
        one = self._one(state)
        q0, q1 = int(ws.qoff[i]), int(ws.qoff[i + 1])
        u0, u1 = int(ws.uoff[i]), int(ws.uoff[i + 1])
        if u1 == u0:
            return
        # The forward joint's qdotdot for this udot: forces that produce exactly this udot on the
        # one-joint workspace (inverse dynamics), then its forward dynamics.
        udot = np.ascontiguousarray(ws.udot[u0:u1])
        one.ws.inverse_dynamics(udot, one.zero_u, one.zero_F, one.f)
        one.ws.forward_dynamics(one.f, one.zero_F)
        ws.qdotdot[q0:q1] = one.ws.qdotdot

    def n_rows(self, state: "State", transpose: bool, x: np.ndarray, out: np.ndarray, inverse: bool) -> None:
        """This body's rows of N x, N^T x, N^-1 x or N^-T x (full-length x and out; Position)."""
        layout = state._subs[self.mobod._matter._index].cache[self.mobod._matter._layout_index].value
        i = self.mobod._index
        q = slice(int(layout.qoff[i]), int(layout.qoff[i + 1]))
        u = slice(int(layout.uoff[i]), int(layout.uoff[i + 1]))
        from_q = inverse != bool(transpose)  # N maps u-space to q-space; N^-1 the other way
        src, dst = (q, u) if from_q else (u, q)
        ws = self._one(state).ws
        res = np.zeros(dst.stop - dst.start)
        fn = ws.multiply_by_n_inv if inverse else ws.multiply_by_n
        fn(bool(transpose), np.ascontiguousarray(x[src], dtype=np.float64), res)
        out[dst] = res

    def fit_q(self, state: "State", X_FM: Transform) -> np.ndarray:
        from ._fitting import fit_q

        q0, n = self.mobod._matter._q_range(state, self.mobod._index)
        code = _core.JOINT_TYPES[self._joint(state)][0]
        return fit_q(code, ~X_FM, self.mobod._matter.get_q(state)[q0:q0 + n], self.mobod._params)
