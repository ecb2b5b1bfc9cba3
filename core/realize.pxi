# Fused realization: the Time to Acceleration stages of a multibody State in one call.
#
# The matter subsystem of built-in mobilizers (no Custom ones, no constraint equations, no matter
# stage hooks) and the built-in force kinds of one GeneralForceSubsystem are pure kernels: their
# stage hooks do nothing but run kernels and copy arrays, and a FusedRealizer does the same work,
# in the same order, on the same arrays (simtk/multibody/_fused.py checks the model and binds the
# arrays):
#
#   Position:      ws.q = q; k_position; the quaternion errors into qerr; articulated stale
#   Velocity:      ws.u = u; k_velocity; qdot = ws.qdot
#   Dynamics:      F = f = 0; unless current: Fp = fp = 0, Fp, fp += position sets;
#                  F += Fp, f += fp; F, f += velocity sets
#   Acceleration:  articulated if stale; k_forward(f, F); udot, qdotdot, A_GB = ws's
#
# so the results are bitwise those of the hooks. Whatever else the System holds is Python and
# stays Python: the force subsystem's Python elements (Force.Custom, the bulk kinds evaluated in
# Python) and their stage hooks, and every other subsystem's hooks. With any of them the realizer
# runs stage by stage in the System's realization order, calling each Python part where the
# hooks' path calls it, with the State's stage marks as that path leaves them at that moment (so
# a Python element reads the State through the usual API); without them the stages run in one
# nogil block and are marked at the end.
#
# A kernel failure (a zero quaternion, a force element with non-finite forces, a non-finite udot)
# returns a code instead, and the caller lets the stage hooks realize the failed stage again to
# raise their diagnosis. An exception in a Python part is raised as the hooks' path raises it
# (the State left below the stage, the stage and subsystem named in a note).

from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC


cdef inline double _now() noexcept nogil:
    # a monotonic clock in seconds (the Python parts' cost, see FusedRealizer.python_seconds)
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


cdef enum:
    FUSED_OK = 0
    FUSED_ZERO_QUATERNION = 1
    FUSED_FORCE = 2
    FUSED_NON_FINITE_UDOT = 3
    FUSED_NON_FINITE_STATE = 4  # a q at Position, a u at Velocity: the hooks name it

# the stage numbers of simtk.common.stage (checked by simtk/multibody/_fused.py)
cdef enum:
    FS_INSTANCE = 3
    FS_TIME = 4
    FS_POSITION = 5
    FS_VELOCITY = 6
    FS_DYNAMICS = 7
    FS_ACCELERATION = 8

FUSED_STAGES = dict(Instance=FS_INSTANCE, Time=FS_TIME, Position=FS_POSITION, Velocity=FS_VELOCITY,
                    Dynamics=FS_DYNAMICS, Acceleration=FS_ACCELERATION)

# what a realization plan's entry is (FusedRealizer's plan): the matter's kernels, the compiled
# force subsystem (its kernels and Python parts), a Python hook, or a subsystem without a hook
cdef enum:
    PLAN_MATTER = 0
    PLAN_FORCES = 1
    PLAN_HOOK = 2
    PLAN_NONE = 3

FUSED_PLAN_KINDS = dict(matter=PLAN_MATTER, forces=PLAN_FORCES, hook=PLAN_HOOK, none=PLAN_NONE)

_FS_STAGE_NAMES = {FS_TIME: "time", FS_POSITION: "position", FS_VELOCITY: "velocity", FS_DYNAMICS: "dynamics",
                   FS_ACCELERATION: "acceleration"}
_FS_STAGE_TITLES = {FS_TIME: "Time", FS_POSITION: "Position", FS_VELOCITY: "Velocity", FS_DYNAMICS: "Dynamics",
                    FS_ACCELERATION: "Acceleration"}


