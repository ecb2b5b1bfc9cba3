"""Integrators on systems with closed-form solutions."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from systems import DiscreteGain, StiffLinear, oscillator_system  # noqa: E402

from simtk import Stage, Subsystem, System  # noqa: E402
from simtk.math import (  # noqa: E402
    ExplicitEulerIntegrator,
    Integrator,
    IntegratorError,
    NonFiniteDerivativeError,
    RungeKutta2Integrator,
    RungeKutta3Integrator,
    RungeKuttaFeldbergIntegrator,
    RungeKuttaMersonIntegrator,
    ScipyIntegrator,
    SemiExplicitEuler2Integrator,
    SemiExplicitEulerIntegrator,
    SimulationOverError,
    StepSizeTooSmallError,
    VerletIntegrator,
)
from tolerances import tol

S = Integrator.SuccessfulStepStatus
ERROR_CONTROLLED = [ExplicitEulerIntegrator, RungeKutta2Integrator, RungeKutta3Integrator,
                    RungeKuttaMersonIntegrator, RungeKuttaFeldbergIntegrator, VerletIntegrator,
                    SemiExplicitEuler2Integrator]


def _scaled_rms(err, y0, y1):
    """Simbody's accuracy measure with unit weights: RMS of |e| / max(1, |y|)."""
    return math.sqrt(np.mean((np.abs(err) / np.maximum(1.0, np.maximum(np.abs(y0), np.abs(y1)))) ** 2))


@pytest.mark.parametrize("cls", ERROR_CONTROLLED)
@pytest.mark.parametrize("accuracy", [1e-3, 1e-6])
def test_local_error_per_step_meets_accuracy(cls, accuracy):
    """Law: every accepted step's true local error (the step's result minus the exact flow of the
    oscillator from the step's start) has weighted RMS norm within the accuracy, up to the factor 2
    that separates an asymptotic error estimate from the truth."""
    system, osc = oscillator_system(omega=2.0, q0=1.0, u0=0.5)
    integ = cls(system)
    integ.set_accuracy(accuracy)
    integ.set_return_every_internal_step(True)
    integ.initialize(system.realize_topology())
    worst, n = 0.0, 0
    while integ.get_time() < 3.0:
        t0, y0 = integ.get_time(), integ.get_state().get_y().copy()
        if integ.step_to(3.0) == S.StartOfContinuousInterval:
            continue
        t1, y1 = integ.get_time(), integ.get_state().get_y()
        exact = np.array(osc.exact(t1, y0[0], y0[1], t0))
        worst = max(worst, _scaled_rms(y1 - exact, y0, y1) / accuracy)
        n += 1
    assert n == integ.get_num_steps_taken() > 3
    assert worst <= 2.0, f"{cls.__name__}: worst local error is {worst:.2f} x accuracy"


def test_scipy_bdf_meets_accuracy_on_the_oscillator():
    """Law: BDF at rtol = accuracy stays within a small multiple of accuracy over one period."""
    system, osc = oscillator_system(omega=1.0)
    integ = ScipyIntegrator(system, "BDF")
    integ.set_accuracy(1e-6)
    integ.initialize(system.realize_topology())
    for t in np.linspace(0.5, 2 * math.pi, 8):
        assert integ.step_to(t) == S.ReachedReportTime
        assert integ.get_time() == t
        q, u = osc.exact(t)
        assert np.allclose(integ.get_state().get_y(), [q, u], atol=1e-4)  # integration error at 1e-6


ORDERS = [(ExplicitEulerIntegrator, 1), (RungeKutta2Integrator, 2), (RungeKutta3Integrator, 3),
          (RungeKuttaMersonIntegrator, 4), (RungeKuttaFeldbergIntegrator, 5), (VerletIntegrator, 2),
          (SemiExplicitEuler2Integrator, 1)]


@pytest.mark.parametrize("cls,order", ORDERS)
def test_fixed_step_convergence_order(cls, order):
    """Law: with fixed steps the global error at T scales as h**order: log2 of the error ratio
    between steps h and h/2 is the order (within 0.25)."""
    system, osc = oscillator_system(omega=1.0, q0=1.0, u0=0.0)
    T = 2.0
    errors = []
    for h in (0.1, 0.05, 0.025):
        integ = cls(system)
        integ.set_fixed_step_size(h)
        integ.initialize(system.realize_topology())
        integ.step_to(T)
        assert integ.get_time() == T
        assert integ.get_num_steps_taken() == round(T / h)
        errors.append(np.linalg.norm(integ.get_state().get_y() - np.array(osc.exact(T))))
    measured = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert all(abs(m - order) < 0.25 for m in measured), f"{cls.__name__}: measured orders {measured}"


