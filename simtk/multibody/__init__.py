"""Multibody dynamics (Simbody): the matter subsystem, mobilized bodies and forces."""
from . import builtin_forces as _builtin_forces  # noqa: F401  (registers Force.<Name>)
from .force import Force
from .force_subsystem import ForceSubsystem, GeneralForceSubsystem
from .matter import SimbodyMatterSubsystem
from .mobilized_body import MobilizedBody
from .multibody_system import MultibodySystem

__all__ = [
    "Force",
    "ForceSubsystem",
    "GeneralForceSubsystem",
    "MobilizedBody",
    "MultibodySystem",
    "SimbodyMatterSubsystem",
]
