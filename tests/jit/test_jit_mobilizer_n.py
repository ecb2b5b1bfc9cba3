"""MobilizedBody.Jit with an N kernel: qdot = N(q) u (issue 31, the N half).

The kernels (jit_mobilizer_n_kernels.py) write the built-in BallEuler (Euler angles, u = w_FM) and
Ball (a quaternion, nq = 4 != nu = 3) from their definitions: a chain of jitted bodies must give the
kinematics, qdot, udot, qdotdot, N products and trajectories of the same chain of built-in ones to
round-off; simtk.testing.check_mobilizer (finite differences of X_FM and of qdot) must accept the
kernels and reject a wrong NDot; check_twins must pass against the built-in twin; a failing N kernel
must be refused naming its body, the State untouched; the model file and pickles must keep them.
"""
from __future__ import annotations

import ctypes
import pickle

import numpy as np
import pytest

pytest.importorskip("numba")

import jit_mobilizer_n_kernels as jnk  # noqa: E402

import simtk.jit as sj  # noqa: E402
from simtk import Function, Stage  # noqa: E402
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator  # noqa: E402
from simtk.multibody import (  # noqa: E402
    Constraint,
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Rotation, Transform  # noqa: E402
from simtk.testing import check_mobilizer, check_twins  # noqa: E402
from tolerances import assert_close, scale_of  # noqa: E402

# name -> (built-in name, kernel)
# (a BallEuler is a Ball in a State that uses Euler angles: JOINT_TYPES["BallEuler"], nq = nu = 3, qdot = N u)
KINDS = {"euler": ("BallEuler", jnk.ball_euler), "quat": ("Ball", jnk.ball_quat), "quat_lsq": ("Ball", jnk.ball_quat_lsq)}


def _unit_quaternions(q, nbodies: int) -> np.ndarray:
    q = q.copy()
    for k in range(nbodies):
        q[4 * k:4 * k + 4] /= np.linalg.norm(q[4 * k:4 * k + 4])
    return q


def _chain(kind: str, jit: bool, n: int = 4, seed: int = 0, damping: float = 0.0):
    """A chain of ``n`` balls with random offset frames under gravity: built-in mobilizers or their kernels."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    parent = matter.ground
    bodies = []
    builtin, kernel = KINDS[kind]
    for i in range(n):
        mass = MassProperties.from_central_inertia(float(rng.uniform(0.5, 2)), rng.uniform(-0.2, 0.2, 3),
                                                   Inertia(rng.uniform(0.05, 0.1, 3)))
        X_PF = Transform(Rotation.from_body_fixed_xyz(rng.uniform(-1, 1, 3)), rng.uniform(-0.5, 0.5, 3))
        X_BM = Transform(Rotation.from_body_fixed_xyz(rng.uniform(-1, 1, 3)), rng.uniform(-0.3, 0.3, 3))
        if jit:
            parent = MobilizedBody.Jit(parent, X_PF, Body.Rigid(mass), X_BM, kernel, [], name=f"ball{i}")
        else:
            parent = MobilizedBody.Ball(parent, X_PF, Body.Rigid(mass), X_BM, name=f"ball{i}")
        bodies.append(parent)
        if damping:
            for k in range(3):
                Force.MobilityLinearDamper(forces, parent, k, damping)
    state = system.realize_topology()
    if builtin == "BallEuler" and not jit:
        matter.set_use_euler_angles(state, True)
        system.realize(state, Stage.Model)
    nq = len(matter.get_q(state))
    q = rng.uniform(-1, 1, nq)
    state.set_q(_unit_quaternions(q, n) if builtin == "Ball" else q)
    state.set_u(rng.uniform(-2, 2, len(matter.get_u(state))))
    return system, matter, bodies, state


@pytest.mark.parametrize("kind", list(KINDS))
def test_kinematics_accelerations_and_n_products_match_the_built_in_balls(kind):
    (js, jm, jb, jst), (bs, bm, bb, bst) = _chain(kind, True), _chain(kind, False)
    assert len(jm.get_q(jst)) == len(bm.get_q(bst)) and len(jm.get_u(jst)) == len(bm.get_u(bst))
    for s, st in ((js, jst), (bs, bst)):
        s.realize(st, Stage.Acceleration)
    # u is w_FM, not qdot: N is not the identity (nor is NDot zero)
    assert not np.allclose(np.asarray(bst.get_qdot())[:3], np.asarray(bst.get_u())[:3])
    for a, b in zip(jb, bb):
        for get in ("get_body_transform", "get_body_velocity", "get_body_acceleration"):
            x, y = getattr(a, get)(jst), getattr(b, get)(bst)
            x, y = (np.concatenate([np.ravel(v.R.matrix), np.ravel(v.p)]) if isinstance(v, Transform) else np.ravel(v)
                    for v in (x, y))
            assert_close(x, y, margin=1024, scale=scale_of(x, y, floor=1.0), what=f"{b!r} {get}")
    for get, margin in (("get_qdot", 64), ("get_udot", 4096), ("get_qdotdot", 8192)):
        x, y = np.asarray(getattr(jst, get)()), np.asarray(getattr(bst, get)())
        assert_close(x, y, margin=margin, scale=scale_of(x, y, floor=1.0), what=get)
    JM, BM = jm.calc_m(jst), bm.calc_m(bst)
    assert_close(JM, BM, margin=1024, scale=scale_of(JM, BM), what="M")
    rng = np.random.default_rng(7)
    nq, nu = len(jm.get_q(jst)), len(jm.get_u(jst))
    for transpose in (False, True):
        for op in ("multiply_by_n", "multiply_by_n_inv"):
            v = rng.normal(size=nq if transpose == (op == "multiply_by_n") else nu)
            x, y = getattr(jm, op)(jst, transpose, v), getattr(bm, op)(bst, transpose, v)
            assert_close(x, y, margin=256, scale=scale_of(x, y, floor=1.0), what=f"{op} transpose={transpose}")


def test_the_least_squares_n_inverse_is_a_left_inverse_off_the_unit_quaternion():
    """Without an N^-1 kernel the core takes (N^T N)^-1 N^T: N^-1 N u = u at any q (|q| != 1 too), where
    the kernel's 2 E(q)^T (Simbody's) gives |q|^2 u."""
    system, matter, bodies, state = _chain("quat_lsq", True, n=2)
    ks, km, _, kst = _chain("quat", True, n=2)
    q = 1.7 * state.get_q()
    u = np.random.default_rng(3).normal(size=6)
    state.set_q(q)
    kst.set_q(q)
    system.realize(state, Stage.Position)
    ks.realize(kst, Stage.Position)
    back = matter.multiply_by_n_inv(state, False, matter.multiply_by_n(state, False, u))
    assert_close(back, u, margin=64, scale=scale_of(u), what="lsq N^-1 N u")
    simbody = km.multiply_by_n_inv(kst, False, km.multiply_by_n(kst, False, u))
    assert_close(simbody, 1.7 ** 2 * u, margin=64, scale=scale_of(u), what="2 E^T N u")


def test_trajectory_follows_the_built_in_euler_chain_in_the_compiled_loop():
    """Fixed steps of the jitted chain (in the compiled time loop, no Python) follow the built-in one's."""
    ends = []
    for jit in (True, False):
        system, matter, bodies, state = _chain("euler", jit, n=3, damping=0.1)
        state.set_q(0.3 * state.get_q())  # (away from the Euler singularity at q1 = +-pi/2)
        integ = SemiExplicitEulerIntegrator(system, 1e-3)
        integ.initialize(state)
        path = integ.describe_fast_path()
        assert path.startswith("compiled time loop") and "calls Python" not in path, path
        integ.step_to(0.5)
        ends.append(integ.get_state().get_y().copy())
    assert_close(ends[0], ends[1], margin=1e6, scale=scale_of(*ends, floor=1.0), what="y(0.5)")


