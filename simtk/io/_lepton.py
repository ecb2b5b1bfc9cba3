"""Lepton expressions (OpenSim's ExpressionBased* elements): a parser, an evaluator and exact derivatives.

The grammar is the one OpenSim 4.6's Lepton accepts (checked against it): numbers (``2``, ``.5``, ``5.``,
``1.5E+2``), variables, ``+ - * /``, ``^`` (right-associative and binding tighter than a unary minus:
``-2^2`` is -4, ``2^3^2`` is 512, ``2^-1`` is 0.5), unary minus (no unary plus), parentheses, the
functions ``sqrt exp log sin cos sec csc tan cot asin acos atan sinh cosh tanh erf erfc step delta
square cube recip abs`` (one argument) and ``min max`` (two), and definitions after semicolons
(``a*2; a=x+1``). Nothing is evaluated by Python's ``eval``: the text becomes a tree of tuples.

Derivatives are trees too, made by differentiating the tree symbolically (as Lepton does), so every order
is exact: ``step`` and ``delta`` have derivative 0, ``abs`` has ``2 step(x) - 1``, ``min``/``max`` the
derivative of the argument they pick.
"""
from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["LeptonError", "Expression"]


class LeptonError(ValueError):
    """A malformed Lepton expression: the message says where in the text and what was expected."""


_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                    r"|(?P<op>[-+*/^(),]))")

_UNARY = {
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos,
    "sec": lambda a: 1.0 / math.cos(a), "csc": lambda a: 1.0 / math.sin(a), "tan": math.tan,
    "cot": lambda a: 1.0 / math.tan(a), "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "erf": math.erf, "erfc": math.erfc,
    "step": lambda a: 1.0 if a >= 0.0 else 0.0, "delta": lambda a: 1.0 if a == 0.0 else 0.0,
    "square": lambda a: a * a, "cube": lambda a: a * a * a, "recip": lambda a: 1.0 / a, "abs": abs,
}
_BINARY_FUNCS = {"min", "max"}
_FUNCS = set(_UNARY) | _BINARY_FUNCS

Node = tuple  # ("num", v) | ("var", i) | (op, child, ...)


