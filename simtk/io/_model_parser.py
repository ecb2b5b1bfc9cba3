"""The model format's tokenizer and parser: text to a tree of items, with lines; never evaluates anything."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._model_registry import _MAX_DEPTH, _NUMBER, _WORD, _Ref, _Word
from .errors import ModelFileError

# ====================================================================== tokenizer and parser


@dataclass
class _Tok:
    kind: str  # "[", "]", "=", "word", "number", "string", "ref", "end"
    value: Any
    line: int


def _tokenize(text: str, file: str | None) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n, line = 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in " \t\r\f\v":
            i += 1
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif ch in "[]=":
            toks.append(_Tok(ch, ch, line))
            i += 1
        elif ch == '"' or (ch == "@" and text.startswith('"', i + 1)):
            start_line = line
            j = i + (2 if ch == "@" else 1)
            out = []
            while True:
                if j >= n:
                    raise ModelFileError("unterminated string (expected a closing '\"')", file, start_line)
                c = text[j]
                if c == '"':
                    j += 1
                    break
                if c == "\n":
                    raise ModelFileError("a string runs past the end of its line (expected a closing '\"')",
                                         file, start_line)
                if c == "\\":
                    e = text[j + 1] if j + 1 < n else ""
                    simple = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}
                    if e in simple:
                        out.append(simple[e])
                        j += 2
                    elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2:j + 6]):
                        out.append(chr(int(text[j + 2:j + 6], 16)))
                        j += 6
                    else:
                        raise ModelFileError(f"unknown escape '\\{e}' in a string", file, line)
                    continue
                out.append(c)
                j += 1
            toks.append(_Tok("ref" if ch == "@" else "string", "".join(out), start_line))
            i = j
        else:
            m = _NUMBER.match(text, i)
            if m and (m.end() == n or not (text[m.end()].isalnum() or text[m.end()] in "_$.")):
                s = m.group()
                is_int = not any(c in s for c in ".eE")
                toks.append(_Tok("number", int(s) if is_int else float(s), line))
                i = m.end()
                continue
            m = _WORD.match(text, i)
            if m:
                toks.append(_Tok("word", m.group(), line))
                i = m.end()
                continue
            raise ModelFileError(f"unexpected character {ch!r} (expected a name, a number, a string, '[', ']' or '=')",
                                 file, line)
    toks.append(_Tok("end", None, line))
    return toks


@dataclass
class _Node:
    """A component or typed value: CLASS [ items ]."""

    kind: str
    line: int
    items: dict = field(default_factory=dict)  # name -> (value, line)
    children: list = field(default_factory=list)
    path: str = ""
    #: the source element a reader made the node from (``<joint name='elbow'>``), for errors
    element: str | None = None


class _Parser:
    def __init__(self, toks: list[_Tok], file: str | None):
        self.toks, self.i, self.file = toks, 0, file

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.peek()
        self.i += 1
        return t

    def fail(self, what: str, tok: _Tok):
        got = "the end of the file" if tok.kind == "end" else f"{tok.kind} {tok.value!r}"
        raise ModelFileError(f"expected {what}, got {got}", self.file, tok.line)

    def items(self, node: _Node, depth: int, closing: bool) -> None:
        if depth > _MAX_DEPTH:
            raise ModelFileError(f"nesting deeper than {_MAX_DEPTH} levels", self.file, self.peek().line)
        while True:
            t = self.peek()
            if closing and t.kind == "]":
                self.next()
                return
            if not closing and t.kind == "end":
                return
            if t.kind != "word":
                self.fail("an item (name=value or a component) or ']'" if closing else "an item", t)
            nxt = self.peek(1)
            if nxt.kind == "=":
                self.i += 2
                if t.value in node.items:
                    raise ModelFileError(f"{t.value!r} is given twice (first on line {node.items[t.value][1]})",
                                         self.file, t.line)
                node.items[t.value] = (self.value(depth + 1), t.line)
            elif nxt.kind == "[":
                self.i += 2
                child = _Node(t.value, t.line)
                self.items(child, depth + 1, True)
                node.children.append(child)
            else:
                self.fail(f"'=' or '[' after {t.value!r}", nxt)

    def value(self, depth: int):
        if depth > _MAX_DEPTH:
            raise ModelFileError(f"nesting deeper than {_MAX_DEPTH} levels", self.file, self.peek().line)
        t = self.next()
        if t.kind in ("number", "string"):
            return t.value
        if t.kind == "ref":
            return _Ref(t.value, t.line)
        if t.kind == "word":
            if t.value in ("true", "false"):
                return t.value == "true"
            if self.peek().kind == "[":
                self.next()
                node = _Node(t.value, t.line)
                self.items(node, depth + 1, True)
                return node
            return _Word(t.value)
        if t.kind == "[":
            out = []
            while self.peek().kind != "]":
                if self.peek().kind == "end":
                    self.fail("a value or ']'", self.peek())
                out.append(self.value(depth + 1))
            self.next()
            return out
        self.fail("a value", t)
