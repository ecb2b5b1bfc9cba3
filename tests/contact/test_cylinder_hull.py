"""The Cylinder and ConvexHull contact shapes, and per-pair exclusions (issue 32).

Checked by independent means: support values against brute force over sampled points (a
cylinder's rims, a hull's whole point cloud); penetration depths against the Minkowski difference
built by scipy's qhull from vertex sets (exact for polytopes, within the rim sampling for a
cylinder) and against closed forms (a sphere on a cylinder or inside a hull); a cylinder at rest on
the floor at the height its contact law predicts, standing and lying; a hull of a box's vertices
against the Brick; excluded pairs against detection without them; refusals of bad data.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull as QHull
from scipy.spatial.transform import Rotation as SciRot

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
from simtk.multibody.contact import detect
from simtk.multibody.contact._detection import CONTACT_EPA_REL_TOL
from tolerances import EPS

R_CYL, L_CYL = 0.12, 0.3
NRIM = 2048  # rim samples: a sampled rim is within r (1 - cos(pi / NRIM)) of the true one along any direction


def _rim_points(r: float, L: float, n: int = NRIM) -> np.ndarray:
    t = 2 * np.pi * np.arange(n) / n
    ring = np.stack([r * np.cos(t), r * np.sin(t)], axis=1)
    return np.concatenate([np.column_stack([ring, np.full(n, z)]) for z in (-L, L)])


def _pack(geoms, poses):
    """detect's arrays for geometries at (R, p) poses."""
    codes, params, verts, row = [], [], [], 0
    for g in geoms:
        p = list(g.params)
        if g.kind == "ConvexHull":
            p[2] = row
            verts.append(g.vertices)
            row += g.vertices.shape[0]
        codes.append(g.shape_code)
        params.append(p)
    R = np.array([P[0] for P in poses])
    p = np.array([P[1] for P in poses], dtype=float)
    return (np.array(codes, np.int32), np.array(params), R, p, np.full(len(geoms), -1, np.int32),
            np.concatenate(verts) if verts else None)


def _halfspace_pose(n: np.ndarray, offset: float):
    """The HalfSpace frame whose outward normal is unit n and whose plane is x.n = offset."""
    x = -n
    y = np.cross(x, [0.3, 0.5, 0.8])
    y /= np.linalg.norm(y)
    return np.column_stack([x, y, np.cross(x, y)]), offset * n


def _random_cloud(rng, m=60):
    return rng.normal(size=(m, 3)) * [0.2, 0.15, 0.1] + rng.normal(size=3) * 0.05


def test_support_values_are_the_extremes_of_sampled_points():
    """A half-space along a random normal n touches a shape at depth offset - min over the shape of
    x.n: for a hull, the minimum over its whole point cloud (interior points included) to round-off;
    for a cylinder, above the minimum over its sampled rims by at most r (1 - cos(pi / NRIM))."""
    rng = np.random.default_rng(11)
    cloud = _random_cloud(rng)
    hull = ContactGeometry.ConvexHull(cloud)
    assert hull.vertices.shape[0] == len(QHull(cloud).vertices) < cloud.shape[0]
    cyl = ContactGeometry.Cylinder(R_CYL, L_CYL)
    rim = _rim_points(R_CYL, L_CYL)
    for _ in range(40):
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        Rs = SciRot.random(random_state=rng).as_matrix()
        ps = rng.normal(size=3) * 0.1
        for g, pts, slack in ((hull, cloud, 0.0), (cyl, rim, R_CYL * (1 - math.cos(math.pi / NRIM)))):
            world = pts @ Rs.T + ps
            lowest = float((world @ n).min())
            offset = lowest + 0.05  # 5 cm deep
            codes, params, R, p, cl, verts = _pack([ContactGeometry.HalfSpace(), g],
                                                   [_halfspace_pose(n, offset), (Rs, ps)])
            c = detect(codes, params, R, p, cl, vertices=verts)
            assert len(c) >= 1
            np.testing.assert_allclose(c.n_G, np.tile(n, (len(c), 1)), atol=64 * EPS)
            depth = float(c.depth.max())
            scale = 1.0
            assert -64 * EPS * scale <= depth - (offset - lowest) <= slack + 64 * EPS * scale, g.kind


