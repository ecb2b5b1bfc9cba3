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

from libc.stdint cimport int64_t

JIT_MOBILIZER_CAPSULE = "simtk.jit.mobilizer_position"
JIT_HDOT_CAPSULE = "simtk.jit.mobilizer_hdot"

ctypedef int64_t (*jm_position_t)(const double* q, int64_t n, const double* params, int64_t nparams,
                                  double* R, double* p, double* H) noexcept nogil
ctypedef int64_t (*jm_hdot_t)(const double* q, const double* qdot, const double* v, int64_t n,
                              const double* params, int64_t nparams, double* out) noexcept nogil


cdef struct JitMobTable:
    Py_ssize_t nb, n, npk
    const idx_t* rec        # (nb,) body i's record, -1 for other joints
    const int64_t* addr     # (n, 2) position and hdot kernel addresses (hdot 0: HDot = 0)
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
    cdef int64_t n = t.jtype[i] - J_JIT
    cdef double* R = t.R_FM + 9 * i
    cdef double* p = t.p_FM + 3 * i
    cdef double* H = t.H_FM + 6 * t.uoff[i]
    cdef int64_t status
    t.qerr[i] = 0.0
    memset(R, 0, 9 * sizeof(double))
    memset(p, 0, 3 * sizeof(double))
    memset(H, 0, 6 * n * sizeof(double))
    status = (<jm_position_t><size_t>T.addr[2 * r])(t.q + t.qoff[i], n, T.params + T.npk * r, T.nparams[r],
                                                   R, p, H)
    if status != 0 or not (_jm_finite(R, 9) and _jm_finite(p, 3) and _jm_finite(H, 6 * n)):
        _jm_fail(t, i, R, 9)
        _jm_fail(t, i, p, 3)
        _jm_fail(t, i, H, 6 * n)


cdef void jm_hdot_u(Tree* t, Py_ssize_t i, double* out) noexcept nogil:
    # out (6) = HDot_FM u of jit body i at the tree's q and u (qdot = u; zero without an hdot kernel).
    cdef const JitMobTable* T = <const JitMobTable*>t.jm
    cdef Py_ssize_t r = T.rec[i]
    cdef int64_t n = t.jtype[i] - J_JIT
    cdef int64_t status
    memset(out, 0, 6 * sizeof(double))
    if T.addr[2 * r + 1] == 0:
        return
    status = (<jm_hdot_t><size_t>T.addr[2 * r + 1])(t.q + t.qoff[i], t.u + t.uoff[i], t.u + t.uoff[i], n,
                                                   T.params + T.npk * r, T.nparams[r], out)
    if status != 0 or not _jm_finite(out, 6):
        _jm_fail(t, i, out, 6)


#: n -> the joint code of a jit mobilizer with n mobilities (qdot = u)
JIT_JOINT_CODES = {n: J_JIT + n for n in range(1, 7)}


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
        addr = np.zeros((n, 2), dtype=np.int64)
        for r, owner in enumerate(self.owners):
            pos, hdot = owner._jit_addresses()
            if int(pos) == 0:
                raise ValueError(f"JitMobilizers: the position kernel of {owner!r} has address 0")
            addr[r, 0], addr[r, 1] = int(pos), int(hdot)
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
            if (J_JIT < jt <= J_JIT_MAX) != (self.rec[i] >= 0):
                return f"body {i}: joint code {jt} with jit mobilizer record {self.rec[i]}"
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
