"""Batched dynamics (matter.calc_udot_batch, calc_m_batch, calc_inverse_dynamics_batch, step_batch).

Each row of a batch runs the same compiled arithmetic, in the same order, as the one-at-a-time
State API, so the comparisons below are bitwise (``assert_array_equal``) unless a test says why
not. The reference for a row is always computed through the public State API on a copy of the
same instance.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
from builders import (
    ALL_JOINTS,
    QUATERNION_JOINTS,
    new_state,
    random_model,
    random_q,
)

import simtk
from simtk import Constraint, Force, Function, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem, Stage
from simtk.common.errors import NonFiniteForceError
from simtk.spatial import Body, MassProperties, Transform
from tolerances import assert_close, scale_of

# ---------------------------------------------------------------------- helpers


def _add_builtin_forces(model, rng):
    """One element of most built-in kinds, on random bodies and mobilities."""
    forces, matter, mobods = model.forces, model.matter, model.mobods
    b1, b2 = mobods[1], mobods[-1]
    Force.TwoPointLinearSpring(forces, b1, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.5, .5, 3), 20.0, 0.3)
    Force.TwoPointLinearDamper(forces, matter.ground, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.5, .5, 3), 2.0)
    Force.TwoPointConstantForce(forces, b1, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.5, .5, 3), 1.5)
    Force.GlobalDamper(forces, matter, 0.3)
    Force.ConstantForce(forces, b2, rng.uniform(-.5, .5, 3), rng.uniform(-2, 2, 3))
    Force.ConstantTorque(forces, b1, rng.uniform(-2, 2, 3))
    Force.LinearBushing(forces, matter.ground, Transform(), b1, Transform(), rng.uniform(1, 20, 6), rng.uniform(0.1, 2, 6))
    with_u = [mb for mb, spec in zip(mobods[1:], model.specs[1:])
              if spec.joint not in QUATERNION_JOINTS and spec.joint != "Weld"]  # qdot = u in either mode
    if with_u:
        mb = with_u[0]
        Force.MobilityLinearSpring(forces, mb, 0, 10.0, 0.2)
        Force.MobilityLinearDamper(forces, mb, 0, 0.5)
        Force.MobilityConstantForce(forces, mb, 0, 0.7)


def _random_rows(model, state, rng, K, *, unnormalized=False):
    euler = model.matter.get_use_euler_angles(state)
    q = np.empty((K, state.get_nq()))
    for k in range(K):
        rows = []
        for mb, spec in zip(model.mobods[1:], model.specs[1:]):
            qi = random_q(rng, spec.joint, mb.get_num_q(state), euler, spread=0.8)
            if unnormalized and spec.joint in QUATERNION_JOINTS and not euler:
                qi[:4] *= rng.uniform(0.5, 2.0)
            rows.append(qi)
        q[k] = np.concatenate(rows) if rows else np.zeros(0)
    u = rng.uniform(-1, 1, (K, state.get_nu()))
    tau = rng.uniform(-1, 1, (K, state.get_nu()))
    return q, u, tau


def _one_at_a_time(model, state, q, u):
    """(state copy realized to Dynamics with q, u; the System's body and mobility forces)."""
    s = state.copy()
    s.set_q(q)
    s.set_u(u)
    model.system.realize(s, Stage.Dynamics)
    return s, model.system.get_rigid_body_forces(s).copy(), model.system.get_mobility_forces(s).copy()


def _model(joint, seed, *, forces=True, nb=6):
    rng = np.random.default_rng(seed)
    model = random_model(rng, [joint, "Pin", "Ball"] if joint != "Weld" else ["Weld", "Pin"], nb,
                         gravity=rng.uniform(-10, 10, 3))
    if forces:
        _add_builtin_forces(model, rng)
    return model, rng


# ---------------------------------------------------------------------- equality with the State API


@pytest.mark.parametrize("joint, euler", [(j, False) for j in ALL_JOINTS] + [(j, True) for j in sorted(QUATERNION_JOINTS)])
def test_batch_rows_equal_the_state_api_bitwise(joint, euler):
    """udot, M and inverse dynamics of each row are bitwise those of the State API, for every
    built-in mobilizer (with quaternions or Euler angles), under gravity and the built-in force
    kinds plus a row-wise tau; quaternions are passed unnormalized."""
    model, rng = _model(joint, ALL_JOINTS.index(joint))
    state = new_state(model, euler=euler)
    model.system.realize(state, Stage.Instance)
    K = 5
    q, u, tau = _random_rows(model, state, rng, K, unnormalized=True)
    udot = model.matter.calc_udot_batch(q, u, tau, state=state, threads=2)
    M = model.matter.calc_m_batch(q, state=state, threads=2)
    target = rng.uniform(-1, 1, udot.shape)
    tau_id = model.matter.calc_inverse_dynamics_batch(q, u, target, state=state, threads=2)
    assert udot.shape == (K, state.get_nu()) and M.shape == (K, state.get_nu(), state.get_nu())
    for k in range(K):
        s, F, f = _one_at_a_time(model, state, q[k], u[k])
        ref, _ = model.matter.calc_acceleration_ignoring_constraints(s, f + tau[k], F)
        np.testing.assert_array_equal(udot[k], ref)
        np.testing.assert_array_equal(M[k], model.matter.calc_m(s))
        np.testing.assert_array_equal(tau_id[k], model.matter.calc_residual_force_ignoring_constraints(s, f, F, target[k]))


def test_udot_is_what_the_state_realizes_without_tau():
    """Without tau, a row's udot is the State's own realized udot (the System's forces only)."""
    model, rng = _model("Free", 11)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = _random_rows(model, state, rng, 3)
    udot = model.matter.calc_udot_batch(q, u, state=state)
    for k in range(3):
        s = state.copy()
        s.set_q(q[k])
        s.set_u(u[k])
        model.system.realize(s, Stage.Acceleration)
        np.testing.assert_array_equal(udot[k], s.get_udot())


def test_rows_of_the_other_byte_order_are_converted():
    """float64 rows of the other byte order (same type number, other bytes) give what native rows give,
    bitwise: they are converted, not read as doubles."""
    model, rng = _model("Free", 13)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 3)
    swap = [x.astype(x.dtype.newbyteorder()) for x in (q, u, tau)]
    matter = model.matter
    np.testing.assert_array_equal(matter.calc_udot_batch(*swap, state=state), matter.calc_udot_batch(q, u, tau, state=state))
    np.testing.assert_array_equal(matter.calc_m_batch(swap[0], state=state), matter.calc_m_batch(q, state=state))


