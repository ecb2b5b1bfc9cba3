"""MobilizedBody: a body together with the mobilizer (joint) that connects it to its parent.

A MobilizedBody is a topology object: creating one adds a body to its parent's matter subsystem.
Everything that varies lives in a State; the per-body methods here read the matter subsystem's
cache for that State (they need the stage they say).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _core
from ..._kinds import KindsMeta
from ..._real import finite_float, real_array, real_float, real_index
from ...common._ownership import check_system
from ...common.component import Component
from ...common.output import Output, output
from ...common.property import Property, instance_of
from ...common.stage import Stage
from ...spatial import Body, MassProperties, Rotation, Transform
from ._armature import NO_ARMATURE, armature_values

if TYPE_CHECKING:
    from ...common.state import State
    from ..matter import SimbodyMatterSubsystem

__all__ = ["MobilizedBody"]

_IDENTITY = Transform()

# The compiled common cases of the per-body helpers (core/helpers.pxi), bound once: each returns None or False,
# having done nothing, where its cheap checks fail, and the method then takes its Python path.
_station, _row, _pose = _core.mobod_station, _core.mobod_row, _core.mobod_pose
_add_station_force, _add_mobility_force, _add_to_row = (_core.mobod_add_station_force, _core.mobod_add_mobility_force,
                                                        _core.add_to_row)


def _vec(x, n: int, owner, method: str) -> np.ndarray:
    # x as n finite float64 values; the error names ``owner.method`` (formatted only when raised)
    a = x if type(x) is np.ndarray and x.dtype == np.float64 else _real_vec(x, owner, method)
    if a.shape != (n,):
        raise ValueError(f"{owner!r}.{method}: expected {n} values, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{owner!r}.{method}: values must be finite, got {a}")
    return a


def _check_state(mobod: "MobilizedBody", state: "State", method: str) -> None:
    # The refusal of a State of another System by a helper that writes without reading the State (so no
    # State check of its own would catch it): called only when the cheap test in the helper failed.
    check_system(f"{mobod!r}.{method}", state, mobod._matter._system, "State")


def _real_vec(x, owner, method: str) -> np.ndarray:
    # (complex values and strings refused: numpy would drop the imaginary part or parse the string)
    return real_array(x, f"{owner!r}.{method}", copy=False)


def _one(value, owner, method: str) -> float:
    # one finite real number, never a string or a complex (float() parses "0.5")
    return finite_float(value, f"{owner!r}.{method}: value")


def _as_transform(X) -> Transform:
    if isinstance(X, Transform):
        return X
    if isinstance(X, Rotation):
        return Transform(X)
    raise TypeError(f"expected a Transform, got {type(X).__name__}")


def _set_mass_properties(mobod: "MobilizedBody", mp: MassProperties) -> None:
    mobod._body = Body.Rigid(mp)


class MobilizedBody(Component, metaclass=KindsMeta):
    """A body and its mobilizer: ``X_GB = X_GP * X_PF * X_FM(q) * ~X_BM``.

    Built-ins are nested classes (``MobilizedBody.Pin``, ``MobilizedBody.Ball``, ...), each made as
    ``Cls(parent, X_PF, body, X_BM, direction=MobilizedBody.Forward, name=...)`` or ``Cls(parent, body)``
    (identity frames); a few take parameters after ``X_BM`` (``Screw``: pitch, ``Ellipsoid``:
    radii). Generalized coordinates and speeds have Simbody's meanings; their names (state variables
    ``<path>/angle``, ``<path>/rate`` for a Pin) are Simbody's accessor names where it has them,
    ``q0``, ``u0``... otherwise.

    Properties (Instance stage): ``mass_properties``, ``inboard_frame`` (X_PF), ``outboard_frame``
    (X_BM), ``armature`` (rotor inertia per mobility: ``set_armature``). Outputs: ``transform`` (X_GB),
    ``position`` (p_GB (3,)), ``velocity`` (V_GB (2, 3)), ``acceleration`` (A_GB (2, 3)), ``q``, ``u``,
    ``udot``, and one per named coordinate and speed.
    """

    mass_properties = Property(stage=Stage.Instance, check=instance_of(MassProperties),
                               fget=lambda b: b.get_default_mass_properties(), fset=_set_mass_properties,
                               doc="mass, mass center and inertia about the body origin, in B")
    inboard_frame = Property(stage=Stage.Instance, check=_as_transform, attr="_X_PF",
                             doc="X_PF: the mobilizer's F frame on the parent")
    outboard_frame = Property(stage=Stage.Instance, check=_as_transform, attr="_X_BM",
                              doc="X_BM: the mobilizer's M frame on this body")
    armature = Property(NO_ARMATURE, stage=Stage.Instance, check=armature_values, attr="_armature",
                        doc="rotor inertia of each mobility, added to the mass matrix's diagonal")

    #: Names of (q, u) when the mobilizer has one of each with a Simbody accessor name (Pin: angle, rate).
    _coordinate_names: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    Forward = "Forward"
    Reverse = "Reverse"

    #: Name of the joint in the compiled core's table; None for Ground.
    _joint: str | None = None
    #: Joint name used instead of ``_joint`` when the matter subsystem uses Euler angles.
    _euler_joint: str | None = None
    _n_params = 0

    def __init__(self, parent: "MobilizedBody", *args, direction: str = "Forward"):
        if not isinstance(parent, MobilizedBody):
            raise TypeError(f"{type(self).__name__}: the parent must be a MobilizedBody, got {type(parent).__name__}")
        X_PF, body, X_BM, params = self._parse(args)
        if direction not in (MobilizedBody.Forward, MobilizedBody.Reverse):
            raise ValueError(f"{type(self).__name__}: direction must be MobilizedBody.Forward or Reverse, "
                             f"got {direction!r}")
        self._reversal = None
        if direction == MobilizedBody.Reverse and self._joint not in (None, "Weld", "Custom"):
            from ._reversed import Reversal

            # The kernels know forward joints only: Python writes a reversed body's rows (reversed.py).
            self._reversal = Reversal(self)
            self._joint, self._euler_joint = "Custom", None
        self._X_PF = X_PF
        self._X_BM = X_BM
        self._body = body
        self._params = params
        self._direction = direction
        self._parent = parent
        self._matter = parent._matter
        self._index = self._matter._adopt_mobilized_body(self)

    # ------------------------------------------------------------------ construction helpers
    def _parse(self, args: tuple):
        name = type(self).__name__
        n = self._n_params
        if len(args) >= 1 and isinstance(args[0], Body):
            body, rest = args[0], args[1:]
            X_PF = X_BM = _IDENTITY
        elif len(args) >= 3:
            X_PF, body, X_BM, rest = args[0], args[1], args[2], args[3:]
            X_PF = self._transform(X_PF, "X_PF")
            X_BM = self._transform(X_BM, "X_BM")
            if not isinstance(body, Body):
                raise TypeError(f"{name}: expected a Body after X_PF, got {type(body).__name__}")
        else:
            raise TypeError(f"{name}: call as {name}(parent, X_PF, body, X_BM) or {name}(parent, body)")
        if len(rest) != n:
            raise TypeError(f"{name}: expected {n} parameter(s) after the frames, got {len(rest)}")
        return X_PF, body, X_BM, self._check_params(rest)

    def _transform(self, X, what: str) -> Transform:
        if isinstance(X, Transform):
            return X
        if isinstance(X, Rotation):
            return Transform(X)
        raise TypeError(f"{type(self).__name__}: {what} must be a Transform, got {type(X).__name__}")

    def _check_params(self, rest: tuple) -> np.ndarray:
        return np.zeros(3)

    # ------------------------------------------------------------------ Custom mobilizers (joint "Custom")
    # A mobilizer whose kinematics are written in Python overrides these; the matter subsystem calls
    # them once per realization of each stage, before the compiled sweep that reads the rows they fill.
    # A reversed built-in (``self._reversal``) is handled the same way.
    def _custom_sizes(self, state: "State") -> tuple[int, int]:
        """(nq, nu) of a Custom mobilizer in ``state`` (at Model)."""
        if self._reversal is not None:
            return self._reversal.sizes(state)
        raise NotImplementedError

    def _custom_default_q(self, state: "State") -> np.ndarray:
        """Default q of a Custom mobilizer (at Model)."""
        if self._reversal is not None:
            return self._reversal.default_q(state)
        return np.zeros(self._custom_sizes(state)[0])

    def _realize_custom_instance(self, state: "State") -> None:
        """Instance-stage work of a Custom mobilizer (after the workspace exists)."""
        if self._reversal is not None:
            self._reversal.instance(state)

    def _custom_uses_quaternion(self, state: "State") -> bool:
        """Whether a Custom (or reversed) mobilizer's first four q are a quaternion to keep normalized."""
        if self._reversal is not None:
            return self._reversal.uses_quaternion(state)
        return False

    def _custom_stage_hook(self, stage: str):
        """The user's ``realize_<stage>`` hook of a Custom mobilizer, or None (those without sweep work)."""
        return None

    def _custom_joint_code(self) -> int | None:
        """The compiled joint code that runs this Custom mobilizer in the kernels (a FunctionBased of
        built-in functions), or None: Python writes its rows."""
        return None

    def _function_joint_record(self, builder) -> tuple:
        """The record of a compiled FunctionBased mobilizer, its functions added to ``builder`` (Instance)."""
        raise NotImplementedError

    def _realize_custom_position(self, state: "State", ws) -> None:
        """Fill ws.R_FM[i], ws.p_FM[i] and this body's columns of ws.H_FM from the State's q."""
        if self._reversal is not None:
            return self._reversal.position(state, ws)
        raise NotImplementedError

    def _realize_custom_velocity(self, state: "State", ws) -> None:
        """Fill ws.HDotu_FM[i] and this body's rows of ws.qdot."""
        if self._reversal is not None:
            return self._reversal.velocity(state, ws)
        raise NotImplementedError

    def _realize_custom_acceleration(self, state: "State", ws) -> None:
        """Fill this body's rows of ws.qdotdot after forward dynamics."""
        if self._reversal is not None:
            return self._reversal.acceleration(state, ws)
        raise NotImplementedError

    def _multiply_by_n_rows(self, state: "State", transpose: bool, x: np.ndarray, out: np.ndarray) -> None:
        """This body's rows of ``out`` = N x (or N^T x), for the kernels leave Custom rows alone."""
        if self._reversal is None:
            raise NotImplementedError
        self._reversal.n_rows(state, transpose, x, out, inverse=False)

    def _multiply_by_n_inv_rows(self, state: "State", transpose: bool, x: np.ndarray, out: np.ndarray) -> None:
        """This body's rows of ``out`` = N^-1 x (or N^-T x)."""
        if self._reversal is None:
            raise NotImplementedError
        self._reversal.n_rows(state, transpose, x, out, inverse=True)

    def is_reversed(self) -> bool:
        """Whether this mobilizer was made with ``direction=MobilizedBody.Reverse``."""
        return self._direction == MobilizedBody.Reverse

    # ------------------------------------------------------------------ topology
    def get_mobilized_body_index(self) -> int:
        """This body's index in its matter subsystem (Ground is 0)."""
        return self._index

    def get_parent_mobilized_body(self) -> "MobilizedBody":
        """The parent (inboard) mobilized body."""
        if self._parent is None:
            raise ValueError("Ground has no parent")
        return self._parent

    def get_matter_subsystem(self) -> "SimbodyMatterSubsystem":
        """The matter subsystem this body belongs to."""
        return self._matter

    upd_matter_subsystem = get_matter_subsystem

    def get_body(self) -> Body:
        """The Body (mass properties) this mobilized body carries."""
        return self._body

    def get_default_inboard_frame(self) -> Transform:
        """X_PF: the mobilizer's F frame on the parent."""
        return self._X_PF

    def get_default_outboard_frame(self) -> Transform:
        """X_BM: the mobilizer's M frame on this body."""
        return self._X_BM

    def get_default_mass_properties(self) -> MassProperties:
        """The body's mass properties (inertia about the body origin, in B)."""
        return self._body.get_default_rigid_body_mass_properties()

    def is_ground(self) -> bool:
        """Whether this is Ground."""
        return self._index == 0

    def set_armature(self, values) -> None:
        """Set the armature (rotor inertia) of this mobilizer's mobilities (an Instance property).

        Parameters
        ----------
        values : float or array_like of float, shape (nu,)
            Finite and >= 0: one value for every mobility, or one per mobility (u's order). It is
            added to the mass matrix's diagonal, ``M(q) + diag(armature)`` (MuJoCo's ``armature``,
            Pinocchio's ``Model.armature``); zero by default.

        Raises
        ------
        ValueError
            For a negative or non-finite value, a count other than the mobilizer's, or Ground;
            nothing is changed then.
        """
        self.set_property("armature", values)

    def get_armature(self) -> np.ndarray:
        """The armature of each mobility (nu,) (read-only); one value (0-d) when set as one for a
        mobilizer whose nu a State decides (Custom)."""
        a = self.armature
        nu = self._builtin_nu()
        return a if nu is None or a.ndim == 1 else np.broadcast_to(a, (nu,))

    def _builtin_nu(self) -> int | None:
        # a built-in mobilizer's nu (Euler angles keep it), None where a State decides it
        if self._joint is None or self._joint == "Custom":
            return None
        return int(_core.JOINT_TYPES[self._joint][2])

    # ------------------------------------------------------------------ named parts (components)
    def _validate_property_change(self, name: str, value) -> None:
        if self.is_ground():
            raise ValueError("Ground is immobile: its frames and mass properties are fixed")
        if name == "armature":
            nu = self._builtin_nu()
            if value.ndim == 1 and nu is not None and value.shape[0] != nu:
                raise ValueError(f"expected one value or {nu} (one per mobility), got {value.shape[0]}")
            return
        if self._reversal is not None and name != "mass_properties":
            raise ValueError("the frames of a reversed mobilizer are fixed when it is built")

    def _variable_names(self, nq: int, nu: int) -> tuple[list[str], list[str]]:
        """Names of this mobilizer's q and u in a State where it has ``nq`` and ``nu`` of them."""
        names = self._coordinate_names
        if names is not None and len(names[0]) == nq and len(names[1]) == nu:
            return list(names[0]), list(names[1])
        return [f"q{k}" for k in range(nq)], [f"u{k}" for k in range(nu)]

    @output(Stage.Position, Transform, name="transform")
    def _output_transform(self, state: "State") -> Transform:
        """X_GB, the body frame in Ground."""
        return self.get_body_transform(state)

    @output(Stage.Position, np.ndarray, name="position")
    def _output_position(self, state: "State") -> np.ndarray:
        """p_GB (3,): the body origin in Ground."""
        return self.get_body_origin_location(state)

    @output(Stage.Velocity, np.ndarray, name="velocity")
    def _output_velocity(self, state: "State") -> np.ndarray:
        """V_GB (2, 3): angular velocity and body-origin velocity in Ground."""
        return self.get_body_velocity(state)

    @output(Stage.Acceleration, np.ndarray, name="acceleration")
    def _output_acceleration(self, state: "State") -> np.ndarray:
        """A_GB (2, 3): angular acceleration and body-origin acceleration in Ground."""
        return self.get_body_acceleration(state)

    @output(Stage.Position, np.ndarray, name="q")
    def _output_q(self, state: "State") -> np.ndarray:
        """The mobilizer's generalized coordinates."""
        return self.get_q(state)

    @output(Stage.Velocity, np.ndarray, name="u")
    def _output_u(self, state: "State") -> np.ndarray:
        """The mobilizer's generalized speeds."""
        return self.get_u(state)

    @output(Stage.Acceleration, np.ndarray, name="udot")
    def _output_udot(self, state: "State") -> np.ndarray:
        """The mobilizer's generalized accelerations."""
        return self.get_udot(state)

    @output(Stage.Dynamics, np.ndarray, name="mobility_forces")
    def _output_mobility_forces(self, state: "State") -> np.ndarray:
        """The generalized forces the force elements apply to this mobilizer's u directly (dampers,
        friction, stops, actuators, a driver's inputs; not body forces such as gravity), a copy."""
        u0, n = self._matter._u_range(state, self._index)
        return np.array(self._matter._get_forces(state)[1][u0:u0 + n])

    def _extra_outputs(self) -> dict[str, Output]:
        """One scalar output per named coordinate (Position), speed (Velocity) and its rate (Acceleration)."""
        names = self._coordinate_names
        if names is None:
            return {}
        out = {}
        for k, qn in enumerate(names[0]):
            out[qn] = Output(self, qn, lambda s, k=k: self.get_one_q(s, k), Stage.Position, float, f"q[{k}]")
        for k, un in enumerate(names[1]):
            out[un] = Output(self, un, lambda s, k=k: self.get_one_u(s, k), Stage.Velocity, float, f"u[{k}]")
            out[un + "_dot"] = Output(self, un + "_dot", lambda s, k=k: float(self.get_udot(s)[k]),
                                      Stage.Acceleration, float, f"udot[{k}]")
        return out

    def __repr__(self) -> str:
        return f"<MobilizedBody.{type(self).__name__} #{self._index} {self.get_absolute_path()!r}>"

    def __deepcopy__(self, memo):
        return self  # a topology object: copies of a State share it, never clone it

    # ------------------------------------------------------------------ state: coordinates
    def get_num_q(self, state: "State") -> int:
        """Number of generalized coordinates of this mobilizer (depends on Euler/quaternion mode)."""
        return self._matter._q_range(state, self._index)[1]

    def get_num_u(self, state: "State") -> int:
        """Number of generalized speeds of this mobilizer."""
        return self._matter._u_range(state, self._index)[1]

    def get_q(self, state: "State") -> np.ndarray:
        """This mobilizer's q, read-only."""
        q0, n = self._matter._q_range(state, self._index)
        return self._matter.get_q(state)[q0:q0 + n]

    def get_u(self, state: "State") -> np.ndarray:
        """This mobilizer's u, read-only."""
        u0, n = self._matter._u_range(state, self._index)
        return self._matter.get_u(state)[u0:u0 + n]

    def get_qdot(self, state: "State") -> np.ndarray:
        """This mobilizer's qdot, read-only (Velocity)."""
        q0, n = self._matter._q_range(state, self._index)
        return self._matter.get_qdot(state)[q0:q0 + n]

    def get_udot(self, state: "State") -> np.ndarray:
        """This mobilizer's udot, read-only (Acceleration)."""
        u0, n = self._matter._u_range(state, self._index)
        return self._matter.get_udot(state)[u0:u0 + n]

    def get_qdotdot(self, state: "State") -> np.ndarray:
        """This mobilizer's qdotdot, read-only (Acceleration)."""
        q0, n = self._matter._q_range(state, self._index)
        return self._matter.get_qdotdot(state)[q0:q0 + n]

    def set_q(self, state: "State", q) -> None:
        """Set this mobilizer's q (checked for length and finiteness); invalidates Position."""
        q0, n = self._matter._q_range(state, self._index)
        a = _vec(np.atleast_1d(_real_vec(q, self, "set_q()")), n, self, "set_q()")
        self._matter.upd_q(state)[q0:q0 + n] = a

    def set_u(self, state: "State", u) -> None:
        """Set this mobilizer's u (checked); invalidates Velocity."""
        u0, n = self._matter._u_range(state, self._index)
        a = _vec(np.atleast_1d(_real_vec(u, self, "set_u()")), n, self, "set_u()")
        self._matter.upd_u(state)[u0:u0 + n] = a

    def get_one_q(self, state: "State", i: int) -> float:
        """Coordinate ``i`` of this mobilizer."""
        # One pass through the State's checks (outputs and probes read coordinates every sample).
        matter = self._matter
        ss = matter._laid_out(state, "MobilizedBody.get_one_q()")
        qoff = ss.cache[matter._layout_index].value.qoff
        q0 = int(qoff[self._index])
        if not 0 <= i < int(qoff[self._index + 1]) - q0:
            raise IndexError(f"{self!r}: no q[{i}] (it has {int(qoff[self._index + 1]) - q0})")
        return float(ss.q_ro[q0 + i])

    def get_one_u(self, state: "State", i: int) -> float:
        """Speed ``i`` of this mobilizer."""
        matter = self._matter
        ss = matter._laid_out(state, "MobilizedBody.get_one_u()")
        uoff = ss.cache[matter._layout_index].value.uoff
        u0 = int(uoff[self._index])
        if not 0 <= i < int(uoff[self._index + 1]) - u0:
            raise IndexError(f"{self!r}: no u[{i}] (it has {int(uoff[self._index + 1]) - u0})")
        return float(ss.u_ro[u0 + i])

    def set_one_q(self, state: "State", i: int, value: float) -> None:
        """Set coordinate ``i``; invalidates Position."""
        self._set_one_q(state, i, value, f"set_one_q({i})")

    def _set_one_q(self, state: "State", i: int, value: float, method: str) -> None:
        # (``method``: the public call, named by the errors)
        q0, n = self._matter._q_range(state, self._index)
        i = real_index(i, f"{self!r}.{method}: the coordinate's index")
        if not 0 <= i < n:
            raise IndexError(f"{self!r}: no q[{i}] (it has {n})")
        v = _one(value, self, method)
        self._matter.upd_q(state)[q0 + i] = v

    def set_one_u(self, state: "State", i: int, value: float) -> None:
        """Set speed ``i``; invalidates Velocity."""
        self._set_one_u(state, i, value, f"set_one_u({i})")

    def _set_one_u(self, state: "State", i: int, value: float, method: str) -> None:
        u0, n = self._matter._u_range(state, self._index)
        i = real_index(i, f"{self!r}.{method}: the speed's index")
        if not 0 <= i < n:
            raise IndexError(f"{self!r}: no u[{i}] (it has {n})")
        v = _one(value, self, method)
        self._matter.upd_u(state)[u0 + i] = v

    # ------------------------------------------------------------------ state: kinematics
    # The getters users' extension code calls per evaluation take the compiled common case first (a plain
    # State realized far enough, a float64 station): a few hundred nanoseconds. Its checks failing, the Python
    # path below it repeats them, converts the input or raises the error naming what is wrong.
    def get_body_transform(self, state: "State") -> Transform:
        """X_GB, the pose of this body in Ground (Position)."""
        pose = _pose(self._matter, state, self._index)
        if pose is not None:  # fresh read-only copies of R_GB and p_GB
            return Transform._from_readonly(*pose)
        R, p = self._matter._body_pose(state, self._index)
        return Transform(Rotation._trusted(R.copy()), p)

    def get_body_rotation(self, state: "State") -> Rotation:
        """R_GB (Position)."""
        return Rotation._trusted(self._matter._body_pose(state, self._index)[0].copy())

    def get_body_origin_location(self, state: "State") -> np.ndarray:
        """p_GB, the body origin in Ground, (3,) read-only (Position)."""
        p = _row(self._matter, state, self._index, 0)
        return p if p is not None else self._matter._body_pose(state, self._index)[1]

    def get_mobilizer_transform(self, state: "State") -> Transform:
        """X_FM, the mobilizer's pose (Position)."""
        R, p = self._matter._mobilizer_pose(state, self._index)
        return Transform(Rotation._trusted(R.copy()), p)

    def get_body_velocity(self, state: "State") -> np.ndarray:
        """V_GB = (w_GB, v_GB), (2, 3) read-only, in Ground (Velocity)."""
        V = _row(self._matter, state, self._index, 1)
        return V if V is not None else self._matter._body_velocity(state, self._index)

    def get_body_angular_velocity(self, state: "State") -> np.ndarray:
        """w_GB, (3,) (Velocity)."""
        return self._matter._body_velocity(state, self._index)[0]

    def get_body_origin_velocity(self, state: "State") -> np.ndarray:
        """v_GB, velocity of the body origin in Ground, (3,) (Velocity)."""
        return self._matter._body_velocity(state, self._index)[1]

    def get_mobilizer_velocity(self, state: "State") -> np.ndarray:
        """V_FM = (w_FM, v_FM) in F, (2, 3) (Velocity)."""
        return self._matter._mobilizer_velocity(state, self._index)

    def get_body_acceleration(self, state: "State") -> np.ndarray:
        """A_GB = (b_GB, a_GB), (2, 3) read-only, in Ground (Acceleration)."""
        A = _row(self._matter, state, self._index, 2)
        return A if A is not None else self._matter._body_acceleration(state, self._index)

    def get_body_angular_acceleration(self, state: "State") -> np.ndarray:
        """b_GB, (3,) (Acceleration)."""
        return self._matter._body_acceleration(state, self._index)[0]

    def get_body_origin_acceleration(self, state: "State") -> np.ndarray:
        """a_GB, (3,) (Acceleration)."""
        return self._matter._body_acceleration(state, self._index)[1]

    def find_station_location_in_ground(self, state: "State", station) -> np.ndarray:
        """p_GS = p_GB + R_GB p_BS for a station S fixed on this body, given p_BS (3,) (Position).

        Parameters
        ----------
        state : State
            Realized to Position.
        station : array_like, shape (3,)
            p_BS, the station in this body's frame; finite.

        Returns
        -------
        numpy.ndarray, shape (3,)
            A new array.
        """
        out = _station(self._matter, state, self._index, station, 0)
        if out is None:
            R, p = self._matter._body_pose(state, self._index)
            out = p + R @ _vec(station, 3, self, "find_station_location_in_ground()")
        return out

    def find_station_velocity_in_ground(self, state: "State", station) -> np.ndarray:
        """v_GS = v_GB + w_GB x (R_GB p_BS) for a station fixed on this body, a new (3,) array (Velocity)."""
        out = _station(self._matter, state, self._index, station, 1)
        if out is None:
            R, _ = self._matter._body_pose(state, self._index)
            w, v = self._matter._body_velocity(state, self._index)
            out = v + np.cross(w, R @ _vec(station, 3, self, "find_station_velocity_in_ground()"))
        return out

    def find_station_acceleration_in_ground(self, state: "State", station) -> np.ndarray:
        """a_GS = a_GB + b_GB x r + w_GB x (w_GB x r), r = R_GB p_BS, for a station fixed on this body, a
        new (3,) array (Acceleration)."""
        out = _station(self._matter, state, self._index, station, 2)
        if out is None:
            R, _ = self._matter._body_pose(state, self._index)
            w, _ = self._matter._body_velocity(state, self._index)
            b, a = self._matter._body_acceleration(state, self._index)
            r = R @ _vec(station, 3, self, "find_station_acceleration_in_ground()")
            out = a + np.cross(b, r) + np.cross(w, np.cross(w, r))
        return out

    def find_body_transform_in_another_body(self, state: "State", in_body: "MobilizedBody") -> Transform:
        """X_AB: this body's pose measured and expressed in body A (Position)."""
        if getattr(in_body, "_matter", None) is not self._matter:
            check_system(f"{self!r}.find_body_transform_in_another_body()", in_body, self._matter._system, "body")
        return ~in_body.get_body_transform(state) * self.get_body_transform(state)

    def express_vector_in_ground(self, state: "State", v_B) -> np.ndarray:
        """R_GB v_B (Position)."""
        R, _ = self._matter._body_pose(state, self._index)
        return R @ _vec(v_B, 3, self, "express_vector_in_ground()")

    def express_ground_vector_in_body(self, state: "State", v_G) -> np.ndarray:
        """R_BG v_G (Position)."""
        R, _ = self._matter._body_pose(state, self._index)
        return R.T @ _vec(v_G, 3, self, "express_ground_vector_in_body()")

    # ------------------------------------------------------------------ forces
    # Simbody's MobilizedBody::apply*: each adds into an accumulator the caller passes (a Force.Custom's
    # body_forces (nb, 2, 3) or mobility_forces (nu,)), in Ground, torques about the body origin.
    def apply_body_force(self, state: "State", F, body_forces: np.ndarray) -> None:
        """Add spatial force F = (torque, force) (2, 3), in Ground, at this body's origin.

        Parameters
        ----------
        state : State
            A State of this body's System (not read otherwise).
        F : array_like, shape (2, 3)
            (torque, force) in Ground; finite.
        body_forces : numpy.ndarray, shape (nb, 2, 3)
            The accumulator to add into: ``body_forces[i] += F`` for this body ``i``.
        """
        try:  # (a try costs nothing; getattr with a default would cost a call per evaluation)
            foreign = state._system is not self._matter._system
        except AttributeError:  # not a State
            foreign = True
        if foreign:
            _check_state(self, state, "apply_body_force()")
        if _add_to_row(body_forces, self._index, -1, F):
            return
        F = _real_vec(F, self, "apply_body_force(): F")
        if F.shape != (2, 3) or not np.isfinite(F).all():
            raise ValueError(f"{self!r}.apply_body_force(): F must be a finite (2, 3) array, got {F!r}")
        body_forces[self._index] += F

    def apply_body_torque(self, state: "State", torque, body_forces: np.ndarray) -> None:
        """Add ``torque`` (3,), in Ground, to this body's entry of ``body_forces`` (Simbody's ``applyBodyTorque``).

        Parameters
        ----------
        state : State
            A State of this body's System (not read otherwise: the torque is the same about every point of
            the body).
        torque : array_like, shape (3,)
            The torque in Ground; finite.
        body_forces : numpy.ndarray, shape (nb, 2, 3)
            The accumulator to add into: ``body_forces[i, 0] += torque`` for this body ``i``.
        """
        try:  # (a try costs nothing; getattr with a default would cost a call per evaluation)
            foreign = state._system is not self._matter._system
        except AttributeError:  # not a State
            foreign = True
        if foreign:
            _check_state(self, state, "apply_body_torque()")
        if not _add_to_row(body_forces, self._index, 0, torque):
            body_forces[self._index, 0] += _vec(torque, 3, self, "apply_body_torque(): torque")

    def apply_force_to_body_point(self, state: "State", station, force, body_forces: np.ndarray) -> None:
        """Add ``force`` (3,), in Ground, applied at the station p_BS ``station`` of this body, into
        ``body_forces`` (Simbody's ``applyForceToBodyPoint``; Position).

        The body's entry gets the torque (R_GB p_BS) x force about its origin (row 0) and the force
        (row 1), as the matter subsystem's ``add_in_station_force`` adds them.

        Parameters
        ----------
        state : State
            Realized to Position (R_GB is read).
        station : array_like, shape (3,)
            p_BS, the point of application in this body's frame; finite.
        force : array_like, shape (3,)
            The force in Ground; finite.
        body_forces : numpy.ndarray, shape (nb, 2, 3)
            The accumulator to add into.
        """
        if _add_station_force(self._matter, state, self._index, station, force, body_forces):
            return
        if getattr(state, "_system", None) is not self._matter._system:
            _check_state(self, state, "apply_force_to_body_point()")
        R, _ = self._matter._body_pose(state, self._index)
        r = R @ _vec(station, 3, self, "apply_force_to_body_point(): station")
        f = _vec(force, 3, self, "apply_force_to_body_point(): force")
        body_forces[self._index, 0] += np.cross(r, f)
        body_forces[self._index, 1] += f

    def apply_one_mobility_force(self, state: "State", which_u: int, f: float, mobility_forces: np.ndarray) -> None:
        """Add scalar generalized force ``f`` to this mobilizer's speed ``which_u``."""
        if _add_mobility_force(self._matter, state, self._index, which_u, f, mobility_forces):
            return
        if getattr(state, "_system", None) is not self._matter._system:
            _check_state(self, state, "apply_one_mobility_force()")
        u0, n = self._matter._u_range(state, self._index)
        if not 0 <= which_u < n:
            raise IndexError(f"{self!r}: no u[{which_u}] (it has {n})")
        mobility_forces[u0 + which_u] += real_float(f, f"{self!r}.apply_one_mobility_force(): f")

    # ------------------------------------------------------------------ fitting
    def set_q_to_fit_transform(self, state: "State", X_FM: Transform) -> None:
        """Set q so that X_FM(q) is as close as this mobilizer allows to ``X_FM``."""
        q0, n = self._matter._q_range(state, self._index)
        X = self._transform(X_FM, "X_FM")
        q = self._reversal.fit_q(state, X) if self._reversal is not None else self._matter._fit_q(state, self._index, X)
        self._matter.upd_q(state)[q0:q0 + n] = q

    def set_u_to_fit_velocity(self, state: "State", V_FM) -> None:
        """Set u so that H_FM u is as close as this mobilizer allows to ``V_FM`` (2, 3), in F."""
        u0, n = self._matter._u_range(state, self._index)
        V = _real_vec(V_FM, self, "set_u_to_fit_velocity(): V_FM")
        if V.shape != (2, 3) or not np.isfinite(V).all():
            raise ValueError(f"{self!r}.set_u_to_fit_velocity(): V_FM must be a finite (2, 3) array")
        u = self._matter._fit_u(state, self._index, V)
        self._matter.upd_u(state)[u0:u0 + n] = u


