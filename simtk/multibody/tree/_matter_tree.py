"""The tree half of SimbodyMatterSubsystem: mobilized bodies, their State caches and operators.

`MatterTree` knows nothing of constraints: the constraints layer (``simtk.multibody.constraints``)
adds them as the mixin ``ConstraintOperators``, whose hooks ``_plan_constraints`` and
``_realize_constraints_*`` this class calls; ``simtk.multibody.matter.SimbodyMatterSubsystem`` is
the two together.

The tree is frozen into flat arrays at Instance stage and handed to one compiled workspace per
State (``simtk_core.TreeKernels``); each later stage is one call into it:

=============  ======================================================================
Position       X_FM, X_GB, system Jacobian columns, articulated inertias (q only)
Velocity       V_FM, V_GB, qdot = N u, Coriolis and gyroscopic terms
Dynamics       the force accumulators are zeroed; force subsystems then add into them
Acceleration   ABA: udot, qdotdot, body accelerations
=============  ======================================================================

Operators (``multiply_by_m``, ``calc_residual_force_ignoring_constraints``, ...) use the same
workspace as scratch, so the realized results they must not disturb (accelerations) are kept in
arrays of the matter's own.
"""
from __future__ import annotations

import numpy as np

from ... import _core
from ..._real import out_array, real_array, real_index
from ...common._ownership import check_system
from ...common.errors import StageTooLowError
from ...common.function import FunctionTableBuilder
from ...common.stage import ACCELERATION, DYNAMICS, INSTANCE, MODEL, POSITION, VELOCITY, Stage
from ...common.state import State
from ...common.subsystem import Subsystem
from ...spatial import Transform
from ._armature import tree_armature
from ._batch import BatchDynamics
from ._diagnosis import explain_non_finite_udot, non_finite_state_error
from ._state_cache import _Layout, _MatterCache  # (pickles of States name them here)
from .mobilized_body import MobilizedBody, _Ground

__all__ = ["MatterTree"]

# The compiled common cases of the helpers for user forces (core/helpers.pxi): False, having done nothing,
# where their cheap checks fail.
_add_station_force, _add_mobility_force, _add_to_row = (_core.mobod_add_station_force, _core.mobod_add_mobility_force,
                                                        _core.add_to_row)


def _default_q(name: str, nq: int, uses_quaternion: bool) -> np.ndarray:
    q = np.zeros(nq)
    if uses_quaternion:
        q[0] = 1.0
    return q


