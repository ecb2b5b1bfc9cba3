"""Built-in force elements, each evaluated for all its enabled elements in one compiled call.

Each kind's ``_pack`` (at Instance) builds a ``simtk_core.ForceSet`` of its elements' parameters
through the checked builders of ``simtk._core``; the force subsystem then calls the kernels of all
kinds in one go per evaluation (``core/forces.pxi`` holds the formulas).

Sign conventions (Simbody's): body forces are (torque about the body origin, force at the body
origin) in Ground; a two-point spring pulls its points together when stretched; a two-point
constant force pushes them apart when positive; a mobility spring pushes its coordinate back to q0.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _core
from ...common._ownership import check_system
from ...common.output import output
from ...common.property import Property, nonnegative, positive, real, vector3
from ...common.stage import Stage
from ...common.state import State
from ...spatial import Transform
from ..tree.mobilized_body import MobilizedBody
from .force import Force, _Packed

__all__ = []  # the elements are reached as Force.<Name>


# ---------------------------------------------------------------------- argument checks
def _system_of_forces(forces):
    # The System a force subsystem works in; None for what is not one (Force.__init__ then says so).
    return forces._system if callable(getattr(forces, "_adopt_force", None)) else None


def _body(x, what: str, forces=None, system=None) -> MobilizedBody:
    """``x`` checked to be a MobilizedBody of ``system`` (or of the System of ``forces``); ``what`` is
    "<operation>: <argument>"."""
    if not isinstance(x, MobilizedBody):
        raise TypeError(f"{what}: expected a MobilizedBody, got {type(x).__name__}")
    if forces is not None:
        system = _system_of_forces(forces)
        if system is None:
            return x
    if system is not None and x._matter._system is not system:
        where, _, arg = what.rpartition(": ")
        check_system(where or what, x, system, "body" if not where or arg in ("body", "mobod") else f"body {arg}")
    return x


def _matter_arg(x, what: str, forces=None):
    """``x`` checked to be a SimbodyMatterSubsystem of the System of ``forces``; ``what`` names the operation."""
    from ..matter import SimbodyMatterSubsystem

    if not isinstance(x, SimbodyMatterSubsystem):
        raise TypeError(f"{what}: expected a SimbodyMatterSubsystem, got {type(x).__name__}")
    system = _system_of_forces(forces) if forces is not None else None
    if system is not None and x._system is not system:
        check_system(what.rpartition(": ")[0] or what, x, system, "matter subsystem")
    return x


def _vec3(x, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (3,) or not np.isfinite(a).all():
        raise ValueError(f"{what}: expected a finite 3-vector, got {x!r}")
    return a.copy()


def _real(x, what: str, nonnegative: bool = False) -> float:
    v = float(x)
    if not np.isfinite(v) or (nonnegative and v < 0):
        raise ValueError(f"{what}: expected a finite{' non-negative' if nonnegative else ''} number, got {x!r}")
    return v


def _number(x, what: str) -> float:
    """`_real`, saying which argument when ``x`` is not a number at all."""
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{what}: expected a finite number, got {x!r}") from None
    return _real(v, what)


def _mobility(matter, state: State, element, mobod: MobilizedBody, which: int, need_q: bool):
    """Indices (q index, u index) in the matter's q and u of coordinate/speed ``which`` of ``mobod``."""
    q0, nq = matter._q_range(state, mobod._index)
    u0, nu = matter._u_range(state, mobod._index)
    if not 0 <= which < nu:
        raise IndexError(f"{element!r}: {mobod!r} has {nu} mobilities; index {which} is out of range")
    if need_q and nq != nu:
        raise ValueError(f"{element!r}: {mobod!r} has nq={nq} != nu={nu} in this State (quaternions?); this "
                         "element needs qdot = u")
    return q0 + which, u0 + which


def _element(name: str):
    def register(cls):
        cls.__name__ = name
        cls.__qualname__ = f"Force.{name}"
        setattr(Force, name, cls)
        return cls
    return register


