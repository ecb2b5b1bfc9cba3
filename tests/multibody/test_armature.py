"""Armature (rotor inertia) of the mobilities: ``M(q) + diag(armature)`` in every operator.

The oracles are the same model without armature (whose M, bias and forces armature does not change:
M with armature is that M plus the diagonal, exactly, as the diagonal entry is one sum), dense linear
algebra with numpy (solves, products, range tests), energy conservation, Pinocchio's ``Model.armature``
on a robot of example-robot-data, and the other paths of the compiled code (batch, functional
dynamics, the compiled time loop) against the State API.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import ALL_JOINTS, new_state, random_model, randomize_state

from simtk import Constraint, Stage
from simtk.math import RungeKuttaMersonIntegrator
from tolerances import EPS

#: Every built-in mobilizer with mobilities (Weld has none), so that every joint's D block gets its armature.
MOVING = tuple(j for j in ALL_JOINTS if j != "Weld")


def _armed(seed: int, joints=MOVING, nb: int = 7, gravity=(0.0, -9.8, 0.0)):
    """A random tree with gravity, random speeds and a random armature on every mobilizer; returns the model,
    the State (realized to Velocity), and the armature vector (nu,)."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, joints, nb, gravity=np.array(gravity))
    state = new_state(model)
    randomize_state(model, state, rng)
    arm = []
    for mb in model.mobods[1:]:
        a = rng.uniform(0.01, 0.5, mb.get_num_u(state))
        if a.size:
            mb.set_armature(a)
        arm.append(a)
    model.system.realize(state, Stage.Velocity)
    return model, state, np.concatenate(arm), rng


def _without(model, state):
    """A copy of ``state``, realized to Velocity (inside a _zeroed block: the oracle model's)."""
    s = state.copy()
    model.system.realize(s, Stage.Velocity)
    return s


class _zeroed:
    """Within the block, the model has no armature (its States lose Instance, as for any Instance
    property); on leaving, the armatures are back and ``state`` is realized to Velocity again."""

    def __init__(self, model, state):
        self.model, self.state = model, state
        self.saved = [mb.get_armature() for mb in model.mobods[1:]]

    def __enter__(self):
        for mb in self.model.mobods[1:]:
            mb.set_armature(0.0)

    def __exit__(self, *exc):
        for mb, a in zip(self.model.mobods[1:], self.saved):
            mb.set_armature(a)
        self.model.system.realize(self.state, Stage.Velocity)


@pytest.mark.parametrize("seed", range(4))
def test_mass_matrix_is_the_one_without_plus_the_diagonal(seed):
    """Law: calc_m with armature = calc_m without + diag(armature), bitwise (one sum per diagonal entry);
    multiply_by_m and multiply_by_m_inv are products with that matrix."""
    model, state, arm, rng = _armed(seed)
    matter = model.matter
    M = matter.calc_m(state)
    with _zeroed(model, state):
        M0 = matter.calc_m(_without(model, state))
    np.testing.assert_array_equal(M, M0 + np.diag(arm))
    x = rng.uniform(-1, 1, arm.size)
    scale = np.abs(M).max() * np.abs(x).max() * arm.size
    np.testing.assert_allclose(matter.multiply_by_m(state, x), M @ x, rtol=0, atol=64 * EPS * scale)
    v = matter.multiply_by_m_inv(state, x)
    cond = np.linalg.cond(M)
    np.testing.assert_allclose(M @ v, x, rtol=0, atol=64 * cond * EPS * scale)
    np.testing.assert_allclose(matter.calc_m_inv(state) @ M, np.eye(arm.size), rtol=0, atol=64 * cond * EPS * arm.size)


@pytest.mark.parametrize("seed", range(4))
def test_forward_and_inverse_dynamics_solve_with_the_armed_matrix(seed):
    """Law: the realized udot solves (M0 + diag(a)) udot = f - c, with f - c the residual at udot = 0
    (which armature does not change); inverse dynamics with armature = without + a * udot, and its
    residual at the realized udot is zero."""
    model, state, arm, rng = _armed(seed)
    matter, system = model.matter, model.system
    nu = arm.size
    system.realize(state, Stage.Dynamics)
    F = np.array(system.get_rigid_body_forces(state, Stage.Dynamics))
    f = np.array(system.get_mobility_forces(state, Stage.Dynamics))
    with _zeroed(model, state):
        s0 = _without(model, state)
        M0 = matter.calc_m(s0)
        c_minus_f = matter.calc_residual_force_ignoring_constraints(s0, f, F, np.zeros(nu))
        udot_rand = rng.uniform(-2, 2, nu)
        res0 = matter.calc_residual_force_ignoring_constraints(s0, f, F, udot_rand)
    system.realize(state, Stage.Acceleration)
    udot = np.array(state.get_udot())
    expected = np.linalg.solve(M0 + np.diag(arm), -c_minus_f)
    cond = np.linalg.cond(M0 + np.diag(arm))
    scale = max(np.abs(expected).max(), 1.0)
    np.testing.assert_allclose(udot, expected, rtol=0, atol=256 * cond * EPS * scale)
    res = matter.calc_residual_force_ignoring_constraints(state, f, F, udot_rand)
    tscale = np.abs(M0).max() * 2 * nu + np.abs(c_minus_f).max()
    np.testing.assert_allclose(res, res0 + arm * udot_rand, rtol=0, atol=64 * EPS * tscale)
    np.testing.assert_allclose(matter.calc_residual_force_ignoring_constraints(state, f, F, udot), 0.0,
                               rtol=0, atol=256 * EPS * (np.abs(M0).max() * np.abs(udot).max() * nu + tscale))


