# Batched dynamics: one tree, K independent configurations, one nogil call.
#
# A TreeBatch shares the frozen inputs of one TreeKernels workspace (topology,
# joint frames, mass properties: read only here) and owns one block of cache
# arrays per thread, laid out like a TreeKernels' and bound to a Tree struct of
# its own. Item k of a batch runs the same kernels, in the same order, as the
# one-at-a-time path of the matter and force subsystems:
#
#   k_position(q_k); k_articulated; k_velocity(u_k);
#   F, f = sum over the built-in force sets (position sets first, then velocity
#          sets, as GeneralForceSubsystem adds them);  f += tau_k;
#   k_forward(f, F)  ->  udot_k
#
# so its results are bitwise those of the State API on the same data (the
# compiled code is the same functions; no reassociation happens anywhere).
# The items are independent and are shared among threads by an OpenMP static
# schedule when the core is compiled with OpenMP; otherwise (or with one
# thread) the loop is a plain serial loop. A thread only writes its own block
# and the output rows of its items, so results do not depend on the thread
# count.
#
# Custom mobilizers are refused (their rows are written by Python), as are
# force elements evaluated in Python; the Python layer (simtk/multibody/tree/
# _batch.py) checks this before building a TreeBatch.

from cython.parallel cimport prange, threadid
from libc.stdlib cimport malloc, free

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int simtk_openmp_compiled(void) { return 1; }
    static int simtk_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int simtk_openmp_compiled(void) { return 0; }
    static int simtk_omp_max_threads(void) { return 1; }
    #endif
    """
    int simtk_openmp_compiled() noexcept nogil
    int simtk_omp_max_threads() noexcept nogil

#: Whether this build of the core has OpenMP (batched calls then run on several threads).
OPENMP = bool(simtk_openmp_compiled())


def omp_max_threads():
    """OpenMP's default thread count (OMP_NUM_THREADS or the cores), 1 without OpenMP."""
    return int(simtk_omp_max_threads())


cdef Py_ssize_t BATCH_SHIFT = 4294967296  # force failures: set * BATCH_SHIFT + element
cdef Py_ssize_t BATCH_MIN_EVALS = 32  # evaluations per thread below which fewer threads are used

cdef enum:
    BATCH_SEMI_EXPLICIT_EULER = 0
    BATCH_RK4 = 1

#: name -> code of the fixed-step schemes of TreeBatch.step
BATCH_SCHEMES = {"semi_explicit_euler": BATCH_SEMI_EXPLICIT_EULER, "rk4": BATCH_RK4}


cdef struct BatchScratch:
    Tree t
    double* bf      # (nb, 2, 3) the System's body forces
    double* mf      # (nu,) the System's mobility forces, then + tau
    double* q0      # (nq,) step scratch: the step's start
    double* u0      # (nu,)
    double* qs      # (nq,) a stage's point
    double* us      # (nu,)
    double* qacc    # (nq,) the weighted sum of the stages' slopes
    double* uacc    # (nu,)


cdef Py_ssize_t _block_doubles(Py_ssize_t nb, Py_ssize_t nu, Py_ssize_t nq, Py_ssize_t nfb) noexcept nogil:
    # The cache arrays of a Tree (as TreeKernels allocates them) plus the batch
    # scratch, rounded up to 64 bytes so that threads never share a cache line.
    cdef Py_ssize_t n = (2 * nq + nu              # q, qdot, qdotdot / u
                         + nq + nu                # (qdot counted above) udot
                         + 9 * nb * 3             # R_FM, R_GF, R_GB
                         + 3 * nb * 4             # p_FM, p_GM, p_GB, p_GC
                         + nb                     # qerr
                         + 6 * nu * 3             # H_FM, S, U
                         + 36 * nb * 5            # I_O, P, Pa, Dinv, Ic
                         + 6 * nb * 12            # V_FM, HDotu_FM, V_O, V_GB, c, b, Abias_O,
                                                  # A_bias, A_O, A_GB, f, g
                         + FB_WSTRIDE * nfb       # fbw (FunctionBased records)
                         + 6 * nb + nu            # bf, mf
                         + 3 * (nq + nu))         # q0/u0, qs/us, qacc/uacc
    return (n + 7) // 8 * 8 + 8


