"""Describing joints, forces and constraints of an .osim file as model-description nodes.

Nothing here makes a simtk element: each OpenSim element becomes nodes of the reader's
`ModelDescription` (``out.desc``), with the line and element of the file, and ``out`` (an
`_osim_described.OsimDescribed`) keeps the OpenSim names of the nodes. Values are checked here where
the file can be blamed at a finer place than its element (a property's line); what only an element's
constructor checks is refused by the builder, which names the element's line.
"""
from __future__ import annotations

import math

import numpy as np

from simtk import Function, Transform

from ._model_registry import _Word
from ._osim_functions import _CouplerFunction
from ._osim_model import OsimCoordinate
from ._osim_reader import (
    _JOINT_MOBILIZER,
    _JOINT_MOTION,
    _JOINT_NCOORDS,
    _R,
    _SQRT_EPS,
    _T,
    _clean_name,
    _Element,
    _flag_note,
    _or,
    _Reader,
)


def element_of(el: _Element) -> str:
    """How errors name an OpenSim element: ``PinJoint 'elbow'``."""
    return f"{el.tag} {el.get('name')!r}" if el.get("name") is not None else f"<{el.tag}>"


def _note_subcomponents(r: _Reader, el: _Element) -> None:
    """Report the dynamic subcomponents a frame carries (wrap objects, components), not built."""
    wos = r.child(el, "WrapObjectSet")
    if wos is not None:
        objs = r.child(wos, "objects")
        for w in (objs if objs is not None else []):
            # (these are built with the paths wrapping over them)
            if w.tag not in ("WrapCylinder", "WrapSphere", "WrapEllipsoid", "WrapTorus"):
                _flag_note(r.notes, w, f"on {el.get('name')!r}")
    comps = r.child(el, "components")
    if comps is not None:
        for c in comps:
            if c.tag != "PhysicalOffsetFrame":
                _flag_note(r.notes, c, f"on {el.get('name')!r}")


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


def _build_joint(r: _Reader, out, el: _Element, parent, X_PF: Transform, bname: str, mprops: tuple,
                 X_BM: Transform, coord_els: dict, reverse: bool = False) -> None:
    """The mobilizer node of joint ``el`` (its child body ``bname``, on ``parent``'s node) and the joint's
    coordinate records; ``mprops`` is (mass, com, central inertia, kept as written)."""
    jname = r.name_of(el)
    kind = el.tag
    coords = _coordinate_elements(r, el)
    by_name = {c.get("name"): c for c in coords}
    if len(by_name) != len(coords):
        raise r.error(el, f"{kind} {jname!r}: two coordinates have the same name")
    desc = out.desc
    name = desc.unique_name(out.matter, _clean_name(bname))
    common = dict(line=el.line, element=element_of(el), parent=parent, inboard_frame=X_PF,
                  mass_properties=desc.mass_properties(*mprops), outboard_frame=X_BM)
    if kind == "CustomJoint":
        order, functions, indices, axes, motion = _spatial_transform(r, el, by_name)
        coords = [by_name[n] for n in order]
        # hdot="simbody": OpenSim's CustomJoint is Simbody's FunctionBased, HDot included
        mobod = desc.add("MobilizedBody.FunctionBased", out.matter, name, n_mobilities=len(order),
                         coord_indices=indices, functions=functions, axes=axes, hdot=_Word("simbody"), **common)
    else:
        need = _JOINT_NCOORDS[kind]
        if len(coords) != need:
            raise r.error(el, f"{kind} {jname!r}: expected {need} <Coordinate> element{'s' if need != 1 else ''}, "
                              f"found {len(coords)}")
        motion = _JOINT_MOTION[kind]
        radii = r.numbers(el, "radii_x_y_z", 3, [1.0, 1.0, 1.0]) if kind == "EllipsoidJoint" else None
        mobod = desc.add("MobilizedBody." + _JOINT_MOBILIZER[kind], out.matter, name, radii=radii,
                         reversed=True if reverse else None, **common)
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
        # mobod is the mobilizer's node until the description is built (then the MobilizedBody)
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


def _frame_station(r: _Reader, out, owner: _Element, tag: str) -> tuple:
    """(body node, X_BF) of the frame socket ``tag`` of ``owner`` names."""
    frame = r.resolve(owner, r.child(owner, tag), tag)
    base, X = r.frame_in_body(frame)
    name = "ground" if base.tag == "Ground" else base.get("name")
    if name not in out.bodies:
        raise r.error(r.child(owner, tag), f"{owner.tag} {owner.get('name')!r}: body {name!r} has no mobilizer")
    return out.bodies[name], X


