"""OpenSim 4.x model files (``.osim``): the multibody part, as a simtk MultibodySystem.

``load_osim(path)`` reads the file with ``xml.etree.ElementTree`` (a tree builder fed by expat, so
that every element knows its line) and builds

- one ``MobilizedBody`` per OpenSim ``Body``, named like it (``/matter/femur``), whose mobilizer is
  the Joint that has the body as its child frame's base;
- the Joint's mobilizer with the transforms OpenSim hands to Simbody: the parent and child frames
  (usually ``PhysicalOffsetFrame``, possibly chained) reduced to transforms in their base bodies;
- ``Coordinate`` defaults (value, speed) applied by `OsimModel.initial_state`; clamped ranges
  (and locks) become restrictions of the ``Assembler`` that `OsimModel.make_assembler` returns,
  as in OpenSim's AssemblySolver;
  ``locked`` and ``prescribed`` coordinates as ``Constraint.PrescribedMotion`` (what OpenSim itself
  creates for them), gravity as ``Force.UniformGravity``;
- forces and constraints, named like in the file (``/forces/<name>``, ``/matter/<name>``).

Mapping onto simtk (the same one OpenSim makes onto Simbody):

============================== ==================================================================
OpenSim                        simtk
============================== ==================================================================
WeldJoint, PinJoint,           ``MobilizedBody.Weld / Pin / Slider / Ball / Free / Universal /
SliderJoint, BallJoint,        Gimbal / Planar / Ellipsoid``; coordinate k of the joint is the
FreeJoint, UniversalJoint,     mobilizer's q k and u k in Euler-angle mode (OpenSim always runs
GimbalJoint, PlanarJoint,      Simbody with Euler angles, so `OsimModel.initial_state` does too)
EllipsoidJoint
CustomJoint                    ``MobilizedBody.FunctionBased``: three rotation then three
                               translation axes; the mobilizer's coordinates in order of first
                               use over the six axes (OpenSim's order); an axis without function
                               is linear (slope 1) in its one coordinate, or the constant 0
Constant, LinearFunction,      ``Function.Constant``, ``Function.Linear``, ``Function.Polynomial``;
PolynomialFunction,            SimmSpline (and NaturalCubicSpline, which OpenSim 4 reads as a
SimmSpline,                    SimmSpline) is the Forsythe-Malcolm-Moler cubic spline, linear
NaturalCubicSpline,            outside its points; implemented here (`SimmSplineFunction`)
MultiplierFunction
PointToPointSpring             ``Force.TwoPointLinearSpring``
BushingForce                   ``Force.LinearBushing`` with k6 = (rotational, translational)
SpringGeneralizedForce         ``Force.MobilityLinearSpring`` + ``Force.MobilityLinearDamper``
CoordinateLimitForce           ``Force.Custom`` (`CoordinateLimitForceImpl`): OpenSim's own force,
                               no Simbody built-in; limits and stiffnesses of rotational
                               coordinates are in degrees, as in OpenSim
WeldConstraint                 ``Constraint.Weld``
PointConstraint                ``Constraint.Ball``
ConstantDistanceConstraint     ``Constraint.Rod``
CoordinateCouplerConstraint    ``Constraint.CoordinateCoupler`` with scale * f(q_ind) - q_dep
============================== ==================================================================

Everything else with dynamics (muscles and other actuators, contact, markers, wrap objects,
controllers, probes, unknown elements and properties) is *not* built: it is listed, by name and
type, in one ``UserWarning`` (and in `OsimModel.warnings`). Visual geometry (``attached_geometry``,
``FrameGeometry``) has no effect on dynamics and is skipped without comment.

Not supported (an `OsimFileError` says so): OpenSim 3.x files, closed loops made of joints and
joints that OpenSim would have to reverse (a joint whose child is Ground or a body that already
has a joint), and function types other than the ones above.

A malformed file raises `OsimFileError` (a ``ValueError``) naming the file, the line and what was
expected there.
"""
from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
import xml.parsers.expat
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from simtk import (
    Assembler,
    Body,
    Constraint,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    State,
    Transform,
)

__all__ = [
    "load_osim",
    "OsimFileError",
    "OsimModel",
    "OsimCoordinate",
    "SimmSplineFunction",
    "CoordinateLimitForceImpl",
]


# ====================================================================== errors
class OsimFileError(ValueError):
    """A malformed (or unsupported) ``.osim`` file: the message names the file, the line and what
    was expected there.

    Attributes
    ----------
    path : str
        The file.
    line : int or None
        The line of the offending element (None when the problem is not tied to one element).
    reason : str
        What was wrong or expected.
    """

    def __init__(self, path: str, line: int | None, reason: str):
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


# ====================================================================== XML with line numbers
class _Element(ET.Element):
    """An ElementTree element that remembers the line it started on (C elements have no slot for it)."""

    line: int = 0


