"""The package layout keeps its rules: no import circle among simtk's modules, no oversized module.

Every ``import`` and ``from ... import`` in ``simtk/`` counts, at module level or deferred inside a
function (a deferred import only hides a circle), except those under ``if TYPE_CHECKING:``, which
never run and exist for annotations only.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import simtk

ROOT = Path(simtk.__file__).parent
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST):
    """The import nodes that can run: all of them but those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(module: str, is_package: bool, node, modules: dict) -> set[str]:
    """The simtk modules an import node loads (the deepest existing module of each name)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")
            if not is_package:
                base = base[:-1]
            base = base[:len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in modules else prefix for a in node.names]
    out = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name.startswith("simtk") and name != module:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        deps: set[str] = set()
        for node in _runtime_imports(tree):
            deps |= _targets(name, path.name == "__init__.py", node, modules)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_circle_in_simtk():
    graph = import_graph()
    cycles = _cycles(graph)
    detail = "\n".join(
        "  " + ", ".join(c) + "\n" + "\n".join(f"    {m} -> {sorted(graph[m] & set(c))}" for m in c) for c in cycles)
    assert not cycles, f"import circles among simtk's modules:\n{detail}"


def test_the_cycle_finder_finds_a_circle():
    # the check above can fail: a made-up graph with a circle a -> b -> c -> a and a tail d -> a
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_import_walker_sees_deferred_imports_and_skips_type_checking():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n"
                     "def f():\n    import y\n")
    names = {a.name for n in _runtime_imports(tree) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"y"}


def test_layers_point_one_way():
    graph = import_graph()
    tree = {m for m in graph if m.startswith("simtk.multibody.tree")}
    upper = ("simtk.multibody.forces", "simtk.multibody.constraints", "simtk.multibody.contact", "simtk.multibody.matter",
             "simtk.simulation", "simtk.io")
    offenders = {m: sorted(d for d in graph[m] if d.startswith(upper)) for m in tree}
    assert not any(offenders.values()), f"the tree layer imports a layer above it: {offenders}"
    below = [m for m in graph if m.startswith(("simtk.common", "simtk.math", "simtk.spatial"))]
    offenders = {m: sorted(d for d in graph[m] if d.startswith(("simtk.multibody", "simtk.simulation", "simtk.io")))
                 for m in below}
    assert not any(offenders.values()), f"a lower layer imports multibody/simulation/io: {offenders}"


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_module_is_over_800_lines(name):
    n = len(_modules()[name].read_text().splitlines())
    assert n <= MAX_LINES, f"{name} has {n} lines (split it by concept; the limit is {MAX_LINES})"


def test_the_compiled_core_is_imported_only_through_simtk_core_wrappers():
    """``simtk_core`` is imported by ``simtk/_core.py`` alone (the one door to the kernels); every other
    module reaches it through that module."""
    importers = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "simtk_core" for a in node.names):
                importers.append(name)
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "simtk_core":
                importers.append(name)
    assert importers == ["simtk._core"], importers
