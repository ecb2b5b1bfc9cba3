# User constraint kernels compiled outside the core (numba cfuncs, Cython cdef functions): a set holds
# one kernel's C function pointer and each element's parameter vector, and evaluates the elements'
# position, velocity and acceleration errors, or the forces of unit multipliers (the rows of G^T), in
# one call without the GIL. The constraint solve around them is the Python path's (_solver.py), which
# takes these rows as it takes a Constraint.Custom's; the compiled time loop does not take them.
#
# The C signature (simtk.jit.constraint builds a numba trampoline with it; a Cython user hands a cdef
# function of the same signature through a PyCapsule named JIT_CONSTRAINT_CAPSULE):
#   int64 kernel(int64 what, int64 mp, int64 mv, int64 ma, double t, const double* q (nq,),
#                const double* u (nu,), const double* udot (nu,), const double* R_GB (nb,3,3),
#                const double* p_GB (nb,3), const double* V_GB (nb,2,3), const double* A_GB (nb,2,3),
#                int64 nb, int64 nq, int64 nu, const double* params, int64 nparams,
#                const double* multipliers (mp+mv+ma,), double* errors, double* body_forces (nb,2,3),
#                double* mobility_forces (nu,))
# what: JIT_CON_PERR writes errors (mp,), JIT_CON_VERR errors (mp+mv,) (pverr then verr), JIT_CON_AERR
# errors (mp+mv+ma,) from udot and A_GB, JIT_CON_FORCES adds the G^T-side forces of the multipliers
# into body_forces (torque about the body origin, force; in Ground) and mobility_forces. It returns 0,
# or non-zero when the kernel failed (an exception inside it, an out-of-range index).

JIT_CONSTRAINT_CAPSULE = "simtk.jit.constraint_kernel"

cdef enum:
    JIT_CON_PERR = 0
    JIT_CON_VERR = 1
    JIT_CON_AERR = 2
    JIT_CON_FORCES = 3

ctypedef int64_t (*jit_con_t)(int64_t what, int64_t mp, int64_t mv, int64_t ma, double t, const double* q,
                              const double* u, const double* udot, const double* R_GB, const double* p_GB,
                              const double* V_GB, const double* A_GB, int64_t nb, int64_t nq, int64_t nu,
                              const double* params, int64_t nparams, const double* lam, double* err,
                              double* bf, double* mf) noexcept nogil


cdef double[1] _JC_EMPTY


cdef inline const double* _jc_ptr(const double[::1] a, Py_ssize_t n, str what) except? NULL:
    if a.shape[0] != n:
        raise ValueError(f"JitConstraintSet: {what} must have {n} entries, it has {a.shape[0]}")
    return &a[0] if n else <const double*>&_JC_EMPTY[0]


