"""Force.Jit: numba kernels run by the core (issue 31), checked against Python twins.

Each jitted element has a Force.Custom twin with the same math written through the MobilizedBody API
(jit_kernels.py): the forces, accelerations and trajectories of a random model with jitted elements
must match those of the same model with the twins to round-off; the batch rows must match single
calls; simtk.testing.check_force (finite differences of the energy kernel) must accept them.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

pytest.importorskip("numba")

import jit_kernels as jk  # noqa: E402

import simtk.jit as sj  # noqa: E402
from simtk import Stage  # noqa: E402
from simtk.common.errors import NonFiniteForceError  # noqa: E402
from simtk.math import RungeKutta3Integrator, SemiExplicitEulerIntegrator  # noqa: E402
from simtk.multibody import (  # noqa: E402
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.multibody.forces.jit_force import ForceKernel, JitKernelError  # noqa: E402
from simtk.spatial import Body, Inertia, MassProperties, Rotation, Transform  # noqa: E402
from simtk.testing import check_force  # noqa: E402
from tolerances import EPS, assert_close, scale_of  # noqa: E402

KINDS = ("Pin", "Universal", "Ball", "Slider", "Gimbal")


def _random_model(seed: int, twin: bool, n_bodies: int = 5, n_elements: int = 6, kinds: tuple = KINDS,
                  conservative: bool = False):
    """A random tree of ``n_bodies`` under gravity with random jitted elements (or their twins);
    ``conservative``: no damping and no forcing in time."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    bodies = [matter.ground]
    for i in range(n_bodies):
        parent = bodies[int(rng.integers(0, len(bodies)))]
        mass = MassProperties.from_central_inertia(float(rng.uniform(0.5, 2)), rng.uniform(-0.2, 0.2, 3),
                                                   Inertia(rng.uniform(0.05, 0.1, 3)))
        kind = kinds[int(rng.integers(0, len(kinds)))]
        X_PF = Transform(Rotation.from_body_fixed_xyz(rng.uniform(-1, 1, 3)), rng.uniform(-0.5, 0.5, 3))
        bodies.append(getattr(MobilizedBody, kind)(parent, X_PF, Body.Rigid(mass), Transform(
            rng.uniform(-0.3, 0.3, 3)), name=f"b{i}"))
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    ranges = [(matter._q_range(state, b._index)[0], matter._u_range(state, b._index)[0]) for b in bodies]
    elements = []
    for _ in range(n_elements):
        kind = ("spring_damper", "mobility", "torque_damper")[int(rng.integers(0, 3))]
        if kind == "spring_damper":
            b1, b2 = rng.choice(len(bodies), 2, replace=False)
            params = [b1, *rng.uniform(-0.3, 0.3, 3), b2, *rng.uniform(-0.3, 0.3, 3),
                      rng.uniform(5, 50), rng.uniform(0, 0.5), 0.0 if conservative else rng.uniform(0, 2)]
        elif kind == "mobility":
            q0, u0 = ranges[int(rng.integers(1, len(bodies)))]
            params = [q0, u0, rng.uniform(1, 10), rng.uniform(-0.5, 0.5), 0.0 if conservative else rng.uniform(-2, 2),
                      rng.uniform(1, 5)]
        else:
            params = [int(rng.integers(1, len(bodies))), *rng.uniform(-1, 1, 3), rng.uniform(0, 1)]
        kernel, Twin = jk.KERNELS[kind]
        elements.append(Force.Custom(forces, Twin(matter, params)) if twin else
                        Force.Jit(forces, matter, kernel, params))
    state = system.realize_topology()
    matter.upd_q(state)[:] = rng.uniform(-0.5, 0.5, len(matter.get_q(state)))
    matter.upd_u(state)[:] = rng.uniform(-1, 1, len(matter.get_u(state)))
    state.set_time(float(rng.uniform(0, 1)))
    system.realize(state, Stage.Position)
    matter.normalize_quaternions(state) if hasattr(matter, "normalize_quaternions") else None
    return system, matter, forces, elements, state


def _pair(seed: int, **kw):
    jit = _random_model(seed, False, **kw)
    py = _random_model(seed, True, **kw)
    py[4].set_q(jit[4].get_q().copy())
    return jit, py


@pytest.mark.parametrize("seed", range(6))
def test_forces_energy_and_udot_match_python_twins(seed):
    """Each jitted element's forces and energy equal its Python twin's, and so do the system's udot."""
    (js, jm, _, jel, jst), (ps, pm, _, pel, pst) = _pair(seed)
    for s, sys_ in ((jst, js), (pst, ps)):
        sys_.realize(s, Stage.Acceleration)
    for je, pe in zip(jel, pel):
        jF, jf = je.calc_force_contribution(jst)
        pF, pf = pe.calc_force_contribution(pst)
        scale = scale_of(jF, pF, jf, pf, floor=1.0)
        assert_close(jF, pF, margin=256, scale=scale, what=f"{je!r} body forces")
        assert_close(jf, pf, margin=256, scale=scale, what=f"{je!r} mobility forces")
        assert_close(je.calc_potential_energy_contribution(jst), pe.calc_potential_energy_contribution(pst),
                     margin=256, scale=scale, what=f"{je!r} energy")
    ju, pu = jm.get_udot(jst), pm.get_udot(pst)
    assert_close(ju, pu, margin=4096, scale=scale_of(ju, pu, floor=1.0), what="udot")
    assert_close(js.calc_potential_energy(jst), ps.calc_potential_energy(pst), margin=1024,
                 scale=max(1.0, abs(ps.calc_potential_energy(pst))), what="system potential energy")


