"""Projection of a State onto the constraint manifold (``System.project`` for the matter subsystem).

``project_q`` normalizes the quaternions and moves q onto the position constraints by Newton
iterations whose steps are the least-norm changes in u-space (dq = N du); ``project_u`` moves u
onto the velocity constraints (pverr = verr = 0) by the mass-weighted least change, which removes
the least kinetic energy. Both use the operators of ``constraint_solver.gmap`` (G, M^-1 G^T and
the factorization of G M^-1 G^T) at the current q.

Both iterate until the largest error is at most 1/100 of the accuracy asked for (position errors may
stop earlier when they stagnate at round-off within the accuracy), and the compiled time loop's
projection (``core/stepper.pxi``) has the same target: the margin lets an integrator take several
steps before its errors exceed the tolerance again.
"""
from __future__ import annotations

import numpy as np

from ... import _core
from ...common.errors import ConstraintViolationError
from ...common.stage import POSITION, VELOCITY
from ...common.state import State
from ._solver import _Factor, gmap, multiply_by_n_all

__all__: list[str] = []


def _max_abs(x) -> float:
    return float(np.max(np.abs(x))) if len(x) else 0.0


def normalize_quaternions(q: np.ndarray, layout) -> None:
    # compiled, and summed in a fixed order, as the compiled time loop normalizes
    _core.normalize_quaternions(q, layout.qoff[layout.quaternion_bodies])


_NO_INT = np.zeros(0, dtype=np.intp)


def _least_norm_step(P: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The least-norm dx with P dx = r (the least-squares one when there is none).

    dx = P^T (P P^T)^-1 r by the compiled Cholesky factor (rows of zeros left out), the step the
    compiled time loop takes; LAPACK's least squares when P is rank-deficient or ill-conditioned."""
    m, n = P.shape
    if m and n:
        B, L, keep = np.empty((m, m)), np.empty((m, m)), np.empty(m, dtype=np.intp)
        _core._k.gram(P, B)
        nk = _core._k.factor_kept(B, L, keep)
        if nk >= 0:
            dx = np.empty(n)
            _core._k.multiplier_step(np.ascontiguousarray(r), np.ascontiguousarray(L[:nk, :nk]),
                                     _NO_INT if nk == m else keep[:nk].copy(), P, np.empty(m), dx)
            return dx
    return np.linalg.lstsq(P, r, rcond=None)[0]


def project_q(matter, state: State, accuracy: float) -> bool:
    """Normalize quaternions and Newton-project q onto perr = 0 (minimum-norm steps in u-space)."""
    system = matter.get_system()
    cache = matter._cache(state)
    layout, plan = cache.layout, cache.plan
    changed = False
    if len(layout.quaternion_bodies):
        normalize_quaternions(matter.upd_q(state), layout)
        changed = True
    if plan.mp == 0:
        return changed
    target = 0.01 * accuracy
    ss = state._subs[matter._index]
    best = np.inf
    for _ in range(30):
        system.realize(state, POSITION)
        err = _max_abs(ss.qerr[:plan.mp])
        if err <= target or (err >= 0.5 * best and err <= accuracy):
            break  # converged, or stagnating at round-off within the tolerance
        best = min(best, err)
        cache = matter._cache(state)
        g = gmap(matter, state, cache)
        du = _least_norm_step(g.G[:plan.mp], -ss.qerr[:plan.mp])
        dq = np.zeros(cache.ws.nq)
        multiply_by_n_all(state, layout, cache.ws, du, dq)  # (Custom bodies' q move too)
        q = matter.upd_q(state)
        q += dq
        normalize_quaternions(q, layout)
        changed = True
    else:
        system.realize(state, POSITION)
        err = _max_abs(ss.qerr[:plan.mp])
    if err > accuracy:
        worst = int(np.argmax(np.abs(ss.qerr[:plan.mp])))
        owner = matter._position_equation_owner(state, worst)
        raise ConstraintViolationError(
            f"{matter._where()}: the position constraints cannot be satisfied at t = {state.get_time()!r}: after "
            f"projection {owner!r} still has an error of {ss.qerr[worst]:.3g} (tolerance {accuracy:.3g}); its "
            "equations contradict the others or cannot be met in this configuration (a loop that cannot close, "
            "a lock against a constraint)", owner, float(ss.qerr[worst]))
    return changed


def project_u(matter, state: State, accuracy: float) -> bool:
    """Project u onto the velocity constraints (pverr = verr = 0) with minimum-norm corrections."""
    system = matter.get_system()
    cache = matter._cache(state)
    plan = cache.plan
    n = plan.mp + plan.mv
    if n == 0:
        return False
    ss = state._subs[matter._index]
    changed = False
    target = 0.01 * accuracy
    for _ in range(5):
        system.realize(state, VELOCITY)
        err = _max_abs(ss.uerr[:n])
        if err <= target:
            break
        g = gmap(matter, state, matter._cache(state), need_inverse=True)
        # Mass-weighted: du = M^-1 G^T (G M^-1 G^T)^+ uerr changes the kinetic energy least.
        rhs = np.ascontiguousarray(ss.uerr[:n])
        factor = g.factor if n == plan.m else _Factor(np.ascontiguousarray(g.A[:n, :n]))
        du = factor.step(rhs, g.YT if n == plan.m else g.YT[:n])[1]
        u = matter.upd_u(state)
        u -= du
        changed = True
    else:
        system.realize(state, VELOCITY)
        err = _max_abs(ss.uerr[:n])
    if err > accuracy:
        raise RuntimeError(f"{matter._where()}: velocity projection failed at t = {state.get_time()}: the largest "
                           f"velocity constraint error is {err:.3g} > {accuracy:.3g}")
    return changed
