"""Every State pickles, realized or not, and its copy continues a simulation bitwise like the original.

Laws: ``pickle.loads(pickle.dumps((system, state)))`` gives a State at the same stage whose cached
results are bitwise the original's (the compiled workspace rebuilds itself from its arrays), and
integrating the copy with its System gives bitwise the same trajectory as integrating the original
(error-controlled and fixed-step); a State pickled alone brings a copy of its System, and the
original System can take its variables back by path (``migrate_state``) or take the State itself.
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from continuation_models import MODELS, four_bar, pendulum, trajectory

from simtk import (
    Stage,
)

STAGES = [Stage.Model, Stage.Instance, Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics,
          Stage.Acceleration, Stage.Report]


@pytest.mark.parametrize("stage", STAGES, ids=[s.name for s in STAGES])
@pytest.mark.parametrize("model", list(MODELS))
def test_pickled_state_keeps_its_stage_and_cache_and_continues_bitwise(model, stage):
    system, state = MODELS[model]()
    system.realize(state, stage)
    sys2, s2 = pickle.loads(pickle.dumps((system, state)))
    assert s2.get_system() is sys2 and s2.get_system_stage() == state.get_system_stage() >= stage
    np.testing.assert_array_equal(s2.get_y(), state.get_y())
    assert s2.get_time() == state.get_time()
    if stage >= Stage.Position:
        np.testing.assert_array_equal(s2.get_q_err(), state.get_q_err())
    if stage >= Stage.Acceleration:
        np.testing.assert_array_equal(s2.get_udot(), state.get_udot())  # the cache, not recomputed
        np.testing.assert_array_equal(s2.get_ydot(), state.get_ydot())
    for fixed in (False, True):
        np.testing.assert_array_equal(trajectory(sys2, s2.copy(), fixed), trajectory(system, state.copy(), fixed))


def test_realized_multibody_caches_survive_pickling():
    system, state = pendulum()
    system.realize(state, Stage.Acceleration)
    matter = system.get_matter_subsystem()
    sys2, s2 = pickle.loads(pickle.dumps((system, state)))
    m2 = sys2.get_matter_subsystem()
    for name in ("upper", "lower"):
        a, b = matter.get_component(name), m2.get_component(name)
        np.testing.assert_array_equal(a.get_body_velocity(state), b.get_body_velocity(s2))
        np.testing.assert_array_equal(a.get_body_acceleration(state), b.get_body_acceleration(s2))
    np.testing.assert_array_equal(matter.calc_m(state), m2.calc_m(s2))
    assert system.calc_energy(state) == sys2.calc_energy(s2)


def test_a_state_pickled_alone_brings_its_system_and_migrates_back_by_path():
    system, state = pendulum()
    system.realize(state, Stage.Velocity)
    s2 = pickle.loads(pickle.dumps(state))
    assert s2.get_system() is not system and s2.get_system_stage() == Stage.Velocity
    back = system.migrate_state(s2)
    np.testing.assert_array_equal(back.get_y(), state.get_y())
    np.testing.assert_array_equal(trajectory(system, back, True, 10), trajectory(system, state.copy(), True, 10))
    # the original System also takes the State itself (tests/common/test_state_pickle_system.py)
    system.realize(s2, Stage.Acceleration)
    assert s2.get_system() is system


def test_deepcopy_and_copy_agree_with_pickling():
    system, state = four_bar()
    system.realize(state, Stage.Acceleration)
    for twin in (copy.deepcopy(state), state.copy()):
        np.testing.assert_array_equal(trajectory(system, twin, False, 10), trajectory(system, state.copy(), False, 10))


@pytest.mark.parametrize("model", list(MODELS))
def test_an_unpickled_state_used_directly_sees_its_own_writes(model):
    """Law: q, u and y of an unpickled State are one storage again (pickling copies every array
    apart): set_q/set_u on it, or writing through upd_y, reach what its realization reads, so it
    realizes to what the original realizes after the same writes."""
    system, state = MODELS[model]()
    system.realize(state, Stage.Acceleration)
    sys2, s2 = pickle.loads(pickle.dumps((system, state)))
    rng = np.random.default_rng(3)
    q = state.get_q() + rng.uniform(-0.05, 0.05, state.get_nq())
    u = rng.uniform(-1, 1, state.get_nu())
    for s, sy in ((state, system), (s2, sys2)):
        s.set_q(q)
        s.set_u(u)
        sy.realize(s, Stage.Acceleration)
    np.testing.assert_array_equal(s2.get_udot(), state.get_udot())
    np.testing.assert_array_equal(s2.get_y()[:state.get_nq()], s2.get_q())
    for s, sy in ((state, system), (s2, sys2)):
        s.upd_y()[state.get_nq():state.get_nq() + state.get_nu()] = -u
        sy.realize(s, Stage.Acceleration)
    np.testing.assert_array_equal(s2.get_u(), -u)
    np.testing.assert_array_equal(s2.get_udot(), state.get_udot())


def test_a_matter_cache_pickled_with_its_views_unpickles():
    """An earlier version pickled the matter cache's read-only views (``ro``); they are made anew now, as
    views of the unpickled workspace."""
    system, state = pendulum()
    system.realize(state, Stage.Velocity)
    matter = system.get_matter_subsystem()
    cache = matter._cache(state)
    old = dict(cache.__getstate__(), ro=cache.ro)  # what the earlier version's pickle held
    again = type(cache).__new__(type(cache))
    again.__setstate__(pickle.loads(pickle.dumps(old)))
    assert "ro" not in again.__dict__
    np.testing.assert_array_equal(again.ro.V_GB, cache.ro.V_GB)
    assert not again.ro.V_GB.flags.writeable and np.shares_memory(again.ro.V_GB, again.ws.V_GB)
    assert not np.shares_memory(again.ro.V_GB, cache.ws.V_GB)
