# Fused realization: the Position to Acceleration stages of a plain multibody State in one call.
#
# A State is plain when its System is a matter subsystem of built-in mobilizers (no Custom ones,
# no constraint equations, no matter stage hooks) and at most one force subsystem whose enabled
# elements are all built-in kinds (compiled ForceSets). Its stage hooks then do nothing but run
# kernels and copy arrays, and a FusedRealizer does the same work, in the same order, on the same
# arrays (simtk/multibody/_fused.py checks plainness and binds the arrays):
#
#   Position:      ws.q = q; k_position; the quaternion errors into qerr; articulated stale
#   Velocity:      ws.u = u; k_velocity; qdot = ws.qdot
#   Dynamics:      F = f = 0; unless current: Fp = fp = 0, Fp, fp += position sets;
#                  F += Fp, f += fp; F, f += velocity sets
#   Acceleration:  articulated if stale; k_forward(f, F); udot, qdotdot, A_GB = ws's
#
# so the results are bitwise those of the hooks. Any failure (a zero quaternion, a force element
# with non-finite forces, a non-finite udot) returns a code instead, and the caller lets the
# stage hooks run again from the start to raise their diagnosis.

cdef enum:
    FUSED_OK = 0
    FUSED_ZERO_QUATERNION = 1
    FUSED_FORCE = 2
    FUSED_NON_FINITE_UDOT = 3

# the stage numbers of simtk.common.stage (checked by simtk/multibody/_fused.py)
cdef enum:
    FS_INSTANCE = 3
    FS_POSITION = 5
    FS_VELOCITY = 6
    FS_DYNAMICS = 7
    FS_ACCELERATION = 8

FUSED_STAGES = dict(Instance=FS_INSTANCE, Position=FS_POSITION, Velocity=FS_VELOCITY, Dynamics=FS_DYNAMICS,
                    Acceleration=FS_ACCELERATION)


cdef class FusedRealizer:
    """The kernels of the Position..Acceleration stages of one plain State (see the file's head).

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

    def __cinit__(self):
        self.psets = NULL
        self.vsets = NULL

    def __init__(self, TreeKernels ws, cnp.ndarray q, cnp.ndarray u, cnp.ndarray qdot, cnp.ndarray udot,
                 cnp.ndarray qdotdot, cnp.ndarray qerr, cnp.ndarray quaternion_bodies, cnp.ndarray body_forces,
                 cnp.ndarray mobility_forces, cnp.ndarray A_GB, position_body_forces, position_mobility_forces,
                 tuple position_sets, tuple velocity_sets, bint has_position):
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
        stage above Acceleration or a State below Instance, another System's State, a failure)."""
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
        cdef bint track = entry is not None and from_stage < FS_DYNAMICS <= to_stage
        cdef bint current = False
        cdef list counts
        if track:  # the position forces are current as the force subsystem's Dynamics hook would find them
            current = entry.marked_at >= (<list>slot_get(state, SL.inval_epoch))[entry.earliest]
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
        # Run the stages after from_stage up to to_stage (at most Acceleration). Returns 0, or the
        # failure code (the State's arrays are then partly written: the caller must realize those
        # stages again through the hooks).
        cdef TreeKernels ws = self.ws
        cdef Tree* t = &ws.t
        cdef Py_ssize_t i, k, nb = ws.nb, nu = ws.nu, nq = ws.nq
        cdef int code = FUSED_OK
        cdef bint abi_valid = ws._abi_valid
        with nogil:
            if from_stage < FS_POSITION <= to_stage:
                if nq:
                    memcpy(t.q, self.q, nq * sizeof(double))
                k_position(t)
                abi_valid = False
                for i in range(self.nqb):
                    self.qerr[i] = t.qerr[self.qbodies[i]]
                    if self.qerr[i] == -1.0:  # |q| = 0: the hooks raise their message
                        code = FUSED_ZERO_QUATERNION
            if code == FUSED_OK and from_stage < FS_VELOCITY <= to_stage:
                if nu:
                    memcpy(t.u, self.u, nu * sizeof(double))
                k_velocity(t)
                if nq:
                    memcpy(self.qdot, t.qdot, nq * sizeof(double))
            if code == FUSED_OK and from_stage < FS_DYNAMICS <= to_stage:
                memset(self.bf, 0, 6 * nb * sizeof(double))
                if nu:
                    memset(self.mf, 0, nu * sizeof(double))
                if self.has_position:
                    if not position_forces_current:
                        memset(self.pbf, 0, 6 * nb * sizeof(double))
                        if nu:
                            memset(self.pmf, 0, nu * sizeof(double))
                        for k in range(self.npsets):
                            if fset_add(&self.psets[k], t, t.q, t.u, self.pbf, self.pmf) >= 0:
                                code = FUSED_FORCE
                    for i in range(6 * nb):
                        self.bf[i] += self.pbf[i]
                    for i in range(nu):
                        self.mf[i] += self.pmf[i]
                for k in range(self.nvsets):
                    if fset_add(&self.vsets[k], t, t.q, t.u, self.bf, self.mf) >= 0:
                        code = FUSED_FORCE
            if code == FUSED_OK and from_stage < FS_ACCELERATION <= to_stage:
                if not abi_valid:
                    k_articulated(t)
                    abi_valid = True
                k_forward(t, self.mf if nu else NULL, self.bf)
                if first_non_finite_at(t.udot, nu) >= 0:
                    code = FUSED_NON_FINITE_UDOT
                if code == FUSED_OK:
                    if nu:
                        memcpy(self.udot, t.udot, nu * sizeof(double))
                    if nq:
                        memcpy(self.qdotdot, t.qdotdot, nq * sizeof(double))
                    memcpy(self.A_GB, t.A_GB, 6 * nb * sizeof(double))
        ws._abi_valid = abi_valid
        return code
