"""The compiled time loop of the integrators: when it runs, and how it hands over to Python.

An integrator whose System evaluates its derivatives with compiled kernels (a multibody system of
built-in mobilizers, see ``System._compiled_derivatives``) takes its steps in
``simtk_core.TreeStepper.run``: many steps per Python call, returning at the report, event or
final time, after the step limit, or when a step needs Python. The stepper repeats the Python
path's arithmetic exactly (``core/stepper.pxi``), so a trajectory does not depend on which path
took its steps. After a segment of steps the advanced State is written with the last step's t
and y and realized to Acceleration, which computes the same caches the Python path leaves.

Built-in elements only, the derivatives are the batch kernels', with the values of
``Force.DiscreteForces`` elements (a simulation's driver inputs) held over the steps, read from the
State at every call. Python parts (a ``Force.Custom``, a user's subsystem) keep the loop too: its
derivatives then realize the advanced State itself through the fused realization, which calls each
Python part where the stage hooks would and nothing else (``simtk/multibody/_fused.py``); the steps
stay compiled, and so do z variables under a Runge-Kutta table.

Quaternions the stepper projects (normalizes) and weights itself, as the Python path does, and the
constraints whose rows are compiled (geometric ones, held coordinates, speeds and accelerations, locks,
Steady and Sinusoid Motions, whose targets it evaluates at each stage's time: see
``simtk/multibody/constraints/_compiled.py``) it solves in every derivative and projects after every
step (``core/loop_constraints.pxi``). Everything else Python does after or between steps keeps the
loop in Python: witnesses of triggered events (evaluated after every step), other kinds of
constraints, Python parts beside constraint equations, Custom mobilizers, auto-update discrete
variables, z variables under the semi-explicit and Verlet methods, and unit weights of a System's own
rule. The z of compiled elements with state (muscles) the stepper integrates itself with q and u.
``Integrator.describe_fast_path()`` says which. A change of the instance between calls (a Property,
a disabled force) is followed: the loop is chosen again, as the Python path's next realization
would see the change.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import _core
from ..common.errors import NonFiniteForceError
from ..common.stage import ACCELERATION, INSTANCE, VELOCITY

__all__ = ["CompiledLoop", "CompiledLoopChoice"]

_CTL = _core.STEPPER_CTL
_CNT = _core.STEPPER_CNT
_TO_PYTHON = _core.RUN_CODES["python"]
_RAISED = _core.RUN_CODES["raised"]
_EMPTY = np.zeros(0)


class CompiledLoop:
    """One continuous interval's compiled stepper and its preallocated controls."""

    __slots__ = ("stepper", "ctl", "cnt", "_verlet", "_p1", "_nbodies", "_method", "instance_epoch", "_n_equations",
                 "_python_parts", "_state_derivative", "held", "live", "held_bf", "held_mf", "held_has", "_nu", "adv",
                 "_witness_names")

    def __init__(self, integrator, derivatives: tuple, spec: tuple, python_parts: Callable | None = None):
        method, A, b, e, fsal, c = spec
        batch, quaternion_q, quaternion_bodies, constraints, state_derivative, held = derivatives
        self.stepper = _core.make_tree_stepper(
            batch, method, A, b, e, fsal=fsal, error_control=integrator._has_error_control,
            quaternion_q=quaternion_q, quaternion_bodies=quaternion_bodies,
            constraints=constraints, c=c, state_derivative=state_derivative,
            nz=integrator._adv.get_nz() if state_derivative is None else 0)
        if method == "semi_implicit":
            self.stepper.set_linearizer(integrator._linearizer())  # the same solve as its Python path
        self._state_derivative = state_derivative
        self._python_parts = python_parts  # () -> the Python parts in words, timed when asked
        # the Force.DiscreteForces elements whose values the steps hold (read from the State at every run),
        # and the packed Force.Actuators whose controls they hold (loaded into their sets at every run)
        self.held = tuple(e for e in held if not hasattr(e, "load_held"))
        self.live = tuple(e for e in held if hasattr(e, "load_held"))
        self._nu = batch.nu
        if self.held:
            k = len(self.held)
            self.held_bf = np.zeros((k, batch.nb, 2, 3))
            self.held_mf = np.zeros((k, batch.nu))
            self.held_has = np.zeros(k, dtype=np.uint8)
            self.stepper.set_held(self.held_bf, self.held_mf, self.held_has)
        self.adv = integrator._adv  # the State this loop steps
        self._witness_names = [_describe_witness(w) for w in integrator._witnesses]
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
        text = (f"compiled time loop: {self._method} steps over {self._nbodies} bodies run in the compiled "
                f"core{solved}, many steps per call, returning to Python at report, event and final times")
        if self.held:
            text += ("; the values of " + ", ".join(repr(e.get_absolute_path()) for e in self.held) +
                     " (DiscreteForces) are held over the steps")
        actuators = [p for p in self.live if not p.fs.nz]
        if actuators:
            text += ("; the controls of " + ", ".join(repr(e.get_absolute_path()) for p in actuators for e in p.elements)
                     + " (Actuators) are held over the steps, their functions of time evaluated in the core")
        muscles = [e for p in self.live if p.fs.nz for e in p.elements]
        if muscles:
            text += (f"; {len(muscles)} muscles are compiled (their laws, paths and states: z is stepped with q and "
                     "u), their excitations held over the steps, their functions of time evaluated in the core")
        if self._python_parts is not None:
            parts = self._python_parts()
            if parts:
                text += ("; each evaluation of the derivatives calls Python for " + "; ".join(parts) +
                         " (the rest of the evaluation is compiled)")
            else:
                text += "; each evaluation realizes the State (its kernels only)"
        sd = self._state_derivative
        if sd is not None and sd.witnesses is not None:
            text += (f"; after each step its {len(self._witness_names)} event witnesses are evaluated in Python "
                     f"({', '.join(self._witness_names[:3])}{', ...' if len(self._witness_names) > 3 else ''}), "
                     "and a step with an event is taken again by the Python loop, which localizes it")
        return text

    def run(self, integ, t_max: float, max_steps: int) -> tuple[int, bool]:
        """Take steps towards ``t_max`` (at most ``max_steps``, 0: no limit) from the integrator's
        saved start; returns (steps taken, whether the next step needs the Python path). The
        integrator's start, statistics and step-size prediction are updated, and when steps were
        taken the advanced State is put at the new start, realized to Acceleration."""
        if integ._adv._inval_epoch[INSTANCE] != self.instance_epoch or integ._adv is not self.adv or (
                self._state_derivative is not None and not self._state_derivative.fits(integ._adv)):
            return self._renew(integ, t_max, max_steps)
        if self.held or self.live:
            self.read_held(integ._adv)
        c, n = self._load(integ, t_max, max_steps)
        if self._verlet:
            code = self.stepper.run(integ._K, integ._y0, integ._wy, integ._use_infinity_norm, c, n,
                                    integ._qdd0, integ._a_prev)
        else:
            code = self.stepper.run(integ._K, integ._y0, integ._wy, integ._use_infinity_norm, c, n, _EMPTY, _EMPTY)
        steps = self.commit(integ)
        if self._state_derivative is not None:
            # a Python part raised: the step failed as on the Python path (the State back at the last
            # good step), after the steps before it were committed
            interrupt = self._state_derivative.take_pending()
            exc, self._state_derivative.raised = self._state_derivative.raised, None
            if interrupt is not None:
                integ._restore_start()
                raise interrupt
            if code == _RAISED:
                if isinstance(exc, NonFiniteForceError) and integ._fixed_step is None and integ._has_error_control:
                    # refused as the Python loop refuses such an attempt (Integrator._take_one_step):
                    # it takes the step again from the last good one, a quarter the size (the State is
                    # put back there unrealized, as the Python loop's next attempt finds it)
                    integ._set_ty(integ._t0)[:] = integ._y0
                    integ._n_nonfinite_fail += 1
                    integ._h_pred = 0.25 * float(c[14])
                    return steps, True
                integ._undo_failed_step(exc, float(c[14]))
                raise exc
        return steps, code == _TO_PYTHON

    #: run_ticks' code for a driver step whose restart needs Python (not begun)
    not_begun_code = _core.RUN_CODES["not_begun"]

    def run_ticks(self, integ, T, pd_q, pd_u, pd_kp, pd_kd, pd_target, row: int, y_start, tick_info,
                  max_steps: int = 0) -> tuple:
        """``simtk_core.TreeStepper.run_ticks`` from the integrator's saved start (the held forces read
        from the State by the caller), taking at most ``max_steps`` steps (0: no limit); returns (driver
        steps completed, code). ``commit`` then updates the integrator and its State."""
        c, n = self._load(integ, float(T[-1]), max_steps)
        if self._verlet:
            qdd0, a_prev = integ._qdd0, integ._a_prev
        else:
            qdd0, a_prev = _EMPTY, _EMPTY
        return self.stepper.run_ticks(integ._K, integ._y0, integ._wy, integ._use_infinity_norm, c, n, qdd0, a_prev,
                                      T, pd_q, pd_u, pd_kp, pd_kd, pd_target, row, y_start, tick_info)

    def _load(self, integ, t_max: float, max_steps: int) -> tuple:
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
        return c, n

    def commit(self, integ, write_state: bool = False) -> int:
        """After a run: the integrator's start, statistics and step-size prediction from the stepper's
        controls, and when steps were taken (or ``write_state``: forces held in the steps changed) its
        advanced State at the new start, realized to Acceleration (the caches the Python path leaves).
        Returns the steps taken."""
        c, n = self.ctl, self.cnt
        steps = int(n[5])
        # the statistics of the steps taken, and of a step that failed in a Python part
        integ._n_attempted = int(n[2])
        integ._n_realize = int(n[3])
        integ._n_err_fail = int(n[4])
        if steps:
            integ._t0 = float(c[0])
            integ._h_pred = float(c[2])
            integ._h_prev = float(c[8])
            integ._h_first = float(c[9])
            integ._n_taken = int(n[1])
            integ._n_project = int(n[6])
            if self._verlet:
                integ._hp = float(c[10])
                integ._have_history = bool(c[11])
        s = integ._adv
        if steps or write_state:
            s.set_time(integ._t0)
            s.upd_y()[:] = integ._y0
            integ._system.realize(s, ACCELERATION)  # the caches the Python path leaves
        elif self._verlet:
            integ._hp = float(c[10])
            integ._have_history = bool(c[11])
        return steps

    def read_held(self, s) -> None:
        """The held forces from the State: each DiscreteForces element's values (its mobility forces
        only once set, as the element adds them), and the Actuators' controls."""
        for p in self.live:
            p.load_held(s, self.stepper)
        nu = self._nu
        for r, element in enumerate(self.held):
            values = element._values(s)
            self.held_bf[r] = values.body_forces
            if len(values.mobility_forces) == nu:
                self.held_mf[r] = values.mobility_forces
                self.held_has[r] = 1
            else:
                self.held_has[r] = 0

    def write_held(self, s, row: int) -> None:
        """Row ``row`` of the held mobility forces into its element's values in ``s`` (invalidates
        Dynamics): what a controller's law computed in the steps."""
        self.held[row]._upd_values(s).mobility_forces[:] = self.held_mf[row]

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

    def _setup_loop(self, reuse: bool = False) -> None:
        """Choose the time loop of this continuous interval (see ``describe_fast_path``); ``reuse``:
        keep the current choice, made for this State's instance (a restart above Instance)."""
        if reuse and self.__dict__.get("_loop_reasons") is not None and (
                self._loop is None or self._loop.adv is self._adv):
            return
        self._loop = None
        s, reasons = self._adv, []
        spec = self._compiled_spec()
        if not self._use_compiled:
            reasons.append("the compiled loop is turned off (set_use_compiled_loop(False))")
        if spec is None:
            reasons.append(f"{self._method_name} has no compiled twin")
        # event witnesses are evaluated on the State after every step: the State's own realization then
        # evaluates the derivatives, so that the State is at the step's end
        derivatives, why = self._system._compiled_derivatives(s, need_state=bool(self._witnesses))
        if self._witnesses and derivatives is None:
            names = ", ".join(_describe_witness(w) for w in self._witnesses[:3])
            reasons.append(f"{len(self._witnesses)} event witnesses are evaluated in Python after every step "
                           f"({names}{', ...' if len(self._witnesses) > 3 else ''})")
        # the compiled loop projects (normalizes) quaternions, refreshes their weights, and solves and
        # projects the constraints it was given itself
        n_quaternions = len(derivatives[2]) if derivatives is not None else 0
        solved = derivatives[3] if derivatives is not None else None
        n_velocity, n_position = (solved.nv, solved.mp) if solved is not None else (0, 0)
        state_mode = derivatives is not None and derivatives[4] is not None
        auto = s._auto_update_variables()
        # what Integrator._finish_step does on the State after a step that the stepper does not do itself:
        # constraint equations its own realization solves (and projects), auto-update variables
        python_finish = self._has_constraints and derivatives is not None and not (
            s.get_nu_err() == n_velocity and s.get_nq_err() == n_quaternions + n_position)
        if python_finish and not state_mode:
            reasons.append("the State is projected onto its constraints in Python after every step "
                           f"({s.get_nq_err()} position and {s.get_nu_err()} velocity constraint equations)")
        if self._weights_vary and derivatives is None:
            reasons.append("the unit weights of the error norm vary with the State")
        if (derivatives is not None and spec is not None and spec[0] != "rk"
                and (s.get_nq(), s.get_nu()) != (derivatives[0].ws.nq, derivatives[0].ws.nu)):
            # (the semi-explicit and Verlet steps split y into the tree's q and u; a Runge-Kutta table
            # steps a realized State's y whole)
            reasons.append(f"{s.get_nq() - derivatives[0].ws.nq} q and {s.get_nu() - derivatives[0].ws.nu} u of "
                           "subsystems other than the matter are stepped")
        if s.get_nz() and (derivatives is None or spec is None or spec[0] != "rk"):
            # (z is stepped in the compiled loop by the Runge-Kutta tables: when the State is realized there,
            # or when the compiled sets write all of zdot, which _compiled_derivatives checks)
            reasons.append(f"{s.get_nz()} auxiliary variables z are integrated")
        if auto and not state_mode:
            holders = ", ".join(repr(ss.name) for ss in s._subs if any(v.update_entry >= 0 for v in ss.discrete))
            reasons.append(f"{auto} auto-update discrete variables are swapped in Python after every step "
                           f"(in {holders})")
        if why:
            reasons.append(why)
        self._loop_reasons = reasons
        if not reasons:
            parts = None
            if state_mode:
                system = self._system
                parts = lambda: system._describe_python_parts(s)  # noqa: E731 (timed only when described)
                derivatives[4].finish = (lambda: _finish_in_python(self)) if (python_finish or auto) else None
                if self._witnesses:
                    derivatives[4].set_witnesses(lambda t0: _check_witnesses(self, t0), self._w0, self._w1)
            self._loop = CompiledLoop(self, derivatives, spec, parts)


