"""Assembler: find q that satisfies the position constraints and best fits assembly goals.

Simbody's Assembler on scipy.optimize. The unknowns are the coordinates q that are not locked.
*Errors* (the enabled constraints' position errors, quaternion normalization, and any condition
adopted with ``adopt_assembly_error``) must vanish to within the tolerance; *goals* (conditions
adopted with ``adopt_assembly_goal``) are minimized, weighted, subject to the errors. ``assemble``

1. drives the errors to zero from the starting guess by bounded nonlinear least squares
   (``scipy.optimize.least_squares``, trust-region reflective, robust far from the solution);
2. when there are goals, minimizes the weighted goal cost subject to errors = 0 and the q ranges
   (``scipy.optimize.minimize``, SLSQP) from that feasible point;
3. polishes the errors to the tolerance by least squares again (locks and ranges respected).

Conditions: ``Markers`` (stations on bodies that should sit at observed Ground locations) and
``QValue`` (one coordinate at a value).
"""
from __future__ import annotations

import numpy as np
from scipy import optimize

from .._real import real_array, real_float, real_index
from ..common._ownership import check_system, system_of
from ..common.errors import ConstraintViolationError
from ..common.stage import Stage
from ..common.state import State

__all__ = ["Assembler", "Markers", "QValue"]


class AssemblyCondition:
    """Base of assembly conditions: residuals r(state) (at Position); the cost is |r|^2."""

    def _residuals(self, matter, state: State) -> np.ndarray:
        raise NotImplementedError


class Markers(AssemblyCondition):
    """Stations on bodies (markers) that should be at observed Ground locations.

    The cost is sum_i w_i ‖p_G(marker i) - observation i‖^2. Markers whose observation is NaN are
    ignored.
    """

    def __init__(self):
        self._bodies: list = []
        self._stations: list = []
        self._weights: list = []
        self._names: list = []
        self._obs = np.zeros((0, 3))

    def add_marker(self, body, station, weight: float = 1.0, name: str | None = None) -> int:
        """Add a marker at ``station`` (3,) of ``body``; returns its index."""
        s = real_array(station, "Markers.add_marker(): station")
        if s.shape != (3,) or not np.isfinite(s).all():
            raise ValueError(f"Markers.add_marker(): station must be a finite 3-vector, got {station!r}")
        w = real_float(weight, "Markers.add_marker(): weight")
        if not (np.isfinite(w) and w >= 0):
            raise ValueError(f"Markers.add_marker(): weight must be finite and >= 0, got {weight!r}")
        if not callable(getattr(body, "find_station_location_in_ground", None)):
            raise TypeError(f"Markers.add_marker(): expected a MobilizedBody, got {type(body).__name__}")
        if self._bodies:  # one Markers condition measures bodies of one System
            check_system("Markers.add_marker()", body, system_of(self._bodies[0]), "body")
        self._bodies.append(body)
        self._stations.append(s.copy())
        self._weights.append(w)
        self._names.append(name if name is not None else f"marker{len(self._names)}")
        self._obs = np.vstack([self._obs, np.full((1, 3), np.nan)])
        return len(self._bodies) - 1

    def get_num_markers(self) -> int:
        return len(self._bodies)

    def get_marker_index(self, name: str) -> int:
        """Index of the marker called ``name``."""
        try:
            return self._names.index(name)
        except ValueError:
            raise KeyError(f"Markers: no marker named {name!r}") from None

    def move_all_observations(self, points) -> None:
        """Set every marker's observed Ground location, (n_markers, 3) (NaN rows: unobserved)."""
        p = real_array(points, "Markers.move_all_observations(): points")
        if p.shape != (len(self._bodies), 3):
            raise ValueError(f"Markers.move_all_observations(): expected shape ({len(self._bodies)}, 3), got {p.shape}")
        self._obs = p.copy()

    def move_one_observation(self, i: int, point) -> None:
        """Set marker ``i``'s observed location."""
        self._obs[real_index(i, "Markers.move_one_observation(): i")] = real_array(
            point, "Markers.move_one_observation(): point")

    def get_observations(self) -> np.ndarray:
        return self._obs.copy()

    def find_current_marker_location(self, state: State, i: int) -> np.ndarray:
        """Marker ``i`` in Ground (Position)."""
        return self._bodies[i].find_station_location_in_ground(state, self._stations[i])

    def _residuals(self, matter, state):
        out = []
        for b, s, w, o in zip(self._bodies, self._stations, self._weights, self._obs):
            if w == 0 or not np.isfinite(o).all():
                continue
            out.append(np.sqrt(w) * (b.find_station_location_in_ground(state, s) - o))
        return np.concatenate(out) if out else np.zeros(0)


