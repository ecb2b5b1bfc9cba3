"""Simulation: ArtiSynth's advance loop (seed 000 §2.4-2.5) over a staged System.

``Simulation(system, state).run(t_final)`` advances in driver steps on an exact tick grid; in each
step from ``ta`` to ``tb``: input probes apply their values for ``tb``, controllers compute from the
State at ``ta``, the System advances to ``tb`` (the integrator stops exactly there, handling events
on the way), monitors look, output probes record. Agents live in the System under ``/agents``, so
their memory is State: a waypoint (a saved State) brings them back exactly.

The agents and the driver-input force are in the System only while the Simulation runs it
(``_beside.py`` explains how): the System the user built is left as it was, with its States, and what a
run hands back (`Simulation.get_state`, a `StatesTrajectory`) is a State of that System.
"""
from __future__ import annotations

import math
import sys
import time
import weakref
from dataclasses import dataclass
from typing import Any, TypeVar

from ..common.events import change_mark, lowest_stage_changed_since, report_without_change
from ..common.stage import Stage
from ..common.state import State
from ..math.explicit import RungeKuttaMersonIntegrator
from ..math.integrator import Integrator, SimulationDivergedError, StepSizeTooSmallError
from ..math.time_stepper import TimeStepper
from ._beside import Beside
from ._clock import Clock, as_fraction
from ._compiled_driver import CompiledDriver
from ._run_guard import PlainProgress, RunGuard, explain_divergence
from .agents import Agent, Controller, InputProbe, Monitor, PDController, _Inputs, _needs_forces
from .recording import OutputProbe, StatesTrajectory

__all__ = ["Simulation", "RunSummary"]

_A = TypeVar("_A", bound=Agent)


@dataclass
class RunSummary:
    """What a run did: simulated interval, steps, rejected steps, realizations, wall time."""

    t_start: float
    t_end: float
    driver_steps: int
    integrator_steps: int
    rejected_steps: int
    realizations: int
    wall_seconds: float

    @property
    def real_time_factor(self) -> float:
        """Simulated seconds per wall-clock second."""
        return (self.t_end - self.t_start) / self.wall_seconds if self.wall_seconds > 0 else math.inf

    def __str__(self) -> str:
        return (f"simulated t = {self.t_start:g} to {self.t_end:g} in {self.wall_seconds:.3g} s of wall time "
                f"({self.real_time_factor:.3g}x real time): {self.integrator_steps} steps "
                f"({self.rejected_steps} rejected), {self.driver_steps} driver steps, "
                f"{self.realizations} realizations")


