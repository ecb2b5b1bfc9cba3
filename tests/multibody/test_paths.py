"""Geometry paths (Force.PathSpring, Force.PathActuator): their length, lengthening speed, moment arms
and forces, checked by finite differences, virtual work, energy conservation and against OpenSim 4.6.

Laws checked:
- Ldot = dL/dt: a central difference of L along the motion q(t) = q + t qdot;
- the generalized forces of a tension T along the path are -T dL/dq (virtual work), each column by a
  central difference, moving points' gearing forces included;
- a path spring without dissipation conserves KE + PE in a compiled-loop simulation;
- bad input (fewer than two points, a conditional range with lo > hi) is refused, naming the path.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    ConditionalPathPoint,
    Force,
    Function,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MovingPathPoint,
    MultibodySystem,
    PathPoint,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
)
from simtk.spatial import Body, MassProperties, Rotation, Transform

EPS = np.finfo(float).eps


def _chain():
    """Three bodies: a pin about z, a pin about a tilted axis, a slider; a path over all of them with a
    fixed, a conditional and a moving point."""
    system = MultibodySystem("paths")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.2, 0.0], np.diag([0.02, 0.01, 0.02])))
    b1 = MobilizedBody.Pin(matter.ground, Transform(), mp, Transform(p=[0.0, 0.3, 0.0]))
    b2 = MobilizedBody.Pin(b1, Transform(Rotation.from_body_fixed_xyz([0.3, 0.4, 0.0]), [0.0, -0.4, 0.0]), mp,
                           Transform(p=[0.0, 0.25, 0.0]))
    b3 = MobilizedBody.Slider(b2, Transform(p=[0.05, -0.3, 0.0]), mp, Transform())
    points = [
        PathPoint(matter.ground, [0.1, 0.2, 0.05]),
        PathPoint(b1, [0.05, -0.1, 0.02]),
        ConditionalPathPoint(b1, [0.08, -0.3, 0.0], (b2, 0), -0.5, 0.6),
        MovingPathPoint(b2, Function.Polynomial([0.02, 0.01, 0.04]), Function.Sinusoid(0.05, 2.0, 0.3), 0.01,
                        coordinate=(b2, 0)),
        PathPoint(b3, [-0.04, -0.1, 0.03]),
    ]
    path = GeometryPath(matter, points, name="chain")
    return system, matter, forces, (b1, b2, b3), path


def _state(system, matter, q, u):
    state = system.realize_topology()
    system.realize_model(state)
    matter.upd_q(state)[:] = q
    matter.upd_u(state)[:] = u
    system.realize(state, Stage.Velocity)
    return state


def test_lengthening_speed_is_the_rate_of_the_length():
    system, matter, forces, _, path = _chain()
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.uniform(-0.4, 0.4, 3)
        u = rng.normal(size=3)
        state = _state(system, matter, q, u)
        Ldot = path.get_lengthening_speed(state)
        h = 1e-5
        s2 = _state(system, matter, q + h * u, u)
        s1 = _state(system, matter, q - h * u, u)
        fd = (path.get_length(s2) - path.get_length(s1)) / (2 * h)
        # central difference: O(h^2) truncation with O(1) derivatives, plus eps/h round-off
        assert Ldot == pytest.approx(fd, abs=1e-8 * (1 + np.abs(u).max() ** 3))


@pytest.mark.parametrize("tension", [1.0, 37.5])
def test_generalized_forces_are_minus_tension_times_dL_dq(tension):
    system, matter, forces, _, path = _chain()
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = rng.uniform(-0.4, 0.4, 3)
        state = _state(system, matter, q, np.zeros(3))
        f = path.calc_generalized_forces(state, tension)
        h = 1e-6
        for i in range(3):
            dq = np.zeros(3)
            dq[i] = h
            fd = (path.get_length(_state(system, matter, q + dq, np.zeros(3)))
                  - path.get_length(_state(system, matter, q - dq, np.zeros(3)))) / (2 * h)
            assert f[i] == pytest.approx(-tension * fd, abs=tension * 1e-8)
        assert path.compute_moment_arm(state, (matter.get_mobilized_body(2), 0)) == pytest.approx(f[1] / tension,
                                                                                             abs=64 * EPS)


def test_conditional_point_leaves_the_path_outside_its_range():
    system, matter, forces, (b1, b2, b3), path = _chain()
    inside = _state(system, matter, [0.1, 0.0, 0.05], np.zeros(3))
    outside = _state(system, matter, [0.1, 0.9, 0.05], np.zeros(3))

    def direct(state, with_conditional):
        pts = [matter.ground.find_station_location_in_ground(state, [0.1, 0.2, 0.05]),
               b1.find_station_location_in_ground(state, [0.05, -0.1, 0.02])]
        if with_conditional:
            pts.append(b1.find_station_location_in_ground(state, [0.08, -0.3, 0.0]))
        x = b2.get_one_q(state, 0)
        pts.append(b2.find_station_location_in_ground(
            state, [0.02 * x * x + 0.01 * x + 0.04, 0.05 * np.sin(2.0 * x + 0.3), 0.01]))
        pts.append(b3.find_station_location_in_ground(state, [-0.04, -0.1, 0.03]))
        return sum(np.linalg.norm(b - a) for a, b in zip(pts[:-1], pts[1:]))

    for state, active in ((inside, True), (outside, False)):
        assert path.get_length(state) == pytest.approx(direct(state, active), rel=16 * EPS)


def test_path_spring_conserves_energy_in_the_compiled_loop():
    system, matter, forces, bodies, _ = _chain()
    b1, b2, b3 = bodies
    points = [PathPoint(matter.ground, [0.3, 0.2, 0.05]), PathPoint(b1, [0.05, -0.1, 0.02]),
              MovingPathPoint(b2, Function.Polynomial([0.02, 0.01, 0.04]), 0.0, 0.01, coordinate=(b2, 0)),
              PathPoint(b3, [-0.04, -0.1, 0.03])]
    spring = Force.PathSpring(forces, GeometryPath(matter, points, name="energy"), 400.0, 0.1, 0.0)
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    state = _state(system, matter, [0.3, -0.2, 0.1], [0.5, -1.0, 0.2])
    e0 = system.calc_energy(state) if hasattr(system, "calc_energy") else None
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    assert "compiled time loop" in integ.describe_fast_path()
    assert "calls Python" not in integ.describe_fast_path()  # the path kind is compiled, not a callback

    def energy(s):
        system.realize(s, Stage.Acceleration)
        return system.calc_kinetic_energy(s) + system.calc_potential_energy(s)

    e0 = energy(ts.get_state())
    assert spring.get_tension(ts.get_state()) > 0.0  # stretched: the law is at work
    ts.step_to(1.0)
    e1 = energy(ts.get_state())
    assert e1 == pytest.approx(e0, abs=1e-6 * (1 + abs(e0)))


def test_path_actuator_applies_optimal_force_times_its_control():
    system, matter, forces, _, path = _chain()
    act = Force.PathActuator(forces, path, 40.0)
    q = np.array([0.2, 0.1, -0.1])
    state = _state(system, matter, q, np.zeros(3))
    h = 1e-6
    dL = np.zeros(3)
    for i in range(3):
        dq = np.zeros(3)
        dq[i] = h
        dL[i] = (path.get_length(_state(system, matter, q + dq, np.zeros(3)))
                 - path.get_length(_state(system, matter, q - dq, np.zeros(3)))) / (2 * h)
    for control in (0.0, 0.7, -0.3):
        act.set_control(state, control)
        system.realize(state, Stage.Velocity)
        bf, mf = act.calc_force_contribution(state)
        gen = matter.multiply_by_system_jacobian_transpose(state, bf) + mf
        np.testing.assert_allclose(gen, -40.0 * control * dL, atol=40.0 * 1e-8)
        assert act.get_tension(state) == 40.0 * control
    with pytest.raises(ValueError, match="control"):
        act.set_control(state, float("nan"))
    assert act.get_control(state) == -0.3


def test_batch_kernels_evaluate_paths_as_the_state_does():
    """The batched udot of a model with a path spring (damped) and actuator equals each State's own."""
    system, matter, forces, _, path = _chain()
    Force.PathSpring(forces, path, 300.0, 0.2, 0.1)
    act = Force.PathActuator(forces, path, 25.0, control=0.4)
    rng = np.random.default_rng(7)
    q, u = rng.uniform(-0.5, 0.5, (4, 3)), rng.normal(size=(4, 3))
    state = _state(system, matter, q[0], u[0])
    assert act.get_control(state) == 0.4
    batch = matter.calc_udot_batch(q, u, state=state)
    for k in range(4):
        s = _state(system, matter, q[k], u[k])
        system.realize(s, Stage.Acceleration)
        udot = np.asarray(matter.get_udot(s))
        np.testing.assert_allclose(batch[k], udot, rtol=0, atol=1e3 * EPS * max(1.0, np.abs(udot).max()))


