"""The benchmarks' shared model: an n-link planar pin chain under gravity, with named links."""
from __future__ import annotations

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Transform,
)


def pin_chain(n: int = 7) -> MultibodySystem:
    """Links of 0.5 m and 1 kg (mass center at mid-length) named ``link0`` ... hanging from Ground."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
    return system
