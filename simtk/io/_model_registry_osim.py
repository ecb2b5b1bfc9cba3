"""Model-format kinds of the elements the OpenSim reader describes: OpenSim's functions, its
expression-based forces (``Force.Custom`` implementations), path forces (``Force.PathSpring``,
``Force.PathActuator`` with their GeometryPath's points as items), contact
(``Force.HuntCrossley`` with its surfaces, ``Force.SmoothSphereHalfSpace``) and the actuators' force
(``Force.Actuators`` with its actuators and control functions).

A force holding a list of parts (surfaces, actuators) writes them as parallel lists, one entry per part,
so that the parts' bodies are references the builder resolves (and orders the build by) like any other.
"""
from __future__ import annotations

import math

import numpy as np

from simtk import (
    ConditionalPathPoint,
    Force,
    Function,
    GeometryPath,
    MovingPathPoint,
    PathPoint,
    PathWrap,
    Rotation,
    Transform,
    WrapCylinder,
    WrapEllipsoid,
    WrapSphere,
    WrapTorus,
)
from simtk.multibody.contact.geometry import ContactGeometry

from ._model_registry import _BY_CLASS, _BY_NAME, _builtin, _Spec, register_class
from ._osim_expression_forces import KINDS as _EXPRESSION_FORCES
from ._osim_functions import SimmSplineFunction, _CouplerFunction, _PiecewiseConstant, _Scaled, _Shifted
from ._osim_paths import DEGROOTE_PROPERTIES, FLAGS, MILLARD_PROPERTIES, THELEN_PROPERTIES

__all__: list[str] = []

# ---------------------------------------------------------------------- OpenSim's functions
# Written as their declared Properties and rebuilt as cls(**properties), as a user's registered Function.
for _name, _cls in (("OpenSim.SimmSpline", SimmSplineFunction), ("OpenSim.Multiplier", _Scaled),
                    ("OpenSim.CoordinateCoupler", _CouplerFunction), ("OpenSim.SineOffset", _Shifted),
                    ("OpenSim.PiecewiseConstant", _PiecewiseConstant)):
    _spec = _Spec(_name, _cls, "function", user=True)
    _BY_NAME[_name] = _spec
    _BY_CLASS[_cls] = _spec

# OpenSim's expression-based forces: Force.Custom implementations with declared Properties
for _name, _cls in _EXPRESSION_FORCES.values():
    register_class(_cls, _name)


# ---------------------------------------------------------------------- items holding one entry per part
def _list(ctx, v: dict, name: str, n: int, check, want: str) -> list:
    """Item ``name``: a list of ``n`` entries, each passed through ``check`` (None: refused)."""
    x, line = ctx.get(v, name)
    if not isinstance(x, list) or len(x) != n:
        raise ctx.error(f"{name}: expected a list of {n} {want}", line)
    out = []
    for k, e in enumerate(x):
        got = check(e)
        if got is None:
            raise ctx.error(f"{name}[{k}]: expected {want}", line)
        out.append(got)
    return out


def _string(e):
    return e if isinstance(e, str) else None


def _bool(e):
    return e if isinstance(e, bool) else None


def _finite(e):
    return float(e) if isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e) else None


def _int(e):
    return e if isinstance(e, int) and not isinstance(e, bool) else None


def _numbers(n: int):
    def check(e):
        if isinstance(e, list) and len(e) == n and all(_finite(x) is not None for x in e):
            return np.array(e, dtype=float)
        return None
    return check


def _optional_list(ctx, v: dict, name: str, n: int, check, want: str, default) -> list:
    return _list(ctx, v, name, n, check, want) if name in v else [default] * n


# ---------------------------------------------------------------------- contact
_SHAPES = {"HalfSpace": lambda p: ContactGeometry.HalfSpace(), "Sphere": lambda p: ContactGeometry.Sphere(p[0]),
           "Capsule": lambda p: ContactGeometry.Capsule(p[0], p[1]), "Brick": lambda p: ContactGeometry.Brick(p),
           "Ellipsoid": lambda p: ContactGeometry.Ellipsoid(p),
           "Cylinder": lambda p: ContactGeometry.Cylinder(p[0], p[1]),
           "ConvexHull": None}  # (made from its surface_vertices)
_LAW = ("stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction")


