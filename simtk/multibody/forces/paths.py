"""Geometry paths (OpenSim's GeometryPath) and the forces of a tension along them.

A `GeometryPath` is a chain of points on bodies: `PathPoint` (fixed in its body),
`ConditionalPathPoint` (part of the path only while a coordinate is in a range) and
`MovingPathPoint` (its location in its body a Function of a coordinate). Its length L is the sum of
the straight segments between consecutive active points, and with ``wraps`` (`PathWrap` over a
`WrapCylinder`, `WrapSphere`, `WrapEllipsoid` or `WrapTorus`, see ``path_wrap``) the lengths on the surfaces it
wraps over. `Force.PathSpring` (OpenSim's PathSpring law) and `Force.PathActuator` (``optimal_force``
times a control) apply a tension T along it.

Both are the compiled force kind ``GeometryPath`` (``core/paths.pxi``): one row per point, the
moving points' functions in a function table of the set's own, so that a model with paths keeps the
compiled time loop and the batch kernels. Python runs once per element at Instance, packing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ... import _core
from ...common.function import Function
from ...common.function._compiled import FunctionTableBuilder
from ...common.output import output
from ...common.stage import Stage
from ...common.state import State
from ..tree.mobilized_body import MobilizedBody
from ._inputs import _InputPacked
from .builtin_forces import _body, _element, _mobility, _real
from .force import Force, _Packed
from .path_wrap import PathWrap

__all__ = ["GeometryPath", "PathPoint", "ConditionalPathPoint", "MovingPathPoint"]

_K = _core._k
_CODES = _K.PATH_CODES
_NO_CLAMP = (-math.inf, math.inf)


def _coordinate(c: Any, what: str) -> tuple[MobilizedBody, int]:
    """``c`` checked to be a coordinate: (mobod, which_q)."""
    if (not isinstance(c, tuple) or len(c) != 2 or not isinstance(c[0], MobilizedBody)
            or isinstance(c[1], bool) or not isinstance(c[1], (int, np.integer)) or c[1] < 0):
        raise TypeError(f"{what}: expected a coordinate (mobod, which_q), got {c!r}")
    return c[0], int(c[1])


@dataclass(frozen=True)
class PathPoint:
    """A point fixed at ``location`` (3,) in ``body``'s frame."""

    body: MobilizedBody
    location: Any

    def _active_range(self) -> tuple[float, float] | None:
        return None


@dataclass(frozen=True)
class ConditionalPathPoint(PathPoint):
    """A point fixed in ``body``, part of the path while ``coordinate`` (mobod, which_q) is in
    [``lo``, ``hi``] (OpenSim's ConditionalPathPoint; its loader widens the range by OpenSim's 1e-5)."""

    coordinate: Any = None
    lo: float = 0.0
    hi: float = 0.0


@dataclass(frozen=True)
class MovingPathPoint:
    """A point whose location in ``body`` is (x(q), y(q), z(q)), each a Function of one argument or a
    constant, with q ``coordinate`` (mobod, which_q). With ``coordinate_range`` (lo, hi) the location
    is taken at q clamped to it, and its rate f'(q) qdot at q itself, as OpenSim's MovingPathPoint
    does (getLocation, getVelocity): beyond the range the point stays where the range ends, while
    the lengthening speed and the gearing force still see it move (OpenSim's convention, kept so
    that lengths, speeds and moment arms agree with OpenSim's everywhere)."""

    body: MobilizedBody
    x: Any
    y: Any
    z: Any
    coordinate: Any = None
    coordinate_range: Any = None