def _minkowski_depth(va: np.ndarray, vb: np.ndarray) -> tuple[float, QHull]:
    """Depth of the origin in K = conv{a - b}: the least distance to one of K's facet planes."""
    K = QHull((va[:, None, :] - vb[None, :, :]).reshape(-1, 3))
    return float((-K.equations[:, 3]).min()), K


def _world(g, X, n_rim: int = 256):
    R, p = X
    if g.kind == "ConvexHull":
        return g.vertices @ R.T + p
    if g.kind == "Cylinder":
        return _rim_points(g.radius, g.half_length, n_rim) @ R.T + p
    h = np.array(g.half_lengths)
    return (np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h) @ R.T + p


@pytest.mark.parametrize("pair", ["hull-brick", "hull-hull", "cylinder-brick", "cylinder-hull",
                                  "cylinder-cylinder"])
def test_depth_is_the_minkowski_differences(pair):
    """At random overlapping poses the reported depth is the origin's depth in the Minkowski difference
    K = A - B, built by qhull from vertex sets (a cylinder's: N = 256 points per rim, 96 when both are
    cylinders, so K's sampled hull lies inside the true K by at most 2 r (1 - cos(pi/N)), which bounds the
    depth from below), within
    EPA's tolerance; and the reported normal n attains it: h_K(n), brute force over K's points, is the
    depth (the normal is K's nearest facet's)."""
    rng = np.random.default_rng(abs(hash(pair)) % 2**32)
    shapes = {"hull": lambda: ContactGeometry.ConvexHull(_random_cloud(rng, 30)),
              "brick": lambda: ContactGeometry.Brick(rng.uniform(0.05, 0.2, size=3)),
              "cylinder": lambda: ContactGeometry.Cylinder(rng.uniform(0.05, 0.15), rng.uniform(0.05, 0.2))}
    a_kind, b_kind = pair.split("-")
    n_rim = 96 if pair == "cylinder-cylinder" else 256  # (qhull over n_rim^2 points per pose)
    n_checked = 0
    for _ in range(25):
        A, B = shapes[a_kind](), shapes[b_kind]()
        XA = (SciRot.random(random_state=rng).as_matrix(), rng.normal(size=3) * 0.05)
        XB = (SciRot.random(random_state=rng).as_matrix(), rng.normal(size=3) * 0.05 + [0.1, 0, 0])
        expected, K = _minkowski_depth(_world(A, XA, n_rim), _world(B, XB, n_rim))
        codes, params, R, p, cl, verts = _pack([A, B], [XA, XB])
        c = detect(codes, params, R, p, cl, vertices=verts)
        if expected <= 1e-3:
            continue  # apart or grazing: the sampled K cannot say
        n_checked += 1
        assert len(c) >= 1
        size = max(max(A.params[:2]), max(B.params[:2])) if "ConvexHull" not in (A.kind, B.kind) else 0.5
        slack = sum(2 * g.radius * (1 - math.cos(math.pi / n_rim)) for g in (A, B) if g.kind == "Cylinder")
        tol = 4 * CONTACT_EPA_REL_TOL * 2 * size + 1e3 * EPS
        depth = float(c.depth.max())
        assert expected - tol <= depth <= expected + slack + tol, (depth, expected)
        n = c.n_G[0]
        h = float((K.points @ n).max())  # h_K(n) = h_A(n) + h_B(-n): the depth along n
        assert h - tol <= depth <= h + slack + tol
    assert n_checked >= 10