def _enabled(r: _Reader, el: _Element, prop: str) -> bool:
    return r.boolean(el, prop, True)


def _coordinate(r: _Reader, out, el: _Element, tag: str) -> OsimCoordinate:
    cname = r.string(el, tag)
    if cname not in out.coordinates:
        raise r.error(r.child(el, tag), f"{el.tag} {el.get('name')!r}: <{tag}> {cname!r} is not a coordinate of "
                                        "the model")
    return out.coordinates[cname]


def _element_name(r: _Reader, el: _Element, kinds: tuple, taken: dict, what: str) -> str | None:
    """The name of a force or constraint element to build, its properties checked; None (and noted in the
    warning) when its kind is not one simtk builds. A name already built is refused."""
    if el.tag not in kinds:
        _flag_note(r.notes, el)
        return None
    name = r.name_of(el)
    if name in taken:
        raise r.error(el, f"a second {what} named {name!r}; {what} names must be unique")
    r.check_props(el, el.tag)
    return name


def _degrees(values: dict) -> dict:
    """A rotational coordinate's CoordinateLimitForce values converted from OpenSim's degrees to radians,
    with the operations (and so the bits) of ``Force.CoordinateLimit(..., degrees=True)``."""
    w = math.pi / 180.0
    v = dict(values)
    v["upper_limit"], v["lower_limit"] = w * v["upper_limit"], w * v["lower_limit"]
    v["upper_stiffness"], v["lower_stiffness"] = v["upper_stiffness"] / w, v["lower_stiffness"] / w
    v["damping"] = v["damping"] / w
    v["transition"] = w * v["transition"]
    return v


def _build_force(r: _Reader, out, el: _Element) -> None:
    kind = el.tag
    name = _element_name(r, el, ("PointToPointSpring", "BushingForce", "CoordinateLimitForce",
                                 "SpringGeneralizedForce"), out.force_elements, "force")
    if name is None:
        return
    desc, fs = out.desc, out.forces
    sname = desc.unique_name(fs, _clean_name(name))
    disabled = None if _enabled(r, el, "appliesForce") else True
    where = dict(line=el.line, element=element_of(el), disabled=disabled)
    made: list = []
    if kind == "PointToPointSpring":
        b1, X1 = _frame_station(r, out, el, "socket_body1")
        b2, X2 = _frame_station(r, out, el, "socket_body2")
        p1, p2 = X1 * r.numbers(el, "point1", 3, [0, 0, 0]), X2 * r.numbers(el, "point2", 3, [0, 0, 0])
        made.append(desc.add("Force.TwoPointLinearSpring", fs, sname, body1=b1, station1=p1, body2=b2, station2=p2,
                             stiffness=r.number(el, "stiffness", 1.0), rest_length=r.number(el, "rest_length", 0.0),
                             **where))
    elif kind == "BushingForce":
        b1, X1 = _frame_station(r, out, el, "socket_frame1")
        b2, X2 = _frame_station(r, out, el, "socket_frame2")
        # Simbody's (and simtk's) six values put the rotational ones first.
        k6 = np.concatenate([r.numbers(el, "rotational_stiffness", 3, [0, 0, 0]),
                             r.numbers(el, "translational_stiffness", 3, [0, 0, 0])])
        c6 = np.concatenate([r.numbers(el, "rotational_damping", 3, [0, 0, 0]),
                             r.numbers(el, "translational_damping", 3, [0, 0, 0])])
        made.append(desc.add("Force.LinearBushing", fs, sname, body1=b1, frame_on_body1=X1, body2=b2,
                             frame_on_body2=X2, stiffness=k6, damping=c6, **where))
    elif kind == "CoordinateLimitForce":
        c = _coordinate(r, out, el, "coordinate")
        transition = r.number(el, "transition", 0.1)
        if not transition > 0.0:
            raise r.error(_or(r.child(el, "transition"), el), f"CoordinateLimitForce {name!r}: expected a "
                                                           "transition > 0")
        # the file's values, in degrees for a rotational coordinate (converted as OpenSim converts them)
        values = dict(upper_limit=r.number(el, "upper_limit", 0.0), upper_stiffness=r.number(el, "upper_stiffness", 1.0),
                      lower_limit=r.number(el, "lower_limit", 0.0), lower_stiffness=r.number(el, "lower_stiffness", 1.0),
                      damping=r.number(el, "damping", 0.001), transition=transition)
        if c.motion_type == _R:
            values = _degrees(values)
        made.append(desc.add("Force.CoordinateLimit", fs, sname, body=c.mobod, which=c.index, **values, **where))
        if r.boolean(el, "compute_dissipation_energy", False):
            r.notes.append(f"{name} (CoordinateLimitForce, line {el.line}): compute_dissipation_energy "
                           "(a state variable that only integrates the dissipated power) not built")
    else:
        c = _coordinate(r, out, el, "coordinate")
        made.append(desc.add("Force.MobilityLinearSpring", fs, sname, body=c.mobod, which=c.index,
                             stiffness=r.number(el, "stiffness", 0.0), q_zero=r.number(el, "rest_length", 0.0),
                             **where))
        made.append(desc.add("Force.MobilityLinearDamper", fs, desc.unique_name(fs, sname + "_damping"),
                             body=c.mobod, which=c.index, damping=r.number(el, "viscosity", 0.0), **where))
    out.force_elements[name] = made


