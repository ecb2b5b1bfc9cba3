"""Built-in constraints (Simbody's equation counts, meanings and conventions), each kind in bulk.

The geometric kinds are written exactly as Simbody writes them (see ``constraint_rows``): Ball
and the translation rows of Weld are measured and expressed in the ancestor body of the two
constrained bodies, body 1 takes the reaction at its material point coincident with body 2's
station, PointOnLine uses Simbody's perpendicular pair, NoSlip1D's acceleration row is that of
the two material points at the contact point. So errors, G, multipliers and constraint forces
equal Simbody's on and off the constraint manifold.

Every kind provides its position, velocity and acceleration errors, and its force map: the forces
of a unit multiplier of each equation, i.e. the columns of ``G^T``. The geometric kinds are made of
the row families of ``constraint_rows`` (``_parts``), which the solver evaluates directly: their
velocity errors are ``G u`` (homogeneous linear in u) and their acceleration rows at the
unconstrained accelerations ``G udot0 + bias``. The coordinate-level kinds keep class methods.

Shapes: ``k`` elements of a kind; ``R`` (nb, 3, 3), ``p`` (nb, 3), ``V`` and ``A`` (nb, 2, 3) =
(angular, body-origin linear) in Ground.
"""
from __future__ import annotations

import numpy as np

from ...common._ownership import check_system
from ...common.property import Property
from ...common.stage import Stage
from ...spatial import Rotation, Transform
from . import _rows as rows
from .constraint import Constraint, _common_ancestor, _mobod

__all__: list[str] = []


# ---------------------------------------------------------------------- argument checks

# ---------------------------------------------------------------------- properties (Instance: read when packed)
def _prop(attr: str, check, doc: str, **kw) -> Property:
    return Property(stage=Stage.Instance, check=check, attr=attr, doc=doc, **kw)


def _unit_check(v) -> np.ndarray:
    return _unit(v, "direction")


def _positive_check(v) -> float:
    x = _real(v, "value")
    if x <= 0:
        raise ValueError(f"must be positive, got {x}")
    return x


def _rotation_check(v) -> np.ndarray:
    return _rotation(v, "rotation")


def _frame_property(r: str, p: str, doc: str) -> Property:
    """A Transform kept as a rotation matrix ``r`` and a position ``p``."""

    def fget(c):
        return Transform(Rotation.from_matrix(getattr(c, r)), getattr(c, p))

    def fset(c, X):
        setattr(c, r, X.R.matrix.copy())
        setattr(c, p, np.array(X.p, dtype=np.float64))

    return Property(stage=Stage.Instance, check=lambda v: _transform(v, "frame"), doc=doc, fget=fget, fset=fset)

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
        elif b._matter is not matter:  # the first body's System is the constraint's
            check_system(f"Constraint.{name}", b, matter._system, "body")
    return matter


def _index(i, what: str) -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
        raise ValueError(f"{what}: expected an index >= 0, got {i!r}")
    return int(i)


def _register(cls):
    cls.__qualname__ = f"Constraint.{cls.__name__}"
    setattr(Constraint, cls.__name__, cls)
    return cls


def _attr(elements, name: str) -> list:
    return [getattr(c, name) for c in elements]


class _Geometric(Constraint):
    """A kind whose equations are row families of ``constraint_rows`` (``_parts``): the solver
    evaluates those directly; the class methods here are the same rows as (k, n) arrays."""

    _family = None
    _velocity_from_g = True
    _fast = True

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._b1, self._b2]))

    @classmethod
    def _parts(cls, P) -> list:
        """(family, packed rows, columns of the elements' equation numbers) for each family used."""
        return [(cls._family, P["rows"], slice(None))]

    @classmethod
    def _rows(cls, P, kin, what: str) -> np.ndarray:
        k = P["k"]
        out = []
        for fam, rp, _ in cls._parts(P):
            rows = getattr(fam, what)(rp, kin)
            out.append(np.asarray(rows[0] if what == "position" else rows, dtype=np.float64).reshape(k, -1))
        return np.concatenate(out, axis=1)

    @classmethod
    def _position_errors(cls, P, kin):
        return cls._rows(P, kin, "position")

    @classmethod
    def _velocity_errors(cls, P, kin):
        return cls._rows(P, kin, "velocity")

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return cls._rows(P, kin, "acceleration")


