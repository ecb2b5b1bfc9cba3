"""The compiled time loop of the integrators: when it runs, and how it hands over to Python.

An integrator whose System evaluates its derivatives with compiled kernels only (a multibody
system of built-in mobilizers and forces, see ``System._compiled_derivatives``) takes its steps in
``simtk_core.TreeStepper.run``: many steps per Python call, returning at the report, event or
final time, after the step limit, or when a step needs Python. The stepper repeats the Python
path's arithmetic exactly (``core/stepper.pxi``), so a trajectory does not depend on which path
took its steps. After a segment of steps the advanced State is written with the last step's t
and y and realized to Acceleration, which computes the same caches the Python path leaves.

Quaternions the stepper projects (normalizes) and weights itself, as the Python path does, and the
constraints whose rows are compiled (geometric ones, held coordinates, speeds and accelerations, locks,
Steady and Sinusoid Motions, whose targets it evaluates at each stage's time: see
``simtk/multibody/constraints/_compiled.py``) it solves in every derivative and projects after every
step (``core/loop_constraints.pxi``). Everything else Python does after or between steps keeps the
loop in Python: witnesses of triggered events (evaluated after every step), other kinds of
constraints, auto-update discrete variables, z variables, unit weights of a System's own rule, and a
System whose elements realize in Python.
``Integrator.describe_fast_path()`` says which. A change of the instance between calls (a Property,
a disabled force) is followed: the loop is chosen again, as the Python path's next realization
would see the change.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import _core
from ..common.stage import ACCELERATION, INSTANCE

__all__ = ["CompiledLoop", "CompiledLoopChoice"]

_CTL = _core.STEPPER_CTL
_CNT = _core.STEPPER_CNT
_TO_PYTHON = _core.RUN_CODES["python"]
_EMPTY = np.zeros(0)


class CompiledLoop:
    """One continuous interval's compiled stepper and its preallocated controls."""

    __slots__ = ("stepper", "ctl", "cnt", "_verlet", "_p1", "_nbodies", "_method", "instance_epoch", "_n_equations")

    def __init__(self, integrator, derivatives: tuple, spec: tuple):
        method, A, b, e, fsal, c = spec
        batch, quaternion_q, quaternion_bodies, constraints = derivatives
        self.stepper = _core.make_tree_stepper(
            batch, method, A, b, e, fsal=fsal, error_control=integrator._has_error_control,
            quaternion_q=quaternion_q, quaternion_bodies=quaternion_bodies,
            constraints=constraints, c=c)
        self._n_equations = 0 if constraints is None else constraints.m
        self.ctl = np.zeros(_CTL["size"])
        self.cnt = np.zeros(_CNT["size"], dtype=np.int64)
        self._verlet = method == "verlet"
        self._p1 = 1.0 / (integrator._error_order + 1)
        self._nbodies = batch.nb - 1
        self._method = integrator._method_name
        # The instance the stepper's kernels and force sets were taken from: a later change of it (a
        # Property, a disabled force) must reach the steps, as the Python path's next realization sees it.
        self.instance_epoch = integrator._adv._inval_epoch[INSTANCE]

    def describe(self) -> str:
        solved = (f", solving and projecting {self._n_equations} constraint equations in its steps"
                  if self._n_equations else "")
        return (f"compiled time loop: {self._method} steps over {self._nbodies} bodies run in the compiled "
                f"core{solved}, many steps per call, returning to Python at report, event and final times")

    def run(self, integ, t_max: float, max_steps: int) -> tuple[int, bool]:
        """Take steps towards ``t_max`` (at most ``max_steps``, 0: no limit) from the integrator's
        saved start; returns (steps taken, whether the next step needs the Python path). The
        integrator's start, statistics and step-size prediction are updated, and when steps were
        taken the advanced State is put at the new start, realized to Acceleration."""
        if integ._adv._inval_epoch[INSTANCE] != self.instance_epoch:
            return self._renew(integ, t_max, max_steps)
        c, n = self.ctl, self.cnt
        c[0] = integ._t0  # slots: see STEPPER_CTL (t0 is 0)
        c[1] = t_max
        c[2] = integ._h_pred
        c[3] = math.nan if integ._fixed_step is None else integ._fixed_step
        c[4] = integ._max_step
        c[5] = integ._min_step
        c[6] = integ._accuracy
        c[7] = self._p1
        c[8] = integ._h_prev
        c[9] = integ._h_first
        c[12] = integ.get_constraint_tolerance_in_use()
        c[13] = 1.0 if integ._project_every_step else 0.0
        n[0] = max_steps
        n[1] = integ._n_taken
        n[2] = integ._n_attempted
        n[3] = integ._n_realize
        n[4] = integ._n_err_fail
        n[6] = integ._n_project
        if self._verlet:
            c[10] = integ._hp
            c[11] = 1.0 if integ._have_history else 0.0
            code = self.stepper.run(integ._K, integ._y0, integ._wy, integ._use_infinity_norm, c, n,
                                    integ._qdd0, integ._a_prev)
        else:
            code = self.stepper.run(integ._K, integ._y0, integ._wy, integ._use_infinity_norm, c, n, _EMPTY, _EMPTY)
        steps = int(n[5])
        if steps:
            integ._t0 = t0 = float(c[0])
            integ._h_pred = float(c[2])
            integ._h_prev = float(c[8])
            integ._h_first = float(c[9])
            integ._n_taken = int(n[1])
            integ._n_attempted = int(n[2])
            integ._n_realize = int(n[3])
            integ._n_err_fail = int(n[4])
            integ._n_project = int(n[6])
            if self._verlet:
                integ._hp = float(c[10])
                integ._have_history = bool(c[11])
            s = integ._adv
            s.set_time(t0)
            s.upd_y()[:] = integ._y0
            integ._system.realize(s, ACCELERATION)  # the caches the Python path leaves
        return steps, code == _TO_PYTHON

    def _renew(self, integ, t_max: float, max_steps: int) -> tuple[int, bool]:
        """The advanced State's instance changed since this loop was built (without a reinitialize):
        realize it and choose the loop again, keeping the saved start (as the Python path keeps it)."""
        s = integ._adv
        integ._system.realize(s, INSTANCE)
        if s.get_ny() != integ._ny:
            return 0, True  # the variables were laid out anew: the Python path reports it
        integ._setup_loop()
        if integ._loop is None:
            return 0, True
        return integ._loop.run(integ, t_max, max_steps)