# ---------------------------------------------------------------------- gravity
@_element("UniformGravity")
class _UniformGravity(Force):
    """Gravity g (3,) on every body's mass center; PE = sum_i m_i (-g . p_GCi) - ‖g‖ h0 sum_i m_i.

    ``zero_height`` h0 is the height (along -g) at which the potential energy is zero.
    """

    _position_only = True
    _conservative = True

    gravity = Property(stage=Stage.Instance, check=vector3, attr="_g", doc="g (3,), in Ground")
    zero_height = Property(stage=Stage.Instance, check=real, attr="_zero_height",
                           doc="height along -g where the potential energy is zero")

    def __init__(self, forces, matter, g, zero_height: float = 0.0):
        _matter_arg(matter, f"Force.{type(self).__name__}: matter", forces)
        g = _vec3(g, f"Force.{type(self).__name__}: g")
        zero_height = _real(zero_height, f"Force.{type(self).__name__}: zero_height")
        super().__init__(forces)
        self._g, self._zero_height = g, zero_height

    def get_gravity(self) -> np.ndarray:
        """The gravity vector g (3,), in Ground."""
        return self._g.copy()

    def get_zero_height(self) -> float:
        """The height at which potential energy is zero."""
        return self._zero_height

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.uniform_gravity_set(np.array([e._g for e in elements]).reshape(-1, 3),
                                                 [e._zero_height for e in elements]), elements)


@_element("Gravity")
class _Gravity(_UniformGravity):
    """Gravity of ``magnitude`` along unit ``direction`` on every body (see UniformGravity)."""

    def __init__(self, forces, matter, direction, magnitude: float, zero_height: float = 0.0):
        d = _vec3(direction, "Force.Gravity: direction")
        n = np.linalg.norm(d)
        if n == 0.0:
            raise ValueError("Force.Gravity: direction must be a non-zero vector")
        super().__init__(forces, matter, d / n * _real(magnitude, "Force.Gravity: magnitude"), zero_height)


# ---------------------------------------------------------------------- two-point elements
class _TwoPoint(Force):
    """Shared parts of elements acting along the line between station s1 on b1 and s2 on b2."""

    def __init__(self, forces, b1, s1, b2, s2):
        name = type(self).__name__
        b1, b2 = _body(b1, f"Force.{name}: b1", forces), _body(b2, f"Force.{name}: b2", forces)
        s1, s2 = _vec3(s1, f"Force.{name}: s1"), _vec3(s2, f"Force.{name}: s2")
        super().__init__(forces)
        self._b1, self._b2, self._s1, self._s2 = b1, b2, s1, s2

    station1 = Property(stage=Stage.Instance, check=vector3, attr="_s1", doc="s1 (3,) on b1, in b1")
    station2 = Property(stage=Stage.Instance, check=vector3, attr="_s2", doc="s2 (3,) on b2, in b2")

    def _separation(self, state):
        """(d, ‖d‖) with d = p2 - p1, the vector between the stations in Ground (Position)."""
        d = (self._b2.find_station_location_in_ground(state, self._s2)
             - self._b1.find_station_location_in_ground(state, self._s1))
        return d, float(np.linalg.norm(d))

    def _separation_rate(self, state) -> float:
        """d‖d‖/dt (Velocity)."""
        d, n = self._separation(state)
        v = (self._b2.find_station_velocity_in_ground(state, self._s2)
             - self._b1.find_station_velocity_in_ground(state, self._s1))
        return float(d @ v / n) if n > 0 else 0.0

    @staticmethod
    def _points(elements):
        return ([e._b1._index for e in elements], np.array([e._s1 for e in elements]).reshape(-1, 3),
                [e._b2._index for e in elements], np.array([e._s2 for e in elements]).reshape(-1, 3))


