"""Paths wrapping over a WrapTorus, read by ``load_osim``, against OpenSim 4.6: at random poses (the
wrap active at some, inactive at others) lengths to 1e-9 m, lengthening speeds to 1e-9 m/s and moment
arms (OpenSim's ``computeMomentArm``) to 1e-8 m, for tori of several sizes and placements (the path
threading the hole at an angle, or in a plane through the torus's axis) and quadrants; the model's
text round trip keeps the torus.

OpenSim's WrapTorus finds the point of the path's line nearest the tube's centre circle with MINPACK's
lmdif stopped at ftol = xtol = 1e-4 and a fixed finite-difference step of 1e-5; the stand-in cylinder's
axis, and so the length, moves with where it stops. simtk repeats that iteration step for step, so the
1e-9 tolerances hold with room: the measured worst differences are 8e-16 m in length, 2.4e-15 m/s in
speed and 3.9e-15 m in moment arm (a few roundings). (Over
300 random lines through a torus, lmdif's stopping point was up to 5e-9 m along the line from the exact
zero of its residual, which moved the wrapped length by up to 8e-12 m.)
(A path point exactly in the torus's plane is a tie in OpenSim's cylinder algorithm, decided by
rounding; the models here keep their points off it.)
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.removeFileSink()

from test_opensim_wrap import ARM_TOL, LEN_TOL, compare, v3, write  # noqa: E402

from simtk import Stage, WrapTorus  # noqa: E402
from simtk.io import load_osim  # noqa: E402


def torus_model(centre, rotation, inner, outer, quadrant="all") -> "osim.Model":
    """Two pins (an elbow-like q1 on b0); a torus at the elbow on b0; a PathActuator over it from b0
    to b1 (three points: two segments OpenSim weighs) and a PathSpring (two points)."""
    m = osim.Model()
    m.setName("torus")
    b0 = osim.Body("b0", 1.0, v3(0, -0.2, 0), osim.Inertia(0.02, 0.01, 0.03))
    b1 = osim.Body("b1", 1.0, v3(0, -0.2, 0), osim.Inertia(0.02, 0.01, 0.03))
    m.addBody(b0)
    m.addBody(b1)
    j0 = osim.PinJoint("j0", m.getGround(), v3(0, 0, 0), v3(0, 0, 0), b0, v3(0, 0.2, 0), v3(0, 0, 0))
    j0.updCoordinate().setName("q0")
    j1 = osim.PinJoint("j1", b0, v3(0, -0.4, 0), v3(0, 0, 0.1), b1, v3(0, 0, 0), v3(0, 0, 0))
    j1.updCoordinate().setName("q1")
    m.addJoint(j0)
    m.addJoint(j1)
    w = osim.WrapTorus()
    w.setName("ring")
    w.set_inner_radius(inner)
    w.set_outer_radius(outer)
    w.set_translation(v3(*centre))
    w.set_xyz_body_rotation(v3(*rotation))
    w.set_quadrant(quadrant)
    b0.addWrapObject(w)
    act = osim.PathActuator()
    act.setName("act")
    act.setOptimalForce(10.0)
    act.addNewPathPoint("p0", b0, v3(0.06, -0.1, 0.01))
    act.addNewPathPoint("p1", b0, v3(0.05, -0.3, 0.002))
    act.addNewPathPoint("p2", b1, v3(0.05, -0.15, -0.01))
    act.updGeometryPath().addPathWrap(w)
    m.addForce(act)
    spring = osim.PathSpring("spring", 0.3, 100.0, 0.1)
    spring.updGeometryPath().appendNewPathPoint("s0", b0, v3(0.04, -0.2, 0.003))
    spring.updGeometryPath().appendNewPathPoint("s1", b1, v3(0.03, -0.1, 0.0))
    spring.updGeometryPath().addPathWrap(w)
    m.addForce(spring)
    return m


# (centre, xyz_body_rotation, inner_radius, outer_radius): the path through the hole at an angle, a
# fatter and a thinner torus tilted otherwise, and the torus's axis across the path's plane
TORI = {"threaded": ((0.05, -0.4, 0.0), (1.5708, 0.1, 0.05), 0.01, 0.04),
        "fat": ((0.02, -0.35, 0.01), (1.3, -0.2, 0.4), 0.02, 0.06),
        "thin": ((0.08, -0.42, 0.0), (1.7, 0.3, 0.0), 0.005, 0.03),
        "meridional": ((0.0, -0.4, 0.0), (0.0, 1.5708, 0.0), 0.01, 0.1)}


@pytest.mark.parametrize("torus", sorted(TORI))
@pytest.mark.parametrize("quadrant", ["all", "+x", "-y"])
def test_wrap_torus_against_opensim(tmp_path, torus, quadrant):
    path = write(torus_model(*TORI[torus], quadrant), tmp_path)
    om = osim.Model(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything is built
        m = load_osim(path)
    assert isinstance(m.force_elements["act"][0].get_geometry_path().wraps[0].wrap, WrapTorus)
    worst, wrapped, unwrapped = compare(om, m, ["act", "spring"], ["q0", "q1"], np.random.default_rng(12), 30)
    assert worst[0] <= LEN_TOL and worst[1] <= LEN_TOL and worst[2] <= ARM_TOL, worst
    assert wrapped and unwrapped, (wrapped, unwrapped)


def test_torus_with_bad_radii_in_the_file_is_refused_naming_it(tmp_path):
    from simtk.io.osim import OsimFileError

    model = torus_model(*TORI["threaded"])
    text = write(model, tmp_path).read_text()
    bad = text.replace("<outer_radius>0.040000000000000001</outer_radius>", "<outer_radius>0.005</outer_radius>")
    assert bad != text
    (tmp_path / "bad.osim").write_text(bad)
    with pytest.raises(OsimFileError, match="WrapTorus 'ring'.*inner < outer"):
        load_osim(tmp_path / "bad.osim")


def test_torus_round_trips_through_the_model_text(tmp_path):
    """The description's text and save_model's text (from the built components) rebuild the torus: the
    spring's length and generalized forces at random states are the same."""
    from simtk.io.model_file import model_from_text, model_to_text

    path = write(torus_model(*TORI["threaded"], "+x"), tmp_path)
    m = load_osim(path)
    spring = m.force_elements["spring"][0]
    rng = np.random.default_rng(9)
    for text in (m.description.to_text(), model_to_text(m.system)):
        assert "torus" in text
        again = model_from_text(text, "torus.simtk")
        st = m.initial_state()
        sb = again.realize_topology()
        again.realize_model(sb)
        other = next(f for f in again.get_component("/forces").get_child_components() if "spring" in f.get_name())
        wrapped = 0
        for _ in range(6):
            q = rng.uniform(-1.5, 1.5, st.get_nq())
            st.set_q(q)
            sb.set_q(q)
            m.system.realize(st, Stage.Position)
            again.realize(sb, Stage.Position)
            assert other.get_length(sb) == spring.get_length(st)
            assert np.array_equal(other.get_geometry_path().calc_generalized_forces(sb, 3.0),
                                  spring.get_geometry_path().calc_generalized_forces(st, 3.0))
            wrapped += len(spring.get_geometry_path().get_path_points(st)) > 2
        assert wrapped, wrapped