def test_semi_explicit_euler_is_first_order_and_symplectic():
    """Law: symplectic Euler on the oscillator has first-order error but its energy error stays
    bounded (no drift) over many periods, unlike explicit Euler's exponential growth."""
    system, osc = oscillator_system(omega=1.0)
    energies = {}
    for cls in (SemiExplicitEulerIntegrator, ExplicitEulerIntegrator):
        integ = cls(system, 0.05) if cls is SemiExplicitEulerIntegrator else cls(system)
        if cls is ExplicitEulerIntegrator:
            integ.set_fixed_step_size(0.05)
        integ.initialize(system.realize_topology())
        integ.step_to(200.0)
        q, u = integ.get_state().get_y()
        energies[cls] = 0.5 * (q * q + u * u)
    assert abs(energies[SemiExplicitEulerIntegrator] - 0.5) < 0.05
    assert energies[ExplicitEulerIntegrator] > 5.0
    errors = []
    for h in (0.02, 0.01):
        integ = SemiExplicitEulerIntegrator(system, h)
        integ.initialize(system.realize_topology())
        integ.step_to(1.0)
        errors.append(np.linalg.norm(integ.get_state().get_y() - np.array(osc.exact(1.0))))
    assert abs(math.log2(errors[0] / errors[1]) - 1) < 0.15


def test_realizations_per_step_and_statistics():
    """Law: a derivative costs one realization; stage counts per step are 1, 2, 3, 5, 6 for Euler,
    RK2, RK3 (FSAL), Merson, Feldberg, and the System's own Acceleration counter agrees."""
    expected = {ExplicitEulerIntegrator: 1, RungeKutta2Integrator: 2, RungeKutta3Integrator: 3,
                RungeKuttaMersonIntegrator: 5, RungeKuttaFeldbergIntegrator: 6, VerletIntegrator: 2}
    for cls, per_step in expected.items():
        system, _ = oscillator_system()
        integ = cls(system)
        integ.set_fixed_step_size(0.01)
        integ.initialize(system.realize_topology())
        before = system.get_num_realizations_of_this_stage(Stage.Acceleration)
        r0 = integ.get_num_realizations()
        integ.step_to(1.0)
        n = integ.get_num_steps_taken()
        assert n == integ.get_num_steps_attempted() == 100
        assert integ.get_num_realizations() - r0 == per_step * n
        assert system.get_num_realizations_of_this_stage(Stage.Acceleration) - before == per_step * n
        assert integ.get_num_error_test_failures() == 0 and integ.get_num_projections() == 0
        assert integ.get_method_name() and integ.method_has_error_control()


def test_error_test_failures_are_counted_and_steps_retried():
    """Law: an initial step far too large is rejected (counted) and retried smaller; attempted =
    taken + failures."""
    system, _ = oscillator_system()
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    integ.set_initial_step_size(1.0)
    integ.initialize(system.realize_topology())
    integ.step_to(1.0)
    assert integ.get_num_error_test_failures() >= 1
    assert integ.get_num_steps_attempted() == integ.get_num_steps_taken() + integ.get_num_error_test_failures()
    assert integ.get_actual_initial_step_size_taken() < 1.0


def test_report_times_are_reached_exactly_and_steps_keep_their_size():
    """Law: step_to lands exactly on each report time; the final time ends the simulation."""
    system, osc = oscillator_system()
    integ = RungeKuttaFeldbergIntegrator(system)
    integ.set_final_time(1.0)
    integ.initialize(system.realize_topology())
    for k in range(1, 10):
        assert integ.step_to(0.1 * k) == S.ReachedReportTime
        assert integ.get_time() == 0.1 * k
    assert integ.step_to(5.0) == S.EndOfSimulation
    assert integ.get_time() == 1.0 and integ.is_simulation_over()
    assert integ.get_termination_reason() == Integrator.TerminationReason.ReachedFinalTime
    with pytest.raises(SimulationOverError):
        integ.step_to(2.0)


def test_step_limit_and_every_internal_step():
    system, _ = oscillator_system()
    integ = RungeKutta3Integrator(system)
    integ.set_internal_step_limit(3)
    integ.initialize(system.realize_topology())
    assert integ.step_to(100.0) == S.ReachedStepLimit
    assert integ.get_num_steps_taken() == 3
    integ.set_return_every_internal_step(True)
    integ.initialize(system.realize_topology())
    assert integ.step_to(1.0) == S.StartOfContinuousInterval
    assert integ.step_to(1.0) == S.TimeHasAdvanced
    assert 0 < integ.get_time() < 1.0


class _BlowsUp(Subsystem):
    """z' = 1 until t = 0.5, then NaN: no step size can get past t = 0.5."""

    def realize_subsystem_topology_impl(self, state):
        self.allocate_z(state, [0.0])
        self.d = self.allocate_discrete_variable(state, Stage.Dynamics, 7)

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_zdot(state)[0] = 1.0 if state.get_time() < 0.5 else math.nan