def _build_constraint(r: _Reader, out, el: _Element) -> None:
    kind = el.tag
    name = _element_name(r, el, ("WeldConstraint", "PointConstraint", "ConstantDistanceConstraint",
                                 "CoordinateCouplerConstraint", "PointOnLineConstraint"), out.constraints,
                         "constraint")
    if name is None:
        return
    desc, matter = out.desc, out.matter
    cname = desc.unique_name(matter, _clean_name(name))
    enforced = r.boolean(el, "isEnforced", True) and not r.boolean(el, "isDisabled", False)
    where = dict(line=el.line, element=element_of(el), disabled=None if enforced else True)
    if kind == "WeldConstraint":
        b1, X1 = _frame_station(r, out, el, "socket_frame1")
        b2, X2 = _frame_station(r, out, el, "socket_frame2")
        c = desc.add("Constraint.Weld", matter, cname, body1=b1, frame_on_body1=X1, body2=b2, frame_on_body2=X2,
                     **where)
    elif kind == "PointOnLineConstraint":
        # OpenSim 4.6 takes the direction and points in the sockets' *base bodies*, whatever offset
        # frame a socket names (checked against it); so does load_osim
        b1, _ = _frame_station(r, out, el, "socket_line_body")
        b2, _ = _frame_station(r, out, el, "socket_follower_body")
        d = r.numbers(el, "line_direction_vec", 3, [1, 0, 0])
        if not np.linalg.norm(d) > 0.0:
            raise r.error(_or(r.child(el, "line_direction_vec"), el),
                          f"PointOnLineConstraint {name!r}: expected a nonzero line_direction_vec")
        c = desc.add("Constraint.PointOnLine", matter, cname, line_body=b1, direction=d / np.linalg.norm(d),
                     point_on_line=r.numbers(el, "point_on_line", 3, [0, 0, 0]), follower=b2,
                     point=r.numbers(el, "point_on_follower", 3, [0, 0, 0]), **where)
    elif kind in ("PointConstraint", "ConstantDistanceConstraint"):
        # the locations are in the base bodies, as OpenSim 4.6 takes them (an offset frame's
        # transform is not applied: checked against it)
        b1, _ = _frame_station(r, out, el, "socket_body_1")
        b2, _ = _frame_station(r, out, el, "socket_body_2")
        p1 = r.numbers(el, "location_body_1", 3, [0, 0, 0])
        p2 = r.numbers(el, "location_body_2", 3, [0, 0, 0])
        if kind == "PointConstraint":
            c = desc.add("Constraint.Ball", matter, cname, body1=b1, station1=p1, body2=b2, station2=p2, **where)
        else:
            c = desc.add("Constraint.Rod", matter, cname, body1=b1, station1=p1, body2=b2, station2=p2,
                         length=r.number(el, "constant_distance", 1.0), **where)
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
        unreadable = r.unreadable_function(inner[0])
        if unreadable is not None:
            r.notes.append(f"{name} (CoordinateCouplerConstraint, line {el.line}): its function <{unreadable}> "
                           "is not one simtk reads; the constraint is not built")
            return
        f = r.function(inner[0], len(ind), f"CoordinateCouplerConstraint {name!r}")
        coupler = _CouplerFunction(f, r.number(el, "scale_factor", 1.0))
        c = desc.add("Constraint.CoordinateCoupler", matter, cname, function=coupler,
                     coord_bodies=[x.mobod for x in ind] + [dep.mobod],
                     coord_indices=[x.index for x in ind] + [dep.index], **where)
    out.constraints[name] = [c]
