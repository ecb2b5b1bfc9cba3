"""Why forward dynamics failed: the search for a singular articulated inertia (a cold path)."""
from __future__ import annotations

import numpy as np

__all__ = ["singular_articulated_inertia"]


def singular_articulated_inertia(ws) -> tuple[int, int, float] | None:
    """The body whose ``D = S^T P S`` is singular in the workspace ``ws`` (realized articulated
    inertias), as (body, mobility, eigenvalue), or None.

    Singular means not finite, or a smallest eigenvalue at round-off of ``|P| |S|^2`` (zero
    included: a massless subtree has P = 0). Searched tip to base, the order in which P is
    computed: a singular D makes every ancestor's P non-finite too, and descendants have higher
    indices, so the first one met is the cause.
    """
    eps = float(np.finfo(float).eps)
    for b in range(len(ws.parent) - 1, 0, -1):
        u0, u1 = int(ws.uoff[b]), int(ws.uoff[b + 1])
        if u1 == u0:
            continue
        S = np.asarray(ws.S[u0:u1]).reshape(u1 - u0, 6)
        P = np.asarray(ws.P[b] if ws.cfirst[b] else ws.I_O[b])  # a tip's P is its I_O, not copied
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is what this looks for
            D = S @ P @ S.T
        if not np.isfinite(D).all():
            return b, 0, float("nan")
        lam, vec = np.linalg.eigh(0.5 * (D + D.T))
        scale = float(np.abs(P).max()) * float(np.abs(S).max()) ** 2
        if lam[0] <= 64 * eps * scale:
            return b, int(np.argmax(np.abs(vec[:, 0]))), float(lam[0])
    return None