def _parse_xml(path: str) -> _Element:
    """Parse ``path`` into an ElementTree whose elements carry ``.line``.

    expat (ElementTree's own parser) drives an ``ET.TreeBuilder``; DTD entity declarations are
    refused, so a file cannot expand entities into huge documents.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    builder = ET.TreeBuilder(element_factory=_Element)
    parser = xml.parsers.expat.ParserCreate()

    def start(tag, attrs):
        el = builder.start(tag, attrs)
        el.line = parser.CurrentLineNumber
        return el

    def entity_decl(*_args):
        raise OsimFileError(path, parser.CurrentLineNumber,
                            "DTD entity declarations are not allowed in an .osim file")

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = entity_decl
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise OsimFileError(path, exc.lineno, f"expected well-formed XML: {xml.parsers.expat.ErrorString(exc.code)} "
                                              f"(column {exc.offset})") from None
    root = builder.close()
    return root


# ====================================================================== functions
class SimmSplineFunction(Function):
    """OpenSim's ``SimmSpline`` (and ``NaturalCubicSpline``): the Forsythe-Malcolm-Moler cubic spline.

    An interpolating cubic spline through (x_i, y_i), twice continuously differentiable, whose end
    conditions make the third derivative on the first (last) interval equal to that of the cubic
    through the first (last) four points; with three points it is the parabola through them, with
    two the line. Outside [x_0, x_{n-1}] it continues as the tangent line at the end point (second
    derivative 0), as OpenSim's does. Derivatives up to order 2 (OpenSim's limit).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Strictly increasing finite abscissae (n >= 2) and finite values.
    """

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        x = np.asarray(x, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        if x.shape != y.shape:
            raise ValueError(f"SimmSpline: {x.size} x values but {y.size} y values")
        if x.size < 2:
            raise ValueError(f"SimmSpline: needs at least 2 points, got {x.size}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError("SimmSpline: x and y must be finite")
        h = np.diff(x)
        if not (h > 0).all():
            i = int(np.flatnonzero(h <= 0)[0])
            raise ValueError(f"SimmSpline: x must be strictly increasing, but x[{i}] = {x[i]} and "
                             f"x[{i + 1}] = {x[i + 1]}")
        n = x.size
        slope = np.diff(y) / h
        # Unknowns: the second derivatives M_i at the points.
        M = np.zeros(n)
        if n >= 3:
            A = np.zeros((n, n))
            rhs = np.zeros(n)
            for i in range(1, n - 1):  # continuity of the first derivative at interior points
                A[i, i - 1], A[i, i], A[i, i + 1] = h[i - 1], 2.0 * (h[i - 1] + h[i]), h[i]
                rhs[i] = 6.0 * (slope[i] - slope[i - 1])
            # End conditions on the third derivative (M_1 - M_0) / h_0: that of the cubic through
            # the four end points (6 x the third divided difference), or 0 with only three points.
            third_first = third_last = 0.0
            if n > 3:
                third_first = 6.0 * _third_divided_difference(x[:4], y[:4])
                third_last = 6.0 * _third_divided_difference(x[-4:], y[-4:])
            A[0, 0], A[0, 1], rhs[0] = -1.0, 1.0, h[0] * third_first
            A[-1, -2], A[-1, -1], rhs[-1] = -1.0, 1.0, h[-1] * third_last
            M = np.linalg.solve(A, rhs)
        # Per interval: y_i + b dx + c dx^2 + d dx^3.
        self._x = x
        self._xl = x.tolist()
        self._y = y
        self._b = slope - h * (2.0 * M[:-1] + M[1:]) / 6.0
        self._c = M[:-1] / 2.0
        self._d = (M[1:] - M[:-1]) / (6.0 * h)
        self._slope_first = float(self._b[0])
        self._slope_last = float(slope[-1] + h[-1] * (M[-2] + 2.0 * M[-1]) / 6.0)
        self._M = M

    def _interval(self, t: float) -> int:
        import bisect
        k = bisect.bisect_right(self._xl, t) - 1
        return min(max(k, 0), len(self._xl) - 2)

    def calc_value(self, x):
        t = float(x[0])
        if t < self._xl[0]:
            return float(self._y[0] + (t - self._xl[0]) * self._slope_first)
        if t > self._xl[-1]:
            return float(self._y[-1] + (t - self._xl[-1]) * self._slope_last)
        k = self._interval(t)
        dx = t - self._xl[k]
        return float(self._y[k] + dx * (self._b[k] + dx * (self._c[k] + dx * self._d[k])))

    def calc_derivative(self, deriv_components, x):
        order = len(deriv_components)
        t = float(x[0])
        if t < self._xl[0]:
            return self._slope_first if order == 1 else 0.0
        if t > self._xl[-1]:
            return self._slope_last if order == 1 else 0.0
        k = self._interval(t)
        dx = t - self._xl[k]
        if order == 1:
            return float(self._b[k] + dx * (2.0 * self._c[k] + 3.0 * dx * self._d[k]))
        return float(2.0 * self._c[k] + 6.0 * dx * self._d[k])

    def get_argument_size(self) -> int:
        return 1

    def get_max_derivative_order(self) -> int:
        return 2


def _third_divided_difference(x: np.ndarray, y: np.ndarray) -> float:
    f01 = (y[1] - y[0]) / (x[1] - x[0])
    f12 = (y[2] - y[1]) / (x[2] - x[1])
    f23 = (y[3] - y[2]) / (x[3] - x[2])
    f012 = (f12 - f01) / (x[2] - x[0])
    f123 = (f23 - f12) / (x[3] - x[1])
    return float((f123 - f012) / (x[3] - x[0]))


class _Scaled(Function):
    """``scale * f(x)``: OpenSim's MultiplierFunction."""

    def __init__(self, f: Function, scale: float):
        self._f = f
        self._s = float(scale)

    def calc_value(self, x):
        return self._s * self._f.calc_value(x)

    def calc_derivative(self, deriv_components, x):
        return self._s * self._f.calc_derivative(deriv_components, x)

    def get_argument_size(self) -> int:
        return self._f.get_argument_size()

    def get_max_derivative_order(self) -> int:
        return self._f.get_max_derivative_order()


class _CouplerFunction(Function):
    """C(q_ind..., q_dep) = scale * f(q_ind...) - q_dep: the function OpenSim's
    CoordinateCouplerConstraint gives Simbody's CoordinateCoupler (OpenSim's CompoundFunction)."""

    def __init__(self, f: Function, scale: float):
        self._f = f
        self._s = float(scale)
        self._n = f.get_argument_size()

    def calc_value(self, x):
        return self._s * self._f.calc_value(x[:self._n]) - float(x[self._n])

    def calc_derivative(self, deriv_components, x):
        comps = list(deriv_components)
        if self._n in comps:  # the dependent coordinate enters linearly with slope -1
            return -1.0 if len(comps) == 1 else 0.0
        return self._s * self._f.calc_derivative(comps, x[:self._n])

    def get_argument_size(self) -> int:
        return self._n + 1

    def get_max_derivative_order(self) -> int:
        return self._f.get_max_derivative_order()


# ====================================================================== CoordinateLimitForce
class CoordinateLimitForceImpl(Force.Custom.Implementation):
    """OpenSim's CoordinateLimitForce on one coordinate (a generalized force on its mobility).

    Above the upper limit a stiffness that rises smoothly (Simbody's quintic step over the
    ``transition`` width) to ``upper_stiffness`` pushes back, likewise below the lower limit; a
    damping force, switched on by the same steps, opposes the speed::

        K_up = Step(0 -> Kup; q_up, q_up + tr)(q),   K_lo = Step(Klo -> 0; q_lo - tr, q_lo)(q)
        f = -K_up (q - q_up) + K_lo (q_lo - q) - c (K_up / Kup + K_lo / Klo) qdot

    For a rotational coordinate the file's limits and transition are in degrees and the
    stiffnesses and damping per degree; they are converted to radians here, as OpenSim does.
    (OpenSim divides by Kup and Klo: a zero stiffness gives it NaN; here that term is 0.)

    Parameters
    ----------
    mobod : MobilizedBody
    which : int
        The coordinate's index in the mobilizer's q and u.
    upper_stiffness, upper_limit, lower_stiffness, lower_limit, damping, transition : float
        As in the file.
    rotational : bool
        Whether the coordinate is rotational (units in degrees in the file).
    """

    def __init__(self, mobod: MobilizedBody, which: int, upper_stiffness: float, upper_limit: float,
                 lower_stiffness: float, lower_limit: float, damping: float, transition: float,
                 rotational: bool):
        super().__init__()
        w = math.pi / 180.0 if rotational else 1.0
        self._mobod = mobod
        self._k = int(which)
        self.q_up, self.q_lo = w * upper_limit, w * lower_limit
        self.K_up, self.K_lo = upper_stiffness / w, lower_stiffness / w
        self.c = damping / w
        self.tr = w * transition
        self._up = Function.Step(0.0, self.K_up, self.q_up, self.q_up + self.tr)
        self._lo = Function.Step(self.K_lo, 0.0, self.q_lo - self.tr, self.q_lo)

    def limit_force(self, q: float, qdot: float) -> float:
        """The generalized force at coordinate value ``q`` and speed ``qdot``."""
        k_up = self._up.calc_value([q])
        k_lo = self._lo.calc_value([q])
        on = (k_up / self.K_up if self.K_up != 0.0 else 0.0) + (k_lo / self.K_lo if self.K_lo != 0.0 else 0.0)
        return -k_up * (q - self.q_up) + k_lo * (self.q_lo - q) - self.c * on * qdot

    def calc_force(self, state, body_forces, particle_forces, mobility_forces) -> None:
        f = self.limit_force(self._mobod.get_one_q(state, self._k), self._mobod.get_one_u(state, self._k))
        self._mobod.apply_one_mobility_force(state, self._k, f, mobility_forces)

    def calc_potential_energy(self, state) -> float:
        # The integral of the stiffness spring: (OpenSim's computePotentialEnergy).
        q = self._mobod.get_one_q(state, self._k)
        if q > self.q_up:
            K, delta = self.K_up, q - self.q_up
        elif q < self.q_lo:
            K, delta = self.K_lo, self.q_lo - q
        else:
            return 0.0
        if delta >= self.tr:
            return K * (-(2.0 / 14.0) * self.tr ** 2 + 0.5 * delta ** 2)
        s = delta / self.tr
        return K * s ** 3 * (2.0 - 2.5 * s + (6.0 / 7.0) * s * s) * delta ** 2


