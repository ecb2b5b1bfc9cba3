# User force kernels compiled outside the core (numba cfuncs, Cython cdef functions) as the force
# kind FK_JIT: the set holds the kernels' C function pointers and each element's parameter vector,
# and the core calls the kernel once per element, without the GIL, wherever the compiled sets are
# evaluated (realize, the fused realization, the compiled time loop, the batch, the functional forms).
#
# Packed layout: bodies (n, 0), stations (n, 0, 3) (the kernel finds its bodies in its parameters),
# params (n, npk) each element's vector padded with zeros, index (n, 2): (its own length, 0).
#
# The C signatures (simtk.jit builds numba trampolines with them; a Cython user hands a cdef function
# of the same signature through a PyCapsule named JIT_FORCE_CAPSULE or JIT_ENERGY_CAPSULE):
#   int64 add(double t, const double* q, const double* u, const double* R_GB (nb,3,3),
#             const double* p_GB (nb,3), const double* V_GB (nb,2,3), int64 nb, int64 nq, int64 nu,
#             const double* params, int64 nparams, double* body_forces (nb,2,3), double* mobility_forces (nu,))
#   int64 energy(<the same eleven first arguments>, double* energy_out)
# returning 0, or non-zero when the kernel failed (an exception inside it, an out-of-range index).
#
# A kernel adds into the accumulators directly, so an element that failed or gave a non-finite value
# cannot be left out as the built-in kinds leave theirs: the set stops at it and returns its index
# (the caller raises, naming it). The accumulators are checked once after the set (when they were
# finite before it); if they went non-finite, the elements are run again into scratch to tell which.

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free

JIT_FORCE_CAPSULE = "simtk.jit.force_kernel"
JIT_ENERGY_CAPSULE = "simtk.jit.energy_kernel"

ctypedef int64_t (*jit_add_t)(double t, const double* q, const double* u, const double* R_GB,
                              const double* p_GB, const double* V_GB, int64_t nb, int64_t nq, int64_t nu,
                              const double* params, int64_t nparams, double* bf, double* mf) noexcept nogil
ctypedef int64_t (*jit_energy_t)(double t, const double* q, const double* u, const double* R_GB,
                                 const double* p_GB, const double* V_GB, int64_t nb, int64_t nq, int64_t nu,
                                 const double* params, int64_t nparams, double* energy) noexcept nogil


cdef inline bint _jit_all_finite(const double* x, Py_ssize_t n) noexcept nogil:
    # x * 0 is 0 for a finite x and NaN otherwise; four sums keep the additions independent
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        a0 += x[i] * 0.0
        a1 += x[i + 1] * 0.0
        a2 += x[i + 2] * 0.0
        a3 += x[i + 3] * 0.0
        i += 4
    while i < n:
        a0 += x[i] * 0.0
        i += 1
    return (a0 + a1 + a2 + a3) == 0.0


cdef inline int64_t _jit_call_add(const FSet* s, const Tree* t, const double* q, const double* u,
                                  Py_ssize_t j, double* bf, double* mf) noexcept nogil:
    return (<jit_add_t>s.jit_add)(t.time, q, u, t.R_GB, t.p_GB, t.V_GB, t.nb, t.nq, t.nu,
                                  s.params + s.npk * j, s.index[2 * j], bf, mf)


cdef Py_ssize_t _jit_find_non_finite(const FSet* s, const Tree* t, const double* q, const double* u) noexcept nogil:
    # The sums went non-finite in this set: its elements again, summed into scratch from zero, and the
    # first that makes the scratch non-finite (or fails) is named; when none does alone (the sums
    # overflowed with what was there before), the last. (A failure's path: it may allocate.)
    cdef Py_ssize_t j, nbf = 6 * t.nb, bad = s.n - 1
    cdef double* bf = <double*>calloc(nbf + t.nu + 1, sizeof(double))
    if bf == NULL:
        return bad
    for j in range(s.n):
        if _jit_call_add(s, t, q, u, j, bf, bf + nbf) != 0 or not _jit_all_finite(bf, nbf + t.nu):
            bad = j
            break
    free(bf)
    return bad


cdef Py_ssize_t _add_jit(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                         double* mf) noexcept nogil:
    # Each element's kernel in order; the first element that failed or made the sums non-finite, or -1.
    # The sums are checked once after the set (per element it cost as much as a small kernel).
    cdef Py_ssize_t j, nbf = 6 * t.nb
    cdef bint check
    if s.jit_add == NULL:
        return 0
    check = _jit_all_finite(bf, nbf) and _jit_all_finite(mf, t.nu)
    for j in range(s.n):
        if _jit_call_add(s, t, q, u, j, bf, mf) != 0:
            return j
    if check and not (_jit_all_finite(bf, nbf) and _jit_all_finite(mf, t.nu)):
        return _jit_find_non_finite(s, t, q, u)
    return -1


