"""simtk.deformable.ImplicitExtrapolationIntegrator: linearly implicit Euler extrapolation under error control.

Checked by independent means:
- order: with fixed steps the hybrid pendulum (rigid pendulum, string fixed at one end and attached to
  the body) converges to RK-Merson's solution at 1e-10 at second order (ImplicitEuler's is first);
  under error control the error falls in proportion to the accuracy while the step count grows as
  its square root (an O(h^2) estimate steering a second-order solution; with rows=3, an O(h^3)
  estimate: steps as its cube root, error as its 2/3 power);
- the contract: each step's true local error (against RK-Merson at 1e-12 from the step's start) is
  within the accuracy for the first-order member the estimate measures, and the propagated solution's
  is smaller; the error of a whole run (the seed's pendulum and tutorial 29's) is within the factor
  of the accuracy that the explicit RungeKutta2 (same estimate order) shows on the same run;
- every step replays from its definition (ImplicitEuler runs of 1 x h, 2 x h/2 (and 3 x h/3) on
  separate States, combined in closed form) and the documented step-size rule (growth and shrink
  factors with exponent 1/rows);
- a stiff string (k = 1e6 N/m, 1 g particles) swinging: far fewer steps than RK-Merson at the same
  accuracy, the same end state within the accuracy's scale, and over a longer run energy never rises;
- events: a spinning stiff dumbbell falls and bounces; its centre of mass falls freely (the
  extrapolated step is exact for it: sum(K) = 0 leaves the CM's step semi-explicit Euler, whose
  extrapolation is exact for constant acceleration), so the impact times have a closed form; report
  times are landed on exactly;
- a System with constraints is refused, naming the System, before any step.
"""
from __future__ import annotations

import importlib.util
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from test_implicit_euler import _rk_reference, _string
from test_spring_bodies import G, _hybrid

from simtk import (
    Constraint,
    Force,
    GeneralForceSubsystem,
    Integrator,
    MultibodySystem,
    RungeKutta2Integrator,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
)
from simtk.common.events import EventTriggerInfo, PeriodicEventReporter, TriggeredEventHandler
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator, ImplicitExtrapolationIntegrator
from simtk.math import IntegratorError

EPS = np.finfo(float).eps
S = Integrator.SuccessfulStepStatus


def _hybrid_start():
    system, matter, pend, body = _hybrid(k=150.0, c=0.5)
    s = system.realize_topology()
    system.realize_model(s)
    pend.set_one_q(s, 0, 0.4)
    return system, s


def _scaled_rms(err, y0, y1, w):
    """The documented accuracy measure: RMS of w |e| / max(1, w max(|y0|, |y1|))."""
    r = w * np.abs(err) / np.maximum(1.0, w * np.maximum(np.abs(y0), np.abs(y1)))
    return math.sqrt(float(np.mean(r * r)))


def _weights(system, s):
    return np.concatenate([system.calc_q_weights(s), system.calc_u_weights(s), system.calc_z_weights(s)])


# ------------------------------------------------------------------------------------------------ order
@pytest.mark.parametrize("rows", [2, 3])
def test_fixed_steps_converge_at_second_order(rows):
    """Halving h divides the error by 4 (within 15 %; ImplicitEuler's by 2); the solves are converged
    far below the error (cg_tolerance 1e-12), so that they do not set a floor."""
    t_end = 0.2
    ref = _rk_reference(t_end)
    errs = []
    for h in (2e-3, 1e-3, 5e-4):
        system, s = _hybrid_start()
        integ = ImplicitExtrapolationIntegrator(system, rows=rows, cg_tolerance=1e-12)
        integ.set_fixed_step_size(h)
        integ.initialize(s)
        integ.step_to(t_end)
        assert integ.get_num_steps_taken() == round(t_end / h)
        errs.append(np.abs(integ.get_state().get_y() - ref).max())
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert ((ratios > 0.85 * 4) & (ratios < 1.15 * 4)).all(), (errs, ratios)