cdef void _bind_block(BatchScratch* s, const Tree* src, double* p) noexcept nogil:
    # Point a thread's Tree at its block (zeroed by the caller) and share the
    # frozen inputs of src. Ground's rows are never written by the sweeps; the
    # rotations of Ground are set to the identity as TreeKernels does.
    cdef Tree* t = &s.t
    cdef Py_ssize_t nb = src.nb, nu = src.nu, nq = src.nq
    t.nb = nb; t.nu = nu; t.nq = nq
    t.lean = True
    t.parent = src.parent; t.jtype = src.jtype; t.qoff = src.qoff; t.uoff = src.uoff
    t.jparam = src.jparam; t.R_PF = src.R_PF; t.p_PF = src.p_PF
    t.R_BM = src.R_BM; t.p_BM = src.p_BM
    t.mass = src.mass; t.p_BC = src.p_BC; t.I_B = src.I_B
    t.rpar = src.rpar; t.cfirst = src.cfirst; t.fflag = src.fflag
    t.cmass = src.cmass; t.cp_BC = src.cp_BC; t.cI_B = src.cI_B
    t.arm = src.arm
    t.nfb = src.nfb; t.fbrec = src.fbrec; t.fbi = src.fbi; t.fbd = src.fbd
    t.fn_ent = src.fn_ent; t.fn_par = src.fn_par
    t.jm = src.jm; t.jm_bad = -1
    # no inputs until the owner gives its own (TreeStepper.set_inputs): src's buffer may move
    t.time = 0.0; t.inputs = NULL; t.ninputs = 0
    t.z = NULL; t.zdot = NULL; t.nz = 0  # (the stepper binds each derivative's)
    t.q = p; p += nq
    t.u = p; p += nu
    t.R_FM = p; p += 9 * nb
    t.p_FM = p; p += 3 * nb
    t.H_FM = p; p += 6 * nu
    t.qerr = p; p += nb
    t.R_GF = p; p += 9 * nb
    t.p_GM = p; p += 3 * nb
    t.R_GB = p; p += 9 * nb
    t.p_GB = p; p += 3 * nb
    t.p_GC = p; p += 3 * nb
    t.S = p; p += 6 * nu
    t.I_O = p; p += 36 * nb
    t.P = p; p += 36 * nb
    t.Pa = p; p += 36 * nb
    t.U = p; p += 6 * nu
    t.Dinv = p; p += 36 * nb
    t.V_FM = p; p += 6 * nb
    t.HDotu_FM = p; p += 6 * nb
    t.qdot = p; p += nq
    t.V_O = p; p += 6 * nb
    t.V_GB = p; p += 6 * nb
    t.c = p; p += 6 * nb
    t.b = p; p += 6 * nb
    t.Abias_O = p; p += 6 * nb
    t.A_bias = p; p += 6 * nb
    t.udot = p; p += nu
    t.qdotdot = p; p += nq
    t.A_O = p; p += 6 * nb
    t.A_GB = p; p += 6 * nb
    t.f = p; p += 6 * nb
    t.g = p; p += 6 * nb
    t.Ic = p; p += 36 * nb
    t.fbw = p; p += FB_WSTRIDE * src.nfb
    s.bf = p; p += 6 * nb
    s.mf = p; p += nu
    s.q0 = p; p += nq
    s.u0 = p; p += nu
    s.qs = p; p += nq
    s.us = p; p += nu
    s.qacc = p; p += nq
    s.uacc = p; p += nu
    set_identity33(t.R_GB)
    set_identity33(t.R_GF)
    set_identity33(t.R_FM)


# ---------------------------------------------------------------------------
# One item
# ---------------------------------------------------------------------------

cdef Py_ssize_t _item_forces(BatchScratch* s, const FSet* sets, Py_ssize_t nsets) noexcept nogil:
    # F, f = the System's built-in forces at the realized q, u (zeroed first).
    # Returns set * BATCH_SHIFT + element for the first element a kernel left
    # out (non-finite forces), or -1.
    # Cost: that of the force kernels, O(elements + n).
    cdef Tree* t = &s.t
    cdef Py_ssize_t j, e, bad = -1
    memset(s.bf, 0, 6 * t.nb * sizeof(double))
    memset(s.mf, 0, t.nu * sizeof(double))
    for j in range(nsets):
        e = fset_add(&sets[j], t, t.q, t.u, s.bf, s.mf)
        if e >= 0 and bad < 0:
            bad = j * BATCH_SHIFT + e
    return bad


