"""The integrators' divergence watch: a run that blows up ends within seconds, named.

An unstable run under an error-controlled integrator does not overflow: the step size shrinks with
the growing motion, and the run spins on ever smaller steps (a controller whose gains are far beyond
its update rate, or an element too stiff for the step, took minutes for a hundredth of a second).
The watch ends such a run with `SimulationDivergedError` when either

- a speed grew by more than ``max_growth`` since ``initialize()`` (per variable, in units of its
  weight: ``max(1, w |u|) / max(1, w |u_start|)``; all of y for a System without speeds: a
  coordinate such as a spinning wheel's angle grows without bound in a healthy run, a speed does
  not grow by orders of magnitude), or
- the steps stayed below ``min_step_ratio`` times the run's first step for ``collapse_steps``
  steps in a row.

It looks every `CHECK_EVERY` steps counted from ``initialize()``: the compiled loop returns to Python
exactly there, so that the Python and compiled paths check the same States and fail alike. The
check is a few array operations per `CHECK_EVERY` steps. The same points call the integrator's
step hook, which `Simulation` uses for its budgets and progress inside long driver steps.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .integrator_errors import SimulationDivergedError

__all__ = ["DivergenceWatch", "CHECK_EVERY"]

#: The watch looks after every this many steps taken (since ``initialize()``).
CHECK_EVERY = 1024

_DEFAULTS = {"max_growth": 1e6, "min_step_ratio": 1e-6, "collapse_steps": 64 * CHECK_EVERY}


def _limit(value: Any, name: str, low: float, high: float = math.inf) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"set_divergence_detection: {name} must be a real number, got {value!r}") from exc
    if not low < v < high:
        raise ValueError(f"set_divergence_detection: {name} must be in ({low:g}, {high:g}), got {value!r}")
    return v


class DivergenceWatch:
    """The divergence watch (a mixin of Integrator, whose attributes it reads)."""

    _adv: Any
    _system: Any
    _y0: np.ndarray
    _wy: np.ndarray
    _t0: float
    _n_taken: int
    _h_prev: float
    _h_first: float
    _f0: np.ndarray
    _method_name: str

    #: None: off; else the settings (see ``set_divergence_detection``)
    _div_settings: dict | None = _DEFAULTS
    _div_ref: tuple | None = None  # (t, y) at initialize()
    _div_low = 0  # steps in a row below min_step_ratio times the first step (counted per check)
    #: Called at every check point (before the check) with the integrator; set by a Simulation's run.
    _step_hook: Callable[[Any], None] | None = None

    def set_divergence_detection(self, enabled: bool = True, *, max_growth: float = 1e6,
                                 min_step_ratio: float = 1e-6, collapse_steps: int = 64 * CHECK_EVERY) -> None:
        """Turn the divergence watch on (the default) or off, or change its limits.

        Parameters
        ----------
        enabled : bool
            False turns the watch off: an unstable run then goes on until an evaluation overflows
            or the step reaches the minimum step size.
        max_growth : float
            A speed (in units of its weight, at least 1) that grows by more than this factor since
            ``initialize()`` ends the run.
        min_step_ratio : float
            Steps below this fraction of the run's first step count as collapsed ...
        collapse_steps : int
            ... and this many of them in a row end the run (checked every `CHECK_EVERY` steps).
        """
        if not enabled:
            self._div_settings = None
            return
        self._div_settings = {"max_growth": _limit(max_growth, "max_growth", 1.0),
                              "min_step_ratio": _limit(min_step_ratio, "min_step_ratio", 0.0, 1.0),
                              "collapse_steps": int(_limit(collapse_steps, "collapse_steps", 0.0))}

    def get_divergence_detection(self) -> dict | None:
        """The watch's limits (a dict of ``set_divergence_detection``'s keywords), or None when it is off."""
        return None if self._div_settings is None else dict(self._div_settings)

    # ------------------------------------------------------------------ the integrator's calls
    def _watch_start(self) -> None:
        """At ``initialize()``: the run's start, against which growth is measured."""
        self._div_ref = (self._t0, self._y0.copy())
        self._div_low = 0

    def _watch_chunk(self) -> int:
        """Steps the compiled loop may take before the next check point (0: no limit)."""
        if self._div_settings is None and self._step_hook is None:
            return 0
        return CHECK_EVERY - self._n_taken % CHECK_EVERY

    def _watch(self) -> None:
        """After a step: at a check point, call the step hook and look for divergence."""
        if self._n_taken % CHECK_EVERY or not self._n_taken:
            return
        if self._step_hook is not None:
            self._step_hook(self)
        settings, ref = self._div_settings, self._div_ref
        if settings is None or ref is None:
            return
        t_ref, y_ref = ref
        y = self._y0
        if len(y_ref) != len(y):  # the variables were laid out anew: measure from here
            self._watch_start()
            return
        s = self._adv
        nq, nu = s.get_nq(), s.get_nu()
        part = slice(nq, nq + nu) if nu else slice(None)
        w = self._wy[part]
        growth = np.maximum(1.0, w * np.abs(y[part])) / np.maximum(1.0, w * np.abs(y_ref[part]))
        k = int(np.argmax(growth))
        first = self._h_first
        if self._h_prev < settings["min_step_ratio"] * first:
            self._div_low += CHECK_EVERY
        else:
            self._div_low = 0
        grown = growth[k] > settings["max_growth"]
        if not grown and self._div_low < settings["collapse_steps"]:
            return
        i = k + (part.start or 0)
        if growth[k] <= 1.0:  # nothing grew: name the fastest-moving variable (the stiff one)
            i = int(np.argmax(self._wy * np.abs(self._f0)))
        what = self._system._describe_y(s, i)
        if grown:
            why = (f"{what} grew by a factor of {growth[k]:.3g} (from {y_ref[i]:.6g} at t = {t_ref!r} to "
                   f"{y[i]:.6g}, over {self._n_taken} steps)")
        else:
            why = (f"its steps stayed below {settings['min_step_ratio']:g} times its first step ({first:.3g}) for "
                   f"{self._div_low} steps in a row (the last {self._h_prev:.3g}); the fastest-growing variable is "
                   f"{what}, now {y[i]:.6g} (at t = {t_ref!r}: {y_ref[i]:.6g})")
        exc = SimulationDivergedError(
            f"{self._method_name}: the simulation diverged: {why}. Likely cause: a controller whose gains are too "
            f"high for its update rate (its output is held over each update interval), or an element too stiff "
            f"for the step; lower the gains, update the controller more often, or soften the element. (Limits: "
            f"set_divergence_detection.) The State is left at t = {self._t0!r}.")
        exc.variable_index = i
        raise exc