class MatterTree(BatchDynamics, Subsystem):
    """The bodies of a MultibodySystem, connected by mobilizers into a tree rooted at Ground.

    Parameters
    ----------
    system : MultibodySystem
        The system this subsystem joins (as its matter subsystem).
    """

    def __init__(self, system, name: str = "matter"):
        super().__init__(None, name)
        self._bodies: list[MobilizedBody] = []
        self.ground = _Ground(self)
        self._adopt_component(self.ground, "ground")
        self._bodies.append(self.ground)
        self._constraints: list = []
        self._motions: dict = {}
        system._set_matter_subsystem(self)

    # ------------------------------------------------------------------ the constraints layer's hooks
    # ConstraintOperators (simtk.multibody.constraints) provides these; a tree alone has no use.
    def _plan_constraints(self, state: State, layout: _Layout):
        """The constraint plan of ``state``'s instance (Instance)."""
        raise NotImplementedError("MatterTree needs the constraints layer: use SimbodyMatterSubsystem")

    def _realize_constraints_position(self, state: State, ss, cache: _MatterCache) -> None:
        raise NotImplementedError

    def _realize_constraints_velocity(self, state: State, ss, cache: _MatterCache) -> None:
        raise NotImplementedError

    def _realize_constraints_acceleration(self, state: State, ss, cache: _MatterCache) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ topology
    def _adopt_mobilized_body(self, mobod: MobilizedBody) -> int:
        for joint in (mobod._joint, mobod._euler_joint):
            if joint is not None and joint not in _core.JOINT_TYPES:
                raise NotImplementedError(
                    f"MobilizedBody.{type(mobod).__name__}: the {joint} mobilizer is not implemented yet")
        if mobod._matter is not self:
            raise ValueError(f"{mobod!r}: its parent belongs to another matter subsystem")
        self._adopt_component(mobod)
        self._bodies.append(mobod)
        self.invalidate_subsystem_topology_cache()
        return len(self._bodies) - 1

    def get_num_bodies(self) -> int:
        """Number of mobilized bodies, Ground included."""
        return len(self._bodies)

    def get_mobilized_body(self, i: int) -> MobilizedBody:
        """Mobilized body ``i`` (0 is Ground)."""
        return self._bodies[i]

    def get_ground(self) -> MobilizedBody:
        """Ground, body 0."""
        return self.ground

    upd_ground = get_ground
    Ground = get_ground

    # ------------------------------------------------------------------ modeling options
    def set_use_euler_angles(self, state: State, flag: bool) -> None:
        """Use X-Y-Z Euler angles instead of quaternions for Ball, Free, ... (a Model-stage change).

        The State drops to Topology; realizing it again lays out the new coordinates (q is reset
        to its default values, since the meaning of every rotational q changes).
        """
        self.set_discrete_variable(state, self._euler_index, bool(flag))

    def get_use_euler_angles(self, state: State) -> bool:
        """Whether rotations use Euler angles in ``state``."""
        return bool(self.get_discrete_variable(state, self._euler_index))

    # ------------------------------------------------------------------ realization
    def realize_subsystem_topology_impl(self, state: State) -> None:
        self._euler_index = self.allocate_discrete_variable(state, Stage.Model, False)
        self._layout_index = self.allocate_cache_entry(state, Stage.Model, Stage.Model, None)
        self._cache_index = self.allocate_cache_entry(state, Stage.Instance, Stage.Instance, None)
        defaults = np.array([c._disabled_by_default for c in self._constraints], dtype=bool)
        self._constraint_disabled_index = self.allocate_discrete_variable(state, Stage.Instance, defaults)
        self._locks_index = self.allocate_discrete_variable(state, Stage.Instance, {})
        self._gmap_index = self.allocate_lazy_cache_entry(state, Stage.Position, None)
        self._custom_constraint_hooks(state, "topology", self._constraints)
        for mb in self._bodies[1:]:
            hook = mb._custom_stage_hook("topology")
            if hook is not None:
                hook(state)

    def _custom_constraint_hooks(self, state: State, stage: str, constraints) -> None:
        for c in constraints:
            if not c._bulk:
                c._realize_hook(state, stage)

    def realize_subsystem_model_impl(self, state: State) -> None:
        self._custom_constraint_hooks(state, "model", self._constraints)
        euler = self.get_use_euler_angles(state)
        nb = len(self._bodies)
        codes = np.zeros(nb, dtype=np.int64)
        qoff = np.zeros(nb + 1, dtype=np.int64)
        uoff = np.zeros(nb + 1, dtype=np.int64)
        q_default, quaternion_bodies = [], []
        codes[0] = _core.JOINT_TYPES["Weld"][0]
        for i, mb in enumerate(self._bodies[1:], start=1):
            joint = mb._euler_joint if (euler and mb._euler_joint) else mb._joint
            code, nq, nu, uses_quaternion = _core.JOINT_TYPES[joint]
            if code == _core.CUSTOM:
                nq, nu = mb._custom_sizes(state)
                q_init = mb._custom_default_q(state)
                uses_quaternion = mb._custom_uses_quaternion(state)
                compiled = mb._custom_joint_code()  # a compiled kind (FunctionBased): not Python's rows
                if compiled is not None:
                    code = compiled
            else:
                q_init = _default_q(joint, nq, uses_quaternion)
            codes[i] = code
            qoff[i + 1], uoff[i + 1] = qoff[i] + nq, uoff[i] + nu
            q_default.append(q_init)
            if uses_quaternion:
                quaternion_bodies.append(i)
        self.allocate_q(state, np.concatenate(q_default) if q_default else np.zeros(0))
        self.allocate_u(state, np.zeros(int(uoff[-1])))
        layout = _Layout(codes, qoff, uoff, np.array(quaternion_bodies, dtype=np.intp), euler)
        layout.custom = [mb for mb, c in zip(self._bodies, codes) if c == _core.CUSTOM and mb._index > 0]
        self.set_cache_entry(state, self._layout_index, layout)

    def realize_subsystem_instance_impl(self, state: State) -> None:
        layout = self.get_cache_entry(state, self._layout_index)
        bodies = self._bodies
        nb = len(bodies)
        R_PF, p_PF = np.zeros((nb, 3, 3)), np.zeros((nb, 3))
        R_BM, p_BM = np.zeros((nb, 3, 3)), np.zeros((nb, 3))
        mass, p_BC, I_B = np.zeros(nb), np.zeros((nb, 3)), np.zeros((nb, 3, 3))
        jparam = np.zeros((nb, 3))
        parent = np.zeros(nb, dtype=np.int64)
        for i, mb in enumerate(bodies):
            R_PF[i], p_PF[i] = mb._X_PF.R.matrix, mb._X_PF.p
            R_BM[i], p_BM[i] = mb._X_BM.R.matrix, mb._X_BM.p
            mp = mb.get_default_mass_properties()
            mass[i], p_BC[i], I_B[i] = mp.mass, mp.com, mp.inertia.matrix
            jparam[i] = mb._params
            parent[i] = mb._parent._index if mb._parent is not None else 0
        mass[0], p_BC[0], I_B[0] = 0.0, 0.0, 0.0  # Ground is immobile; its mass never enters
        custom_sizes = {mb._index: (int(layout.qoff[mb._index + 1] - layout.qoff[mb._index]),
                                    int(layout.uoff[mb._index + 1] - layout.uoff[mb._index])) for mb in layout.custom}
        ws = _core.make_tree_kernels(parent, layout.codes, R_PF=R_PF, p_PF=p_PF, R_BM=R_BM, p_BM=p_BM,
                                     mass=mass, p_BC=p_BC, I_B=I_B, jparam=jparam, custom_sizes=custom_sizes,
                                     function_joints=self._function_joints(layout),
                                     jit_mobilizers=self._jit_mobilizers(layout),
                                     armature=tree_armature(bodies, layout.uoff))
        for mb in layout.custom:
            mb._realize_custom_instance(state)
        plan = self._plan_constraints(state, layout)
        # q_err = [constraint perr | quaternion errors]
        plan.quaternion_err_start = self.allocate_q_err(state, len(layout.quaternion_bodies))
        plan._state = None
        cache = _MatterCache(ws, layout)
        cache.plan = plan
        # The user hooks of the stages the compiled sweeps do not need, gathered once per Instance so that
        # a system without them pays nothing per step.
        cache.stage_hooks = {
            stage: [h for h in [mb._custom_stage_hook(stage) for mb in layout.custom]
                    + [getattr(c._impl, f"realize_{stage}", None) for c in plan.customs] if h is not None]
            for stage in ("time", "dynamics", "report")}
        # Custom constraints' acceleration hooks run inside the constraint solve; mobilizers' run at the end.
        cache.stage_hooks["acceleration"] = [h for h in (mb._custom_stage_hook("acceleration") for mb in layout.custom)
                                             if h is not None]
        self.set_cache_entry(state, self._cache_index, cache)
        self._custom_constraint_hooks(state, "instance", plan.customs)

    def _function_joints(self, layout: _Layout):
        """The compiled FunctionBased mobilizers' function table and records, or None without any."""
        codes = set(_core.FUNCTION_JOINT_CODES.values())
        bodies = [i for i, c in enumerate(layout.codes) if int(c) in codes]
        if not bodies:
            return None
        builder = FunctionTableBuilder()
        records = {i: self._bodies[i]._function_joint_record(builder) for i in bodies}
        return builder.build(), records

    def _jit_mobilizers(self, layout: _Layout):
        """The records of the jit mobilizers (``MobilizedBody.Jit``), or None without any."""
        codes = set(_core.JIT_JOINT_CODES.values()) | set(_core.JITN_JOINT_CODES.values())
        bodies = [self._bodies[i] for i, c in enumerate(layout.codes) if int(c) in codes]
        return bodies[0]._jit_table(bodies, len(self._bodies)) if bodies else None

    # The hooks below run only from System.realize, which has checked the State: they reach their
    # arrays directly (the public accessors' checks would cost more than the kernels for small trees).
    def realize_subsystem_position_impl(self, state: State) -> None:
        ss = state._subs[self._index]
        cache = ss.cache[self._cache_index].value
        ws = cache.ws
        if cache.layout.custom and not _core._k.all_finite(ss.q):  # (before the users' code sees a NaN)
            raise non_finite_state_error(self, state, "q")
        for mb in cache.layout.custom:  # their rows of X_FM and H_FM, before the sweep reads them
            mb._realize_custom_position(state, ws)
        if not ws.realize_position(ss.q):
            raise non_finite_state_error(self, state, "q")
        if ws.jit_mobilizer_failed >= 0:  # (a MobilizedBody.Jit's kernel: it names itself)
            self._bodies[ws.jit_mobilizer_failed]._jit_failure(state, "position")
        plan = cache.plan
        qb = cache.layout.quaternion_bodies
        if len(qb):
            qe = ss.qerr[plan.quaternion_err_start:plan.quaternion_err_start + len(qb)]
            qe[:] = ws.qerr[qb]
            if qe.min() == -1.0:  # |q| = 0: no rotation to normalize to; the sweep produced NaN
                self._refuse_zero_quaternion(qb, qe)
        if plan.m:
            self._realize_constraints_position(state, ss, cache)

    def _refuse_zero_quaternion(self, qb, qe) -> None:
        body = self._bodies[int(qb[int(np.argmin(qe))])]
        raise ValueError(f"{body!r}: its quaternion is zero (or its squared norm underflows), which is no rotation; "
                         "set a nonzero quaternion "
                         "(it is normalized when realized) or use Euler angles")

    def realize_subsystem_velocity_impl(self, state: State) -> None:
        ss = state._subs[self._index]
        cache = ss.cache[self._cache_index].value
        ws = cache.ws
        if cache.layout.custom and not _core._k.all_finite(ss.u):
            raise non_finite_state_error(self, state, "u")
        for mb in cache.layout.custom:  # their rows of HDot_FM u and qdot, before the sweep
            mb._realize_custom_velocity(state, ws)
        if not ws.realize_velocity_into(ss.u, ss.qdot):
            raise non_finite_state_error(self, state, "u")
        if ws.jit_mobilizer_failed >= 0:
            self._bodies[ws.jit_mobilizer_failed]._jit_failure(state, "velocity")
        plan = cache.plan
        if plan.m:
            self._realize_constraints_velocity(state, ss, cache)

    def realize_subsystem_time_impl(self, state: State) -> None:
        for hook in state._subs[self._index].cache[self._cache_index].value.stage_hooks["time"]:
            hook(state)

    def realize_subsystem_dynamics_impl(self, state: State) -> None:
        cache = state._subs[self._index].cache[self._cache_index].value
        cache.body_forces.fill(0.0)
        cache.mobility_forces.fill(0.0)
        for hook in cache.stage_hooks["dynamics"]:
            hook(state)

    def realize_subsystem_report_impl(self, state: State) -> None:
        for hook in state._subs[self._index].cache[self._cache_index].value.stage_hooks["report"]:
            hook(state)

    def realize_subsystem_acceleration_impl(self, state: State) -> None:
        ss = state._subs[self._index]
        cache = ss.cache[self._cache_index].value
        ws = cache.ws
        if not cache.layout.custom and not cache.plan.m:  # a plain tree: the kernel and the copies in one call
            if not ws.forward_dynamics_into(cache.mobility_forces, cache.body_forces, ss.udot, ss.qdotdot,
                                            cache.A_GB):
                self._explain_non_finite_udot(state, cache)
            if ws.jit_mobilizer_failed >= 0:  # (a jit mobilizer's NDot kernel, in qdotdot)
                self._bodies[ws.jit_mobilizer_failed]._jit_failure(state, "acceleration")
            for hook in cache.stage_hooks["acceleration"]:
                hook(state)
            return
        ws.forward_dynamics(cache.mobility_forces, cache.body_forces)
        if not _core._k.all_finite(ws.udot):
            self._explain_non_finite_udot(state, cache)
        if ws.jit_mobilizer_failed >= 0:
            self._bodies[ws.jit_mobilizer_failed]._jit_failure(state, "acceleration")
        for mb in cache.layout.custom:  # their rows of qdotdot = N udot + NDot u
            mb._realize_custom_acceleration(state, ws)
        if cache.plan.m:
            self._realize_constraints_acceleration(state, ss, cache)
        else:
            np.copyto(ss.udot, ws.udot)
            np.copyto(ss.qdotdot, ws.qdotdot)
            np.copyto(cache.A_GB, ws.A_GB)
        for hook in cache.stage_hooks["acceleration"]:  # users' hooks see the final accelerations
            hook(state)

    def _explain_non_finite_udot(self, state: State, cache: _MatterCache) -> None:
        """Raise the error that names why forward dynamics gave a non-finite udot (see _diagnosis.py)."""
        raise explain_non_finite_udot(self, state, cache)

    # ------------------------------------------------------------------ names (components)
    def _state_variable_names(self, state: State) -> tuple[list[str], list[str], list[str]]:
        """``<body>/<coordinate>`` for every q and ``<body>/<speed>`` for every u, in order."""
        layout = self.get_cache_entry(state, self._layout_index)
        qn: list[str] = []
        un: list[str] = []
        for i, mb in enumerate(self._bodies[1:], start=1):
            nq = int(layout.qoff[i + 1] - layout.qoff[i])
            nu = int(layout.uoff[i + 1] - layout.uoff[i])
            q_names, u_names = mb._variable_names(nq, nu)
            base = mb.get_name() + "/"
            qn += [base + n for n in q_names]
            un += [base + n for n in u_names]
        return qn, un, []

    def _builtin_modeling_options(self) -> dict:
        return {"use_euler_angles": (2, self.get_use_euler_angles,
                                     lambda state, v: self.set_use_euler_angles(state, bool(v)))}

    def _describe_variable(self, state: State, kind: str, i: int) -> str:
        """``q[i]``/``u[i]`` of this subsystem named by its body, e.g. ``u[3] (<MobilizedBody.Pin #4> mobility 0)``."""
        cache = self._cache(state)
        off = cache.ws.qoff if kind == "q" else cache.ws.uoff
        body = int(np.searchsorted(off, i, side="right") - 1)
        word = "coordinate" if kind == "q" else "mobility"
        return f"{kind}[{i}] ({self._bodies[body]!r} {word} {i - int(off[body])})"

    # ------------------------------------------------------------------ cache access (private)
    def _cache(self, state: State) -> _MatterCache:
        return self.get_cache_entry(state, self._cache_index)

    def _at(self, state: State, stage: int, what: str | tuple) -> _MatterCache:
        # what: the operation, or (its words, a body index) to name the body by its path (only when raising)
        ss = self._ss(state)
        if ss.stage < stage:
            what = what if isinstance(what, str) else f"{what[0]} '{self._bodies[what[1]].get_absolute_path()}'"
            raise StageTooLowError(f"{self._where()}: {what}", stage, ss.stage)
        if stage >= INSTANCE:  # the entry's latest stage is Instance: at or above it, it is current
            return ss.cache[self._cache_index].value
        return self.get_cache_entry(state, self._cache_index)

    def _layout(self, state: State) -> _Layout:
        ss = self._ss(state)
        if ss.stage < MODEL:
            raise StageTooLowError(f"{self._where()}: the q/u layout", MODEL, ss.stage)
        # Earliest and latest stage of this entry are both Model: at Model or above it is current, so the
        # checks of get_cache_entry have nothing left to find (and outputs read coordinates every sample).
        return ss.cache[self._layout_index].value

    def _q_range(self, state: State, i: int) -> tuple[int, int]:
        qoff = self._layout(state).qoff
        q0 = int(qoff[i])
        return q0, int(qoff[i + 1]) - q0

    def _u_range(self, state: State, i: int) -> tuple[int, int]:
        uoff = self._layout(state).uoff
        u0 = int(uoff[i])
        return u0, int(uoff[i + 1]) - u0

    def _pos_arrays(self, state: State):
        """R_GB (nb, 3, 3) and p_GB (nb, 3), read-only (Position)."""
        ro = self._at(state, POSITION, "body poses").ro
        return ro.R_GB, ro.p_GB

    def _vel_arrays(self, state: State) -> np.ndarray:
        """V_GB (nb, 2, 3), read-only (Velocity)."""
        return self._at(state, VELOCITY, "body velocities").ro.V_GB

    def _mass_arrays(self, state: State):
        """mass (nb,) and mass centers p_BC (nb, 3), read-only (Instance)."""
        ro = self._at(state, INSTANCE, "mass properties").ro
        return ro.mass, ro.p_BC

    def _body_pose(self, state: State, i: int):
        ro = self._at(state, POSITION, ("pose of body", i)).ro
        return ro.R_GB[i], ro.p_GB[i]

    def _mobilizer_pose(self, state: State, i: int):
        ro = self._at(state, POSITION, ("pose of the mobilizer of", i)).ro
        return ro.R_FM[i], ro.p_FM[i]

    def _body_velocity(self, state: State, i: int) -> np.ndarray:
        return self._at(state, VELOCITY, ("velocity of body", i)).ro.V_GB[i]

    def _mobilizer_velocity(self, state: State, i: int) -> np.ndarray:
        return self._at(state, VELOCITY, ("velocity of the mobilizer of", i)).ro.V_FM[i]

    def _body_acceleration(self, state: State, i: int) -> np.ndarray:
        return self._at(state, ACCELERATION, ("acceleration of body", i)).ro.A_GB[i]

    def _fit_q(self, state: State, i: int, X_FM: Transform) -> np.ndarray:
        from ._fitting import fit_q

        layout = self._layout(state)
        code = int(layout.codes[i])
        q0, nq = self._q_range(state, i)
        return fit_q(code, X_FM, self.get_q(state)[q0:q0 + nq], self._bodies[i]._params)

    def _fit_u(self, state: State, i: int, V_FM: np.ndarray) -> np.ndarray:
        ws = self._at(state, POSITION, "set_u_to_fit_velocity()").ws
        u0, nu = self._u_range(state, i)
        if nu == 0:
            return np.zeros(0)
        H = ws.H_FM[u0:u0 + nu].reshape(nu, 6).T  # (6, nu): V_FM = H u
        return np.linalg.lstsq(H, V_FM.reshape(6), rcond=None)[0]

    # ------------------------------------------------------------------ sizes
    def get_num_mobilities(self, state: State) -> int:
        """nu of this subsystem (depends on the Euler-angle switch only through Model)."""
        return self._layout(state).nu

    def get_num_coordinates(self, state: State) -> int:
        """nq of this subsystem."""
        return self._layout(state).nq

    # ------------------------------------------------------------------ force accumulators
    def _upd_forces(self, state: State):
        cache = self._at(state, DYNAMICS, "upd_rigid_body_forces() (the accumulators are zeroed at Dynamics)")
        return cache.body_forces, cache.mobility_forces

    def _accumulators(self, state: State):
        """The force accumulators, unchecked: for force subsystems' Dynamics hooks only."""
        cache = state._subs[self._index].cache[self._cache_index].value
        return cache.body_forces, cache.mobility_forces

    def _get_forces(self, state: State):
        ro = self._at(state, DYNAMICS, "get_rigid_body_forces()").ro
        return ro.body_forces, ro.mobility_forces

    # ------------------------------------------------------------------ helpers for user forces
    # A Force.Custom calls these once per element per evaluation: the compiled common case first (a body of this
    # subsystem, a plain State realized far enough, float64 3-vectors, the accumulator itself), a few hundred
    # nanoseconds; its checks failing, the Python path repeats them and raises the error naming what is wrong.
    def add_in_station_force(self, state: State, body, station, force, body_forces: np.ndarray) -> None:
        """Add ``force`` (3,) in Ground applied at ``station`` p_BS of ``body`` into ``body_forces`` (Position).

        Parameters
        ----------
        state : State
            Realized to Position (R_GB is read).
        body : MobilizedBody or int
            A body of this subsystem, or its index.
        station : array_like, shape (3,)
            p_BS, the point of application in the body's frame; finite.
        force : array_like, shape (3,)
            The force in Ground; finite.
        body_forces : numpy.ndarray, shape (nb, 2, 3)
            The accumulator: the body's row gets the torque (R_GB p_BS) x force about its origin and the force.
        """
        b = body._index if isinstance(body, MobilizedBody) and body._matter is self else self._body_index(body)
        if _add_station_force(self, state, b, station, force, body_forces):
            return
        if getattr(state, "_system", None) is not self._system:
            check_system(f"{self._where()}.add_in_station_force()", state, self._system, "State")
        R, _ = self._body_pose(state, b)
        r = R @ _vec3(station, "add_in_station_force(): station")
        f = _vec3(force, "add_in_station_force(): force")
        body_forces[b, 0] += np.cross(r, f)
        body_forces[b, 1] += f

    def add_in_body_torque(self, state: State, body, torque, body_forces: np.ndarray) -> None:
        """Add ``torque`` (3,) in Ground to ``body`` in ``body_forces`` (the State, of this System, is not read)."""
        b = body._index if isinstance(body, MobilizedBody) and body._matter is self else self._body_index(body)
        try:  # the State is not read: check it here (a try costs nothing, a getattr call would)
            foreign = state._system is not self._system
        except AttributeError:  # not a State
            foreign = True
        if foreign:
            check_system(f"{self._where()}.add_in_body_torque()", state, self._system, "State")
        if not _add_to_row(body_forces, b, 0, torque):
            body_forces[b, 0] += _vec3(torque, "add_in_body_torque(): torque")

    def add_in_mobility_force(self, state: State, body, which_u: int, f: float, mobility_forces: np.ndarray) -> None:
        """Add generalized force ``f`` to speed ``which_u`` of ``body`` in ``mobility_forces`` (nu,) (Model)."""
        b = body._index if isinstance(body, MobilizedBody) and body._matter is self else self._body_index(body)
        if _add_mobility_force(self, state, b, which_u, f, mobility_forces):
            return
        if getattr(state, "_system", None) is not self._system:
            check_system(f"{self._where()}.add_in_mobility_force()", state, self._system, "State")
        u0, n = self._u_range(state, b)
        if not 0 <= which_u < n:
            raise IndexError(f"{self._bodies[b]!r}: no u[{which_u}] (it has {n})")
        mobility_forces[u0 + which_u] += float(f)

    def _body_index(self, body) -> int:
        if isinstance(body, MobilizedBody):
            if body._matter is not self:
                check_system(self._where(), body, self._system, "body")
            return body._index
        # (a float index is refused, not truncated: 2.7 is no body)
        i = real_index(body, f"{self._where()}: a mobilized body (or its index)")
        if not 0 <= i < len(self._bodies):
            raise IndexError(f"{self._where()}: no mobilized body {i} (there are {len(self._bodies)})")
        return i

    # ------------------------------------------------------------------ operators: mass matrix
    def _ws_at(self, state: State, stage: int, what: str):
        # every operator's per-call check: a plain State's compiled realization makes it in one call;
        # else _ss and _at inline: this System's current State, far enough
        fused = state._fused
        ws = fused.ws_for(self, state, stage) if fused else None
        if ws is not None:
            return ws
        system = self._system
        if state._system is system and state._topology_version == system._topology_version:
            ss = state._subs[self._index]
            if ss.stage >= stage >= INSTANCE:
                return ss.cache[self._cache_index].value.ws
        return self._at(state, stage, what).ws

    def _check_nu(self, x, ws, what: str) -> np.ndarray:
        if ws.is_finite_vector(x):
            return x  # the common case, without a conversion
        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.shape != (ws.nu,) or not _core._k.all_finite(a):
            raise ValueError(f"{self._where()}: {what}: expected {ws.nu} finite values, got shape {a.shape}")
        return a

    def _check_body_forces(self, F, ws, what: str) -> np.ndarray:
        if ws.is_finite_body_forces(F):
            return F  # the common case, without a conversion
        a = np.ascontiguousarray(F, dtype=np.float64)
        if a.shape != (ws.nb, 2, 3) or not _core._k.all_finite(a.reshape(-1)):
            raise ValueError(f"{self._where()}: {what}: expected finite body forces of shape ({ws.nb}, 2, 3), "
                             f"got {a.shape}")
        return a

    def calc_m(self, state: State) -> np.ndarray:
        """The mass matrix M (nu, nu), by composite-body inertias (Position)."""
        return self._ws_at(state, POSITION, "calc_m()").mass_matrix_new()

    def calc_m_inv(self, state: State) -> np.ndarray:
        """M^-1 (nu, nu), column by column with the O(n) operator (Position)."""
        ws = self._ws_at(state, POSITION, "calc_m_inv()")
        col = np.zeros(ws.nu)

        def m_inv_column(e):
            ws.multiply_by_m_inv(e, col)
            return col
        return _columns(ws.nu, ws.nu, m_inv_column)

    def multiply_by_m(self, state: State, a, out: np.ndarray | None = None) -> np.ndarray:
        """M a for a (nu,), in O(n) (Position); into ``out`` (nu,) when given (not ``a`` itself)."""
        ws = self._ws_at(state, POSITION, "multiply_by_m()")
        out = np.zeros(ws.nu) if out is None else out_array(out, (ws.nu,), "multiply_by_m()", self)
        ws.multiply_by_m(self._check_nu(a, ws, "multiply_by_m()"), out)
        return out

    def multiply_by_m_inv(self, state: State, v, out: np.ndarray | None = None) -> np.ndarray:
        """M^-1 v for v (nu,), in O(n) (Position); into ``out`` (nu,) when given (not ``v`` itself)."""
        ws = self._ws_at(state, POSITION, "multiply_by_m_inv()")
        out = np.zeros(ws.nu) if out is None else out_array(out, (ws.nu,), "multiply_by_m_inv()", self)
        ws.multiply_by_m_inv(self._check_nu(v, ws, "multiply_by_m_inv()"), out)
        return out

    def calc_residual_force_ignoring_constraints(self, state: State, mobility_forces, body_forces,
                                                 known_udot) -> np.ndarray:
        """Inverse dynamics: M udot + C(q, u) - (f + J^T F), (nu,) (Velocity)."""
        ws = self._ws_at(state, VELOCITY, "calc_residual_force_ignoring_constraints()")
        out = ws.inverse_dynamics_new(known_udot, mobility_forces, body_forces)
        if out is not None:  # the common case: arrays of the right kind, checked in one call
            return out
        what = "calc_residual_force_ignoring_constraints()"
        out = np.zeros(ws.nu)
        ws.inverse_dynamics(self._check_nu(known_udot, ws, what), self._check_nu(mobility_forces, ws, what),
                            self._check_body_forces(body_forces, ws, what), out)
        return out

    def calc_acceleration_ignoring_constraints(self, state: State, mobility_forces, body_forces):
        """Forward dynamics for the given forces: ``(udot (nu,), A_GB (nb, 2, 3))`` (Velocity).

        The State's own realized accelerations are not disturbed.
        """
        ws = self._ws_at(state, VELOCITY, "calc_acceleration_ignoring_constraints()")
        what = "calc_acceleration_ignoring_constraints()"
        ws.forward_dynamics(self._check_nu(mobility_forces, ws, what), self._check_body_forces(body_forces, ws, what))
        return ws.udot.copy(), ws.A_GB.copy()

    # ------------------------------------------------------------------ operators: energy and momentum
    def calc_kinetic_energy(self, state: State) -> float:
        """1/2 u . M u (Velocity)."""
        ws = self._ws_at(state, VELOCITY, "calc_kinetic_energy()")
        u = self.get_u(state)
        Mu = np.empty(ws.nu)
        ws.multiply_by_m(u, Mu)
        return 0.5 * float(u @ Mu)

    def calc_system_mass(self, state: State) -> float:
        """Total mass of the bodies (Instance)."""
        return float(self._mass_arrays(state)[0][1:].sum())

    def _mass_center_velocities(self, state: State):
        cache = self._at(state, VELOCITY, "mass center velocities")
        ws = cache.ws
        return ws.V_GB[:, 1] + np.cross(ws.V_GB[:, 0], ws.p_GC - ws.p_GB)

    def calc_system_mass_center_location_in_ground(self, state: State) -> np.ndarray:
        """Mass center of the whole system in Ground, (3,) (Position)."""
        ws = self._ws_at(state, POSITION, "calc_system_mass_center_location_in_ground()")
        m = ws.mass[1:]
        return (m @ ws.p_GC[1:]) / m.sum()

    def calc_system_mass_center_velocity_in_ground(self, state: State) -> np.ndarray:
        """Velocity of the system mass center in Ground, (3,) (Velocity)."""
        ws = self._ws_at(state, VELOCITY, "calc_system_mass_center_velocity_in_ground()")
        m = ws.mass[1:]
        return (m @ self._mass_center_velocities(state)[1:]) / m.sum()

    def calc_system_momentum_about_ground_origin(self, state: State) -> np.ndarray:
        """Spatial momentum (angular about the Ground origin, linear), (2, 3) (Velocity)."""
        ws = self._ws_at(state, VELOCITY, "calc_system_momentum_about_ground_origin()")
        v_C = self._mass_center_velocities(state)
        m = ws.mass
        w = ws.V_GB[:, 0]
        # Central inertia in G: R (I_B - m [c]^T[c]-shift) R^T, with I_B about the body origin.
        c = ws.p_BC
        I_C_B = ws.I_B - m[:, None, None] * (np.einsum("bi,bi->b", c, c)[:, None, None] * np.eye(3)
                                            - np.einsum("bi,bj->bij", c, c))
        I_C_G = ws.R_GB @ I_C_B @ np.swapaxes(ws.R_GB, 1, 2)
        linear = m[:, None] * v_C
        angular = np.einsum("bij,bj->bi", I_C_G, w) + np.cross(ws.p_GC, linear)
        return np.stack([angular[1:].sum(axis=0), linear[1:].sum(axis=0)])

    # ------------------------------------------------------------------ operators: Jacobians
    def multiply_by_system_jacobian(self, state: State, u) -> np.ndarray:
        """J u: body spatial velocities (nb, 2, 3) for speeds u (Position)."""
        ws = self._ws_at(state, POSITION, "multiply_by_system_jacobian()")
        out = np.zeros((ws.nb, 2, 3))
        ws.jacobian(self._check_nu(u, ws, "multiply_by_system_jacobian()"), out)
        return out

    def multiply_by_system_jacobian_transpose(self, state: State, F) -> np.ndarray:
        """J^T F: generalized forces (nu,) equivalent to body forces F (nb, 2, 3) (Position)."""
        ws = self._ws_at(state, POSITION, "multiply_by_system_jacobian_transpose()")
        out = np.zeros(ws.nu)
        ws.jacobian_transpose(self._check_body_forces(F, ws, "multiply_by_system_jacobian_transpose()"), out)
        return out

    def calc_system_jacobian(self, state: State) -> np.ndarray:
        """J (6 nb, nu): column j is the body spatial velocities for a unit u_j (Position)."""
        ws = self._ws_at(state, POSITION, "calc_system_jacobian()")
        col = np.zeros((ws.nb, 2, 3))

        def jacobian_column(e):
            ws.jacobian(e, col)
            return col
        return _columns(6 * ws.nb, ws.nu, jacobian_column)

    def calc_bias_for_system_jacobian(self, state: State) -> np.ndarray:
        """JDot u: body accelerations (nb, 2, 3) when udot = 0 (Velocity)."""
        return self._ws_at(state, VELOCITY, "calc_bias_for_system_jacobian()").A_bias.copy()

    def _stations_arg(self, bodies, stations, what: str):
        b = np.atleast_1d(np.array([self._body_index(x) for x in np.atleast_1d(np.asarray(bodies, dtype=object))],
                                   dtype=np.int64))
        s = np.ascontiguousarray(real_array(stations, f"{self._where()}: {what}: stations", copy=False)).reshape(-1, 3)
        if len(s) != len(b) or not np.isfinite(s).all():
            raise ValueError(f"{self._where()}: {what}: need one finite station (3,) per body")
        return b, s

    def calc_station_jacobian(self, state: State, bodies, stations) -> np.ndarray:
        """Station Jacobian (3k, nu) for k stations p_BS on ``bodies`` (Position)."""
        ws = self._ws_at(state, POSITION, "calc_station_jacobian()")
        b, s = self._stations_arg(bodies, stations, "calc_station_jacobian()")
        return _columns(3 * len(b), ws.nu, lambda e: _core.station_jacobian(ws, b, s, e))

    def calc_frame_jacobian(self, state: State, bodies, frame_origins) -> np.ndarray:
        """Frame Jacobian (6k, nu): spatial velocities of frames at ``frame_origins`` on ``bodies`` (Position)."""
        ws = self._ws_at(state, POSITION, "calc_frame_jacobian()")
        b, s = self._stations_arg(bodies, frame_origins, "calc_frame_jacobian()")
        return _columns(6 * len(b), ws.nu, lambda e: _core.frame_jacobian(ws, b, s, e))

    # ------------------------------------------------------------------ operators: kinematic coupling N
    def multiply_by_n(self, state: State, transpose: bool, v) -> np.ndarray:
        """N v (nq,) from v (nu,), or N^T v (nu,) from v (nq,) when ``transpose`` (Position)."""
        cache = self._at(state, POSITION, "multiply_by_n()")
        out = _core.multiply_by_n(cache.ws, bool(transpose), v)
        for mb in cache.layout.custom:  # the kernels leave Custom (and reversed) rows to their owners
            mb._multiply_by_n_rows(state, bool(transpose), np.asarray(v, dtype=np.float64), out)
        self._check_jit_n_rows(state, cache.layout, out, "n")
        return out

    def multiply_by_n_inv(self, state: State, transpose: bool, v) -> np.ndarray:
        """N^-1 v (nu,) from v (nq,), or N^-T v (nq,) from v (nu,) when ``transpose`` (Position)."""
        cache = self._at(state, POSITION, "multiply_by_n_inv()")
        out = _core.multiply_by_n_inv(cache.ws, bool(transpose), v)
        for mb in cache.layout.custom:
            mb._multiply_by_n_inv_rows(state, bool(transpose), np.asarray(v, dtype=np.float64), out)
        self._check_jit_n_rows(state, cache.layout, out, "ninv")
        return out

    def _check_jit_n_rows(self, state: State, layout, out: np.ndarray, which: str) -> None:
        # A jit mobilizer's N kernel that failed (or an N without a left inverse) left NaN rows: its body
        # raises its kernel's error (a NaN the caller's v brought in is the caller's own)
        if _core._k.all_finite(out):
            return
        for i, code in enumerate(layout.codes):
            if int(code) in _core._JITN_SIZES:
                q = np.array(self._bodies[i]._raw_q(state))
                self._bodies[i]._impl._n(q, which)

    def calc_qdot(self, state: State, u) -> np.ndarray:
        """qdot = N(q) u (nq,) (Position)."""
        return self.multiply_by_n(state, False, u)

    # ------------------------------------------------------------------ reaction forces
    def calc_mobilizer_reaction_forces(self, state: State) -> np.ndarray:
        """Force each mobilizer's parent side applies to its body, at M's origin, in Ground, (nb, 2, 3).

        Newton-Euler, tip to base: what body i needs to move as it does (I A + gyroscopic) less the
        applied forces, plus what its children take through their mobilizers (Acceleration).
        """
        cache = self._at(state, ACCELERATION, "calc_mobilizer_reaction_forces()")
        ws = cache.ws
        nb = ws.nb
        m, _c_B, I_B = ws.mass, ws.p_BC, ws.I_B
        R, p, V, A = ws.R_GB, ws.p_GB, ws.V_GB, cache.A_GB
        r_C = ws.p_GC - p  # mass center offsets in G, (nb, 3)
        I_O = R @ I_B @ np.swapaxes(R, 1, 2)  # inertias about body origins, in G
        w, b, a = V[:, 0], A[:, 0], A[:, 1]
        # Spatial momentum rate about the body origin of a rigid body: (I_O b + w x I_O w + m r_C x a,
        # m (a + b x r_C + w x (w x r_C))).
        needed = np.zeros((nb, 2, 3))
        needed[:, 0] = (np.einsum("bij,bj->bi", I_O, b) + np.cross(w, np.einsum("bij,bj->bi", I_O, w))
                        + m[:, None] * np.cross(r_C, a))
        needed[:, 1] = m[:, None] * (a + np.cross(b, r_C) + np.cross(w, np.cross(w, r_C)))
        # The constraints act as applied forces -G^T lambda alongside the body forces.
        F = needed - cache.body_forces + self._total_constraint_forces(state)[0]
        # (about each body origin; the children's reactions are added below)
        # Ground's slot, as in Simbody, is what holds Ground in place: its base bodies' reactions
        # (and whatever acts on Ground itself) moved to the Ground origin.
        parent = ws.parent
        for i in range(nb - 1, 0, -1):
            pa = parent[i]
            d = p[i] - p[pa]
            F[pa, 0] += F[i, 0] + np.cross(d, F[i, 1])
            F[pa, 1] += F[i, 1]
        # Shift from the body origin to M's origin: torque about M = torque about B - (p_GM - p_GB) x f.
        out = np.empty_like(F)
        out[:, 1] = F[:, 1]
        out[:, 0] = F[:, 0] - np.cross(ws.p_GM - p, F[:, 1])
        return out


def _columns(n_rows: int, n_cols: int, apply) -> np.ndarray:
    """The (n_rows, n_cols) matrix of a linear operator, one O(n) application per unit vector.

    ``apply(e)`` returns the operator applied to e (any shape with n_rows entries); the explicit
    matrices of the O(n) operators cost O(n nu) this way.
    """
    out = np.zeros((n_rows, n_cols))
    e = np.zeros(n_cols)
    for j in range(n_cols):
        e[j] = 1.0
        out[:, j] = np.reshape(apply(e), -1)
        e[j] = 0.0
    return out


def _vec3(x, what: str) -> np.ndarray:
    a = real_array(x, what, copy=False)
    if a.shape != (3,) or not np.isfinite(a).all():
        raise ValueError(f"{what}: expected a finite 3-vector, got {x!r}")
    return a