class GeometryPath:
    """A path of points on bodies of ``matter``, from the first point to the last.

    Parameters
    ----------
    matter : SimbodyMatterSubsystem
        The matter subsystem whose bodies carry the points.
    points : sequence of PathPoint, ConditionalPathPoint, MovingPathPoint
        At least two, in path order.
    name : str
        Named in errors.
    wraps : sequence of PathWrap
        The objects the path wraps over, in OpenSim's PathWrapSet order (see ``path_wrap``).

    Raises
    ------
    ValueError, TypeError
        Fewer than two points, a point or wrap object on a body of another System, a conditional
        range with lo > hi, a moving point's function that is not a compiled built-in of one
        argument, a wrap's range outside the points.
    """

    def __init__(self, matter, points: Sequence[Any], name: str = "path", wraps: Sequence[PathWrap] = ()):
        self.name = str(name)
        where = f"GeometryPath {self.name!r}"
        from ..matter import SimbodyMatterSubsystem
        if not isinstance(matter, SimbodyMatterSubsystem):
            raise TypeError(f"{where}: expected a SimbodyMatterSubsystem, got {type(matter).__name__}")
        points = list(points)
        if len(points) < 2:
            raise ValueError(f"{where}: a path needs at least two points, got {len(points)}")
        system = matter._system
        rows = []
        functions: list[Function] = []
        for k, p in enumerate(points):
            what = f"{where}: point {k}"
            if not isinstance(p, (PathPoint, MovingPathPoint)):
                raise TypeError(f"{what}: expected a PathPoint, ConditionalPathPoint or MovingPathPoint, "
                                f"got {type(p).__name__}")
            body = _body(p.body, f"{what}: body", system=system)
            if isinstance(p, MovingPathPoint):
                mobod, which = _coordinate(p.coordinate, f"{what}: coordinate")
                _body(mobod, f"{what}: coordinate", system=system)
                lo, hi = _NO_CLAMP if p.coordinate_range is None else (float(p.coordinate_range[0]),
                                                                       float(p.coordinate_range[1]))
                if not lo <= hi:
                    raise ValueError(f"{what}: coordinate_range {p.coordinate_range!r} has lo > hi")
                comps = []
                for axis, f in zip("xyz", (p.x, p.y, p.z)):
                    if isinstance(f, Function):
                        if f.get_argument_size() != 1:
                            raise ValueError(f"{what}: its {axis} function takes {f.get_argument_size()} "
                                             "arguments; expected one (the coordinate)")
                        if FunctionTableBuilder().try_add(f) is None:
                            raise TypeError(f"{what}: its {axis} function ({type(f).__name__}) has no compiled "
                                            "form; use a built-in Function family")
                        functions.append(f)
                        comps.append(f)
                    else:
                        comps.append(_real(f, f"{what}: {axis}"))
                rows.append(("moving", body, comps, (mobod, which), (lo, hi)))
            else:
                loc = np.asarray(p.location, dtype=np.float64)
                if loc.shape != (3,) or not np.isfinite(loc).all():
                    raise ValueError(f"{what}: location: expected a finite 3-vector, got {p.location!r}")
                if isinstance(p, ConditionalPathPoint):
                    mobod, which = _coordinate(p.coordinate, f"{what}: coordinate")
                    _body(mobod, f"{what}: coordinate", system=system)
                    lo, hi = _real(p.lo, f"{what}: lo"), _real(p.hi, f"{what}: hi")
                    if lo > hi:
                        raise ValueError(f"{what}: its range [{lo}, {hi}] has lo > hi")
                    rows.append(("conditional", body, loc.copy(), (mobod, which), (lo, hi)))
                else:
                    rows.append(("fixed", body, loc.copy(), None, None))
        wrap_rows = []
        for k, pw in enumerate(wraps):
            what = f"{where}: wrap {k}"
            if not isinstance(pw, PathWrap):
                raise TypeError(f"{what}: expected a PathWrap, got {type(pw).__name__}")
            a, b = pw._resolved(len(points), f"{what} ({getattr(pw.wrap, 'name', '?')!r})")
            _body(pw.wrap.body, f"{what} ({pw.wrap.name!r}): body", system=system)
            wrap_rows.append((pw.wrap, a, b, _K.PATH_WRAP_METHODS[pw.method]))
        limit = _K.PATH_WRAP_MAX_POINTS
        if wrap_rows and len(points) + 2 * len(wrap_rows) > limit:
            raise ValueError(f"{where}: a wrapped path holds at most {limit} points and tangent points; it has "
                             f"{len(points)} points and {len(wrap_rows)} wraps")
        self._matter = matter
        self._rows = rows
        self._wrap_rows = wrap_rows
        self.points = tuple(points)
        self.wraps = tuple(wraps)

    def __repr__(self) -> str:
        return f"<GeometryPath {self.name!r}: {len(self._rows)} points, {len(self._wrap_rows)} wraps>"

    def get_num_points(self) -> int:
        """How many points (active or not) the path has."""
        return len(self._rows)

    def get_bodies(self) -> list[MobilizedBody]:
        """The bodies of the points, in path order."""
        return [r[1] for r in self._rows]

    # ------------------------------------------------------------------ packing
    def _pack_rows(self, state: State, element_index: int, law: tuple, builder: FunctionTableBuilder,
                   owner) -> tuple[list, list, list]:
        """(bodies, stations, params) rows of this path as element ``element_index`` of a set."""
        matter = self._matter
        bodies, stations, params = [], [], []
        for kind, body, data, coord, rng in self._rows:
            q = u = 0
            lo = hi = 0.0
            fns = [-1.0, -1.0, -1.0]
            station = np.zeros(3)
            if coord is not None:
                q, u = _mobility(matter, state, owner, coord[0], coord[1], True)
            if kind == "moving":
                lo, hi = rng
                clamped = math.isfinite(lo) or math.isfinite(hi)
                if clamped:
                    lo, hi = max(lo, -np.finfo(float).max), min(hi, np.finfo(float).max)
                else:
                    lo = hi = 0.0
                for c, f in enumerate(data):
                    if isinstance(f, Function):
                        fns[c] = float(builder.add(f))
                    else:
                        station[c] = f
                code = _CODES["moving_clamped" if clamped else "moving"]
            else:
                station = data
                code = _CODES[kind]
                if kind == "conditional":
                    lo, hi = rng
            bodies.append([body._index])
            stations.append([station])
            params.append([float(element_index), float(code), float(q), float(u), lo, hi, *fns, *law])
        for wrap, a, b, method in self._wrap_rows:
            bodies.append([wrap.body._index])
            stations.append([np.asarray(wrap.X_BW.p, dtype=float)])
            params.append([float(element_index), float(_CODES[wrap._type]), *wrap.X_BW.R.to_quaternion(),
                           *wrap._dims(), float(wrap._quadrant), float(a), float(b), float(method)])
        return bodies, stations, params

    @staticmethod
    def _make_set(items: list, state: State, owners: list):
        """One compiled set of paths ``items`` = [(path, law)], element k from ``owners[k]``."""
        builder = FunctionTableBuilder()
        bodies: list = []
        stations: list = []
        params: list = []
        for k, ((path, law), owner) in enumerate(zip(items, owners)):
            b, s, p = path._pack_rows(state, k, law, builder, owner)
            bodies += b
            stations += s
            params += p
        table = builder.build() if len(builder) else None
        return _K.ForceSet(_K.FORCE_KINDS["GeometryPath"][0], np.array(bodies, dtype=np.int64).reshape(-1, 1),
                           np.array(stations).reshape(-1, 1, 3), np.array(params).reshape(-1, 13),
                           np.zeros((len(params), 2), dtype=np.int64), table)

    def _measures(self, state: State, stage: int) -> tuple[float, float]:
        fs = self._make_set([(self, (float(_CODES["tension"]), 0.0, 0.0, 0.0))], state, [self])
        ws = self._matter._at(state, stage, f"{self!r}: {'length' if stage == Stage.Position else 'speed'}").ws
        out = np.zeros((1, 2))
        _K.path_measures(fs, ws, out)
        return float(out[0, 0]), float(out[0, 1])

    # ------------------------------------------------------------------ measures
    def get_length(self, state: State) -> float:
        """L, the sum of the segments between consecutive active points (needs Position)."""
        return self._measures(state, Stage.Position)[0]

    def get_lengthening_speed(self, state: State) -> float:
        """dL/dt (needs Velocity)."""
        return self._measures(state, Stage.Velocity)[1]

    def _current_path(self, state: State) -> np.ndarray:
        """The kernel's current path at ``state`` (n, 6): p in G, kind, row, surface length (see
        ``_core._k.path_points``)."""
        fs = self._make_set([(self, (float(_CODES["tension"]), 0.0, 0.0, 0.0))], state, [self])
        ws = self._matter._at(state, Stage.Position, f"{self!r}: points").ws
        out = np.zeros((len(self._rows) + 2 * len(self._wrap_rows), 6))
        n = _K.path_points(fs, ws, 0, out)
        return out[:n]

    def get_path_points(self, state: State) -> np.ndarray:
        """The current path in Ground (n, 3): the active points and, where the path wraps, each wrap
        object's two tangent points, in path order (OpenSim's getCurrentPath; needs Position).

        Parameters
        ----------
        state : State

        Returns
        -------
        ndarray, shape (n, 3)
        """
        return self._current_path(state)[:, :3].copy()

    def get_polyline(self, state: State, max_angle: float = np.pi / 24) -> np.ndarray:
        """The path in Ground as a polyline to draw (m, 3): `get_path_points` with, between a wrap's
        two tangent points, points along the surface (a helix on a cylinder, a great circle on a
        sphere, the wrapping plane's section of an ellipsoid) at most ``max_angle`` apart (needs
        Position; evaluated per call, for viewers).

        Parameters
        ----------
        state : State
        max_angle : float
            The largest turn (rad) about the surface between consecutive points, > 0.

        Returns
        -------
        ndarray, shape (m, 3)
        """
        return self._polyline(state, max_angle)[0]

    def _polyline(self, state: State, max_angle: float) -> tuple[np.ndarray, np.ndarray]:
        """`get_polyline` and which of its vertices are `get_path_points` (bool), from one evaluation."""
        if not (isinstance(max_angle, (int, float, np.floating)) and max_angle > 0):
            raise ValueError(f"{self!r}.get_polyline: max_angle must be a positive number, got {max_angle!r}")
        cur = self._current_path(state)
        npts = len(self._rows)
        pieces, marks = [], []
        for i, row in enumerate(cur):
            if row[3] == 2 and i > 0:
                wrap, _, _, method = self._wrap_rows[int(row[4]) - npts]
                X = wrap.body.get_body_transform(state)
                R_GB, p_GB = X.R.matrix, np.asarray(X.p, dtype=float)
                R_GW = R_GB @ wrap.X_BW.R.matrix
                p_GW = p_GB + R_GB @ np.asarray(wrap.X_BW.p, dtype=float)
                r1, r2 = (cur[i - 1, :3] - p_GW) @ R_GW, (row[:3] - p_GW) @ R_GW
                # the path's points around the wrap, which an ellipsoid's wrap is found from again
                P1 = (cur[i - 2, :3] - p_GW) @ R_GW if i >= 2 else None
                P2 = (cur[i + 1, :3] - p_GW) @ R_GW if i + 1 < len(cur) else None
                arc = wrap._arc(r1, r2, float(row[5]), float(max_angle), P1, P2, int(method))
                if len(arc):
                    pieces.append(arc @ R_GW.T + p_GW)
                    marks.append(np.zeros(len(arc), dtype=bool))
            pieces.append(row[None, :3])
            marks.append(np.ones(1, dtype=bool))
        if not pieces:
            return np.zeros((0, 3)), np.zeros(0, dtype=bool)
        return np.concatenate(pieces), np.concatenate(marks)

    def calc_generalized_forces(self, state: State, tension: float) -> np.ndarray:
        """The generalized forces (nu,) of ``tension`` along the path: J^T F + the moving points'
        gearing forces, i.e. -tension dL/dq (needs Position)."""
        fs = self._make_set([(self, (float(_CODES["tension"]), float(tension), 0.0, 0.0))], state, [self])
        matter = self._matter
        ws = matter._at(state, Stage.Position, f"{self!r}: generalized forces").ws
        bf = np.zeros((matter.get_num_bodies(), 2, 3))
        mf = np.zeros(matter.get_num_mobilities(state))
        fs.add(ws, bf, mf)
        return matter.multiply_by_system_jacobian_transpose(state, bf) + mf

    def compute_moment_arm(self, state: State, coordinate: Any) -> float:
        """OpenSim's moment arm about ``coordinate`` (mobod, which_q): C^T f, f the generalized
        forces of a unit tension (-dL/dq) and C the speeds that follow a unit speed of the coordinate
        through the constraints (OpenSim's MomentArmSolver; C is that unit vector without
        constraints). So -dL/dq with the other coordinates held, and coupled ones following."""
        mobod, which = _coordinate(coordinate, f"{self!r}.compute_moment_arm: coordinate")
        matter = self._matter
        f = self.calc_generalized_forces(state, 1.0)
        _, ui = _mobility(matter, state, self, mobod, which, False)
        C = np.zeros_like(f)
        C[ui] = 1.0
        mp, mv, _ = matter.get_num_constraint_equations(state)
        if mp + mv:
            # OpenSim's computeCouplingVector: a unit speed of the coordinate projected onto the
            # velocity constraints (minimum change, unit weights: Simbody's projectU with diagonal
            # weights gives the same vector for constraints a coordinate's weight cannot tilt, as a
            # coupler), then scaled so the coordinate's own speed is 1.
            GT = matter.calc_g_transpose(state)[:, :mp + mv]
            lam = np.linalg.lstsq(GT.T @ GT, GT.T @ C, rcond=None)[0]
            un = C - GT @ lam
            if not abs(un[ui]) > 0.0:
                raise ValueError(f"{self!r}.compute_moment_arm: the constraints do not let {mobod!r} coordinate "
                                 f"{which} move")
            C = un / un[ui]
        return float(C @ f)