# ====================================================================== the result
@dataclass
class OsimCoordinate:
    """One OpenSim Coordinate: where it lives in simtk and its defaults.

    ``mobod.get_one_q(state, index)`` is its value and ``mobod.get_one_u(state, index)`` its speed
    (in a State in Euler-angle mode, as `OsimModel.initial_state` makes).
    """

    name: str
    joint: str
    mobod: MobilizedBody
    index: int
    default_value: float = 0.0
    default_speed: float = 0.0
    range: tuple = (-10.0, 10.0)
    clamped: bool = False
    locked: bool = False
    motion_type: str = "undefined"   # "rotational", "translational", "coupled" or "undefined"
    lock: Any = None                 # the Constraint.PrescribedMotion of a locked or prescribed coordinate

    def clamp(self, value: float) -> float:
        """``value`` clamped to the range if the coordinate is clamped, else unchanged."""
        if self.clamped:
            return float(min(max(value, self.range[0]), self.range[1]))
        return float(value)


@dataclass
class OsimModel:
    """What `load_osim` returns: the System and the OpenSim names of its parts.

    Attributes
    ----------
    system, matter, forces :
        The MultibodySystem, its SimbodyMatterSubsystem (``/matter``) and GeneralForceSubsystem
        (``/forces``).
    bodies : dict
        OpenSim body name -> MobilizedBody (``"ground"`` -> ``matter.ground``).
    joints : dict
        OpenSim joint name -> the MobilizedBody whose mobilizer it is.
    coordinates : dict
        OpenSim coordinate name -> `OsimCoordinate`, in the file's order.
    force_elements : dict
        OpenSim force name -> list of simtk Force elements built for it (``"gravity"`` included).
    constraints : dict
        OpenSim constraint name -> list of simtk Constraints.
    warnings : list of str
        The elements not built (also issued as one UserWarning).
    path : str
        The file read.
    """

    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    coordinates: dict = field(default_factory=dict)
    force_elements: dict = field(default_factory=dict)
    constraints: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    path: str = ""

    def initial_state(self) -> State:
        """A State in Euler-angle mode (OpenSim's) with every coordinate at its default value and
        speed, realized to Position."""
        state = self.system.realize_topology()
        self.matter.set_use_euler_angles(state, True)
        self.system.realize_model(state)
        for c in self.coordinates.values():
            c.mobod.set_one_q(state, c.index, c.default_value)
            c.mobod.set_one_u(state, c.index, c.default_speed)
        self.system.realize(state, Stage.Position)
        return state

    def _coord(self, name: str) -> OsimCoordinate:
        try:
            return self.coordinates[name]
        except KeyError:
            raise KeyError(f"{self.path}: no coordinate named {name!r} (there are "
                           f"{', '.join(self.coordinates) or 'none'})") from None

    def set_coordinate_value(self, state: State, name: str, value: float) -> None:
        """Set coordinate ``name``'s q, as given: like OpenSim's ``Coordinate.setValue``, which does
        not clamp either (a clamped range is an assembly restriction: see `make_assembler`)."""
        c = self._coord(name)
        c.mobod.set_one_q(state, c.index, float(value))

    def make_assembler(self) -> Assembler:
        """An ``Assembler`` that, like OpenSim's AssemblySolver, keeps every clamped coordinate
        within its range and every locked coordinate where it is."""
        asm = Assembler(self.system)
        for c in self.coordinates.values():
            if c.locked:
                asm.lock_q(c.mobod, c.index)
            elif c.clamped:
                asm.restrict_q(c.mobod, c.index, c.range[0], c.range[1])
        return asm

    def set_coordinate_speed(self, state: State, name: str, value: float) -> None:
        """Set coordinate ``name``'s u."""
        c = self._coord(name)
        c.mobod.set_one_u(state, c.index, float(value))

    def get_coordinate_value(self, state: State, name: str) -> float:
        """Coordinate ``name``'s q."""
        c = self._coord(name)
        return c.mobod.get_one_q(state, c.index)

    def get_coordinate_speed(self, state: State, name: str) -> float:
        """Coordinate ``name``'s u."""
        c = self._coord(name)
        return c.mobod.get_one_u(state, c.index)

    def get_coordinate_acceleration(self, state: State, name: str) -> float:
        """Coordinate ``name``'s udot (the State realized to Acceleration)."""
        c = self._coord(name)
        return float(c.mobod.get_udot(state)[c.index])


# ====================================================================== reading helpers
_JOINT_NCOORDS = {"WeldJoint": 0, "PinJoint": 1, "SliderJoint": 1, "BallJoint": 3, "FreeJoint": 6,
                  "UniversalJoint": 2, "GimbalJoint": 3, "PlanarJoint": 3, "EllipsoidJoint": 3,
                  "CustomJoint": None}
_JOINT_MOBILIZER = {"WeldJoint": "Weld", "PinJoint": "Pin", "SliderJoint": "Slider", "BallJoint": "Ball",
                    "FreeJoint": "Free", "UniversalJoint": "Universal", "GimbalJoint": "Gimbal",
                    "PlanarJoint": "Planar", "EllipsoidJoint": "Ellipsoid", "CustomJoint": "FunctionBased"}
# Motion type of each coordinate of the fixed joints (OpenSim's Joint constructors say so).
_R, _T = "rotational", "translational"
_JOINT_MOTION = {"PinJoint": [_R], "SliderJoint": [_T], "BallJoint": [_R] * 3, "FreeJoint": [_R] * 3 + [_T] * 3,
                 "UniversalJoint": [_R] * 2, "GimbalJoint": [_R] * 3, "PlanarJoint": [_R, _T, _T],
                 "EllipsoidJoint": [_R] * 3, "WeldJoint": []}

_SQRT_EPS = math.sqrt(np.finfo(float).eps)  # OpenSim's slack on a default value at the range's ends
_FRAME_TAGS = {"Ground", "Body", "PhysicalOffsetFrame"}
_FUNCTION_TAGS = {"Constant", "LinearFunction", "PolynomialFunction", "SimmSpline", "NaturalCubicSpline",
                  "MultiplierFunction"}
