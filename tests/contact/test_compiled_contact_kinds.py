"""The contact elements as compiled force kinds ("SmoothSphereHalfSpace" of core/forces.pxi and
"HuntCrossley" of core/contact_force.pxi).

Each kind's forces come from the same compiled functions as the element's reports (the smooth
element function; for HuntCrossley the surface poses, detection, contact order, self-contact
filter and contact function of its Python path), so the forces the System applies must equal,
bitwise, what the report path applies for the same elements: checked with a half-space on a moving
body, and for HuntCrossley on the kernel's stack path and on its heap path (more surfaces and
contacts than its stack scratch holds). Because they are compiled, a model with contact keeps the
batched and functional calls (bitwise the State API) and the compiled time loop (tests/math).
"""
from __future__ import annotations

import math

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
    _core,
)
from simtk.common.errors import NonFiniteForceError
from simtk.multibody.contact import _laws
from tolerances import tol

LAW = dict(stiffness=1e5, dissipation=0.7, static_friction=0.8, dynamic_friction=0.5, viscous_friction=0.05)


def _feet(stiffness: float = 2e4, dissipation: float = 1.5):
    """A free torso with a leg (Pin) and a shin (Slider): two feet on the shin against a tilted floor
    on Ground, and one sphere against a half-space carried by the moving torso (a table it carries)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    mp = MassProperties.from_central_inertia(3.0, [0.01, -0.02, 0.03], Inertia([0.2, 0.1, 0.15]))
    torso = MobilizedBody.Free(matter.ground, Body.Rigid(mp), name="torso")
    leg = MobilizedBody.Pin(torso, Transform(Rotation(0.3, [1, 0, 0]), [0.1, -0.2, 0]), Body.Rigid(mp),
                            Transform(), name="leg")
    shin = MobilizedBody.Slider(leg, Transform([0, -0.4, 0]), Body.Rigid(mp), Transform(), name="shin")
    floor = Transform(Rotation(-math.pi / 2 + 0.1, [0, 0, 1]), [0.0, -0.76, 0.1])
    params = dict(stiffness=stiffness, dissipation=dissipation, static_friction=0.9, dynamic_friction=0.6,
                  viscous_friction=0.1, transition_velocity=0.05)
    elements = [
        Force.SmoothSphereHalfSpace(forces, shin, [0.02, -0.1, 0.0], 0.05, matter.ground, floor, **params),
        Force.SmoothSphereHalfSpace(forces, shin, [-0.03, -0.12, 0.04], 0.04, matter.ground, floor, **params),
        Force.SmoothSphereHalfSpace(forces, shin, [0.0, 0.05, 0.0], 0.03, torso,
                                    Transform(Rotation(0.7, [0.3, 0.2, 1.0]), [0.05, -0.5, 0.0]), **params),
    ]
    state = system.realize_topology()
    for i, (q, u) in enumerate(zip([1.0, 0.0, 0.0, 0.0, 0.0, -0.02, 0.0], [0.2, -0.1, 0.5, 0.3, -0.4, 0.1])):
        torso.set_one_q(state, i, q)
        torso.set_one_u(state, i, u)
    leg.set_one_q(state, 0, 0.2)
    leg.set_one_u(state, 0, -0.7)
    shin.set_one_q(state, 0, -0.05)
    shin.set_one_u(state, 0, 0.3)
    return system, matter, forces, elements, state


def test_smooth_parameter_columns_are_the_element_functions():
    names = _core.FORCE_KINDS["SmoothSphereHalfSpace"][2]
    assert names[:9] == tuple(f"R_HF{i}" for i in range(9)) and names[9:] == _laws.SMOOTH_PARAMS


def test_smooth_forces_equal_the_element_function_bitwise():
    system, matter, forces, elements, state = _feet()
    system.realize(state, Stage.Dynamics)
    indentations = [e.get_output("indentation").get_value(state) for e in elements]
    assert sum(d > 0 for d in indentations) >= 2, indentations  # the control: contacts are active
    # gravity alone: the same State with the contact elements disabled
    gravity = state.copy()
    for e in elements:
        e.disable(gravity)
    system.realize(gravity, Stage.Dynamics)
    # the report path: the same elements through smooth_sphere_half_space_law, added to gravity (the
    # force subsystem adds the velocity-dependent kinds onto the cached position-only ones)
    ws = matter._at(state, Stage.Velocity, "test").ws
    a = type(elements[0])._arrays(elements)
    expected = np.array(system.get_rigid_body_forces(gravity, Stage.Dynamics))
    energy, _ = _laws.smooth_sphere_half_space_law(a.sphere_body, a.p_BS, a.half_space_body, a.R_HF, a.p_HF,
                                                   a.params, ws, expected)
    np.testing.assert_array_equal(system.get_rigid_body_forces(state, Stage.Dynamics), expected)
    # the energy: the compiled kind's, the element function's, and the sum of the elements' reports
    total, of_gravity = forces.calc_potential_energy(state), forces.calc_potential_energy(gravity)
    assert abs((total - of_gravity) - energy) <= tol(abs(total) + abs(of_gravity), 16)
    assert energy == sum(e._report(state)[8] for e in elements)  # the same sum, in the same order


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
def test_hunt_crossley_forces_equal_its_python_path_bitwise(n_small):
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


def _built(kind: str, **overrides):
    """(system, state) of the smooth feet or the HuntCrossley pile."""
    if kind == "SmoothSphereHalfSpace":
        system, _, _, _, state = _feet(**overrides)
    else:
        system, _, _, state = _pile(6, **overrides)
    return system, state


@pytest.mark.parametrize("kind", ["SmoothSphereHalfSpace", "HuntCrossley"])
def test_batched_and_functional_calls_take_it_bitwise(kind):
    system, state = _built(kind)
    matter = system.get_matter_subsystem()
    system.realize(state, Stage.Instance)
    q, u = np.array(state.get_q()), np.array(state.get_u())
    s = state.copy()
    system.realize(s, Stage.Acceleration)
    udot = np.array(s.get_udot())
    np.testing.assert_array_equal(matter.calc_udot_batch(q[None], u[None], state=state)[0], udot)
    np.testing.assert_array_equal(matter.functional_dynamics(state).calc_udot(q, u), udot)


@pytest.mark.parametrize("kind", ["SmoothSphereHalfSpace", "HuntCrossley"])
def test_an_overflowing_element_is_named(kind):
    """Absurd stiffness and dissipation overflow an approaching contact's force to infinity (or
    0 * inf): the kernel leaves the element out and the realization and the functional call name it."""
    system, state = _built(kind, stiffness=1e300, dissipation=1e300)
    with pytest.raises(NonFiniteForceError, match=kind):
        system.realize(state, Stage.Dynamics)
    with pytest.raises(NonFiniteForceError, match=kind):
        system.get_matter_subsystem().functional_dynamics(state).calc_udot(state.get_q(), state.get_u())