# ====================================================================== parsing
class _Parser:
    def __init__(self, text: str, names: dict[str, Node]):
        self.text = text
        self.names = names
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                col = pos + len(text[pos:]) - len(text[pos:].lstrip())
                raise LeptonError(f"unexpected character {text[col]!r} at column {col + 1} of {text!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def _peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _fail(self, what: str) -> LeptonError:
        t = self._peek()
        where = "at the end" if t is None else f"at column {t[2] + 1} ({t[1]!r})"
        return LeptonError(f"{what} {where} of {self.text!r}")

    def _take(self, op: str) -> bool:
        t = self._peek()
        if t is not None and t[0] == "op" and t[1] == op:
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        if not self.toks:
            raise LeptonError(f"empty expression {self.text!r}")
        node = self._sum()
        if self._peek() is not None:
            raise self._fail("unexpected text")
        return node

    def _sum(self) -> Node:
        node = self._product()
        while True:
            if self._take("+"):
                node = ("+", node, self._product())
            elif self._take("-"):
                node = ("-", node, self._product())
            else:
                return node

    def _product(self) -> Node:
        node = self._unary()
        while True:
            if self._take("*"):
                node = ("*", node, self._unary())
            elif self._take("/"):
                node = ("/", node, self._unary())
            else:
                return node

    def _unary(self) -> Node:
        if self._take("-"):
            return ("neg", self._unary())
        return self._power()

    def _power(self) -> Node:
        base = self._atom()
        if self._take("^"):
            return ("^", base, self._unary())  # right-associative, and 2^-1 is allowed
        return base

    def _atom(self) -> Node:
        t = self._peek()
        if t is None:
            raise self._fail("expected a number, variable, function or '('")
        kind, text, _ = t
        if kind == "num":
            self.i += 1
            return ("num", float(text))
        if kind == "op" and text == "(":
            self.i += 1
            node = self._sum()
            if not self._take(")"):
                raise self._fail("expected ')'")
            return node
        if kind != "name":
            raise self._fail("expected a number, variable, function or '('")
        self.i += 1
        if self._take("("):
            if text not in _FUNCS:
                raise LeptonError(f"unknown function {text!r} in {self.text!r} (known: {', '.join(sorted(_FUNCS))})")
            args = [self._sum()]
            while self._take(","):
                args.append(self._sum())
            if not self._take(")"):
                raise self._fail("expected ')' or ','")
            need = 2 if text in _BINARY_FUNCS else 1
            if len(args) != need:
                raise LeptonError(f"{text}() takes {need} argument(s), got {len(args)} in {self.text!r}")
            return (text, *args)
        if text not in self.names:
            raise LeptonError(f"unknown variable {text!r} in {self.text!r} (variables: "
                              f"{', '.join(self.names) or 'none'})")
        return self.names[text]


def parse(text: str, variables: list[str]) -> Node:
    """The tree of ``text``, its variables numbered in the order of ``variables``."""
    parts = text.split(";")
    names: dict[str, Node] = {v: ("var", i) for i, v in enumerate(variables)}
    defs: dict[str, str] = {}
    for d in parts[1:]:
        if d.strip() == "":
            continue
        name, eq, body = d.partition("=")
        name = name.strip()
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise LeptonError(f"expected a definition name=expression after ';', got {d.strip()!r} in {text!r}")
        defs[name] = body
    # a definition may use those after it: resolve them in dependency order, refusing a cycle
    resolving: set[str] = set()

    def resolve(name: str) -> None:
        if name in names:
            return
        if name in resolving:
            raise LeptonError(f"definition {name!r} refers to itself in {text!r}")
        resolving.add(name)
        for other in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", defs[name]):
            if other in defs and other not in _FUNCS:
                resolve(other)
        names[name] = _Parser(defs[name], names).parse()

    for name in defs:
        resolve(name)
    return _Parser(parts[0], names).parse()


# ====================================================================== evaluation
def evaluate(node: Node, x) -> float:
    op = node[0]
    if op == "num":
        return node[1]
    if op == "var":
        return x[node[1]]
    if op == "+":
        return evaluate(node[1], x) + evaluate(node[2], x)
    if op == "-":
        return evaluate(node[1], x) - evaluate(node[2], x)
    if op == "*":
        return evaluate(node[1], x) * evaluate(node[2], x)
    if op == "/":
        b = evaluate(node[2], x)
        return evaluate(node[1], x) / b if b != 0.0 else math.copysign(math.inf, evaluate(node[1], x))
    if op == "^":
        a, b = evaluate(node[1], x), evaluate(node[2], x)
        try:
            r = a ** b
        except (OverflowError, ZeroDivisionError):
            return math.inf
        return r if isinstance(r, float) else math.nan  # a negative base to a fractional power
    if op == "neg":
        return -evaluate(node[1], x)
    if op == "min":
        return min(evaluate(node[1], x), evaluate(node[2], x))
    if op == "max":
        return max(evaluate(node[1], x), evaluate(node[2], x))
    a = evaluate(node[1], x)
    try:
        return float(_UNARY[op](a))
    except (ValueError, ZeroDivisionError, OverflowError):  # outside the domain: refused by the caller
        return math.nan


# ====================================================================== symbolic derivatives
_ZERO, _ONE = ("num", 0.0), ("num", 1.0)


def _num(v: float) -> Node:
    return ("num", float(v))


def _add(a: Node, b: Node) -> Node:
    if a == _ZERO:
        return b
    if b == _ZERO:
        return a
    if a[0] == "num" and b[0] == "num":
        return _num(a[1] + b[1])
    return ("+", a, b)


def _sub(a: Node, b: Node) -> Node:
    if b == _ZERO:
        return a
    if a == _ZERO:
        return _neg(b)
    if a[0] == "num" and b[0] == "num":
        return _num(a[1] - b[1])
    return ("-", a, b)


def _mul(a: Node, b: Node) -> Node:
    if a == _ZERO or b == _ZERO:
        return _ZERO
    if a == _ONE:
        return b
    if b == _ONE:
        return a
    if a[0] == "num" and b[0] == "num":
        return _num(a[1] * b[1])
    return ("*", a, b)


def _div(a: Node, b: Node) -> Node:
    if a == _ZERO:
        return _ZERO
    if b == _ONE:
        return a
    return ("/", a, b)


def _neg(a: Node) -> Node:
    if a[0] == "num":
        return _num(-a[1])
    if a[0] == "neg":
        return a[1]
    return ("neg", a)


def _pow(a: Node, b: Node) -> Node:
    return ("^", a, b)


def derivative(node: Node, k: int) -> Node:
    """d node / d x_k, as a tree."""
    op = node[0]
    if op == "num":
        return _ZERO
    if op == "var":
        return _ONE if node[1] == k else _ZERO
    if op in ("+", "-"):
        da, db = derivative(node[1], k), derivative(node[2], k)
        return _add(da, db) if op == "+" else _sub(da, db)
    if op == "neg":
        return _neg(derivative(node[1], k))
    a = node[1]
    da = derivative(a, k)
    if op == "*":
        b = node[2]
        return _add(_mul(da, b), _mul(a, derivative(b, k)))
    if op == "/":
        b = node[2]
        db = derivative(b, k)
        return _sub(_div(da, b), _div(_mul(a, db), _mul(b, b)))
    if op == "^":
        b = node[2]
        db = derivative(b, k)
        # d(a^b) = b a^(b-1) da + a^b log(a) db; the second term only where the exponent varies
        term = _mul(_mul(b, _pow(a, _sub(b, _ONE))), da) if da != _ZERO else _ZERO
        if db != _ZERO:
            term = _add(term, _mul(_mul(node, ("log", a)), db))
        return term
    if op in ("min", "max"):
        b = node[2]
        db = derivative(b, k)
        if da == _ZERO and db == _ZERO:
            return _ZERO
        # min picks a where a <= b: step(b - a); max picks a where a >= b: step(a - b)
        pick_a = ("step", _sub(b, a)) if op == "min" else ("step", _sub(a, b))
        return _add(_mul(pick_a, da), _mul(_sub(_ONE, pick_a), db))
    if da == _ZERO:
        return _ZERO
    outer = {
        "sqrt": lambda: _div(_num(0.5), node),
        "exp": lambda: node,
        "log": lambda: ("recip", a),
        "sin": lambda: ("cos", a),
        "cos": lambda: _neg(("sin", a)),
        "sec": lambda: _mul(node, ("tan", a)),
        "csc": lambda: _neg(_mul(node, ("cot", a))),
        "tan": lambda: ("square", ("sec", a)),
        "cot": lambda: _neg(("square", ("csc", a))),
        "asin": lambda: ("recip", ("sqrt", _sub(_ONE, ("square", a)))),
        "acos": lambda: _neg(("recip", ("sqrt", _sub(_ONE, ("square", a))))),
        "atan": lambda: ("recip", _add(_ONE, ("square", a))),
        "sinh": lambda: ("cosh", a),
        "cosh": lambda: ("sinh", a),
        "tanh": lambda: _sub(_ONE, ("square", node)),
        "erf": lambda: _mul(_num(2.0 / math.sqrt(math.pi)), ("exp", _neg(("square", a)))),
        "erfc": lambda: _mul(_num(-2.0 / math.sqrt(math.pi)), ("exp", _neg(("square", a)))),
        "step": lambda: _ZERO,
        "delta": lambda: _ZERO,
        "square": lambda: _mul(_num(2.0), a),
        "cube": lambda: _mul(_num(3.0), ("square", a)),
        "recip": lambda: _neg(("recip", ("square", a))),
        "abs": lambda: _sub(_mul(_num(2.0), ("step", a)), _ONE),
    }[op]()
    return _mul(outer, da)


def uses(node: Node) -> set[int]:
    """The variables a tree reads."""
    if node[0] == "num":
        return set()
    if node[0] == "var":
        return {node[1]}
    out: set[int] = set()
    for c in node[1:]:
        out |= uses(c)
    return out


class Expression:
    """A parsed Lepton expression of named variables, with its derivatives made on demand.

    Parameters
    ----------
    text : str
        The expression, e.g. ``"-10*q - 0.5*qdot^3"``.
    variables : list of str
        Its variables, in argument order.

    Raises
    ------
    LeptonError
        The text is malformed, or names an unknown variable or function.
    """

    def __init__(self, text: str, variables: list[str]):
        self.text = str(text)
        self.variables = list(variables)
        self.tree = parse(self.text, self.variables)
        self._deriv: dict[tuple[int, ...], Node] = {(): self.tree}

    def value(self, x: Any) -> float:
        """The expression at ``x`` (one value per variable)."""
        return float(evaluate(self.tree, x))

    def derivative(self, components: tuple[int, ...] | list[int], x: Any) -> float:
        """The mixed partial derivative with respect to the variables ``components``, at ``x``."""
        key = tuple(sorted(components))
        d = self._deriv.get(key)
        if d is None:
            d = derivative(self._tree_for(key[:-1]), key[-1])
            self._deriv[key] = d
        return float(evaluate(d, x))

    def _tree_for(self, key: tuple[int, ...]) -> Node:
        d = self._deriv.get(key)
        if d is None:
            d = derivative(self._tree_for(key[:-1]), key[-1])
            self._deriv[key] = d
        return d
