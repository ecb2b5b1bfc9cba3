"""MobilizedBody.Jit: numba mobilizer kernels run by the core's sweeps (issue 31, the mobilizer half).

Each kernel (jit_mobilizer_kernels.py) writes a built-in mobilizer's kinematics from its definition:
a chain of jitted bodies must give the accelerations, mass matrix and trajectories of the same chain
of built-in ones to round-off; the batch rows must match single calls; simtk.testing.check_mobilizer
(finite differences of X_FM) must accept the kernels and reject a wrong HDot; a kernel that fails
must be refused naming its body, the State untouched.
"""
from __future__ import annotations

import ctypes
import pickle

import numpy as np
import pytest

pytest.importorskip("numba")

import jit_mobilizer_kernels as jmk  # noqa: E402

import simtk.jit as sj  # noqa: E402
from simtk import Stage  # noqa: E402
from simtk.math import SemiExplicitEulerIntegrator  # noqa: E402
from simtk.multibody import (  # noqa: E402
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Rotation, Transform  # noqa: E402
from simtk.testing import check_mobilizer  # noqa: E402
from tolerances import assert_close, scale_of  # noqa: E402

# (built-in name, kernel, params)
KINDS = {"Pin": (jmk.pin, []), "Screw": (jmk.screw, [0.3]), "Universal": (jmk.universal, [])}


def _chain(kinds: list[str], jit: bool, seed: int = 0, damping: float = 0.0):
    """A chain of bodies with random offset frames under gravity: built-in mobilizers or their kernels."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    parent = matter.ground
    bodies = []
    for i, kind in enumerate(kinds):
        mass = MassProperties.from_central_inertia(float(rng.uniform(0.5, 2)), rng.uniform(-0.2, 0.2, 3),
                                                   Inertia(rng.uniform(0.05, 0.1, 3)))
        X_PF = Transform(Rotation.from_body_fixed_xyz(rng.uniform(-1, 1, 3)), rng.uniform(-0.5, 0.5, 3))
        X_BM = Transform(Rotation.from_body_fixed_xyz(rng.uniform(-1, 1, 3)), rng.uniform(-0.3, 0.3, 3))
        kernel, params = KINDS[kind]
        if jit:
            parent = MobilizedBody.Jit(parent, X_PF, Body.Rigid(mass), X_BM, kernel, params)
        else:
            parent = getattr(MobilizedBody, kind)(parent, X_PF, Body.Rigid(mass), X_BM, *params)
        bodies.append(parent)
        if damping:
            Force.MobilityLinearDamper(forces, parent, 0, damping)
    state = system.realize_topology()
    nq = len(matter.get_q(state))
    state.set_q(rng.uniform(-1, 1, nq))
    state.set_u(rng.uniform(-2, 2, len(matter.get_u(state))))
    return system, matter, bodies, state


CHAINS = [["Pin"] * 7, ["Screw", "Pin", "Screw", "Pin"], ["Universal", "Pin", "Universal", "Screw", "Universal"]]


@pytest.mark.parametrize("kinds", CHAINS, ids=["pins", "screws", "universals"])
def test_kinematics_udot_and_mass_matrix_match_the_built_in_mobilizers(kinds):
    (js, jm, jb, jst), (bs, bm, bb, bst) = _chain(kinds, True), _chain(kinds, False)
    for s, st in ((js, jst), (bs, bst)):
        s.realize(st, Stage.Acceleration)
    for a, b in zip(jb, bb):
        for get in ("get_body_transform", "get_body_velocity"):
            x, y = getattr(a, get)(jst), getattr(b, get)(bst)
            x, y = (np.concatenate([np.ravel(v.R.matrix), np.ravel(v.p)]) if isinstance(v, Transform) else np.ravel(v)
                    for v in (x, y))
            assert_close(x, y, margin=256, scale=scale_of(x, y, floor=1.0), what=f"{b!r} {get}")
    ju, bu = jm.get_udot(jst), bm.get_udot(bst)
    assert_close(ju, bu, margin=4096, scale=scale_of(ju, bu, floor=1.0), what="udot")
    JM, BM = jm.calc_m(jst), bm.calc_m(bst)
    assert_close(JM, BM, margin=1024, scale=scale_of(JM, BM), what="M")
    assert_close(np.asarray(jst.get_qdot()), np.asarray(bst.get_qdot()), margin=4, scale=1.0, what="qdot")


@pytest.mark.parametrize("kinds", CHAINS[:2], ids=["pins", "screws"])
def test_trajectory_follows_the_built_in_chain_in_the_compiled_loop(kinds):
    """Fixed steps of the jitted chain (in the compiled time loop, no Python) follow the built-in one's."""
    ends = []
    for jit in (True, False):
        system, matter, bodies, state = _chain(kinds, jit, damping=0.1)
        integ = SemiExplicitEulerIntegrator(system, 1e-3)
        integ.initialize(state)
        path = integ.describe_fast_path()
        assert path.startswith("compiled time loop") and "calls Python" not in path, path
        integ.step_to(0.5)
        ends.append(integ.get_state().get_y().copy())
    assert_close(ends[0], ends[1], margin=1e6, scale=scale_of(*ends, floor=1.0), what="y(0.5)")


def test_batch_and_functional_rows_match_single_calls():
    system, matter, bodies, state = _chain(CHAINS[2], True, seed=3)
    system.realize(state, Stage.Instance)
    rng = np.random.default_rng(5)
    nq, nu = len(matter.get_q(state)), len(matter.get_u(state))
    Q, U = rng.uniform(-1, 1, (4, nq)), rng.uniform(-1, 1, (4, nu))
    rows = matter.calc_udot_batch(Q, U, state=state, threads=2)
    dyn = matter.functional_dynamics(state)
    for k in range(4):
        s = state.copy()
        s.set_q(Q[k])
        s.set_u(U[k])
        system.realize(s, Stage.Acceleration)
        assert_close(rows[k], matter.get_udot(s), margin=64, scale=scale_of(rows[k], floor=1.0), what=f"row {k}")
        np.testing.assert_array_equal(dyn.calc_udot(Q[k], U[k]), rows[k])
    q1, u1 = matter.step_batch(Q, U, h=1e-3, n_steps=10, state=state, threads=2)
    for k in range(4):
        qk, uk = matter.step_batch(Q[k:k + 1], U[k:k + 1], h=1e-3, n_steps=10, state=state, threads=1)
        np.testing.assert_array_equal(q1[k], qk[0])
        np.testing.assert_array_equal(u1[k], uk[0])


@pytest.mark.parametrize("kind", ["Pin", "Screw", "Universal"])
def test_check_mobilizer_accepts_the_kernels(kind):
    system, matter, bodies, state = _chain([kind, kind], True, seed=1)
    for b in bodies:
        check_mobilizer(b, state, assert_ok=True)


def test_check_mobilizer_rejects_a_wrong_hdot():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    mass = MassProperties.from_central_inertia(1.0, [0.1, 0, 0], Inertia([0.1, 0.2, 0.3]))
    b = MobilizedBody.Jit(matter.ground, Transform(), Body.Rigid(mass), Transform(), jmk.universal_wrong, [])
    state = system.realize_topology()
    state.set_q([0.4, -0.3])
    state.set_u([1.5, -0.8])
    report = check_mobilizer(b, state)
    assert not report.ok
    assert any("HDot" in c.quantity and not c.ok for c in report.comparisons)


def _one(kernel, params=()):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    mass = MassProperties.from_central_inertia(1.0, [0.3, 0, 0], Inertia([0.1, 0.1, 0.1]))
    b = MobilizedBody.Jit(matter.ground, Transform(), Body.Rigid(mass), Transform(), kernel, params, name="arm")
    return system, matter, b


def test_a_non_finite_kernel_output_names_the_body_and_leaves_the_state_below_position():
    system, matter, b = _one(jmk.nan_past_one)
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)  # finite at q = 0
    state.set_q([1.5])
    with pytest.raises(FloatingPointError, match="arm.*nan_past_one.*non-finite"):
        system.realize(state, Stage.Acceleration)
    assert state.get_system_stage() < Stage.Position
    np.testing.assert_array_equal(state.get_q(), [1.5])
    with pytest.raises(Exception, match="non-finite|NaN|not finite"):
        matter.calc_udot_batch(np.array([[1.5]]), np.array([[0.0]]), state=state)
    state.set_q([0.5])  # and it recovers
    system.realize(state, Stage.Acceleration)
    assert np.isfinite(matter.get_udot(state)).all()