def test_sphere_depths_against_closed_forms():
    """A sphere on a cylinder: depth rs - dist(centre, cylinder) outside it, rs + the distance to its
    nearest face inside (closed forms in the cylinder's frame); a sphere whose centre is inside a
    hull: rs + the least distance to a facet plane (qhull's equations)."""
    rng = np.random.default_rng(5)
    cyl = ContactGeometry.Cylinder(R_CYL, L_CYL)
    cloud = _random_cloud(rng)
    hull = ContactGeometry.ConvexHull(cloud)
    Q = QHull(cloud)
    checked = 0
    for _ in range(60):
        Rs = SciRot.random(random_state=rng).as_matrix()
        ps = rng.normal(size=3) * 0.1
        rs = rng.uniform(0.03, 0.1)
        local = rng.normal(size=3) * [0.15, 0.15, 0.35]
        rho, z = math.hypot(local[0], local[1]), abs(local[2])
        if rho <= R_CYL and z <= L_CYL:
            expected = rs + min(R_CYL - rho, L_CYL - z)
        else:
            expected = rs - math.hypot(max(rho - R_CYL, 0.0), max(z - L_CYL, 0.0))
        codes, params, R, p, cl, verts = _pack([ContactGeometry.Sphere(rs), cyl],
                                               [(np.eye(3), Rs @ local + ps), (Rs, ps)])
        c = detect(codes, params, R, p, cl, vertices=verts)
        tol = 4 * CONTACT_EPA_REL_TOL * (rs + L_CYL) * 2 + 1e3 * EPS
        if expected > tol:
            checked += 1
            assert len(c) == 1 and abs(float(c.depth[0]) - expected) <= tol
        elif expected < -tol:
            assert len(c) == 0
        # a sphere inside the hull
        w = rng.dirichlet(np.ones(len(cloud)))
        centre = w @ cloud
        expected = rs + float(-(Q.equations[:, :3] @ centre + Q.equations[:, 3]).max())
        codes, params, R, p, cl, verts = _pack([ContactGeometry.Sphere(rs), hull],
                                               [(np.eye(3), Rs @ centre + ps), (Rs, ps)])
        c = detect(codes, params, R, p, cl, vertices=verts)
        assert len(c) == 1 and abs(float(c.depth[0]) - expected) <= 4 * CONTACT_EPA_REL_TOL + 1e3 * EPS
    assert checked > 20


# ----------------------------------------------------------------------------------------- dynamics
G, MASS = 9.81, 3.0
Z = np.array([0.0, 0.0, 1.0])
X_FLOOR = Transform(Rotation(-math.pi / 2, Z))  # material y < 0
MATERIAL = dict(stiffness=1e6, dissipation=3.0, static_friction=0.8, dynamic_friction=0.6)
AT_REST = 1e-4
BALANCE = 1e-3


def _body_on_floor(geometry, X_BS):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -G, 0.0])
    i = MASS * (3 * R_CYL**2 + 4 * L_CYL**2) / 12
    mp = MassProperties.from_central_inertia(MASS, np.zeros(3), Inertia.from_matrix(np.eye(3) * i))
    body = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    hc = Force.HuntCrossley(forces)
    hc.add_surface(body, geometry, X_BS, **MATERIAL)
    hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), X_FLOOR, **MATERIAL)
    return system, body, hc


@pytest.mark.parametrize("pose", ["standing", "lying"])
def test_cylinder_comes_to_rest_on_the_floor_at_its_laws_depth(pose):
    """A cylinder dropped on the floor, slightly tilted, comes to rest with its weight balanced:
    standing, on four points of its bottom rim (Simbody's vertex law: each sinks m g / (4 k), k = k1 k2 /
    (k1 + k2)), its centre half its length above the floor less that; lying, on its two ends (Hertz
    with R = r: m g / 2 = 4/3 k' d sqrt(r k' d), k' = k^(2/3) / 2), its centre r above less d."""
    # the cylinder's axis (its frame's z) along the body's y (standing) or x (lying)
    X_BS = Transform(Rotation(-math.pi / 2, [1.0, 0, 0])) if pose == "standing" else \
        Transform(Rotation(math.pi / 2, [0, 1.0, 0]))
    system, body, hc = _body_on_floor(ContactGeometry.Cylinder(R_CYL, L_CYL), X_BS)
    rest = L_CYL if pose == "standing" else R_CYL
    state = system.realize_topology()
    body.set_q(state, np.concatenate([Rotation.from_body_fixed_xyz([0.02, 0.0, -0.015]).to_quaternion(),
                                      [0.0, rest + 0.003, 0.0]]))
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(2.5)  # a tall cylinder rocks on its rim for a while before it stands flat
    out = ts.get_state()
    system.realize(out, Stage.Velocity)
    reports = hc.get_contact_reports(out)
    assert np.abs(body.get_body_velocity(out)).max() < AT_REST
    total = sum(rep.force for rep in reports)
    assert total == pytest.approx([0.0, -MASS * G, 0.0], abs=BALANCE * MASS * G)
    if pose == "standing":
        assert len(reports) == 4
        d = MASS * G / 4 / (MATERIAL["stiffness"] / 2)
    else:
        assert len(reports) == 2
        kp = MATERIAL["stiffness"] ** (2 / 3) / 2
        d = (3 * MASS * G / 2 / (4 * kp * math.sqrt(R_CYL * kp))) ** (2 / 3)
    np.testing.assert_allclose([rep.depth for rep in reports], d, rtol=10 * BALANCE)
    y = body.get_body_origin_location(out)[1]
    assert abs(y - (rest - d)) <= 10 * BALANCE * d