cdef struct Held:
    # Forces held constant over a step, added after the force sets in element order (as the force
    # subsystem adds a Force.DiscreteForces element's values after its compiled sets): k elements,
    # each with body forces (6 nb) and, where has_mf[e], mobility forces (nu).
    Py_ssize_t k
    const double* bf      # (k, 6 nb)
    const double* mf      # (k, nu)
    const char* has_mf    # (k,)


cdef Py_ssize_t _item_udot(BatchScratch* s, const FSet* sets, Py_ssize_t nsets, const double* q,
                           const double* u, const double* tau, const Held* held=NULL) noexcept nogil:
    # udot = M(q)^-1 (f_sys(q, u) + held + tau - bias(q, u)), left in s.t.udot (and
    # qdot = N(q) u in s.t.qdot). tau may be NULL (no applied mobility forces), held too.
    # Cost: one position, articulated, velocity and forward sweep, O(n).
    cdef Tree* t = &s.t
    if q != t.q:
        memcpy(t.q, q, t.nq * sizeof(double))
    k_position(t)
    k_articulated(t)
    return _item_udot_at_q(s, sets, nsets, u, tau, held)


cdef Py_ssize_t _item_udot_at_q(BatchScratch* s, const FSet* sets, Py_ssize_t nsets, const double* u,
                                const double* tau, const Held* held=NULL) noexcept nogil:
    # _item_udot's velocity-dependent half, at the positions and articulated inertias the tree
    # holds. Cost: one velocity and forward sweep, O(n).
    cdef Tree* t = &s.t
    cdef Py_ssize_t i, e, bad
    cdef Py_ssize_t n6 = 6 * t.nb
    if u != t.u:
        memcpy(t.u, u, t.nu * sizeof(double))
    k_velocity(t)  # lean: no station-bias caches
    bad = _item_forces(s, sets, nsets)
    if held != NULL:
        for e in range(held.k):
            for i in range(n6):
                s.bf[i] += held.bf[e * n6 + i]
            if held.has_mf[e]:
                for i in range(t.nu):
                    s.mf[i] += held.mf[e * t.nu + i]
    if tau != NULL:
        for i in range(t.nu):
            s.mf[i] += tau[i]
    k_forward(t, s.mf, s.bf)
    return bad


cdef void _n_mul(const Tree* t, const double* q, const double* u, double* qdot) noexcept nogil:
    # qdot = N(q) u, body by body (no Custom mobilizers here). O(n).
    cdef Py_ssize_t i
    for i in range(1, t.nb):
        tree_n_mul(t, i, q + t.qoff[i], u + t.uoff[i], qdot + t.qoff[i])


cdef void _normalize_quaternions(const Tree* t, double* q) noexcept nogil:
    # q[quaternion] /= |q[quaternion]| for the quaternion mobilizers, as the
    # integrators' projection does after a step. A zero quaternion is left as
    # it is (the next evaluation then gives NaN, reported by the caller).
    cdef Py_ssize_t i
    cdef int jt
    cdef double* x
    cdef double r
    for i in range(1, t.nb):
        jt = <int>t.jtype[i]
        if jt == J_BALL or jt == J_FREE or jt == J_ELLIPSOID or jt == J_LINE_ORIENTATION or jt == J_FREE_LINE:
            x = q + t.qoff[i]
            r = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3])
            if r > 0.0:
                x[0] /= r; x[1] /= r; x[2] /= r; x[3] /= r