@pytest.mark.parametrize("rows", [2, 3])
def test_error_is_proportional_to_accuracy_and_steps_to_its_root(rows):
    """An estimate O(h**rows) steering a second-order solution: a decade of accuracy is 10**(1/rows)
    times the steps and 10**(2/rows) times less error (global error O(h**2): a decade with 2 rows)."""
    t_end = 0.2
    ref = _rk_reference(t_end)
    errs, steps = [], []
    for acc in (1e-3, 1e-4, 1e-5):
        system, s = _hybrid_start()
        integ = ImplicitExtrapolationIntegrator(system, accuracy=acc, rows=rows)
        integ.initialize(s)
        integ.step_to(t_end)
        errs.append(np.abs(integ.get_state().get_y() - ref).max())
        steps.append(integ.get_num_steps_taken())
    e_ratio = np.array(errs[:-1]) / np.array(errs[1:])
    n_ratio = np.array(steps[1:]) / np.array(steps[:-1])
    # (within the controller's granularity: its safety factor and clamps move both by tens of percents)
    want = 10 ** (2 / rows)
    assert ((e_ratio > 0.6 * want) & (e_ratio < 1.6 * want)).all(), (errs, e_ratio)
    want = 10 ** (1 / rows)
    assert ((n_ratio > 0.8 * want) & (n_ratio < 1.25 * want)).all(), (steps, n_ratio)


# ------------------------------------------------------------------------------------------------ the contract
@pytest.mark.parametrize("rows", [2, 3])
@pytest.mark.parametrize("acc,t_end", [(1e-3, 0.15), (1e-5, 0.02)])
def test_each_steps_local_error_meets_the_accuracy(acc, t_end, rows):
    """Law (as for the explicit integrators): the true local error of the member the estimate
    measures (T21 = y1 - err with 2 rows, T32 = y1 itself with 3) has weighted RMS within the
    accuracy up to the factor 2 that separates an asymptotic estimate from the truth; the other
    member's (T22 = y1, T33 = y1 + err) is smaller still."""
    system, s = _hybrid_start()
    integ = ImplicitExtrapolationIntegrator(system, accuracy=acc, rows=rows)
    integ.set_return_every_internal_step(True)
    integ.initialize(s)
    w = _weights(system, integ.get_state())
    worst_low = worst_prop = 0.0
    n = 0
    while integ.get_time() < t_end:
        start = integ.get_state().copy()
        if integ.step_to(t_end) == S.StartOfContinuousInterval:
            continue
        t1, y1 = integ.get_time(), integ.get_state().get_y().copy()
        low, high = (y1 - integ._err, y1) if rows == 2 else (y1, y1 + integ._err)
        rk = RungeKuttaMersonIntegrator(system)
        rk.set_accuracy(1e-12)
        rk.initialize(start)
        rk.step_to(t1)
        exact = rk.get_state().get_y()
        y0 = start.get_y()
        worst_low = max(worst_low, _scaled_rms(low - exact, y0, y1, w) / acc)
        worst_prop = max(worst_prop, _scaled_rms(high - exact, y0, y1, w) / acc)
        n += 1
    assert n == integ.get_num_steps_taken() > 5
    assert worst_low <= 2.0, worst_low
    assert worst_prop <= worst_low, (worst_prop, worst_low)


