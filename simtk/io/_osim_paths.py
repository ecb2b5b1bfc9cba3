"""PathSpring, PathActuator and the muscles (Thelen2003Muscle, Millard2012EquilibriumMuscle,
DeGrooteFregly2016Muscle) of an .osim file, with their GeometryPath.

A GeometryPath's PathPointSet becomes a simtk `GeometryPath`: PathPoint, ConditionalPathPoint (its
range widened by OpenSim's 1e-5, ``ConditionalPathPoint::isActive``) and MovingPathPoint (its
functions of one coordinate, the coordinate's range clamping them as OpenSim's
``MovingPathPoint::getLocation`` does). A point's frame may be an offset frame of a body (the
location is carried into the body).

A PathWrapSet's PathWraps over WrapCylinders, WrapSpheres, WrapEllipsoids and WrapTori (of a body's
WrapObjectSet, on the body or an offset frame of it) become `PathWrap`s, their 1-based ``range`` (-1:
first/last point) made 0-based; an inactive wrap object wraps nothing and is left out.
A PathActuator's control is held in the State (``Force.PathActuator.set_control``, 0 by default);
PrescribedControllers do not drive it yet.

Each force is described as one node (``Force.PathSpring`` / ``Force.PathActuator``) whose items list
its path's points (``_model_registry_osim``); the builder makes the GeometryPath and the force.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..spatial import Rotation, Transform
from ._osim_elements import element_of
from ._osim_reader import _FRAME_TAGS, _clean_name, _Element, _flag_note, _or, _Reader

__all__ = ["PATH_FORCES", "build_path_force"]

PATH_FORCES = ("PathSpring", "PathActuator", "Thelen2003Muscle", "Millard2012EquilibriumMuscle",
               "DeGrooteFregly2016Muscle")
#: the muscles' kinds in simtk's model description
MUSCLE_KINDS = ("Force.Thelen2003Muscle", "Force.Millard2012EquilibriumMuscle", "Force.DeGrooteFregly2016Muscle")
#: Thelen2003Muscle's properties simtk's muscle takes, by OpenSim name (its other Muscle properties are
#: read too, below)
THELEN_PROPERTIES = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                     "pennation_angle_at_optimal", "max_contraction_velocity", "FmaxTendonStrain", "FmaxMuscleStrain",
                     "KshapeActive", "KshapePassive", "Af", "Flen", "fv_linear_extrap_threshold",
                     "maximum_pennation_angle", "activation_time_constant", "deactivation_time_constant",
                     "minimum_activation")
_THELEN_DEFAULTS = dict(max_isometric_force=1000.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                        pennation_angle_at_optimal=0.0, max_contraction_velocity=10.0, FmaxTendonStrain=0.04,
                        FmaxMuscleStrain=0.6, KshapeActive=0.45, KshapePassive=5.0, Af=0.25, Flen=1.4,
                        fv_linear_extrap_threshold=0.95, maximum_pennation_angle=float(np.arccos(0.1)),
                        activation_time_constant=0.015, deactivation_time_constant=0.05, minimum_activation=0.01)
_PROPS = {
    "PathSpring": {"GeometryPath", "resting_length", "stiffness", "dissipation", "appliesForce"},
    "PathActuator": {"GeometryPath", "optimal_force", "min_control", "max_control", "appliesForce"},
    "Thelen2003Muscle": {"GeometryPath", "optimal_force", "min_control", "max_control", "appliesForce",
                         "default_activation", "default_fiber_length", "ignore_tendon_compliance",
                         "ignore_activation_dynamics", *THELEN_PROPERTIES},
}
#: Millard2012EquilibriumMuscle's plain properties (its curves' are ``<Curve>_<property>``)
MILLARD_PROPERTIES = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                      "pennation_angle_at_optimal", "max_contraction_velocity", "fiber_damping",
                      "activation_time_constant", "deactivation_time_constant", "minimum_activation",
                      "maximum_pennation_angle")
DEGROOTE_PROPERTIES = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                       "pennation_angle_at_optimal", "max_contraction_velocity", "activation_time_constant",
                       "deactivation_time_constant", "active_force_width_scale", "fiber_damping",
                       "passive_fiber_strain_at_one_norm_force", "tendon_strain_at_one_norm_force",
                       "activation_dynamics_smoothing")
#: the muscles' boolean properties (True or left out in the description)
FLAGS = {"Millard2012EquilibriumMuscle": ("ignore_tendon_compliance", "ignore_activation_dynamics"),
         "DeGrooteFregly2016Muscle": ("ignore_tendon_compliance", "ignore_activation_dynamics",
                                      "ignore_passive_fiber_force")}
_MUSCLE_PROPS = {"GeometryPath", "optimal_force", "min_control", "max_control", "appliesForce", "default_activation"}
_PROPS["Millard2012EquilibriumMuscle"] = {*_MUSCLE_PROPS, *MILLARD_PROPERTIES, *FLAGS["Millard2012EquilibriumMuscle"],
                                          "default_fiber_length", "ActiveForceLengthCurve", "ForceVelocityCurve",
                                          "FiberForceLengthCurve", "TendonForceLengthCurve"}
_PROPS["DeGrooteFregly2016Muscle"] = {*_MUSCLE_PROPS, *DEGROOTE_PROPERTIES, *FLAGS["DeGrooteFregly2016Muscle"],
                                      "default_normalized_tendon_force", "tendon_compliance_dynamics_mode"}
#: OpenSim's tolerance on a ConditionalPathPoint's range (ConditionalPathPoint::isActive)
_RANGE_TOLERANCE = 1e-5


class _NotBuilt(Exception):
    """A path simtk does not build yet (noted in the warning, the rest of the model is built)."""


def _coordinate_of(r: _Reader, out, point: _Element, tag: str, where: str):
    sock = r.child(point, tag)
    ref = r._text(sock) if sock is not None else ""
    if not ref:
        return None
    name = ref.rstrip("/").rpartition("/")[2]
    c = out.coordinates.get(name)
    if c is None:
        raise r.error(sock, f"{where}: <{tag}> {ref!r} is not a coordinate of the model")
    return c


def _point(r: _Reader, out, el: _Element, where: str) -> dict:
    """A path point as the items of one entry of the force's point lists (its bodies are nodes)."""
    frame = r.resolve(el, r.child(el, "socket_parent_frame"), "socket_parent_frame")
    base, X = r.frame_in_body(frame)
    bname = "ground" if base.tag == "Ground" else base.get("name")
    if bname not in out.bodies:
        raise r.error(r.child(el, "socket_parent_frame"), f"{where}: body {bname!r} has no mobilizer")
    body = out.bodies[bname]
    if el.tag == "MovingPathPoint":
        coords, functions = [], []
        for axis in "xyz":
            c = _coordinate_of(r, out, el, f"socket_{axis}_coordinate", where)
            holder = r.child(el, f"{axis}_location")
            inner = [x for x in holder] if holder is not None else []
            if c is None or len(inner) != 1:
                raise r.error(_or(holder, el), f"{where}: its {axis} location is not a function of a coordinate")
            coords.append(c)
            functions.append(r.function(inner[0], 1, f"{axis}_location of {where}"))
        if not coords[0] is coords[1] is coords[2]:
            raise r.error(el, f"{where}: its x, y and z depend on different coordinates (OpenSim refuses this too)")
        if (X.R.matrix != np.eye(3)).any() or (X.p != 0.0).any():
            raise _NotBuilt("a MovingPathPoint of its path is on an offset frame, which simtk does not build yet")
        c = coords[0]
        return dict(kind="moving", body=body, location=np.zeros(3), coordinate=c, range=c.range, clamped=True,
                    functions=functions)
    location = X * r.numbers(el, "location", 3, [0.0, 0.0, 0.0])
    if el.tag == "ConditionalPathPoint":
        c = _coordinate_of(r, out, el, "socket_coordinate", where)
        if c is None:
            raise r.error(el, f"{where}: expected a <socket_coordinate>")
        lo, hi = r.numbers(el, "range", 2, [0.0, 0.0])
        if lo > hi:
            raise r.error(r.child(el, "range"), f"{where}: its range [{lo}, {hi}] has lo > hi")
        return dict(kind="conditional", body=body, location=location, coordinate=c,
                    range=(lo - _RANGE_TOLERANCE, hi + _RANGE_TOLERANCE), clamped=True, functions=[])
    return dict(kind="fixed", body=body, location=location, coordinate=None, range=(0.0, 0.0), clamped=False,
                functions=[])


