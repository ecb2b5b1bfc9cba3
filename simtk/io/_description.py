"""A model as data: the model format's tree of components, which every reader fills and one builder makes.

A reader of another format (URDF, OpenSim) only parses: it adds one node per element it understands,
of a kind from the model format's registry (``MobilizedBody.Pin``, ``Force.MobilityLinearStop``, ...),
with values (numbers, vectors, typed values such as ``Transform``) and references to other nodes, and
the line and element of its source for the errors. `ModelDescription.build` hands the tree to the one
builder (`simtk.io._model_loader.build_system`, also what `load_model` uses), and `to_text` writes it
as model-file text, which `load_model` reads back into the same System (MuJoCo's ``mjSpec`` and
compile, Drake's ``Parser`` and ``MultibodyPlant``).
"""
from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from simtk import Function, MultibodySystem, Rotation, Transform

from ._model_loader import _Context, build_system
from ._model_parser import _Node
from ._model_registry import _BY_CLASS, FORMAT, _Ref, _Word
from ._model_writer import _num, _quote
from .errors import ModelFileError

__all__ = ["ModelDescription"]


class _SourceContext(_Context):
    """The builder's context for a description read from another format: errors of the reader's type."""

    def __init__(self, file: str | None, make: Callable[[str, int | None, str | None], ModelFileError] | None):
        super().__init__(file)
        self._make = make
        self.realize = False

    def make_error(self, message: str, line: int | None, element: str | None = None) -> ModelFileError:
        if self._make is None:
            return super().make_error(message, line, element)
        return self._make(message, line, element)


class ModelDescription:
    """A MultibodySystem as data: a tree of model-format nodes with their source lines.

    Parameters
    ----------
    name : str
        The System's name.
    file : str or path-like, optional
        The source file, named by the builder's errors (with the node's line and element).
    make_error : callable, optional
        ``make_error(message, line, element) -> ModelFileError``: the reader's own error type (the
        OpenSim reader's ``OsimFileError``); default `ModelFileError` naming ``file``.

    Attributes
    ----------
    root, matter, forces : _Node
        The ``MultibodySystem`` node and its two subsystems (``/matter``, ``/forces``).
    geoms : list
        Shapes the reader recorded and the builder does not build (the MJCF reader's `MjcfGeom`
        records, kept for a later contact model).
    """

    def __init__(self, name: str, file: str | os.PathLike | None = None,
                 make_error: Callable[[str, int | None, str | None], ModelFileError] | None = None):
        self.file = None if file is None else os.fspath(file)
        self.make_error = make_error
        self.root = _Node("MultibodySystem", 1, {"name": (name, 1)}, path="/")
        self.matter = self._child(self.root, _Node("SimbodyMatterSubsystem", 1, {"name": ("matter", 1)}))
        self.forces = self._child(self.root, _Node("GeneralForceSubsystem", 1, {"name": ("forces", 1)}))
        self._names: dict[str, set] = {"/": {"matter", "forces"}, "/matter": {"ground"}, "/forces": set()}
        self.ground = _Node("MobilizedBody.Ground", 1, path="/matter/ground")
        self.geoms: list = []

    @staticmethod
    def _child(owner: _Node, node: _Node) -> _Node:
        node.path = ("" if owner.path == "/" else owner.path) + "/" + node.items["name"][0]
        owner.children.append(node)
        return node

    # ------------------------------------------------------------------ adding
    def unique_name(self, owner: _Node, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``... when a sibling under ``owner`` has it already."""
        taken = self._names.setdefault(owner.path, set())
        if name not in taken:
            return name
        k = 1
        while f"{name}_{k}" in taken:
            k += 1
        return f"{name}_{k}"

    def add(self, kind: str, owner: _Node, name: str, *, line: int | None = None, element: str | None = None,
            **items: Any) -> _Node:
        """Add a component node ``kind [ name=... items ]`` under ``owner`` (a subsystem, or a mobilizer
        for a Motion) and return it.

        ``items`` are Python values (numbers, strings, arrays, ``Transform``, ``Rotation``, a
        ``Function``, a mass-properties node from `mass_properties`) or nodes, which become references
        (a list of nodes: a list of references). ``None`` items are left out. ``line`` and ``element``
        say where the source has the element. ``name`` must be free among the owner's children (see
        `unique_name`).
        """
        ln = 1 if line is None else int(line)
        taken = self._names.setdefault(owner.path, set())
        if name in taken:
            raise ValueError(f"ModelDescription.add: {owner.path!r} has a component named {name!r} already")
        taken.add(name)
        node = _Node(kind, ln, {"name": (name, ln)}, element=element)
        for k, v in items.items():
            if v is not None:
                node.items[k] = (_item(v, ln), ln)
        return self._child(owner, node)

    def set(self, node: _Node, **items: Any) -> None:
        """Set (or replace) items of ``node``, as in `add`."""
        for k, v in items.items():
            if v is not None:
                node.items[k] = (_item(v, node.line), node.line)

    def mass_properties(self, mass: float, com, central_inertia, nonphysical: bool = False) -> _Node:
        """A ``MassProperties`` value from the inertia about the mass center (a 3x3 matrix, in the body
        frame); ``nonphysical=True`` keeps one no mass distribution has, as written."""
        I = np.asarray(central_inertia, dtype=float)
        items = {"mass": (float(mass), 1), "com": (_floats(com), 1),
                 "central_inertia": ([float(I[0, 0]), float(I[1, 1]), float(I[2, 2]), float(I[0, 1]),
                                      float(I[0, 2]), float(I[1, 2])], 1)}
        if nonphysical:
            items["nonphysical"] = (True, 1)
        return _Node("MassProperties", 1, items)

    def nodes(self) -> list[_Node]:
        """Every component node, subsystems' children first, then motions, in order of addition."""
        out = []
        for sub in self.root.children:
            for c in sub.children:
                out.append(c)
                out.extend(c.children)
        return out

    # ------------------------------------------------------------------ building and writing
    def build(self) -> tuple[MultibodySystem, dict]:
        """The System, made by the one builder, and its components by path (``"/matter/elbow"``).

        Raises
        ------
        ModelFileError
            (or the reader's type) An element the builder refuses, naming the file, the node's line
            and its source element.
        """
        ctx = _SourceContext(self.file, self.make_error)
        return build_system(self.root, self.file, ctx)

    def to_text(self) -> str:
        """The description as model-file text (``load_model`` reads it into the same System)."""
        out = [f"simtk_model={FORMAT}"]
        _write(self.root, 0, out)
        return "\n".join(out) + "\n"


