"""Force.HuntCrossley as a compiled force kind ("HuntCrossley", core/contact_force.pxi).

The kind detects and applies the contacts of each element in one kernel call with the arithmetic
of the element's Python path (the same surface poses, detection, order, self-contact filter and
contact function), so the forces the System applies must equal, bitwise, what the Python path
(``_evaluate``, which the reports use) applies. Checked for elements small enough for the kernel's
stack scratch and for one that needs the heap (more surfaces and contacts than it holds).
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    ContactGeometry,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.common.errors import NonFiniteForceError
from tolerances import tol

LAW = dict(stiffness=1e5, dissipation=0.7, static_friction=0.8, dynamic_friction=0.5, viscous_friction=0.05)


def hertz_energy(surf_law: np.ndarray, contacts) -> np.ndarray:
    """Per-contact spring energy, written in numpy here (the independent reference of the kernel's):
    2/5 fH d for a Hertz contact, k d^2 / 2 for a flat-on-flat one (R1 = R2 = inf; the stiffnesses
    themselves combined). ``surf_law`` (ns, 5) with column 0 = k^(2/3)."""
    s1, s2 = np.asarray(contacts.surf1), np.asarray(contacts.surf2)
    d, R1, R2 = (np.asarray(getattr(contacts, n), dtype=float) for n in ("depth", "R1", "R2"))
    k1, k2 = surf_law[s1, 0], surf_law[s2, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        R = np.where(np.isinf(R1), R2, np.where(np.isinf(R2), R1, R1 * R2 / (R1 + R2)))
        fH = (4.0 / 3.0) * (k1 * k2 / (k1 + k2)) * d * np.sqrt(R * (k1 * k2 / (k1 + k2)) * d)
    kf1, kf2 = k1 ** 1.5, k2 ** 1.5
    return np.where(np.isinf(R1) & np.isinf(R2), 0.5 * (kf1 * kf2 / (kf1 + kf2)) * d * d, 0.4 * fH * d)


def _pile(n_small: int, seed: int = 1, **law_changes):
    """Two free bodies over a tilted floor: a box carrying ``n_small`` small bricks and spheres on
    its underside (all in contact), and a ball; a second element (a ball on the first body's box)
    so that the kind packs two elements. Random velocities; returns (system, forces, elements, state)."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    mp = MassProperties.from_central_inertia(2.0, [0.0, 0.0, 0.0], Inertia([0.1, 0.12, 0.08]))
    box = MobilizedBody.Free(matter.ground, Body.Rigid(mp), name="box")
    ball = MobilizedBody.Free(matter.ground, Body.Rigid(mp), name="ball")
    law = dict(LAW, **law_changes)
    floor = Transform(Rotation(-np.pi / 2 + 0.05, [0, 0, 1]))
    first = Force.HuntCrossley(forces, transition_velocity=0.05)
    first.add_surface(matter.ground, ContactGeometry.HalfSpace(), floor, **law)
    first.add_surface(box, ContactGeometry.Brick([0.2, 0.05, 0.15]), Transform(), **law)
    for i in range(n_small):
        x, z = rng.uniform(-0.18, 0.18, 2)
        shape = ContactGeometry.Brick([0.01, 0.01, 0.01]) if i % 2 else ContactGeometry.Sphere(0.012)
        first.add_surface(box, shape, Transform(p=[x, -0.05, z]), clique=-1, **law)
    first.add_surface(ball, ContactGeometry.Sphere(0.1), Transform(), **law)
    second = Force.HuntCrossley(forces, transition_velocity=0.02)
    second.add_surface(box, ContactGeometry.Brick([0.2, 0.05, 0.15]), Transform(), **law)
    second.add_surface(ball, ContactGeometry.Sphere(0.1), Transform(), **law)
    state = system.realize_topology()
    box.set_one_q(state, 0, 1.0)
    box.set_one_q(state, 5, 0.04)      # the box's bottom 1 cm into the floor (about)
    ball.set_one_q(state, 0, 1.0)
    ball.set_one_q(state, 4, 0.22)     # the ball into the floor at x = 0.2 and into the box's side
    ball.set_one_q(state, 5, 0.095)
    for mb in (box, ball):
        for i, v in enumerate(rng.uniform(-0.5, 0.5, 6)):
            mb.set_one_u(state, i, v)
    return system, forces, (first, second), state


@pytest.mark.parametrize("n_small", [0, 120])
def test_applied_forces_equal_the_python_path_bitwise(n_small):
    """n_small = 120: 123 surfaces and, with the bricks' manifolds, more than 256 contacts: the kernel's
    heap path; 0: its stack path."""
    system, forces, elements, state = _pile(n_small)
    system.realize(state, Stage.Dynamics)
    counts = [len(e.get_contacts(state).depth) for e in elements]
    assert counts[0] >= (300 if n_small else 4) and counts[1] >= 1, counts  # the control: contacts active
    gravity = state.copy()
    for e in elements:
        e.disable(gravity)
    system.realize(gravity, Stage.Dynamics)
    expected = np.array(system.get_rigid_body_forces(gravity, Stage.Dynamics))
    energy = 0.0
    for e in elements:
        energy += e._evaluate(state, expected)[0]
    np.testing.assert_array_equal(system.get_rigid_body_forces(state, Stage.Dynamics), expected)
    total, of_gravity = forces.calc_potential_energy(state), forces.calc_potential_energy(gravity)
    assert abs((total - of_gravity) - energy) <= tol(abs(total) + abs(of_gravity) + abs(energy), 64)
    # the energy by the numpy formula over the contacts, self-contacts left out as the kernel does
    reference = 0.0
    for e in elements:
        c, a = e.get_contacts(state), e._surface_arrays()
        keep = a.body[np.asarray(c.surf1)] != a.body[np.asarray(c.surf2)]
        reference += float(np.sum(hertz_energy(a.law, c)[keep]))
    assert abs(energy - reference) <= tol(abs(reference), 64 * max(counts))


def test_batched_and_functional_calls_take_it_bitwise():
    system, forces, elements, state = _pile(6)
    matter = system.get_matter_subsystem()
    system.realize(state, Stage.Instance)
    q, u = np.array(state.get_q()), np.array(state.get_u())
    s = state.copy()
    system.realize(s, Stage.Acceleration)
    udot = np.array(s.get_udot())
    np.testing.assert_array_equal(matter.calc_udot_batch(q[None], u[None], state=state)[0], udot)
    np.testing.assert_array_equal(matter.functional_dynamics(state).calc_udot(q, u), udot)


def test_an_overflowing_element_is_named():
    """Absurd stiffness and dissipation overflow an approaching contact's force to infinity: the
    kernel leaves the element out and the realization and the functional call name it."""
    system, forces, elements, state = _pile(0, stiffness=1e300, dissipation=1e300)
    with pytest.raises(NonFiniteForceError, match="HuntCrossley"):
        system.realize(state, Stage.Dynamics)
    with pytest.raises(NonFiniteForceError, match="HuntCrossley"):
        system.get_matter_subsystem().functional_dynamics(state).calc_udot(state.get_q(), state.get_u())