# ---------------------------------------------------------------------- Rod
@_register
class Rod(_Geometric):
    """One holonomic equation: the distance between station s1 on b1 and s2 on b2 is ``length``.

    perr = ‖p2 - p1‖ - length; the force is along the line between the points (Simbody's
    ``Constraint::Rod``, also called ConstantDistance). Should the points coincide, the direction is
    body 1's z axis, as in Simbody.
    """

    _mp = 1
    _family = rows.Rod

    station1 = _prop("_s1", lambda v: _vec3(v, "station"), "s1 (3,) on body 1")
    station2 = _prop("_s2", lambda v: _vec3(v, "station"), "s2 (3,) on body 2")
    length = _prop("_length", _positive_check, "the distance kept between the stations")

    def __init__(self, b1, s1, b2, s2, length: float):
        matter = _same_matter("Rod", b1, b2)
        self._b1, self._b2 = b1._index, b2._index
        self._s1, self._s2 = _vec3(s1, "Constraint.Rod: s1"), _vec3(s2, "Constraint.Rod: s2")
        self._length = _real(length, "Constraint.Rod: length")
        if self._length <= 0:
            raise ValueError(f"Constraint.Rod: length must be positive (use Constraint.Ball for coincident "
                             f"points), got {self._length}")
        self._ancestor = _common_ancestor(matter, [self._b1, self._b2])
        super().__init__(matter)

    def get_default_rod_length(self) -> float:
        return self._length

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rows=rows.Rod.pack(_attr(elements, "_b1"), _attr(elements, "_s1"),
                                                        _attr(elements, "_b2"), _attr(elements, "_s2"),
                                                        _attr(elements, "_length"), _attr(elements, "_ancestor")))


# ---------------------------------------------------------------------- Ball
@_register
class Ball(_Geometric):
    """Three holonomic equations: station s1 on b1 and s2 on b2 coincide.

    As in Simbody the equations are measured and expressed in the ancestor body A of b1 and b2
    (``perr = R_AG (p2 - p1)``), and b1 takes the force at its material point coincident with s2.
    """

    _mp = 3
    _family = rows.Coincident

    station1 = _prop("_s1", lambda v: _vec3(v, "station"), "s1 (3,) on body 1")
    station2 = _prop("_s2", lambda v: _vec3(v, "station"), "s2 (3,) on body 2")

    def __init__(self, b1, s1, b2, s2):
        matter = _same_matter("Ball", b1, b2)
        self._b1, self._b2 = b1._index, b2._index
        self._s1, self._s2 = _vec3(s1, "Constraint.Ball: s1"), _vec3(s2, "Constraint.Ball: s2")
        self._ancestor = _common_ancestor(matter, [self._b1, self._b2])
        super().__init__(matter)

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rows=rows.Coincident.pack(
            _attr(elements, "_b1"), _attr(elements, "_s1"), _attr(elements, "_b2"), _attr(elements, "_s2"),
            _attr(elements, "_ancestor")))


# ---------------------------------------------------------------------- orientation rows
def _orientation_rows(elements, R1_attr: str, R2_attr: str) -> dict:
    """Angle rows j = 0..2 per element: follower axis M_j against base axis F_{j+1} (cos = 0)."""
    k = len(elements)
    R1 = np.array(_attr(elements, R1_attr)).reshape(k, 3, 3)  # columns are the frame's axes
    R2 = np.array(_attr(elements, R2_attr)).reshape(k, 3, 3)
    j = np.tile(np.arange(3), k)
    e = np.repeat(np.arange(k), 3)
    return rows.Angle.pack(np.repeat(_attr(elements, "_b1"), 3), R1[e, :, (j + 1) % 3],
                           np.repeat(_attr(elements, "_b2"), 3), R2[e, :, j], np.zeros(3 * k))


@_register
class ConstantOrientation(_Geometric):
    """Three holonomic equations: frame M on the follower keeps the orientation of frame F on the base.

    The equations are Simbody's: the follower's x, y, z axes stay perpendicular to the base
    frame's y, z, x axes (so, as in Simbody, antiparallel axes also satisfy them).
    """

    _mp = 3
    _family = rows.Angle

    base_rotation = _prop("_R1", _rotation_check, "R_BF (3, 3): frame F on the base",
                          fget=lambda c: Rotation.from_matrix(c._R1))
    follower_rotation = _prop("_R2", _rotation_check, "R_FM (3, 3): frame M on the follower",
                              fget=lambda c: Rotation.from_matrix(c._R2))

    def __init__(self, base, R_BF, follower, R_FM):
        matter = _same_matter("ConstantOrientation", base, follower)
        self._b1, self._b2 = base._index, follower._index
        self._R1 = _rotation(R_BF, "Constraint.ConstantOrientation: R_BF")
        self._R2 = _rotation(R_FM, "Constraint.ConstantOrientation: R_FM")
        super().__init__(matter)

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rows=_orientation_rows(elements, "_R1", "_R2"))


