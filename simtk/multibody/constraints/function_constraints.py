"""The built-in constraints a Function defines (seed §3.3): CoordinateCoupler, SpeedCoupler and
PrescribedMotion, coordinate-level kinds evaluated through class methods as in ``builtin_constraints``.

Each keeps the Function and the coordinates it was given, readable through public getters
(``get_function``, ``get_coord_bodies``, ...) that return what its constructor took.

When their functions are built-in families (``FunctionTableBuilder.try_add`` compiles them) the compiled
time loop solves these constraints itself (``core/loop_couplers.pxi``) with the operations written here,
in the same order: the sums below run from the first term up (`_dot`, `_quadratic`), not through BLAS,
whose summation order is the library's own.
"""
from __future__ import annotations

import numpy as np

from ...common._ownership import check_system
from ...common.function import Function
from ..tree.mobilized_body import MobilizedBody
from .builtin_constraints import _coord_mobility_forces, _index, _register
from .constraint import Constraint, _matter_of

__all__: list[str] = []


def _bodies_arg(matter, bodies, what: str) -> list[int]:
    out = []
    for b in bodies:
        if isinstance(b, MobilizedBody):
            if b._matter is not matter:
                check_system(what[:-len(": body")] if what.endswith(": body") else what, b, matter._system, "body")
            out.append(b._index)
        else:
            i = _index(b, what)
            if i >= matter.get_num_bodies():
                raise IndexError(f"{what}: no mobilized body {i} (there are {matter.get_num_bodies()})")
            out.append(i)
    return out


def _bodies_of(c: Constraint, indices: list[int]) -> list[MobilizedBody]:
    # The constructors keep body indices (they accept bodies or indices); the getters give bodies.
    matter = c.get_matter_subsystem()
    return [matter.get_mobilized_body(i) for i in indices]


def _dot(a, b) -> float:
    """sum_k a_k b_k, summed from k = 0 up starting at 0.0 (as the compiled loop sums it)."""
    s = 0.0
    for x, y in zip(a, b):
        s = s + x * y
    return s


def _quadratic(xd, H) -> float:
    """xd^T H xd as (xd H) xd: sum_j (sum_i xd_i H_ij) xd_j, each sum from the first term up."""
    n = len(xd)
    s = 0.0
    for j in range(n):
        v = 0.0
        for i in range(n):
            v = v + xd[i] * H[i][j]
        s = s + v * xd[j]
    return s


def _function_arg(f, n_args: int, order: int, what: str) -> Function:
    if not isinstance(f, Function):
        raise TypeError(f"{what}: expected a Function, got {type(f).__name__}")
    if f.get_argument_size() != n_args:
        raise ValueError(f"{what}: the function takes {f.get_argument_size()} arguments, but {n_args} are given")
    if f.get_max_derivative_order() < order:
        raise ValueError(f"{what}: the function must have derivatives up to order {order}, it has "
                         f"{f.get_max_derivative_order()}")
    return f


