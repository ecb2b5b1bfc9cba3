"""The driver's steps in the compiled time loop, for controllers whose law the core knows.

ArtiSynth's loop (``Simulation.run``) is Python per driver step: the controllers compute, the
integrator restarts, steps to the end of the driver step, the recorders look. When the agents due in
a stretch of driver steps are only ``PDController``s with constant targets acting every driver step
(no input probes, monitors or step checks; recorders due only at the stretch's end), and the
integrator's time loop is compiled with the driver's inputs held in it, the whole stretch runs in
``simtk_core.TreeStepper.run_ticks``: the PD law, the restart and the steps of each driver step, with
the Python path's arithmetic and order, so the run is bitwise the same and the State, the
integrator's statistics and the driver's counts are those the Python driver leaves. Anything else
(an agent due in the stretch, a step the compiled loop hands back) returns to the Python driver,
which takes over mid-stretch where needed.
"""
from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from ..common.stage import ACCELERATION, INSTANCE
from ..math.integrator import Integrator
from .agents import PDController

__all__ = ["CompiledDriver"]

_REACHED = 0  # simtk_core's RUN_CODES["reached"]
#: The most driver steps one compiled call takes (the tick-time buffer's size): the Python driver
#: looks in between (progress bar, interrupts).
_MAX_TICKS = 4096


def _constant(target: Any) -> bool:
    return isinstance(target, Real) and not isinstance(target, bool) and math.isfinite(float(target))