def test_kinetic_energy_includes_the_rotors():
    """Law: kinetic energy = 1/2 u.M0 u + 1/2 sum a u^2."""
    model, state, arm, _ = _armed(11)
    u = np.array(state.get_u())
    ke = model.system.calc_kinetic_energy(state)
    with _zeroed(model, state):
        ke0 = model.system.calc_kinetic_energy(_without(model, state))
    assert abs(ke - (ke0 + 0.5 * float(arm @ (u * u)))) <= 64 * EPS * ke


@pytest.mark.parametrize("compiled", [True, False])
def test_energy_is_conserved_with_armature(compiled):
    """Law: with gravity and no dissipation, kinetic (rotors included) + potential energy stays constant
    along a trajectory (RK-Merson at accuracy 1e-10), in the compiled time loop and in Python's; the
    armature changes the motion (the same start without it ends elsewhere)."""
    model, state, arm, _ = _armed(21, joints=("Pin", "Slider", "Ball", "Gimbal", "Universal"), nb=5)
    e0 = model.system.calc_energy(state)
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_use_compiled_loop(compiled)
    integ.set_accuracy(1e-10)
    integ.initialize(state)
    integ.step_to(1.0)
    end = integ.get_state()
    model.system.realize(end, Stage.Velocity)
    e1 = model.system.calc_energy(end)
    scale = max(abs(e0), model.system.calc_kinetic_energy(state), 1.0)
    assert abs(e1 - e0) <= 1e-7 * scale, (e0, e1)
    with _zeroed(model, state):
        s0 = state.copy()
        i0 = RungeKuttaMersonIntegrator(model.system)
        i0.set_accuracy(1e-10)
        i0.initialize(s0)
        i0.step_to(1.0)
        assert np.abs(np.array(i0.get_state().get_q()) - end.get_q()).max() > 1e-3


def test_compiled_loop_equals_the_python_loop_bitwise():
    """Law: the compiled time loop's steps with armature are the Python path's (the same kernels)."""
    model, state, _, _ = _armed(5, joints=("Pin", "Ball", "Free", "Planar"), nb=5)
    ends = []
    for compiled in (True, False):
        integ = RungeKuttaMersonIntegrator(model.system)
        integ.set_use_compiled_loop(compiled)
        integ.set_accuracy(1e-8)
        integ.initialize(state.copy())
        integ.step_to(0.3)
        ends.append(integ.get_state())
    np.testing.assert_array_equal(ends[0].get_q(), ends[1].get_q())
    np.testing.assert_array_equal(ends[0].get_u(), ends[1].get_u())


def test_batch_and_functional_dynamics_equal_the_state_api():
    """Law: calc_udot_batch, calc_m_batch and FunctionalDynamics give the State API's results bitwise."""
    model, state, arm, rng = _armed(8)
    matter, system = model.matter, model.system
    system.realize(state, Stage.Acceleration)
    q, u = np.array(state.get_q()), np.array(state.get_u())
    np.testing.assert_array_equal(matter.calc_udot_batch(q[None], u[None], state=state)[0], state.get_udot())
    np.testing.assert_array_equal(matter.calc_m_batch(q[None], state=state)[0], matter.calc_m(state))
    dyn = matter.functional_dynamics(state)
    np.testing.assert_array_equal(dyn.calc_udot(q, u), state.get_udot())
    np.testing.assert_array_equal(dyn.calc_m(q), matter.calc_m(state))
    target = rng.uniform(-1, 1, arm.size)
    F = system.get_rigid_body_forces(state, Stage.Dynamics)
    f = system.get_mobility_forces(state, Stage.Dynamics)
    np.testing.assert_array_equal(dyn.calc_inverse_dynamics(q, u, target),
                                  matter.calc_residual_force_ignoring_constraints(state, f, F, target))


