"""Decorations: the registry, the tessellated shapes, contact and URDF geometry collected, poses as quaternions."""
from __future__ import annotations

import importlib.metadata
import warnings
from pathlib import Path

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
    Transform,
)
from simtk.viz import Decoration, collect, contact_decorations, decorate, get_decorations
from simtk.viz._scene import build_scene, poses_of, quaternions, tessellate, up_axis


def one_body(gravity=(0, -9.81, 0)):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, np.asarray(gravity, float))
    b = MobilizedBody.Free(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1))),
                           Transform())
    return system, matter, forces, b


def test_registry_is_per_body_and_weak():
    system, matter, forces, b = one_body()
    d = Decoration.Sphere(0.1, color=(1, 0, 0))
    decorate(b, d, Transform([0, 0.2, 0]))
    assert [p.decoration for p in get_decorations(b)] == [d]
    assert get_decorations(matter.ground) == []
    _, placed = collect(system)
    assert len(placed) == 1 and placed[0].body is b and np.allclose(placed[0].X_BD.p, [0, 0.2, 0])


@pytest.mark.parametrize("d, extent", [
    (Decoration.Sphere(0.3), [0.3, 0.3, 0.3]),
    (Decoration.Ellipsoid([0.1, 0.2, 0.3]), [0.1, 0.2, 0.3]),
    (Decoration.Box([0.1, 0.2, 0.3]), [0.1, 0.2, 0.3]),
    (Decoration.Cylinder(0.1, 0.8), [0.1, 0.1, 0.4]),
    (Decoration.Capsule(0.1, 0.3), [0.1, 0.1, 0.4]),
])
def test_solids_have_their_dimensions(d, extent):
    (part,) = tessellate(d)
    assert part.mode == "triangles" and part.indices.max() < len(part.positions)
    assert np.allclose(np.abs(part.positions).max(0), extent, rtol=1e-6)
    tri = part.positions[part.indices.reshape(-1, 3)]
    assert np.all(np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1) >= 0)


def test_frame_and_line_are_lines():
    parts = tessellate(Decoration.Frame(0.5))
    assert [p.mode for p in parts] == ["lines"] * 3
    assert np.allclose([p.positions[1] for p in parts], 0.5 * np.eye(3))
    (line,) = tessellate(Decoration.Line([1, 2, 3], [4, 5, 6]))
    assert np.allclose(line.positions, [[1, 2, 3], [4, 5, 6]])


def test_bad_values_are_refused():
    with pytest.raises(ValueError):
        Decoration.Sphere(-1)
    with pytest.raises(ValueError):
        Decoration.Box([1, 0, 1])
    with pytest.raises(ValueError):
        Decoration.Sphere(1, color=(2, 0, 0))
    with pytest.raises(ValueError):
        Decoration.Sphere(1, opacity=1.5)


def test_quaternions_match_rotations():
    rng = np.random.default_rng(1)
    Rs = [Rotation(rng.uniform(-np.pi, np.pi), rng.normal(size=3)).matrix for _ in range(200)]
    Rs += [np.diag([1, -1, -1.0]), np.diag([-1, 1, -1.0]), np.diag([-1, -1, 1.0]), np.eye(3)]
    q = quaternions(np.array(Rs))
    for R, qq in zip(Rs, q):
        assert np.allclose(Rotation.from_quaternion(qq).matrix, R, atol=1e-12)


def test_contact_geometry_is_drawn_where_the_surfaces_are():
    system, matter, forces, b = one_body()
    hc = Force.HuntCrossley(forces)
    hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), Transform(Rotation(-np.pi / 2, [0, 0, 1])))
    hc.add_surface(b, ContactGeometry.Sphere(0.2), Transform([0, 0.1, 0]))
    hc.add_surface(b, ContactGeometry.Brick([0.1, 0.2, 0.3]))
    hc.add_surface(b, ContactGeometry.Cylinder(0.05, 0.2))  # drawn as a cylinder of the whole length
    hc.add_surface(b, ContactGeometry.ConvexHull(np.eye(4, 3)))  # not drawn (meshes come from files)
    placed = contact_decorations(system)
    assert [p.decoration.kind for p in placed] == ["halfspace", "sphere", "box", "cylinder"]
    assert placed[1].decoration.params == (0.2,) and np.allclose(placed[1].X_BD.p, [0, 0.1, 0])
    assert placed[3].decoration.params == (0.05, 0.4)
    assert len(collect(system)[1]) == 4 and len(collect(system, contact=False)[1]) == 0


def test_poses_and_up_axis():
    system, matter, forces, b = one_body(gravity=(0, 0, -9.81))
    assert up_axis(system) == "+z"
    state = system.realize_topology()
    b.set_q_to_fit_transform(state, Transform(Rotation(0.7, [0, 1, 0]), [1, 2, 3]))
    decorate(b, Decoration.Sphere(0.1))
    scene = build_scene(system, collect(system)[1])
    (pose,) = poses_of(scene.bodies, [state])
    X = b.get_body_transform(state)
    assert np.allclose(pose[0, 4:], [1, 2, 3])
    assert np.allclose(pose[0, 4:], X.p)
    assert np.allclose(Rotation.from_quaternion(pose[0, :4]).matrix, X.R.matrix)


def _robots() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


def test_urdf_visuals_used_as_is():
    robots = _robots()
    if robots is None:
        pytest.skip("example-robot-data is not installed")
    pytest.importorskip("trimesh")
    from simtk.io import load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_urdf(robots / "ur_description/urdf/ur5_robot.urdf")
    system, placed = collect(model)
    meshes = [p for p in placed if p.decoration.kind == "mesh"]
    assert len(meshes) == sum(1 for g in model.visuals if g.kind == "mesh" and g.path is not None) > 0
    for p, g in zip(meshes, [g for g in model.visuals if g.kind == "mesh" and g.path is not None]):
        assert p.body is g.body and p.decoration.path == g.path and p.X_BD is g.X_BG
    # The collada files bring their own materials: several coloured parts per link.
    parts = tessellate(meshes[1].decoration)
    assert len(parts) > 1 and all(p.rgba is not None for p in parts)
