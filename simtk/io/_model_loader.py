"""Building a MultibodySystem from parsed model-file items: references resolved in a second pass."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)

from . import (
    _model_registry_jit,  # noqa: F401  (registers Force.Jit)
    _model_registry_osim,  # noqa: F401  (registers the kinds the OpenSim reader describes)
)
from ._inertia_policy import as_written
from ._model_parser import _Node, _Parser, _tokenize
from ._model_registry import _BY_NAME, FORMAT, ModelFileWarning, _declared, _Spec
from ._model_writer import _fmt, _holder, _num, _quote, _Ref, _same, _Word
from .errors import ModelFileError


# ====================================================================== building
class _Context:
    """What builders need: the file, the matter subsystem, typed access to a node's items."""

    def __init__(self, file: str | None):
        self.file = file
        self.matter = None
        self.node: _Node | None = None
        self.used: set = set()
        self.memo: dict[int, tuple] = {}
        #: realize the built model to Instance (a model file's check); a reader's description, whose
        #: result the user realizes anyway, skips it unless it lists default values
        self.realize = True

    def error(self, message: str, line: int | None = None) -> ModelFileError:
        node = self.node
        where = f"{node.kind} {node.path!r}: " if node is not None else ""
        return self.make_error(where + message, line if line is not None else (node.line if node is not None
                                                                               else None),
                               node.element if node is not None else None)

    def make_error(self, message: str, line: int | None, element: str | None = None) -> ModelFileError:
        """The error of the source read: a reader's own ModelFileError subclass when it gave one."""
        return ModelFileError(message, self.file, line, element)

    def get(self, v: dict, name: str):
        if name not in v:
            raise self.error(f"missing {name}=")
        self.used.add(name)
        return v[name]

    def number(self, v: dict, name: str) -> float:
        x, line = self.get(v, name)
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise self.error(f"{name}: expected a number, got {_describe(x)}", line)
        if not math.isfinite(float(x)):
            raise self.error(f"{name}: expected a finite number, got {x!r}", line)
        return float(x)

    def index(self, v: dict, name: str) -> int:
        x, line = self.get(v, name)
        if isinstance(x, bool) or not isinstance(x, int) or x < 0:
            raise self.error(f"{name}: expected an integer >= 0, got {_describe(x)}", line)
        return x

    def flag(self, v: dict, name: str) -> bool:
        if name not in v:
            return False
        x, line = self.get(v, name)
        if not isinstance(x, bool):
            raise self.error(f"{name}: expected true or false, got {_describe(x)}", line)
        return x

    def word(self, v: dict, name: str, choices: tuple) -> str:
        x, line = self.get(v, name)
        if not isinstance(x, _Word) or x not in choices:
            raise self.error(f"{name}: expected one of {', '.join(choices)}, got {_describe(x)}", line)
        return str(x)

    def indices(self, v: dict, name: str, n: int | None = None) -> list[int]:
        """A list of integers >= 0 (``n`` of them if given)."""
        x, line = self.get(v, name)
        return self.to_indices(x, name, n, line)

    def to_indices(self, x, name: str, n: int | None, line: int) -> list[int]:
        if isinstance(x, list) and all(isinstance(e, int) and not isinstance(e, bool) and e >= 0 for e in x) \
                and (n is None or len(x) == n):
            return list(x)
        want = f"a list of {n} integers >= 0" if n is not None else "a list of integers >= 0"
        raise self.error(f"{name}: expected {want}, got {_describe(x)}", line)

    def index_lists(self, v: dict, name: str, n: int) -> list[list[int]]:
        """A list of ``n`` lists of integers >= 0."""
        x, line = self.get(v, name)
        if not isinstance(x, list) or len(x) != n:
            raise self.error(f"{name}: expected a list of {n} lists of integers >= 0, got {_describe(x)}", line)
        return [self.to_indices(e, f"{name}[{k}]", None, line) for k, e in enumerate(x)]

    def matrix(self, v: dict, name: str, rows: int, cols: int) -> np.ndarray:
        """A list of ``rows`` lists of ``cols`` finite numbers."""
        x, line = self.get(v, name)
        if not isinstance(x, list) or len(x) != rows:
            raise self.error(f"{name}: expected {rows} lists of {cols} finite numbers, got {_describe(x)}", line)
        return np.array([self.to_vector(e, f"{name}[{k}]", cols, line) for k, e in enumerate(x)])

    def function(self, v: dict, name: str, arguments: int | None = None):
        """A Function item; ``arguments``: how many arguments the element passes to it."""
        x, line = self.get(v, name)
        return self.to_function(x, name, line, arguments)

    def functions(self, v: dict, name: str, arguments: list[int]) -> list:
        """A list of Function items, the k-th taking ``arguments[k]`` arguments."""
        x, line = self.get(v, name)
        if not isinstance(x, list) or len(x) != len(arguments):
            raise self.error(f"{name}: expected a list of {len(arguments)} Functions, got {_describe(x)}", line)
        return [self.to_function(e, f"{name}[{k}]", line, m) for k, (e, m) in enumerate(zip(x, arguments))]

    def to_function(self, x, name: str, line: int, arguments: int | None = None):
        """Rebuild a Function from its typed item by calling its class (a built-in family or a registered one)."""
        spec = _BY_NAME.get(x.kind) if isinstance(x, _Node) else None
        if spec is None or spec.category != "function":
            known = ", ".join(sorted(k for k, s in _BY_NAME.items() if s.category == "function"))
            what = f"an unknown Function class {x.kind!r}" if isinstance(x, _Node) else _describe(x)
            raise self.error(f"{name}: expected a Function (one of: {known}), got {what}",
                             x.line if isinstance(x, _Node) else line)
        if x.children:
            raise self.error(f"{name}: a {x.kind} holds name=value items only", x.children[0].line)
        where = f"{name} ({x.kind})"
        if spec.user:
            declared = _declared(spec.cls)
            unknown = [k for k in x.items if k not in declared]
            if unknown:
                raise self.error(f"{where}: {unknown[0]!r} is not a declared Property of {x.kind}",
                                 x.items[unknown[0]][1])
            kwargs = {}
            for k, (e, eline) in x.items.items():
                if isinstance(e, _Ref):
                    raise self.error(f"{where}.{k}: a Function holds values, not references", eline)
                kwargs[k] = self.value(e, f"{name}.{k}", eline)
        else:
            unknown = [k for k in x.items if k not in dict(spec.params)]
            if unknown:
                raise self.error(f"{where}: unknown item {unknown[0]!r} (it takes "
                                 f"{', '.join(k for k, _ in spec.params)})", x.items[unknown[0]][1])
            kwargs = {}
            for k, kind in spec.params:
                if k not in x.items and _has_default(spec.cls, k):
                    continue  # a parameter added later (GCVSpline's error_variance): files without it still load
                if k not in x.items:
                    raise self.error(f"{where}: missing {k}= (it takes {', '.join(p for p, _ in spec.params)})",
                                     x.line)
                e, eline = x.items[k]
                if kind == "vector":
                    kwargs[k] = self.to_vector(e, f"{name}.{k}", None, eline)
                elif kind == "index" and (isinstance(e, bool) or not isinstance(e, int) or e < 0):
                    raise self.error(f"{name}.{k}: expected an integer >= 0, got {_describe(e)}", eline)
                elif kind == "number" and (isinstance(e, bool) or not isinstance(e, (int, float))
                                           or not math.isfinite(e)):
                    raise self.error(f"{name}.{k}: expected a finite number, got {_describe(e)}", eline)
                elif kind == "text" and not isinstance(e, str):
                    raise self.error(f"{name}.{k}: expected a quoted string, got {_describe(e)}", eline)
                else:
                    kwargs[k] = float(e) if kind == "number" else e
        try:
            f = spec.cls(**kwargs)
        except Exception as e:  # the class refused the values: the file's fault, said with the item's line
            raise self.error(f"{where}: {type(e).__name__}: {e}", x.line) from e
        if arguments is not None and f.get_argument_size() != arguments:
            raise self.error(f"{where}: the function takes {f.get_argument_size()} argument(s), but the element "
                             f"passes {arguments}", x.line)
        return f

    def vector(self, v: dict, name: str, n: int | None = None) -> np.ndarray:
        x, line = self.get(v, name)
        return self.to_vector(x, name, n, line)

    def to_vector(self, x, name: str, n: int | None, line: int) -> np.ndarray:
        if isinstance(x, list) and all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in x):
            a = np.array(x, dtype=float)
            if (n is None or a.shape == (n,)) and np.isfinite(a).all():
                return a
        want = f"a list of {n} finite numbers" if n else "a list of finite numbers"
        raise self.error(f"{name}: expected {want}, got {_describe(x)}", line)

    def typed(self, v: dict, name: str, cls: type):
        x, line = self.get(v, name)
        return self.to_typed(x, name, cls, line)

    def to_typed(self, x, name: str, cls: type, line: int):
        # A typed value is read twice, by the element's builder and by apply_properties; the result is
        # immutable, so the first reading serves both.
        hit = self.memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        out = self._to_typed(x, name, cls, line)
        self.memo[id(x)] = (x, out)
        return out

    def _to_typed(self, x, name: str, cls: type, line: int):
        if not isinstance(x, _Node) or x.kind != cls.__name__:
            raise self.error(f"{name}: expected {cls.__name__} [ ... ], got {_describe(x)}", line)
        allowed = {"Transform": {"R", "p"}, "Rotation": {"R"},
                   "MassProperties": {"mass", "com", "inertia", "central_inertia", "nonphysical"}}[cls.__name__]
        extra = set(x.items) - allowed
        if extra or x.children:
            raise self.error(f"{name}: {cls.__name__} takes {', '.join(sorted(allowed))} only", line)

        def part(key, n):
            if key not in x.items:
                raise self.error(f"{name}: {cls.__name__} needs {key}=", x.line)
            return self.to_vector(x.items[key][0], f"{name}.{key}", n, x.items[key][1])

        try:
            if cls is Transform:
                return Transform(Rotation.from_matrix(part("R", 9).reshape(3, 3)), part("p", 3))
            if cls is Rotation:
                return Rotation.from_matrix(part("R", 9).reshape(3, 3))
            mass = x.items.get("mass", (None, x.line))
            if isinstance(mass[0], bool) or not isinstance(mass[0], (int, float)) or not math.isfinite(mass[0]):
                raise self.error(f"{name}: MassProperties needs a finite mass=", mass[1])
            return self.mass_properties(x, name, float(mass[0]), part)
        except (TypeError, ValueError) as e:
            if isinstance(e, ModelFileError):
                raise
            raise self.error(f"{name}: {e}", line) from None

    def mass_properties(self, x: _Node, name: str, mass: float, part) -> MassProperties:
        """A MassProperties value: ``inertia=`` about the body origin, or ``central_inertia=`` about the
        mass center (what readers of other formats have, so that no round-off is added);
        ``nonphysical=true`` keeps a central inertia no mass distribution has, as written."""
        given = [k for k in ("inertia", "central_inertia") if k in x.items]
        if len(given) != 1:
            raise self.error(f"{name}: MassProperties needs one of inertia= (about the body origin) and "
                             "central_inertia=", x.line)
        I = part(given[0], 6)
        keep = x.items.get("nonphysical", (False, x.line))
        if not isinstance(keep[0], bool) or (keep[0] and given[0] != "central_inertia"):
            raise self.error(f"{name}: MassProperties nonphysical= is true or false, with central_inertia=",
                             keep[1])
        if given[0] == "inertia":
            return MassProperties(mass, part("com", 3), Inertia(I[:3], I[3:]))
        if keep[0]:
            central = as_written(np.array([[I[0], I[3], I[4]], [I[3], I[1], I[5]], [I[4], I[5], I[2]]]))
        else:
            central = Inertia(I[:3], I[3:])
        return MassProperties.from_central_inertia(mass, part("com", 3), central)

    def value(self, x, name: str, line: int):
        """A property value from the file: numbers, strings, vectors, typed values (references apart)."""
        if isinstance(x, _Node):
            cls = {"Transform": Transform, "Rotation": Rotation, "MassProperties": MassProperties}.get(x.kind)
            spec = _BY_NAME.get(x.kind)
            if cls is None and spec is not None and spec.category == "function":
                return self.to_function(x, name, line)
            if cls is None:
                raise self.error(f"{name}: unknown kind of value {x.kind!r}", line)
            return self.to_typed(x, name, cls, line)
        if isinstance(x, list):
            if all(isinstance(e, bool) for e in x) and x:
                return np.array(x, dtype=bool)
            return self.to_vector(x, name, None, line)
        if isinstance(x, _Word):
            raise self.error(f"{name}: expected a value, got the bare word {str(x)!r}", line)
        if isinstance(x, float) and not math.isfinite(x):
            raise self.error(f"{name}: expected a finite number, got {x!r}", line)
        return x


