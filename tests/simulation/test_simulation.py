"""The simulation driver: agent order, exact ticks, probes, controllers, step adjustment, waypoints, files, plots.

Laws: within each driver step input probes apply their value for tb, controllers see the State at
ta, the System advances, monitors and output probes see tb (ArtiSynth's order); driver times are
exact tick multiples however many steps; an input probe applies scipy's interpolant of its samples;
an output probe records exactly what its outputs give on the recorded States; a PD controller with
gravity compensation holds an arm at its target; a vetoed step is retried smaller with the reason
kept, and a veto below the minimum step is an error that says why; rerunning from a waypoint is
bitwise the first run; recordings survive CSV and npz round trips.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import interpolate

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    StepAdjustment,
    StepSizeTooSmallError,
    Subsystem,
    System,
    Transform,
)
from simtk.common.events import ReporterChangedStateError
from simtk.common.output import output
from simtk.simulation import (
    Controller,
    InputProbe,
    Monitor,
    OutputProbe,
    PDController,
    Simulation,
    StatesTrajectory,
)
from simtk.simulation._clock import Clock
from tolerances import EPS  # round-off margins below are counts of EPS


# ---------------------------------------------------------------------- models
def arm(n: int = 7, gravity: bool = True):
    """An n-link planar pin chain (links 0.5 m, 1 kg, mass center at mid-length)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    g = Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity") if gravity else None
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent = matter.ground
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
    return system, matter, g


class Gain(Subsystem):
    """A subsystem whose only content is a discrete variable ``level`` (a named input) and z' = level."""

    def __init__(self, system):
        super().__init__(system, name="plant")
        self.add_discrete_variable("level", Stage.Dynamics, 0.0)
        self.add_state_variable("x", 0.0)

    def realize_subsystem_acceleration_impl(self, state):
        self.set_state_variable_derivative(state, "x", self.get_discrete_variable_value(state, "level"))

    @output(Stage.Model)
    def x_out(self, state):
        return self.get_state_variable_value(state, "x")


# ---------------------------------------------------------------------- order and ticks
class Log:
    def __init__(self):
        self.calls = []


class LoggingInput(InputProbe):
    def __init__(self, log):
        super().__init__("/plant:level", [0.0, 1.0], [0.0, 1.0])
        self.log = log

    def apply(self, state, t):
        self.log.calls.append(("input", t, state.get_time()))
        super().apply(state, t)


class LoggingController(Controller):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def compute(self, state):
        self.log.calls.append(("controller", state.get_time()))


class LoggingMonitor(Monitor):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def monitor(self, state):
        self.log.calls.append(("monitor", state.get_time()))


class LoggingProbe(OutputProbe):
    def __init__(self, log):
        super().__init__(["/plant|x_out"])
        self.log = log

    def record(self, state):
        self.log.calls.append(("output", state.get_time()))


def test_agents_run_in_artisynth_order_each_step():
    system = System()
    Gain(system)
    log = Log()
    sim = Simulation(system, system.realize_topology(), step_size=0.1)
    sim.add_monitor(LoggingMonitor(log))
    sim.add_output_probe(LoggingProbe(log))
    sim.add_controller(LoggingController(log))
    sim.add_input_probe(LoggingInput(log))
    sim.run(0.3)
    expected = [("output", 0.0)]
    for k in range(3):
        ta, tb = float(Fraction(k, 10)), float(Fraction(k + 1, 10))  # exact tick times
        expected += [("input", tb, ta), ("controller", ta), ("monitor", tb), ("output", tb)]
    assert log.calls == expected


def test_ticks_are_exact_after_a_million_steps():
    clock = Clock([Fraction(1, 1000)], 0.0)
    k = np.arange(0, 1_000_001, 997)
    exact = [float(Fraction(int(i), 1000)) for i in k]
    assert [clock.time(int(i)) for i in k] == exact
    assert clock.time(1_000_000) == 1000.0
    t = 0.0
    for _ in range(1_000_000):  # what the clock avoids: accumulating 1e-3 drifts off the grid
        t += 1e-3
    assert t != 1000.0
    # and mixed intervals share one grid: 1/1000 and 1/300 tick at 1/3000
    mixed = Clock([Fraction(1, 1000), Fraction(1, 300)], 0.0)
    assert mixed.tick == Fraction(1, 3000) and mixed.ticks(Fraction(1, 300)) == 10