def _hunt_crossley(ctx, owner, refs, v, name):
    bodies = refs["surface_bodies"]
    n = len(bodies)
    shapes = _list(ctx, v, "surface_shapes", n, lambda e: e if isinstance(e, str) and e in _SHAPES else None,
                   f"shape names ({', '.join(_SHAPES)})")
    sizes = _list(ctx, v, "surface_sizes", n, _numbers(3), "lists of 3 finite numbers (the shape's parameters)")
    line = ctx.get(v, "surface_frames")[1]
    frames = [ctx.to_typed(e, f"surface_frames[{k}]", Transform, line)
              for k, e in enumerate(_list(ctx, v, "surface_frames", n, lambda e: e, "Transforms"))]
    laws = _list(ctx, v, "surface_laws", n, _numbers(5), "lists of 5 finite numbers (" + ", ".join(_LAW) + ")")
    cliques = _optional_list(ctx, v, "surface_cliques", n, _int, "integers >= -1", -1)
    verts = _optional_list(ctx, v, "surface_vertices", n, _flat_points, "lists of 3 m finite numbers", [])
    excluded = []
    if "excluded_pairs" in v:
        x = ctx.get(v, "excluded_pairs")[0]
        excluded = _list(ctx, v, "excluded_pairs", len(x) if isinstance(x, list) else -1, _pair(n),
                         f"pairs of different surface indices below {n}")
    force = Force.HuntCrossley(owner, transition_velocity=ctx.number(v, "transition_velocity"), name=name)
    for k in range(n):
        if shapes[k] == "ConvexHull":
            try:
                geometry = ContactGeometry.ConvexHull(np.reshape(verts[k], (-1, 3)))
            except ValueError as exc:
                raise ctx.error(f"surface_vertices[{k}]: {exc}", ctx.get(v, "surface_vertices")[1]) from None
        else:
            geometry = _SHAPES[shapes[k]](sizes[k])
        force.add_surface(bodies[k], geometry, frames[k], clique=cliques[k], **dict(zip(_LAW, laws[k].tolist())))
    for i, j in excluded:
        force.exclude_pair(i, j)
    return force


def _flat_points(e):
    if isinstance(e, list) and len(e) % 3 == 0 and all(_finite(x) is not None for x in e):
        return [float(x) for x in e]
    return None


def _pair(n: int):
    def check(e):
        if (isinstance(e, list) and len(e) == 2 and all(_int(x) is not None and 0 <= x < n for x in e)
                and e[0] != e[1]):
            return (e[0], e[1])
        return None
    return check


def _surfaces(f, attr):
    return [getattr(s, attr) for s in f._surfaces]


_builtin("Force.HuntCrossley", Force.HuntCrossley, "force", _hunt_crossley,
         refs=[("surface_bodies", lambda f: _surfaces(f, "mobod"))], many=["surface_bodies"],
         extras=[("surface_shapes", lambda f: [s.geometry.kind for s in f._surfaces]),
                 ("surface_sizes", lambda f: [np.array(s.geometry.params, dtype=float) for s in f._surfaces]),
                 ("surface_frames", lambda f: _surfaces(f, "X_BS")),
                 ("surface_laws", lambda f: [np.array(s.law, dtype=float) for s in f._surfaces]),
                 ("surface_cliques", lambda f: [s.clique for s in f._surfaces]
                  if any(s.clique != -1 for s in f._surfaces) else None),
                 ("surface_vertices", lambda f: [s.geometry.vertices.ravel().tolist() if s.geometry.kind == "ConvexHull"
                                                 else [] for s in f._surfaces]
                  if any(s.geometry.kind == "ConvexHull" for s in f._surfaces) else None),
                 ("excluded_pairs", lambda f: [list(p) for p in f.get_excluded_pairs()] or None)])


def _smooth(ctx, owner, refs, v, name):
    # the contact parameters are properties: set by the builder after construction
    return Force.SmoothSphereHalfSpace(owner, refs["sphere_body"], ctx.vector(v, "sphere_location", 3),
                                       ctx.number(v, "radius"), refs["half_space_body"],
                                       ctx.typed(v, "half_space_frame", Transform), name=name)


_builtin("Force.SmoothSphereHalfSpace", Force.SmoothSphereHalfSpace, "force", _smooth,
         refs=[("sphere_body", lambda f: f.get_sphere_body()), ("half_space_body", lambda f: f.get_half_space_body())],
         extras=[("half_space_frame", lambda f: f.get_half_space_frame())])


