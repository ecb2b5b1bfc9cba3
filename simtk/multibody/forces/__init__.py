"""The forces layer: force elements (built-in and custom) and the force subsystems that hold them.
Depends on the tree layer for bodies and mobilities."""
from . import actuators as _actuators  # noqa: F401  (registers Force.Actuators)
from . import builtin_forces as _builtin_forces  # noqa: F401  (registers Force.<Name>)
from . import discrete_forces as _discrete_forces  # noqa: F401  (registers Force.DiscreteForces)
from . import jit_force as _jit_force  # noqa: F401  (registers Force.Jit)
from . import joint_friction as _joint_friction  # noqa: F401  (registers Force.MobilityCoulombFriction)
from . import muscle_models as _muscle_models  # noqa: F401  (registers Force.Millard2012EquilibriumMuscle, ...)
from . import muscles as _muscles  # noqa: F401  (registers Force.Thelen2003Muscle)
from .force import Force
from .force_subsystem import ForceSubsystem, GeneralForceSubsystem
from .path_wrap import PathWrap, WrapCylinder, WrapEllipsoid, WrapSphere, WrapTorus
from .paths import ConditionalPathPoint, GeometryPath, MovingPathPoint, PathPoint

__all__ = ["Force", "ForceSubsystem", "GeneralForceSubsystem", "GeometryPath", "PathPoint", "ConditionalPathPoint",
           "MovingPathPoint", "PathWrap", "WrapCylinder", "WrapSphere",
           "WrapEllipsoid", "WrapTorus"]
