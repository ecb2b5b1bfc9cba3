"""Reading MJCF text: XML with each element's file and line, ``<include>`` expanded, ``<default>`` classes,
``<compiler>`` settings, numbers and MuJoCo's ways of writing an orientation.

Nothing here makes a simtk element: the reader (`simtk.io._mjcf_reader`) asks for an element's
attributes with its class defaults applied (`_Mjcf.attrs`) and for frames (`_Mjcf.frame`).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

import numpy as np

from .errors import ModelFileError

__all__: list[str] = []


class MjcfWarning(UserWarning):
    """Something in an MJCF file was not built as written; the message says what."""


def _describe(el: ET.Element) -> str:
    name = el.get("name")
    return f"<{el.tag} name={name!r}>" if name is not None else f"<{el.tag}>"


class _Source:
    """Where each element came from: (file, line), kept by element id while the tree lives."""

    def __init__(self) -> None:
        self.where: dict[int, tuple[Path, int]] = {}
        self.keep: list = []

    def parse(self, path: Path, including: ET.Element | None = None) -> ET.Element:
        try:
            data = path.read_bytes()
        except OSError as e:
            if including is not None:
                raise self.error(including, f"cannot read the included file {str(path)!r}: {e.strerror or e}") \
                    from None
            raise ModelFileError(f"cannot read the file: {e.strerror or e}", path) from None
        builder = ET.TreeBuilder()
        parser = expat.ParserCreate()
        where = self.where

        def start(tag, attrs):
            where[id(builder.start(tag, attrs))] = (path, parser.CurrentLineNumber)

        parser.StartElementHandler = start
        parser.EndElementHandler = builder.end
        parser.buffer_text = True
        try:
            parser.Parse(data, True)
            root = builder.close()
        except expat.ExpatError as e:
            raise ModelFileError(f"malformed XML: {expat.ErrorString(e.code)} (column {e.offset + 1}); "
                                 "expected a well-formed MJCF document", path, e.lineno) from None
        self.keep.append(root)
        return root

    def line(self, el: ET.Element) -> int | None:
        w = self.where.get(id(el))
        return None if w is None else w[1]

    def file(self, el: ET.Element) -> Path | None:
        w = self.where.get(id(el))
        return None if w is None else w[0]

    def error(self, el: ET.Element | None, message: str) -> ModelFileError:
        if el is None:
            return ModelFileError(message)
        return ModelFileError(message, self.file(el), self.line(el), _describe(el))


def _expand_includes(src: _Source, el: ET.Element, base: Path, depth: int = 0) -> None:
    """Replace each ``<include file=...>`` below ``el`` by the children of the included ``<mujoco>``
    (files relative to the main model's folder, as MuJoCo's compiler resolves them)."""
    k = 0
    while k < len(el):
        ch = el[k]
        if ch.tag != "include":
            _expand_includes(src, ch, base, depth)
            k += 1
            continue
        fname = ch.get("file")
        if not fname:
            raise src.error(ch, "<include> without a file attribute")
        if depth > 20:
            raise src.error(ch, "includes nested more than 20 deep (an include cycle?)")
        sub = src.parse(base / fname, ch)
        if sub.tag != "mujoco":
            raise src.error(sub, f"the included file's root is <{sub.tag}>: expected <mujoco>")
        _expand_includes(src, sub, base, depth + 1)
        el.remove(ch)
        for j, part in enumerate(list(sub)):
            el.insert(k + j, part)
        k += len(sub)


@dataclass
class _Compiler:
    degree: bool = True
    eulerseq: str = "xyz"
    inertiafromgeom: str = "auto"
    autolimits: bool = True
    meshdir: str = ""
    settotalmass: float = -1.0
    boundmass: float = 0.0
    boundinertia: float = 0.0
    balanceinertia: bool = False


#: the default-class element kinds; all actuator shortcuts share one default (MuJoCo's "general")
_ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle",
                  "adhesion")
_DEFAULT_KIND = {t: "actuator" for t in _ACTUATOR_TAGS}


class _Mjcf:
    """The parsed file: the root ``<mujoco>``, compiler settings, default classes, angle conversion."""

    def __init__(self, path: Path):
        self.path = path
        self.src = _Source()
        root = self.src.parse(path)
        if root.tag != "mujoco":
            raise self.src.error(root, f"expected the root element <mujoco>, got <{root.tag}>")
        _expand_includes(self.src, root, path.resolve().parent)
        self.root = root
        self.model_name = root.get("model") or path.stem
        self.compiler = _Compiler()
        for c in root.findall("compiler"):
            self._compiler(c)
        # class name -> {kind: {attribute: text}}; "main" is the top-level <default>
        self.defaults: dict[str, dict[str, dict[str, str]]] = {"main": {}}
        self.default_el: dict[str, ET.Element] = {}
        for d in root.findall("default"):
            self._default(d, None)

    # -- errors -------------------------------------------------------------------------------------
    def error(self, el: ET.Element | None, message: str) -> ModelFileError:
        return self.src.error(el, message)

    def line(self, el: ET.Element) -> int | None:
        return self.src.line(el)

    # -- compiler -----------------------------------------------------------------------------------
    def _compiler(self, el: ET.Element) -> None:
        c = self.compiler
        angle = el.get("angle")
        if angle is not None:
            if angle not in ("degree", "radian"):
                raise self.error(el, f"angle={angle!r}: expected 'degree' or 'radian'")
            c.degree = angle == "degree"
        seq = el.get("eulerseq")
        if seq is not None:
            if len(seq) != 3 or any(ch not in "xyzXYZ" for ch in seq):
                raise self.error(el, f"eulerseq={seq!r}: expected three of x, y, z, X, Y, Z")
            c.eulerseq = seq
        ifg = el.get("inertiafromgeom")
        if ifg is not None:
            if ifg not in ("auto", "true", "false"):
                raise self.error(el, f"inertiafromgeom={ifg!r}: expected 'auto', 'true' or 'false'")
            c.inertiafromgeom = ifg
        if el.get("autolimits") is not None:
            c.autolimits = self.boolean(el, el.get("autolimits"), "autolimits")
        if el.get("balanceinertia") is not None:
            c.balanceinertia = self.boolean(el, el.get("balanceinertia"), "balanceinertia")
        coord = el.get("coordinate")
        if coord not in (None, "local"):
            raise self.error(el, f"coordinate={coord!r}: only local coordinates are supported (as MuJoCo 3)")
        c.meshdir = el.get("meshdir", c.meshdir)
        for k in ("settotalmass", "boundmass", "boundinertia"):
            if el.get(k) is not None:
                setattr(c, k, self.number(el, el.get(k), k))

    # -- defaults -----------------------------------------------------------------------------------
    def _default(self, el: ET.Element, parent: str | None) -> None:
        name = el.get("class")
        if parent is None:
            name = name or "main"
        elif name is None:
            raise self.error(el, "a nested <default> needs a class attribute")
        if name in self.default_el:
            raise self.error(el, f"default class {name!r} is defined twice (first at line "
                                 f"{self.line(self.default_el[name])})")
        self.default_el[name] = el
        inherited = self.defaults.get(parent or "main", {}) if parent is not None else {}
        own = {k: dict(v) for k, v in inherited.items()}
        for ch in el:
            if ch.tag == "default":
                continue
            kind = _DEFAULT_KIND.get(ch.tag, ch.tag)
            own.setdefault(kind, {}).update(ch.attrib)
            if ch.tag in _ACTUATOR_TAGS and ch.tag != "general":
                own[kind]["__shortcut__"] = ch.tag
        self.defaults[name] = own
        for ch in el:
            if ch.tag == "default":
                self._default(ch, name)

    def attrs(self, el: ET.Element, childclass: str | None, kind: str | None = None) -> dict[str, str]:
        """``el``'s attributes over its class's defaults (its ``class=``, else the enclosing bodies'
        ``childclass``, else ``main``)."""
        cls = el.get("class") or childclass or "main"
        if cls not in self.defaults:
            raise self.error(el, f"class={cls!r}: no <default class={cls!r}> is defined")
        out = dict(self.defaults[cls].get(kind or _DEFAULT_KIND.get(el.tag, el.tag), {}))
        out.update(el.attrib)
        return out

    # -- numbers ------------------------------------------------------------------------------------
    def numbers(self, el: ET.Element, text: str, what: str, n: int | tuple | None = None) -> np.ndarray:
        try:
            vals = np.array([float(v) for v in text.split()], dtype=float)
        except ValueError:
            raise self.error(el, f"attribute {what}={text!r}: expected numbers") from None
        counts = (n,) if isinstance(n, int) else n
        if counts is not None and len(vals) not in counts:
            want = " or ".join(str(c) for c in counts)
            raise self.error(el, f"attribute {what}={text!r}: expected {want} number(s), got {len(vals)}")
        if not np.isfinite(vals).all():
            raise self.error(el, f"attribute {what}={text!r}: expected finite numbers")
        return vals

    def number(self, el: ET.Element, text: str, what: str) -> float:
        return float(self.numbers(el, text, what, 1)[0])

    def boolean(self, el: ET.Element, text: str, what: str) -> bool:
        if text in ("true", "false"):
            return text == "true"
        raise self.error(el, f"attribute {what}={text!r}: expected 'true' or 'false'")

    def limited(self, el: ET.Element, a: dict, flag: str, rng: str) -> bool:
        """MuJoCo's ``limited``/``ctrllimited``: true, false, or auto (limited when a range is given and
        the compiler's autolimits is on)."""
        text = a.get(flag, "auto")
        if text == "auto":
            if rng in a and not self.compiler.autolimits:
                raise self.error(el, f"{rng} given with {flag}='auto' and autolimits off: set {flag}")
            return rng in a
        return self.boolean(el, text, flag)

    def angle(self, value: float) -> float:
        """An angle as written, in radians."""
        return math.radians(value) if self.compiler.degree else value

    # -- frames -------------------------------------------------------------------------------------
    def rotation(self, el: ET.Element, a: dict) -> np.ndarray:
        """The rotation matrix of ``el``'s orientation (quat, axisangle, euler, xyaxes or zaxis; at
        most one)."""
        given = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in a]
        if len(given) > 1:
            raise self.error(el, f"orientation given {len(given)} ways ({', '.join(given)}): expected one")
        if not given:
            return np.eye(3)
        k = given[0]
        if k == "quat":
            q = self.numbers(el, a[k], k, 4)
            n = float(np.linalg.norm(q))
            if n < 1e-10:
                raise self.error(el, f"quat={a[k]!r}: a zero quaternion")
            return quat_matrix(q / n)
        if k == "axisangle":
            v = self.numbers(el, a[k], k, 4)
            return axis_angle_matrix(self._unit(el, v[:3], k), self.angle(v[3]))
        if k == "euler":
            v = self.numbers(el, a[k], k, 3)
            R = np.eye(3)
            for ch, ang in zip(self.compiler.eulerseq, v):
                Rk = axis_angle_matrix(np.eye(3)["xyz".index(ch.lower())], self.angle(ang))
                R = R @ Rk if ch.islower() else Rk @ R  # lower case: about the moved axes
            return R
        if k == "xyaxes":
            v = self.numbers(el, a[k], k, 6)
            x = self._unit(el, v[:3], k)
            y = v[3:] - (v[3:] @ x) * x
            y = self._unit(el, y, k)
            return np.column_stack([x, y, np.cross(x, y)])
        z = self._unit(el, self.numbers(el, a[k], k, 3), k)
        return z_to_matrix(z)

    def _unit(self, el: ET.Element, v: np.ndarray, what: str) -> np.ndarray:
        n = float(np.linalg.norm(v))
        if n < 1e-10:
            raise self.error(el, f"attribute {what}: a zero vector, expected a direction")
        return v / n

    def frame(self, el: ET.Element, a: dict) -> tuple[np.ndarray, np.ndarray]:
        """(R, p): ``el``'s frame in its parent's, from pos and its orientation."""
        p = self.numbers(el, a["pos"], "pos", 3) if "pos" in a else np.zeros(3)
        return self.rotation(el, a), p


def quat_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' rotation by ``angle`` about the unit ``axis``."""
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * (K @ K)


def z_to_matrix(z: np.ndarray) -> np.ndarray:
    """The smallest rotation carrying +z onto the unit vector ``z`` (MuJoCo's zaxis and fromto)."""
    c = float(z[2])
    v = np.array([-z[1], z[0], 0.0])  # e_z x z
    s = float(np.linalg.norm(v))
    if s < 1e-14:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    return axis_angle_matrix(v / s, math.atan2(s, c))
