"""The one door to the compiled core ``simtk_core``.

Every call into a kernel goes through a wrapper here that checks shapes, dtypes
and contiguity first, so that the kernels themselves never validate anything.
"""
from __future__ import annotations

import numpy as np

import simtk_core as _k

__all__ = ["all_finite", "first_non_finite"]


def _as_vector(x) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.ndim != 1:
        a = a.reshape(-1)
    return a


def all_finite(x) -> bool:
    """Return True when every entry of ``x`` (any shape) is finite."""
    return bool(_k.all_finite(_as_vector(x)))


def first_non_finite(x) -> int:
    """Flat index of the first NaN or infinite entry of ``x``, or -1 if none."""
    return int(_k.first_non_finite(_as_vector(x)))