# ---------------------------------------------------------------------- the forces
class _PathForce(Force):
    """Shared parts of the elements whose tension acts along a GeometryPath."""

    _conservative = False

    def __init__(self, forces, path: GeometryPath):
        if not isinstance(path, GeometryPath):
            raise TypeError(f"Force.{type(self).__name__}: expected a GeometryPath, got {type(path).__name__}")
        system = forces._system if callable(getattr(forces, "_adopt_force", None)) else None
        if system is not None and path._matter._system is not system:
            raise ValueError(f"Force.{type(self).__name__}: {path!r} is on bodies of another System")
        super().__init__(forces)
        self._path = path

    def get_geometry_path(self) -> GeometryPath:
        """The path the tension acts along."""
        return self._path

    def get_length(self, state: State) -> float:
        """The path's length (Position)."""
        return self._path.get_length(state)

    def get_lengthening_speed(self, state: State) -> float:
        """The path's lengthening speed (Velocity)."""
        return self._path.get_lengthening_speed(state)

    def compute_moment_arm(self, state: State, coordinate: Any) -> float:
        """The path's moment arm about ``coordinate`` (mobod, which_q); see GeometryPath."""
        return self._path.compute_moment_arm(state, coordinate)

    def _law(self, state: State) -> tuple:
        raise NotImplementedError

    @classmethod
    def _pack(cls, elements, matter, state):
        return _Packed(GeometryPath._make_set([(e._path, e._law(state)) for e in elements], state, elements),
                       elements)


