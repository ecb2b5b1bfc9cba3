"""What watches a `Simulation.run`: its wall-time and step budgets, its progress inside long driver
steps, and the words of a diverged run (which controller drives the variable that blew up).

The integrator calls the run's guard every ``CHECK_EVERY`` of its steps (its step hook, at the
divergence watch's check points), so a budget ends even a driver step whose steps never end; the
Simulation calls it after every driver step too.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from ..math.integrator_errors import SimulationDivergedError

__all__ = ["RunBudgetExceededError", "RunGuard", "explain_divergence"]


class RunBudgetExceededError(RuntimeError):
    """``Simulation.run`` used up its ``max_wall_time`` or ``max_steps``; the message says how far it got.

    The State is left where the run stopped (``t_reached``), possibly inside a driver step; the next
    ``run`` goes on from there (the controllers then compute from the State where it stopped).
    """

    def __init__(self, message: str, t_reached: float, steps: int, wall_seconds: float):
        super().__init__(message)
        self.t_reached = t_reached
        self.steps = steps
        self.wall_seconds = wall_seconds


def _budget(value: Any, name: str, integer: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not float(value).is_integer()):
        raise TypeError(f"Simulation.run: {name} must be a {'whole ' if integer else ''}number or None, got {value!r}")
    if not float(value) > 0:
        raise ValueError(f"Simulation.run: {name} must be positive, got {value!r}")
    return float(value)


class PlainProgress:
    """The progress line when tqdm is not installed: one line on standard error at most every ``every``
    seconds, with the bar's ``n``/``refresh``/``close`` (what Simulation uses of a tqdm bar)."""

    def __init__(self, total: float, every: float = 5.0):
        self.total, self.n, self._every = total, 0.0, every
        self._wall0 = self._last = time.perf_counter()

    def refresh(self) -> None:
        now = time.perf_counter()
        if now - self._last >= self._every:
            self._last = now
            share = f" ({100 * self.n / self.total:.1f}%)" if self.total > 0 else ""
            print(f"simulating: {self.n:.6g} of {self.total:.6g} s{share} after {now - self._wall0:.1f} s",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


class RunGuard:
    """One run's budgets and progress: ``check`` after a driver step, and as the integrator's step hook."""

    def __init__(self, sim, t_start: float, t_final: float, max_wall_time: Any, max_steps: Any):
        self.sim = sim
        self.t_start, self.t_final = t_start, t_final
        self.max_wall = _budget(max_wall_time, "max_wall_time", False)
        max_n = _budget(max_steps, "max_steps", True)
        self.max_steps = None if max_n is None else int(max_n)
        self.wall0 = time.perf_counter()
        self.steps0 = sim._integ.get_num_steps_taken()

    def __enter__(self) -> "RunGuard":
        self.sim._integ._step_hook = self.on_check_point
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sim._integ._step_hook = None

    def on_check_point(self, integ) -> None:
        """At the integrator's check points: inside a driver step."""
        self.check(integ._t0)

    def check(self, t: float | None = None) -> None:
        """Raise RunBudgetExceededError when a budget is used up; show progress."""
        sim = self.sim
        integ = sim._integ
        t = sim.get_time() if t is None else t
        sim._update_progress(self.wall0, self.t_start, self.t_final, t)
        wall = time.perf_counter() - self.wall0
        steps = integ.get_num_steps_taken() - self.steps0
        over = None
        if self.max_wall is not None and wall > self.max_wall:
            over = f"the wall-time budget of {self.max_wall:g} s (max_wall_time) ran out"
        elif self.max_steps is not None and steps > self.max_steps:
            over = f"the budget of {self.max_steps} integrator steps (max_steps) ran out"
        if over is None:
            return
        span = self.t_final - self.t_start
        share = f" ({100 * (t - self.t_start) / span:.3g}% of the run)" if span > 0 else ""
        raise RunBudgetExceededError(
            f"Simulation.run: {over} at t = {t!r}{share}, on the way from t = {self.t_start!r} to "
            f"{self.t_final!r}, after {steps} integrator steps and {wall:.3g} s; the State is left at t = {t!r} "
            f"(run() again goes on from there; a run whose steps shrink without end is diverging or stiff: "
            f"see Integrator.describe_fast_path and get_previous_step_size_taken, now "
            f"{integ.get_previous_step_size_taken():.3g})", t, steps, wall)


def explain_divergence(sim, exc: SimulationDivergedError) -> SimulationDivergedError:
    """``exc`` with the controllers that drive its variable named, their gains against their rate."""
    i = exc.variable_index
    if i is None:
        return exc
    state = sim._integ.get_advanced_state()
    nq = state.get_nq()
    notes = []
    for a in sim._controllers:
        resolved = getattr(a, "_resolved", None)
        dt = a.get_update_interval() or float(sim._step)
        if resolved is None:
            continue
        for qi, ui, upath, kp, kd, _target in resolved[1]:
            if i not in (qi, nq + ui):
                continue
            note = (f"{a.get_absolute_path()!r} ({type(a).__name__}) drives {upath!r} with kp = {kp:g}, "
                    f"kd = {kd:g}, its output held over every {dt:g} s")
            try:
                m = float(sim._system.get_matter_subsystem().calc_m(state)[ui, ui])
            except Exception:  # the note must not hide the error it explains
                m = 0.0
            if m > 0:
                # the mass matrix's diagonal: a one-coordinate estimate (lighter coupled modes hold less)
                note += (f"; against the coordinate's inertia M = {m:.3g} (the mass matrix's diagonal) that is "
                         f"kd dt / M = {kd * dt / m:.3g} and kp dt^2 / M = {kp * dt * dt / m:.3g}, where a held PD "
                         f"law on one coordinate is stable only below about 2 and 1")
            notes.append(note)
    if not notes:
        active = [f"{a.get_absolute_path()!r} ({type(a).__name__})" for a in sim._controllers]
        if not active:
            return exc
        notes.append("the run's controllers are " + ", ".join(active) + f", updated every {float(sim._step):g} s "
                     "or their own interval")
    named = SimulationDivergedError(f"{exc} Controllers: {'; '.join(notes)}: lower the gains or update more often.")
    named.variable_index = i
    return named
