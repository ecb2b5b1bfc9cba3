"""The staged framework (SimTKcommon in Simbody): stages, State, System, Subsystem."""
from .errors import (
    CacheEntryOutOfDateError,
    StageError,
    StageOutOfRangeError,
    StageTooLowError,
    TopologyVersionError,
)
from .function import Function
from .stage import Stage
from .state import State
from .subsystem import Subsystem
from .system import System

__all__ = [
    "Function",
    "Stage",
    "State",
    "System",
    "Subsystem",
    "StageError",
    "StageTooLowError",
    "StageOutOfRangeError",
    "CacheEntryOutOfDateError",
    "TopologyVersionError",
]
