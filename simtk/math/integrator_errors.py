"""The errors an integrator raises (its State is left at the last good step), and the diagnosis of a
diverged run."""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "IntegratorError",
    "StepSizeTooSmallError",
    "NonFiniteDerivativeError",
    "SimulationDivergedError",
    "SimulationOverError",
]


class IntegratorError(RuntimeError):
    """An integrator could not continue; its State is left at the last good step."""


class StepSizeTooSmallError(IntegratorError):
    """The step size needed to meet the accuracy fell below the minimum step size."""


class NonFiniteDerivativeError(IntegratorError):
    """The System produced a NaN or infinite derivative that a smaller step could not avoid."""


class SimulationDivergedError(NonFiniteDerivativeError):
    """The State grew without bound (by orders of magnitude since the start of the interval) until an
    evaluation failed: the step is too large for the system's fastest motion, or the model is unstable.
    The message names the variable that grew most and how fast (its index in y: ``variable_index``)."""

    #: The index in y of the variable named (None when not known).
    variable_index: int | None = None


class SimulationOverError(IntegratorError):
    """``step_to`` was called after the simulation ended (final time or termination request)."""


#: A variable that grew by more than this factor (in units of its weight) since the start of the
#: interval, when an evaluation fails, marks the failure as divergence rather than a singular model.
DIVERGENCE_GROWTH = 1e6


def diverged_error(integ, h: float, exc: BaseException) -> SimulationDivergedError | None:
    """`divergence_report` as the error to raise (its variable's index attached), or None."""
    found = _divergence(integ, h, exc)
    if found is None:
        return None
    diverged = SimulationDivergedError(found[0])
    diverged.variable_index = found[1]
    return diverged


def divergence_report(integ, h: float, exc: BaseException) -> str | None:
    """The message of a diverged simulation, or None when the State has not grown explosively.

    Growth of variable k is ``max(1, w_k |y_k|) / max(1, w_k |y_k(start)|)`` from the start of the
    continuous interval to the last good step (the same scaling as the error norm).
    """
    found = _divergence(integ, h, exc)
    return None if found is None else found[0]


def _divergence(integ, h: float, exc: BaseException) -> tuple[str, int] | None:
    t_start, y_start, n_start = integ._interval_start
    y, w = integ._y0, integ._wy
    with np.errstate(over="ignore", invalid="ignore"):
        growth = np.maximum(1.0, w * np.abs(y)) / np.maximum(1.0, w * np.abs(y_start))
    growth[~np.isfinite(growth)] = np.inf
    k = int(np.argmax(growth))
    if not growth[k] > DIVERGENCE_GROWTH:
        return None
    steps = max(integ._n_taken - n_start, 1)
    elapsed = integ._t0 - t_start
    rate = ""
    if math.isfinite(growth[k]) and elapsed > 0:
        rate = (f" (x{growth[k] ** (1.0 / steps):.3g} per step over {steps} steps, an e-folding time of "
                f"{elapsed / math.log(growth[k]):.3g})")
    what = integ._system._describe_y(integ._adv, k)
    advice = ("take a smaller step, or use an error-controlled integrator such as RungeKuttaMersonIntegrator"
              if not integ._has_error_control or integ._fixed_step is not None else
              "tighten the accuracy, or check the model for an instability (a negative stiffness, an energy "
              "source)")
    return (f"{integ._method_name}: the simulation diverged: {what} grew from {y_start[k]:.6g} at t = {t_start!r} "
            f"to {y[k]:.6g} at t = {integ._t0!r}{rate}, and then an evaluation failed with a step of {h!r}: "
            f"{advice}. The State is left at t = {integ._t0!r}. (The failure: {exc})", k)
