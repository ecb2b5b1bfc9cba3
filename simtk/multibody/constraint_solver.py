"""The constraint machinery of the matter subsystem: per-State plans, G operators, the constrained
acceleration solve and projection onto the constraint manifold.

Per stage (all driven by ``SimbodyMatterSubsystem``'s hooks):

===========  ===================================================================================
Instance     ``build_plan``: the enabled constraints (and the equations of locks and Motions),
             grouped by kind, their equation numbers, and the q_err/u_err/udot_err slots.
Position     position errors; on demand (``gmap``) the force map of every equation (the columns
             of ``G^T``), ``G`` itself (m, nu), ``Y = M^-1 G^T`` and the pseudo-inverse of
             ``A = G M^-1 G^T``: all depend only on q, so they are kept until q changes.
Velocity     velocity errors.
Acceleration ``udot0 = ABA(f)``; ``lambda = A^+ aerr(udot0)``; ``udot = udot0 - Y lambda``.
===========  ===================================================================================

Cost of a constrained forward-dynamics evaluation with m equations on n bodies: m O(n) sweeps for
``G^T`` and m for ``M^-1 G^T`` (both once per q), a dense (m, nu) x (nu, m) product, an O(m^3)
pseudo-inverse, and O(n + m) for the rest.
"""
from __future__ import annotations

import numpy as np

from .. import _core
from ..common.stage import INSTANCE, POSITION, VELOCITY, Stage
from ..common.state import State

__all__: list[str] = []


# ====================================================================== kinematics handed to kinds
class _Kinematics:
    """What the error and force routines read: poses, velocities and (trial) accelerations."""

    __slots__ = ("state", "t", "q", "u", "qdot", "udot", "qdotdot", "R", "p", "V", "A", "nrow", "ncol", "coord_q")

    def __init__(self, state, plan, ws, q, u=None, qdot=None, udot=None, qdotdot=None, A=None, V=None):
        self.state = state
        self.t = state._t
        self.q = q
        self.u = u
        self.qdot = qdot
        self.udot = udot
        self.qdotdot = qdotdot
        self.R = ws.R_GB
        self.p = ws.p_GB
        self.V = ws.V_GB if V is None else V
        self.A = A
        self.coord_q = plan.coord_q if plan is not None else None
        self.nrow = None
        self.ncol = None


def kinematics_of_state(matter, state: State) -> _Kinematics:
    """Kinematics of a realized State (for Custom helpers called outside an evaluation)."""
    ss = matter._ss(state)
    cache = matter._cache(state)
    ws = cache.ws
    st = ss.stage
    kin = _Kinematics(state, cache.plan, ws, ss.q)
    if st >= VELOCITY:
        kin.u, kin.qdot = ss.u, ss.qdot
    if st >= Stage.Acceleration:
        kin.udot, kin.qdotdot, kin.A = ss.udot, ss.qdotdot, cache.A_GB
    return kin


# ====================================================================== the Instance plan
class _Plan:
    """Instance-stage plan of one State: enabled elements grouped by kind and their equation numbers."""

    def __init__(self):
        self.groups: list = []  # (cls, packed, eq (k, n), mp_e, mv_e, ma_e)
        self.slots: dict = {}  # constraint index -> global equation numbers
        self.motion_slots: dict = {}  # mobilized body index -> equation numbers of its lock/Motion
        self.mp = self.mv = self.ma = self.m = 0
        self.coord_q = np.zeros(0, dtype=np.intp)
        self.coord_body: list[int] = []
        self.customs: list = []
        self.u_dependent = False  # whether some force map depends on u (then G is kept only while u is)
        self.quaternion_err_start = 0
        self._matter = None
        self._state = None
        self._layout = None

    def add_coord(self, body: int, which_q: int, who) -> int:
        """Register coordinate ``which_q`` of ``body``; returns its coordinate id."""
        layout = self._layout
        q0, n = int(layout.qoff[body]), int(layout.qoff[body + 1] - layout.qoff[body])
        if not 0 <= which_q < n:
            raise IndexError(f"{who!r}: {self._matter.get_mobilized_body(body)!r} has no q[{which_q}] (it has {n})")
        if layout.codes[body] == _core.CUSTOM:
            raise NotImplementedError(f"{who!r}: coordinate-level constraints on Custom mobilizers are not "
                                      "supported yet")
        self.coord_q = np.append(self.coord_q, q0 + which_q).astype(np.intp)
        self.coord_body.append(body)
        return len(self.coord_body) - 1

    def u_index(self, body: int, which_u: int, who) -> int:
        """Global index of speed ``which_u`` of ``body``."""
        layout = self._layout
        u0, n = int(layout.uoff[body]), int(layout.uoff[body + 1] - layout.uoff[body])
        if not 0 <= which_u < n:
            raise IndexError(f"{who!r}: {self._matter.get_mobilized_body(body)!r} has no u[{which_u}] (it has {n})")
        return u0 + which_u


