"""Contact of an .osim file: ContactGeometrySet, HuntCrossleyForce and SmoothSphereHalfSpaceForce.

OpenSim hands its contact to Simbody unchanged, so the mapping is direct:

- a ``ContactSphere`` / ``ContactHalfSpace`` is Simbody's ``ContactGeometry::Sphere`` / ``HalfSpace``
  (occupying x > 0 of its frame: outward normal -x) placed at ``X_BF * X(orientation, location)``
  on the base body of its ``socket_frame`` (``ContactGeometry::getTransform``), orientation being
  body-fixed X-Y-Z angles;
- a ``HuntCrossleyForce`` is one Simbody contact set with its own ``HuntCrossleyForce``: every
  geometry named in each of its ``ContactParameters`` is added with that entry's stiffness,
  dissipation and frictions (``setBodyParameters``); the element's ``transition_velocity``;
- a ``SmoothSphereHalfSpaceForce`` is ``Force.SmoothSphereHalfSpace`` between its two sockets.

One difference is kept on purpose: Simbody's ``HuntCrossleyForce::calcForce`` returns at the first
contact whose surfaces separate faster than 2/(3c) (``if (f <= 0) return;``), so OpenSim drops the
forces of every contact after that one in Simbody's detection order; simtk's ``Force.HuntCrossley``
skips only that contact. States with such a contact beside one that pushes differ from OpenSim.

A ``ContactMesh`` in a HuntCrossleyForce adds nothing: Simbody's HuntCrossleyForce handles point
contacts only and skips the triangle-mesh contacts its tracker reports (OpenSim 4.6 gives zero force for
a mesh penetrating a half-space or a sphere, and the other geometries of the same force still push), so
the mesh is left out of simtk's force and its file is not read. ``ElasticFoundationForce`` (the force
meshes do make in OpenSim) is not built: it is listed in the warning.
"""
from __future__ import annotations

from typing import cast

from simtk import Rotation, Transform
from simtk.multibody.contact.geometry import ContactGeometry
from simtk.multibody.contact.hunt_crossley import _law

from ._osim_elements import element_of
from ._osim_reader import _clean_name, _Element, _flag_note, _or, _Reader

__all__: list[str] = []

CONTACT_FORCES = ("HuntCrossleyForce", "SmoothSphereHalfSpaceForce")
#: what `ContactGeometries.get` returns for a ContactMesh's geometry: Hunt-Crossley leaves it out
MESH = "mesh"
_GEOMETRY_PROPS = {"socket_frame", "location", "orientation", "Appearance", "radius", "display_preference",
                   "color"}
_HC_PROPS = {"appliesForce", "HuntCrossleyForce::ContactParametersSet", "transition_velocity"}
_PARAM_PROPS = {"geometry", "stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction"}
_SMOOTH_PROPS = {"appliesForce", "socket_sphere", "socket_half_space", "stiffness", "dissipation",
                 "static_friction", "dynamic_friction", "viscous_friction", "transition_velocity",
                 "constant_contact_force", "hertz_smoothing", "hunt_crossley_smoothing"}


class ContactGeometries:
    """The model's ContactGeometrySet, read when a force uses a geometry (one no force uses has no
    effect on dynamics, like visual geometry, and is skipped without comment)."""

    def __init__(self, r: _Reader, model: _Element, bodies: dict):
        self.r = r
        self.bodies = bodies
        self.els = {r.name_of(el): el for el in r.objects(model, "ContactGeometrySet")}

    def get(self, owner: _Element, name: str, where: _Element | None):
        """(geometry element, ContactGeometry, body node, X_BS) of geometry ``name`` named by ``owner``."""
        r = self.r
        el = self.els.get(name)
        if el is None:
            raise r.error(_or(where, owner), f"{owner.tag} {owner.get('name')!r}: {name!r} is not a geometry of "
                                             f"the ContactGeometrySet ({', '.join(self.els) or 'none'})")
        if el.tag == "ContactSphere":
            radius = r.number(el, "radius", 0.0)
            if not radius > 0.0:
                raise r.error(_or(r.child(el, "radius"), el), f"ContactSphere {name!r}: expected a radius > 0, "
                                                              f"got {radius}")
            geometry = ContactGeometry.Sphere(radius)
        elif el.tag == "ContactHalfSpace":
            geometry = ContactGeometry.HalfSpace()
        elif el.tag == "ContactMesh":
            return el, MESH, None, None
        else:
            return el, None, None, None
        for c in cast("list[_Element]", list(el)):
            if c.tag not in _GEOMETRY_PROPS:
                r.notes.append(f"unknown property <{c.tag}> of {el.tag} {name!r} (line {c.line}) ignored")
        return (el, geometry) + self._placement(el)

    def _placement(self, el: _Element) -> tuple:
        r = self.r
        frame = r.resolve(el, r.child(el, "socket_frame"), "socket_frame")
        base, X_BF = r.frame_in_body(frame)
        bname = "ground" if base.tag == "Ground" else base.get("name")
        mobod = self.bodies.get(bname)
        if mobod is None:
            raise r.error(el, f"{el.tag} {el.get('name')!r}: body {bname!r} has no mobilizer")
        X_FS = Transform(Rotation.from_body_fixed_xyz(r.numbers(el, "orientation", 3, [0.0, 0.0, 0.0])),
                         r.numbers(el, "location", 3, [0.0, 0.0, 0.0]))
        return mobod, X_BF * X_FS