def test_a_hull_of_a_boxs_vertices_gives_the_bricks_forces():
    """A box as a ConvexHull of its 8 vertices and as a Brick, on the same body at the same poses,
    pressed into the floor and against a sphere on another body: the accelerations of both bodies are
    the same (the hull's contacts on the floor are the brick's vertices; against the sphere its EPA
    depth is the brick's closed form within EPA's tolerance)."""
    half = np.array([0.2, 0.1, 0.15])
    box = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half
    rng = np.random.default_rng(2)

    def build(geometry):
        system = MultibodySystem()
        matter = SimbodyMatterSubsystem(system)
        forces = GeneralForceSubsystem(system)
        Force.UniformGravity(forces, matter, [0.0, -G, 0.0])
        mp = MassProperties.from_central_inertia(MASS, np.zeros(3), Inertia.from_matrix(np.diag([0.1, 0.2, 0.15])))
        body = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
        ball = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
        hc = Force.HuntCrossley(forces)
        hc.add_surface(body, geometry, **MATERIAL)
        hc.add_surface(ball, ContactGeometry.Sphere(0.1), **MATERIAL)
        hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), X_FLOOR, **MATERIAL)
        return system, body, ball

    sys_b, body_b, ball_b = build(ContactGeometry.Brick(half))
    sys_h, body_h, ball_h = build(ContactGeometry.ConvexHull(box))
    for _ in range(5):
        quat = SciRot.random(random_state=rng).as_quat()[[3, 0, 1, 2]]
        R = SciRot.from_quat(quat[[1, 2, 3, 0]]).as_matrix()
        lowest = float((box @ R.T)[:, 1].min())
        q_body = np.concatenate([quat, [0.0, -lowest - 0.002, 0.0]])
        # the ball's centre 0.07 m from the box's centre along a random direction: overlapping
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        q_ball = np.concatenate([[1.0, 0, 0, 0], q_body[4:] + 0.25 * u])
        v = rng.normal(size=6) * 0.1
        udots = []
        for system, body, ball in ((sys_b, body_b, ball_b), (sys_h, body_h, ball_h)):
            st = system.realize_topology()
            body.set_q(st, q_body)
            ball.set_q(st, q_ball)
            body.set_u(st, v)
            system.realize(st, Stage.Acceleration)
            udots.append(np.array(st.get_udot()))
        scale = float(np.abs(udots[0]).max())
        assert scale > 1.0  # pressed: contact forces beyond gravity's
        # EPA's depth error against the sphere, CONTACT_EPA_REL_TOL x (0.1 + 0.25) m, changes its Hertz force
        # (~ d^1.5) by 1.5 x that / d, relative: below 1e3 x CONTACT_EPA_REL_TOL for depths d above 0.5 mm
        assert np.abs(udots[0] - udots[1]).max() <= 1e3 * CONTACT_EPA_REL_TOL * scale


def test_excluded_pairs_are_left_out_and_nothing_else():
    """Detection with excluded pairs reports exactly the contacts without them less those pairs'; the
    compiled kind (the system's accelerations) and the Python path (get_contacts) agree on it."""
    rng = np.random.default_rng(8)
    geoms = [ContactGeometry.Sphere(0.2) for _ in range(6)] + [ContactGeometry.HalfSpace()]
    poses = [(np.eye(3), rng.normal(size=3) * 0.1 + [0, 0.1, 0]) for _ in range(6)]
    poses.append((np.asarray(X_FLOOR.R.matrix), np.zeros(3)))
    codes, params, R, p, cl, _ = _pack(geoms, poses)
    full = detect(codes, params, R, p, cl)
    pairs_all = set(zip(full.surf1.tolist(), full.surf2.tolist()))
    assert len(pairs_all) >= 10
    excl = sorted(pairs_all)[::3]
    got = detect(codes, params, R, p, cl, exclude=np.array([(j, i) for i, j in excl]))
    assert set(zip(got.surf1.tolist(), got.surf2.tolist())) == pairs_all - set(excl)
    keep = np.array([(a, b) not in excl for a, b in zip(full.surf1.tolist(), full.surf2.tolist())])
    np.testing.assert_array_equal(got.depth, full.depth[keep])
    with pytest.raises(ValueError, match="two different surfaces"):
        detect(codes, params, R, p, cl, exclude=[[1, 1]])
    with pytest.raises(ValueError, match="two different surfaces"):
        detect(codes, params, R, p, cl, exclude=[[0, 7]])


