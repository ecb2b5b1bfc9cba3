"""Built-in constraints (Simbody's equation counts and meanings), each kind evaluated in bulk.

Geometric constraints are written in Ground: their errors are Ground components of the
quantity Simbody measures (a distance, a point separation, dot products of axes), so their zero
sets and equation counts are Simbody's. Every kind provides its position, velocity and
acceleration errors (each the exact time derivative of the one before) and its force map: the
body and mobility forces of a unit multiplier of each equation, i.e. the columns of ``G^T``.

Shapes: ``k`` elements of a kind; ``R`` (nb, 3, 3), ``p`` (nb, 3), ``V`` and ``A`` (nb, 2, 3) =
(angular, body-origin linear) in Ground.
"""
from __future__ import annotations

import numpy as np

from ..common.function import Function
from ..spatial import Rotation, Transform
from .constraint import Constraint, _matter_of, _mobod

__all__: list[str] = []


# ---------------------------------------------------------------------- argument checks
def _vec3(x, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (3,) or not np.isfinite(a).all():
        raise ValueError(f"{what}: expected a finite 3-vector, got {x!r}")
    return a.copy()


def _unit(x, what: str) -> np.ndarray:
    a = _vec3(x, what)
    n = np.linalg.norm(a)
    if n < 1e-12:
        raise ValueError(f"{what}: a direction must be nonzero, got {x!r}")
    return a / n


def _real(x, what: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: expected a real number, got {x!r}") from exc
    if not np.isfinite(v):
        raise ValueError(f"{what}: must be finite, got {v}")
    return v


def _rotation(R, what: str) -> np.ndarray:
    if isinstance(R, Transform):
        R = R.R
    if not isinstance(R, Rotation):
        raise TypeError(f"{what}: expected a Rotation, got {type(R).__name__}")
    return R.matrix.copy()


def _transform(X, what: str) -> Transform:
    if isinstance(X, Rotation):
        return Transform(X)
    if not isinstance(X, Transform):
        raise TypeError(f"{what}: expected a Transform, got {type(X).__name__}")
    return X


def _same_matter(name: str, *bodies):
    matter = None
    for b in bodies:
        _mobod(b, f"Constraint.{name}")
        if matter is None:
            matter = b._matter
        elif b._matter is not matter:
            raise ValueError(f"Constraint.{name}: {b!r} belongs to another matter subsystem")
    return matter


def _index(i, what: str) -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
        raise ValueError(f"{what}: expected an index >= 0, got {i!r}")
    return int(i)


def _register(cls):
    cls.__qualname__ = f"Constraint.{cls.__name__}"
    setattr(Constraint, cls.__name__, cls)
    return cls


# ---------------------------------------------------------------------- vectorized kinematics
def _rot(R, v):
    """R[k] @ v[k] for (k,3,3) and (k,3)."""
    return np.einsum("kij,kj->ki", R, v)


_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])


def _cross(a, b):
    """Row-wise cross product of broadcastable (..., 3) arrays (numpy's np.cross costs ~13 us a call)."""
    return a.take(_I1, axis=-1) * b.take(_I2, axis=-1) - a.take(_I2, axis=-1) * b.take(_I1, axis=-1)


