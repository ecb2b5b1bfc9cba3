"""What every importer returns: the System built from a model description, with the file's names."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simtk import GeneralForceSubsystem, MultibodySystem, SimbodyMatterSubsystem, State

__all__ = ["LoadedModel"]


@dataclass
class LoadedModel:
    """The parts every loaded model has (the base of `UrdfModel` and `OsimModel`).

    Attributes
    ----------
    system, matter, forces :
        The MultibodySystem, its SimbodyMatterSubsystem (``/matter``) and GeneralForceSubsystem
        (``/forces``).
    path :
        The file read.
    bodies : dict
        The file's body (link) names -> MobilizedBody.
    joints : dict
        The file's joint names -> the MobilizedBody whose mobilizer the joint is.
    nonphysical_inertias : dict
        Body (link) name -> why its inertia is not one of a mass distribution, for those kept as
        written (or, for OpenSim files, repaired).
    warnings : list of str
        What the file has that was not built as written (also issued as warnings).
    description : ModelDescription or None
        The declarative description the reader made and the builder built the System from.
    components : dict
        The built components by simtk path (``"/matter/elbow"``).
    """

    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    path: Any = ""
    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    nonphysical_inertias: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    description: Any = field(default=None, repr=False)
    components: dict = field(default_factory=dict, repr=False)

    def default_state(self) -> State:
        """A new default State of `system`, realized to Model.

        Returns
        -------
        State
        """
        return self.system.realize_topology()
