"""Explicit Runge-Kutta integrators with embedded error estimates (Simbody's RK family).

Each method is a Butcher tableau ``(c, A, b)`` plus error weights ``e`` such that the local error
estimate is ``h * sum_i e_i k_i``. Stage 0 is the derivative at the step's start, which the previous
step already computed, so a step costs one realization per further stage, plus one at the end
(FSAL methods get that one as their last stage).

=========================  =====  ===================================================  ============
class                      order  error estimate                                       realizations
=========================  =====  ===================================================  ============
ExplicitEulerIntegrator    1      Euler minus trapezoid, using f at the step's end    1 per step
RungeKutta2Integrator      2      Heun minus Euler                                     2 per step
RungeKutta3Integrator      3      Bogacki-Shampine 3(2), FSAL                          3 per step
RungeKuttaMersonIntegrator 4      Merson's: one fifth of the 4th minus 3rd order       5 per step
RungeKuttaFeldbergIntegrator 5    Fehlberg 4(5), the 5th-order solution propagated     6 per step
=========================  =====  ===================================================  ============
"""
from __future__ import annotations

from fractions import Fraction as F

import numpy as np

from .. import _core
from .integrator import Integrator

_rk_combine = _core.rk_combine

__all__ = [
    "ExplicitEulerIntegrator",
    "RungeKutta2Integrator",
    "RungeKutta3Integrator",
    "RungeKuttaMersonIntegrator",
    "RungeKuttaFeldbergIntegrator",
]


def _f(values) -> np.ndarray:
    return np.array([float(v) for v in values])


class _ExplicitRungeKutta(Integrator):
    """A table-driven explicit Runge-Kutta step.

    Class attributes: ``_c`` (s,), ``_A`` (list of rows, row i of length i), ``_b`` (s,), ``_e`` (s,),
    ``_fsal`` (the last stage is the derivative at ``y1``, so ``b[-1] == 0``).
    """

    _c = _f([0])
    _A: list = [_f([])]
    _b = _f([1])
    _e = _f([0])
    _fsal = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._num_stages = len(cls._b)
        # The tableau is checked once, at class creation: rows sum to c (consistency), b sums to 1,
        # and the error weights sum to 0 (the estimate vanishes for a constant derivative).
        for i, row in enumerate(cls._A):
            assert len(row) == i and abs(sum(row) - cls._c[i]) < 1e-14, (cls.__name__, i)
        assert abs(sum(cls._b) - 1) < 1e-14 and abs(sum(cls._e)) < 1e-14, cls.__name__

    def _allocate_method(self, ny: int) -> None:
        s = self._num_stages
        n_inner = s - 1 if self._fsal else s
        self._stage_plan = [(float(self._c[i]), np.ascontiguousarray(self._A[i])) for i in range(1, n_inner)]
        self._b_used = np.ascontiguousarray(self._b[:n_inner])

    def _compiled_spec(self) -> tuple:
        spec = type(self).__dict__.get("_spec")
        if spec is None:  # once per method: the table is a class constant
            s = self._num_stages
            A = np.zeros((s, s))
            for i, row in enumerate(self._A):
                A[i, :i] = row
            n_inner = s - 1 if self._fsal else s
            # c: the nodes, as the stages' times t0 + c h take them (the constraints' targets depend on t)
            c = np.array(self._c, dtype=np.float64)
            arrays = (A, np.ascontiguousarray(self._b[:n_inner]), np.ascontiguousarray(self._e), c)
            for a in arrays:
                a.flags.writeable = False
            spec = ("rk", *arrays[:3], self._fsal, c)
            type(self)._spec = spec
        return spec

    def _attempt_step(self, t1: float) -> bool:
        # y = y0 + h sum_k a_k K_k, summed from k = 0 up by the compiled core (as its time loop does;
        # a BLAS would sum in an order of its own)
        t0 = self._t0
        h = t1 - t0
        y0, K, K_rows = self._y0, self._K, self._K_rows
        i = 1
        for c, a in self._stage_plan:
            y = self._set_ty(t0 + c * h)
            _rk_combine(y, y0, h, a, K)
            yd = self._realize_derivatives()
            if yd is None:
                return False
            K_rows[i][:] = yd
            i += 1
        y = self._set_ty(t1)
        _rk_combine(y, y0, h, self._b_used, K)
        if self._fsal:
            yd = self._realize_derivatives()
            if yd is None:
                return False
            K_rows[-1][:] = yd
        _rk_combine(self._err, None, h, self._e, K)
        return True