def build_plan(matter, state: State, layout, disabled, motion_elements: list) -> _Plan:
    """Group the enabled constraints and motion elements, number their equations, allocate slots."""
    plan = _Plan()
    plan._matter, plan._state, plan._layout = matter, state, layout
    elements = [c for c in matter._constraints if not disabled[c._index]] + motion_elements
    P = V = A = 0
    offsets = []
    for c in elements:
        offsets.append((P, V, A))
        P, V, A = P + c._mp, V + c._mv, A + c._ma
    plan.mp, plan.mv, plan.ma = P, V, A
    plan.m = P + V + A
    by_kind: dict = {}
    order: list = []
    for c, (p0, v0, a0) in zip(elements, offsets):
        eq = np.concatenate([np.arange(p0, p0 + c._mp), P + np.arange(v0, v0 + c._mv),
                             P + V + np.arange(a0, a0 + c._ma)]).astype(np.intp)
        if getattr(c, "_index", None) is not None and not getattr(c, "_is_motion", False):
            plan.slots[c._index] = eq
        else:
            plan.motion_slots.setdefault(c._body, []).append(eq)
        key = type(c) if c._bulk else id(c)
        if key not in by_kind:
            by_kind[key] = []
            order.append(key)
        by_kind[key].append((c, eq))
        if type(c).__name__ == "Custom":
            plan.customs.append(c)
    for key in order:
        items = by_kind[key]
        cls = type(items[0][0])
        packed = cls._pack([c for c, _ in items], plan, state)
        eq = np.array([e for _, e in items], dtype=np.intp).reshape(len(items), -1)
        c0 = items[0][0]
        plan.groups.append((cls, packed, eq, c0._mp, c0._mv, c0._ma))
        plan.u_dependent |= bool(getattr(cls, "_force_map_uses_u", False))
    for b, eqs in plan.motion_slots.items():
        plan.motion_slots[b] = np.concatenate(eqs)
    matter.allocate_q_err(state, plan.mp)
    matter.allocate_u_err(state, plan.mp + plan.mv)
    matter.allocate_udot_err(state, plan.m)
    return plan


# ====================================================================== error evaluation
def position_errors(plan: _Plan, kin: _Kinematics, out: np.ndarray) -> None:
    """Holonomic errors into out (mp,)."""
    for cls, packed, eq, mp, mv, ma in plan.groups:
        if mp:
            out[eq[:, :mp]] = cls._position_errors(packed, kin)


def velocity_errors(plan: _Plan, kin: _Kinematics, out: np.ndarray) -> None:
    """pverr and verr into out (mp + mv,)."""
    for cls, packed, eq, mp, mv, ma in plan.groups:
        if mp + mv:
            out[eq[:, :mp + mv]] = cls._velocity_errors(packed, kin)


def acceleration_errors(plan: _Plan, kin: _Kinematics, out: np.ndarray) -> None:
    """All acceleration errors into out (m,)."""
    for cls, packed, eq, mp, mv, ma in plan.groups:
        out[eq] = cls._acceleration_errors(packed, kin)


# ====================================================================== the force map and G
class _ForceMapBuilder:
    """Collects the forces of unit multipliers: body entries (eq, body, F at the origin in Ground)
    and mobility entries (eq, u, value)."""

    def __init__(self):
        self.b_eq, self.b_body, self.b_F = [], [], []
        self.m_eq, self.m_u, self.m_val = [], [], []

    def add_body_forces(self, eq, bodies, F) -> None:
        self.b_eq.append(np.asarray(eq, dtype=np.intp).reshape(-1))
        self.b_body.append(np.asarray(bodies, dtype=np.intp).reshape(-1))
        self.b_F.append(np.asarray(F, dtype=np.float64).reshape(-1, 2, 3))

    def add_mobility_forces(self, eq, u, val) -> None:
        self.m_eq.append(np.asarray(eq, dtype=np.intp).reshape(-1))
        self.m_u.append(np.asarray(u, dtype=np.intp).reshape(-1))
        self.m_val.append(np.asarray(val, dtype=np.float64).reshape(-1))


class _GMap:
    """Position-level constraint operators of one State (kept until q changes)."""

    __slots__ = ("b_eq", "b_body", "b_F", "m_eq", "m_u", "m_val", "G", "YT", "A", "Ainv", "nrow", "ncol")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, None)


