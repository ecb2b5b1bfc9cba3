"""SimbodyMatterSubsystem: the tree of mobilized bodies (``tree``) with its constraints (``constraints``).

The tree layer realizes kinematics and articulated-body dynamics; the constraints layer adds the
constraint equations and operators through the hooks the tree calls. Neither imports the other's
classes at run time: this module joins them.
"""
from __future__ import annotations

from .constraints._operators import ConstraintOperators
from .tree._matter_tree import MatterTree

__all__ = ["SimbodyMatterSubsystem"]


class SimbodyMatterSubsystem(ConstraintOperators, MatterTree):
    """The bodies of a MultibodySystem, connected by mobilizers into a tree rooted at Ground, and the
    constraints among them.

    Parameters
    ----------
    system : MultibodySystem
        The system this subsystem joins (as its matter subsystem).
    name : str
        The component name (default ``"matter"``).
    """