#: the wrap objects simtk builds: OpenSim tag -> the description's kind
WRAP_KINDS = {"WrapCylinder": "cylinder", "WrapSphere": "sphere", "WrapEllipsoid": "ellipsoid", "WrapTorus": "torus"}


def _wrap_objects(r: _Reader) -> dict:
    """name -> (wrap object element, its frame element) over every frame's WrapObjectSet (once per file)."""
    found = getattr(r, "_wrap_objects", None)
    if found is None:
        found = {}
        for frame in list(r.paths.values()):
            if frame.tag not in _FRAME_TAGS:
                continue
            wos = r.child(frame, "WrapObjectSet")
            objs = r.child(wos, "objects") if wos is not None else None
            for w in (objs if objs is not None else []):
                found.setdefault(w.get("name"), (w, frame))
        r._wrap_objects = found  # type: ignore[attr-defined]
    return found


def _describe_wraps(r: _Reader, out, gp: _Element, owner: _Element, where: str, npoints: int) -> list | None:
    """The wraps of a <GeometryPath> as dicts; None (noted) when one is over an object simtk does not build."""
    holder = r.child(gp, "PathWrapSet")
    objs = r.child(holder, "objects") if holder is not None else None
    wraps = []
    for pw in (list(objs) if objs is not None else []):
        ww = f"{where}: path wrap {pw.get('name')!r}"
        ref = r.child(pw, "wrap_object")
        name = r._text(ref) if ref is not None else ""
        hit = _wrap_objects(r).get(name)
        if hit is None:
            raise r.error(_or(ref, pw), f"{ww}: <wrap_object> {name!r} is not a wrap object of the model")
        wel, frame = hit
        if wel.tag not in WRAP_KINDS:
            _flag_note(r.notes, owner, f"its path wraps over {wel.tag} {name!r}, which simtk does not build yet")
            return None
        if not r.boolean(wel, "active", True):
            continue
        base, X_BF = r.frame_in_body(frame)
        bname = "ground" if base.tag == "Ground" else base.get("name")
        if bname not in out.bodies:
            raise r.error(wel, f"{wel.tag} {name!r}: body {bname!r} has no mobilizer")
        X_FW = Transform(Rotation.from_body_fixed_xyz(r.numbers(wel, "xyz_body_rotation", 3, [0.0, 0.0, 0.0])),
                         r.numbers(wel, "translation", 3, [0.0, 0.0, 0.0]))
        X_BW = X_BF * X_FW
        quadrant = r._text(r.child(wel, "quadrant")) if r.child(wel, "quadrant") is not None else "all"
        if quadrant.lower() in ("unassigned", ""):
            quadrant = "all"
        if quadrant.lower() not in ("all", "x", "+x", "-x", "y", "+y", "-y", "z", "+z", "-z"):
            raise r.error(r.child(wel, "quadrant"), f"{wel.tag} {name!r}: quadrant {quadrant!r} is not one of "
                                                    "all, +x, -x, +y, -y, +z, -z")
        semi = [1.0, 1.0, 1.0]
        if wel.tag == "WrapEllipsoid":
            semi = r.numbers(wel, "dimensions", 3, [1.0, 1.0, 1.0])
            if not all(d > 0.0 for d in semi):
                raise r.error(r.child(wel, "dimensions"), f"{wel.tag} {name!r}: dimensions {list(semi)} are not "
                                                          "all positive")
        if wel.tag == "WrapTorus":
            # (OpenSim's defaults and its checks, WrapTorus::extendFinalizeFromProperties)
            inner, outer = r.number(wel, "inner_radius", 0.01), r.number(wel, "outer_radius", 0.05)
            if not (0.0 < inner < outer and np.isfinite(outer)):
                raise r.error(_or(r.child(wel, "inner_radius"), wel),
                              f"{wel.tag} {name!r}: inner_radius {inner} and outer_radius {outer} must be positive, "
                              "inner < outer")
            semi = [inner, outer, 0.0]
        radius = r.number(wel, "radius", 1.0) if wel.tag in ("WrapCylinder", "WrapSphere") else 1.0
        length = r.number(wel, "length", 1.0) if wel.tag == "WrapCylinder" else 0.0
        if not radius > 0.0:
            raise r.error(r.child(wel, "radius"), f"{wel.tag} {name!r}: radius {radius} is not positive")
        if not length >= 0.0:
            raise r.error(r.child(wel, "length"), f"{wel.tag} {name!r}: length {length} is negative")
        a, b = (int(x) for x in r.numbers(pw, "range", 2, [-1.0, -1.0]))
        start, end = (0 if a < 1 else a - 1), (npoints - 1 if b < 1 else b - 1)
        if not 0 <= start <= end < npoints:
            raise r.error(_or(r.child(pw, "range"), pw), f"{ww}: its range [{a}, {b}] is not within the path's "
                                                         f"{npoints} points")
        method = r._text(r.child(pw, "method")) if r.child(pw, "method") is not None else "hybrid"
        method = method.lower() if method.lower() in ("hybrid", "midpoint", "axial") else "hybrid"
        wraps.append(dict(kind=WRAP_KINDS[wel.tag], body=out.bodies[bname], name=_clean_name(name),
                          frame=np.concatenate([X_BW.R.matrix.ravel(), X_BW.p]),
                          dims=(np.array(semi, dtype=float) if wel.tag in ("WrapEllipsoid", "WrapTorus")
                                else np.array([radius, length, 0.0])), quadrant=quadrant.lower(),
                          range=np.array([start, end], dtype=float), method=method))
    return wraps