@_register
class Weld(_Geometric):
    """Six holonomic equations: frame M on b2 coincides with frame F on b1.

    Equations 0-2 are rotational (as ``ConstantOrientation``), 3-5 translational (as ``Ball``
    between the frame origins: in the ancestor frame), in Simbody's order.
    """

    _mp = 6

    frame_on_body1 = _frame_property("_R1", "_s1", "X_B1F")
    frame_on_body2 = _frame_property("_R2", "_s2", "X_B2M")

    def __init__(self, b1, X_B1F, b2, X_B2M):
        matter = _same_matter("Weld", b1, b2)
        self._b1, self._b2 = b1._index, b2._index
        X1 = _transform(X_B1F, "Constraint.Weld: X_B1F")
        X2 = _transform(X_B2M, "Constraint.Weld: X_B2M")
        self._R1, self._s1 = X1.R.matrix.copy(), np.array(X1.p, dtype=np.float64)
        self._R2, self._s2 = X2.R.matrix.copy(), np.array(X2.p, dtype=np.float64)
        self._ancestor = _common_ancestor(matter, [self._b1, self._b2])
        super().__init__(matter)

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rot=_orientation_rows(elements, "_R1", "_R2"), trans=rows.Coincident.pack(
            _attr(elements, "_b1"), _attr(elements, "_s1"), _attr(elements, "_b2"), _attr(elements, "_s2"),
            _attr(elements, "_ancestor")))

    @classmethod
    def _parts(cls, P) -> list:
        return [(rows.Angle, P["rot"], slice(0, 3)), (rows.Coincident, P["trans"], slice(3, 6))]


@_register
class ConstantAngle(_Geometric):
    """One holonomic equation: axis_f on the follower keeps ``angle`` to axis_b on the base.

    perr = a_b . a_f - cos(angle); enforced by equal and opposite torques about a_f x a_b.
    As in Simbody, do not use it near 0 or pi.
    """

    _mp = 1
    _family = rows.Angle

    base_axis = _prop("_ab", _unit_check, "unit axis (3,) on the base")
    follower_axis = _prop("_af", _unit_check, "unit axis (3,) on the follower")
    angle = _prop("_angle", lambda v: _real(v, "angle"), "the angle kept between the axes")

    def __init__(self, base, axis_b, follower, axis_f, angle: float = np.pi / 2):
        matter = _same_matter("ConstantAngle", base, follower)
        self._b1, self._b2 = base._index, follower._index
        self._ab = _unit(axis_b, "Constraint.ConstantAngle: axis_b")
        self._af = _unit(axis_f, "Constraint.ConstantAngle: axis_f")
        self._angle = _real(angle, "Constraint.ConstantAngle: angle")
        super().__init__(matter)

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rows=rows.Angle.pack(_attr(elements, "_b1"), _attr(elements, "_ab"),
                                                          _attr(elements, "_b2"), _attr(elements, "_af"),
                                                          np.cos(_attr(elements, "_angle"))))


# ---------------------------------------------------------------------- point in plane / on line
@_register
class PointInPlane(_Geometric):
    """One holonomic equation: station ``point`` of the follower stays in the plane n . x = height
    fixed on the plane body (n = ``normal`` in the plane body's frame).
    """

    _mp = 1
    _family = rows.Plane

    normal = _prop("_n", _unit_check, "the plane's unit normal (3,) on the plane body")
    height = _prop("_h", lambda v: _real(v, "height"), "the plane's offset along the normal")
    point = _prop("_s", lambda v: _vec3(v, "point"), "the follower's point (3,)")

    def __init__(self, plane_body, normal, height: float, follower, point):
        matter = _same_matter("PointInPlane", plane_body, follower)
        self._b1, self._b2 = plane_body._index, follower._index
        self._n = _unit(normal, "Constraint.PointInPlane: normal")
        self._h = _real(height, "Constraint.PointInPlane: height")
        self._s = _vec3(point, "Constraint.PointInPlane: point")
        super().__init__(matter)

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rows=rows.Plane.pack(_attr(elements, "_b1"), _attr(elements, "_n"),
                                                          _attr(elements, "_h"), _attr(elements, "_b2"),
                                                          _attr(elements, "_s")))


