"""Linearly implicit Euler with one Richardson extrapolation: variable steps under error control.

Deuflhard's LIMEX idea at its lowest order (the extrapolation tableau's T22, harmonic step sequence
1, 2): from the saved start ``(t0, y0)`` a step of size h is taken once, ``y_h``, and again as two
steps of h/2, ``y_h2``, each step being ``ImplicitEulerIntegrator``'s (one linear solve with the
elements' K and D and the rigid tree's M). The linearly implicit Euler step has an asymptotic error
expansion in powers of h whatever matrix it linearizes with (a W-method: here K is refreshed at the
midpoint and the compressed springs' negative transverse stiffness is left out), so::

    y1  = 2 y_h2 - y_h          second order, propagated (local extrapolation)
    err = y_h2 - y_h  (= y1 - y_h2)

Both candidate estimates the extrapolation offers are the same vector: the difference of the
extrapolated and the h/2 solution equals the difference of the two Euler solutions. It is the local
error of the lower member ``y_h2`` (the h^2 terms of ``y_h`` and ``y_h2`` are C h^2 and C h^2 / 2),
so it is O(h^2): the controller sees it with ``_error_order = 1`` (exponent 1/2), exactly as it sees
RungeKutta2's Heun-minus-Euler estimate, and ``set_accuracy`` bounds the weighted local error of the
first-order member of the pair while the second-order one is propagated (as Fehlberg propagates
its fifth-order member). The step-size rule, the weighted norm, events and report times are the
Integrator base class's.

Stability: on y' = lambda y the step's amplification is R(z) = 2 / (1 - z/2)^2 - 1 / (1 - z),
z = h lambda; |R| <= 1 on the whole left half plane (A-stable) and R -> 0 as z -> -inf, so stiff
damped modes are removed at steps far above the explicit limit, while undamped fast oscillations
are followed only where the accuracy asks for them (they are part of the solution).

Limits. The estimate measures a first-order member, so steps shrink as accuracy^(1/2): on scenes
whose elements are not stiff, an explicit method of higher order takes fewer steps at tight
accuracy. And the step is linearized: a stiff element that turns fast (a spinning stiff spring)
leaves each step a length error of the order of its curvature term, r (omega h)^2 / 2, which the
next solve removes with a velocity along the stiff direction of order r omega^2 h, an O(h) error
that the true solution does not have; the estimate reports it honestly, so at tight accuracy such
a scene is stepped at O(accuracy / (r omega^2)) (measured: a dumbbell of 1e6 N/m spinning at
10 rad/s needs 2e-5 s steps at 1e-5, 7e-4 s at 1e-3).

With ``rows=3`` the sequence goes on to three steps of h/3 (T31) and the tableau to T33; T32 (second
order, A-stable) is propagated and T33 - T32, O(h^3), is its own error estimate: steps shrink as
accuracy^(1/3), the accuracy bounds the propagated solution's local error, at six solves a step.

With ``rows=2``, a step costs three linear solves (one of h, two of h/2) and two extra realizations to Acceleration
(the start again after the h step, and the midpoint), beside the three Velocity realizations of the
Euler steps' qdot.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..common.stage import ACCELERATION
from ..math.integrator import Integrator, IntegratorError
from .implicit_euler import ImplicitEulerIntegrator

__all__ = ["ImplicitExtrapolationIntegrator"]


def _default_cg_tolerance(accuracy: float) -> float:
    # The solves' error enters y through du = O(h udot) relative to cg_tolerance; a thousandth of the
    # accuracy keeps it out of the error estimate, and the bounds keep CG short at coarse accuracy
    # and above the round-off floor of its recursive residual at fine accuracy.
    return min(1e-6, max(1e-12, 1e-3 * accuracy))


class ImplicitExtrapolationIntegrator(ImplicitEulerIntegrator):
    """Variable-step linearly implicit Euler extrapolation (error-controlled, for stiff elements).

    For Systems of rigid and deformable bodies with stiff elements: the step size is chosen by the
    Integrator's error control so that the weighted local error estimate meets ``set_accuracy``,
    as for the explicit integrators, while stiff damped element modes do not limit it.

    Parameters
    ----------
    system : MultibodySystem
        A System with deformable bodies (and rigid bodies, without constraints).
    accuracy : float
        The target weighted RMS local error per step (``set_accuracy``).
    cg_tolerance : float or None
        Relative residual at which each solve's conjugate gradients stop; None: a thousandth of the
        accuracy, within [1e-12, 1e-6] (taken when the integrator is initialized).
    cg_max_iterations : int
        A solve that does not converge within this many iterations raises.
    rows : int
        Rows of the extrapolation tableau (step sequence 1, 2, ..., rows). 2 (default): steps of h
        and 2 x h/2, T22 propagated (second order), estimate T22 - T21 of the first-order member.
        3: also 3 x h/3 (six solves a step), T32 propagated (second order) and T33 - T32 its own
        error estimate, O(h^3): steps shrink as accuracy^(1/3) instead of accuracy^(1/2), fewer at
        tight accuracy, and the accuracy bounds the propagated solution's local error itself.
        (T33 is not propagated: its stability function R has abs(R(iy)) > 1 for 0 < y < 0.83, so
        undamped oscillations resolved at moderate accuracy would gain energy step after step; T32's, like T22's, is at
        most 1 on the whole left half plane. T22's local extrapolation dissipates a damped swing's
        energy; T32 lets it drift up by its error: +15 % of it over 2 s at accuracy 1e-3, +0.07 % at
        1e-4, on a stiff string.)

    Notes
    -----
    ``set_fixed_step_size(h)`` turns error control off and takes extrapolated steps of size h
    (second order); ``set_fixed_step_size(None)`` turns it back on.
    """

    _method_name = "ImplicitExtrapolation"
    _has_error_control = True
    _order = 2
    _error_order = 1
    _num_stages = 1

    def __init__(self, system: Any, accuracy: float = 1e-3, cg_tolerance: float | None = None,
                 cg_max_iterations: int = 1000, rows: int = 2):
        if isinstance(rows, bool) or rows not in (2, 3):
            raise ValueError(f"ImplicitExtrapolationIntegrator: rows must be 2 or 3, got {rows!r}")
        super().__init__(system, 1.0, cg_tolerance=1e-10 if cg_tolerance is None else cg_tolerance,
                         cg_max_iterations=cg_max_iterations)
        self._cg_tol_asked = cg_tolerance
        # the extrapolation tableau T_jk of the harmonic sequence n_j = j: T_p,p-1 has the error
        # O(h**p) that the estimate T_pp - T_p,p-1 measures
        self._rows = int(rows)
        self._error_order = int(rows) - 1
        self.set_fixed_step_size(None)
        self.set_accuracy(accuracy)

    def set_fixed_step_size(self, h: float | None) -> None:
        """Take extrapolated steps of size ``h`` without error control; ``None``: variable steps (default)."""
        Integrator.set_fixed_step_size(self, h)  # type: ignore[arg-type]  # (None: variable steps, documented)

    def get_cg_tolerance_in_use(self) -> float:
        """The relative CG residual each solve stops at (see ``cg_tolerance``)."""
        if self._cg_tol_asked is not None:
            return float(self._cg_tol_asked)
        return _default_cg_tolerance(self._accuracy)

    # ------------------------------------------------------------------ layout (once per interval)
    def _allocate_method(self, ny: int) -> None:
        s = self._need_init("initialize()")
        if s.get_nq_err() + s.get_nu_err() + s.get_nudot_err() > 0:
            raise IntegratorError(f"{type(self).__name__}: the System {self._system.get_name()!r} has constraints, "
                                  f"which its linearly implicit step does not solve yet; use an explicit integrator")
        super()._allocate_method(ny)
        self._cg_tol = self.get_cg_tolerance_in_use()
        self._T = np.zeros((self._rows, ny))  # row j-1: T_j1 (j steps of h/j), then the tableau in place
        self._y_sub = np.zeros(ny)  # a substep's end: the next one's start
        self._f_sub = np.zeros(ny)

    # ------------------------------------------------------------------ the step
    def _save_start(self) -> None:
        super()._save_start()
        self._start_mark = self._need_init("step_to()").get_invalidation_mark()

    def _restore_start(self) -> None:
        super()._restore_start()
        self._start_mark = self._need_init("step_to()").get_invalidation_mark()

    def _at_start(self) -> bool:
        """Whether the advanced State still holds the saved start, realized: every write of a
        variable moves its invalidation mark, so an unchanged mark is an unchanged State (a check
        that, unlike comparing y, allocates nothing)."""
        s = self._need_init("step_to()")
        return s.get_invalidation_mark() == self.__dict__.get("_start_mark") and s._stage >= ACCELERATION

    def _euler_from(self, t0: float, y0: np.ndarray, f0: np.ndarray, t1: float) -> bool:
        """One ImplicitEuler step from (t0, y0, f0), at which the advanced State is realized, to t1.

        The base step reads its start from the saved-start attributes; they are pointed at the
        given start for the call and always put back, so the Integrator's own start is untouched.
        """
        saved = self._t0, self._y0, self._f0
        self._t0, self._y0, self._f0 = t0, y0, f0
        try:
            return ImplicitEulerIntegrator._attempt_step(self, t1)
        finally:
            self._t0, self._y0, self._f0 = saved

    def _attempt_step(self, t1: float) -> bool:
        t0, y0, f0 = self._t0, self._y0, self._f0
        s = self._need_init("step_to()")
        h = t1 - t0
        T, p = self._T, self._rows
        for j in range(1, p + 1):
            # The operators (M, J, the elements' K and D) are taken from the advanced State, which the
            # previous sequence, a rejected attempt or an event probe leaves elsewhere.
            if j > 1 or not self._at_start():
                self._restore_start()
            ts, ys, fs = t0, y0, f0
            for i in range(1, j + 1):
                ti = t1 if i == j else t0 + h * i / j
                if not self._euler_from(ts, ys, fs, ti):
                    return False
                if i < j:
                    f = self._realize_derivatives()
                    if f is None:
                        return False
                    self._y_sub[:] = s.get_y()
                    self._f_sub[:] = f
                    ts, ys, fs = ti, self._y_sub, self._f_sub
            T[j - 1][:] = s.get_y()
        # Aitken-Neville for an error expansion in powers of h: T_jk = T_j,k-1 + (T_j,k-1 - T_j-1,k-1) /
        # (n_j / n_j-k+1 - 1), column by column, rows from the bottom so the previous column is read
        # before it is overwritten; the last increment, T_pp - T_p,p-1, is the error estimate.
        err = self._err
        for k in range(2, p + 1):
            for j in range(p, k - 1, -1):
                np.subtract(T[j - 1], T[j - 2], out=err)
                err *= 1.0 / (j / (j - k + 1) - 1.0)
                T[j - 1] += err
        y = self._set_ty(t1)  # (already t1: this hands out y writable and invalidates the stages)
        if p == 2:
            y[:] = T[1]  # T22: local extrapolation
        else:
            np.subtract(T[p - 1], err, out=y)  # T32, whose error the estimate is
        return True
