"""ExpressionBasedCoordinateForce and ExpressionBasedPointToPointForce (issue 29) against OpenSim 4.6:
models written with OpenSim's API, accelerations compared at random states with speeds."""
from __future__ import annotations

import re

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from test_osim import REL, add_chain, compare_udot, new_model, v3, write  # noqa: E402

from simtk import Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from simtk.io.osim import OsimFileError  # noqa: E402


def test_expression_based_coordinate_force(tmp_path):
    rng = np.random.default_rng(3)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint, osim.SliderJoint, osim.PinJoint])
    for name, coord, text in [("spring", "jb1_coord_0", "-10*q-0.5*qdot*abs(qdot)"),
                              ("damper", "jb2_coord_0", "-3*sin(q)*exp(-square(qdot))+min(q,qdot)"),
                              ("defs", "jb3_coord_0", "-k*q^3-c*qdot; k=5; c=0.2+step(q)")]:
        f = osim.ExpressionBasedCoordinateForce(coord, text)
        f.setName(name)
        model.addForce(f)
    assert compare_udot(write(model, tmp_path), rng, n_states=5, spread=1.2) < REL


def test_expression_based_point_to_point_force(tmp_path):
    rng = np.random.default_rng(4)
    model = new_model()
    b1, b2 = add_chain(model, rng, [osim.BallJoint, osim.PinJoint])
    f = osim.ExpressionBasedPointToPointForce()
    f.setName("p2p")
    f.setBody1Name(b1.getName())
    f.setBody2Name(b2.getName())
    f.setPoint1(v3([0.1, 0.2, -0.1]))
    f.setPoint2(v3([-0.2, 0.1, 0.3]))
    f.setExpression("40*(d-0.3)+2*ddot")
    model.addForce(f)
    g = osim.ExpressionBasedPointToPointForce()
    g.setName("to_ground")
    g.setBody1Name("ground")
    g.setBody2Name(b2.getName())
    g.setPoint1(v3([0.5, 0.5, 0.0]))
    g.setPoint2(v3([0.0, 0.2, 0.1]))
    g.setExpression("-5*d^2+cube(ddot)")
    model.addForce(g)
    assert compare_udot(write(model, tmp_path), rng, n_states=5, spread=1.0) < REL


def test_bad_expressions_are_refused_naming_the_force(tmp_path):
    """A malformed expression names the force and its line; a value that is not finite (1/q at q = 0)
    raises naming the force when realized, rather than giving NaN accelerations."""
    rng = np.random.default_rng(5)
    model = new_model()
    add_chain(model, rng, [osim.PinJoint])
    f = osim.ExpressionBasedCoordinateForce("jb1_coord_0", "-q")
    f.setName("bad")
    model.addForce(f)
    path = write(model, tmp_path)
    base = path.read_text()
    path.write_text(re.sub(r"<expression>-q</expression>", "<expression>-q*(qdot</expression>", base))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "<expression>" in t)
    with pytest.raises(OsimFileError, match=rf":{line}: ExpressionBasedCoordinateForce 'bad': malformed "
                                            r"<expression>: expected '\)'"):
        load_osim(path)
    path.write_text(re.sub(r"<expression>-q</expression>", "<expression>1/q</expression>", base))
    m = load_osim(path)
    st = m.initial_state()
    m.set_coordinate_value(st, "jb1_coord_0", 0.0)
    with pytest.raises(ValueError, match=r"ExpressionBasedCoordinateForce 'bad': its expression '1/q' is inf at "
                                         r"q = 0.0"):
        m.system.realize(st, Stage.Acceleration)
