"""Multibody dynamics (Simbody): the matter subsystem, mobilized bodies and forces."""
from . import builtin_constraints as _builtin_constraints  # noqa: F401  (registers Constraint.<Name>)
from . import builtin_forces as _builtin_forces  # noqa: F401  (registers Force.<Name>)
from .constraint import Constraint
from . import custom_mobilizer as _custom_mobilizer  # noqa: F401  (registers MobilizedBody.Custom)
from . import function_based as _function_based  # noqa: F401  (registers MobilizedBody.FunctionBased)
from .force import Force
from .force_subsystem import ForceSubsystem, GeneralForceSubsystem
from .matter import SimbodyMatterSubsystem
from .mobilized_body import MobilizedBody
from .motion import Motion
from .multibody_system import MultibodySystem

__all__ = [
    "Constraint",
    "Motion",
    "Force",
    "ForceSubsystem",
    "GeneralForceSubsystem",
    "MobilizedBody",
    "MultibodySystem",
    "SimbodyMatterSubsystem",
]