def test_driver_times_land_exactly_on_the_grid():
    system = System()
    Gain(system)
    sim = Simulation(system, system.realize_topology(), integrator=SemiExplicitEulerIntegrator(system, 1e-3),
                     step_size=1e-3)
    probe = sim.add_output_probe(StatesTrajectory(interval=0.25))
    sim.run(5.0)
    assert sim.get_time() == 5.0
    np.testing.assert_array_equal(probe.get_times(), [k / 4 for k in range(21)])


# ---------------------------------------------------------------------- input probes
@pytest.mark.parametrize("kind", ["zero_order_hold", "linear", "cubic"])
def test_input_probe_interpolates_as_scipy(kind):
    rng = np.random.default_rng(5)
    times = np.sort(rng.uniform(0, 1, 9))
    times[0] = 0.0
    values = rng.normal(size=9)
    system = System()
    plant = Gain(system)
    sim = Simulation(system, system.realize_topology(), step_size=0.01)
    sim.add_input_probe(InputProbe("/plant:level", times, values, interpolation=kind), name="drive")
    seen = sim.add_output_probe(StatesTrajectory(), name="states")
    sim.run(1.2)
    if kind == "cubic":
        ref = interpolate.CubicSpline(times, values)
    else:
        ref = interpolate.interp1d(times, values, kind="previous" if kind == "zero_order_hold" else "linear",
                                   fill_value=(values[0], values[-1]), bounds_error=False)
    for s in list(seen)[1:]:  # the value applied for each step's end time tb
        t = s.get_time()
        expected = values[-1] if t >= times[-1] else float(ref(t))
        assert plant.get_discrete_variable_value(s, "level") == pytest.approx(expected, abs=(512 * EPS))


def test_input_probe_from_csv(tmp_path):
    path = tmp_path / "drive.csv"
    path.write_text("time,level\n0,0\n1,2\n")
    probe = InputProbe.from_csv("/plant:level", path)
    assert probe.value_at(0.25) == 0.5
    with pytest.raises(ValueError, match="increasing"):
        InputProbe("/plant:level", [0, 0], [1, 2])
    with pytest.raises(ValueError, match="interpolation"):
        InputProbe("/plant:level", [0, 1], [1, 2], interpolation="quadratic")


