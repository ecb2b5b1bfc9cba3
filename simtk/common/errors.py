"""Exceptions raised by the staged framework."""
from __future__ import annotations

from .stage import STAGE_NAMES

__all__ = [
    "StageError",
    "StageTooLowError",
    "StageOutOfRangeError",
    "CacheEntryOutOfDateError",
    "TopologyVersionError",
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
