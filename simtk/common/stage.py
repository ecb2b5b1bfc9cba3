"""The computation stages through which a State is realized."""
from __future__ import annotations

from enum import IntEnum

__all__ = ["Stage"]


class Stage(IntEnum):
    """The ordered computation stages of a State (Simbody's ``Stage``).

    A state variable belongs to a stage (t to Time, q to Position, u to Velocity,
    z to Dynamics, a discrete variable to the stage it names). Changing it drops the
    State back to the stage just before, discarding everything computed from it.
    """

    Empty = 0
    Topology = 1
    Model = 2
    Instance = 3
    Time = 4
    Position = 5
    Velocity = 6
    Dynamics = 7
    Acceleration = 8
    Report = 9
    Infinity = 10

    def __str__(self) -> str:
        return self.name

    def next(self) -> "Stage":
        """The stage after this one; there is none after ``Infinity``."""
        if self is Stage.Infinity:
            raise ValueError("Stage.Infinity has no next stage")
        return Stage(self + 1)

    def prev(self) -> "Stage":
        """The stage before this one; there is none before ``Empty``."""
        if self is Stage.Empty:
            raise ValueError("Stage.Empty has no previous stage")
        return Stage(self - 1)


# Plain-int aliases for hot paths: IntEnum comparisons cost an attribute lookup each.
EMPTY, TOPOLOGY, MODEL, INSTANCE, TIME, POSITION, VELOCITY, DYNAMICS, ACCELERATION, REPORT, INFINITY = range(11)
STAGE_NAMES = tuple(s.name for s in Stage)
