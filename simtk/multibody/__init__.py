"""Multibody dynamics (Simbody), in layers: ``tree`` (mobilized bodies, kinematics, articulated-body
dynamics), ``forces`` (force elements and subsystems), ``constraints`` (constraints, motions, the
constraint solver), joined by ``matter`` (SimbodyMatterSubsystem) and ``multibody_system``."""
from .constraints import Constraint, Motion
from .contact import ContactGeometry
from .forces import (
    ConditionalPathPoint,
    Force,
    ForceSubsystem,
    GeneralForceSubsystem,
    GeometryPath,
    MovingPathPoint,
    PathPoint,
    PathWrap,
    WrapCylinder,
    WrapEllipsoid,
    WrapSphere,
    WrapTorus,
)
from .matter import SimbodyMatterSubsystem
from .multibody_system import MultibodySystem
from .tree import MobilizedBody

__all__ = [
    "Constraint",
    "ContactGeometry",
    "Motion",
    "Force",
    "ForceSubsystem",
    "GeneralForceSubsystem",
    "GeometryPath",
    "PathPoint",
    "ConditionalPathPoint",
    "MovingPathPoint",
    "PathWrap",
    "WrapCylinder",
    "WrapSphere", "WrapEllipsoid", "WrapTorus",
    "MobilizedBody",
    "MultibodySystem",
    "SimbodyMatterSubsystem",
]