@_register
class CoordinateCoupler(Constraint):
    """One holonomic equation f(q_sel) = 0 on selected coordinates (seed §3.3).

    ``coord_bodies`` (MobilizedBody objects or their indices) and ``coord_indices`` pick the
    arguments of ``function`` in order; the function needs derivatives up to order 2.
    """

    _mp = 1
    _velocity_from_g = True

    def __init__(self, matter, function, coord_bodies, coord_indices):
        matter = _matter_of(matter, "Constraint.CoordinateCoupler")
        self._bodies = _bodies_arg(matter, coord_bodies, "Constraint.CoordinateCoupler: coord_bodies")
        self._which = [_index(i, "Constraint.CoordinateCoupler: coord_indices") for i in coord_indices]
        if len(self._bodies) != len(self._which):
            raise ValueError("Constraint.CoordinateCoupler: coord_bodies and coord_indices differ in length")
        self._f = _function_arg(function, len(self._bodies), 2, "Constraint.CoordinateCoupler")
        super().__init__(matter)

    def get_function(self) -> Function:
        """The function f the constructor took (the same object)."""
        return self._f

    def get_coord_bodies(self) -> list[MobilizedBody]:
        """The bodies whose coordinates are f's arguments, in order (bodies given by index included)."""
        return _bodies_of(self, self._bodies)

    def get_coord_indices(self) -> list[int]:
        """Which coordinate of each of `get_coord_bodies` is passed to f, in order."""
        return list(self._which)

    def _constrained_mobilizer_indices(self):
        return list(dict.fromkeys(self._bodies))

    @classmethod
    def _pack(cls, elements, plan, state):
        return [(c._f, np.array([plan.add_coord(b, w, c) for b, w in zip(c._bodies, c._which)], dtype=np.intp))
                for c in elements]

    @staticmethod
    def _grad(f, x):
        return np.array([f.calc_derivative_unchecked((i,), x) for i in range(len(x))])

    @classmethod
    def _position_errors(cls, P, kin):
        return np.array([[f.calc_value_unchecked(kin.q[kin.coord_q[c]])] for f, c in P])

    @classmethod
    def _velocity_errors(cls, P, kin):
        out = []
        for f, c in P:
            x = kin.q[kin.coord_q[c]]
            out.append([_dot(cls._grad(f, x).tolist(), kin.qdot[kin.coord_q[c]].tolist())])
        return np.array(out)

    @classmethod
    def _acceleration_errors(cls, P, kin):
        out = []
        for f, c in P:
            qi = kin.coord_q[c]
            x, xd = kin.q[qi], kin.qdot[qi]
            n = len(x)
            H = [[f.calc_derivative_unchecked((i, j), x) for j in range(n)] for i in range(n)]
            out.append([_dot(cls._grad(f, x).tolist(), kin.qdotdot[qi].tolist()) + _quadratic(xd.tolist(), H)])
        return np.array(out)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        for (f, c), e in zip(P, eq[:, 0]):
            g = cls._grad(f, kin.q[kin.coord_q[c]])
            _coord_mobility_forces(kin, c[None, :], g[None, :], np.array([e]), out)


@_register
class SpeedCoupler(Constraint):
    """One nonholonomic equation f(u_sel, q_sel) = 0: a function of selected speeds (and,
    optionally, coordinates, given after the speeds) that the speeds must satisfy (seed §3.3).

    The coordinates are held fixed when the equation is enforced; f needs first derivatives.
    """

    _mv = 1
    _force_map_uses_u = True  # G = df/du at the current u

    def __init__(self, matter, function, speed_bodies, speed_indices, coord_bodies=(), coord_indices=()):
        matter = _matter_of(matter, "Constraint.SpeedCoupler")
        self._ubodies = _bodies_arg(matter, speed_bodies, "Constraint.SpeedCoupler: speed_bodies")
        self._uwhich = [_index(i, "Constraint.SpeedCoupler: speed_indices") for i in speed_indices]
        self._qbodies = _bodies_arg(matter, coord_bodies, "Constraint.SpeedCoupler: coord_bodies")
        self._qwhich = [_index(i, "Constraint.SpeedCoupler: coord_indices") for i in coord_indices]
        if len(self._ubodies) != len(self._uwhich) or len(self._qbodies) != len(self._qwhich):
            raise ValueError("Constraint.SpeedCoupler: bodies and indices differ in length")
        self._f = _function_arg(function, len(self._ubodies) + len(self._qbodies), 1, "Constraint.SpeedCoupler")
        super().__init__(matter)

    def get_function(self) -> Function:
        """The function f the constructor took (the same object)."""
        return self._f

    def get_speed_bodies(self) -> list[MobilizedBody]:
        """The bodies whose speeds are f's first arguments, in order."""
        return _bodies_of(self, self._ubodies)

    def get_speed_indices(self) -> list[int]:
        """Which speed of each of `get_speed_bodies` is passed to f."""
        return list(self._uwhich)

    def get_coord_bodies(self) -> list[MobilizedBody]:
        """The bodies whose coordinates are f's last arguments, in order (empty if none)."""
        return _bodies_of(self, self._qbodies)

    def get_coord_indices(self) -> list[int]:
        """Which coordinate of each of `get_coord_bodies` is passed to f."""
        return list(self._qwhich)

    def _constrained_mobilizer_indices(self):
        return list(dict.fromkeys(self._ubodies + self._qbodies))

    @classmethod
    def _pack(cls, elements, plan, state):
        out = []
        for c in elements:
            ui = np.array([plan.u_index(b, w, c) for b, w in zip(c._ubodies, c._uwhich)], dtype=np.intp)
            qc = np.array([plan.add_coord(b, w, c) for b, w in zip(c._qbodies, c._qwhich)], dtype=np.intp)
            out.append((c._f, ui, qc))
        return out

    @staticmethod
    def _x(kin, ui, qc):
        return np.concatenate([kin.u[ui], kin.q[kin.coord_q[qc]]])

    @classmethod
    def _position_errors(cls, P, kin):
        return np.zeros((len(P), 0))

    @classmethod
    def _velocity_errors(cls, P, kin):
        return np.array([[f.calc_value_unchecked(cls._x(kin, ui, qc))] for f, ui, qc in P])

    @classmethod
    def _acceleration_errors(cls, P, kin):
        out = []
        for f, ui, qc in P:
            x = cls._x(kin, ui, qc)
            g = [f.calc_derivative_unchecked((i,), x) for i in range(len(x))]
            nu = len(ui)
            out.append([_dot(g[:nu], kin.udot[ui].tolist()) + _dot(g[nu:], kin.qdot[kin.coord_q[qc]].tolist())])
        return np.array(out)

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        for (f, ui, qc), e in zip(P, eq[:, 0]):
            x = cls._x(kin, ui, qc)
            g = np.array([f.calc_derivative_unchecked((i,), x) for i in range(len(ui))])
            out.add_mobility_forces(np.full(len(ui), e), ui, g)


