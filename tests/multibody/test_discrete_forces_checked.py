"""``Force.DiscreteForces``' setters take finite real numbers only, and a refused call leaves the State as it was.

They used to convert what they were given with ``float()`` / ``np.asarray(dtype=float64)``: a complex
number lost its imaginary part, a string such as "1.5" was parsed, and a fractional index passed the
range test and failed only after the State had dropped to Velocity. The State's own setters refuse both
(``simtk/common/_values.py``); so do these now, checking everything before they invalidate or write. The
Simbody accessors ``set_one_body_force``, ``get_one_body_force`` and ``get_one_mobility_force`` are added.
"""
from __future__ import annotations

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
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)

BODY = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.0, -0.5, 0.0], Inertia([0.1, 0.2, 0.15])))


def _model():
    system = MultibodySystem("arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    upper = MobilizedBody.Pin(matter.ground, Transform(), BODY, Transform(), name="upper")
    forearm = MobilizedBody.Ball(upper, Transform([0.0, -1.0, 0.0]), BODY, Transform(), name="forearm")
    discrete = Force.DiscreteForces(forces, matter)
    state = system.realize_topology()
    matter.upd_u(state)[:] = [0.3, 0.1, -0.2, 0.4]
    discrete.set_all_mobility_forces(state, [0.5, 0.25, -0.5, 1.0])
    system.realize(state, Stage.Acceleration)
    return system, matter, upper, forearm, discrete, state


def _bad_calls(upper, forearm, d):
    """(exception, words in its message, call(state)) for input a setter must refuse."""
    nb = 3
    return [
        # complex numbers: not converted (the imaginary part dropped)
        (TypeError, "f must be a real number", lambda s: d.set_one_mobility_force(s, upper, 0, 1 + 2j)),
        (TypeError, "f must be a real number", lambda s: d.set_one_mobility_force(s, upper, 0, np.complex128(1))),
        (ValueError, "real numbers", lambda s: d.set_all_mobility_forces(s, [1 + 0j, 2, 3, 4])),
        (ValueError, "real numbers", lambda s: d.set_all_mobility_forces(s, np.ones(4, dtype=complex))),
        (ValueError, "real numbers", lambda s: d.set_all_body_forces(s, np.ones((nb, 2, 3), dtype=complex))),
        (ValueError, "real numbers", lambda s: d.set_one_body_force(s, forearm, np.ones((2, 3), dtype=complex))),
        (ValueError, "force: expected", lambda s: d.add_force_to_body_point(s, forearm, [0, 0, 0], [1j, 0, 0])),
        # strings: not parsed as numbers
        (TypeError, "f must be a real number", lambda s: d.set_one_mobility_force(s, upper, 0, "1.5")),
        (ValueError, "real numbers", lambda s: d.set_all_mobility_forces(s, ["1.5", "0", "0", "0"])),
        (ValueError, "real numbers", lambda s: d.set_all_body_forces(s, np.full((nb, 2, 3), "1"))),
        (ValueError, "real numbers", lambda s: d.set_one_body_force(s, forearm, [["1", "0", "0"], [0, 0, 0]])),
        (ValueError, "station: expected", lambda s: d.add_force_to_body_point(s, forearm, ["0", "0", "0"], [1, 0, 0])),
        (ValueError, "force: expected", lambda s: d.add_force_to_body_point(s, forearm, [0, 0, 0], ["1", "0", "0"])),
        # bools are not numbers here either
        (TypeError, "f must be a real number", lambda s: d.set_one_mobility_force(s, upper, 0, True)),
        (ValueError, "real numbers", lambda s: d.set_all_mobility_forces(s, [True, False, True, False])),
        # indices: integers in range
        (TypeError, "which_u must be an integer", lambda s: d.set_one_mobility_force(s, upper, 0.5, 1.0)),
        (TypeError, "which_u must be an integer", lambda s: d.set_one_mobility_force(s, forearm, 1.0, 1.0)),
        (TypeError, "which_u must be an integer", lambda s: d.set_one_mobility_force(s, upper, "0", 1.0)),
        (TypeError, "which_u must be an integer", lambda s: d.set_one_mobility_force(s, upper, True, 1.0)),
        (IndexError, "out of range", lambda s: d.set_one_mobility_force(s, forearm, 3, 1.0)),
        (IndexError, "out of range", lambda s: d.set_one_mobility_force(s, upper, -1, 1.0)),
        # non-finite values and wrong shapes
        (ValueError, "finite", lambda s: d.set_one_mobility_force(s, upper, 0, np.nan)),
        (ValueError, "finite", lambda s: d.set_all_mobility_forces(s, [0, np.inf, 0, 0])),
        (ValueError, "shape", lambda s: d.set_all_mobility_forces(s, [0, 0, 0])),
        (ValueError, "shape", lambda s: d.set_one_body_force(s, forearm, np.ones(6))),
        (TypeError, "expected a MobilizedBody", lambda s: d.set_one_mobility_force(s, 1, 0, 1.0)),
    ]


def test_bad_input_is_refused_before_the_state_changes():
    system, matter, upper, forearm, d, state = _model()
    mobility, body = d.get_all_mobility_forces(state), d.get_all_body_forces(state)
    udot = state.get_udot().copy()
    for exc, words, call in _bad_calls(upper, forearm, d):
        with pytest.raises(exc, match=words):
            call(state)
        # nothing was invalidated, nothing was written: the realized results are still there
        assert state.get_system_stage() == Stage.Acceleration, words
        assert np.array_equal(state.get_udot(), udot)
        assert np.array_equal(d.get_all_mobility_forces(state), mobility)
        assert np.array_equal(d.get_all_body_forces(state), body)


def test_the_refusals_name_the_element_and_the_call():
    _, _, upper, _, d, state = _model()
    with pytest.raises(TypeError, match=r"Force.DiscreteForces #0 '/forces/discrete_forces'>\.set_one_mobility_force"
                                        r"\(\): f must be a real number, got a string: '1.5'"):
        d.set_one_mobility_force(state, upper, 0, "1.5")


def test_real_numbers_of_every_kind_are_taken():
    """ints, numpy floats and ints, 0-d arrays, float32 and int arrays are real numbers: taken as before."""
    system, matter, upper, forearm, d, state = _model()
    for v in (2, 2.0, np.float64(2.0), np.float32(2.0), np.int64(2), np.array(2.0)):
        d.set_one_mobility_force(state, upper, np.int64(0), v)
        assert d.get_one_mobility_force(state, upper, 0) == 2.0
    d.set_all_mobility_forces(state, np.arange(4, dtype=np.int32))
    assert np.array_equal(d.get_all_mobility_forces(state), [0.0, 1.0, 2.0, 3.0])
    d.set_all_body_forces(state, np.ones((3, 2, 3), dtype=np.float32))
    assert np.array_equal(d.get_all_body_forces(state), np.ones((3, 2, 3)))


@settings(max_examples=25, deadline=None)
@given(F=st.lists(st.floats(-10, 10), min_size=6, max_size=6), k=st.integers(0, 2))
def test_one_body_force_is_that_body_of_all_body_forces(F, k):
    """set_one_body_force(mobod, F) is set_all_body_forces with F in that body's row: the same udot bitwise."""
    system, matter, upper, forearm, d, state = _model()
    F = np.array(F).reshape(2, 3)
    mobod = matter.get_mobilized_body(k)
    d.set_all_body_forces(state, np.zeros((3, 2, 3)))
    d.set_one_body_force(state, mobod, F)
    assert state.get_system_stage() < Stage.Dynamics
    assert np.array_equal(d.get_one_body_force(state, mobod), F)
    system.realize(state, Stage.Acceleration)
    udot = state.get_udot().copy()
    all_F = np.zeros((3, 2, 3))
    all_F[k] = F
    d.set_all_body_forces(state, all_F)
    system.realize(state, Stage.Acceleration)
    assert np.array_equal(state.get_udot(), udot)  # bitwise: the same arrays added in the same order