@pytest.mark.parametrize("seed", range(3))
def test_trajectory_matches_python_twin_and_uses_the_compiled_loop(seed):
    """Fixed steps of the jitted model (taken by the compiled time loop) follow the twin's (taken in
    Python) to round-off over a short horizon."""
    (js, jm, _, _, jst), (ps, pm, _, _, pst) = _pair(seed)
    ends = []
    for sys_, st, compiled in ((js, jst, True), (ps, pst, False)):
        integ = SemiExplicitEulerIntegrator(sys_, 1e-3)
        integ.initialize(st)
        path = integ.describe_fast_path()
        assert path.startswith("compiled time loop") and ("calls Python" not in path) == compiled, path
        integ.step_to(st.get_time() + 0.1)
        ends.append(integ.get_state().get_y().copy())
    assert_close(ends[0], ends[1], margin=1e5, scale=scale_of(*ends, floor=1.0), what="y(0.1)")


def test_adaptive_integration_conserves_energy_with_springs_only():
    """Springs (no damping) and gravity: kinetic + potential energy (the energy kernels') stays put."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    mass = MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.01, 0.02]))
    a = MobilizedBody.Ball(matter.ground, Transform(), Body.Rigid(mass), Transform([0, 0.5, 0]))
    b = MobilizedBody.Pin(a, Transform([0, -0.5, 0]), Body.Rigid(mass), Transform())
    Force.Jit(forces, matter, jk.spring_damper, [a, 0.1, 0, 0, b, 0, -0.4, 0.1, 30.0, 0.2, 0.0])
    Force.Jit(forces, matter, jk.spring_damper, [matter.ground, 0.5, 0.3, 0, b, 0, -0.2, 0, 20.0, 0.5, 0.0])
    state = system.realize_topology()
    matter.upd_u(state)[:] = [0.5, -1.0, 0.3, 2.0]
    integ = RungeKutta3Integrator(system)
    integ.set_accuracy(1e-9)
    integ.initialize(state)

    def energy(s):
        system.realize(s, Stage.Dynamics)
        return system.calc_kinetic_energy(s) + system.calc_potential_energy(s)

    e0 = energy(integ.get_state())
    integ.step_to(1.0)
    assert abs(energy(integ.get_state()) - e0) < 1e-6 * max(1.0, abs(e0))


def test_check_force_accepts_jitted_forces():
    """check_force: each conservative jitted element's generalized force is -dPE/dq of its energy kernel."""
    # (no quaternions: a mobility spring on a quaternion component is not a potential in u's terms)
    system, matter, forces, elements, state = _random_model(11, False, n_elements=8, conservative=True,
                                                            kinds=("Pin", "Slider", "Universal", "Gimbal"))
    checked = 0
    for e in elements:
        if e.get_kernel().has_energy:
            check_force(e, state, assert_ok=True, rtol=1e-5, atol=1e-6)
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_rows_match_single_calls(threads):
    """calc_udot_batch and step_batch rows equal the State API's udot and single-row batches."""
    system, matter, forces, elements, state = _random_model(3, False)
    rng = np.random.default_rng(0)
    K = 5
    Q = np.tile(matter.get_q(state), (K, 1)) + rng.uniform(-0.2, 0.2, (K, len(matter.get_q(state))))
    U = rng.uniform(-1, 1, (K, len(matter.get_u(state))))
    rows = matter.calc_udot_batch(Q, U, state=state, threads=threads)
    for k in range(K):
        s = state.copy()
        s.set_q(Q[k])
        s.set_u(U[k])
        system.realize(s, Stage.Acceleration)
        udot = matter.get_udot(s)
        assert_close(rows[k], udot, margin=4096, scale=scale_of(udot, floor=1.0), what=f"row {k}")
    q1, u1 = matter.step_batch(Q, U, h=1e-3, n_steps=10, state=state, threads=threads)
    for k in range(K):
        qk, uk = matter.step_batch(Q[k:k + 1], U[k:k + 1], h=1e-3, n_steps=10, state=state, threads=1)
        assert np.array_equal(qk[0], q1[k]) and np.array_equal(uk[0], u1[k])


