"""The matter operators' arguments: arrays of the right kind pass straight to the kernels (one
check in C), anything else is converted, and what cannot be is refused with the method's name.

Each operator is called four ways on the same numbers: a C-contiguous float64 array (the fast
path), a list, a strided view and an array of the other byte order (converted); all four must give
the same result bitwise. A NaN, an infinity or a wrong shape must raise ValueError naming the method,
and leave the State as it was.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import new_state
from test_batch import _model, _one_at_a_time, _random_rows

from simtk import Stage


@pytest.fixture(scope="module")
def realized():
    model, rng = _model("Ball", 11)
    state = new_state(model)
    model.system.realize(state, Stage.Instance)
    q, u, _ = _random_rows(model, state, rng, 1)
    s, F, f = _one_at_a_time(model, state, q[0], u[0])
    return model.matter, s, F, f, rng.uniform(-1, 1, s.get_nu())


def _operators(matter, s):
    """name -> (call, argument kinds): 'u' a (nu,) vector, 'F' body forces (nb, 2, 3)."""
    return {
        "calc_residual_force_ignoring_constraints":
            (lambda f, F, a: matter.calc_residual_force_ignoring_constraints(s, f, F, a), "uFu"),
        "calc_acceleration_ignoring_constraints":
            (lambda f, F: matter.calc_acceleration_ignoring_constraints(s, f, F)[0], "uF"),
        "multiply_by_m": (lambda a: matter.multiply_by_m(s, a), "u"),
        "multiply_by_m_inv": (lambda a: matter.multiply_by_m_inv(s, a), "u"),
        "multiply_by_system_jacobian": (lambda a: matter.multiply_by_system_jacobian(s, a), "u"),
        "multiply_by_system_jacobian_transpose": (lambda F: matter.multiply_by_system_jacobian_transpose(s, F), "F"),
    }


def _arguments(kinds, f, F, a):
    vectors = iter([f, a])
    return [F if k == "F" else next(vectors) for k in kinds]


def _strided(x):
    wide = np.zeros((x.size, 2))
    wide[:, 0] = x.reshape(-1)
    return wide[:, 0].reshape(x.shape)  # not C-contiguous


@pytest.mark.parametrize("name", list(_operators(None, None)))
def test_every_form_gives_the_same_result(realized, name):
    matter, s, F, f, a = realized
    call, kinds = _operators(matter, s)[name]
    args = _arguments(kinds, f, F, a)
    ref = call(*args)
    np.testing.assert_array_equal(call(*[x.tolist() for x in args]), ref)
    np.testing.assert_array_equal(call(*[_strided(x) for x in args]), ref)
    # float64 of the other byte order: the same type number, other bytes (converted, not read as doubles)
    np.testing.assert_array_equal(call(*[x.astype(x.dtype.newbyteorder()) for x in args]), ref)
    assert not np.shares_memory(ref, args[0])


@pytest.mark.parametrize("name", list(_operators(None, None)))
@pytest.mark.parametrize("bad", [np.nan, np.inf, "shape"])
def test_bad_arguments_are_named(realized, name, bad):
    matter, s, F, f, a = realized
    call, kinds = _operators(matter, s)[name]
    q_before, u_before, stage = s.get_q().copy(), s.get_u().copy(), s.get_system_stage()
    for which in range(len(kinds)):
        args = [x.copy() for x in _arguments(kinds, f, F, a)]
        if bad == "shape":
            args[which] = args[which].reshape(-1)[:-1]
        else:
            args[which].reshape(-1)[-1] = bad
        with pytest.raises(ValueError, match=name):
            call(*args)
    np.testing.assert_array_equal(s.get_q(), q_before)
    np.testing.assert_array_equal(s.get_u(), u_before)
    assert s.get_system_stage() == stage


def test_calc_m_is_a_new_symmetric_array_each_call(realized):
    matter, s, *_ = realized
    M = matter.calc_m(s)
    M2 = matter.calc_m(s)
    assert M is not M2 and M.flags.writeable
    np.testing.assert_array_equal(M, M2)
    np.testing.assert_array_equal(M, M.T)  # computed on one triangle, mirrored
    nu = s.get_nu()
    np.testing.assert_allclose(M, np.column_stack([matter.multiply_by_m(s, e) for e in np.eye(nu)]),
                               rtol=0, atol=64 * np.finfo(float).eps * np.abs(M).max())


@pytest.mark.parametrize("name", ["multiply_by_m", "multiply_by_m_inv"])
def test_out_receives_the_product_and_a_bad_out_is_refused(realized, name):
    """M a (M^-1 a) into a caller's buffer: the same numbers as a new array (and as the dense M from
    composite-body inertias: M a, and M (M^-1 a) = a); an out of the wrong kind is refused naming the
    method, before anything is written."""
    matter, s, F, f, a = realized
    op = getattr(matter, name)
    nu = s.get_nu()
    out = np.full(nu, np.nan)
    assert op(s, a, out=out) is out
    np.testing.assert_array_equal(out, op(s, a))
    M = matter.calc_m(s)
    got = M @ out if name == "multiply_by_m_inv" else out
    want = a if name == "multiply_by_m_inv" else M @ a
    np.testing.assert_allclose(got, want, rtol=0, atol=1e3 * np.finfo(float).eps * np.linalg.cond(M) * np.abs(want).max())
    wide = np.zeros((nu, 2))
    ro = np.zeros(nu)
    ro.flags.writeable = False
    for bad in (np.zeros(nu + 1), np.zeros(nu, dtype=np.float32), wide[:, 0], ro, list(range(nu))):
        before = bad.copy() if isinstance(bad, np.ndarray) else None
        with pytest.raises(ValueError, match=f"{name}.*out"):
            op(s, a, out=bad)
        if before is not None:
            np.testing.assert_array_equal(bad, before)
