"""Prescribed motion: ``Motion`` (Steady, Sinusoid, Custom) and mobilizer locks.

A Motion prescribes one mobilizer's q (Position level), u (Velocity level) or udot
(Acceleration level) as a function of time. The prescribed mobilities are solved as inverse
dynamics inside the constrained solve: each prescribed q/u/udot is one more equation
(``q - q_p(t)``, ``u - u_p(t)`` or ``udot - udot_p(t)``, with its derivatives) whose multiplier is
the generalized force that produces the motion (``Motion.get_motion_forces``). The equations go in
the State's constraint-error arrays after the constraints' own, so projection and the integrators'
constraint tolerance keep the prescription as they keep constraints.

``MobilizedBody.lock(state, level)`` prescribes the current values (a lock at Position holds u at
zero); ``lock_at`` prescribes given values; both are Instance-stage changes, as in Simbody.
"""
from __future__ import annotations

import enum
import math

import numpy as np

from ..._kinds import KindsMeta
from ...common.component import Component
from ...common.property import Property, real
from ...common.stage import Stage
from ...common.state import State
from ..tree.mobilized_body import MobilizedBody
from .builtin_constraints import _coord_mobility_forces

__all__ = ["Motion"]


class _Level(enum.IntEnum):
    """What a Motion prescribes: nothing, udot, u, or q."""

    NoLevel = -1
    Acceleration = 0
    Velocity = 1
    Position = 2


def _level(x, where: str) -> _Level:
    try:
        return _Level(int(x))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: expected a Motion.Level, got {x!r}") from exc


class Motion(Component, metaclass=KindsMeta):
    """Base of the Motions; a Motion is attached to one mobilized body (a topology change).

    Parameters
    ----------
    mobod : MobilizedBody
        The mobilizer whose motion is prescribed.
    """

    Level = _Level

    def __init__(self, mobod: MobilizedBody):
        if not isinstance(mobod, MobilizedBody) or mobod.is_ground():
            raise TypeError(f"Motion.{type(self).__name__}: expected a non-Ground MobilizedBody, got {mobod!r}")
        self._mobod = mobod
        self._matter = mobod._matter
        self._matter._adopt_motion(self)

    def __repr__(self) -> str:
        return f"<Motion.{type(self).__name__} {self.get_absolute_path()!r}>"

    def get_mobilized_body(self) -> MobilizedBody:
        """The mobilized body whose motion this prescribes."""
        return self._mobod

    def get_level(self, state: State) -> _Level:
        """The level prescribed in ``state``."""
        raise NotImplementedError

    def get_motion_forces(self, state: State) -> np.ndarray:
        """Generalized forces (nu_body,) the motion applies to produce the prescribed motion (Acceleration)."""
        return self._matter._motion_forces(state, self._mobod._index)

    # targets for time t (arrays over the body's q or u)
    def _position(self, state, n):
        raise NotImplementedError

    def _velocity(self, state, n):
        raise NotImplementedError

    def _acceleration(self, state, n):
        raise NotImplementedError


def _values(x, n: int, where: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,) or not np.isfinite(a).all():
        raise ValueError(f"{where}: expected a finite scalar or {n} values, got {x!r}")
    return a


def _finite_values(v) -> np.ndarray:
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    if a.ndim != 1 or not np.isfinite(a).all():
        raise ValueError(f"expected finite values, got {v!r}")
    return a


class _Steady(Motion):
    """Velocity-level motion: every u of the mobilizer held at ``u`` (a scalar or one per u)."""

    u = Property(stage=Stage.Instance, check=lambda v: _finite_values(v), attr="_u",
                 doc="the speed held (one value, or one per u)")

    def __init__(self, mobod: MobilizedBody, u):
        self._u = np.atleast_1d(np.asarray(u, dtype=np.float64))
        if not np.isfinite(self._u).all():
            raise ValueError(f"Motion.Steady: u must be finite, got {u!r}")
        super().__init__(mobod)

    def get_level(self, state):
        return _Level.Velocity

    def _velocity(self, state, n):
        u = self._u if len(self._u) != 1 else np.full(n, self._u[0])
        return _values(u, n, f"{self!r}"), np.zeros(n)


