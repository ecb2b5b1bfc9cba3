"""Numerics (SimTKmath in Simbody): integrators, the TimeStepper, and event handling in time."""
from .assembler import Assembler, AssemblyCondition, Markers, QValue
from .explicit import (
    ExplicitEulerIntegrator,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
)
from .integrator import (
    Integrator,
    IntegratorError,
    NonFiniteDerivativeError,
    SimulationDivergedError,
    SimulationOverError,
    StepSizeTooSmallError,
)
from .scipy_integrator import ScipyIntegrator
from .semi_explicit_euler import SemiExplicitEuler2Integrator, SemiExplicitEulerIntegrator
from .semi_implicit_euler import SemiImplicitEulerIntegrator
from .time_stepper import TimeStepper
from .verlet import VerletIntegrator

__all__ = [
    "Assembler",
    "AssemblyCondition",
    "Markers",
    "QValue",
    "Integrator",
    "IntegratorError",
    "StepSizeTooSmallError",
    "NonFiniteDerivativeError",
    "SimulationDivergedError",
    "SimulationOverError",
    "ExplicitEulerIntegrator",
    "RungeKutta2Integrator",
    "RungeKutta3Integrator",
    "RungeKuttaMersonIntegrator",
    "RungeKuttaFeldbergIntegrator",
    "VerletIntegrator",
    "SemiExplicitEulerIntegrator",
    "SemiExplicitEuler2Integrator",
    "SemiImplicitEulerIntegrator",
    "ScipyIntegrator",
    "TimeStepper",
]