@_element("TwoPointLinearSpring")
class _TwoPointLinearSpring(_TwoPoint):
    """Spring of stiffness k and rest length x0 between two stations; PE = k/2 (‖d‖ - x0)^2."""

    _position_only = True
    _conservative = True

    stiffness = Property(stage=Stage.Instance, check=nonnegative, attr="_k", doc="k")
    rest_length = Property(stage=Stage.Instance, check=nonnegative, attr="_x0", doc="x0")

    @output(Stage.Position, float, name="tension")
    def _output_tension(self, state) -> float:
        """k (‖d‖ - x0): positive when stretched (pulling the stations together)."""
        return self._k * (self._separation(state)[1] - self._x0)

    def __init__(self, forces, b1, s1, b2, s2, k: float, x0: float):
        self._k = _real(k, "Force.TwoPointLinearSpring: k", nonnegative=True)
        self._x0 = _real(x0, "Force.TwoPointLinearSpring: x0", nonnegative=True)
        super().__init__(forces, b1, s1, b2, s2)

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.two_point_linear_spring_set(*cls._points(elements), [e._k for e in elements],
                                                         [e._x0 for e in elements]), elements)


@_element("TwoPointLinearDamper")
class _TwoPointLinearDamper(_TwoPoint):
    """Damper c resisting the rate of change of the distance between two stations."""

    damping = Property(stage=Stage.Instance, check=nonnegative, attr="_c", doc="c")

    @output(Stage.Velocity, float, name="tension")
    def _output_tension(self, state) -> float:
        """c d‖d‖/dt: positive while the stations separate (the damper pulls them together)."""
        return self._c * self._separation_rate(state)

    def __init__(self, forces, b1, s1, b2, s2, c: float):
        self._c = _real(c, "Force.TwoPointLinearDamper: c", nonnegative=True)
        super().__init__(forces, b1, s1, b2, s2)

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.two_point_linear_damper_set(*cls._points(elements), [e._c for e in elements]),
                       elements)


@_element("TwoPointConstantForce")
class _TwoPointConstantForce(_TwoPoint):
    """Force of constant magnitude f along the line of two stations, pushing apart when f > 0; PE = -f ‖d‖."""

    _position_only = True
    _conservative = True

    force = Property(stage=Stage.Instance, check=real, attr="_f", doc="f, pushing apart when positive")

    @output(Stage.Position, float, name="tension")
    def _output_tension(self, state) -> float:
        """-f: a pushing force is a negative tension."""
        return -self._f

    def __init__(self, forces, b1, s1, b2, s2, f: float):
        self._f = _real(f, "Force.TwoPointConstantForce: f")
        super().__init__(forces, b1, s1, b2, s2)

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.two_point_constant_force_set(*cls._points(elements), [e._f for e in elements]),
                       elements)


# ---------------------------------------------------------------------- mobility elements
class _MobilityElement(Force):
    def __init__(self, forces, mobod, which: int):
        mobod = _body(mobod, f"Force.{type(self).__name__}: mobod", forces)
        if isinstance(which, bool) or int(which) != which or which < 0:
            raise ValueError(f"Force.{type(self).__name__}: the mobility index must be an integer >= 0, "
                             f"got {which!r}")
        super().__init__(forces)
        self._mobod, self._which = mobod, int(which)

    _needs_q = True
    _energy_needs_positions = False

    @classmethod
    def _indices(cls, elements, matter, state):
        """(q indices, u indices) of the elements' mobilities in the matter's q and u."""
        idx = [_mobility(matter, state, e, e._mobod, e._which, cls._needs_q) for e in elements]
        return [i for i, _ in idx], [j for _, j in idx]


@_element("MobilityLinearSpring")
class _MobilityLinearSpring(_MobilityElement):
    """Generalized force -k (q - q0) on one coordinate (qdot = u); PE = k/2 (q - q0)^2."""

    _position_only = True
    _conservative = True

    stiffness = Property(stage=Stage.Instance, check=nonnegative, attr="_k", doc="k")
    q_zero = Property(stage=Stage.Instance, check=real, attr="_q0", doc="q0, where the force is zero")

    def __init__(self, forces, mobod, which_u: int, k: float, q0: float):
        self._k = _real(k, "Force.MobilityLinearSpring: k", nonnegative=True)
        self._q0 = _real(q0, "Force.MobilityLinearSpring: q0")
        super().__init__(forces, mobod, which_u)

    @classmethod
    def _pack(cls, elements, matter, state):
        qi, ui = cls._indices(elements, matter, state)
        return _Packed(_core.mobility_linear_spring_set(qi, ui, [e._k for e in elements],
                                                        [e._q0 for e in elements]), elements)