def describe_geometry_path(r: _Reader, out, owner: _Element, where: str) -> dict | None:
    """The point and wrap items of ``owner``'s <GeometryPath>; None (noted) when it is not built."""
    gp = r.child(owner, "GeometryPath")
    if gp is None:
        raise r.error(owner, f"{where}: expected a <GeometryPath>")
    pps = r.child(gp, "PathPointSet")
    pobjs = r.child(pps, "objects") if pps is not None else None
    points = []
    for el in (list(pobjs) if pobjs is not None else []):
        pw = f"{where}: path point {el.get('name')!r}"
        if el.tag not in ("PathPoint", "ConditionalPathPoint", "MovingPathPoint"):
            raise r.error(el, f"{pw}: <{el.tag}> is not a path point simtk reads")
        try:
            points.append(_point(r, out, el, pw))
        except _NotBuilt as why:
            _flag_note(r.notes, owner, str(why))
            return None
    if len(points) < 2:
        raise r.error(gp, f"{where}: a path needs at least two points, got {len(points)}")
    wraps = _describe_wraps(r, out, gp, owner, where, len(points))
    if wraps is None:
        return None
    ground = out.bodies["ground"]
    coordinates: list[Any] = [p["coordinate"] for p in points]
    extra: dict = {}
    if wraps:
        extra = dict(wrap_kinds=[w["kind"] for w in wraps], wrap_bodies=[w["body"] for w in wraps],
                     wrap_names=[w["name"] for w in wraps], wrap_frames=[w["frame"] for w in wraps],
                     wrap_dims=[w["dims"] for w in wraps], wrap_quadrants=[w["quadrant"] for w in wraps],
                     wrap_ranges=[w["range"] for w in wraps], wrap_methods=[w["method"] for w in wraps])
    return dict(**extra,path_name=where, point_kinds=[p["kind"] for p in points], point_bodies=[p["body"] for p in points],
                point_locations=[p["location"] for p in points],
                point_coordinate_bodies=[ground if c is None else c.mobod for c in coordinates],
                point_coordinate_indices=[0 if c is None else c.index for c in coordinates],
                point_ranges=[np.array(p["range"], dtype=float) for p in points],
                point_clamped=[p["clamped"] for p in points],
                moving_functions=[f for p in points for f in p["functions"]] or None)


