"""The class registry of the model format: how each built-in and registered class is written and rebuilt."""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    Function,
    MassProperties,
    MobilizedBody,
    Motion,
    Rotation,
    Transform,
)

FORMAT = 1

# The format's vocabulary: bare words, numbers, references.
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.]*")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class _Word(str):
    """A bare word written without quotes (an enumeration value such as ``Position``)."""


@dataclass
class _Ref:
    path: str
    line: int = 0


_MAX_DEPTH = 64


class ModelFileWarning(UserWarning):
    """A model file was read, but the model it describes fails when realized to Instance."""


# ====================================================================== registry
@dataclass
class _Spec:
    """How one class is written and rebuilt."""

    name: str
    cls: type
    category: str  # "mobilizer", "force", "constraint", "motion", "function"
    #: (item name, getter(component) -> referenced component, or a list of them if the name is in ``many``)
    refs: tuple = ()
    #: (item name, getter(component) -> value): constructor arguments that are not properties
    extras: tuple = ()
    #: build(ctx, owner, refs, values, name) -> component
    build: Callable | None = None
    #: a user's implementation class (wrapped in the category's Custom element), or a user's Function
    user: bool = False
    #: the reference items that hold a list of references
    many: frozenset = frozenset()
    #: a built-in Function family's parameters: (item name, "number" | "vector" | "index" | "text"), in order
    params: tuple = ()
    #: the list reference items that may be left out (read as empty, not written when empty)
    optional: frozenset = frozenset()


def _declared(cls: type) -> dict:
    """The Properties ``cls`` and its bases declare, by name (a subclass's declaration wins)."""
    # Found by the declaration's class name: the io package does not import simtk's internal modules.
    out = {}
    for klass in reversed(cls.__mro__):
        for k, p in vars(klass).items():
            if type(p).__name__ == "Property":
                out[k] = p
    return out


_BY_NAME: dict[str, _Spec] = {}
_BY_CLASS: dict[type, _Spec] = {}

_NO_DEFAULT = object()


def _user_constructor(cls: type) -> inspect.Signature | None:
    """The signature of the constructor a model file rebuilds ``cls`` with, when the user wrote it
    (None when ``cls`` keeps simtk's base constructor)."""
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            if klass is object or klass.__module__.split(".")[0] == "simtk":
                return None
            try:
                return inspect.signature(klass.__init__)
            except (TypeError, ValueError):  # a constructor without a signature (a C type's)
                return None
    return None


def _rebuild_default(cls: type, name: str, prop: Any) -> Any:
    """The value property ``name`` gets when a file omits it: the constructor's default (what
    ``cls(**properties)`` uses), or the Property's own default when simtk's base constructor is kept."""
    sig = _user_constructor(cls)
    if sig is None or name not in sig.parameters:
        return prop.default
    default = sig.parameters[name].default
    return _NO_DEFAULT if default is inspect.Parameter.empty else default


def _check_parameters(cls: type, category: str) -> None:
    """Refuse a class whose constructor parameters and declared Properties do not match one to one:
    a model file keeps the Properties only and rebuilds the class as ``cls(**properties)``."""
    sig = _user_constructor(cls)
    if sig is None:
        return
    declared = _declared(cls)
    params = list(sig.parameters.values())[1:]  # after self
    kinds = inspect.Parameter
    for p in params:
        if p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD):
            continue
        if p.name == "matter" and category in ("mobilizer", "constraint"):
            continue  # given by the loader
        if p.name not in declared or p.kind is kinds.POSITIONAL_ONLY:
            example = "..." if p.default is kinds.empty else repr(p.default)
            raise TypeError(
                f"register_class: {cls.__qualname__}'s constructor parameter {p.name!r} is not a declared Property, "
                "so a model file could not keep it (the class is saved as its Properties and rebuilt as "
                f"cls(**properties)): declare it in the class body, {p.name} = Property({example}, "
                f"stage=Stage.Instance), and set it in __init__ with self.{p.name} = {p.name}")
    if not any(p.kind is kinds.VAR_KEYWORD for p in params):
        names = {p.name for p in params}
        for name in declared:
            if name not in names:
                raise TypeError(
                    f"register_class: {cls.__qualname__} declares property {name!r}, which its constructor does not "
                    f"take; a model file rebuilds the class as cls(**properties): add a parameter {name}=... to "
                    "__init__")


def _undeclared_attributes(obj: Any) -> list[str]:
    """The public instance attributes of a user's object that are not declared Properties (a model
    file cannot keep them)."""
    declared = _declared(type(obj))
    return [k for k in getattr(obj, "__dict__", {}) if not k.startswith("_") and k not in declared]