def _check_witnesses(integ, t0: float) -> int | None:
    """Integrator.step_to's look for events after a step the compiled loop took from ``t0`` (the State
    at its end): None when a witness changed sign over the step or inside it (Python then takes the
    step again and localizes the event), else the realizations the interior samples cost (counted by
    the stepper)."""
    integ._witness_values(integ._w1)
    if integ._crossings(integ._w0, integ._w1):
        return None
    n, saved = integ._n_realize, integ._t0
    integ._t0 = t0  # the step's start, which the stepper commits only later
    try:
        bracket = integ._sample_interior(integ._adv.get_time())
    finally:
        integ._t0 = saved
        added, integ._n_realize = integ._n_realize - n, n
    return None if bracket is not None else added


def _finish_in_python(integ) -> tuple[bool, int] | None:
    """Integrator._finish_step's work on the advanced State after a step the compiled loop took (the
    State at the step's end, realized), for a State whose realization is Python's: the projection onto
    its constraints when their errors exceed the tolerance (or always when asked), then the auto-update
    discrete variables, each followed by a realization when it changed the State. Returns (projected,
    realizations), or None when Python must take the step again (a derivative not finite, an error):
    the statistics are the stepper's, so nothing is counted here."""
    s, system = integ._adv, integ._system
    projected, realized = False, 0
    # (an exception hands the step back to Python too: it takes the step again and fails as it fails)
    if integ._has_constraints or integ._project_every_step:
        tol = integ.get_constraint_tolerance_in_use()
        projected = integ._project_every_step
        if not projected:
            system.realize(s, VELOCITY)
            projected = not integ._constraint_error_norm(s) <= tol
        if projected and system.project(s, tol):
            system.realize(s, ACCELERATION)
            realized += 1
            if not _core.all_finite(s.get_ydot()):
                return None
    mark = s.get_invalidation_mark()
    s.auto_update_discrete_variables()
    if s.get_invalidation_mark() != mark and integ._witnesses:
        integ._sampler = s.copy()  # its discrete variables kept equal to the advanced State's
    if s._stage < ACCELERATION:
        system.realize(s, ACCELERATION)
        realized += 1
        if not _core.all_finite(s.get_ydot()):
            return None
    return projected, realized


assert (_CTL["t0"], _CTL["t_max"], _CTL["h_pred"], _CTL["fixed"], _CTL["max_step"], _CTL["min_step"],
        _CTL["accuracy"], _CTL["p1"], _CTL["h_prev"], _CTL["h_first"], _CTL["hp"], _CTL["history"],
        _CTL["constraint_tolerance"], _CTL["project_every"], _CTL["h_fail"]) == tuple(range(15))
assert (_CNT["max_steps"], _CNT["taken"], _CNT["attempted"], _CNT["realize"], _CNT["err_fail"],
        _CNT["steps"], _CNT["projections"]) == tuple(range(7))