@_element("PathSpring")
class _PathSpring(_PathForce):
    """OpenSim's PathSpring: tension T = k max(L - L0, 0) (1 + c Ldot) along ``path``.

    Parameters
    ----------
    forces : GeneralForceSubsystem
    path : GeometryPath
    stiffness, resting_length, dissipation : float
        k >= 0, L0 >= 0, c >= 0.
    """

    _conservative = True

    def __init__(self, forces, path: GeometryPath, stiffness: float, resting_length: float, dissipation: float):
        self._k = _real(stiffness, "Force.PathSpring: stiffness", nonnegative=True)
        self._L0 = _real(resting_length, "Force.PathSpring: resting_length", nonnegative=True)
        self._c = _real(dissipation, "Force.PathSpring: dissipation", nonnegative=True)
        super().__init__(forces, path)

    def _law(self, state: State) -> tuple:
        return (float(_CODES["spring"]), self._k, self._L0, self._c)

    def get_tension(self, state: State) -> float:
        """k max(L - L0, 0) (1 + c Ldot) (Velocity)."""
        L, Ldot = self._path._measures(state, Stage.Velocity)
        return self._k * max(L - self._L0, 0.0) * (1.0 + self._c * Ldot)

    @output(Stage.Velocity, float, name="tension")
    def _output_tension(self, state) -> float:
        """The spring's tension."""
        return self.get_tension(state)