def _tutorial_29_pendulum():
    """Tutorial 29's hybrid pendulum (11 particles, 200 N/m, undamped, started level), from its file."""
    path = Path(__file__).resolve().parents[2] / "tutorials" / "29_hybrid_pendulum_and_liver.py"
    spec = importlib.util.spec_from_file_location("tutorial_29", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    system, body, string, state = module.hybrid_pendulum()
    return system, state


@pytest.mark.parametrize("scene", [_hybrid_start, _tutorial_29_pendulum], ids=["seed", "tutorial 29"])
def test_error_of_a_run_is_within_the_factor_of_the_accuracy_that_explicit_methods_show(scene):
    """The global error of a run is not what the accuracy bounds (local errors add up over the
    steps), but it must be of the accuracy's size: within twice RungeKutta2's (an explicit method
    whose estimate has the same order) at every accuracy, and a few tens of accuracies at most;
    the reference is RK-Merson at 1e-10."""
    t_end = 0.2
    system, s = scene()
    rk = RungeKuttaMersonIntegrator(system)
    rk.set_accuracy(1e-10)
    rk.initialize(s)
    rk.step_to(t_end)
    ref = rk.get_state().get_y().copy()
    for acc in (1e-3, 1e-5):
        factors = []
        for make in (ImplicitExtrapolationIntegrator, RungeKutta2Integrator):
            system, s = scene()
            integ = make(system)
            integ.set_accuracy(acc)
            integ.initialize(s)
            integ.step_to(t_end)
            factors.append(np.abs(integ.get_state().get_y() - ref).max() / acc)
        assert factors[0] <= max(2 * factors[1], 10.0), (acc, factors)
        assert factors[0] <= 50.0, (acc, factors)


#: the propagated solution and the error estimate as combinations of T_j1 (j ImplicitEuler steps of
#: h/j), written out from the tableau of the harmonic sequence: 2 rows: T22 = 2 T21 - T11, estimate
#: T22 - T21 = T21 - T11; 3 rows: T32 = 3 T31 - 2 T21, estimate T33 - T32 = 3/2 T31 - 2 T21 + 1/2 T11
#: (T33 = 9/2 T31 - 4 T21 + 1/2 T11)
COMBINATIONS = {2: ([-1.0, 2.0], [-1.0, 1.0]), 3: ([0.0, -2.0, 3.0], [0.5, -2.0, 1.5])}


@pytest.mark.parametrize("rows", [2, 3])
def test_every_step_replays_from_its_definition_and_the_step_size_rule(rows):
    """Each step and its error estimate are the combinations above of ImplicitEuler runs on separate
    States; accepted steps are within the accuracy, rejected ones were not, and step sizes follow
    h min(5, max(0.2, 0.9 (acc/err)^(1/rows))) after an accepted step and h min(0.5, max(0.1,
    0.9 (acc/err)^(1/rows))) after a rejected one."""
    acc = 1e-3
    system, s = _hybrid_start()
    integ = ImplicitExtrapolationIntegrator(system, accuracy=acc, rows=rows)
    integ.set_return_every_internal_step(True)
    integ.initialize(s)
    cg = integ.get_cg_tolerance_in_use()
    w = _weights(system, integ.get_state())

    def euler(start, t1, n):
        ie = ImplicitEulerIntegrator(system, (t1 - start.get_time()) / n, cg_tolerance=cg)
        ie.initialize(start)
        ie.step_to(t1)
        assert ie.get_num_steps_taken() == n
        return ie.get_state().get_y().copy()

    def replay(start, h):
        T = [euler(start, start.get_time() + h, j) for j in range(1, rows + 1)]
        c_y, c_err = COMBINATIONS[rows]
        return sum(c * t for c, t in zip(c_y, T)), sum(c * t for c, t in zip(c_err, T))

    checked = rejections = 0
    while integ.get_num_steps_taken() < 30:
        start = integ.get_state().copy()
        h = integ.get_predicted_next_step_size()
        failed = integ.get_num_error_test_failures()
        if integ.step_to(10.0) == S.StartOfContinuousInterval:
            continue
        y0 = start.get_y()
        # the solves stop at a relative residual cg: the replay agrees to that, scaled by y's size
        d = 1e3 * cg * max(1.0, float(np.abs(y0).max()))
        for _ in range(integ.get_num_error_test_failures() - failed):
            y_try, err = replay(start, h)
            errn = _scaled_rms(err, y0, y_try, w)
            assert errn > acc * (1 - 1e-3), errn
            h *= min(0.5, max(0.1, 0.9 * (acc / errn) ** (1 / rows)))
            rejections += 1
        h_taken = integ.get_previous_step_size_taken()
        assert abs(h_taken - h) <= 1e-6 * h, (h_taken, h)  # (a rejection's replayed norm carries d)
        y1, err = replay(start, h_taken)
        assert np.abs(integ.get_state().get_y() - y1).max() <= d
        assert np.abs(integ._err - err).max() <= d
        errn = _scaled_rms(err, y0, y1, w)
        assert errn <= acc * (1 + 1e-3)
        want = h_taken * min(5.0, max(0.2, 0.9 * (acc / errn) ** (1 / rows)))
        assert abs(integ.get_predicted_next_step_size() - want) <= 1e-3 * want
        checked += 1
    assert checked == 30 and rejections > 0


# ------------------------------------------------------------------------------------------------ stiff
def _swinging_string(c=1.0, n=10, m=1e-3, k=1e6, L=0.05, angle=0.3):
    """The stiff string hanging at its static stretch, turned by ``angle`` about its fixed end."""
    system, body = _string(n, m, k, L, c)
    s = system.realize_topology()
    system.realize_model(s)
    r = L * np.arange(n + 1) + np.concatenate([[0.0], np.cumsum((n - np.arange(n)) * m * -G[1] / k)])
    pts = np.zeros((n + 1, 3))
    pts[:, 0], pts[:, 1] = r * math.sin(angle), -r * math.cos(angle)
    body.set_positions(s, pts)
    return system, body, s


@pytest.mark.parametrize("rows", [2, 3])
def test_stiff_string_takes_far_fewer_steps_than_an_explicit_method_and_agrees_with_it(rows):
    t_end, acc = 0.05, 1e-4
    out = []
    for make in (lambda system: ImplicitExtrapolationIntegrator(system, rows=rows), RungeKuttaMersonIntegrator):
        system, body, s = _swinging_string()
        integ = make(system)
        integ.set_accuracy(acc)
        integ.initialize(s)
        integ.step_to(t_end)
        out.append((integ.get_state().get_y().copy(), integ.get_num_steps_taken()))
    (y_imp, n_imp), (y_rk, n_rk) = out
    # RK-Merson is held at its stability limit (about 2.8 / 6.3e4 s for the stiffest mode)
    assert n_rk > 800 and n_imp * 20 < n_rk, (n_imp, n_rk)
    # both errors are a few tens of accuracies at most (see the run-error test): so is their difference
    assert np.abs(y_imp - y_rk).max() <= 50 * acc


def test_stiff_string_stays_stable_and_never_gains_energy_over_a_long_run():
    """T22's extrapolation dissipates (with 3 rows, T32 lets the energy drift up by its error at this
    accuracy: a property of the method, not a contract; T33, with |R(iy)| > 1 for small y, gained
    tenfold the swing's energy in 2 s here, which is why it is not propagated)."""
    system, body, s = _swinging_string(c=1.0)
    system.realize(s, Stage.Velocity)
    e0 = system.calc_energy(s)
    integ = ImplicitExtrapolationIntegrator(system, accuracy=1e-3)
    integ.initialize(s)
    energies = []
    for i in range(1, 41):
        integ.step_to(0.05 * i)
        st = integ.get_state()
        system.realize(st, Stage.Velocity)
        energies.append(system.calc_energy(st))
    e = np.array(energies)
    assert np.isfinite(e).all()
    # damped springs and gravity: the energy only falls (to the accuracy's scale of the swing's energy)
    assert (np.diff(np.concatenate([[e0], e])) <= 1e-3 * abs(e0 - e[-1])).all(), np.diff(e)
    # the string's soft transverse waves are resolved (about 200 steps per second at this accuracy);
    # RK-Merson, held at its stability limit by the stiff modes, takes about 2.2e4 per second
    assert integ.get_num_steps_taken() < 1000
    assert integ.get_num_cg_iterations() > 0


# ------------------------------------------------------------------------------------------------ events
class _Floor(TriggeredEventHandler):
    """Impact when the centre of mass falls through height 0: its vertical velocity -> -e times it."""

    def __init__(self, body, e):
        super().__init__(Stage.Position, EventTriggerInfo(rising=False, falling=True))
        self.body, self.e, self.times = body, e, []

    def get_value(self, state):
        m = self.body.get_masses()
        return float(m @ self.body.get_positions(state)[:, 1]) / float(m.sum())

    def handle_event(self, state, accuracy):
        self.times.append(state.get_time())
        m = self.body.get_masses()
        v = self.body.get_velocities(state).copy()
        v[:, 1] -= (1 + self.e) * float(m @ v[:, 1]) / float(m.sum())
        self.body.set_velocities(state, v)
        return False


class _Heights(PeriodicEventReporter):
    def __init__(self, body, interval):
        super().__init__(interval)
        self.body, self.times, self.heights = body, [], []

    def handle_event(self, state):
        m = self.body.get_masses()
        self.times.append(state.get_time())
        self.heights.append(float(m @ self.body.get_positions(state)[:, 1]) / float(m.sum()))


def _dumbbell(h0=1.0, k=1e6, m=1e-3, L=0.1):
    system = MultibodySystem("dumbbell")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    pts = np.array([[-L / 2, h0, 0.0], [L / 2, h0, 0.0]])
    body = DeformableBody.from_segments(system, pts, np.array([[0, 1]]), m, k, 0.0, name="dumbbell")
    return system, body


def _spinning(system, body, h0=1.0, spin=2.0, k=1e6, m=1e-3, L=0.1):
    """Spinning about the CM at rest, the spring stretched to the spin's steady length (k (2 r - L) =
    m spin^2 r), so that its stiff axial mode is not set ringing."""
    s = system.realize_topology()
    system.realize_model(s)
    r = k * L / (2 * k - m * spin ** 2)
    body.set_positions(s, np.array([[-r, h0, 0.0], [r, h0, 0.0]]))
    body.set_velocities(s, np.array([[0.0, -spin * r, 0.0], [0.0, spin * r, 0.0]]))
    return s


def test_bounces_of_a_spinning_stiff_dumbbell_are_localized_and_reports_land_on_time():
    h0, e, g, acc = 1.0, 0.8, -G[1], 1e-4
    system, body = _dumbbell(h0)
    floor = _Floor(body, e)
    heights = _Heights(body, 0.05)
    system.add_event_handler(floor)
    system.add_event_reporter(heights)
    s = _spinning(system, body)
    integ = ImplicitExtrapolationIntegrator(system, accuracy=acc)
    ts = TimeStepper(system, integ)
    ts.initialize(s)
    ts.step_to(1.2)
    assert ts.get_time() == 1.2
    t1 = math.sqrt(2 * h0 / g)
    expected = [t1]
    while expected[-1] < 1.2:
        expected.append(expected[-1] + 2 * e ** len(expected) * g * t1 / g)
    expected = [t for t in expected if t < 1.2]
    assert len(floor.times) == len(expected) >= 2
    # localized to the window (localization_window * accuracy * time scale); the CM's integration
    # error is only the solves' (the extrapolated step is exact for free fall): far below it
    window = floor.get_trigger_info().get_required_localization_time_window() * acc * system.get_default_time_scale()
    assert np.abs(np.array(floor.times) - expected).max() <= window
    assert heights.times == [t for t in (0.05 * i for i in range(30)) if t <= 1.2]
    before = [(t, y) for t, y in zip(heights.times, heights.heights) if t < t1]
    assert len(before) > 5
    for t, y in before:
        assert abs(y - (h0 - 0.5 * g * t * t)) <= 1e-6 * h0, (t, y)
    assert integ.get_num_steps_taken() > 0 and integ.get_num_steps_attempted() >= integ.get_num_steps_taken()


# ------------------------------------------------------------------------------------------------ statistics, errors
def test_step_statistics():
    system, s = _hybrid_start()
    integ = ImplicitExtrapolationIntegrator(system, accuracy=1e-3)
    assert integ.method_has_error_control()
    assert (integ.get_method_min_order(), integ.get_method_max_order()) == (1, 2)
    integ.initialize(s)
    integ.set_return_every_internal_step(True)
    sizes = []
    while integ.get_time() < 0.1:
        t0 = integ.get_time()
        if integ.step_to(0.1) == S.TimeHasAdvanced or integ.get_time() == 0.1:
            sizes.append(integ.get_time() - t0)
            assert integ.get_previous_step_size_taken() == pytest.approx(sizes[-1], rel=1e-12)
    taken, attempted = integ.get_num_steps_taken(), integ.get_num_steps_attempted()
    assert taken == len(sizes) and integ.get_time() == 0.1
    assert attempted == taken + integ.get_num_error_test_failures() + integ.get_num_non_finite_failures()
    assert integ.get_actual_initial_step_size_taken() == pytest.approx(sizes[0], rel=1e-12)
    # every attempt: the start again and the midpoint to Acceleration, three qdots to Velocity
    assert integ.get_num_realizations() >= 5 * attempted
    assert integ.get_num_cg_iterations() >= 3 * attempted
    assert integ.get_predicted_next_step_size() > 0


def test_constraints_and_bad_settings_are_refused():
    system, matter, pend, body = _hybrid(k=150.0)
    Constraint.Ball(matter.ground, [2.5, -0.5, 0.0], pend, [0.0, 0.0, 0.0])
    s = system.realize_topology()
    system.realize_model(s)
    integ = ImplicitExtrapolationIntegrator(system)
    with pytest.raises(IntegratorError, match="ImplicitExtrapolationIntegrator.*'hybrid' has constraints"):
        integ.initialize(s)
    system2, s2 = _hybrid_start()
    with pytest.raises(ValueError, match="accuracy"):
        ImplicitExtrapolationIntegrator(system2, accuracy=2.0)
    with pytest.raises(ValueError, match="cg_tolerance"):
        ImplicitExtrapolationIntegrator(system2, cg_tolerance=0.0)
    integ = ImplicitExtrapolationIntegrator(system2, accuracy=1e-4)
    assert integ.get_cg_tolerance_in_use() == pytest.approx(1e-7)
    with pytest.raises(ValueError, match="rows must be 2 or 3"):
        ImplicitExtrapolationIntegrator(system2, rows=4)
    assert ImplicitExtrapolationIntegrator(system2, cg_tolerance=1e-9).get_cg_tolerance_in_use() == 1e-9


def test_a_pickled_integrator_goes_on_as_the_original():
    """Its substep buffers and saved start travel with it: the copy's run is the original's, bitwise."""
    system, s = _hybrid_start()
    a = ImplicitExtrapolationIntegrator(system, accuracy=1e-4)
    a.initialize(s)
    a.step_to(0.03)
    b = pickle.loads(pickle.dumps(a))
    a.step_to(0.06)
    b.step_to(0.06)
    assert a.get_num_steps_taken() == b.get_num_steps_taken() > 10
    assert np.array_equal(a.get_state().get_y(), b.get_state().get_y())
