"""The constraint machinery of the matter subsystem: per-State plans, the G operators and the
constrained acceleration solve (projection is in ``constraint_projection``).

Per stage (all driven by ``SimbodyMatterSubsystem``'s hooks):

===========  ===================================================================================
Instance     ``build_plan``: the enabled constraints (and the equations of locks and Motions),
             grouped into parts (a row family of ``constraint_rows`` over the elements of a
             kind, or a kind's class methods), their equation numbers, the fixed layout of the
             force map, and the q_err/u_err/udot_err slots.
Position     position errors; the families' geometry at this q is kept in a fresh ``_GMap`` in
             a lazy Position-stage cache entry, which stays current until q, t or the Instance
             change (or u, for force maps that depend on it: SpeedCoupler).
(per q)      on first demand the ``_GMap`` gets the force map of every equation (the columns of
             ``G^T`` as forces at stations), ``G`` (m, nu) and the stations whose bias
             accelerations the fast rows read; then ``Y = M^-1 G^T``, ``A = G M^-1 G^T`` and A's
             factorization (``_Factor``).
Velocity     velocity errors: ``G u`` for the kinds whose errors are homogeneous linear in u, the
             kinds' own routines for the rest.
Acceleration ``udot0 = ABA(f)``; ``aerr0 = G udot0 + bias`` (one kernel call for the bias
             accelerations of all stations, another for their velocities); ``lambda = A^+ aerr0``;
             ``udot = udot0 - Y lambda``, and the body accelerations and qdotdot corrected by
             ``J (Y lambda)`` and ``N (Y lambda)``.
===========  ===================================================================================

Cost of a constrained forward-dynamics evaluation with m equations on n bodies: per q, m O(n)
sweeps for ``G`` and m for ``M^-1 G^T``, a dense (m, nu) x (nu, m) product and an O(m^3)
factorization; per u, O(n + m) kernel work and O(m^2) for the multipliers. Single elements of
the common kinds are evaluated in scalar arithmetic, where numpy's per-call cost would dominate.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack as _lapack

from ... import _core
from ...common.stage import ACCELERATION, INSTANCE, VELOCITY, Stage
from ...common.state import State

__all__: list[str] = []


# ====================================================================== kinematics handed to kinds
class _Kinematics:
    """What the error and force routines read: poses, velocities and (trial) accelerations.

    Attributes not given are None (class defaults, so a construction costs only what it sets).
    """

    t = q = u = qdot = udot = qdotdot = A = nrow = ncol = coord_q = None

    def __init__(self, state, plan, ws, q, u=None, qdot=None, udot=None, qdotdot=None, A=None, V=None):
        self.state = state
        self.ws = ws
        self.t = state._t
        self.q = q
        if u is not None:
            self.u, self.qdot = u, qdot
        if udot is not None:
            self.udot, self.qdotdot, self.A = udot, qdotdot, A
        self.R = ws.R_GB
        self.p = ws.p_GB
        self.V = ws.V_GB if V is None else V
        if plan is not None:
            self.coord_q = plan.coord_q


class _FamilyKinematics:
    """The little the family routines read (poses, velocities), without a full _Kinematics."""

    __slots__ = ("R", "p", "V", "ws")

    def __init__(self, ws):
        self.R, self.p, self.V, self.ws = ws.R_GB, ws.p_GB, ws.V_GB, ws


class _AccelContext:
    """What the fast acceleration rows of a family part read: ``Gud_part`` (its rows of G udot0),
    ``verr_part`` (its realized velocity errors), ``AB_part`` and ``VS_part`` (the bias
    accelerations and the velocities (angular, station) of its stations, (S, 2, 3)), ``V`` the
    body velocities, ``Abias`` (nb, 2, 3) the body bias accelerations and ``ws`` the kernels (for the
    families evaluated in the compiled core)."""

    __slots__ = ("Gud_part", "verr_part", "AB_part", "VS_part", "Abias", "V", "ws")


def kinematics_of_state(matter, state: State) -> _Kinematics:
    """Kinematics of a realized State (for Custom helpers called outside an evaluation)."""
    ss = matter._ss(state)
    st = ss.stage
    # At Instance or above the entry is current (its latest stage is Instance): read it without
    # get_cache_entry's checks, which cost more than the helper the user called; below, those checks raise.
    cache = ss.cache[matter._cache_index].value if st >= INSTANCE else matter._cache(state)
    ws = cache.ws
    kin = _Kinematics(state, cache.plan, ws, ss.q)
    if st >= VELOCITY:
        kin.u, kin.qdot = ss.u, ss.qdot
    if st >= Stage.Acceleration:
        kin.udot, kin.qdotdot, kin.A = ss.udot, ss.qdotdot, cache.A_GB
    return kin


def kinematics_arrays(matter, state: State) -> tuple:
    """``(R_GB, p_GB, V_GB, A_GB or None)`` of a realized State: the arrays `kinematics_of_state` would hold
    (A_GB from Acceleration on), for the Custom helpers that read only these, without building it."""
    ss = matter._ss(state)
    st = ss.stage
    cache = ss.cache[matter._cache_index].value if st >= INSTANCE else matter._cache(state)
    ws = cache.ws
    return ws.R_GB, ws.p_GB, ws.V_GB, (cache.A_GB if st >= ACCELERATION else None)


# ====================================================================== the Instance plan
class _Part:
    """Equations evaluated together: the rows of one row family over the elements of a kind
    (``fam`` set), or the elements of a kind (or one Custom constraint) through its class methods."""

    __slots__ = ("fam", "P", "cls", "packed", "eq", "eq_flat", "eq_v", "mp", "mv", "ma", "from_g", "holonomic",
                 "needs_vs", "R", "E", "S", "e0", "e1", "s0", "s1", "whole", "all_eqs")

    def __init__(self):
        self.fam = self.P = self.cls = self.packed = None
        # whole: its entries and stations are all the plan's; all_eqs: its rows are equations 0..m-1
        self.from_g = self.holonomic = self.needs_vs = self.whole = self.all_eqs = False
        self.R = self.E = self.S = self.e0 = self.e1 = self.s0 = self.s1 = 0


class _Plan:
    """Instance-stage plan of one State: enabled elements grouped into parts and their equation numbers.

    The force map's layout is fixed here too: the family parts' entries (their bodies and the
    parts of their stations and forces that do not depend on q) and their bias stations.
    """

    def __init__(self):
        self.parts: list[_Part] = []
        self.slots: dict = {}  # constraint index -> global equation numbers
        self.motion_slots: dict = {}  # mobilized body index -> equation numbers of its lock/Motion
        self.mp = self.mv = self.ma = self.m = 0
        self.coord_q = np.zeros(0, dtype=np.intp)
        self.coord_body: list[int] = []
        self.customs: list = []
        self.may_disagree = False  # whether some part's force routine may not be G^T (Custom, Jit)
        self.u_dependent = False  # whether some force map depends on u (then G is kept only while u is)
        self.velocity_from_g = False  # whether some velocity errors are rows of G u
        self.needs_vs = False  # whether some fast rows read station velocities
        self.quaternion_err_start = 0
        # family-part force map layout
        self.e_body = np.zeros(0, dtype=np.intp)
        self.e_st0 = np.zeros((0, 3))
        self.e_F0 = np.zeros((0, 2, 3))
        self.st_b = np.zeros(0, dtype=np.intp)
        self.st_s0 = np.zeros((0, 3))
        self.rows = None  # (eq, start, stop) arrays of the family parts' rows
        self.b_eq = np.zeros(0, dtype=np.intp)  # the equation of each family entry
        self.copy_st = self.copy_F = self.copy_sts = False  # which templates the family force maps write
        self.class_parts = False  # whether some part is evaluated through class methods
        self.all_velocity_from_g = False  # whether every velocity-level row is a row of G u
        self._matter = None
        self._state = None
        self._layout = None

    def add_coord(self, body: int, which_q: int, who) -> int:
        """Register coordinate ``which_q`` of ``body``; returns its coordinate id."""
        layout = self._layout
        q0, n = int(layout.qoff[body]), int(layout.qoff[body + 1] - layout.qoff[body])
        if not 0 <= which_q < n:
            raise IndexError(f"{who!r}: {self._matter.get_mobilized_body(body)!r} has no q[{which_q}] (it has {n})")
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

    def _add_family_part(self, fam, P, eq: np.ndarray) -> _Part:
        part = _Part()
        part.fam, part.P = fam, P
        part.eq_flat = np.ascontiguousarray(eq, dtype=np.intp).reshape(-1)
        part.R, part.E = P["e_bodies"].shape
        part.S = len(P["s_bodies"])
        part.holonomic = bool(part.eq_flat[0] < self.mp)
        part.from_g = bool(part.eq_flat[0] < self.mp + self.mv)
        part.needs_vs = bool(fam.needs_vs) and part.S > 0
        self.parts.append(part)
        return part

    def _lay_out_family_entries(self) -> None:
        fparts = [p for p in self.parts if p.fam is not None]
        self.class_parts = len(fparts) < len(self.parts)
        if not fparts:
            return
        e = s = 0
        r_eq, r_start, r_stop = [], [], []
        for part in fparts:
            part.e0, part.s0 = e, s
            r_eq.extend(part.eq_flat.tolist())
            r_start.extend(range(e, e + part.R * part.E, part.E))
            e += part.R * part.E
            s += part.S
            part.e1, part.s1 = e, s
            r_stop.extend(range(part.e0 + part.E, e + 1, part.E))
        self.rows = tuple(np.array(x, dtype=np.intp) for x in (r_eq, r_start, r_stop))
        self.b_eq = np.repeat(np.asarray(r_eq, dtype=np.intp), np.subtract(r_stop, r_start))
        self.e_body = np.concatenate([p.P["e_bodies"].reshape(-1) for p in fparts]).astype(np.intp)
        self.e_st0 = np.zeros((e, 3))
        self.e_F0 = np.zeros((e, 2, 3))
        self.st_b = np.concatenate([p.P["s_bodies"] for p in fparts]).astype(np.intp)
        self.st_s0 = np.zeros((s, 3))
        for part in fparts:
            P = part.P
            sl = slice(part.e0, part.e1)
            if "e_st0" in P:
                self.e_st0[sl] = P["e_st0"].reshape(-1, 3)
            if "e_F0" in P:
                self.e_F0[sl] = P["e_F0"].reshape(-1, 2, 3)
            if "s_st0" in P:
                self.st_s0[part.s0:part.s1] = P["s_st0"]
            self.copy_st |= "st" in P["writes"]
            self.copy_F |= "F" in P["writes"]
            self.copy_sts |= "sts" in P["writes"]
            part.whole = part.s0 == 0 and part.s1 == s and part.e0 == 0 and part.e1 == e
            part.all_eqs = bool(np.array_equal(part.eq_flat, np.arange(self.m)))
        self.needs_vs = any(p.needs_vs for p in fparts)


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
        # (a kind whose elements differ in their code, Constraint.Jit's kernels, groups them by _bulk_group)
        key = (type(c), getattr(c, "_bulk_group", None)) if c._bulk else id(c)
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
        if hasattr(cls, "_parts"):
            for fam, rows_packed, cols in cls._parts(packed):
                part = plan._add_family_part(fam, rows_packed, eq[:, cols])
                plan.velocity_from_g |= part.from_g
            continue
        c0 = items[0][0]
        part = _Part()
        part.cls, part.packed, part.eq = cls, packed, eq
        part.mp, part.mv, part.ma = c0._mp, c0._mv, c0._ma
        part.eq_v = np.ascontiguousarray(eq[:, :part.mp + part.mv])
        part.eq_flat = eq.reshape(-1)
        part.holonomic = part.mp > 0
        part.from_g = bool(getattr(cls, "_velocity_from_g", False)) and part.mp + part.mv > 0
        plan.parts.append(part)
        plan.may_disagree |= bool(getattr(cls, "_forces_may_disagree", False))
        plan.u_dependent |= bool(getattr(cls, "_force_map_uses_u", False))
        plan.velocity_from_g |= part.from_g
    plan._lay_out_family_entries()
    plan.all_velocity_from_g = all(p.from_g for p in plan.parts if p.fam is not None or p.mp + p.mv)
    for b, eqs in plan.motion_slots.items():
        plan.motion_slots[b] = np.concatenate(eqs)
    matter.allocate_q_err(state, plan.mp)
    matter.allocate_u_err(state, plan.mp + plan.mv)
    matter.allocate_udot_err(state, plan.m)
    return plan


# ====================================================================== realization (matter hooks)
def realize_position(matter, state: State, ss, cache) -> None:
    """Position errors into the State (the plan has equations)."""
    plan = cache.plan
    if plan.customs:
        matter._custom_constraint_hooks(state, "position", plan.customs)
    if plan.mp:
        position_errors(matter, state, plan, _Kinematics(state, plan, cache.ws, ss.q) if plan.class_parts
                        else _FamilyKinematics(cache.ws), ss.qerr)


def realize_velocity(matter, state: State, ss, cache) -> None:
    """Velocity errors into the State: rows of G u for the kinds linear in u, the rest by routine."""
    plan = cache.plan
    if plan.customs:
        matter._custom_constraint_hooks(state, "velocity", plan.customs)
    if plan.mp + plan.mv:
        if plan.all_velocity_from_g:
            G = gmap(matter, state, cache).G
            _core._k.matvec(G if plan.mv + plan.mp == plan.m else G[:plan.mp + plan.mv], ss.u, ss.uerr)
            return
        G = gmap(matter, state, cache).G if plan.velocity_from_g else None
        velocity_errors(plan, _Kinematics(state, plan, cache.ws, ss.q, ss.u, ss.qdot), ss.uerr, G)


def realize_acceleration(matter, state: State, ss, cache) -> None:
    """Constrained accelerations, multipliers and acceleration errors into the State."""
    ws = cache.ws
    solve_accelerations(matter, state, cache, ws.udot, ws.A_GB, ws.qdotdot, ss.udot, cache.A_GB, ss.qdotdot,
                        ss.multipliers, ss.udoterr)
    if cache.plan.customs:
        matter._custom_constraint_hooks(state, "acceleration", cache.plan.customs)


# ====================================================================== error evaluation
def position_errors(matter, state: State, plan: _Plan, kin, out: np.ndarray) -> None:
    """Holonomic errors into out (mp,). The families' per-q geometry is kept in a fresh (lazy,
    Position-stage) gmap entry for the force map at this q."""
    geoms = []
    for part in plan.parts:
        if not part.holonomic:
            geoms.append(None)
        elif part.fam is not None:
            e, geom = part.fam.position(part.P, kin)
            out[part.eq_flat] = e
            geoms.append(geom)
        else:
            out[part.eq[:, :part.mp]] = part.cls._position_errors(part.packed, kin)
            geoms.append(None)
    g = _GMap()
    g.geoms = geoms
    entry = state._subs[matter._index].cache[matter._gmap_index]
    entry.value = g
    entry.marked_at = state._epoch


def velocity_errors(plan: _Plan, kin: _Kinematics, out: np.ndarray, G=None) -> None:
    """pverr and verr into out (mp + mv,); with G given, the linear kinds' rows are G u."""
    nv = plan.mp + plan.mv
    if G is not None:
        _core._k.matvec(G[:nv] if nv < len(G) else G, kin.u, out)
    for part in plan.parts:
        if G is not None and part.from_g:
            continue
        if part.fam is not None:
            if part.from_g:
                out[part.eq_flat] = part.fam.velocity(part.P, kin)
        elif part.mp + part.mv:
            out[part.eq_v] = part.cls._velocity_errors(part.packed, kin)