def _describe(x) -> str:
    if isinstance(x, _Node):
        return f"{x.kind} [ ... ]"
    if isinstance(x, _Ref):
        return f"the reference @{_quote(x.path)}"
    if isinstance(x, _Word):
        return f"the word {str(x)!r}"
    if isinstance(x, list):
        return f"a list of {len(x)} items"
    if isinstance(x, bool):
        return "true" if x else "false"
    return repr(x)


_CATEGORY_OF_CHILD = {"SimbodyMatterSubsystem": ("mobilizer", "constraint"), "GeneralForceSubsystem": ("force",),
                      "mobilizer": ("motion",)}


def parse_model(text: str, file: str | None) -> _Node:
    """The description a model file's ``text`` holds: its ``MultibodySystem`` node, not yet built."""
    return _Loader(text, file).parse()


def build_system(root: _Node, file: str | None, context: _Context | None = None) -> tuple[MultibodySystem, dict]:
    """The one builder: the MultibodySystem a model description's ``MultibodySystem`` node describes.

    Every reader ends here (the model format's parser, the URDF and OpenSim readers through
    `simtk.io._description.ModelDescription`). Returns the System and its components by path
    (``"/matter/elbow"``); errors name ``file`` and the node's line (and its source element).
    """
    loader = _Loader("", file, context)
    system = loader.build_tree(root)
    return system, loader.components


