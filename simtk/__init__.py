"""simtk: staged-realization multibody dynamics for Python, after Simbody.

Everything a user needs is importable from here: ``from simtk import MultibodySystem, Stage, ...``.
"""
from .common import (
    CacheEntryOutOfDateError,
    Function,
    Stage,
    StageError,
    StageOutOfRangeError,
    StageTooLowError,
    State,
    Subsystem,
    System,
    TopologyVersionError,
)
from .multibody import (
    Force,
    ForceSubsystem,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from .spatial import Body, Inertia, MassProperties, Rotation, Transform

__version__ = "0.1.0"

__all__ = [
    # staged framework
    "Stage", "State", "System", "Subsystem", "Function",
    "StageError", "StageTooLowError", "StageOutOfRangeError", "CacheEntryOutOfDateError", "TopologyVersionError",
    # spatial types
    "Rotation", "Transform", "Inertia", "MassProperties", "Body",
    # multibody
    "MultibodySystem", "SimbodyMatterSubsystem", "MobilizedBody", "GeneralForceSubsystem", "ForceSubsystem", "Force",
]