class _Ground(MobilizedBody):
    """Ground: body 0, immobile, the root of the tree."""

    _component_stem = "ground"

    def __init__(self, matter: "SimbodyMatterSubsystem"):
        self._X_PF = _IDENTITY
        self._X_BM = _IDENTITY
        self._body = Body.Massless()
        self._params = np.zeros(3)
        self._direction = MobilizedBody.Forward
        self._reversal = None
        self._parent = None
        self._matter = matter
        self._index = 0

    def __repr__(self) -> str:
        return f"<MobilizedBody.Ground #0 {self.get_absolute_path()!r}>"


def _builtin(name: str, joint: str, doc: str, euler: str | None = None, n_params: int = 0, params=None):
    attrs = {"_joint": joint, "_euler_joint": euler, "_n_params": n_params, "__doc__": doc}
    if params is not None:
        attrs["_check_params"] = params
    cls = type(name, (MobilizedBody,), attrs)
    cls.__qualname__ = f"MobilizedBody.{name}"
    setattr(MobilizedBody, name, cls)
    return cls


def _screw_params(self, rest) -> np.ndarray:
    pitch = real_float(rest[0], "MobilizedBody.Screw: pitch")
    if not np.isfinite(pitch):
        raise ValueError(f"Screw: pitch must be finite, got {pitch}")
    return np.array([pitch, 0.0, 0.0])


