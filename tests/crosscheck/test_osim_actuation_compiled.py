"""OpenSim actuators as the compiled ``Force.Actuators`` kind: the kernel against the Python oracle
(``_actuation_oracle.py``, the form load_osim used before), the compiled time loop taking no Python per
evaluation, and a user's Function as a control keeping the Python path.

Tolerances: the kernel forms the same products as the oracle, but a rotation times a vector is summed
in its own order (numpy's matmul may not), so a force may differ by a few ulps of the largest force:
``tol(scale, 1e1)``.
"""
from __future__ import annotations

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.removeFileSink()

from _actuation_oracle import ActuationOracle  # noqa: E402
from test_opensim_contact_actuators import _benchmark, block_model, write  # noqa: E402

from simtk import Force, Function, RungeKuttaMersonIntegrator, Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from tolerances import tol  # noqa: E402


class _Wave(Function):
    """A user's Function of time (no compiled form): 0.3 cos(2 t)."""

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 0

    def calc_value(self, x) -> float:
        return 0.3 * float(np.cos(2.0 * x[0]))

    def calc_derivative(self, components, x) -> float:
        return -0.6 * float(np.sin(2.0 * x[0])) if len(components) == 1 else float("nan")


def _random_state(m, rng, t):
    st = m.initial_state()
    for n in m.coordinates:
        m.set_coordinate_value(st, n, float(rng.uniform(-0.3, 0.3)))
        m.set_coordinate_speed(st, n, float(rng.uniform(-1.0, 1.0)))
    st.set_time(t)
    for a in m.actuators:
        m.set_control(st, a, float(rng.uniform(-1.0, 1.0)))
    m.system.realize(st, Stage.Velocity)
    return st


def _assert_equal_to_oracle(m, oracle, st):
    bf, mf = m.actuation.calc_force_contribution(st)
    obf, omf = oracle.forces(st)
    scale = max(1.0, float(np.abs(obf).max()), float(np.abs(omf).max()))
    assert np.abs(bf - obf).max() <= tol(scale, 1e1)
    assert np.abs(mf - omf).max() <= tol(scale, 1e1)
    assert np.abs(obf).max() > 0.0 and np.abs(omf).max() > 0.0  # every kind acts (not a threshold)


def test_load_osim_builds_the_compiled_actuators_element(tmp_path):
    m = load_osim(write(block_model("hc", actuators=True, controller=True), tmp_path))
    assert isinstance(m.actuation, Force.Actuators)
    assert m.actuation.get_absolute_path() == "/forces/actuators"
    assert m.actuation.get_actuator_names() == ["knee", "twist", "spin", "push", "thrust"]


def test_compiled_actuation_equals_the_python_oracle_at_random_states_controls_and_times(tmp_path):
    m = load_osim(write(block_model("hc", actuators=True, controller=True), tmp_path))
    oracle = ActuationOracle(m)
    rng = np.random.default_rng(29)
    for t in (0.0, 0.37, 1.3, 2.9):
        for _ in range(3):
            st = _random_state(m, rng, t)
            _assert_equal_to_oracle(m, oracle, st)
            assert m.get_controls(st) == pytest.approx(
                dict(zip(m.actuators, oracle.controls(st))), abs=tol(1.0, 1e1))


def test_leg_model_time_loop_calls_no_python_and_matches_the_python_loop(tmp_path):
    """The benchmark's leg: actuators under a PrescribedController; the compiled loop takes no Python
    per evaluation and its trajectory equals the Python loop's bitwise (the same kernel, at the same
    times, in the same order of forces)."""
    path = str(tmp_path / "leg.osim")
    _benchmark().build_leg(path)
    finals = []
    for compiled in (True, False):
        m = load_osim(path)
        integ = RungeKuttaMersonIntegrator(m.system)
        integ.set_accuracy(1e-6)
        integ.set_use_compiled_loop(compiled)
        integ.initialize(m.initial_state())
        integ.step_to(0.05)
        finals.append(np.array(integ.get_state().get_y()))
        if compiled:
            text = integ.describe_fast_path()
            assert "calls Python" not in text
            assert "'/forces/actuators' (Actuators) are held over the steps" in text
    assert np.array_equal(finals[0], finals[1])


def test_a_users_function_as_a_control_keeps_the_python_path(tmp_path):
    m = load_osim(write(block_model("hc", actuators=True, controller=True), tmp_path))
    wave = _Wave()
    m.actuation.add_control_function("spin", wave)
    oracle = ActuationOracle(m, extra=[(m.actuators["spin"].index, wave)])
    rng = np.random.default_rng(31)
    for t in (0.2, 1.1):
        _assert_equal_to_oracle(m, oracle, _random_state(m, rng, t))
    integ = RungeKuttaMersonIntegrator(m.system)
    integ.initialize(m.initial_state())
    integ.step_to(0.01)
    assert "calls Python for the Actuators elements" in integ.describe_fast_path()
    assert np.isfinite(integ.get_state().get_y()).all()


def test_actuators_errors_name_the_element_and_change_nothing(tmp_path):
    m = load_osim(write(block_model("hc", actuators=True), tmp_path))
    st = m.initial_state()
    with pytest.raises(KeyError, match=r"/forces/actuators.*no actuator named 'nope'"):
        m.actuation.set_control(st, "nope", 1.0)
    with pytest.raises(ValueError, match=r"/forces/actuators.*'knee'.*finite"):
        m.actuation.set_control(st, "knee", float("nan"))
    assert m.get_control(st, "knee") == 0.0
    with pytest.raises(ValueError, match="exists already"):
        m.actuation.add_coordinate_actuator("knee", m.coordinates["pin_coord_0"].mobod, 0, 1.0)
    with pytest.raises(TypeError, match="Function of one argument"):
        m.actuation.add_control_function("knee", 3.0)
