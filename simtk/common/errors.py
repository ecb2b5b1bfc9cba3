"""Exceptions raised by the staged framework."""
from __future__ import annotations

from .stage import STAGE_NAMES

__all__ = [
    "StageError",
    "StageTooLowError",
    "StageOutOfRangeError",
    "CacheEntryOutOfDateError",
    "TopologyVersionError",
    "NonFiniteForceError",
    "SingularArticulatedInertiaError",
    "ConstraintViolationError",
    "StepAdjustment",
]


def _stage_name(stage) -> str:
    return STAGE_NAMES[int(stage)]


class StageError(RuntimeError):
    """Base of every error about stages, realization and State validity."""


class StageTooLowError(StageError):
    """The State (or one subsystem of it) is realized too low for what was asked.

    Parameters
    ----------
    where : str
        The operation and the element asked, e.g. ``"Subsystem 'forces' (#2): get_cache_entry(3)"``.
    needed, current : Stage
        The stage the operation needs and the stage the State is realized to.
    """

    def __init__(self, where: str, needed, current):
        self.where, self.needed, self.current = where, int(needed), int(current)
        super().__init__(
            f"{where} needs stage {_stage_name(needed)} but it is realized only to "
            f"{_stage_name(current)}"
        )


class StageOutOfRangeError(StageError):
    """An operation was attempted at a stage where it is not allowed (e.g. allocating at Position)."""


class CacheEntryOutOfDateError(StageError):
    """A cache entry was read between its earliest and latest stage without being marked realized."""


class TopologyVersionError(StageError):
    """A State was used after its System's topology changed (call ``realize_topology`` again)."""


class NonFiniteForceError(FloatingPointError):
    """A force element produced a NaN or infinite force from a finite State.

    ``element`` is the element (its repr names its kind, index and subsystem).
    """

    def __init__(self, message: str, element=None):
        super().__init__(message)
        self.element = element


class SingularArticulatedInertiaError(FloatingPointError):
    """Forward dynamics met an articulated inertia that is singular about one of a body's mobilities
    (a massless body, or a subtree with no inertia about that mobility's axis).

    ``body`` is the mobilized body and ``mobility`` the index of the mobility within it.
    """

    def __init__(self, message: str, body=None, mobility: int = -1):
        super().__init__(message)
        self.body, self.mobility = body, mobility


class ConstraintViolationError(RuntimeError):
    """The constraints cannot be satisfied: projection or assembly left an error above the tolerance.

    ``constraint`` is the element with the largest remaining error and ``error`` that error.
    """

    def __init__(self, message: str, constraint=None, error: float = float("nan")):
        super().__init__(message)
        self.constraint, self.error = constraint, error


class StepAdjustment(Exception):
    """A veto of the step being tried (ArtiSynth's step adjustment, seed 000 §2.5).

    Raise it from a force's, constraint's or controller's computation when the step in progress is too
    large (a penetration too deep, a filter that cannot follow): the integrator goes back to the start of
    the step and retries with the step scaled by ``scaling`` (0 < scaling < 1; 0 means "no advice", taken
    as 1/2), counts the retry and remembers ``reason``; below the minimum step it stops with an error
    that gives the reason.
    """

    def __init__(self, scaling: float = 0.5, reason: str = ""):
        scaling = float(scaling)
        if not 0.0 <= scaling < 1.0:
            raise ValueError(f"StepAdjustment: scaling must be in [0, 1), got {scaling!r}")
        super().__init__(reason or f"step scaled by {scaling}")
        self.scaling = scaling if scaling > 0.0 else 0.5
        self.reason = reason
