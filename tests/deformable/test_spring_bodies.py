"""Deformable bodies of particles and springs (simtk.deformable.DeformableBody.from_segments).

Checked by independent means:
- the spring kernel's derivative products against central finite differences of its forces;
- a particle string against the same string built of built-ins (each free particle a point mass on a
  Translation mobilizer, each spring a ``Force.TwoPointLinearSpring``/``TwoPointLinearDamper``, the
  attached particle a station on the rigid pendulum): udot of the rigid body and of every particle
  agree at random states, so the mechanical mapping's force reaches the body;
- the seed's hybrid pendulum (a pin-jointed rigid body, a string fixed at one end, its last particle
  attached to the body) conserves energy, particles' kinetic and elastic energy included;
- a damped hanging string settles where each spring is stretched by the weight below it over k;
- bad input is refused naming the body and the item.
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
    _core_deformable,
)
from simtk.deformable import DeformableBody

EPS = np.finfo(float).eps
G = np.array([0.0, -9.81, 0.0])


def test_derivative_products_match_finite_differences():
    rng = np.random.default_rng(1)
    n = 6
    seg = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 5], [1, 4]])
    k, L0, c = rng.uniform(10, 100, 7), rng.uniform(0.1, 0.5, 7), rng.uniform(0.5, 2, 7)
    springs = _core_deformable.SpringSet(n, seg, k, L0, c)
    x = rng.normal(size=(n, 3))
    v = rng.normal(size=(n, 3))
    dx = rng.normal(size=(n, 3))
    dv = rng.normal(size=(n, 3))

    def force(xx, vv):
        f = np.zeros((n, 3))
        springs.add_forces(np.ascontiguousarray(xx), np.ascontiguousarray(vv), f)
        return f

    h = 1e-6
    fd_x = (force(x + h * dx, v) - force(x - h * dx, v)) / (2 * h)
    fd_v = (force(x, v + h * dv) - force(x, v - h * dv)) / (2 * h)
    out = np.zeros((n, 3))
    springs.add_derivative_product(x, dx, np.zeros((n, 3)), 1.0, 0.0, out)
    # K = -df/dx; the damping's own dependence on x is left out of K (as SOFA), so compare with v = 0
    fd_x0 = (force(x + h * dx, 0 * v) - force(x - h * dx, 0 * v)) / (2 * h)
    scale = np.abs(fd_x0).max()
    np.testing.assert_allclose(out, -fd_x0, atol=1e-7 * scale)
    out[:] = 0
    springs.add_derivative_product(x, np.zeros((n, 3)), dv, 0.0, 1.0, out)
    np.testing.assert_allclose(out, -fd_v, atol=1e-7 * np.abs(fd_v).max())
    assert np.abs(fd_x - fd_x0).max() > 0  # (the damping does depend on x: why v = 0 above)
    # the definite form: compressed springs' transverse term dropped, K symmetric positive semidefinite
    K = np.zeros((3 * n, 3 * n))
    xc = x.copy()
    xc[seg[0, 1]] = xc[seg[0, 0]] + 0.5 * L0[0] * np.array([1.0, 0.0, 0.0])  # spring 0 compressed to half
    for col in range(3 * n):
        e = np.zeros((n, 3))
        e.reshape(-1)[col] = 1.0
        out = np.zeros((n, 3))
        springs.add_derivative_product(xc, e, np.zeros((n, 3)), 1.0, 0.0, out, definite=True)
        K[:, col] = out.reshape(-1)
    np.testing.assert_allclose(K, K.T, atol=1e-12 * np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-12 * np.abs(K).max()
    Kfull = np.zeros((3 * n, 3 * n))
    for col in range(3 * n):
        e = np.zeros((n, 3))
        e.reshape(-1)[col] = 1.0
        out = np.zeros((n, 3))
        springs.add_derivative_product(xc, e, np.zeros((n, 3)), 1.0, 0.0, out)
        Kfull[:, col] = out.reshape(-1)
    assert np.linalg.eigvalsh(Kfull).min() < -1e-6 * np.abs(Kfull).max()  # (the exact one is not)


def _pendulum_parts(system, matter, forces):
    Force.UniformGravity(forces, matter, G)
    mp = MassProperties.from_central_inertia(2.0, [0.0, 0.0, 0.0], np.diag([0.02, 0.03, 0.04]))
    # the pendulum's pin at (2.5, 0, 0) along z; the body hangs 0.5 m from it
    return MobilizedBody.Pin(matter.ground, Transform(p=[2.5, 0.0, 0.0]), Body.Rigid(mp), Transform(p=[0.0, 0.5, 0.0]))


def _hybrid(n_free=4, k=200.0, c=0.0, m=0.1):
    """The seed's hybrid pendulum: particle 0 fixed at the origin, particles 1..n_free free along x,
    the last one attached to the pendulum at station (0, 0.3, 0) of its body."""
    system = MultibodySystem("hybrid")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pend = _pendulum_parts(system, matter, forces)
    n = n_free + 2
    pts = np.zeros((n, 3))
    pts[:, 0] = np.linspace(0.0, 2.4, n)
    seg = np.array([[i, i + 1] for i in range(n - 1)])
    body = DeformableBody.from_segments(system, pts, seg, m, k, c, rest_lengths=np.full(n - 1, 0.4), name="string")
    body.fix([0])
    body.attach(n - 1, pend, [0.0, 0.3, 0.0])
    return system, matter, pend, body


def _builtin_twin(n_free=4, k=200.0, c=0.0, m=0.1):
    """The same string of point masses on Translation mobilizers with built-in springs."""
    system = MultibodySystem("twin")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pend = _pendulum_parts(system, matter, forces)
    pm = MassProperties(m, [0.0, 0.0, 0.0], np.zeros((3, 3)))
    parts = [MobilizedBody.Translation(matter.ground, Transform(), Body.Rigid(pm), Transform()) for _ in range(n_free)]
    ends = [(matter.ground, np.zeros(3))] + [(b, np.zeros(3)) for b in parts] + [(pend, np.array([0.0, 0.3, 0.0]))]
    for (b1, s1), (b2, s2) in zip(ends[:-1], ends[1:]):
        Force.TwoPointLinearSpring(forces, b1, s1, b2, s2, k, 0.4)
        if c:
            Force.TwoPointLinearDamper(forces, b1, s1, b2, s2, c)
    return system, matter, pend, parts


def test_string_and_attached_pendulum_match_a_builtin_twin():
    rng = np.random.default_rng(7)
    for c in (0.0, 1.5):
        system, matter, pend, body = _hybrid(c=c)
        tsys, tmat, tpend, parts = _builtin_twin(c=c)
        s, ts = system.realize_topology(), tsys.realize_topology()
        system.realize_model(s)
        tsys.realize_model(ts)
        assert body.get_free_particles().tolist() == [1, 2, 3, 4]
        for _ in range(3):
            angle, rate = rng.uniform(-1, 1), rng.uniform(-2, 2)
            x = np.zeros((6, 3))
            x[1:5] = np.c_[np.linspace(0.5, 2.0, 4), rng.uniform(-0.2, 0.2, (4, 2))]
            v = rng.normal(size=(6, 3))
            pend.set_one_q(s, 0, angle)
            pend.set_one_u(s, 0, rate)
            body.set_positions(s, x)
            body.set_velocities(s, v)
            # the twin's q: the pendulum's angle, then each point mass's translation (= its position)
            q_twin = np.r_[angle, x[1:5].reshape(-1)]
            u_twin = np.r_[rate, v[1:5].reshape(-1)]
            ts.upd_q()[:] = q_twin
            ts.upd_u()[:] = u_twin
            system.realize(s, Stage.Acceleration)
            tsys.realize(ts, Stage.Acceleration)
            udot, tudot = s.get_udot(), ts.get_udot()
            scale = np.abs(tudot).max()
            np.testing.assert_allclose(udot, tudot, atol=1e3 * EPS * scale)
            # the attached particle follows the body
            np.testing.assert_allclose(body.get_positions(s)[5], pend.find_station_location_in_ground(s, [0, 0.3, 0]),
                                       atol=0)
            e, te = system.calc_energy(s), tsys.calc_energy(ts)
            assert e == pytest.approx(te, rel=1e3 * EPS, abs=1e3 * EPS)


def test_hybrid_pendulum_conserves_energy_with_rk_merson():
    system, matter, pend, body = _hybrid(k=150.0)
    s = system.realize_topology()
    system.realize_model(s)
    pend.set_one_q(s, 0, 0.4)
    system.realize(s, Stage.Acceleration)
    e0 = system.calc_energy(s)
    scale = sum(abs(x) for x in (matter.calc_kinetic_energy(s), body.calc_kinetic_energy(s),
                                 body.calc_potential_energy(s), system.calc_potential_energy(s)))
    for acc in (1e-5, 1e-8):
        s1 = s.copy() if hasattr(s, "copy") else s
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(acc)
        integ.initialize(s1)
        integ.step_to(1.0)
        end = integ.get_state()
        system.realize(end, Stage.Velocity)
        drift = abs(system.calc_energy(end) - e0)
        assert body.calc_kinetic_energy(end) > 1e-3  # the string moves
        assert drift <= 50 * acc * scale, (acc, drift, scale)
        if acc == 1e-5:
            coarse = drift
    assert drift < coarse  # tighter accuracy, smaller drift


def test_damped_hanging_string_settles_at_the_analytic_equilibrium():
    """Particle 0 fixed, n free particles below it; spring i (above particle i + 1) carries the
    weight of the particles below it, so it is stretched by (n - i) m g / k. The damping (about
    critical for the slowest mode) brings it there within the 3 s simulated."""
    n, m, k, L = 6, 0.05, 400.0, 0.1
    system = MultibodySystem("hanging")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    pts = np.zeros((n + 1, 3))
    pts[:, 1] = -L * np.arange(n + 1)
    seg = np.array([[i, i + 1] for i in range(n)])
    body = DeformableBody.from_segments(system, pts, seg, m, k, damping=40.0, name="string")
    body.fix(0)
    s = system.realize_topology()
    system.realize_model(s)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-9)
    integ.initialize(s)
    integ.step_to(3.0)
    end = integ.get_state()
    system.realize(end, Stage.Velocity)
    stretch = -np.diff(body.get_positions(end)[:, 1]) - L
    want = (n - np.arange(n)) * m * 9.81 / k
    np.testing.assert_allclose(stretch, want, atol=1e-6 * want.max())
    assert np.abs(body.get_positions(end)[:, [0, 2]]).max() == 0.0  # it stays on its vertical line


def test_bad_input_is_refused_naming_the_body():
    system = MultibodySystem("bad")
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    pts = np.zeros((3, 3))
    pts[:, 0] = [0, 1, 2]
    with pytest.raises(ValueError, match="'cord'.*segment 1.*outside 0..2"):
        DeformableBody.from_segments(system, pts, [[0, 1], [1, 3]], 1.0, 1.0, name="cord")
    with pytest.raises(ValueError, match="'cord'.*segment 0 joins particle 1 to itself"):
        DeformableBody.from_segments(system, pts, [[1, 1]], 1.0, 1.0, name="cord")
    with pytest.raises(ValueError, match=r"'cord'.*masses\[2\]"):
        DeformableBody.from_segments(system, pts, [[0, 1]], [1.0, 1.0, 0.0], 1.0, name="cord")
    with pytest.raises(ValueError, match=r"'cord'.*stiffness\[0\]"):
        DeformableBody.from_segments(system, pts, [[0, 1]], 1.0, -1.0, name="cord")
    with pytest.raises(ValueError, match="'cord'.*particle 1 is not finite"):
        DeformableBody.from_segments(system, [[0, 0, 0], [np.nan, 0, 0]], [[0, 1]], 1.0, 1.0, name="cord")
    body = DeformableBody.from_segments(system, pts, [[0, 1], [1, 2]], 1.0, 1.0, name="cord")
    with pytest.raises(ValueError, match="'cord'.*fix: particle 5 is outside"):
        body.fix([5])
    other = MultibodySystem("other")
    om = SimbodyMatterSubsystem(other)
    ob = MobilizedBody.Pin(om.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], np.eye(3))), Transform())
    with pytest.raises(ValueError, match="'cord'.*attach.*not in this System"):
        body.attach(2, ob, [0, 0, 0])
    body.fix([0])
    with pytest.raises(ValueError, match="'cord'.*particle 0 is fixed"):
        body.attach(0, matter.ground, [0, 0, 0])