def acceleration_errors(plan: _Plan, kin: _Kinematics, out: np.ndarray) -> None:
    """All acceleration errors into out (m,), from the reference routines."""
    for part in plan.parts:
        if part.fam is not None:
            out[part.eq_flat] = part.fam.acceleration(part.P, kin)
        else:
            out[part.eq] = part.cls._acceleration_errors(part.packed, kin)


# ====================================================================== the force map and G
class _ForceMapBuilder:
    """Collects the forces of unit multipliers of the class parts (Custom, couplers, Motions).

    Body entries are spatial forces (torque, force) in Ground applied at a station of a body (in
    the body frame); each ``add_rows`` call adds R rows of E entries each, the entries of a row
    contiguous. Mobility entries are (eq, u, value).
    """

    def __init__(self):
        self.r_eq, self.r_len = [], []
        self.e_body, self.e_st, self.e_F = [], [], []
        self.m_eq, self.m_u, self.m_val = [], [], []

    def add_rows(self, eq, bodies, stations, F) -> None:
        eq = np.asarray(eq, dtype=np.intp).reshape(-1)
        bodies = np.asarray(bodies, dtype=np.intp).reshape(len(eq), -1)
        self.r_eq.append(eq)
        self.r_len.append(np.full(len(eq), bodies.shape[1], dtype=np.intp))
        self.e_body.append(bodies.reshape(-1))
        self.e_st.append(np.asarray(stations, dtype=np.float64).reshape(-1, 3))
        self.e_F.append(np.asarray(F, dtype=np.float64).reshape(-1, 2, 3))

    def add_mobility_forces(self, eq, u, val) -> None:
        self.m_eq.append(np.asarray(eq, dtype=np.intp).reshape(-1))
        self.m_u.append(np.asarray(u, dtype=np.intp).reshape(-1))
        self.m_val.append(np.asarray(val, dtype=np.float64).reshape(-1))