cdef Py_ssize_t _item_step(BatchScratch* s, const FSet* sets, Py_ssize_t nsets, double* q, double* u,
                           const double* tau, double h, Py_ssize_t nsteps, int scheme) noexcept nogil:
    # nsteps fixed steps of size h from (q, u), in place; tau held constant.
    # Semi-explicit Euler:  u1 = u0 + h udot(q0, u0);  q1 = q0 + h N(q0) u1.
    # RK4 (classical) on y = (q, u), y' = (N(q) u, udot(q, u)):
    #   k1 = y'(y0), k2 = y'(y0 + h/2 k1), k3 = y'(y0 + h/2 k2), k4 = y'(y0 + h k3),
    #   y1 = y0 + h/6 (k1 + 2 k2 + 2 k3 + k4).
    # Either way the quaternions are normalized at the end of every step.
    # Cost: per step 1 (Euler) or 4 (RK4) evaluations of udot, O(n) each.
    cdef Tree* t = &s.t
    cdef Py_ssize_t n, i, st, bad = -1, b
    cdef Py_ssize_t nq = t.nq, nu = t.nu
    cdef double a
    for n in range(nsteps):
        if scheme == BATCH_SEMI_EXPLICIT_EULER:
            b = _item_udot(s, sets, nsets, q, u, tau)
            if b >= 0 and bad < 0:
                bad = b
            for i in range(nu):
                u[i] = u[i] + h * t.udot[i]
            _n_mul(t, q, u, s.qacc)
            for i in range(nq):
                q[i] = q[i] + h * s.qacc[i]
        else:
            memcpy(s.q0, q, nq * sizeof(double))
            memcpy(s.u0, u, nu * sizeof(double))
            memcpy(s.qs, q, nq * sizeof(double))
            memcpy(s.us, u, nu * sizeof(double))
            for st in range(4):
                b = _item_udot(s, sets, nsets, s.qs, s.us, tau)
                if b >= 0 and bad < 0:
                    bad = b
                # t.qdot = N(qs) us was filled by the velocity sweep
                if st == 0:
                    memcpy(s.qacc, t.qdot, nq * sizeof(double))
                    memcpy(s.uacc, t.udot, nu * sizeof(double))
                elif st < 3:
                    for i in range(nq):
                        s.qacc[i] += 2.0 * t.qdot[i]
                    for i in range(nu):
                        s.uacc[i] += 2.0 * t.udot[i]
                else:
                    for i in range(nq):
                        s.qacc[i] += t.qdot[i]
                    for i in range(nu):
                        s.uacc[i] += t.udot[i]
                if st < 3:
                    a = 0.5 * h if st < 2 else h
                    for i in range(nq):
                        s.qs[i] = s.q0[i] + a * t.qdot[i]
                    for i in range(nu):
                        s.us[i] = s.u0[i] + a * t.udot[i]
            a = h / 6.0
            for i in range(nq):
                q[i] = s.q0[i] + a * s.qacc[i]
            for i in range(nu):
                u[i] = s.u0[i] + a * s.uacc[i]
        _normalize_quaternions(t, q)
    return bad


# ---------------------------------------------------------------------------
# The batch object
# ---------------------------------------------------------------------------

cdef Py_ssize_t _first_bad(const idx_t[::1] bad) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(bad.shape[0]):
        if bad[k] >= 0:
            return k
    return -1


cdef inline idx_t zero_quaternion_at(const double* q, const idx_t* qoff, Py_ssize_t n) noexcept nogil:
    # the offset qoff[i] of the first all-zero quaternion q[o:o+4] of one configuration, or -1
    cdef Py_ssize_t i
    cdef idx_t o
    for i in range(n):
        o = qoff[i]
        if q[o] == 0.0 and q[o + 1] == 0.0 and q[o + 2] == 0.0 and q[o + 3] == 0.0:
            return o
    return -1


def first_zero_quaternion(const double[:, ::1] q, const idx_t[::1] qoff):
    """(row, offset) of the first all-zero quaternion q[row, offset:offset+4], or None."""
    cdef Py_ssize_t k
    cdef idx_t o
    if qoff.shape[0] == 0:
        return None
    for k in range(q.shape[0]):
        o = zero_quaternion_at(&q[k, 0], &qoff[0], qoff.shape[0])
        if o >= 0:
            return (k, o)
    return None


