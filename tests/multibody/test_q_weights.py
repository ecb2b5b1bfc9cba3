"""q unit weights derived through N (issue: accuracy with q weights derived through N)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from tolerances import assert_close


def _system():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    GeneralForceSubsystem(system)
    body = Body.Rigid(MassProperties(1.0, [0.1, 0.2, 0.3], Inertia(1.0)))
    pin = MobilizedBody.Pin(matter.ground, Transform(), body, Transform())
    ball = MobilizedBody.Ball(pin, Transform([1, 0, 0]), body, Transform())
    free = MobilizedBody.Free(ball, Transform([0, 1, 0]), body, Transform())
    gimbal = MobilizedBody.Gimbal(free, Transform([0, 0, 1]), body, Transform())
    return system, matter, (pin, ball, free, gimbal)


def _explicit_weights(matter, state):
    """max_j |(N^-1)_ji| from N^-1 built column by column with the matter's operator."""
    nq = matter.get_num_coordinates(state)
    cols = []
    for i in range(nq):
        e = np.zeros(nq)
        e[i] = 1.0
        cols.append(np.abs(matter.multiply_by_n_inv(state, False, e)))
    return np.maximum(np.array([c.max() if len(c) else 0.0 for c in cols]), 1.0)


def test_unit_weights_for_qdot_equal_u_and_two_for_quaternion_vector_parts_at_identity():
    system, matter, (pin, ball, free, gimbal) = _system()
    state = system.realize_topology()
    system.realize(state, Stage.Position)
    w = system.calc_q_weights(state)
    q0, _ = matter._q_range(state, ball.get_mobilized_body_index())
    assert w[0] == 1.0  # the Pin angle
    np.testing.assert_array_equal(w[q0:q0 + 4], [1.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(w[-3:], 1.0)  # Gimbal angles


@settings(max_examples=30)
@given(st.lists(st.floats(-1, 1), min_size=8, max_size=8).filter(
    lambda v: np.linalg.norm(v[:4]) > 0.1 and np.linalg.norm(v[4:]) > 0.1))
def test_weights_equal_largest_entry_of_each_column_of_n_inverse(v):
    """Law: w_qi = max(1, max_j |(N^-1)_ji|), with N^-1 taken from the compiled operator."""
    system, matter, (pin, ball, free, gimbal) = _system()
    state = system.realize_topology()
    ball.set_q(state, np.array(v[:4]) / np.linalg.norm(v[:4]))
    q = free.get_q(state).copy()
    q[:4] = np.array(v[4:]) / np.linalg.norm(v[4:])
    free.set_q(state, q)
    system.realize(state, Stage.Position)
    # the entries of N^-1 by two routes, a few flops each; the weights (>= 1) are their scale
    assert_close(system.calc_q_weights(state), _explicit_weights(matter, state), margin=64, what="q weights")
