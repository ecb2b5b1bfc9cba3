"""Force.SmoothSphereHalfSpace as a compiled force kind ("SmoothSphereHalfSpace" of core/forces.pxi).

Its forces come from the same element function as its reports (core/contact_laws.pxi), so the
forces the System applies must equal, bitwise, what the report path's kernel applies for the same
elements. Because it is compiled, a model with it keeps the fused realization, the batched and
functional calls (bitwise the State API) and the compiled time loop (tests/math).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from simtk import (
    Body,
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


def test_parameter_columns_are_the_element_functions():
    names = _core.FORCE_KINDS["SmoothSphereHalfSpace"][2]
    assert names[:9] == tuple(f"R_HF{i}" for i in range(9)) and names[9:] == _laws.SMOOTH_PARAMS


def test_applied_forces_equal_the_element_function_bitwise():
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


def test_batched_and_functional_calls_take_it_bitwise():
    system, matter, forces, elements, state = _feet()
    system.realize(state, Stage.Instance)
    q, u = np.array(state.get_q()), np.array(state.get_u())
    s = state.copy()
    system.realize(s, Stage.Acceleration)
    udot = np.array(s.get_udot())
    np.testing.assert_array_equal(matter.calc_udot_batch(q[None], u[None], state=state)[0], udot)
    np.testing.assert_array_equal(matter.functional_dynamics(state).calc_udot(q, u), udot)


def test_an_overflowing_element_is_named():
    """Absurd stiffness and dissipation overflow the force to an infinity (or 0 * inf): the kernel
    leaves the element out and the State API and the functional call name it."""
    system, matter, forces, elements, state = _feet(stiffness=1e300, dissipation=1e300)
    with pytest.raises(NonFiniteForceError, match="SmoothSphereHalfSpace"):
        system.realize(state, Stage.Dynamics)
    with pytest.raises(NonFiniteForceError, match="SmoothSphereHalfSpace"):
        matter.functional_dynamics(state).calc_udot(state.get_q(), state.get_u())
