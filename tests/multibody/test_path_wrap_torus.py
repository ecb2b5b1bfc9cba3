"""A geometry path over a WrapTorus, checked without OpenSim (tests/crosscheck/test_opensim_wrap_torus.py
compares with OpenSim 4.6): a path in a plane through the torus's axis (there the tube's cross-section
is a circle in the path's plane, and OpenSim's stand-in cylinder is that circle's cylinder whatever its
Levenberg-Marquardt iteration stops at) has the planar tangents-and-arc length round the hole's side of
the cross-section it crosses, and the straight length where it passes through the hole clear of the
tube; there its lengthening speed and generalized forces are the derivatives of that length, and a
spring over it keeps its energy in the compiled time loop. Bad radii are refused naming the torus.
"""
from __future__ import annotations

import numpy as np
import pytest

from simtk import (
    Force,
    GeneralForceSubsystem,
    GeometryPath,
    MobilizedBody,
    MultibodySystem,
    PathPoint,
    PathWrap,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    WrapTorus,
)
from simtk.spatial import Body, MassProperties, Rotation, Transform

EPS = np.finfo(float).eps
RI, RO = 0.01, 0.04            # tube radius, radius of the tube's centre circle
CENTRE = np.array([0.0, -0.4, 0.0])
A, B = [0.045, -0.3, 0.0], [-0.03, -0.15, 0.0]


def _arm():
    """Shoulder and elbow pins about z; a torus at the elbow fixed in the upper arm with its axis along
    the arm's x, so the arm's xy plane (the path's) holds the axis; the path from upper arm to forearm."""
    system = MultibodySystem("torus")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.2, 0.0], np.diag([0.02, 0.01, 0.02])))
    b1 = MobilizedBody.Pin(matter.ground, Transform(), mp, Transform(p=[0.0, 0.2, 0.0]))
    b2 = MobilizedBody.Pin(b1, Transform(p=[0.0, -0.4, 0.0]), mp, Transform())
    torus = WrapTorus(b1, Transform(Rotation.from_body_fixed_xyz([0.0, np.pi / 2, 0.0]), CENTRE), RI, RO,
                      name="ring")
    path = GeometryPath(matter, [PathPoint(b1, A), PathPoint(b2, B)], name="p", wraps=[PathWrap(torus)])
    system.torus_forces = forces   # (for the spring of the time-loop test)
    return system, matter, (b1, b2), path


def _state(system, matter, q, u):
    state = system.realize_topology()
    system.realize_model(state)
    matter.upd_q(state)[:] = q
    matter.upd_u(state)[:] = u
    system.realize(state, Stage.Velocity)
    return state


def _segment_distance(p1, p2, c):
    d = p2[:2] - p1[:2]
    t = np.clip((c[:2] - p1[:2]) @ d / (d @ d), 0.0, 1.0)
    return float(np.linalg.norm(p1[:2] + t * d - c[:2]))


def _hole_side_length(p1, p2, c, hole):
    """In the plane: tangent from p1 to the circle (c, RI), the arc round it, tangent to p2, going round
    whichever way puts the arc's middle on the side facing ``hole`` (a unit vector from c)."""
    a, b = p1[:2] - c[:2], p2[:2] - c[:2]
    da, db = np.linalg.norm(a), np.linalg.norm(b)
    a1, a2 = np.arctan2(a[1], a[0]), np.arctan2(b[1], b[0])
    t1, t2 = np.arccos(RI / da), np.arccos(RI / db)
    best = None
    for s in (1.0, -1.0):   # anticlockwise, clockwise round c
        T1, T2 = a1 + s * t1, a2 - s * t2
        arc = (s * (T2 - T1)) % (2 * np.pi)
        mid = T1 + s * arc / 2
        facing = np.cos(mid) * hole[0] + np.sin(mid) * hole[1]
        L = np.sqrt(da * da - RI * RI) + np.sqrt(db * db - RI * RI) + RI * arc
        if best is None or facing > best[0]:
            best = (facing, L)
    return best[1]


def _cases():
    """(q1, what the geometry says: 'crosses' with the section's centre, or 'clear')."""
    system, matter, (b1, b2), path = _arm()
    out = []
    for q1 in np.linspace(-1.5, 1.5, 61):
        state = _state(system, matter, [0.2, q1], [0.0, 0.0])
        p1 = b1.find_station_location_in_ground(state, A)
        p2 = b2.find_station_location_in_ground(state, B)
        o = b1.find_station_location_in_ground(state, CENTRE)
        sections = [b1.find_station_location_in_ground(state, CENTRE + [0.0, s * RO, 0.0]) for s in (1.0, -1.0)]
        hit = [c for c in sections if _segment_distance(p1, p2, c) < RI]
        # where the segment crosses the torus's plane (the arm's x = 0 line through the sections)
        n = sections[0][:2] - sections[1][:2]
        n = np.array([-n[1], n[0]])
        s = (o[:2] - p1[:2]) @ n / ((p2[:2] - p1[:2]) @ n)
        x = p1[:2] + s * (p2[:2] - p1[:2]) - o[:2]
        if len(hit) == 1:
            out.append((q1, "crosses", hit[0], p1, p2, o))
        elif not hit and 0.0 < s < 1.0 and np.linalg.norm(x) < RO - RI:
            out.append((q1, "clear", None, p1, p2, o))
    return out