def _ellipsoid_params(self, rest) -> np.ndarray:
    radii = real_array(rest[0], "MobilizedBody.Ellipsoid: radii")
    if radii.shape != (3,) or not np.isfinite(radii).all() or (radii <= 0).any():
        raise ValueError(f"Ellipsoid: radii must be three positive finite lengths, got {rest[0]!r}")
    return radii.copy()


_builtin("Weld", "Weld", "No mobility: B is welded to P (X_FM = identity).")
_Pin = _builtin("Pin", "Pin", "One rotation about the common z axis of F and M; q = angle, u = rate.")
_Slider = _builtin("Slider", "Slider", "One translation along the common x axis of F and M; q = distance, u = rate.")


def _one_q_accessors(cls, q_name: str, u_name: str) -> None:
    def get_q(self, state):
        return self.get_one_q(state, 0)

    def set_q(self, state, value):
        self._set_one_q(state, 0, value, f"set_{q_name}()")

    def get_u(self, state):
        return self.get_one_u(state, 0)

    def set_u(self, state, value):
        self._set_one_u(state, 0, value, f"set_{u_name}()")

    cls._coordinate_names = ((q_name,), (u_name,))
    for name, fn, doc in ((f"get_{q_name}", get_q, f"The {q_name} q (Model)."),
                          (f"set_{q_name}", set_q, f"Set the {q_name} q; invalidates Position."),
                          (f"get_{u_name}", get_u, f"The {u_name} u (Model)."),
                          (f"set_{u_name}", set_u, f"Set the {u_name} u; invalidates Velocity.")):
        fn.__name__, fn.__doc__ = name, doc
        setattr(cls, name, fn)