@_element("MobilityLinearDamper")
class _MobilityLinearDamper(_MobilityElement):
    """Generalized force -c u on one speed."""

    _needs_q = False

    damping = Property(stage=Stage.Instance, check=nonnegative, attr="_c", doc="c")

    def __init__(self, forces, mobod, which_u: int, c: float):
        self._c = _real(c, "Force.MobilityLinearDamper: c", nonnegative=True)
        super().__init__(forces, mobod, which_u)

    @classmethod
    def _pack(cls, elements, matter, state):
        _, ui = cls._indices(elements, matter, state)
        return _Packed(_core.mobility_linear_damper_set(ui, [e._c for e in elements]), elements)


@_element("MobilityConstantForce")
class _MobilityConstantForce(_MobilityElement):
    """Constant generalized force f on one speed."""

    _position_only = True
    _needs_q = False

    force = Property(stage=Stage.Instance, check=real, attr="_f", doc="f")

    def __init__(self, forces, mobod, which_u: int, f: float):
        self._f = _real(f, "Force.MobilityConstantForce: f")
        super().__init__(forces, mobod, which_u)

    @classmethod
    def _pack(cls, elements, matter, state):
        _, ui = cls._indices(elements, matter, state)
        return _Packed(_core.mobility_constant_force_set(ui, [e._f for e in elements]), elements)


@_element("MobilityLinearStop")
class _MobilityLinearStop(_MobilityElement):
    """Stops at q_low and q_high: stiffness k and Hunt-Crossley dissipation d beyond them.

    With penetration x > 0 beyond a stop and its rate xdot, the stop pushes back with
    k x (1 + d xdot), never pulling; PE = k x^2 / 2.
    """

    _conservative = True

    stiffness = Property(stage=Stage.Instance, check=nonnegative, attr="_k", doc="k")
    dissipation = Property(stage=Stage.Instance, check=nonnegative, attr="_d", doc="d (Hunt-Crossley)")
    q_low = Property(stage=Stage.Instance, check=real, attr="_q_low", doc="lower stop")
    q_high = Property(stage=Stage.Instance, check=real, attr="_q_high", doc="upper stop")

    def _validate_property_change(self, name, value):
        lo = value if name == "q_low" else self._q_low
        hi = value if name == "q_high" else self._q_high
        if lo > hi:
            raise ValueError(f"q_low {lo} would be above q_high {hi}")

    def __init__(self, forces, mobod, which_q: int, k: float, d: float, q_low: float, q_high: float):
        self._k = _real(k, "Force.MobilityLinearStop: k", nonnegative=True)
        self._d = _real(d, "Force.MobilityLinearStop: d", nonnegative=True)
        self._q_low = _real(q_low, "Force.MobilityLinearStop: q_low")
        self._q_high = _real(q_high, "Force.MobilityLinearStop: q_high")
        if self._q_low > self._q_high:
            raise ValueError(f"Force.MobilityLinearStop: q_low {q_low} is above q_high {q_high}")
        super().__init__(forces, mobod, which_q)

    @classmethod
    def _pack(cls, elements, matter, state):
        qi, ui = cls._indices(elements, matter, state)
        k, d, lo, hi = ([getattr(e, "_" + name) for e in elements] for name in ("k", "d", "q_low", "q_high"))
        return _Packed(_core.mobility_linear_stop_set(qi, ui, k, d, lo, hi), elements)