@_register
class PrescribedMotion(Constraint):
    """One holonomic equation q = f(t) for coordinate ``coord_index`` of ``body`` (seed §3.3).

    ``function`` takes one argument (time) and needs derivatives up to order 2. Unlike the
    couplers, this constraint does work: ``calc_power`` reports it.
    """

    _mp = 1

    def __init__(self, matter, function, body, coord_index: int):
        matter = _matter_of(matter, "Constraint.PrescribedMotion")
        (self._b,) = _bodies_arg(matter, [body], "Constraint.PrescribedMotion: body")
        self._which = _index(coord_index, "Constraint.PrescribedMotion: coord_index")
        self._f = _function_arg(function, 1, 2, "Constraint.PrescribedMotion")
        super().__init__(matter)

    def get_function(self) -> Function:
        """The function f(t) the constructor took (the same object)."""
        return self._f

    def get_body(self) -> MobilizedBody:
        """The body whose coordinate is prescribed."""
        return _bodies_of(self, [self._b])[0]

    def get_coord_index(self) -> int:
        """Which coordinate of `get_body` is prescribed."""
        return self._which

    def _constrained_mobilizer_indices(self):
        return [self._b]

    @classmethod
    def _pack(cls, elements, plan, state):
        cid = np.array([plan.add_coord(c._b, c._which, c) for c in elements])
        return dict(cid=cid, q=plan.coord_q[cid], f=[c._f for c in elements])

    @staticmethod
    def _target(P, kin, order: int):
        t = np.array([kin.t])
        if order == 0:
            return np.array([f.calc_value_unchecked(t) for f in P["f"]])
        return np.array([f.calc_derivative_unchecked((0,) * order, t) for f in P["f"]])

    @classmethod
    def _position_errors(cls, P, kin):
        return (kin.q[P["q"]] - cls._target(P, kin, 0))[:, None]

    @classmethod
    def _velocity_errors(cls, P, kin):
        return (kin.qdot[P["q"]] - cls._target(P, kin, 1))[:, None]

    @classmethod
    def _acceleration_errors(cls, P, kin):
        return (kin.qdotdot[P["q"]] - cls._target(P, kin, 2))[:, None]

    @classmethod
    def _force_map(cls, P, kin, eq, out):
        _coord_mobility_forces(kin, P["cid"][:, None], np.ones((len(P["cid"]), 1)), eq[:, 0], out)
