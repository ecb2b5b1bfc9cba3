"""Property tests of the invalidation laws, as a hypothesis state machine.

The machine drives a System of two probing subsystems (and one without hooks) through random sequences
of variable changes, upd_* calls, realizations, lazy reads, copies and invalidate_all, and keeps its own
model: the variables, the stage it expects (a plain int updated by the rules of docs/api_contract.md), which marked
cache entries it expects current, and how many times it expects each hook to have run. After every step
it checks, against that model and never against the framework's own bookkeeping:

* the stage of the State and of every subsystem equals the model's;
* every cache entry the framework reports current is exactly the model's expectation, and its value equals
  a fresh computation from the model's variables (so does the derivative cache and the error slots);
* hook call counts grow only when the model says a stage was actually realized (realizing twice computes
  nothing twice); the lazy entry is computed once per change of its inputs;
* a copy holds the same variables, is realized at most to Instance, and is independent of the original.
"""
import os

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from simtk import Stage, StageError, StageTooLowError, Subsystem, System
from tolerances import EPS  # round-off margins below are counts of EPS

TIME, POSITION, VELOCITY, DYNAMICS, ACCEL, REPORT = (int(Stage.Time), int(Stage.Position), int(Stage.Velocity),
                                                     int(Stage.Dynamics), int(Stage.Acceleration),
                                                     int(Stage.Report))
MODEL, INSTANCE, INFINITY = int(Stage.Model), int(Stage.Instance), int(Stage.Infinity)

# the discrete variables of a Probe, by the stage they invalidate
SCALAR_VARS = (Stage.Instance, Stage.Position, Stage.Dynamics, Stage.Report)
VEC_VAR = Stage.Velocity  # an array, changed in place through upd_discrete_variable

# cache entries of a Probe: name -> (earliest, latest, marked when computed)
ENTRIES = {
    "c_time": (TIME, TIME, False),
    "c_pos": (POSITION, DYNAMICS, True),
    "c_vel": (VELOCITY, VELOCITY, False),
    "c_dyn": (DYNAMICS, DYNAMICS, False),
    "c_acc": (DYNAMICS, ACCEL, False),
    "c_rep": (REPORT, REPORT, False),
    "holder": (INSTANCE, INSTANCE, False),
    "inst": (POSITION, POSITION, False),  # allocated anew at every Instance realization
    "lazy": (POSITION, INFINITY, True),
}


