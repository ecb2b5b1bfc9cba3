"""Constraint.Jit: constraints whose errors and forces are numba kernels (issue 31, the constraint half).

Independent checks: a ball joint written as a kernel (jit_constraint_kernels.ball) against the built-in
``Constraint.Ball`` (the Coincident row family, another code path) on a four-bar whose Ball joins Ground
to the last link, where both define the same equations in Ground: errors, udot and multipliers to
round-off, trajectories (with projection) to round-off on the Python and the compiled time loops;
``check_constraint`` (finite differences) on a ball between two moving bodies and on the seed's §3.2
distance constraint; errors naming the constraint; a model file round trip by registered name.
"""
from __future__ import annotations

import ctypes
import pickle

import numpy as np
import pytest

pytest.importorskip("numba")

import jit_constraint_kernels as jck  # noqa: E402

import simtk.jit as sj  # noqa: E402
from simtk import Stage  # noqa: E402
from simtk.io import model_from_text, model_to_text, register_kernel  # noqa: E402
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator  # noqa: E402
from simtk.multibody import (  # noqa: E402
    Constraint,
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.multibody.constraints.jit_constraint import ConstraintKernel  # noqa: E402
from simtk.multibody.forces.jit_force import JitKernelError  # noqa: E402
from simtk.spatial import Body, Inertia, MassProperties, Transform  # noqa: E402
from simtk.testing import check_constraint  # noqa: E402
from tolerances import assert_close, scale_of  # noqa: E402

register_kernel(jck.ball, "jit_tests.ball")
register_kernel(jck.distance, "jit_tests.distance")

TIP = [0.6, -0.7, 0.0]  # the Ground point the four-bar's last link is held at


def _chain(n: int = 3):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    parent, bodies = matter.ground, []
    for i in range(n):
        parent = MobilizedBody.Pin(parent, Transform([0, -0.5, 0]) if i else Transform(), body, Transform(),
                                   name=f"link{i}")
        bodies.append(parent)
    return system, matter, bodies


def four_bar(jit: bool):
    """Three pin links, the tip of the last held at TIP by a Ball (built-in or the kernel)."""
    system, matter, bodies = _chain()
    if jit:
        c = Constraint.Jit(matter, jck.ball, [matter.ground, *TIP, bodies[2], 0, -0.5, 0], name="ball")
    else:
        c = Constraint.Ball(matter.ground, TIP, bodies[2], [0, -0.5, 0], name="ball")
    return system, matter, c


def _at(system, matter, q, u):
    state = system.realize_topology()
    matter.upd_q(state)[:] = q
    matter.upd_u(state)[:] = u
    system.realize(state, Stage.Acceleration)
    return state


@pytest.mark.parametrize("seed", range(4))
def test_ball_kernel_matches_builtin_ball(seed):
    """At random (q, u), not on the constraint: perr, verr, aerr at udot, udot, the multipliers, the link's
    constraint force and the power of the kernel's ball equal the built-in Ball's to round-off (the same
    equations in Ground; Ground's own entry differs off the constraint, where the built-in applies it at the
    link's station and the kernel at its Ground station, and moves nothing)."""
    rng = np.random.default_rng(seed)
    q, u = rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3)
    got = []
    for jit in (True, False):
        system, matter, c = four_bar(jit)
        s = _at(system, matter, q, u)
        got.append([c.get_position_errors(s), c.get_velocity_errors(s), matter.get_udot(s), c.get_multipliers(s),
                    c.get_acceleration_errors(s), c.get_constrained_body_forces(s)[-1], c.calc_power(s)])
    for what, a, b in zip(("perr", "verr", "udot", "multipliers", "aerr", "body forces", "power"), *got):
        assert_close(a, b, margin=4096, scale=scale_of(*got[1][:4], floor=1.0), what=what)


def test_check_constraint_accepts_jitted_constraints():
    """check_constraint (finite differences of the errors along the motion, G from the forces) passes for a
    kernel ball between two moving bodies and for the seed's §3.2 distance kernel."""
    system, matter, bodies = _chain(4)
    other = MobilizedBody.Pin(matter.ground, Transform([0.8, 0.1, 0.2]), bodies[0].get_body(), Transform(),
                              name="other")
    ball = Constraint.Jit(matter, jck.ball, [bodies[2], 0.1, -0.5, 0.05, other, 0, -0.3, 0.1])
    dist = Constraint.Jit(matter, jck.distance, [bodies[3], other, 0.4])
    rng = np.random.default_rng(7)
    state = _at(system, matter, rng.uniform(-1, 1, 5), rng.uniform(-2, 2, 5))
    for c in (ball, dist):
        report = check_constraint(c, state)
        assert report.ok, report