def test_constrained_accelerations_use_the_armed_matrix():
    """Law: with a constraint, the realized udot satisfies the constraint's acceleration equations and
    M udot + c - f (M with armature) lies in the range of G^T (the constraint forces), by least squares."""
    rng = np.random.default_rng(31)
    model = random_model(rng, ("Pin", "Gimbal", "Slider"), 5, gravity=np.array([0.0, -9.8, 0.0]), chain=True)
    while model.specs[2].joint != "Slider":  # the constrained body: one mobility
        model = random_model(rng, ("Pin", "Gimbal", "Slider"), 5, gravity=np.array([0.0, -9.8, 0.0]), chain=True)
    Constraint.ConstantSpeed(model.mobods[2], 0, 0.7)
    state = new_state(model)
    randomize_state(model, state, rng)
    for mb in model.mobods[1:]:
        mb.set_armature(rng.uniform(0.05, 0.5, mb.get_num_u(state)))
    model.mobods[2].set_u(state, [0.7])
    matter, system = model.matter, model.system
    system.realize(state, Stage.Acceleration)
    udot = np.array(state.get_udot())
    F = system.get_rigid_body_forces(state, Stage.Dynamics)
    f = system.get_mobility_forces(state, Stage.Dynamics)
    r = matter.calc_residual_force_ignoring_constraints(state, f, F, udot)
    G = matter.calc_g(state)
    assert G.shape[0] >= 1
    x, *_ = np.linalg.lstsq(G.T, r, rcond=None)
    scale = np.abs(matter.calc_m(state)).max() * max(np.abs(udot).max(), 1.0) * udot.size + np.abs(f).max()
    np.testing.assert_allclose(G.T @ x, r, rtol=0, atol=1e4 * EPS * scale)
    assert np.abs(r).max() > 1e3 * EPS * scale  # the constraint does act
    np.testing.assert_allclose(state.get_udot_err(), 0.0, rtol=0, atol=1e4 * EPS * scale)


def test_zero_armature_is_bitwise_the_default():
    """Law: an armature set to zeros leaves every result as a model that never had one, bitwise."""
    model, state, _, _ = _armed(3)
    with _zeroed(model, state):
        s = state.copy()
        model.system.realize(s, Stage.Acceleration)
        rng = np.random.default_rng(3)
        fresh = random_model(rng, MOVING, 7, gravity=np.array([0.0, -9.8, 0.0]))
        s2 = new_state(fresh)
        s2.set_q(s.get_q())
        s2.set_u(s.get_u())
        fresh.system.realize(s2, Stage.Acceleration)
        np.testing.assert_array_equal(s.get_udot(), s2.get_udot())
        np.testing.assert_array_equal(model.matter.calc_m(s), fresh.matter.calc_m(s2))


def test_bad_armature_is_refused_naming_the_body():
    """Errors: negative, non-finite, wrong count, on Ground: ValueError naming the body; nothing changes."""
    model, state, arm, _ = _armed(4, joints=("Pin", "Ball"), nb=3)
    mb = model.mobods[1]
    before = mb.get_armature().copy()
    path = mb.get_absolute_path()
    n = mb.get_armature().size
    for bad, why in (([-1.0] * n, ">= 0"), ([np.nan] * n, "finite"), ([0.1] * (n + 1), "one per mobility"),
                     ([[0.1]], "shape")):
        with pytest.raises(ValueError, match=why) as e:
            mb.set_armature(bad)
        assert path in str(e.value)
        np.testing.assert_array_equal(mb.get_armature(), before)
    with pytest.raises(ValueError, match="Ground"):
        model.matter.ground.set_armature(0.1)
    with pytest.raises(TypeError):
        mb.set_armature("heavy")
    model.system.realize(state, Stage.Acceleration)  # still a good model


def test_armature_survives_a_model_file_and_a_pickle():
    """Law: the model file writes the armature and reads it back; a pickled State keeps its workspace's."""
    import pickle

    from simtk.io.model_file import model_from_text, model_to_text

    model, state, arm, _ = _armed(6, joints=("Pin", "Ball", "Slider"), nb=4)
    text = model_to_text(model.system)
    assert "armature=" in text
    system2 = model_from_text(text)
    m2 = system2.get_matter_subsystem()
    s2 = system2.realize_topology()
    s2.set_q(state.get_q())
    s2.set_u(state.get_u())
    system2.realize(s2, Stage.Position)
    np.testing.assert_array_equal(m2.calc_m(s2), model.matter.calc_m(state))
    model.system.realize(state, Stage.Acceleration)
    s3 = pickle.loads(pickle.dumps(state))
    np.testing.assert_array_equal(s3.get_udot(), state.get_udot())


def test_a_reversed_mobilizer_takes_armature_and_its_count_is_checked_at_instance():
    """A reversed Pin (a mobilizer whose nu the State decides): its armature counts at Instance, where a
    wrong count is refused naming the body; a right one enters M's diagonal like a forward Pin's."""
    from simtk import Body, MassProperties, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem, Transform

    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = Body.Rigid(MassProperties(1.5, [0.1, 0.2, 0.0], np.diag([0.3, 0.2, 0.4])))
    rev = MobilizedBody.Pin(matter.ground, Transform(), body, Transform([0.3, 0, 0]), direction=MobilizedBody.Reverse)
    rev.set_armature([0.1, 0.2])
    with pytest.raises(ValueError, match="armature has 2 values but the mobilizer has 1") as e:
        system.realize_topology()
        system.realize(system.get_default_state(), Stage.Instance)
    assert rev.get_absolute_path() in str(e.value)
    rev.set_armature(0.25)
    state = system.realize_topology()
    state.set_q([0.4])
    system.realize(state, Stage.Position)
    M = matter.calc_m(state)
    rev.set_armature(0.0)
    system.realize(state, Stage.Position)
    np.testing.assert_array_equal(M, matter.calc_m(state) + 0.25)