# Properties read or deliberately skipped (visual or bookkeeping only); anything else is reported.
_COMMON = {"FrameGeometry", "attached_geometry", "components", "frames", "WrapObjectSet"}
_KNOWN_PROPS = {
    "Body": _COMMON | {"mass", "mass_center", "inertia"},
    "Ground": _COMMON,
    "PhysicalOffsetFrame": _COMMON | {"socket_parent", "translation", "orientation"},
    "Joint": _COMMON | {"socket_parent_frame", "socket_child_frame", "coordinates", "SpatialTransform",
                        "radii_x_y_z"},
    "Coordinate": {"default_value", "default_speed_value", "range", "clamped", "locked", "prescribed",
                   "prescribed_function", "is_free_to_satisfy_constraints", "motion_type"},
    "PointToPointSpring": {"socket_body1", "socket_body2", "point1", "point2", "stiffness", "rest_length",
                           "appliesForce"},
    "BushingForce": _COMMON | {"socket_frame1", "socket_frame2", "rotational_stiffness", "translational_stiffness",
                               "rotational_damping", "translational_damping", "appliesForce"},
    "CoordinateLimitForce": {"coordinate", "upper_stiffness", "upper_limit", "lower_stiffness", "lower_limit",
                             "damping", "transition", "compute_dissipation_energy", "appliesForce"},
    "SpringGeneralizedForce": {"coordinate", "stiffness", "rest_length", "viscosity", "appliesForce"},
    "WeldConstraint": _COMMON | {"socket_frame1", "socket_frame2", "isEnforced", "isDisabled"},
    "PointConstraint": {"socket_body_1", "socket_body_2", "location_body_1", "location_body_2", "isEnforced",
                        "isDisabled"},
    "ConstantDistanceConstraint": {"socket_body_1", "socket_body_2", "location_body_1", "location_body_2",
                                   "constant_distance", "isEnforced", "isDisabled"},
    "CoordinateCouplerConstraint": {"coupled_coordinates_function", "independent_coordinate_names",
                                    "dependent_coordinate_name", "scale_factor", "isEnforced", "isDisabled"},
}
_MODEL_KNOWN = {"Ground", "BodySet", "JointSet", "ForceSet", "ConstraintSet", "gravity", "credits", "publications",
                "length_units", "force_units", "assembly_accuracy", "defaults", "ControllerSet", "MarkerSet",
                "ContactGeometrySet", "ProbeSet", "ComponentSet", "components", "validated"}
_SET_TAGS = {"ControllerSet", "MarkerSet", "ContactGeometrySet", "ProbeSet", "ComponentSet"}


def _clean_name(name: str) -> str:
    """A valid simtk component name made from an OpenSim name (OpenSim allows a few more characters)."""
    out = "".join("_" if ch in "./:*?" else ch for ch in name.strip())
    if not out or out[0].isdigit() or out == "null":
        out = "_" + out
    return out