def build_path_force(r: _Reader, out, el: _Element) -> None:
    """Describe a PathSpring or PathActuator (into ``out.force_elements``), or note why not."""
    name = r.new_force(el, out.force_elements, _PROPS[el.tag])
    where = f"{el.tag} {name!r}"
    items = describe_geometry_path(r, out, el, where)
    if items is None:
        return
    if el.tag == "PathSpring":
        items.update(stiffness=r.number(el, "stiffness"), resting_length=r.number(el, "resting_length"),
                     dissipation=r.number(el, "dissipation"))
    elif el.tag == "Thelen2003Muscle":
        for flag in ("ignore_tendon_compliance", "ignore_activation_dynamics"):
            if r.boolean(el, flag, False):
                _flag_note(r.notes, el, f"{flag} is true, which simtk's Thelen2003Muscle does not model")
                return
        items.update({k: r.number(el, k, _THELEN_DEFAULTS[k]) for k in THELEN_PROPERTIES})
        items.update(default_activation=r.number(el, "default_activation", 0.05),
                     default_fiber_length=r.number(el, "default_fiber_length", 0.1))
    elif el.tag in FLAGS:
        if not _muscle_items(r, el, items):
            return
    else:
        items.update(optimal_force=r.number(el, "optimal_force", 1.0))
    desc = out.desc
    made = desc.add("Force." + el.tag, out.forces, desc.unique_name(out.forces, _clean_name(name)), line=el.line,
                    element=element_of(el), disabled=None if r.boolean(el, "appliesForce", True) else True, **items)
    out.force_elements[name] = [made]