class QValue(AssemblyCondition):
    """Coordinate ``which_q`` of ``mobod`` should equal ``value``."""

    def __init__(self, mobod, which_q: int, value: float):
        self._mobod, self._which = mobod, real_index(which_q, "QValue(): which_q")
        self._value = real_float(value, "QValue(): value")

    def set_value(self, value: float) -> None:
        self._value = real_float(value, "QValue.set_value(): value")

    def _residuals(self, matter, state):
        return np.array([self._mobod.get_one_q(state, self._which) - self._value])


def _bodies_of(condition: AssemblyCondition) -> list:
    """The bodies a condition measures (those of the built-in kinds; a user's kind names none)."""
    if isinstance(condition, Markers):
        return list(condition._bodies)
    if isinstance(condition, QValue):
        return [condition._mobod]
    return []


class Assembler:
    """Satisfy a System's position constraints and fit assembly goals by changing q.

    Parameters
    ----------
    system : MultibodySystem
        The system whose State ``assemble`` modifies.
    """

    Markers = Markers
    QValue = QValue

    def __init__(self, system):
        self._system = system
        self._matter = system.get_matter_subsystem()
        self._accuracy = 1e-6
        self._tolerance = 1e-9
        self._locked: set = set()  # (body index, which_q) or (body index, None) for the whole mobilizer
        self._ranges: dict = {}  # (body index, which_q) -> (lower, upper)
        self._goals: list = []  # (condition, weight)
        self._errors: list = []
        self._n_evals = 0

    def _index_of(self, mobod, method: str) -> int:
        # a body of another System has an index here too: refuse it rather than lock that one
        if getattr(mobod, "_matter", None) is not self._matter:
            check_system(f"Assembler.{method}", mobod, self._system, "body")
        return mobod.get_mobilized_body_index()

    def _check_condition(self, condition: AssemblyCondition, method: str) -> None:
        for b in _bodies_of(condition):
            if getattr(b, "_matter", None) is not self._matter:
                check_system(f"Assembler.{method}: {type(condition).__name__}", b, self._system, "body")

    # ------------------------------------------------------------------ settings
    def set_accuracy(self, accuracy: float) -> "Assembler":
        """Relative accuracy to which the goal cost is minimized."""
        self._accuracy = _positive(accuracy, "Assembler.set_accuracy")
        return self

    def set_tolerance(self, tolerance: float) -> "Assembler":
        """Largest acceptable error (constraint error, or error condition residual)."""
        self._tolerance = _positive(tolerance, "Assembler.set_tolerance")
        return self

    def get_accuracy_in_use(self) -> float:
        return self._accuracy

    def get_tolerance_in_use(self) -> float:
        return self._tolerance

    def lock_mobilizer(self, mobod) -> None:
        """Keep every q of ``mobod`` at its value in the State given to ``assemble``."""
        self._locked.add((self._index_of(mobod, "lock_mobilizer()"), None))

    def unlock_mobilizer(self, mobod) -> None:
        self._locked.discard((self._index_of(mobod, "unlock_mobilizer()"), None))

    def lock_q(self, mobod, which_q: int) -> None:
        """Keep q[which_q] of ``mobod`` at its value."""
        self._locked.add((self._index_of(mobod, "lock_q()"), real_index(which_q, "Assembler.lock_q(): which_q")))

    def unlock_q(self, mobod, which_q: int) -> None:
        self._locked.discard((self._index_of(mobod, "unlock_q()"), real_index(which_q, "Assembler.unlock_q(): which_q")))

    def restrict_q(self, mobod, which_q: int, lower: float, upper: float) -> None:
        """Keep q[which_q] of ``mobod`` within [lower, upper]."""
        lo, hi = real_float(lower, "Assembler.restrict_q(): lower"), real_float(upper, "Assembler.restrict_q(): upper")
        if not lo <= hi:
            raise ValueError(f"Assembler.restrict_q(): lower {lo} > upper {hi}")
        self._ranges[(self._index_of(mobod, "restrict_q()"), real_index(which_q, "Assembler.restrict_q(): which_q"))] = \
            (lo, hi)

    def adopt_assembly_goal(self, condition: AssemblyCondition, weight: float = 1.0) -> int:
        """Minimize ``condition``'s cost with ``weight``; returns the goal's index."""
        if not isinstance(condition, AssemblyCondition):
            raise TypeError(f"Assembler.adopt_assembly_goal(): expected an assembly condition, got "
                            f"{type(condition).__name__}")
        w = real_float(weight, "Assembler.adopt_assembly_goal(): weight")
        if not (np.isfinite(w) and w >= 0):
            raise ValueError(f"Assembler.adopt_assembly_goal(): weight must be finite and >= 0, got {weight!r}")
        self._check_condition(condition, "adopt_assembly_goal()")
        self._goals.append((condition, w))
        return len(self._goals) - 1

    def adopt_assembly_error(self, condition: AssemblyCondition) -> int:
        """Require ``condition``'s residuals to vanish (to the tolerance); returns its index."""
        if not isinstance(condition, AssemblyCondition):
            raise TypeError(f"Assembler.adopt_assembly_error(): expected an assembly condition, got "
                            f"{type(condition).__name__}")
        self._check_condition(condition, "adopt_assembly_error()")
        self._errors.append(condition)
        return len(self._errors) - 1

    def get_num_evaluations(self) -> int:
        """Error/goal evaluations used by the last ``assemble``."""
        return self._n_evals

    # ------------------------------------------------------------------ the problem
    def _free_and_bounds(self, state: State):
        matter = self._matter
        nq = state.get_nq()
        free = np.ones(nq, dtype=bool)
        lo, hi = np.full(nq, -np.inf), np.full(nq, np.inf)
        for b, which in self._locked:
            q0, n = matter._q_range(state, b)
            if which is None:
                free[q0:q0 + n] = False
            else:
                if not 0 <= which < n:
                    raise IndexError(f"Assembler.lock_q(): {matter.get_mobilized_body(b)!r} has no q[{which}]")
                free[q0 + which] = False
        for (b, which), (l, h) in self._ranges.items():
            q0, n = matter._q_range(state, b)
            if not 0 <= which < n:
                raise IndexError(f"Assembler.restrict_q(): {matter.get_mobilized_body(b)!r} has no q[{which}]")
            lo[q0 + which], hi[q0 + which] = l, h
        return free, lo, hi

    def _set(self, work: State, q_full: np.ndarray, free: np.ndarray, x: np.ndarray) -> None:
        q = q_full.copy()
        q[free] = x
        work.set_q(q)
        self._system.realize(work, Stage.Position)
        self._n_evals += 1

    def _error_vector(self, work: State, layout_quats) -> np.ndarray:
        matter = self._matter
        parts = [np.array(work.get_q_err()[:matter._plan(work).mp])]
        q = work.get_q()
        for q0 in layout_quats:
            parts.append(np.array([q[q0:q0 + 4] @ q[q0:q0 + 4] - 1.0]))
        for c in self._errors:
            parts.append(c._residuals(matter, work))
        return np.concatenate(parts) if parts else np.zeros(0)

    def _error_owner(self, work: State, layout_quats, k: int):
        """The element behind entry ``k`` of `_error_vector`: a constraint, a quaternion's body, or a condition."""
        matter = self._matter
        mp = matter._plan(work).mp
        if k < mp:
            return matter._position_equation_owner(work, k)
        k -= mp
        if k < len(layout_quats):
            layout = matter._cache(work).layout
            return matter.get_mobilized_body(int(layout.quaternion_bodies[k]))
        k -= len(layout_quats)
        for c in self._errors:
            n = len(c._residuals(matter, work))
            if k < n:
                return c
            k -= n
        return None

    def _goal_vector(self, work: State) -> np.ndarray:
        parts = [np.sqrt(w) * c._residuals(self._matter, work) for c, w in self._goals if w > 0]
        return np.concatenate(parts) if parts else np.zeros(0)

    def assemble(self, state: State) -> float:
        """Change the q of ``state`` to satisfy the errors and minimize the goals; returns the goal cost.

        Raises ConstraintViolationError (a RuntimeError) naming the element with the largest error when the
        errors cannot be brought within the tolerance.
        """
        system, matter = self._system, self._matter
        check_system("Assembler.assemble()", state, system, "State")
        for c in [c for c, _ in self._goals] + self._errors:  # (markers may have been added since adopted)
            self._check_condition(c, "assemble()")
        system.realize(state, Stage.Instance)
        self._n_evals = 0
        work = state.copy()
        q_full = np.array(state.get_q())
        cache = matter._cache(work)
        quats = [int(cache.layout.qoff[i]) for i in cache.layout.quaternion_bodies]
        free, lo, hi = self._free_and_bounds(state)
        lo_f, hi_f = lo[free], hi[free]
        x0 = np.clip(q_full[free], lo_f, hi_f)
        bounds = (lo_f, hi_f)

        def errors(x):
            self._set(work, q_full, free, x)
            return self._error_vector(work, quats)

        def goal(x):
            self._set(work, q_full, free, x)
            r = self._goal_vector(work)
            return float(r @ r)

        x = x0
        if len(errors(x)):
            x = self._solve_errors(errors, x, bounds)
        if self._goals:
            cons = []
            if len(errors(x)):
                # SLSQP needs independent equality constraints: keep the independent combinations
                # of the errors (redundant constraints, e.g. a planar loop closed by a Ball, are common).
                T = _independent_rows(errors, x)
                cons = [{"type": "eq", "fun": lambda x, T=T: T @ errors(x)}] if len(T) else []
            res = optimize.minimize(goal, x, method="SLSQP", constraints=cons,
                                    bounds=list(zip(np.where(np.isfinite(lo_f), lo_f, None),
                                                    np.where(np.isfinite(hi_f), hi_f, None))),
                                    options={"ftol": self._accuracy * 1e-3, "maxiter": 500})
            x = res.x
            if len(errors(x)):
                x = self._solve_errors(errors, x, bounds)
        err = errors(x)
        worst = float(np.max(np.abs(err))) if len(err) else 0.0
        if worst > self._tolerance:
            owner = self._error_owner(work, quats, int(np.argmax(np.abs(err))))
            raise ConstraintViolationError(
                f"Assembler.assemble(): could not satisfy the assembly errors: the largest is {worst:.3g} "
                f"> tolerance {self._tolerance:.3g}, in {owner!r} (inconsistent constraints, locks or ranges?)",
                owner, worst)
        q = q_full.copy()
        q[free] = x
        for q0 in quats:  # exactly unit quaternions
            q[q0:q0 + 4] /= np.linalg.norm(q[q0:q0 + 4])
        state.set_q(q)
        system.realize(state, Stage.Position)
        r = self._goal_vector(state)
        return float(r @ r)

    def _solve_errors(self, errors, x, bounds):
        """Least squares on the errors; restarts from deterministic random points if it stalls in a
        local minimum (a far-off guess, or a start on a bound)."""
        rng = np.random.default_rng(0)
        lo, hi = bounds
        best, best_err = x, np.inf
        start = x
        for attempt in range(12):
            res = optimize.least_squares(errors, start, bounds=bounds, method="trf", xtol=1e-15, ftol=1e-15,
                                         gtol=1e-15, x_scale="jac", max_nfev=100 * (len(x) + 1))
            err = float(np.max(np.abs(res.fun), initial=0.0))
            if err < best_err:
                best, best_err = res.x, err
            if best_err <= 0.1 * self._tolerance:
                break
            trial = x + rng.normal(scale=1.0 + 0.5 * attempt, size=len(x))
            finite_lo, finite_hi = np.isfinite(lo), np.isfinite(hi)
            both = finite_lo & finite_hi
            trial[both] = rng.uniform(lo[both], hi[both])
            margin = np.where(both, 1e-9 * (hi - lo), 0.0) if both.any() else 0.0
            start = np.clip(trial, np.where(finite_lo, lo + margin, -np.inf), np.where(finite_hi, hi - margin, np.inf))
        return best


def _independent_rows(fun, x: np.ndarray, rel: float = 1e-8) -> np.ndarray:
    """(r, m) rows T so that T f(x) are the independent combinations of f near x (SVD of df/dx)."""
    f0 = fun(x)
    h = 1e-7 * (1.0 + np.abs(x))
    J = np.zeros((len(f0), len(x)))
    for j in range(len(x)):
        xp = x.copy()
        xp[j] += h[j]
        xm = x.copy()
        xm[j] -= h[j]
        J[:, j] = (fun(xp) - fun(xm)) / (2 * h[j])
    U, S, _ = np.linalg.svd(J, full_matrices=False)
    r = int(np.sum(S > rel * (S[0] if len(S) else 0.0)))
    return U[:, :r].T


def _positive(x, where: str) -> float:
    v = real_float(x, where)
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{where}: expected a positive finite number, got {x!r}")
    return v
