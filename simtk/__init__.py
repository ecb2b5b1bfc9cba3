"""simtk: staged-realization multibody dynamics for Python, after Simbody.

Everything a user needs is importable from here: ``from simtk import System, Stage, ...``.
"""
from .common import (
    CacheEntryOutOfDateError,
    Stage,
    StageError,
    StageOutOfRangeError,
    StageTooLowError,
    State,
    Subsystem,
    System,
    TopologyVersionError,
)

__version__ = "0.1.0"

__all__ = [
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