class _GMap:
    """Position-level constraint operators of one State (kept until q changes).

    Created by the Position hook with the families' geometry at that q (``geoms``); G and the
    entries are filled on first demand, M^-1 G^T, A and its factorization on the first demand for
    them. Body entries: ``e_body`` (E,), ``e_st`` (E, 3) stations in the body frames, ``e_F`` (E, 2, 3)
    (torque, force at the station) in Ground, ``b_eq`` (E,) their equations; mobility entries
    ``m_eq``, ``m_u``, ``m_val``; bias stations ``st_b``, ``st_s``; ``handles`` per part.
    """

    e_body = e_st = e_F = b_eq = b_F = m_eq = m_u = m_val = G = YT = A = factor = None
    nrow = ncol = handles = st_b = st_s = R = None
    geoms = None

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """A^+ rhs (the minimum-norm multipliers when A is singular)."""
        return self.factor.solve(rhs)

    def __deepcopy__(self, memo):
        # A State copy keeps no Position-stage cache current, so this map could never be reused.
        return None

    def origin_forces(self) -> np.ndarray:
        """The body entries' forces moved to the body origins, (E, 2, 3) (for reporting forces)."""
        if self.b_F is None:
            F = self.e_F.copy()
            if len(F):
                r = np.matmul(self.R.take(self.e_body, axis=0), self.e_st[:, :, None])[:, :, 0]
                F[:, 0] += np.cross(r, F[:, 1])
            self.b_F = F
        return self.b_F


