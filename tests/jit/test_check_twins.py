"""simtk.testing.check_twins: an element and its twin compared in one call.

Checked: a jitted spring against the built-in TwoPointLinearSpring it stands for (one System), and
jitted Pins against built-in Pins (two Systems built alike) pass; a twin that differs (another
stiffness, another station, another pitch) fails with the quantity named; elements of different
kinds, or Systems of different sizes, are refused.
"""
from __future__ import annotations

import pytest

pytest.importorskip("numba")

import jit_kernels as jk  # noqa: E402
import jit_mobilizer_kernels as jmk  # noqa: E402

from simtk import (  # noqa: E402
    Constraint,
    Force,
    GeneralForceSubsystem,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
)
from simtk.spatial import Body, Inertia, MassProperties, Transform  # noqa: E402
from simtk.testing import CheckFailure, check_twins  # noqa: E402

MASS = MassProperties.from_central_inertia(1.0, [0.1, -0.2, 0.0], Inertia([0.05, 0.07, 0.06]))


def _two_pins(jit: bool, screw_pitch: float | None = None):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    X = Transform(p=[0.0, -0.4, 0.1])
    if jit:
        a = MobilizedBody.Jit(matter.ground, Transform(), Body.Rigid(MASS), Transform(), jmk.pin, [])
        b = (MobilizedBody.Jit(a, X, Body.Rigid(MASS), Transform(), jmk.screw, [screw_pitch])
             if screw_pitch is not None else MobilizedBody.Jit(a, X, Body.Rigid(MASS), Transform(), jmk.pin, []))
    else:
        a = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MASS), Transform())
        b = (MobilizedBody.Screw(a, X, Body.Rigid(MASS), Transform(), 0.3) if screw_pitch is not None
             else MobilizedBody.Pin(a, X, Body.Rigid(MASS), Transform()))
    return system, matter, forces, a, b


def test_a_jitted_spring_and_its_builtin_twin_in_one_system():
    system, matter, forces, a, b = _two_pins(jit=False)
    jit = Force.Jit(forces, matter, jk.spring_damper, [a, 0.1, 0, 0, b, 0, -0.4, 0.1, 30.0, 0.2, 0.0])
    builtin = Force.TwoPointLinearSpring(forces, a, [0.1, 0, 0], b, [0, -0.4, 0.1], 30.0, 0.2)
    other = Force.TwoPointLinearSpring(forces, a, [0.1, 0, 0], b, [0, -0.4, 0.1], 31.0, 0.2)
    state = system.realize_topology()
    report = check_twins(jit, builtin, state, n_states=4, rtol=1e-12, atol=0.0)
    assert report.ok and len(report.comparisons) == 8, report
    bad = check_twins(jit, other, state, n_states=2)
    assert not bad.ok
    assert bad.failures[0].quantity in ("generalized force J^T F + f", "potential energy")
    with pytest.raises(CheckFailure, match="generalized force|potential energy"):
        check_twins(jit, other, state, n_states=2, assert_ok=True)


def test_jitted_pins_and_builtin_pins_in_two_systems():
    sys_j, m_j, _, a_j, b_j = _two_pins(jit=True)
    sys_b, m_b, _, a_b, b_b = _two_pins(jit=False)
    s_j, s_b = sys_j.realize_topology(), sys_b.realize_topology()
    report = check_twins(b_j, b_b, s_j, s_b, n_states=3, rtol=1e-12, atol=1e-14)
    assert report.ok, report
    assert {c.quantity for c in report.comparisons} == {"R_FM", "p_FM", "V_FM", "udot of the System"}
    # a screw of another pitch is no twin of the built-in screw of pitch 0.3
    sys_s, _, _, _, b_s = _two_pins(jit=True, screw_pitch=0.25)
    sys_t, _, _, _, b_t = _two_pins(jit=False, screw_pitch=0.3)
    bad = check_twins(b_s, b_t, sys_s.realize_topology(), sys_t.realize_topology(), n_states=2)
    assert not bad.ok and {c.quantity for c in bad.failures} >= {"p_FM"}


def test_constraint_twins_and_refusals():
    def system_with_ball(station):
        system, matter, forces, a, b = _two_pins(jit=False)
        c = Constraint.Ball(matter.ground, [0.0, -0.5, 0.1], b, station)
        return system, c
    s1, c1 = system_with_ball([0.0, 0.0, 0.0])
    s2, c2 = system_with_ball([0.0, 0.0, 0.0])
    s3, c3 = system_with_ball([0.0, 0.01, 0.0])
    st1, st2, st3 = s1.realize_topology(), s2.realize_topology(), s3.realize_topology()
    assert check_twins(c1, c2, st1, st2, n_states=2).ok
    bad = check_twins(c1, c3, st1, st3, n_states=2)
    assert not bad.ok and "position errors" in {c.quantity for c in bad.failures}
    with pytest.raises(TypeError, match="twins are of one kind"):
        check_twins(c1, s1.get_matter_subsystem().get_mobilized_body(1), st1)
    with pytest.raises(ValueError, match="another System"):
        check_twins(c1, c2, st1)
    big, bm, bf, ba, bb = _two_pins(jit=False)
    MobilizedBody.Pin(bb, Transform(), Body.Rigid(MASS), Transform())
    cb = Constraint.Ball(bm.ground, [0.0, -0.5, 0.1], bb, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="differ in size"):
        check_twins(c1, cb, st1, big.realize_topology())