@_element("CoordinateLimit")
class _CoordinateLimit(_MobilityElement):
    """OpenSim's ``CoordinateLimitForce``: stiff, damped limits on one coordinate (qdot = u).

    Above ``upper_limit`` a stiffness that rises smoothly from 0 to ``upper_stiffness`` over the
    ``transition`` width (Simbody's quintic step, as ``Function.Step``) pushes the coordinate back,
    likewise below ``lower_limit``; a damping, switched on by the same steps, opposes the speed::

        K_up(q) = Step(0 -> Kup over [q_up, q_up + tr]),   K_lo(q) = Step(Klo -> 0 over [q_lo - tr, q_lo])
        f = -K_up(q) (q - q_up) + K_lo(q) (q_lo - q) - c (K_up(q) / Kup + K_lo(q) / Klo) u

    (a stiffness of 0 makes its ratio 0, where OpenSim's division gives NaN). The potential energy is
    OpenSim's, the integral of the spring: beyond a limit by d with stiffness K, ``K s^3 (2 - 2.5 s +
    (6/7) s^2) d^2`` with ``s = d / tr`` inside the transition, ``K (d^2 / 2 - tr^2 / 7)`` past it.
    Evaluated in the compiled core with all elements of the kind (``core/forces.pxi``). The arguments come
    in the order of OpenSim's constructor, ``CoordinateLimitForce(coordinate, q_upper, K_upper, q_lower,
    K_lower, damping, dq)``.

    Parameters
    ----------
    forces : GeneralForceSubsystem
        The subsystem that holds the element.
    mobod : MobilizedBody
        The mobilizer whose coordinate is limited; its q and u must correspond (no quaternion).
    which : int
        The coordinate's index among the mobilizer's q (and u).
    upper_limit, lower_limit : float
        q_up, q_lo: where each limit starts (m or rad).
    upper_stiffness, lower_stiffness : float
        Kup, Klo >= 0: the stiffness past each limit once the transition is crossed (N/m, or N m/rad).
    damping : float
        c >= 0, the damping at full stiffness (N s/m, or N m s/rad).
    transition : float
        tr > 0, the width over which stiffness and damping rise (m or rad).
    degrees : bool, default False
        Whether the values are in OpenSim's units of a rotational coordinate (limits and transition in
        degrees, stiffness and damping per degree); they are converted to radians as OpenSim converts them
        (angles times pi/180, per-degree values divided by it). The properties hold the converted values.

    Raises
    ------
    TypeError
        ``mobod`` is not a MobilizedBody.
    ValueError
        A value that is not finite, a negative stiffness or damping, a transition that is not positive or
        too small to move a limit (``q_up + tr == q_up``).

    Examples
    --------
    A knee bending between -120 and 10 degrees, 2 N m per degree past either limit over a 5 degree
    transition, damped by 0.01 N m s per degree:

    >>> Force.CoordinateLimit(forces, knee, 0, 10.0, 2.0, -120.0, 2.0, 0.01, 5.0, degrees=True)  # doctest: +SKIP
    """

    _conservative = True
    _energy_needs_positions = False

    upper_stiffness = Property(stage=Stage.Instance, check=nonnegative, attr="_k_up", doc="Kup, past the upper limit")
    upper_limit = Property(stage=Stage.Instance, check=real, attr="_q_up", doc="q_up, where the upper limit starts")
    lower_stiffness = Property(stage=Stage.Instance, check=nonnegative, attr="_k_lo", doc="Klo, past the lower limit")
    lower_limit = Property(stage=Stage.Instance, check=real, attr="_q_lo", doc="q_lo, where the lower limit starts")
    damping = Property(stage=Stage.Instance, check=nonnegative, attr="_c", doc="c, the damping at full stiffness")
    transition = Property(stage=Stage.Instance, check=positive, attr="_tr",
                          doc="tr > 0, the width over which stiffness and damping rise")

    def __init__(self, forces, mobod, which: int, upper_limit: float, upper_stiffness: float, lower_limit: float,
                 lower_stiffness: float, damping: float, transition: float, *, degrees: bool = False):
        what = "Force.CoordinateLimit"
        values = [_number(v, f"{what}: {name}") for v, name in (
            (upper_limit, "upper_limit"), (upper_stiffness, "upper_stiffness"), (lower_limit, "lower_limit"),
            (lower_stiffness, "lower_stiffness"), (damping, "damping"), (transition, "transition"))]
        q_up, k_up, q_lo, k_lo, c, tr = values
        if degrees:
            # OpenSim's conversion of a rotational coordinate's values, in CoordinateLimitForceImpl's order
            w = math.pi / 180.0
            q_up, q_lo = w * q_up, w * q_lo
            k_up, k_lo = k_up / w, k_lo / w
            c = c / w
            tr = w * tr
        _CoordinateLimit._check(dict(upper_stiffness=k_up, upper_limit=q_up, lower_stiffness=k_lo,
                                     lower_limit=q_lo, damping=c, transition=tr), what + ": ")
        self._k_up, self._q_up, self._k_lo, self._q_lo, self._c, self._tr = k_up, q_up, k_lo, q_lo, c, tr
        super().__init__(forces, mobod, which)

    @staticmethod
    def _check(v: dict, where: str = "") -> None:
        """Refuse values the formula cannot take: (after a conversion from degrees) not finite, a negative
        stiffness or damping, a transition not positive or too small to move a limit (a zero-width step,
        which Function.Step refuses)."""
        for name, x in v.items():
            if not math.isfinite(x):
                raise ValueError(f"{where}{name} = {x!r} is not finite")
        for name in ("upper_stiffness", "lower_stiffness", "damping"):
            if v[name] < 0.0:
                raise ValueError(f"{where}{name} must be >= 0, got {v[name]!r}")
        tr = v["transition"]
        if not tr > 0.0:
            raise ValueError(f"{where}transition must be > 0, got {tr!r}")
        if v["upper_limit"] + tr == v["upper_limit"] or v["lower_limit"] - tr == v["lower_limit"]:
            raise ValueError(f"{where}the transition {tr!r} is too small to move the limits {v['lower_limit']!r} "
                             f"and {v['upper_limit']!r} (a zero-width step)")

    def _validate_property_change(self, name, value):
        v = {p: getattr(self, "_" + a) for p, a in (("upper_stiffness", "k_up"), ("upper_limit", "q_up"),
                                                     ("lower_stiffness", "k_lo"), ("lower_limit", "q_lo"),
                                                     ("damping", "c"), ("transition", "tr"))}
        v[name] = value
        self._check(v)

    @classmethod
    def _pack(cls, elements, matter, state):
        qi, ui = cls._indices(elements, matter, state)
        columns = ([getattr(e, "_" + name) for e in elements] for name in ("k_up", "q_up", "k_lo", "q_lo", "c", "tr"))
        return _Packed(_core.coordinate_limit_set(qi, ui, *columns), elements)


