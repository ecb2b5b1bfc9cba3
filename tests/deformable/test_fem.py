"""Corotational linear tetrahedra (simtk.deformable.DeformableBody.from_tetrahedra, TetraSet).

Checked by independent means:
- the forces are minus the finite-difference gradient of the elastic energy at a large deformation (so
  the polar rotation is exact and the energy conserved); the stiffness product equals the finite
  difference of the forces at the rest shape and at a rigid rotation of it (where freezing the
  rotations is exact); elsewhere it is symmetric positive semidefinite; the damping product is the
  finite difference of the forces in v;
- a rigidly rotated and moved mesh has zero force and energy, and a deformed one rotated has the
  rotated forces and the same energy (objectivity), at angles where linear FEM would be far off;
- a bar hanging under its own weight (Poisson 0), settled by ImplicitEulerIntegrator, stretches by
  rho g L^2 / (2 E) (elasticity's solution);
- a cantilever under gravity converges toward Euler-Bernoulli's tip deflection q L^4 / (8 E I) as the
  mesh is refined;
- a tet block attached to a rigid pendulum conserves energy under RK-Merson to the integrator's
  accuracy;
- the boundary surface closes: outward normals give the box's volume (divergence theorem) and area;
- read_mesh gives back what meshio wrote; bad input is refused naming the body and the tet.
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
    Transform,
)
from simtk._core_fem import TetraSet
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator, _fem, box_tetrahedra, read_mesh

EPS = np.finfo(float).eps
G = np.array([0.0, -9.81, 0.0])


def _rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _tetra_set(points, tets, young=2e5, poisson=0.3, alpha_m=0.0, beta_k=0.0, density=1000.0):
    where = "test"
    Bm, vol = _fem.rest_geometry(points, tets, where)
    mu, lam = _fem.lame(young, poisson, len(tets), where)
    m = _fem.lumped_masses(len(points), tets, vol, density, where)
    return TetraSet(len(points), tets, Bm, vol, mu, lam, m, alpha_m, beta_k), m


def _forces(ts, x, v=None):
    f = np.zeros_like(x)
    e = ts.add_forces(np.ascontiguousarray(x), np.zeros_like(x) if v is None else np.ascontiguousarray(v), f)
    return f, e


def _product(ts, x, dx, dv, alpha, beta):
    out = np.zeros_like(x)
    ts.add_derivative_product(np.ascontiguousarray(x), np.ascontiguousarray(dx), np.ascontiguousarray(dv),
                              alpha, beta, out, True)
    return out


def test_forces_are_the_energy_gradient_and_products_match_finite_differences():
    rng = np.random.default_rng(3)
    pts, tets = box_tetrahedra(0.2, 0.1, 0.1, 2, 1, 1)
    ts, m = _tetra_set(pts, tets, alpha_m=0.7, beta_k=0.01)
    n = len(pts)
    # a large deformation: stretched 30 %, sheared, turned 1 rad, plus noise
    A = np.array([[1.3, 0.2, 0.0], [0.0, 0.9, 0.1], [0.05, 0.0, 1.1]])
    Q = _rotation(rng)
    x = (pts @ A.T + 0.01 * rng.normal(size=pts.shape)) @ Q.T
    f, e = _forces(ts, x)
    assert e > 0
    h = 1e-6
    grad = np.zeros(3 * n)
    for i in range(3 * n):
        d = np.zeros(3 * n)
        d[i] = h
        grad[i] = (_forces(ts, x + d.reshape(n, 3))[1] - _forces(ts, x - d.reshape(n, 3))[1]) / (2 * h)
    np.testing.assert_allclose(f.reshape(-1), -grad, atol=1e-6 * np.abs(f).max())
    # the damping product: the force is linear in v (rotations from x), D = alpha_M M + beta_K K
    v, dv = rng.normal(size=(2, n, 3))
    fd_v = (_forces(ts, x, v + h * dv)[0] - _forces(ts, x, v - h * dv)[0]) / (2 * h)
    np.testing.assert_allclose(_product(ts, x, 0 * dv, dv, 0.0, 1.0), -fd_v, atol=1e-7 * np.abs(fd_v).max())
    # K with the rotations frozen is exact at the rest shape and at a rigid rotation of it
    for shape in (pts, pts @ Q.T + [0.3, -1.0, 2.0]):
        dx = rng.normal(size=(n, 3))
        fd_x = (_forces(ts, shape + h * dx)[0] - _forces(ts, shape - h * dx)[0]) / (2 * h)
        np.testing.assert_allclose(_product(ts, shape, dx, 0 * dx, 1.0, 0.0), -fd_x, atol=1e-6 * np.abs(fd_x).max())
    # at the large deformation it is symmetric positive semidefinite (SOFA's choice), and the rotations it
    # uses follow x (a product after forces at another x recomputes them)
    _forces(ts, pts)
    K = np.column_stack([_product(ts, x, np.eye(3 * n)[i].reshape(n, 3), np.zeros((n, 3)), 1.0, 0.0).reshape(-1)
                         for i in range(3 * n)])
    scale = np.abs(K).max()
    np.testing.assert_allclose(K, K.T, atol=100 * EPS * scale)
    ev = np.linalg.eigvalsh(K)
    assert ev.min() >= -100 * EPS * scale * 3 * n
    # only the translations are free: with the rotations frozen, a turn of the deformed shape strains it
    assert np.sum(ev < 1e-9 * scale) == 3
    _forces(ts, x)
    K2 = np.column_stack([_product(ts, x, np.eye(3 * n)[i].reshape(n, 3), np.zeros((n, 3)), 1.0, 0.0).reshape(-1)
                          for i in range(3 * n)])
    np.testing.assert_array_equal(K, K2)


def test_rigid_motions_cost_nothing_and_rotations_rotate_the_forces():
    rng = np.random.default_rng(5)
    young, L = 2e5, 0.1
    pts, tets = box_tetrahedra(L, L, 2 * L, 2, 2, 3)
    ts, _ = _tetra_set(pts, tets, young=young)
    A = np.eye(3) + 0.05 * rng.normal(size=(3, 3))
    x = pts @ A.T
    f0, e0 = _forces(ts, x)
    force_scale = young * L * L * 0.05  # a 5 % strain over a face of the block
    for angle in (0.3, 2.0, 3.1):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        K = np.cross(np.eye(3), axis)
        Q = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
        p = rng.normal(size=3)
        f, e = _forces(ts, pts @ Q.T + p)
        assert np.abs(f).max() <= 1e3 * EPS * young * L * L
        assert e <= 1e3 * EPS * young * L ** 3
        f, e = _forces(ts, x @ Q.T + p)
        np.testing.assert_allclose(f, f0 @ Q.T, atol=1e3 * EPS * force_scale)
        assert abs(e - e0) <= 1e3 * EPS * e0
    # linear elasticity (no rotation) would resist the 2 rad turn strongly: the check above can fail
    Bm, vol = _fem.rest_geometry(pts, tets, "t")
    F = np.einsum("tij,tjk->tik", np.stack([(pts @ Q.T)[tets[:, j]] - (pts @ Q.T)[tets[:, 0]] for j in (1, 2, 3)],
                                           axis=2), Bm)
    assert np.abs(0.5 * (F + F.transpose(0, 2, 1)) - np.eye(3)).max() > 0.1


def _hanging_bar(L, width, n_len, n_w, E, rho, damping=0.0):
    system = MultibodySystem("bar")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    pts, tets = box_tetrahedra(width, L, width, n_w, n_len, n_w)
    pts[:, 1] -= L  # hangs from y = 0 down to y = -L
    body = DeformableBody.from_tetrahedra(system, pts, tets, rho, E, 0.0, damping, name="bar")
    body.fix(np.flatnonzero(pts[:, 1] == 0.0))
    return system, body, pts


def test_bar_hanging_under_its_own_weight_stretches_by_rho_g_L2_over_2E():
    L, E, rho = 1.0, 1e7, 1000.0
    system, body, pts = _hanging_bar(L, 0.1, 10, 2, E, rho, damping=(5.0, 1e-3))
    s = system.realize_topology()
    system.realize_model(s)
    integ = ImplicitEulerIntegrator(system, 0.01)
    integ.initialize(s)
    integ.step_to(2.0)
    end = integ.get_state()
    system.realize(end, Stage.Acceleration)
    x = body.get_positions(end)
    bottom = pts[:, 1] == -L
    stretch = -np.mean(x[bottom, 1] - pts[bottom, 1])
    want = rho * 9.81 * L ** 2 / (2 * E)
    assert abs(stretch - want) <= 0.02 * want, (stretch, want)
    # settled: the velocities are gone, and the displacement down the bar is elasticity's parabola
    assert np.abs(body.get_velocities(end)).max() * 0.01 <= 1e-4 * want  # a step moves it 1e-4 of the stretch
    # (each cross-section's mean: the tets' diagonals make a section's points differ by a few % of it)
    levels = np.unique(pts[:, 1])
    u = np.array([-np.mean(x[pts[:, 1] == y, 1] - y) for y in levels])
    exact = rho * 9.81 / E * (-levels * L - 0.5 * levels ** 2)
    assert np.abs(u - exact).max() <= 0.02 * want


def _static_solve(ts, m, pts, free):
    """The positions where the elements carry the free particles' weight: Newton with the rest stiffness
    (by conjugate gradients) on the corotational forces."""
    from scipy.sparse.linalg import LinearOperator, cg

    n = len(pts)
    dofs = (3 * free[:, None] + np.arange(3)).reshape(-1)
    zero = np.zeros((n, 3))

    def k_product(v):
        d = np.zeros(3 * n)
        d[dofs] = v
        return _product(ts, pts, d.reshape(n, 3), zero, 1.0, 0.0).reshape(-1)[dofs]

    K = LinearOperator((len(dofs), len(dofs)), matvec=k_product)
    weight = (m[:, None] * G).reshape(-1)[dofs]
    x = pts.copy()
    for _ in range(10):
        r = _forces(ts, x)[0].reshape(-1)[dofs] + weight
        # the forces' round-off (differences of stresses ~ E) sits near 1e-9 of the nodal weights here
        if np.abs(r).max() <= 1e-6 * np.abs(weight).max():
            return x
        du, info = cg(K, r, rtol=1e-9, maxiter=20 * len(dofs))
        assert info == 0
        x.reshape(-1)[dofs] += du
    raise AssertionError("the static solve did not converge")


def _cantilever_tip(nx, L=1.0, hgt=0.1, E=1e9, rho=1000.0):
    """Tip deflection (mean over the free end) of a cantilever along x fixed at x = 0, gravity -y."""
    nw = max(1, nx // 4)
    pts, tets = box_tetrahedra(L, hgt, hgt, nx, nw, nw)
    ts, m = _tetra_set(pts, tets, young=E, poisson=0.0, density=rho)
    x = _static_solve(ts, m, pts, np.flatnonzero(pts[:, 0] > 0.0))
    tip = pts[:, 0] == L
    return -np.mean(x[tip, 1] - pts[tip, 1])


def test_per_tet_moduli_two_materials_in_series():
    """A hanging bar whose upper half has Young's modulus E1 and lower half E2 (Poisson 0) stretches by
    rho g L^2 (3 / (8 E1) + 1 / (8 E2)) (the weight below each section over its stiffness)."""
    L, rho, E1, E2 = 1.0, 1000.0, 1e7, 2.5e6
    pts, tets = box_tetrahedra(0.1, L, 0.1, 2, 10, 2)
    pts[:, 1] -= L
    upper = pts[tets, 1].mean(axis=1) > -L / 2
    ts, m = _tetra_set(pts, tets, young=np.where(upper, E1, E2), poisson=0.0, density=rho)
    x = _static_solve(ts, m, pts, np.flatnonzero(pts[:, 1] < 0.0))
    bottom = pts[:, 1] == -L
    stretch = -np.mean(x[bottom, 1] - pts[bottom, 1])
    want = rho * 9.81 * L ** 2 * (3 / (8 * E1) + 1 / (8 * E2))
    assert abs(stretch - want) <= 0.02 * want, (stretch, want)
    uniform = rho * 9.81 * L ** 2 / (2 * E1)
    assert stretch > 1.5 * uniform  # (the soft half shows)


def test_cantilever_converges_toward_euler_bernoulli():
    """Linear tets are stiff in bending (they lock): the tip deflection rises toward q L^4 / (8 E I)
    under refinement (Timoshenko's shear adds 0.8 % at L / h = 10). Measured (L = 1, 0.1 x 0.1 section,
    E = 1e9, rho = 1000, Poisson 0, 6 tets per cell):

    ==  ============  =======  ========
    nx  cells         tets     w / w_EB
    ==  ============  =======  ========
    4   4 x 1 x 1     24       0.091
    8   8 x 2 x 2     192      0.273
    16  16 x 4 x 4    1536     0.595
    32  32 x 8 x 8    12288    0.857
    ==  ============  =======  ========
    """
    L, hgt, E, rho = 1.0, 0.1, 1e9, 1000.0
    q = rho * 9.81 * hgt * hgt
    w_eb = q * L ** 4 / (8 * E * hgt ** 4 / 12)
    ratios = [_cantilever_tip(nx, L, hgt, E, rho) / w_eb for nx in (4, 8, 16, 32)]
    print("w / w_EB at nx = 4, 8, 16, 32:", np.round(ratios, 4))
    assert all(a < b for a, b in zip(ratios, ratios[1:])) and ratios[-1] < 1.02
    errors = 1.0 - np.array(ratios)
    assert (errors[1:] / errors[:-1] < 0.9).all() and errors[-1] < 0.5 * errors[-2]  # and faster as it nears
    assert ratios[-1] > 0.8


def _arm_with_block(E=5e4, rho=500.0, damping=0.0):
    system = MultibodySystem("arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    mp = MassProperties.from_central_inertia(1.0, [0.0, 0.0, 0.0], np.diag([0.01, 0.01, 0.01]))
    # a pin along z at the origin; the arm's body frame 0.3 m out along x
    arm = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(mp), Transform(p=[-0.3, 0.0, 0.0]))
    pts, tets = box_tetrahedra(0.2, 0.06, 0.06, 3, 1, 1)
    pts += [0.3, -0.03, -0.03]
    body = DeformableBody.from_tetrahedra(system, pts, tets, rho, E, 0.3, damping, name="block")
    for i in np.flatnonzero(pts[:, 0] == 0.3):
        body.attach(int(i), arm, pts[i] - [0.3, 0.0, 0.0])
    return system, matter, arm, body


def test_block_on_a_rigid_arm_conserves_energy_with_rk_merson():
    system, matter, arm, body = _arm_with_block()
    s = system.realize_topology()
    system.realize_model(s)
    arm.set_one_u(s, 0, 2.0)
    system.realize(s, Stage.Acceleration)
    e0 = system.calc_energy(s)
    scale = sum(abs(x) for x in (matter.calc_kinetic_energy(s), body.calc_kinetic_energy(s),
                                 body.calc_potential_energy(s), system.calc_potential_energy(s)))
    drifts = []
    for acc in (1e-4, 1e-7):
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(acc)
        integ.initialize(s)
        integ.step_to(0.3)
        end = integ.get_state()
        system.realize(end, Stage.Velocity)
        x = np.ascontiguousarray(body.get_positions(end))
        elastic = body._add_element_forces(x, np.zeros_like(x), np.zeros_like(x))
        assert elastic > 0.1 * scale  # the block bends: its elastic energy is a good part of the exchange
        drifts.append(abs(system.calc_energy(end) - e0))
        assert drifts[-1] <= 5 * acc * scale, (acc, drifts[-1], scale)
    assert drifts[1] < drifts[0]


def test_block_on_a_rigid_arm_implicit_euler_converges_at_first_order():
    """The implicit step couples the tets' K and D to the arm through the attached stations (J^T K J):
    its error against RK-Merson halves with h."""
    t_end = 0.1

    def run(integ_for):
        system, matter, arm, body = _arm_with_block(damping=(2.0, 2e-3))
        s = system.realize_topology()
        system.realize_model(s)
        arm.set_one_u(s, 0, 2.0)
        integ = integ_for(system)
        integ.initialize(s)
        integ.step_to(t_end)
        return integ.get_state().get_y().copy()

    def rk(system):
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-10)
        return integ

    ref = run(rk)
    errs = [np.abs(run(lambda system: ImplicitEulerIntegrator(system, h)) - ref).max() for h in (1e-3, 5e-4, 2.5e-4)]
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert ((ratios > 1.7) & (ratios < 2.3)).all(), (errs, ratios)


def test_surface_triangles_close_the_box_outward():
    lx, ly, lz = 0.3, 0.2, 0.1
    pts, tets = box_tetrahedra(lx, ly, lz, 3, 2, 2)
    system = MultibodySystem("s")
    SimbodyMatterSubsystem(system)
    body = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, 1e5, 0.3, name="box")
    tri = body.get_surface_triangles()
    assert tri.shape == (2 * 2 * (3 * 2 + 2 * 2 + 2 * 3), 3)
    a, b, c = (pts[tri[:, k]] for k in range(3))
    cross = np.cross(b - a, c - a)
    np.testing.assert_allclose(0.5 * np.linalg.norm(cross, axis=1).sum(), 2 * (lx * ly + ly * lz + lz * lx),
                               rtol=100 * EPS)
    # divergence theorem: the volume is 1/3 of the flux of x through the outward faces
    np.testing.assert_allclose(np.sum(cross * (a + b + c) / 3) / 6, lx * ly * lz, rtol=100 * EPS)
    # every surface point is on the box's boundary
    on = np.isclose(pts[tri], 0).any(-1) | np.isclose(pts[tri], [lx, ly, lz]).any(-1)
    assert on.all()


def test_read_mesh_gives_back_what_meshio_wrote(tmp_path):
    meshio = pytest.importorskip("meshio")
    pts, tets = box_tetrahedra(1.0, 2.0, 3.0, 2, 1, 1)
    path = tmp_path / "box.vtu"
    meshio.write(path, meshio.Mesh(pts, [("triangle", np.array([[0, 1, 2]])), ("tetra", tets)]))
    p, t = read_mesh(path)
    np.testing.assert_array_equal(p, pts)
    np.testing.assert_array_equal(t, tets)
    meshio.write(tmp_path / "tri.vtu", meshio.Mesh(pts, [("triangle", np.array([[0, 1, 2]]))]))
    with pytest.raises(ValueError, match="no linear tetrahedra"):
        read_mesh(tmp_path / "tri.vtu")


def test_bad_input_is_refused_naming_the_body_and_the_tet():
    pts, tets = box_tetrahedra(1.0, 1.0, 1.0, 1, 1, 1)

    def make(p=pts, t=tets, **kw):
        system = MultibodySystem("bad")
        SimbodyMatterSubsystem(system)
        args = dict(density=1000.0, young=1e5, poisson=0.3)
        args.update(kw)
        return DeformableBody.from_tetrahedra(system, p, t, name="jelly", **args)

    bad = tets.copy()
    bad[3] = bad[3][[1, 0, 2, 3]]
    with pytest.raises(ValueError, match=r"'jelly'.*tet 3 .*inverted"):
        make(t=bad)
    flat = np.vstack([pts, [[0.5, 0.5, 0.0]]])
    with pytest.raises(ValueError, match=r"'jelly'.*tet 6 .*degenerate"):
        make(p=flat, t=np.vstack([tets, [[0, 2, 4, 8]]]))
    with pytest.raises(ValueError, match=r"'jelly'.*tet 2 .*repeats"):
        t = tets.copy()
        t[2, 1] = t[2, 0]
        make(t=t)
    with pytest.raises(ValueError, match=r"'jelly'.*tet 0 .*outside"):
        make(t=np.vstack([[0, 1, 2, 99], tets]))
    with pytest.raises(ValueError, match=r"'jelly'.*poisson\[0\] = 0.5"):
        make(poisson=0.5)
    for E in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match=r"'jelly'.*young\[0\]"):
            make(young=E)
    with pytest.raises(ValueError, match=r"'jelly'.*density"):
        make(density=0.0)
    with pytest.raises(ValueError, match=r"'jelly'.*damping"):
        make(damping=(-1.0, 0.0))
    with pytest.raises(ValueError, match=r"'jelly'.*particle 8 is in no tet"):
        make(p=np.vstack([pts, [[5.0, 5.0, 5.0]]]))
    with pytest.raises(ValueError, match=r"'jelly'.*consistent"):
        make(mass="consistent")


def test_an_inverted_tet_is_pushed_back_to_its_rest_shape():
    """A tet whose apex was pushed through its base (det F < 0, no proper polar rotation) uses the QR-like
    frame: the force on the apex points back through the base, and a damped implicit run restores the
    rest shape (passing det F = 0 on the way)."""
    pts = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    ts, _ = _tetra_set(pts, np.array([[0, 1, 2, 3]]))
    x = pts.copy()
    x[3] = [0.1, 0.1, -0.3]
    f, _ = _forces(ts, x)
    assert f[3, 2] > 0
    system = MultibodySystem("inverted")
    SimbodyMatterSubsystem(system)
    body = DeformableBody.from_tetrahedra(system, pts, [[0, 1, 2, 3]], 1000.0, 2e5, 0.3, (10.0, 0.0), name="tet")
    body.fix([0, 1, 2])
    s = system.realize_topology()
    system.realize_model(s)
    body.set_positions(s, x)
    integ = ImplicitEulerIntegrator(system, 0.005)
    integ.initialize(s)
    integ.step_to(3.0)
    end = integ.get_state()
    system.realize(end, Stage.Position)
    np.testing.assert_allclose(body.get_positions(end)[3], pts[3], atol=1e-6)
