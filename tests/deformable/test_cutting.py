"""Cutting deformable bodies between steps (DeformableBody.remove_segments / remove_tetrahedra /
remove_triangles / cut, through System.request_change and migrate_state).

Checked by independent means:
- every particle's q and u, the rigid bodies' q and u, the time and the loads survive a cut bitwise,
  also when a particle is fixed later (the variables are named by particle, not by position in q);
- the forces, the elastic energy and the implicit step's derivative products after a cut equal those
  of a body built from scratch with the remaining elements; the energy a cut releases equals the
  elastic energy of the removed elements, evaluated by a set made of them alone;
- a cantilever beam cut through its middle at t = 0.5 s (a TimeStepper, or a Simulation, applying the
  request) separates: the free half's centre of mass then accelerates at g exactly (its internal forces
  cancel), follows the free-fall parabola under RK-Merson and gains h g of velocity per step under
  ImplicitEuler, while the clamped half stays;
- a particle left without elements falls at g, even with mass-proportional damping;
- the surface of each piece of a cut box is closed (every edge in exactly two of its triangles, in
  opposite directions) and encloses the piece's volume (divergence theorem);
- bad removals are refused naming the body and the element, with the body and its States unchanged.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)
from simtk._core_fem import TetraSet, TriangleSet
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator, _fem, box_tetrahedra

EPS = np.finfo(float).eps
G = np.array([0.0, -9.81, 0.0])


def _system(gravity=True):
    system = MultibodySystem("cut")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    if gravity:
        Force.UniformGravity(forces, matter, G)
    return system, matter


def _beam(nx=6, young=2e5, damping=0.0, gravity=True):
    """A 0.6 x 0.1 x 0.1 m beam along x clamped at x = 0, one cell across."""
    system, matter = _system(gravity)
    pts, tets = box_tetrahedra(0.6, 0.1, 0.1, nx, 1, 1)
    body = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, young, 0.3, damping, name="beam")
    body.fix(np.flatnonzero(pts[:, 0] == 0.0))
    return system, matter, body, pts, tets


def _randomize(system, state, rng, scale=1e-3):
    state.set_q(state.get_q() + scale * rng.normal(size=state.get_nq()))
    state.set_u(rng.normal(size=state.get_nu()))


def _named(system, state):
    return {p: state.get_y()[i] for p, i in state._names.items()}


def test_a_cut_keeps_every_particle_and_rigid_body_state_bitwise():
    system, matter, body, pts, tets = _beam()
    mp = MassProperties.from_central_inertia(2.0, [0.0, 0.0, 0.0], np.diag([0.02, 0.03, 0.04]))
    pend = MobilizedBody.Pin(matter.ground, Transform(p=[0.8, 0.0, 0.0]), Body.Rigid(mp), Transform(p=[0.0, 0.2, 0.0]))
    tip = int(np.flatnonzero(pts[:, 0] == 0.6)[0])
    body.attach(tip, pend, [0.0, 0.2, 0.0])
    s = system.realize_topology()
    rng = np.random.default_rng(7)
    _randomize(system, s, rng)
    s.set_time(0.37)
    loads = rng.normal(size=(len(pts), 3))
    body.set_loads(s, loads)
    system.realize(s, Stage.Acceleration)
    before = _named(system, s)
    x_before = body.get_positions(s).copy()
    v_before = body.get_velocities(s).copy()
    # every free particle has its own three q and three u, named by the particle
    assert len(before) == s.get_nq() + s.get_nu() and len(body.get_free_particles()) * 6 + 2 == len(before)
    i = int(body.get_free_particles()[3])
    assert system.get_state_variable_value(s, f"/beam/particle_{i}/y") == x_before[i, 1]
    assert system.get_state_variable_value(s, f"/beam/particle_{i}/vz") == v_before[i, 2]

    removed = {}
    system.request_change(lambda sys: removed.update(body.cut([0.35, 0.0, 0.0], [1.0, 0.0, 0.0])))
    new = system.apply_pending_changes(s)
    assert len(removed["tet"]) == 6 and not system.has_pending_changes()
    after = _named(system, new)
    assert after.keys() == before.keys()
    for path, value in before.items():  # bitwise: the same float, not a near one
        assert after[path] == value and np.signbit(after[path]) == np.signbit(value), path
    assert new.get_time() == 0.37
    system.realize(new, Stage.Velocity)
    np.testing.assert_array_equal(body.get_positions(new), x_before)
    np.testing.assert_array_equal(body.get_velocities(new), v_before)
    system.realize(new, Stage.Dynamics)
    np.testing.assert_array_equal(body.get_discrete_variable(new, body._dv_loads), loads)
    with pytest.raises(Exception, match="topolog"):
        system.realize(s, Stage.Position)  # the old State belongs to the old topology

    # fixing one more particle (another topology change) shifts the others in q: their paths keep them
    j = int(body.get_free_particles()[0])
    body.fix(j)
    newer = system.migrate_state(new)
    after2 = _named(system, newer)
    gone = {f"/beam/particle_{j}/{c}" for c in ("x", "y", "z", "vx", "vy", "vz")}
    assert after2.keys() == before.keys() - gone
    assert all(after2[p] == before[p] for p in after2)


def _kinds_and_scratch(kind, rng):
    """(system, body) with elements of ``kind`` and (remaining indices -> a body built from scratch)."""
    if kind == "tet":
        pts, conn = box_tetrahedra(0.3, 0.2, 0.1, 3, 2, 1)

        def make(c, name):
            system, _ = _system(gravity=False)
            return system, DeformableBody.from_tetrahedra(system, pts, c, 1000.0, 1e5, 0.3, 0.01, name=name)
    elif kind == "triangle":
        X, Y = np.meshgrid(np.linspace(0, 0.3, 4), np.linspace(0, 0.2, 3), indexing="ij")
        pts = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], axis=1)
        conn = np.array([t for i in range(3) for j in range(2) for t in
                         ([i * 3 + j, (i + 1) * 3 + j, (i + 1) * 3 + j + 1], [i * 3 + j, (i + 1) * 3 + j + 1, i * 3 + j + 1])])

        def make(c, name):
            system, _ = _system(gravity=False)
            return system, DeformableBody.from_triangles(system, pts, c, 1000.0, 1e5, 0.3, 0.01, 0.02, name=name)  # h 1 cm
    else:
        pts = rng.normal(size=(8, 3))
        conn = np.array([[i, j] for i in range(8) for j in range(i + 1, 8) if (i + j) % 3])
        k = rng.uniform(10, 100, len(conn))
        c_ = rng.uniform(0, 1, len(conn))
        L0 = rng.uniform(0.5, 2, len(conn))

        def make(c, name):
            sel = [int(np.flatnonzero((conn == row).all(1))[0]) for row in c]
            system, _ = _system(gravity=False)
            return system, DeformableBody.from_segments(system, pts, c, 0.1, k[sel], c_[sel], rest_lengths=L0[sel],
                                                        name=name)
        return pts, conn, make, k, L0
    return pts, conn, make, None, None


@pytest.mark.parametrize("kind", ["tet", "triangle", "segment"])
def test_after_a_cut_forces_energy_and_products_equal_a_body_built_from_the_rest(kind):
    rng = np.random.default_rng(11)
    pts, conn, make, spring_k, spring_L0 = _kinds_and_scratch(kind, rng)
    system, body = make(conn, "cut")
    s = system.realize_topology()
    # a large motion, so the corotational frames and the springs' directions all matter
    x = pts @ np.array([[1.1, 0.2, 0.0], [-0.1, 0.9, 0.1], [0.0, 0.05, 1.05]]) + 0.01 * rng.normal(size=pts.shape)
    v = rng.normal(size=pts.shape)
    body.set_positions(s, x)
    body.set_velocities(s, v)
    system.realize(s, Stage.Dynamics)
    e_before = system.calc_energy(s)

    point = pts.mean(axis=0) + [0.013, 0.0, 0.0]
    normal = np.array([1.0, 0.2, 0.1])
    system.request_change(lambda sys: body.cut(point, normal))
    new = system.apply_pending_changes(s)
    system.realize(new, Stage.Dynamics)
    keep = body.get_remaining_element_indices(kind)
    gone = np.setdiff1d(np.arange(len(conn)), keep)
    assert 0 < len(gone) < len(conn)
    d = (pts - point) @ normal  # independently: the removed ones are those with vertices on both sides
    np.testing.assert_array_equal((d[conn] > 0).any(1) & (d[conn] < 0).any(1), np.isin(np.arange(len(conn)), gone))
    getter = {"tet": body.get_tetrahedra, "triangle": body.get_triangles, "segment": body.get_segments}[kind]
    np.testing.assert_array_equal(getter(), conn[keep])

    twin_system, twin = make(conn[keep], "twin")
    t = twin_system.realize_topology()
    twin.set_positions(t, x)
    twin.set_velocities(t, v)
    twin_system.realize(t, Stage.Dynamics)
    f, f_twin = body.get_particle_forces(new), twin.get_particle_forces(t)
    scale = np.abs(f_twin).max()
    np.testing.assert_allclose(f, f_twin, rtol=0, atol=64 * EPS * scale)
    e_el = body.calc_potential_energy(new)
    np.testing.assert_allclose(e_el, twin.calc_potential_energy(t), rtol=64 * EPS)
    # the implicit step's K and D products see only the remaining elements too
    dx, dv = rng.normal(size=pts.shape), rng.normal(size=pts.shape)
    out, out_twin = np.zeros_like(x), np.zeros_like(x)
    xc = np.ascontiguousarray(body.get_positions(new))
    body._add_element_derivative_product(xc, dx, dv, 0.3, 0.7, out)
    twin._add_element_derivative_product(xc, dx, dv, 0.3, 0.7, out_twin)
    np.testing.assert_allclose(out, out_twin, rtol=0, atol=64 * EPS * np.abs(out_twin).max())

    # the energy the cut released is the removed elements' elastic energy (kinetic energy is unchanged:
    # the particles keep their masses and velocities)
    removed = conn[gone]
    mu, lam = _fem.lame(1e5, 0.3, len(gone), "removed")
    if kind == "tet":
        Bm, vol = _fem.rest_geometry(pts, removed, "removed")
        removed_set = TetraSet(len(pts), removed, Bm, vol, mu, lam, np.ones(len(pts)), 0.0, 0.0)
    elif kind == "triangle":
        Bm, area = _fem.triangle_rest_geometry(pts, removed, "removed")
        removed_set = TriangleSet(len(pts), removed, Bm, 0.01 * area, mu, 2 * mu * lam / (lam + 2 * mu),
                                  np.ones(len(pts)), 0.0, 0.0)
    if kind == "segment":  # springs: 1/2 k (L - L0)^2, written out
        sel = gone
        stretch = np.linalg.norm(x[removed[:, 1]] - x[removed[:, 0]], axis=1) - spring_L0[sel]
        e_removed = 0.5 * float(np.sum(spring_k[sel] * stretch ** 2))
    else:
        e_removed = removed_set.add_forces(np.ascontiguousarray(x), np.zeros_like(x), np.zeros_like(x))
    assert e_removed > 0
    np.testing.assert_allclose(e_before - system.calc_energy(new), e_removed, rtol=1e3 * EPS)


def _com(body, state, rows):
    m = body.get_masses()[rows]
    x = body.get_positions(state)[rows]
    v = body.get_velocities(state)[rows]
    return m @ x / m.sum(), m @ v / m.sum()


def _com_acceleration(system, body, state, rows):
    system.realize(state, Stage.Acceleration)
    udot = state.get_udot()[body.get_u_start(state):][:3 * len(body.get_free_particles())].reshape(-1, 3)
    a = np.zeros((body.get_num_particles(), 3))
    a[body.get_free_particles()] = udot
    m = body.get_masses()[rows]
    return m @ a[rows] / m.sum()


@pytest.mark.parametrize("method", ["rk_merson", "implicit_euler"])
def test_a_cantilever_cut_through_its_middle_at_half_a_second_drops_its_free_half(method):
    system, matter, body, pts, tets = _beam(young=2e6, damping=1e-4)
    free_half = np.flatnonzero(pts[:, 0] >= 0.35)
    clamped_half = np.flatnonzero(pts[:, 0] <= 0.3)
    s = system.realize_topology()
    system.realize(s, Stage.Velocity)
    if method == "rk_merson":
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-8)
        h = None
    else:
        h = 2e-3
        integ = ImplicitEulerIntegrator(system, h, cg_tolerance=1e-12)
    ts = TimeStepper(system, integ)
    ts.initialize(s)
    ts.step_to(0.5)
    s05 = ts.get_state()
    x05, v05 = body.get_positions(s05).copy(), body.get_velocities(s05).copy()
    m = body.get_masses()[free_half]
    rest = m @ pts[free_half] / m.sum()
    assert np.linalg.norm(m @ x05[free_half] / m.sum() - rest) < 0.1  # the beam held it (free fall: 1.2 m)

    system.request_change(lambda sys: body.cut([0.325, 0.0, 0.0], [1.0, 0.0, 0.0]))
    ts.step_to(0.5)  # applies the change, takes no step
    cut = ts.get_state()
    assert cut.get_time() == 0.5 and len(body.get_tetrahedra()) == len(tets) - 6
    system.realize(cut, Stage.Velocity)
    np.testing.assert_array_equal(body.get_positions(cut), x05)
    np.testing.assert_array_equal(body.get_velocities(cut), v05)
    c0, v0 = _com(body, cut, free_half)
    # its internal forces cancel (translation invariance): only gravity is left on the free half
    np.testing.assert_allclose(_com_acceleration(system, body, cut.copy(), free_half), G, rtol=0,
                               atol=1e3 * EPS * 9.81)
    ts.step_to(1.0)
    end = ts.get_state()
    system.realize(end, Stage.Velocity)
    c1, v1 = _com(body, end, free_half)
    dt = 0.5
    if method == "rk_merson":
        np.testing.assert_allclose(v1, v0 + G * dt, rtol=0, atol=1e-6)
        np.testing.assert_allclose(c1, c0 + v0 * dt + 0.5 * G * dt ** 2, rtol=0, atol=1e-6)
    else:
        # each step adds h g to the centre's velocity (K and D rows of a piece sum to zero), x follows u1
        n = round(dt / h)
        np.testing.assert_allclose(v1, v0 + G * dt, rtol=0, atol=1e-7)
        np.testing.assert_allclose(c1, c0 + v0 * dt + G * h * h * n * (n + 1) / 2, rtol=0, atol=1e-7)
    assert c1[1] < c0[1] - 0.5  # it fell (g t^2 / 2 is 1.2 m; it was swinging up at the cut)
    clamped1, _ = _com(body, end, clamped_half)
    mc = body.get_masses()[clamped_half]
    assert np.linalg.norm(clamped1 - mc @ pts[clamped_half] / mc.sum()) < 0.02  # the clamped half stays


def test_a_simulation_applies_a_cut_requested_between_its_runs():
    from simtk.simulation import Simulation

    system, matter, body, pts, tets = _beam(young=2e6, damping=1e-4)
    free_half = np.flatnonzero(pts[:, 0] >= 0.35)
    m = body.get_masses()[free_half]
    sim = Simulation(system, system.realize_topology(), integrator=ImplicitEulerIntegrator(system, 2e-3, 1e-12),
                     step_size=0.01)
    sim.run(0.5)
    s = sim.get_state()
    system.realize(s, Stage.Velocity)
    v0 = m @ body.get_velocities(s)[free_half] / m.sum()
    system.request_change(lambda sys: body.cut([0.325, 0.0, 0.0], [1.0, 0.0, 0.0]))
    sim.run(1.0)
    end = sim.get_state()
    system.realize(end, Stage.Velocity)
    assert end.get_time() == 1.0 and len(body.get_tetrahedra()) == len(tets) - 6
    np.testing.assert_allclose(m @ body.get_velocities(end)[free_half] / m.sum(), v0 + 0.5 * G, rtol=0, atol=1e-7)


def test_a_particle_left_without_elements_falls_freely():
    system, _ = _system()
    pts, tets = box_tetrahedra(0.2, 0.1, 0.1, 2, 1, 1)
    body = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, 1e5, 0.3, (5.0, 0.01), name="block")
    corner = int(np.flatnonzero((pts == [0.2, 0.1, 0.1]).all(1))[0])
    around = np.flatnonzero((tets == corner).any(1))
    s = system.realize_topology()
    rng = np.random.default_rng(3)
    _randomize(system, s, rng, 1e-2)
    m_before = body.get_masses().copy()
    system.request_change(lambda sys: body.remove_tetrahedra(around))
    new = system.apply_pending_changes(s)
    system.realize(new, Stage.Acceleration)
    np.testing.assert_array_equal(body.get_masses(), m_before)  # a cut removes no material
    # in Kuhn's split every tet of a cell holds its main diagonal: the far cell goes, and with it the far face
    orphans = np.setdiff1d(np.arange(len(pts)), np.delete(tets, around, axis=0))
    np.testing.assert_array_equal(orphans, np.flatnonzero(pts[:, 0] == 0.2))
    udot = np.zeros_like(pts)
    udot[body.get_free_particles()] = new.get_udot()[body.get_u_start(new):].reshape(-1, 3)
    np.testing.assert_allclose(udot[orphans], np.broadcast_to(G, (len(orphans), 3)), rtol=0, atol=4 * EPS * 9.81)
    held = np.abs(udot - G).max(axis=1) > 1.0
    assert held[pts[:, 0] < 0.2].all()  # the others are still held by their elements (and damped)


def _pieces(tets, n):
    """Connected groups of tets (sharing a vertex), by union-find on the vertices."""
    parent = np.arange(n)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for t in tets:
        r = [find(int(v)) for v in t]
        for q in r[1:]:
            parent[q] = r[0]
    roots = np.array([find(int(t[0])) for t in tets])
    return [tets[roots == r] for r in np.unique(roots)]


def test_each_piece_of_a_cut_box_has_a_closed_outward_surface():
    system, _ = _system()
    pts, tets = box_tetrahedra(0.4, 0.3, 0.2, 4, 3, 3)
    body = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, 1e5, 0.3, name="box")
    system.realize_topology()
    body.cut([0.15, 0.0, 0.0], [1.0, 0.0, 0.0])
    body.cut([0.0, 0.0, 0.1], [0.0, 0.0, 1.0])  # through the middle layer of cells
    surface = body.get_surface_triangles()
    pieces = _pieces(body.get_tetrahedra(), len(pts))
    assert len(pieces) == 4
    owned = np.zeros(len(surface), dtype=int)
    for piece in pieces:
        verts = np.unique(piece)
        mine = np.isin(surface, verts).all(1)
        owned += mine
        tri = surface[mine]
        # closed and consistently oriented: each directed edge once, and its reverse once
        edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
        directed = {tuple(e) for e in edges.tolist()}
        assert len(directed) == len(edges)
        assert all((b, a) in directed for a, b in directed)
        undirected, counts = np.unique(np.sort(edges, axis=1), axis=0, return_counts=True)
        assert (counts == 2).all()
        a, b, c = (pts[tri[:, k]] for k in range(3))
        volume = np.sum(np.cross(b - a, c - a) * (a + b + c) / 3) / 6
        e = np.stack([pts[piece[:, j]] - pts[piece[:, 0]] for j in (1, 2, 3)], axis=2)
        np.testing.assert_allclose(volume, np.linalg.det(e).sum() / 6, rtol=1e3 * EPS)
    assert (owned == 1).all()  # every surface triangle belongs to exactly one piece


def test_bad_removals_are_refused_naming_the_body_and_the_element_before_anything_changes():
    system, matter, body, pts, tets = _beam()
    s = system.realize_topology()
    version = system.get_system_topology_cache_version()
    with pytest.raises(IndexError, match=r"'beam'.*remove_tetrahedra: tet 36 is outside 0\.\.35"):
        body.remove_tetrahedra([3, 36])
    with pytest.raises(IndexError, match=r"'beam'.*tet -1 is outside"):
        body.remove_tetrahedra(-1)
    with pytest.raises(ValueError, match=r"'beam'.*tet 4 is listed twice"):
        body.remove_tetrahedra([4, 5, 4])
    with pytest.raises(TypeError, match=r"'beam'.*expected tet indices"):
        body.remove_tetrahedra([1.5])
    with pytest.raises(ValueError, match=r"'beam'.*remove_segments: the body has no segments"):
        body.remove_segments([0])
    with pytest.raises(ValueError, match=r"'beam'.*remove_triangles: the body has no triangles"):
        body.remove_triangles([0])
    with pytest.raises(ValueError, match=r"'beam'.*cut: plane_normal must be nonzero"):
        body.cut([0.3, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match=r"'beam'.*cut: plane_point .* not finite"):
        body.cut([np.nan, 0, 0], [1, 0, 0])
    with pytest.raises(ValueError, match=r"'beam'.*cut: positions: expected 28 rows"):
        body.cut([0.3, 0, 0], [1, 0, 0], positions=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"'beam'.*element kind 'tets'"):
        body.get_remaining_element_indices("tets")
    # nothing changed: the State is still of the current topology and every element is there
    assert system.get_system_topology_cache_version() == version
    system.realize(s, Stage.Dynamics)
    np.testing.assert_array_equal(body.get_tetrahedra(), tets)

    body.remove_tetrahedra([3])
    with pytest.raises(ValueError, match=r"'beam'.*tet 3 was removed already"):
        body.remove_tetrahedra([2, 3])
    np.testing.assert_array_equal(body.get_remaining_element_indices("tet"), np.delete(np.arange(len(tets)), 3))
    # a plane through a layer of nodes touches elements but crosses none: it cuts nothing
    assert len(body.cut([0.3, 0.0, 0.0], [1.0, 0.0, 0.0])["tet"]) == 0