# ---------------------------------------------------------------------- output probes
def test_output_probe_records_what_the_outputs_give_on_the_recorded_states(tmp_path):
    system, matter, _ = arm(3)
    state = system.realize_topology()
    for i in range(3):
        system.set_state_variable_value(state, f"/matter/link{i}/angle", 0.3 * (i + 1))
    sim = Simulation(system, state, step_size=0.01)
    outputs = ["/matter/link2|angle", "/matter/link2|rate", "/matter/link1|position", "/|kinetic_energy",
               "/forces/gravity|potential_energy", "/matter/link0|transform"]
    probe = sim.add_output_probe(OutputProbe(outputs, interval=0.05), name="rec")
    states = sim.add_output_probe(StatesTrajectory(interval=0.05), name="traj")
    sim.run(0.5)
    t, values = probe.to_numpy()
    assert len(t) == len(states) == 11 and values.shape == (11, 1 + 1 + 3 + 1 + 1 + 12)
    for row, s in zip(values, states):
        system.realize(s, Stage.Acceleration)
        direct = np.concatenate([np.ravel(system.get_component(o.split("|")[0]).get_output(o.split("|")[1])
                                          .get_value(s).matrix) if o.endswith("transform") else
                                 np.ravel(system.get_component(o.split("|")[0]).get_output(o.split("|")[1])
                                          .get_value(s)) for o in outputs[:-1]])
        X = matter.get_component("link0").get_body_transform(s)
        np.testing.assert_array_equal(row, np.concatenate([direct, X.R.matrix.ravel(), X.p]))
    # files round trip exactly
    probe.to_csv(tmp_path / "rec.csv")
    back = np.loadtxt(tmp_path / "rec.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(back[:, 0], t)
    np.testing.assert_array_equal(back[:, 1:], values)
    header = (tmp_path / "rec.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["time", "/matter/link2|angle", "/matter/link2|rate"]
    probe.to_npz(tmp_path / "rec.npz")
    t2, v2, cols = OutputProbe.read_npz(tmp_path / "rec.npz")
    np.testing.assert_array_equal(t2, t)
    np.testing.assert_array_equal(v2, values)
    assert cols == probe.columns
    df = pytest.importorskip("pandas") and probe.to_dataframe()
    assert list(df.columns) == probe.columns and df.index.name == "time"


def test_plot_is_written_headless(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    system, matter, _ = arm(2)
    state = system.realize_topology()
    system.set_state_variable_value(state, "/matter/link1/angle", 0.5)
    sim = Simulation(system, state, step_size=0.01)
    probe = sim.add_output_probe(OutputProbe(["/matter/link0|angle", "/matter/link0|rate"]))
    sim.run(0.3)
    probe.plot(path=tmp_path / "angles.png")
    from simtk.plot import phase_portrait

    phase_portrait(probe, "/matter/link0|angle", "/matter/link0|rate", path=tmp_path / "phase.png")
    for name in ("angles.png", "phase.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


# ---------------------------------------------------------------------- controllers
def test_pd_controller_with_gravity_compensation_holds_a_7_link_arm_at_its_target():
    system, matter, g = arm(7)
    state = system.realize_topology()
    targets = {f"/matter/link{i}/angle": 0.2 * (-1) ** i for i in range(7)}
    sim = Simulation(system, state, step_size=1e-3)
    # critically damped at 10 rad/s per coordinate (inertia-weighted gains, per unit acceleration)
    gains = {p: (100.0, 20.0) for p in targets}
    sim.add_controller(PDController(gains, targets, gravity=g, inertia_weighted=True), name="pd")
    sim.run(3.0)
    end = sim.get_state()
    err = max(abs(system.get_state_variable_value(end, p) - q) for p, q in targets.items())
    assert err < 1e-6


def test_a_controller_that_changes_the_state_in_a_monitor_is_refused():
    class Meddler(Monitor):
        def monitor(self, state):
            state.set_time(state.get_time())  # invalidates Time: a change

    system = System()
    Gain(system)
    sim = Simulation(system, system.realize_topology(), step_size=0.1)
    sim.add_monitor(Meddler())
    with pytest.raises(ReporterChangedStateError):
        sim.run(0.1)


# ---------------------------------------------------------------------- step adjustment
class Stop(Force.Custom.Implementation):
    """A stiff stop at x = 0 for a slider falling under gravity; vetoes trial steps that penetrate deeper
    than ``limit`` (a contact model that wants its impacts resolved)."""

    def __init__(self, slider, limit, always_after=math.inf):
        super().__init__()
        self.slider, self.limit, self.always_after = slider, limit, always_after

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        x = self.slider.get_length(state)
        if state.get_time() > self.always_after:
            raise StepAdjustment(0.5, "always")
        if x < -self.limit:
            raise StepAdjustment(0.3, f"penetration {-x:.3g} m deeper than {self.limit} m")
        if x < 0:
            mobility_forces[0] += -1e5 * x - 50.0 * self.slider.get_rate(state)


def faller(limit, always_after=math.inf):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))
    slider = MobilizedBody.Slider(matter.ground, Transform(), body, Transform(), name="block")
    Force.MobilityConstantForce(forces, slider, 0, -9.81)
    Force.Custom(forces, Stop(slider, limit, always_after), name="stop")
    state = system.realize_topology()
    slider.set_length(state, 0.2)
    return system, slider, state


class Depth(Monitor):
    def __init__(self, slider):
        super().__init__()
        self.slider, self.deepest = slider, 0.0

    def monitor(self, state):
        self.deepest = max(self.deepest, -self.slider.get_length(state))


def test_a_force_vetoes_steps_that_penetrate_too_deep():
    # the block reaches the stop at 2 m/s: sqrt(m / k) 2 m/s = 6.3 mm deep at most, in a 10 ms impact
    # that 20 ms steps jump across; the stop vetoes what goes deeper than 8 mm
    system, slider, state = faller(8e-3)
    integ = SemiExplicitEulerIntegrator(system, 2e-2)
    sim = Simulation(system, state, integrator=integ, step_size=0.02)
    depth = sim.add_monitor(Depth(slider), name="depth")
    summary = sim.run(1.0)
    assert integ.get_num_step_adjustments() > 0 and summary.rejected_steps == integ.get_num_step_adjustments()
    assert "deeper than 0.008 m" in integ.get_last_step_adjustment_reason()
    assert 0 < depth.deepest <= 8e-3
    assert "rejected" in str(summary)


def test_a_veto_below_the_minimum_step_is_an_error_that_gives_the_reason():
    system, slider, state = faller(1.0, always_after=0.1)
    sim = Simulation(system, state, integrator=SemiExplicitEulerIntegrator(system, 1e-2), step_size=0.01)
    with pytest.raises(StepSizeTooSmallError, match="reason: always"):
        sim.run(0.5)


class FilterController(Controller):
    """A first-order filter of the block's height, kept in a discrete variable (its memory is State),
    pushing the block toward 0.1 m."""

    def __init__(self, slider):
        super().__init__()
        self.slider = slider
        self.add_discrete_variable("filtered", Stage.Dynamics, 0.0)

    def compute(self, state):
        y = self.get_discrete_variable_value(state, "filtered")
        y += 0.2 * (self.slider.get_length(state) - y)
        self.set_discrete_variable_value(state, "filtered", y)
        self.set_input(state, "/matter/block/rate", 9.81 + 30.0 * (0.1 - y) - 5.0 * self.slider.get_rate(state))


def test_rerunning_from_a_waypoint_is_bitwise_the_first_run():
    system, slider, state = faller(1.0)
    sim = Simulation(system, state, step_size=0.01)
    ctrl = sim.add_controller(FilterController(slider), name="filter")
    rec = sim.add_output_probe(OutputProbe(["/matter/block|length", "/matter/block|rate"], interval=0.05))
    sim.add_waypoint(0.5)
    sim.run(1.0)
    first_y = np.array(sim.get_state().get_y())
    first_memory = ctrl.get_discrete_variable_value(sim.get_state(), "filtered")
    first_t, first_v = rec.to_numpy()
    sim.rewind(0.5)
    assert sim.get_time() == 0.5 and len(rec) == 11
    sim.run(1.0)
    np.testing.assert_array_equal(sim.get_state().get_y(), first_y)
    assert ctrl.get_discrete_variable_value(sim.get_state(), "filtered") == first_memory
    t, v = rec.to_numpy()
    np.testing.assert_array_equal(t, first_t)
    np.testing.assert_array_equal(v, first_v)
    with pytest.raises(KeyError, match="no waypoint"):
        sim.rewind(0.3)


# ---------------------------------------------------------------------- progress and summary
def test_progress_bar_is_off_when_not_a_terminal_and_summary_is_complete():
    system, slider, state = faller(1.0)
    sim = Simulation(system, state, step_size=0.01, progress_after=0.0)
    summary = sim.run(0.2)  # pytest captures standard error: not a terminal
    assert not sim.progress_shown
    assert summary.t_end == 0.2 and summary.driver_steps == 20 and summary.integrator_steps > 0
    assert summary.realizations > 0 and summary.wall_seconds > 0
    text = str(summary)
    assert "0.2" in text and "steps" in text and "real time" in text and "realizations" in text
    forced = Simulation(system, state, step_size=0.01, progress=True, progress_after=0.0)
    forced.run(0.05)
    assert forced.progress_shown
    off = Simulation(system, state, step_size=0.01, progress=False, progress_after=0.0)
    off.run(0.05)
    assert not off.progress_shown


def block_system():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(2.0, [0, 0, 0], Inertia(1.0)))
    free = MobilizedBody.Free(matter.ground, Transform(), body, Transform(), name="block")
    return system, free


def test_input_probe_drives_a_body_force_and_a_prescribed_motion():
    # a constant spatial force (2, 3) on a 2 kg free block: a = F / m exactly, in every direction
    system, block = block_system()
    F = np.array([[0.0, 0.0, 0.0], [2.0, -4.0, 6.0]])
    sim = Simulation(system, system.realize_topology(), step_size=0.1)
    sim.add_input_probe(InputProbe("/matter/block", [0.0, 1.0], np.array([F, F])), name="push")
    sim.run(0.5)
    end = sim.get_state()
    system.realize(end, Stage.Acceleration)
    np.testing.assert_allclose(block.get_body_origin_location(end), 0.5 * F[1] / 2.0 * 0.5 ** 2, rtol=1e-9)
    # a prescribed speed whose value an input probe sets (a property of the Motion, by path)
    from simtk import Motion

    system, block = block_system()
    Motion.Steady(block, [0, 0, 0, 0, 0, 0])
    sim = Simulation(system, system.realize_topology(), step_size=0.1)
    sim.add_input_probe(InputProbe("/matter/block/steady.u", [0.0, 10.0], [[0, 0, 0, 1.0, 0, 0]] * 2),
                        name="speed")
    sim.run(1.0)
    end = sim.get_state()
    np.testing.assert_array_equal(block.get_u(end), [0, 0, 0, 1.0, 0, 0])
    # the value for tb is applied before each step (ArtiSynth's order), so the block moved 1 m/s for 1 s
    assert abs(block.get_body_origin_location(end)[0] - 1.0) < 1e-9


class Cautious(Controller):
    """Rejects any step over which the block moved more than 5 cm (a controller's step adjustment)."""

    def __init__(self, slider):
        super().__init__()
        self.slider, self.vetoes, self.accepted = slider, 0, []

    def compute(self, state):
        pass

    def check_step(self, before, after):
        move = abs(self.slider.get_length(after) - self.slider.get_length(before))
        if move > 0.05:
            self.vetoes += 1
            return StepAdjustment(0.5, "moved more than 5 cm in one step")
        self.accepted.append((before.get_time(), after.get_time(), move))
        return None


def test_a_controller_vetoes_a_step_and_it_is_redone_in_shorter_substeps():
    system, slider, state = faller(1.0)
    slider.set_length(state, 10.0)  # free fall: the stop at x = 0 is never reached before t = 0.4
    integ = SemiExplicitEulerIntegrator(system, 0.05)
    sim = Simulation(system, state, integrator=integ, step_size=0.1)
    cautious = sim.add_controller(Cautious(slider), name="cautious")
    summary = sim.run(0.4)
    assert sim.get_time() == 0.4
    # free fall moves 0.049 m in [0, 0.1] and more after it: the later driver steps had to be split
    assert cautious.vetoes > 0 and summary.rejected_steps == cautious.vetoes
    starts, ends, moves = map(np.array, zip(*cautious.accepted))
    assert max(moves) <= 0.05 and (ends - starts).min() < 0.1
    # the accepted sub-steps tile [0, 0.4] with no gap or overlap and end on every driver tick
    assert starts[0] == 0.0 and ends[-1] == 0.4 and np.array_equal(starts[1:], ends[:-1])
    assert {0.1, 0.2, 0.3, 0.4} <= set(ends.tolist())
    # and the motion is free fall to the semi-explicit Euler error, g t h / 2 with h <= 0.05
    assert abs(slider.get_length(sim.get_state()) - (10.0 - 9.81 * 0.4 ** 2 / 2)) <= 9.81 * 0.4 * 0.05 / 2


def test_a_controller_that_always_rejects_ends_in_a_clear_error():
    class Never(Controller):
        def compute(self, state):
            pass

        def check_step(self, before, after):
            return StepAdjustment(0.5, "never satisfied")

    system, slider, state = faller(1.0)
    sim = Simulation(system, state, integrator=SemiExplicitEulerIntegrator(system, 0.05), step_size=0.1)
    sim.add_controller(Never(), name="never")
    with pytest.raises(StepSizeTooSmallError, match="never satisfied"):
        sim.run(0.1)
    assert sim.get_state().get_time() == 0.0  # left where the rejected step began