def test_coordinate_constraints_on_jit_n_bodies_follow_the_built_in_ones_in_the_compiled_loop():
    """A ConstantCoordinate and a CoordinateCoupler act on Euler angles: their rows of G are rows of N (the
    loops' constraint rows read the jit N kernel); the constrained accelerations and an error-controlled run
    follow the built-in BallEuler chain's, and the constraints hold."""
    ends, udots = [], []
    for jit in (True, False):
        system, matter, bodies, state = _chain("euler", jit, n=3, seed=6, damping=0.2)
        Constraint.ConstantCoordinate(bodies[1], 1, 0.1)
        Constraint.CoordinateCoupler(matter, Function.Linear([1.0, -2.0, 0.0]), [bodies[0], bodies[2]], [2, 0])
        state = _rebuilt(system, matter, jit, state)
        q = 0.3 * state.get_q()
        q[3 + 1] = 0.1
        q[2] = 2.0 * q[6]
        state.set_q(q)
        system.realize(state, Stage.Position)
        system.project(state, 1e-12)
        system.realize(state, Stage.Acceleration)
        udots.append(np.concatenate([matter.get_udot(state), state.get_qdotdot()]))
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(1e-8)
        integ.initialize(state)
        path = integ.describe_fast_path()
        assert path.startswith("compiled time loop") and "solving and projecting 2 constraint equations" in path, path
        integ.step_to(0.3)
        end = integ.get_state()
        assert abs(end.get_q()[4] - 0.1) < 1e-7 and abs(end.get_q()[2] - 2.0 * end.get_q()[6]) < 1e-7
        ends.append(end.get_y().copy())
    assert_close(udots[0], udots[1], margin=1e4, scale=scale_of(*udots, floor=1.0), what="constrained udot, qdotdot")
    # (error control: the two runs take the same steps while their errors agree to round-off)
    assert_close(ends[0], ends[1], margin=1e7, scale=scale_of(*ends, floor=1.0), what="y(0.3)")