@pytest.mark.parametrize("cls", [RungeKuttaMersonIntegrator, ExplicitEulerIntegrator, VerletIntegrator])
def test_non_finite_derivative_raises_and_keeps_the_last_good_state(cls):
    """Law: a NaN derivative ends in NonFiniteDerivativeError naming zdot, and the State is the
    last good one: finite, before t = 0.5, z equal to t, discrete variable intact."""
    system = System()
    sub = _BlowsUp(system)
    integ = cls(system)
    integ.set_maximum_step_size(0.1)
    integ.initialize(system.realize_topology())
    with pytest.raises(NonFiniteDerivativeError, match=r"zdot\[0\]"):
        integ.step_to(1.0)
    s = integ.get_state()
    assert s.get_time() < 0.5
    # z' = 1 is integrated exactly: z and t differ by round-off over the ~30 steps, on t's scale
    assert abs(s.get_z()[0] - s.get_time()) <= tol(0.5, 256)
    assert sub.get_discrete_variable(s, sub.d) == 7
    assert np.isfinite(s.get_ydot()).all()
    assert integ.get_num_non_finite_failures() > 0


def test_fixed_step_nan_raises_immediately():
    system = System()
    _BlowsUp(system)
    integ = SemiExplicitEulerIntegrator(system, 0.2)
    integ.initialize(system.realize_topology())
    with pytest.raises(NonFiniteDerivativeError, match="not finite"):
        integ.step_to(1.0)
    assert integ.get_time() == 0.4  # 0.2 + 0.2: exact


def test_minimum_step_size_error():
    """Law: if accuracy needs steps below the minimum, StepSizeTooSmallError says so and the
    State stays at the last good step."""
    system, _ = oscillator_system(omega=50.0)
    integ = RungeKutta2Integrator(system)
    integ.set_accuracy(1e-9)
    integ.set_minimum_step_size(1e-2)
    integ.initialize(system.realize_topology())
    with pytest.raises(StepSizeTooSmallError, match="minimum step size"):
        integ.step_to(1.0)
    assert integ.get_time() == 0.0
    assert np.array_equal(integ.get_state().get_y(), [1.0, 0.0])


def test_stiff_system_bdf_needs_far_fewer_steps_than_explicit():
    """Law: on z' = -1e4 (z - cos t) - sin t, BDF meets the closed form with far fewer steps than
    explicit methods, which are limited by stability (h < ~2.8e-4 for Feldberg)."""
    results = {}
    for name, make in [("BDF", lambda s: ScipyIntegrator(s, "BDF")),
                       ("Radau", lambda s: ScipyIntegrator(s, "Radau")),
                       ("Feldberg", RungeKuttaFeldbergIntegrator),
                       ("RK3", RungeKutta3Integrator)]:
        system = System()
        sub = StiffLinear(system, lam=1e4)
        integ = make(system)
        integ.set_accuracy(1e-5)
        integ.initialize(system.realize_topology())
        integ.step_to(1.0)
        assert integ.get_time() == 1.0
        err = np.max(np.abs(integ.get_state().get_z() - sub.exact(1.0)))
        assert err < 1e-4, (name, err)  # integration error at accuracy 1e-5
        results[name] = integ.get_num_steps_taken()
    assert results["BDF"] * 20 < results["Feldberg"], results
    assert results["BDF"] * 20 < results["RK3"], results
    assert results["Radau"] * 20 < results["Feldberg"], results


def test_auto_update_discrete_variable_advances_once_per_step():
    """Law: an auto-update discrete variable counting steps equals the number of steps taken."""

    class Counter(Subsystem):
        def realize_subsystem_topology_impl(self, state):
            self.allocate_z(state, [0.0])
            self.n = self.allocate_auto_update_discrete_variable(state, Stage.Dynamics, 0, Stage.Acceleration)

        def realize_subsystem_acceleration_impl(self, state):
            self.upd_zdot(state)[0] = 1.0
            self.set_discrete_var_update_value(state, self.n, self.get_discrete_variable(state, self.n) + 1)

    system = System()
    sub = Counter(system)
    integ = RungeKutta3Integrator(system)
    integ.set_fixed_step_size(0.1)
    integ.initialize(system.realize_topology())
    integ.step_to(1.0)
    assert sub.get_discrete_variable(integ.get_state(), sub.n) == integ.get_num_steps_taken() == 10