def register_class(cls: type, name: str | None = None) -> str:
    """Register a user's class so that models using it save and load by ``name``.

    Parameters
    ----------
    cls : type
        A subclass of ``Force.Custom.Implementation``, ``Constraint.Custom.Implementation``,
        ``MobilizedBody.Custom.Implementation`` or ``Motion.Custom.Implementation`` whose parameters
        are declared Properties and whose constructor accepts them as keyword arguments (every
        constructor parameter must be a declared Property, or a model file would lose it: refused)
        (mobilizer and constraint implementations also get ``matter=``); or a subclass of
        ``Function`` (for the elements a Function defines: ``MobilizedBody.FunctionBased``,
        ``Constraint.CoordinateCoupler``, ...), written as its declared Properties and rebuilt as
        ``cls(**properties)``.
    name : str, optional
        The name written in files (default: the class's ``__qualname__``). Must be a word of
        letters, digits, ``_`` and ``.``, not starting with a digit, and not a built-in's name.

    Returns
    -------
    str
        The registered name.

    Raises
    ------
    TypeError
        ``cls`` is not such a subclass, or its constructor takes a parameter that is not a declared
        Property (or does not take one of its Properties); the message names the parameter and
        how to declare it. A public attribute that is not a declared Property is refused by
        ``save_model``, naming the element.
    """
    bases = {Force.Custom.Implementation: "force", Constraint.Custom.Implementation: "constraint",
             MobilizedBody.Custom.Implementation: "mobilizer", Motion.Custom.Implementation: "motion",
             Function: "function"}
    category = next((c for b, c in bases.items() if isinstance(cls, type) and issubclass(cls, b)), None)
    if category is None:
        raise TypeError(f"register_class: {cls!r} is not a Force/Constraint/MobilizedBody/Motion "
                        "Custom.Implementation subclass nor a Function subclass")
    old_spec = _BY_CLASS.get(cls)
    if old_spec is not None and not old_spec.user:
        raise ValueError(f"register_class: {cls.__qualname__} is built in; it is saved as {old_spec.name}")
    _check_parameters(cls, category)
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


def _builtin(name: str, cls: type, category: str, build: Callable | None, refs=(), extras=(), many=(),
             params=(), optional=()) -> None:
    spec = _Spec(name, cls, category, tuple(refs), tuple(extras), build, many=frozenset(many), params=tuple(params),
                 optional=frozenset(optional))
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
_builtin("Force.MobilityCoulombFriction", Force.MobilityCoulombFriction, "force",
         lambda ctx, o, r, v, n: Force.MobilityCoulombFriction(o, r["body"], ctx.index(v, "which"),
                                                               ctx.number(v, "friction"),
                                                               ctx.number(v, "transition_velocity"), name=n), **_MOB)
_builtin("Force.MobilityConstantForce", Force.MobilityConstantForce, "force",
         lambda ctx, o, r, v, n: Force.MobilityConstantForce(o, r["body"], ctx.index(v, "which"),
                                                             ctx.number(v, "force"), name=n), **_MOB)
_builtin("Force.MobilityLinearStop", Force.MobilityLinearStop, "force",
         lambda ctx, o, r, v, n: Force.MobilityLinearStop(o, r["body"], ctx.index(v, "which"),
                                                          ctx.number(v, "stiffness"), ctx.number(v, "dissipation"),
                                                          ctx.number(v, "q_low"), ctx.number(v, "q_high"), name=n),
         **_MOB)
