"""Vectorized row families of the geometric built-in constraints, written as Simbody writes them.

Each family evaluates K rows (or K point pairs) at once from the pose, velocity and acceleration
arrays of the matter subsystem (all in Ground), and reproduces Simbody's equations exactly, also
off the constraint manifold:

===============  ===================================================================================
``Coincident``   Ball and the translation rows of Weld: station S (s2 on body 2) and P (s1 on body 1)
                 coincide. As in Simbody the three rows are measured and expressed in the *ancestor*
                 A of the two bodies, and body 1 takes its reaction at its material point C that is
                 currently at S (not at P):
                 ``perr = R_AG (p_S - p_P)``, ``pverr = R_AG (v_S - v_C)``,
                 ``paerr = R_AG (a_S - a_C - 2 w_GA x (v_S - v_C))`` with ``a_C`` the acceleration of
                 the material point C. Off the manifold pverr is not d/dt perr: it is
                 ``d/dt perr - w_AB1 x perr`` and ``paerr = d/dt pverr + w_AB1 x pverr`` (A-frame
                 derivatives), Simbody's choice.
``Plane``        PointInPlane, and PointOnLine as two of them: ``n . (p_S - p_B) - h`` with n fixed on
                 the plane body B; the reaction on B acts at its material point C at S. These are
                 scalars with exact time derivatives, so the frame they are computed in is immaterial.
``Rod``          ``|p_S2 - p_S1| - L`` along Cz = unit(p_S2 - p_S1), forces at the two stations; when the
                 stations coincide (|d| < eps^1.25) Cz is body 1's z axis, as in Simbody.
``Angle``        ConstantAngle, ConstantOrientation and Weld's rotation rows: ``b . f - cos(theta)``
                 for unit axes b (base) and f (follower), torques about c = f x b.
``NoSlip``       NoSlip1D: ``n . (v1_P - v0_P)`` at the contact point P and direction n fixed on the
                 case body; as in Simbody the acceleration row is that of the material points P0,
                 P1 (``n . (a1_P - a0_P - (w_GC + w_GA) x (v1_P - v0_P))`` in Ground terms), which
                 equals d/dt verr only while both material points move with P.
===============  ===================================================================================

A family's packed data ``P`` (from ``pack``) fixes its layout for the whole Instance: ``R`` rows
(equations) of ``E`` force entries each, ``e_bodies`` (R, E) the bodies of the entries,
``s_bodies`` (S,) the bodies of the S stations whose bias accelerations the fast rows read, and
templates ``e_st0`` (R, E, 3), ``e_F0`` (R, E, 2, 3), ``s_st0`` (S, 3) for the parts that do not
depend on q, and ``writes``, which of the three ``force_map`` writes at each q ("st", "F", "sts").
``needs_vs`` (a class attribute) says whether ``fast`` reads the stations' velocities. Its routines:

- ``position(P, kin) -> (perr (R,), geometry)``: the geometry is handed back to ``force_map`` at
  the same q, so the per-q work is done once;
- ``velocity`` and ``acceleration``: the reference rows (R,), used for the operators (G x) and
  the families' own checks;
- ``force_map(P, kin, geometry, st, F, sts) -> handle``: once per q, write the entries' stations
  (in the body frames), their forces (torque, force at the station, in Ground) for a unit
  multiplier, and the bias stations, into the views given;
- ``fast(P, handle, ctx) -> (R,)``: the acceleration rows at the unconstrained accelerations as
  ``G udot0 + bias``, the biases from one kernel call for the stations of all families.

Every family evaluates ``position`` (the holonomic ones), ``force_map`` and ``fast`` in the compiled
core (``core/constraint_rows.pxi``), the functions the compiled time loop calls, so a constrained
trajectory is the same on both loops; their ``velocity`` and ``acceleration`` rows stay numpy, the
independent reference.

Shapes: ``R`` (nb, 3, 3), ``p`` (nb, 3), ``V`` and ``A`` (nb, 2, 3) = (angular, body-origin
linear) in Ground.
"""
from __future__ import annotations

