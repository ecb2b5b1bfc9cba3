"""The compiled finiteness scan every State update and kernel result goes through.

``first_non_finite`` screens blocks with a branch-free bit test (an exponent field of all ones,
NaN or infinity, carries into the sign bit) and searches only a flagged block; these tests hold it
to a plain ``numpy.isfinite`` search at every position that matters: each entry of short arrays
(the unrolled part and its remainder), block edges, and the extreme finite values that must pass.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from simtk import _core


def _reference(x: np.ndarray) -> int:
    bad = np.flatnonzero(~np.isfinite(x))
    return int(bad[0]) if bad.size else -1


EXTREMES = [np.finfo(float).max, -np.finfo(float).max, np.finfo(float).tiny, 5e-324, -5e-324, 0.0, -0.0]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, -np.nan])
def test_every_position_of_short_arrays(n, bad):
    x = np.linspace(-1.0, 1.0, n)
    assert _core._k.first_non_finite(x) == -1
    for j in range(n):
        y = x.copy()
        y[j] = bad
        assert _core._k.first_non_finite(y) == j
        assert not _core._k.all_finite(y)
        y[n - 1] = bad  # a later one does not hide the first
        assert _core._k.first_non_finite(y) == j


@pytest.mark.parametrize("n", [511, 512, 513, 1024, 1025, 2000])
def test_block_edges(n):
    x = np.full(n, 3.0)
    for j in sorted({0, 1, 510, 511, 512, 513, 1023, 1024, n - 1}):
        if j < n:
            y = x.copy()
            y[j] = np.inf
            assert _core._k.first_non_finite(y) == j


def test_extreme_finite_values_pass():
    x = np.array(EXTREMES * 5)
    assert _core._k.first_non_finite(x) == -1
    assert _core._k.all_finite(x)


@given(arrays(np.float64, st.integers(0, 1100),
              elements=st.sampled_from(EXTREMES + [1.5, np.nan, np.inf, -np.inf])))
def test_agrees_with_numpy(x):
    assert _core._k.first_non_finite(x) == _reference(x)
    assert _core._k.all_finite(x) == (_reference(x) == -1)
