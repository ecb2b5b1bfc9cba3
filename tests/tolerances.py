"""Tolerances for floating-point comparisons, derived from machine epsilon and the quantity's scale.

A computed quantity differs from its exact value by round-off that grows with the magnitude of the
terms it was computed from (its *scale*) and with the number of roundings on the way (its
*margin*: roughly the depth of the computation times its condition number). A comparison that is
not exact therefore allows

    |actual - expected| <= margin * EPS * scale

and never a bare literal such as 1e-15, which holds on one CPU and BLAS and fails on another (fused
multiply-adds, a different summation order or a different ``libm`` change the last bits).

How to choose the two numbers:

- ``scale``: the largest magnitude among the terms the quantity is computed from, not the result
  itself when the result comes out of a cancellation (a central inertia after the parallel-axis
  shift is as uncertain as ``m |p|^2``, however small it is). For a comparison of whole arrays,
  ``max |expected|`` is the usual choice; `scale_of` takes the maximum over several arrays.
- ``margin``: 16-64 for a few dozen flops (a 3x3 product, one joint's kinematics); 1e3-1e4 for a
  recursive sweep over tens of bodies or a matrix factorization of moderate condition; more with
  a stated reason (an ill-conditioned solve, a finite difference).

Tolerances of a *method* (truncation error of an integrator or a finite difference, an iterative
solver's stopping tolerance) are not round-off and are set from the method's accuracy instead;
this module is for round-off only.
"""
from __future__ import annotations

import numpy as np

#: Machine epsilon of float64, 2**-52.
EPS = float(np.finfo(np.float64).eps)


def scale_of(*arrays, floor: float = 0.0) -> float:
    """The largest magnitude among ``arrays`` (and ``floor``): the scale of a comparison."""
    s = float(floor)
    for a in arrays:
        a = np.asarray(a, dtype=float)
        if a.size:
            s = max(s, float(np.max(np.abs(a))))
    return s


def tol(scale: float = 1.0, margin: float = 64.0) -> float:
    """The round-off tolerance ``margin * EPS * scale``."""
    return float(margin) * EPS * float(scale)


def max_abs_diff(actual, expected) -> float:
    """``max |actual - expected|`` over all elements (0 for empty arrays)."""
    a = np.asarray(actual, dtype=float)
    e = np.asarray(expected, dtype=float)
    d = np.abs(a - e)
    return float(d.max()) if d.size else 0.0


def assert_close(actual, expected, *, margin: float = 64.0, scale: float | None = None, what: str = "") -> None:
    """Assert ``max |actual - expected| <= margin * EPS * scale``.

    ``scale`` defaults to ``max(|actual|, |expected|)``: a purely relative comparison, which is
    exact where both are zero. Pass the scale of the terms when the expected value comes out of a
    cancellation (zero or much smaller than its terms).
    """
    a = np.asarray(actual, dtype=float)
    e = np.asarray(expected, dtype=float)
    assert a.shape == e.shape or a.size == 1 or e.size == 1, f"{what} shapes differ: {a.shape} vs {e.shape}"
    s = scale_of(a, e) if scale is None else float(scale)
    err = max_abs_diff(a, e)
    bound = tol(s, margin)
    assert err <= bound, (f"{what + ': ' if what else ''}max |actual - expected| = {err:.3g} exceeds "
                          f"{margin:g} eps x scale {s:.3g} = {bound:.3g}")


def close(actual, expected, *, margin: float = 64.0, scale: float | None = None) -> bool:
    """The boolean form of `assert_close` (for ``assert`` inside helpers and ``all(...)``)."""
    a = np.asarray(actual, dtype=float)
    e = np.asarray(expected, dtype=float)
    s = scale_of(a, e) if scale is None else float(scale)
    return max_abs_diff(a, e) <= tol(s, margin)