class _Sinusoid(Motion):
    """x(t) = amplitude sin(rate t + phase) for every q (Position), u (Velocity) or udot (Acceleration)."""

    amplitude = Property(stage=Stage.Instance, check=real, attr="_a", doc="a")
    rate = Property(stage=Stage.Instance, check=real, attr="_w", doc="w (rad per unit time)")
    phase = Property(stage=Stage.Instance, check=real, attr="_p", doc="p (rad)")

    def __init__(self, mobod: MobilizedBody, level, amplitude: float, rate: float, phase: float = 0.0):
        self._level = _level(level, "Motion.Sinusoid")
        if self._level == _Level.NoLevel:
            raise ValueError("Motion.Sinusoid: the level must be Position, Velocity or Acceleration")
        self._a, self._w, self._p = (float(v) for v in (amplitude, rate, phase))
        if not all(np.isfinite([self._a, self._w, self._p])):
            raise ValueError("Motion.Sinusoid: amplitude, rate and phase must be finite")
        super().__init__(mobod)

    def get_level(self, state):
        return self._level

    def _derivs(self, state, n, k):
        t = state.get_time()
        a, w, p = self._a, self._w, self._p
        # libm's sin and cos (not numpy's own), as the compiled time loop evaluates them
        s, c = math.sin(w * t + p), math.cos(w * t + p)
        vals = [a * s, a * w * c, -a * w * w * s]
        return tuple(np.full(n, v) for v in vals[:k])

    def _position(self, state, n):
        return self._derivs(state, n, 3)

    def _velocity(self, state, n):
        return self._derivs(state, n, 2)

    def _acceleration(self, state, n):
        return self._derivs(state, n, 1)


