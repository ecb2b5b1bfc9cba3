"""Fused realization (simtk/multibody/_fused.py, core/realize.pxi).

A plain multibody State is realized from Instance to Acceleration by one compiled call that must
leave exactly what the stage hooks leave. The reference is the same State realized by the hooks
(``state._fused = False`` turns the fused path off for one State), so the comparisons are bitwise.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from builders import ALL_JOINTS, QUATERNION_JOINTS, new_state, random_model, random_q

from simtk import Constraint, Force, Stage
from simtk.common.errors import NonFiniteForceError
from simtk.spatial import Transform

STAGES = (Stage.Time, Stage.Position, Stage.Velocity, Stage.Dynamics, Stage.Acceleration)


def _model(joints, seed, nb=6):
    rng = np.random.default_rng(seed)
    model = random_model(rng, joints, nb, gravity=rng.uniform(-10, 10, 3))
    forces, matter, mobods = model.forces, model.matter, model.mobods
    b1, b2 = mobods[1], mobods[-1]
    Force.TwoPointLinearSpring(forces, b1, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.5, .5, 3), 20.0, 0.3)
    Force.TwoPointLinearDamper(forces, matter.ground, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.5, .5, 3), 2.0)
    Force.GlobalDamper(forces, matter, 0.3)
    Force.ConstantTorque(forces, b1, rng.uniform(-2, 2, 3))
    Force.LinearBushing(forces, matter.ground, Transform(), b1, Transform(), rng.uniform(1, 20, 6),
                        rng.uniform(0.1, 2, 6))
    return model, rng


def _random_y(model, state, rng):
    euler = model.matter.get_use_euler_angles(state)
    q = np.concatenate([random_q(rng, spec.joint, mb.get_num_q(state), euler, spread=0.8)
                        for mb, spec in zip(model.mobods[1:], model.specs[1:])])
    return q, rng.uniform(-1, 1, state.get_nu())


def _snapshot(model, s):
    """Everything the stages leave that a user can read."""
    matter, system = model.matter, model.system
    out = {"stage": int(s.get_system_stage()), "subsystem stages": [int(s.get_subsystem_stage(i))
                                                                    for i in range(s.get_num_subsystems())]}
    if s.get_system_stage() >= Stage.Position:
        out["q_err"] = s.get_q_err().copy()
        out["X_GB"] = [mb.get_body_transform(s).p.copy() for mb in model.mobods[1:]]
        out["R_GB"] = [mb.get_body_transform(s).R.matrix.copy() for mb in model.mobods[1:]]
        out["M"] = matter.calc_m(s)
    if s.get_system_stage() >= Stage.Velocity:
        out["qdot"] = s.get_qdot().copy()
        out["V_GB"] = [mb.get_body_velocity(s).copy() for mb in model.mobods[1:]]
    if s.get_system_stage() >= Stage.Dynamics:
        out["F"] = system.get_rigid_body_forces(s).copy()
        out["f"] = system.get_mobility_forces(s).copy()
    if s.get_system_stage() >= Stage.Acceleration:
        out["udot"] = s.get_udot().copy()
        out["qdotdot"] = s.get_qdotdot().copy()
        out["A_GB"] = [mb.get_body_acceleration(s).copy() for mb in model.mobods[1:]]
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)


@pytest.mark.parametrize("joint, euler", [(j, False) for j in ALL_JOINTS] + [(j, True) for j in sorted(QUATERNION_JOINTS)])
def test_fused_equals_the_hooks_bitwise(joint, euler):
    """For every built-in mobilizer, through a sequence of variable changes and partial
    realizations, the fused State and the hooks' State agree on every cache, bitwise, and on the
    stages reached and the System's realization counts."""
    model, rng = _model([joint, "Pin", "Ball"] if joint != "Weld" else ["Weld", "Pin"], ALL_JOINTS.index(joint))
    system = model.system
    fused = new_state(model, euler=euler)
    system.realize(fused, Stage.Instance)
    hooks = fused.copy()
    hooks._fused = False
    system.realize(fused, Stage.Instance)  # builds the fused plan
    assert fused._fused, "a plain State gets the fused realization"
    q, u = _random_y(model, fused, rng)
    for s in (fused, hooks):
        s.set_q(q)
        s.set_u(u)
    steps = [("u", Stage.Acceleration), ("t", Stage.Dynamics), ("u", Stage.Velocity), ("none", Stage.Acceleration),
             ("q", Stage.Position), ("none", Stage.Acceleration), ("u", Stage.Acceleration), ("q", Stage.Time),
             ("none", Stage.Dynamics), ("t", Stage.Acceleration)]
    for what, stage in steps:
        q, u = _random_y(model, fused, rng)
        t = float(rng.uniform(0, 5))
        counts = []
        for s in (fused, hooks):
            if what == "u":
                s.set_u(u)
            elif what == "q":
                s.set_q(q)
            elif what == "t":
                s.set_time(t)
            before = list(system._num_realizations)
            system.realize(s, stage)
            counts.append([a - b for a, b in zip(system._num_realizations, before)])
        assert counts[0] == counts[1], (what, stage)
        _assert_same(_snapshot(model, fused), _snapshot(model, hooks))
    assert fused._fused and hooks._fused is False


