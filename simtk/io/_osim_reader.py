"""Reading an .osim file: the error type, XML with line numbers, and the reader that checks elements."""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
import xml.parsers.expat

import numpy as np

from simtk import (
    Function,
    Rotation,
    Transform,
)

from ._lepton import LeptonError
from ._osim_functions import (
    ExpressionFunction,
    GCVSplineFunction,
    MultivariatePolynomialFunction,
    SimmSplineFunction,
    _PiecewiseConstant,
    _Scaled,
    _Shifted,
)
from .errors import ModelFileError


# ====================================================================== errors
class OsimFileError(ModelFileError):
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
        super().__init__(reason, str(path), line)
        self.path = self.file  # OpenSim's word for it


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
                  "MultiplierFunction", "PiecewiseLinearFunction", "PiecewiseConstantFunction", "Sine",
                  "StepFunction", "GCVSpline", "MultivariatePolynomialFunction", "ExpressionBasedFunction"}
# the functions of several arguments (any other, but Constant, takes one)
_MULTI_ARG_TAGS = {"MultivariatePolynomialFunction", "ExpressionBasedFunction"}
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
    "PointOnLineConstraint": {"socket_line_body", "socket_follower_body", "line_direction_vec", "point_on_line",
                              "point_on_follower", "isEnforced", "isDisabled"},
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
        # the file's <defaults>: per element type, the object whose properties an element of that type
        # takes where it omits them (OpenSim reads them so; unlike OpenSim, they do not outlive the file)
        self.defaults: dict[str, _Element] = {}

    # ------------------------------------------------------------------ errors and values
    def error(self, el: _Element | None, reason: str) -> OsimFileError:
        return OsimFileError(self.path, getattr(el, "line", None), reason)

    def _text(self, el: _Element) -> str:
        return (el.text or "").strip()

    def child(self, el: _Element, tag: str) -> _Element | None:
        # (an element's children by tag, indexed at its first lookup: a reader asks each element for
        # many properties, and the tree is not changed after it is parsed)
        index = el.__dict__.get("_by_tag")
        if index is None:
            index = {}
            for c in el:
                index.setdefault(c.tag, []).append(c)
            el.__dict__["_by_tag"] = index
        found = index.get(tag, ())
        if len(found) > 1:
            raise self.error(found[1], f"<{el.tag} name={el.get('name')!r}> has {len(found)} <{tag}> elements; "
                                       "expected one")
        if found:
            return found[0]
        default = self.defaults.get(el.tag)
        return None if default is None or default is el else self.child(default, tag)

    def read_defaults(self, model: _Element) -> None:
        """Take the model's ``<defaults>``: the default object of each element type named in it."""
        for d in (c for c in model if c.tag == "defaults"):
            for obj in d:
                self.defaults[obj.tag] = obj

    def _floats(self, el: _Element, tag: str, n: int | None, default, what: str) -> list[float]:
        c = self.child(el, tag)
        if c is None:
            if default is None:
                raise self.error(el, f"{el.tag} {el.get('name')!r}: expected a <{tag}> element")
            return [float(x) for x in default]

        def where() -> str:
            return f"<{tag}> of {el.tag} {el.get('name')!r}" + (f" ({what})" if what else "")

        try:
            values = [float(w) for w in self._text(c).split()]
        except ValueError:
            raise self.error(c, f"{where()}: expected numbers, got {self._text(c)[:60]!r}") from None
        if n is not None and len(values) != n:
            raise self.error(c, f"{where()}: expected {n} number{'s' if n > 1 else ''}, got {len(values)}")
        if not all(math.isfinite(v) for v in values):
            raise self.error(c, f"{where()}: expected finite numbers, got {self._text(c)[:60]!r}")
        return values

    def numbers(self, el: _Element, tag: str, n: int | None, default=None, what: str = "") -> np.ndarray:
        """The whitespace-separated finite numbers of child ``tag`` (``n`` of them unless None)."""
        return np.array(self._floats(el, tag, n, default, what), dtype=float)

    def number(self, el: _Element, tag: str, default: float | None = None) -> float:
        return self._floats(el, tag, 1, None if default is None else [default], "")[0]

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

    def new_force(self, el: _Element, taken, props: set | None = None) -> str:
        """The name of force element ``el``, refused when ``taken`` (a container of names) has it; its
        properties not in ``props`` (when given) are noted as ignored."""
        name = self.name_of(el)
        if name in taken:
            raise self.error(el, f"a second force named {name!r}; force names must be unique")
        if props is not None:
            for c in el:
                if c.tag not in props:
                    self.notes.append(f"unknown property <{c.tag}> of {el.tag} {name!r} (line {c.line}) ignored")
        return name

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
            if c.tag == "defaults":  # default objects, not components
                continue
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
        if nargs == 0:
            return Function.Constant(self._argless_value(el, where), 0)
        if tag in _MULTI_ARG_TAGS:
            return self._multi_arg(el, nargs, where)
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
            return _Scaled(self.function(self._inner(el, where), nargs, where), self.number(el, "scale", 1.0))
        if tag == "GCVSpline":
            return self._gcv(el, where)
        try:
            if tag == "Sine":
                f = Function.Sinusoid(self.number(el, "amplitude", 1.0), self.number(el, "omega", 1.0),
                                      self.number(el, "phase", 0.0))
                offset = self.number(el, "offset", 0.0)
                return f if offset == 0.0 else _Shifted(f, offset)
            if tag == "StepFunction":
                return Function.Step(self.number(el, "start_value", 0.0), self.number(el, "end_value", 1.0),
                                     self.number(el, "transition_start_time", 0.99),
                                     self.number(el, "transition_end_time", 1.01))
            x = self.numbers(el, "x", None)
            y = self.numbers(el, "y", None)
            if tag == "PiecewiseConstantFunction":
                return _PiecewiseConstant(x, y)
            if tag == "PiecewiseLinearFunction":
                if x.size != y.size:
                    raise ValueError(f"PiecewiseLinearFunction: {x.size} x values but {y.size} y values")
                if x.size == 1:  # OpenSim's: the one value everywhere
                    return Function.Constant(float(y[0]), 1)
                # degree 1: the segments, the end ones extended, the slope at a knot the right one's (OpenSim's)
                return Function.Spline(x, y, 1)
            return SimmSplineFunction(x, y)
        except (ValueError, TypeError) as exc:
            raise self.error(el, f"{where}: {exc}") from None

    def _gcv(self, el: _Element, where: str) -> Function:
        m = int(self.number(el, "half_order"))
        if not 1 <= m <= 4 or self.number(el, "half_order") != m:
            raise self.error(self.child(el, "half_order"), f"{where}: GCVSpline half_order must be 1, 2, 3 or 4 "
                                                           f"(degree 1, 3, 5, 7), got {self._text(self.child(el, 'half_order'))}")
        # > 0: smoothing for that error variance, < 0: the variance estimated (GCVSPL's modes 3 and 2, as
        # OpenSim chooses); <weights> is not read, as OpenSim fits with weights 1
        variance = self.number(el, "error_variance", 0.0)
        if not math.isfinite(variance):
            raise self.error(self.child(el, "error_variance"), f"{where}: GCVSpline error_variance must be finite, "
                                                               f"got {variance}")
        x = self.numbers(el, "x", None)
        y = self.numbers(el, "y", None)
        try:
            return GCVSplineFunction(x, y, 2 * m - 1, variance)
        except ValueError as exc:
            raise self.error(el, f"{where}: {exc}") from None

    def _multi_arg(self, el: _Element, nargs: int, where: str) -> Function:
        """A MultivariatePolynomialFunction or ExpressionBasedFunction of ``nargs`` arguments."""
        try:
            if el.tag == "MultivariatePolynomialFunction":
                dim = self.number(el, "dimension")
                if dim != int(dim) or dim != nargs:
                    raise self.error(_or(self.child(el, "dimension"), el),
                                     f"{where}: MultivariatePolynomialFunction of dimension {dim:g}, but {nargs} "
                                     f"coordinate(s) are given")
                order = self.number(el, "order")
                if order != int(order):
                    raise ValueError(f"order must be an integer, got {order}")
                return MultivariatePolynomialFunction(self.numbers(el, "coefficients", None), nargs, int(order))
            variables = self.string(el, "variables")
            if len(variables.split()) != nargs:
                raise self.error(_or(self.child(el, "variables"), el),
                                 f"{where}: ExpressionBasedFunction of the variables {variables!r}, but {nargs} "
                                 f"coordinate(s) are given")
            text = self.string(el, "expression")
            try:
                return ExpressionFunction(text, variables)
            except LeptonError as exc:
                raise self.error(self.child(el, "expression"), f"{where}: malformed <expression>: {exc}") from None
        except OsimFileError:
            raise
        except (ValueError, TypeError) as exc:
            raise self.error(el, f"{where}: {exc}") from None

    def unreadable_function(self, el: _Element) -> str | None:
        """The tag of a function in ``el`` (itself, or inside a MultiplierFunction) that simtk does not
        read; None if it reads them all. (An element that can do without one, a
        coupler or a prescription, is then listed in the warning instead of refusing the file.)"""
        if el.tag not in _FUNCTION_TAGS:
            return el.tag
        if el.tag == "MultiplierFunction":
            holder = self.child(el, "function")
            for c in (holder if holder is not None else []):
                tag = self.unreadable_function(c)
                if tag is not None:
                    return tag
        return None

    def _argless_value(self, el: _Element, where: str) -> float:
        """The value OpenSim gives a function of an axis without coordinates: Simbody calls it with no
        argument, so a Constant is its value, a LinearFunction its first coefficient (Simbody's Linear
        adds coefficient[len(x)]), a MultiplierFunction the scaled value of its function; any other
        function would read an argument that is not there (OpenSim 4.6 crashes), so it is refused."""
        tag = el.tag
        if tag == "Constant":
            return self.number(el, "value", 0.0)
        if tag == "LinearFunction":
            return float(self.numbers(el, "coefficients", 2, [1.0, 0.0])[0])
        if tag == "MultiplierFunction":
            return self.number(el, "scale", 1.0) * self._argless_value(self._inner(el, where), where)
        raise self.error(el, f"{where}: a {tag} of no coordinate (OpenSim evaluates it without an argument and "
                             "fails); give the axis its coordinate, or make the function a Constant")

    def _inner(self, el: _Element, where: str) -> _Element:
        holder = self.child(el, "function")
        inner = [c for c in holder] if holder is not None else []
        if len(inner) != 1:
            raise self.error(holder if holder is not None else el,
                             f"{where}: MultiplierFunction expects one function inside <function>")
        return inner[0]


def _or(a, b):
    """``a`` unless it is None (an Element with no children is false, so ``or`` cannot be used)."""
    return b if a is None else a


def _flag_note(notes: list, el: _Element, kind: str = "") -> None:
    notes.append(f"{el.get('name') or '(unnamed)'} ({el.tag}{', ' + kind if kind else ''}, line {el.line})")