def test_inverse_dynamics_inverts_forward_dynamics():
    """calc_inverse_dynamics_batch(q, u, calc_udot_batch(q, u, tau)) gives back tau, to round-off of
    two O(n) sweeps (the arithmetic differs, so not bitwise)."""
    model, rng = _model("Gimbal", 12, nb=8)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 16)
    udot = model.matter.calc_udot_batch(q, u, tau, state=state)
    back = model.matter.calc_inverse_dynamics_batch(q, u, udot, state=state)
    M = model.matter.calc_m_batch(q, state=state)
    scale = scale_of(tau) + float(np.abs(M).max()) * scale_of(udot) + scale_of(u) ** 2 * float(np.abs(M).max())
    assert_close(back, tau, margin=4096, scale=scale, what="tau from inverse dynamics")


def test_thread_count_does_not_change_the_results():
    """1, 2 and 3 threads (and the default) give bitwise the same rows (a thread gets at least 32
    evaluations, so 130 rows use all 3)."""
    model, rng = _model("Ball", 13, nb=8)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 130)  # enough rows for 3 threads
    runs = [model.matter.calc_udot_batch(q, u, tau, state=state, threads=n) for n in (1, 2, 3, None)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])
    steps = [model.matter.step_batch(q, u, tau, h=1e-3, n_steps=4, scheme="rk4", state=state, threads=n)
             for n in (1, 2)]
    np.testing.assert_array_equal(steps[0][0], steps[1][0])
    np.testing.assert_array_equal(steps[0][1], steps[1][1])