@_element("GlobalDamper")
class _GlobalDamper(Force):
    """Generalized force -c u on every mobility of the matter subsystem."""

    damping = Property(stage=Stage.Instance, check=nonnegative, attr="_c", doc="c")

    def __init__(self, forces, matter, c: float):
        _matter_arg(matter, "Force.GlobalDamper: matter", forces)
        self._c = _real(c, "Force.GlobalDamper: c", nonnegative=True)
        super().__init__(forces)

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.global_damper_set([e._c for e in elements]), elements)


# ---------------------------------------------------------------------- body elements
@_element("ConstantForce")
class _ConstantForce(Force):
    """A constant force f (3,), in Ground, applied at station p_BS of a body."""

    _position_only = True

    station = Property(stage=Stage.Instance, check=vector3, attr="_station", doc="p_BS (3,), in B")
    force = Property(stage=Stage.Instance, check=vector3, attr="_f", doc="f (3,), in Ground")

    def __init__(self, forces, body, station, f):
        self._body = _body(body, "Force.ConstantForce: body", forces)
        self._station = _vec3(station, "Force.ConstantForce: station")
        self._f = _vec3(f, "Force.ConstantForce: f")
        super().__init__(forces)

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.constant_force_set([e._body._index for e in elements],
                                                np.array([e._station for e in elements]).reshape(-1, 3),
                                                np.array([e._f for e in elements]).reshape(-1, 3)), elements)


@_element("ConstantTorque")
class _ConstantTorque(Force):
    """A constant torque t (3,), in Ground, on a body."""

    _position_only = True

    torque = Property(stage=Stage.Instance, check=vector3, attr="_t", doc="t (3,), in Ground")

    def __init__(self, forces, body, t):
        self._body = _body(body, "Force.ConstantTorque: body", forces)
        self._t = _vec3(t, "Force.ConstantTorque: t")
        super().__init__(forces)

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.constant_torque_set([e._body._index for e in elements],
                                                 np.array([e._t for e in elements]).reshape(-1, 3)), elements)


