"""Constraints held by the matter subsystem: the ``Constraint`` base and ``Constraint.Custom``.

Equations and their layout
--------------------------
A constraint contributes ``mp`` holonomic (position), ``mv`` nonholonomic (velocity) and ``ma``
acceleration-only equations. Over the enabled constraints of a State the equations are numbered as
in Simbody: all holonomic equations first, then all nonholonomic, then all acceleration-only, each
block in constraint order, so that::

    q_err    = [ perr (mp) | quaternion errors ]
    u_err    = [ pverr (mp) | verr (mv) ]
    udot_err = [ paerr (mp) | vaerr (mv) | aerr (ma) ]      multipliers: same layout

The equations of motion are ``M udot + G^T lambda = f`` and ``G udot = b``: a constraint's forces
as reported here (``get_constrained_body_forces``) are the ``G^T lambda`` side, i.e. the negative of
the forces the constraint actually applies to the bodies (Simbody's sign convention).

Built-in constraints live in ``builtin_constraints.py`` (those a Function defines in
``function_constraints.py``); each kind is evaluated for all its enabled
elements at once (vectorized over elements), while a ``Constraint.Custom`` runs its Python methods
once per constraint per stage (and once per equation when its force map is needed).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ... import _core
from ..._kinds import KindsMeta
from ...common._ownership import check_system
from ...common.component import Component
from ...common.errors import StageTooLowError
from ...common.stage import ACCELERATION, POSITION, VELOCITY
from ...common.state import State
from ...spatial import Rotation, Transform
from ..tree._matter_tree import MatterTree
from ..tree.mobilized_body import MobilizedBody
from ._solver import kinematics_arrays, kinematics_of_state

# The compiled common cases of the Custom implementation's helpers (core/helpers.pxi): None or False, having
# done nothing, where their cheap checks fail.
_station, _body_pose, _body_motion = _core.ancestor_station, _core.ancestor_body_pose, _core.ancestor_body_motion
_add_station_force, _add_to_row, _add_mobility_force = (_core.ancestor_add_station_force, _core.add_to_row,
                                                        _core.mobod_add_mobility_force)

if TYPE_CHECKING:
    from ..matter import SimbodyMatterSubsystem

__all__ = ["Constraint"]


def _matter_of(x, where: str):
    if not isinstance(x, MatterTree):
        raise TypeError(f"{where}: expected a SimbodyMatterSubsystem, got {type(x).__name__}")
    return x


def _mobod(x, where: str):
    if not isinstance(x, MobilizedBody):
        raise TypeError(f"{where}: expected a MobilizedBody, got {type(x).__name__}")
    return x


class Constraint(Component, metaclass=KindsMeta):
    """Base of every constraint; the constraint joins the matter subsystem of its bodies on construction.

    Subclasses are the built-ins (``Constraint.Rod``, ``Constraint.Ball``, ...) and
    ``Constraint.Custom``. A constraint can be disabled per State (an Instance-stage change).
    """

    #: Equations per element (built-ins fix them per class; Custom per instance).
    _mp = 0
    _mv = 0
    _ma = 0
    #: Whether the elements of this class are evaluated together (False: one group per element).
    _bulk = True

    def __init__(self, matter: "SimbodyMatterSubsystem"):
        self._matter = _matter_of(matter, f"Constraint.{type(self).__name__}")
        self._disabled_by_default = False
        self._index = self._matter._adopt_constraint(self)

    def __repr__(self) -> str:
        return f"<Constraint.{type(self).__name__} #{self._index} {self.get_absolute_path()!r}>"

    def _builtin_modeling_options(self) -> dict:
        """``disabled`` (0 or 1): Simbody's ``Constraint::disable``, an Instance-stage change."""
        return {"disabled": (2, lambda state: int(self.is_disabled(state)),
                             lambda state, v: self.disable(state) if v else self.enable(state))}

    # ------------------------------------------------------------------ identity
    def get_constraint_index(self) -> int:
        """This constraint's index in its matter subsystem."""
        return self._index

    def get_matter_subsystem(self) -> "SimbodyMatterSubsystem":
        """The matter subsystem holding this constraint."""
        return self._matter

    def _constrained_body_indices(self) -> list[int]:
        """Mobilized-body indices of the bodies this constraint applies body forces to, in order."""
        return []

    def _constrained_mobilizer_indices(self) -> list[int]:
        """Mobilized-body indices of the mobilizers whose q or u this constraint uses."""
        return []

    def get_num_constrained_bodies(self) -> int:
        """How many bodies this constraint acts on through body forces."""
        return len(self._constrained_body_indices())

    def get_constrained_mobilized_bodies(self) -> tuple:
        """The bodies of ``get_constrained_body_forces``, in the same order."""
        return tuple(self._matter.get_mobilized_body(i) for i in self._constrained_body_indices())

    # ------------------------------------------------------------------ enabling
    def set_disabled_by_default(self, flag: bool) -> None:
        """Whether new States start with this constraint disabled (a topology change)."""
        self._disabled_by_default = bool(flag)
        self._matter.invalidate_subsystem_topology_cache()

    def is_disabled_by_default(self) -> bool:
        """Whether new States start with this constraint disabled."""
        return self._disabled_by_default

    def enable(self, state: State) -> None:
        """Enable this constraint in ``state`` (an Instance-stage change)."""
        self._matter._set_constraint_disabled(state, self._index, False)

    def disable(self, state: State) -> None:
        """Disable this constraint in ``state`` (an Instance-stage change)."""
        self._matter._set_constraint_disabled(state, self._index, True)

    def is_disabled(self, state: State) -> bool:
        """Whether this constraint is disabled in ``state``."""
        return self._matter._is_constraint_disabled(state, self._index)

    # ------------------------------------------------------------------ results
    def get_num_constraint_equations_in_use(self, state: State) -> tuple[int, int, int]:
        """``(mp, mv, ma)`` in ``state``: zeros when disabled (Instance)."""
        if self._matter._constraint_slots(state, self) is None:
            return (0, 0, 0)
        return (self._mp, self._mv, self._ma)

    def _slots(self, state: State) -> np.ndarray:
        eqs = self._matter._constraint_slots(state, self)
        return np.zeros(0, dtype=np.intp) if eqs is None else eqs

    def get_position_errors(self, state: State) -> np.ndarray:
        """This constraint's position errors (mp,) (Position)."""
        eqs = self._slots(state)[:self._mp] if not self.is_disabled(state) else np.zeros(0, dtype=np.intp)
        return self._matter.get_q_err(state)[eqs].copy()

    def get_velocity_errors(self, state: State) -> np.ndarray:
        """This constraint's velocity errors (mp + mv,): pverr then verr (Velocity)."""
        eqs = self._slots(state)[:self._mp + self._mv] if not self.is_disabled(state) else np.zeros(0, dtype=np.intp)
        return self._matter.get_u_err(state)[eqs].copy()

    def get_acceleration_errors(self, state: State) -> np.ndarray:
        """This constraint's acceleration errors (mp + mv + ma,) at the accelerations obtained, so
        nonzero too when a Custom force routine is not G^T (Acceleration)."""
        return self._matter.get_udot_err(state)[self._slots(state)].copy()

    def get_multipliers(self, state: State) -> np.ndarray:
        """This constraint's Lagrange multipliers (mp + mv + ma,) (Acceleration)."""
        return self._matter.get_multipliers(state)[self._slots(state)].copy()

    def _own_forces(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        return self._matter._constraint_forces_of(state, self)

    def get_constrained_body_forces(self, state: State) -> np.ndarray:
        """``G^T lambda`` body forces of this constraint, one per constrained body, (ncb, 2, 3).

        Each is (torque, force) in Ground, the force applied at the body origin; the order is that
        of ``get_constrained_mobilized_bodies()``. Sign: these are the forces on the left of
        ``M udot + G^T lambda = f``, the negative of what the constraint applies (Acceleration).
        """
        F, _ = self._own_forces(state)
        return F[self._constrained_body_indices()].copy()

    def get_constrained_mobility_forces(self, state: State) -> np.ndarray:
        """``G^T lambda`` mobility forces of this constraint, (nu,) over all mobilities (Acceleration)."""
        return self._own_forces(state)[1].copy()

    def calc_power(self, state: State) -> float:
        """Power this constraint delivers to the system (positive adds energy) (Acceleration).

        Minus the dot product of its ``G^T lambda`` forces with the body velocities and speeds, so
        a workless constraint gives 0 and a prescribed motion gives the rate of work it does.
        """
        F, f = self._own_forces(state)
        V = self._matter._vel_arrays(state)
        u = self._matter.get_u(state)
        return -float(np.einsum("bij,bij->", F, V) + f @ u)

    # ------------------------------------------------------------------ bulk protocol
    # Elements of one class are packed at Instance and evaluated together. ``kin`` (a _Kinematics)
    # holds the pose, velocity and (trial) acceleration arrays; outputs are (k, n) arrays, one row
    # per element. ``_force_map`` (once per q) adds the forces of a unit multiplier of each
    # equation (the columns of G^T) to a _ForceMapBuilder and returns a handle for
    # ``_fast_acceleration_errors``; ``eq`` (k, mp + mv + ma) holds each element's global equation
    # numbers. Kinds with ``_velocity_from_g`` have velocity errors equal to G u (homogeneous linear
    # in u); kinds with ``_fast`` evaluate their acceleration rows at the unconstrained
    # accelerations from the handle and the per-q tables (see constraint_solver._AccelContext).
    _velocity_from_g = False
    _fast = False

    @classmethod
    def _pack(cls, elements: list, plan, state: State):
        raise NotImplementedError

    @classmethod
    def _position_errors(cls, packed, kin) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def _velocity_errors(cls, packed, kin) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def _acceleration_errors(cls, packed, kin) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def _force_map(cls, packed, kin, eq: np.ndarray, out):
        raise NotImplementedError

    @classmethod
    def _fast_acceleration_errors(cls, packed, handle, ctx, eq: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _realize_hook(self, state: State, stage: str) -> None:
        """Per-stage hook for constraints with state of their own (Custom); nothing by default."""


# ====================================================================== Constraint.Custom
class _CustomImplementation:
    """Base of a ``Constraint.Custom`` implementation (seed §3.2).

    Parameters
    ----------
    matter : SimbodyMatterSubsystem
        The matter subsystem of the constrained bodies.
    mp, mv, ma : int
        Numbers of holonomic, nonholonomic and acceleration-only equations.

    Register the bodies and mobilizers the constraint uses with ``add_constrained_body`` and
    ``add_constrained_mobilizer`` (in the constructor), then override, per family:

    - holonomic: ``realize_position_errors(state, mp, perr)``, ``realize_position_dot_errors``,
      ``realize_position_dot_dot_errors`` and ``apply_position_constraint_forces(state, mp,
      multipliers, body_forces_in_a, mobility_forces)``;
    - nonholonomic: ``realize_velocity_errors``, ``realize_velocity_dot_errors``,
      ``apply_velocity_constraint_forces``;
    - acceleration-only: ``realize_acceleration_errors``, ``apply_acceleration_constraint_forces``.

    The ``realize_*`` methods write into the array they are given. Every kinematic quantity the
    helpers return is measured and expressed in the *ancestor* frame A (the nearest common
    ancestor of the constrained bodies, as in Simbody; constrained mobilizers do not count, and a
    constraint without constrained bodies has Ground): treat A as if it were Ground. Each error must be the exact
    time derivative of the one before it, and the forces for multipliers ``lambda`` must be
    ``G^T lambda`` for ``G`` the derivative of the velocity-level errors with respect to u
    (``simtk.testing`` has a checker). ``body_forces_in_a`` is (ncb, 2, 3) indexed by
    constrained-body index, (torque, force) in A with the force at the body origin;
    ``mobility_forces`` is indexed through ``add_in_one_mobility_force``. The force methods must
    depend only on positions (they are evaluated once per change of q).
    """

    def __init__(self, matter: "SimbodyMatterSubsystem", mp: int = 0, mv: int = 0, ma: int = 0):
        self._matter = _matter_of(matter, "Constraint.Custom.Implementation")
        for name, n in (("mp", mp), ("mv", mv), ("ma", ma)):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise ValueError(f"Constraint.Custom.Implementation: {name} must be a count >= 0, got {n!r}")
        self._mp, self._mv, self._ma = int(mp), int(mv), int(ma)
        self._bodies: list[int] = []
        self._mobilizers: list[int] = []
        self._constraint: "Constraint.Custom | None" = None
        self._kin = None  # the kinematics being evaluated (set by the solver around each call)

    # ------------------------------------------------------------------ registration
    def get_matter_subsystem(self) -> "SimbodyMatterSubsystem":
        """The matter subsystem given at construction."""
        return self._matter

    def add_constrained_body(self, mobod: "MobilizedBody") -> int:
        """Register a body the constraint acts on; returns its ConstrainedBodyIndex."""
        b = _mobod(mobod, "add_constrained_body()")
        if b._matter is not self._matter:
            check_system(f"{type(self).__name__}.add_constrained_body()", b, self._matter._system, "body")
        if self._constraint is not None:
            raise RuntimeError("add_constrained_body(): register bodies before creating the Constraint.Custom")
        if b._index in self._bodies:
            return self._bodies.index(b._index)
        self._bodies.append(b._index)
        return len(self._bodies) - 1

    def add_constrained_mobilizer(self, mobod: "MobilizedBody") -> int:
        """Register a mobilizer whose q/u the constraint uses; returns its ConstrainedMobilizerIndex."""
        b = _mobod(mobod, "add_constrained_mobilizer()")
        if b._matter is not self._matter:
            check_system(f"{type(self).__name__}.add_constrained_mobilizer()", b, self._matter._system, "body")
        if self._constraint is not None:
            raise RuntimeError("add_constrained_mobilizer(): register mobilizers before creating the Constraint.Custom")
        if b._index in self._mobilizers:
            return self._mobilizers.index(b._index)
        self._mobilizers.append(b._index)
        return len(self._mobilizers) - 1

    def get_num_constrained_bodies(self) -> int:
        return len(self._bodies)

    def get_num_constrained_mobilizers(self) -> int:
        return len(self._mobilizers)

    # ------------------------------------------------------------------ overrides (defaults: nothing)
    def realize_position_errors(self, state: State, mp: int, perr: np.ndarray) -> None:
        """Write the mp position errors into ``perr``."""
        if mp:
            raise NotImplementedError(f"{type(self).__name__}: realize_position_errors is required when mp > 0")

    def realize_position_dot_errors(self, state: State, mp: int, pverr: np.ndarray) -> None:
        """Write d/dt of the position errors into ``pverr``."""
        if mp:
            raise NotImplementedError(f"{type(self).__name__}: realize_position_dot_errors is required when mp > 0")

    def realize_position_dot_dot_errors(self, state: State, mp: int, paerr: np.ndarray) -> None:
        """Write d2/dt2 of the position errors into ``paerr``."""
        if mp:
            raise NotImplementedError(
                f"{type(self).__name__}: realize_position_dot_dot_errors is required when mp > 0")

    def apply_position_constraint_forces(self, state: State, mp: int, multipliers: np.ndarray,
                                         body_forces_in_a: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Add the forces G_p^T multipliers of the holonomic equations."""
        if mp:
            raise NotImplementedError(
                f"{type(self).__name__}: apply_position_constraint_forces is required when mp > 0")

    def realize_velocity_errors(self, state: State, mv: int, verr: np.ndarray) -> None:
        """Write the mv velocity errors into ``verr``."""
        if mv:
            raise NotImplementedError(f"{type(self).__name__}: realize_velocity_errors is required when mv > 0")

    def realize_velocity_dot_errors(self, state: State, mv: int, vaerr: np.ndarray) -> None:
        """Write d/dt of the velocity errors into ``vaerr``."""
        if mv:
            raise NotImplementedError(f"{type(self).__name__}: realize_velocity_dot_errors is required when mv > 0")

    def apply_velocity_constraint_forces(self, state: State, mv: int, multipliers: np.ndarray,
                                         body_forces_in_a: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Add the forces G_v^T multipliers of the nonholonomic equations."""
        if mv:
            raise NotImplementedError(
                f"{type(self).__name__}: apply_velocity_constraint_forces is required when mv > 0")

    def realize_acceleration_errors(self, state: State, ma: int, aerr: np.ndarray) -> None:
        """Write the ma acceleration errors into ``aerr``."""
        if ma:
            raise NotImplementedError(f"{type(self).__name__}: realize_acceleration_errors is required when ma > 0")

    def apply_acceleration_constraint_forces(self, state: State, ma: int, multipliers: np.ndarray,
                                             body_forces_in_a: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Add the forces G_a^T multipliers of the acceleration-only equations."""
        if ma:
            raise NotImplementedError(
                f"{type(self).__name__}: apply_acceleration_constraint_forces is required when ma > 0")

    # optional hooks: realize_topology(state) ... realize_report(state)

    # ------------------------------------------------------------------ helpers (ancestor frame)
    # The user's methods call these once per equation per evaluation. Each takes the compiled common case first
    # (core/helpers.pxi: the kinematics' own arrays, a station and force given as float64 arrays or lists of
    # numbers, the force array it was handed), a few hundred nanoseconds; where its cheap checks fail, the numpy
    # path below it gives the same numbers to round-off, or raises the error naming what is wrong.
    def _k(self, state: State):
        kin = self._kin
        if kin is None:
            kin = kinematics_of_state(self._matter, state)
        return kin

    def _frame(self, state: State, cb, method: str | None = None) -> tuple:
        # (R_GB, p_GB, V_GB, A or None, b, a) for constrained body cb: the arrays being evaluated (the State's
        # outside an evaluation, without building a whole _Kinematics for them), the body and the ancestor, in
        # one call (each method call costs as much as the compiled helper). With ``method``, a missing A (below
        # Acceleration) is refused first, as the acceleration helpers always did.
        kin = self._kin
        R, p, V, A = (kin.R, kin.p, kin.V, kin.A) if kin is not None else kinematics_arrays(self._matter, state)
        if method is not None and A is None:
            raise StageTooLowError(f"{type(self).__name__}.{method}", ACCELERATION, int(POSITION))
        bodies = self._bodies
        b = bodies[cb] if type(cb) is int and 0 <= cb < len(bodies) else self._cb(cb)
        c = self._constraint
        return R, p, V, A, b, (c._ancestor if c is not None else 0)

    def _cb(self, cb: int) -> int:
        if not 0 <= int(cb) < len(self._bodies):
            raise IndexError(f"{type(self).__name__}: no constrained body {cb} (it has {len(self._bodies)})")
        return self._bodies[int(cb)]

    def _cm(self, cm: int) -> int:
        if not 0 <= int(cm) < len(self._mobilizers):
            raise IndexError(f"{type(self).__name__}: no constrained mobilizer {cm} (it has {len(self._mobilizers)})")
        return self._mobilizers[int(cm)]

    def _cm_name(self, cm: int, b: int) -> str:
        return f"{type(self).__name__}: constrained mobilizer {cm} ({self._matter._bodies[b].get_absolute_path()!r})"

    def _ancestor(self) -> int:
        return self._constraint._ancestor if self._constraint is not None else 0

    def _station_arg(self, station, method: str) -> np.ndarray:
        # the numpy path's station: any numbers of shape (3,) (non-finite ones pass, as they always have: the
        # errors or forces they make are refused where the solver reads them)
        s = np.asarray(station, dtype=float)
        if s.shape != (3,):
            raise ValueError(f"{type(self).__name__}.{method}: station: expected a 3-vector, got shape {s.shape}")
        return s

    def get_ancestor_mobilized_body(self) -> "MobilizedBody":
        """The ancestor body A in which the helpers measure."""
        return self._matter.get_mobilized_body(self._ancestor())

    def get_body_transform(self, state: State, cb: int, _ignored=None) -> Transform:
        """X_AB of constrained body ``cb`` (Position)."""
        R, p, V, A, b, a = self._frame(state, cb)
        pose = _body_pose(R, p, b, a)
        if pose is not None:  # fresh read-only R_AB and p_AB
            return Transform._from_readonly(*pose)
        R_AG = R[a].T
        R_AB = R_AG @ R[b]
        return Transform(Rotation._trusted(R_AB), R_AG @ (p[b] - p[a]))

    def get_body_rotation(self, state: State, cb: int, _ignored=None) -> Rotation:
        """R_AB of constrained body ``cb`` (Position)."""
        return self.get_body_transform(state, cb).R

    def get_body_origin_location(self, state: State, cb: int, _ignored=None) -> np.ndarray:
        """p_AB, the body origin in A, (3,) (Position). A third argument is accepted and ignored."""
        R, p, V, A, b, a = self._frame(state, cb)
        out = _station(R, p, None, None, b, a, None, 0)
        return out if out is not None else R[a].T @ (p[b] - p[a])

    def get_station_location(self, state: State, cb: int, station) -> np.ndarray:
        """p_AS for a station p_BS (3,) of constrained body ``cb``: measured from A's origin and expressed in A, a
        new (3,) array (Simbody's ``findStationLocation``; Position)."""
        R, p, V, A, b, a = self._frame(state, cb)
        out = _station(R, p, None, None, b, a, station, 0)
        if out is None:
            s = self._station_arg(station, "get_station_location()")
            out = R[a].T @ (p[b] + R[b] @ s - p[a])
        return out

    def get_station_velocity(self, state: State, cb: int, station) -> np.ndarray:
        """v_AS, the velocity of station p_BS (3,) of constrained body ``cb`` measured and expressed in A (Velocity).

        Simbody's ``findStationVelocity``: the time derivative taken in A of ``get_station_location``,
        ``R_AG ((v_GS - v_GA) - w_GA x (p_GS - p_GA))`` with ``v_GS = v_GB + w_GB x (R_GB p_BS)``; with A
        Ground it is ``MobilizedBody.find_station_velocity_in_ground``.

        Parameters
        ----------
        state : State
            The State being evaluated (realized to Velocity outside an evaluation).
        cb : int
            A ConstrainedBodyIndex (from ``add_constrained_body``).
        station : array_like, shape (3,)
            p_BS, the station in the body's frame.

        Returns
        -------
        numpy.ndarray, shape (3,)
            v_AS, a new array.
        """
        R, p, V, A, b, a = self._frame(state, cb)
        out = _station(R, p, V, None, b, a, station, 1)
        if out is None:
            out = _station_motion(R, p, V, A, b, a, self._station_arg(station, "get_station_velocity()"), 1)
        return out

    def get_station_acceleration(self, state: State, cb: int, station) -> np.ndarray:
        """a_AS, the acceleration of station p_BS (3,) of constrained body ``cb`` measured and expressed in A
        (Acceleration).

        Simbody's ``findStationAcceleration``: the second time derivative taken in A of ``get_station_location``,
        ``R_AG ((a_GS - a_GA) - b_GA x r - 2 w_GA x (v_GS - v_GA) + w_GA x (w_GA x r))`` with
        ``r = p_GS - p_GA``; with A Ground it is ``MobilizedBody.find_station_acceleration_in_ground``. Inside
        the acceleration-level methods it is read at the accelerations being evaluated, as
        ``get_body_acceleration`` is.

        Parameters
        ----------
        state : State
            The State being evaluated (realized to Acceleration outside an evaluation).
        cb : int
            A ConstrainedBodyIndex (from ``add_constrained_body``).
        station : array_like, shape (3,)
            p_BS, the station in the body's frame.

        Returns
        -------
        numpy.ndarray, shape (3,)
            a_AS, a new array.
        """
        R, p, V, A, b, a = self._frame(state, cb, "get_station_acceleration()")
        out = _station(R, p, V, A, b, a, station, 2)
        if out is None:
            out = _station_motion(R, p, V, A, b, a, self._station_arg(station, "get_station_acceleration()"), 2)
        return out

    def get_body_velocity(self, state: State, cb: int, _ignored=None) -> np.ndarray:
        """V_AB = (w_AB, v_AB), (2, 3): measured and expressed in A (Velocity)."""
        R, p, V, A, b, a = self._frame(state, cb)
        out = _body_motion(R, p, V, None, b, a, 1)
        if out is not None:
            return out
        if a == 0:
            return V[b].copy()
        R_AG = R[a].T
        w_a, v_a = V[a]
        r = p[b] - p[a]
        out = np.empty((2, 3))
        out[0] = R_AG @ (V[b, 0] - w_a)
        out[1] = R_AG @ (V[b, 1] - v_a - np.cross(w_a, r))
        return out

    def get_body_acceleration(self, state: State, cb: int, _ignored=None) -> np.ndarray:
        """A_AB = (b_AB, a_AB), (2, 3): measured and expressed in A (Acceleration)."""
        R, p, V, A, b, a = self._frame(state, cb, "get_body_acceleration()")
        out = _body_motion(R, p, V, A, b, a, 2)
        if out is not None:
            return out
        if a == 0:
            return A[b].copy()
        R_AG = R[a].T
        w_a, v_a = V[a]
        al_a, a_a = A[a]
        w_b, v_b = V[b]
        r = p[b] - p[a]
        out = np.empty((2, 3))
        # Derivatives taken in A: d^A/dt x = d^G/dt x - w_GA x x.
        out[0] = R_AG @ (A[b, 0] - al_a - np.cross(w_a, w_b))
        dv = v_b - v_a
        out[1] = R_AG @ (A[b, 1] - a_a - np.cross(al_a, r) - 2.0 * np.cross(w_a, dv)
                         + np.cross(w_a, np.cross(w_a, r)))
        return out

    def _q_index(self, state, cm: int, which: int) -> int:
        b = self._cm(cm)
        q0, n = self._matter._q_range(state, b)
        if not 0 <= which < n:
            raise IndexError(f"{self._cm_name(cm, b)} has no q[{which}] (it has {n})")
        return q0 + which

    def _u_index(self, state, cm: int, which: int) -> int:
        b = self._cm(cm)
        u0, n = self._matter._u_range(state, b)
        if not 0 <= which < n:
            raise IndexError(f"{self._cm_name(cm, b)} has no u[{which}] (it has {n})")
        return u0 + which

    def get_one_q(self, state: State, cm: int, which: int) -> float:
        """q[which] of constrained mobilizer ``cm``."""
        return float(self._k(state).q[self._q_index(state, cm, which)])

    def get_one_qdot(self, state: State, cm: int, which: int) -> float:
        """qdot[which] of constrained mobilizer ``cm`` (Velocity)."""
        return float(self._k(state).qdot[self._q_index(state, cm, which)])

    def get_one_u(self, state: State, cm: int, which: int) -> float:
        """u[which] of constrained mobilizer ``cm`` (Velocity)."""
        return float(self._k(state).u[self._u_index(state, cm, which)])

    def get_one_udot(self, state: State, cm: int, which: int) -> float:
        """udot[which] of constrained mobilizer ``cm`` (Acceleration)."""
        kin = self._k(state)
        if kin.udot is None:
            raise StageTooLowError(f"{type(self).__name__}.get_one_udot()", ACCELERATION, int(VELOCITY))
        return float(kin.udot[self._u_index(state, cm, which)])

    def get_one_qdotdot(self, state: State, cm: int, which: int) -> float:
        """qdotdot[which] of constrained mobilizer ``cm`` (Acceleration)."""
        kin = self._k(state)
        if kin.qdotdot is None:
            raise StageTooLowError(f"{type(self).__name__}.get_one_qdotdot()", ACCELERATION, int(VELOCITY))
        return float(kin.qdotdot[self._q_index(state, cm, which)])

    def add_in_station_force(self, state: State, cb: int, station, force, body_forces_in_a: np.ndarray) -> None:
        """Add ``force`` (3,) in A applied at ``station`` p_BS of constrained body ``cb``."""
        R, p, V, A, b, a = self._frame(state, cb)
        if _add_station_force(R, b, a, station, force, body_forces_in_a, cb):
            return
        r_A = R[a].T @ (R[b] @ self._station_arg(station, "add_in_station_force()"))
        f = np.asarray(force, dtype=float)
        body_forces_in_a[cb, 0] += np.cross(r_A, f)
        body_forces_in_a[cb, 1] += f

    def add_in_body_torque(self, state: State, cb: int, torque, body_forces_in_a: np.ndarray) -> None:
        """Add ``torque`` (3,) in A to constrained body ``cb``."""
        self._cb(cb)
        if not _add_to_row(body_forces_in_a, cb, 0, torque):
            body_forces_in_a[cb, 0] += np.asarray(torque, dtype=float)

    def add_in_one_mobility_force(self, state: State, cm: int, which_u: int, f: float,
                                  mobility_forces: np.ndarray) -> None:
        """Add generalized force ``f`` on u[which_u] of constrained mobilizer ``cm``."""
        b = self._cm(cm)
        if _add_mobility_force(self._matter, state, b, which_u, f, mobility_forces, self._mobilizers[:int(cm)]):
            return
        u0, n = self._matter._u_range(state, b)
        if not 0 <= which_u < n:
            raise IndexError(f"{self._cm_name(cm, b)} has no u[{which_u}] (it has {n})")
        off = sum(self._matter._u_range(state, m)[1] for m in self._mobilizers[:cm])
        mobility_forces[off + which_u] += float(f)


class _Custom(Constraint):
    """A constraint whose equations are written in Python (seed §3.2).

    Parameters
    ----------
    implementation : Constraint.Custom.Implementation
        The object that computes the errors and forces.
    """

    Implementation = _CustomImplementation
    _bulk = False
    _forces_may_disagree = True  # user force routines: _solver evaluates the errors at the obtained udot

    def __init__(self, implementation: _CustomImplementation):
        if not isinstance(implementation, _CustomImplementation):
            raise TypeError(f"Constraint.Custom: expected a Constraint.Custom.Implementation, got "
                            f"{type(implementation).__name__}")
        if implementation._constraint is not None:
            raise ValueError("Constraint.Custom: this implementation already belongs to another constraint")
        impl = implementation
        if not impl._bodies and not impl._mobilizers:
            raise ValueError(f"Constraint.Custom({type(impl).__name__}): register at least one constrained body "
                             "or mobilizer before creating the constraint")
        self._impl = impl
        self._mp, self._mv, self._ma = impl._mp, impl._mv, impl._ma
        matter = impl._matter
        # As in Simbody, the ancestor is that of the constrained bodies (Ground when there are none).
        self._ancestor = _common_ancestor(matter, impl._bodies) if impl._bodies else 0
        impl._constraint = self
        super().__init__(matter)

    def get_implementation(self) -> _CustomImplementation:
        """The implementation object."""
        return self._impl

    def _constrained_body_indices(self) -> list[int]:
        return list(self._impl._bodies)

    def _constrained_mobilizer_indices(self) -> list[int]:
        return list(self._impl._mobilizers)

    def _realize_hook(self, state: State, stage: str) -> None:
        fn = getattr(self._impl, f"realize_{stage}", None)
        if fn is not None:
            fn(state)

    # ------------------------------------------------------------------ evaluation (one element)
    @classmethod
    def _pack(cls, elements, plan, state):
        (c,) = elements
        return c

    @staticmethod
    def _call(c, kin, fn, n: int) -> np.ndarray:
        out = np.zeros(n)
        if n:
            c._impl._kin = kin
            try:
                fn(kin.state, n, out)
            finally:
                c._impl._kin = None
            if not np.isfinite(out).all():
                raise FloatingPointError(f"{c!r} ({type(c._impl).__name__}): {fn.__name__} gave non-finite "
                                         f"errors {out}")
        return out

    @classmethod
    def _position_errors(cls, c, kin):
        return cls._call(c, kin, c._impl.realize_position_errors, c._mp)[None, :]

    @classmethod
    def _velocity_errors(cls, c, kin):
        impl = c._impl
        return np.concatenate([cls._call(c, kin, impl.realize_position_dot_errors, c._mp),
                               cls._call(c, kin, impl.realize_velocity_errors, c._mv)])[None, :]

    @classmethod
    def _acceleration_errors(cls, c, kin):
        impl = c._impl
        return np.concatenate([cls._call(c, kin, impl.realize_position_dot_dot_errors, c._mp),
                               cls._call(c, kin, impl.realize_velocity_dot_errors, c._mv),
                               cls._call(c, kin, impl.realize_acceleration_errors, c._ma)])[None, :]

    @classmethod
    def _force_map(cls, c, kin, eq_rows, out):
        impl = c._impl
        state = kin.state
        matter = c._matter
        a = c._ancestor
        # The errors are measured relative to A, so the force set must not push A's rigid motion:
        # whatever net wrench the user's forces leave is taken by A itself (an extra entry on A).
        bodies = np.array(impl._bodies + ([a] if a != 0 else []), dtype=np.intp)
        ncb = len(impl._bodies)
        u_index = np.concatenate([np.arange(*_u_span(matter, state, b), dtype=np.intp) for b in impl._mobilizers]) \
            if impl._mobilizers else np.zeros(0, dtype=np.intp)
        R_GA = kin.R[a]
        r = kin.p[bodies[:ncb]] - kin.p[a]
        stations = np.zeros((len(bodies), 3))
        eqs = eq_rows[0]
        k = 0
        for n, fn in ((c._mp, impl.apply_position_constraint_forces), (c._mv, impl.apply_velocity_constraint_forces),
                      (c._ma, impl.apply_acceleration_constraint_forces)):
            for j in range(n):
                lam = np.zeros(n)
                lam[j] = 1.0
                F_A = np.zeros((ncb, 2, 3))
                f = np.zeros(len(u_index))
                impl._kin = kin
                try:
                    fn(state, n, lam, F_A, f)
                finally:
                    impl._kin = None
                if not (np.isfinite(F_A).all() and np.isfinite(f).all()):
                    raise FloatingPointError(f"{c!r} ({type(impl).__name__}): {fn.__name__} gave non-finite forces")
                F = np.zeros((len(bodies), 2, 3))
                F[:ncb] = np.einsum("ij,bkj->bki", R_GA, F_A)
                if a != 0:
                    F[ncb, 0] = -(F[:ncb, 0].sum(axis=0) + np.cross(r, F[:ncb, 1]).sum(axis=0))
                    F[ncb, 1] = -F[:ncb, 1].sum(axis=0)
                eq = eqs[k]
                if len(bodies):
                    out.add_rows([eq], bodies[None], stations[None], F[None])
                if len(f):
                    out.add_mobility_forces(np.full(len(f), eq), u_index, f)
                k += 1
        return None


def _station_motion(R, p, V, A, b: int, a: int, s: np.ndarray, order: int) -> np.ndarray:
    """v_AS (order 1) or a_AS (2) of station ``s`` of body ``b`` in the ancestor ``a``, in numpy: the path of
    ``get_station_velocity`` and ``get_station_acceleration`` for a station the compiled one does not take."""
    r_b = R[b] @ s
    w_b, v_b = V[b]
    out = v_b + np.cross(w_b, r_b)  # v_GS
    if order == 2:
        al_b, a_b = A[b]
        v_S, out = out, a_b + np.cross(al_b, r_b) + np.cross(w_b, np.cross(w_b, r_b))  # a_GS
    if a == 0:
        return out
    R_AG = R[a].T
    w_a, v_a = V[a]
    r = p[b] + r_b - p[a]
    if order == 1:
        return R_AG @ (out - v_a - np.cross(w_a, r))
    al_a, a_a = A[a]
    return R_AG @ (out - a_a - np.cross(al_a, r) - 2.0 * np.cross(w_a, v_S - v_a) + np.cross(w_a, np.cross(w_a, r)))


def _u_span(matter, state, b: int) -> tuple[int, int]:
    u0, n = matter._u_range(state, b)
    return u0, u0 + n


def _common_ancestor(matter, bodies: Sequence[int]) -> int:
    """The nearest common ancestor of ``bodies`` in the tree (0, Ground, if any is Ground)."""
    def path(b):
        out = []
        while True:
            out.append(b)
            if b == 0:
                return out
            b = matter._bodies[b]._parent._index
    common = None
    for b in bodies:
        p = path(b)
        common = p if common is None else [x for x in common if x in set(p)]
    return common[0] if common else 0


_Custom.__name__ = "Custom"
_Custom.__qualname__ = "Constraint.Custom"
_CustomImplementation.__qualname__ = "Constraint.Custom.Implementation"
Constraint.Custom = _Custom
