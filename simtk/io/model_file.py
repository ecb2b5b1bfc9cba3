"""simtk's own model file: a MultibodySystem written as nested ``[ name=value ... ]`` items.

The design is ArtiSynth's write/scan (seed 000 §3): every component writes itself as its class
name followed by a bracketed list of ``name=value`` pairs and its child components; ``#`` starts
a comment. A component writes its declared properties that differ from their defaults (a
built-in element's properties have no default apart from what its constructor stored, so they are
always written) and what its constructor needs besides (its parent, the bodies it acts on, a
mobility index). References between components are written as paths relative to the
referencing component (``parent=@"../ground"``) and resolved in a second pass over the whole
file, so a reference may point forward. Numbers are written with ``repr(float)`` and read back
exactly. The default values of every continuous variable are part of the model (``defaults``).

Reading never runs code from the file: a small tokenizer and recursive-descent parser build a
tree of items, class names are looked up in a registry (built-ins under their kind names,
``MobilizedBody.Pin``, ``Force.TwoPointLinearSpring``, ``Constraint.Rod``, ``Motion.Sinusoid``;
users' classes under the name given to `register_class`), and the model is built by calling the
elements' constructors. Any problem is a `ModelFileError` naming the file, the line and what was
expected.

File grammar (after ArtiSynth §3.3)::

    file      := item*
    item      := NAME '=' value | CLASS '[' item* ']'        (a child component)
    value     := NUMBER | STRING | 'true' | 'false' | '@' STRING (a reference)
               | '[' value* ']' | CLASS '[' item* ']'        (a typed value: Transform, ...)

A user's class (a ``Force.Custom.Implementation``, ``Constraint.Custom.Implementation``,
``MobilizedBody.Custom.Implementation`` or ``Motion.Custom.Implementation`` subclass) is saved by
its registered name with its declared properties; it is rebuilt as ``cls(**properties)`` (plus
``matter=`` for mobilizer and constraint implementations), so its constructor must accept its
declared properties as keyword arguments. Properties holding components are references.
"""
from __future__ import annotations

import inspect
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    System,
    Transform,
)

__all__ = ["save_model", "load_model", "register_class", "ModelFileError", "ModelFileWarning", "model_to_text", "model_from_text"]

FORMAT = 1
_MAX_DEPTH = 64