def _n_rows(ws, plan: _Plan, layout):
    """N rows of the registered coordinates over their bodies' speeds: values and u indices, (nc, 6)."""
    nc = len(plan.coord_body)
    vals = np.zeros((nc, 6))
    cols = np.zeros((nc, 6), dtype=np.intp)
    if nc == 0:
        return vals, cols
    bodies = np.array(plan.coord_body)
    u0 = layout.uoff[bodies]
    nub = layout.uoff[bodies + 1] - u0
    x = np.zeros(ws.nu)
    out = np.zeros(ws.nq)
    for j in range(int(nub.max())):
        sel = nub > j
        x.fill(0.0)
        x[u0[sel] + j] = 1.0  # a body's qdot depends only on its own u, so all bodies go at once
        out.fill(0.0)
        ws.multiply_by_n(False, x, out)
        vals[sel, j] = out[plan.coord_q[sel]]
        cols[sel, j] = u0[sel] + j
    return vals, cols


def gmap(matter, state: State, cache, need_inverse: bool = False) -> _GMap:
    """The force map, G (m, nu) and, when asked, M^-1 G^T and pinv(G M^-1 G^T) of ``state``."""
    ss = state._subs[matter._index]
    entry = ss.cache[matter._gmap_index]
    g = entry.value
    if g is None or not state._cache_is_current(ss, entry) or (
            cache.plan.u_dependent and entry.marked_at < state._last_invalidation(VELOCITY)):
        g = _build_gmap(matter, state, cache)
        entry.value = g
        entry.marked_at = state._epoch
    if need_inverse and g.Ainv is None:
        ws = cache.ws
        m = cache.plan.m
        YT = np.zeros((m, ws.nu))
        for k in range(m):
            ws.multiply_by_m_inv(g.G[k], YT[k])
        A = g.G @ YT.T
        A = 0.5 * (A + A.T)
        g.YT, g.A = YT, A
        g.Ainv = _pseudo_inverse(A)
    return g


def _pseudo_inverse(A: np.ndarray) -> np.ndarray:
    """A^-1 by Cholesky when A is well conditioned, else the pseudo-inverse (redundant constraints)."""
    m = len(A)
    if m == 0:
        return np.zeros((0, 0))
    scale = float(np.max(np.diag(A)))
    try:
        L = np.linalg.cholesky(A)
        d = np.diag(L)
        if scale > 0 and float(np.min(d)) ** 2 > 1e-10 * scale:
            Linv = np.linalg.solve(L, np.eye(m))
            return Linv.T @ Linv
    except np.linalg.LinAlgError:
        pass
    return np.linalg.pinv(A, rcond=1e-10, hermitian=True)


def _build_gmap(matter, state: State, cache) -> _GMap:
    plan = cache.plan
    ws = cache.ws
    ss = state._subs[matter._index]
    kin = _Kinematics(state, plan, ws, ss.q, ss.u)  # u: for force maps that depend on it (SpeedCoupler)
    g = _GMap()
    g.nrow, g.ncol = _n_rows(ws, plan, cache.layout)
    kin.nrow, kin.ncol = g.nrow, g.ncol
    out = _ForceMapBuilder()
    for cls, packed, eq, mp, mv, ma in plan.groups:
        cls._force_map(packed, kin, eq, out)
    cat = np.concatenate
    g.b_eq = cat(out.b_eq) if out.b_eq else np.zeros(0, dtype=np.intp)
    g.b_body = cat(out.b_body) if out.b_body else np.zeros(0, dtype=np.intp)
    g.b_F = np.ascontiguousarray(cat(out.b_F)) if out.b_F else np.zeros((0, 2, 3))
    g.m_eq = cat(out.m_eq) if out.m_eq else np.zeros(0, dtype=np.intp)
    g.m_u = cat(out.m_u) if out.m_u else np.zeros(0, dtype=np.intp)
    g.m_val = cat(out.m_val) if out.m_val else np.zeros(0)
    m, nu = plan.m, ws.nu
    G = np.zeros((m, nu))
    order = np.argsort(g.b_eq, kind="stable")
    starts = np.searchsorted(g.b_eq[order], np.arange(m + 1))
    zeros3 = np.zeros((max(1, len(g.b_eq)), 3))
    for k in range(m):
        sel = order[starts[k]:starts[k + 1]]
        if len(sel):
            ws.frame_jacobian_transpose(g.b_body[sel], zeros3[:len(sel)], g.b_F[sel], G[k])
    if len(g.m_eq):
        np.add.at(G, (g.m_eq, g.m_u), g.m_val)
    g.G = G
    return g