_one_q_accessors(_Pin, "angle", "rate")
_one_q_accessors(_Slider, "length", "rate")
_builtin("Screw", "Screw", "Rotation about z with translation pitch*angle along z; q = angle.", n_params=1,
         params=_screw_params)
_builtin("Universal", "Universal", "Rotation about x, then about the new y; u = qdot.")
_builtin("Cylinder", "Cylinder", "Rotation about z and translation along z; q = (angle, distance).")
_builtin("BendStretch", "BendStretch", "Rotation about z, then translation along the new x; q = (angle, length).")
_builtin("Planar", "Planar", "Rotation about z and translation along F's x and y; q = (angle, x, y).")
_builtin("Gimbal", "Gimbal", "Body-fixed X-Y-Z rotation; q = angles, u = qdot.")
_builtin("SphericalCoords", "SphericalCoords", "Azimuth, zenith and radial translation (Simbody's SphericalCoords).")
_builtin("Translation", "Translation", "Three translations; q = p_FM in F, u = v_FM in F.")
_builtin("Ball", "Ball", "Three rotations; q = quaternion of R_FM (or X-Y-Z angles), u = w_FM in F.",
         euler="BallEuler")
_builtin("Free", "Free", "Six mobilities; q = quaternion (or angles) then p_FM; u = w_FM then v_FM, in F.",
         euler="FreeEuler")
_builtin("Ellipsoid", "Ellipsoid", "Orientation as Ball, with M's origin on an ellipsoid of given radii.",
         euler="EllipsoidEuler", n_params=1, params=_ellipsoid_params)
_builtin("LineOrientation", "LineOrientation", "Two rotations orienting M's z axis; the spin about it is not a mobility.",
         euler="LineOrientationEuler")
_builtin("FreeLine", "FreeLine", "LineOrientation plus three translations.", euler="FreeLineEuler")
_builtin("Bushing", "Bushing", "Six mobilities: X-Y-Z angles then p_FM; u = qdot.")
_Ground.__qualname__ = "MobilizedBody.Ground"
MobilizedBody.Ground = _Ground  # Simbody names it so; pickle finds it by this name
