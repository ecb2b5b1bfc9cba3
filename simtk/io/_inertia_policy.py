"""What a model file loader does with an inertia no mass distribution has (``nonphysical_inertia``).

Published OpenSim and robot files carry such inertias (a toe with principal moments [0, 0, 0.001],
a pelvis whose largest moment exceeds the sum of the other two). OpenSim and Pinocchio keep them as
written; simtk's `Inertia` refuses them. The loaders offer three policies:

- ``"keep"``: the inertia as written (finite and symmetric, nothing else checked), with a warning;
  the dynamics are then those OpenSim computes, and a subtree left without inertia about a mobility
  raises ``SingularArticulatedInertiaError`` naming the body when accelerations are asked for;
- ``"repair"``: the nearest physical inertia (clipping the second-moment matrix), with a warning;
- ``"error"``: the loader's error, naming the element.
"""
from __future__ import annotations

import numpy as np

from simtk import Inertia
from simtk.spatial._common import INERTIA_ATOL, INERTIA_RTOL

POLICIES = ("keep", "repair", "error")


def check_policy(loader: str, policy: str) -> None:
    """Refuse an unknown ``nonphysical_inertia`` before anything is read."""
    if policy not in POLICIES:
        raise ValueError(f"{loader}: nonphysical_inertia must be one of {', '.join(map(repr, POLICIES))}, "
                         f"got {policy!r}")


def nearest_physical(I: np.ndarray) -> np.ndarray:
    """The physical inertia nearest to a symmetric I in the sense of the second moments.

    A matrix is the inertia of a mass distribution exactly when its second-moment matrix
    ``S = tr(I)/2 - I`` is positive semi-definite; clipping S's negative eigenvalues to zero and
    mapping back (``I = tr(S) - S``) gives a valid inertia and leaves a valid one unchanged.
    """
    I = 0.5 * (I + I.T)
    S = 0.5 * np.trace(I) * np.eye(3) - I
    w, V = np.linalg.eigh(S)
    S = (V * np.clip(w, 0.0, None)) @ V.T
    return np.trace(S) * np.eye(3) - S


def as_written(I: np.ndarray) -> Inertia:
    """``I`` as an Inertia without the physical checks: the ``"keep"`` policy.

    Raises
    ------
    ValueError
        ``I`` is not a finite symmetric 3x3 matrix (no policy keeps that).
    """
    I = np.asarray(I, dtype=float)
    if I.shape != (3, 3) or not np.isfinite(I).all():
        raise ValueError(f"expected a finite 3x3 inertia matrix, got {I.tolist()}")
    # the symmetry slack Inertia itself allows
    if np.abs(I - I.T).max() > INERTIA_RTOL * np.abs(I).max() + INERTIA_ATOL:
        raise ValueError(f"the inertia matrix {I.tolist()} is not symmetric")
    return Inertia._trusted(0.5 * (I + I.T))


def apply(I: np.ndarray, policy: str) -> tuple[Inertia, str | None]:
    """The Inertia a loader builds for ``I`` under ``policy``, and why it is not physical (None if it is).

    Raises
    ------
    ValueError
        ``I`` is not physical and ``policy`` is ``"error"`` (the message says which test failed), or
        ``I`` is not a finite symmetric matrix.
    """
    try:
        return Inertia.from_matrix(I), None
    except ValueError as e:
        if policy == "error":
            raise
        reason = str(e)
    if policy == "repair":
        return Inertia.from_matrix(nearest_physical(np.asarray(I, dtype=float))), reason
    return as_written(I), reason