class CompiledDriver:
    """The compiled stretches of one run's driver steps (``Simulation._prepare`` makes it, or None when
    the agents' kinds never allow one)."""

    def __init__(self, sim, controllers: list):
        self.sim = sim
        self.controllers = controllers
        self.T = np.zeros(_MAX_TICKS + 1)
        self.y_start: np.ndarray | None = None
        self.tick_info = np.zeros(1, dtype=np.int64)
        self.pd: tuple | None = None
        self.pd_key: Any = None

    @staticmethod
    def for_run(sim) -> "CompiledDriver | None":
        """A CompiledDriver when the run's agents are kinds the compiled loop runs (else None)."""
        if not getattr(sim, "_use_compiled_driver", True):
            return None
        if sim._inputs_list or sim._monitors or sim._checkers or not sim._controllers:
            return None
        if sim._discrete_forces is None:
            return None
        for a in sim._controllers:
            if type(a) is not PDController or a._gravity is not None or a._inertia_weighted or \
                    a._interval is not None or not all(_constant(t) for t in a._targets.values()):
                return None
        if any(a._interval is None for a in sim._recorders):
            return None  # recorded every driver step: nothing to gain
        return CompiledDriver(sim, list(sim._controllers))

    # ------------------------------------------------------------------ one stretch
    def _law(self, state) -> tuple:
        """The PD law's arrays (q index, u index, kp, kd, target per controlled coordinate, in the
        controllers' order), resolved from the State's names as PDController.compute resolves them."""
        key = state._names
        if self.pd_key is not key:
            qs, us, kps, kds, targets = [], [], [], [], []
            for a in self.controllers:
                if a._resolved is None or a._resolved[0] is not key:
                    a._resolved = (key, a._resolve(state))
                for qi, ui, _upath, kp, kd, target in a._resolved[1]:
                    qs.append(qi)
                    us.append(ui)
                    kps.append(kp)
                    kds.append(kd)
                    targets.append(float(target))
            self.pd = (np.array(qs, dtype=np.int64), np.array(us, dtype=np.int64), np.array(kps, dtype=float),
                       np.array(kds, dtype=float), np.array(targets, dtype=float))
            self.pd_key = key
        assert self.pd is not None
        return self.pd

    def _ticks(self, k: int, k_end: int) -> np.ndarray | None:
        """The ends of the driver steps from tick ``k`` up to where an agent other than the controllers is
        due (or ``k_end``), as ``Simulation._next_tick`` chains them; None when there is none to take."""
        sim = self.sim
        step = sim._step_ticks
        k_stop = k_end
        for _a, every in sim._timed:
            k_stop = min(k_stop, (k // every + 1) * every)
        for w in sim._pending_waypoints:  # stored after the driver step that reaches it: stop there at the latest
            k_stop = min(k_stop, max(sim._clock.tick_at_or_after(w), k + 1))
        if k_stop <= k:
            return None
        ends = np.arange(k + step, k_stop, step, dtype=np.int64)
        ends = np.append(ends, k_stop)[:_MAX_TICKS]
        return ends

    def _times(self, ks: np.ndarray) -> np.ndarray | None:
        """``Clock.time`` of each tick, vectorized: ``offset + (k num) / den`` is one correctly rounded
        division when ``k num`` and ``den`` are exact doubles, as Python's int division rounds it."""
        clock = self.sim._clock
        if int(ks[-1]) * clock._num >= 2**53 or clock._den >= 2**53:
            return None
        times = clock.offset + (ks * clock._num).astype(np.float64) / float(clock._den)
        return times

    def stretch(self, k: int, k_end: int) -> tuple[int, int | None] | None:
        """Run driver steps from tick ``k`` in the compiled loop. Returns None when the next driver
        step must be the Python driver's (nothing done); else ``(k reached, k of a driver step begun
        but not finished)``: the Python driver then finishes that driver step (its steps to the end,
        the controllers' law and the restart already done), or None."""
        sim = self.sim
        integ = sim._integ
        loop = integ._loop
        if loop is None or loop._state_derivative is not None or not loop.held:
            return None
        if integ._return_every_internal_step or integ._step_limit or integ._project_every_step or \
                integ._sim_over or not math.isfinite(integ._h_pred) or integ._witnesses:
            return None
        stepper = sim._stepper
        if stepper._handlers or stepper._reporters or sim._system._pending_changes:
            return None
        s = integ._adv
        if loop.adv is not s or s._inval_epoch[INSTANCE] != loop.instance_epoch:
            return None  # another State, or its instance changed: the integrator's next run chooses again
        try:
            row = loop.held.index(sim._discrete_forces)
        except ValueError:
            return None
        ends = self._ticks(k, k_end)
        if ends is None:
            return None
        ks = np.concatenate(([k], ends))
        times = self._times(ks)
        if times is None or times[0] != integ._t0 or times[-1] > integ._final_time:
            return None
        for a in self.controllers:  # each acts at the start of every driver step of the stretch
            if not (a._active and (a._start <= times[:-1]).all() and (times[:-1] <= a._stop).all()):
                return None
        if integ._adv.get_time() != integ._t0 or s._stage < ACCELERATION:
            return None
        q_i, u_i, kp, kd, target = self._law(s)
        n = len(ends)
        T = self.T[:n + 1]
        T[:] = times
        ny = len(integ._y0)
        if self.y_start is None or len(self.y_start) != ny:
            self.y_start = np.zeros(ny)
        loop.read_held(s)
        # returning at the integrator's divergence-watch check points, where the Python driver checks too
        done, code = loop.run_ticks(integ, T, q_i, u_i, kp, kd, target, row, self.y_start, self.tick_info,
                                    integ._watch_chunk())
        begun = done < n and code != loop.not_begun_code
        if done == 0 and not begun:
            return None
        # the State and the driver as the Python driver leaves them
        loop.write_held(s, row)
        steps_taken = loop.commit(integ, write_state=True)
        integ._interval_start = (float(times[done]) if begun else float(times[done - 1]), self.y_start.copy(),
                                 int(self.tick_info[0]))
        integ._start_of_interval = False
        if steps_taken or begun:
            stepper._last_status = Integrator.SuccessfulStepStatus.ReachedReportTime
        sim._n_driver += done
        if steps_taken:
            integ._watch()
        return int(ks[done]), (int(ks[done + 1]) if begun else None)