def _skew(r):
    """(k, 3, 3) matrices with skew(r) v = r x v."""
    S = np.zeros(r.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -r[..., 2], r[..., 1]
    S[..., 1, 0], S[..., 1, 2] = r[..., 2], -r[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -r[..., 1], r[..., 0]
    return S


def _at(r, f):
    """Spatial force (r x f, f) at a body origin for force f applied at offset r; (k, 2, 3)."""
    out = np.empty(f.shape[:-1] + (2, 3))
    out[..., 0, :] = _cross(r, f)
    out[..., 1, :] = f
    return out


def _torque(t):
    out = np.zeros(t.shape[:-1] + (2, 3))
    out[..., 0, :] = t
    return out


def _dot(a, b):
    return np.einsum("ki,ki->k", a, b)


class _Points:
    """Station S on body b: offset r = R_GB p_BS and its location, velocity and acceleration."""

    def __init__(self, kin, b, s_B):
        self.b = b
        self.r = _rot(kin.R[b], s_B)
        self.p = kin.p[b] + self.r
        self.kin = kin

    def vel(self):
        V = self.kin.V[self.b]
        return V[:, 1] + _cross(V[:, 0], self.r)

    def acc(self):
        V, A = self.kin.V[self.b], self.kin.A[self.b]
        w = V[:, 0]
        return A[:, 1] + _cross(A[:, 0], self.r) + _cross(w, _cross(w, self.r))


def _point_of_body_at(kin, b, P):
    """Velocity and acceleration of the material point of body b at Ground location P (k,3)."""
    r = P - kin.p[b]
    V = kin.V[b]
    w = V[:, 0]
    v = V[:, 1] + _cross(w, r)
    return r, v


# ---------------------------------------------------------------------- generic row families
def _coincident_rows(kin, b1, s1, b2, s2, level: int):
    """Ball rows: p2 - p1 in Ground, (k, 3) per level (0: position, 1: velocity, 2: acceleration)."""
    P1, P2 = _Points(kin, b1, s1), _Points(kin, b2, s2)
    if level == 0:
        return P2.p - P1.p
    if level == 1:
        return P2.vel() - P1.vel()
    return P2.acc() - P1.acc()


def _coincident_forces(kin, b1, s1, b2, s2, eq, out):
    """eq (k, 3): +e_j at S2 on b2, -e_j at S1 on b1."""
    k = len(b1)
    F = np.zeros((2, k, 3, 2, 3))  # (side, element, equation j, angular/linear, xyz)
    for side, (b, s, sign) in enumerate(((b2, s2, 1.0), (b1, s1, -1.0))):
        # r x e_j is column j of skew(r)
        F[side, :, :, 0, :] = sign * np.swapaxes(_skew(_rot(kin.R[b], s)), 1, 2)
        F[side, :, :, 1, :] = sign * np.eye(3)
    bodies = np.stack([np.repeat(b2, 3), np.repeat(b1, 3)])
    out.add_body_forces(np.stack([eq.reshape(-1), eq.reshape(-1)]), bodies, F)


def _angle_rows(kin, bb, axis_b, bf, axis_f, cos_target, level: int):
    """ConstantAngle rows: a_b . a_f - cos(theta) and its derivatives; (k,)."""
    a_b, a_f = _rot(kin.R[bb], axis_b), _rot(kin.R[bf], axis_f)
    if level == 0:
        return _dot(a_b, a_f) - cos_target
    c = _cross(a_f, a_b)
    w_b, w_f = kin.V[bb, 0], kin.V[bf, 0]
    if level == 1:
        return _dot(w_f - w_b, c)
    c_dot = _cross(_cross(w_f, a_f), a_b) + _cross(a_f, _cross(w_b, a_b))
    return _dot(kin.A[bf, 0] - kin.A[bb, 0], c) + _dot(w_f - w_b, c_dot)


def _angle_forces(kin, bb, axis_b, bf, axis_f, eq, out):
    """eq (k,): torque +c on the follower, -c on the base, c = a_f x a_b."""
    c = _cross(_rot(kin.R[bf], axis_f), _rot(kin.R[bb], axis_b))
    out.add_body_forces(np.concatenate([eq, eq]), np.concatenate([bf, bb]),
                        np.concatenate([_torque(c), _torque(-c)]))


def _plane_rows(kin, bp, n_B, h, bf, s_F, level: int):
    """PointInPlane rows: n . (p_S - p_B) - h and derivatives, n = R_GB n_B; (k,)."""
    n = _rot(kin.R[bp], n_B)
    S = _Points(kin, bf, s_F)
    d = S.p - kin.p[bp]
    if level == 0:
        return _dot(n, d) - h
    Vp = kin.V[bp]
    w, vo = Vp[:, 0], Vp[:, 1]
    vS = S.vel()
    rel_v = vS - vo - _cross(w, d)  # S's velocity relative to B's coincident point
    if level == 1:
        return _dot(n, rel_v)
    Ap = kin.A[bp]
    n_dot = _cross(w, n)
    rel_a = S.acc() - Ap[:, 1] - _cross(Ap[:, 0], d) - _cross(w, vS - vo)
    return _dot(n_dot, rel_v) + _dot(n, rel_a)


def _plane_forces(kin, bp, n_B, bf, s_F, eq, out):
    """eq (k,): +n at S on the follower, -n on the plane body at the point coincident with S."""
    n = _rot(kin.R[bp], n_B)
    r_f = _rot(kin.R[bf], s_F)
    d = kin.p[bf] + r_f - kin.p[bp]
    out.add_body_forces(np.concatenate([eq, eq]), np.concatenate([bf, bp]),
                        np.concatenate([_at(r_f, n), _at(d, -n)]))


# ---------------------------------------------------------------------- Rod
@_register
class Rod(Constraint):
    """One holonomic equation: the distance between station s1 on b1 and s2 on b2 is ``length``.

    perr = |p2 - p1| - length; the force is along the line between the points (Simbody's
    ``Constraint::Rod``, also called ConstantDistance).
    """

    _mp = 1

    def __init__(self, b1, s1, b2, s2, length: float):
        matter = _same_matter("Rod", b1, b2)
        self._b1, self._b2 = b1._index, b2._index
        self._s1, self._s2 = _vec3(s1, "Constraint.Rod: s1"), _vec3(s2, "Constraint.Rod: s2")
        self._length = _real(length, "Constraint.Rod: length")
        if self._length <= 0:
            raise ValueError(f"Constraint.Rod: length must be positive (use Constraint.Ball for coincident "
                             f"points), got {self._length}")
        super().__init__(matter)

    def get_default_rod_length(self) -> float:
        return self._length

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._b1, self._b2]))

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(b1=np.array([c._b1 for c in elements]), b2=np.array([c._b2 for c in elements]),
                    s1=np.array([c._s1 for c in elements]), s2=np.array([c._s2 for c in elements]),
                    L=np.array([c._length for c in elements]), who=elements)

    @staticmethod
    def _geometry(P, kin):
        P1, P2 = _Points(kin, P["b1"], P["s1"]), _Points(kin, P["b2"], P["s2"])
        d = P2.p - P1.p
        dist = np.linalg.norm(d, axis=1)
        if np.any(dist < 1e-12):
            bad = P["who"][int(np.argmin(dist))]
            raise FloatingPointError(f"{bad!r}: the rod's two points coincide; its direction is undefined")
        return P1, P2, d / dist[:, None], dist

    @classmethod
    def _position_errors(cls, P, kin):
        _, _, _, dist = cls._geometry(P, kin)
        return (dist - P["L"])[:, None]

    @classmethod
    def _velocity_errors(cls, P, kin):
        P1, P2, e, _ = cls._geometry(P, kin)
        return _dot(e, P2.vel() - P1.vel())[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        P1, P2, e, dist = cls._geometry(P, kin)
        vr = P2.vel() - P1.vel()
        ev = _dot(e, vr)
        return (_dot(e, P2.acc() - P1.acc()) + (_dot(vr, vr) - ev * ev) / dist)[:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        P1, P2, e, _ = cls._geometry(P, kin)
        out.add_body_forces(np.concatenate([eq[:, 0], eq[:, 0]]), np.concatenate([P["b2"], P["b1"]]),
                            np.concatenate([_at(P2.r, e), _at(P1.r, -e)]))


# ---------------------------------------------------------------------- Ball
@_register
class Ball(Constraint):
    """Three holonomic equations: station s1 on b1 and s2 on b2 coincide (perr = p2 - p1 in Ground)."""

    _mp = 3

    def __init__(self, b1, s1, b2, s2):
        matter = _same_matter("Ball", b1, b2)
        self._b1, self._b2 = b1._index, b2._index
        self._s1, self._s2 = _vec3(s1, "Constraint.Ball: s1"), _vec3(s2, "Constraint.Ball: s2")
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._b1, self._b2]))

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(b1=np.array([c._b1 for c in elements]), b2=np.array([c._b2 for c in elements]),
                    s1=np.array([c._s1 for c in elements]), s2=np.array([c._s2 for c in elements]))

    @classmethod
    def _position_errors(cls, P, kin):
        return _coincident_rows(kin, P["b1"], P["s1"], P["b2"], P["s2"], 0)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return _coincident_rows(kin, P["b1"], P["s1"], P["b2"], P["s2"], 1)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return _coincident_rows(kin, P["b1"], P["s1"], P["b2"], P["s2"], 2)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _coincident_forces(kin, P["b1"], P["s1"], P["b2"], P["s2"], eq, out)