class _Factor:
    """Factorization of the symmetric positive semi-definite A = G M^-1 G^T for repeated solves.

    Rows of G that are exactly zero (a planar loop's out-of-plane row) have zero multipliers and
    are left out; the rest is factored by Cholesky (``simtk_core.factor_kept``: its own loops up to
    ``LAPACK_CHOLESKY_ABOVE`` equations, LAPACK's dpotrf above, as the compiled time loop factors)
    when well conditioned, else by its eigen-decomposition. Either way the solution
    is the pseudo-inverse one, the multipliers of least norm, as Simbody's rank-revealing
    factorization gives them.
    """

    __slots__ = ("chol", "pinv", "keep", "m", "inv1")

    def __init__(self, A: np.ndarray):
        self.m = m = len(A)
        self.chol = self.pinv = self.keep = self.inv1 = None  # chol: the compiled factor (C order)
        if m == 1:
            a = float(A[0, 0])
            self.inv1 = 1.0 / a if a > 0.0 else 0.0
            return
        if m == 0:
            self.pinv = np.zeros((0, 0))
            return
        # the same decisions as the compiled time loop's, in the same compiled call
        L, keep = np.empty((m, m)), np.empty(m, dtype=np.intp)
        nk = _core._k.factor_kept(A, L, keep)
        if nk == -1:  # no positive diagonal: every row of G is zero
            self.pinv = np.zeros((m, m))
            return
        if nk >= 0:
            self.chol = L if nk == m else np.ascontiguousarray(L[:nk, :nk])
            self.keep = None if nk == m else keep[:nk].copy()
            return
        self._eigen(A)

    def _eigen(self, A: np.ndarray) -> None:
        """The pseudo-inverse of a singular or ill-conditioned A from its eigen-decomposition."""
        w, V, info = _lapack.dsyevd(A, compute_v=1, lower=1)
        if info != 0:
            w, V = np.linalg.eigh(A, UPLO="L")
        keep = w > 1e-10 * max(float(w[-1]), 0.0)
        Vk = V[:, keep]
        self.pinv = (Vk / w[keep]) @ Vk.T

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        if self.inv1 is not None:
            return rhs * self.inv1
        if self.chol is not None:
            if self.keep is None:
                return self._chol_solve(rhs)
            x = np.zeros(self.m)
            x[self.keep] = self._chol_solve(rhs.take(self.keep))
            return x
        return self.pinv @ rhs

    def step(self, rhs: np.ndarray, YT: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The multipliers lam = A^+ rhs and du = lam YT (nu,), as the compiled time loop takes them:
        scalar arithmetic for one equation, one compiled call for the Cholesky factor."""
        if self.inv1 is not None:
            lam1 = float(rhs[0]) * self.inv1
            return np.array([lam1]), YT[0] * lam1
        if self.chol is not None:
            lam, du = np.empty(self.m), np.empty(YT.shape[1])
            _core._k.multiplier_step(np.ascontiguousarray(rhs), self.chol, _NO_INT if self.keep is None else self.keep,
                                     YT, lam, du)
            return lam, du
        lam = self.solve(rhs)
        return lam, lam @ YT

    def _chol_solve(self, rhs: np.ndarray) -> np.ndarray:
        x = np.empty(len(self.chol))
        _core._k.cholesky_solve(self.chol, np.ascontiguousarray(rhs, dtype=np.float64), x)
        return x


def _n_rows(state: State, ws, plan: _Plan, layout):
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
    if layout.custom:
        _custom_n_rows(state, ws, plan, layout, vals)
    return vals, cols


def _custom_n_rows(state: State, ws, plan: _Plan, layout, vals: np.ndarray) -> None:
    """The rows of ``vals`` of coordinates on Custom (and reversed) bodies, which the kernels leave at 0:
    N's columns from their owners' Python (``multiply_by_n_matrix``), one call per speed of each such body
    per q, whatever the number of equations on it."""
    coord_body = np.asarray(plan.coord_body, dtype=np.intp)
    x = np.zeros(ws.nu)
    out = np.zeros(ws.nq)
    for mb in layout.custom:
        b = mb._index
        ks = np.flatnonzero(coord_body == b)
        if not len(ks):
            continue
        u0, u1 = int(layout.uoff[b]), int(layout.uoff[b + 1])
        qk = plan.coord_q[ks]
        for j in range(u1 - u0):
            x[u0 + j] = 1.0
            mb._multiply_by_n_rows(state, False, x, out)
            x[u0 + j] = 0.0
            vals[ks, j] = out[qk]


def multiply_by_n_all(state: State, layout, ws, x: np.ndarray, out: np.ndarray) -> None:
    """out = N x over all bodies: the kernels' rows, then those of the Custom (and reversed) bodies."""
    ws.multiply_by_n(False, x, out)
    for mb in layout.custom:
        mb._multiply_by_n_rows(state, False, x, out)


def gmap(matter, state: State, cache, need_inverse: bool = False) -> _GMap:
    """The force map and G (m, nu) of ``state`` and, when asked, M^-1 G^T, A and A's factorization."""
    ss = state._subs[matter._index]
    entry = ss.cache[matter._gmap_index]
    g = entry.value
    if g is None or not state._cache_is_current(ss, entry) or (
            cache.plan.u_dependent and entry.marked_at < state._last_invalidation(VELOCITY)):
        g = _GMap()
        entry.value = g
        entry.marked_at = state._epoch
    if g.G is None:
        _build_gmap(matter, state, cache, g)
    if need_inverse and g.factor is None:
        ws = cache.ws
        G = g.G
        m = len(G)
        YT = np.empty_like(G)
        A = np.empty((m, m))
        ws.constraint_operators(G, YT, A)  # one call: the m sweeps and A's triangle, mirrored
        g.YT, g.A = YT, A
        g.factor = _Factor(A)
    return g


_NO_INT = np.zeros(0, dtype=np.intp)
_NO_FLOAT = np.zeros(0)


def _build_gmap(matter, state: State, cache, g: _GMap) -> None:
    """Fill ``g``'s force map and G from the families' geometry at this q (recomputed if absent)."""
    plan = cache.plan
    ws = cache.ws
    ss = state._subs[matter._index]
    if plan.class_parts:
        kin = _Kinematics(state, plan, ws, ss.q, ss.u)  # u: for force maps that depend on it (SpeedCoupler)
        if plan.coord_body:
            g.nrow, g.ncol = _n_rows(state, ws, plan, cache.layout)
            kin.nrow, kin.ncol = g.nrow, g.ncol
    else:
        kin = _FamilyKinematics(ws)
    # The templates hold what does not depend on q; copy those the force maps write into.
    e_st = plan.e_st0.copy() if plan.copy_st else plan.e_st0
    e_F = plan.e_F0.copy() if plan.copy_F else plan.e_F0
    st_s = plan.st_s0.copy() if plan.copy_sts else plan.st_s0
    geoms = g.geoms
    handles = []
    out = None
    for i, part in enumerate(plan.parts):
        if part.fam is not None:
            R, E = part.R, part.E
            if part.whole:
                st, F, sts = e_st.reshape(R, E, 3), e_F.reshape(R, E, 2, 3), st_s
            else:
                e0, e1 = part.e0, part.e1
                st, F, sts = e_st[e0:e1].reshape(R, E, 3), e_F[e0:e1].reshape(R, E, 2, 3), st_s[part.s0:part.s1]
            handles.append(part.fam.force_map(part.P, kin, geoms[i] if geoms is not None else None, st, F, sts))
        else:
            if out is None:
                out = _ForceMapBuilder()
            handles.append(part.cls._force_map(part.packed, kin, part.eq, out))
    g.handles = handles
    g.geoms = None
    G = np.zeros((plan.m, ws.nu))
    e_body = plan.e_body
    jt = ws.frame_jacobian_transpose
    if plan.rows is not None:
        ws.frame_jacobian_transpose_rows(e_body, e_st, e_F, *plan.rows, G)  # every family row in one call
    g.e_body, g.e_st, g.e_F, g.b_eq = e_body, e_st, e_F, plan.b_eq
    g.m_eq, g.m_u, g.m_val = _NO_INT, _NO_INT, _NO_FLOAT
    if out is not None:
        cat = np.concatenate
        if out.r_eq:
            # Rows of the class parts (Custom): possibly more than one run per equation, so add.
            tmp = np.empty(ws.nu)
            r_eq, r_len = cat(out.r_eq), cat(out.r_len)
            xb, xs, xF = cat(out.e_body), np.ascontiguousarray(cat(out.e_st)), np.ascontiguousarray(cat(out.e_F))
            stop = np.cumsum(r_len)
            for k, s0, s1 in zip(r_eq.tolist(), (stop - r_len).tolist(), stop.tolist()):
                jt(xb[s0:s1], xs[s0:s1], xF[s0:s1], tmp)
                G[k] += tmp
            g.e_body, g.e_st, g.e_F = cat([e_body, xb]), cat([e_st, xs]), cat([e_F, xF])
            g.b_eq = np.concatenate([plan.b_eq, np.repeat(r_eq, r_len)])
        if out.m_eq:
            g.m_eq, g.m_u, g.m_val = cat(out.m_eq), cat(out.m_u), cat(out.m_val)
            np.add.at(G, (g.m_eq, g.m_u), g.m_val)
    g.st_b, g.st_s = plan.st_b, st_s
    g.R = ws.R_GB  # rewritten only by a change of q, which also makes this map stale
    g.G = G


def forces_from_multipliers(g: _GMap, lam: np.ndarray, nb: int, nu: int, eq_mask=None):
    """Body forces (nb, 2, 3) at the body origins and mobility forces (nu,), G^T-side, of ``lam``."""
    F = np.zeros((nb, 2, 3))
    f = np.zeros(nu)
    b_eq = g.b_eq
    w = lam[b_eq]
    wm = lam[g.m_eq]
    if eq_mask is not None:
        w = w * eq_mask[b_eq]
        wm = wm * eq_mask[g.m_eq]
    np.add.at(F, g.e_body, w[:, None, None] * g.origin_forces())
    np.add.at(f, g.m_u, wm * g.m_val)
    return F, f


# ====================================================================== the constrained solve
def solve_accelerations(matter, state: State, cache, udot0, A0, qdd0, udot, A, qdd, lam_out=None, aerr_out=None):
    """Constrained accelerations from the unconstrained ones ``udot0``, ``A0``, ``qdd0``, written into
    ``udot``, ``A``, ``qdd`` (and the multipliers and the acceleration errors, when given)."""
    plan = cache.plan
    ws = cache.ws
    ss = state._subs[matter._index]
    g = gmap(matter, state, cache, need_inverse=True)
    Gud = np.empty(plan.m)
    _core._k.matvec(g.G, udot0, Gud)
    verr = ss.uerr
    aerr = np.empty(plan.m)
    st_b = g.st_b
    if len(st_b):
        AB = np.empty((len(st_b), 2, 3))
        ws.frame_bias(st_b, g.st_s, AB)
        if plan.needs_vs:
            VS = np.empty((len(st_b), 2, 3))
            ws.frame_jacobian(st_b, g.st_s, ss.u, VS)
    ctx = _AccelContext()
    ctx.V, ctx.Abias, ctx.ws = ws.V_GB, ws.A_bias, ws
    kin = None
    for part, h in zip(plan.parts, g.handles):
        eq = part.eq_flat
        if part.fam is not None:
            if part.all_eqs:
                ctx.Gud_part, ctx.verr_part = Gud, verr
            else:
                ctx.Gud_part = Gud.take(eq)
                ctx.verr_part = verr.take(eq) if part.from_g else None
            if part.S:
                if part.whole:
                    ctx.AB_part = AB
                    if part.needs_vs:
                        ctx.VS_part = VS
                else:
                    ctx.AB_part = AB[part.s0:part.s1]
                    if part.needs_vs:
                        ctx.VS_part = VS[part.s0:part.s1]
            aerr[eq] = part.fam.fast(part.P, h, ctx)
        else:
            if kin is None:
                kin = _Kinematics(state, plan, ws, ss.q, ss.u, ss.qdot, udot0, qdd0, A0)
                if g.nrow is not None:
                    kin.nrow, kin.ncol = g.nrow, g.ncol
            aerr[part.eq] = part.cls._acceleration_errors(part.packed, kin)
    factor = g.factor
    lam, du = factor.step(aerr, g.YT)
    ws.subtract_correction(du, udot0, A0, qdd0, udot, A, qdd)  # udot0 - du, A0 - J du, qdd0 - N du
    if cache.layout.custom:  # Custom mobilizers fill their own qdotdot rows from udot
        np.copyto(ws.udot, udot)
        np.copyto(ws.qdotdot, qdd)
        for mb in cache.layout.custom:
            mb._realize_custom_acceleration(state, ws)
        np.copyto(qdd, ws.qdotdot)
    if lam_out is not None:
        lam_out[:] = lam
    if aerr_out is not None:
        # aerr is affine in udot: aerr(udot0 - Y lambda) = aerr(udot0) - A lambda, the residual of
        # the multiplier solve (nonzero only for inconsistent constraints). That holds where G, taken
        # from the force routines, is also the error routines' gradient: the built-in kinds.
        if factor.inv1 is not None:
            aerr_out[0] = float(aerr[0]) - float(g.A[0, 0]) * float(lam[0])
        else:
            _core._k.matvec(g.A, lam, aerr_out)
            np.subtract(aerr, aerr_out, out=aerr_out)
        if plan.may_disagree:
            _user_acceleration_errors(state, plan, ws, ss, g, udot, qdd, A, aerr_out)


def _user_acceleration_errors(state: State, plan, ws, ss, g: _GMap, udot, qdd, A, out: np.ndarray) -> None:
    """The rows of ``out`` of the parts whose force routines may disagree with their error routines
    (Constraint.Custom, Constraint.Jit), evaluated at the accelerations obtained: a force routine that is not G^T
    leaves the constraint violated, and the affine shortcut would report it satisfied."""
    kin = None
    for part in plan.parts:
        if part.fam is None and getattr(part.cls, "_forces_may_disagree", False):
            if kin is None:
                kin = _Kinematics(state, plan, ws, ss.q, ss.u, ss.qdot, udot, qdd, A)
                if g.nrow is not None:
                    kin.nrow, kin.ncol = g.nrow, g.ncol
            out[part.eq] = part.cls._acceleration_errors(part.packed, kin)


def multiply_by_g(matter, state: State, cache, x: np.ndarray) -> np.ndarray:
    """G x from the acceleration-error routines: aerr(x) - aerr(0) at the State's velocities."""
    plan = cache.plan
    ws = cache.ws
    ss = state._subs[matter._index]
    A = np.zeros((ws.nb, 2, 3))
    ws.jacobian(x, A)
    Nx = np.zeros(ws.nq)
    multiply_by_n_all(state, cache.layout, ws, x, Nx)
    kin = _Kinematics(state, plan, ws, ss.q, ss.u, ss.qdot, x, Nx, A)
    e1 = np.zeros(plan.m)
    acceleration_errors(plan, kin, e1)
    kin.udot, kin.qdotdot, kin.A = np.zeros(ws.nu), np.zeros(ws.nq), np.zeros((ws.nb, 2, 3))
    e0 = np.zeros(plan.m)
    acceleration_errors(plan, kin, e0)
    return e1 - e0
