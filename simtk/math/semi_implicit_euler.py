"""Semi-implicit Euler: stiff contact, joint damping and friction at the step sizes robots run at.

A fixed-step method of MuJoCo's "implicitfast" family, with compliant contact in the matrix. With
Q the built-in force elements' generalized forces, D = -dQ/du and K = -(dQ/dq) N their dissipation
and restoring stiffness at the step's start (analytic, from the compiled kernels:
core/implicit_step.pxi), and udot0 the explicit acceleration there (every force, Python parts
included)::

    (M + h D + h^2 K) du = h M udot0 - h^2 K u0,    u1 = u0 + du,    q1 = q0 + h N(q0) u1

It is implicit Euler on the linearized forces, so a contact, a damper or a friction law whose
stiffness or damping would need steps of microseconds explicitly is stable at milliseconds; its
error is first order in h (the forces themselves are evaluated exactly; only their change over
the step is linearized). Linearized: contact (Force.HuntCrossley, with MJCF and URDF geoms),
mobility springs, dampers, stops, CoordinateLimitForce, GlobalDamper, MobilityCoulombFriction.
Other elements' forces (springs between points, muscles, Force.Custom, a controller's held
torques) are explicit, as in semi-explicit Euler, which this method equals when nothing is
linearized.
"""
from __future__ import annotations

import numpy as np

from ..common.stage import INSTANCE
from .integrator import IntegratorError
from .semi_explicit_euler import SemiExplicitEulerIntegrator

__all__ = ["SemiImplicitEulerIntegrator"]


class SemiImplicitEulerIntegrator(SemiExplicitEulerIntegrator):
    """Fixed-step semi-implicit Euler (first order; stable for stiff contact and damping); no error control.

    Parameters
    ----------
    system : MultibodySystem
        A System of built-in mobilizers, without constraint equations (quaternions are fine).
    step : float
        The step size (steps are shortened only to land on report, event and final times).

    Notes
    -----
    The compiled time loop and the Python path take the same steps (the same compiled solve).
    ``describe_fast_path()`` says which one runs.
    """

    _method_name = "SemiImplicitEuler"

    def _compiled_spec(self) -> tuple:
        return "semi_implicit", None, None, None, False, None

    def _allocate_method(self, ny: int) -> None:
        super()._allocate_method(ny)
        self._nu = self._adv.get_nu()
        self._du = np.zeros(self._nu)
        self._lin = None
        self._lin_epoch = None

    def __getstate__(self) -> dict:
        # the compiled solve holds raw pointers: built again at the next step, as the compiled loop is
        state = super().__getstate__()
        state["_lin"], state["_lin_epoch"] = None, None
        return state

    def _linearizer(self):
        """The compiled solve for the advanced State's instance (built again when the instance changes)."""
        s = self._adv
        epoch = s._inval_epoch[INSTANCE]
        if self._lin is None or self._lin_epoch != epoch:
            lin, why = self._system._implicit_linearizer(s)
            if lin is None:
                raise IntegratorError(f"SemiImplicitEulerIntegrator: {why}")
            self._lin, self._lin_epoch = lin, epoch
        return self._lin

    def _attempt_step(self, t1: float) -> bool:
        nq, nu = self._nq, self._nu
        h = t1 - self._t0
        y0, f0, du = self._y0, self._f0, self._du
        if not self._linearizer().solve(y0[:nq], y0[nq:nq + nu], f0[nq:nq + nu], h, du):
            raise IntegratorError(f"SemiImplicitEulerIntegrator: the step's matrix M + h D + h^2 K is singular or "
                                  f"not finite at t = {self._t0!r} (h = {h!r})")
        self._semi_explicit(t1, du)
        return True