# ---------------------------------------------------------------------- orientation rows
def _orientation_pack(elements, R1_attr, R2_attr):
    """Rows j = 0..2: base axis F_{j+1} on body 1, follower axis M_j on body 2 (perpendicular)."""
    k = len(elements)
    bb = np.repeat([c._b1 for c in elements], 3)
    bf = np.repeat([c._b2 for c in elements], 3)
    R1 = np.array([getattr(c, R1_attr) for c in elements])  # (k, 3, 3) columns are the frame's axes
    R2 = np.array([getattr(c, R2_attr) for c in elements])
    j = np.tile(np.arange(3), k)
    e = np.repeat(np.arange(k), 3)
    axis_b = R1[e, :, (j + 1) % 3]
    axis_f = R2[e, :, j]
    return bb, axis_b, bf, axis_f


def _orientation_errors(P, kin, level):
    return _angle_rows(kin, P["bb"], P["ab"], P["bf"], P["af"], 0.0, level).reshape(-1, 3)


def _orientation_forces(P, kin, eq, out):
    _angle_forces(kin, P["bb"], P["ab"], P["bf"], P["af"], eq.reshape(-1), out)


@_register
class ConstantOrientation(Constraint):
    """Three holonomic equations: frame M on the follower keeps the orientation of frame F on the base.

    The equations are Simbody's: the follower's x, y, z axes stay perpendicular to the base
    frame's y, z, x axes (so, as in Simbody, antiparallel axes also satisfy them).
    """

    _mp = 3

    def __init__(self, base, R_BF, follower, R_FM):
        matter = _same_matter("ConstantOrientation", base, follower)
        self._b1, self._b2 = base._index, follower._index
        self._R1 = _rotation(R_BF, "Constraint.ConstantOrientation: R_BF")
        self._R2 = _rotation(R_FM, "Constraint.ConstantOrientation: R_FM")
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._b1, self._b2]))

    @classmethod
    def _pack(cls, elements, plan, state):
        bb, ab, bf, af = _orientation_pack(elements, "_R1", "_R2")
        return dict(bb=bb, ab=ab, bf=bf, af=af)

    @classmethod
    def _position_errors(cls, P, kin):
        return _orientation_errors(P, kin, 0)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return _orientation_errors(P, kin, 1)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return _orientation_errors(P, kin, 2)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _orientation_forces(P, kin, eq, out)