class Probe(Subsystem):
    """Allocates q, u, z, discrete variables of several stages and one cache entry of each kind; each hook
    counts its calls and writes a closed form of the variables it may depend on."""

    def __init__(self, system, q0, u0, z0, name):
        self.q0, self.u0, self.z0 = (np.asarray(v, float) for v in (q0, u0, z0))
        self.calls = [0] * 11
        self.lazy_computations = 0
        super().__init__(system, name=name)

    def d(self, state, g):
        return self.get_discrete_variable(state, self.dv[g])

    def realize_subsystem_topology_impl(self, state):
        self.calls[1] += 1
        self.allocate_q(state, self.q0)
        self.allocate_u(state, self.u0)
        self.allocate_z(state, self.z0)
        self.dv = {g: self.allocate_discrete_variable(state, g, 1.0) for g in SCALAR_VARS}
        self.dv[VEC_VAR] = self.allocate_discrete_variable(state, VEC_VAR, np.array([1.0, 2.0]))
        self.ce = {}
        for name, (e, lt, _) in ENTRIES.items():
            if name != "inst":
                self.ce[name] = self.allocate_cache_entry(state, e, lt, None)

    def realize_subsystem_model_impl(self, state):
        self.calls[2] += 1

    def realize_subsystem_instance_impl(self, state):
        self.calls[3] += 1
        self.allocate_q_err(state, 1)
        inst = self.allocate_cache_entry(state, Stage.Position, Stage.Position, None)
        # Instance-stage indices live in the State (seed §2.4), in an entry allocated at Topology
        self.set_cache_entry(state, self.ce["holder"], (inst, 2.0 * self.d(state, Stage.Instance)))

    def inst_index(self, state):
        return self.get_cache_entry(state, self.ce["holder"])[0]

    def realize_subsystem_time_impl(self, state):
        self.calls[4] += 1
        self.set_cache_entry(state, self.ce["c_time"], state.get_time() * self.d(state, Stage.Instance) + 1.0)

    def realize_subsystem_position_impl(self, state):
        self.calls[5] += 1
        q = self.get_q(state)
        self.set_cache_entry(state, self.ce["c_pos"], q.sum() * self.d(state, Stage.Position) + state.get_time())
        self.mark_cache_value_realized(state, self.ce["c_pos"])
        self.set_cache_entry(state, self.inst_index(state), q.sum() ** 2 + self.d(state, Stage.Instance))
        self.upd_q_err(state)[0] = q.sum() - 1.0

    def realize_subsystem_velocity_impl(self, state):
        self.calls[6] += 1
        q, u = self.get_q(state), self.get_u(state)
        self.upd_qdot(state)[:] = [u[i % len(u)] * (i + 1) for i in range(len(q))]
        self.set_cache_entry(state, self.ce["c_vel"], u.sum() + q.sum() + self.d(state, VEC_VAR).sum())

    def realize_subsystem_dynamics_impl(self, state):
        self.calls[7] += 1
        self.set_cache_entry(state, self.ce["c_dyn"],
                             self.d(state, Stage.Dynamics) * self.get_z(state).sum() + self.get_u(state).sum())

    def realize_subsystem_acceleration_impl(self, state):
        self.calls[8] += 1
        u = self.get_u(state)
        self.upd_udot(state)[:] = -self.d(state, Stage.Dynamics) * u
        self.upd_zdot(state)[:] = (u ** 2).sum()
        self.set_cache_entry(state, self.ce["c_acc"], self.get_cache_entry(state, self.ce["c_dyn"]) + 1.0)

    def realize_subsystem_report_impl(self, state):
        self.calls[9] += 1
        self.set_cache_entry(state, self.ce["c_rep"], self.d(state, Stage.Report) + self.get_q(state).sum())

    def get_energy(self, state):
        """The seed's lazy pattern (§2.5.3): compute only when not current."""
        i = self.ce["lazy"]
        if not self.is_cache_value_realized(state, i):
            q = self.get_q(state)
            self.set_cache_entry(state, i, 0.5 * self.d(state, Stage.Position) * (q ** 2).sum() + state.get_time())
            self.mark_cache_value_realized(state, i)
            self.lazy_computations += 1
        return self.get_cache_entry(state, i)


class Hookless(Subsystem):
    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [0.0])


SPECS = [([0.5, -0.5], [1.0], [0.25]), ([2.0], [0.1, 0.2], [])]
NQ, NU, NZ = 4, 3, 1
values = st.floats(-5.0, 5.0, allow_nan=False)
positive = st.floats(0.1, 5.0, allow_nan=False)