def test_a_packed_path_set_pickles_with_its_functions():
    """A State's packed set travels to worker processes by pickle: the copy gives the same forces."""
    import pickle

    system, matter, forces, _, path = _chain()
    spring = Force.PathSpring(forces, path, 300.0, 0.2, 0.1)
    state = _state(system, matter, [0.2, 0.1, -0.1], [0.3, -0.2, 0.5])
    packed = type(spring)._pack([spring], matter, state)
    copy = pickle.loads(pickle.dumps(packed.fs))
    assert copy.functions is not None and len(copy.functions) == len(packed.fs.functions)
    ws = matter._at(state, Stage.Velocity, "test").ws
    out = []
    for fs in (packed.fs, copy):
        bf, mf = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(3)
        assert fs.add(ws, bf, mf) == -1
        out.append((bf, mf))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert np.abs(out[0][1]).max() > 0.0


def test_bad_paths_are_refused_naming_the_path():
    system, matter, forces, (b1, b2, b3), _ = _chain()
    with pytest.raises(ValueError, match="'short'.*at least two points"):
        GeometryPath(matter, [PathPoint(b1, [0, 0, 0])], name="short")
    with pytest.raises(ValueError, match="'backwards'.*point 1.*lo > hi"):
        GeometryPath(matter, [PathPoint(b1, [0, 0, 0]), ConditionalPathPoint(b2, [0, 0, 0], (b2, 0), 0.5, 0.1),
                              PathPoint(b3, [0, 0, 0])], name="backwards")
    other = MultibodySystem("other")
    om = SimbodyMatterSubsystem(other)
    ob = MobilizedBody.Pin(om.ground, Transform(), Body.Rigid(MassProperties.from_central_inertia(1.0, [0, 0, 0], np.eye(3))),
                           Transform())
    with pytest.raises((ValueError, TypeError), match="'foreign'"):
        GeometryPath(matter, [PathPoint(b1, [0, 0, 0]), PathPoint(ob, [0, 0, 0])], name="foreign")


