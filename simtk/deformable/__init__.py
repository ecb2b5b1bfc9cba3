"""Deformable bodies beside the rigid ones (seed 003, SOFA's hybrid scenes).

A `DeformableBody` is a Subsystem of particles whose positions and velocities are variables of the
same State as the rigid bodies': particles joined by springs (`DeformableBody.from_segments`), a
solid meshed with corotational linear tetrahedra (`DeformableBody.from_tetrahedra`; meshes from
`box_tetrahedra`, a file through `read_mesh`, or a closed surface filled by `tetrahedralize`) or a
membrane of corotational triangles (`DeformableBody.from_triangles`), fixed where they are (`fix`) or riding on a rigid body's
station, whose forces then act on the body (`attach`). `ImplicitEulerIntegrator` steps stiff ones
at large fixed steps; `ImplicitExtrapolationIntegrator` chooses its steps under error control
(``set_accuracy``), second order.

Bodies are cut between steps (SOFA's topology changes) by removing elements: `remove_segments`,
`remove_tetrahedra`, `remove_triangles`, or `cut` by a plane, inside ``system.request_change`` (or followed
by ``system.migrate_state``). The particles keep their positions, velocities and masses; the compiled
element sets, the energy and the drawn surface (`get_surface_triangles`) follow the cut.
"""
from ._fem import box_tetrahedra, read_mesh
from ._tetrahedralize import tetrahedralize
from .body import DeformableBody
from .implicit_euler import ImplicitEulerIntegrator
from .implicit_extrapolation import ImplicitExtrapolationIntegrator

__all__ = [
    "DeformableBody",
    "ImplicitEulerIntegrator",
    "ImplicitExtrapolationIntegrator",
    "box_tetrahedra",
    "read_mesh",
    "tetrahedralize",
]