class ModelFileError(ValueError):
    """A model file that cannot be read (with its file and line), or a model that cannot be written."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None):
        self.file, self.line = file, line
        where = f"{file or '<text>'}:{line}: " if line is not None else (f"{file}: " if file else "")
        super().__init__(where + message)


class ModelFileWarning(UserWarning):
    """A model file was read, but the model it describes fails when realized to Instance."""


# ====================================================================== registry
@dataclass
class _Spec:
    """How one class is written and rebuilt."""

    name: str
    cls: type
    category: str  # "mobilizer", "force", "constraint", "motion"
    #: (item name, getter(component) -> referenced component)
    refs: tuple = ()
    #: (item name, getter(component) -> value): constructor arguments that are not properties
    extras: tuple = ()
    #: build(ctx, owner, refs, values, name) -> component
    build: Callable | None = None
    #: a user's implementation class (wrapped in the category's Custom element)
    user: bool = False


_BY_NAME: dict[str, _Spec] = {}
_BY_CLASS: dict[type, _Spec] = {}


def register_class(cls: type, name: str | None = None) -> str:
    """Register a user's class so that models using it save and load by ``name``.

    Parameters
    ----------
    cls : type
        A subclass of ``Force.Custom.Implementation``, ``Constraint.Custom.Implementation``,
        ``MobilizedBody.Custom.Implementation`` or ``Motion.Custom.Implementation`` whose parameters
        are declared Properties and whose constructor accepts them as keyword arguments
        (mobilizer and constraint implementations also get ``matter=``).
    name : str, optional
        The name written in files (default: the class's ``__qualname__``). Must be a word of
        letters, digits, ``_`` and ``.``, not starting with a digit, and not a built-in's name.

    Returns
    -------
    str
        The registered name.
    """
    bases = {Force.Custom.Implementation: "force", Constraint.Custom.Implementation: "constraint",
             MobilizedBody.Custom.Implementation: "mobilizer", Motion.Custom.Implementation: "motion"}
    category = next((c for b, c in bases.items() if isinstance(cls, type) and issubclass(cls, b)), None)
    if category is None:
        raise TypeError(f"register_class: {cls!r} is not a Force/Constraint/MobilizedBody/Motion "
                        "Custom.Implementation subclass")
    name = name if name is not None else cls.__qualname__
    if not isinstance(name, str) or not _WORD.fullmatch(name) or name in ("true", "false"):
        raise ValueError(f"register_class: {name!r} is not a valid class name for a model file")
    old = _BY_NAME.get(name)
    if old is not None and old.cls is not cls:
        raise ValueError(f"register_class: the name {name!r} is taken by {old.cls!r}")
    spec = _Spec(name, cls, category, user=True)
    _BY_NAME[name] = spec
    _BY_CLASS[cls] = spec
    return name


def _builtin(name: str, cls: type, category: str, build: Callable, refs=(), extras=()) -> None:
    spec = _Spec(name, cls, category, tuple(refs), tuple(extras), build)
    _BY_NAME[name] = spec
    _BY_CLASS[cls] = spec


# ---------------------------------------------------------------------- built-in mobilizers
_MOBILIZERS = ("Weld", "Pin", "Slider", "Screw", "Universal", "Cylinder", "BendStretch", "Planar", "Gimbal",
               "SphericalCoords", "Translation", "Ball", "Free", "Ellipsoid", "LineOrientation", "FreeLine",
               "Bushing")


def _mobilizer_params(m) -> dict:
    # The constructor's parameters after the frames are kept by the element without a public getter.
    kind = type(m).__name__
    if kind == "Screw":
        return {"pitch": float(m._params[0])}
    if kind == "Ellipsoid":
        return {"radii": np.array(m._params, dtype=float)}
    return {}


def _build_mobilizer(cls):
    def build(ctx, owner, refs, v, name):
        params = []
        if cls.__name__ == "Screw":
            params = [ctx.number(v, "pitch")]
        elif cls.__name__ == "Ellipsoid":
            params = [ctx.vector(v, "radii", 3)]
        body = Body.Massless() if ctx.flag(v, "massless") else Body.Rigid(ctx.typed(v, "mass_properties", MassProperties))
        direction = MobilizedBody.Reverse if ctx.flag(v, "reversed") else MobilizedBody.Forward
        return cls(refs["parent"], ctx.typed(v, "inboard_frame", Transform), body,
                   ctx.typed(v, "outboard_frame", Transform), *params, direction=direction, name=name)
    return build


for _k in _MOBILIZERS:
    _c = getattr(MobilizedBody, _k)
    _builtin(f"MobilizedBody.{_k}", _c, "mobilizer", _build_mobilizer(_c),
             refs=[("parent", lambda m: m.get_parent_mobilized_body())],
             extras=[("pitch", lambda m: _mobilizer_params(m).get("pitch")),
                     ("radii", lambda m: _mobilizer_params(m).get("radii")),
                     ("massless", lambda m: True if isinstance(m.get_body(), Body.Massless) else None),
                     ("reversed", lambda m: True if m.is_reversed() else None)])


# ---------------------------------------------------------------------- built-in forces
def _ref(attr: str):
    # Built-in forces keep the bodies they were given in attributes without public getters.
    return lambda e: getattr(e, attr)


def _body_at(attr: str):
    # Built-in constraints keep their bodies' indices.
    return lambda c: c.get_matter_subsystem().get_mobilized_body(getattr(c, attr))


def _index_of(attr: str):
    return lambda e: int(getattr(e, attr))


def _gravity(ctx, owner, refs, v, name):
    return Force.UniformGravity(owner, ctx.matter, ctx.vector(v, "gravity", 3), ctx.number(v, "zero_height"), name=name)


def _directional_gravity(ctx, owner, refs, v, name):
    g = ctx.vector(v, "gravity", 3)
    n = float(np.linalg.norm(g))
    # Built from direction and magnitude, then given the exact vector (d/|d|*|g| may differ in the last bit).
    f = Force.Gravity(owner, ctx.matter, g if n > 0 else [0.0, -1.0, 0.0], n, ctx.number(v, "zero_height"), name=name)
    return f


_builtin("Force.UniformGravity", Force.UniformGravity, "force", _gravity)
_builtin("Force.Gravity", Force.Gravity, "force", _directional_gravity)
_TWO = [("body1", _ref("_b1")), ("body2", _ref("_b2"))]
_builtin("Force.TwoPointLinearSpring", Force.TwoPointLinearSpring, "force",
         lambda ctx, o, r, v, n: Force.TwoPointLinearSpring(o, r["body1"], ctx.vector(v, "station1", 3), r["body2"],
                                                            ctx.vector(v, "station2", 3), ctx.number(v, "stiffness"),
                                                            ctx.number(v, "rest_length"), name=n), refs=_TWO)
_builtin("Force.TwoPointLinearDamper", Force.TwoPointLinearDamper, "force",
         lambda ctx, o, r, v, n: Force.TwoPointLinearDamper(o, r["body1"], ctx.vector(v, "station1", 3), r["body2"],
                                                            ctx.vector(v, "station2", 3), ctx.number(v, "damping"),
                                                            name=n), refs=_TWO)
_builtin("Force.TwoPointConstantForce", Force.TwoPointConstantForce, "force",
         lambda ctx, o, r, v, n: Force.TwoPointConstantForce(o, r["body1"], ctx.vector(v, "station1", 3), r["body2"],
                                                             ctx.vector(v, "station2", 3), ctx.number(v, "force"),
                                                             name=n), refs=_TWO)
_MOB = dict(refs=[("body", _ref("_mobod"))], extras=[("which", _index_of("_which"))])
_builtin("Force.MobilityLinearSpring", Force.MobilityLinearSpring, "force",
         lambda ctx, o, r, v, n: Force.MobilityLinearSpring(o, r["body"], ctx.index(v, "which"),
                                                            ctx.number(v, "stiffness"), ctx.number(v, "q_zero"), name=n),
         **_MOB)
_builtin("Force.MobilityLinearDamper", Force.MobilityLinearDamper, "force",
         lambda ctx, o, r, v, n: Force.MobilityLinearDamper(o, r["body"], ctx.index(v, "which"),
                                                            ctx.number(v, "damping"), name=n), **_MOB)
_builtin("Force.MobilityConstantForce", Force.MobilityConstantForce, "force",
         lambda ctx, o, r, v, n: Force.MobilityConstantForce(o, r["body"], ctx.index(v, "which"),
                                                             ctx.number(v, "force"), name=n), **_MOB)
_builtin("Force.MobilityLinearStop", Force.MobilityLinearStop, "force",
         lambda ctx, o, r, v, n: Force.MobilityLinearStop(o, r["body"], ctx.index(v, "which"),
                                                          ctx.number(v, "stiffness"), ctx.number(v, "dissipation"),
                                                          ctx.number(v, "q_low"), ctx.number(v, "q_high"), name=n),
         **_MOB)
_builtin("Force.GlobalDamper", Force.GlobalDamper, "force",
         lambda ctx, o, r, v, n: Force.GlobalDamper(o, ctx.matter, ctx.number(v, "damping"), name=n))
_builtin("Force.ConstantForce", Force.ConstantForce, "force",
         lambda ctx, o, r, v, n: Force.ConstantForce(o, r["body"], ctx.vector(v, "station", 3),
                                                     ctx.vector(v, "force", 3), name=n),
         refs=[("body", _ref("_body"))])
_builtin("Force.ConstantTorque", Force.ConstantTorque, "force",
         lambda ctx, o, r, v, n: Force.ConstantTorque(o, r["body"], ctx.vector(v, "torque", 3), name=n),
         refs=[("body", _ref("_body"))])
_builtin("Force.LinearBushing", Force.LinearBushing, "force",
         lambda ctx, o, r, v, n: Force.LinearBushing(o, r["body1"], ctx.typed(v, "frame_on_body1", Transform),
                                                     r["body2"], ctx.typed(v, "frame_on_body2", Transform),
                                                     ctx.vector(v, "stiffness", 6), ctx.vector(v, "damping", 6), name=n),
         refs=_TWO)
_builtin("Force.DiscreteForces", Force.DiscreteForces, "force",
         lambda ctx, o, r, v, n: Force.DiscreteForces(o, ctx.matter, name=n))

# ---------------------------------------------------------------------- built-in constraints
_B12 = [("body1", _body_at("_b1")), ("body2", _body_at("_b2"))]
_BF = [("base", _body_at("_b1")), ("follower", _body_at("_b2"))]
_builtin("Constraint.Rod", Constraint.Rod, "constraint",
         lambda ctx, o, r, v, n: Constraint.Rod(r["body1"], ctx.vector(v, "station1", 3), r["body2"],
                                                ctx.vector(v, "station2", 3), ctx.number(v, "length"), name=n), refs=_B12)
_builtin("Constraint.Ball", Constraint.Ball, "constraint",
         lambda ctx, o, r, v, n: Constraint.Ball(r["body1"], ctx.vector(v, "station1", 3), r["body2"],
                                                 ctx.vector(v, "station2", 3), name=n), refs=_B12)
_builtin("Constraint.Weld", Constraint.Weld, "constraint",
         lambda ctx, o, r, v, n: Constraint.Weld(r["body1"], ctx.typed(v, "frame_on_body1", Transform), r["body2"],
                                                 ctx.typed(v, "frame_on_body2", Transform), name=n), refs=_B12)
_builtin("Constraint.ConstantOrientation", Constraint.ConstantOrientation, "constraint",
         lambda ctx, o, r, v, n: Constraint.ConstantOrientation(r["base"], ctx.typed(v, "base_rotation", Rotation),
                                                                r["follower"],
                                                                ctx.typed(v, "follower_rotation", Rotation), name=n),
         refs=_BF)
_builtin("Constraint.ConstantAngle", Constraint.ConstantAngle, "constraint",
         lambda ctx, o, r, v, n: Constraint.ConstantAngle(r["base"], ctx.vector(v, "base_axis", 3), r["follower"],
                                                          ctx.vector(v, "follower_axis", 3), ctx.number(v, "angle"),
                                                          name=n), refs=_BF)
_builtin("Constraint.PointInPlane", Constraint.PointInPlane, "constraint",
         lambda ctx, o, r, v, n: Constraint.PointInPlane(r["plane_body"], ctx.vector(v, "normal", 3),
                                                         ctx.number(v, "height"), r["follower"],
                                                         ctx.vector(v, "point", 3), name=n),
         refs=[("plane_body", _body_at("_b1")), ("follower", _body_at("_b2"))])
_builtin("Constraint.PointOnLine", Constraint.PointOnLine, "constraint",
         lambda ctx, o, r, v, n: Constraint.PointOnLine(r["line_body"], ctx.vector(v, "direction", 3),
                                                        ctx.vector(v, "point_on_line", 3), r["follower"],
                                                        ctx.vector(v, "point", 3), name=n),
         refs=[("line_body", _body_at("_b1")), ("follower", _body_at("_b2"))])
_builtin("Constraint.NoSlip1D", Constraint.NoSlip1D, "constraint",
         lambda ctx, o, r, v, n: Constraint.NoSlip1D(r["case_body"], ctx.vector(v, "contact_point", 3),
                                                     ctx.vector(v, "direction", 3), r["moving0"], r["moving1"], name=n),
         refs=[("case_body", _body_at("_bc")), ("moving0", _body_at("_b0")), ("moving1", _body_at("_b1"))])
_ONE = dict(refs=[("body", _body_at("_b"))], extras=[("which", _index_of("_which"))])
_builtin("Constraint.ConstantCoordinate", Constraint.ConstantCoordinate, "constraint",
         lambda ctx, o, r, v, n: Constraint.ConstantCoordinate(r["body"], ctx.index(v, "which"), ctx.number(v, "value"),
                                                               name=n), **_ONE)
_builtin("Constraint.ConstantSpeed", Constraint.ConstantSpeed, "constraint",
         lambda ctx, o, r, v, n: Constraint.ConstantSpeed(r["body"], ctx.index(v, "which"), ctx.number(v, "speed"),
                                                          name=n), **_ONE)
_builtin("Constraint.ConstantAcceleration", Constraint.ConstantAcceleration, "constraint",
         lambda ctx, o, r, v, n: Constraint.ConstantAcceleration(r["body"], ctx.index(v, "which"),
                                                                 ctx.number(v, "acceleration"), name=n), **_ONE)

# ---------------------------------------------------------------------- built-in motions
_LEVELS = {"Acceleration": 0, "Velocity": 1, "Position": 2}


def _build_sinusoid(ctx, owner, refs, v, name):
    level = ctx.word(v, "level", tuple(_LEVELS))
    return Motion.Sinusoid(owner, getattr(Motion.Level, level), ctx.number(v, "amplitude"), ctx.number(v, "rate"),
                           ctx.number(v, "phase"), name=name)


_builtin("Motion.Steady", Motion.Steady, "motion",
         lambda ctx, o, r, v, n: Motion.Steady(o, ctx.vector(v, "u"), name=n))
_builtin("Motion.Sinusoid", Motion.Sinusoid, "motion", _build_sinusoid,
         extras=[("level", lambda m: _Word(Motion.Level(int(m._level)).name))])

#: Built-in kinds that cannot be written, and why.
_UNSUPPORTED = {
    "Force.Custom": "its implementation class is not registered with simtk.io.register_class",
    "Constraint.Custom": "its implementation class is not registered with simtk.io.register_class",
    "Motion.Custom": "its implementation class is not registered with simtk.io.register_class",
    "MobilizedBody.Custom": "its implementation class is not registered with simtk.io.register_class",
    "MobilizedBody.FunctionBased": "it is defined by Function objects, which the model file cannot hold",
    "Constraint.CoordinateCoupler": "it is defined by a Function object, which the model file cannot hold",
    "Constraint.SpeedCoupler": "it is defined by a Function object, which the model file cannot hold",
    "Constraint.PrescribedMotion": "it is defined by a Function object, which the model file cannot hold",
}


# ====================================================================== values and writing
class _Word(str):
    """A bare word written without quotes (an enumeration value such as ``Position``)."""


@dataclass
class _Ref:
    path: str
    line: int = 0


def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _num(x: float) -> str:
    x = float(x)
    if not math.isfinite(x):
        raise ModelFileError(f"cannot write the non-finite number {x!r}")
    return repr(x)


def _fmt(value: Any, where: str) -> str:
    """The file text of a value."""
    if isinstance(value, _Word):
        return str(value)
    if isinstance(value, _Ref):
        return "@" + _quote(value.path)
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _num(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, Transform):
        return f"Transform [ R={_fmt(value.R.matrix.ravel(), where)} p={_fmt(value.p, where)} ]"
    if isinstance(value, Rotation):
        return f"Rotation [ R={_fmt(value.matrix.ravel(), where)} ]"
    if isinstance(value, MassProperties):
        I = value.inertia
        return (f"MassProperties [ mass={_num(value.mass)} com={_fmt(value.com, where)} "
                f"inertia={_fmt(np.concatenate([I.moments, I.products]), where)} ]")
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b":
            return "[ " + " ".join("true" if b else "false" for b in value.ravel()) + " ]"
        a = np.asarray(value, dtype=float)
        if a.ndim == 0:
            return _num(float(a))
        if a.ndim == 1:
            return "[ " + " ".join(_num(x) for x in a) + " ]" if len(a) else "[ ]"
        return "[ " + " ".join(_fmt(row, where) for row in a) + " ]"
    if isinstance(value, (list, tuple)):
        return "[ " + " ".join(_fmt(x, where) for x in value) + " ]" if len(value) else "[ ]"
    raise ModelFileError(f"{where}: a value of type {type(value).__name__} cannot be written to a model file")


_MISSING_DEFAULT = inspect.signature(type(Constraint.Rod.length).__init__).parameters["default"].default


def _holder(comp, name: str):
    """The object whose class declares property ``name``: the component, or the implementation it wraps."""
    for holder in (comp, getattr(comp, "get_implementation", lambda: None)()):
        if holder is not None:
            for klass in type(holder).__mro__:
                if name in vars(klass):
                    return holder
    return comp


class _Writer:
    def __init__(self, system: MultibodySystem):
        self.system = system
        self.lines: list[str] = []
        self.depth = 0

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def spec_of(self, comp) -> _Spec:
        impl = getattr(comp, "get_implementation", None)
        cls = type(comp)
        if impl is not None and cls.__qualname__ in ("Force.Custom", "Constraint.Custom", "Motion.Custom",
                                                     "MobilizedBody.Custom"):
            spec = _BY_CLASS.get(type(impl()))
            if spec is not None:
                return spec
            raise ModelFileError(f"{comp.get_absolute_path()} ({cls.__qualname__} with a {type(impl()).__qualname__}): "
                                 f"cannot be written: {_UNSUPPORTED[cls.__qualname__]}")
        spec = _BY_CLASS.get(cls)
        if spec is None:
            why = _UNSUPPORTED.get(cls.__qualname__, "it is not a built-in kind the model file knows, nor registered")
            raise ModelFileError(f"{comp.get_absolute_path()} ({cls.__qualname__}): cannot be written: {why}")
        return spec

    def component(self, comp, children=()) -> None:
        spec = self.spec_of(comp)
        self.emit(f"{spec.name} [")
        self.depth += 1
        self.emit(f"name={_quote(comp.get_name())}")
        where = comp.get_absolute_path()
        refs, extras = spec.refs, spec.extras
        if spec.user and spec.category == "mobilizer":
            refs = (("parent", lambda m: m.get_parent_mobilized_body()),)
            extras = (("massless", lambda m: True if isinstance(m.get_body(), Body.Massless) else None),)
        for item, get in refs:
            self.emit(f"{item}={_fmt(_Ref(comp.get_relative_path_name(get(comp))), where)}")
        for item, get in extras:
            value = get(comp)
            if value is not None:
                self.emit(f"{item}={_fmt(value, where)}")
        for pname in comp.get_property_names():
            value = comp.get_property(pname)
            info = comp.get_property_info(pname)
            if info.default is not _MISSING_DEFAULT and _same(value, info.default, where):
                continue  # ArtiSynth writes only the properties that differ from their defaults
            if _is_component(value):
                value = _Ref(comp.get_relative_path_name(value))
            self.emit(f"{pname}={_fmt(value, where + ' property ' + repr(pname))}")
        if getattr(comp, "is_disabled_by_default", lambda: False)():
            self.emit("disabled=true")
        own = self.own_variables(comp)
        if own:
            self.emit("state_variables=[ " + " ".join(f"{_quote(n)} {_num(v)}" for n, v in own) + " ]")
        for child in children:
            self.component(child)
        self.depth -= 1
        self.emit("]")

    def own_variables(self, comp) -> list[tuple[str, float]]:
        """Continuous variables declared directly on a force or constraint (``add_state_variable``)."""
        if isinstance(comp, MobilizedBody):
            return []
        names = [n for n in comp.get_state_variable_names(self.default) if "/" not in n]
        return [(n, comp.get_state_variable_value(self.default, n)) for n in names]

    def write(self) -> str:
        s = self.system
        if type(s) is not MultibodySystem:
            raise ModelFileError(f"{s!r}: only a MultibodySystem can be written, not a {type(s).__qualname__}")
        if s.get_event_handlers() or s.get_event_reporters():
            raise ModelFileError(f"{s!r}: event handlers and reporters (Python code) cannot be written to a model file")
        self.default = s.realize_topology()
        self.emit("# simtk model file: MultibodySystem, matter, forces, constraints and motions")
        self.emit(f"simtk_model={FORMAT}")
        self.emit("MultibodySystem [")
        self.depth += 1
        self.emit(f"name={_quote(s.get_name())}")
        self.emit(f"time_scale={_num(s.get_default_time_scale())}")
        for i in range(s.get_num_subsystems()):
            sub = s.get_subsystem(i)
            if type(sub) is SimbodyMatterSubsystem:
                self.matter(sub)
            elif type(sub) is GeneralForceSubsystem:
                self.emit("GeneralForceSubsystem [")
                self.depth += 1
                self.emit(f"name={_quote(sub.get_name())}")
                for j in range(sub.get_num_forces()):
                    self.component(sub.get_force(j))
                self.depth -= 1
                self.emit("]")
            else:
                raise ModelFileError(f"{sub.get_absolute_path()} ({type(sub).__qualname__}): only the matter "
                                     "subsystem and GeneralForceSubsystems can be written")
        self.emit("# the default value of every continuous variable, by path")
        names = s.get_state_variable_names(self.default)
        values = s.get_state_variable_values(self.default)
        self.emit("defaults=[")
        for n, v in zip(names, values):
            self.emit(f"  {_quote(n)} {_num(v)}")
        self.emit("]")
        self.depth -= 1
        self.emit("]")
        return "\n".join(self.lines) + "\n"

    def matter(self, matter) -> None:
        self.emit("SimbodyMatterSubsystem [")
        self.depth += 1
        self.emit(f"name={_quote(matter.get_name())}")
        for i in range(1, matter.get_num_bodies()):
            body = matter.get_mobilized_body(i)
            motions = [c for c in body.get_child_components() if isinstance(c, Motion)]
            extra = [c for c in body.get_child_components() if not isinstance(c, Motion)]
            if extra:
                raise ModelFileError(f"{extra[0].get_absolute_path()} ({type(extra[0]).__qualname__}): cannot be written")
            self.component(body, motions)
        for i in range(matter.get_num_constraints()):
            self.component(matter.get_constraint(i))
        self.depth -= 1
        self.emit("]")


def _is_component(v) -> bool:
    return hasattr(v, "get_absolute_path") and hasattr(v, "get_relative_path_name")


def _same(a, b, where: str) -> bool:
    try:
        return _fmt(a, where) == _fmt(b, where)
    except ModelFileError:
        return False


def model_to_text(system: MultibodySystem) -> str:
    """The model file text of ``system`` (what `save_model` writes).

    Raises
    ------
    ModelFileError
        An element cannot be written; the message names it and says why.
    """
    return _Writer(system).write()


def save_model(system: MultibodySystem, path: str | os.PathLike) -> None:
    """Write ``system``'s model (its elements, properties and default variable values) to ``path``.

    Parameters
    ----------
    system : MultibodySystem
        The model to write.
    path : str or path-like
        The file to create (text, UTF-8).

    Raises
    ------
    ModelFileError
        An element cannot be written (a user class not registered with `register_class`, a
        Function-defined element, an event handler); nothing is written then.
    """
    text = model_to_text(system)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ====================================================================== tokenizer and parser
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.]*")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass
class _Tok:
    kind: str  # "[", "]", "=", "word", "number", "string", "ref", "end"
    value: Any
    line: int


def _tokenize(text: str, file: str | None) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n, line = 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in " \t\r\f\v":
            i += 1
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif ch in "[]=":
            toks.append(_Tok(ch, ch, line))
            i += 1
        elif ch == '"' or (ch == "@" and text.startswith('"', i + 1)):
            start_line = line
            j = i + (2 if ch == "@" else 1)
            out = []
            while True:
                if j >= n:
                    raise ModelFileError("unterminated string (expected a closing '\"')", file, start_line)
                c = text[j]
                if c == '"':
                    j += 1
                    break
                if c == "\n":
                    raise ModelFileError("a string runs past the end of its line (expected a closing '\"')",
                                         file, start_line)
                if c == "\\":
                    e = text[j + 1] if j + 1 < n else ""
                    simple = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}
                    if e in simple:
                        out.append(simple[e])
                        j += 2
                    elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2:j + 6]):
                        out.append(chr(int(text[j + 2:j + 6], 16)))
                        j += 6
                    else:
                        raise ModelFileError(f"unknown escape '\\{e}' in a string", file, line)
                    continue
                out.append(c)
                j += 1
            toks.append(_Tok("ref" if ch == "@" else "string", "".join(out), start_line))
            i = j
        else:
            m = _NUMBER.match(text, i)
            if m and (m.end() == n or not (text[m.end()].isalnum() or text[m.end()] in "_$.")):
                s = m.group()
                is_int = not any(c in s for c in ".eE")
                toks.append(_Tok("number", int(s) if is_int else float(s), line))
                i = m.end()
                continue
            m = _WORD.match(text, i)
            if m:
                toks.append(_Tok("word", m.group(), line))
                i = m.end()
                continue
            raise ModelFileError(f"unexpected character {ch!r} (expected a name, a number, a string, '[', ']' or '=')",
                                 file, line)
    toks.append(_Tok("end", None, line))
    return toks


@dataclass
class _Node:
    """A component or typed value: CLASS [ items ]."""

    kind: str
    line: int
    items: dict = field(default_factory=dict)  # name -> (value, line)
    children: list = field(default_factory=list)
    path: str = ""


class _Parser:
    def __init__(self, toks: list[_Tok], file: str | None):
        self.toks, self.i, self.file = toks, 0, file

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.peek()
        self.i += 1
        return t

    def fail(self, what: str, tok: _Tok):
        got = "the end of the file" if tok.kind == "end" else f"{tok.kind} {tok.value!r}"
        raise ModelFileError(f"expected {what}, got {got}", self.file, tok.line)

    def items(self, node: _Node, depth: int, closing: bool) -> None:
        if depth > _MAX_DEPTH:
            raise ModelFileError(f"nesting deeper than {_MAX_DEPTH} levels", self.file, self.peek().line)
        while True:
            t = self.peek()
            if closing and t.kind == "]":
                self.next()
                return
            if not closing and t.kind == "end":
                return
            if t.kind != "word":
                self.fail("an item (name=value or a component) or ']'" if closing else "an item", t)
            nxt = self.peek(1)
            if nxt.kind == "=":
                self.i += 2
                if t.value in node.items:
                    raise ModelFileError(f"{t.value!r} is given twice (first on line {node.items[t.value][1]})",
                                         self.file, t.line)
                node.items[t.value] = (self.value(depth + 1), t.line)
            elif nxt.kind == "[":
                self.i += 2
                child = _Node(t.value, t.line)
                self.items(child, depth + 1, True)
                node.children.append(child)
            else:
                self.fail(f"'=' or '[' after {t.value!r}", nxt)

    def value(self, depth: int):
        if depth > _MAX_DEPTH:
            raise ModelFileError(f"nesting deeper than {_MAX_DEPTH} levels", self.file, self.peek().line)
        t = self.next()
        if t.kind in ("number", "string"):
            return t.value
        if t.kind == "ref":
            return _Ref(t.value, t.line)
        if t.kind == "word":
            if t.value in ("true", "false"):
                return t.value == "true"
            if self.peek().kind == "[":
                self.next()
                node = _Node(t.value, t.line)
                self.items(node, depth + 1, True)
                return node
            return _Word(t.value)
        if t.kind == "[":
            out = []
            while self.peek().kind != "]":
                if self.peek().kind == "end":
                    self.fail("a value or ']'", self.peek())
                out.append(self.value(depth + 1))
            self.next()
            return out
        self.fail("a value", t)


# ====================================================================== building
class _Context:
    """What builders need: the file, the matter subsystem, typed access to a node's items."""

    def __init__(self, file: str | None):
        self.file = file
        self.matter = None
        self.node: _Node | None = None
        self.used: set = set()

    def error(self, message: str, line: int | None = None) -> ModelFileError:
        where = f"{self.node.kind} {self.node.path!r}: " if self.node is not None else ""
        return ModelFileError(where + message, self.file, line if line is not None else
                              (self.node.line if self.node is not None else None))

    def get(self, v: dict, name: str):
        if name not in v:
            raise self.error(f"missing {name}=")
        self.used.add(name)
        return v[name]

    def number(self, v: dict, name: str) -> float:
        x, line = self.get(v, name)
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise self.error(f"{name}: expected a number, got {_describe(x)}", line)
        if not math.isfinite(float(x)):
            raise self.error(f"{name}: expected a finite number, got {x!r}", line)
        return float(x)

    def index(self, v: dict, name: str) -> int:
        x, line = self.get(v, name)
        if isinstance(x, bool) or not isinstance(x, int) or x < 0:
            raise self.error(f"{name}: expected an integer >= 0, got {_describe(x)}", line)
        return x

    def flag(self, v: dict, name: str) -> bool:
        if name not in v:
            return False
        x, line = self.get(v, name)
        if not isinstance(x, bool):
            raise self.error(f"{name}: expected true or false, got {_describe(x)}", line)
        return x

    def word(self, v: dict, name: str, choices: tuple) -> str:
        x, line = self.get(v, name)
        if not isinstance(x, _Word) or x not in choices:
            raise self.error(f"{name}: expected one of {', '.join(choices)}, got {_describe(x)}", line)
        return str(x)

    def vector(self, v: dict, name: str, n: int | None = None) -> np.ndarray:
        x, line = self.get(v, name)
        return self.to_vector(x, name, n, line)

    def to_vector(self, x, name: str, n: int | None, line: int) -> np.ndarray:
        if isinstance(x, list) and all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in x):
            a = np.array(x, dtype=float)
            if (n is None or a.shape == (n,)) and np.isfinite(a).all():
                return a
        want = f"a list of {n} finite numbers" if n else "a list of finite numbers"
        raise self.error(f"{name}: expected {want}, got {_describe(x)}", line)

    def typed(self, v: dict, name: str, cls: type):
        x, line = self.get(v, name)
        return self.to_typed(x, name, cls, line)

    def to_typed(self, x, name: str, cls: type, line: int):
        if not isinstance(x, _Node) or x.kind != cls.__name__:
            raise self.error(f"{name}: expected {cls.__name__} [ ... ], got {_describe(x)}", line)
        allowed = {"Transform": {"R", "p"}, "Rotation": {"R"}, "MassProperties": {"mass", "com", "inertia"}}[cls.__name__]
        extra = set(x.items) - allowed
        if extra or x.children:
            raise self.error(f"{name}: {cls.__name__} takes {', '.join(sorted(allowed))} only", line)

        def part(key, n):
            if key not in x.items:
                raise self.error(f"{name}: {cls.__name__} needs {key}=", x.line)
            return self.to_vector(x.items[key][0], f"{name}.{key}", n, x.items[key][1])

        try:
            if cls is Transform:
                return Transform(Rotation.from_matrix(part("R", 9).reshape(3, 3)), part("p", 3))
            if cls is Rotation:
                return Rotation.from_matrix(part("R", 9).reshape(3, 3))
            mass = x.items.get("mass", (None, x.line))
            if isinstance(mass[0], bool) or not isinstance(mass[0], (int, float)) or not math.isfinite(mass[0]):
                raise self.error(f"{name}: MassProperties needs a finite mass=", mass[1])
            I = part("inertia", 6)
            return MassProperties(float(mass[0]), part("com", 3), Inertia(I[:3], I[3:]))
        except (TypeError, ValueError) as e:
            if isinstance(e, ModelFileError):
                raise
            raise self.error(f"{name}: {e}", line) from None

    def value(self, x, name: str, line: int):
        """A property value from the file: numbers, strings, vectors, typed values (references apart)."""
        if isinstance(x, _Node):
            cls = {"Transform": Transform, "Rotation": Rotation, "MassProperties": MassProperties}.get(x.kind)
            if cls is None:
                raise self.error(f"{name}: unknown kind of value {x.kind!r}", line)
            return self.to_typed(x, name, cls, line)
        if isinstance(x, list):
            if all(isinstance(e, bool) for e in x) and x:
                return np.array(x, dtype=bool)
            return self.to_vector(x, name, None, line)
        if isinstance(x, _Word):
            raise self.error(f"{name}: expected a value, got the bare word {str(x)!r}", line)
        if isinstance(x, float) and not math.isfinite(x):
            raise self.error(f"{name}: expected a finite number, got {x!r}", line)
        return x


