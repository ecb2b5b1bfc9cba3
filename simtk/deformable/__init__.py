"""Deformable bodies beside the rigid ones (seed 003, SOFA's hybrid scenes).

A `DeformableBody` is a Subsystem of particles whose positions and velocities are variables of the
same State as the rigid bodies': particles joined by springs (`DeformableBody.from_segments`), a
solid meshed with corotational linear tetrahedra (`DeformableBody.from_tetrahedra`; meshes from
`box_tetrahedra` or a file through `read_mesh`) or a membrane of corotational triangles
(`DeformableBody.from_triangles`), fixed where they are (`fix`) or riding on a rigid body's
station, whose forces then act on the body (`attach`). `ImplicitEulerIntegrator` steps stiff ones
at large fixed steps; `ImplicitExtrapolationIntegrator` chooses its steps under error control
(``set_accuracy``), second order.
"""
from ._fem import box_tetrahedra, read_mesh
from .body import DeformableBody
from .implicit_euler import ImplicitEulerIntegrator
from .implicit_extrapolation import ImplicitExtrapolationIntegrator

__all__ = [
    "DeformableBody",
    "ImplicitEulerIntegrator",
    "ImplicitExtrapolationIntegrator",
    "box_tetrahedra",
    "read_mesh",
]