def _describe_witness(w) -> str:
    name = getattr(w, "get_name", None)
    return repr(name()) if callable(name) and name() else type(w).__name__


class CompiledLoopChoice:
    """The integrators' choice of time loop (a mixin of Integrator, whose attributes it reads)."""

    _adv: Any
    _system: Any
    _use_compiled: bool
    _loop: CompiledLoop | None
    _loop_reasons: list
    _method_name: str
    _witnesses: list
    _has_constraints: bool
    _project_every_step: bool
    _weights_vary: bool
    _need_init: Callable
    _loop_stale: bool

    def set_use_compiled_loop(self, flag: bool) -> None:
        """Let the compiled time loop take the steps when it can (default True; see
        ``describe_fast_path``). Both paths give the same trajectory bitwise; turning it off is for
        comparing them, or for stepping through the Python path."""
        self._use_compiled = bool(flag)
        if self._adv is not None:
            self._setup_loop()

    def describe_fast_path(self) -> str:
        """Which time loop takes the steps, and if it is the Python one, why.

        The compiled loop runs many steps per call (no Python per step) when the method has a
        compiled twin and the System's elements are all built in; otherwise the reasons are listed
        (a Python force or mobilizer, triggered events, constraints or quaternions to project, ...),
        so that a slow model says what makes it slow.
        """
        self._need_init("describe_fast_path()")
        self._renew_after_unpickling()
        if self._loop is not None:
            return self._loop.describe()
        return "Python time loop: " + "; ".join(self._loop_reasons)

    def __getstate__(self) -> dict:
        # A compiled stepper holds raw pointers: it is not pickled but built again at the next step_to.
        state = self.__dict__.copy()
        state["_loop_stale"] = state.get("_loop") is not None or state.get("_loop_stale", False)
        state["_loop"] = None
        return state

    def _renew_after_unpickling(self) -> None:
        if self.__dict__.get("_loop_stale"):
            self._loop_stale = False
            self._system.realize(self._adv, INSTANCE)
            self._setup_loop()

    def _compiled_spec(self) -> tuple | None:
        """Subclass hook: ``(method, A, b, e, fsal, c)`` of the compiled twin of this method
        (``simtk._core.make_tree_stepper``), or None when it has none."""
        return None

    def _setup_loop(self) -> None:
        """Choose the time loop of this continuous interval (see ``describe_fast_path``)."""
        self._loop = None
        s, reasons = self._adv, []
        spec = self._compiled_spec()
        if not self._use_compiled:
            reasons.append("the compiled loop is turned off (set_use_compiled_loop(False))")
        if spec is None:
            reasons.append(f"{self._method_name} has no compiled twin")
        if self._witnesses:
            names = ", ".join(_describe_witness(w) for w in self._witnesses[:3])
            reasons.append(f"{len(self._witnesses)} event witnesses are evaluated in Python after every step "
                           f"({names}{', ...' if len(self._witnesses) > 3 else ''})")
        derivatives, why = self._system._compiled_derivatives(s)
        # the compiled loop projects (normalizes) quaternions, refreshes their weights, and solves and
        # projects the constraints it was given itself
        n_quaternions = len(derivatives[2]) if derivatives is not None else 0
        solved = derivatives[3] if derivatives is not None else None
        n_velocity, n_position = (solved.nv, solved.mp) if solved is not None else (0, 0)
        if self._has_constraints and derivatives is not None and not (
                s.get_nu_err() == n_velocity and s.get_nq_err() == n_quaternions + n_position):
            reasons.append("the State is projected onto its constraints in Python after every step "
                           f"({s.get_nq_err()} position and {s.get_nu_err()} velocity constraint equations)")
        if self._weights_vary and derivatives is None:
            reasons.append("the unit weights of the error norm vary with the State")
        if s.get_nz():
            reasons.append(f"{s.get_nz()} auxiliary variables z are integrated")
        auto = s._auto_update_variables()
        if auto:
            reasons.append(f"{auto} auto-update discrete variables are swapped in Python after every step")
        if why:
            reasons.append(why)
        self._loop_reasons = reasons
        if not reasons:
            self._loop = CompiledLoop(self, derivatives, spec)


assert (_CTL["t0"], _CTL["t_max"], _CTL["h_pred"], _CTL["fixed"], _CTL["max_step"], _CTL["min_step"],
        _CTL["accuracy"], _CTL["p1"], _CTL["h_prev"], _CTL["h_first"], _CTL["hp"], _CTL["history"],
        _CTL["constraint_tolerance"], _CTL["project_every"]) == tuple(range(14))
assert (_CNT["max_steps"], _CNT["taken"], _CNT["attempted"], _CNT["realize"], _CNT["err_fail"],
        _CNT["steps"], _CNT["projections"]) == tuple(range(7))