def test_path_in_a_plane_through_the_axis_wraps_the_hole_side_of_the_section_it_crosses():
    system, matter, _, path = _arm()
    kinds = {"crosses": 0, "clear": 0}
    for q1, kind, c, p1, p2, o in _cases():
        state = _state(system, matter, [0.2, q1], [0.0, 0.0])
        if kind == "crosses":
            hole = (o - c)[:2] / np.linalg.norm((o - c)[:2])
            want = _hole_side_length(p1, p2, c, hole)
        else:
            want = float(np.linalg.norm(p2 - p1))
        # (a few roundings of lengths ~0.3 m)
        assert path.get_length(state) == pytest.approx(want, abs=1e3 * EPS), (q1, kind)
        kinds[kind] += 1
    assert kinds["crosses"] >= 8 and kinds["clear"] >= 3, kinds


def test_lengthening_speed_and_generalized_forces_are_the_derivatives_of_the_length():
    """Where the wrap is the planar tangents-and-arc (or no wrap), the path is tangent to the tube, so
    OpenSim's speed and forces from the tangent points as stations of the torus's body are the exact
    derivatives; central differences of h = 1e-6 err by ~L''' h^2 and ~eps L / h."""
    system, matter, _, path = _arm()
    rng = np.random.default_rng(5)
    T = 20.0
    h = 1e-6
    tol = 1e-8
    checked = 0
    for q1, kind, *_ in _cases():
        q = np.array([0.2, q1])
        u = rng.normal(size=2)
        state = _state(system, matter, q, u)
        fd = (path.get_length(_state(system, matter, q + h * u, u))
              - path.get_length(_state(system, matter, q - h * u, u))) / (2 * h)
        assert path.get_lengthening_speed(state) == pytest.approx(fd, abs=tol * (1 + np.abs(u).max())), (q1, kind)
        f = path.calc_generalized_forces(state, T)
        for i in range(2):
            dq = np.zeros(2)
            dq[i] = h
            dL = (path.get_length(_state(system, matter, q + dq, u))
                  - path.get_length(_state(system, matter, q - dq, u))) / (2 * h)
            assert f[i] == pytest.approx(-T * dL, abs=T * tol), (q1, kind, i)
        checked += 1
    assert checked >= 11


@pytest.mark.parametrize("q1,u1", [(-0.5, 0.3), (-0.3, 0.0)])
def test_spring_over_the_torus_runs_in_the_compiled_loop_and_keeps_its_energy(q1, u1):
    """A conservative spring over a torus fixed in a body: KE + PE is conserved while the arm swings
    from one wrap to another (-0.5: round a cross-section, then forced round the hole's side) or from
    no wrap into one (-0.3); Runge-Kutta-Merson at 1e-10 drifts ~1e-11 J here, the bound is 1e-8 of
    the energy."""
    system, matter, _, path = _arm()
    Force.PathSpring(system.torus_forces, path, 300.0, 0.2, 0.0)
    state = _state(system, matter, [0.0, q1], [0.0, u1])
    e0 = system.calc_energy(state)
    wrapped0 = len(path.get_path_points(state)) > 2
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-10)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    assert "compiled time loop" in integ.describe_fast_path()
    assert "calls Python" not in integ.describe_fast_path()
    changed = False
    for t in np.linspace(0.01, 0.3, 30):
        ts.step_to(t)
        st = integ.get_state()
        changed |= (len(path.get_path_points(st)) > 2) != wrapped0 or abs(st.get_q()[1] - q1) > 0.25
        assert system.calc_energy(st) == pytest.approx(e0, abs=1e-8 * (1 + abs(e0)))
    assert changed


def test_bad_torus_radii_are_refused_naming_it():
    system, matter, (b1, b2), _ = _arm()
    with pytest.raises(ValueError, match="WrapTorus 't'.*inner_radius"):
        WrapTorus(b1, Transform(), 0.0, 0.05, name="t")
    with pytest.raises(ValueError, match="WrapTorus 't'.*outer_radius"):
        WrapTorus(b1, Transform(), 0.01, -0.05, name="t")
    with pytest.raises(ValueError, match="WrapTorus 't'.*outer_radius"):
        WrapTorus(b1, Transform(), 0.01, float("nan"), name="t")
    with pytest.raises(ValueError, match="WrapTorus 't'.*less than outer_radius"):
        WrapTorus(b1, Transform(), 0.05, 0.05, name="t")
    with pytest.raises(ValueError, match="WrapTorus 't'.*less than outer_radius"):
        WrapTorus(b1, Transform(), 0.06, 0.05, name="t")
    with pytest.raises(ValueError, match="WrapTorus 't'.*quadrant"):
        WrapTorus(b1, Transform(), 0.01, 0.05, "+w", name="t")
    with pytest.raises(TypeError, match="WrapTorus 't'.*inner_radius"):
        WrapTorus(b1, Transform(), "thin", 0.05, name="t")


def test_compiled_set_refuses_a_torus_row_with_its_radii_swapped():
    """The compiled set checks its rows itself (a row can reach it without the Python class)."""
    from simtk.multibody.forces import paths as _paths

    system, matter, _, path = _arm()
    state = _state(system, matter, [0.2, -0.5], [0.0, 0.0])
    K = _paths._K
    law = (float(K.PATH_CODES["tension"]), 0.0, 0.0, 0.0)
    bodies, stations, params = path._pack_rows(state, 0, law, _paths.FunctionTableBuilder(), path)

    def make(rows):
        return K.ForceSet(K.FORCE_KINDS["GeometryPath"][0], np.array(bodies, dtype=np.int64).reshape(-1, 1),
                          np.array(stations).reshape(-1, 1, 3), np.array(rows).reshape(-1, 13),
                          np.zeros((len(rows), 2), dtype=np.int64), None)

    make(params)  # as packed: accepted
    w = [k for k, row in enumerate(params) if row[1] == K.PATH_CODES["wrap_torus"]][0]
    bad = [list(row) for row in params]
    bad[w][6], bad[w][7] = bad[w][7], bad[w][6]
    with pytest.raises(ValueError, match=f"row {w} .*torus's tube radius"):
        make(bad)