def test_a_non_finite_hdot_names_the_body_at_velocity_and_in_the_time_loop():
    system, matter, b = _one(jmk.universal_nan_hdot)
    state = system.realize_topology()
    state.set_u([6.0, 1.0])
    system.realize(state, Stage.Position)
    with pytest.raises(FloatingPointError, match="arm.*universal.*non-finite HDot_FM u"):
        system.realize(state, Stage.Velocity)
    assert state.get_system_stage() == Stage.Position
    # the compiled loop meets it mid-run (gravity speeds the body up past 5 rad/s): the same error
    state.set_u([4.9, 0.0])
    integ = SemiExplicitEulerIntegrator(system, 1e-3)
    integ.initialize(state)
    with pytest.raises(Exception, match="arm.*universal.*non-finite HDot_FM u"):
        integ.step_to(5.0)


def test_an_exception_inside_a_kernel_names_the_body_and_the_index_error():
    system, matter, b = _one(jmk.reads_past_params, [1.0])
    state = system.realize_topology()
    with pytest.raises(sj.JitMobilizerError, match=r"arm.*reads_past_params.*IndexError"):
        system.realize(state, Stage.Position)
    assert state.get_system_stage() < Stage.Position


def test_a_kernel_numba_cannot_compile_is_refused_before_the_body_joins():
    @sj.mobilizer(nu=1)
    def uncompilable(q, params, R, p, H):
        H[0, 0, 2] = {"a": object()}["a"]

    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    mass = MassProperties.from_central_inertia(1.0, [0, 0, 0], Inertia([0.1, 0.1, 0.1]))
    with pytest.raises(Exception, match="uncompilable.*cannot be compiled"):
        MobilizedBody.Jit(matter.ground, Body.Rigid(mass), uncompilable, [])
    assert matter.get_num_bodies() == 1


