"""simtk.testing strategies: drawn systems and states are valid, mixes can include the user's own
mobilizers, and the checkers hold on whatever is drawn (the built-ins are correct)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Function, MobilizedBody, Stage
from simtk.testing import (
    DEFAULT_MOBILIZERS,
    check_caching,
    check_mobilizer,
    check_realize_is_pure,
    mass_properties,
    multibody_systems,
    states,
    unit_quaternions,
)
from tolerances import scale_of, tol


@settings(max_examples=20)
@given(q=unit_quaternions(), mp=mass_properties())
def test_primitive_strategies(q, mp):
    """Quaternions are unit; mass properties are physical (central inertia positive, triangle inequality)."""
    assert abs(np.linalg.norm(q) - 1) <= tol(1.0, 64)  # normalized: a few flops on a unit vector
    c = np.asarray(mp.com)
    moments = np.linalg.eigvalsh(mp.inertia.matrix - mp.mass * (c @ c * np.eye(3) - np.outer(c, c)))
    assert (moments > 0).all()
    a, b, c = moments
    # a flat body meets the triangle inequality with equality; the central moments come out of the
    # parallel-axis shift and a 3x3 eigensolve, on the scale of the inertia about the origin
    slack = tol(scale_of(mp.inertia.matrix), 256)
    assert a + b >= c - slack and b + c >= a - slack and a + c >= b - slack


@settings(max_examples=15)
@given(model=multibody_systems(max_bodies=4), data=st.data())
def test_drawn_systems_realize_to_finite_accelerations(model, data):
    """Every drawn system and state realizes to Acceleration with finite udot; built-in quaternions are unit."""
    assert len(model.bodies) == len(model.kinds) == len(model.parents) >= 1
    assert all(0 <= p <= i for i, p in enumerate(model.parents))
    assert set(model.kinds) <= set(DEFAULT_MOBILIZERS)
    state = data.draw(states(model.system))
    model.system.realize(state, Stage.Acceleration)
    assert np.isfinite(state.get_udot()).all()
    for mb, kind in zip(model.bodies, model.kinds):
        if kind in ("Ball", "Free"):
            assert abs(np.linalg.norm(mb.get_q(state)[:4]) - 1) <= tol(1.0, 64)  # drawn normalized


def function_based_pin(parent, X_PF, body, X_BM):
    """A user's own mobilizer kind for the mixes."""
    c = Function.Constant(0.0, 0)
    functions = [c, c, Function.Linear([1.0, 0.0]), c, Function.Sinusoid(0.1, 1.0, 0.0), c]
    return MobilizedBody.FunctionBased(parent, X_PF, body, X_BM, 1, functions, [[], [], [0], [], [0], []])


@settings(max_examples=8)
@given(model=multibody_systems(min_bodies=2, max_bodies=4, kinds=DEFAULT_MOBILIZERS + (function_based_pin,)),
       data=st.data())
def test_every_drawn_mobilizer_agrees_with_its_transform(model, data):
    """Law: for every mobilizer of any drawn system, H, HDot and N agree with finite differences of X_FM."""
    state = data.draw(states(model.system, q_scale=0.6))
    for mb in model.bodies:
        check_mobilizer(mb, state, assert_ok=True)


@settings(max_examples=6)
@given(model=multibody_systems(max_bodies=3, kinds=DEFAULT_MOBILIZERS + (function_based_pin,)), data=st.data())
def test_drawn_systems_are_pure_and_cache_consistently(model, data):
    """Law: realization writes no state variable, and cached results equal recomputed ones bit for bit."""
    state = data.draw(states(model.system))
    check_realize_is_pure(model.system, state, assert_ok=True)
    check_caching(model.system, state, assert_ok=True)


@settings(max_examples=5)
@given(model=multibody_systems(min_bodies=3, max_bodies=3, chain=True, gravity=False))
def test_chain_option(model):
    assert model.parents == [0, 1, 2]
    assert not model.forces.get_num_forces()