def test_check_constraint_finds_a_kernel_whose_forces_are_not_the_errors_gradient():
    """Forces applied at the body origins instead of the ball's stations: check_constraint reports the
    G^T comparison failed, and the acceleration errors at the obtained udot show the violation (they
    are evaluated by the kernel there, not taken as the solve's residual)."""
    system, matter, bodies = _chain()
    c = Constraint.Jit(matter, jck.ball_wrong_forces, [matter.ground, *TIP, bodies[2], 0, -0.5, 0])
    state = _at(system, matter, [0.3, -0.5, 0.4], [0.2, -0.1, 0.3])
    report = check_constraint(c, state)
    assert not report.ok and "G^T lambda" in str(report), report
    assert np.abs(c.get_acceleration_errors(state)).max() > 1e-3


def test_elements_of_one_kernel_are_grouped_and_two_kernels_coexist():
    """Two kernel balls and a distance kernel in one model agree with two built-in Balls and a Rod on the
    constrained accelerations at an assembled state (where the distance and Rod equations agree)."""
    udots = []
    for jit in (True, False):
        system, matter, bodies = _chain(4)
        other = MobilizedBody.Pin(matter.ground, Transform([0.9, 0.0, 0.0]), bodies[0].get_body(),
                                  Transform([0, 0.5, 0]))  # (its origin 0.5 from its pivot)
        if jit:
            Constraint.Jit(matter, jck.ball, [matter.ground, 0.6, -0.7, 0.0, bodies[2], 0, -0.5, 0])
            Constraint.Jit(matter, jck.ball, [matter.ground, 0.6, -0.7, 0.0, bodies[2], 0, -0.5, 0])
            Constraint.Jit(matter, jck.distance, [bodies[3], other, 0.7])
        else:
            Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
            Constraint.Ball(matter.ground, [0.6, -0.7, 0.0], bodies[2], [0, -0.5, 0])
            Constraint.Rod(bodies[3], [0, 0, 0], other, [0, 0, 0], 0.7)
        state = system.realize_topology()
        matter.upd_q(state)[:] = [0.3, -0.5, 0.4, 0.2, -0.3]
        system.project(state, 1e-12)
        matter.upd_u(state)[:] = [0.2, -0.1, 0.3, 0.5, -0.4]
        system.project(state, 1e-12)
        system.realize(state, Stage.Acceleration)
        if jit:
            plan = matter._cache(state).plan
            assert sum(p.cls is Constraint.Jit for p in plan.parts) == 2  # the two balls in one part
        udots.append(matter.get_udot(state).copy())
    assert_close(udots[0], udots[1], margin=1e5, scale=scale_of(*udots, floor=1.0), what="udot")


def _trajectory(jit: bool, compiled: bool, integrator=RungeKuttaMersonIntegrator, t1: float = 0.5):
    system, matter, c = four_bar(jit)
    state = system.realize_topology()
    matter.upd_q(state)[:] = [0.3, -0.5, 0.4]
    matter.upd_u(state)[:] = [1.0, 0.0, 0.0]
    integ = integrator(system) if integrator is RungeKuttaMersonIntegrator else integrator(system, 1e-3)
    integ.set_accuracy(1e-8) if integrator is RungeKuttaMersonIntegrator else None
    integ.set_constraint_tolerance(1e-10)
    integ.set_use_compiled_loop(compiled)
    integ.initialize(state)
    path = integ.describe_fast_path()
    integ.step_to(t1)
    s = integ.get_state()
    system.realize(s, Stage.Acceleration)
    return s.get_y().copy(), path, c.get_position_errors(s), c.get_velocity_errors(s), c.get_multipliers(s)