class Model:
    """The test's own account of one State: variables, expected stage, marked entries."""

    def __init__(self):
        self.t = 0.0
        self.q = np.concatenate([s[0] for s in SPECS] + [[0.0]])
        self.u = np.concatenate([s[1] for s in SPECS])
        self.z = np.concatenate([s[2] for s in SPECS])
        self.d = [{int(g): 1.0 for g in SCALAR_VARS} | {int(VEC_VAR): np.array([1.0, 2.0])} for _ in SPECS]
        self.stage = MODEL
        self.marked = [{"c_pos": False, "lazy": False} for _ in SPECS]

    def copy(self):
        m = Model()
        m.t, m.q, m.u, m.z = self.t, self.q.copy(), self.u.copy(), self.z.copy()
        m.d = [{g: (v.copy() if isinstance(v, np.ndarray) else v) for g, v in d.items()} for d in self.d]
        m.stage = self.stage
        m.marked = [dict(mk) for mk in self.marked]
        return m

    def invalidate(self, s):
        self.stage = min(self.stage, s - 1)
        for mk in self.marked:
            for name in mk:
                if s <= ENTRIES[name][0]:
                    mk[name] = False
        if s <= MODEL:  # realizing Model again lays y out from the initial values (Simbody)
            self.q, self.u, self.z = Model().q, Model().u, Model().z

    def slices(self, k):
        qs = [0, 2, 3][k], [2, 3][k]
        us = [0, 1][k], [1, 3][k]
        zs = [0, 1][k], [1, 1][k]
        return self.q[slice(*qs)], self.u[slice(*us)], self.z[slice(*zs)]

    def fresh(self, k, name):
        """Entry ``name`` of probe ``k`` computed from the model's variables."""
        q, u, z = self.slices(k)
        d = self.d[k]
        di, dp, dd, dr = d[INSTANCE], d[POSITION], d[DYNAMICS], d[REPORT]
        return {
            "c_time": self.t * di + 1.0,
            "c_pos": q.sum() * dp + self.t,
            "c_vel": u.sum() + q.sum() + d[VELOCITY].sum(),
            "c_dyn": dd * z.sum() + u.sum(),
            "c_acc": dd * z.sum() + u.sum() + 1.0,
            "c_rep": dr + q.sum(),
            "holder": 2.0 * di,
            "inst": q.sum() ** 2 + di,
            "lazy": 0.5 * dp * (q ** 2).sum() + self.t,
        }[name]

    def expect_current(self, k, name):
        e, lt, marked = ENTRIES[name]
        if self.stage >= lt:
            return True
        return marked and self.stage >= e - 1 and self.marked[k][name]