class _CustomMotionImplementation:
    """Base of a ``Motion.Custom`` implementation.

    Override ``get_level(state)`` and, for that level, the methods that return the prescribed
    values at the State's time (arrays over the mobilizer's q or u): Position:
    ``calc_prescribed_position``, ``calc_prescribed_position_dot``,
    ``calc_prescribed_position_dot_dot`` (each ``(state, nq)``); Velocity:
    ``calc_prescribed_velocity``, ``calc_prescribed_velocity_dot`` (``(state, nu)``); Acceleration:
    ``calc_prescribed_acceleration(state, nu)``.
    """

    def get_level(self, state: State) -> _Level:
        return _Level.NoLevel

    def calc_prescribed_position(self, state: State, nq: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: calc_prescribed_position")

    def calc_prescribed_position_dot(self, state: State, nq: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: calc_prescribed_position_dot")

    def calc_prescribed_position_dot_dot(self, state: State, nq: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: calc_prescribed_position_dot_dot")

    def calc_prescribed_velocity(self, state: State, nu: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: calc_prescribed_velocity")

    def calc_prescribed_velocity_dot(self, state: State, nu: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: calc_prescribed_velocity_dot")

    def calc_prescribed_acceleration(self, state: State, nu: int) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: calc_prescribed_acceleration")


class _CustomMotion(Motion):
    """A Motion whose prescribed values come from a ``Motion.Custom.Implementation``."""

    Implementation = _CustomMotionImplementation

    def __init__(self, mobod: MobilizedBody, implementation: _CustomMotionImplementation):
        if not isinstance(implementation, _CustomMotionImplementation):
            raise TypeError(f"Motion.Custom: expected a Motion.Custom.Implementation, got "
                            f"{type(implementation).__name__}")
        self._impl = implementation
        super().__init__(mobod)

    def get_level(self, state):
        return _level(self._impl.get_level(state), f"{self!r}.get_level()")

    def _call(self, fn, state, n):
        return _values(fn(state, n), n, f"{self!r} ({type(self._impl).__name__}.{fn.__name__})")

    def _position(self, state, n):
        i = self._impl
        return (self._call(i.calc_prescribed_position, state, n), self._call(i.calc_prescribed_position_dot, state, n),
                self._call(i.calc_prescribed_position_dot_dot, state, n))

    def _velocity(self, state, n):
        i = self._impl
        return self._call(i.calc_prescribed_velocity, state, n), self._call(i.calc_prescribed_velocity_dot, state, n)

    def _acceleration(self, state, n):
        return (self._call(self._impl.calc_prescribed_acceleration, state, n),)


for _cls, _name in ((_Steady, "Steady"), (_Sinusoid, "Sinusoid"), (_CustomMotion, "Custom")):
    _cls.__name__ = _name
    _cls.__qualname__ = f"Motion.{_name}"
    setattr(Motion, _name, _cls)
_CustomMotionImplementation.__qualname__ = "Motion.Custom.Implementation"


class _LockSource:
    """Constant targets of a lock: the values, with zero derivatives."""

    def __init__(self, level: int, values: np.ndarray):
        self.level = level
        self.values = values

    def _position(self, state, n):
        return self.values, np.zeros(n), np.zeros(n)

    def _velocity(self, state, n):
        return self.values, np.zeros(n)

    def _acceleration(self, state, n):
        return (self.values,)


# ====================================================================== equations (internal kinds)
class _MotionElement:
    """One prescribed q, u or udot: duck-typed like a Constraint for the solver."""

    _mp = _mv = _ma = 0
    _bulk = True
    _is_motion = True
    _index = None

    def __init__(self, body: int, which: int, n: int, source):
        self._body, self._which, self._n, self._source = body, which, n, source

    @classmethod
    def _sources(cls, elements):
        """(source, body, n) once per source, in element order (a source's elements are contiguous)."""
        out = []
        for c in elements:
            if c._which == 0:
                out.append((c._source, c._body, c._n))
        return out

    @staticmethod
    def _targets(P, kin, fn_name: str, k: int):
        parts = [getattr(src, fn_name)(kin.state, n) for src, _, n in P["sources"]]
        return [np.concatenate([p[i] for p in parts]) for i in range(k)]


class _PrescribedQ(_MotionElement):
    _mp = 1

    @classmethod
    def _pack(cls, elements, plan, state):
        cid = np.array([plan.add_coord(c._body, c._which, c) for c in elements], dtype=np.intp)
        return dict(cid=cid, q=plan.coord_q[cid], sources=cls._sources(elements))

    @classmethod
    def _position_errors(cls, P, kin):
        (q,) = cls._targets(P, kin, "_position", 1)
        return (kin.q[P["q"]] - q)[:, None]

    @classmethod
    def _velocity_errors(cls, P, kin):
        _, qd = cls._targets(P, kin, "_position", 2)
        return (kin.qdot[P["q"]] - qd)[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        _, _, qdd = cls._targets(P, kin, "_position", 3)
        return (kin.qdotdot[P["q"]] - qdd)[:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _coord_mobility_forces(kin, P["cid"][:, None], np.ones((len(P["cid"]), 1)), eq[:, 0], out)


class _PrescribedSpeedElement(_MotionElement):
    """What prescribing u and prescribing udot share: one equation on one speed, a force on that speed."""

    @classmethod
    def _pack(cls, elements, plan, state):
        return dict(u=np.array([plan.u_index(c._body, c._which, c) for c in elements], dtype=np.intp),
                    sources=cls._sources(elements))

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        out.add_mobility_forces(eq[:, 0], P["u"], np.ones(len(P["u"])))


class _PrescribedU(_PrescribedSpeedElement):
    _mv = 1

    @classmethod
    def _velocity_errors(cls, P, kin):
        (u,) = cls._targets(P, kin, "_velocity", 1)
        return (kin.u[P["u"]] - u)[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        _, ud = cls._targets(P, kin, "_velocity", 2)
        return (kin.udot[P["u"]] - ud)[:, None]


class _PrescribedUDot(_PrescribedSpeedElement):
    _ma = 1

    @classmethod
    def _velocity_errors(cls, P, kin):
        return np.zeros((len(P["u"]), 0))

    @classmethod
    def _acceleration_errors(cls, P, kin):
        (ud,) = cls._targets(P, kin, "_acceleration", 1)
        return (kin.udot[P["u"]] - ud)[:, None]


def motion_elements(matter, state: State, layout, locks: dict) -> list:
    """The prescribed-motion equations of ``state``: locks first take precedence over Motions."""
    out = []
    bodies = sorted(set(matter._motions) | set(locks))
    for b in bodies:
        nq = int(layout.qoff[b + 1] - layout.qoff[b])
        nu = int(layout.uoff[b + 1] - layout.uoff[b])
        if b in locks:
            level, values = locks[b]
            values = np.array(values, dtype=np.float64)
            if level == _Level.Position:  # held by u = 0 (works for quaternions too)
                src, kind, n = _LockSource(_Level.Velocity, np.zeros(nu)), _PrescribedU, nu
            elif level == _Level.Velocity:
                src, kind, n = _LockSource(level, values), _PrescribedU, nu
            else:
                src, kind, n = _LockSource(level, values), _PrescribedUDot, nu
        else:
            motion = matter._motions[b]
            level = motion.get_level(state)
            if level == _Level.NoLevel:
                continue
            if level == _Level.Position:
                if nq != nu or b in set(layout.quaternion_bodies.tolist()):
                    raise NotImplementedError(f"{motion!r}: a Position-level Motion needs a mobilizer with one q "
                                              f"per u (no quaternions); {matter.get_mobilized_body(b)!r} has "
                                              f"nq={nq}, nu={nu}")
                src, kind, n = motion, _PrescribedQ, nq
            elif level == _Level.Velocity:
                src, kind, n = motion, _PrescribedU, nu
            else:
                src, kind, n = motion, _PrescribedUDot, nu
        out.extend(kind(b, j, n, src) for j in range(n))
    return out


# ====================================================================== MobilizedBody.lock & co.
def _lock(self: MobilizedBody, state: State, level=_Level.Position) -> None:
    """Lock this mobilizer at its current q (Position: u is set to 0), u (Velocity), or udot = 0
    (Acceleration). An Instance-stage change."""
    lv = _level(level, f"{self!r}.lock()")
    if lv == _Level.NoLevel:
        self.unlock(state)
        return
    if lv == _Level.Position:
        values = np.array(self.get_q(state))
    elif lv == _Level.Velocity:
        values = np.array(self.get_u(state))
    else:
        values = np.zeros(self.get_num_u(state))
    self._matter._set_lock(state, self._index, lv, values)
    if lv == _Level.Position and self.get_num_u(state):
        self.set_u(state, np.zeros(self.get_num_u(state)))


def _lock_at(self: MobilizedBody, state: State, value, level=_Level.Position) -> None:
    """Lock this mobilizer at ``value``: its q (Position; q is set now and u to 0), u (Velocity; u
    is set now) or udot (Acceleration). A scalar applies to every q or u. An Instance-stage change."""
    lv = _level(level, f"{self!r}.lock_at()")
    if lv == _Level.NoLevel:
        self.unlock(state)
        return
    n = self.get_num_q(state) if lv == _Level.Position else self.get_num_u(state)
    values = _values(value, n, f"{self!r}.lock_at()")
    self._matter._set_lock(state, self._index, lv, values)
    if lv == _Level.Position:
        self.set_q(state, values)
        if self.get_num_u(state):
            self.set_u(state, np.zeros(self.get_num_u(state)))
    elif lv == _Level.Velocity:
        self.set_u(state, values)


def _unlock(self: MobilizedBody, state: State) -> None:
    """Remove this mobilizer's lock (an Instance-stage change if it was locked)."""
    self._matter._set_lock(state, self._index, None, None)


def _is_locked(self: MobilizedBody, state: State) -> bool:
    """Whether this mobilizer is locked in ``state``."""
    return self._matter._get_lock(state, self._index) is not None


def _get_lock_level(self: MobilizedBody, state: State) -> _Level:
    """The lock level in ``state`` (``Motion.Level.NoLevel`` when unlocked)."""
    lock = self._matter._get_lock(state, self._index)
    return _Level.NoLevel if lock is None else _Level(lock[0])


for _fn, _name in ((_lock, "lock"), (_lock_at, "lock_at"), (_unlock, "unlock"), (_is_locked, "is_locked"),
                   (_get_lock_level, "get_lock_level")):
    _fn.__name__ = _name
    setattr(MobilizedBody, _name, _fn)