class _Loader:
    def __init__(self, text: str, file: str | None, context: _Context | None = None):
        self.file = file
        self.text = text
        self.ctx = context if context is not None else _Context(file)
        self.components: dict[str, Any] = {}

    def err(self, msg: str, line: int | None, node: _Node | None = None) -> ModelFileError:
        return self.ctx.make_error(msg, line, node.element if node is not None else None)

    def build_tree(self, root: _Node) -> MultibodySystem:
        """Paths from the names (first pass), then the components in dependency order (second pass)."""
        root.path = "/"
        self.nodes: dict[str, _Node] = {"/": root}
        self.assign_paths(root)
        return self.build(root)

    def load(self) -> MultibodySystem:
        return self.build_tree(self.parse())

    def parse(self) -> _Node:
        """The file's ``MultibodySystem`` node (the model's description), its header checked."""
        try:
            toks = _tokenize(self.text, self.file)
            top = _Node("<file>", 1)
            _Parser(toks, self.file).items(top, 0, False)
        except RecursionError:
            raise self.err("the file nests too deeply", None) from None
        fmt = top.items.get("simtk_model")
        if fmt is None:
            raise self.err("not a simtk model file (expected simtk_model=1 first)", 1)
        if fmt[0] != FORMAT or isinstance(fmt[0], bool):
            raise self.err(f"simtk_model={_describe(fmt[0])}: this simtk reads format {FORMAT}", fmt[1])
        extra = set(top.items) - {"simtk_model"}
        if extra:
            name = sorted(extra)[0]
            raise self.err(f"unknown top-level item {name!r}", top.items[name][1])
        if len(top.children) != 1 or top.children[0].kind != "MultibodySystem":
            line = top.children[1].line if len(top.children) > 1 else (top.children[0].line if top.children else 1)
            raise self.err("expected exactly one MultibodySystem [ ... ] in the file", line)
        return top.children[0]

    # ---- the first pass: the tree of paths, from the names in the file
    def name_of(self, node: _Node) -> str:
        x = node.items.get("name")
        if x is None:
            raise self.err(f"{node.kind}: missing name=", node.line, node)
        if not isinstance(x[0], str) or isinstance(x[0], _Word):
            raise self.err(f"{node.kind}: name must be a string, got {_describe(x[0])}", x[1], node)
        return x[0]

    def assign_paths(self, node: _Node) -> None:
        for child in node.children:
            name = self.name_of(child)
            path = ("" if node.path == "/" else node.path) + "/" + name
            if path in self.nodes:
                raise self.err(f"two components have the path {path!r} (the other is on line "
                               f"{self.nodes[path].line})", child.line, child)
            child.path = path
            self.nodes[path] = child
            self.assign_paths(child)

    def resolve(self, node: _Node, ref: Any, item: str, line: int) -> _Node:
        """The node a relative (or absolute) path from ``node`` names: ArtiSynth's post-scan step."""
        if not isinstance(ref, _Ref):
            raise self.err(f"{node.kind} {node.path!r}: {item}: expected a reference @\"path\", got {_describe(ref)}",
                           line, node)
        parts = [] if ref.path.startswith("/") else [p for p in node.path.split("/") if p]
        for p in ref.path.split("/"):
            if p in ("", "."):
                continue
            if p == "..":
                if not parts:
                    raise self.err(f"{node.kind} {node.path!r}: {item}: {ref.path!r} goes above the root", line, node)
                parts.pop()
            else:
                parts.append(p)
        target = "/" + "/".join(parts)
        if target == self.matter_path + "/ground":
            return _GROUND
        hit = self.nodes.get(target)
        if hit is None:
            raise self.err(f"{node.kind} {node.path!r}: {item}: no component at {ref.path!r} (resolved to "
                           f"{target!r})", line, node)
        return hit

    # ---- the second pass: build in dependency order
    def build(self, root: _Node) -> MultibodySystem:
        items = dict(root.items)
        name = self.string(root, "name")
        system = MultibodySystem(name=name)
        if "time_scale" in items:
            x, line = items["time_scale"]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and x > 0):
                raise self.err(f"time_scale: expected a positive finite number, got {_describe(x)}", line)
            system.set_default_time_scale(float(x))
        unknown = set(items) - {"name", "time_scale", "defaults"}
        if unknown:
            u = sorted(unknown)[0]
            raise self.err(f"MultibodySystem: unknown item {u!r}", items[u][1])
        matters = [c for c in root.children if c.kind == "SimbodyMatterSubsystem"]
        if len(matters) != 1:
            raise self.err("expected exactly one SimbodyMatterSubsystem [ ... ]", root.line)
        self.matter_path = matters[0].path
        built: dict[int, Any] = {}  # id(node) -> component
        elements: list[tuple[_Node, str, _Node]] = []  # (node, category, owner node)
        for sub in root.children:
            if sub.kind not in ("SimbodyMatterSubsystem", "GeneralForceSubsystem"):
                raise self.err(f"unknown subsystem kind {sub.kind!r} (expected SimbodyMatterSubsystem or "
                               "GeneralForceSubsystem)", sub.line)
            extra = set(sub.items) - {"name"}
            if extra:
                u = sorted(extra)[0]
                raise self.err(f"{sub.kind} {sub.path!r}: unknown item {u!r}", sub.items[u][1])
            sname = self.string(sub, "name")
            try:
                obj = (SimbodyMatterSubsystem(system, name=sname) if sub.kind == "SimbodyMatterSubsystem"
                       else GeneralForceSubsystem(system, name=sname))
            except (TypeError, ValueError) as e:
                raise self.err(f"{sub.kind}: {e}", sub.line) from None
            built[id(sub)] = obj
            self.components[sub.path] = obj
            if sub.kind == "SimbodyMatterSubsystem":
                self.ctx.matter = obj
            for child in sub.children:
                spec = self.spec(child, _CATEGORY_OF_CHILD[sub.kind])
                elements.append((child, spec, sub))
                if spec.category == "mobilizer":
                    for m in child.children:
                        elements.append((m, self.spec(m, ("motion",)), child))
                elif child.children:
                    raise self.err(f"{child.kind} {child.path!r} cannot have child components", child.children[0].line,
                                   child)
        built[id(_GROUND)] = self.ctx.matter.get_ground()
        # Each element waits for the components it references (and its owner): a topological order, so a
        # reference may point forward; what never becomes ready is a cycle (or a missing element).
        pending = list(elements)
        deps = {id(n): self.dependencies(n, spec, owner) for n, spec, owner in elements}
        while pending:
            progressed = False
            rest = []
            for n, spec, owner in pending:
                if all(id(d) in built for d in deps[id(n)]):
                    built[id(n)] = self.construct(n, spec, built[id(owner)], built)
                    self.components[n.path] = built[id(n)]
                    progressed = True
                else:
                    rest.append((n, spec, owner))
            if not progressed:
                n = rest[0][0]
                chain = [d.path for d in deps[id(n)] if id(d) not in built]
                raise self.err(f"{n.kind} {n.path!r}: its references form a cycle (waiting for "
                               f"{', '.join(chain)})", n.line, n)
            pending = rest
        if self.ctx.realize or "defaults" in root.items:
            self.check_defaults(system, root)
        return system

    def string(self, node: _Node, item: str) -> str:
        return self.name_of(node) if item == "name" else node.items[item][0]

    def spec(self, node: _Node, categories: tuple) -> _Spec:
        spec = _BY_NAME.get(node.kind)
        if spec is None:
            known = ", ".join(sorted(n for n, s in _BY_NAME.items() if s.category in categories))
            raise self.err(f"unknown class {node.kind!r} here (expected one of: {known})", node.line, node)
        if spec.category not in categories:
            raise self.err(f"a {spec.category} ({node.kind}) cannot be placed here (expected a "
                           f"{' or '.join(categories)})", node.line, node)
        return spec

    def ref_items(self, node: _Node, spec: _Spec) -> list[str]:
        names = [r for r, _ in spec.refs if r not in spec.optional or r in node.items]
        if spec.user:
            names += [k for k, (v, _) in node.items.items() if isinstance(v, _Ref)]
        return names

    def dependencies(self, node: _Node, spec: _Spec, owner: _Node) -> list[_Node]:
        out = [owner] if spec.category in ("motion", "mobilizer") and owner.kind not in (
            "SimbodyMatterSubsystem",) else []
        for item in self.ref_items(node, spec):
            if item not in node.items:
                raise self.err(f"{node.kind} {node.path!r}: missing {item}=", node.line, node)
            value, line = node.items[item]
            for target in self.targets(node, spec, item):
                if target.kind in ("MultibodySystem", "SimbodyMatterSubsystem", "GeneralForceSubsystem"):
                    raise self.err(f"{node.kind} {node.path!r}: {item} must refer to an element, not to the "
                                   f"{target.kind} {target.path!r}", line, node)
                if target is node:
                    raise self.err(f"{node.kind} {node.path!r}: {item} refers to the element itself", line, node)
                out.append(target)
        return out

    def targets(self, node: _Node, spec: _Spec, item: str) -> list[_Node]:
        """The nodes reference item ``item`` names: one, or a list for the spec's list items."""
        value, line = node.items[item]
        if item not in spec.many:
            return [self.resolve(node, value, item, line)]
        if not isinstance(value, list):
            raise self.err(f"{node.kind} {node.path!r}: {item}: expected a list of references [ @\"path\" ... ], "
                           f"got {_describe(value)}", line, node)
        return [self.resolve(node, r, item, line) for r in value]

    def construct(self, node: _Node, spec: _Spec, owner, built: dict):
        ctx = self.ctx
        ctx.node, ctx.used = node, {"name"}
        ctx.memo.clear()
        name = self.name_of(node)
        refs = {}
        for item in self.ref_items(node, spec):
            hits = [built[id(t)] for t in self.targets(node, spec, item)]
            refs[item] = hits if item in spec.many else hits[0]
            ctx.used.add(item)
        v = node.items
        try:
            if spec.user:
                comp = self.construct_user(node, spec, owner, refs, name)
            else:
                comp = spec.build(ctx, owner, refs, v, name)
            self.apply_properties(comp, spec)
            if "disabled" in v:
                comp.set_disabled_by_default(ctx.flag(v, "disabled"))
            if "state_variables" in v:
                self.add_state_variables(comp, *v["state_variables"])
                ctx.used.add("state_variables")
        except ModelFileError:
            raise
        except Exception as e:  # a constructor's refusal of a value: the file's fault, said with its line
            raise ctx.error(f"{type(e).__name__}: {e}") from e
        unknown = [k for k in v if k not in ctx.used]
        if unknown:
            raise ctx.error(f"unknown item {unknown[0]!r} for {node.kind}", v[unknown[0]][1])
        return comp

    def construct_user(self, node, spec: _Spec, owner, refs: dict, name: str):
        ctx = self.ctx
        cls = spec.cls
        kwargs = {}
        declared = {}
        for klass in reversed(cls.__mro__):
            for k, p in vars(klass).items():
                if type(p).__name__ == "Property":
                    declared[k] = p
        for k, (x, line) in node.items.items():
            if k in declared:
                kwargs[k] = refs[k] if k in refs else ctx.value(x, k, line)
                ctx.used.add(k)
        if spec.category in ("mobilizer", "constraint"):
            kwargs["matter"] = ctx.matter
        impl = cls(**kwargs)
        if spec.category == "force":
            return Force.Custom(owner, impl, name=name)
        if spec.category == "constraint":
            return Constraint.Custom(impl, name=name)
        if spec.category == "motion":
            return Motion.Custom(owner, impl, name=name)
        body = Body.Massless() if ctx.flag(node.items, "massless") else \
            Body.Rigid(ctx.typed(node.items, "mass_properties", MassProperties))
        return MobilizedBody.Custom(refs["parent"], ctx.typed(node.items, "inboard_frame", Transform), body,
                                    ctx.typed(node.items, "outboard_frame", Transform), impl, name=name)

    def apply_properties(self, comp, spec: _Spec) -> None:
        """Set every property the file gives whose value differs from what the constructor stored."""
        ctx = self.ctx
        for pname in comp.get_property_names():
            if pname not in ctx.node.items:
                continue
            x, line = ctx.node.items[pname]
            ctx.used.add(pname)
            if isinstance(x, _Ref):
                if spec.user:
                    continue  # a reference property of a user's class: given to its constructor
                raise ctx.error(f"{pname}: expected a value, got {_describe(x)}", line)
            value = ctx.value(x, pname, line)
            where = comp.get_absolute_path()
            if _same(comp.get_property(pname), value, where):
                continue
            try:
                comp.set_property(pname, value)
            except (TypeError, ValueError) as e:
                raise ctx.error(str(e), line) from None
            if not _same(comp.get_property(pname), value, where):
                self.store_exactly(comp, pname, value, line)

    def store_exactly(self, comp, pname: str, value, line: int) -> None:
        """Keep the file's value bit for bit when the property's check changes it only by round-off.

        A unit vector that is unit to round-off is normalized again by the check, which may move its
        last bit; the file's value is the model's, so it is stored as written (checked first).
        """
        info = comp.get_property_info(pname)
        checked = np.asarray(_as_array(comp.get_property(pname)), dtype=float)
        mine = np.asarray(_as_array(value), dtype=float)
        if checked.shape != mine.shape or np.max(np.abs(checked - mine), initial=0.0) > \
                16 * np.finfo(float).eps * max(1.0, float(np.max(np.abs(mine), initial=0.0))):
            raise self.ctx.error(f"{pname}: the element changed the value {_fmt(value, pname)} to "
                                 f"{_fmt(comp.get_property(pname), pname)}", line)
        # The check accepted it (set_property above); keep the file's bits rather than the re-normalized ones.
        info.store(_holder(comp, pname), np.array(value) if isinstance(value, np.ndarray) else info.validate(value))

    def add_state_variables(self, comp, x, line) -> None:
        if not isinstance(x, list) or len(x) % 2:
            raise self.ctx.error("state_variables: expected pairs \"name\" value", line)
        for k in range(0, len(x), 2):
            n, v = x[k], x[k + 1]
            if not isinstance(n, str) or isinstance(n, _Word) or isinstance(v, bool) or \
                    not isinstance(v, (int, float)) or not math.isfinite(v):
                raise self.ctx.error(f"state_variables: expected \"name\" and a finite number, got "
                                     f"{_describe(n)} {_describe(v)}", line)
            try:
                comp.add_state_variable(n, float(v))
            except ValueError as e:
                if "declared already" not in str(e):
                    raise self.ctx.error(f"state_variables: {e}", line) from None

    def check_defaults(self, system: MultibodySystem, root: _Node) -> None:
        """The model's default variable values must be the file's: a file the elements cannot reproduce is refused."""
        self.ctx.node = None
        try:
            state = system.realize_topology()
        except Exception as e:
            raise self.err(f"the model does not realize its topology: {type(e).__name__}: {e}", root.line) from e
        try:
            system.realize(state, Stage.Instance)
        except Exception as e:
            # As for a model built in code, some mistakes show only at Instance (a Motion on a mobilizer
            # that cannot take it); the model is what the file says, so it is returned, with a warning.
            warnings.warn(ModelFileWarning(f"{self.file or '<text>'}: the model does not realize to Instance: "
                                           f"{type(e).__name__}: {e}"), stacklevel=4)
        if "defaults" not in root.items:
            return
        x, line = root.items["defaults"]
        if not isinstance(x, list) or len(x) % 2:
            raise self.err("defaults: expected pairs \"path\" value", line)
        have = dict(zip(system.get_state_variable_names(state), system.get_state_variable_values(state)))
        listed = set()
        for k in range(0, len(x), 2):
            p, v = x[k], x[k + 1]
            if not isinstance(p, str) or isinstance(p, _Word) or isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.err(f"defaults: expected \"path\" and a number, got {_describe(p)} {_describe(v)}", line)
            if p not in have:
                raise self.err(f"defaults: the model has no variable {p!r}", line)
            if _num(have[p]) != _num(v) if math.isfinite(v) else True:
                raise self.err(f"defaults: {p} is {v!r} in the file but {have[p]!r} in the model built from it "
                               "(a default its element cannot take)", line)
            listed.add(p)
        missing = [p for p in have if p not in listed]
        if missing:
            raise self.err(f"defaults: no value for {missing[0]!r}", line)


def _as_array(v):
    if isinstance(v, Transform):
        return np.concatenate([v.R.matrix.ravel(), v.p])
    if isinstance(v, Rotation):
        return v.matrix.ravel()
    return v


class _GroundNode(_Node):
    pass


_GROUND = _GroundNode("MobilizedBody.Ground", 0)


def _has_default(cls: type, name: str) -> bool:
    """Whether ``cls``'s constructor gives parameter ``name`` a default."""
    import inspect
    p = inspect.signature(cls).parameters.get(name)
    return p is not None and p.default is not inspect.Parameter.empty