class ExplicitEulerIntegrator(_ExplicitRungeKutta):
    """Forward Euler, first order; the error estimate is Euler minus the trapezoid rule.

    The derivative at the step's end, which the next step starts from anyway, gives the estimate,
    so each step costs one realization.
    """

    _method_name = "ExplicitEuler"
    _order = 1
    _error_order = 1
    _c = _f([0, 1])
    _A = [_f([]), _f([1])]
    _b = _f([1, 0])
    _e = _f([F(1, 2), F(-1, 2)])
    _fsal = True


class RungeKutta2Integrator(_ExplicitRungeKutta):
    """Heun's second-order method with embedded Euler for the error estimate."""

    _method_name = "RungeKutta2"
    _order = 2
    _error_order = 1
    _c = _f([0, 1])
    _A = [_f([]), _f([1])]
    _b = _f([F(1, 2), F(1, 2)])
    _e = _f([F(-1, 2), F(1, 2)])


class RungeKutta3Integrator(_ExplicitRungeKutta):
    """Bogacki-Shampine third-order method with an embedded second-order estimate (FSAL)."""

    _method_name = "RungeKutta3"
    _order = 3
    _error_order = 2
    _c = _f([0, F(1, 2), F(3, 4), 1])
    _A = [_f([]), _f([F(1, 2)]), _f([0, F(3, 4)]), _f([F(2, 9), F(1, 3), F(4, 9)])]
    _b = _f([F(2, 9), F(1, 3), F(4, 9), 0])
    _e = _f([F(2, 9) - F(7, 24), F(1, 3) - F(1, 4), F(4, 9) - F(1, 3), -F(1, 8)])
    _fsal = True


class RungeKuttaMersonIntegrator(_ExplicitRungeKutta):
    """Runge-Kutta-Merson: fourth order, five stages, Merson's error estimate.

    The estimate is one fifth of the difference between the fourth-order solution and the embedded
    third-order one, ``h/30 (-2 k1 + 9 k3 - 8 k4 + k5)``.
    """

    _method_name = "RungeKuttaMerson"
    _order = 4
    _error_order = 4  # Merson's estimate is built to behave as O(h^5)
    _c = _f([0, F(1, 3), F(1, 3), F(1, 2), 1])
    _A = [_f([]), _f([F(1, 3)]), _f([F(1, 6), F(1, 6)]), _f([F(1, 8), 0, F(3, 8)]),
          _f([F(1, 2), 0, F(-3, 2), 2])]
    _b = _f([F(1, 6), 0, 0, F(2, 3), F(1, 6)])
    _e = _f([F(-2, 30), 0, F(9, 30), F(-8, 30), F(1, 30)])


class RungeKuttaFeldbergIntegrator(_ExplicitRungeKutta):
    """Runge-Kutta-Fehlberg 4(5): six stages, the fifth-order solution is propagated and the
    difference from the embedded fourth-order one is the error estimate."""

    _method_name = "RungeKuttaFeldberg"
    _order = 5
    _error_order = 4
    _c = _f([0, F(1, 4), F(3, 8), F(12, 13), 1, F(1, 2)])
    _A = [
        _f([]),
        _f([F(1, 4)]),
        _f([F(3, 32), F(9, 32)]),
        _f([F(1932, 2197), F(-7200, 2197), F(7296, 2197)]),
        _f([F(439, 216), -8, F(3680, 513), F(-845, 4104)]),
        _f([F(-8, 27), 2, F(-3544, 2565), F(1859, 4104), F(-11, 40)]),
    ]
    _b = _f([F(16, 135), 0, F(6656, 12825), F(28561, 56430), F(-9, 50), F(2, 55)])
    _e = _f([F(16, 135) - F(25, 216), 0, F(6656, 12825) - F(1408, 2565), F(28561, 56430) - F(2197, 4104),
             F(-9, 50) + F(1, 5), F(2, 55)])