# ---------------------------------------------------------------------- actuators
_KINDS = ("coordinate", "torque", "point")


def _actuators(ctx, owner, refs, v, name):
    bodies = refs["bodies"]
    n = len(bodies)
    names = _list(ctx, v, "names", n, _string, "actuator names")
    kinds = _list(ctx, v, "kinds", n, lambda e: e if isinstance(e, str) and e in _KINDS else None,
                  f"actuator kinds ({', '.join(_KINDS)})")
    forces = _list(ctx, v, "optimal_forces", n, _finite, "finite numbers")
    enabled = _optional_list(ctx, v, "enabled", n, _bool, "true or false", True)
    which = _optional_list(ctx, v, "which_u", n, lambda e: e if _int(e) is not None and e >= 0 else None,
                           "integers >= 0", 0)
    second = refs.get("second_bodies", [])
    has_second = _optional_list(ctx, v, "has_second_body", n, _bool, "true or false", False)
    if "second_bodies" in v and len(second) != n:
        raise ctx.error(f"second_bodies: expected a list of {n} references", v["second_bodies"][1])
    vectors = _optional_list(ctx, v, "vectors", n, _numbers(3), "lists of 3 finite numbers", np.zeros(3))
    frames = _optional_list(ctx, v, "R_BA", n, _numbers(9), "lists of 9 finite numbers (a rotation matrix)",
                            np.eye(3).ravel())
    is_global = _optional_list(ctx, v, "is_global", n, _bool, "true or false", True)
    points = _optional_list(ctx, v, "points", n, _numbers(3), "lists of 3 finite numbers", np.zeros(3))
    point_global = _optional_list(ctx, v, "point_is_global", n, _bool, "true or false", False)
    act = Force.Actuators(owner, ctx.matter, name=name)
    for k in range(n):
        if kinds[k] == "coordinate":
            act.add_coordinate_actuator(names[k], bodies[k], which[k], forces[k], enabled=enabled[k])
        elif kinds[k] == "torque":
            act.add_torque_actuator(names[k], bodies[k], vectors[k], forces[k],
                                    body_b=second[k] if has_second[k] else None, R_BA=frames[k].reshape(3, 3),
                                    torque_is_global=is_global[k], enabled=enabled[k])
        else:
            act.add_point_actuator(names[k], bodies[k], vectors[k], points[k], forces[k],
                                   force_is_global=is_global[k], point_is_global=point_global[k],
                                   R_BA=frames[k].reshape(3, 3), enabled=enabled[k])
    if "control_functions" in v:
        x, line = ctx.get(v, "control_functions")
        targets = _list(ctx, v, "control_actuators", len(x) if isinstance(x, list) else 0, _string,
                        "actuator names")
        functions = ctx.functions(v, "control_functions", [1] * len(targets))
        for target, f in zip(targets, functions):
            act.add_control_function(target, f)
    return act


def _parts(f, attr):
    return [getattr(a, attr) for a in f._actuators]


def _second_bodies(f):
    ground = f._matter_subsystem.get_ground()
    return [a.mobod_b if a.mobod_b is not None else ground for a in f._actuators]


_builtin("Force.Actuators", Force.Actuators, "force", _actuators,
         refs=[("bodies", lambda f: _parts(f, "mobod")), ("second_bodies", _second_bodies)],
         many=["bodies", "second_bodies"],
         extras=[("names", lambda f: _parts(f, "name")), ("kinds", lambda f: _parts(f, "type")),
                 ("optimal_forces", lambda f: [float(x) for x in _parts(f, "optimal_force")]),
                 ("enabled", lambda f: [bool(x) for x in _parts(f, "enabled")]),
                 ("which_u", lambda f: [int(x) for x in _parts(f, "which_u")]),
                 ("has_second_body", lambda f: [a.mobod_b is not None for a in f._actuators]),
                 ("vectors", lambda f: _parts(f, "vector")),
                 ("R_BA", lambda f: [np.asarray(R, dtype=float).ravel() for R in _parts(f, "R_BA")]),
                 ("is_global", lambda f: [bool(x) for x in _parts(f, "is_global")]),
                 ("points", lambda f: _parts(f, "point")),
                 ("point_is_global", lambda f: [bool(x) for x in _parts(f, "point_is_global")]),
                 ("control_actuators", lambda f: [a.name for a in f._actuators for _ in a.functions] or None),
                 ("control_functions", lambda f: [g for a in f._actuators for g in a.functions] or None)])


