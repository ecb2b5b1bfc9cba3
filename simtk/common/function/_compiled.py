"""Built-in Functions compiled for the core: `FunctionTableBuilder` and `compile_function`.

The compiled core evaluates the built-in families (``Function.Constant``, ``Linear``, ``Polynomial``,
``Step``, ``Sinusoid``, ``Spline``, and OpenSim's SimmSpline, MultiplierFunction and coupler function)
from one flat table (``simtk_core.FunctionTable``, layout in ``core/functions.pxi``), without calling
back into Python: what ``MobilizedBody.FunctionBased`` and the couplers need to become compiled kinds.

Each built-in class defines ``_compile(self, builder) -> int``, which appends its operands (through
`FunctionTableBuilder.add`) and then its own entry (through `FunctionTableBuilder.entry`) and returns
that entry's index. Only a class that defines ``_compile`` itself is compiled: a user's subclass of a
built-in inherits the method but may have changed what the function computes, so it is not compilable,
like any user's `Function`; `FunctionTableBuilder.add` raises NotImplementedError naming its class, and
`FunctionTableBuilder.try_add` returns None, for the caller to keep the Python path.

The compiled values and derivatives equal the Python methods' bitwise (the same operations in the same
order), except Linear's dot product and Polynomial derivatives of degree above 20 (see
``core/functions.pxi``).
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _core
from ._base import Function

__all__ = ["FunctionTableBuilder", "compile_function"]

_INT64_MAX = int(np.iinfo(np.int64).max)
_STRIDE = 8


class FunctionTableBuilder:
    """Appends built-in Functions, operands first, to the flat table the compiled core evaluates.

    A function added twice (the same object) is one entry. `build` makes the immutable
    ``simtk_core.FunctionTable``; the builder may go on growing afterwards (a later `build` holds more).

    Examples
    --------
    >>> from simtk import Function
    >>> b = FunctionTableBuilder()
    >>> i = b.add(Function.Polynomial([1.0, 0.0, -2.0]))   # x^2 - 2
    >>> table = b.build()
    >>> table.value(i, 3.0), table.derivative(i, [0], 3.0)
    (7.0, 6.0)
    """

    def __init__(self) -> None:
        self._entries: list[tuple[int, ...]] = []
        self._params: list[float] = []
        # id(f) -> (f, index); f is kept so that its id cannot be reused by another object
        self._memo: dict[int, tuple[Function, int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def compilable(f: Function) -> bool:
        """Whether the class of ``f`` defines its own compiled form (its operands may still not have one)."""
        return "_compile" in type(f).__dict__

    def add(self, f: Function) -> int:
        """Append ``f`` (after its operands) and return its entry's index.

        Parameters
        ----------
        f : Function
            A built-in family, or a combinator over built-in families.

        Returns
        -------
        int

        Raises
        ------
        TypeError
            ``f`` is not a Function.
        NotImplementedError
            ``f`` (or one of its operands) is of a class without a compiled form, a user's Function or a
            subclass of a built-in; nothing is appended then.
        """
        hit = self._memo.get(id(f))
        if hit is not None:
            return hit[1]
        if not isinstance(f, Function):
            raise TypeError(f"FunctionTableBuilder.add: expected a simtk Function, got {type(f).__qualname__}")
        compile_ = type(f).__dict__.get("_compile")
        if compile_ is None:
            raise NotImplementedError(
                f"{type(f).__module__}.{type(f).__qualname__} has no compiled form (only the built-in families "
                f"and their combinators have one; a subclass of a built-in is a user's function): evaluate it "
                f"through its Python methods")
        n_entries, n_params = len(self._entries), len(self._params)
        try:
            i = operator.index(compile_(f, self))
        except BaseException:
            # leave the builder as it was: no partial operands of a function that failed
            del self._entries[n_entries:], self._params[n_params:]
            self._memo = {k: v for k, v in self._memo.items() if v[1] < n_entries}
            raise
        self._memo[id(f)] = (f, i)
        return i

    def try_add(self, f: Function) -> int | None:
        """`add`, or None (nothing appended) when ``f`` or an operand has no compiled form."""
        try:
            return self.add(f)
        except NotImplementedError:
            return None

    def entry(self, family: str, f: Function, params: Sequence[float] | np.ndarray, *, child: int = -1,
              aux: tuple[int, int] = (0, 0)) -> int:
        """Append one entry of ``family`` for ``f`` (called by the families' ``_compile``).

        Parameters
        ----------
        family : str
            A key of ``simtk._core.FN_FAMILIES``.
        f : Function
            The function: its argument size and maximum derivative order go into the entry.
        params : sequence of float
            Its parameters, in the family's layout (``core/functions.pxi``), copied exactly.
        child : int
            A combinator's operand, an index `add` returned; -1 for none.
        aux : (int, int)
            The family's two integers.

        Returns
        -------
        int
            The entry's index.
        """
        code = _core.FN_FAMILIES.get(family)
        if code is None:
            raise ValueError(f"FunctionTableBuilder.entry: unknown family {family!r}; known: {sorted(_core.FN_FAMILIES)}")
        p = np.asarray(params, dtype=np.float64).reshape(-1).tolist()
        max_order = min(int(f.get_max_derivative_order()), _INT64_MAX)
        self._entries.append((code, int(f.get_argument_size()), max_order, len(self._params), len(p), int(child),
                              int(aux[0]), int(aux[1])))
        self._params.extend(p)
        return len(self._entries) - 1

    def build(self) -> Any:
        """The ``simtk_core.FunctionTable`` of every entry appended so far (checked when made).

        Returns
        -------
        simtk_core.FunctionTable
            ``value(i, x)``, ``derivative(i, components, x)``, ``values(i, X)``, ``derivatives(i,
            components, X)`` evaluate entry ``i``.
        """
        entries = np.array(self._entries, dtype=np.int64).reshape(-1, _STRIDE)
        return _core.FunctionTable(entries, np.array(self._params, dtype=np.float64))


def compile_function(f: Function) -> tuple[Any, int]:
    """A table holding ``f`` (and its operands), and ``f``'s index in it.

    Raises
    ------
    NotImplementedError
        ``f`` or one of its operands has no compiled form (see `FunctionTableBuilder.add`).
    """
    b = FunctionTableBuilder()
    i = b.add(f)
    return b.build(), i