@_register
class Weld(Constraint):
    """Six holonomic equations: frame M on b2 coincides with frame F on b1.

    Equations 0-2 are rotational (as ``ConstantOrientation``), 3-5 translational (origin of M
    minus origin of F, in Ground), in Simbody's order.
    """

    _mp = 6

    def __init__(self, b1, X_B1F, b2, X_B2M):
        matter = _same_matter("Weld", b1, b2)
        self._b1, self._b2 = b1._index, b2._index
        X1 = _transform(X_B1F, "Constraint.Weld: X_B1F")
        X2 = _transform(X_B2M, "Constraint.Weld: X_B2M")
        self._R1, self._s1 = X1.R.matrix.copy(), np.array(X1.p)
        self._R2, self._s2 = X2.R.matrix.copy(), np.array(X2.p)
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._b1, self._b2]))

    @classmethod
    def _pack(cls, elements, plan, state):
        bb, ab, bf, af = _orientation_pack(elements, "_R1", "_R2")
        return dict(bb=bb, ab=ab, bf=bf, af=af,
                    b1=np.array([c._b1 for c in elements]), b2=np.array([c._b2 for c in elements]),
                    s1=np.array([c._s1 for c in elements]), s2=np.array([c._s2 for c in elements]))

    @classmethod
    def _errors(cls, P, kin, level):
        return np.concatenate([_orientation_errors(P, kin, level),
                               _coincident_rows(kin, P["b1"], P["s1"], P["b2"], P["s2"], level)], axis=1)

    @classmethod
    def _position_errors(cls, P, kin):
        return cls._errors(P, kin, 0)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return cls._errors(P, kin, 1)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return cls._errors(P, kin, 2)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _orientation_forces(P, kin, np.ascontiguousarray(eq[:, :3]), out)
        _coincident_forces(kin, P["b1"], P["s1"], P["b2"], P["s2"], eq[:, 3:], out)


@_register
class ConstantAngle(Constraint):
    """One holonomic equation: axis_f on the follower keeps ``angle`` to axis_b on the base.

    perr = a_b . a_f - cos(angle); enforced by equal and opposite torques about a_f x a_b.
    As in Simbody, do not use it near 0 or pi.
    """

    _mp = 1

    def __init__(self, base, axis_b, follower, axis_f, angle: float = np.pi / 2):
        matter = _same_matter("ConstantAngle", base, follower)
        self._b1, self._b2 = base._index, follower._index
        self._ab = _unit(axis_b, "Constraint.ConstantAngle: axis_b")
        self._af = _unit(axis_f, "Constraint.ConstantAngle: axis_f")
        self._angle = _real(angle, "Constraint.ConstantAngle: angle")
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._b1, self._b2]))

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(bb=np.array([c._b1 for c in elements]), bf=np.array([c._b2 for c in elements]),
                    ab=np.array([c._ab for c in elements]), af=np.array([c._af for c in elements]),
                    cos=np.cos([c._angle for c in elements]))

    @classmethod
    def _err(cls, P, kin, level):
        return _angle_rows(kin, P["bb"], P["ab"], P["bf"], P["af"], P["cos"], level)[:, None]

    @classmethod
    def _position_errors(cls, P, kin):
        return cls._err(P, kin, 0)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return cls._err(P, kin, 1)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return cls._err(P, kin, 2)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _angle_forces(kin, P["bb"], P["ab"], P["bf"], P["af"], eq[:, 0], out)