# ---------------------------------------------------------------------- geometry paths
_POINT_KINDS = ("fixed", "conditional", "moving")


def _path(ctx, refs, v, where: str):
    """The GeometryPath of a path force's items: one entry per point in each point_ list."""
    bodies, coords = refs["point_bodies"], refs["point_coordinate_bodies"]
    n = len(bodies)
    if len(coords) != n:
        raise ctx.error(f"point_coordinate_bodies: expected a list of {n} references", v["point_coordinate_bodies"][1])
    kinds = _list(ctx, v, "point_kinds", n, lambda e: e if isinstance(e, str) and e in _POINT_KINDS else None,
                  f"point kinds ({', '.join(_POINT_KINDS)})")
    locations = _list(ctx, v, "point_locations", n, _numbers(3), "lists of 3 finite numbers")
    which = _list(ctx, v, "point_coordinate_indices", n, lambda e: e if _int(e) is not None and e >= 0 else None,
                  "integers >= 0")
    ranges = _list(ctx, v, "point_ranges", n, _numbers(2), "lists of 2 finite numbers")
    clamped = _list(ctx, v, "point_clamped", n, _bool, "true or false")
    moving = sum(k == "moving" for k in kinds)
    functions = ctx.functions(v, "moving_functions", [1] * 3 * moving) if moving else []
    points: list = []
    m = 0
    for k in range(n):
        if kinds[k] == "fixed":
            points.append(PathPoint(bodies[k], locations[k]))
        elif kinds[k] == "conditional":
            points.append(ConditionalPathPoint(bodies[k], locations[k], (coords[k], which[k]), float(ranges[k][0]),
                                               float(ranges[k][1])))
        else:
            fx, fy, fz = functions[3 * m:3 * m + 3]
            m += 1
            rng = (float(ranges[k][0]), float(ranges[k][1])) if clamped[k] else None
            points.append(MovingPathPoint(bodies[k], fx, fy, fz, coordinate=(coords[k], which[k]),
                                          coordinate_range=rng))
    label = where
    if "path_name" in v:
        label, line = ctx.get(v, "path_name")
        if not isinstance(label, str):
            raise ctx.error("path_name: expected a string", line)
    return GeometryPath(ctx.matter, points, name=label, wraps=_wraps(ctx, refs, v))


_WRAP_KINDS = {"cylinder": WrapCylinder, "sphere": WrapSphere, "ellipsoid": WrapEllipsoid, "torus": WrapTorus}


def _str(e):
    return e if isinstance(e, str) else None


def _wraps(ctx, refs, v) -> list:
    """The PathWraps of a path force's wrap_ items (none when they are left out)."""
    bodies = refs.get("wrap_bodies") or []
    n = len(bodies)
    if not n:
        return []
    kinds = _list(ctx, v, "wrap_kinds", n, lambda e: e if e in _WRAP_KINDS else None,
                  f"wrap kinds ({', '.join(_WRAP_KINDS)})")
    names = _list(ctx, v, "wrap_names", n, _str, "strings")
    frames = _list(ctx, v, "wrap_frames", n, _numbers(12), "lists of 12 finite numbers (R_BW by rows, p_BW)")
    dims = _list(ctx, v, "wrap_dims", n, _numbers(3), "lists of 3 finite numbers")
    quadrants = _list(ctx, v, "wrap_quadrants", n, _str, "strings")
    ranges = _list(ctx, v, "wrap_ranges", n, _numbers(2), "lists of 2 point indices")
    methods = _list(ctx, v, "wrap_methods", n, _str, "strings")
    out = []
    for k in range(n):
        try:
            X = Transform(Rotation.from_matrix(frames[k][:9].reshape(3, 3)), frames[k][9:])
            if kinds[k] == "cylinder":
                obj = WrapCylinder(bodies[k], X, dims[k][0], dims[k][1], quadrants[k], name=names[k])
            elif kinds[k] == "ellipsoid":
                obj = WrapEllipsoid(bodies[k], X, dims[k], quadrants[k], name=names[k])
            elif kinds[k] == "torus":
                obj = WrapTorus(bodies[k], X, dims[k][0], dims[k][1], quadrants[k], name=names[k])
            else:
                obj = WrapSphere(bodies[k], X, dims[k][0], quadrants[k], name=names[k])
        except (TypeError, ValueError) as why:
            raise ctx.error(f"wrap {k}: {why}", v["wrap_kinds"][1]) from None
        out.append(PathWrap(obj, (int(ranges[k][0]), int(ranges[k][1])), methods[k]))
    return out


