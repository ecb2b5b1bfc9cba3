"""The contact layer: contact geometry on bodies, detection in the compiled core (a broad phase swept in
strips, exact narrow phases, EPA where there is no closed form), and the compliant contact forces
``Force.HuntCrossley`` (Simbody's law) and ``Force.SmoothSphereHalfSpace`` (OpenSim's smooth law), whose
per-contact laws are compiled kernels too. Depends on the tree and forces layers."""
from . import hunt_crossley as _hunt_crossley  # noqa: F401  (registers Force.HuntCrossley)
from . import smooth as _smooth  # noqa: F401  (registers Force.SmoothSphereHalfSpace)
from ._detection import Contacts, detect, min_separation
from .geometry import ContactGeometry
from .hunt_crossley import ContactReport, ImpactEvent

__all__ = ["ContactGeometry", "ContactReport", "Contacts", "ImpactEvent", "detect", "min_separation"]
