"""The constraints half of SimbodyMatterSubsystem: constraints, locks and Motions in the State, and the
operators that involve them (G, G^T, projection, multipliers, forward dynamics with constraints).

A mixin over `simtk.multibody.tree.MatterTree`: the tree calls the hooks at the end of this module
when it realizes, and the constraints are found through the tree's registration lists
(``_constraints``, ``_motions``), so the tree imports nothing from here.
"""
from __future__ import annotations

import numpy as np

from ...common.stage import ACCELERATION, INSTANCE, POSITION, VELOCITY
from ...common.state import State
from . import _solver
from ._projection import project_q, project_u
from ._solver import forces_from_multipliers, gmap, multiply_by_g, solve_accelerations
from .motion import motion_elements

__all__ = ["ConstraintOperators"]


class ConstraintOperators:
    """Constraint operators of the matter subsystem (mixed into SimbodyMatterSubsystem)."""

    def _position_equation_owner(self, state: State, eq: int):
        """The constraint (or the mobilized body of a lock or Motion) that owns position equation ``eq``."""
        plan = self._cache(state).plan
        for ci, eqs in plan.slots.items():
            if eq in eqs:
                return self._constraints[ci]
        for b, eqs in plan.motion_slots.items():
            if eq in eqs:
                return self._bodies[b]
        return None

    def project_q_impl(self, state: State, accuracy: float) -> bool:
        """Normalize quaternions and move q onto the position constraints (perr = 0) within ``accuracy``.

        Newton iterations with minimum-norm steps in u-space (dq = N du); raises RuntimeError when
        the errors cannot be brought within ``accuracy``.
        """
        return project_q(self, state, accuracy)

    def project_u_impl(self, state: State, accuracy: float) -> bool:
        """Move u onto the velocity constraints (pverr = verr = 0) with the mass-weighted least change
        (the one that removes the least kinetic energy)."""
        return project_u(self, state, accuracy)

    # ------------------------------------------------------------------ constraints and motions (topology)
    def _adopt_constraint(self, constraint) -> int:
        self._adopt_component(constraint)
        self._constraints.append(constraint)
        self.invalidate_subsystem_topology_cache()
        return len(self._constraints) - 1

    def get_num_constraints(self) -> int:
        """How many constraints this subsystem holds (enabled or not)."""
        return len(self._constraints)

    def get_constraint(self, i: int):
        """Constraint ``i``."""
        return self._constraints[i]

    def _adopt_motion(self, motion) -> None:
        b = motion._mobod._index
        if b in self._motions:
            raise ValueError(f"{motion._mobod!r} already has a Motion ({self._motions[b]!r})")
        motion._mobod._adopt_component(motion)
        self._motions[b] = motion
        self.invalidate_subsystem_topology_cache()

    def _set_constraint_disabled(self, state: State, index: int, flag: bool) -> None:
        disabled = self.get_discrete_variable(state, self._constraint_disabled_index)
        if bool(disabled[index]) != flag:
            new = disabled.copy()
            new[index] = flag
            self.set_discrete_variable(state, self._constraint_disabled_index, new)

    def _is_constraint_disabled(self, state: State, index: int) -> bool:
        return bool(self.get_discrete_variable(state, self._constraint_disabled_index)[index])

    def _set_lock(self, state: State, body: int, level, values) -> None:
        locks = self.get_discrete_variable(state, self._locks_index)
        new = dict(locks)
        if level is None:
            if body not in new:
                return
            del new[body]
        else:
            new[body] = (int(level), tuple(float(v) for v in values))
        self.set_discrete_variable(state, self._locks_index, new)

    def _get_lock(self, state: State, body: int):
        return self.get_discrete_variable(state, self._locks_index).get(body)

    # ------------------------------------------------------------------ constraints (per State)
    def _plan(self, state: State):
        return self._at(state, INSTANCE, "the constraint layout").plan

    def _constraint_slots(self, state: State, constraint):
        """Global equation numbers of ``constraint`` in ``state``, or None when it is disabled."""
        return self._plan(state).slots.get(constraint._index)

    def _gmap(self, state: State, need_inverse: bool = False):
        cache = self._at(state, POSITION, "the constraint Jacobian G")
        return gmap(self, state, cache, need_inverse)

    def _total_constraint_forces(self, state: State):
        """G^T lambda of all equations as body forces (nb, 2, 3) and mobility forces (nu,) (Acceleration)."""
        cache = self._at(state, ACCELERATION, "constraint forces")
        ws = cache.ws
        if not cache.plan.m:
            return np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu)
        return forces_from_multipliers(self._gmap(state), self.get_multipliers(state), ws.nb, ws.nu)

    def _forces_of_equations(self, state: State, eqs):
        cache = self._at(state, ACCELERATION, "constraint forces")
        ws = cache.ws
        if eqs is None or not len(eqs):
            return np.zeros((ws.nb, 2, 3)), np.zeros(ws.nu)
        mask = np.zeros(cache.plan.m)
        mask[eqs] = 1.0
        return forces_from_multipliers(self._gmap(state), self.get_multipliers(state), ws.nb, ws.nu, mask)

    def _constraint_forces_of(self, state: State, constraint):
        return self._forces_of_equations(state, self._constraint_slots(state, constraint))

    def _motion_forces(self, state: State, body: int) -> np.ndarray:
        """Generalized forces a lock or Motion applies on ``body``'s u (nu_body,) (Acceleration)."""
        eqs = self._plan(state).motion_slots.get(body)
        _, f = self._forces_of_equations(state, eqs)
        u0, n = self._u_range(state, body)
        return -f[u0:u0 + n]

    def calc_constraint_forces_from_multipliers(self, state: State, multipliers):
        """``(body_forces (nb, 2, 3), mobility_forces (nu,))`` equivalent to G^T multipliers (Position).

        Simbody's sign: these are on the left of M udot + G^T lambda = f.
        """
        g = self._gmap(state)
        lam = self._check_m(state, multipliers, "calc_constraint_forces_from_multipliers()")
        ws = self._cache(state).ws
        return forces_from_multipliers(g, lam, ws.nb, ws.nu)

    def _check_m(self, state: State, x, what: str) -> np.ndarray:
        m = self._plan(state).m
        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.shape != (m,) or not np.isfinite(a).all():
            raise ValueError(f"{self._where()}: {what}: expected {m} finite multipliers, got shape {a.shape}")
        return a

    def get_num_constraint_equations(self, state: State) -> tuple[int, int, int]:
        """``(mp, mv, ma)``: holonomic, nonholonomic and acceleration-only equations in use (Instance),
        locks and Motions included."""
        plan = self._plan(state)
        return plan.mp, plan.mv, plan.ma

    # ------------------------------------------------------------------ operators: constraints
    def calc_g(self, state: State) -> np.ndarray:
        """G = d(aerr)/d(udot) (m, nu), column by column from the acceleration-error routines (Velocity)."""
        cache = self._at(state, VELOCITY, "calc_g()")
        ws = cache.ws
        G = np.zeros((cache.plan.m, ws.nu))
        e = np.zeros(ws.nu)
        for j in range(ws.nu):
            e[j] = 1.0
            G[:, j] = multiply_by_g(self, state, cache, e)
            e[j] = 0.0
        return G

    def multiply_by_g(self, state: State, ulike) -> np.ndarray:
        """G ulike (m,), from the acceleration-error routines: O(n + m) (Velocity)."""
        cache = self._at(state, VELOCITY, "multiply_by_g()")
        return multiply_by_g(self, state, cache, self._check_nu(ulike, cache.ws, "multiply_by_g()"))

    def calc_g_transpose(self, state: State) -> np.ndarray:
        """G^T (nu, m) from the constraint force routines (Position)."""
        return self._gmap(state).G.T.copy()

    def multiply_by_g_transpose(self, state: State, multipliers) -> np.ndarray:
        """G^T multipliers (nu,): the generalized forces of the constraint forces, O(n + m) (Position)."""
        F, f = self.calc_constraint_forces_from_multipliers(state, multipliers)
        return self.multiply_by_system_jacobian_transpose(state, F) + f

    def calc_projected_m_inv(self, state: State) -> np.ndarray:
        """G M^-1 G^T (m, m) (Position)."""
        A = self._gmap(state, need_inverse=True).A
        return 0.5 * (A + A.T)

    def calc_residual_force(self, state: State, mobility_forces, body_forces, known_udot,
                            known_lambda) -> np.ndarray:
        """M udot + C + G^T lambda - f - J^T F, (nu,) (Velocity)."""
        r = self.calc_residual_force_ignoring_constraints(state, mobility_forces, body_forces, known_udot)
        if self._plan(state).m:
            r += self.multiply_by_g_transpose(state, known_lambda)
        return r

    def calc_acceleration(self, state: State, mobility_forces, body_forces):
        """Forward dynamics with the constraints for the given forces: ``(udot (nu,), A_GB (nb, 2, 3))``.

        The State's own realized results are not disturbed (Velocity).
        """
        cache = self._at(state, VELOCITY, "calc_acceleration()")
        ws = cache.ws
        what = "calc_acceleration()"
        ws.forward_dynamics(self._check_nu(mobility_forces, ws, what), self._check_body_forces(body_forces, ws, what))
        for mb in cache.layout.custom:
            mb._realize_custom_acceleration(state, ws)
        if not cache.plan.m:
            return ws.udot.copy(), ws.A_GB.copy()
        udot, A, qdd = np.empty(ws.nu), np.empty((ws.nb, 2, 3)), np.empty(ws.nq)
        solve_accelerations(self, state, cache, ws.udot, ws.A_GB, ws.qdotdot, udot, A, qdd)
        return udot, A

    # ------------------------------------------------------------------ hooks the tree calls
    def _plan_constraints(self, state: State, layout):
        disabled = self.get_discrete_variable(state, self._constraint_disabled_index)
        locks = self.get_discrete_variable(state, self._locks_index)
        return _solver.build_plan(self, state, layout, disabled, motion_elements(self, state, layout, locks))

    def _realize_constraints_position(self, state: State, ss, cache) -> None:
        _solver.realize_position(self, state, ss, cache)

    def _realize_constraints_velocity(self, state: State, ss, cache) -> None:
        _solver.realize_velocity(self, state, ss, cache)

    def _realize_constraints_acceleration(self, state: State, ss, cache) -> None:
        _solver.realize_acceleration(self, state, ss, cache)
