"""The tree layer: mobilized bodies (built-in, custom, function-based, reversed) and the tree half of the
matter subsystem, which realizes kinematics and articulated-body dynamics. Imports nothing from
``forces`` or ``constraints``."""
from . import custom_mobilizer as _custom_mobilizer  # noqa: F401  (registers MobilizedBody.Custom)
from . import function_based as _function_based  # noqa: F401  (registers MobilizedBody.FunctionBased)
from . import jit_mobilizer as _jit_mobilizer  # noqa: F401  (registers MobilizedBody.Jit)
from ._matter_tree import MatterTree
from .mobilized_body import MobilizedBody

__all__ = ["MatterTree", "MobilizedBody"]