def _muscle_items(r: _Reader, el: _Element, items: dict) -> bool:
    """A Millard2012EquilibriumMuscle's or DeGrooteFregly2016Muscle's properties (the ones present:
    the element's defaults are OpenSim's), or False (noted) for what simtk does not model."""
    from ..multibody.forces import _millard

    for flag in FLAGS[el.tag]:
        if r.boolean(el, flag, False):
            items[flag] = True
    items["default_activation"] = r.number(el, "default_activation", 0.05 if el.tag.startswith("Millard") else 0.5)
    if el.tag == "DeGrooteFregly2016Muscle":
        mode = r.string(el, "tendon_compliance_dynamics_mode", required=False) or "explicit"
        if mode != "explicit" and not items.get("ignore_tendon_compliance"):
            _flag_note(r.notes, el, f"tendon_compliance_dynamics_mode is {mode!r}, which simtk does not model")
            return False
        items.update({k: r.number(el, k) for k in DEGROOTE_PROPERTIES if r.child(el, k) is not None})
        items["default_normalized_tendon_force"] = r.number(el, "default_normalized_tendon_force", 0.5)
        return True
    items.update({k: r.number(el, k) for k in MILLARD_PROPERTIES if r.child(el, k) is not None})
    # (OpenSim's default is 0.1 m whatever the optimal fiber length: it is constructed before that is set)
    items["default_fiber_length"] = r.number(el, "default_fiber_length", 0.1)
    for curve, names in _millard.CURVES.items():
        holder = r.child(el, curve)
        for k in names:
            c = r.child(holder, k) if holder is not None else None
            if c is not None and r._text(c):  # (an empty optional property: OpenSim's fitted value)
                items[f"{curve}_{k}"] = r.number(holder, k)
    return True