def test_default_state_is_the_systems_default_instance():
    model, rng = _model("Pin", 14)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 4)
    np.testing.assert_array_equal(model.matter.calc_udot_batch(q, u, tau),
                                  model.matter.calc_udot_batch(q, u, tau, state=state))


def test_a_disabled_force_is_left_out_and_the_instance_follows_the_state():
    model, rng = _model("Pin", 15, forces=False)
    spring = Force.MobilityLinearSpring(model.forces, model.mobods[1], 0, 50.0, 0.0)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = _random_rows(model, state, rng, 3)
    with_spring = model.matter.calc_udot_batch(q, u, state=state)
    spring.disable(state)
    model.system.realize(state, Stage.Instance)
    without = model.matter.calc_udot_batch(q, u, state=state)
    assert not np.array_equal(with_spring, without)
    s, F, f = _one_at_a_time(model, state, q[0], u[0])
    np.testing.assert_array_equal(without[0], model.matter.calc_acceleration_ignoring_constraints(s, f, F)[0])


# ---------------------------------------------------------------------- stepping


def _qdot(model, state, q, u):
    s = state.copy()
    s.set_q(q)
    s.set_u(u)
    model.system.realize(s, Stage.Velocity)
    return s.get_qdot().copy()


def _udot(model, state, q, u, tau):
    s, F, f = _one_at_a_time(model, state, q, u)
    return model.matter.calc_acceleration_ignoring_constraints(s, f + tau, F)[0]


def _q_starts(model, state) -> list:
    """The first q index of each mobilized body (0 for Ground), from the public sizes."""
    starts, off = [0], 0
    for mb in model.mobods[1:]:
        starts.append(off)
        off += mb.get_num_q(state)
    return starts


def _normalize(model, state, q):
    q = q.copy()
    starts = _q_starts(model, state)
    for i, spec in enumerate(model.specs[1:], start=1):
        if spec.joint in QUATERNION_JOINTS and not model.matter.get_use_euler_angles(state):
            x = q[starts[i]:starts[i] + 4]
            r = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3])
            q[starts[i]:starts[i] + 4] = x / r
    return q


@pytest.mark.parametrize("scheme", ["semi_explicit_euler", "rk4"])
def test_step_batch_equals_the_scheme_written_over_the_state_api(scheme):
    """Each row follows the scheme's formulas evaluated one step at a time through the State API
    (udot from calc_acceleration_ignoring_constraints, qdot = N(q) u from realizing Velocity),
    with the quaternions normalized after every step: bitwise."""
    model, rng = _model("Free", 16, nb=5)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 3)
    h, n = 2e-3, 3
    q1, u1 = model.matter.step_batch(q, u, tau, h=h, n_steps=n, scheme=scheme, state=state)
    for k in range(3):
        qk, uk = q[k].copy(), u[k].copy()
        for _ in range(n):
            if scheme == "semi_explicit_euler":
                uk = uk + h * _udot(model, state, qk, uk, tau[k])
                qk = qk + h * _qdot(model, state, qk, uk)
            else:
                q0, u0 = qk, uk
                qs, us = q0, u0
                for st in range(4):
                    kq, ku = _qdot(model, state, qs, us), _udot(model, state, qs, us, tau[k])
                    if st == 0:
                        qa, ua = kq.copy(), ku.copy()
                    else:
                        w = 2.0 if st < 3 else 1.0
                        qa, ua = qa + w * kq, ua + w * ku
                    if st < 3:
                        a = 0.5 * h if st < 2 else h
                        qs, us = q0 + a * kq, u0 + a * ku
                qk, uk = q0 + (h / 6.0) * qa, u0 + (h / 6.0) * ua
            qk = _normalize(model, state, qk)
        np.testing.assert_array_equal(q1[k], qk)
        np.testing.assert_array_equal(u1[k], uk)
    # inputs untouched; zero steps is the identity
    q0, u0 = model.matter.step_batch(q, u, tau, h=h, n_steps=0, state=state)
    np.testing.assert_array_equal(q0, q)
    np.testing.assert_array_equal(u0, u)