@pytest.mark.parametrize("integrator", [RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator])
def test_trajectory_with_projection_matches_builtin_ball_on_both_loops(integrator):
    """The kernel ball's trajectory (assembled, projected each step) follows the built-in Ball's to
    round-off, on the compiled time loop (which calls the kernel itself) and on the Python loop; the
    constraint is held to the projection's tolerance throughout."""
    ref, path, *_ = _trajectory(False, True, integrator)
    assert path.startswith("compiled time loop"), path
    for compiled in (True, False):
        y, path, perr, verr, lam = _trajectory(True, compiled, integrator)
        if compiled:
            assert path.startswith("compiled time loop") and "calls Python" not in path, path
        assert np.abs(perr).max() <= 1e-10 and np.abs(verr).max() <= 1e-10
        assert_close(y, ref, margin=1e6, scale=scale_of(y, ref, floor=1.0), what=f"y (compiled={compiled})")


def test_compiled_loop_and_python_loop_agree_on_the_kernel():
    """The same kernel model on the two loops: the compiled loop's V = J u and A = J udot + bias give the
    kernel what the Python path's realized V_GB and A_GB give it, to round-off."""
    a = _trajectory(True, True, t1=1.0)
    b = _trajectory(True, False, t1=1.0)
    assert_close(a[0], b[0], margin=1e6, scale=scale_of(a[0], b[0], floor=1.0), what="y(1)")
    assert_close(a[4], b[4], margin=1e6, scale=scale_of(a[4], b[4], floor=1.0), what="multipliers")


# ---------------------------------------------------------------------------------------------- errors
def test_kernel_numba_cannot_compile_is_refused_naming_it_and_adds_nothing():
    def perr(ctx, params, out):
        out[0] = {"a": ctx}["a"].q[0]  # a dict of tuples of arrays: numba refuses it as typed here

    def verr(ctx, params, out):
        out[0] = 0.0

    def aerr(ctx, params, out):
        out[0] = 0.0

    @sj.constraint(mp=1, position_errors=perr, velocity_errors=verr, acceleration_errors=aerr, cache=False)
    def broken(ctx, params, multipliers, body_forces, mobility_forces):
        mobility_forces[0] += multipliers[0] + "x"

    system, matter, bodies = _chain(1)
    with pytest.raises(TypeError, match=r"Constraint.Jit \(kernel 'test_kernel.*broken'\).*cannot be compiled"):
        Constraint.Jit(matter, broken, [bodies[0]])
    assert matter.get_num_constraints() == 0


def test_wrong_signatures_and_missing_levels_are_refused():
    with pytest.raises(TypeError, match="apply_forces.*must take exactly"):
        sj.constraint(lambda ctx, params, lam: None, mp=1, position_errors=jck._ball_perr,
                      velocity_errors=jck._ball_verr, acceleration_errors=jck._ball_aerr)
    with pytest.raises(TypeError, match="position_errors.*must take exactly"):
        sj.constraint(jck.ball.py_funcs[3], mp=1, position_errors=lambda ctx: None,
                      velocity_errors=jck._ball_verr, acceleration_errors=jck._ball_aerr)
    with pytest.raises(TypeError, match="velocity_errors is required"):
        sj.constraint(jck.ball.py_funcs[3], mp=3, position_errors=jck._ball_perr, acceleration_errors=jck._ball_aerr)
    with pytest.raises(ValueError, match="at least one equation"):
        sj.constraint(jck.ball.py_funcs[3], acceleration_errors=jck._ball_aerr)
    system, matter, bodies = _chain(1)
    with pytest.raises(TypeError, match="kernel must be made by simtk.jit.constraint"):
        Constraint.Jit(matter, jck.ball.py_funcs[3], [bodies[0]])
    with pytest.raises(TypeError, match=r"params\[1\] must be a number or a MobilizedBody"):
        Constraint.Jit(matter, jck.ball, [bodies[0], "x"])
    assert matter.get_num_constraints() == 0


def test_out_of_range_body_index_raises_naming_the_constraint():
    system, matter, bodies = _chain(2)
    c = Constraint.Jit(matter, jck.ball, [matter.ground, *TIP, 17, 0, -0.5, 0], name="bad_ball")
    state = system.realize_topology()
    with pytest.raises(JitKernelError, match=r"bad_ball.*kernel 'ball' failed.*IndexError.*out of range") as info:
        system.realize(state, Stage.Position)
    assert info.value.element is c


def test_nan_out_of_a_kernel_raises_naming_the_constraint():
    system, matter, bodies = _chain(1)
    Constraint.Jit(matter, jck.nan_coordinate, [0.0], name="nan_con")
    state = system.realize_topology()
    with pytest.raises(FloatingPointError, match=r"nan_con.*non-finite position errors"):
        system.realize(state, Stage.Position)


