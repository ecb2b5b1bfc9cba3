"""Velocity Verlet with error control (Simbody's ``VerletIntegrator``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .integrator import Integrator

__all__ = ["VerletIntegrator"]


class VerletIntegrator(Integrator):
    """Second-order velocity Verlet with an embedded error estimate.

    One step of size h from (q0, u0, z0)::

        q1  = q0 + h qdot0 + h^2/2 qdotdot0
        u1* = u0 + h udot0,  z1* = z0 + h zdot0           (predictor)
        u1  = u0 + h/2 (udot0 + udot(q1, u1*))            (trapezoid corrector; same for z)

    The error estimate (all terms O(h^3)): for q, q1 minus the trapezoid rule on qdot; for u and z,
    the corrector's change between the predicted and corrected end derivatives plus the trapezoid
    rule's own error ``h^3/12 |udot''|``, with ``udot''`` from the second difference of the
    accelerations at the previous, current and next step boundaries (on the first step of a
    continuous interval, where there is no previous one, the first-order bound ``h/2 |udot1 - udot0|``
    is used instead). Two realizations per step (predicted and corrected end). The System must compute qdotdot while
    realizing Acceleration (the multibody layer does; a custom Subsystem writes it with
    ``upd_qdotdot``), since q is advanced with it.
    """

    _method_name = "Verlet"
    _order = 2
    _error_order = 2
    _num_stages = 3  # K[0] start derivative, K[1] predicted end, K[2] corrected end

    def _allocate_method(self, ny: int) -> None:
        s = self._adv
        self._nq, self._nu = s.get_nq(), s.get_nu()
        self._qdd0 = np.zeros(self._nq)
        self._a_prev = np.zeros(ny - self._nq)
        self._hp = 0.0
        self._have_history = False

    def _compiled_spec(self) -> tuple:
        return "verlet", None, None, None, False, None

    def _setup_interval(self, stage) -> None:
        super()._setup_interval(stage)
        self._have_history = False

    def _save_start(self) -> None:
        t_old = self._t0
        self._a_prev[:] = self._f0[self._nq:]
        super()._save_start()
        self._qdd0[:] = self._adv.get_qdotdot()
        self._hp = self._t0 - t_old
        self._have_history = self._hp > 0

    def _attempt_step(self, t1: float) -> bool:
        t0, nq = self._t0, self._nq
        h = t1 - t0
        y0, f0, Kp, K1, err = self._y0, self._f0, self._K_rows[1], self._K_rows[2], self._err
        y = self._set_ty(t1)
        np.multiply(f0, h, out=y)  # q: h qdot0; u, z: Euler predictor increment
        y += y0
        q = y[:nq]
        q += (0.5 * h * h) * self._qdd0
        yd = self._realize_derivatives()
        if yd is None:
            return False
        Kp[:] = yd
        y = self._adv.upd_y()
        tail = y[nq:]
        np.add(f0[nq:], Kp[nq:], out=tail)
        tail *= 0.5 * h
        tail += y0[nq:]
        yd = self._realize_derivatives()
        if yd is None:
            return False
        K1[:] = yd
        # q error: q1 - (q0 + h/2 (qdot0 + qdot1)); u, z error: h/2 (ydot1 - ydot1*)
        eq = err[:nq]
        np.add(f0[:nq], K1[:nq], out=eq)
        eq *= -0.5 * h
        eq += y[:nq]
        eq -= y0[:nq]
        et = err[nq:]
        np.subtract(K1[nq:], Kp[nq:], out=et)
        np.abs(et, out=et)
        et *= 0.5 * h
        a0, a1 = f0[nq:], K1[nq:]
        if self._have_history:
            hp = self._hp
            a2 = ((a1 - a0) / h - (a0 - self._a_prev) / hp) * (2.0 / (h + hp))
            et += np.abs(a2) * (h ** 3 / 12.0)
        else:
            et += np.abs(a1 - a0) * (0.5 * h)
        return True

    def _continuation_extra(self) -> dict[str, Any]:
        # the previous step and its start accelerations: the error estimate's second difference uses them
        return {"hp": float(self._hp), "a_prev": np.array(self._a_prev), "have_history": bool(self._have_history)}

    def _set_continuation_extra(self, c: dict[str, Any]) -> None:
        a_prev = np.asarray(c.get("a_prev", ()), dtype=np.float64)
        if a_prev.shape != self._a_prev.shape:
            raise ValueError(f"VerletIntegrator.set_continuation: a_prev has shape {a_prev.shape}, this State needs "
                             f"{self._a_prev.shape}")
        self._a_prev[:] = a_prev  # in place: the compiled loop holds this array
        self._hp = float(c["hp"])
        self._have_history = bool(c["have_history"])
