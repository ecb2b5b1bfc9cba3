"""Numbers that are not real (complex values, strings, booleans), fractional body indices and values
whose arithmetic overflows are refused with an error naming what was given, or computed right where the
result is representable: never silently mangled (an imaginary part dropped, "0.5" parsed, 2.7 truncated
to body 2, a quaternion of norm overflow turned into the identity, a NaN inertia held).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.spatial import skew
from tolerances import EPS, assert_close

_BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.25, 0.0], Inertia(0.1)))


@pytest.fixture
def model():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    pin = MobilizedBody.Pin(matter.ground, Transform(), _BODY, Transform(), name="arm")
    slider = MobilizedBody.Slider(pin, Transform([0, -0.5, 0]), _BODY, Transform(), name="rail")
    free = MobilizedBody.Free(slider, Transform([0, -0.5, 0]), _BODY, Transform(), name="hand")
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    return system, matter, {"arm": pin, "rail": slider, "hand": free}, state


NOT_REAL = [0.5 + 1j, "0.5", np.complex128(0.5 + 0j), True]


# ---------------------------------------------------------------------- 1. MobilizedBody setters
@pytest.mark.parametrize("bad", NOT_REAL, ids=repr)
@pytest.mark.parametrize("call", ["set_q", "set_u", "set_angle", "set_rate", "set_one_q", "set_one_u",
                                  "rail.set_length", "rail.set_rate", "hand.set_q", "hand.set_u"])
def test_mobilized_body_setters_refuse_values_that_are_not_real(model, call, bad):
    system, matter, bodies, state = model
    name, method = call.split(".") if "." in call else ("arm", call)
    body = bodies[name]
    n = 7 if call == "hand.set_q" else 6 if call == "hand.set_u" else 1
    value = [bad] * n if name == "hand" else bad
    args = (0, value) if method.startswith("set_one") else (value,)
    before = state.get_y().copy()
    with pytest.raises(TypeError) as info:
        getattr(body, method)(state, *args)
    message = str(info.value)
    assert body.get_absolute_path() in message and method in message
    assert np.array_equal(state.get_y(), before)  # refused before anything was written


@pytest.mark.parametrize("bad", [[0.5 + 1j], ["0.5"], "0.5"], ids=repr)
def test_set_q_of_a_list_refuses_like_the_state_setter(model, bad):
    system, matter, bodies, state = model
    with pytest.raises(TypeError, match="/matter/arm"):
        bodies["arm"].set_q(state, bad)
    with pytest.raises(ValueError):  # (the State's own setter refuses them as well)
        state.set_q([bad if not isinstance(bad, list) else bad[0]] * 9)


def test_setters_still_take_every_kind_of_real_number(model):
    system, matter, bodies, state = model
    arm = bodies["arm"]
    for value, expected in ((1, 1.0), (np.float32(0.5), 0.5), (np.int64(2), 2.0), (Fraction(1, 4), 0.25),
                            (np.array(0.75), 0.75), ([0.125], 0.125)):
        arm.set_q(state, value)
        assert arm.get_one_q(state, 0) == expected
    arm.set_angle(state, Fraction(3, 8))
    assert arm.get_angle(state) == 0.375
    bodies["hand"].set_u(state, np.arange(6, dtype=np.int32))
    assert np.array_equal(bodies["hand"].get_u(state), np.arange(6.0))


def test_fitting_and_force_inputs_refuse_complex_values(model):
    system, matter, bodies, state = model
    system.realize(state, Stage.Position)
    hand = bodies["hand"]
    with pytest.raises(TypeError, match="/matter/hand.*set_u_to_fit_velocity"):
        hand.set_u_to_fit_velocity(state, np.zeros((2, 3)) + 1j)
    with pytest.raises(TypeError, match="/matter/hand.*station"):
        hand.find_station_location_in_ground(state, ["0", "0", "1"])
    F = np.zeros((matter.get_num_bodies(), 2, 3))
    with pytest.raises(TypeError, match="/matter/hand.*apply_body_force"):
        hand.apply_body_force(state, np.ones((2, 3)) * 1j, F)
    with pytest.raises(TypeError, match="torque"):
        matter.add_in_body_torque(state, hand, [1j, 0, 0], F)
    assert not F.any()


# ---------------------------------------------------------------------- 1. spatial constructors
SPATIAL_CALLS = {
    "Rotation.from_matrix": lambda x: Rotation.from_matrix([[x, 0, 0], [0, 1, 0], [0, 0, 1]]),
    "Rotation.from_quaternion": lambda x: Rotation.from_quaternion([x, 0, 0, 0]),
    "Rotation(angle, axis)": lambda x: Rotation(x, "z"),
    "Rotation(angle, vector axis)": lambda x: Rotation(0.3, [x, 0, 0]),
    "Rotation.from_body_fixed_xyz": lambda x: Rotation.from_body_fixed_xyz([x, 0, 0]),
    "Transform(p)": lambda x: Transform([x, 0, 0]),
    "Transform(R, p)": lambda x: Transform(Rotation(), [0, x, 0]),
    "Transform * station": lambda x: Transform() * [x, 0, 0],
    "Rotation * vector": lambda x: Rotation() * [x, 0, 0],
    "Inertia(moments)": lambda x: Inertia([x, 1, 1]),
    "Inertia(xx, yy, zz)": lambda x: Inertia(x, 1, 1),
    "Inertia(matrix)": lambda x: Inertia([[x, 0, 0], [0, 1, 0], [0, 0, 1]]),
    "MassProperties mass": lambda x: MassProperties(x, [0, 0, 0], Inertia(1)),
    "MassProperties com": lambda x: MassProperties(1, [x, 0, 0], Inertia(2)),
    "MassProperties.from_central_inertia": lambda x: MassProperties.from_central_inertia(1, [0, x, 0], Inertia(1)),
    "skew": lambda x: skew([x, 0, 0]),
}


@pytest.mark.parametrize("bad", [1 + 1j, np.complex128(1 + 0j), "1"], ids=repr)
@pytest.mark.parametrize("call", sorted(SPATIAL_CALLS))
def test_spatial_constructors_refuse_values_that_are_not_real(call, bad):
    with pytest.raises(TypeError, match="real number"):
        SPATIAL_CALLS[call](bad)
    SPATIAL_CALLS[call](1)  # the same call with a real number is fine


# ---------------------------------------------------------------------- 2. body indices
@pytest.mark.parametrize("bad", [2.7, 2.0, np.float64(1.0), True, "2"], ids=repr)
@pytest.mark.parametrize("operator", ["calc_frame_jacobian", "calc_station_jacobian"])
def test_jacobians_refuse_a_body_index_that_is_not_an_integer(model, operator, bad):
    system, matter, bodies, state = model
    system.realize(state, Stage.Position)
    with pytest.raises(TypeError, match="integer"):
        getattr(matter, operator)(state, bad, [0.0, 0.0, 0.0])
    with pytest.raises(TypeError, match="integer"):
        getattr(matter, operator)(state, [1, bad], [[0.0, 0.0, 0.0]] * 2)


@pytest.mark.parametrize("good", [2, np.int64(2), np.int32(2), np.uint8(2)], ids=repr)
def test_jacobians_take_python_and_numpy_integers(model, good):
    system, matter, bodies, state = model
    system.realize(state, Stage.Position)
    expected = matter.calc_frame_jacobian(state, bodies["rail"], [0.0, 0.1, 0.0])
    assert np.array_equal(matter.calc_frame_jacobian(state, good, [0.0, 0.1, 0.0]), expected)
    assert np.array_equal(matter.calc_frame_jacobian(state, np.array([good]), [0.0, 0.1, 0.0]), expected)


def test_force_helpers_refuse_a_fractional_body_index(model):
    system, matter, bodies, state = model
    system.realize(state, Stage.Position)
    F = np.zeros((matter.get_num_bodies(), 2, 3))
    with pytest.raises(TypeError, match="integer"):
        matter.add_in_station_force(state, 1.5, [0, 0, 0], [1, 0, 0], F)
    assert not F.any()


# ---------------------------------------------------------------------- 3. quaternions of any magnitude
@settings(max_examples=200, deadline=None)
@given(q=st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(lambda v: max(map(abs, v)) > 1e-3),
       exponent=st.integers(-1070, 1020))
def test_from_quaternion_is_invariant_under_scaling(q, exponent):
    q = np.array(q)
    scaled = q * 2.0 ** exponent  # exact unless it leaves the normal range
    if not np.isfinite(scaled).all() or not np.any(scaled):
        return
    expected = Rotation.from_quaternion(q).matrix
    # the scaled entries lose relative precision only below the normal range (subnormals keep
    # 2**-1074 absolutely): that error, relative to the largest entry, bounds the change
    big = float(np.max(np.abs(scaled)))
    margin = 64.0 + 8.0 * (2.0 ** -1074 / big) / EPS
    assert_close(Rotation.from_quaternion(scaled).matrix, expected, margin=margin, scale=1.0)


def test_from_quaternion_of_huge_entries_is_not_the_identity():
    R = Rotation.from_quaternion([1e200, 1e200, 0, 0])
    assert_close(R.matrix, Rotation(math.pi / 2, "x").matrix, scale=1.0)
    R = Rotation.from_quaternion([1e-310, 0, 0, 1e-310])  # subnormal entries: still a rotation about z
    assert_close(R.matrix, Rotation(math.pi / 2, "z").matrix, scale=1.0)
    assert_close(Rotation(0.4, [1e300, 1e300, 0]).matrix, Rotation(0.4, [1, 1, 0]).matrix, scale=1.0)


@pytest.mark.parametrize("q", [[0, 0, 0, 0], [np.nan, 1, 0, 0], [np.inf, 0, 0, 0], [1e308, -np.inf, 0, 0]])
def test_from_quaternion_refuses_zero_and_non_finite_quaternions(q):
    with pytest.raises(ValueError, match="quaternion must be (nonzero|finite)"):
        Rotation.from_quaternion(q)


# ---------------------------------------------------------------------- 4. overflowing inertias
def test_mass_properties_with_an_unrepresentable_offset_are_refused():
    with pytest.raises(ValueError, match="from_central_inertia.*not representable"):
        MassProperties.from_central_inertia(1.0, [1e200, 0, 0], Inertia(1.0))
    with pytest.raises(ValueError, match="not representable"):
        MassProperties(1.0, [1e200, 0, 0], Inertia(1.0))
    with pytest.raises(ValueError, match="not representable"):
        Inertia.point_mass_at([0, 1e160, 0], 1.0)
    with pytest.raises(ValueError, match="not representable"):
        Inertia(1.0).shift_from_mass_center([1e160, 0, 0], 1.0)
    mp = MassProperties(1.0, 0.0, Inertia(1.0))
    with pytest.raises(ValueError, match="not representable"):
        mp.calc_shifted_inertia([1e160, 0, 0])


def test_a_representable_offset_is_computed_right_where_its_square_overflows():
    # |p|^2 = 1e320 overflows, m |p|^2 = 1e220 does not: the inertia about the origin is representable
    m, p = 1e-100, np.array([0.0, 0.0, 1e160])
    mp = MassProperties.from_central_inertia(m, p, Inertia(1.0))
    expected = np.diag([1.0 + 1e220, 1.0 + 1e220, 1.0])
    assert_close(mp.inertia.matrix, expected, scale=1e220)
    assert np.isfinite(mp.inertia.matrix).all()


@pytest.mark.parametrize("moments", [1e308, [1e308, 1e308, 1e308], [1e308, 6e307, 6e307]])
def test_inertias_whose_sums_overflow_are_refused_with_a_value_error(moments):
    with pytest.raises(ValueError, match="overflow"):
        Inertia(moments)


def test_large_but_representable_inertias_are_kept():
    I = Inertia(1e307)
    assert I.trace() == pytest.approx(3e307)


# ---------------------------------------------------------------------- 1. simtk.math setters
def test_assembly_and_integrator_settings_refuse_values_that_are_not_real(model):
    from simtk.math import Assembler, Markers, QValue, RungeKuttaMersonIntegrator

    system, matter, bodies, state = model
    markers = Markers()
    with pytest.raises(TypeError, match="add_marker.*station"):
        markers.add_marker(bodies["arm"], ["0", "0", "1"])
    with pytest.raises(TypeError, match="add_marker.*weight"):
        markers.add_marker(bodies["arm"], [0, 0, 1], weight=1 + 1j)
    assert markers.get_num_markers() == 0
    markers.add_marker(bodies["arm"], [0, 0, 1])
    with pytest.raises(TypeError, match="move_all_observations"):
        markers.move_all_observations([[1j, 0, 0]])
    with pytest.raises(TypeError, match="QValue"):
        QValue(bodies["arm"], 0, "0.5")
    with pytest.raises(TypeError, match="which_q"):
        QValue(bodies["arm"], 0.5, 0.5)
    assembler = Assembler(system)
    with pytest.raises(TypeError, match="restrict_q"):
        assembler.restrict_q(bodies["arm"], 0, "-1", 1)
    with pytest.raises(TypeError, match="which_q"):
        assembler.lock_q(bodies["arm"], 0.7)
    integrator = RungeKuttaMersonIntegrator(system)
    with pytest.raises(TypeError, match="set_accuracy"):
        integrator.set_accuracy("1e-3")
    with pytest.raises(TypeError, match="set_maximum_step_size"):
        integrator.set_maximum_step_size(0.1 + 0j)
    integrator.set_accuracy(Fraction(1, 1000))