def test_a_failing_kernel_in_the_compiled_loop_is_reported_by_python_naming_it():
    """A kernel that starts failing at t = 0.005: the compiled loop refuses the step, and Python's
    evaluation of the same kernel raises the error naming the constraint."""
    system, matter, bodies = _chain()
    Constraint.Jit(matter, jck.ball_until, [matter.ground, *TIP, bodies[2], 0, -0.5, 0, 0.005], name="fragile")
    state = system.realize_topology()
    matter.upd_q(state)[:] = [0.3, -0.5, 0.4]
    integ = SemiExplicitEulerIntegrator(system, 1e-3)
    integ.initialize(state)
    path = integ.describe_fast_path()
    assert path.startswith("compiled time loop") and "calls Python" not in path, path
    with pytest.raises(JitKernelError, match=r"fragile.*ValueError: the test kernel fails after t_fail"):
        integ.step_to(0.01)


def test_a_kernel_handed_through_a_capsule_runs_as_the_numba_one():
    """A C function pointer in a PyCapsule (as a Cython cdef function is handed over) is the same kernel;
    a capsule of another name is refused."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    address = jck.ball._jit_address()
    kernel = ConstraintKernel.from_capsule(new(address, b"simtk.jit.constraint_kernel", None), mp=3,
                                           name="capsule ball")
    with pytest.raises(TypeError, match="PyCapsule named 'simtk.jit.constraint_kernel'"):
        ConstraintKernel.from_capsule(new(address, b"simtk.jit.force_kernel", None), mp=3)
    out = []
    for k in (jck.ball, kernel):
        system, matter, bodies = _chain()
        c = Constraint.Jit(matter, k, [matter.ground, *TIP, bodies[2], 0, -0.5, 0])
        s = _at(system, matter, [0.3, -0.5, 0.4], [0.2, -0.1, 0.3])
        out.append(np.concatenate([matter.get_udot(s), c.get_multipliers(s)]))
    assert np.array_equal(out[0], out[1])
    with pytest.raises(TypeError, match="capsule cannot be pickled"):
        pickle.dumps(kernel)


def test_a_model_with_a_kernel_constraint_pickles_and_runs_the_same():
    """The System (its kernel found again by its module and name) and a realized State pickle; the copy's
    accelerations are the original's."""
    system, matter, c = four_bar(True)
    s = _at(system, matter, [0.3, -0.5, 0.4], [0.2, -0.1, 0.3])
    system2, s2 = pickle.loads(pickle.dumps((system, s)))
    m2 = system2.get_matter_subsystem()
    assert m2.get_constraint(0).get_kernel() is jck.ball
    system2.realize(s2, Stage.Acceleration)
    fresh = _at(system2, m2, [0.3, -0.5, 0.4], [0.2, -0.1, 0.3])
    assert np.array_equal(m2.get_udot(fresh), matter.get_udot(s))
    assert np.array_equal(m2.get_udot(s2), matter.get_udot(s))


# ---------------------------------------------------------------------------------------------- model files
def test_model_file_round_trip_by_registered_name():
    system, matter, c = four_bar(True)
    text = model_to_text(system)
    assert 'kernel="jit_tests.ball"' in text and "Constraint.Jit" in text
    loaded = model_from_text(text)
    lm = loaded.get_matter_subsystem()
    lc = lm.get_constraint(0)
    assert isinstance(lc, Constraint.Jit) and lc.get_kernel() is jck.ball
    assert np.array_equal(lc.get_params(), c.get_params())
    q, u = [0.3, -0.5, 0.4], [0.2, -0.1, 0.3]
    a, b = _at(system, matter, q, u), _at(loaded, lm, q, u)
    assert np.array_equal(matter.get_udot(a), lm.get_udot(b))  # the same model: the same numbers
    assert np.array_equal(c.get_multipliers(a), lc.get_multipliers(b))


def test_model_file_refuses_an_unregistered_kernel_naming_it():
    from simtk.io import ModelFileError

    unregistered = jck.ball_wrong_forces  # (a kernel no test registers; compiled once per process)

    system, matter, bodies = _chain(1)
    Constraint.Jit(matter, unregistered, [matter.ground, 0, -0.5, 0, bodies[0], 0, 0, 0], name="loose")
    with pytest.raises(ModelFileError, match="loose.*not registered"):
        model_to_text(system)
