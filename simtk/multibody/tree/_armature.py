"""Armature (rotor inertia) of the mobilities: the check of a mobilizer's values, and the tree's (nu,) vector.

A rotor geared to a mobility adds its reflected inertia to the diagonal of the mass matrix,
``M(q) + diag(armature)`` (MuJoCo's ``armature``, Pinocchio's ``Model.armature``); the compiled sweeps
add it (core/tree.pxi), so this module only gathers the values the mobilized bodies hold.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..._real import real_array

__all__: list[str] = []


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


#: the default of every mobilizer: no armature
NO_ARMATURE = _frozen(np.zeros(()))


def armature_values(value) -> np.ndarray:
    """One value for every mobility (0-d) or one per mobility (1-d), finite and >= 0, read-only.

    The count is checked against the mobilizer by its ``_validate_property_change`` (a Custom one's only
    at Instance, where a State decides its nu).
    """
    a = real_array(value, "armature")
    if a.ndim > 1:
        raise ValueError(f"expected one value or one per mobility, got shape {a.shape}")
    if not (np.isfinite(a).all() and (a >= 0.0).all()):
        raise ValueError(f"values must be finite and >= 0, got {a.tolist()}")
    return _frozen(a)


def tree_armature(bodies: Sequence, uoff: np.ndarray) -> np.ndarray | None:
    """The (nu,) armature of a tree's mobilities from its bodies' values, or None when all are zero
    (the kernels then run exactly as without). A count that does not match a body's nu is refused,
    naming the body."""
    out = None
    for i, mb in enumerate(bodies[1:], start=1):
        a = mb.armature
        if not a.any():
            continue
        u0, u1 = int(uoff[i]), int(uoff[i + 1])
        if a.ndim == 1 and a.shape[0] != u1 - u0:
            raise ValueError(f"{mb!r}: armature has {a.shape[0]} values but the mobilizer has {u1 - u0} "
                             "mobilities in this State")
        if out is None:
            out = np.zeros(int(uoff[-1]))
        out[u0:u1] = a
    return out