def _describe(x) -> str:
    if isinstance(x, _Node):
        return f"{x.kind} [ ... ]"
    if isinstance(x, _Ref):
        return f"the reference @{_quote(x.path)}"
    if isinstance(x, _Word):
        return f"the word {str(x)!r}"
    if isinstance(x, list):
        return f"a list of {len(x)} items"
    if isinstance(x, bool):
        return "true" if x else "false"
    return repr(x)


_CATEGORY_OF_CHILD = {"SimbodyMatterSubsystem": ("mobilizer", "constraint"), "GeneralForceSubsystem": ("force",),
                      "mobilizer": ("motion",)}


class _Loader:
    def __init__(self, text: str, file: str | None):
        self.file = file
        self.text = text
        self.ctx = _Context(file)

    def err(self, msg: str, line: int | None) -> ModelFileError:
        return ModelFileError(msg, self.file, line)

    def load(self) -> MultibodySystem:
        try:
            toks = _tokenize(self.text, self.file)
            top = _Node("<file>", 1)
            _Parser(toks, self.file).items(top, 0, False)
        except RecursionError:
            raise self.err("the file nests too deeply", None) from None
        fmt = top.items.get("simtk_model")
        if fmt is None:
            raise self.err("not a simtk model file (expected simtk_model=1 first)", 1)
        if fmt[0] != FORMAT or isinstance(fmt[0], bool):
            raise self.err(f"simtk_model={_describe(fmt[0])}: this simtk reads format {FORMAT}", fmt[1])
        extra = set(top.items) - {"simtk_model"}
        if extra:
            name = sorted(extra)[0]
            raise self.err(f"unknown top-level item {name!r}", top.items[name][1])
        if len(top.children) != 1 or top.children[0].kind != "MultibodySystem":
            line = top.children[1].line if len(top.children) > 1 else (top.children[0].line if top.children else 1)
            raise self.err("expected exactly one MultibodySystem [ ... ] in the file", line)
        root = top.children[0]
        root.path = "/"
        self.nodes: dict[str, _Node] = {"/": root}
        self.assign_paths(root)
        return self.build(root)

    # ---- the first pass: the tree of paths, from the names in the file
    def name_of(self, node: _Node) -> str:
        x = node.items.get("name")
        if x is None:
            raise self.err(f"{node.kind}: missing name=", node.line)
        if not isinstance(x[0], str) or isinstance(x[0], _Word):
            raise self.err(f"{node.kind}: name must be a string, got {_describe(x[0])}", x[1])
        return x[0]

    def assign_paths(self, node: _Node) -> None:
        for child in node.children:
            name = self.name_of(child)
            path = ("" if node.path == "/" else node.path) + "/" + name
            if path in self.nodes:
                raise self.err(f"two components have the path {path!r} (the other is on line "
                               f"{self.nodes[path].line})", child.line)
            child.path = path
            self.nodes[path] = child
            self.assign_paths(child)

    def resolve(self, node: _Node, ref: Any, item: str, line: int) -> _Node:
        """The node a relative (or absolute) path from ``node`` names: ArtiSynth's post-scan step."""
        if not isinstance(ref, _Ref):
            raise self.err(f"{node.kind} {node.path!r}: {item}: expected a reference @\"path\", got {_describe(ref)}",
                           line)
        parts = [] if ref.path.startswith("/") else [p for p in node.path.split("/") if p]
        for p in ref.path.split("/"):
            if p in ("", "."):
                continue
            if p == "..":
                if not parts:
                    raise self.err(f"{node.kind} {node.path!r}: {item}: {ref.path!r} goes above the root", line)
                parts.pop()
            else:
                parts.append(p)
        target = "/" + "/".join(parts)
        if target == self.matter_path + "/ground":
            return _GROUND
        hit = self.nodes.get(target)
        if hit is None:
            raise self.err(f"{node.kind} {node.path!r}: {item}: no component at {ref.path!r} (resolved to "
                           f"{target!r})", line)
        return hit

    # ---- the second pass: build in dependency order
    def build(self, root: _Node) -> MultibodySystem:
        items = dict(root.items)
        name = self.string(root, "name")
        system = MultibodySystem(name=name)
        if "time_scale" in items:
            x, line = items["time_scale"]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and x > 0):
                raise self.err(f"time_scale: expected a positive finite number, got {_describe(x)}", line)
            system.set_default_time_scale(float(x))
        unknown = set(items) - {"name", "time_scale", "defaults"}
        if unknown:
            u = sorted(unknown)[0]
            raise self.err(f"MultibodySystem: unknown item {u!r}", items[u][1])
        matters = [c for c in root.children if c.kind == "SimbodyMatterSubsystem"]
        if len(matters) != 1:
            raise self.err("expected exactly one SimbodyMatterSubsystem [ ... ]", root.line)
        self.matter_path = matters[0].path
        built: dict[int, Any] = {}  # id(node) -> component
        elements: list[tuple[_Node, str, _Node]] = []  # (node, category, owner node)
        for sub in root.children:
            if sub.kind not in ("SimbodyMatterSubsystem", "GeneralForceSubsystem"):
                raise self.err(f"unknown subsystem kind {sub.kind!r} (expected SimbodyMatterSubsystem or "
                               "GeneralForceSubsystem)", sub.line)
            extra = set(sub.items) - {"name"}
            if extra:
                u = sorted(extra)[0]
                raise self.err(f"{sub.kind} {sub.path!r}: unknown item {u!r}", sub.items[u][1])
            sname = self.string(sub, "name")
            try:
                obj = (SimbodyMatterSubsystem(system, name=sname) if sub.kind == "SimbodyMatterSubsystem"
                       else GeneralForceSubsystem(system, name=sname))
            except (TypeError, ValueError) as e:
                raise self.err(f"{sub.kind}: {e}", sub.line) from None
            built[id(sub)] = obj
            if sub.kind == "SimbodyMatterSubsystem":
                self.ctx.matter = obj
            for child in sub.children:
                spec = self.spec(child, _CATEGORY_OF_CHILD[sub.kind])
                elements.append((child, spec, sub))
                if spec.category == "mobilizer":
                    for m in child.children:
                        elements.append((m, self.spec(m, ("motion",)), child))
                elif child.children:
                    raise self.err(f"{child.kind} {child.path!r} cannot have child components", child.children[0].line)
        built[id(_GROUND)] = self.ctx.matter.get_ground()
        # Each element waits for the components it references (and its owner): a topological order, so a
        # reference may point forward; what never becomes ready is a cycle (or a missing element).
        pending = list(elements)
        deps = {id(n): self.dependencies(n, spec, owner) for n, spec, owner in elements}
        while pending:
            progressed = False
            rest = []
            for n, spec, owner in pending:
                if all(id(d) in built for d in deps[id(n)]):
                    built[id(n)] = self.construct(n, spec, built[id(owner)], built)
                    progressed = True
                else:
                    rest.append((n, spec, owner))
            if not progressed:
                n = rest[0][0]
                chain = [d.path for d in deps[id(n)] if id(d) not in built]
                raise self.err(f"{n.kind} {n.path!r}: its references form a cycle (waiting for "
                               f"{', '.join(chain)})", n.line)
            pending = rest
        self.check_defaults(system, root)
        return system

    def string(self, node: _Node, item: str) -> str:
        return self.name_of(node) if item == "name" else node.items[item][0]

    def spec(self, node: _Node, categories: tuple) -> _Spec:
        spec = _BY_NAME.get(node.kind)
        if spec is None:
            known = ", ".join(sorted(n for n, s in _BY_NAME.items() if s.category in categories))
            raise self.err(f"unknown class {node.kind!r} here (expected one of: {known})", node.line)
        if spec.category not in categories:
            raise self.err(f"a {spec.category} ({node.kind}) cannot be placed here (expected a "
                           f"{' or '.join(categories)})", node.line)
        return spec

    def ref_items(self, node: _Node, spec: _Spec) -> list[str]:
        names = [r for r, _ in spec.refs]
        if spec.user:
            names += [k for k, (v, _) in node.items.items() if isinstance(v, _Ref)]
        return names

    def dependencies(self, node: _Node, spec: _Spec, owner: _Node) -> list[_Node]:
        out = [owner] if spec.category in ("motion", "mobilizer") and owner.kind not in (
            "SimbodyMatterSubsystem",) else []
        for item in self.ref_items(node, spec):
            if item not in node.items:
                raise self.err(f"{node.kind} {node.path!r}: missing {item}=", node.line)
            value, line = node.items[item]
            target = self.resolve(node, value, item, line)
            if target.kind in ("MultibodySystem", "SimbodyMatterSubsystem", "GeneralForceSubsystem"):
                raise self.err(f"{node.kind} {node.path!r}: {item} must refer to an element, not to the "
                               f"{target.kind} {target.path!r}", line)
            if target is node:
                raise self.err(f"{node.kind} {node.path!r}: {item} refers to the element itself", line)
            out.append(target)
        return out

    def construct(self, node: _Node, spec: _Spec, owner, built: dict):
        ctx = self.ctx
        ctx.node, ctx.used = node, {"name"}
        name = self.name_of(node)
        refs = {}
        for item in self.ref_items(node, spec):
            value, line = node.items[item]
            refs[item] = built[id(self.resolve(node, value, item, line))]
            ctx.used.add(item)
        v = node.items
        try:
            if spec.user:
                comp = self.construct_user(node, spec, owner, refs, name)
            else:
                comp = spec.build(ctx, owner, refs, v, name)
            self.apply_properties(comp, spec)
            if "disabled" in v:
                comp.set_disabled_by_default(ctx.flag(v, "disabled"))
            if "state_variables" in v:
                self.add_state_variables(comp, *v["state_variables"])
                ctx.used.add("state_variables")
        except ModelFileError:
            raise
        except Exception as e:  # a constructor's refusal of a value: the file's fault, said with its line
            raise ctx.error(f"{type(e).__name__}: {e}") from e
        unknown = [k for k in v if k not in ctx.used]
        if unknown:
            raise ctx.error(f"unknown item {unknown[0]!r} for {node.kind}", v[unknown[0]][1])
        return comp

    def construct_user(self, node, spec: _Spec, owner, refs: dict, name: str):
        ctx = self.ctx
        cls = spec.cls
        kwargs = {}
        declared = {}
        for klass in reversed(cls.__mro__):
            for k, p in vars(klass).items():
                if type(p).__name__ == "Property":
                    declared[k] = p
        for k, (x, line) in node.items.items():
            if k in declared:
                kwargs[k] = refs[k] if k in refs else ctx.value(x, k, line)
                ctx.used.add(k)
        if spec.category in ("mobilizer", "constraint"):
            kwargs["matter"] = ctx.matter
        impl = cls(**kwargs)
        if spec.category == "force":
            return Force.Custom(owner, impl, name=name)
        if spec.category == "constraint":
            return Constraint.Custom(impl, name=name)
        if spec.category == "motion":
            return Motion.Custom(owner, impl, name=name)
        body = Body.Massless() if ctx.flag(node.items, "massless") else \
            Body.Rigid(ctx.typed(node.items, "mass_properties", MassProperties))
        return MobilizedBody.Custom(refs["parent"], ctx.typed(node.items, "inboard_frame", Transform), body,
                                    ctx.typed(node.items, "outboard_frame", Transform), impl, name=name)

    def apply_properties(self, comp, spec: _Spec) -> None:
        """Set every property the file gives whose value differs from what the constructor stored."""
        ctx = self.ctx
        for pname in comp.get_property_names():
            if pname not in ctx.node.items:
                continue
            x, line = ctx.node.items[pname]
            ctx.used.add(pname)
            if isinstance(x, _Ref):
                if spec.user:
                    continue  # a reference property of a user's class: given to its constructor
                raise ctx.error(f"{pname}: expected a value, got {_describe(x)}", line)
            value = ctx.value(x, pname, line)
            where = comp.get_absolute_path()
            if _same(comp.get_property(pname), value, where):
                continue
            try:
                comp.set_property(pname, value)
            except (TypeError, ValueError) as e:
                raise ctx.error(str(e), line) from None
            if not _same(comp.get_property(pname), value, where):
                self.store_exactly(comp, pname, value, line)

    def store_exactly(self, comp, pname: str, value, line: int) -> None:
        """Keep the file's value bit for bit when the property's check changes it only by round-off.

        A unit vector that is unit to round-off is normalized again by the check, which may move its
        last bit; the file's value is the model's, so it is stored as written (checked first).
        """
        info = comp.get_property_info(pname)
        checked = np.asarray(_as_array(comp.get_property(pname)), dtype=float)
        mine = np.asarray(_as_array(value), dtype=float)
        if checked.shape != mine.shape or np.max(np.abs(checked - mine), initial=0.0) > \
                16 * np.finfo(float).eps * max(1.0, float(np.max(np.abs(mine), initial=0.0))):
            raise self.ctx.error(f"{pname}: the element changed the value {_fmt(value, pname)} to "
                                 f"{_fmt(comp.get_property(pname), pname)}", line)
        # The check accepted it (set_property above); keep the file's bits rather than the re-normalized ones.
        info.store(_holder(comp, pname), np.array(value) if isinstance(value, np.ndarray) else info.validate(value))

    def add_state_variables(self, comp, x, line) -> None:
        if not isinstance(x, list) or len(x) % 2:
            raise self.ctx.error("state_variables: expected pairs \"name\" value", line)
        for k in range(0, len(x), 2):
            n, v = x[k], x[k + 1]
            if not isinstance(n, str) or isinstance(n, _Word) or isinstance(v, bool) or \
                    not isinstance(v, (int, float)) or not math.isfinite(v):
                raise self.ctx.error(f"state_variables: expected \"name\" and a finite number, got "
                                     f"{_describe(n)} {_describe(v)}", line)
            try:
                comp.add_state_variable(n, float(v))
            except ValueError as e:
                if "declared already" not in str(e):
                    raise self.ctx.error(f"state_variables: {e}", line) from None

    def check_defaults(self, system: MultibodySystem, root: _Node) -> None:
        """The model's default variable values must be the file's: a file the elements cannot reproduce is refused."""
        self.ctx.node = None
        try:
            state = system.realize_topology()
        except Exception as e:
            raise self.err(f"the model does not realize its topology: {type(e).__name__}: {e}", root.line) from e
        try:
            system.realize(state, Stage.Instance)
        except Exception as e:
            # As for a model built in code, some mistakes show only at Instance (a Motion on a mobilizer
            # that cannot take it); the model is what the file says, so it is returned, with a warning.
            warnings.warn(ModelFileWarning(f"{self.file or '<text>'}: the model does not realize to Instance: "
                                           f"{type(e).__name__}: {e}"), stacklevel=4)
        if "defaults" not in root.items:
            return
        x, line = root.items["defaults"]
        if not isinstance(x, list) or len(x) % 2:
            raise self.err("defaults: expected pairs \"path\" value", line)
        have = dict(zip(system.get_state_variable_names(state), system.get_state_variable_values(state)))
        listed = set()
        for k in range(0, len(x), 2):
            p, v = x[k], x[k + 1]
            if not isinstance(p, str) or isinstance(p, _Word) or isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.err(f"defaults: expected \"path\" and a number, got {_describe(p)} {_describe(v)}", line)
            if p not in have:
                raise self.err(f"defaults: the model has no variable {p!r}", line)
            if _num(have[p]) != _num(v) if math.isfinite(v) else True:
                raise self.err(f"defaults: {p} is {v!r} in the file but {have[p]!r} in the model built from it "
                               "(a default its element cannot take)", line)
            listed.add(p)
        missing = [p for p in have if p not in listed]
        if missing:
            raise self.err(f"defaults: no value for {missing[0]!r}", line)


def _as_array(v):
    if isinstance(v, Transform):
        return np.concatenate([v.R.matrix.ravel(), v.p])
    if isinstance(v, Rotation):
        return v.matrix.ravel()
    return v


class _GroundNode(_Node):
    pass


_GROUND = _GroundNode("MobilizedBody.Ground", 0)


def model_from_text(text: str, file: str | None = None) -> MultibodySystem:
    """The MultibodySystem described by model file ``text`` (see `load_model`)."""
    return _Loader(text, file).load()


def load_model(path: str | os.PathLike) -> MultibodySystem:
    """Read a model file written by `save_model` (or by hand) and build its MultibodySystem.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    MultibodySystem
        A new System with the file's elements, properties and default variable values.

    Raises
    ------
    ModelFileError
        The file is malformed or describes an impossible model; the message gives the file, the
        line and what was expected.
    """
    file = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ModelFileError(f"not UTF-8 text ({e})", file) from None
    return model_from_text(text, file)
