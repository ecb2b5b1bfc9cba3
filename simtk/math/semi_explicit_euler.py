"""Semi-explicit (symplectic) Euler, fixed step and variable step (Simbody's ``SemiExplicitEuler*``)."""
from __future__ import annotations

import numpy as np

from .integrator import Integrator, IntegratorError

__all__ = ["SemiExplicitEulerIntegrator", "SemiExplicitEuler2Integrator"]


class _SemiExplicitEulerStep(Integrator):
    """u and z first with their start derivatives, then q with qdot evaluated at the new u::

        u1 = u0 + h udot(q0, u0),  z1 = z0 + h zdot0
        q1 = q0 + h qdot(q0, u1)          (a Velocity-stage realization at (q0, u1))

    For q' = u this is symplectic Euler: it conserves a modified energy of a Hamiltonian system.
    """

    _order = 1
    _error_order = 1
    _num_stages = 2

    def _allocate_method(self, ny: int) -> None:
        self._nq = self._adv.get_nq()

    def _compiled_spec(self) -> tuple:
        return "semi_explicit", None, None, None, False, None

    def _semi_explicit(self, t1: float, du: np.ndarray | None = None) -> float:
        # du: u1 - u0 of a method that solves for it (SemiImplicitEuler's), instead of h udot0
        t0, nq = self._t0, self._nq
        h = t1 - t0
        y0, f0 = self._y0, self._f0
        y = self._set_ty(t1)
        nu = 0 if du is None else len(du)
        if nu:
            np.add(y0[nq:nq + nu], du, out=y[nq:nq + nu])  # (the compiled loop's y0[i] + du[i])
        tail = y[nq + nu:]
        np.multiply(f0[nq + nu:], h, out=tail)
        tail += y0[nq + nu:]
        y[:nq] = y0[:nq]
        qdot = self._realize_velocity()
        y = self._adv.upd_y()
        q = y[:nq]
        np.multiply(qdot, h, out=q)
        q += y0[:nq]
        return h


class SemiExplicitEulerIntegrator(_SemiExplicitEulerStep):
    """Fixed-step semi-explicit Euler, first order and symplectic; no error control.

    Parameters
    ----------
    system : System
    step : float
        The step size (steps are shortened only to land on report, event and final times).
    """

    _method_name = "SemiExplicitEuler"
    _has_error_control = False

    def __init__(self, system, step: float):
        super().__init__(system)
        self.set_fixed_step_size(step)

    def set_fixed_step_size(self, h: float) -> None:
        if h is None:
            raise IntegratorError(f"{type(self).__name__} has no error control: it needs a fixed step size")
        super().set_fixed_step_size(h)

    def _attempt_step(self, t1: float) -> bool:
        self._semi_explicit(t1)
        return True


class SemiExplicitEuler2Integrator(_SemiExplicitEulerStep):
    """Variable-step semi-explicit Euler; the error estimate compares it with the trapezoid rule.

    The estimate uses the derivative at the step's end (which the next step starts from anyway):
    ``e_q = q1 - q0 - h/2 (qdot0 + qdot1)``, ``e_u = h/2 (udot1 - udot0)`` (same for z), both O(h^2).
    One Velocity and one Acceleration realization per step.
    """

    _method_name = "SemiExplicitEuler2"
    _has_error_control = True

    def _attempt_step(self, t1: float) -> bool:
        h = self._semi_explicit(t1)
        yd = self._realize_derivatives()
        if yd is None:
            return False
        nq, err, f0, y0 = self._nq, self._err, self._f0, self._y0
        np.subtract(yd, f0, out=err)
        err *= 0.5 * h
        eq = err[:nq]
        np.add(f0[:nq], yd[:nq], out=eq)
        eq *= -0.5 * h
        eq += self._adv.get_y()[:nq]
        eq -= y0[:nq]
        return True