def _path_items(f) -> dict:
    """save_model's items of a path force's GeometryPath (the inverse of `_path`)."""
    path = f.get_geometry_path()
    ground = path._matter.get_ground()
    out: dict = {k: [] for k in ("kinds", "locations", "coordinate_bodies", "coordinate_indices", "ranges",
                                 "clamped", "functions")}
    for p in path.points:
        moving = isinstance(p, MovingPathPoint)
        conditional = isinstance(p, ConditionalPathPoint)
        out["kinds"].append("moving" if moving else "conditional" if conditional else "fixed")
        out["locations"].append(np.zeros(3) if moving else np.asarray(p.location, dtype=float))
        c = p.coordinate if (moving or conditional) else None
        out["coordinate_bodies"].append(ground if c is None else c[0])
        out["coordinate_indices"].append(0 if c is None else int(c[1]))
        rng = (p.lo, p.hi) if conditional else (p.coordinate_range if moving else None)
        out["ranges"].append(np.array([0.0, 0.0] if rng is None else rng, dtype=float))
        out["clamped"].append(rng is not None)
        if moving:
            out["functions"] += [g if isinstance(g, Function) else Function.Constant(float(g), 1)
                                 for g in (p.x, p.y, p.z)]
    ws = [(pw, pw._resolved(len(path.points), "")) for pw in path.wraps]
    out["wrap_kinds"] = [pw.wrap._type.partition("_")[2] for pw, _ in ws] or None
    out["wrap_names"] = [pw.wrap.name for pw, _ in ws] or None
    out["wrap_frames"] = [np.concatenate([pw.wrap.X_BW.R.matrix.ravel(), pw.wrap.X_BW.p]) for pw, _ in ws] or None
    out["wrap_dims"] = [np.array(pw.wrap._dims(), dtype=float) for pw, _ in ws] or None
    out["wrap_quadrants"] = [pw.wrap.quadrant for pw, _ in ws] or None
    out["wrap_ranges"] = [np.array(r, dtype=float) for _, r in ws] or None
    out["wrap_methods"] = [pw.method for pw, _ in ws] or None
    return out


_PATH_REFS = [("point_bodies", lambda f: [p.body for p in f.get_geometry_path().points]),
              ("point_coordinate_bodies", lambda f: _path_items(f)["coordinate_bodies"]),
              ("wrap_bodies", lambda f: [pw.wrap.body for pw in f.get_geometry_path().wraps])]
_PATH_EXTRAS = [("path_name", lambda f: f.get_geometry_path().name)] + [
    (f"point_{k}", (lambda k: lambda f: _path_items(f)[k])(k))
    for k in ("kinds", "locations", "coordinate_indices", "ranges", "clamped")] + [
    ("moving_functions", lambda f: _path_items(f)["functions"] or None)] + [
    (f"wrap_{k}", (lambda k: lambda f: _path_items(f)[f"wrap_{k}"])(k))
    for k in ("kinds", "names", "frames", "dims", "quadrants", "ranges", "methods")]


def _path_spring(ctx, owner, refs, v, name):
    return Force.PathSpring(owner, _path(ctx, refs, v, name), ctx.number(v, "stiffness"),
                            ctx.number(v, "resting_length"), ctx.number(v, "dissipation"), name=name)


def _path_actuator(ctx, owner, refs, v, name):
    control = ctx.number(v, "control") if "control" in v else 0.0
    return Force.PathActuator(owner, _path(ctx, refs, v, name), ctx.number(v, "optimal_force"), control, name=name)


