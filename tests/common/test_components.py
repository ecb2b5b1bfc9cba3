"""Named components on the staged framework (OpenSim's Component, ArtiSynth's path rules).

Laws: names follow ArtiSynth's rule and are unique among siblings; every component is found again
from its path; by-name access to state, discrete and cache variables and modeling options reads and
writes exactly what the index-based API does, with the same invalidation; a property change is
validated (a refusal changes nothing) and stales existing States from its stage on; outputs refuse a
State realized below their stage.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simtk import (
    CacheEntryOutOfDateError,
    PeriodicEventReporter,
    RungeKuttaMersonIntegrator,
    ScheduledEventHandler,
    Stage,
    StageTooLowError,
    Subsystem,
    System,
    TimeStepper,
)
from simtk.common.component import ComponentNotFoundError
from simtk.common.output import output
from simtk.common.property import Property, nonnegative


class Oscillator(Subsystem):
    """z'' = -k z as two declared state variables (position, velocity), a discrete gain, a lazy
    energy cache variable, a modeling option that switches damping on, and a property k."""

    stiffness = Property(4.0, stage=Stage.Instance, check=nonnegative, doc="k")

    def __init__(self, system, name=""):
        super().__init__(system, name=name)
        self.add_state_variable("position", 1.0)
        self.add_state_variable("velocity", 0.0)
        self.add_discrete_variable("gain", Stage.Dynamics, 1.0)
        self.add_cache_variable("energy", np.nan, Stage.Velocity)
        self.add_modeling_option("damped", 2)
        self.instance_k = None

    def realize_subsystem_instance_impl(self, state):
        self.instance_k = self.stiffness  # what this realization saw

    def realize_subsystem_acceleration_impl(self, state):
        z = self.get_state_variable_values(state)
        k, g = self.stiffness, self.get_discrete_variable_value(state, "gain")
        damping = 0.5 if self.get_modeling_option(state, "damped") else 0.0
        self.set_state_variable_derivative(state, "position", z[1])
        self.set_state_variable_derivative(state, "velocity", -g * k * z[0] - damping * z[1])

    @output(Stage.Velocity)
    def kinetic_energy(self, state):
        return 0.5 * self.get_state_variable_value(state, "velocity") ** 2


def make():
    system = System("world")
    osc = Oscillator(system, name="osc")
    return system, osc, system.realize_topology()


# ---------------------------------------------------------------------- names and paths
@pytest.mark.parametrize("bad, why", [(" pad", "white space"), ("2nd", "digit"), ("a.b", "'.'"), ("a/b", "'/'"),
                                      ("a:b", "':'"), ("a*", "'*'"), ("a?", "'?'"), ("null", "reserved")])
def test_artisynth_name_rule(bad, why):
    system = System()
    with pytest.raises(ValueError, match=why):
        Oscillator(system, name=bad)
    assert system.get_num_subsystems() == 0


def test_duplicate_sibling_is_refused_at_once_and_defaults_are_unique():
    system = System()
    Oscillator(system, name="osc")
    with pytest.raises(ValueError, match="'osc' exists already"):
        Oscillator(system, name="osc")
    assert system.get_num_subsystems() == 1
    a, b = Oscillator(system), Oscillator(system)
    assert (a.get_name(), b.get_name()) == ("Oscillator", "Oscillator_1")
    with pytest.raises(ValueError, match="exists already"):
        b.set_name("osc")
    assert b.get_absolute_path() == "/Oscillator_1"


def test_paths_round_trip_and_relative_lookup():
    system, osc, _ = make()
    reporter = PeriodicEventReporter(0.5, name="printer")
    system.add_event_reporter(reporter)
    assert system.get_absolute_path() == "/" and osc.get_absolute_path() == "/osc"
    assert reporter.get_absolute_path() == "/printer"
    for c in system.get_subcomponents():
        assert system.get_component(c.get_absolute_path()) is c
        assert osc.get_component(osc.get_relative_path_name(c)) is c
    assert osc.get_component("../printer") is reporter and osc.get_component(".") is osc
    with pytest.raises(ComponentNotFoundError, match="no component named 'nope'.*children: 'osc', 'printer'"):
        system.get_component("/nope")
    with pytest.raises(ComponentNotFoundError, match="above the root"):
        system.get_component("..")


def test_find_component_names_candidates():
    system = System()
    Oscillator(system, name="left")
    Oscillator(system, name="right")
    assert system.find_component("left").get_name() == "left"
    with pytest.raises(ComponentNotFoundError, match="no component named 'middle'"):
        system.find_component("middle")
    reporter = PeriodicEventReporter(1.0, name="left_report")
    system.add_event_reporter(reporter)
    assert system.find_component("left_report") is reporter


# ---------------------------------------------------------------------- variables by name
def test_state_variables_by_name_match_index_access():
    system, osc, state = make()
    assert system.get_state_variable_names() == ["/osc/position", "/osc/velocity"]
    assert osc.get_state_variable_names(state) == ["position", "velocity"]
    assert osc.get_state_variable_value(state, "position") == osc.get_z(state)[0] == 1.0
    system.realize(state, Stage.Acceleration)
    twin = state.copy()
    system.realize(twin, Stage.Acceleration)
    osc.set_state_variable_value(state, "velocity", 2.5)
    twin.set_z([1.0, 2.5])
    assert state.get_system_stage() == twin.get_system_stage() < Stage.Dynamics  # invalidated as set_z does
    assert osc.get_z(state)[1] == 2.5
    assert system.get_state_variable_value(state, "/osc/velocity") == 2.5
    np.testing.assert_array_equal(system.get_state_variable_values(state), state.get_y())
    system.set_state_variable_values(state, [3.0, 4.0])
    np.testing.assert_array_equal(osc.get_z(state), [3.0, 4.0])
    with pytest.raises(ComponentNotFoundError, match="no state variable 'speed'"):
        osc.get_state_variable_value(state, "speed")
    with pytest.raises(ValueError, match="'velocity'.*finite"):
        osc.set_state_variable_value(state, "velocity", np.nan)
    assert osc.get_z(state)[1] == 4.0


def test_discrete_cache_and_options_by_name():
    system, osc, state = make()
    system.realize(state, Stage.Acceleration)
    assert osc.get_discrete_variable_names() == ["gain"]
    osc.set_discrete_variable_value(state, "gain", 2.0)
    assert state.get_system_stage() == Stage.Velocity  # gain invalidates Dynamics
    system.realize(state, Stage.Acceleration)
    assert osc.get_state_variable_derivative(state, "velocity") == -2.0 * 4.0 * 1.0
    # cache variable: lazy, valid only once marked, stale when its inputs change
    assert not osc.is_cache_variable_valid(state, "energy")
    with pytest.raises(CacheEntryOutOfDateError):
        osc.get_cache_variable_value(state, "energy")
    osc.set_cache_variable_value(state, "energy", 7.0)
    assert osc.is_cache_variable_valid(state, "energy") and osc.get_cache_variable_value(state, "energy") == 7.0
    osc.set_discrete_variable_value(state, "gain", 5.0)  # a Dynamics-stage change: above Velocity
    assert osc.is_cache_variable_valid(state, "energy")
    state.set_time(1.0)  # Time is below Velocity: stale
    assert not osc.is_cache_variable_valid(state, "energy")
    # modeling option: Model-stage change, range-checked
    system.realize(state, Stage.Acceleration)
    osc.set_modeling_option(state, "damped", 1)
    assert state.get_system_stage() == Stage.Topology and osc.get_modeling_option(state, "damped") == 1
    for bad in (2, -1, 0.5, "on"):
        with pytest.raises((ValueError, TypeError), match="'damped'"):
            osc.set_modeling_option(state, "damped", bad)
    assert osc.get_modeling_option(state, "damped") == 1
    with pytest.raises(ComponentNotFoundError, match="it has: gain"):
        osc.get_discrete_variable_value(state, "gian")


@given(st.lists(st.tuples(st.sampled_from(["name", "index"]), st.sampled_from(["position", "velocity", "gain"]),
                          st.floats(-10, 10)), max_size=12))
def test_by_name_and_by_index_writes_keep_both_views_equal(ops):
    """Law: any sequence of by-name and by-index writes leaves both views reading the same values,
    and each write invalidates the same stage either way."""
    system, osc, state = make()
    index = {"position": 0, "velocity": 1}
    for how, what, value in ops:
        system.realize(state, Stage.Acceleration)
        twin = state.copy()
        system.realize(twin, Stage.Acceleration)
        if what == "gain":
            i = osc._slot("gain", "discrete_variable")[1]
            if how == "name":
                osc.set_discrete_variable_value(state, what, value)
                osc.set_discrete_variable(twin, i, value)
            else:
                osc.set_discrete_variable(state, i, value)
                osc.set_discrete_variable_value(twin, what, value)
            assert osc.get_discrete_variable(state, i) == osc.get_discrete_variable_value(state, what) == value
        else:
            if how == "name":
                osc.set_state_variable_value(state, what, value)
                osc.upd_z(twin)[index[what]] = value
            else:
                osc.upd_z(state)[index[what]] = value
                osc.set_state_variable_value(twin, what, value)
            assert osc.get_z(state)[index[what]] == osc.get_state_variable_value(state, what) == value
        assert state.get_system_stage() == twin.get_system_stage()
        np.testing.assert_array_equal(state.get_y(), twin.get_y())


# ---------------------------------------------------------------------- properties and outputs
def test_property_change_is_validated_and_stales_existing_states():
    system, osc, state = make()
    system.realize(state, Stage.Acceleration)
    assert osc.get_property_names() == ["stiffness"] and osc.get_property("stiffness") == 4.0
    with pytest.raises(ValueError, match=r"'/osc'.*property 'stiffness'.*>= 0"):
        osc.set_property("stiffness", -1.0)
    with pytest.raises(TypeError, match="property 'stiffness'.*real number"):
        osc.set_property("stiffness", "stiff")
    assert osc.get_property("stiffness") == 4.0 and state.get_system_stage() == Stage.Acceleration
    osc.set_property("stiffness", 9.0)
    system.realize(state, Stage.Acceleration)  # the existing State redoes Instance and above
    assert osc.instance_k == 9.0
    assert osc.get_state_variable_derivative(state, "velocity") == -9.0
    osc.stiffness = 1.0  # assignment goes through set_property
    fresh = system.realize_topology()
    system.realize(fresh, Stage.Acceleration)
    assert osc.get_state_variable_derivative(fresh, "velocity") == -1.0
    with pytest.raises(ComponentNotFoundError, match="its properties: stiffness"):
        osc.get_property("stifness")


def test_outputs_need_their_stage():
    system, osc, state = make()
    out = osc.get_output("kinetic_energy")
    assert osc.get_output_names() == ["kinetic_energy"] and out.get_path_name() == "/osc|kinetic_energy"
    with pytest.raises(StageTooLowError, match="'/osc|kinetic_energy'.*Velocity"):
        out.get_value(state)
    osc.set_state_variable_value(state, "velocity", 3.0)
    system.realize(state, Stage.Velocity)
    assert out.get_value(state) == 4.5


# ---------------------------------------------------------------------- structural change and migration
def test_migrate_state_carries_every_variable_whose_path_still_exists():
    system, osc, state = make()
    osc.set_state_variable_value(state, "velocity", 0.25)
    osc.set_discrete_variable_value(state, "gain", 3.0)
    osc.set_modeling_option(state, "damped", 1)
    state.set_time(2.0)
    extra = Oscillator(system, name="extra")  # a topology change: old States are refused now
    with pytest.raises(Exception, match="topology"):
        system.realize(state, Stage.Model)
    new = system.migrate_state(state)
    assert new.get_time() == 2.0
    assert osc.get_state_variable_value(new, "velocity") == 0.25
    assert osc.get_discrete_variable_value(new, "gain") == 3.0 and osc.get_modeling_option(new, "damped") == 1
    assert extra.get_state_variable_value(new, "position") == 1.0  # a new path keeps its default
    system.realize(new, Stage.Acceleration)


def test_request_change_applies_queued_edits_and_migrates():
    system, osc, state = make()
    osc.set_state_variable_value(state, "position", -0.5)
    added = []
    system.request_change(lambda s: added.append(Oscillator(s, name="added")))
    assert system.has_pending_changes() and not added
    new = system.apply_pending_changes(state)
    assert not system.has_pending_changes() and added[0].get_absolute_path() == "/added"
    assert osc.get_state_variable_value(new, "position") == -0.5
    assert system.get_state_variable_names(new) == ["/osc/position", "/osc/velocity", "/added/position",
                                                    "/added/velocity"]
    with pytest.raises(TypeError, match="callable"):
        system.request_change(42)


class AddAtTime(ScheduledEventHandler):
    """At ``t_add``, requests that a second oscillator be added (a structural change mid-run)."""

    def __init__(self, t_add):
        self.t_add, self.added = t_add, []

    def get_next_event_time(self, state, include_current_time):
        t = state.get_time()
        return self.t_add if (t < self.t_add or (include_current_time and t == self.t_add)) else np.inf

    def handle_event(self, state, accuracy):
        self.get_root().request_change(lambda s: self.added.append(Oscillator(s, name="added")))
        return False


def test_change_requested_by_an_event_is_applied_between_steps_with_the_state_migrated():
    """z'' = -4 z from z = 1 is cos(2t); the oscillator added at t = 1 starts from its default z = 1,
    so it follows cos(2 (t - 1)); the first one goes on undisturbed by the change."""
    system, osc, _ = make()
    handler = AddAtTime(1.0)
    system.add_event_handler(handler)
    state = system.realize_topology()
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-9)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    ts.step_to(0.5)
    assert not handler.added
    ts.step_to(2.0)
    added = handler.added[0]
    end = ts.get_state()
    assert end.get_time() == 2.0 and added.get_absolute_path() == "/added"
    # accuracy 1e-9 per unit time over 2 s of a unit-amplitude oscillation, with a 100x margin
    assert abs(osc.get_state_variable_value(end, "position") - np.cos(4.0)) < 2e-7
    assert abs(added.get_state_variable_value(end, "position") - np.cos(2.0)) < 2e-7