class Simulation:
    """Drive a System with agents: input probes, controllers, monitors, output probes.

    Parameters
    ----------
    system : System
    state : State
        Where to start (copied).
    integrator : Integrator, optional
        Default: RK-Merson at accuracy 1e-6.
    step_size : float
        The driver step (ArtiSynth's maximum step size): agents with no interval act every step.
    progress : bool, optional
        A tqdm progress bar for runs that take more than ``progress_after`` seconds of wall time;
        by default only when standard error is a terminal. ``False`` turns it off; ``True`` without
        tqdm installed prints a plain line on standard error every few seconds instead.
    """

    def __init__(self, system, state: State, integrator: Integrator | None = None, step_size: float = 0.01,
                 progress: bool | None = None, progress_after: float = 1.0):
        if not isinstance(state, State):
            raise TypeError(f"Simulation: expected a State, got {type(state).__name__}")
        self._system = system
        self._beside = Beside(system)  # the agents' subsystem and the driver's force, beside the System
        self._agents_sub = self._beside.sub
        self._memory: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # exported State -> agents' memory
        if integrator is None:
            integrator = RungeKuttaMersonIntegrator(system)
            integrator.set_accuracy(1e-6)
        self._integ = integrator
        self._step = as_fraction(step_size, "Simulation: step_size")
        self._agents: list[Agent] = []
        self._state = state.copy()
        self._inputs = _Inputs(self)
        self._discrete_forces = None
        self._stepper: Any = None  # a TimeStepper, made at the start of a run
        self._waypoints: dict[float, tuple] = {}
        self._pending_waypoints: list[float] = []
        self._progress, self._progress_after = progress, float(progress_after)
        self._bar: Any = None
        self.progress_shown = False  # whether a progress bar was shown (for tests and scripts)
        self._n_driver = 0
        self._n_rejected = 0
        self._compiled: CompiledDriver | None = None
        self._use_compiled_driver = True  # False: every driver step in Python (to compare the two)
        self._last_summary: RunSummary | None = None

    # ------------------------------------------------------------------ agents
    def add(self, agent: _A, name: str | None = None) -> _A:
        """Add an agent (it joins the System as ``/agents/<name>`` while the Simulation runs); returns it.

        A `PDController` is checked here: a coordinate path the System does not have is refused with the
        list of those it has. Agents are added between runs, not from inside one.
        """
        if not isinstance(agent, Agent):
            raise TypeError(f"Simulation.add: expected an agent (InputProbe, Controller, Monitor, OutputProbe, "
                            f"StatesTrajectory), got {type(agent).__name__}")
        if self._beside.attached:
            raise RuntimeError(f"Simulation.add: a {type(agent).__name__} cannot join during a run; add agents "
                               "between runs")
        if name is not None:
            agent.set_name(name)
        if isinstance(agent, PDController):
            agent._check(self._system, self._model_state())
        self._agents_sub._adopt_component(agent)
        self._beside.stale = True  # what agents declare is allocated with the Simulation's layout
        agent._sim = self
        self._agents.append(agent)
        self._agents.sort(key=lambda a: a._order)
        self._stepper = None
        return agent

    def add_input_probe(self, probe: InputProbe, name: str | None = None) -> InputProbe:
        return self.add(self._kind(probe, InputProbe), name)

    def add_controller(self, controller: Controller, name: str | None = None) -> Controller:
        return self.add(self._kind(controller, Controller), name)

    def add_monitor(self, monitor: Monitor, name: str | None = None) -> Monitor:
        return self.add(self._kind(monitor, Monitor), name)

    def add_output_probe(self, probe: OutputProbe | StatesTrajectory, name: str | None = None):
        return self.add(self._kind(probe, (OutputProbe, StatesTrajectory)), name)

    @staticmethod
    def _kind(agent: Any, kind: Any) -> Any:
        if not isinstance(agent, kind):
            raise TypeError(f"expected a {getattr(kind, '__name__', kind)}, got {type(agent).__name__}")
        return agent

    # ------------------------------------------------------------------ state and time
    def get_state(self) -> State:
        """The current State: after a run, a new State of the System as built with the integrator's
        variables, realized as far as the integrator's (Acceleration after a step; its accelerations are
        the System's alone, without the driver inputs); during a run (to an agent), the Simulation's own."""
        s = self._current_state()
        if s is self._state or self._beside.attached:
            return s
        return self._beside.export(s, self._memory)

    def _current_state(self) -> State:
        return self._stepper.get_state() if self._stepper is not None else self._state

    def _export(self, state: State) -> State:
        """One of the Simulation's States (a recorded one) as a State of the System as built, after a run."""
        if self._beside.attached or state._system is not self._system or \
                state._topology_version == self._system._topology_version:
            return state
        return self._beside.export(state, self._memory)

    def get_time(self) -> float:
        return self._current_state().get_time()

    def get_integrator(self) -> Integrator:
        return self._integ

    def _model_state(self) -> State:
        """A State of the System as it is now, realized to Model (for checks of the agents' paths)."""
        s, system = self._state, self._system
        if s._system is system and s._topology_version == system._topology_version and s._names is not None:
            return s
        return system.realize_topology()

    # ------------------------------------------------------------------ preparation
    def _prepare(self) -> None:
        system = self._system
        self._discrete_forces = self._beside.driver
        state = self._current_state()
        if state._topology_version != system._topology_version:
            state = self._beside.transfer(state)
        t0 = state.get_time()
        intervals = [self._step] + [a._interval for a in self._agents if a._interval is not None]
        self._clock = clock = Clock(intervals, t0)
        self._step_ticks = clock.ticks(self._step)
        self._every = {id(a): clock.ticks(a._interval) if a._interval is not None else None for a in self._agents}
        self._stepper = TimeStepper(system, self._integ)
        self._stepper.initialize(state)
        self._k = clock.k0 if clock.offset == 0.0 else 0
        self._recorded_at: dict[int, int] = {}
        # the agents by role, fixed for the run (the step loop only walks these lists)
        agents = self._agents
        self._inputs_list: list[Any] = [a for a in agents if a._order == 0]
        self._controllers: list[Any] = [a for a in agents if a._order == 1]
        self._monitors: list[Any] = [a for a in agents if a._order == 2]
        self._recorders: list[Any] = [a for a in agents if a._order == 3]
        self._checkers = [a for a in self._controllers if type(a).check_step is not Controller.check_step]
        self._timed: list[tuple[Agent, int]] = [(a, e) for a in agents if (e := self._every[id(a)]) is not None]
        for a in self._agents:
            if isinstance(a, OutputProbe):
                a._bind(system, state, 1024)
        self._compiled = CompiledDriver.for_run(self)

    def _due(self, agent: Agent, k: int) -> bool:
        every = self._every[id(agent)]
        return (every is None or k % every == 0) and agent._in_window(self._clock.time(k))

    def _next_tick(self, k: int, k_end: int) -> int:
        """The end of the driver step from tick ``k``: a step, the next agent time or the end."""
        kb = min(k + self._step_ticks, k_end)
        for _a, every in self._timed:
            kb = min(kb, (k // every + 1) * every)
        return kb

    # ------------------------------------------------------------------ running
    def run(self, t_final: float, *, max_wall_time: float | None = None, max_steps: int | None = None) -> RunSummary:
        """Advance to ``t_final`` (rounded to the tick grid when within a rounding of it).

        Parameters
        ----------
        t_final : float
        max_wall_time, max_steps : optional
            Budgets of this call: seconds of wall time and integrator steps. They are checked after
            every driver step and every 1024 integrator steps; using one up raises
            `RunBudgetExceededError`, which says how far the run got (the State is left there, and
            ``run`` again goes on from it).

        The System has the Simulation's agents and driver inputs only while this runs; afterwards it is
        as the user built it (see the module doc).

        Raises
        ------
        SimulationDivergedError
            The motion grew by orders of magnitude, or the steps collapsed (the integrator's divergence
            watch, ``Integrator.set_divergence_detection``); the message names the variable and the
            controllers that drive it, with their gains against their update interval.
        """
        with self._beside.during(_needs_forces(self._agents)):
            return self._run(t_final, max_wall_time, max_steps)

    def _run(self, t_final: float, max_wall_time: float | None, max_steps: int | None) -> RunSummary:
        if self._stepper is None or self._current_state()._topology_version != self._system._topology_version:
            self._prepare()
        clock = self._clock
        t_final = float(t_final)
        t_now = self.get_time()
        if not t_final >= t_now:
            raise ValueError(f"Simulation.run: final time {t_final!r} is before the current time {t_now!r}")
        k_end = clock.tick_at_or_after(t_final)
        if clock.time(k_end) != t_final and abs(clock.time(k_end) - t_final) > 1e-9 * max(1.0, abs(t_final)):
            raise ValueError(f"Simulation.run: final time {t_final!r} is not on the driver's tick grid "
                             f"(tick {float(clock.tick)!r}); choose a step size that divides it")
        integ = self._integ
        n0 = (integ.get_num_steps_taken(), integ.get_num_realizations(), integ.get_num_step_adjustments())
        self._n0_rejected, n0_driver = self._n_rejected, self._n_driver
        guard = RunGuard(self, t_now, t_final, max_wall_time, max_steps)
        wall0 = guard.wall0
        self._record(self._k)  # the start, once
        try:
            with guard:
                self._run_ticks(guard, k_end)
        except SimulationDivergedError as exc:
            named = explain_divergence(self, exc)
            if named is exc:
                raise
            raise named from exc
        finally:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
        summary = RunSummary(t_now, self.get_time(), self._n_driver - n0_driver, integ.get_num_steps_taken() - n0[0],
                             integ.get_num_step_adjustments() - n0[2] + self._n_rejected - self._n0_rejected,
                             integ.get_num_realizations() - n0[1], time.perf_counter() - wall0)
        self._last_summary = summary
        return summary

    def _run_ticks(self, guard: RunGuard, k_end: int) -> None:
        """The driver steps of ``run`` up to tick ``k_end``, each followed by the guard's check."""
        clock = self._clock
        while self._k < k_end:
            stretch = self._compiled.stretch(self._k, k_end) if self._compiled is not None else None
            if stretch is not None:
                # driver steps taken in the compiled loop; a driver step it began is finished here
                self._k, begun = stretch
                if begun is not None:
                    self._stepper.step_to(clock.time(begun))
                    self._n_driver += 1
                    self._k = begun
            else:
                kb = self._next_tick(self._k, k_end)
                self._advance(self._k, kb)
                self._k = kb
            self._record(self._k)
            self._save_waypoints()
            guard.check()

    def step(self, dt: float) -> RunSummary:
        """Advance by ``dt`` (a whole number of ticks)."""
        return self.run(self.get_time() + float(dt))

    def _advance(self, ka: int, kb: int) -> None:
        """One driver step from ``ta`` to ``tb``, then the monitors at ``tb`` (ArtiSynth's order).

        A controller may reject the step (``check_step`` returns a `StepAdjustment`): the driver goes back
        to the State before it and covers what is left of ``[ta, tb]`` in sub-steps of the rejected length
        times the adjustment's scaling, each checked again, and each accepted sub-step keeps that length
        (ArtiSynth's adaptive stepping). Rejections therefore shorten the interval checked, which is what
        a check on the change over a step needs; repeated rejections end at the integrator's minimum step
        size with `StepSizeTooSmallError`, after at most about 50 halvings.
        """
        clock, integ = self._clock, self._integ
        tb = clock.time(kb)
        checkers = [a for a in self._checkers if self._due(a, ka)] if self._checkers else ()
        if not checkers:
            self._substep(ka, tb)
        else:
            t, h = clock.time(ka), tb - clock.time(ka)
            while t < tb:
                # land exactly on tb rather than leave a sliver of round-off
                t1 = tb if t + h * (1 + 1e-6) >= tb else t + h
                saved, h_pred = integ.get_advanced_state().copy(), integ._h_pred
                self._substep(ka, t1)
                adj = None
                for c in checkers:
                    adj = c.check_step(saved, integ.get_state())
                    if adj is not None:
                        break
                if adj is None:
                    t = t1
                    continue
                self._n_rejected += 1
                self._last_rejection = adj.reason
                h = adj.scaling * (t1 - t)
                integ.initialize(saved.copy())
                integ._h_pred = h_pred
                if h < integ._min_step_at(t):
                    raise StepSizeTooSmallError(
                        f"Simulation: a controller's step adjustment asked for a step of {h!r}, below the minimum "
                        f"step size, at t = {t!r} (reason: {adj.reason}); the State is left at t = {t!r}")
        self._n_driver += 1
        if self._monitors:
            state = integ.get_state()
            for a in self._monitors:
                if self._due(a, kb):
                    _MonitorCall(a).check(state)

    def _substep(self, ka: int, t1: float) -> None:
        """Inputs for ``t1``, controllers due at tick ``ka`` compute from the State now, the System
        advances to ``t1``."""
        integ = self._integ
        if self._inputs_list or self._controllers:
            s = integ.upd_advanced_state()
            mark = change_mark(s)
            for a in self._inputs_list:
                if a._active:
                    a.apply(s, t1)
            for a in self._controllers:
                if self._due(a, ka):
                    a.compute(s)
            lowest = lowest_stage_changed_since(s, mark)
            if lowest != Stage.Infinity:
                integ.reinitialize(lowest)
        self._stepper.step_to(t1)

    def _record(self, k: int) -> None:
        if not self._recorders:
            return
        state = self._integ.get_state() if self._stepper is not None else self._state
        for a in self._recorders:
            if self._due(a, k) and self._recorded_at.get(id(a)) != k:
                a.record(state)
                self._recorded_at[id(a)] = k

    # ------------------------------------------------------------------ waypoints
    def add_waypoint(self, t: float) -> None:
        """Save the State when the run reaches time ``t`` (now, if ``t`` is the current time)."""
        t = float(t)
        if self._stepper is not None and t == self.get_time():
            self._store_waypoint()
        else:
            self._pending_waypoints.append(t)

    def _store_waypoint(self) -> None:
        integ = self._integ
        self._waypoints[self.get_time()] = (integ.get_state().copy(), integ._h_pred, self._k)

    def _save_waypoints(self) -> None:
        if self._pending_waypoints:
            t = self.get_time()
            due = [w for w in self._pending_waypoints if w <= t]
            if due:
                self._store_waypoint()
                self._pending_waypoints = [w for w in self._pending_waypoints if w > t]

    def get_waypoint_times(self) -> list[float]:
        return sorted(self._waypoints)

    def rewind(self, t: float) -> None:
        """Go back to the waypoint at time ``t``: the State (agents' memory included) and the integrator's
        step size as they were, and recordings after ``t`` forgotten, so that a rerun is bitwise the same."""
        if t not in self._waypoints:
            raise KeyError(f"Simulation.rewind: no waypoint at t = {t!r}; waypoints: {self.get_waypoint_times()}")
        with self._beside.during(_needs_forces(self._agents)):
            self._rewind(t)

    def _rewind(self, t: float) -> None:
        state, h_pred, k = self._waypoints[t]
        if self._stepper is None or state._topology_version != self._system._topology_version:
            self._prepare()  # the layout changed since (agents added): the waypoint is carried into the new one
            state = self._beside.transfer(state)
        self._stepper.initialize(state.copy())
        self._integ._h_pred = h_pred
        self._k = k
        for a in self._agents:
            if hasattr(a, "_truncate_after"):
                a._truncate_after(t)
        self._recorded_at = {key: k for key in self._recorded_at}

    # ------------------------------------------------------------------ progress
    def _update_progress(self, wall0: float, t0: float, t1: float, t: float) -> None:
        if self._progress is False:
            return
        if self._bar is None:
            if time.perf_counter() - wall0 < self._progress_after:
                return
            if self._progress is None and not sys.stderr.isatty():
                return
            try:
                from tqdm import tqdm
            except ImportError:  # the progress bar is optional: a plain line when asked for
                if not self._progress:
                    self._progress = False
                    return
                self._bar = PlainProgress(t1 - t0)
            else:
                self._bar = tqdm(total=t1 - t0, unit="s", unit_scale=True, desc="simulating", leave=False)
            self.progress_shown = True
        self._bar.n = t - t0
        self._bar.refresh()


class _MonitorCall:
    """Run a monitor and refuse a change of the State (monitors only look)."""

    def __init__(self, monitor: Monitor):
        self.monitor = monitor

    def handle_event(self, state: State) -> None:
        self.monitor.monitor(state)

    def __repr__(self) -> str:
        return repr(self.monitor)

    def check(self, state: State) -> None:
        report_without_change(self, state)