import numpy as np

from ... import _core

__all__: list[str] = []

_NO_FLOAT = np.zeros(0)
_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])
#: Rod: below this distance the stations are taken to coincide (Simbody's TinyReal = eps^1.25).
_TINY = float(np.finfo(float).eps) ** 1.25


# ---------------------------------------------------------------------- small vectorized helpers
def _take(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return a.take(idx, axis=0)


def _rot(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R[k] @ v[k] for (K,3,3) and (K,3)."""
    return np.matmul(R, v[..., None])[..., 0]


def _rot_t(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R[k]^T @ v[k] for (K,3,3) and (K,3)."""
    return np.matmul(v[..., None, :], R)[..., 0, :]


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of broadcastable (..., 3) arrays (numpy's np.cross is ~10x slower)."""
    return a.take(_I1, axis=-1) * b.take(_I2, axis=-1) - a.take(_I2, axis=-1) * b.take(_I1, axis=-1)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=-1)


def _stations(kin, b: np.ndarray, s: np.ndarray):
    """Offsets r = R_GB s and locations p_GB + r of stations s (K,3) on bodies b (K,)."""
    r = np.matmul(kin.R.take(b, axis=0), s[:, :, None])[:, :, 0]
    return r, kin.p.take(b, axis=0) + r


def _material_velocity(V: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Velocity of the material points at offsets r (K,3) of bodies with spatial velocities V (K,2,3)."""
    return V[:, 1] + _cross(V[:, 0], r)


def _material_acceleration(V: np.ndarray, A: np.ndarray, r: np.ndarray) -> np.ndarray:
    w = V[:, 0]
    return A[:, 1] + _cross(A[:, 0], r) + _cross(w, _cross(w, r))


def _intp(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.intp).reshape(-1)


def _vecs(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1, 3)


def _pair_layout(P: dict, first: np.ndarray, second: np.ndarray, rows_per_pair: int = 1) -> dict:
    """Entries (first, second) on every row; bias stations: all firsts, then all seconds."""
    K = len(first)
    e = np.stack([first, second], axis=1)
    P["e_bodies"] = np.repeat(e, rows_per_pair, axis=0) if rows_per_pair > 1 else e
    P["s_bodies"] = np.concatenate([first, second])
    P["K"] = K
    P["R"] = K * rows_per_pair
    return P


# ====================================================================== Coincident (Ball, Weld translation)
class Coincident:
    """Point coincidence in the ancestor frame; K point pairs, three rows each (R = 3K)."""

    needs_vs = False

    @staticmethod
    def pack(b1, s1, b2, s2, ancestor) -> dict:
        b1, b2, a = _intp(b1), _intp(b2), _intp(ancestor)
        P = _pair_layout(dict(b1=b1, b2=b2, s1=_vecs(s1), s2=_vecs(s2), a=a, ground=not a.any()), b2, b1, 3)
        K = P["K"]
        st = np.zeros((K, 3, 2, 3))
        st[:, :, 0] = P["s2"][:, None, :]
        P["e_st0"] = st.reshape(-1, 2, 3)
        s_st = np.zeros((2 * K, 3))
        s_st[:K] = P["s2"]
        P["s_st0"] = s_st
        if P["ground"]:  # the row directions are the Ground axes, the same for every q
            F = np.zeros((K, 3, 2, 2, 3))
            F[:, :, 0, 1] = np.eye(3)
            F[:, :, 1, 1] = -np.eye(3)
            P["e_F0"] = F.reshape(-1, 2, 2, 3)
        P["writes"] = {"st", "sts"} if P["ground"] else {"st", "sts", "F"}
        return P

    @staticmethod
    def position(P, kin):
        K = P["K"]
        perr, S = np.empty(3 * K), np.empty((K, 3))  # S: the stations on body 2, in Ground
        _core._k.coincident_position(kin.ws, P["b1"], P["s1"], P["b2"], P["s2"], P["a"], P["ground"], perr, S)
        return perr, S

    @staticmethod
    def _relative_velocity(P, kin, r2, S):
        """v_S - v_C (K,3) in Ground, C the material point of body 1 at S."""
        rC = S - _take(kin.p, P["b1"])
        return _material_velocity(_take(kin.V, P["b2"]), r2) - _material_velocity(_take(kin.V, P["b1"]), rC), rC

    @staticmethod
    def velocity(P, kin) -> np.ndarray:
        r2, S = _stations(kin, P["b2"], P["s2"])
        dv, _ = Coincident._relative_velocity(P, kin, r2, S)
        return (dv if P["ground"] else _rot_t(_take(kin.R, P["a"]), dv)).reshape(-1)

    @staticmethod
    def acceleration(P, kin) -> np.ndarray:
        r2, S = _stations(kin, P["b2"], P["s2"])
        dv, rC = Coincident._relative_velocity(P, kin, r2, S)
        b1, b2 = P["b1"], P["b2"]
        e = (_material_acceleration(_take(kin.V, b2), _take(kin.A, b2), r2)
             - _material_acceleration(_take(kin.V, b1), _take(kin.A, b1), rC))
        if not P["ground"]:
            a = P["a"]
            e = _rot_t(_take(kin.R, a), e - 2.0 * _cross(_take(kin.V, a)[:, 0], dv))
        return e.reshape(-1)

    @staticmethod
    def force_map(P, kin, S, st, F, sts):
        """Row j of each pair: +n_j at S on body 2, -n_j at C on body 1, n_j = R_GA e_j."""
        if S is None:
            S = _stations(kin, P["b2"], P["s2"])[1]
        _core._k.coincident_force_map(kin.ws, P["b1"], P["a"], P["ground"], S, st, F, sts)
        return None if P["ground"] else True  # the fast rows rotate into A only when A is not Ground

    @staticmethod
    def fast(P, rotated, ctx) -> np.ndarray:
        out = np.empty(3 * P["K"])
        _core._k.coincident_fast(ctx.ws, P["a"], rotated is None, ctx.AB_part,
                                 ctx.verr_part if rotated is not None else _NO_FLOAT, ctx.Gud_part, out)
        return out


# ====================================================================== Plane (PointInPlane, PointOnLine)
class Plane:
    """K rows ``n . (p_S - p_B) - h``, n = R_GB n_B fixed on the plane body B, S on the follower F."""

    needs_vs = True

    @staticmethod
    def pack(bp, n_B, h, bf, s_F) -> dict:
        bp, bf = _intp(bp), _intp(bf)
        P = _pair_layout(dict(bp=bp, bf=bf, n=_vecs(n_B), h=np.asarray(h, dtype=np.float64).reshape(-1),
                              s=_vecs(s_F)), bf, bp)
        K = P["K"]
        st = np.zeros((K, 2, 3))
        st[:, 0] = P["s"]
        P["e_st0"] = st
        s_st = np.zeros((2 * K, 3))
        s_st[:K] = P["s"]
        P["s_st0"] = s_st
        P["writes"] = {"st", "sts", "F"}
        return P

    @staticmethod
    def _geometry(P, kin):
        rS, S = _stations(kin, P["bf"], P["s"])
        n = _rot(_take(kin.R, P["bp"]), P["n"])
        return rS, n, S - _take(kin.p, P["bp"])

    @staticmethod
    def position(P, kin):
        K = P["K"]
        perr, geom = np.empty(K), np.empty((K, 2, 3))  # geom: n and p_S - p_B in Ground
        _core._k.plane_position(kin.ws, P["bp"], P["n"], P["h"], P["bf"], P["s"], perr, geom)
        return perr, geom

    @staticmethod
    def _relative_velocity(P, kin, rS, d):
        return _material_velocity(_take(kin.V, P["bf"]), rS) - _material_velocity(_take(kin.V, P["bp"]), d)

    @staticmethod
    def velocity(P, kin) -> np.ndarray:
        rS, n, d = Plane._geometry(P, kin)
        return _dot(n, Plane._relative_velocity(P, kin, rS, d))

    @staticmethod
    def acceleration(P, kin) -> np.ndarray:
        rS, n, d = Plane._geometry(P, kin)
        dv = Plane._relative_velocity(P, kin, rS, d)
        bp, bf = P["bp"], P["bf"]
        Vp = _take(kin.V, bp)
        e = (_material_acceleration(_take(kin.V, bf), _take(kin.A, bf), rS)
             - _material_acceleration(Vp, _take(kin.A, bp), d) - 2.0 * _cross(Vp[:, 0], dv))
        return _dot(n, e)

    @staticmethod
    def force_map(P, kin, geometry, st, F, sts):
        """+n at S on the follower, -n at the plane body's material point C at S."""
        geom = Plane.position(P, kin)[1] if geometry is None else geometry
        _core._k.plane_force_map(kin.ws, P["bp"], geom, st, F, sts)
        return geom

    @staticmethod
    def fast(P, geom, ctx) -> np.ndarray:
        out = np.empty(P["K"])
        _core._k.plane_fast(ctx.ws, P["bp"], geom, ctx.AB_part, ctx.VS_part, ctx.Gud_part, out)
        return out


def simbody_perpendiculars(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Simbody's pair for a unit line direction d: ``x = unit(d x e_k)`` with k the axis of the
    smallest ``|d_k|`` (the first such), and ``y = d x x``."""
    a = np.abs(d)
    k = (0 if a[0] <= a[2] else 2) if a[0] <= a[1] else (1 if a[1] <= a[2] else 2)
    e = np.zeros(3)
    e[k] = 1.0
    x = np.cross(d, e)
    x /= np.linalg.norm(x)
    return x, np.cross(d, x)


# ====================================================================== Rod
class Rod:
    """K rows ``|p_S2 - p_S1| - L``; the force acts along the line at the two stations."""

    needs_vs = True

    @staticmethod
    def pack(b1, s1, b2, s2, length, ancestor) -> dict:
        b1, b2 = _intp(b1), _intp(b2)
        P = _pair_layout(dict(b1=b1, b2=b2, s1=_vecs(s1), s2=_vecs(s2), L=np.asarray(length, dtype=np.float64)
                              .reshape(-1), a=_intp(ancestor), b21=np.concatenate([b2, b1])), b2, b1)
        P["s21"] = np.concatenate([P["s2"], P["s1"]])
        P["e_st0"] = np.stack([P["s2"], P["s1"]], axis=1)  # forces at the stations themselves
        P["s_st0"] = P["s21"]
        P["writes"] = {"F"}
        return P

    @staticmethod
    def _geometry(P, kin):
        K = P["K"]
        r, S = _stations(kin, P["b21"], P["s21"])
        d = S[:K] - S[K:]
        dist = np.sqrt(_dot(d, d))
        if dist.min() >= _TINY:
            return r, d / dist[:, None], dist, None
        # Coincident stations: Simbody takes body 1's z axis as the direction.
        sing = dist < _TINY
        Cz = d / np.where(sing, 1.0, dist)[:, None]
        Cz[sing] = _take(kin.R, P["b1"][sing])[:, :, 2]
        return r, Cz, np.where(sing, 0.0, dist), sing

    @staticmethod
    def position(P, kin):
        K = P["K"]
        perr, geom = np.empty(K), np.empty((K, 4))  # geom: Cz and the distance (0: coincident stations)
        _core._k.rod_position(kin.ws, P["b1"], P["s1"], P["b2"], P["s2"], P["L"], perr, geom)
        return perr, geom

    @staticmethod
    def _relative_velocity(P, kin, r):
        K = P["K"]
        return _material_velocity(_take(kin.V, P["b2"]), r[:K]) - _material_velocity(_take(kin.V, P["b1"]), r[K:])

    @staticmethod
    def velocity(P, kin) -> np.ndarray:
        r, Cz, _, _ = Rod._geometry(P, kin)
        return _dot(Cz, Rod._relative_velocity(P, kin, r))

    @staticmethod
    def _curvature(P, V, Cz, dist, sing, dv, Cz_dv):
        """The velocity-product term of the acceleration row: (|dv|^2 - (Cz.dv)^2)/r, or for
        coincident stations dv . (w_A1 x Cz) - 2 Cz . (w_GA x dv) (derivatives in the ancestor A)."""
        if sing is None:
            return (_dot(dv, dv) - Cz_dv * Cz_dv) / dist
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (_dot(dv, dv) - Cz_dv * Cz_dv) / dist
        w1 = _take(V, P["b1"][sing])[:, 0]
        wA = _take(V, P["a"][sing])[:, 0]
        ds, cs = dv[sing], Cz[sing]
        out[sing] = _dot(ds, _cross(w1 - wA, cs)) - 2.0 * _dot(cs, _cross(wA, ds))
        return out

    @staticmethod
    def acceleration(P, kin) -> np.ndarray:
        K = P["K"]
        r, Cz, dist, sing = Rod._geometry(P, kin)
        dv = Rod._relative_velocity(P, kin, r)
        b1, b2 = P["b1"], P["b2"]
        da = (_material_acceleration(_take(kin.V, b2), _take(kin.A, b2), r[:K])
              - _material_acceleration(_take(kin.V, b1), _take(kin.A, b1), r[K:]))
        return _dot(Cz, da) + Rod._curvature(P, kin.V, Cz, dist, sing, dv, _dot(Cz, dv))

    @staticmethod
    def force_map(P, kin, geometry, st, F, sts):
        geom = Rod.position(P, kin)[1] if geometry is None else geometry
        _core._k.rod_force_map(geom, F)
        return geom

    @staticmethod
    def fast(P, geom, ctx) -> np.ndarray:
        out = np.empty(P["K"])
        _core._k.rod_fast(ctx.ws, P["b1"], P["a"], geom, ctx.AB_part, ctx.VS_part, ctx.verr_part, ctx.Gud_part, out)
        return out


# ====================================================================== Angle (ConstantAngle, orientation rows)
class Angle:
    """K rows ``b . f - cos``: unit axis b on the base body, f on the follower; torques about f x b."""

    needs_vs = False

    @staticmethod
    def pack(bb, a_b, bf, a_f, cos) -> dict:
        bb, bf = _intp(bb), _intp(bf)
        P = _pair_layout(dict(bb=bb, bf=bf, ab=_vecs(a_b), af=_vecs(a_f), cos=np.asarray(cos, dtype=np.float64)
                              .reshape(-1)), bf, bb)
        P["s_bodies"] = P["s_bodies"][:0]  # no stations: the rows read the bodies' angular terms
        P["writes"] = {"F"}
        return P

    @staticmethod
    def _axes(P, kin):
        return _rot(_take(kin.R, P["bb"]), P["ab"]), _rot(_take(kin.R, P["bf"]), P["af"])

    @staticmethod
    def position(P, kin):
        K = P["K"]
        perr, geom = np.empty(K), np.empty((K, 2, 3))  # geom: the axes b, f in Ground
        _core._k.angle_position(kin.ws, P["bb"], P["ab"], P["bf"], P["af"], P["cos"], perr, geom)
        return perr, geom

    @staticmethod
    def velocity(P, kin) -> np.ndarray:
        b, f = Angle._axes(P, kin)
        dw = _take(kin.V, P["bf"])[:, 0] - _take(kin.V, P["bb"])[:, 0]
        return _dot(dw, _cross(f, b))

    @staticmethod
    def _velocity_product(b, f, wb, wf):
        return _dot(wf - wb, _cross(_cross(wf, f), b) - _cross(_cross(wb, b), f))

    @staticmethod
    def acceleration(P, kin) -> np.ndarray:
        b, f = Angle._axes(P, kin)
        wb, wf = _take(kin.V, P["bb"])[:, 0], _take(kin.V, P["bf"])[:, 0]
        dal = _take(kin.A, P["bf"])[:, 0] - _take(kin.A, P["bb"])[:, 0]
        return _dot(dal, _cross(f, b)) + Angle._velocity_product(b, f, wb, wf)

    @staticmethod
    def force_map(P, kin, geometry, st, F, sts):
        """Torque +c on the follower, -c on the base, c = f x b."""
        geom = Angle.position(P, kin)[1] if geometry is None else geometry
        c = np.empty((P["K"], 3))
        _core._k.angle_force_map(geom, c, F)
        return geom, c

    @staticmethod
    def fast(P, h, ctx) -> np.ndarray:
        geom, c = h
        out = np.empty(P["K"])
        _core._k.angle_fast(ctx.ws, P["bb"], P["bf"], geom, c, ctx.Gud_part, out)
        return out


# ====================================================================== NoSlip (NoSlip1D)
class NoSlip:
    """K nonholonomic rows ``n . (v1_P - v0_P)`` at a point P with direction n fixed on the case body."""

    needs_vs = True

    @staticmethod
    def pack(bc, p_C, n_C, b0, b1, ancestor) -> dict:
        bc, b0, b1 = _intp(bc), _intp(b0), _intp(b1)
        P = _pair_layout(dict(bc=bc, b0=b0, b1=b1, P=_vecs(p_C), n=_vecs(n_C), a=_intp(ancestor)), b1, b0)
        P["writes"] = {"st", "sts", "F"}
        return P

    @staticmethod
    def _geometry(P, kin):
        _, Pg = _stations(kin, P["bc"], P["P"])
        n = _rot(_take(kin.R, P["bc"]), P["n"])
        return n, Pg - _take(kin.p, P["b1"]), Pg - _take(kin.p, P["b0"])

    @staticmethod
    def velocity(P, kin) -> np.ndarray:
        n, r1, r0 = NoSlip._geometry(P, kin)
        dv = _material_velocity(_take(kin.V, P["b1"]), r1) - _material_velocity(_take(kin.V, P["b0"]), r0)
        return _dot(n, dv)

    @staticmethod
    def _coriolis_axis(P, V):
        return _take(V, P["bc"])[:, 0] + _take(V, P["a"])[:, 0]

    @staticmethod
    def acceleration(P, kin) -> np.ndarray:
        n, r1, r0 = NoSlip._geometry(P, kin)
        b0, b1 = P["b0"], P["b1"]
        V1, V0 = _take(kin.V, b1), _take(kin.V, b0)
        dv = _material_velocity(V1, r1) - _material_velocity(V0, r0)
        da = (_material_acceleration(V1, _take(kin.A, b1), r1) - _material_acceleration(V0, _take(kin.A, b0), r0))
        return _dot(n, da - _cross(NoSlip._coriolis_axis(P, kin.V), dv))

    @staticmethod
    def force_map(P, kin, geometry, st, F, sts):
        """+n on moving body 1 and -n on moving body 0, each at its material point at P."""
        n = np.empty((P["K"], 3))
        _core._k.noslip_force_map(kin.ws, P["bc"], P["P"], P["n"], P["b0"], P["b1"], n, st, F, sts)
        return n

    @staticmethod
    def fast(P, n, ctx) -> np.ndarray:
        out = np.empty(P["K"])
        _core._k.noslip_fast(ctx.ws, P["bc"], P["a"], n, ctx.AB_part, ctx.VS_part, ctx.Gud_part, out)
        return out