@_register
class PointOnLine(_Geometric):
    """Two holonomic equations: station ``point`` of the follower stays on the line through
    ``point_on_line`` along ``direction``, both fixed on the line body.

    The errors are the point's offsets from the line along Simbody's two perpendiculars to it, in
    the line body: ``x = unit(d x e_k)`` with k the axis of the smallest ``|d_k|``, and ``y = d x x``.
    """

    _mp = 2
    _family = rows.Plane

    point_on_line = _prop("_o", lambda v: _vec3(v, "point"), "a point (3,) of the line, on the line body")
    point = _prop("_s", lambda v: _vec3(v, "point"), "the follower's point (3,)")

    def _set_direction(self, d):
        self._d = d
        self._x, self._y = rows.simbody_perpendiculars(d)

    direction = Property(stage=Stage.Instance, check=_unit_check, doc="the line's unit direction (3,)",
                         fget=lambda c: c._d, fset=lambda c, d: c._set_direction(d))

    def __init__(self, line_body, direction, point_on_line, follower, point):
        matter = _same_matter("PointOnLine", line_body, follower)
        self._b1, self._b2 = line_body._index, follower._index
        self._d = _unit(direction, "Constraint.PointOnLine: direction")
        self._o = _vec3(point_on_line, "Constraint.PointOnLine: point_on_line")
        self._s = _vec3(point, "Constraint.PointOnLine: point")
        self._x, self._y = rows.simbody_perpendiculars(self._d)
        super().__init__(matter)

    @classmethod
    def _pack(cls, elements, plan, state):
        n = np.array([[c._x, c._y] for c in elements]).reshape(-1, 3)
        h = np.array([[c._x @ c._o, c._y @ c._o] for c in elements]).reshape(-1)
        return dict(k=len(elements), rows=rows.Plane.pack(np.repeat(_attr(elements, "_b1"), 2), n, h,
                                                          np.repeat(_attr(elements, "_b2"), 2),
                                                          np.repeat(_attr(elements, "_s"), 2, axis=0)))


# ---------------------------------------------------------------------- NoSlip1D
@_register
class NoSlip1D(_Geometric):
    """One nonholonomic equation: at the contact point P fixed on the case body, the material
    points of moving0 and moving1 have the same velocity along direction n (fixed on the case).

    verr = n . (v1_P - v0_P); no force acts on the case body. The acceleration row is Simbody's:
    that of the two material points at P (in the ancestor of the three bodies), which is d/dt verr
    while both material points move with P (rolling).
    """

    _mv = 1
    _family = rows.NoSlip

    contact_point = _prop("_P", lambda v: _vec3(v, "point"), "the contact point (3,) on the case body")
    direction = _prop("_n", _unit_check, "the no-slip unit direction (3,) on the case body")

    def __init__(self, case_body, point, direction, moving0, moving1):
        matter = _same_matter("NoSlip1D", case_body, moving0, moving1)
        self._bc, self._b0, self._b1 = case_body._index, moving0._index, moving1._index
        self._P = _vec3(point, "Constraint.NoSlip1D: point")
        self._n = _unit(direction, "Constraint.NoSlip1D: direction")
        self._ancestor = _common_ancestor(matter, [self._bc, self._b0, self._b1])
        super().__init__(matter)

    def _constrained_body_indices(self):
        return list(dict.fromkeys([self._bc, self._b0, self._b1]))

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(k=len(elements), rows=rows.NoSlip.pack(_attr(elements, "_bc"), _attr(elements, "_P"),
                                                           _attr(elements, "_n"), _attr(elements, "_b0"),
                                                           _attr(elements, "_b1"), _attr(elements, "_ancestor")))

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((P["k"], 0))

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
    _velocity_from_g = True

    value = _prop("_value", lambda v: _real(v, "value"), "the value the coordinate is held at")

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


class _OneSpeed(Constraint):
    """What ConstantSpeed and ConstantAcceleration share: one equation on speed ``which_u`` of ``mobod``,
    whose force is a generalized force on that speed."""

    def __init__(self, mobod, which_u: int, value: float):
        name = f"Constraint.{type(self).__name__}"
        _mobod(mobod, name)
        self._b = mobod._index
        self._which = _index(which_u, f"{name}: which_u")
        self._value = _real(value, f"{name}: value")
        super().__init__(mobod._matter)

    def _constrained_mobilizer_indices(self):
        return [self._b]

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(u=np.array([plan.u_index(c._b, c._which, c) for c in elements]),
                    value=np.array([c._value for c in elements]))

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        out.add_mobility_forces(eq[:, 0], P["u"], np.ones(len(P["u"])))


@_register
class ConstantSpeed(_OneSpeed):
    """One nonholonomic equation: speed ``which_u`` of ``mobod`` stays at ``speed`` (verr = u - speed)."""

    _mv = 1

    speed = _prop("_value", lambda v: _real(v, "speed"), "the speed held")

    def __init__(self, mobod, which_u: int, speed: float):
        super().__init__(mobod, which_u, speed)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return (kin.u[P["u"]] - P["value"])[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return kin.udot[P["u"]][:, None]


@_register
class ConstantAcceleration(_OneSpeed):
    """One acceleration-only equation: udot ``which_u`` of ``mobod`` equals ``a`` (aerr = udot - a)."""

    _ma = 1

    acceleration = _prop("_value", lambda v: _real(v, "acceleration"), "the acceleration held")

    def __init__(self, mobod, which_u: int, a: float):
        super().__init__(mobod, which_u, a)

    @classmethod
    def _velocity_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return (kin.udot[P["u"]] - P["value"])[:, None]