cdef class TreeBatch:
    """K-at-a-time dynamics over the tree of one TreeKernels workspace.

    Build it through :func:`simtk._core.make_tree_batch`, which checks that the
    tree has no Custom mobilizer and that the force sets fit it. The methods
    take C-contiguous float64 arrays with K rows (checked for shape by the
    caller, simtk/multibody/tree/_batch.py) and a thread count. One call at a
    time per TreeBatch (it owns the per-thread scratch).
    """

    cdef readonly TreeKernels ws
    cdef readonly tuple sets
    cdef FSet* fsets
    cdef Py_ssize_t nsets
    # the inputs its sets read (the largest ForceSet.ninputs): set_inputs gives them to every row
    # (a State's controls and time, held), a stepper its own; has_time_terms: some set evaluates
    # functions of time (then the stepping kernel, which does not advance the time, refuses it)
    cdef readonly Py_ssize_t ninputs
    # the state variables z its sets read (a muscle's): only the stepper, which gives each derivative
    # its z and zdot rows, runs such sets; the batch kernels refuse them
    cdef readonly Py_ssize_t nz
    cdef bint has_time_terms
    cdef object _inputs
    cdef double _time
    cdef BatchScratch* scr
    cdef double* block
    cdef int nt_alloc
    cdef Py_ssize_t stride

    def __cinit__(self):
        self.fsets = NULL
        self.scr = NULL
        self.block = NULL
        self.nt_alloc = 0

    def __init__(self, TreeKernels ws, tuple sets, bint custom=False):
        # custom: a tree with Custom mobilizers, for a time loop whose derivatives come from a State
        # (StateDerivative: only the tree's layout and a scratch block are used, no batch kernel)
        cdef Py_ssize_t i
        cdef ForceSet fs
        for i in range(1, ws.nb):
            if ws.t.jtype[i] == J_CUSTOM and not (custom and not sets):
                raise ValueError(f"TreeBatch: body {i} has a Custom mobilizer, which the batch kernels cannot run")
        self.ninputs = 0
        self.nz = 0
        self.has_time_terms = False
        self._inputs = None
        self._time = 0.0
        for s in sets:
            (<ForceSet?>s)._fits(ws, ws.nq)
            self.ninputs = max(self.ninputs, (<ForceSet>s).ninputs)
            self.nz = max(self.nz, (<ForceSet>s).nz)
            if (<ForceSet>s).terms is not None and (<ForceSet>s).terms.shape[0]:
                self.has_time_terms = True
        self.ws = ws
        self.sets = sets
        self.nsets = len(sets)
        self.fsets = <FSet*>malloc((self.nsets + 1) * sizeof(FSet))
        if self.fsets == NULL:
            raise MemoryError()
        for i in range(self.nsets):
            fs = <ForceSet>sets[i]
            self.fsets[i] = fs.s  # the parameter arrays stay owned (and alive) by the ForceSets
        self.stride = _block_doubles(ws.nb, ws.nu, ws.nq, ws.nfb)

    def __dealloc__(self):
        free(self.fsets)
        free(self.scr)
        free(self.block)

    def __reduce__(self):
        return (TreeBatch, (self.ws, self.sets, False))

    @property
    def nb(self):
        return self.ws.nb

    @property
    def nu(self):
        return self.ws.nu

    @property
    def nq(self):
        return self.ws.nq

    cdef int _ensure(self, int nt) except -1:
        # One scratch block per thread (allocated once, grown on demand).
        cdef int i
        if nt <= self.nt_alloc:
            return 0
        free(self.scr)
        free(self.block)
        self.scr = NULL
        self.block = NULL
        self.nt_alloc = 0
        self.block = <double*>malloc(nt * self.stride * sizeof(double) + 64)
        self.scr = <BatchScratch*>malloc(nt * sizeof(BatchScratch))
        if self.block == NULL or self.scr == NULL:
            raise MemoryError()
        memset(self.block, 0, nt * self.stride * sizeof(double) + 64)
        for i in range(nt):
            _bind_block(&self.scr[i], &self.ws.t, self.block + i * self.stride)
        self.nt_alloc = nt
        self._give_inputs()
        return 0

    cdef void _give_inputs(self):
        cdef int i
        for i in range(self.nt_alloc):
            self.scr[i].t.time = self._time
            self.scr[i].t.inputs = _dp(self._inputs) if self._inputs is not None else NULL
            self.scr[i].t.ninputs = (<cnp.ndarray>self._inputs).shape[0] if self._inputs is not None else 0

    def set_inputs(self, double time, values):
        """The time and inputs (controls) every row's forces read from now on (``values`` (n,), at
        least ``ninputs``, copied): the State's, held for the whole batch."""
        cdef cnp.ndarray v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        if v.shape[0] < self.ninputs or not np.isfinite(v).all() or not np.isfinite(time):
            raise ValueError(f"TreeBatch.set_inputs: expected {self.ninputs} finite inputs and a finite time")
        self._inputs = v.copy()
        self._time = time
        self._give_inputs()

    cdef int _no_z(self) except -1:
        if self.nz:
            raise ValueError(f"TreeBatch: its force sets read {self.nz} state variables z (muscles' activations and "
                             "fiber lengths), which the batch kernels do not take")
        return 0

    cdef int _threads(self, Py_ssize_t K, int nthreads, Py_ssize_t evals_per_row=1, bint forces=True) except -1:
        # At most the threads asked for, at most one per row, and at least BATCH_MIN_EVALS
        # evaluations per thread: waking a sleeping thread costs about as much as tens of
        # evaluations, so small batches run on the calling thread. (The results never depend
        # on the thread count.)
        cdef Py_ssize_t work = K * (evals_per_row if evals_per_row > 0 else 1)
        cdef int nt = nthreads if nthreads > 0 else 1
        if forces:
            self._no_z()
        if self.ninputs and (self._inputs is None or (<cnp.ndarray>self._inputs).shape[0] < self.ninputs):
            raise ValueError(f"TreeBatch: its force sets read {self.ninputs} inputs (controls); none were given "
                             "(set_inputs)")
        if not simtk_openmp_compiled():
            nt = 1
        if nt > work // BATCH_MIN_EVALS:
            nt = <int>(work // BATCH_MIN_EVALS) if work >= BATCH_MIN_EVALS else 1
        if nt > K:
            nt = <int>K if K > 0 else 1
        self._ensure(nt)
        return nt

    def forward(self, const double[:, ::1] q, const double[:, ::1] u, tau, double[:, ::1] out,
                idx_t[::1] bad, int nthreads):
        """out[k] = udot(q[k], u[k]) under the System's built-in forces plus tau[k]
        (tau (K, nu) or None). bad[k] = the first force set that left an element
        out for item k, or -1. Returns the first such k, or -1."""
        cdef Py_ssize_t K = q.shape[0], k, nu = self.ws.nu
        cdef int nt = self._threads(K, nthreads), tid
        cdef const double[:, ::1] tv
        cdef const double* tp = NULL
        cdef BatchScratch* scr = self.scr
        cdef const FSet* fs = self.fsets
        cdef Py_ssize_t ns = self.nsets
        if K == 0 or nu == 0:
            return -1
        if tau is not None:
            tv = tau
            tp = &tv[0, 0]
        if nt == 1:
            with nogil:
                for k in range(K):
                    bad[k] = _item_udot(&scr[0], fs, ns, &q[k, 0], &u[k, 0],
                                        tp + k * nu if tp != NULL else NULL)
                    memcpy(&out[k, 0], scr[0].t.udot, nu * sizeof(double))
        else:
            for k in prange(K, nogil=True, num_threads=nt, schedule="dynamic", chunksize=8):
                tid = threadid()
                bad[k] = _item_udot(&scr[tid], fs, ns, &q[k, 0], &u[k, 0],
                                    tp + k * nu if tp != NULL else NULL)
                memcpy(&out[k, 0], scr[tid].t.udot, nu * sizeof(double))
        return _first_bad(bad)

    def inverse(self, const double[:, ::1] q, const double[:, ::1] u, const double[:, ::1] udot,
                double[:, ::1] out, idx_t[::1] bad, int nthreads):
        """out[k] = the mobility forces tau that, added to the System's built-in
        forces, give udot[k]: M udot + bias - f_sys - J^T F_sys (RNEA). Returns the
        first row whose forces failed (bad[k] >= 0), or -1."""
        cdef Py_ssize_t K = q.shape[0], k, nu = self.ws.nu, nq = self.ws.nq
        cdef int nt = self._threads(K, nthreads), tid
        cdef BatchScratch* scr = self.scr
        cdef const FSet* fs = self.fsets
        cdef Py_ssize_t ns = self.nsets
        if K == 0 or nu == 0:
            return -1
        if nt == 1:
            with nogil:
                for k in range(K):
                    bad[k] = _item_inverse(&scr[0], fs, ns, &q[k, 0], &u[k, 0], &udot[k, 0], &out[k, 0])
        else:
            for k in prange(K, nogil=True, num_threads=nt, schedule="dynamic", chunksize=8):
                tid = threadid()
                bad[k] = _item_inverse(&scr[tid], fs, ns, &q[k, 0], &u[k, 0], &udot[k, 0], &out[k, 0])
        return _first_bad(bad)

    def mass_matrix(self, const double[:, ::1] q, double[:, :, ::1] out, int nthreads):
        """out[k] = M(q[k]) (nu, nu) by the composite-body method."""
        cdef Py_ssize_t K = q.shape[0], k, nu = self.ws.nu
        cdef int nt = self._threads(K, nthreads, 1, False), tid
        cdef BatchScratch* scr = self.scr
        if K == 0 or nu == 0:
            return
        if nt == 1:
            with nogil:
                for k in range(K):
                    _item_mass_matrix(&scr[0], &q[k, 0], &out[k, 0, 0])
        else:
            for k in prange(K, nogil=True, num_threads=nt, schedule="dynamic", chunksize=8):
                tid = threadid()
                _item_mass_matrix(&scr[tid], &q[k, 0], &out[k, 0, 0])

    def step(self, double[:, ::1] q, double[:, ::1] u, tau, double h, Py_ssize_t nsteps, int scheme,
             idx_t[::1] bad, int nthreads):
        """Advance every (q[k], u[k]) in place by nsteps fixed steps of size h
        (scheme: a code of BATCH_SCHEMES), tau[k] (or None) held constant. Returns the
        first row whose forces failed (bad[k] >= 0), or -1."""
        cdef Py_ssize_t K = q.shape[0], k, nu = self.ws.nu
        cdef int nt = self._threads(K, nthreads, nsteps * (4 if scheme == BATCH_RK4 else 1)), tid
        cdef const double[:, ::1] tv
        cdef const double* tp = NULL
        cdef BatchScratch* scr = self.scr
        cdef const FSet* fs = self.fsets
        cdef Py_ssize_t ns = self.nsets
        if self.has_time_terms:
            raise ValueError("TreeBatch.step: a force set evaluates functions of time (an actuator's control), "
                             "which the batch's steps do not advance")
        if scheme != BATCH_SEMI_EXPLICIT_EULER and scheme != BATCH_RK4:
            raise ValueError(f"unknown scheme code {scheme}")
        if K == 0 or nu == 0 or nsteps <= 0:
            return -1
        if tau is not None:
            tv = tau
            tp = &tv[0, 0]
        if nt == 1:
            with nogil:
                for k in range(K):
                    bad[k] = _item_step(&scr[0], fs, ns, &q[k, 0], &u[k, 0],
                                        tp + k * nu if tp != NULL else NULL, h, nsteps, scheme)
        else:
            for k in prange(K, nogil=True, num_threads=nt, schedule="dynamic", chunksize=8):
                tid = threadid()
                bad[k] = _item_step(&scr[tid], fs, ns, &q[k, 0], &u[k, 0],
                                    tp + k * nu if tp != NULL else NULL, h, nsteps, scheme)
        return _first_bad(bad)


cdef Py_ssize_t _item_inverse(BatchScratch* s, const FSet* sets, Py_ssize_t nsets, const double* q,
                              const double* u, const double* udot, double* out) noexcept nogil:
    # tau = M(q) udot + bias(q, u) - f_sys - J^T F_sys by RNEA (no articulated
    # inertias needed). Cost: position, velocity and one RNEA sweep, O(n).
    cdef Tree* t = &s.t
    cdef Py_ssize_t bad
    memcpy(t.q, q, t.nq * sizeof(double))
    k_position(t)
    memcpy(t.u, u, t.nu * sizeof(double))
    k_velocity(t)  # lean: no station-bias caches
    bad = _item_forces(s, sets, nsets)
    k_inverse(t, udot, s.mf, s.bf, out)
    return bad


cdef void _item_mass_matrix(BatchScratch* s, const double* q, double* out) noexcept nogil:
    # M(q) by CRBA. Cost: position sweep plus O(nu * depth).
    cdef Tree* t = &s.t
    memcpy(t.q, q, t.nq * sizeof(double))
    k_position(t)
    k_mass_matrix(t, out)