cdef class FusedRealizer:
    """The kernels of the Time..Acceleration stages of one State, and its Python parts (see the
    file's head).

    Holds references to every array it writes, so it belongs to one State and one Instance.
    """

    cdef TreeKernels ws
    cdef tuple refs, psets_t, vsets_t
    cdef double* q
    cdef double* u
    cdef double* qdot
    cdef double* udot
    cdef double* qdotdot
    cdef double* qerr
    cdef const idx_t* qbodies
    cdef Py_ssize_t nqb
    cdef double* bf
    cdef double* mf
    cdef double* A_GB
    cdef double* pbf
    cdef double* pmf
    cdef FSet* psets
    cdef FSet* vsets
    cdef Py_ssize_t npsets, nvsets
    cdef bint has_position
    # the force subsystem's position-forces cache entry (its marked_at, earliest), or None: kept
    # current as the force subsystem's Dynamics hook would find it
    cdef public object entry
    # the matter subsystem whose workspace ws is (its operators' per-call check: ws_for)
    cdef public object matter
    # stage by stage (Python parts present): per stage Time..Acceleration, ((subsystem index, plan
    # kind, hook), ...) in the System's realization order; None: the one nogil block
    cdef tuple plan
    cdef readonly bint staged
    # the compiled force subsystem's Python parts: the subsystem (whose _custom_hooks and
    # _add_python_forces run them), whether its elements have stage hooks, and the Python elements
    # of its position and velocity parts ((bulk groups, customs), or None)
    cdef object fsub
    cdef bint customs
    cdef object py_position, py_velocity
    # the wall time spent in the Python parts (per key: "position", "velocity" and "hooks" of the
    # compiled force subsystem, a subsystem index for a hook) and the number of Dynamics realizations
    cdef dict seconds
    cdef readonly Py_ssize_t dynamics_count
    # whether a compiled set reads the evaluation's time (FK_JIT's kernels): then the State's time is
    # put into the workspace before the forces are added
    cdef bint reads_time

    def __cinit__(self):
        self.psets = NULL
        self.vsets = NULL

    def __init__(self, TreeKernels ws, cnp.ndarray q, cnp.ndarray u, cnp.ndarray qdot, cnp.ndarray udot,
                 cnp.ndarray qdotdot, cnp.ndarray qerr, cnp.ndarray quaternion_bodies, cnp.ndarray body_forces,
                 cnp.ndarray mobility_forces, cnp.ndarray A_GB, position_body_forces, position_mobility_forces,
                 tuple position_sets, tuple velocity_sets, bint has_position, plan=None, fsub=None,
                 bint customs=False, py_position=None, py_velocity=None):
        cdef Py_ssize_t i, nb = ws.nb
        cdef cnp.ndarray qb = np.ascontiguousarray(quaternion_bodies, dtype=np.int64)
        self.ws = ws
        self.q = _f64_data(q, ws.nq, True, "q")
        self.u = _f64_data(u, ws.nu, True, "u")
        self.qdot = _f64_data(qdot, ws.nq, True, "qdot")
        self.udot = _f64_data(udot, ws.nu, True, "udot")
        self.qdotdot = _f64_data(qdotdot, ws.nq, True, "qdotdot")
        self.nqb = qb.shape[0]
        self.qerr = _f64_data(qerr, self.nqb, True, "qerr")
        for i in range(self.nqb):
            if not 0 < qb[i] < nb:
                raise ValueError("FusedRealizer: a quaternion body is out of range")
        self.qbodies = <const idx_t*>cnp.PyArray_DATA(qb)
        self.bf = _f64_data(body_forces, 6 * nb, True, "body_forces")
        self.mf = _f64_data(mobility_forces, ws.nu, True, "mobility_forces")
        self.A_GB = _f64_data(A_GB, 6 * nb, True, "A_GB")
        self.has_position = has_position
        if has_position:
            self.pbf = _f64_data(position_body_forces, 6 * nb, True, "position_body_forces")
            self.pmf = _f64_data(position_mobility_forces, ws.nu, True, "position_mobility_forces")
        for s in position_sets + velocity_sets:
            (<ForceSet?>s)._fits(ws, ws.nq)
        self.reads_time = any((<ForceSet>s).kind == FK_JIT for s in position_sets + velocity_sets)
        self.psets_t = position_sets
        self.vsets_t = velocity_sets
        self.npsets = len(position_sets)
        self.nvsets = len(velocity_sets)
        self.psets = <FSet*>malloc((self.npsets + 1) * sizeof(FSet))
        self.vsets = <FSet*>malloc((self.nvsets + 1) * sizeof(FSet))
        if self.psets == NULL or self.vsets == NULL:
            raise MemoryError()
        for i in range(self.npsets):
            self.psets[i] = (<ForceSet>position_sets[i]).s
        for i in range(self.nvsets):
            self.vsets[i] = (<ForceSet>velocity_sets[i]).s
        self.refs = (q, u, qdot, udot, qdotdot, qerr, qb, body_forces, mobility_forces, A_GB,
                     position_body_forces, position_mobility_forces)
        self.staged = plan is not None
        if self.staged:
            plan = tuple(tuple(stage) for stage in plan)
            if len(plan) != FS_ACCELERATION - FS_TIME + 1:
                raise ValueError("FusedRealizer: the plan needs one entry per stage, Time to Acceleration")
            for stage in plan:
                for idx, kind, hook in stage:
                    if kind not in (PLAN_MATTER, PLAN_FORCES, PLAN_HOOK, PLAN_NONE) or \
                            (kind == PLAN_HOOK and not callable(hook)):
                        raise ValueError(f"FusedRealizer: plan entry {(idx, kind, hook)!r} is not valid")
                    if kind == PLAN_FORCES and fsub is None:
                        raise ValueError("FusedRealizer: the plan names a force subsystem but none is given")
            if (py_position is not None and not has_position) or (py_position is not None and
                                                                    position_body_forces is None):
                raise ValueError("FusedRealizer: Python position forces need the position-forces cache")
        self.plan = plan
        self.fsub = fsub
        self.customs = customs
        self.py_position = py_position
        self.py_velocity = py_velocity
        self.seconds = {}
        self.dynamics_count = 0

    def plan_entries(self):
        """The plan: per stage Time..Acceleration, ((subsystem index, plan kind, hook), ...), or ()."""
        return self.plan if self.staged else ()

    def python_seconds(self):
        """``(seconds, evaluations)``: the wall time spent in each Python part while realizing (a dict:
        "position", "velocity" and "hooks" of the compiled force subsystem's Python elements, a
        subsystem index for its hooks) and the number of realizations of Dynamics, to share it by."""
        return dict(self.seconds), self.dynamics_count

    cdef int _spent(self, object key, double t0) except -1:
        self.seconds[key] = self.seconds.get(key, 0.0) + (_now() - t0)
        return 0

    def __dealloc__(self):
        free(self.psets)
        free(self.vsets)

    def ws_for(self, object matter, object state, int stage):
        """The kernel workspace of ``state`` for an operator of ``matter`` that needs ``stage``
        (Instance or above), when ``state`` is the State of this compiled realization, realized that
        far and current with its System; else None, and the operator's own check says why. The
        matter operators' per-call check in one call."""
        if (matter is self.matter and stage >= FS_INSTANCE and is_state(state)
                and slot_get(state, SL.fused) is self and slot_get(state, SL.stage) >= stage
                and slot_get(state, SL.topology_version) == slot_get(state, SL.system)._topology_version):
            return self.ws
        return None

    def realize_to(self, object system, object state, object stage):
        """MultibodySystem.realize's fused path: True when ``state`` (of ``system`` at its current
        topology) is realized to ``stage`` on return; False when the stage hooks must go on (a
        stage above Acceleration or a State below Instance, another System's State, a failure).
        An exception of a Python part propagates as the hooks' path raises it."""
        cdef int g, to_stage = stage
        if not is_state(state):
            return False  # (a State subclass: the hooks)
        if slot_get(state, SL.system) is not system \
                or slot_get(state, SL.topology_version) != system._topology_version:
            return False
        g = slot_get(state, SL.stage)
        if g >= to_stage:
            return True
        if to_stage <= FS_ACCELERATION:
            return FS_INSTANCE <= g and self._run(system, state, g, to_stage)
        # to Acceleration here, the rest by the hooks (the Python path's top = ACCELERATION, an int)
        if FS_INSTANCE <= g < FS_ACCELERATION:
            self._run(system, state, g, FS_ACCELERATION)
        return False

    cdef bint _run(self, object system, object state, int from_stage, int to_stage) except -1:
        # Realize ``state`` from ``from_stage`` (Instance or above) to ``to_stage`` (at most Acceleration)
        # with the State's bookkeeping: on success every subsystem's stage, the State's stage and its
        # highest stage become ``to_stage``, the System's realization counts of the stages run go up by
        # one and the position-forces entry is marked current; on a failure the stages above
        # ``from_stage`` are invalidated (for the hooks to realize them again and raise their
        # diagnosis). Returns whether it succeeded.
        # (state: of the registered State class, see realize_to; its slots read by offset)
        cdef Py_ssize_t k
        cdef object entry = self.entry
        cdef bint track, current = False
        cdef list counts
        if self.staged:
            return self._run_staged(system, state, from_stage, to_stage)
        track = entry is not None and from_stage < FS_DYNAMICS <= to_stage
        if track:  # the position forces are current as the force subsystem's Dynamics hook would find them
            current = entry.marked_at >= (<list>slot_get(state, SL.inval_epoch))[entry.earliest]
        if self.reads_time and from_stage < FS_DYNAMICS <= to_stage:
            self.ws.t.time = state.get_time()
        if self._realize(from_stage, to_stage, current):
            state._invalidate(from_stage + 1)
            return False
        reached = to_stage  # an int, as the hooks' path leaves it
        set_subsystem_stages(slot_get(state, SL.subs), reached)
        slot_set(state, SL.stage, reached)
        if slot_get(state, SL.hi) < to_stage:
            slot_set(state, SL.hi, reached)
        counts = system._num_realizations
        for k in range(from_stage + 1, to_stage + 1):
            counts[k] += 1
        if track and not current:
            entry.marked_at = slot_get(state, SL.epoch)
        return True

    cdef int _realize(self, int from_stage, int to_stage, bint position_forces_current) noexcept:
        # Run the stages after from_stage up to to_stage (at most Acceleration) in one nogil block.
        # Returns 0, or the failure code (the State's arrays are then partly written: the caller must
        # realize those stages again through the hooks).
        cdef TreeKernels ws = self.ws
        cdef int code = FUSED_OK
        cdef bint abi_valid = ws._abi_valid
        with nogil:
            if from_stage < FS_POSITION <= to_stage:
                code = self._k_position(&abi_valid)
            if code == FUSED_OK and from_stage < FS_VELOCITY <= to_stage:
                code = self._k_velocity()
            if code == FUSED_OK and from_stage < FS_DYNAMICS <= to_stage:
                self._k_zero_forces()
                if self.has_position:
                    if not position_forces_current:
                        code = self._k_position_sets()
                    self._k_add_position_forces()
                if self._k_velocity_sets() != FUSED_OK:
                    code = FUSED_FORCE
            if code == FUSED_OK and from_stage < FS_ACCELERATION <= to_stage:
                code = self._k_acceleration(&abi_valid)
        ws._abi_valid = abi_valid
        return code

    # ---------------------------------------------------------------- the stages' kernels
    cdef int _k_position(self, bint* abi_valid) noexcept nogil:
        # Position: ws.q = q; k_position; the quaternion errors into qerr; articulated stale
        cdef Tree* t = &self.ws.t
        cdef Py_ssize_t i
        cdef int code = FUSED_OK
        if self.ws.nq:
            # (a NaN written through upd_q would otherwise realize to Dynamics without a word)
            if first_non_finite_at(self.q, self.ws.nq) >= 0:
                return FUSED_NON_FINITE_STATE
            memcpy(t.q, self.q, self.ws.nq * sizeof(double))
        k_position(t)
        abi_valid[0] = False
        if t.jm_bad >= 0:  # a jit mobilizer's kernel failed: the hooks name it
            code = FUSED_NON_FINITE_STATE
        for i in range(self.nqb):
            self.qerr[i] = t.qerr[self.qbodies[i]]
            if self.qerr[i] == -1.0:  # |q| = 0: the hooks raise their message
                code = FUSED_ZERO_QUATERNION
        return code

    cdef int _k_velocity(self) noexcept nogil:
        # Velocity: ws.u = u; k_velocity; qdot = ws.qdot (FUSED_NON_FINITE_STATE for a non-finite u)
        cdef Tree* t = &self.ws.t
        if self.ws.nu:
            if first_non_finite_at(self.u, self.ws.nu) >= 0:
                return FUSED_NON_FINITE_STATE
            memcpy(t.u, self.u, self.ws.nu * sizeof(double))
        k_velocity(t)
        if self.ws.nq:
            memcpy(self.qdot, t.qdot, self.ws.nq * sizeof(double))
        return FUSED_NON_FINITE_STATE if t.jm_bad >= 0 else FUSED_OK

    cdef void _k_zero_forces(self) noexcept nogil:
        # the matter's Dynamics: the accumulators F = f = 0
        memset(self.bf, 0, 6 * self.ws.nb * sizeof(double))
        if self.ws.nu:
            memset(self.mf, 0, self.ws.nu * sizeof(double))

    cdef int _k_position_sets(self) noexcept nogil:
        # Fp = fp = 0; Fp, fp += the position sets
        cdef Tree* t = &self.ws.t
        cdef Py_ssize_t k
        cdef int code = FUSED_OK
        memset(self.pbf, 0, 6 * self.ws.nb * sizeof(double))
        if self.ws.nu:
            memset(self.pmf, 0, self.ws.nu * sizeof(double))
        for k in range(self.npsets):
            if fset_add(&self.psets[k], t, t.q, t.u, self.pbf, self.pmf) >= 0:
                code = FUSED_FORCE
        return code

    cdef void _k_add_position_forces(self) noexcept nogil:
        # F += Fp, f += fp
        cdef Py_ssize_t i
        for i in range(6 * self.ws.nb):
            self.bf[i] += self.pbf[i]
        for i in range(self.ws.nu):
            self.mf[i] += self.pmf[i]

    cdef int _k_velocity_sets(self) noexcept nogil:
        # F, f += the velocity sets
        cdef Tree* t = &self.ws.t
        cdef Py_ssize_t k
        cdef int code = FUSED_OK
        for k in range(self.nvsets):
            if fset_add(&self.vsets[k], t, t.q, t.u, self.bf, self.mf) >= 0:
                code = FUSED_FORCE
        return code

    cdef int _k_acceleration(self, bint* abi_valid) noexcept nogil:
        # Acceleration: articulated if stale; k_forward(f, F); udot, qdotdot, A_GB = ws's
        cdef Tree* t = &self.ws.t
        cdef Py_ssize_t nu = self.ws.nu, nq = self.ws.nq
        if not abi_valid[0]:
            k_articulated(t)
            abi_valid[0] = True
        k_forward(t, self.mf if nu else NULL, self.bf)
        if first_non_finite_at(t.udot, nu) >= 0:
            return FUSED_NON_FINITE_UDOT
        if t.jm_bad >= 0:  # a jit mobilizer's NDot kernel failed (NaN in qdotdot only): the hooks name it
            return FUSED_NON_FINITE_STATE
        if nu:
            memcpy(self.udot, t.udot, nu * sizeof(double))
        if nq:
            memcpy(self.qdotdot, t.qdotdot, nq * sizeof(double))
        memcpy(self.A_GB, t.A_GB, 6 * self.ws.nb * sizeof(double))
        return FUSED_OK

    # ---------------------------------------------------------------- stage by stage, with Python parts
    cdef bint _run_staged(self, object system, object state, int from_stage, int to_stage) except -1:
        # System.realize's loop from Time on (simtk/common/system.py), with the matter's and the
        # compiled force subsystem's hooks replaced by their kernels: per stage g the State's highest
        # stage is raised to g, each subsystem's part runs in realization order and is marked at g
        # right after it (the parts after it see it), then the State is at g and the count of g goes
        # up. A kernel failure leaves the State below g and returns False (the hooks redo g); an
        # exception of a Python part leaves it below g and propagates with the hooks' note.
        cdef int g, code
        cdef double t0
        cdef list counts = system._num_realizations
        cdef list subs = slot_get(state, SL.subs)
        cdef object ss
        cdef TreeKernels ws = self.ws
        cdef bint abi_valid
        g = from_stage
        while g < to_stage:
            g += 1
            if slot_get(state, SL.hi) < g:
                slot_set(state, SL.hi, g)
            for idx, kind, hook in <tuple>self.plan[g - FS_TIME]:
                code = FUSED_OK
                try:
                    if kind == PLAN_MATTER:
                        abi_valid = ws._abi_valid
                        with nogil:
                            if g == FS_POSITION:
                                code = self._k_position(&abi_valid)
                            elif g == FS_VELOCITY:
                                code = self._k_velocity()
                            elif g == FS_DYNAMICS:
                                self._k_zero_forces()
                            elif g == FS_ACCELERATION:
                                code = self._k_acceleration(&abi_valid)
                        ws._abi_valid = abi_valid
                    elif kind == PLAN_FORCES:
                        code = self._forces_stage(state, g)
                    elif kind == PLAN_HOOK:
                        t0 = _now()
                        hook(state)
                        self._spent(idx, t0)
                except BaseException as exc:
                    # as System.realize: drop every subsystem below g, so that a retry redoes the stage
                    state._invalidate(g)
                    if isinstance(exc, Exception):
                        exc.add_note(f"while realizing {_FS_STAGE_TITLES[g]} of subsystem "
                                     f"'{subs[idx].name}' (#{idx})")
                    raise
                if code != FUSED_OK:
                    state._invalidate(g)
                    return False
                ss = subs[idx]
                if type(ss) is _SUBSTATE:
                    slot_set(ss, SL.sub_stage, g)
                else:
                    ss.stage = g
            slot_set(state, SL.stage, g)
            counts[g] += 1
            if g == FS_DYNAMICS:
                self.dynamics_count += 1
        return True

    cdef int _forces_stage(self, object state, int g) except -1:
        # GeneralForceSubsystem's stage hook: its elements' stage hooks (Force.Custom), and at Dynamics
        # its forces: the position part when not current (the compiled sets, then the Python
        # elements, into the cached part), added in; then the velocity part (the same, into the
        # accumulators). Returns FUSED_OK or FUSED_FORCE (a compiled element's forces not finite).
        cdef object entry = self.entry
        cdef int code = FUSED_OK
        cdef double t0
        if self.customs:
            t0 = _now()
            self.fsub._custom_hooks(state, _FS_STAGE_NAMES[g])
            self._spent("hooks", t0)
        if g != FS_DYNAMICS:
            return FUSED_OK
        if self.reads_time:
            self.ws.t.time = state.get_time()
        if self.has_position:
            if not entry.marked_at >= (<list>slot_get(state, SL.inval_epoch))[entry.earliest]:
                with nogil:
                    code = self._k_position_sets()
                if code != FUSED_OK:
                    return code
                if self.py_position is not None:
                    t0 = _now()
                    self.fsub._add_python_forces(state, self.matter, self.py_position[0], self.py_position[1],
                                                 self.refs[10], self.refs[11])
                    self._spent("position", t0)
                entry.marked_at = slot_get(state, SL.epoch)
            with nogil:
                self._k_add_position_forces()
        with nogil:
            code = self._k_velocity_sets()
        if code != FUSED_OK:
            return code
        if self.py_velocity is not None:
            t0 = _now()
            self.fsub._add_python_forces(state, self.matter, self.py_velocity[0], self.py_velocity[1],
                                         self.refs[7], self.refs[8])
            self._spent("velocity", t0)
        return FUSED_OK