def _spheres_system(excluded):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = MassProperties.from_central_inertia(1.0, np.zeros(3), Inertia.from_matrix(np.eye(3) * 0.01))
    hc = Force.HuntCrossley(forces)
    bodies = []
    for k in range(4):
        b = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
        bodies.append(b)
        hc.add_surface(b, ContactGeometry.Sphere(0.2) if k % 2 else ContactGeometry.ConvexHull(
            [[x, y, z] for x in (-.15, .15) for y in (-.1, .1) for z in (-.12, .12)]), **MATERIAL)
    for i, j in excluded:
        hc.exclude_pair(i, j)
    return system, bodies, hc


def test_compiled_kind_and_python_path_agree_with_exclusions_and_hulls():
    """Four bodies (hulls and spheres) all overlapping, two pairs excluded: the compiled kind's
    accelerations equal those of the forces the Python path reports (each contact's force applied at
    its point, summed per body), and the excluded pairs have no contact."""
    excluded = [(0, 1), (2, 3)]
    system, bodies, hc = _spheres_system(excluded)
    st = system.realize_topology()
    rng = np.random.default_rng(4)
    for k, b in enumerate(bodies):
        b.set_q(st, np.concatenate([SciRot.random(random_state=rng).as_quat()[[3, 0, 1, 2]], rng.normal(size=3) * 0.08]))
    system.realize(st, Stage.Acceleration)
    c = hc.get_contacts(st)
    pairs = set(zip(c.surf1.tolist(), c.surf2.tolist()))
    assert pairs and not pairs & set(excluded)
    assert len(pairs) == 4  # every other pair overlaps
    # the reports' forces, as body forces, give the same accelerations (equal mass 1, so udot's
    # translational parts are the summed forces)
    force = {k: np.zeros(3) for k in range(4)}
    for rep in hc.get_contact_reports(st):
        force[rep.surface2] += rep.force
        force[rep.surface1] -= rep.force
    udot = np.array(st.get_udot()).reshape(4, 6)
    for k in range(4):
        np.testing.assert_allclose(udot[k, 3:], force[k], atol=1e3 * EPS * max(1.0, np.abs(udot).max()))
    with pytest.raises(ValueError, match="never touches itself"):
        hc.exclude_pair(1, 1)
    with pytest.raises(ValueError, match="not a surface index"):
        hc.exclude_pair(0, 9)


