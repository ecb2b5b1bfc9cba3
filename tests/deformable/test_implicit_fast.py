"""ImplicitEulerIntegrator's preconditioner (IC(0) of the particles' block) and its allocation-free step.

Checked by independent means:
- the preconditioner's assembled blocks (analytic, per element) equal the columns of the element
  derivative products (the kernels the CG multiplies by), for tets, membrane triangles and springs,
  deformed and rotated, with fixed and attached particles left out;
- on a chain of springs (a block-tridiagonal matrix, where IC(0) has no fill) the factor is the exact
  Cholesky factor: its solve equals a dense solve;
- one step of a tet block on a rigid arm equals a direct dense solve of the same linear system, built
  from the rigid tree's mass matrix (composite-body method), the station Jacobian and the products'
  columns, to the bound the CG tolerance and the matrix's condition number give;
- tracemalloc: after a warm-up, 50 steps leave no memory behind and their transient peak does not grow
  with the mesh (an array per particle would).
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator, box_tetrahedra
from simtk.deformable._ic import ParticlePreconditioner

EPS = np.finfo(float).eps
G = np.array([0.0, -9.81, 0.0])


def _arm_scene(nx=3, ny=1, nz=1, damping=(2.0, 2e-3), E=5e4):
    system = MultibodySystem("arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    mp = MassProperties.from_central_inertia(1.0, [0.0, 0.0, 0.0], np.diag([0.01, 0.01, 0.01]))
    arm = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(mp), Transform(p=[-0.3, 0.0, 0.0]))
    pts, tets = box_tetrahedra(0.2, 0.06, 0.06, nx, ny, nz)
    pts += [0.3, -0.03, -0.03]
    body = DeformableBody.from_tetrahedra(system, pts, tets, 500.0, E, 0.3, damping, name="block")
    for i in np.flatnonzero(pts[:, 0] == 0.3):
        body.attach(int(i), arm, pts[i] - [0.3, 0.0, 0.0])
    return system, matter, arm, body


def _membrane():
    system = MultibodySystem("sheet")
    SimbodyMatterSubsystem(system)
    n = 4
    g = np.linspace(0.0, 0.3, n + 1)
    X, Y = np.meshgrid(g, g, indexing="ij")
    pts = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], axis=1)
    idx = np.arange(X.size).reshape(n + 1, n + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    tris = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    body = DeformableBody.from_triangles(system, pts, tris, 300.0, 1e5, 0.3, 1e-3, (1.0, 1e-3), name="sheet")
    body.fix([0, n])
    return system, body


def _string(n=8):
    system = MultibodySystem("string")
    SimbodyMatterSubsystem(system)
    pts = np.zeros((n + 1, 3))
    pts[:, 1] = -0.05 * np.arange(n + 1)
    seg = np.array([[i, i + 1] for i in range(n)])
    body = DeformableBody.from_segments(system, pts, seg, 1e-3, np.linspace(1e3, 1e6, n), 0.5, name="string")
    body.fix(0)
    return system, body


def _deformed(body, s, seed):
    """Positions rotated and strained away from rest, so each element has its own rotation; some springs
    compressed (their transverse stiffness dropped, the `definite` product)."""
    rng = np.random.default_rng(seed)
    x0 = body.get_positions(s).copy()
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    x = x0 @ (q * np.sign(np.linalg.det(q))).T + 0.01 * rng.normal(size=x0.shape)
    body.set_positions(s, x)
    return x


def _dense_product(body, x, alpha, beta):
    """The free particles' block of alpha K + beta D, column by column through the element products."""
    free = body.get_free_particles()
    n = body.get_num_particles()
    cols = []
    for c in range(3 * len(free)):
        e = np.zeros((n, 3))
        e[free[c // 3], c % 3] = 1.0
        out = np.zeros((n, 3))
        body._add_element_derivative_product(x, e, e, alpha, beta, out)
        cols.append(out[free].reshape(-1))
    return np.array(cols).T


def _dense_lower(ic) -> np.ndarray:
    n = len(ic.indptr) - 1
    a = np.zeros((n, n))
    rows = np.repeat(np.arange(n), np.diff(ic.indptr))
    a[rows, ic.indices] = ic.a
    return a + np.tril(a, -1).T


@pytest.mark.parametrize("scene", ["tets on an arm", "membrane", "springs"])
def test_preconditioner_blocks_are_the_element_products(scene):
    if scene == "tets on an arm":
        system, matter, arm, body = _arm_scene(2, 2, 1)
    elif scene == "membrane":
        system, body = _membrane()
    else:
        system, body = _string()
    s = system.realize_topology()
    system.realize_model(s)
    system.realize(s, Stage.Position)
    _deformed(body, s, 3)
    system.realize(s, Stage.Position)
    x = np.ascontiguousarray(body.get_positions(s))
    h = 0.01
    pc = ParticlePreconditioner(body)
    pc._ic.assemble(x, h * h, h)
    got = _dense_lower(pc._ic) + np.diag(h * pc._am)  # the products carry beta alpha_M m on the diagonal
    want = _dense_product(body, x, h * h, h)
    assert np.abs(want).max() > 0.0 and np.abs(want - want.T).max() <= 1e3 * EPS * np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e3 * EPS * np.abs(want).max())
    # and outside the pattern there is nothing: every pair the products couple is in it
    assert np.count_nonzero(np.abs(want) > 1e3 * EPS * np.abs(want).max()) <= 2 * len(pc._ic.a)


def test_ic0_of_a_chain_is_its_exact_cholesky_factor():
    system, body = _string()
    s = system.realize_topology()
    system.realize_model(s)
    system.realize(s, Stage.Position)
    _deformed(body, s, 5)
    system.realize(s, Stage.Position)
    x = np.ascontiguousarray(body.get_positions(s))
    h = 0.01
    pc = ParticlePreconditioner(body)
    assert pc.update(x, h)
    A = np.diag(pc._m) + _dense_product(body, x, h * h, h)
    r = np.random.default_rng(1).normal(size=len(A))
    z = np.zeros_like(r)
    pc.solve(r, z)
    want = np.linalg.solve(A, r)
    cond = np.linalg.cond(A)
    np.testing.assert_allclose(z, want, rtol=0, atol=100 * cond * EPS * np.abs(want).max())


@pytest.mark.parametrize("free_rows", ["one run", "scattered"])
def test_one_step_equals_a_dense_direct_solve(free_rows):
    """u1 = u0 + du with (M + h D + h^2 K) du = h M udot0 - h^2 K u0 over (rigid u, free particles' u), the
    particles' motion T u: free rows the identity, attached rows the station Jacobian J (free particles
    in one run of indices, or not: a particle held in the middle)."""
    system, matter, arm, body = _arm_scene(3, 1, 1)
    if free_rows == "scattered":
        body.fix(body.get_num_particles() // 2)
    s = system.realize_topology()
    system.realize_model(s)
    arm.set_one_q(s, 0, 0.5)
    arm.set_one_u(s, 0, 2.0)
    system.realize(s, Stage.Position)
    _deformed(body, s, 7)
    system.realize(s, Stage.Acceleration)
    h, tol = 0.01, 1e-12
    nu, nmu, mu0 = s.get_nu(), matter.get_num_mobilities(s), matter.get_u_start(s)
    free, att = body.get_free_particles(), body.get_attached_particles()
    n, ub = body.get_num_particles(), body.get_u_start(s)
    x = np.ascontiguousarray(body.get_positions(s))
    T = np.zeros((3 * n, nu))
    for k, i in enumerate(free):
        T[3 * i:3 * i + 3, ub + 3 * k:ub + 3 * k + 3] = np.eye(3)
    J = matter.calc_station_jacobian(s, [arm.get_mobilized_body_index()] * len(att),
                                     [body._attached[i][1] for i in att])
    for k, i in enumerate(att):
        T[3 * i:3 * i + 3, mu0:mu0 + nmu] = J[3 * k:3 * k + 3]

    def elements(alpha, beta):
        cols = []
        for c in range(3 * n):
            e = np.zeros(3 * n)
            e[c] = 1.0
            out = np.zeros((n, 3))
            body._add_element_derivative_product(x, e.reshape(n, 3), e.reshape(n, 3), alpha, beta, out)
            cols.append(out.reshape(-1))
        return T.T @ np.array(cols).T @ T

    M = np.zeros((nu, nu))
    M[mu0:mu0 + nmu, mu0:mu0 + nmu] = matter.calc_m(s)
    M[ub:ub + 3 * len(free), ub:ub + 3 * len(free)] = np.diag(np.repeat(body.get_masses()[free], 3))
    A = M + elements(h * h, h)
    u0, udot0 = s.get_u().copy(), s.get_udot().copy()
    du = np.linalg.solve(A, h * M @ udot0 - elements(h * h, 0.0) @ u0)
    integ = ImplicitEulerIntegrator(system, h, cg_tolerance=tol)
    integ.initialize(s)
    integ.step_to(h)
    u1 = integ.get_state().get_u()
    # CG stops at ||r|| <= tol ||rhs||, so ||du - du*|| <= cond(A) tol ||du*|| (with round-off's margin)
    bound = 10 * np.linalg.cond(A) * max(tol, EPS) * np.linalg.norm(du)
    assert np.linalg.norm(u1 - (u0 + du)) <= bound, (np.linalg.norm(u1 - (u0 + du)), bound)
    assert np.linalg.norm(du) > 1e3 * bound  # the step moved: the comparison is not of two zeros
    assert 0 < integ.get_num_cg_iterations() < len(du)


def _allocations(nx, ny, nz, steps=50):
    system, matter, arm, body = _arm_scene(nx, ny, nz)
    s = system.realize_topology()
    system.realize_model(s)
    arm.set_one_u(s, 0, 2.0)
    h = 0.005
    integ = ImplicitEulerIntegrator(system, h, cg_tolerance=1e-8)
    integ.initialize(s)
    integ.step_to(5 * h)  # warm-up: first realizations, the kernels' first calls
    tracemalloc.start()
    try:
        integ.step_to(10 * h)
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        integ.step_to((10 + steps) * h)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert integ.get_num_steps_taken() == 10 + steps
    return after - before, peak - before, body.get_num_particles()


def test_steps_allocate_nothing_that_stays_or_grows_with_the_mesh():
    net_small, peak_small, n_small = _allocations(3, 1, 1)
    net_large, peak_large, n_large = _allocations(12, 3, 3)
    # one (n, 3) float64 array of the small mesh: less than any array a step could keep per particle
    one_array = 8 * 3 * n_small
    assert abs(net_small) < one_array and abs(net_large) < one_array, (net_small, net_large, one_array)
    # an array per particle made and dropped in a step would raise the large mesh's peak by 24 (n_large -
    # n_small) bytes or more; the step's small Python objects are the same for both
    assert peak_large - peak_small < 0.5 * 8 * 3 * (n_large - n_small), (peak_small, peak_large)


def test_a_breakdown_is_reported_and_a_bad_layout_refused():
    from simtk._core_ic import IncompleteCholesky

    system, body = _string()
    s = system.realize_topology()
    system.realize_model(s)
    system.realize(s, Stage.Position)
    x = np.ascontiguousarray(body.get_positions(s))
    pc = ParticlePreconditioner(body)
    ic = pc._ic
    ic.assemble(x, 1e-4, 1e-2)
    # a diagonal made negative: the first pivot is not positive; the factor says so and leaves its scratch clean
    assert not ic.factor(-2.0 * np.abs(ic.a[ic.diag]) - 1.0)
    assert (ic.pos == -1).all()
    assert ic.factor(pc._m)
    # a non-finite position gives no factor at any shift: the step is refused, not taken with NaN
    xn = x.copy()
    xn[3, 1] = np.nan
    assert not pc.update(xn, 0.01)
    # a slot that points past its particle's rows is refused when the layout is made (the kernels trust it)
    es, slot = ic.sets[0]
    bad = slot.copy()
    bad[bad >= 0] += 3
    with pytest.raises(ValueError, match="slot"):
        IncompleteCholesky(ic.n, ic.fidx, ic.indptr, ic.indices, [(es, bad)])
    with pytest.raises(ValueError, match="r must be"):
        pc.solve(np.zeros(3), np.zeros(len(pc._m)))


def test_a_pickled_integrator_goes_on_as_the_original():
    """Its buffers, factor and the element sets' kept rotations travel with it (none is a view of another,
    which a pickle would turn into a copy): the copy's run is the original's, bitwise."""
    import pickle

    system, matter, arm, body = _arm_scene(3, 1, 1)
    body.fix(body.get_num_particles() // 2)  # the free rows not one run: the gathered path too
    s = system.realize_topology()
    system.realize_model(s)
    arm.set_one_u(s, 0, 2.0)
    a = ImplicitEulerIntegrator(system, 0.005, cg_tolerance=1e-8)
    a.initialize(s)
    a.step_to(0.03)
    b = pickle.loads(pickle.dumps(a))
    a.step_to(0.06)
    b.step_to(0.06)
    assert a.get_num_steps_taken() == b.get_num_steps_taken() == 12
    assert a.get_num_cg_iterations() == b.get_num_cg_iterations()
    assert np.array_equal(a.get_state().get_y(), b.get_state().get_y())


def test_station_jacobian_into_is_the_matters_station_jacobian():
    """The preallocated station Jacobian the implicit step fills equals calc_station_jacobian's (which
    builds it column by column through the velocity kernels) on a free base with a pinned and a
    ball-jointed link at a random state; wrong shapes and bodies are refused."""
    from simtk import Stage
    from simtk._core_implicit import station_jacobian_into
    from simtk.multibody import MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
    from simtk.spatial import Body, Inertia, MassProperties, Transform
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia([0.1, 0.1, 0.1])))
    base = MobilizedBody.Free(matter.ground, Transform(), body, Transform(), name="base")
    arm = MobilizedBody.Pin(base, Transform([0.2, 0, 0]), body, Transform([0, 0.3, 0]), name="arm")
    tip = MobilizedBody.Ball(arm, Transform([0, -0.3, 0]), body, Transform([0, 0.1, 0]), name="tip")
    state = system.realize_topology()
    rng = np.random.default_rng(5)
    q = rng.standard_normal(state.get_nq())
    q[:4] /= np.linalg.norm(q[:4])
    q[8:12] /= np.linalg.norm(q[8:12])
    state.set_q(q)
    system.realize(state, Stage.Position)
    bodies = np.array([b.get_mobilized_body_index() for b in (tip, arm, base, tip)], dtype=np.int64)
    stations = rng.standard_normal((4, 3))
    expected = matter.calc_station_jacobian(state, bodies, stations)
    out = np.full((12, state.get_nu()), np.nan)
    ws = matter._ws_at(state, Stage.Position, "test")
    station_jacobian_into(ws, bodies, stations, out)
    assert np.abs(out - expected).max() <= 64 * EPS * np.abs(expected).max()
    with pytest.raises(ValueError, match="expected"):
        station_jacobian_into(ws, bodies, stations, np.zeros((11, state.get_nu())))
    with pytest.raises(ValueError, match="not a body"):
        station_jacobian_into(ws, np.array([0, 1, 2, 9], dtype=np.int64), stations, out)