def test_position_only_elements_are_cached_while_u_changes():
    """A kernel declared position-only is not run again when only u changes (it reads u here to show
    it); the same kernel declared velocity-dependent is."""
    @sj.force
    def reads_u(ctx, params, body_forces, mobility_forces):
        mobility_forces[0] += ctx.u[0]

    results = []
    for position_only in (True, False):
        system = MultibodySystem()
        matter = SimbodyMatterSubsystem(system)
        forces = GeneralForceSubsystem(system)
        MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                          Transform([0, 1, 0]))
        Force.Jit(forces, matter, reads_u, [], depends_only_on_positions=position_only)
        state = system.realize_topology()
        state.set_u([1.0])
        system.realize(state, Stage.Acceleration)
        state.set_u([3.0])
        system.realize(state, Stage.Acceleration)
        results.append(matter.get_udot(state)[0])
    # udot = f with unit inertia about the axis... only the ratio matters: cached force 1, fresh 3
    assert results[1] == pytest.approx(3 * results[0], rel=16 * EPS)


# --------------------------------------------------------------------------------------------- errors
def _one_pin():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    body = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                             Transform([0, 1, 0]), name="arm")
    return system, matter, forces, body


def test_a_nan_from_a_kernel_names_the_element():
    @sj.force
    def bad(ctx, params, body_forces, mobility_forces):
        mobility_forces[0] += np.nan if ctx.q[0] > 0.5 else 0.0

    system, matter, forces, body = _one_pin()
    Force.Jit(forces, matter, jk.mobility, [0, 0, 1.0, 0.0, 0.0, 1.0])
    e = Force.Jit(forces, matter, bad, [])
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)  # finite at q = 0
    state.set_q([1.0])
    with pytest.raises(NonFiniteForceError, match="Force.Jit #1") as info:
        system.realize(state, Stage.Acceleration)
    assert info.value.element is e
    with pytest.raises(NonFiniteForceError, match="Force.Jit #1"):
        matter.calc_udot_batch(np.array([[1.0]]), np.array([[0.0]]), state=state)


def test_an_out_of_range_body_index_names_the_element_and_the_index_error():
    system, matter, forces, body = _one_pin()
    e = Force.Jit(forces, matter, jk.torque_damper, [7, 1.0, 0, 0, 0.1])
    state = system.realize_topology()
    with pytest.raises(JitKernelError, match=r"Force.Jit #0.*torque_damper.*IndexError") as info:
        system.realize(state, Stage.Acceleration)
    assert info.value.element is e

    @sj.force
    def writes_past_the_end(ctx, params, body_forces, mobility_forces):
        body_forces[int(params[0]), 1, 0] += 1.0  # no helper: the bounds check catches it

    system, matter, forces, body = _one_pin()
    Force.Jit(forces, matter, writes_past_the_end, [5])
    state = system.realize_topology()
    with pytest.raises(JitKernelError, match="IndexError"):
        system.realize(state, Stage.Acceleration)


def test_a_kernel_numba_cannot_compile_is_refused_before_anything_is_added():
    @sj.force
    def uncompilable(ctx, params, body_forces, mobility_forces):
        mobility_forces[0] += {"a": object()}["a"]  # no object mode in a kernel

    system, matter, forces, body = _one_pin()
    with pytest.raises(TypeError, match="uncompilable.*cannot be compiled"):
        Force.Jit(forces, matter, uncompilable, [])
    assert forces.get_num_forces() == 0


def test_wrong_signatures_and_arguments_are_refused():
    with pytest.raises(TypeError, match=r"must take exactly \(ctx, params, body_forces, mobility_forces\)"):
        sj.force(lambda ctx, params: None)
    with pytest.raises(TypeError, match=r"potential_energy.*must take exactly \(ctx, params\)"):
        sj.force(potential_energy=lambda ctx: 0.0)(jk.spring_damper.py_func)
    system, matter, forces, body = _one_pin()
    with pytest.raises(TypeError, match="kernel must be made by"):
        Force.Jit(forces, matter, jk.spring_damper.py_func, [])
    with pytest.raises(ValueError, match=r"params\[1\] must be finite"):
        Force.Jit(forces, matter, jk.mobility, [0, np.inf])
    with pytest.raises(TypeError, match=r"params\[0\] must be a number or a MobilizedBody"):
        Force.Jit(forces, matter, jk.mobility, ["x"])
    assert forces.get_num_forces() == 0


def test_a_kernel_handed_through_a_capsule_runs_as_the_numba_one():
    """A C function pointer in a PyCapsule (as a Cython cdef function is handed over) is the same kernel."""
    add, energy = jk.mobility._jit_addresses()
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    kernel = ForceKernel.from_capsule(new(add, b"simtk.jit.force_kernel", None),
                                      new(energy, b"simtk.jit.energy_kernel", None), name="capsule mobility")
    with pytest.raises(TypeError, match="PyCapsule named 'simtk.jit.force_kernel'"):
        ForceKernel.from_capsule(new(add, b"other", None))
    out = []
    for k in (jk.mobility, kernel):
        system, matter, forces, body = _one_pin()
        e = Force.Jit(forces, matter, k, [0, 0, 3.0, 0.2, 1.5, 2.0])
        state = system.realize_topology()
        state.set_q([0.7])
        state.set_time(0.3)
        system.realize(state, Stage.Acceleration)
        out.append((matter.get_udot(state)[0], e.calc_potential_energy_contribution(state)))
    assert out[0] == out[1]
    assert out[0][1] == pytest.approx(0.5 * 3.0 * 0.5 ** 2, rel=16 * EPS)
