"""simtk.deformable.ImplicitEulerIntegrator: one linearized solve per step (SOFA's implicit Euler).

Checked by independent means:
- a string of stiff springs (k = 1e6 N/m on 1 g particles: an explicit step must stay below about
  3e-5 s) at a 10 ms step stays finite, never rises above its starting energy, loses its swing
  (implicit Euler is dissipative) and comes to rest at the analytic hanging equilibrium;
- on the seed's hybrid pendulum (rigid pendulum, string fixed at one end and attached to the body)
  the step converges to RK-Merson's solution at first order: halving h halves the error;
- with no deformable element at all (a rigid pendulum), the step is the rigid bodies' linearly
  implicit Euler, which for forces not linearized is semi-explicit Euler: they agree to round-off.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_spring_bodies import G, _hybrid

from simtk import (
    Force,
    GeneralForceSubsystem,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
)
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator

EPS = np.finfo(float).eps


def _string(n=10, m=1e-3, k=1e6, L=0.05, c=0.0):
    system = MultibodySystem("stiff")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    pts = np.zeros((n + 1, 3))
    pts[:, 1] = -L * np.arange(n + 1)
    seg = np.array([[i, i + 1] for i in range(n)])
    body = DeformableBody.from_segments(system, pts, seg, m, k, c, name="string")
    body.fix(0)
    return system, body


def test_stiff_string_at_a_10_ms_step_is_stable_dissipative_and_settles():
    n, m, k, L = 10, 1e-3, 1e6, 0.05
    system, body = _string(n, m, k, L)
    s = system.realize_topology()
    system.realize_model(s)
    pts = np.zeros((n + 1, 3))
    pts[:, 1] = -L * np.arange(n + 1)
    pts[1:, 1] *= 1.02  # every spring stretched 2 %: the stiff axial modes ring
    pts[1:, 0] = 1e-3 * np.sin(np.arange(1, n + 1))  # and a little sideways: they turn as they ring
    body.set_positions(s, pts)
    system.realize(s, Stage.Velocity)
    e0 = system.calc_energy(s)
    integ = ImplicitEulerIntegrator(system, 0.01)
    integ.initialize(s)
    energies = []
    for i in range(1, 301):
        integ.step_to(0.01 * i)
        st = integ.get_state()
        system.realize(st, Stage.Velocity)
        energies.append(system.calc_energy(st))
    e = np.array(energies)
    assert np.isfinite(e).all()
    # never above where it started (the linearization of a turning spring lets a single step gain a
    # little: the step is Baraff and Witkin's linearized one, not a fully implicit solve), and the
    # stiff modes' energy is gone within the first steps
    assert (e <= e0 + 1e-9 * abs(e0)).all()
    assert e[10] - e[-1] <= 1e-3 * (e0 - e[-1])
    end = integ.get_state()
    system.realize(end, Stage.Velocity)
    stretch = np.linalg.norm(np.diff(body.get_positions(end), axis=0), axis=1) - L
    want = (n - np.arange(n)) * m * 9.81 / k
    np.testing.assert_allclose(stretch, want, atol=1e-3 * want.max())  # (its small swing goes on)
    assert integ.get_num_steps_taken() == 300


def _rk_reference(t_end):
    system, matter, pend, body = _hybrid(k=150.0, c=0.5)
    s = system.realize_topology()
    system.realize_model(s)
    pend.set_one_q(s, 0, 0.4)
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    integ.initialize(s)
    integ.step_to(t_end)
    return integ.get_state().get_y().copy()


def test_hybrid_pendulum_converges_at_first_order():
    t_end = 0.2
    ref = _rk_reference(t_end)
    errs = []
    for h in (2e-3, 1e-3, 5e-4):
        system, matter, pend, body = _hybrid(k=150.0, c=0.5)
        s = system.realize_topology()
        system.realize_model(s)
        pend.set_one_q(s, 0, 0.4)
        integ = ImplicitEulerIntegrator(system, h)
        integ.initialize(s)
        integ.step_to(t_end)
        errs.append(np.abs(integ.get_state().get_y() - ref).max())
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert ((ratios > 1.7) & (ratios < 2.3)).all(), (errs, ratios)


def test_rigid_only_system_steps_as_semi_explicit_euler():
    system, matter, pend, body = _hybrid(k=0.0)  # the springs do nothing: M du = h M udot0
    out = []
    for cls in (ImplicitEulerIntegrator, SemiExplicitEulerIntegrator):
        s = system.realize_topology()
        system.realize_model(s)
        pend.set_one_q(s, 0, 0.4)
        pend.set_one_u(s, 0, 1.0)
        integ = cls(system, 1e-3)
        integ.initialize(s)
        integ.step_to(0.05)
        out.append(integ.get_state().get_y().copy())
    np.testing.assert_allclose(out[0], out[1], rtol=0, atol=1e4 * EPS * np.abs(out[1]).max())


def test_bad_settings_are_refused():
    system, body = _string()
    with pytest.raises(ValueError, match="cg_tolerance"):
        ImplicitEulerIntegrator(system, 0.01, cg_tolerance=0.0)
    with pytest.raises(ValueError, match="cg_max_iterations"):
        ImplicitEulerIntegrator(system, 0.01, cg_max_iterations=0)
