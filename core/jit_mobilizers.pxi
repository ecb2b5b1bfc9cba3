# User mobilizer kernels compiled outside the core (numba cfuncs, Cython cdef functions) as the joint
# kind J_JIT + n (n = 1..6 mobilities, qdot = u): the tree holds each such body's record (the kernels'
# C function pointers and its parameter vector, a JitMobilizers table) and the sweeps call the kernels
# once per body, without the GIL, wherever k_position and k_velocity run (realize, the fused
# realization, the compiled time loop, the batch, the functional forms).
#
# The C signatures (simtk.jit.mobilizer builds numba trampolines with them; a Cython user hands cdef
# functions of the same signatures through PyCapsules named JIT_MOBILIZER_CAPSULE and JIT_HDOT_CAPSULE):
#   int64 position(const double* q (n,), int64 n, const double* params, int64 nparams,
#                  double* R_FM (3,3), double* p_FM (3,), double* H_FM (n,2,3))
#   int64 hdot(const double* q (n,), const double* qdot (n,), const double* v (n,), int64 n,
#              const double* params, int64 nparams, double* HDot_FM_v (2,3))
# (H_FM's columns: angular then linear, in F; HDot(q, qdot) the time derivative of H_FM in F along
# qdot, applied to v: the sweeps pass v = qdot = u, the Python side v = e_j for HDot's columns.) The outputs are
# zeroed before each call (a kernel writes its nonzero entries only). A kernel returns 0, or non-zero
# when it failed (an exception inside it). A failed kernel or a non-finite output sets the tree's
# jm_bad to the body (the first one) and its rows to NaN, so that everything computed from them is
# NaN too: the caller (the matter subsystem, the fused realization, the time loop through its
# non-finite derivative) raises naming the body. k_position and k_velocity clear jm_bad first.
#
# A jit mobilizer with an N kernel (qdot = N(q) u, any nq = 1..7, nu = 1..6) is the joint kind
# J_JITN + 8 nq + nu. Its position and hdot kernels take the signatures above with n = nu, q and
# qdot having nq entries (the kernel knows its nq). Its matrices N (nq, nu), N^-1 (nu, nq) and
# NDot (nq, nu), row-major, come from kernels of one signature (JIT_NMAT_CAPSULE):
#   int64 nmat(const double* q (nq,), const double* qdot (nq,), int64 nq, int64 nu,
#              const double* params, int64 nparams, double* out)
# (qdot is read by NDot's only). Without an N^-1 kernel the core takes the least-squares left
# inverse (N^T N)^-1 N^T (a Cholesky factorization of N^T N, nu <= 6): exact for any N of full
# column rank, so the user writes N alone; a kernel gives another left inverse where one is wanted
# (Simbody's unnormalized quaternion 2 E(q)^T, say). Without an NDot kernel NDot = 0 (N constant).
# The tree-aware products tree_n_mul & co. below serve every joint kind at the call sites that
# need N (the sweeps, the batch, the loops' constraint rows, the workspace's products).

from libc.stdint cimport int64_t

JIT_MOBILIZER_CAPSULE = "simtk.jit.mobilizer_position"
JIT_HDOT_CAPSULE = "simtk.jit.mobilizer_hdot"
JIT_NMAT_CAPSULE = "simtk.jit.mobilizer_nmat"

ctypedef int64_t (*jm_position_t)(const double* q, int64_t n, const double* params, int64_t nparams,
                                  double* R, double* p, double* H) noexcept nogil
ctypedef int64_t (*jm_hdot_t)(const double* q, const double* qdot, const double* v, int64_t n,
                              const double* params, int64_t nparams, double* out) noexcept nogil
ctypedef int64_t (*jm_nmat_t)(const double* q, const double* qdot, int64_t nq, int64_t nu,
                              const double* params, int64_t nparams, double* out) noexcept nogil

# the columns of a record's kernel addresses
cdef enum:
    JM_POS = 0
    JM_HDOT = 1
    JM_N = 2
    JM_NINV = 3
    JM_NDOT = 4
    JM_NADDR = 5
    JM_MAXQ = 7


