"""An integrator's continuation: what it carries from one step to the next besides the State.

A State holds every variable, but an error-controlled integrator also carries its predicted next
step size (and Verlet the previous step and accelerations its error estimate uses). A run resumed
from the State alone (``simtk.io.load_state``, or a pickled State) restarts that control, so it
differs from the uninterrupted run at the accuracy's level. ``get_continuation()`` returns that
data as plain numbers and arrays (a ``.npz`` snapshot holds it: ``save_state(..., integrator=)``);
``set_continuation()`` on an integrator initialized from the same State makes its next steps the
ones the uninterrupted integrator takes, so the resumed run is bitwise the uninterrupted one.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

__all__ = ["IntegratorContinuation"]


def _y_digest(y: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(y, dtype=np.float64).tobytes()).hexdigest()


class IntegratorContinuation:
    """The continuation methods of `Integrator` (a mixin; see the module doc)."""

    _method_name: str
    _adv: Any
    _h_pred: float

    def get_continuation(self) -> dict[str, Any]:
        """What a resumed run needs, besides the State, to continue bitwise like this integrator.

        Returns
        -------
        dict
            ``method`` (the method's name), ``time`` and ``y_sha256`` (the State it belongs to: the
            current one), ``h_pred`` (the predicted next step size) and the method's own entries
            (Verlet: ``hp``, ``a_prev``, ``have_history``); numbers, strings and float arrays only.

        Raises
        ------
        IntegratorError
            Not initialized, or a method whose continuation cannot be saved (ScipyIntegrator).
        """
        s = self._need_init("get_continuation()")  # type: ignore[attr-defined]
        out: dict[str, Any] = {"method": self._method_name, "time": float(s.get_time()),
                               "y_sha256": _y_digest(s.get_y()), "h_pred": float(self._h_pred)}
        out.update(self._continuation_extra())
        return out

    def set_continuation(self, continuation: dict[str, Any]) -> None:
        """Continue from ``continuation`` (`get_continuation` of the integrator that reached this State).

        On an initialized integrator whose State is the one the continuation was taken at (same time,
        bitwise the same y), it applies at once; on an integrator not yet initialized it is kept and
        applied by the next ``initialize`` (refused there if that State is another one), so it also
        serves a `Simulation`, which initializes its integrator when it runs.

        Parameters
        ----------
        continuation : dict
            As returned by `get_continuation` (or ``simtk.io.load_continuation``).

        Raises
        ------
        ValueError
            Another method's continuation, or one taken at another State (nothing is changed).
        """
        c = self._checked_continuation(continuation)
        if self._adv is None:
            self.__dict__["_pending_continuation"] = c
            return
        self._match_state(c, self._adv)
        self._apply_continuation(c)

    # ------------------------------------------------------------------ (Integrator.initialize calls these)
    def _pending_continuation_for(self, state) -> dict[str, Any] | None:
        """The continuation kept for the next initialize, checked against ``state`` (refused before
        anything changes)."""
        c = self.__dict__.get("_pending_continuation")
        if c is not None:
            self._match_state(c, state)
        return c

    def _apply_pending(self, c: dict[str, Any] | None) -> None:
        if c is not None:
            self.__dict__.pop("_pending_continuation", None)
            self._apply_continuation(c)

    # ------------------------------------------------------------------ the parts
    def _checked_continuation(self, continuation: Any) -> dict[str, Any]:
        where = f"{type(self).__name__}.set_continuation"
        if not isinstance(continuation, dict):
            raise TypeError(f"{where}: expected the dict of get_continuation(), got {type(continuation).__name__}")
        missing = [k for k in ("method", "time", "y_sha256", "h_pred") if k not in continuation]
        if missing:
            raise ValueError(f"{where}: not a continuation (missing {', '.join(missing)})")
        if continuation["method"] != self._method_name:
            raise ValueError(f"{where}: a continuation of the {continuation['method']} method cannot continue "
                             f"the {self._method_name} method")
        h = float(continuation["h_pred"])
        if not (math.isnan(h) or h > 0):
            raise ValueError(f"{where}: the predicted step size {h!r} must be positive")
        return dict(continuation)

    def _match_state(self, c: dict[str, Any], state) -> None:
        where = f"{type(self).__name__}: continuation"
        if float(state.get_time()) != float(c["time"]):
            raise ValueError(f"{where} taken at time {float(c['time'])!r}, but the State is at time "
                             f"{float(state.get_time())!r}; it continues only the State it was taken at")
        if _y_digest(state.get_y()) != str(c["y_sha256"]):
            raise ValueError(f"{where}: the State at time {float(c['time'])!r} has other variables (y) than the "
                             "one the continuation was taken at")

    def _apply_continuation(self, c: dict[str, Any]) -> None:
        self._set_continuation_extra(c)  # first: it checks its entries before it changes anything
        self._h_pred = float(c["h_pred"])

    def _continuation_extra(self) -> dict[str, Any]:
        """A method's own continuation entries (subclass hook)."""
        return {}

    def _set_continuation_extra(self, c: dict[str, Any]) -> None:
        """Restore what `_continuation_extra` gave (subclass hook)."""