class StagedStateMachine(RuleBasedStateMachine):
    @initialize()
    def build(self):
        self.system = System("probes")
        self.probes = [Probe(self.system, *spec, name=f"p{k}") for k, spec in enumerate(SPECS)]
        Hookless(self.system, name="hookless")
        self.state = self.system.realize_topology()
        self.model = Model()
        self.calls = [[0, 1, 1] + [0] * 8 for _ in SPECS]
        self.lazy = [0 for _ in SPECS]

    # ------------------------------------------------------------------ bookkeeping helpers
    def _expect_realized(self, model, target):
        for g in range(model.stage + 1, target + 1):
            for k in range(len(SPECS)):
                self.calls[k][g] += 1
                if g == POSITION:
                    model.marked[k]["c_pos"] = True
            if g == MODEL:
                model.q, model.u, model.z = Model().q, Model().u, Model().z
        model.stage = max(model.stage, target)

    def _refused_below_model(self, f):
        """Below Model the variables do not exist: the change must be refused and change nothing."""
        y = self.state.get_time()
        with pytest.raises(StageTooLowError):
            f()
        assert self.state.get_time() == y

    # ------------------------------------------------------------------ rules: variables
    @rule(t=values)
    def set_time(self, t):
        self.state.set_time(t)
        self.model.t = t
        self.model.invalidate(TIME)

    @rule(v=st.lists(values, min_size=NQ, max_size=NQ))
    def set_q(self, v):
        if self.model.stage < MODEL:
            return self._refused_below_model(lambda: self.state.set_q(v))
        self.state.set_q(v)
        self.model.q = np.array(v)
        self.model.invalidate(POSITION)

    @rule(v=st.lists(values, min_size=NU, max_size=NU))
    def set_u(self, v):
        if self.model.stage < MODEL:
            return self._refused_below_model(lambda: self.state.set_u(v))
        self.state.set_u(v)
        self.model.u = np.array(v)
        self.model.invalidate(VELOCITY)

    @rule(v=st.lists(values, min_size=NZ, max_size=NZ))
    def set_z(self, v):
        if self.model.stage < MODEL:
            return self._refused_below_model(lambda: self.state.set_z(v))
        self.state.set_z(v)
        self.model.z = np.array(v)
        self.model.invalidate(DYNAMICS)

    @rule(i=st.integers(0, NQ - 1), value=values, write=st.booleans(), through_subsystem=st.booleans())
    def upd_q(self, i, value, write, through_subsystem):
        """upd_q invalidates Position at the call, whether or not anything is written."""
        if self.model.stage < MODEL:
            return self._refused_below_model(self.state.upd_q)
        if through_subsystem and i < 3:
            k, j = (0, i) if i < 2 else (1, 0)
            w = self.probes[k].upd_q(self.state)
        else:
            w, j = self.state.upd_q(), i
        self.model.invalidate(POSITION)
        assert self.state.get_system_stage() == self.model.stage
        if write:
            w[j] = value
            self.model.q[i] = value

    @rule(k=st.integers(0, 1), value=values)
    def upd_u_of_a_subsystem(self, k, value):
        if self.model.stage < MODEL:
            return self._refused_below_model(lambda: self.probes[k].upd_u(self.state))
        self.probes[k].upd_u(self.state)[0] = value
        self.model.slices(k)[1][0] = value
        self.model.invalidate(VELOCITY)

    @rule(k=st.integers(0, 1), g=st.sampled_from(SCALAR_VARS), value=positive)
    def set_discrete(self, k, g, value):
        self.probes[k].set_discrete_variable(self.state, self.probes[k].dv[g], value)
        self.model.d[k][int(g)] = value
        self.model.invalidate(int(g))

    @rule(k=st.integers(0, 1), i=st.integers(0, 1), value=values)
    def upd_discrete_array(self, k, i, value):
        self.probes[k].upd_discrete_variable(self.state, self.probes[k].dv[VEC_VAR])[i] = value
        self.model.d[k][VELOCITY][i] = value
        self.model.invalidate(VELOCITY)

    @rule(k=st.integers(0, 1), g=st.sampled_from(SCALAR_VARS), bad=st.sampled_from([np.nan, np.inf, "x", None]))
    def set_discrete_badly(self, k, g, bad):
        """A refused change leaves the State as it was (the invariants check it)."""
        with pytest.raises((TypeError, ValueError)):
            self.probes[k].set_discrete_variable(self.state, self.probes[k].dv[g], bad)

    @rule(s=st.sampled_from(list(Stage)[MODEL:REPORT + 1]))
    def invalidate_all(self, s):
        self.state.invalidate_all(s)
        self.model.invalidate(int(s))

    # ------------------------------------------------------------------ rules: realization, cache, copies
    @rule(stage=st.sampled_from(list(Stage)[:REPORT + 1]))
    def realize(self, stage):
        self.system.realize(self.state, stage)
        self._expect_realized(self.model, int(stage))

    @rule(k=st.integers(0, 1))
    def read_lazy(self, k):
        probe, m = self.probes[k], self.model
        if m.stage < POSITION - 1:
            with pytest.raises(StageTooLowError):
                probe.get_energy(self.state)
            return
        value = probe.get_energy(self.state)
        if not m.marked[k]["lazy"]:
            self.lazy[k] += 1
            m.marked[k]["lazy"] = True
        np.testing.assert_allclose(value, m.fresh(k, "lazy"), rtol=(2**13 * EPS), atol=(2**13 * EPS))

    @rule(switch=st.booleans(), delta=values)
    def copy_state(self, switch, delta):
        c = self.state.copy()
        mc = self.model.copy()
        if mc.stage > INSTANCE:
            mc.invalidate(TIME)
        assert c.get_system_stage() == mc.stage
        assert c.get_time() == self.model.t
        if mc.stage >= MODEL:
            np.testing.assert_array_equal(c.get_y(), np.concatenate([self.model.q, self.model.u, self.model.z]))
        if switch:
            self.state, self.model = c, mc
            return
        # change everything in the copy; the invariants then check the original is untouched
        if mc.stage >= MODEL:
            c.set_q(mc.q + delta)
            c.upd_z()[:] = delta
        c.set_time(self.model.t + 1.0)
        for k, probe in enumerate(self.probes):
            probe.set_discrete_variable(c, probe.dv[Stage.Report], 3.0)
            probe.upd_discrete_variable(c, probe.dv[VEC_VAR])[:] = delta
        self.system.realize(c, Stage.Report)
        self._expect_realized(mc, REPORT)

    # ------------------------------------------------------------------ invariants
    @invariant()
    def stage_matches_the_model(self):
        if not hasattr(self, "state"):
            return
        assert self.state.get_system_stage() == self.model.stage
        for i in range(self.state.get_num_subsystems()):
            assert self.state.get_subsystem_stage(i) == self.model.stage

    @invariant()
    def variables_match_the_model(self):
        if not hasattr(self, "state"):
            return
        m = self.model
        assert self.state.get_time() == m.t
        if m.stage >= MODEL:
            np.testing.assert_array_equal(self.state.get_q(), m.q)
            np.testing.assert_array_equal(self.state.get_u(), m.u)
            np.testing.assert_array_equal(self.state.get_z(), m.z)
        for k, probe in enumerate(self.probes):
            for g, v in m.d[k].items():
                np.testing.assert_array_equal(probe.get_discrete_variable(self.state, probe.dv[g]), v)

    @invariant()
    def hooks_ran_exactly_when_stages_were_realized(self):
        if not hasattr(self, "state"):
            return
        for k, probe in enumerate(self.probes):
            assert probe.calls == self.calls[k]
            assert probe.lazy_computations == self.lazy[k]

    @invariant()
    def current_cache_equals_a_fresh_computation(self):
        if not hasattr(self, "state"):
            return
        m, s = self.model, self.state
        for k, probe in enumerate(self.probes):
            for name in ENTRIES:
                if name == "inst":
                    if m.stage < INSTANCE:
                        continue
                    i = probe.inst_index(s)
                else:
                    i = probe.ce[name]
                current = m.expect_current(k, name)
                assert probe.is_cache_value_realized(s, i) == current, (name, m.stage)
                if current:
                    v = probe.get_cache_entry(s, i)
                    if name == "holder":
                        v = v[1]
                    np.testing.assert_allclose(v, m.fresh(k, name), rtol=(2**13 * EPS), atol=(2**13 * EPS), err_msg=name)
                else:
                    with pytest.raises(StageError):
                        probe.get_cache_entry(s, i)
            q, u, z = m.slices(k)
            if m.stage >= POSITION:
                np.testing.assert_allclose(probe.get_q_err(s), [q.sum() - 1.0], rtol=(2**13 * EPS), atol=(2**13 * EPS))
            if m.stage >= VELOCITY:
                np.testing.assert_allclose(probe.get_qdot(s), [u[i % len(u)] * (i + 1) for i in range(len(q))],
                                           rtol=(2**13 * EPS))
            if m.stage >= ACCEL:
                np.testing.assert_allclose(probe.get_udot(s), -m.d[k][DYNAMICS] * u, rtol=(2**13 * EPS))
                np.testing.assert_allclose(probe.get_zdot(s), np.full(len(z), (u ** 2).sum()), rtol=(2**13 * EPS))


# 150 examples of ~30 steps (~4 s): at 80, two planted faults (an invalidation not recorded while the State
# was already below the stage; Model re-layout keeping old values) went unnoticed. SIMTK_PROP_EXAMPLES
# raises it for a deeper run.
StagedStateMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("SIMTK_PROP_EXAMPLES", 150)), stateful_step_count=30, deadline=None)
TestStagedStateMachine = StagedStateMachine.TestCase