def test_fused_and_hooks_share_the_position_force_cache_semantics():
    """Changing u alone reuses the cached position forces (they are not recomputed), changing q
    recomputes them: the force totals follow the hooks' either way."""
    model, rng = _model(["Pin", "Slider", "Gimbal"], 3)
    system = model.system
    s = new_state(model)
    system.realize(s, Stage.Acceleration)
    ref = s.copy()
    ref._fused = False
    system.realize(ref, Stage.Acceleration)
    for k in range(6):
        q, u = _random_y(model, s, rng)
        for x in (s, ref):
            if k % 2:
                x.set_q(q)
            x.set_u(u)
            system.realize(x, Stage.Acceleration)
        np.testing.assert_array_equal(system.get_rigid_body_forces(s), system.get_rigid_body_forces(ref))
        np.testing.assert_array_equal(s.get_udot(), ref.get_udot())


def test_states_with_python_in_the_matter_or_the_forces_are_fused_stage_by_stage():
    """A constraint (solved in Python), a Force.Custom or a second force subsystem is fused, stage by
    stage: the realizer calls the matter's own hooks or the Python elements where the hooks would, and
    the results are those of the hooks, bitwise (tests/math/test_compiled_loop_python_parts.py
    compares the Python parts in detail)."""
    model, _ = _model(["Pin", "Pin"], 4, nb=3)
    s = new_state(model)
    model.system.realize(s, Stage.Instance)
    assert s._fused and not s._fused.staged
    Constraint.Rod(model.mobods[1], [0, 0, 0], model.mobods[2], [0, 0, 0], 0.7)
    s = model.system.realize_topology()
    model.system.realize(s, Stage.Instance)
    hooks = s.copy()
    model.system.realize(hooks, Stage.Instance)
    hooks._fused = False
    for x in (s, hooks):
        x.set_u(np.array([0.3, -0.2]))
        model.system.realize(x, Stage.Acceleration)
    assert s._fused and s._fused.staged
    _assert_same(_snapshot(model, s), _snapshot(model, hooks))

    model, _ = _model(["Pin", "Pin"], 5, nb=3)

    class Push(Force.Custom.Implementation):
        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            mobility_forces[0] += 1.0

    Force.Custom(model.forces, Push())
    s = model.system.realize_topology()
    model.system.realize(s, Stage.Acceleration)
    assert s._fused and s._fused.staged


def test_a_failure_falls_back_to_the_hooks_diagnosis():
    """A zero quaternion and a force element with non-finite forces raise the hooks' errors, and
    the State is left below the failed stage."""
    model, _ = _model(["Ball"], 6, nb=3)
    system = model.system
    s = new_state(model)
    system.realize(s, Stage.Acceleration)
    assert s._fused
    q = s.get_q().copy()
    q[:4] = 0.0
    s.set_q(q)
    with pytest.raises(ValueError, match="quaternion is zero"):
        system.realize(s, Stage.Acceleration)
    assert s.get_system_stage() < Stage.Position

    model, _ = _model(["Pin", "Pin"], 7, nb=3)
    b1, b2 = model.mobods[1], model.mobods[2]
    Force.TwoPointLinearSpring(model.forces, b1, [10, 0, 0], b2, [-10, 0, 0], 1e308, 0.0)
    errors = []
    for fused in (True, False):
        s = new_state(model)
        s.set_q([0.5, 1.0])
        model.system.realize(s, Stage.Instance)
        if not fused:
            s._fused = False
        assert bool(s._fused) == fused
        with pytest.raises((NonFiniteForceError, FloatingPointError)) as info:
            model.system.realize(s, Stage.Acceleration)
        errors.append((type(info.value), str(info.value)))
        assert s.get_system_stage() < Stage.Acceleration
    assert errors[0] == errors[1]


def test_copies_and_pickles_rebuild_the_plan():
    """The plan points into one State's arrays: a copy or an unpickled State gets its own, and
    realizes to the same results."""
    model, rng = _model(["Pin", "Ball", "Universal"], 8)
    system = model.system
    s = new_state(model)
    q, u = _random_y(model, s, rng)
    s.set_q(q)
    s.set_u(u)
    system.realize(s, Stage.Acceleration)
    c = s.copy()
    assert c._fused is None
    system.realize(c, Stage.Acceleration)
    assert c._fused and c._fused is not s._fused
    p = pickle.loads(pickle.dumps(s))
    system_p = p.get_system()
    system_p.realize(p, Stage.Acceleration)
    for x in (c, p):
        np.testing.assert_array_equal(x.get_udot(), s.get_udot())
    c.set_u(np.zeros(s.get_nu()))
    system.realize(c, Stage.Acceleration)
    np.testing.assert_array_equal(s.get_u(), u)  # the copy's realization wrote only its own arrays
