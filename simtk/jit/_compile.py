"""What the kernel decorators share: naming numba's dispatchers for its cache, checking a kernel's
signature, and finding a module-level kernel again by name (for pickling)."""
from __future__ import annotations

import hashlib
import importlib
import inspect
import marshal
from typing import Any, Callable

from numba.core.serialize import dumps as numba_dumps

__all__: list[str] = []


def _code_key(fn: Callable) -> str | None:
    # numba's cache keys a closure (the trampolines) by its pickled cells, and a dispatcher pickles with a
    # random id: the dispatchers made here are named by the function's code and its pickled self instead,
    # so the trampolines are found in the cache by the next run, and an edited kernel is compiled again.
    try:
        return hashlib.sha256(marshal.dumps(fn.__code__) + numba_dumps(fn)).hexdigest()
    except Exception:  # (something in it cannot be pickled: compiled every run)
        return None


def _named(dispatcher: Any, key: str | None, what: str) -> Any:
    if key is not None:
        dispatcher._set_uuid(f"simtk.jit.{what}-{key}")
    return dispatcher


def _check_signature(fn: Callable, names: tuple, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what}: expected a function, got {type(fn).__name__}")
    fn = getattr(fn, "py_func", fn)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        raise TypeError(f"{what}: cannot read the signature of {fn!r}") from None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != len(params) or len(params) != len(names):
        raise TypeError(f"{what}: {getattr(fn, '__qualname__', fn)!r} must take exactly "
                        f"({', '.join(names)}), got {inspect.signature(fn)}")


def _find(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in module ``module`` (imported), or None."""
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


class _CompiledOnce:
    """``compile()`` for the numba kernels: their trampolines built once (``self._build(cache)``), the
    error numba raised kept and raised again; a kernel with no source file, which numba cannot cache,
    is compiled each run."""

    _compiled: Any = None
    _error: BaseException | None = None
    cache: bool = True

    def _build(self, cache: bool) -> Any:
        raise NotImplementedError

    def compile(self) -> None:
        """Compile the kernel now (else the first element using it does); raises what numba raised."""
        if self._compiled is not None:
            return
        if self._error is not None:
            raise self._error
        try:
            try:
                self._compiled = self._build(self.cache)
            except RuntimeError as exc:
                if "cannot cache" not in str(exc):
                    raise
                self._compiled = self._build(False)
        except Exception as exc:
            self._error = exc
            raise
