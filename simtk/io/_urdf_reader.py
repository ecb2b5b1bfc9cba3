"""Reading a URDF file: XML with line numbers, numbers and frames, names, inertias, and the reader that
checks links and joints into a tree."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence
from xml.parsers import expat

import numpy as np

from simtk import (
    Inertia,
    MobilizedBody,
    Rotation,
    Transform,
)

from ._inertia_policy import nearest_physical as _nearest_physical
from .errors import ModelFileError


class UrdfWarning(UserWarning):
    """Something in a URDF file was ignored, repaired or approximated; the message says what."""


@dataclass(frozen=True)
class Geometry:
    """A visual or collision shape of a link, for a viewer or a contact model.

    Attributes
    ----------
    link : str
        The URDF link it was declared in.
    body : MobilizedBody
        The mobilized body it moves with (the link's own, or the one it was merged into).
    X_BG : Transform
        The shape's frame in the body frame (the link's ``<origin>`` composed with the merge
        transform, if any).
    kind : str
        ``"box"``, ``"cylinder"``, ``"sphere"``, ``"mesh"`` or ``"capsule"`` (an extension some
        exporters write).
    size : tuple of float or None
        Box edge lengths (x, y, z), centered on the shape's frame.
    radius, length : float or None
        Cylinder and capsule (about the shape's z axis, centered; a capsule's length is between its cap
        centres) and sphere dimensions.
    filename : str or None
        The mesh reference as written in the file (``package://...``, ``file://...`` or a path).
    path : Path or None
        The mesh file found on disk for ``filename``; None when it was not found (and for
        primitives).
    scale : tuple of float
        Mesh scale factors (x, y, z).
    name : str or None
        The ``<visual name=...>`` / ``<collision name=...>`` attribute.
    material : str or None
        The material name.
    rgba : tuple of float or None
        The material color, when given (in place or by a top-level ``<material>``).
    """

    link: str
    body: MobilizedBody
    X_BG: Transform
    kind: str
    size: tuple | None = None
    radius: float | None = None
    length: float | None = None
    filename: str | None = None
    path: Path | None = None
    scale: tuple = (1.0, 1.0, 1.0)
    name: str | None = None
    material: str | None = None
    rgba: tuple | None = None


# ---------------------------------------------------------------------------------------------
# XML with line numbers
# ---------------------------------------------------------------------------------------------
class _Doc:
    """A parsed file: the element tree and each element's line."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: dict[int, int] = {}
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ModelFileError(f"cannot read the file: {e.strerror or e}", path) from None
        builder = ET.TreeBuilder()
        parser = expat.ParserCreate()
        lines = self.lines

        def start(tag, attrs):
            # Recorded by id: the elements live as long as this document does.
            lines[id(builder.start(tag, attrs))] = parser.CurrentLineNumber

        parser.StartElementHandler = start
        parser.EndElementHandler = builder.end
        parser.CharacterDataHandler = builder.data
        parser.buffer_text = True
        try:
            parser.Parse(data, True)
            self.root = builder.close()
        except expat.ExpatError as e:
            raise ModelFileError(f"malformed XML: {expat.ErrorString(e.code)} (column {e.offset + 1}); "
                                 "expected a well-formed URDF document", path, e.lineno) from None
        except AssertionError:  # TreeBuilder.close() on an unterminated tree (never reached with expat)
            raise ModelFileError("malformed XML: the document ends inside an element", path) from None

    def line(self, el: ET.Element) -> int | None:
        return self.lines.get(id(el))

    def error(self, el: ET.Element | None, message: str) -> ModelFileError:
        return ModelFileError(message, self.path, None if el is None else self.line(el),
                              None if el is None else _describe(el))


def _describe(el: ET.Element) -> str:
    name = el.get("name")
    return f"<{el.tag} name={name!r}>" if name is not None else f"<{el.tag}>"


# ---------------------------------------------------------------------------------------------
# Attribute parsing
# ---------------------------------------------------------------------------------------------
def _floats(doc: _Doc, el: ET.Element, attr: str, n: int, default=None, what: str = "") -> np.ndarray:
    text = el.get(attr)
    if text is None:
        if default is None:
            raise doc.error(el, f"missing attribute {attr!r}: expected {n} number(s){what}")
        return np.array(default, dtype=float)
    parts = text.split()
    try:
        vals = np.array([float(v) for v in parts], dtype=float)
    except ValueError:
        raise doc.error(el, f"attribute {attr}={text!r}: expected {n} number(s){what}") from None
    if len(vals) != n:
        raise doc.error(el, f"attribute {attr}={text!r}: expected {n} number(s){what}, got {len(vals)}")
    if not np.isfinite(vals).all():
        raise doc.error(el, f"attribute {attr}={text!r}: expected finite number(s){what}")
    return vals


def _float(doc: _Doc, el: ET.Element, attr: str, default: float | None = None, what: str = "") -> float:
    return float(_floats(doc, el, attr, 1, None if default is None else [default], what)[0])


def _rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(rpy[0]), math.sin(rpy[0])
    cp, sp = math.cos(rpy[1]), math.sin(rpy[1])
    cy, sy = math.cos(rpy[2]), math.sin(rpy[2])
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _origin(doc: _Doc, parent: ET.Element) -> Transform:
    el = parent.find("origin")
    if el is None:
        return Transform()
    xyz = _floats(doc, el, "xyz", 3, (0.0, 0.0, 0.0))
    rpy = _floats(doc, el, "rpy", 3, (0.0, 0.0, 0.0))
    if not rpy.any():
        return Transform(Rotation(), xyz)
    return Transform(Rotation.from_matrix(_rpy_matrix(rpy)), xyz)


def _frame_with_axis(a: np.ndarray, k: int) -> Rotation:
    """A rotation R whose column k (its k-th axis) is the unit vector ``a``: exact for +-x, +-y, +-z."""
    e = np.zeros(3)
    e[k] = 1.0
    for i in range(3):  # coordinate axes: a signed permutation matrix, no round-off
        for s in (1.0, -1.0):
            if a[i] == s and np.count_nonzero(a) == 1:
                if i == k and s > 0:
                    return Rotation()
                if i == k:  # -e_k: half a turn about the next axis
                    return Rotation.from_matrix(_half_turn(k))
                # a quarter turn about the third axis carries e_k onto s e_i
                j = 3 - i - k
                m = np.zeros((3, 3))
                m[i, k] = s
                m[k, i] = -s
                m[j, j] = 1.0
                if np.linalg.det(m) < 0:
                    m[j, j] = -1.0
                return Rotation.from_matrix(m)
    # general axis: the smallest rotation carrying e_k onto a (Rodrigues' formula)
    c = float(e @ a)
    v = np.cross(e, a)
    s = float(np.linalg.norm(v))
    if s < 1e-300:
        return Rotation() if c > 0 else Rotation(math.pi, (k + 1) % 3)
    return Rotation(math.atan2(s, c), v / s)


def _half_turn(k: int) -> np.ndarray:
    m = -np.eye(3)
    m[(k + 1) % 3, (k + 1) % 3] = 1.0
    return m


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------
_FORBIDDEN = "./:*?"


def _sanitize(name: str, taken: set) -> str:
    """A component name for ``name``: the same unless simtk's name rule refuses it (then changed
    characters become '_'), made unique among ``taken``."""
    s = "".join("_" if ch in _FORBIDDEN else ch for ch in name).strip() or "link"
    if s[0].isdigit():
        s = "_" + s
    if s == "null":
        s = "null_"
    base, k = s, 0
    while s in taken:
        k += 1
        s = f"{base}_{k}"
    taken.add(s)
    return s


# ---------------------------------------------------------------------------------------------
# Inertias
# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# Parsed model (plain data, before any simtk object is made)
# ---------------------------------------------------------------------------------------------
_LINK_CHILDREN = {"inertial", "visual", "collision"}
_LINK_EXTENSIONS = {"contact", "self_filter", "collision_checking", "kinematic", "gravity", "surface"}
_JOINT_CHILDREN = {"origin", "parent", "child", "axis", "dynamics", "limit", "mimic", "safety_controller",
                   "calibration"}
_SHAPE_CHILDREN = {"origin", "geometry", "material", "verbose"}
_JOINT_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"}


@dataclass
class _Link:
    name: str
    el: ET.Element
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    I_C: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class _Joint:
    name: str
    el: ET.Element
    type: str
    parent: str
    child: str
    X_PJ: Transform
    axis: np.ndarray
    limits: tuple | None = None
    damping: float = 0.0
    friction: float = 0.0
    mimic: tuple | None = None


class _Reader:
    def __init__(self, path: Path, nonphysical_inertia: str):
        self.doc = _Doc(path)
        self.path = path
        self.nonphysical_inertia = nonphysical_inertia
        self.unknown: list[str] = []
        self.repaired: dict[str, str] = {}
        self.kept: dict[str, str] = {}
        self.massless_with_inertia: list[str] = []
        root = self.doc.root
        if root.tag != "robot":
            raise self.doc.error(root, f"expected the root element <robot>, got <{root.tag}>")
        self.robot_name = root.get("name") or path.stem
        self.materials: dict[str, tuple | None] = {}
        for m in root.findall("material"):
            self.materials[m.get("name", "")] = self._rgba(m)
        self.links: dict[str, _Link] = {}
        for el in root.findall("link"):
            link = self._link(el)
            if link.name in self.links:
                raise self.doc.error(el, f"duplicate link name {link.name!r} (first defined at line "
                                         f"{self.doc.line(self.links[link.name].el)})")
            self.links[link.name] = link
        if not self.links:
            raise self.doc.error(root, "the robot has no <link> (an unexpanded xacro file?): expected at "
                                       "least one link")
        self.joints: dict[str, _Joint] = {}
        for el in root.findall("joint"):
            j = self._joint(el)
            if j.name in self.joints:
                raise self.doc.error(el, f"duplicate joint name {j.name!r} (first defined at line "
                                         f"{self.doc.line(self.joints[j.name].el)})")
            self.joints[j.name] = j
        self._tree()

    # -- elements -----------------------------------------------------------------------------
    def _note_unknown(self, el: ET.Element, known: set, extensions: Iterable = ()) -> None:
        for ch in el:
            if ch.tag not in known and ch.tag not in extensions:
                self.unknown.append(f"<{ch.tag}> in {_describe(el)} (line {self.doc.line(ch)})")

    def _rgba(self, material: ET.Element):
        color = material.find("color")
        if color is None:
            return None
        rgba = _floats(self.doc, color, "rgba", 4, what=" (r g b a)")
        return tuple(float(v) for v in rgba)

    def _name(self, el: ET.Element, what: str) -> str:
        name = el.get("name")
        if name is None or not name.strip():
            raise self.doc.error(el, f"a {what} needs a non-empty name attribute")
        return name

    def _link(self, el: ET.Element) -> _Link:
        link = _Link(self._name(el, "<link>"), el)
        self._note_unknown(el, _LINK_CHILDREN, _LINK_EXTENSIONS)
        inertials = el.findall("inertial")
        if len(inertials) > 1:
            raise self.doc.error(inertials[1], f"link {link.name!r} has {len(inertials)} <inertial>: expected one")
        if inertials:
            self._inertial(link, inertials[0])
        return link

    def _inertial(self, link: _Link, el: ET.Element) -> None:
        self._note_unknown(el, {"origin", "mass", "inertia"})
        mass_el, inertia_el = el.find("mass"), el.find("inertia")
        if mass_el is None:
            raise self.doc.error(el, f"link {link.name!r}: <inertial> without <mass value=...>")
        m = _float(self.doc, mass_el, "value", what=" (kg)")
        if m < 0:
            raise self.doc.error(mass_el, f"link {link.name!r}: negative mass {m!r}: expected a mass >= 0")
        if inertia_el is None:
            raise self.doc.error(el, f"link {link.name!r}: <inertial> without <inertia ixx=... >")
        g = {k: _float(self.doc, inertia_el, k, 0.0 if k in ("ixy", "ixz", "iyz") else None, " (kg m^2)")
             for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
        I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]],
                      [g["ixz"], g["iyz"], g["izz"]]])
        X_LC = _origin(self.doc, el)
        R = X_LC.R.matrix
        I_L = R @ I @ R.T  # the central inertia, re-expressed from C's axes in the link's
        if m == 0.0:
            if I.any():
                self.massless_with_inertia.append(link.name)
            I_L = np.zeros((3, 3))
        else:
            try:
                Inertia.from_matrix(I_L)
            except ValueError as e:
                if self.nonphysical_inertia == "error":
                    raise self.doc.error(inertia_el, f"link {link.name!r}: the inertia is not physical: {e}") \
                        from None
                if self.nonphysical_inertia == "keep":
                    self.kept[link.name] = str(e)
                else:
                    self.repaired[link.name] = str(e)
                    I_L = _nearest_physical(I_L)
        link.mass, link.com, link.I_C = m, np.array(X_LC.p), I_L

    def _joint(self, el: ET.Element) -> _Joint:
        name = self._name(el, "<joint>")
        self._note_unknown(el, _JOINT_CHILDREN)
        jtype = el.get("type")
        if jtype not in _JOINT_TYPES:
            raise self.doc.error(el, f"joint type {jtype!r}: expected one of {', '.join(sorted(_JOINT_TYPES))}")
        ends = {}
        for tag in ("parent", "child"):
            found = el.findall(tag)
            if len(found) != 1:
                raise self.doc.error(el, f"expected exactly one <{tag} link=...>, got {len(found)}")
            link = found[0].get("link")
            if link is None:
                raise self.doc.error(found[0], f"<{tag}> without a link attribute")
            if link not in self.links:
                raise self.doc.error(found[0], f"{tag} link {link!r} is not defined by any <link>")
            ends[tag] = link
        if ends["parent"] == ends["child"]:
            raise self.doc.error(el, f"the joint connects link {ends['child']!r} to itself")
        axis = np.array([1.0, 0.0, 0.0])
        axis_el = el.find("axis")
        if axis_el is not None and jtype not in ("fixed", "floating"):
            axis = _floats(self.doc, axis_el, "xyz", 3, (1.0, 0.0, 0.0), " (the joint axis)")
            n = float(np.linalg.norm(axis))
            if n < 1e-12:
                raise self.doc.error(axis_el, f"joint {name!r}: the axis {axis.tolist()} is zero: expected a "
                                              "nonzero direction")
            if abs(n - 1.0) > 1e-12:
                axis = axis / n
        j = _Joint(name, el, jtype, ends["parent"], ends["child"], _origin(self.doc, el), axis)
        limit = el.find("limit")
        if limit is not None:  # checked even where unused, so that a typo is not silently accepted
            for attr in ("effort", "velocity"):
                if limit.get(attr) is not None and _float(self.doc, limit, attr) < 0:
                    raise self.doc.error(limit, f"joint {name!r}: negative {attr}: expected a value >= 0")
        if jtype in ("revolute", "prismatic"):
            if limit is None:
                self.unknown.append(f"missing <limit> in {_describe(el)} (line {self.doc.line(el)}): "
                                    "loaded without limits")
            else:
                lo = _float(self.doc, limit, "lower", 0.0)
                hi = _float(self.doc, limit, "upper", 0.0)
                if lo > hi:
                    raise self.doc.error(limit, f"joint {name!r}: lower limit {lo} is above upper limit {hi}")
                j.limits = (lo, hi)
        dyn = el.find("dynamics")
        if dyn is not None:
            j.damping = _float(self.doc, dyn, "damping", 0.0)
            j.friction = _float(self.doc, dyn, "friction", 0.0)
            if j.damping < 0 or j.friction < 0:
                raise self.doc.error(dyn, f"joint {name!r}: negative damping or friction: expected values >= 0")
        mimic = el.find("mimic")
        if mimic is not None:
            leader = mimic.get("joint")
            if not leader:
                raise self.doc.error(mimic, "<mimic> without a joint attribute")
            j.mimic = (leader, _float(self.doc, mimic, "multiplier", 1.0), _float(self.doc, mimic, "offset", 0.0))
        return j

    # -- tree -----------------------------------------------------------------------------------
    def _tree(self) -> None:
        parent_joint: dict[str, _Joint] = {}
        self.children: dict[str, list[_Joint]] = {name: [] for name in self.links}
        for j in self.joints.values():
            if j.child in parent_joint:
                raise self.doc.error(j.el, f"link {j.child!r} is the child of joints {parent_joint[j.child].name!r} "
                                           f"and {j.name!r}: a URDF is a tree, each link has one parent joint")
            parent_joint[j.child] = j
            self.children[j.parent].append(j)
        roots = [name for name in self.links if name not in parent_joint]
        if not roots:
            j = next(iter(self.joints.values()))
            raise self.doc.error(j.el, "every link is the child of a joint, so the joints form a cycle: "
                                       "expected a tree with one root link")
        if len(roots) > 1:
            raise self.doc.error(self.links[roots[1]].el,
                                 f"the links form {len(roots)} separate trees (roots {', '.join(map(repr, roots))}): "
                                 "expected one tree with one root link")
        self.root = roots[0]
        self.parent_joint = parent_joint
        order, stack = [], [self.root]
        seen = set()
        while stack:
            name = stack.pop()
            seen.add(name)
            order.append(name)
            stack.extend(j.child for j in reversed(self.children[name]))
        if len(order) != len(self.links):
            cyc = [n for n in self.links if n not in seen]
            j = parent_joint[cyc[0]]
            raise self.doc.error(j.el, f"the joints form a cycle through links {', '.join(map(repr, cyc))}: "
                                       "expected a tree")
        for j in self.joints.values():
            # The coupling is not applied anyway, so a leader that does not exist is reported, not fatal.
            if j.mimic is not None and j.mimic[0] not in self.joints:
                self.unknown.append(f"<mimic joint={j.mimic[0]!r}> in {_describe(j.el)} "
                                    f"(line {self.doc.line(j.el.find('mimic'))}): no such joint")
        self.order = order  # depth first, parents before children, children in file order

    # -- geometry -------------------------------------------------------------------------------
    def shapes(self, link: _Link, tag: str):
        """(name, X_LG, kind, dims dict, material, rgba) for the link's <visual> or <collision>."""
        for el in link.el.findall(tag):
            self._note_unknown(el, _SHAPE_CHILDREN)
            geom = el.find("geometry")
            if geom is None or len(geom) == 0:
                raise self.doc.error(el, f"link {link.name!r}: <{tag}> without a shape in <geometry>: expected "
                                         "one of box, cylinder, sphere, mesh")
            shape = geom[0]
            dims: dict = {}
            if shape.tag == "box":
                dims["size"] = tuple(float(v) for v in _floats(self.doc, shape, "size", 3))
            elif shape.tag == "cylinder":
                dims["radius"] = _float(self.doc, shape, "radius")
                dims["length"] = _float(self.doc, shape, "length")
            elif shape.tag == "capsule":  # an extension (Gazebo's SDF, some exporters): axis z, cap centres
                dims["radius"] = _float(self.doc, shape, "radius")
                dims["length"] = _float(self.doc, shape, "length")
            elif shape.tag == "sphere":
                dims["radius"] = _float(self.doc, shape, "radius")
            elif shape.tag == "mesh":
                fname = shape.get("filename")
                if not fname:
                    raise self.doc.error(shape, "<mesh> without a filename")
                dims["filename"] = fname
                dims["scale"] = tuple(float(v) for v in _floats(self.doc, shape, "scale", 3, (1.0, 1.0, 1.0)))
            else:
                self.unknown.append(f"<{shape.tag}> shape in {_describe(link.el)} (line {self.doc.line(shape)}): "
                                    "skipped")
                continue
            for k in ("size", "radius", "length"):
                v = dims.get(k)
                if v is not None and min(np.atleast_1d(v)) < 0:
                    raise self.doc.error(shape, f"negative {k} {v}: expected dimensions >= 0")
            material = el.find("material")
            mname = rgba = None
            if material is not None:
                mname = material.get("name")
                rgba = self._rgba(material)
                if rgba is None:
                    rgba = self.materials.get(mname)
            yield el.get("name"), _origin(self.doc, el), shape.tag, dims, mname, rgba


# ---------------------------------------------------------------------------------------------
# Mesh files
# ---------------------------------------------------------------------------------------------
def _resolve_mesh(filename: str, urdf_dir: Path, package_dirs: Sequence[Path]) -> Path | None:
    if filename.startswith("package://"):
        # some exporters write package:///name/... (an empty host); the package is still "name"
        rest = filename[len("package://"):].lstrip("/")
        pkg, _, sub = rest.partition("/")
        candidates = [d / pkg / sub for d in package_dirs]
        candidates += [d / sub for d in package_dirs if d.name == pkg]
        # the package folder among the URDF's ancestors (how installed description packages look)
        candidates += [a / sub for a in urdf_dir.parents if a.name == pkg]
        # the usual layout of a description package: <package>/urdf/robot.urdf next to <package>/meshes
        candidates += [urdf_dir.parent / sub]
    elif filename.startswith("file://"):
        candidates = [Path(filename[len("file://"):])]
    else:
        p = Path(filename)
        candidates = [p if p.is_absolute() else urdf_dir / p]
    for c in candidates:
        if c.is_file():
            return c
    return None
