"""Conservation laws over whole simulations (RungeKuttaMersonIntegrator at tight accuracy).

A conservative system (gravity, two-point and mobility springs) keeps its total energy; a
free-floating system with only internal forces keeps its spatial momentum about the Ground
origin and its mass center moves at constant velocity. The energy is computed from the
potential-energy functions of the force elements and the kinetic energy 1/2 u.M u, neither of
which the integrator sees, so the laws test the dynamics (udot) against them.

Measured on this (shared, 2-core) machine: the 10 s energy run takes about 1 s (10k-15k steps; the
force elements run in compiled kernels); the drift is 2e-10 to 5e-10 of the
energy at accuracy 1e-10 and scales with the accuracy (2e-8 at 1e-8, 2e-9 at 1e-9, 2e-11 at
1e-11, which takes twice as long). Quaternions drift off unit norm by ~1e-12 in 10 s without
projection; projecting every step keeps them at round-off for ~40% more time.
"""
from __future__ import annotations

import numpy as np
from builders import BodySpec, build, new_state, random_rotation, randomize_state, rel_err

from simtk import Force, RungeKuttaMersonIntegrator, Transform
from tolerances import tol

G = np.array([0.0, -9.81, 0.0])


def body(rng, joint, parent, X_PF, X_BM, mass=1.0):
    """A body with a fixed, well-conditioned central inertia in a random orientation."""
    R = random_rotation(rng).matrix
    I_C = R @ np.diag([0.04, 0.06, 0.08]) @ R.T
    return BodySpec(joint, parent, X_PF, X_BM, mass, np.array([0.05, -0.1, 0.02]), 0.5 * (I_C + I_C.T))


def spring_chain(seed: int, joints=("Pin", "Ball", "Free", "Slider"), k: float = 20.0):
    """A hanging chain mixing joint types (quaternion Ball and Free included), under gravity, with
    two two-point springs (one holding the free body near Ground) and a mobility spring on every
    Pin/Slider. Returns (model, state) with random moderate speeds."""
    rng = np.random.default_rng(seed)
    specs = [None]
    for i, j in enumerate(joints):
        X_PF = Transform(random_rotation(rng), [0.0, -0.5, 0.0] if i else [0.0, 0.0, 0.0])
        specs.append(body(rng, j, i, X_PF, Transform(random_rotation(rng), [0.0, 0.3, 0.0])))
    model = build(specs, gravity=G)
    f, mob = model.forces, model.mobods
    Force.TwoPointLinearSpring(f, mob[0], [0, 0, 0], mob[len(joints)], [0.1, 0, 0], k, 0.5)
    Force.TwoPointLinearSpring(f, mob[1], [0, 0.2, 0], mob[3], [0, 0, 0.1], k, 0.3)
    for i, j in enumerate(joints, start=1):
        if j in ("Pin", "Slider"):
            Force.MobilityLinearSpring(f, mob[i], 0, k / 2, 0.1)
    state = new_state(model)
    randomize_state(model, state, rng, speed=0.5)
    return model, state


def simulate(model, state, t_final, accuracy, project_every_step=False, report_every=1.0):
    """Integrate with RK-Merson, yielding the advanced State at each report time."""
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_accuracy(accuracy)
    integ.set_project_every_step(project_every_step)
    integ.initialize(state)
    yield integ, integ.get_state()
    t = 0.0
    while t < t_final:  # min() lands t on t_final exactly
        t = min(t + report_every, t_final)
        integ.step_to(t)
        assert integ.get_time() == t  # step_to lands exactly on the report time
        yield integ, integ.get_state()


def quaternion_norm_errors(model, state):
    return [abs(np.linalg.norm(mb.get_q(state)[:4]) - 1.0)
            for mb, s in zip(model.mobods[1:], model.specs[1:]) if s.joint in ("Ball", "Free")]


def test_energy_conserved_over_10_s():
    """E = KE + PE of a conservative spring-and-gravity chain (Pin, quaternion Ball and Free,
    Slider) stays within 1e-8 of its scale over 10 s at accuracy 1e-10, without any projection
    (the quaternion ODE keeps |q| = 1 up to integration error, and R(q) is built from the
    normalized quaternion)."""
    model, state = spring_chain(seed=1)
    system = model.system
    energies, kinetic = [], []
    for integ, s in simulate(model, state, 10.0, 1e-10):
        energies.append(system.calc_energy(s))
        kinetic.append(system.calc_kinetic_energy(s))
    E = np.array(energies)
    scale = max(abs(E[0]), max(kinetic))
    assert max(kinetic) > 1.0  # the chain really moves: energy is exchanged all along
    # integration error at accuracy 1e-10 (measured 2e-10 to 5e-10, module docstring), not round-off
    assert np.abs(E - E[0]).max() < 1e-8 * scale, f"drift {np.abs(E - E[0]).max() / scale:.2e}"
    assert max(quaternion_norm_errors(model, s)) < 1e-9  # integration error of the quaternion ODE (~1e-12)
    assert integ.get_num_projections() <= 2  # only at initialization: no constraints here


