"""The simulation driver (ArtiSynth's models and agents, seed 000 §2): `Simulation` with input probes,
controllers, monitors, output probes, whole-State trajectories, waypoints and step adjustment."""
from ..common.errors import StepAdjustment
from ..math.integrator_errors import SimulationDivergedError
from ._run_guard import RunBudgetExceededError
from .agents import Agent, Controller, InputProbe, Monitor, PDController
from .recording import OutputProbe, StatesTrajectory
from .simulation import RunSummary, Simulation

__all__ = ["Simulation", "RunSummary", "Agent", "InputProbe", "OutputProbe", "StatesTrajectory", "Controller",
           "PDController", "Monitor", "StepAdjustment", "SimulationDivergedError", "RunBudgetExceededError"]