# ====================================================================== values
def _floats(v) -> list:
    return [float(x) for x in np.asarray(v, dtype=float).reshape(-1)]


def _item(v: Any, line: int) -> Any:
    """A Python value as the model format's parsed value (what the builder reads)."""
    if isinstance(v, _Node):
        return _Ref(v.path, line) if v.path else v  # a component: a reference; a typed value: itself
    if isinstance(v, (_Word, _Ref, bool)):
        return v
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, Transform):
        return _Node("Transform", line, {"R": (_floats(v.R.matrix), line), "p": (_floats(v.p), line)})
    if isinstance(v, Rotation):
        return _Node("Rotation", line, {"R": (_floats(v.matrix), line)})
    if isinstance(v, Function):
        return _function(v, line)
    if isinstance(v, np.ndarray):
        if v.ndim <= 1:
            return _floats(v) if v.dtype.kind != "b" else [bool(x) for x in v]
        return [_item(row, line) for row in v]
    if isinstance(v, (list, tuple)):
        return [_item(x, line) for x in v]
    raise TypeError(f"ModelDescription: a value of type {type(v).__name__} has no model-format form")


def _function(f: Function, line: int) -> _Node:
    spec = _BY_CLASS.get(type(f))
    if spec is None or spec.category != "function":
        raise TypeError(f"ModelDescription: a {type(f).__qualname__} Function has no registered kind")
    if spec.user:
        from ._model_registry import _declared
        items = {k: p.get(f) for k, p in _declared(type(f)).items()}
    else:
        params = f.parameters()
        items = {k: params[k] for k, _ in spec.params}
    return _Node(spec.name, line, {k: (_item(v, line), line) for k, v in items.items()})


def _text(v: Any) -> str:
    if isinstance(v, _Node):
        inner = " ".join(f"{k}={_text(x)}" for k, (x, _) in v.items.items())
        return f"{v.kind} [ {inner} ]"
    if isinstance(v, _Ref):
        return "@" + _quote(v.path)
    if isinstance(v, _Word):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _num(v)
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, list):
        return "[ " + " ".join(_text(x) for x in v) + " ]" if v else "[ ]"
    raise TypeError(f"ModelDescription: cannot write a {type(v).__name__}")


def _write(node: _Node, depth: int, out: list) -> None:
    pad = "  " * depth
    out.append(f"{pad}{node.kind} [")
    for k, (v, _) in node.items.items():
        out.append(f"{pad}  {k}={_text(v)}")
    for c in node.children:
        _write(c, depth + 1, out)
    out.append(f"{pad}]")