def test_energy_conserved_with_projection_every_step():
    """With set_project_every_step(True) the quaternions are renormalized after each step (to
    round-off) and the energy is conserved as well (3 s, accuracy 1e-10)."""
    model, state = spring_chain(seed=2)
    E = []
    for integ, s in simulate(model, state, 3.0, 1e-10, project_every_step=True):
        E.append(model.system.calc_energy(s))
        assert max(quaternion_norm_errors(model, s)) <= tol(1.0, 64)  # renormalized: |q| = 1, a few flops
    assert integ.get_num_projections() >= integ.get_num_steps_taken()
    assert np.abs(np.array(E) - E[0]).max() < 1e-8 * abs(E[0])  # integration error at accuracy 1e-10


def test_energy_drift_shrinks_with_accuracy():
    """The energy drift is integration error, not a mismatch between forces and potential
    energies: it falls by well over 10x from accuracy 1e-6 to 1e-9 (over 2 s)."""
    drifts = []
    for accuracy in (1e-6, 1e-9):
        model, state = spring_chain(seed=3)
        E = [model.system.calc_energy(s) for _, s in simulate(model, state, 2.0, accuracy, report_every=0.5)]
        drifts.append(np.abs(np.array(E) - E[0]).max())
    assert drifts[1] < drifts[0] / 10, drifts


def floating_system(seed: int = 4):
    """A Free base with a Pin, a Ball and a Slider child and internal springs, no gravity."""
    rng = np.random.default_rng(seed)
    specs = [None, body(rng, "Free", 0, Transform(), Transform(), mass=2.0)]
    for j, p_F in (("Pin", [0.4, 0.0, 0.0]), ("Ball", [0.0, 0.4, 0.0]), ("Slider", [0.0, 0.0, 0.4])):
        specs.append(body(rng, j, 1, Transform(random_rotation(rng), p_F), Transform(random_rotation(rng), [0, 0.2, 0])))
    model = build(specs)
    f, mob = model.forces, model.mobods
    Force.TwoPointLinearSpring(f, mob[2], [0.1, 0, 0], mob[3], [0, 0.1, 0], 10.0, 0.4)
    Force.TwoPointLinearSpring(f, mob[1], [0, 0, 0.1], mob[4], [0.1, 0, 0], 10.0, 0.2)
    Force.MobilityLinearSpring(f, mob[2], 0, 5.0, 0.3)
    Force.MobilityLinearSpring(f, mob[4], 0, 5.0, -0.1)
    state = new_state(model)
    randomize_state(model, state, rng, speed=0.8)
    return model, state


def test_momentum_conserved_for_a_free_floating_system():
    """With only internal forces, calc_system_momentum_about_ground_origin stays constant (to 1e-9
    of its size) over 5 s, the mass center moves in a straight line at constant velocity, and the
    energy is conserved."""
    model, state = floating_system()
    matter, system = model.matter, model.system
    results = []
    for integ, s in simulate(model, state, 5.0, 1e-10):
        results.append((s.get_time(), matter.calc_system_momentum_about_ground_origin(s),
                        matter.calc_system_mass_center_location_in_ground(s),
                        matter.calc_system_mass_center_velocity_in_ground(s), system.calc_energy(s)))
    t0, P0, c0, v0, E0 = results[0]
    scale = np.abs(P0).max()
    assert scale > 0.5
    for t, P, c, v, E in results[1:]:  # integration error at accuracy 1e-10 over 5 s, not round-off
        assert np.abs(P - P0).max() < 1e-9 * scale
        assert rel_err(v, v0) < 1e-9
        assert np.abs(c - (c0 + v0 * (t - t0))).max() < 1e-8
        assert abs(E - E0) < 1e-8 * abs(E0)
    assert np.abs(results[-1][2] - c0).max() > 0.1  # it did drift: the check above is not vacuous