class _Circle(Subsystem):
    """A point on the unit circle rotating at unit speed, q = (x, y), with constraint |q| = 1.

    Its own projection scales q back onto the circle, so integrators must call it."""

    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [1.0, 0.0])
        self.allocate_u(state, [0.0])

    def realize_subsystem_instance_impl(self, state):
        self.allocate_q_err(state, 1)

    def realize_subsystem_position_impl(self, state):
        q = self.get_q(state)
        self.upd_q_err(state)[0] = math.hypot(q[0], q[1]) - 1.0

    def realize_subsystem_velocity_impl(self, state):
        q = self.get_q(state)
        self.upd_qdot(state)[:] = [-q[1], q[0]]

    def project_q_impl(self, state, accuracy):
        q = self.get_q(state)
        r = math.hypot(q[0], q[1])
        if abs(r - 1.0) <= accuracy:
            return False
        self.upd_q(state)[:] = q / r
        return True


def test_projection_keeps_constraint_error_within_tolerance():
    """Law: with constraints, after every step the constraint error is within the constraint
    tolerance, and projections are counted."""
    system = System()
    _Circle(system)
    integ = ExplicitEulerIntegrator(system)
    integ.set_fixed_step_size(0.01)  # Euler drifts outward by ~h^2/2 per step
    integ.set_constraint_tolerance(1e-4)
    integ.set_return_every_internal_step(True)
    integ.initialize(system.realize_topology())
    while integ.get_time() < 2.0:
        integ.step_to(2.0)
        q = integ.get_state().get_q()
        assert abs(math.hypot(q[0], q[1]) - 1) <= integ.get_constraint_tolerance_in_use()  # the method's setting
    assert integ.get_num_projections() > 0
    n_proj = integ.get_num_projections()
    integ.set_project_every_step(True)
    integ.initialize(system.realize_topology())
    integ.step_to(0.5)
    assert integ.get_num_projections() == integ.get_num_steps_taken() + 1 > 0
    assert n_proj > 0


def test_settings_are_validated():
    system, _ = oscillator_system()
    integ = RungeKutta3Integrator(system)
    for bad in (-1.0, 0.0, math.nan, 2.0):
        with pytest.raises((ValueError, TypeError)):
            integ.set_accuracy(bad)
    with pytest.raises(ValueError):
        integ.set_internal_step_limit(-3)
    with pytest.raises(IntegratorError, match="initialize"):
        integ.step_to(1.0)
    with pytest.raises(TypeError):
        RungeKutta3Integrator("not a system")
    with pytest.raises(ValueError, match="unknown method"):
        ScipyIntegrator(system, "Nope")
    integ.initialize(system.realize_topology())
    integ.step_to(1.0)
    with pytest.raises(ValueError, match="before the current time"):
        integ.step_to(0.5)


def test_reinitialize_after_changing_a_discrete_variable():
    """Law: after an outside change of a Dynamics-stage discrete variable and reinitialize, the
    derivative follows the new value (z grows with slope k)."""
    system = System()
    sub = DiscreteGain(system, k=1.0)
    integ = RungeKutta2Integrator(system)
    integ.initialize(system.realize_topology())
    integ.step_to(1.0)
    sub.set_discrete_variable(integ.upd_advanced_state(), sub.k_index, 3.0)
    integ.reinitialize(Stage.Dynamics, False)
    integ.step_to(2.0)
    # z' = k piecewise constant, integrated exactly: round-off over the steps, on z's scale
    assert abs(integ.get_state().get_z()[0] - 4.0) <= tol(4.0, 256)


def test_unit_weights_are_refreshed_every_step_only_when_quaternions_make_them_vary():
    from simtk import (
        Body,
        Force,
        GeneralForceSubsystem,
        Inertia,
        MassProperties,
        MobilizedBody,
        MultibodySystem,
        RungeKuttaMersonIntegrator,
        SimbodyMatterSubsystem,
        Transform,
    )

    def model(kind):
        system = MultibodySystem()
        matter = SimbodyMatterSubsystem(system)
        Force.UniformGravity(GeneralForceSubsystem(system), matter, [0, -9.81, 0])
        body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.5, 0], Inertia(0.1)))
        getattr(MobilizedBody, kind)(matter.ground, Transform(), body, Transform([0, 0.5, 0]))
        state = system.realize_topology()
        state.set_u(np.full(state.get_nu(), 0.7))
        return system, state

    for kind, varies in (("Pin", False), ("Ball", True)):
        system, state = model(kind)
        integ = RungeKuttaMersonIntegrator(system)
        integ.initialize(state)
        assert integ._weights_vary is varies, kind
        w0 = integ._wy.copy()
        integ.step_to(0.3)
        if varies:  # a quaternion's weights follow its components
            assert not np.array_equal(integ._wy, w0)
        else:  # computed once: the same values a fresh computation gives
            np.testing.assert_array_equal(integ._wy, np.concatenate([
                system.calc_q_weights(integ.get_state()), system.calc_u_weights(integ.get_state())]))