# ---------------------------------------------------------------------- point in plane / on line
@_register
class PointInPlane(Constraint):
    """One holonomic equation: station ``point`` of the follower stays in the plane n . x = height
    fixed on the plane body (n = ``normal`` in the plane body's frame).
    """

    _mp = 1

    def __init__(self, plane_body, normal, height: float, follower, point):
        matter = _same_matter("PointInPlane", plane_body, follower)
        self._bp, self._bf = plane_body._index, follower._index
        self._n = _unit(normal, "Constraint.PointInPlane: normal")
        self._h = _real(height, "Constraint.PointInPlane: height")
        self._s = _vec3(point, "Constraint.PointInPlane: point")
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._bp, self._bf]))

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(bp=np.array([c._bp for c in elements]), bf=np.array([c._bf for c in elements]),
                    n=np.array([c._n for c in elements]), h=np.array([c._h for c in elements]),
                    s=np.array([c._s for c in elements]))

    @classmethod
    def _err(cls, P, kin, level):
        return _plane_rows(kin, P["bp"], P["n"], P["h"], P["bf"], P["s"], level)[:, None]

    @classmethod
    def _position_errors(cls, P, kin):
        return cls._err(P, kin, 0)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return cls._err(P, kin, 1)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return cls._err(P, kin, 2)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _plane_forces(kin, P["bp"], P["n"], P["bf"], P["s"], eq[:, 0], out)