cdef class JitConstraintSet:
    """The elements of one constraint kernel: its C function and each element's parameters.

    Built by ``simtk.multibody.constraints.jit_constraint``; ``owner`` keeps the kernel's code alive.
    """

    cdef void* fn
    cdef readonly Py_ssize_t n, mp, mv, ma, m, npk
    cdef double[:, ::1] params
    cdef int64_t[::1] nparams
    cdef readonly object owner

    def __init__(self, Py_ssize_t address, params, nparams, Py_ssize_t mp, Py_ssize_t mv, Py_ssize_t ma, owner):
        if address == 0:
            raise ValueError("JitConstraintSet: the kernel's address is 0")
        if mp < 0 or mv < 0 or ma < 0 or mp + mv + ma == 0:
            raise ValueError("JitConstraintSet: mp, mv, ma must be >= 0 with at least one equation")
        p = np.array(params, dtype=np.float64, order="C", copy=True)
        if p.ndim != 2:
            raise ValueError("JitConstraintSet: params must be 2-D (n, max parameters)")
        k = np.array(nparams, dtype=np.int64).reshape(-1)
        if k.shape[0] != p.shape[0] or (k.shape[0] and (k.min() < 0 or k.max() > p.shape[1])):
            raise ValueError("JitConstraintSet: nparams must give each element's parameter count (<= params.shape[1])")
        self.fn = <void*><size_t>address
        self.params, self.nparams = p, k
        self.n, self.npk = p.shape[0], p.shape[1]
        self.mp, self.mv, self.ma, self.m = mp, mv, ma, mp + mv + ma
        self.owner = owner

    def __reduce__(self):
        # (made again from its owner, which gives the kernel's address in the unpickling process)
        return (_jit_con_set_rebuild, (np.asarray(self.params).copy(), np.asarray(self.nparams).copy(), self.mp,
                                       self.mv, self.ma, self.owner))

    def errors(self, int what, double t, const double[::1] q, const double[::1] u, const double[::1] udot,
               const double[::1] R_GB, const double[::1] p_GB, const double[::1] V_GB, const double[::1] A_GB,
               double[:, ::1] out):
        """Each element's errors of level ``what`` (0: position (mp,), 1: velocity (mp+mv,), 2:
        acceleration (m,)) into the rows of ``out``; -1, or the first element whose kernel failed."""
        cdef Py_ssize_t nb = R_GB.shape[0] // 9, nq = q.shape[0], nu = u.shape[0], j, width, bad = -1
        cdef const double *pq, *pu, *pud, *pR, *pp, *pV, *pA
        cdef double* po
        cdef double lam = 0.0
        if what < JIT_CON_PERR or what > JIT_CON_AERR:
            raise ValueError("JitConstraintSet.errors: what must be 0, 1 or 2")
        width = self.mp if what == JIT_CON_PERR else (self.mp + self.mv if what == JIT_CON_VERR else self.m)
        if out.shape[0] != self.n or out.shape[1] != width:
            raise ValueError(f"JitConstraintSet.errors: out must be ({self.n}, {width})")
        pq, pu, pud = _jc_ptr(q, nq, "q"), _jc_ptr(u, nu, "u"), _jc_ptr(udot, nu, "udot")
        pR, pp = _jc_ptr(R_GB, 9 * nb, "R_GB"), _jc_ptr(p_GB, 3 * nb, "p_GB")
        pV, pA = _jc_ptr(V_GB, 6 * nb, "V_GB"), _jc_ptr(A_GB, 6 * nb, "A_GB")
        if self.n == 0 or width == 0:
            return -1
        po = &out[0, 0]
        with nogil:
            for j in range(self.n):
                if (<jit_con_t>self.fn)(what, self.mp, self.mv, self.ma, t, pq, pu, pud, pR, pp, pV, pA, nb, nq, nu,
                                        &self.params[j, 0] if self.npk else &lam, self.nparams[j], &lam,
                                        po + width * j, NULL, NULL) != 0:
                    bad = j
                    break
        return bad

    def unit_forces(self, double t, const double[::1] q, const double[::1] u, const double[::1] R_GB,
                    const double[::1] p_GB, const double[::1] V_GB, double[:, :, ::1] body_forces,
                    double[:, :, ::1] mobility_forces):
        """The forces of each element's unit multipliers, the columns of G^T: element j's equation k
        into ``body_forces[j, k]`` (6 nb) and ``mobility_forces[j, k]`` (nu), zeroed first; -1, or the
        first element whose kernel failed."""
        cdef Py_ssize_t nb = R_GB.shape[0] // 9, nq = q.shape[0], nu = u.shape[0], j, k, i, bad = -1
        cdef const double *pq, *pu, *pR, *pp, *pV
        cdef double* lam
        cdef double* bf
        cdef double* mf
        cdef double dummy = 0.0
        if (body_forces.shape[0] != self.n or body_forces.shape[1] != self.m or body_forces.shape[2] != 6 * nb
                or mobility_forces.shape[0] != self.n or mobility_forces.shape[1] != self.m
                or mobility_forces.shape[2] != nu):
            raise ValueError(f"JitConstraintSet.unit_forces: expected ({self.n}, {self.m}, {6 * nb}) and "
                             f"({self.n}, {self.m}, {nu}) arrays")
        pq, pu = _jc_ptr(q, nq, "q"), _jc_ptr(u, nu, "u")
        pR, pp, pV = _jc_ptr(R_GB, 9 * nb, "R_GB"), _jc_ptr(p_GB, 3 * nb, "p_GB"), _jc_ptr(V_GB, 6 * nb, "V_GB")
        if self.n == 0:
            return -1
        lam = <double*>calloc(self.m, sizeof(double))
        if lam == NULL:
            raise MemoryError()
        try:
            with nogil:
                for j in range(self.n):
                    for k in range(self.m):
                        bf = &body_forces[j, k, 0]
                        mf = &mobility_forces[j, k, 0] if nu else &dummy
                        for i in range(6 * nb):
                            bf[i] = 0.0
                        for i in range(nu):
                            mf[i] = 0.0
                        lam[k] = 1.0
                        if (<jit_con_t>self.fn)(JIT_CON_FORCES, self.mp, self.mv, self.ma, t, pq, pu, pu, pR, pp, pV,
                                                pV, nb, nq, nu, &self.params[j, 0] if self.npk else &dummy,
                                                self.nparams[j], lam, &dummy, bf, mf) != 0:
                            bad = j
                        lam[k] = 0.0
                        if bad >= 0:
                            break
                    if bad >= 0:
                        break
        finally:
            free(lam)
        return bad


