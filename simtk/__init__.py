"""simtk: staged-realization multibody dynamics for Python, after Simbody.

Everything a user needs is importable from here: ``from simtk import MultibodySystem, Stage, ...``.
"""
from ._core import OPENMP, get_num_threads, set_num_threads
from .common import (
    CacheEntryOutOfDateError,
    Component,
    ComponentNotFoundError,
    ConstraintViolationError,
    EventTriggerInfo,
    Function,
    NonFiniteForceError,
    Output,
    PeriodicEventHandler,
    PeriodicEventReporter,
    Property,
    ReporterChangedStateError,
    ScheduledEventHandler,
    ScheduledEventReporter,
    SingularArticulatedInertiaError,
    Stage,
    StageError,
    StageOutOfRangeError,
    StageTooLowError,
    State,
    StepAdjustment,
    Subsystem,
    System,
    TopologyVersionError,
    TriggeredEventHandler,
    TriggeredEventReporter,
    output,
)
from .math import (
    Assembler,
    ExplicitEulerIntegrator,
    Integrator,
    IntegratorError,
    Markers,
    NonFiniteDerivativeError,
    QValue,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    SemiExplicitEuler2Integrator,
    SemiExplicitEulerIntegrator,
    SemiImplicitEulerIntegrator,
    SimulationDivergedError,
    SimulationOverError,
    StepSizeTooSmallError,
    TimeStepper,
    VerletIntegrator,
)
from .multibody import (
    ConditionalPathPoint,
    Constraint,
    ContactGeometry,
    Force,
    ForceSubsystem,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    Motion,
    MovingPathPoint,
    MultibodySystem,
    PathPoint,
    PathWrap,
    SimbodyMatterSubsystem,
    WrapCylinder,
    WrapEllipsoid,
    WrapSphere,
    WrapTorus,
)
from .spatial import Body, Inertia, MassProperties, Rotation, Transform

__version__ = "0.1.0"

__all__ = [
    # staged framework
    "Stage", "State", "System", "Subsystem", "Function",
    # named components: paths, properties, outputs
    "Component", "ComponentNotFoundError", "Property", "Output", "output",
    "StageError", "StageTooLowError", "StageOutOfRangeError", "CacheEntryOutOfDateError", "TopologyVersionError",
    "NonFiniteForceError", "SingularArticulatedInertiaError", "ConstraintViolationError",
    "StepAdjustment",
    "EventTriggerInfo", "TriggeredEventHandler", "ScheduledEventHandler", "PeriodicEventHandler",
    "TriggeredEventReporter", "ScheduledEventReporter", "PeriodicEventReporter", "ReporterChangedStateError",
    # numerics
    "Integrator", "IntegratorError", "StepSizeTooSmallError", "NonFiniteDerivativeError", "SimulationOverError",
    "SimulationDivergedError",
    "ExplicitEulerIntegrator", "RungeKutta2Integrator", "RungeKutta3Integrator", "RungeKuttaMersonIntegrator",
    "RungeKuttaFeldbergIntegrator", "VerletIntegrator", "SemiExplicitEulerIntegrator",
    "SemiExplicitEuler2Integrator", "SemiImplicitEulerIntegrator", "ScipyIntegrator", "TimeStepper", "Assembler", "Markers", "QValue",
    # spatial types
    "Rotation", "Transform", "Inertia", "MassProperties", "Body",
    # multibody
    "MultibodySystem", "SimbodyMatterSubsystem", "MobilizedBody", "GeneralForceSubsystem", "ForceSubsystem", "Force",
    "GeometryPath", "PathPoint", "ConditionalPathPoint", "MovingPathPoint", "PathWrap", "WrapCylinder", "WrapSphere", "WrapEllipsoid",
    "WrapTorus", "Constraint", "Motion",
    # contact
    "ContactGeometry",
    # threads of the batched calls (SimbodyMatterSubsystem.calc_udot_batch, ...)
    "set_num_threads", "get_num_threads", "OPENMP",
]