def test_rk4_conserves_energy_of_a_conservative_chain():
    """A pendulum chain under gravity alone, stepped by RK4 at a small step: the total energy
    drifts by far less than with semi-explicit Euler over the same steps (a test of the scheme,
    whose error is O(h^4), so the bound is the method's, not round-off)."""
    model, rng = _model("Pin", 17, forces=False, nb=4)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = _random_rows(model, state, rng, 2)

    def energy(qr, ur):
        s = state.copy()
        s.set_q(qr)
        s.set_u(ur)
        model.system.realize(s, Stage.Dynamics)
        return model.matter.calc_kinetic_energy(s) + model.forces.calc_potential_energy(s)

    e0 = [energy(q[k], u[k]) for k in range(2)]
    q4, u4 = model.matter.step_batch(q, u, h=1e-3, n_steps=200, scheme="rk4", state=state)
    q1, u1 = model.matter.step_batch(q, u, h=1e-3, n_steps=200, scheme="semi_explicit_euler", state=state)
    for k in range(2):
        d4 = abs(energy(q4[k], u4[k]) - e0[k])
        d1 = abs(energy(q1[k], u1[k]) - e0[k])
        assert d4 < 1e-6 * (1 + abs(e0[k])) and d4 < d1


# ---------------------------------------------------------------------- refusals and errors


def test_python_forces_are_refused_with_the_element_named():
    model, rng = _model("Pin", 18, forces=False)
    Force.DiscreteForces(model.forces, model.matter)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = _random_rows(model, state, rng, 2)
    with pytest.raises(NotImplementedError, match="DiscreteForces.*evaluated in Python"):
        model.matter.calc_udot_batch(q, u, state=state)


def test_enabled_constraints_are_refused_and_disabled_ones_allowed():
    model, rng = _model("Pin", 19, forces=False)
    rod = Constraint.Rod(model.mobods[1], np.zeros(3), model.mobods[-1], np.zeros(3), 0.5)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = _random_rows(model, state, rng, 2)
    with pytest.raises(NotImplementedError, match="constraint"):
        model.matter.calc_udot_batch(q, u, state=state)
    rod.disable(state)
    model.system.realize(state, Stage.Instance)
    assert model.matter.calc_udot_batch(q, u, state=state).shape == (2, state.get_nu())


class _UserIdentity(Function):
    """f(x) = x written by a user: no compiled form, so a FunctionBased of it is a Custom mobilizer."""

    def calc_value(self, x):
        return float(x[0])

    def calc_derivative(self, comps, x):
        return 1.0 if len(comps) == 1 else 0.0

    def get_argument_size(self):
        return 1

    def get_max_derivative_order(self):
        return 2


def test_custom_mobilizers_are_refused():
    """A mobilizer whose kinematics run in Python (a FunctionBased of a user's Function; one of built-in
    functions is a compiled kind, which the batch runs) is refused."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0.1, 0, 0], simtk.Inertia(0.1, 0.1, 0.1)))
    zero = [Function.Constant(0.0, 0) for _ in range(6)]
    zero[2] = _UserIdentity()
    MobilizedBody.FunctionBased(matter.ground, body, 1, zero, [[], [], [0], [], [], []])
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    with pytest.raises(NotImplementedError, match="Custom mobilizer"):
        matter.calc_udot_batch(np.zeros((2, 1)), np.zeros((2, 1)), state=state)


def test_bad_inputs_are_refused():
    model, rng = _model("Ball", 20, forces=False)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 3)
    matter = model.matter
    with pytest.raises(ValueError, match="q: expected shape"):
        matter.calc_udot_batch(q[:, 1:], u, state=state)
    with pytest.raises(ValueError, match="u: expected shape"):
        matter.calc_udot_batch(q, u[:2], state=state)
    with pytest.raises(ValueError, match="tau: expected shape"):
        matter.calc_udot_batch(q, u, tau[:, :1], state=state)
    bad = u.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"u\[1, 0\] is not finite"):
        matter.calc_udot_batch(q, bad, state=state)
    zero = q.copy()
    i = _q_starts(model, state)[[s.joint if s else None for s in model.specs].index("Ball")]
    zero[2, i:i + 4] = 0.0
    with pytest.raises(ValueError, match=r"q\[2\] has a zero quaternion"):
        matter.calc_udot_batch(zero, u, state=state)
    with pytest.raises(ValueError, match="threads"):
        matter.calc_udot_batch(q, u, state=state, threads=0)
    with pytest.raises(ValueError, match="scheme"):
        matter.step_batch(q, u, h=1e-3, scheme="rk45", state=state)
    with pytest.raises(ValueError, match="h must be"):
        matter.step_batch(q, u, h=-1.0, state=state)
    below = model.system.realize_topology()
    with pytest.raises(simtk.StageTooLowError):
        matter.calc_udot_batch(q, u, state=below)


def _overflowing_bushing():
    """(matter, state at Instance) of a body on a Translation held by a bushing of stiffness near the
    largest double, which overflows to an infinite force at a displacement of 8 along x."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = simtk.GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], simtk.Inertia(0.1, 0.1, 0.1)))
    slide = MobilizedBody.Translation(matter.ground, body)
    big = np.finfo(float).max / 4
    Force.LinearBushing(forces, matter.ground, Transform(), slide, Transform(), [1, 1, 1, big, big, big], np.zeros(6))
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    return matter, state