def build_contact_force(r: _Reader, out, el: _Element, geoms: ContactGeometries) -> None:
    """Describe one HuntCrossleyForce or SmoothSphereHalfSpaceForce (``el.tag`` in CONTACT_FORCES)."""
    name = r.new_force(el, out.force_elements)
    sname = out.desc.unique_name(out.forces, _clean_name(name))
    where = dict(line=el.line, element=element_of(el), disabled=None if r.boolean(el, "appliesForce", True) else True)
    if el.tag == "HuntCrossleyForce":
        made = _hunt_crossley(r, out, el, name, sname, geoms, where)
    else:
        made = _smooth(r, out, el, name, sname, geoms, where)
    if made is not None:
        out.force_elements[name] = [made]


def _unknown_props(r: _Reader, el: _Element, known: set) -> None:
    for c in cast("list[_Element]", list(el)):
        if c.tag not in known:
            r.notes.append(f"unknown property <{c.tag}> of {el.tag} {el.get('name')!r} (line {c.line}) ignored")


def _hunt_crossley(r: _Reader, out, el: _Element, name: str, sname: str, geoms: ContactGeometries, where: dict):
    _unknown_props(r, el, _HC_PROPS)
    surfaces: list = []
    holder = r.child(el, "HuntCrossleyForce::ContactParametersSet")
    objs = r.child(holder, "objects") if holder is not None else None
    for p in cast("list[_Element]", list(objs) if objs is not None else []):
        _unknown_props(r, p, _PARAM_PROPS)
        names = r.string(p, "geometry", required=False).split()
        placed = [geoms.get(el, g, r.child(p, "geometry")) for g in names]
        if any(x[1] is None for x in placed):
            bad = next(x[0] for x in placed if x[1] is None)
            _flag_note(r.notes, el, f"uses {bad.tag} {bad.get('name')!r}, which simtk has no contact for")
            return None
        law = [r.number(p, k, 0.0) for k in ("stiffness", "dissipation", "static_friction", "dynamic_friction",
                                              "viscous_friction")]
        for g in (g for g, x in zip(names, placed) if x[1] is not MESH):
            try:  # the element's own check, made here to name the ContactParameters' line
                _law(*law)
            except (TypeError, ValueError) as exc:
                raise r.error(p, f"HuntCrossleyForce {name!r}, geometry {g!r}: {exc}") from None
        # a mesh's contacts are not point contacts: Simbody's Hunt-Crossley skips them
        surfaces += [(geometry, mobod, X_BS, law) for _, geometry, mobod, X_BS in placed if geometry is not MESH]
    return out.desc.add("Force.HuntCrossley", out.forces, sname,
                        transition_velocity=r.number(el, "transition_velocity", 0.01),
                        surface_bodies=[s[1] for s in surfaces], surface_shapes=[s[0].kind for s in surfaces],
                        surface_sizes=[list(s[0].params) for s in surfaces], surface_frames=[s[2] for s in surfaces],
                        surface_laws=[s[3] for s in surfaces], **where)


def _smooth(r: _Reader, out, el: _Element, name: str, sname: str, geoms: ContactGeometries, where: dict):
    _unknown_props(r, el, _SMOOTH_PROPS)
    got = {}
    for sock, tag in (("socket_sphere", "ContactSphere"), ("socket_half_space", "ContactHalfSpace")):
        ref = r.string(el, sock)
        g = ref.rstrip("/").split("/")[-1]
        placed = geoms.get(el, g, r.child(el, sock))
        if placed[0].tag != tag:
            raise r.error(r.child(el, sock), f"SmoothSphereHalfSpaceForce {name!r}: <{sock}> must name a {tag}, "
                                             f"{g!r} is a {placed[0].tag}")
        got[tag] = (g, placed)
    _, (_, sphere, sbody, X_BS) = got["ContactSphere"]
    _, (_, _, hbody, X_BH) = got["ContactHalfSpace"]
    kw = {k: r.number(el, k) for k in sorted(_SMOOTH_PROPS - {"appliesForce", "socket_sphere", "socket_half_space"})
          if r.child(el, k) is not None}
    # the sphere's centre is its frame's origin: its orientation does not matter
    return out.desc.add("Force.SmoothSphereHalfSpace", out.forces, sname, sphere_body=sbody, sphere_location=X_BS.p,
                        radius=sphere.radius, half_space_body=hbody, half_space_frame=X_BH, **kw, **where)
