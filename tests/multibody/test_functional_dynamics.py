"""matter.functional_dynamics(state): udot, M and inverse dynamics of one configuration per call.

It runs the batch's compiled item functions on a scratch of its own, so each result must equal,
bitwise, what the State API gives for the same q and u (and so each batch row). The reference is
always the public State API on a copy of the same instance.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import ALL_JOINTS, QUATERNION_JOINTS, new_state
from test_batch import _in_two_threads, _model, _one_at_a_time, _overflowing_bushing, _q_starts, _random_rows

import simtk
from simtk import Constraint, Force, Stage
from simtk.common.errors import NonFiniteForceError


@pytest.mark.parametrize("joint, euler", [(j, False) for j in ALL_JOINTS] + [(j, True) for j in sorted(QUATERNION_JOINTS)])
def test_results_equal_the_state_api_bitwise(joint, euler):
    """Every built-in mobilizer, quaternions unnormalized or Euler angles, the built-in force kinds
    and gravity, an applied tau."""
    model, rng = _model(joint, 100 + ALL_JOINTS.index(joint))
    state = new_state(model, euler=euler)
    model.system.realize(state, Stage.Instance)
    dyn = model.matter.functional_dynamics(state)
    q, u, tau = _random_rows(model, state, rng, 4, unnormalized=True)
    target = rng.uniform(-1, 1, u.shape)
    for k in range(4):
        s, F, f = _one_at_a_time(model, state, q[k], u[k])
        udot = dyn.calc_udot(q[k], u[k], tau[k])
        ref, _ = model.matter.calc_acceleration_ignoring_constraints(s, f + tau[k], F)
        np.testing.assert_array_equal(udot, ref)
        np.testing.assert_array_equal(dyn.calc_m(q[k]), model.matter.calc_m(s))
        np.testing.assert_array_equal(dyn.calc_inverse_dynamics(q[k], u[k], target[k]),
                                      model.matter.calc_residual_force_ignoring_constraints(s, f, F, target[k]))
    # without tau, udot is the State's own realized udot
    s = state.copy()
    s.set_q(q[0])
    s.set_u(u[0])
    model.system.realize(s, Stage.Acceleration)
    np.testing.assert_array_equal(dyn.calc_udot(q[0], u[0]), s.get_udot())


def test_out_arrays_lists_and_new_arrays():
    model, rng = _model("Gimbal", 7)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    dyn = model.matter.functional_dynamics(state)
    q, u, _ = _random_rows(model, state, rng, 1)
    nu = state.get_nu()
    udot = dyn.calc_udot(q[0], u[0])
    out = np.full(nu, np.nan)
    assert dyn.calc_udot(q[0], u[0], out=out) is out
    np.testing.assert_array_equal(out, udot)
    np.testing.assert_array_equal(dyn.calc_udot(list(q[0]), list(u[0])), udot)  # converted
    assert dyn.calc_udot(q[0], u[0]) is not udot  # a new array each call by default
    M = np.empty((nu, nu))
    assert dyn.calc_m(q[0], out=M) is M
    np.testing.assert_array_equal(M, model.matter.calc_m_batch(q, state=state)[0])
    with pytest.raises(ValueError, match="out: expected"):
        dyn.calc_m(q[0], out=np.empty((nu + 1, nu - 1)))
    with pytest.raises(ValueError, match="out: expected"):
        dyn.calc_udot(q[0], u[0], out=np.empty(nu, dtype=np.float32))
    with pytest.raises(ValueError, match="out: expected"):
        dyn.calc_udot(q[0], u[0], out=udot[::-1])
    assert (dyn.nq, dyn.nu) == (state.get_nq(), nu) and "FunctionalDynamics" in repr(dyn)


def test_bad_inputs_are_refused_naming_the_argument_and_entry():
    model, rng = _model("Ball", 20, forces=False)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    dyn = model.matter.functional_dynamics(state)
    q, u, tau = (a[0] for a in _random_rows(model, state, rng, 1))
    with pytest.raises(ValueError, match=r"calc_udot\(\): q: expected a vector of"):
        dyn.calc_udot(q[1:], u)
    with pytest.raises(ValueError, match=r"calc_udot\(\): u: expected a vector of"):
        dyn.calc_udot(q, u[None])
    with pytest.raises(ValueError, match=r"tau: expected a vector"):
        dyn.calc_udot(q, u, tau[:1])
    bad = u.copy()
    bad[2] = np.inf
    with pytest.raises(ValueError, match=r"calc_inverse_dynamics\(\): u\[2\] is not finite \(inf\)"):
        dyn.calc_inverse_dynamics(q, bad, u)
    with pytest.raises(ValueError, match=r"udot\[2\] is not finite"):
        dyn.calc_inverse_dynamics(q, u, bad)
    zero = q.copy()
    i = _q_starts(model, state)[[s.joint if s else None for s in model.specs].index("Ball")]
    zero[i:i + 4] = 0.0
    with pytest.raises(ValueError, match=r"calc_m\(\): q has a zero quaternion"):
        dyn.calc_m(zero)
    with pytest.raises(simtk.StageTooLowError):
        model.matter.functional_dynamics(model.system.realize_topology())
    # the failures left it usable
    np.testing.assert_array_equal(dyn.calc_udot(q, u), model.matter.calc_udot_batch(q[None], u[None], state=state)[0])


def test_what_the_batch_refuses_it_refuses():
    model, rng = _model("Pin", 19, forces=False)
    Constraint.Rod(model.mobods[1], np.zeros(3), model.mobods[-1], np.zeros(3), 0.5)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    with pytest.raises(NotImplementedError, match="constraint"):
        model.matter.functional_dynamics(state)
    model, rng = _model("Pin", 18, forces=False)
    Force.DiscreteForces(model.forces, model.matter)
    with pytest.raises(NotImplementedError, match="DiscreteForces.*evaluated in Python"):
        model.matter.functional_dynamics()


def test_the_instance_is_the_one_it_was_made_with():
    """A force disabled after the object was made still acts in it; a new object leaves it out."""
    model, rng = _model("Pin", 22)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = (a[0] for a in _random_rows(model, state, rng, 1))
    before = model.matter.functional_dynamics(state)
    udot = before.calc_udot(q, u)
    model.forces.get_force(1).disable(state)
    model.system.realize(state, Stage.Instance)
    np.testing.assert_array_equal(before.calc_udot(q, u), udot)
    after = model.matter.functional_dynamics(state).calc_udot(q, u)
    assert not np.array_equal(after, udot)
    np.testing.assert_array_equal(after, model.matter.calc_udot_batch(q[None], u[None], state=state)[0])


def test_a_force_element_that_overflows_is_named():
    matter, state = _overflowing_bushing()
    dyn = matter.functional_dynamics(state)
    with pytest.raises(NonFiniteForceError, match=r"calc_udot\(\): .*[Bb]ushing.*not finite"):
        dyn.calc_udot([8.0, 0, 0], np.zeros(3))
    with pytest.raises(NonFiniteForceError, match=r"calc_inverse_dynamics\(\): .*[Bb]ushing"):
        dyn.calc_inverse_dynamics([8.0, 0, 0], np.zeros(3), np.zeros(3))
    np.testing.assert_array_equal(dyn.calc_udot(np.zeros(3), np.zeros(3)), np.zeros(3))


def test_one_object_per_thread_gives_the_serial_results():
    model, rng = _model("Free", 21, nb=8)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, tau = _random_rows(model, state, rng, 40)
    serial = model.matter.calc_udot_batch(q, u, tau, state=state, threads=1)
    results: dict = {}

    def work(part: int):
        dyn = model.matter.functional_dynamics(state)
        for rep in range(20):
            for k in range(part, len(q), 2):
                results[(rep, k)] = dyn.calc_udot(q[k], u[k], tau[k])

    _in_two_threads(work)
    assert len(results) == 20 * len(q)
    for (rep, k), udot in results.items():
        np.testing.assert_array_equal(udot, serial[k])