cdef double _energy_jit(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    # the sum of the elements' energies (NaN when a kernel failed: the caller finds which)
    cdef Py_ssize_t j
    cdef double e, total = 0.0
    if s.jit_energy == NULL:
        return 0.0
    for j in range(s.n):
        e = 0.0
        if (<jit_energy_t>s.jit_energy)(t.time, q, t.u, t.R_GB, t.p_GB, t.V_GB, t.nb, t.nq, t.nu,
                                         s.params + s.npk * j, s.index[2 * j], &e) != 0:
            return NAN
        total += e
    return total


_set_kind(FK_JIT, _add_jit, _energy_jit)


cdef int _jit_set_init(ForceSet fs, jit) except -1:
    add, energy, owner = jit
    if int(add) == 0:
        raise ValueError("ForceSet (jit): the force kernel's address is 0")
    if fs.bodies.shape[1] != 0:
        raise ValueError("ForceSet (jit): the kernels find their bodies in their parameters (bodies must be (n, 0))")
    if fs.n and not ((fs.index[:, 0] >= 0).all() and (fs.index[:, 0] <= fs.params.shape[1]).all()):
        raise ValueError("ForceSet (jit): index[:, 0] must be each element's parameter count (<= params.shape[1])")
    fs.s.jit_add = <void*><size_t>int(add)
    fs.s.jit_energy = <void*><size_t>int(energy) if energy else NULL
    fs.jit_owner = owner
    return 0


def _jit_set_rebuild(params, index, owner):
    """A jit ForceSet made again from its owner (which gives the kernels' addresses in this process)."""
    add, energy = owner._jit_addresses()
    n = np.asarray(params).shape[0]
    return ForceSet(FK_JIT, np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0, 3)), params, index,
                    jit=(add, energy, owner))


def jit_force_set(params, nparams, Py_ssize_t add_address, Py_ssize_t energy_address, owner):
    """A ForceSet of kind FK_JIT: element j's parameters are ``params[j, :nparams[j]]``; the kernels
    at ``add_address`` (required) and ``energy_address`` (0: no energy) have the signatures of
    core/jit_forces.pxi; ``owner`` keeps their code alive and gives the addresses again when the set
    is unpickled (``owner._jit_addresses()``)."""
    params = np.array(params, dtype=np.float64, order="C", copy=True)
    if params.ndim != 2:
        raise ValueError("jit_force_set: params must be 2-D (n, max parameters)")
    n = params.shape[0]
    index = np.zeros((n, 2), dtype=np.int64)
    index[:, 0] = np.asarray(nparams, dtype=np.int64).reshape(n)
    return ForceSet(FK_JIT, np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0, 3)), params, index,
                    jit=(add_address, energy_address, owner))


def capsule_address(capsule, str name):
    """The pointer a PyCapsule named ``name`` holds, as an integer (a Cython user's cdef kernel)."""
    cdef bytes b = name.encode()
    if not PyCapsule_IsValid(capsule, b):
        raise TypeError(f"expected a PyCapsule named {name!r} holding a kernel of the signature in "
                        f"core/jit_forces.pxi, got {type(capsule).__name__}")
    return <size_t>PyCapsule_GetPointer(capsule, b)


def jit_element(ForceSet fs, TreeKernels ws, Py_ssize_t j, body_forces, mobility_forces):
    """Add element ``j``'s forces alone into ``body_forces`` (nb,2,3) and ``mobility_forces`` (nu,)
    from the workspace's realized kinematics; returns the kernel's status (0: it ran)."""
    cdef int64_t status
    if fs.kind != FK_JIT or not 0 <= j < fs.n:
        raise ValueError("jit_element: expected a jit ForceSet and one of its elements")
    if not _is_f64_vector(body_forces, 6 * ws.nb, True) or not _is_f64_vector(mobility_forces, ws.nu, True):
        raise ValueError("jit_element: expected writable C-contiguous float64 (nb,2,3) and (nu,) arrays")
    cdef double* bf = _dp(body_forces)
    cdef double* mf = _dp(mobility_forces)
    with nogil:
        status = _jit_call_add(&fs.s, &ws.t, ws.t.q, ws.t.u, j, bf, mf)
    return status


def jit_element_energy(ForceSet fs, TreeKernels ws, Py_ssize_t j):
    """(status, energy) of element ``j`` from the workspace's realized positions and q."""
    cdef int64_t status
    cdef double e = 0.0
    if fs.kind != FK_JIT or not 0 <= j < fs.n:
        raise ValueError("jit_element_energy: expected a jit ForceSet and one of its elements")
    if fs.s.jit_energy == NULL:
        return 0, 0.0
    with nogil:
        status = (<jit_energy_t>fs.s.jit_energy)(ws.t.time, ws.t.q, ws.t.u, ws.t.R_GB, ws.t.p_GB, ws.t.V_GB,
                                                  ws.t.nb, ws.t.nq, ws.t.nu, fs.s.params + fs.s.npk * j,
                                                  fs.s.index[2 * j], &e)
    return int(status), e


def set_tree_time(TreeKernels ws, double time):
    """The time the next force evaluations on ``ws`` read (its inputs unchanged): the State's, put
    there before the jit kinds run."""
    ws.t.time = time


def get_tree_time(TreeKernels ws):
    """The time the force evaluations on ``ws`` read."""
    return ws.t.time