# ---------------------------------------------------------------------- bushing
@_element("LinearBushing")
class _LinearBushing(Force):
    """Linear 6-dof spring-damper between frame F on b1 and frame M on b2.

    Its coordinates are q = (body-fixed X-Y-Z angles of R_FM, p_FM in F) and their rates; the
    generalized force f = -(k6 * q + c6 * qdot) is applied to b2 at M's origin as the spatial force
    whose power is f . qdot, and its opposite to b1 at the same point. PE = 1/2 sum k6 q^2.
    """

    _conservative = True

    stiffness = Property(stage=Stage.Instance, check=lambda v: _nonnegative6(v), attr="_k6",
                         doc="k6 (6,): rotational (X-Y-Z angles) then translational")
    damping = Property(stage=Stage.Instance, check=lambda v: _nonnegative6(v), attr="_c6", doc="c6 (6,)")
    frame_on_body1 = Property(stage=Stage.Instance, check=lambda v: _transform(v), attr="_X_B1F", doc="X_B1F")
    frame_on_body2 = Property(stage=Stage.Instance, check=lambda v: _transform(v), attr="_X_B2M", doc="X_B2M")

    def __init__(self, forces, b1, X_B1F, b2, X_B2M, k6, c6):
        self._b1 = _body(b1, "Force.LinearBushing: b1", forces)
        self._b2 = _body(b2, "Force.LinearBushing: b2", forces)
        for X, what in ((X_B1F, "X_B1F"), (X_B2M, "X_B2M")):
            if not isinstance(X, Transform):
                raise TypeError(f"Force.LinearBushing: {what} must be a Transform, got {type(X).__name__}")
        self._X_B1F, self._X_B2M = X_B1F, X_B2M
        k6, c6 = np.asarray(k6, dtype=np.float64), np.asarray(c6, dtype=np.float64)
        if k6.shape != (6,) or c6.shape != (6,) or not (np.isfinite(k6).all() and np.isfinite(c6).all()) \
                or (k6 < 0).any() or (c6 < 0).any():
            raise ValueError("Force.LinearBushing: k6 and c6 must be six finite non-negative numbers each")
        self._k6, self._c6 = k6.copy(), c6.copy()
        super().__init__(forces)

    def _singularity_hint(self) -> str:
        return (": the relative rotation of its frames is at the X-Y-Z angles' singularity (second angle "
                "+-90 degrees), where the bushing's torque is undefined")

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(_core.linear_bushing_set(
            [e._b1._index for e in elements], np.array([e._X_B1F.R.matrix for e in elements]).reshape(-1, 3, 3),
            np.array([e._X_B1F.p for e in elements]).reshape(-1, 3),
            [e._b2._index for e in elements], np.array([e._X_B2M.R.matrix for e in elements]).reshape(-1, 3, 3),
            np.array([e._X_B2M.p for e in elements]).reshape(-1, 3),
            np.array([e._k6 for e in elements]).reshape(-1, 6), np.array([e._c6 for e in elements]).reshape(-1, 6)),
            elements)


def _nonnegative6(v) -> np.ndarray:
    a = np.array(v, dtype=float)
    if a.shape != (6,) or not np.isfinite(a).all() or (a < 0).any():
        raise ValueError(f"expected six finite non-negative numbers, got {v!r}")
    return a


def _transform(v) -> Transform:
    if not isinstance(v, Transform):
        raise TypeError(f"expected a Transform, got {type(v).__name__}")
    return v


# ---------------------------------------------------------------------- discrete forces
class _DiscreteForceValues:
    """The forces a DiscreteForces element applies (``discrete_forces.py``): held in a discrete variable of the
    State. It stays in this module, where States pickled before the element moved find it."""

    __slots__ = ("body_forces", "mobility_forces")

    def __init__(self, nb: int):
        self.body_forces = np.zeros((nb, 2, 3))
        self.mobility_forces = np.zeros(0)