def _perpendiculars(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing unit d to a right-handed frame."""
    trial = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = _cross(d, trial)
    x /= np.linalg.norm(x)
    return x, _cross(d, x)


@_register
class PointOnLine(Constraint):
    """Two holonomic equations: station ``point`` of the follower stays on the line through
    ``point_on_line`` along ``direction``, both fixed on the line body.

    The errors are the point's offsets from the line along two fixed unit vectors perpendicular to
    it (two ``PointInPlane`` rows).
    """

    _mp = 2

    def __init__(self, line_body, direction, point_on_line, follower, point):
        matter = _same_matter("PointOnLine", line_body, follower)
        self._bp, self._bf = line_body._index, follower._index
        self._d = _unit(direction, "Constraint.PointOnLine: direction")
        self._o = _vec3(point_on_line, "Constraint.PointOnLine: point_on_line")
        self._s = _vec3(point, "Constraint.PointOnLine: point")
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._bp, self._bf]))

    @classmethod
    def _pack(cls, elements, plan, state):
        n, h = [], []
        for c in elements:
            for v in _perpendiculars(c._d):
                n.append(v)
                h.append(v @ c._o)
        return dict(bp=np.repeat([c._bp for c in elements], 2), bf=np.repeat([c._bf for c in elements], 2),
                    n=np.array(n), h=np.array(h), s=np.repeat([c._s for c in elements], 2, axis=0))

    @classmethod
    def _err(cls, P, kin, level):
        return _plane_rows(kin, P["bp"], P["n"], P["h"], P["bf"], P["s"], level).reshape(-1, 2)

    @classmethod
    def _position_errors(cls, P, kin):
        return cls._err(P, kin, 0)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return cls._err(P, kin, 1)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return cls._err(P, kin, 2)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _plane_forces(kin, P["bp"], P["n"], P["bf"], P["s"], eq.reshape(-1), out)


# ---------------------------------------------------------------------- NoSlip1D
@_register
class NoSlip1D(Constraint):
    """One nonholonomic equation: at the contact point P fixed on the case body, the material
    points of moving0 and moving1 have the same velocity along direction n (fixed on the case).

    verr = n . (v1_P - v0_P); no force acts on the case body.
    """

    _mv = 1

    def __init__(self, case_body, point, direction, moving0, moving1):
        matter = _same_matter("NoSlip1D", case_body, moving0, moving1)
        self._bc, self._b0, self._b1 = case_body._index, moving0._index, moving1._index
        self._P = _vec3(point, "Constraint.NoSlip1D: point")
        self._n = _unit(direction, "Constraint.NoSlip1D: direction")
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._bc, self._b0, self._b1]))

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(bc=np.array([c._bc for c in elements]), b0=np.array([c._b0 for c in elements]),
                    b1=np.array([c._b1 for c in elements]), P=np.array([c._P for c in elements]),
                    n=np.array([c._n for c in elements]))

    @staticmethod
    def _contact(P, kin):
        C = _Points(kin, P["bc"], P["P"])
        n = _rot(kin.R[P["bc"]], P["n"])
        return C, n

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P["bc"]), 0))

    @classmethod
    def _velocity_errors(cls, P, kin):
        C, n = cls._contact(P, kin)
        _, v1 = _point_of_body_at(kin, P["b1"], C.p)
        _, v0 = _point_of_body_at(kin, P["b0"], C.p)
        return _dot(n, v1 - v0)[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        C, n = cls._contact(P, kin)
        vP = C.vel()
        n_dot = _cross(kin.V[P["bc"], 0], n)
        out = np.zeros(len(n))
        for b, sign in ((P["b1"], 1.0), (P["b0"], -1.0)):
            r, v = _point_of_body_at(kin, b, C.p)
            w, vo = kin.V[b, 0], kin.V[b, 1]
            al, ao = kin.A[b, 0], kin.A[b, 1]
            # d/dt of (v_o + w x (P - p_o)) with P moving with the case
            a = ao + _cross(al, r) + _cross(w, vP - vo)
            out += sign * (_dot(n_dot, v) + _dot(n, a))
        return out[:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        C, n = cls._contact(P, kin)
        r1 = C.p - kin.p[P["b1"]]
        r0 = C.p - kin.p[P["b0"]]
        out.add_body_forces(np.concatenate([eq[:, 0], eq[:, 0]]), np.concatenate([P["b1"], P["b0"]]),
                            np.concatenate([_at(r1, n), _at(r0, -n)]))


# ---------------------------------------------------------------------- coordinate-level constraints
def _coord_mobility_forces(kin, cids, weights, eq, out):
    """Force map of sum_j weights[:, j] * qdot[cid_j]: mobility forces weights * N_row.

    cids, weights: (k, n); eq: (k,).
    """
    k, n = cids.shape
    rows = kin.nrow[cids]  # (k, n, 6)
    cols = kin.ncol[cids]
    val = weights[:, :, None] * rows
    out.add_mobility_forces(np.broadcast_to(eq[:, None, None], val.shape).reshape(-1), cols.reshape(-1),
                            val.reshape(-1))


@_register
class ConstantCoordinate(Constraint):
    """One holonomic equation: coordinate ``which_q`` of ``mobod`` stays at ``value`` (perr = q - value)."""

    _mp = 1

    def __init__(self, mobod, which_q: int, value: float):
        _mobod(mobod, "Constraint.ConstantCoordinate")
        self._b = mobod._index
        self._which = _index(which_q, "Constraint.ConstantCoordinate: which_q")
        self._value = _real(value, "Constraint.ConstantCoordinate: value")
        super().__init__(mobod._matter)

    def _constrained_mobilizer_indices(self):
        return [self._b]

    @classmethod
    def _pack(cls, elements, plan, state):
        cid = np.array([plan.add_coord(c._b, c._which, c) for c in elements])
        return dict(cid=cid, q=plan.coord_q[cid], value=np.array([c._value for c in elements]))

    @classmethod
    def _position_errors(cls, P, kin):
        return (kin.q[P["q"]] - P["value"])[:, None]

    @classmethod
    def _velocity_errors(cls, P, kin):
        return kin.qdot[P["q"]][:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return kin.qdotdot[P["q"]][:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _coord_mobility_forces(kin, P["cid"][:, None], np.ones((len(P["cid"]), 1)), eq[:, 0], out)


@_register
class ConstantSpeed(Constraint):
    """One nonholonomic equation: speed ``which_u`` of ``mobod`` stays at ``speed`` (verr = u - speed)."""

    _mv = 1

    def __init__(self, mobod, which_u: int, speed: float):
        _mobod(mobod, "Constraint.ConstantSpeed")
        self._b = mobod._index
        self._which = _index(which_u, "Constraint.ConstantSpeed: which_u")
        self._speed = _real(speed, "Constraint.ConstantSpeed: speed")
        super().__init__(mobod._matter)

    def _constrained_mobilizer_indices(self):
        return [self._b]

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(u=np.array([plan.u_index(c._b, c._which, c) for c in elements]),
                    value=np.array([c._speed for c in elements]))

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _velocity_errors(cls, P, kin):
        return (kin.u[P["u"]] - P["value"])[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return kin.udot[P["u"]][:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        out.add_mobility_forces(eq[:, 0], P["u"], np.ones(len(P["u"])))


@_register
class ConstantAcceleration(Constraint):
    """One acceleration-only equation: udot ``which_u`` of ``mobod`` equals ``a`` (aerr = udot - a)."""

    _ma = 1

    def __init__(self, mobod, which_u: int, a: float):
        _mobod(mobod, "Constraint.ConstantAcceleration")
        self._b = mobod._index
        self._which = _index(which_u, "Constraint.ConstantAcceleration: which_u")
        self._a = _real(a, "Constraint.ConstantAcceleration: a")
        super().__init__(mobod._matter)

    def _constrained_mobilizer_indices(self):
        return [self._b]

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(u=np.array([plan.u_index(c._b, c._which, c) for c in elements]),
                    value=np.array([c._a for c in elements]))

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _velocity_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return (kin.udot[P["u"]] - P["value"])[:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        out.add_mobility_forces(eq[:, 0], P["u"], np.ones(len(P["u"])))


def _bodies_arg(matter, bodies, what: str) -> list[int]:
    from .mobilized_body import MobilizedBody

    out = []
    for b in bodies:
        if isinstance(b, MobilizedBody):
            if b._matter is not matter:
                raise ValueError(f"{what}: {b!r} belongs to another matter subsystem")
            out.append(b._index)
        else:
            i = _index(b, what)
            if i >= matter.get_num_bodies():
                raise IndexError(f"{what}: no mobilized body {i} (there are {matter.get_num_bodies()})")
            out.append(i)
    return out


def _function_arg(f, n_args: int, order: int, what: str) -> Function:
    if not isinstance(f, Function):
        raise TypeError(f"{what}: expected a Function, got {type(f).__name__}")
    if f.get_argument_size() != n_args:
        raise ValueError(f"{what}: the function takes {f.get_argument_size()} arguments, but {n_args} are given")
    if f.get_max_derivative_order() < order:
        raise ValueError(f"{what}: the function must have derivatives up to order {order}, it has "
                         f"{f.get_max_derivative_order()}")
    return f


@_register
class CoordinateCoupler(Constraint):
    """One holonomic equation f(q_sel) = 0 on selected coordinates (seed §3.3).

    ``coord_bodies`` (MobilizedBody objects or their indices) and ``coord_indices`` pick the
    arguments of ``function`` in order; the function needs derivatives up to order 2.
    """

    _mp = 1

    def __init__(self, matter, function, coord_bodies, coord_indices):
        matter = _matter_of(matter, "Constraint.CoordinateCoupler")
        self._bodies = _bodies_arg(matter, coord_bodies, "Constraint.CoordinateCoupler: coord_bodies")
        self._which = [_index(i, "Constraint.CoordinateCoupler: coord_indices") for i in coord_indices]
        if len(self._bodies) != len(self._which):
            raise ValueError("Constraint.CoordinateCoupler: coord_bodies and coord_indices differ in length")
        self._f = _function_arg(function, len(self._bodies), 2, "Constraint.CoordinateCoupler")
        super().__init__(matter)

    def _constrained_mobilizer_indices(self):
        return list(dict.fromkeys(self._bodies))

    @classmethod
    def _pack(cls, elements, plan, state):
        return [(c._f, np.array([plan.add_coord(b, w, c) for b, w in zip(c._bodies, c._which)], dtype=np.intp))
                for c in elements]

    @staticmethod
    def _grad(f, x):
        return np.array([f.calc_derivative_unchecked((i,), x) for i in range(len(x))])

    @classmethod
    def _position_errors(cls, P, kin):
        return np.array([[f.calc_value_unchecked(kin.q[kin.coord_q[c]])] for f, c in P])

    @classmethod
    def _velocity_errors(cls, P, kin):
        out = []
        for f, c in P:
            x = kin.q[kin.coord_q[c]]
            out.append([cls._grad(f, x) @ kin.qdot[kin.coord_q[c]]])
        return np.array(out)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        out = []
        for f, c in P:
            qi = kin.coord_q[c]
            x, xd = kin.q[qi], kin.qdot[qi]
            n = len(x)
            H = np.array([[f.calc_derivative_unchecked((i, j), x) for j in range(n)] for i in range(n)])
            out.append([cls._grad(f, x) @ kin.qdotdot[qi] + xd @ H @ xd])
        return np.array(out)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        for (f, c), e in zip(P, eq[:, 0]):
            g = cls._grad(f, kin.q[kin.coord_q[c]])
            _coord_mobility_forces(kin, c[None, :], g[None, :], np.array([e]), out)


@_register
class SpeedCoupler(Constraint):
    """One nonholonomic equation f(u_sel, q_sel) = 0: a function of selected speeds (and,
    optionally, coordinates, given after the speeds) that the speeds must satisfy (seed §3.3).

    The coordinates are held fixed when the equation is enforced; f needs first derivatives.
    """

    _mv = 1
    _force_map_uses_u = True  # G = df/du at the current u

    def __init__(self, matter, function, speed_bodies, speed_indices, coord_bodies=(), coord_indices=()):
        matter = _matter_of(matter, "Constraint.SpeedCoupler")
        self._ubodies = _bodies_arg(matter, speed_bodies, "Constraint.SpeedCoupler: speed_bodies")
        self._uwhich = [_index(i, "Constraint.SpeedCoupler: speed_indices") for i in speed_indices]
        self._qbodies = _bodies_arg(matter, coord_bodies, "Constraint.SpeedCoupler: coord_bodies")
        self._qwhich = [_index(i, "Constraint.SpeedCoupler: coord_indices") for i in coord_indices]
        if len(self._ubodies) != len(self._uwhich) or len(self._qbodies) != len(self._qwhich):
            raise ValueError("Constraint.SpeedCoupler: bodies and indices differ in length")
        self._f = _function_arg(function, len(self._ubodies) + len(self._qbodies), 1, "Constraint.SpeedCoupler")
        super().__init__(matter)

    def _constrained_mobilizer_indices(self):
        return list(dict.fromkeys(self._ubodies + self._qbodies))

    @classmethod
    def _pack(cls, elements, plan, state):
        out = []
        for c in elements:
            ui = np.array([plan.u_index(b, w, c) for b, w in zip(c._ubodies, c._uwhich)], dtype=np.intp)
            qc = np.array([plan.add_coord(b, w, c) for b, w in zip(c._qbodies, c._qwhich)], dtype=np.intp)
            out.append((c._f, ui, qc))
        return out

    @staticmethod
    def _x(kin, ui, qc):
        return np.concatenate([kin.u[ui], kin.q[kin.coord_q[qc]]])

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P), 0))

    @classmethod
    def _velocity_errors(cls, P, kin):
        return np.array([[f.calc_value_unchecked(cls._x(kin, ui, qc))] for f, ui, qc in P])

    @classmethod
    def _acceleration_errors(cls, P, kin):
        out = []
        for f, ui, qc in P:
            x = cls._x(kin, ui, qc)
            g = np.array([f.calc_derivative_unchecked((i,), x) for i in range(len(x))])
            nu = len(ui)
            out.append([g[:nu] @ kin.udot[ui] + g[nu:] @ kin.qdot[kin.coord_q[qc]]])
        return np.array(out)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        for (f, ui, qc), e in zip(P, eq[:, 0]):
            x = cls._x(kin, ui, qc)
            g = np.array([f.calc_derivative_unchecked((i,), x) for i in range(len(ui))])
            out.add_mobility_forces(np.full(len(ui), e), ui, g)


@_register
class PrescribedMotion(Constraint):
    """One holonomic equation q = f(t) for coordinate ``coord_index`` of ``body`` (seed §3.3).

    ``function`` takes one argument (time) and needs derivatives up to order 2. Unlike the
    couplers, this constraint does work: ``calc_power`` reports it.
    """

    _mp = 1

    def __init__(self, matter, function, body, coord_index: int):
        matter = _matter_of(matter, "Constraint.PrescribedMotion")
        (self._b,) = _bodies_arg(matter, [body], "Constraint.PrescribedMotion: body")
        self._which = _index(coord_index, "Constraint.PrescribedMotion: coord_index")
        self._f = _function_arg(function, 1, 2, "Constraint.PrescribedMotion")
        super().__init__(matter)

    def _constrained_mobilizer_indices(self):
        return [self._b]

    @classmethod
    def _pack(cls, elements, plan, state):
        cid = np.array([plan.add_coord(c._b, c._which, c) for c in elements])
        return dict(cid=cid, q=plan.coord_q[cid], f=[c._f for c in elements])

    @staticmethod
    def _target(P, kin, order: int):
        t = np.array([kin.t])
        if order == 0:
            return np.array([f.calc_value_unchecked(t) for f in P["f"]])
        return np.array([f.calc_derivative_unchecked((0,) * order, t) for f in P["f"]])

    @classmethod
    def _position_errors(cls, P, kin):
        return (kin.q[P["q"]] - cls._target(P, kin, 0))[:, None]

    @classmethod
    def _velocity_errors(cls, P, kin):
        return (kin.qdot[P["q"]] - cls._target(P, kin, 1))[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return (kin.qdotdot[P["q"]] - cls._target(P, kin, 2))[:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _coord_mobility_forces(kin, P["cid"][:, None], np.ones((len(P["cid"]), 1)), eq[:, 0], out)