@_element("PathActuator")
class _PathActuator(_PathForce):
    """A tension ``optimal_force * control`` along ``path`` (OpenSim's PathActuator).

    The control is held in the State (`set_control`, or the discrete variable ``control``, the named
    input ``<path>:control`` of a probe or controller; 0 by default; a change invalidates Dynamics).
    The compiled set reads it as an input of the evaluation (see ``_inputs``), so the set is packed
    once per instance and the compiled time loop holds the control over its steps.
    """

    _reads_inputs = True

    def __init__(self, forces, path: GeometryPath, optimal_force: float, control: float = 0.0):
        self._fmax = _real(optimal_force, "Force.PathActuator: optimal_force")
        self._default_control = _real(control, "Force.PathActuator: control")
        super().__init__(forces, path)
        # a named discrete variable: the input ``<path>:control`` a probe or controller may write
        self.add_discrete_variable("control", Stage.Dynamics, self._default_control)

    def get_optimal_force(self) -> float:
        """The tension at control 1."""
        return self._fmax

    def get_control(self, state: State) -> float:
        """The control held in ``state``."""
        return float(self.get_discrete_variable_value(state, "control"))

    def set_control(self, state: State, control: float) -> None:
        """Hold ``control`` in ``state`` (invalidates Dynamics)."""
        self.set_discrete_variable_value(state, "control", _real(control, f"{self!r}.set_control: control"))

    @classmethod
    def _pack(cls, elements, matter, state, input_offset: int = 0):
        laws = [(float(_CODES["input"]), e._fmax, float(input_offset + k), 0.0) for k, e in enumerate(elements)]
        fs = GeometryPath._make_set([(e._path, law) for e, law in zip(elements, laws)], state, elements)
        return _PathActuatorPacked(fs, elements, input_offset, len(elements))

    @classmethod
    def _calc_bulk(cls, packed, matter, state, body_forces, mobility_forces):
        packed.add(matter._at(state, Stage.Velocity, "Force.PathActuator forces").ws, state, body_forces,
                   mobility_forces)

    def get_tension(self, state: State) -> float:
        """optimal_force * control."""
        return self._fmax * self.get_control(state)


class _PathActuatorPacked(_InputPacked):
    """The enabled PathActuators of an instance: one input (the control) per element."""

    __slots__ = ()

    def controls(self, state: State) -> np.ndarray:
        return np.array([e.get_control(state) for e in self.elements], dtype=float)