class _Reader:
    """One pass over one file: parses, checks and builds; every error names the file and line."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.notes: list[str] = []            # unsupported / not built, for the one warning
        self.paths: dict[str, _Element] = {}  # OpenSim component path -> element
        self.parent_path: dict[int, str] = {}  # id(element) -> path of its owning component

    # ------------------------------------------------------------------ errors and values
    def error(self, el: _Element | None, reason: str) -> OsimFileError:
        return OsimFileError(self.path, getattr(el, "line", None), reason)

    def _text(self, el: _Element) -> str:
        return (el.text or "").strip()

    def child(self, el: _Element, tag: str) -> _Element | None:
        found = [c for c in el if c.tag == tag]
        if len(found) > 1:
            raise self.error(found[1], f"<{el.tag} name={el.get('name')!r}> has {len(found)} <{tag}> elements; "
                                       "expected one")
        return found[0] if found else None

    def numbers(self, el: _Element, tag: str, n: int | None, default=None, what: str = "") -> np.ndarray:
        """The whitespace-separated finite numbers of child ``tag`` (``n`` of them unless None)."""
        c = self.child(el, tag)
        where = f"<{tag}> of {el.tag} {el.get('name')!r}" + (f" ({what})" if what else "")
        if c is None:
            if default is None:
                raise self.error(el, f"{el.tag} {el.get('name')!r}: expected a <{tag}> element")
            return np.array(default, dtype=float)
        words = self._text(c).split()
        try:
            values = np.array([float(w) for w in words], dtype=float)
        except ValueError:
            raise self.error(c, f"{where}: expected numbers, got {self._text(c)[:60]!r}") from None
        if n is not None and values.size != n:
            raise self.error(c, f"{where}: expected {n} number{'s' if n > 1 else ''}, got {values.size}")
        if not np.isfinite(values).all():
            raise self.error(c, f"{where}: expected finite numbers, got {self._text(c)[:60]!r}")
        return values

    def number(self, el: _Element, tag: str, default: float | None = None) -> float:
        return float(self.numbers(el, tag, 1, None if default is None else [default])[0])

    def boolean(self, el: _Element, tag: str, default: bool) -> bool:
        c = self.child(el, tag)
        if c is None:
            return default
        t = self._text(c).lower()
        if t in ("true", "1"):
            return True
        if t in ("false", "0"):
            return False
        raise self.error(c, f"<{tag}> of {el.tag} {el.get('name')!r}: expected true or false, got {t[:40]!r}")

    def string(self, el: _Element, tag: str, required: bool = True) -> str:
        c = self.child(el, tag)
        if c is None or not self._text(c):
            if required:
                raise self.error(c if c is not None else el,
                                 f"{el.tag} {el.get('name')!r}: expected a non-empty <{tag}>")
            return ""
        return self._text(c)

    def name_of(self, el: _Element) -> str:
        name = el.get("name")
        if name is None or not name.strip():
            raise self.error(el, f"<{el.tag}>: expected a name=\"...\" attribute")
        return name

    def objects(self, model: _Element, set_tag: str) -> list[_Element]:
        s = self.child(model, set_tag)
        if s is None:
            return []
        objs = self.child(s, "objects")
        return [] if objs is None else list(objs)

    def check_props(self, el: _Element, kind: str) -> None:
        known = _KNOWN_PROPS.get(kind, set())
        for c in el:
            if c.tag not in known:
                self.notes.append(f"unknown property <{c.tag}> of {el.tag} {el.get('name')!r} (line {c.line}) ignored")

    # ------------------------------------------------------------------ component paths
    def index_paths(self, el: _Element, path: str) -> None:
        """Record the OpenSim path of every named element (components' paths are their names
        joined from the Model; property wrappers such as <objects> add nothing)."""
        for c in el:
            self.parent_path[id(c)] = path
            name = c.get("name")
            if name is not None and c.tag not in ("Model",):
                p = f"{path.rstrip('/')}/{name}"
                if c.tag in _FRAME_TAGS and p in self.paths and self.paths[p] is not c:
                    raise self.error(c, f"two frames have the path {p!r}")
                self.paths.setdefault(p, c)
                self.index_paths(c, p)
            else:
                self.index_paths(c, path)

    def path_of(self, el: _Element) -> str:
        return f"{self.parent_path.get(id(el), '').rstrip('/')}/{el.get('name')}"

    def resolve(self, owner: _Element, socket: _Element | None, tag: str) -> _Element:
        """The frame a socket names: an absolute path, or a path relative to the owning component."""
        if socket is None:
            raise self.error(owner, f"{owner.tag} {owner.get('name')!r}: expected a <{tag}> socket")
        ref = self._text(socket)
        if not ref:
            raise self.error(socket, f"<{tag}> of {owner.tag} {owner.get('name')!r}: expected a frame path, got ''")
        base = "" if ref.startswith("/") else self.path_of(owner)
        parts: list[str] = [p for p in base.split("/") if p]
        for p in ref.split("/"):
            if p in ("", "."):
                continue
            if p == "..":
                if not parts:
                    raise self.error(socket, f"<{tag}> {ref!r} goes above the model")
                parts.pop()
            else:
                parts.append(p)
        target = self.paths.get("/" + "/".join(parts))
        if target is None or target.tag not in _FRAME_TAGS:
            raise self.error(socket, f"<{tag}> of {owner.tag} {owner.get('name')!r}: expected the path of a frame "
                                     f"(Ground, Body or PhysicalOffsetFrame), but {ref!r} names "
                                     f"{'nothing' if target is None else 'a ' + target.tag}")
        return target

    def frame_in_body(self, frame: _Element, seen: tuple = ()) -> tuple[_Element, Transform]:
        """(base Body or Ground element, X_BF) of a frame, following chained offset frames."""
        if frame.tag in ("Body", "Ground"):
            return frame, Transform()
        if id(frame) in seen:
            raise self.error(frame, f"PhysicalOffsetFrame {frame.get('name')!r}: its parent chain is a cycle")
        self.check_props(frame, "PhysicalOffsetFrame")
        parent = self.resolve(frame, self.child(frame, "socket_parent"), "socket_parent")
        base, X_BP = self.frame_in_body(parent, seen + (id(frame),))
        p = self.numbers(frame, "translation", 3, [0.0, 0.0, 0.0])
        o = self.numbers(frame, "orientation", 3, [0.0, 0.0, 0.0])
        # OpenSim's orientation: body-fixed X-Y-Z angles of the frame in its parent.
        return base, X_BP * Transform(Rotation.from_body_fixed_xyz(o), p)

    # ------------------------------------------------------------------ functions
    def function(self, el: _Element, nargs: int, where: str) -> Function:
        """The simtk Function of an OpenSim function element, taking ``nargs`` arguments."""
        tag = el.tag
        if tag not in _FUNCTION_TAGS:
            raise self.error(el, f"{where}: function type <{tag}> is not supported (expected one of "
                                 f"{', '.join(sorted(_FUNCTION_TAGS))})")
        if tag == "Constant":
            return Function.Constant(self.number(el, "value", 0.0), nargs)
        if nargs != 1:
            raise self.error(el, f"{where}: a {tag} takes one argument, but {nargs} coordinates are given")
        if tag == "LinearFunction":
            k = self.numbers(el, "coefficients", 2, [1.0, 0.0])
            return Function.Linear([k[0], k[1]])
        if tag == "PolynomialFunction":
            k = self.numbers(el, "coefficients", None, [0.0])
            if k.size == 0:
                raise self.error(el, f"{where}: expected at least one polynomial coefficient")
            return Function.Polynomial(list(k))
        if tag == "MultiplierFunction":
            holder = self.child(el, "function")
            inner = [c for c in holder] if holder is not None else []
            if len(inner) != 1:
                raise self.error(holder if holder is not None else el,
                                 f"{where}: MultiplierFunction expects one function inside <function>")
            return _Scaled(self.function(inner[0], nargs, where), self.number(el, "scale", 1.0))
        x = self.numbers(el, "x", None)
        y = self.numbers(el, "y", None)
        try:
            return SimmSplineFunction(x, y)
        except ValueError as exc:
            raise self.error(el, f"{where}: {exc}") from None


def _or(a, b):
    """``a`` unless it is None (an Element with no children is false, so ``or`` cannot be used)."""
    return b if a is None else a


def _flag_note(notes: list, el: _Element, kind: str = "") -> None:
    notes.append(f"{el.get('name') or '(unnamed)'} ({el.tag}{', ' + kind if kind else ''}, line {el.line})")


# ====================================================================== load_osim
def load_osim(path: str | os.PathLike) -> OsimModel:
    """Build the multibody part of an OpenSim 4.x ``.osim`` file as a simtk system.

    Parameters
    ----------
    path : str or path-like
        The ``.osim`` file.

    Returns
    -------
    OsimModel
        ``.system``, ``.matter``, ``.forces`` and the OpenSim names of the bodies, joints,
        coordinates, forces and constraints built; ``.initial_state()`` gives a State at the
        coordinates' default values in Euler-angle mode (the mode OpenSim runs Simbody in, which
        the coordinate indices assume).

    Raises
    ------
    OsimFileError
        The file is not well-formed XML, not an OpenSim 4.x model, or has a value, reference or
        element that cannot be built (the message names the line and what was expected).
    OSError
        The file cannot be read.

    Warns
    -----
    UserWarning
        One warning listing every element that was not built (muscles, other actuators, markers,
        contact geometry, controllers, unknown elements and properties), by name and type.
    """
    r = _Reader(os.fspath(path))
    root = _parse_xml(r.path)
    model = _model_element(r, root)
    r.index_paths(model, "/")
    out = _build(r, model)
    out.warnings = list(r.notes)
    if r.notes:
        warnings.warn(f"{r.path}: {len(r.notes)} element(s) of the model were not built: " + "; ".join(r.notes),
                      UserWarning, stacklevel=2)
    return out


def _model_element(r: _Reader, root: _Element) -> _Element:
    if root.tag != "OpenSimDocument":
        if root.tag == "Model":
            return root  # a bare <Model> (no document wrapper) is read as 4.x
        raise r.error(root, f"expected an <OpenSimDocument> root element, got <{root.tag}>")
    version = root.get("Version")
    if version is not None:
        try:
            v = int(version)
        except ValueError:
            raise r.error(root, f"OpenSimDocument Version: expected an integer, got {version!r}") from None
        if v < 40000:
            raise r.error(root, f"OpenSimDocument Version {v} is an OpenSim 3.x file; only the 4.x format "
                                "(Version >= 40000) is read: open and save it in OpenSim 4 first")
    models = [c for c in root if c.tag == "Model"]
    if len(models) != 1:
        raise r.error(root, f"expected one <Model> inside <OpenSimDocument>, found {len(models)}")
    return models[0]


def _build(r: _Reader, model: _Element) -> OsimModel:
    system = MultibodySystem(_clean_name(model.get("name") or "model"))
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    out = OsimModel(system, matter, forces, path=r.path)
    out.bodies["ground"] = matter.ground

    for c in model:
        if c.tag not in _MODEL_KNOWN:
            r.notes.append(f"unknown element <{c.tag}> {c.get('name') or ''} (line {c.line})".replace("  ", " "))
    for set_tag in sorted(_SET_TAGS):
        for el in r.objects(model, set_tag):
            _flag_note(r.notes, el)
    comps = r.child(model, "components")
    if comps is not None:
        for el in comps:
            _flag_note(r.notes, el)

    ground = r.child(model, "Ground")
    ground_path = "/" + (ground.get("name") if ground is not None else "ground")
    if ground is None:  # a model without <Ground> still has OpenSim's default one
        ground = _Element("Ground", {"name": "ground"})
        r.paths[ground_path] = ground

    # ---------------------------------------------------------------- bodies
    body_els: dict[str, _Element] = {}
    mass_props: dict[str, MassProperties] = {}
    for el in r.objects(model, "BodySet"):
        if el.tag != "Body":
            _flag_note(r.notes, el, "not a Body")
            continue
        name = r.name_of(el)
        if name in body_els or name == ground.get("name"):
            raise r.error(el, f"a second body named {name!r}; body names must be unique")
        r.check_props(el, "Body")
        _note_subcomponents(r, el)
        m = r.number(el, "mass", 1.0)
        com = r.numbers(el, "mass_center", 3, [0.0, 0.0, 0.0])
        I6 = r.numbers(el, "inertia", 6, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
        if m < 0:
            raise r.error(r.child(el, "mass"), f"Body {name!r}: expected a mass >= 0, got {m}")
        try:
            I = np.array([[I6[0], I6[3], I6[4]], [I6[3], I6[1], I6[5]], [I6[4], I6[5], I6[2]]])
            mass_props[name] = MassProperties.from_central_inertia(m, com, Inertia.from_matrix(I))
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise r.error(_or(r.child(el, "inertia"), el), f"Body {name!r}: invalid mass properties: {exc}") from None
        body_els[name] = el

    # ---------------------------------------------------------------- joints: the tree
    joint_of_child: dict[str, tuple] = {}
    for el in r.objects(model, "JointSet"):
        if el.tag not in _JOINT_NCOORDS:
            _flag_note(r.notes, el, "joint type not supported; its child body gets no mobilizer from it")
            continue
        name = r.name_of(el)
        r.check_props(el, "Joint")
        pf = r.resolve(el, r.child(el, "socket_parent_frame"), "socket_parent_frame")
        cf = r.resolve(el, r.child(el, "socket_child_frame"), "socket_child_frame")
        pbase, X_PF = r.frame_in_body(pf)
        cbase, X_BM = r.frame_in_body(cf)
        for base, sock in ((pbase, "socket_parent_frame"), (cbase, "socket_child_frame")):
            if base.tag == "Body" and body_els.get(base.get("name")) is not base:
                raise r.error(_or(r.child(el, sock), el), f"{el.tag} {name!r}: the {sock[7:]}'s body "
                                                          f"{base.get('name')!r} is not a Body of the BodySet")
        if cbase.tag == "Ground":
            raise r.error(el, f"{el.tag} {name!r}: its child frame is on Ground; reversed joints are not supported")
        cname = cbase.get("name")
        if cname in joint_of_child:
            raise r.error(el, f"{el.tag} {name!r}: body {cname!r} is already the child of joint "
                              f"{joint_of_child[cname][0].get('name')!r}; closed loops of joints are not supported "
                              "(close the loop with a constraint)")
        if pbase is cbase:
            raise r.error(el, f"{el.tag} {name!r}: its parent and child frames are on the same body {cname!r}")
        joint_of_child[cname] = (el, pbase, X_PF, X_BM)

    # Parents first: walk from Ground.
    children: dict[str, list] = {}
    for cname, (el, pbase, X_PF, X_BM) in joint_of_child.items():
        pname = "ground" if pbase.tag == "Ground" else pbase.get("name")
        children.setdefault(pname, []).append(cname)
    order: list[str] = []
    frontier = ["ground"]
    while frontier:
        nxt = []
        for p in frontier:
            for c in children.get(p, []):
                order.append(c)
                nxt.append(c)
        frontier = nxt
    unreached = [b for b in joint_of_child if b not in order]
    if unreached:
        el = joint_of_child[unreached[0]][0]
        raise r.error(el, f"{el.tag} {el.get('name')!r}: its chain of parents never reaches Ground (a loop of "
                          "joints); closed loops of joints are not supported")

    coord_els: dict[str, _Element] = {}
    for cname in order:
        el, pbase, X_PF, X_BM = joint_of_child[cname]
        pname = "ground" if pbase.tag == "Ground" else pbase.get("name")
        _build_joint(r, out, el, out.bodies[pname], X_PF, cname, mass_props[cname], X_BM, coord_els)
    # The file's order (OpenSim's CoordinateSet and JointSet order), not the tree's.
    file_order = {el.get("name"): i for i, el in enumerate(r.objects(model, "JointSet"))}
    out.joints = dict(sorted(out.joints.items(), key=lambda kv: file_order[kv[0]]))
    out.coordinates = dict(sorted(out.coordinates.items(), key=lambda kv: (file_order[kv[1].joint], kv[1].index)))
    for bname in body_els:
        if bname not in joint_of_child:
            # OpenSim joins a body without a joint to Ground with a free joint (its graph maker).
            out.bodies[bname] = MobilizedBody.Free(matter.ground, Transform(), Body.Rigid(mass_props[bname]),
                                                   Transform(), name=_clean_name(bname))
            r.notes.append(f"{bname} (Body without a joint, line {body_els[bname].line}): joined to Ground by a "
                           "Free mobilizer with no coordinates of its own")

    # ---------------------------------------------------------------- coordinates: locks and prescriptions
    for cname, c in out.coordinates.items():
        cel = coord_els[cname]
        if c.locked or r.boolean(cel, "prescribed", False):
            if c.locked:
                f = Function.Constant(c.default_value, 1)
            else:
                holder = r.child(cel, "prescribed_function")
                inner = [x for x in holder] if holder is not None else []
                if len(inner) != 1:
                    r.notes.append(f"{cname} (Coordinate, line {cel.line}): prescribed without a "
                                   "prescribed_function; not prescribed")
                    continue
                f = r.function(inner[0], 1, f"prescribed_function of Coordinate {cname!r}")
            _require_plain_mobilizer(r, cel, f"{'locked' if c.locked else 'prescribed'} Coordinate {cname!r}", [c])
            with _wrap(r, cel, f"Coordinate {cname!r}"):
                c.lock = Constraint.PrescribedMotion(matter, f, c.mobod, c.index,
                                                     name=_unique(matter, _clean_name(cname) + ("_lock" if c.locked else "_prescribed")))

    # ---------------------------------------------------------------- forces
    for el in r.objects(model, "ForceSet"):
        _build_force(r, out, el)
    g = r.numbers(model, "gravity", 3, [0.0, -9.80665, 0.0])
    grav = Force.UniformGravity(forces, matter, g, name=_unique(forces, "gravity"))
    out.force_elements.setdefault("gravity", [grav])

    # ---------------------------------------------------------------- constraints
    for el in r.objects(model, "ConstraintSet"):
        _build_constraint(r, out, el)

    # Catch what only shows when the system is realized (a bad FunctionBased axis set, ...).
    try:
        out.initial_state()
    except (ValueError, TypeError, ArithmeticError, LookupError, NotImplementedError) as exc:
        raise OsimFileError(r.path, None, f"the model does not realize: {type(exc).__name__}: {exc}") from None
    return out


def _note_subcomponents(r: _Reader, el: _Element) -> None:
    """Report the dynamic subcomponents a frame carries (wrap objects, components), not built."""
    wos = r.child(el, "WrapObjectSet")
    if wos is not None:
        objs = r.child(wos, "objects")
        for w in (objs if objs is not None else []):
            _flag_note(r.notes, w, f"on {el.get('name')!r}")
    comps = r.child(el, "components")
    if comps is not None:
        for c in comps:
            if c.tag != "PhysicalOffsetFrame":
                _flag_note(r.notes, c, f"on {el.get('name')!r}")


class _wrap:
    """Turn a ValueError/TypeError of a simtk constructor into an OsimFileError at ``el``."""

    def __init__(self, r: _Reader, el: _Element, what: str):
        self.r, self.el, self.what = r, el, what

    def __enter__(self):
        return self

    def __exit__(self, et, exc, tb):
        if et is not None and issubclass(et, (ValueError, TypeError, ArithmeticError, LookupError)) \
                and not issubclass(et, OsimFileError):
            raise self.r.error(self.el, f"{self.what}: {exc}") from None
        return False


def _unique(parent, name: str) -> str:
    """``name``, or ``name_1``, ``name_2``... if a sibling has it (OpenSim keeps bodies, forces and
    constraints in separate sets; simtk puts bodies and constraints both under /matter)."""
    taken = {c.get_name() for c in parent.get_child_components()}
    if name not in taken:
        return name
    k = 1
    while f"{name}_{k}" in taken:
        k += 1
    return f"{name}_{k}"


def _coordinate_elements(r: _Reader, joint: _Element) -> list[_Element]:
    holder = r.child(joint, "coordinates")
    if holder is None:
        return []
    els = []
    for c in holder:
        if c.tag != "Coordinate":
            raise r.error(c, f"{joint.tag} {joint.get('name')!r}: expected <Coordinate> inside <coordinates>, "
                             f"got <{c.tag}>")
        r.name_of(c)
        els.append(c)
    return els


def _build_joint(r: _Reader, out: OsimModel, el: _Element, parent: MobilizedBody, X_PF: Transform,
                 bname: str, mprops: MassProperties, X_BM: Transform, coord_els: dict) -> None:
    jname = r.name_of(el)
    kind = el.tag
    coords = _coordinate_elements(r, el)
    by_name = {c.get("name"): c for c in coords}
    if len(by_name) != len(coords):
        raise r.error(el, f"{kind} {jname!r}: two coordinates have the same name")
    body = Body.Rigid(mprops)
    name = _unique(out.matter, _clean_name(bname))
    if kind == "CustomJoint":
        order, functions, indices, axes, motion = _spatial_transform(r, el, by_name)
        coords = [by_name[n] for n in order]
        with _wrap(r, el, f"CustomJoint {jname!r}"):
            mobod = MobilizedBody.FunctionBased(parent, X_PF, body, X_BM, len(order), functions, indices, axes,
                                                name=name)
    else:
        need = _JOINT_NCOORDS[kind]
        if len(coords) != need:
            raise r.error(el, f"{kind} {jname!r}: expected {need} <Coordinate> element{'s' if need != 1 else ''}, "
                              f"found {len(coords)}")
        motion = _JOINT_MOTION[kind]
        extra = ()
        if kind == "EllipsoidJoint":
            extra = (r.numbers(el, "radii_x_y_z", 3, [1.0, 1.0, 1.0]),)
        with _wrap(r, el, f"{kind} {jname!r}"):
            mobod = getattr(MobilizedBody, _JOINT_MOBILIZER[kind])(parent, X_PF, body, X_BM, *extra, name=name)
    out.bodies[bname] = mobod
    out.joints[jname] = mobod
    for k, cel in enumerate(coords):
        cname = cel.get("name")
        if cname in out.coordinates:
            raise r.error(cel, f"a second coordinate named {cname!r}; coordinate names must be unique")
        r.check_props(cel, "Coordinate")
        rng = r.numbers(cel, "range", 2, [-10.0, 10.0])
        if rng[0] > rng[1]:
            raise r.error(r.child(cel, "range"), f"Coordinate {cname!r}: expected range min <= max, got {rng}")
        clamped = r.boolean(cel, "clamped", False)
        default = r.number(cel, "default_value", 0.0)
        if clamped and not rng[0] - _SQRT_EPS <= default <= rng[1] + _SQRT_EPS:
            # OpenSim refuses this too (Coordinate::extendFinalizeFromProperties).
            raise r.error(cel, f"Coordinate {cname!r}: expected the default_value {default} of a clamped "
                               f"coordinate inside its range [{rng[0]}, {rng[1]}]")
        out.coordinates[cname] = OsimCoordinate(
            cname, jname, mobod, k,
            default_value=default,
            default_speed=r.number(cel, "default_speed_value", 0.0),
            range=(float(rng[0]), float(rng[1])),
            clamped=clamped,
            locked=r.boolean(cel, "locked", False),
            motion_type=motion[k])
        coord_els[cname] = cel


def _spatial_transform(r: _Reader, joint: _Element, by_name: dict):
    """(coordinate order, 6 functions, 6 index lists, 6 axes, motion types) of a CustomJoint."""
    jname = joint.get("name")
    st = r.child(joint, "SpatialTransform")
    if st is None:
        raise r.error(joint, f"CustomJoint {jname!r}: expected a <SpatialTransform>")
    axes_el = [c for c in st if c.tag == "TransformAxis"]
    names = ["rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3"]
    by_axis = {}
    for a in axes_el:
        an = a.get("name")
        if an not in names or an in by_axis:
            raise r.error(a, f"CustomJoint {jname!r}: expected TransformAxis named one of {', '.join(names)} "
                             f"(each once), got {an!r}")
        by_axis[an] = a
    defaults = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]] * 2)
    axis_coords: list[list[str]] = []
    for i, an in enumerate(names):
        a = by_axis.get(an)
        cn = []
        if a is not None:
            c = r.child(a, "coordinates")
            cn = (c.text or "").split() if c is not None else []
        for n in cn:
            if n not in by_name:
                raise r.error(a, f"CustomJoint {jname!r} {an}: coordinate {n!r} is not one of the joint's "
                                 f"coordinates ({', '.join(by_name) or 'none'})")
        axis_coords.append(cn)
    order: list[str] = []  # first use over the six axes: OpenSim's mobilizer order
    for cn in axis_coords:
        for n in cn:
            if n not in order:
                order.append(n)
    unused = [n for n in by_name if n not in order]
    if unused:
        raise r.error(joint, f"CustomJoint {jname!r}: coordinate(s) {', '.join(unused)} drive no TransformAxis")
    if not 1 <= len(order) <= 6:
        raise r.error(joint, f"CustomJoint {jname!r}: expected 1 to 6 coordinates, got {len(order)}")
    functions, indices, axes = [], [], np.array(defaults)
    motion = {n: None for n in order}
    for i, an in enumerate(names):
        a = by_axis.get(an)
        cn = axis_coords[i]
        fel = None
        if a is not None:
            axes[i] = r.numbers(a, "axis", 3, defaults[i])
            fels = [c for c in a if c.tag not in ("coordinates", "axis")]
            if len(fels) > 1:
                raise r.error(fels[1], f"CustomJoint {jname!r} {an}: expected one function, found {len(fels)}")
            fel = fels[0] if fels else None
        where = f"CustomJoint {jname!r} {an}"
        if fel is None:  # OpenSim's default: linear in a single coordinate, else the constant 0
            if len(cn) > 1:
                raise r.error(a, f"{where}: several coordinates but no function")
            f = Function.Linear([1.0, 0.0]) if cn else Function.Constant(0.0, 0)
        else:
            f = r.function(fel, len(cn), where)
            # OpenSim's motion type: a LinearFunction of slope +-1 makes a pure rotation/translation.
            pure = fel.tag == "LinearFunction" and abs(float(r.numbers(fel, "coefficients", 2, [1.0, 0.0])[0])) == 1.0
            for n in cn:
                if pure:
                    motion[n] = _R if i < 3 else _T
                elif motion[n] is None:
                    motion[n] = "coupled"
        functions.append(f)
        indices.append([order.index(n) for n in cn])
    if np.linalg.norm(axes, axis=1).min() == 0.0:
        raise r.error(st, f"CustomJoint {jname!r}: a TransformAxis has the zero axis")
    return order, functions, indices, axes, [motion[n] or "undefined" for n in order]


def _frame_station(r: _Reader, out: OsimModel, owner: _Element, tag: str) -> tuple[MobilizedBody, Transform]:
    frame = r.resolve(owner, r.child(owner, tag), tag)
    base, X = r.frame_in_body(frame)
    name = "ground" if base.tag == "Ground" else base.get("name")
    if name not in out.bodies:
        raise r.error(r.child(owner, tag), f"{owner.tag} {owner.get('name')!r}: body {name!r} has no mobilizer")
    return out.bodies[name], X


def _enabled(r: _Reader, el: _Element, prop: str) -> bool:
    return r.boolean(el, prop, True)


def _coordinate(r: _Reader, out: OsimModel, el: _Element, tag: str) -> OsimCoordinate:
    cname = r.string(el, tag)
    if cname not in out.coordinates:
        raise r.error(r.child(el, tag), f"{el.tag} {el.get('name')!r}: <{tag}> {cname!r} is not a coordinate of "
                                        "the model")
    return out.coordinates[cname]


def _build_force(r: _Reader, out: OsimModel, el: _Element) -> None:
    kind = el.tag
    if kind not in ("PointToPointSpring", "BushingForce", "CoordinateLimitForce", "SpringGeneralizedForce"):
        _flag_note(r.notes, el)
        return
    name = r.name_of(el)
    if name in out.force_elements:
        raise r.error(el, f"a second force named {name!r}; force names must be unique")
    r.check_props(el, kind)
    fs = out.forces
    sname = _unique(fs, _clean_name(name))
    made: list = []
    with _wrap(r, el, f"{kind} {name!r}"):
        if kind == "PointToPointSpring":
            b1, X1 = _frame_station(r, out, el, "socket_body1")
            b2, X2 = _frame_station(r, out, el, "socket_body2")
            p1, p2 = X1 * r.numbers(el, "point1", 3, [0, 0, 0]), X2 * r.numbers(el, "point2", 3, [0, 0, 0])
            made.append(Force.TwoPointLinearSpring(fs, b1, p1, b2, p2, r.number(el, "stiffness", 1.0),
                                                   r.number(el, "rest_length", 0.0), name=sname))
        elif kind == "BushingForce":
            b1, X1 = _frame_station(r, out, el, "socket_frame1")
            b2, X2 = _frame_station(r, out, el, "socket_frame2")
            # Simbody's (and simtk's) six values put the rotational ones first.
            k6 = np.concatenate([r.numbers(el, "rotational_stiffness", 3, [0, 0, 0]),
                                 r.numbers(el, "translational_stiffness", 3, [0, 0, 0])])
            c6 = np.concatenate([r.numbers(el, "rotational_damping", 3, [0, 0, 0]),
                                 r.numbers(el, "translational_damping", 3, [0, 0, 0])])
            made.append(Force.LinearBushing(fs, b1, X1, b2, X2, k6, c6, name=sname))
        elif kind == "CoordinateLimitForce":
            c = _coordinate(r, out, el, "coordinate")
            impl = CoordinateLimitForceImpl(
                c.mobod, c.index, r.number(el, "upper_stiffness", 1.0), r.number(el, "upper_limit", 0.0),
                r.number(el, "lower_stiffness", 1.0), r.number(el, "lower_limit", 0.0), r.number(el, "damping", 0.001),
                r.number(el, "transition", 0.1), c.motion_type == _R)
            if impl.tr <= 0.0:
                raise r.error(_or(r.child(el, "transition"), el), f"CoordinateLimitForce {name!r}: expected a "
                                                               "transition > 0")
            made.append(Force.Custom(fs, impl, name=sname))
            if r.boolean(el, "compute_dissipation_energy", False):
                r.notes.append(f"{name} (CoordinateLimitForce, line {el.line}): compute_dissipation_energy "
                               "(a state variable that only integrates the dissipated power) not built")
        else:
            c = _coordinate(r, out, el, "coordinate")
            made.append(Force.MobilityLinearSpring(fs, c.mobod, c.index, r.number(el, "stiffness", 0.0),
                                                   r.number(el, "rest_length", 0.0), name=sname))
            made.append(Force.MobilityLinearDamper(fs, c.mobod, c.index, r.number(el, "viscosity", 0.0),
                                                   name=_unique(fs, sname + "_damping")))
        if not _enabled(r, el, "appliesForce"):
            for f in made:
                f.set_disabled_by_default(True)
    out.force_elements[name] = made


def _require_plain_mobilizer(r: _Reader, el: _Element, what: str, coords: list) -> None:
    """simtk's coordinate-level constraints (CoordinateCoupler, PrescribedMotion) do not yet work
    on Custom mobilizers such as a CustomJoint's FunctionBased one: say so at the element."""
    for c in coords:
        if isinstance(c.mobod, MobilizedBody.Custom):
            raise r.error(el, f"{what}: coordinate {c.name!r} belongs to CustomJoint {c.joint!r}; simtk does not "
                              "yet support coordinate couplers, locks or prescribed motion on the coordinates of "
                              "a FunctionBased (Custom) mobilizer")