cdef struct JitMobTable:
    Py_ssize_t nb, n, npk
    const idx_t* rec        # (nb,) body i's record, -1 for other joints
    const int64_t* addr     # (n, JM_NADDR) position, hdot, N, N^-1, NDot kernel addresses (0: none)
    const double* params    # (n, npk) each record's parameters, padded with zeros
    const idx_t* nparams    # (n,) each record's own parameter count


cdef inline bint _jm_finite(const double* x, Py_ssize_t n) noexcept nogil:
    cdef double a = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        a += x[k] * 0.0
    return a == 0.0


cdef inline void _jm_fail(Tree* t, Py_ssize_t i, double* x, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    if t.jm_bad < 0:
        t.jm_bad = i
    for k in range(n):
        x[k] = NAN


cdef void jm_position(Tree* t, Py_ssize_t i) noexcept nogil:
    # R_FM, p_FM and the n columns of H_FM of jit body i at the tree's q: one kernel call, then a check
    # of its 12 + 6 n outputs.
    cdef const JitMobTable* T = <const JitMobTable*>t.jm
    cdef Py_ssize_t r = T.rec[i]
    cdef int64_t n = t.uoff[i + 1] - t.uoff[i]
    cdef double* R = t.R_FM + 9 * i
    cdef double* p = t.p_FM + 3 * i
    cdef double* H = t.H_FM + 6 * t.uoff[i]
    cdef int64_t status
    t.qerr[i] = 0.0
    memset(R, 0, 9 * sizeof(double))
    memset(p, 0, 3 * sizeof(double))
    memset(H, 0, 6 * n * sizeof(double))
    status = (<jm_position_t><size_t>T.addr[JM_NADDR * r + JM_POS])(t.q + t.qoff[i], n, T.params + T.npk * r,
                                                                   T.nparams[r], R, p, H)
    if status != 0 or not (_jm_finite(R, 9) and _jm_finite(p, 3) and _jm_finite(H, 6 * n)):
        _jm_fail(t, i, R, 9)
        _jm_fail(t, i, p, 3)
        _jm_fail(t, i, H, 6 * n)


cdef void jm_hdot_u(Tree* t, Py_ssize_t i, double* out) noexcept nogil:
    # out (6) = HDot_FM u of jit body i at the tree's q and u, HDot along qdot: u for the qdot = u kind,
    # the tree's qdot (= N u, computed before this call) for the N kind; zero without an hdot kernel.
    cdef const JitMobTable* T = <const JitMobTable*>t.jm
    cdef Py_ssize_t r = T.rec[i]
    cdef int64_t n = t.uoff[i + 1] - t.uoff[i]
    cdef const double* qd = t.qdot + t.qoff[i] if is_jitn_joint(<int>t.jtype[i]) else t.u + t.uoff[i]
    cdef int64_t status
    memset(out, 0, 6 * sizeof(double))
    if T.addr[JM_NADDR * r + JM_HDOT] == 0:
        return
    status = (<jm_hdot_t><size_t>T.addr[JM_NADDR * r + JM_HDOT])(t.q + t.qoff[i], qd, t.u + t.uoff[i], n,
                                                                T.params + T.npk * r, T.nparams[r], out)
    if status != 0 or not _jm_finite(out, 6):
        _jm_fail(t, i, out, 6)


cdef bint _jm_chol_solve(double* A, Py_ssize_t n, double* B, Py_ssize_t m) noexcept nogil:
    # A (n, n) symmetric positive definite, overwritten by its Cholesky factor L (lower); B (n, m)
    # overwritten by A^-1 B. False when A is not positive definite (N of deficient column rank).
    cdef Py_ssize_t a, b, k
    cdef double d
    for a in range(n):
        for b in range(a + 1):
            d = A[n * a + b]
            for k in range(b):
                d -= A[n * a + k] * A[n * b + k]
            if a == b:
                if not d > 0.0:
                    return False
                A[n * a + a] = sqrt(d)
            else:
                A[n * a + b] = d / A[n * b + b]
    for k in range(m):
        for a in range(n):      # L y = b
            d = B[m * a + k]
            for b in range(a):
                d -= A[n * a + b] * B[m * b + k]
            B[m * a + k] = d / A[n * a + a]
        for a in range(n - 1, -1, -1):     # L^T x = y
            d = B[m * a + k]
            for b in range(a + 1, n):
                d -= A[n * b + a] * B[m * b + k]
            B[m * a + k] = d / A[n * a + a]
    return True


cdef bint jm_nmat(const Tree* t, Py_ssize_t i, const double* q, const double* qdot, int which,
                  double* out) noexcept nogil:
    # out = N (nq, nu), N^-1 (nu, nq) or NDot (nq, nu) (which = JM_N, JM_NINV, JM_NDOT) of jit body i of
    # the N kind at q (and qdot); N^-1 without its kernel is (N^T N)^-1 N^T. A failed kernel, a non-finite
    # output or an N of deficient rank sets jm_bad to the body and out to NaN; returns whether it succeeded.
    cdef const JitMobTable* T = <const JitMobTable*>t.jm
    cdef Py_ssize_t r = T.rec[i]
    cdef int64_t nq = t.qoff[i + 1] - t.qoff[i]
    cdef int64_t nu = t.uoff[i + 1] - t.uoff[i]
    cdef int64_t fn = T.addr[JM_NADDR * r + which]
    cdef int64_t status = 0
    cdef double N[JM_MAXQ * 6]
    cdef double A[36]
    cdef Py_ssize_t a, b, k
    memset(out, 0, nq * nu * sizeof(double))
    if fn != 0:
        status = (<jm_nmat_t><size_t>fn)(q, qdot, nq, nu, T.params + T.npk * r, T.nparams[r], out)
    elif which == JM_NINV:
        memset(N, 0, nq * nu * sizeof(double))
        status = (<jm_nmat_t><size_t>T.addr[JM_NADDR * r + JM_N])(q, qdot, nq, nu, T.params + T.npk * r,
                                                                 T.nparams[r], N)
        if status == 0 and _jm_finite(N, nq * nu):
            for a in range(nu):
                for b in range(nu):
                    A[nu * a + b] = 0.0
                    for k in range(nq):
                        A[nu * a + b] += N[nu * k + a] * N[nu * k + b]
                for k in range(nq):
                    out[nq * a + k] = N[nu * k + a]
            if not _jm_chol_solve(A, nu, out, nq):
                status = 1
    if status != 0 or not _jm_finite(out, nq * nu):
        _jm_fail(<Tree*>t, i, out, nq * nu)
        return False
    return True


cdef void _jm_mat_vec(const double* M, Py_ssize_t rows, Py_ssize_t cols, bint transpose, const double* x,
                      double* out) noexcept nogil:
    # out = M x (rows) or M^T x (cols), M (rows, cols) row-major
    cdef Py_ssize_t a, b
    if transpose:
        for b in range(cols):
            out[b] = 0.0
        for a in range(rows):
            for b in range(cols):
                out[b] += M[cols * a + b] * x[a]
    else:
        for a in range(rows):
            out[a] = 0.0
            for b in range(cols):
                out[a] += M[cols * a + b] * x[b]


cdef void tree_n_mul(const Tree* t, Py_ssize_t i, const double* q, const double* x, double* out) noexcept nogil:
    # out (nq) = N(q) x of body i, any joint kind (the jit N kind from its kernel)
    cdef int jt = <int>t.jtype[i]
    cdef double M[JM_MAXQ * 6]
    if not is_jitn_joint(jt):
        joint_n_mul(jt, q, x, out)
        return
    jm_nmat(t, i, q, NULL, JM_N, M)
    _jm_mat_vec(M, t.qoff[i + 1] - t.qoff[i], t.uoff[i + 1] - t.uoff[i], False, x, out)


cdef void tree_nT_mul(const Tree* t, Py_ssize_t i, const double* q, const double* x, double* out) noexcept nogil:
    # out (nu) = N(q)^T x of body i
    cdef int jt = <int>t.jtype[i]
    cdef double M[JM_MAXQ * 6]
    if not is_jitn_joint(jt):
        joint_nT_mul(jt, q, x, out)
        return
    jm_nmat(t, i, q, NULL, JM_N, M)
    _jm_mat_vec(M, t.qoff[i + 1] - t.qoff[i], t.uoff[i + 1] - t.uoff[i], True, x, out)


cdef void tree_ninv_mul(const Tree* t, Py_ssize_t i, const double* q, const double* x, double* out) noexcept nogil:
    # out (nu) = N(q)^-1 x of body i
    cdef int jt = <int>t.jtype[i]
    cdef double M[JM_MAXQ * 6]
    if not is_jitn_joint(jt):
        joint_ninv_mul(jt, q, x, out)
        return
    jm_nmat(t, i, q, NULL, JM_NINV, M)
    _jm_mat_vec(M, t.uoff[i + 1] - t.uoff[i], t.qoff[i + 1] - t.qoff[i], False, x, out)


cdef void tree_ninvT_mul(const Tree* t, Py_ssize_t i, const double* q, const double* x, double* out) noexcept nogil:
    # out (nq) = N(q)^-T x of body i
    cdef int jt = <int>t.jtype[i]
    cdef double M[JM_MAXQ * 6]
    if not is_jitn_joint(jt):
        joint_ninvT_mul(jt, q, x, out)
        return
    jm_nmat(t, i, q, NULL, JM_NINV, M)
    _jm_mat_vec(M, t.uoff[i + 1] - t.uoff[i], t.qoff[i + 1] - t.qoff[i], True, x, out)


cdef void tree_qdotdot(const Tree* t, Py_ssize_t i, const double* q, const double* u, const double* udot,
                       const double* qdot, double* out) noexcept nogil:
    # out (nq) = N udot + NDot u of body i (qdot = N u: what NDot's kernel differentiates along)
    cdef int jt = <int>t.jtype[i]
    cdef double M[JM_MAXQ * 6]
    cdef double tmp[JM_MAXQ]
    cdef Py_ssize_t k, nq, nu
    if not is_jitn_joint(jt):
        joint_qdotdot(jt, q, u, udot, qdot, out)
        return
    nq = t.qoff[i + 1] - t.qoff[i]
    nu = t.uoff[i + 1] - t.uoff[i]
    jm_nmat(t, i, q, NULL, JM_N, M)
    _jm_mat_vec(M, nq, nu, False, udot, out)
    if (<const JitMobTable*>t.jm).addr[JM_NADDR * (<const JitMobTable*>t.jm).rec[i] + JM_NDOT] != 0:
        jm_nmat(t, i, q, qdot, JM_NDOT, M)
        _jm_mat_vec(M, nq, nu, False, u, tmp)
        for k in range(nq):
            out[k] += tmp[k]


#: n -> the joint code of a jit mobilizer with n mobilities (qdot = u)
JIT_JOINT_CODES = {n: J_JIT + n for n in range(1, 7)}
#: (nq, nu) -> the joint code of a jit mobilizer with an N kernel (qdot = N(q) u)
JIT_MAX_NQ = JM_MAXQ
JITN_JOINT_CODES = {(nq, nu): J_JITN + 8 * nq + nu for nq in range(1, JM_MAXQ + 1) for nu in range(1, 7)}


cdef class JitMobilizers:
    """The jit mobilizers of one tree: each body's record, the kernels' addresses and parameters.

    ``rec`` (nb,) the record of each body (-1: not a jit mobilizer); ``params`` (n, npk) and
    ``nparams`` (n,) each record's parameter vector; ``owners`` (n,) the kernel objects, which keep
    the code alive and give its addresses again (``owner._jit_addresses()``) when unpickled.
    """
    cdef JitMobTable s
    cdef readonly object rec, addr, params, nparams, owners

    def __init__(self, rec, params, nparams, owners):
        self.rec = np.array(rec, dtype=np.int64, order="C").reshape(-1)
        self.params = np.array(params, dtype=np.float64, order="C")
        if self.params.ndim != 2:
            raise ValueError("JitMobilizers: params must be 2-D (n, max parameters)")
        n = self.params.shape[0]
        self.nparams = np.array(nparams, dtype=np.int64, order="C").reshape(n)
        self.owners = tuple(owners)
        if len(self.owners) != n:
            raise ValueError(f"JitMobilizers: {n} records and {len(self.owners)} kernels")
        if not ((self.nparams >= 0).all() and (self.nparams <= self.params.shape[1]).all()):
            raise ValueError("JitMobilizers: nparams must be each record's count (<= params.shape[1])")
        if not np.isfinite(self.params).all():
            raise ValueError("JitMobilizers: the parameters must be finite")
        recs = self.rec[self.rec >= 0]
        if len(set(recs.tolist())) != len(recs) or (recs >= n).any() or (self.rec < -1).any():
            raise ValueError(f"JitMobilizers: each body needs a record of its own in [0, {n})")
        addr = np.zeros((n, JM_NADDR), dtype=np.int64)
        for r, owner in enumerate(self.owners):
            # (position, hdot) for the qdot = u kind, (position, hdot, N, N^-1, NDot) for the N kind
            got = tuple(int(a) for a in owner._jit_addresses())
            if len(got) not in (2, JM_NADDR):
                raise ValueError(f"JitMobilizers: {owner!r} gave {len(got)} kernel addresses, not 2 or {JM_NADDR}")
            if got[JM_POS] == 0 or (len(got) == JM_NADDR and got[JM_N] == 0):
                raise ValueError(f"JitMobilizers: the position or N kernel of {owner!r} has address 0")
            addr[r, :len(got)] = got
        self.addr = addr
        for a in (self.rec, self.params, self.nparams, self.addr):
            a.flags.writeable = False
        self.s.nb = self.rec.shape[0]
        self.s.n = n
        self.s.npk = self.params.shape[1]
        self.s.rec = _ip(self.rec)
        self.s.addr = <const int64_t*>_ip(self.addr)
        self.s.params = _dp(self.params) if self.params.size else NULL
        self.s.nparams = _ip(self.nparams)

    def __reduce__(self):
        return (JitMobilizers, (self.rec, self.params, self.nparams, self.owners))

    def check(self, jtype, qoff, uoff):
        """What is wrong with these records for a tree of joint codes ``jtype``, or None."""
        if self.rec.shape[0] != len(jtype):
            return f"{self.rec.shape[0]} jit mobilizer records for a tree of {len(jtype)} bodies"
        for i in range(1, len(jtype)):
            jt = int(jtype[i])
            if is_jit_joint(jt) != (self.rec[i] >= 0):
                return f"body {i}: joint code {jt} with jit mobilizer record {self.rec[i]}"
            if is_jitn_joint(jt) != (is_jit_joint(jt) and self.addr[self.rec[i], JM_N] != 0):
                return f"body {i}: joint code {jt} with a jit mobilizer record whose N kernel address is " \
                       f"{self.addr[self.rec[i], JM_N]} (the N kind needs one, the qdot = u kind none)"
            if is_jitn_joint(jt) and not (qoff[i + 1] - qoff[i] == (jt - J_JITN) // 8
                                          and uoff[i + 1] - uoff[i] == (jt - J_JITN) % 8):
                return f"body {i}: a jit mobilizer of code {jt} (nq = {(jt - J_JITN) // 8}, " \
                       f"nu = {(jt - J_JITN) % 8}) with nq = {qoff[i + 1] - qoff[i]}, nu = {uoff[i + 1] - uoff[i]}"
            if J_JIT < jt <= J_JIT_MAX and not (qoff[i + 1] - qoff[i] == uoff[i + 1] - uoff[i] == jt - J_JIT):
                return f"body {i}: a jit mobilizer of {jt - J_JIT} mobilities with nq = " \
                       f"{qoff[i + 1] - qoff[i]}, nu = {uoff[i + 1] - uoff[i]}"
        return None


def jit_mobilizer_capsule_address(capsule, str name):
    """The pointer a PyCapsule named ``name`` holds, as an integer (a Cython user's cdef kernel)."""
    cdef bytes b = name.encode()
    if not PyCapsule_IsValid(capsule, b):
        raise TypeError(f"expected a PyCapsule named {name!r} holding a kernel of the signature in "
                        f"core/jit_mobilizers.pxi, got {type(capsule).__name__}")
    return <size_t>PyCapsule_GetPointer(capsule, b)
