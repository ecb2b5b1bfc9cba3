"""An .osim model read into a model description, and the `OsimModel` built from it.

`describe` turns the file's elements into nodes of a `ModelDescription` (no simtk element is made
while reading) and keeps, in an `OsimDescribed`, the OpenSim names of the nodes; `result` hands the
description to the one builder and gives the built components their OpenSim names (the coordinate
and actuator records resolved by path, then OpenSim's sets and paths, `_osim_names`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np

from simtk import Function

from ._description import ModelDescription
from ._inertia_policy import apply as apply_inertia_policy
from ._model_parser import _Node
from ._named import NamedDict
from ._osim_actuators import ACTUATORS, build_actuators_and_controllers
from ._osim_contact import CONTACT_FORCES, ContactGeometries, build_contact_force
from ._osim_elements import _build_constraint, _build_force, _build_joint, _note_subcomponents, element_of
from ._osim_expression_forces import EXPRESSION_FORCES, build_expression_force
from ._osim_model import OsimModel
from ._osim_names import attach_opensim_names
from ._osim_paths import PATH_FORCES, build_path_force
from ._osim_reader import (
    _JOINT_NCOORDS,
    _MODEL_KNOWN,
    _SET_TAGS,
    OsimFileError,
    _clean_name,
    _Element,
    _flag_note,
    _or,
    _Reader,
)
from ._osim_tree import _body_key, _close_loops, _joint_tree, _split_mass

__all__ = ["OsimDescribed", "describe", "result"]


class OsimDescribed:
    """What the reader makes of a file: the description, and its nodes by OpenSim name.

    The attributes are `OsimModel`'s, with description nodes where the model has components
    (``bodies["femur"]`` is the femur's mobilizer node, ``coordinates[...].mobod`` too).
    """

    def __init__(self, desc: ModelDescription, path: str):
        self.desc = desc
        self.path = path
        self.matter, self.forces = desc.matter, desc.forces
        self.bodies: dict[str, _Node] = {"ground": desc.ground}
        self.joints: dict[str, _Node] = {}
        self.joint_kinds: dict[str, str] = {}
        self.coordinates: dict[str, Any] = {}
        self.force_elements: dict[str, list] = {}
        self.constraints: dict[str, list] = {}
        self.actuators: dict[str, Any] = {}
        self.controllers: dict[str, list] = {}
        self.actuation: _Node | None = None
        self.loop_welds: dict[str, _Node] = {}
        self.nonphysical_inertias: dict[str, str] = {}
        self.warnings: list[str] = []


def _make_error(path: str):
    def make(message: str, line: int | None, element: str | None) -> OsimFileError:
        e = OsimFileError(path, line, f"{element}: {message}" if element else message)
        e.element = element
        return e
    return make


def describe(r: _Reader, model: _Element, nonphysical_inertia: str = "keep") -> OsimDescribed:
    """The description of ``model`` (its elements checked; the unsupported ones noted in ``r.notes``)."""
    out = OsimDescribed(ModelDescription(_clean_name(model.get("name") or "model"), r.path, _make_error(r.path)),
                        r.path)
    desc = out.desc
    for c in cast("list[_Element]", list(model)):
        if c.tag not in _MODEL_KNOWN:
            r.notes.append(f"unknown element <{c.tag}> {c.get('name') or ''} (line {c.line})".replace("  ", " "))
    for set_tag in sorted(_SET_TAGS - {"ContactGeometrySet", "ControllerSet"}):  # (those: below)
        for el in r.objects(model, set_tag):
            _flag_note(r.notes, el)
    comps = r.child(model, "components")
    if comps is not None:
        for el in cast("list[_Element]", list(comps)):
            _flag_note(r.notes, el)

    ground = r.child(model, "Ground")
    ground_path = "/" + ((ground.get("name") or "ground") if ground is not None else "ground")
    if ground is None:  # a model without <Ground> still has OpenSim's default one
        ground = _Element("Ground", {"name": "ground"})
        r.paths[ground_path] = ground

    # ---------------------------------------------------------------- bodies
    body_els: dict[str, _Element] = {}
    mass_props: dict[str, tuple] = {}  # (mass, com, central inertia, kept as written)
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
            inertia, why = apply_inertia_policy(I, nonphysical_inertia)
            mass_props[name] = (m, com, np.array(inertia.matrix), why is not None and nonphysical_inertia == "keep")
            if why is not None:
                out.nonphysical_inertias[name] = f"line {_or(r.child(el, 'inertia'), el).line}: {why}"
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise r.error(_or(r.child(el, "inertia"), el), f"Body {name!r}: invalid mass properties: {exc}") from None
        body_els[name] = el

    # ---------------------------------------------------------------- joints: the tree
    joints: list[tuple] = []
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
            if base.tag == "Body" and body_els.get(base.get("name") or "") is not base:
                raise r.error(_or(r.child(el, sock), el), f"{el.tag} {name!r}: the {sock[7:]}'s body "
                                                          f"{base.get('name')!r} is not a Body of the BodySet")
        if pbase is cbase:
            raise r.error(el, f"{el.tag} {name!r}: its parent and child frames are on the same body "
                              f"{cbase.get('name')!r}")
        joints.append((el, _body_key(pbase), X_PF, _body_key(cbase), X_BM))
    mobilizer_of, loops = _joint_tree(r, joints, body_els, r.notes)
    for child in {j[3] for j in loops}:  # a body split for loops shares its mass with its slaves
        mass_props[child] = _split_mass(mass_props[child], sum(j[3] == child for j in loops))

    coord_els: dict[str, _Element] = {}
    for bname, (el, pname, X_PF, X_BM, reverse) in mobilizer_of.items():
        _build_joint(r, out, el, out.bodies[pname], X_PF, bname, mass_props[bname], X_BM, coord_els,
                     reverse=reverse)
    _close_loops(r, out, loops, mass_props, coord_els)
    # The file's order (OpenSim's CoordinateSet and JointSet order), not the tree's.
    file_order = {el.get("name"): i for i, el in enumerate(r.objects(model, "JointSet"))}
    for name in out.joints:  # the FreeJoints OpenSim adds come after the file's joints
        file_order.setdefault(name, len(file_order))
    out.joints = dict(sorted(out.joints.items(), key=lambda kv: file_order[kv[0]]))
    out.coordinates = dict(sorted(out.coordinates.items(), key=lambda kv: (file_order[kv[1].joint], kv[1].index)))

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
                unreadable = r.unreadable_function(cast(_Element, inner[0]))
                if unreadable is not None:
                    r.notes.append(f"{cname} (Coordinate, line {cel.line}): its prescribed_function <{unreadable}> is "
                                   "not one simtk reads; not prescribed")
                    continue
                f = r.function(cast(_Element, inner[0]), 1, f"prescribed_function of Coordinate {cname!r}")
            lock = desc.unique_name(out.matter, _clean_name(cname) + ("_lock" if c.locked else "_prescribed"))
            c.lock = desc.add("Constraint.PrescribedMotion", out.matter, lock, line=cel.line, element=element_of(cel),
                              function=f, body=c.mobod, coord_index=c.index)

    # ---------------------------------------------------------------- forces
    geoms = ContactGeometries(r, model, out.bodies)
    for el in r.objects(model, "ForceSet"):
        if el.tag in CONTACT_FORCES:
            build_contact_force(r, out, el, geoms)
        elif el.tag in EXPRESSION_FORCES:
            build_expression_force(r, out, el)
        elif el.tag in PATH_FORCES:
            build_path_force(r, out, el)
        elif el.tag not in ACTUATORS:
            _build_force(r, out, el)
    build_actuators_and_controllers(r, out, model)
    g = r.numbers(model, "gravity", 3, [0.0, -9.80665, 0.0])
    gravity_el = _or(r.child(model, "gravity"), model)
    grav = desc.add("Force.UniformGravity", out.forces, desc.unique_name(out.forces, "gravity"),
                    line=gravity_el.line, element="<gravity>", gravity=g, zero_height=0.0)
    out.force_elements.setdefault("gravity", [grav])

    # ---------------------------------------------------------------- constraints
    for el in r.objects(model, "ConstraintSet"):
        _build_constraint(r, out, el)
    # OpenSim's joint types of the file's joints (the FreeJoints OpenSim adds have none)
    out.joint_kinds = {el.get("name"): el.tag for el in r.objects(model, "JointSet")}
    out.warnings = list(r.notes)
    return out


def result(d: OsimDescribed) -> OsimModel:
    """Build ``d``'s description and give the components their OpenSim names."""
    system, comps = d.desc.build()
    matter, forces = comps["/matter"], comps["/forces"]
    ground = matter.get_ground()

    def built(node):
        return None if node is None else (ground if node is d.desc.ground else comps[node.path])

    out = OsimModel(system, matter, forces, path=d.path, description=d.desc, components=comps)
    out.bodies = NamedDict(((k, built(n)) for k, n in d.bodies.items()), "body", d.path)
    out.joints = NamedDict(((k, built(n)) for k, n in d.joints.items()), "joint", d.path)
    # the records of the reading, with the built components in place of the nodes
    out.coordinates = {k: dataclasses.replace(c, mobod=built(c.mobod), lock=built(c.lock))
                       for k, c in d.coordinates.items()}
    out.force_elements = {k: [built(n) for n in v] for k, v in d.force_elements.items()}
    out.constraints = {k: [built(n) for n in v] for k, v in d.constraints.items()}
    out.actuators = {k: dataclasses.replace(a, mobod=built(a.mobod), mobod_b=built(a.mobod_b))
                     for k, a in d.actuators.items()}
    out.controllers = dict(d.controllers)
    out.actuation = built(d.actuation)
    out.loop_welds = {k: built(n) for k, n in d.loop_welds.items()}
    out.nonphysical_inertias = dict(d.nonphysical_inertias)
    out.warnings = list(d.warnings)
    attach_opensim_names(out, d.joint_kinds)
    return out