def _build_constraint(r: _Reader, out: OsimModel, el: _Element) -> None:
    kind = el.tag
    if kind not in ("WeldConstraint", "PointConstraint", "ConstantDistanceConstraint", "CoordinateCouplerConstraint"):
        _flag_note(r.notes, el)
        return
    name = r.name_of(el)
    if name in out.constraints:
        raise r.error(el, f"a second constraint named {name!r}; constraint names must be unique")
    r.check_props(el, kind)
    matter = out.matter
    cname = _unique(matter, _clean_name(name))
    with _wrap(r, el, f"{kind} {name!r}"):
        if kind == "WeldConstraint":
            b1, X1 = _frame_station(r, out, el, "socket_frame1")
            b2, X2 = _frame_station(r, out, el, "socket_frame2")
            c = Constraint.Weld(b1, X1, b2, X2, name=cname)
        elif kind in ("PointConstraint", "ConstantDistanceConstraint"):
            b1, X1 = _frame_station(r, out, el, "socket_body_1")
            b2, X2 = _frame_station(r, out, el, "socket_body_2")
            p1 = X1 * r.numbers(el, "location_body_1", 3, [0, 0, 0])
            p2 = X2 * r.numbers(el, "location_body_2", 3, [0, 0, 0])
            if kind == "PointConstraint":
                c = Constraint.Ball(b1, p1, b2, p2, name=cname)
            else:
                c = Constraint.Rod(b1, p1, b2, p2, r.number(el, "constant_distance", 1.0), name=cname)
        else:
            holder = r.child(el, "independent_coordinate_names")
            ind_names = (holder.text or "").split() if holder is not None else []
            if not ind_names:
                raise r.error(holder if holder is not None else el,
                              f"CoordinateCouplerConstraint {name!r}: expected independent_coordinate_names")
            ind = []
            for n in ind_names:
                if n not in out.coordinates:
                    raise r.error(holder, f"CoordinateCouplerConstraint {name!r}: {n!r} is not a coordinate of the "
                                          "model")
                ind.append(out.coordinates[n])
            dep = _coordinate(r, out, el, "dependent_coordinate_name")
            fh = r.child(el, "coupled_coordinates_function")
            inner = [x for x in fh] if fh is not None else []
            if len(inner) != 1:
                raise r.error(fh if fh is not None else el,
                              f"CoordinateCouplerConstraint {name!r}: expected one function in "
                              "<coupled_coordinates_function>")
            f = r.function(inner[0], len(ind), f"CoordinateCouplerConstraint {name!r}")
            _require_plain_mobilizer(r, el, f"CoordinateCouplerConstraint {name!r}", ind + [dep])
            coupler = _CouplerFunction(f, r.number(el, "scale_factor", 1.0))
            c = Constraint.CoordinateCoupler(matter, coupler, [x.mobod for x in ind] + [dep.mobod],
                                             [x.index for x in ind] + [dep.index], name=cname)
        enforced = r.boolean(el, "isEnforced", True) and not r.boolean(el, "isDisabled", False)
        if not enforced:
            c.set_disabled_by_default(True)
    out.constraints[name] = [c]