def _rebuilt(system, matter, jit: bool, state):
    # a State of the System with its constraints (the Euler flag of the built-in one set again)
    q, u = state.get_q().copy(), state.get_u().copy()
    state = system.realize_topology()
    if not jit:
        matter.set_use_euler_angles(state, True)
        system.realize(state, Stage.Model)
    state.set_q(q)
    state.set_u(u)
    return state


def test_batch_and_functional_rows_match_single_calls():
    system, matter, bodies, state = _chain("quat", True, n=3, seed=3)
    system.realize(state, Stage.Instance)
    rng = np.random.default_rng(5)
    nq, nu = len(matter.get_q(state)), len(matter.get_u(state))
    Q = np.array([_unit_quaternions(q, 3) for q in rng.uniform(-1, 1, (4, nq))])
    U = rng.uniform(-1, 1, (4, nu))
    rows = matter.calc_udot_batch(Q, U, state=state, threads=2)
    for k in range(4):
        s = state.copy()
        s.set_q(Q[k])
        s.set_u(U[k])
        system.realize(s, Stage.Acceleration)
        assert_close(rows[k], matter.get_udot(s), margin=64, scale=scale_of(rows[k], floor=1.0), what=f"row {k}")
    q1, u1 = matter.step_batch(Q, U, h=1e-3, n_steps=10, state=state, threads=2)
    for k in range(4):
        qk, uk = matter.step_batch(Q[k:k + 1], U[k:k + 1], h=1e-3, n_steps=10, state=state, threads=1)
        np.testing.assert_array_equal(q1[k], qk[0])
        np.testing.assert_array_equal(u1[k], uk[0])


def test_step_batch_moves_q_as_the_built_in_ball():
    (js, jm, _, jst), (bs, bm, _, bst) = _chain("quat", True, n=2, seed=8), _chain("quat", False, n=2, seed=8)
    for s, st in ((js, jst), (bs, bst)):
        s.realize(st, Stage.Instance)
    Q, U = jst.get_q().copy()[None], jst.get_u().copy()[None]
    qj, uj = jm.step_batch(Q, U, h=1e-3, n_steps=1, state=jst)
    qb, ub = bm.step_batch(Q, U, h=1e-3, n_steps=1, state=bst)
    # (the built-in Ball's quaternions are normalized after the step, the user's coordinates are not)
    assert abs(np.linalg.norm(qj[0, :4]) - 1.0) > 1e-10
    assert_close(_unit_quaternions(qj[0], 2), qb[0], margin=1024, scale=1.0, what="q after a step")
    assert_close(uj, ub, margin=1024, scale=scale_of(ub, floor=1.0), what="u after a step")