def test_wrong_signatures_and_arguments_are_refused():
    with pytest.raises(TypeError, match=r"must take exactly \(q, params, R, p, H\)"):
        sj.mobilizer(lambda q, params: None, nu=1)
    with pytest.raises(TypeError, match=r"hdot.*must take exactly \(q, qdot, v, params, out\)"):
        sj.mobilizer(jmk.pin.py_func, nu=1, hdot=lambda q, u, out: None)
    for nu in (0, 7, 1.5):
        with pytest.raises(ValueError, match="nu must be an int from 1 to 6"):
            sj.mobilizer(jmk.pin.py_func, nu=nu)
    with pytest.raises(ValueError, match="nq = 2 != nu = 1, so qdot = u cannot hold: give an N kernel"):
        sj.mobilizer(jmk.pin.py_func, nu=1, nq=2)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    mass = MassProperties.from_central_inertia(1.0, [0, 0, 0], Inertia([0.1, 0.1, 0.1]))
    with pytest.raises(TypeError, match="expected a MobilizerKernel"):
        MobilizedBody.Jit(matter.ground, Body.Rigid(mass), jmk.pin.py_func, [])
    with pytest.raises(ValueError, match=r"params\[1\] must be finite"):
        MobilizedBody.Jit(matter.ground, Body.Rigid(mass), jmk.screw, [0.1, np.nan])
    with pytest.raises(TypeError, match=r"params\[0\] must be a number"):
        MobilizedBody.Jit(matter.ground, Body.Rigid(mass), jmk.screw, ["x"])
    assert matter.get_num_bodies() == 1


def test_a_kernel_handed_through_capsules_runs_as_the_numba_one():
    pos, hdot = jmk.universal._jit_addresses()
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    kernel = sj.MobilizerKernel.from_capsule(new(pos, b"simtk.jit.mobilizer_position", None),
                                             new(hdot, b"simtk.jit.mobilizer_hdot", None), nu=2, name="capsule")
    with pytest.raises(TypeError, match="PyCapsule named 'simtk.jit.mobilizer_position'"):
        sj.MobilizerKernel.from_capsule(new(pos, b"other", None), nu=2)
    out = []
    for k in (jmk.universal, kernel):
        system, matter, b = _one(k)
        state = system.realize_topology()
        state.set_q([0.3, -0.7])
        state.set_u([1.0, 2.0])
        system.realize(state, Stage.Acceleration)
        out.append(matter.get_udot(state).copy())
    np.testing.assert_array_equal(out[0], out[1])


def test_a_state_and_a_system_with_jit_bodies_pickle():
    system, matter, bodies, state = _chain(["Pin", "Universal"], True, seed=2)
    system.realize(state, Stage.Acceleration)
    udot = matter.get_udot(state).copy()
    s2 = pickle.loads(pickle.dumps(state))
    np.testing.assert_array_equal(matter.get_udot(s2), udot)
    sys2, st2 = pickle.loads(pickle.dumps((system, state)))
    sys2.realize(st2, Stage.Acceleration)
    np.testing.assert_array_equal(sys2.get_matter_subsystem().get_udot(st2), udot)


def test_a_model_with_jit_bodies_saves_and_loads_by_the_kernels_registered_names():
    from simtk.io import ModelFileError, model_from_text, model_to_text, register_kernel

    system, matter, bodies, state = _chain(["Screw", "Universal"], True, seed=4)
    with pytest.raises(ModelFileError, match="not registered"):
        model_to_text(system)
    register_kernel(jmk.screw, "jit_mobilizer_tests.screw")
    register_kernel(jmk.universal, "jit_mobilizer_tests.universal")
    text = model_to_text(system)
    assert 'kernel="jit_mobilizer_tests.screw"' in text and 'kernel="jit_mobilizer_tests.universal"' in text
    loaded = model_from_text(text)
    lst = loaded.realize_topology()
    lst.set_q(state.get_q().copy())
    lst.set_u(state.get_u().copy())
    system.realize(state, Stage.Acceleration)
    loaded.realize(lst, Stage.Acceleration)
    np.testing.assert_array_equal(loaded.get_matter_subsystem().get_udot(lst), matter.get_udot(state))
    force_kernel = sj.force(lambda ctx, params, body_forces, mobility_forces: None)
    register_kernel(force_kernel, "jit_mobilizer_tests.a_force")
    with pytest.raises(ModelFileError, match="not a MobilizerKernel"):
        model_from_text(text.replace("jit_mobilizer_tests.screw", "jit_mobilizer_tests.a_force"))