def test_a_force_element_that_overflows_is_reported_with_the_row():
    """A bushing of stiffness near the largest double overflows to an infinite force at a large
    enough displacement: the kernel leaves it out and the call names the element and the row."""
    matter, state = _overflowing_bushing()
    q = np.zeros((3, 3))
    q[1, 0] = 8.0
    with pytest.raises(NonFiniteForceError, match="row 1: .*[Bb]ushing"):
        matter.calc_udot_batch(q, np.zeros((3, 3)), state=state)


def test_thread_settings():
    n = simtk.get_num_threads()
    assert n >= 1 and isinstance(simtk.OPENMP, bool)
    try:
        simtk.set_num_threads(1)
        assert simtk.get_num_threads() == 1
        with pytest.raises(ValueError):
            simtk.set_num_threads(0)
    finally:
        simtk.set_num_threads(n)


# ---------------------------------------------------------------------- thread safety


def _in_two_threads(work) -> None:
    """Run ``work(0)`` and ``work(1)`` on two threads released together; fail with what either raised."""
    errors: list = []
    barrier = threading.Barrier(2)

    def run(part: int):
        try:
            barrier.wait()
            work(part)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(p,)) for p in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_independent_states_realized_from_two_threads_equal_the_serial_results():
    """Two threads realize many States of one System to Acceleration at the same time (and run
    batched calls on shared and private States meanwhile); every result equals the serial one."""
    model, rng = _model("Free", 21, nb=8)
    base = new_state(model)
    model.system.realize(base, Stage.Instance)
    n_states = 60
    q, u, tau = _random_rows(model, base, rng, n_states)
    states = []
    for k in range(n_states):
        s = base.copy()
        s.set_q(q[k])
        s.set_u(u[k])
        states.append(s)
    serial = []
    for k in range(n_states):
        s = states[k].copy()
        model.system.realize(s, Stage.Acceleration)
        serial.append(s.get_udot().copy())
    serial_batch = model.matter.calc_udot_batch(q, u, tau, state=base, threads=1)
    results: dict = {}
    batches: list = []

    def work(part: int):
        for rep in range(3):
            for k in range(part, n_states, 2):
                s = states[k].copy()
                model.system.realize(s, Stage.Acceleration)
                results[(rep, k)] = s.get_udot().copy()
            # both threads use the same instance (base) at once: each must get its own scratch
            batches.append(model.matter.calc_udot_batch(q, u, tau, state=base, threads=2))

    _in_two_threads(work)
    assert len(results) == 3 * n_states and len(batches) == 6
    for (rep, k), udot in results.items():
        np.testing.assert_array_equal(udot, serial[k])
    for b in batches:
        np.testing.assert_array_equal(b, serial_batch)