def test_bad_shapes_and_packed_data_are_refused():
    """Refusals name what is wrong: a hull of coplanar or too few points, a hull's rows outside the
    vertices, a compiled set whose offsets leave its data."""
    from simtk import _core
    with pytest.raises(ValueError, match="span no volume"):
        ContactGeometry.ConvexHull([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    with pytest.raises(ValueError, match="m >= 4"):
        ContactGeometry.ConvexHull([[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    with pytest.raises(ValueError, match="Cylinder radius"):
        ContactGeometry.Cylinder(0.0, 1.0)
    hull = ContactGeometry.ConvexHull([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)])
    codes, params, R, p, cl, verts = _pack([ContactGeometry.Sphere(1.0), hull], [(np.eye(3), np.zeros(3))] * 2)
    with pytest.raises(ValueError, match="needs its vertices"):
        detect(codes, params, R, p, cl)
    with pytest.raises(ValueError, match="of a ConvexHull must be"):
        detect(codes, params, R, p, cl, vertices=verts[:5])
    row = np.zeros((1, 23))
    row[0, 2] = hull.shape_code
    row[0, 3:6] = (1.0, 8.0, 0.0)
    row[0, 6:15] = np.eye(3).ravel()
    with pytest.raises(ValueError, match="row 0: its ConvexHull's vertices are not in aux"):
        _core.make_force_set("HuntCrossley", params=row, bodies=[[0]], stations=np.zeros((1, 1, 3)),
                             aux=np.zeros(12))
    row[0, 2] = ContactGeometry.Sphere(1.0).shape_code
    row[0, 21:23] = (0.0, 3.0)
    with pytest.raises(ValueError, match="row 0: its excluded pairs are not in aux"):
        _core.make_force_set("HuntCrossley", params=row, bodies=[[0]], stations=np.zeros((1, 1, 3)),
                             aux=np.zeros(4))


def test_shapes_and_exclusions_go_through_the_model_text():
    """A model with a Cylinder, a ConvexHull and an excluded pair, written as text and read back, has
    the same surfaces, the same excluded pairs and the same accelerations."""
    from simtk.io.model_file import model_from_text, model_to_text
    system, bodies, hc = _spheres_system([(0, 1)])
    hc.add_surface(bodies[0], ContactGeometry.Cylinder(0.05, 0.1), Transform(p=[0.0, 0.1, 0.0]), **MATERIAL)
    system2 = model_from_text(model_to_text(system))
    sub = system2.get_force_subsystems()[0]
    hc2 = [sub.get_force(i) for i in range(sub.get_num_forces()) if hasattr(sub.get_force(i), "exclude_pair")][0]
    assert hc2.get_excluded_pairs() == [(0, 1)]
    assert [hc2._surfaces[k].geometry for k in range(5)] == [hc._surfaces[k].geometry for k in range(5)]
    udots = []
    for sy in (system, system2):
        st = sy.realize_topology()
        q = np.array(st.get_q())
        q[:] = 0.0
        for k in range(4):
            q[7 * k:7 * k + 4] = SciRot.random(random_state=np.random.default_rng(k)).as_quat()[[3, 0, 1, 2]]
            q[7 * k + 4:7 * k + 7] = np.random.default_rng(10 + k).normal(size=3) * 0.08
        st.set_q(q)
        sy.realize(st, Stage.Acceleration)
        udots.append(np.array(st.get_udot()))
    assert np.abs(udots[0]).max() > 1.0
    np.testing.assert_array_equal(udots[0], udots[1])


def test_separation_of_apart_pairs_by_gjk():
    """min_separation (the impact witness) of a sphere apart from a cylinder and from a hull whose
    frame's origin is outside it: the distance between them (closed forms in the cylinder's frame; the
    box hull's distance to a point), within EPA's tolerance; minus the depth once they overlap."""
    from simtk.multibody.contact import min_separation
    rng = np.random.default_rng(9)
    cyl = ContactGeometry.Cylinder(R_CYL, L_CYL)
    half = np.array([0.1, 0.2, 0.15])
    off = np.array([0.5, 0.0, 0.0])  # the hull's box is centred 0.5 m from its frame's origin
    box = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half + off
    hull = ContactGeometry.ConvexHull(box)
    for _ in range(20):
        Rs = SciRot.random(random_state=rng).as_matrix()
        ps = rng.normal(size=3) * 0.1
        rs = 0.05
        local = rng.normal(size=3) * 0.4
        rho, z = math.hypot(local[0], local[1]), abs(local[2])
        if rho <= R_CYL and z <= L_CYL:
            continue
        expected = math.hypot(max(rho - R_CYL, 0.0), max(z - L_CYL, 0.0)) - rs
        codes, params, R, p, cl, verts = _pack([ContactGeometry.Sphere(rs), cyl],
                                               [(np.eye(3), Rs @ local + ps), (Rs, ps)])
        got = min_separation(codes, params, R, p, cl, [0, 1], 10.0, vertices=verts)
        assert abs(got - expected) <= 4 * CONTACT_EPA_REL_TOL * (rs + L_CYL) + 1e3 * EPS
        local = rng.normal(size=3) * 0.4 + off
        gap = np.maximum(np.abs(local - off) - half, 0.0)
        if not gap.any():
            continue
        expected = float(np.linalg.norm(gap)) - rs
        codes, params, R, p, cl, verts = _pack([ContactGeometry.Sphere(rs), hull],
                                               [(np.eye(3), Rs @ local + ps), (Rs, ps)])
        got = min_separation(codes, params, R, p, cl, [0, 1], 10.0, vertices=verts)
        assert abs(got - expected) <= 4 * CONTACT_EPA_REL_TOL * (rs + hull.params[0]) + 1e3 * EPS, (got, expected)
