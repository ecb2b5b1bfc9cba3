"""A run split by save_state/load_state equals the uninterrupted run bitwise, when the integrator's
continuation (its predicted step size, and Verlet's step history) is saved and restored with the State.

Laws: ``save_state(state, path, integrator=integ)`` writes the integrator's continuation beside the
State; ``integ2.set_continuation(load_continuation(path))`` after (or before) ``initialize`` on the
loaded State makes the next steps those the uninterrupted integrator takes, so every later report
is bitwise the uninterrupted run's. Without it the integrator restarts its step size and the run
differs (at the accuracy's level). A continuation is refused for another State or another method.
"""
from __future__ import annotations

import numpy as np
import pytest
from continuation_models import pendulum

from simtk import (
    IntegratorError,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    SemiExplicitEuler2Integrator,
    TimeStepper,
    VerletIntegrator,
)
from simtk.io import load_continuation, load_state, save_state

METHODS = {"rk_merson": RungeKuttaMersonIntegrator, "verlet": VerletIntegrator,
           "semi_explicit_euler2": SemiExplicitEuler2Integrator}
T_SPLIT, T_END, DT = 0.3, 0.6, 0.02


def _stepper(system, method):
    integ = METHODS[method](system)
    integ.set_accuracy(1e-5)
    return integ, TimeStepper(system, integ)


def _reports(ts, t0: float, t1: float) -> np.ndarray:
    rows = []
    for k in range(1, round((t1 - t0) / DT) + 1):
        ts.step_to(t0 + k * DT)
        rows.append(np.concatenate([[ts.get_time()], ts.get_state().get_y()]))
    return np.array(rows)


def _uninterrupted(method):
    system, state = pendulum()
    _, ts = _stepper(system, method)
    ts.initialize(state)
    first = _reports(ts, state.get_time(), state.get_time() + T_SPLIT)
    return system, state, first, _reports(ts, state.get_time() + T_SPLIT, state.get_time() + T_END)


@pytest.mark.parametrize("method", list(METHODS))
def test_a_run_split_by_save_and_load_equals_the_uninterrupted_run_bitwise(method, tmp_path):
    system, start, first_ref, second_ref = _uninterrupted(method)
    integ, ts = _stepper(system, method)
    ts.initialize(start.copy())
    t0 = start.get_time()
    np.testing.assert_array_equal(_reports(ts, t0, t0 + T_SPLIT), first_ref)
    path = tmp_path / "half.npz"
    save_state(ts.get_state(), path, integrator=integ)

    for before_initialize in (False, True):
        integ2, ts2 = _stepper(system, method)
        if before_initialize:  # kept until initialize: what a Simulation, which initializes at run(), needs
            integ2.set_continuation(load_continuation(path))
            ts2.initialize(load_state(system, path))
        else:
            ts2.initialize(load_state(system, path))
            integ2.set_continuation(load_continuation(path))
        np.testing.assert_array_equal(_reports(ts2, t0 + T_SPLIT, t0 + T_END), second_ref)


def test_without_the_continuation_the_resumed_run_restarts_its_step_size(tmp_path):
    """Why the continuation exists: the loaded State alone restarts the step-size control."""
    system, start, _, second_ref = _uninterrupted("rk_merson")
    integ, ts = _stepper(system, "rk_merson")
    ts.initialize(start.copy())
    _reports(ts, start.get_time(), start.get_time() + T_SPLIT)
    save_state(ts.get_state(), tmp_path / "half.npz")
    assert load_continuation(tmp_path / "half.npz") is None
    _, ts2 = _stepper(system, "rk_merson")
    ts2.initialize(load_state(system, tmp_path / "half.npz"))
    resumed = _reports(ts2, start.get_time() + T_SPLIT, start.get_time() + T_END)
    assert not np.array_equal(resumed, second_ref)


def test_a_continuation_is_refused_for_another_state_or_method(tmp_path):
    system, start = pendulum()
    integ, ts = _stepper(system, "rk_merson")
    ts.initialize(start)
    ts.step_to(start.get_time() + 0.05)
    c = integ.get_continuation()
    other, ts_other = _stepper(system, "rk_merson")
    ts_other.initialize(start)  # another time and y
    h = other.get_predicted_next_step_size()
    with pytest.raises(ValueError, match="time"):
        other.set_continuation(c)
    assert other.get_predicted_next_step_size() == h  # refused before changing anything
    verlet, ts_v = _stepper(system, "verlet")
    ts_v.initialize(ts.get_state())
    with pytest.raises(ValueError, match="RungeKuttaMerson"):
        verlet.set_continuation(c)
    with pytest.raises(ValueError, match="another State"):
        save_state(start, tmp_path / "x.npz", integrator=integ)  # not the integrator's State
    pending, ts_p = _stepper(system, "rk_merson")
    pending.set_continuation(c)
    with pytest.raises(ValueError, match="time"):
        ts_p.initialize(start)
    sci = ScipyIntegrator(system)
    TimeStepper(system, sci).initialize(start)
    with pytest.raises(IntegratorError, match="continuation"):
        sci.get_continuation()