def _jit_con_set_rebuild(params, nparams, mp, mv, ma, owner):
    """A JitConstraintSet made again from its owner (``owner._jit_address()``: the kernel in this process)."""
    return JitConstraintSet(owner._jit_address(), params, nparams, mp, mv, ma, owner)


def jit_constraint_capsule_address(capsule):
    """The kernel a PyCapsule named JIT_CONSTRAINT_CAPSULE holds, as an integer."""
    return capsule_address(capsule, JIT_CONSTRAINT_CAPSULE)


# ---------------------------------------------------------------------------
# In the compiled time loop (core/loop_constraints.pxi's LOOP_JIT parts): K elements of one kernel, each
# with m = mp + mv + ma equations, evaluated on the loop's tree. False when a kernel failed or gave a
# non-finite value: the loop then hands the step to Python, which evaluates the same kernel and raises
# the error naming the constraint.
# ---------------------------------------------------------------------------

cdef bint jit_con_errors_t(void* fn, int what, Py_ssize_t mp, Py_ssize_t mv, Py_ssize_t ma, const Tree* t,
                           const double* u, const double* udot, const double* V, const double* A, Py_ssize_t K,
                           const double* params, Py_ssize_t npk, const idx_t* nparams, double* out) noexcept nogil:
    # each element's errors of level what (0, 1, 2: mp, mp + mv, m of them) into out (K, width)
    cdef Py_ssize_t j, width = mp if what == JIT_CON_PERR else (mp + mv if what == JIT_CON_VERR else mp + mv + ma)
    cdef double lam = 0.0
    for j in range(K):
        if (<jit_con_t>fn)(what, mp, mv, ma, t.time, t.q, u, udot, t.R_GB, t.p_GB, V, A, t.nb, t.nq, t.nu,
                           params + npk * j, nparams[j], &lam, out + width * j, NULL, NULL) != 0:
            return False
    return _jit_all_finite(out, K * width)


cdef bint jit_con_g_rows_t(void* fn, Py_ssize_t mp, Py_ssize_t mv, Py_ssize_t ma, Tree* t, Py_ssize_t K,
                           const double* params, Py_ssize_t npk, const idx_t* nparams, const idx_t* eq,
                           double* work, double* G) noexcept nogil:
    # G's rows of the elements' equations eq (K, m): J^T of the body forces of a unit multiplier, plus its
    # mobility forces (Constraint.Jit._force_map's rows, as _build_gmap adds them). work: m + 6 nb + nu.
    cdef Py_ssize_t j, k, i, m = mp + mv + ma, nu = t.nu, nb6 = 6 * t.nb
    cdef double* lam = work
    cdef double* Fb = work + m
    cdef double* mf = work + m + nb6
    cdef double* row
    cdef double dummy = 0.0
    memset(lam, 0, m * sizeof(double))
    for j in range(K):
        for k in range(m):
            memset(Fb, 0, (nb6 + nu) * sizeof(double))
            lam[k] = 1.0
            if (<jit_con_t>fn)(JIT_CON_FORCES, mp, mv, ma, t.time, t.q, t.u, t.u, t.R_GB, t.p_GB, t.V_GB, t.V_GB,
                               t.nb, t.nq, nu, params + npk * j, nparams[j], lam, &dummy, Fb, mf) != 0:
                return False
            lam[k] = 0.0
            if not _jit_all_finite(Fb, nb6 + nu):
                return False
            row = G + eq[m * j + k] * nu
            memset(row, 0, nu * sizeof(double))
            k_jacobian_transpose(t, Fb, row)
            for i in range(nu):
                row[i] = row[i] + mf[i]
    return True