def _thelen(ctx, owner, refs, v, name):
    props = {k: ctx.number(v, k) for k in THELEN_PROPERTIES if k in v}
    raw = v.get("excitation_functions", ([], None))[0]
    nf = len(raw) if isinstance(raw, list) else 1
    functions = ctx.functions(v, "excitation_functions", [1] * nf) if "excitation_functions" in v else None
    return Force.Thelen2003Muscle(owner, _path(ctx, refs, v, name), name=name,
                                  default_activation=ctx.number(v, "default_activation"),
                                  default_fiber_length=ctx.number(v, "default_fiber_length"),
                                  excitation=ctx.number(v, "excitation") if "excitation" in v else 0.0,
                                  excitation_functions=list(functions) if functions else (), **props)


_builtin("Force.PathSpring", Force.PathSpring, "force", _path_spring, refs=_PATH_REFS,
         many=["point_bodies", "point_coordinate_bodies", "wrap_bodies"], optional=["wrap_bodies"],
         extras=_PATH_EXTRAS + [("stiffness", lambda f: f._k), ("resting_length", lambda f: f._L0),
                                ("dissipation", lambda f: f._c)])
_builtin("Force.PathActuator", Force.PathActuator, "force", _path_actuator, refs=_PATH_REFS,
         many=["point_bodies", "point_coordinate_bodies", "wrap_bodies"], optional=["wrap_bodies"],
         extras=_PATH_EXTRAS + [("optimal_force", lambda f: f.get_optimal_force()),
                                ("control", lambda f: f._default_control or None)])
_builtin("Force.Thelen2003Muscle", Force.Thelen2003Muscle, "force", _thelen, refs=_PATH_REFS,
         many=["point_bodies", "point_coordinate_bodies", "wrap_bodies"], optional=["wrap_bodies"],
         extras=_PATH_EXTRAS + [(k, (lambda k: lambda f: f.get_properties()[k])(k)) for k in THELEN_PROPERTIES] + [
             ("default_activation", lambda f: f._default_state("activation")),
             ("default_fiber_length", lambda f: f._default_state("fiber_length")),
             ("excitation", lambda f: f._default_excitation or None),
             ("excitation_functions", lambda f: list(f.get_excitation_functions()) or None)])


def _law_muscle(kind: str, numbers: tuple, second: str):
    """The builder and the extras of a law muscle (Millard, DeGrooteFregly): its properties present
    in the node (an optional curve property left out is None, so not written)."""
    flags = FLAGS[kind]

    def build(ctx, owner, refs, v, name):
        props: dict = {k: ctx.number(v, k) for k in numbers if k in v}
        props.update({k: True for k in flags if ctx.flag(v, k)})
        raw = v.get("excitation_functions", ([], None))[0]
        nf = len(raw) if isinstance(raw, list) else 1
        functions = ctx.functions(v, "excitation_functions", [1] * nf) if "excitation_functions" in v else None
        extra = {second: ctx.number(v, second)} if second in v else {}
        return getattr(Force, kind)(owner, _path(ctx, refs, v, name), name=name,
                                    default_activation=ctx.number(v, "default_activation"),
                                    excitation=ctx.number(v, "excitation") if "excitation" in v else 0.0,
                                    excitation_functions=list(functions) if functions else (), **extra, **props)

    def prop(k):
        return lambda f: f.get_properties()[k]

    def flag(k):
        return lambda f: True if f.get_properties()[k] else None

    extras = _PATH_EXTRAS + [(k, prop(k)) for k in numbers] + [(k, flag(k)) for k in flags] + [
        ("default_activation", lambda f: f._default_state("activation")),
        (second, lambda f: f._default_state("fiber_length")),
        ("excitation", lambda f: f._default_excitation or None),
        ("excitation_functions", lambda f: list(f.get_excitation_functions()) or None)]
    _builtin("Force." + kind, getattr(Force, kind), "force", build, refs=_PATH_REFS,
             many=["point_bodies", "point_coordinate_bodies", "wrap_bodies"], optional=["wrap_bodies"], extras=extras)


def _millard_numbers() -> tuple:
    from ..multibody.forces import _millard
    return MILLARD_PROPERTIES + tuple(f"{c}_{k}" for c, names in _millard.CURVES.items() for k in names)


_law_muscle("Millard2012EquilibriumMuscle", _millard_numbers(), "default_fiber_length")
_law_muscle("DeGrooteFregly2016Muscle", DEGROOTE_PROPERTIES, "default_normalized_tendon_force")
