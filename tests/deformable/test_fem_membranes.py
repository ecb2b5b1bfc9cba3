"""Corotational membrane triangles (simtk.deformable.DeformableBody.from_triangles, TriangleSet).

Checked by independent means:
- the forces are minus the finite-difference gradient of the energy at a large 3-D deformation; the
  stiffness product equals the finite difference of the forces at rest and at a rigid rotation of it;
  the damping product is the finite difference in v;
- rigid motions cost nothing; plane stress: under a uniaxial stretch eps the energy is least at the
  lateral strain -nu eps, where it is E eps^2 h A / 2 (the stress E eps);
- a sheet hanging from its top edge (Poisson 0) stretches by rho g L^2 / (2 E);
- a swinging sheet conserves energy under RK-Merson; bad input is refused naming the triangle.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Force,
    GeneralForceSubsystem,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
)
from simtk._core_fem import TriangleSet
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator, _fem

EPS = np.finfo(float).eps
G = np.array([0.0, -9.81, 0.0])


def _grid(nx, ny, lx=1.0, ly=1.0):
    """A flat sheet in the x-y plane: (nx + 1)(ny + 1) points, 2 triangles per cell."""
    X, Y = np.meshgrid(np.linspace(0, lx, nx + 1), np.linspace(0, ly, ny + 1), indexing="ij")
    pts = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], axis=1)
    idx = lambda i, j: i * (ny + 1) + j  # noqa: E731
    tris = []
    for i in range(nx):
        for j in range(ny):
            tris += [[idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)], [idx(i, j), idx(i + 1, j + 1), idx(i, j + 1)]]
    return pts, np.array(tris)


def _set(pts, tris, young=1e5, poisson=0.3, h=0.01, alpha_m=0.0, beta_k=0.0):
    Bm, area = _fem.triangle_rest_geometry(pts, tris, "t")
    mu, lam = _fem.lame(young, poisson, len(tris), "t")
    m = _fem.lumped_masses(len(pts), tris, h * area, 1000.0, "t")
    return TriangleSet(len(pts), tris, Bm, h * area, mu, 2 * mu * lam / (lam + 2 * mu), m, alpha_m, beta_k)


def _forces(ts, x, v=None):
    f = np.zeros_like(x)
    e = ts.add_forces(np.ascontiguousarray(x), np.zeros_like(x) if v is None else np.ascontiguousarray(v), f)
    return f, e


def _product(ts, x, dx, dv, alpha, beta):
    out = np.zeros_like(x)
    ts.add_derivative_product(np.ascontiguousarray(x), np.ascontiguousarray(dx), np.ascontiguousarray(dv), alpha,
                              beta, out)
    return out


def test_membrane_forces_are_the_energy_gradient_and_products_match_finite_differences():
    rng = np.random.default_rng(11)
    pts, tris = _grid(2, 2)
    pts = pts @ np.linalg.qr(rng.normal(size=(3, 3)))[0].T  # the sheet in no coordinate plane
    ts = _set(pts, tris, alpha_m=0.5, beta_k=0.02)
    n = len(pts)
    x = pts * [1.3, 0.8, 1.0] + 0.1 * rng.normal(size=pts.shape)  # stretched, squeezed, crumpled
    f, e = _forces(ts, x)
    assert e > 0
    h = 1e-6
    grad = np.array([(_forces(ts, x + h * d.reshape(n, 3))[1] - _forces(ts, x - h * d.reshape(n, 3))[1]) / (2 * h)
                     for d in np.eye(3 * n)])
    np.testing.assert_allclose(f.reshape(-1), -grad, atol=1e-6 * np.abs(f).max())
    v, dv = rng.normal(size=(2, n, 3))
    fd_v = (_forces(ts, x, v + h * dv)[0] - _forces(ts, x, v - h * dv)[0]) / (2 * h)
    np.testing.assert_allclose(_product(ts, x, 0 * dv, dv, 0.0, 1.0), -fd_v, atol=1e-7 * np.abs(fd_v).max())
    Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    for shape in (pts, pts @ Q.T + 1.0):
        dx = rng.normal(size=(n, 3))
        fd_x = (_forces(ts, shape + h * dx)[0] - _forces(ts, shape - h * dx)[0]) / (2 * h)
        np.testing.assert_allclose(_product(ts, shape, dx, 0 * dx, 1.0, 0.0), -fd_x, atol=1e-6 * np.abs(fd_x).max())
        f, e = _forces(ts, shape)
        assert np.abs(f).max() <= 1e3 * EPS * 1e5 * 0.01 and e <= 1e3 * EPS * 1e5 * 0.01  # rigid: free
    K = np.column_stack([_product(ts, x, d.reshape(n, 3), np.zeros((n, 3)), 1.0, 0.0).reshape(-1)
                         for d in np.eye(3 * n)])
    np.testing.assert_allclose(K, K.T, atol=100 * EPS * np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-12 * np.abs(K).max()


def test_plane_stress_uniaxial_stretch():
    young, nu, h = 2e5, 0.3, 0.01
    pts, tris = _grid(1, 1, 0.5, 0.3)
    ts = _set(pts, tris, young, nu, h)
    eps = 1e-4  # small: the corotated energy is linear elasticity's to O(eps^3)

    def energy(lateral):
        return _forces(ts, pts * [1 + eps, 1 + lateral, 1.0])[1]

    lat = np.linspace(-2 * nu * eps, 0.0, 41)
    e = np.array([energy(d) for d in lat])
    fit = np.polyfit(lat, e, 2)
    best = -fit[1] / (2 * fit[0])
    assert abs(best + nu * eps) <= 1e-3 * nu * eps
    np.testing.assert_allclose(energy(-nu * eps), 0.5 * young * eps ** 2 * h * 0.5 * 0.3, rtol=1e-3)


def test_sheet_hanging_from_its_top_edge_stretches_by_rho_g_L2_over_2E():
    L, E, rho = 1.0, 1e6, 1000.0
    pts, tris = _grid(2, 10, 0.2, L)
    pts[:, 1] -= L
    system = MultibodySystem("sheet")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    body = DeformableBody.from_triangles(system, pts, tris, rho, E, 0.0, 0.001, (5.0, 1e-3), name="sheet")
    body.fix(np.flatnonzero(pts[:, 1] == 0.0))
    s = system.realize_topology()
    system.realize_model(s)
    integ = ImplicitEulerIntegrator(system, 0.01)
    integ.initialize(s)
    integ.step_to(2.0)
    end = integ.get_state()
    system.realize(end, Stage.Position)
    x = body.get_positions(end)
    bottom = pts[:, 1] == -L
    stretch = -np.mean(x[bottom, 1] - pts[bottom, 1])
    want = rho * 9.81 * L ** 2 / (2 * E)
    assert abs(stretch - want) <= 0.02 * want, (stretch, want)
    np.testing.assert_array_equal(body.get_surface_triangles(), tris)


def test_swinging_sheet_conserves_energy_with_rk_merson():
    pts, tris = _grid(3, 3, 0.3, 0.3)
    system = MultibodySystem("flag")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    body = DeformableBody.from_triangles(system, pts, tris, 500.0, 2e4, 0.3, 0.002, name="flag")
    body.fix(np.flatnonzero((pts[:, 0] == 0.0) & (pts[:, 1] == 0.3)))  # held at one corner; it falls and swings
    s = system.realize_topology()
    system.realize_model(s)
    system.realize(s, Stage.Acceleration)
    e0 = system.calc_energy(s)
    drifts = []
    for acc in (1e-4, 1e-7):
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(acc)
        integ.initialize(s)
        integ.step_to(0.3)
        end = integ.get_state()
        system.realize(end, Stage.Velocity)
        ke = body.calc_kinetic_energy(end)
        assert ke > 0
        drifts.append(abs(system.calc_energy(end) - e0))
        assert drifts[-1] <= 5 * acc * ke, (acc, drifts[-1], ke)
    assert drifts[1] < drifts[0]


def test_bad_membranes_are_refused_naming_the_triangle():
    pts, tris = _grid(1, 1)

    def make(p=pts, t=tris, **kw):
        system = MultibodySystem("bad")
        SimbodyMatterSubsystem(system)
        args = dict(density=1000.0, young=1e5, poisson=0.3, thickness=0.01)
        args.update(kw)
        return DeformableBody.from_triangles(system, p, t, name="cloth", **args)

    with pytest.raises(ValueError, match=r"'cloth'.*triangle 2 .*degenerate"):
        make(p=np.vstack([pts, [[2.0, 0.0, 0.0]]]), t=np.vstack([tris, [[0, 2, 4]]]))
    with pytest.raises(ValueError, match=r"'cloth'.*thickness\[0\]"):
        make(thickness=0.0)
    with pytest.raises(ValueError, match=r"'cloth'.*triangle 1 .*repeats"):
        make(t=np.array([[0, 1, 2], [0, 0, 3]]))
    with pytest.raises(ValueError, match=r"'cloth'.*poisson"):
        make(poisson=0.7)