_builtin("Force.CoordinateLimit", Force.CoordinateLimit, "force",
         lambda ctx, o, r, v, n: Force.CoordinateLimit(o, r["body"], ctx.index(v, "which"),
                                                       *(ctx.number(v, p) for p in ("upper_limit", "upper_stiffness",
                                                                                    "lower_limit", "lower_stiffness",
                                                                                    "damping", "transition")), name=n),
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

# ---------------------------------------------------------------------- built-in functions
# A Function is a value, not a component: written as a typed item, Function.Linear [ coefficients=[ ... ] ],
# with exactly the arguments of its family's constructor (its parameters()), and rebuilt by calling it.
_FUNCTION_PARAMS = {
    "Constant": (("value", "number"), ("argument_size", "index")),
    "Linear": (("coefficients", "vector"),),
    "Polynomial": (("coefficients", "vector"),),
    "Step": (("y0", "number"), ("y1", "number"), ("x0", "number"), ("x1", "number")),
    "Sinusoid": (("amplitude", "number"), ("frequency", "number"), ("phase", "number")),
    "Spline": (("x", "vector"), ("y", "vector"), ("degree", "index")),
}
for _k, _p in _FUNCTION_PARAMS.items():
    _builtin(f"Function.{_k}", getattr(Function, _k), "function", None, params=_p)


def _register_osim_functions() -> None:
    # OpenSim's functions simtk.io.load_osim makes that Simbody has no family for: rebuilt, like the
    # families, by calling the class with its parameters() ("text" items are strings)
    from ._osim_functions import ExpressionFunction, GCVSplineFunction, MultivariatePolynomialFunction
    _builtin("OpenSim.GCVSpline", GCVSplineFunction, "function", None,
             params=(("x", "vector"), ("y", "vector"), ("degree", "index"), ("error_variance", "number")))
    _builtin("OpenSim.MultivariatePolynomial", MultivariatePolynomialFunction, "function", None,
             params=(("coefficients", "vector"), ("dimension", "index"), ("order", "index")))
    _builtin("OpenSim.Expression", ExpressionFunction, "function", None,
             params=(("expression", "text"), ("variables", "text")))


_register_osim_functions()


# ---------------------------------------------------------------------- elements defined by Functions
def _function_based(ctx, owner, refs, v, name):
    n = ctx.index(v, "n_mobilities")
    coords = ctx.index_lists(v, "coord_indices", 6)
    functions = ctx.functions(v, "functions", [len(c) for c in coords])
    axes = ctx.matrix(v, "axes", 6, 3) if "axes" in v else None
    body = Body.Massless() if ctx.flag(v, "massless") else Body.Rigid(ctx.typed(v, "mass_properties", MassProperties))
    # (a Custom mobilizer, so never reversed: its file has no reversed= item)
    hdot = ctx.word(v, "hdot", ("exact", "simbody")) if "hdot" in v else "exact"
    return MobilizedBody.FunctionBased(refs["parent"], ctx.typed(v, "inboard_frame", Transform), body,
                                       ctx.typed(v, "outboard_frame", Transform), n, functions, coords, axes=axes,
                                       hdot=hdot, name=name)


_builtin("MobilizedBody.FunctionBased", MobilizedBody.FunctionBased, "mobilizer", _function_based,
         refs=[("parent", lambda m: m.get_parent_mobilized_body())],
         extras=[("n_mobilities", lambda m: m.get_n_mobilities()),
                 ("coord_indices", lambda m: [[int(i) for i in c] for c in m.get_coord_indices()]),
                 ("functions", lambda m: m.get_functions()),
                 # the axes as given (None: the default), so that the rebuilt element normalizes the same bits
                 ("axes", lambda m: m.get_given_axes()),
                 ("hdot", lambda m: None if m.get_hdot() == "exact" else _Word(m.get_hdot())),
                 ("massless", lambda m: True if isinstance(m.get_body(), Body.Massless) else None)])


def _coordinate_coupler(ctx, owner, refs, v, name):
    bodies = refs["coord_bodies"]
    return Constraint.CoordinateCoupler(ctx.matter, ctx.function(v, "function", len(bodies)), bodies,
                                        ctx.indices(v, "coord_indices", len(bodies)), name=name)


def _speed_coupler(ctx, owner, refs, v, name):
    ub, qb = refs["speed_bodies"], refs["coord_bodies"]
    return Constraint.SpeedCoupler(ctx.matter, ctx.function(v, "function", len(ub) + len(qb)), ub,
                                   ctx.indices(v, "speed_indices", len(ub)), qb,
                                   ctx.indices(v, "coord_indices", len(qb)), name=name)


_builtin("Constraint.CoordinateCoupler", Constraint.CoordinateCoupler, "constraint", _coordinate_coupler,
         refs=[("coord_bodies", lambda c: c.get_coord_bodies())], many=["coord_bodies"],
         extras=[("coord_indices", lambda c: c.get_coord_indices()), ("function", lambda c: c.get_function())])
_builtin("Constraint.SpeedCoupler", Constraint.SpeedCoupler, "constraint", _speed_coupler,
         refs=[("speed_bodies", lambda c: c.get_speed_bodies()), ("coord_bodies", lambda c: c.get_coord_bodies())],
         many=["speed_bodies", "coord_bodies"],
         extras=[("speed_indices", lambda c: c.get_speed_indices()), ("coord_indices", lambda c: c.get_coord_indices()),
                 ("function", lambda c: c.get_function())])
_builtin("Constraint.PrescribedMotion", Constraint.PrescribedMotion, "constraint",
         lambda ctx, o, r, v, n: Constraint.PrescribedMotion(ctx.matter, ctx.function(v, "function", 1), r["body"],
                                                             ctx.index(v, "coord_index"), name=n),
         refs=[("body", lambda c: c.get_body())],
         extras=[("coord_index", lambda c: c.get_coord_index()), ("function", lambda c: c.get_function())])

#: Built-in kinds that cannot be written, and why.
_UNSUPPORTED = {
    "Force.Custom": "its implementation class is not registered with simtk.io.register_class",
    "Constraint.Custom": "its implementation class is not registered with simtk.io.register_class",
    "Motion.Custom": "its implementation class is not registered with simtk.io.register_class",
    "MobilizedBody.Custom": "its implementation class is not registered with simtk.io.register_class",
    "Function": "its class is not registered with simtk.io.register_class",
}