@pytest.mark.parametrize("kind", list(KINDS))
def test_check_mobilizer_accepts_the_kernels(kind):
    system, matter, bodies, state = _chain(kind, True, n=2, seed=1)
    for b in bodies:
        check_mobilizer(b, state, assert_ok=True)


def test_check_mobilizer_rejects_a_wrong_ndot():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    mass = MassProperties.from_central_inertia(1.0, [0.1, 0, 0], Inertia([0.1, 0.2, 0.3]))
    b = MobilizedBody.Jit(matter.ground, Transform(), Body.Rigid(mass), Transform(), jnk.ball_euler_wrong_ndot, [])
    state = system.realize_topology()
    state.set_q([0.4, -0.3, 0.2])
    state.set_u([1.5, -0.8, 0.6])
    report = check_mobilizer(b, state)
    assert not report.ok
    assert any("qdotdot" in c.quantity and not c.ok for c in report.comparisons)


@pytest.mark.parametrize("kind", ["euler", "quat"])
def test_check_twins_against_the_built_in_ball(kind):
    (_, _, jb, jst), (_, _, bb, bst) = _chain(kind, True, n=3, seed=2), _chain(kind, False, n=3, seed=2)
    report = check_twins(jb[1], bb[1], jst, bst, n_states=3, q_scale=0.2, rtol=1e-9, atol=1e-12)
    assert report.ok, report
    assert {c.quantity for c in report.comparisons} == {"R_FM", "p_FM", "V_FM", "udot of the System"}


def _one(kernel):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    mass = MassProperties.from_central_inertia(1.0, [0.3, 0, 0], Inertia([0.1, 0.1, 0.1]))
    b = MobilizedBody.Jit(matter.ground, Transform(), Body.Rigid(mass), Transform(), kernel, [], name="arm")
    return system, matter, b


def test_a_non_finite_n_names_the_body_at_velocity_and_leaves_the_state_at_position():
    system, matter, b = _one(jnk.ball_euler_nan_n)
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)  # finite at q = 0
    state.set_q([1.5, 0.0, 0.0])
    system.realize(state, Stage.Position)  # (N is not needed there)
    with pytest.raises(FloatingPointError, match="arm.*ball_euler.*n.*non-finite"):
        system.realize(state, Stage.Velocity)
    assert state.get_system_stage() == Stage.Position
    np.testing.assert_array_equal(state.get_q(), [1.5, 0.0, 0.0])
    with pytest.raises(FloatingPointError, match="arm.*non-finite"):
        matter.multiply_by_n(state, False, np.ones(3))
    # the compiled loop meets it mid-run: the same error, naming the body
    state.set_q([0.99, 0.0, 0.0])
    state.set_u([3.0, 0.0, 0.0])
    integ = SemiExplicitEulerIntegrator(system, 1e-3)
    integ.initialize(state)
    with pytest.raises(Exception, match="arm.*ball_euler.*non-finite"):
        integ.step_to(1.0)
    state.set_q([0.5, 0.0, 0.0])  # and it recovers
    system.realize(state, Stage.Acceleration)
    assert np.isfinite(matter.get_udot(state)).all()


def test_an_exception_inside_an_n_kernel_names_the_body_and_the_index_error():
    system, matter, b = _one(jnk.ball_euler_bad_index_n)
    state = system.realize_topology()
    system.realize(state, Stage.Position)
    with pytest.raises(sj.JitMobilizerError, match=r"arm.*ball_euler.*\(n\).*IndexError"):
        system.realize(state, Stage.Velocity)
    assert state.get_system_stage() == Stage.Position


