"""A property change invalidates every live State at the property's stage, one stage at a time.

For each stage a property can be declared at, a State is realized *exactly* to that stage (the
boundary case: a State realized higher loses the stage anyway through any lower invalidation),
the property is changed, and the test checks that the State dropped below the stage and that
realizing it again computes the result from the new value. A Topology property makes existing
States stale instead: they are refused, and a new ``realize_topology()`` lays out the new structure.
"""
import numpy as np
import pytest

from simtk import Stage, Subsystem, System, TopologyVersionError
from simtk.common.property import Property, integer, real

#: the stages after Model whose results a Tunable computes from a property of that stage
RUNTIME = [Stage.Instance, Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics, Stage.Acceleration,
           Stage.Report]


def _name(stage: Stage) -> str:
    return f"p_{stage.name.lower()}"


class Tunable(Subsystem):
    """One property per stage; the realization of each stage copies its property into a cache entry
    of that stage, so a stale entry shows the old value. The Topology property is the number of z;
    the Model property is the initial value of the q laid out at Model."""

    n_z = Property(1, stage=Stage.Topology, check=integer, doc="number of z")
    start = Property(0.5, stage=Stage.Model, check=real, doc="initial q")
    p_instance = Property(1.0, stage=Stage.Instance, check=real)
    p_time = Property(1.0, stage=Stage.Time, check=real)
    p_position = Property(1.0, stage=Stage.Position, check=real)
    p_velocity = Property(1.0, stage=Stage.Velocity, check=real)
    p_dynamics = Property(1.0, stage=Stage.Dynamics, check=real)
    p_acceleration = Property(1.0, stage=Stage.Acceleration, check=real)
    p_report = Property(1.0, stage=Stage.Report, check=real)

    def realize_subsystem_topology_impl(self, state):
        self.allocate_z(state, np.zeros(self.n_z))
        self.entry = {g: self.allocate_cache_entry(state, g, g, None) for g in [Stage.Model, *RUNTIME]}

    def realize_subsystem_model_impl(self, state):
        self.allocate_q(state, [self.start])
        self.set_cache_entry(state, self.entry[Stage.Model], 10.0 * self.start)

    def _copy(self, state, g):
        self.set_cache_entry(state, self.entry[g], getattr(self, _name(g)))

    def realize_subsystem_instance_impl(self, state):
        self._copy(state, Stage.Instance)

    def realize_subsystem_time_impl(self, state):
        self._copy(state, Stage.Time)

    def realize_subsystem_position_impl(self, state):
        self._copy(state, Stage.Position)

    def realize_subsystem_velocity_impl(self, state):
        self._copy(state, Stage.Velocity)
        self.upd_qdot(state)[:] = 0.0

    def realize_subsystem_dynamics_impl(self, state):
        self._copy(state, Stage.Dynamics)

    def realize_subsystem_acceleration_impl(self, state):
        self._copy(state, Stage.Acceleration)
        self.upd_zdot(state)[:] = 0.0

    def realize_subsystem_report_impl(self, state):
        self._copy(state, Stage.Report)


def _tunable():
    system = System("tunable")
    return system, Tunable(system, name="tunable")


@pytest.mark.parametrize("above", [False, True], ids=["realized exactly to it", "realized to Report"])
@pytest.mark.parametrize("stage", RUNTIME, ids=lambda g: g.name)
def test_a_property_change_drops_a_state_below_the_propertys_stage(stage, above):
    """Kills the mutation that invalidates only States realized *above* the property's stage
    (``state._stage > stage`` in ``System._parameter_changed``): the State realized exactly to it kept
    the old value's results."""
    system, sub = _tunable()
    state = system.realize_topology()
    system.realize(state, Stage.Report if above else stage)
    assert sub.get_cache_entry(state, sub.entry[stage]) == 1.0
    mark = state.get_invalidation_mark()
    sub.set_property(_name(stage), 7.0)
    assert state.get_system_stage() == Stage(stage - 1)
    assert state.get_lowest_stage_invalidated_since(mark) == stage
    system.realize(state, stage)
    assert sub.get_cache_entry(state, sub.entry[stage]) == 7.0


def test_a_property_change_leaves_a_state_below_its_stage_alone():
    """The other half: a State not yet realized to the property's stage has nothing to lose."""
    system, sub = _tunable()
    state = system.realize_topology()
    system.realize(state, Stage.Position)
    mark = state.get_invalidation_mark()
    sub.set_property("p_velocity", 3.0)
    assert state.get_system_stage() == Stage.Position
    assert state.get_lowest_stage_invalidated_since(mark) == Stage.Infinity
    system.realize(state, Stage.Velocity)
    assert sub.get_cache_entry(state, sub.entry[Stage.Velocity]) == 3.0


@pytest.mark.parametrize("above", [False, True], ids=["realized exactly to Model", "realized to Report"])
def test_a_model_property_change_lays_out_the_state_again(above):
    system, sub = _tunable()
    state = system.realize_topology()
    system.realize(state, Stage.Report if above else Stage.Model)
    np.testing.assert_array_equal(state.get_q(), [0.5])
    sub.set_property("start", 2.0)
    assert state.get_system_stage() == Stage.Topology
    system.realize(state, Stage.Model)
    np.testing.assert_array_equal(state.get_q(), [2.0])
    assert sub.get_cache_entry(state, sub.entry[Stage.Model]) == 20.0


@pytest.mark.parametrize("realized", [Stage.Topology, Stage.Report], ids=lambda g: g.name)
def test_a_topology_property_change_makes_existing_states_stale(realized):
    system, sub = _tunable()
    state = system.realize_topology()
    system.realize(state, realized)
    assert state.get_nz() == 1
    sub.set_property("n_z", 3)
    with pytest.raises(TopologyVersionError):
        system.realize(state, Stage.Model)
    fresh = system.realize_topology()
    system.realize(fresh, Stage.Report)
    assert fresh.get_nz() == 3
