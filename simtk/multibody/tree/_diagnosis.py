"""Why a realization failed (cold paths): a non-finite q or u, overflowed positions, velocities or forces, a
singular articulated inertia."""
from __future__ import annotations

import numpy as np

from ...common.errors import SingularArticulatedInertiaError

__all__ = ["singular_articulated_inertia", "non_finite_state_error", "explain_non_finite_udot"]


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


def _first_bad_body(*arrays) -> int | None:
    """The lowest body index whose row of any of ``arrays`` (nb, ...) is not finite, or None."""
    bad = None
    for a in arrays:
        rows = ~np.isfinite(np.asarray(a).reshape(len(a), -1)).all(axis=1)
        if rows.any():
            i = int(np.flatnonzero(rows)[0])
            bad = i if bad is None else min(bad, i)
    return bad


def non_finite_state_error(matter, state, kind: str) -> FloatingPointError | None:
    """The error naming the first non-finite entry of the State's q or u (``kind``) of ``matter``, or
    None when they are all finite: a value the State's setters refuse, written through ``upd_q()`` /
    ``upd_u()`` (or a simulation that diverged before this evaluation)."""
    values = state._subs[matter._index].q if kind == "q" else state._subs[matter._index].u
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return FloatingPointError(
        f"{matter._where()}: the State's {matter._describe_variable(state, kind, i)} is {values[i]} at t = "
        f"{state.get_time()!r}: a {'coordinate' if kind == 'q' else 'speed'} must be finite (written through "
        f"upd_{kind}(), or the simulation diverged before this evaluation)")


def _largest(matter, state, cache) -> str:
    """The largest speed and the largest applied forces, in words (what overflowed, when nothing else did)."""
    ss = state._subs[matter._index]
    words = []
    if len(ss.u):
        i = int(np.argmax(np.abs(ss.u)))
        words.append(f"the largest speed is {matter._describe_variable(state, 'u', i)} = {ss.u[i]:.3g}")
    F = np.abs(cache.body_forces).reshape(len(cache.body_forces), -1).max(axis=1)
    if F.size and F.max() > 0:
        b = int(np.argmax(F))
        words.append(f"the largest applied body force is {F[b]:.3g} on {matter._bodies[b]!r}")
    f = np.abs(cache.mobility_forces)
    if f.size and f.max() > 0:
        i = int(np.argmax(f))
        words.append(f"the largest mobility force is {f[i]:.3g} on {matter._describe_variable(state, 'u', i)}")
    return "; ".join(words)


def explain_non_finite_udot(matter, state, cache) -> FloatingPointError:
    """The error that names why forward dynamics gave a non-finite udot (a cold path).

    In order: the State is not finite; the positions overflowed (a body's pose or its inertia about
    the Ground origin); the velocities overflowed (a body's velocity, Coriolis acceleration or
    gyroscopic force); the applied forces are not finite (the body or the coordinate named); an
    articulated inertia is singular (named) or not finite; else the accelerations overflowed, with the
    largest speed and forces named. Only the singular case is a SingularArticulatedInertiaError (a
    massless body or a subtree without inertia about a mobility): overflow is never reported as one.
    """
    ws = cache.ws
    t = state.get_time()
    where = matter._where()
    for kind in ("q", "u"):
        exc = non_finite_state_error(matter, state, kind)
        if exc is not None:
            return exc
    b = _first_bad_body(ws.R_GB, ws.p_GB, ws.I_O)
    if b is not None:
        return FloatingPointError(
            f"{where}: the positions overflowed at t = {t!r}: the pose of {matter._bodies[b]!r} or its inertia "
            f"about the Ground origin is not finite (its q = {matter._bodies[b].get_q(state).tolist()}, its "
            f"location {np.asarray(ws.p_GB[b]).tolist()}): its coordinates are too large for float64 (a distance, "
            "or a quaternion whose squared norm overflows)")
    b = _first_bad_body(ws.V_GB, ws.c, ws.b)
    if b is not None:
        return FloatingPointError(
            f"{where}: the velocities overflowed at t = {t!r}: the velocity, Coriolis acceleration or gyroscopic "
            f"force of {matter._bodies[b]!r} is not finite (its u = {matter._bodies[b].get_u(state).tolist()}): "
            f"the speeds are too large for float64 ({_largest(matter, state, cache)})")
    b = _first_bad_body(cache.body_forces)
    if b is not None:
        return FloatingPointError(
            f"{where}: the applied forces are not finite at t = {t!r}: the body force on {matter._bodies[b]!r} is "
            f"{np.asarray(cache.body_forces[b]).tolist()} (the force elements' sum overflowed, or one of them "
            "gave a non-finite force)")
    f = cache.mobility_forces
    if not np.isfinite(f).all():
        i = int(np.flatnonzero(~np.isfinite(f))[0])
        return FloatingPointError(
            f"{where}: the applied forces are not finite at t = {t!r}: the mobility force on "
            f"{matter._describe_variable(state, 'u', i)} is {f[i]} (the force elements' sum overflowed, or one "
            "of them gave a non-finite force)")
    singular = singular_articulated_inertia(ws)
    if singular is not None:
        body, k, lam = singular
        if not np.isfinite(lam):
            return FloatingPointError(
                f"{where}: forward dynamics overflowed at t = {t!r}: the articulated inertia of "
                f"{matter._bodies[body]!r} is not finite (the masses and inertias beyond it overflow float64)")
        return SingularArticulatedInertiaError(
            f"{where}: forward dynamics is singular at t = {t!r}: the articulated inertia of "
            f"{matter._bodies[body]!r} about its mobility {k} is {lam:.3g} (a massless body, or a subtree "
            "without inertia about that mobility's axis); give the bodies beyond it mass and inertia about "
            "that axis", matter._bodies[body], k)
    return FloatingPointError(
        f"{where}: forward dynamics overflowed at t = {t!r} although every articulated inertia is regular: "
        f"{_largest(matter, state, cache)}, so the accelerations exceed float64 (too large forces or speeds, or "
        "a diverging simulation)")