def test_wrong_n_kernels_and_sizes_are_refused():
    f = jnk.ball_euler.py_func
    with pytest.raises(TypeError, match=r"n.*must take exactly \(q, params, N\)"):
        sj.mobilizer(f, nu=3, n=lambda q, N: None)
    with pytest.raises(TypeError, match=r"ndot.*must take exactly \(q, qdot, params, NDot\)"):
        sj.mobilizer(f, nu=3, n=jnk.euler_n, ndot=jnk.euler_n)
    with pytest.raises(ValueError, match="nq must be an int from 1 to 7"):
        sj.mobilizer(f, nu=3, nq=8, n=jnk.euler_n)
    with pytest.raises(ValueError, match="an N\\^-1 or NDot kernel needs an N kernel"):
        sj.mobilizer(f, nu=3, ndot=jnk.euler_ndot)


def test_a_kernel_handed_through_capsules_runs_as_the_numba_one():
    pos, hdot, n, ninv, ndot = jnk.ball_quat._jit_addresses()
    assert hdot == 0
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    nm = b"simtk.jit.mobilizer_nmat"
    kernel = sj.MobilizerKernel.from_capsule(new(pos, b"simtk.jit.mobilizer_position", None), nu=3, nq=4,
                                             n=new(n, nm, None), ninv=new(ninv, nm, None), ndot=new(ndot, nm, None),
                                             name="capsule ball")
    with pytest.raises(TypeError, match="PyCapsule named 'simtk.jit.mobilizer_nmat'"):
        sj.MobilizerKernel.from_capsule(new(pos, b"simtk.jit.mobilizer_position", None), nu=3, nq=4,
                                        n=new(n, b"other", None))
    out = []
    for k in (jnk.ball_quat, kernel):
        system, matter, b = _one(k)
        state = system.realize_topology()
        state.set_q([0.6, 0.0, 0.8, 0.0])
        state.set_u([1.0, 2.0, -0.5])
        system.realize(state, Stage.Acceleration)
        out.append(np.concatenate([matter.get_udot(state), state.get_qdotdot()]))
    np.testing.assert_array_equal(out[0], out[1])


def test_a_system_with_n_kernels_pickles_and_saves_by_the_kernels_registered_names():
    from simtk.io import model_from_text, model_to_text, register_kernel

    system, matter, bodies, state = _chain("quat", True, n=2, seed=4)
    system.realize(state, Stage.Acceleration)
    ref = np.concatenate([matter.get_udot(state), state.get_qdotdot()])
    sys2, st2 = pickle.loads(pickle.dumps((system, state)))
    sys2.realize(st2, Stage.Acceleration)
    np.testing.assert_array_equal(np.concatenate([sys2.get_matter_subsystem().get_udot(st2), st2.get_qdotdot()]), ref)
    register_kernel(jnk.ball_quat, "jit_mobilizer_n_tests.ball_quat")
    text = model_to_text(system)
    assert 'kernel="jit_mobilizer_n_tests.ball_quat"' in text
    loaded = model_from_text(text)
    lst = loaded.realize_topology()
    assert len(loaded.get_matter_subsystem().get_q(lst)) == 8
    lst.set_q(state.get_q().copy())
    lst.set_u(state.get_u().copy())
    loaded.realize(lst, Stage.Acceleration)
    np.testing.assert_array_equal(np.concatenate([loaded.get_matter_subsystem().get_udot(lst), lst.get_qdotdot()]),
                                  ref)


def test_a_non_finite_ndot_names_the_body_at_acceleration():
    system, matter, b = _one(jnk.ball_euler_nan_ndot)
    state = system.realize_topology()
    state.set_u([6.0, 0.5, 0.0])
    system.realize(state, Stage.Dynamics)
    with pytest.raises(FloatingPointError, match="arm.*ball_euler.*ndot.*non-finite"):
        system.realize(state, Stage.Acceleration)
    assert state.get_system_stage() == Stage.Dynamics
    state.set_u([1.0, 0.5, 0.0])  # and it recovers
    system.realize(state, Stage.Acceleration)
    assert np.isfinite(state.get_qdotdot()).all()
