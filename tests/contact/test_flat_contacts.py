"""Flat contacts under Force.HuntCrossley (issue 12): contact manifolds and Simbody's vertex law.

A brick on a half-space or on a brick's face gets one contact per penetrating vertex of its lowest
face, each with Simbody's BrickHalfSpacePenalty law (a linear spring k d with Hunt-Crossley damping,
the stiffnesses combined themselves); a capsule on a plane gets its two end caps' sphere contacts
with the Hertz law. Checked: bodies dropped on the floor come to rest on their weight, on the
expected points, at the penetration each law predicts; the vertex law against its formula.
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
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)
from tolerances import tol

G, MASS = 9.81, 3.0
Z = np.array([0.0, 0.0, 1.0])
#: A half-space whose material is y < 0 (its frame's x axis along -y).
X_FLOOR = Transform(Rotation(-math.pi / 2, Z))
HALF = np.array([0.2, 0.1, 0.15])               # the brick's half-sizes
CAPSULE_R, CAPSULE_L = 0.05, 0.2                # the capsule's radius and half-length
MATERIAL = dict(stiffness=1e6, dissipation=3.0, static_friction=0.8, dynamic_friction=0.6)
#: At rest: speeds below this (m/s or rad/s); the damping takes the rest within the simulated time.
AT_REST = 1e-4
#: The contact forces balance the weight up to the springs' remaining oscillation: k times the
#: amplitude (speed / natural frequency, about AT_REST / 500 s) is below 1e-3 of the weight here.
BALANCE = 1e-3


def _system(shape: str, floor: str):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -G, 0.0])
    if shape == "brick":
        geometry, X_BS = ContactGeometry.Brick(HALF), Transform()
        h = HALF
        inertia = MASS / 3 * np.array([h[1]**2 + h[2]**2, h[0]**2 + h[2]**2, h[0]**2 + h[1]**2])
    else:
        # the capsule's axis (its frame's z) along the body's x
        geometry, X_BS = ContactGeometry.Capsule(CAPSULE_R, CAPSULE_L), Transform(Rotation(math.pi / 2, [0, 1.0, 0]))
        r, L = CAPSULE_R, CAPSULE_L
        inertia = np.array([0.5 * MASS * r * r, MASS * (3 * r * r + 4 * L * L) / 12, MASS * (3 * r * r + 4 * L * L) / 12])
    mp = MassProperties.from_central_inertia(MASS, np.zeros(3), Inertia.from_matrix(np.diag(inertia)))
    body = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    hc = Force.HuntCrossley(forces)
    hc.add_surface(body, geometry, X_BS, **MATERIAL)
    if floor == "half-space":
        hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), X_FLOOR, **MATERIAL)
    else:  # a big fixed brick whose top face is y = 0
        hc.add_surface(matter.ground, ContactGeometry.Brick([2.0, 0.5, 2.0]), Transform(p=[0.0, -0.5, 0.0]), **MATERIAL)
    return system, body, hc


def _drop(shape: str, floor: str, height: float, t_end: float = 1.0):
    """Dropped from ``height`` above the floor, slightly tilted; the state at ``t_end``."""
    system, body, hc = _system(shape, floor)
    state = system.realize_topology()
    rest = HALF[1] if shape == "brick" else CAPSULE_R
    body.set_q(state, np.concatenate([Rotation.from_body_fixed_xyz([0.03, 0.0, -0.02]).to_quaternion(),
                                      [0.0, rest + height, 0.0]]))
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(t_end)
    out = ts.get_state()
    system.realize(out, Stage.Velocity)
    return system, body, hc, out


def _check_rests_on_weight(body, reports, out):
    assert np.abs(body.get_body_velocity(out)).max() < AT_REST
    total = sum(rep.force for rep in reports)
    # the force on the floor (body 2) balances the weight the body puts on it: (0, -m g, 0)
    assert total == pytest.approx([0.0, -MASS * G, 0.0], abs=BALANCE * MASS * G)


@pytest.mark.parametrize("floor", ["half-space", "brick"])
def test_brick_dropped_on_the_floor_rests_flat_on_its_four_bottom_vertices(floor):
    system, body, hc, out = _drop("brick", floor, 0.005)
    reports = hc.get_contact_reports(out)
    _check_rests_on_weight(body, reports, out)
    assert len(reports) == 4
    # at the bottom face's vertices (equal materials: midway between each vertex and the floor);
    # on a brick floor the points are found from whichever face is the reference, one of two faces
    # parallel to within the remaining tilt, so they agree to a small fraction of the depth
    X = body.get_body_transform(out)
    bottom = np.array([X.p + X.R.matrix @ (HALF * [sx, -1, sz]) for sx in (-1, 1) for sz in (-1, 1)])
    points = np.array([rep.point for rep in reports])
    for v in bottom:
        k = int(np.argmin(np.linalg.norm(points[:, [0, 2]] - v[[0, 2]], axis=1)))
        assert np.linalg.norm(points[k] - (v + [0, -v[1] / 2, 0])) <= tol(1, 64) + BALANCE * abs(v[1])
    # Simbody's vertex law: each vertex carries a quarter of the weight on a spring k = k1 k2/(k1 + k2)
    # (a Hertz law would sink by (3 m g / (16 k' sqrt(R k')))^(2/3) instead, with no R to give)
    k = MATERIAL["stiffness"] / 2
    depths = np.array([rep.depth for rep in reports])
    np.testing.assert_allclose(depths, MASS * G / 4 / k, rtol=BALANCE)


def test_capsule_dropped_on_a_plane_rests_on_its_end_caps():
    system, body, hc, out = _drop("capsule", "half-space", 0.005)
    reports = hc.get_contact_reports(out)
    _check_rests_on_weight(body, reports, out)
    assert len(reports) == 2
    X = body.get_body_transform(out)
    ends = np.array([X.p + X.R.matrix @ [sx * CAPSULE_L, 0, 0] for sx in (-1, 1)])
    points = np.array(sorted((rep.point for rep in reports), key=lambda p: float(p @ X.R.matrix[:, 0])))
    np.testing.assert_allclose(points[:, [0, 2]], ends[:, [0, 2]], atol=tol(1, 64))
    # each cap carries half the weight on a Hertz sphere of the capsule's radius on a flat:
    # m g / 2 = 4/3 k' d sqrt(r k' d), k' = k^(2/3)/2
    kp = MATERIAL["stiffness"] ** (2 / 3) / 2
    d = (3 * MASS * G / 2 / (4 * kp * math.sqrt(CAPSULE_R * kp))) ** (2 / 3)
    np.testing.assert_allclose([rep.depth for rep in reports], d, rtol=BALANCE)
    np.testing.assert_allclose([rep.normal_force for rep in reports], MASS * G / 2, rtol=BALANCE)


def test_vertex_contacts_follow_simbodys_brick_half_space_penalty():
    """A brick pressed into the floor and moving: each vertex's force is k d (1 + c vn) with
    k = k1 k2/(k1 + k2) and c = c1 s1 + c2 s2 from the stiffnesses themselves (s1 = k2/(k1 + k2)),
    at the vertex moved by d s2 toward the floor (surface 1); its energy k d^2 / 2."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = MassProperties.from_central_inertia(MASS, np.zeros(3), Inertia.from_matrix(np.eye(3) * 0.05))
    body = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    hc = Force.HuntCrossley(forces)
    floor = dict(stiffness=4e6, dissipation=0.5)
    brick = dict(stiffness=1e6, dissipation=2.0)
    hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), X_FLOOR, **floor)
    hc.add_surface(body, ContactGeometry.Brick(HALF), **brick)
    state = system.realize_topology()
    d0, vn, t = 1e-3, 0.05, 0.002  # all four bottom vertices below the floor (0.3 sin t < d0)
    R = Rotation.from_body_fixed_xyz([t, 0.0, 0.0])
    lowest = min(float((R.matrix @ (HALF * [1, -1, sz]))[1]) for sz in (-1, 1))
    body.set_q(state, np.concatenate([R.to_quaternion(), [0.0, -lowest - d0, 0.0]]))
    body.set_u(state, [0.0, 0.0, 0.0, 0.0, -vn, 0.0])
    system.realize(state, Stage.Dynamics)
    reports = hc.get_contact_reports(state)
    assert len(reports) == 4
    k1, k2 = floor["stiffness"], brick["stiffness"]
    s1 = k2 / (k1 + k2)
    k, c = k1 * s1, floor["dissipation"] * s1 + brick["dissipation"] * (1 - s1)
    energy = 0.0
    for rep in reports:
        assert rep.normal_force == pytest.approx(k * rep.depth * (1 + c * vn), rel=tol(1, 64))
        assert rep.potential_energy == pytest.approx(0.5 * k * rep.depth ** 2, rel=tol(1, 64))
        vertex_y = rep.point[1] - rep.depth * (1 - s1)
        assert abs(vertex_y + rep.depth) <= tol(1, 64)  # the vertex is depth below the floor
        energy += rep.potential_energy
    assert max(rep.depth for rep in reports) == pytest.approx(d0, rel=tol(1, 1024))
    assert system.calc_energy(state) - system.calc_kinetic_energy(state) == pytest.approx(energy, rel=tol(1, 64))
