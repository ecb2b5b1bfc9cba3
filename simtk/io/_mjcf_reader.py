"""The MJCF body tree as plain data: bodies with their frames and mass properties (as MuJoCo's compiler
makes them), joints, geoms, actuators, options; and what is not built, for the one warning."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _mjcf_inertia as mi
from ._mjcf_xml import _ACTUATOR_TAGS, _describe, _Mjcf, z_to_matrix

__all__: list[str] = []

_JOINT_TYPES = ("hinge", "slide", "ball", "free")
_GEOM_TYPES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf")
_SOLIDS = ("sphere", "capsule", "ellipsoid", "cylinder", "box")
#: top-level sections read; the others are named in the warning when they hold something
_READ = {"compiler", "option", "default", "worldbody", "actuator", "size", "visual", "statistic", "asset",
         "include"}
#: attributes that change the dynamics and are not built: named in the warning when given (not zero)
_UNBUILT_ATTRS = {"body": ("gravcomp",), "joint": ("springdamper", "actuatorfrcrange", "actuatorgravcomp"),
                  "geom": ("shellinertia", "fluidshape"),
                  "actuator": ("dampratio", "actlimited", "actrange", "actearly", "lengthrange")}
_OPTION_ATTRS = ("wind", "magnetic", "o_margin", "o_solref", "o_solimp", "o_friction")
_NOT_BUILT = {"tendon": "tendon(s)", "equality": "equality constraint(s)", "sensor": "sensor(s)",
              "contact": "contact pair/exclude element(s)", "keyframe": "keyframe(s)", "custom": "custom element(s)",
              "extension": "extension(s)", "deformable": "deformable(s)"}


@dataclass
class MjcfGeom:
    """A geom of the file: its body, shape and frame, for a viewer or a later contact model.

    Attributes
    ----------
    name : str or None
    body : str
        The MuJoCo body it belongs to (``"world"`` for the worldbody's).
    kind : str
        MuJoCo's geom type (``"sphere"``, ``"capsule"``, ``"box"``, ``"plane"``, ``"mesh"``, ...).
    size : ndarray
        The size as MuJoCo reads it (radii and half lengths; ``fromto`` already applied).
    R, p : ndarray
        Its frame in the body frame (3x3 rotation and position).
    contype, conaffinity, condim, group : int
    friction : ndarray, shape (3,)
    mass : float
        What it adds to its body's mass (0 when its body's inertia is not from geoms).
    mesh : str or None
    solref : ndarray, shape (2,)
        MuJoCo's contact reference (timeconst, dampratio), or (-stiffness, -damping).
    solimp : ndarray, shape (5,)
        MuJoCo's impedance (dmin, dmax, width, midpoint, power).
    margin, gap : float
        MuJoCo's contact margin and gap.
    """

    name: str | None
    body: str
    kind: str
    size: np.ndarray
    R: np.ndarray
    p: np.ndarray
    contype: int = 1
    conaffinity: int = 1
    condim: int = 3
    group: int = 0
    friction: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.005, 0.0001]))
    mass: float = 0.0
    mesh: str | None = None
    solref: np.ndarray = field(default_factory=lambda: np.array([0.02, 1.0]))
    solimp: np.ndarray = field(default_factory=lambda: np.array([0.9, 0.95, 0.001, 0.5, 2.0]))
    margin: float = 0.0
    gap: float = 0.0


@dataclass
class _Joint:
    name: str
    el: ET.Element
    type: str
    pos: np.ndarray
    axis: np.ndarray
    range: tuple | None = None
    damping: float = 0.0
    stiffness: float = 0.0
    springref: float = 0.0
    armature: float = 0.0
    ref: float = 0.0
    frictionloss: float = 0.0
    body: str = ""

    @property
    def nq(self) -> int:
        return {"hinge": 1, "slide": 1, "ball": 4, "free": 7}[self.type]

    @property
    def nv(self) -> int:
        return {"hinge": 1, "slide": 1, "ball": 3, "free": 6}[self.type]


@dataclass
class _Body:
    name: str
    el: ET.Element | None
    parent: int
    R: np.ndarray
    p: np.ndarray
    joints: list = field(default_factory=list)
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    inertial: bool = False
    parts: list = field(default_factory=list)


@dataclass
class _Actuator:
    name: str
    el: ET.Element
    joint: str
    gear: float
    gain: float
    bias: tuple
    ctrlrange: tuple | None


class _Reader:
    """The file read into bodies (MuJoCo's order: depth first, the worldbody first), joints in MuJoCo's
    order (their qpos and qvel layout), geoms, actuators and options."""

    def __init__(self, path: Path):
        self.path = path
        self.x = x = _Mjcf(path)
        self.unbuilt: list[str] = []
        self.bodies: list[_Body] = [_Body("world", None, -1, np.eye(3), np.zeros(3))]
        self.joints: list[_Joint] = []
        self.geoms: list[MjcfGeom] = []
        self.actuators: list[_Actuator] = []
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.timestep = 0.002
        self.excludes: list[tuple[str, str]] = []  # <contact><exclude> body pairs
        self.pairs = 0  # <contact><pair> elements (not built)
        for o in x.root.findall("option"):
            self._option(o)
        self.meshes = {m.get("name") or Path(m.get("file", "")).stem: m
                       for a in x.root.findall("asset") for m in a.findall("mesh")}
        names: set = set()
        for wb in x.root.findall("worldbody"):
            self._children(wb, 0, None, names)
        self._mass()
        jnames = {j.name for j in self.joints}
        self._n_actuators = 0  # MuJoCo's index of the next actuator (names unnamed ones)
        for sec in x.root.findall("actuator"):
            for el in sec:
                self._actuator(el, jnames)
                self._n_actuators += 1
        for sec in x.root.findall("contact"):
            self._contact(sec)
        contact = [g for g in self.geoms if g.contype or g.conaffinity]
        if contact:
            self.unbuilt.append(f"{len(contact)} contact geom(s) (kept in MjcfModel.geoms; no contact surfaces)")
        for tag in sorted({c.tag for c in x.root} - _READ):
            n = sum(len(c) for c in x.root.findall(tag))
            what = _NOT_BUILT.get(tag, f"<{tag}> element(s)")
            if n or tag not in _NOT_BUILT:
                self.unbuilt.append(f"{n} {what} (<{tag}>, line {x.line(x.root.find(tag))})")

    def _contact(self, sec: ET.Element) -> None:
        bodies = {b.name for b in self.bodies}
        for el in sec:
            if el.tag == "exclude":
                pair = (el.get("body1"), el.get("body2"))
                for b in pair:
                    if b not in bodies:
                        raise self.x.error(el, f"exclude: body {b!r} is not defined")
                self.excludes.append((str(pair[0]), str(pair[1])))
            elif el.tag == "pair":
                self.pairs += 1

    def _note_attrs(self, el: ET.Element, a: dict, kind: str) -> None:
        for k in _UNBUILT_ATTRS[kind]:
            v = a.get(k)
            if v is not None and v.strip() not in ("0", "false", "0 0", "0 0 0", "none", "auto"):
                self.unbuilt.append(f"{k}={v!r} of {_describe(el)} (line {self.x.line(el)})")

    # -- option -------------------------------------------------------------------------------------
    def _option(self, el: ET.Element) -> None:
        x = self.x
        if el.get("gravity") is not None:
            self.gravity = x.numbers(el, el.get("gravity"), "gravity", 3)
        if el.get("timestep") is not None:
            self.timestep = x.number(el, el.get("timestep"), "timestep")
            if self.timestep <= 0:
                raise x.error(el, f"timestep={el.get('timestep')!r}: expected a positive time step")
        for k in ("density", "viscosity"):
            if el.get(k) is not None and x.number(el, el.get(k), k) != 0.0:
                self.unbuilt.append(f"the fluid's {k} {el.get(k)} (<option>, line {x.line(el)}): no fluid forces")
        for k in _OPTION_ATTRS:
            if el.get(k) is not None and not (x.numbers(el, el.get(k), k) == 0).all():
                self.unbuilt.append(f"<option {k}={el.get(k)!r}> (line {x.line(el)})")
        for fl in el.findall("flag"):
            for k, v in fl.attrib.items():
                if k == "gravity" and v == "disable":
                    self.gravity = np.zeros(3)
                elif k in ("passive", "actuation", "clampctrl", "override") and v != \
                        ("disable" if k == "override" else "enable"):
                    self.unbuilt.append(f"<flag {k}={v!r}> (line {x.line(fl)})")

    # -- bodies -------------------------------------------------------------------------------------
    def _children(self, el: ET.Element, parent: int, childclass: str | None, names: set,
                  frame: tuple | None = None) -> None:
        """Read ``el``'s bodies, joints, geoms and inertial into body ``parent``; ``frame`` (R, p): the
        enclosing ``<frame>`` elements' pose in the body, applied to the bodies and geoms inside."""
        x = self.x
        for ch in el:
            if ch.tag == "body":
                self._body(ch, parent, childclass, names, frame)
            elif ch.tag in ("joint", "freejoint"):
                if parent == 0:
                    raise x.error(ch, "a joint in the worldbody: joints belong in a <body>")
                if frame is not None:
                    raise x.error(ch, "a joint inside a <frame>: expected joints directly in their <body>")
                self._joint(ch, parent, childclass)
            elif ch.tag == "geom":
                self._geom(ch, parent, childclass, frame)
            elif ch.tag == "inertial":
                if parent == 0:
                    raise x.error(ch, "an <inertial> in the worldbody: the world has no mass")
                if frame is not None:
                    raise x.error(ch, "an <inertial> inside a <frame>: expected it directly in its <body>")
                self._inertial(ch, self.bodies[parent])
            elif ch.tag == "frame":
                cc = ch.get("childclass") or childclass
                if cc is not None and cc not in x.defaults:
                    raise x.error(ch, f"childclass={cc!r}: no <default class={cc!r}> is defined")
                R, p = x.frame(ch, dict(ch.attrib))
                self._children(ch, parent, cc, names, (R, p) if frame is None else _compose(frame, (R, p)))
            elif ch.tag in ("composite", "replicate", "attach", "flexcomp"):
                raise x.error(ch, f"<{ch.tag}> is not supported: expected plain bodies")
            elif ch.tag not in ("site", "camera", "light", "plugin"):
                self.unbuilt.append(f"<{ch.tag}> in {_describe(el)} (line {x.line(ch)})")

    def _body(self, el: ET.Element, parent: int, childclass: str | None, names: set, frame: tuple | None) -> None:
        x = self.x
        a = dict(el.attrib)
        self._note_attrs(el, a, "body")
        R, p = x.frame(el, a)
        if frame is not None:
            R, p = _compose(frame, (R, p))
        name = el.get("name") or f"body{len(self.bodies)}"
        if name in names or name == "world":
            raise x.error(el, f"duplicate body name {name!r}")
        names.add(name)
        if el.get("mocap") == "true":
            self.unbuilt.append(f"mocap body {name!r} (line {x.line(el)}): welded where it is")
        cc = el.get("childclass") or childclass
        if cc is not None and cc not in x.defaults:
            raise x.error(el, f"childclass={cc!r}: no <default class={cc!r}> is defined")
        self.bodies.append(_Body(name, el, parent, R, p))
        self._children(el, len(self.bodies) - 1, cc, names)

    def _joint(self, el: ET.Element, b: int, childclass: str | None) -> None:
        x = self.x
        body = self.bodies[b]
        if el.tag == "freejoint":
            a = {"type": "free", **el.attrib}
        else:
            a = x.attrs(el, childclass, "joint")
            self._note_attrs(el, a, "joint")
        jtype = a.get("type", "hinge")
        if jtype not in _JOINT_TYPES:
            raise x.error(el, f"joint type {jtype!r}: expected one of {', '.join(_JOINT_TYPES)}")
        name = el.get("name") or f"joint{len(self.joints)}"
        if any(j.name == name for j in self.joints):
            raise x.error(el, f"duplicate joint name {name!r}")
        pos = x.numbers(el, a["pos"], "pos", 3) if "pos" in a else np.zeros(3)
        axis = x.numbers(el, a["axis"], "axis", 3) if "axis" in a else np.array([0.0, 0.0, 1.0])
        n = float(np.linalg.norm(axis))
        if n < 1e-10:
            raise x.error(el, f"joint {name!r}: the axis {axis.tolist()} is zero: expected a direction")
        j = _Joint(name, el, jtype, pos, axis / n, body=body.name)
        angular = jtype == "hinge"
        conv = x.angle if angular else float
        for k in ("damping", "stiffness", "armature", "frictionloss"):
            if k in a:
                setattr(j, k, x.number(el, a[k], k))
                if getattr(j, k) < 0:
                    raise x.error(el, f"joint {name!r}: negative {k} {a[k]}: expected a value >= 0")
        for k in ("springref", "ref"):
            if k in a:
                setattr(j, k, conv(x.number(el, a[k], k)))
        if jtype in ("hinge", "slide", "ball") and x.limited(el, a, "limited", "range"):
            if "range" not in a:
                raise x.error(el, f"joint {name!r}: limited without a range")
            lo, hi = (conv(v) if jtype != "ball" else x.angle(v) for v in x.numbers(el, a["range"], "range", 2))
            if lo > hi:
                raise x.error(el, f"joint {name!r}: range {a['range']!r} has its lower limit above the upper")
            j.range = (lo, hi)
        if jtype == "free" and (b == 0 or self.bodies[b].parent != 0 or body.joints):
            raise x.error(el, f"free joint {name!r}: expected the only joint of a child of the worldbody")
        if jtype == "ball" and j.ref != 0.0:
            raise x.error(el, f"ball joint {name!r}: a ref is not defined for ball joints")
        body.joints.append(j)
        self.joints.append(j)

    def _inertial(self, el: ET.Element, body: _Body) -> None:
        x = self.x
        a = dict(el.attrib)
        if "mass" not in a or "pos" not in a:
            raise x.error(el, "an <inertial> needs mass and pos")
        m = x.number(el, a["mass"], "mass")
        if m < 0:
            raise x.error(el, f"negative mass {a['mass']}: expected a mass >= 0")
        R, p = x.frame(el, a)
        if ("diaginertia" in a) == ("fullinertia" in a):
            raise x.error(el, "expected one of diaginertia and fullinertia")
        if "diaginertia" in a:
            I = R @ np.diag(x.numbers(el, a["diaginertia"], "diaginertia", 3)) @ R.T
        else:
            if any(k in a for k in ("quat", "euler", "axisangle", "xyaxes", "zaxis")):
                raise x.error(el, "fullinertia is in the body frame: an orientation is not allowed with it")
            v = x.numbers(el, a["fullinertia"], "fullinertia", 6)
            I = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
        body.inertial = True
        body.mass, body.com, body.inertia = m, p, I

    def _geom(self, el: ET.Element, b: int, childclass: str | None, frame: tuple | None = None) -> None:
        x = self.x
        a = x.attrs(el, childclass, "geom")
        self._note_attrs(el, a, "geom")
        kind = a.get("type", "sphere")
        if kind not in _GEOM_TYPES:
            raise x.error(el, f"geom type {kind!r}: expected one of {', '.join(_GEOM_TYPES)}")
        size = np.zeros(3)
        if "size" in a:
            s = x.numbers(el, a["size"], "size", (1, 2, 3))
            size[:len(s)] = s
        if "fromto" in a:
            if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
                raise x.error(el, f"fromto on a {kind} geom: expected a capsule, cylinder, box or ellipsoid")
            ft = x.numbers(el, a["fromto"], "fromto", 6)
            d = ft[3:] - ft[:3]
            L = float(np.linalg.norm(d))
            if L < 1e-10:
                raise x.error(el, "fromto: the two points coincide")
            R, p = z_to_matrix(d / L), 0.5 * (ft[:3] + ft[3:])
            size[1 if kind in ("capsule", "cylinder") else 2] = 0.5 * L
        else:
            R, p = x.frame(el, a)
        if frame is not None:
            R, p = _compose(frame, (R, p))
        g = MjcfGeom(el.get("name"), self.bodies[b].name, kind, size, R, p, mesh=a.get("mesh"))
        for k in ("contype", "conaffinity", "condim", "group"):
            if k in a:
                setattr(g, k, int(x.number(el, a[k], k)))
        if "friction" in a:
            f = x.numbers(el, a["friction"], "friction", (1, 2, 3))
            g.friction[:len(f)] = f
        if "solref" in a:
            g.solref = x.numbers(el, a["solref"], "solref", 2)
        if "solimp" in a:
            v = x.numbers(el, a["solimp"], "solimp", (3, 4, 5))
            g.solimp[:len(v)] = v
        for k in ("margin", "gap"):
            if k in a:
                setattr(g, k, x.number(el, a[k], k))
        if kind in _SOLIDS and (size[:{"sphere": 1, "capsule": 2, "cylinder": 2}.get(kind, 3)] <= 0).any():
            raise x.error(el, f"a {kind} geom with size {a.get('size')!r}: expected positive dimensions")
        self.geoms.append(g)
        self._geom_mass(el, a, g, b)

    def _geom_mass(self, el: ET.Element, a: dict, g: MjcfGeom, b: int) -> None:
        x = self.x
        body = self.bodies[b]
        if b == 0 or not 0 <= g.group <= 5 or x.compiler.inertiafromgeom == "false":
            return
        if g.kind in ("plane", "hfield", "sdf"):
            return
        if g.kind not in _SOLIDS:  # refused in _mass if the body's inertia is from its geoms
            body.parts.append((None, g.p, None, g, el))
            return
        vol = mi.volume(g.kind, g.size)
        if "mass" in a:
            m = x.number(el, a["mass"], "mass")
        else:
            rho = x.number(el, a["density"], "density") if "density" in a else 1000.0
            m = rho * vol
        if m < 0:
            raise x.error(el, f"negative geom mass {m}: expected a mass >= 0")
        I = g.R @ np.diag(mi.principal_inertia(g.kind, g.size, m)) @ g.R.T
        g.mass = m
        body.parts.append((m, g.p, I, g, el))

    def _mass(self) -> None:
        """Each body's mass properties: its <inertial>, or its geoms' (``inertiafromgeom``), then the
        compiler's settotalmass, boundmass and boundinertia."""
        c = self.x.compiler
        for body in self.bodies[1:]:
            use_geoms = c.inertiafromgeom == "true" or (c.inertiafromgeom == "auto" and not body.inertial)
            if use_geoms:
                for pt in body.parts:
                    if pt[0] is None:
                        raise self.x.error(pt[4], f"the inertia of {pt[3].kind} geoms is not computed yet: give "
                                                  f"body {body.name!r} an <inertial>, or the geom a group outside 0..5")
                body.mass, body.com, body.inertia = mi.combine([pt[:3] for pt in body.parts])
            else:
                for pt in body.parts:
                    pt[3].mass = 0.0
        for body in self.bodies[1:]:
            if c.boundmass > 0 and body.mass < c.boundmass:
                body.mass = c.boundmass
            if c.boundinertia > 0:
                w, V = np.linalg.eigh(body.inertia)
                body.inertia = V @ np.diag(np.maximum(w, c.boundinertia)) @ V.T
        if c.settotalmass > 0:
            total = sum(body.mass for body in self.bodies[1:])
            if total > 0:
                s = c.settotalmass / total
                for body in self.bodies[1:]:
                    body.mass *= s
                    body.inertia = body.inertia * s

    # -- actuators ----------------------------------------------------------------------------------
    def _actuator(self, el: ET.Element, joints: set) -> None:
        x = self.x
        if el.tag not in _ACTUATOR_TAGS:
            raise x.error(el, f"unknown actuator <{el.tag}>: expected one of {', '.join(_ACTUATOR_TAGS)}")
        a = x.attrs(el, None, "actuator")
        self._note_attrs(el, a, "actuator")
        name = el.get("name") or f"actuator{self._n_actuators}"
        if any(t in a for t in ("tendon", "site", "body", "jointinparent", "cranksite")):
            self.unbuilt.append(f"actuator {name!r} (line {x.line(el)}): only joint transmissions are built")
            return
        if "joint" not in a:
            raise x.error(el, f"actuator {name!r}: no transmission (joint=...)")
        if a["joint"] not in joints:
            raise x.error(el, f"actuator {name!r}: joint {a['joint']!r} is not defined")
        gear = x.numbers(el, a.get("gear", "1"), "gear", (1, 2, 3, 4, 5, 6))
        j = next(jj for jj in self.joints if jj.name == a["joint"])
        if j.type not in ("hinge", "slide"):
            self.unbuilt.append(f"actuator {name!r} on {j.type} joint {j.name!r} (line {x.line(el)})")
            return
        tag = el.tag
        gain, bias = 1.0, (0.0, 0.0, 0.0)
        if tag == "general":
            if a.get("dyntype", "none") != "none" or a.get("gaintype", "fixed") != "fixed" or \
                    a.get("biastype", "none") not in ("none", "affine"):
                self.unbuilt.append(f"actuator {name!r} (line {x.line(el)}): only dyntype none, gaintype fixed "
                                    "and biastype none or affine are built")
                return
            gain = float(x.numbers(el, a.get("gainprm", "1"), "gainprm", tuple(range(1, 11)))[0])
            if a.get("biastype", "none") == "affine":
                bp = np.zeros(3)
                v = x.numbers(el, a.get("biasprm", "0"), "biasprm", tuple(range(1, 11)))
                bp[:min(3, len(v))] = v[:3]
                bias = (float(bp[0]), float(bp[1]), float(bp[2]))
        elif tag == "position":
            kp = x.number(el, a.get("kp", "1"), "kp")
            kv = x.number(el, a.get("kv", "0"), "kv")
            gain, bias = kp, (0.0, -kp, -kv)
        elif tag == "velocity":
            kv = x.number(el, a.get("kv", "1"), "kv")
            gain, bias = kv, (0.0, 0.0, -kv)
        elif tag != "motor":
            self.unbuilt.append(f"<{tag}> actuator {name!r} (line {x.line(el)})")
            return
        rng = None
        inherit = x.number(el, a["inheritrange"], "inheritrange") if tag == "position" and "inheritrange" in a else 0.0
        if inherit > 0:  # the joint's range about its middle, scaled (MuJoCo's position actuators)
            if j.range is None:
                raise x.error(el, f"actuator {name!r}: inheritrange from joint {j.name!r}, which has no range")
            mid, half = 0.5 * (j.range[0] + j.range[1]), 0.5 * inherit * (j.range[1] - j.range[0])
            rng = (mid - half, mid + half)
        elif x.limited(el, a, "ctrllimited", "ctrlrange"):
            lo, hi = x.numbers(el, a["ctrlrange"], "ctrlrange", 2)
            if lo > hi:
                raise x.error(el, f"actuator {name!r}: ctrlrange {a['ctrlrange']!r} has its lower bound above the "
                                  "upper")
            rng = (float(lo), float(hi))
        if x.limited(el, a, "forcelimited", "forcerange"):
            self.unbuilt.append(f"the force range of actuator {name!r} (line {x.line(el)}): forces not clamped")
        if any(name == b.name for b in self.actuators):
            raise x.error(el, f"duplicate actuator name {name!r}")
        self.actuators.append(_Actuator(name, el, j.name, float(gear[0]), gain, bias, rng))


def _compose(outer: tuple, inner: tuple) -> tuple:
    """(R, p) of a pose ``inner`` given in the frame ``outer``, in ``outer``'s own parent."""
    return outer[0] @ inner[0], outer[0] @ inner[1] + outer[1]
