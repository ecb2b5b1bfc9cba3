"""The errors an integrator raises; its State is left at the last good step."""
from __future__ import annotations

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
    The message names the variable that grew most and how fast."""


class SimulationOverError(IntegratorError):
    """``step_to`` was called after the simulation ended (final time or termination request)."""