def forces_from_multipliers(g: _GMap, lam: np.ndarray, nb: int, nu: int, eq_mask=None):
    """Body forces (nb, 2, 3) and mobility forces (nu,) G^T-side of multipliers ``lam``."""
    F = np.zeros((nb, 2, 3))
    f = np.zeros(nu)
    w = lam[g.b_eq]
    wm = lam[g.m_eq]
    if eq_mask is not None:
        w = w * eq_mask[g.b_eq]
        wm = wm * eq_mask[g.m_eq]
    np.add.at(F, g.b_body, w[:, None, None] * g.b_F)
    np.add.at(f, g.m_u, wm * g.m_val)
    return F, f


# ====================================================================== the constrained solve
def solve_accelerations(matter, state: State, cache, udot0, A0, qdd0):
    """Constrained accelerations from the unconstrained ones: ``(udot, A_GB, qdotdot, lambda, aerr)``."""
    plan = cache.plan
    ws = cache.ws
    ss = state._subs[matter._index]
    g = gmap(matter, state, cache, need_inverse=True)
    kin = _Kinematics(state, plan, ws, ss.q, ss.u, ss.qdot, udot0, qdd0, A0)
    aerr = np.zeros(plan.m)
    acceleration_errors(plan, kin, aerr)
    lam = g.Ainv @ aerr
    du = lam @ g.YT
    udot = udot0 - du
    J_du = np.zeros((ws.nb, 2, 3))
    ws.jacobian(du, J_du)
    A = A0 - J_du
    N_du = np.zeros(ws.nq)
    ws.multiply_by_n(False, du, N_du)
    qdd = qdd0 - N_du
    if cache.layout.custom:  # Custom mobilizers fill their own qdotdot rows from udot
        np.copyto(ws.udot, udot)
        np.copyto(ws.qdotdot, qdd)
        for mb in cache.layout.custom:
            mb._realize_custom_acceleration(state, ws)
        qdd = ws.qdotdot.copy()
    # aerr is affine in udot: aerr(udot0 - Y lambda) = aerr(udot0) - A lambda, the residual of the
    # multiplier solve (nonzero only for inconsistent constraints); no second evaluation needed.
    aerr = aerr - g.A @ lam
    return udot, A, qdd, lam, aerr


def multiply_by_g(matter, state: State, cache, x: np.ndarray) -> np.ndarray:
    """G x from the acceleration-error routines: aerr(x) - aerr(0) at the State's velocities."""
    plan = cache.plan
    ws = cache.ws
    ss = state._subs[matter._index]
    A = np.zeros((ws.nb, 2, 3))
    ws.jacobian(x, A)
    Nx = np.zeros(ws.nq)
    ws.multiply_by_n(False, x, Nx)
    kin = _Kinematics(state, plan, ws, ss.q, ss.u, ss.qdot, x, Nx, A)
    e1 = np.zeros(plan.m)
    acceleration_errors(plan, kin, e1)
    kin.udot, kin.qdotdot, kin.A = np.zeros(ws.nu), np.zeros(ws.nq), np.zeros((ws.nb, 2, 3))
    e0 = np.zeros(plan.m)
    acceleration_errors(plan, kin, e0)
    return e1 - e0


# ====================================================================== projection
def _max_abs(x) -> float:
    return float(np.max(np.abs(x))) if len(x) else 0.0


def normalize_quaternions(q: np.ndarray, layout) -> None:
    for i in layout.quaternion_bodies:
        q0 = layout.qoff[i]
        quat = q[q0:q0 + 4]
        quat /= np.linalg.norm(quat)


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
        P = g.G[:plan.mp]
        du = np.linalg.lstsq(P, -ss.qerr[:plan.mp], rcond=None)[0]
        dq = np.zeros(cache.ws.nq)
        cache.ws.multiply_by_n(False, du, dq)
        q = matter.upd_q(state)
        q += dq
        normalize_quaternions(q, layout)
        changed = True
    else:
        system.realize(state, POSITION)
        err = _max_abs(ss.qerr[:plan.mp])
    if err > accuracy:
        raise RuntimeError(f"{matter._where()}: position projection failed at t = {state.get_time()}: the largest "
                           f"constraint error is {err:.3g} > {accuracy:.3g} (inconsistent or singular constraints?)")
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
        # Mass-weighted: du = -M^-1 G^T (G M^-1 G^T)^+ uerr changes the kinetic energy least.
        Ainv = g.Ainv if n == plan.m else _pseudo_inverse(g.A[:n, :n])
        du = -(Ainv @ ss.uerr[:n]) @ g.YT[:n]
        u = matter.upd_u(state)
        u += du
        changed = True
    else:
        system.realize(state, VELOCITY)
        err = _max_abs(ss.uerr[:n])
    if err > accuracy:
        raise RuntimeError(f"{matter._where()}: velocity projection failed at t = {state.get_time()}: the largest "
                           f"velocity constraint error is {err:.3g} > {accuracy:.3g}")
    return changed
