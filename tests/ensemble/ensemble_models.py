"""A small model for the ensemble tests: a cart on a spring with a pendulum on it, built-in and user elements.

``cart_pole(k=..., angle=..., damping=...)`` is a module-level ``make`` (so it pickles by reference:
the worker processes of a local cluster import this module through the ``sys.path`` they inherit).
`Damping` is a user force registered for model files as ``ensemble_test.Damping``; `raising`
builds the same model but raises for ``k < 0``, the failing member of the failure test.
"""
from __future__ import annotations

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Property,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.io import register_class

#: What the tests record: a scalar output, a vector output and an array-valued (Transform) output.
OUTPUTS = ["/|kinetic_energy", "/matter/pole|angle", "/|mass_center", "/matter/pole|transform"]


class Damping(Force.Custom.Implementation):
    """A user force: ``-c u`` on every mobility, ``c`` a declared property (so it saves in model files)."""

    c = Property(0.1, stage=Stage.Dynamics, doc="N s/m (or N m s/rad) per unit speed")

    def __init__(self, c=0.1):
        super().__init__()
        self.c = c

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        mobility_forces -= self.c * state.get_u()


register_class(Damping, "ensemble_test.Damping")


def build(k: float = 20.0, damping: float = 0.1, rod: bool = False) -> MultibodySystem:
    """The cart (slider on x), its spring to the origin (stiffness ``k``), a pole on a pin, gravity,
    the user's damping; with ``rod``, a second pole held to the first by a rod (a constraint)."""
    system = MultibodySystem(name="cart_pole")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity")
    cart_body = Body.Rigid(MassProperties(2.0, [0, 0, 0], Inertia([0.1, 0.1, 0.1])))
    pole_body = Body.Rigid(MassProperties.from_central_inertia(0.5, [0, -0.25, 0], Inertia([0.01, 0.001, 0.01])))
    cart = MobilizedBody.Slider(matter.ground, cart_body, name="cart")
    pole = MobilizedBody.Pin(cart, Transform(), pole_body, Transform(), name="pole")
    Force.TwoPointLinearSpring(forces, matter.ground, [0, 0, 0], cart, [0, 0, 0], k, 0.0, name="spring")
    Force.Custom(forces, Damping(damping), name="damping")
    if rod:
        other = MobilizedBody.Pin(matter.ground, Transform([0.3, 0, 0]), pole_body, Transform(), name="other")
        Constraint.Rod(pole, [0, -0.5, 0], other, [0, -0.5, 0], 0.3, name="rod")
    return system


def cart_pole(k: float = 20.0, angle: float = 0.3, damping: float = 0.1):
    """``make`` for the ensembles: the model and a State with the cart displaced and the pole at ``angle``."""
    system = build(k, damping)
    state = system.realize_topology()
    system.set_state_variable_value(state, "/matter/cart/length", 0.1)
    system.set_state_variable_value(state, "/matter/pole/angle", float(angle))
    return system, state


def raising(k: float = 20.0, angle: float = 0.3):
    """`cart_pole`, but a negative stiffness is refused (the failing member)."""
    if k < 0:
        raise ValueError(f"negative stiffness {k}")
    return cart_pole(k, angle)
