"""The staged framework (SimTKcommon in Simbody): stages, State, System, Subsystem."""
from .component import Component, ComponentNotFoundError
from .errors import (
    CacheEntryOutOfDateError,
    ConstraintViolationError,
    NonFiniteForceError,
    SingularArticulatedInertiaError,
    StageError,
    StageOutOfRangeError,
    StageTooLowError,
    StepAdjustment,
    TopologyVersionError,
)
from .events import (
    EventTriggerInfo,
    PeriodicEventHandler,
    PeriodicEventReporter,
    ReporterChangedStateError,
    ScheduledEventHandler,
    ScheduledEventReporter,
    TriggeredEventHandler,
    TriggeredEventReporter,
)
from .function import Function
from .output import Output, output
from .property import Property
from .stage import Stage
from .state import State
from .subsystem import Subsystem
from .system import System

__all__ = [
    "Component",
    "ComponentNotFoundError",
    "Property",
    "Output",
    "output",
    "EventTriggerInfo",
    "TriggeredEventHandler",
    "ScheduledEventHandler",
    "PeriodicEventHandler",
    "TriggeredEventReporter",
    "ScheduledEventReporter",
    "PeriodicEventReporter",
    "ReporterChangedStateError",
    "Function",
    "Stage",
    "State",
    "System",
    "Subsystem",
    "StageError",
    "NonFiniteForceError",
    "SingularArticulatedInertiaError",
    "ConstraintViolationError",
    "StepAdjustment",
    "StageTooLowError",
    "StageOutOfRangeError",
    "CacheEntryOutOfDateError",
    "TopologyVersionError",
]