def test_core_refuses_path_rows_it_cannot_read_safely():
    """The compiled set checks what its kernel indexes: coordinates, function entries, point types."""
    from simtk import _core

    k = _core._k
    code = k.FORCE_KINDS["GeometryPath"][0]
    system, matter, forces, _, path = _chain()
    state = _state(system, matter, [0.0, 0.0, 0.0], np.zeros(3))
    ws = matter._at(state, Stage.Position, "test").ws

    def make(row, functions=None):
        rows = np.array([[0, 0, 0, 0, 0, 0, -1, -1, -1, 1, 1.0, 0, 0], row], dtype=float)
        return k.ForceSet(code, np.array([[1], [2]]), np.zeros((2, 1, 3)), rows, np.zeros((2, 2), dtype=np.int64),
                          functions)

    bf, mf = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(3)
    with pytest.raises(ValueError, match="do not fit"):
        make([0, 1, 7, 0, 0, 1, -1, -1, -1, 1, 1.0, 0, 0]).add(ws, bf, mf)  # q index 7 of 3
    with pytest.raises(ValueError, match="function entry"):
        make([0, 2, 0, 0, 0, 0, 3, -1, -1, 1, 1.0, 0, 0])  # no table
    with pytest.raises(ValueError, match="point type"):
        make([0, 9, 0, 0, 0, 0, -1, -1, -1, 1, 1.0, 0, 0])
    with pytest.raises(ValueError, match="consecutive"):
        make([-1, 0, 0, 0, 0, 0, -1, -1, -1, 1, 1.0, 0, 0])
    assert not bf.any() and not mf.any()  # nothing was applied by the refused sets
