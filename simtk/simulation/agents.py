"""Agents of a simulation (ArtiSynth's, seed 000 §2.2): input probes, controllers, monitors, output probes.

Agents are components: a `Simulation` adopts them into the System under ``/agents`` while it runs
(``_beside.py``), so that what they remember (a controller's filter, an input probe's last value) is
a discrete variable of the State (rule 1 of the architecture) and a rewound State rewinds them too.
After a run, an agent reads its memory in the States its Simulation handed back as before.

Within each driver step from ``ta`` to ``tb`` the order is ArtiSynth's: input probes apply their
value for ``tb``, controllers compute from the State at ``ta``, the System advances to ``tb``,
monitors look at it, and output probes record it when ``tb`` is one of their times.

Named inputs (what input probes and controllers write) are addressed by path:

- ``/matter/elbow/rate``: a speed's state-variable path: the generalized force on that mobility;
- ``/matter/hand``: a mobilized body: a spatial force (torque, force) (2, 3) in Ground at its origin;
- ``/agents/ctrl:gain``: a component's discrete variable declared by name;
- ``/forces/spring.stiffness`` or ``/matter/elbow/motion.u``: a property (a prescribed motion's value,
  a parameter), which existing States see from the property's stage up.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..common.component import Component
from ..common.errors import NonFiniteForceError
from ..common.stage import Stage
from ..common.state import State
from ._clock import as_fraction

__all__ = ["Agent", "InputProbe", "Controller", "PDController", "Monitor"]


class Agent(Component):
    """Base of the agents: an optional update ``interval`` (every driver step when None) and an active window.

    Parameters
    ----------
    interval : float, optional
        Time between applications; a whole number of the driver's ticks.
    start, stop : float
        The window of times in which the agent acts.
    """

    #: Where it runs in a step: 0 input probes, 1 controllers, 2 monitors, 3 output probes.
    _order = 1

    def __init__(self, interval: float | None = None, start: float = -np.inf, stop: float = np.inf):
        self._interval = None if interval is None else as_fraction(interval, f"{type(self).__name__}: interval")
        self._start, self._stop = float(start), float(stop)
        if not self._start <= self._stop:
            raise ValueError(f"{type(self).__name__}: start {start!r} is after stop {stop!r}")
        self._active = True
        self._sim: Any = None  # the Simulation, once added

    def get_update_interval(self) -> float | None:
        return None if self._interval is None else float(self._interval)

    def is_active(self) -> bool:
        return self._active

    def set_active(self, flag: bool) -> None:
        self._active = bool(flag)

    def _in_window(self, t: float) -> bool:
        return self._active and self._start <= t <= self._stop

    # the inputs the agent writes, through the simulation that adopted it
    def set_input(self, state: State, target: str, value) -> None:
        """Write the named input ``target`` (see the module doc) in ``state``."""
        if self._sim is None:
            raise RuntimeError(f"{self._component_where()}: add it to a Simulation before it writes inputs")
        self._sim._inputs.write(state, target, value, self)

    def get_discrete_variable_value(self, state, name: str):
        """The value of this agent's discrete variable ``name`` in ``state``: a State of its Simulation's run,
        or one the Simulation handed back after it (``get_state``, a `StatesTrajectory`)."""
        sim = self._sim
        if sim is not None and not sim._beside.attached:
            memory = sim._memory.get(state)
            key = f"/agents/{self.get_name()}:{name}"
            if memory is not None and key in memory:
                return _copy(memory[key])
            if state._system is sim._system and state._topology_version == sim._system._topology_version:
                raise ValueError(f"{self._where()}: {state!r} is a State of the System as built, which has no "
                                 "agents; their memory is in the States the Simulation hands back (get_state(), "
                                 "a StatesTrajectory's)")
        return super().get_discrete_variable_value(state, name)

    def _where(self) -> str:
        """How errors name this agent: its path under ``/agents`` once added, else its kind and name."""
        return f"{type(self).__name__} '/agents/{self.get_name()}'"


# ---------------------------------------------------------------------- input probes
class InputProbe(Agent):
    """A time series interpolated into a named input (ArtiSynth's NumericInputProbe).

    Parameters
    ----------
    target : str
        The named input (see the module doc).
    times : array_like, shape (n,)
        Strictly increasing sample times.
    values : array_like, shape (n,) or (n, ...)
        One value per time (a scalar, or an array of the target's shape).
    interpolation : {"zero_order_hold", "linear", "cubic"}
        How values between samples are found (scipy.interpolate); outside the samples the end
        values are held.
    """

    _order = 0
    _KINDS = ("zero_order_hold", "linear", "cubic")

    def __init__(self, target: str, times, values, interpolation: str = "linear", interval: float | None = None):
        t = np.asarray(times, dtype=float)
        v = np.asarray(values, dtype=float)
        where = f"InputProbe({target!r})"
        if t.ndim != 1 or len(t) < 1 or len(v) != len(t):
            raise ValueError(f"{where}: needs n times and n values, got shapes {t.shape} and {v.shape}")
        if not (np.isfinite(t).all() and np.isfinite(v).all()):
            raise ValueError(f"{where}: times and values must be finite")
        if np.any(np.diff(t) <= 0):
            raise ValueError(f"{where}: times must be strictly increasing")
        if interpolation not in self._KINDS:
            raise ValueError(f"{where}: interpolation must be one of {self._KINDS}, got {interpolation!r}")
        if interpolation == "cubic" and len(t) < 2:
            raise ValueError(f"{where}: cubic interpolation needs at least 2 samples")
        super().__init__(interval, float(t[0]), float(t[-1]) if len(t) > 1 else np.inf)
        self._start = -np.inf  # before the first sample and after the last, the end values are held
        self._stop = np.inf
        self.target, self.times, self.values, self.interpolation = target, t, v, interpolation
        self._fn = self._interpolant()

    @classmethod
    def from_csv(cls, target: str, path, interpolation: str = "linear", time_column: int = 0, **kw) -> "InputProbe":
        """Read times from column ``time_column`` and values from the others of a CSV file (one header line
        if it is not numeric)."""
        with open(path) as f:
            first = f.readline()
        try:
            [float(x) for x in first.split(",")]
            skip = 0
        except ValueError:
            skip = 1
        data = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2)
        times = data[:, time_column]
        values = np.delete(data, time_column, axis=1)
        return cls(target, times, values[:, 0] if values.shape[1] == 1 else values, interpolation, **kw)

    def _interpolant(self) -> Callable[[float], np.ndarray]:
        from scipy import interpolate

        t, v = self.times, self.values
        if len(t) == 1:
            return lambda x: v[0]
        if self.interpolation == "zero_order_hold":
            f = interpolate.interp1d(t, v, kind="previous", axis=0, bounds_error=False, fill_value=(v[0], v[-1]),
                                     assume_sorted=True)
        elif self.interpolation == "linear":
            f = interpolate.interp1d(t, v, kind="linear", axis=0, bounds_error=False, fill_value=(v[0], v[-1]),
                                     assume_sorted=True)
        else:
            spline = interpolate.CubicSpline(t, v, axis=0)
            lo, hi = t[0], t[-1]
            return lambda x: v[0] if x <= lo else v[-1] if x >= hi else spline(x)
        return f

    def value_at(self, t: float):
        """The interpolated value at time ``t``."""
        out = self._fn(float(t))
        return float(out) if np.ndim(out) == 0 else np.asarray(out)

    def apply(self, state: State, t: float) -> None:
        """Write the value for time ``t`` into the target."""
        self.set_input(state, self.target, self.value_at(t))


# ---------------------------------------------------------------------- controllers and monitors
class Controller(Agent):
    """A user's controller: override ``compute(state)``, which reads the State at the start of the step
    and writes named inputs with ``self.set_input(state, target, value)``.

    Its memory must be State: declare it with ``add_discrete_variable`` (read and written with
    ``get/set_discrete_variable_value``) so that waypoints and retried steps restore it.
    """

    _order = 1

    def compute(self, state: State) -> None:
        raise NotImplementedError(f"{type(self).__name__} must override compute(state)")

    def check_step(self, before: State, after: State):
        """Optional veto of the step just taken (ArtiSynth's adaptive stepping): return a
        `StepAdjustment` to have it redone from ``before`` with steps scaled by its ``scaling``."""
        return None


class Monitor(Agent):
    """A user's monitor: override ``monitor(state)``; it runs after each step and may not change the State."""

    _order = 2

    def monitor(self, state: State) -> None:
        raise NotImplementedError(f"{type(self).__name__} must override monitor(state)")


class PDController(Controller):
    """Joint-space PD control: ``tau = kp (q* - q) + kd (qdot* - u)`` on each coordinate, plus optional
    gravity compensation ``-J^T F_gravity`` at the current configuration (which makes the target an
    exact equilibrium under gravity).

    Parameters
    ----------
    gains : dict
        Coordinate path (``/matter/elbow/angle``) -> ``(kp, kd)``. The mobilizer must have qdot = u.
    targets : dict
        Coordinate path -> a number, a `Function` of time (its derivative gives qdot*), or an
        `InputProbe` (its values are q*; qdot* = 0).
    gravity : Force, optional
        A gravity element whose forces to cancel.
    inertia_weighted : bool
        Apply ``M(q) (kp e + kd edot)`` instead (gains are then in 1/s^2 and 1/s, per unit of
        acceleration): the coordinates respond independently, however uneven the inertias of a
        chain are (a 7-link arm's mass matrix spans four decades, which makes plain joint gains
        either slow on the heavy modes or unstable at the control rate on the light ones).
        Torques are written to the controlled coordinates only.
    """

    def __init__(self, gains: dict, targets: dict, gravity=None, interval: float | None = None,
                 inertia_weighted: bool = False):
        super().__init__(interval)
        self._inertia_weighted = bool(inertia_weighted)
        missing = set(gains) ^ set(targets)
        if missing:
            raise ValueError(f"PDController: gains and targets must name the same coordinates; "
                             f"these are in one only: {sorted(missing)}")
        self._gains = {p: (float(kp), float(kd)) for p, (kp, kd) in gains.items()}
        for p, (kp, kd) in self._gains.items():
            if not (kp >= 0 and kd >= 0 and np.isfinite(kp) and np.isfinite(kd)):
                raise ValueError(f"PDController: gains of {p!r} must be finite and >= 0, got {(kp, kd)}")
        self._targets = dict(targets)
        self._gravity = gravity
        self._resolved: Any = None

    def _resolve(self, state: State, system=None):
        """(q index, u index, speed path, kp, kd, target) per coordinate, from the paths."""
        system = self._sim._system if system is None else system
        names = state._names
        nq = state.get_nq()
        out = []
        for user_path, (kp, kd) in self._gains.items():
            path = _simtk_path(system, state, user_path)
            if path not in names or names[path] >= nq:
                coords = [p for p, i in names.items() if i < nq]
                raise ValueError(f"{self._where()}: {path!r} is not a coordinate (q) path of this System; its "
                                 f"coordinates are: {', '.join(coords) if coords else '(none)'}")
            body_path, qname = path.rsplit("/", 1)
            body = system.get_component(body_path)
            q_names, u_names = body._variable_names(body.get_num_q(state), body.get_num_u(state))
            if len(q_names) != len(u_names):
                raise ValueError(f"{self._where()}: {body_path!r} has nq != nu (quaternions?): control its "
                                 "coordinates in Euler-angle mode")
            upath = f"{body_path}/{u_names[q_names.index(qname)]}"
            out.append((names[path], names[upath] - nq, upath, kp, kd, self._targets[user_path]))
        return out

    def _check(self, system, state: State) -> None:
        """Refuse, when the controller is added, a coordinate path this System does not have or a
        target number that is not finite (rather than at the first driver step of a run)."""
        for path, target in self._targets.items():
            if isinstance(target, (int, float, np.floating, np.integer)) and not np.isfinite(float(target)):
                raise ValueError(f"{self._where()}: the target of {path!r} is not finite ({target!r})")
        self._resolve(state, system)

    @staticmethod
    def _target(target, t: float) -> tuple[float, float]:
        if isinstance(target, InputProbe):
            return float(target.value_at(t)), 0.0
        if hasattr(target, "calc_value"):
            return float(target.calc_value([t])), float(target.calc_derivative([0], [t]))
        return float(target), 0.0

    def compute(self, state: State) -> None:
        if self._resolved is None or self._resolved[0] is not state._names:
            self._resolved = (state._names, self._resolve(state))
        q, u, t = state.get_q(), state.get_u(), state.get_time()
        system = self._sim._system
        matter = system.get_matter_subsystem()
        if self._gravity is not None or self._inertia_weighted:
            system.realize(state, Stage.Position)
        resolved = self._resolved[1]
        tau = np.zeros(len(u))
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, naming the coordinate
            for (qi, ui, upath, kp, kd, target), path in zip(resolved, self._gains):
                try:
                    q_star, qdot_star = self._target(target, t)
                except (ValueError, FloatingPointError) as e:  # a Function's refusal, which knows not whose it is
                    raise type(e)(f"{self._where()}: the target of coordinate {path!r} at t = {t!r}: {e}") from e
                tau[ui] = kp * (q_star - q[qi]) + kd * (qdot_star - u[ui])
        if self._inertia_weighted:
            tau = matter.multiply_by_m(state, tau)
        if self._gravity is not None:
            F = self._gravity.calc_force_contribution(state)[0]
            tau -= matter.multiply_by_system_jacobian_transpose(state, F)
        # checked before any is written, so that a refused step leaves the driver inputs as they were
        for (qi, ui, _upath, kp, kd, target), path in zip(resolved, self._gains):
            if not math.isfinite(tau[ui]):
                q_star, qdot_star = self._target(target, t)
                raise NonFiniteForceError(
                    f"{self._where()}: its generalized force on coordinate {path!r} is not finite ({tau[ui]!r}) at "
                    f"t = {t!r}: target q* = {q_star!r}, qdot* = {qdot_star!r}, q = {q[qi]!r}, u = {u[ui]!r}, "
                    f"kp = {kp!r}, kd = {kd!r}", self)
        for _qi, ui, upath, _kp, _kd, _target in resolved:
            self.set_input(state, upath, float(tau[ui]))


# ---------------------------------------------------------------------- the inputs a simulation writes
class _Inputs:
    """Resolves named inputs (see the module doc) and writes them; forces go through one
    ``Force.DiscreteForces`` element the simulation adds while it runs (``/forces/driver_inputs``)."""

    def __init__(self, sim):
        self._sim = sim

    def write(self, state: State, target: str, value, writer: Agent | None = None) -> None:
        system = self._sim._system
        _check_finite(target, value, writer)
        if ":" in target:
            path, name = target.rsplit(":", 1)
            system.get_component(path).set_discrete_variable_value(state, name, value)
            return
        if "." in target.rsplit("/", 1)[-1]:
            path, prop = target.rsplit(".", 1)
            system.get_component(path).set_property(prop, value)
            return
        names = state._names
        i = names.get(target)
        if i is None:  # a component's own name for a variable (an OpenSim coordinate's .../speed)
            i = system._variable_view_index(state, target)
        df = self._sim._discrete_forces
        if df is None:
            raise ValueError(f"input {target!r}: forces are applied through a GeneralForceSubsystem, and "
                             f"{system!r} has none")
        if i is not None:
            nq, nu = state.get_nq(), state.get_nu()
            if not nq <= i < nq + nu:
                raise ValueError(f"input {target!r} is a {'coordinate' if i < nq else 'auxiliary'} variable; a "
                                 "generalized force is applied to a speed (e.g. /matter/elbow/rate)")
            f = df._upd_values(state).mobility_forces
            f[i - nq] = float(value)
            return
        comp = system.get_component(target)
        if hasattr(comp, "get_body_transform"):
            F = np.asarray(value, dtype=float).reshape(2, 3)
            df._upd_values(state).body_forces[comp._index] = F
            return
        raise ValueError(f"input {target!r}: not a speed, a body, 'path:discrete_variable' or 'path.property'")


def _simtk_path(system, state: State, path: str) -> str:
    """``path``, or when a component presents a variable under it (an OpenSim coordinate's
    ``/jointset/knee_r/knee_angle_r/value``) the simtk path of that variable (``/matter/tibia_r/q0``)."""
    if path in state._names:
        return path
    i = system._variable_view_index(state, path)
    if i is None:
        return path
    return next(p for p, j in state._names.items() if j == i)


def _check_finite(target: str, value, writer: Agent | None) -> None:
    """Refuse a NaN or infinite input before it is written, naming who wrote it and where: found later,
    it would be only "the applied forces are not finite" with no trace of its source."""
    if isinstance(value, float):  # the common case (a controller's scalar), without numpy
        if math.isfinite(value):
            return
    else:
        try:
            a = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return  # not numbers (a discrete variable of another kind): nothing to check
        if np.isfinite(a).all():
            return
        bad = np.argwhere(~np.isfinite(a))
        value = a[tuple(bad[0])] if a.ndim else float(a)
        if a.ndim:
            value = f"{value!r} at entry {tuple(int(i) for i in bad[0])}"
    who = writer._where() if writer is not None else "a driver input"
    kind = "discrete variable" if ":" in target else "property" if "." in target.rsplit("/", 1)[-1] else "input"
    message = f"{who}: wrote a value that is not finite ({value}) to the {kind} {target!r}"
    if kind == "input":
        raise NonFiniteForceError(message, writer)
    raise ValueError(message)


def _needs_forces(agents: Sequence[Agent]) -> bool:
    for a in agents:
        if isinstance(a, (PDController, Controller)) and not isinstance(a, InputProbe):
            return True
        t = getattr(a, "target", None)
        if t is not None and ":" not in t and "." not in t.rsplit("/", 1)[-1]:
            return True
    return False


def _copy(value: Any):
    return value.copy() if isinstance(value, np.ndarray) else value
