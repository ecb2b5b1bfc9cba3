# Small dense linear algebra of the constraint solve: the Cholesky factor of
# A = G M^-1 G^T and its solves, with no Python call per operation (the
# multiplier systems have a few to a few dozen equations, where LAPACK's
# wrappers cost more than the arithmetic). Above LAPACK_CHOLESKY_ABOVE kept
# equations the factor is LAPACK's blocked dpotrf, called from here through
# SciPy's Cython LAPACK, so that the Python path and the compiled time loop,
# which both factor through _factor_kept, round alike at every size.

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from libc.math cimport sqrt, INFINITY

cdef enum:
    _OWN_CHOLESKY_UP_TO = 64

#: Kept equations up to which _factor_kept runs its own loops (faster than LAPACK's there); LAPACK above.
LAPACK_CHOLESKY_ABOVE = _OWN_CHOLESKY_UP_TO

ctypedef void (*_dpotrf_t)(char* uplo, int* n, double* a, int* lda, int* info) noexcept nogil
cdef _dpotrf_t _dpotrf = NULL


def _bind_lapack():
    # dpotrf of the LAPACK SciPy links (the function pointer its Cython LAPACK exports)
    global _dpotrf
    from scipy.linalg import cython_lapack
    capsule = cython_lapack.__pyx_capi__["dpotrf"]
    _dpotrf = <_dpotrf_t>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


_bind_lapack()


cdef void _substitute_p(const double[:, ::1] L, const double* rhs, const idx_t* keep, double* x) noexcept nogil:
    # Forward then backward substitution through L L^T: x[r_i] for the rows r_i = keep[i] (i < L's
    # size), or r_i = i when keep is NULL; the right-hand side is read at the same rows (x may be rhs).
    cdef Py_ssize_t nk = L.shape[0], i, k
    cdef double s
    for i in range(nk):
        s = rhs[keep[i] if keep != NULL else i]
        for k in range(i):
            s = s - L[i, k] * x[keep[k] if keep != NULL else k]
        x[keep[i] if keep != NULL else i] = s / L[i, i]
    for i in range(nk - 1, -1, -1):
        s = x[keep[i] if keep != NULL else i]
        for k in range(i + 1, nk):
            s = s - L[k, i] * x[keep[k] if keep != NULL else k]
        x[keep[i] if keep != NULL else i] = s / L[i, i]


def cholesky_solve(const double[:, ::1] L, const double[::1] b, double[::1] x):
    """x = (L L^T)^-1 b: forward then backward substitution (x may be b)."""
    cdef Py_ssize_t m = L.shape[0]
    if L.shape[1] != m or b.shape[0] != m or x.shape[0] != m:
        raise ValueError(f"cholesky_solve: L is ({L.shape[0]}, {L.shape[1]}), b has {b.shape[0]} and x "
                         f"{x.shape[0]} entries")
    if m:
        with nogil:
            _substitute_p(L, &b[0], NULL, &x[0])


def multiplier_step(const double[::1] rhs, const double[:, ::1] L, const idx_t[::1] keep,
                    const double[:, ::1] YT, double[::1] lam, double[::1] du):
    """The multipliers lam (m,) of A lam = rhs from A's Cholesky factor L, and du = lam YT (nu,).

    ``keep`` names the rows of A that L factors (the others, rows of zeros, get lam = 0); empty
    when L factors all of A. The substitutions are cholesky_solve's; du is summed over the rows in
    index order."""
    cdef Py_ssize_t m = lam.shape[0], nk = L.shape[0], nu = du.shape[0], k
    cdef bint all_rows = keep.shape[0] == 0
    if rhs.shape[0] != m or YT.shape[0] != m or YT.shape[1] != nu or L.shape[1] != nk \
            or (all_rows and nk != m) or (not all_rows and keep.shape[0] != nk):
        raise ValueError("multiplier_step: the sizes of rhs, L, keep, YT, lam and du do not match")
    for k in range(keep.shape[0]):
        if not 0 <= keep[k] < m:
            raise ValueError(f"multiplier_step: keep[{k}] = {keep[k]} is not a row")
    with nogil:
        _multiplier_step(&rhs[0] if m else NULL, L, NULL if all_rows else &keep[0], &YT[0, 0] if m and nu else NULL,
                         m, nu, &lam[0] if m else NULL, &du[0] if nu else NULL)


cdef void _multiplier_step(const double* rhs, const double[:, ::1] L, const idx_t* keep, const double* YT,
                           Py_ssize_t m, Py_ssize_t nu, double* lam, double* du) noexcept nogil:
    # the nogil core of multiplier_step (keep NULL: L factors all m rows; YT (m, nu) row-major)
    cdef Py_ssize_t i, j
    cdef double s
    for i in range(m):
        lam[i] = 0.0
    if L.shape[0]:
        _substitute_p(L, rhs, keep, lam)
    for j in range(nu):
        du[j] = 0.0
    for i in range(m):
        s = lam[i]
        for j in range(nu):
            du[j] = du[j] + s * YT[i * nu + j]


cdef Py_ssize_t _factor_kept(const double[:, ::1] A, double[:, ::1] L, idx_t[::1] keep) noexcept nogil:
    cdef Py_ssize_t m = A.shape[0], i, j, k, nk = 0
    cdef double scale = -INFINITY, s, d, dmin = INFINITY
    for i in range(m):
        if A[i, i] > scale:
            scale = A[i, i]
    if not scale > 0.0:
        return -1
    for i in range(m):
        if A[i, i] > 1e-300 * scale:
            keep[nk] = i
            nk += 1
    if nk > _OWN_CHOLESKY_UP_TO:
        return _factor_kept_lapack(A, L, keep, nk, scale)
    for i in range(nk):
        for j in range(nk):
            L[i, j] = 0.0
    for j in range(nk):
        s = A[keep[j], keep[j]]
        for k in range(j):
            s = s - L[j, k] * L[j, k]
        if not s > 0.0:
            return -2
        d = sqrt(s)
        L[j, j] = d
        if d < dmin:
            dmin = d
        for i in range(j + 1, nk):
            s = A[keep[i], keep[j]]
            for k in range(j):
                s = s - L[i, k] * L[j, k]
            L[i, j] = s / d
    if not dmin * dmin > 1e-10 * scale:
        return -2
    return nk


cdef Py_ssize_t _factor_kept_lapack(const double[:, ::1] A, double[:, ::1] L, const idx_t[::1] keep, Py_ssize_t nk,
                                    double scale) noexcept nogil:
    # The kept block's lower triangle goes into L (row-major), which LAPACK reads (column-major) as the
    # upper triangle of the same symmetric matrix: dpotrf('U') leaves U with A = U^T U there, which is
    # L = U^T row by row. The upper triangle of L is zero. Same codes as _factor_kept.
    cdef Py_ssize_t i, j
    cdef char uplo = b'U'
    cdef int n = <int>nk, lda = <int>L.shape[1], info = 0
    cdef double dmin = INFINITY
    for i in range(nk):
        for j in range(nk):
            L[i, j] = A[keep[i], keep[j]] if j <= i else 0.0
    _dpotrf(&uplo, &n, &L[0, 0], &lda, &info)
    if info != 0:
        return -2
    for i in range(nk):
        if L[i, i] < dmin:
            dmin = L[i, i]
    if not dmin * dmin > 1e-10 * scale:
        return -2
    return nk


def factor_kept(const double[:, ::1] A, double[:, ::1] L, idx_t[::1] keep):
    """The Cholesky factor of A = G M^-1 G^T without its rows of zeros, as the constraint solver
    keeps it: rows whose diagonal is at most 1e-300 of the largest are left out (their indices
    not in ``keep``), the rest factored into L[:nk, :nk] (up to ``LAPACK_CHOLESKY_ABOVE`` kept rows
    row by row, as LAPACK's unblocked dpotf2; above it by LAPACK's blocked dpotrf; its upper triangle
    zeroed), and the factor accepted when its smallest pivot squared exceeds 1e-10 of the largest
    diagonal.
    Returns nk (the kept rows are keep[:nk]), -1 when A's diagonal has no positive entry, or -2
    when the kept block is not positive definite or too ill-conditioned (the caller then takes
    A's eigen-decomposition)."""
    cdef Py_ssize_t m = A.shape[0], r
    if A.shape[1] != m or L.shape[0] < m or L.shape[1] < m or keep.shape[0] < m:
        raise ValueError("factor_kept: A must be square and L, keep at least its size")
    with nogil:
        r = _factor_kept(A, L, keep)
    return r


def matvec(const double[:, ::1] G, const double[::1] x, double[::1] out):
    """out (m,) = G x for G (m, n), each row's dot product by dot_n (four interleaved partial sums)."""
    cdef Py_ssize_t m = G.shape[0], n = G.shape[1], i
    if x.shape[0] != n or out.shape[0] != m:
        raise ValueError(f"matvec: G is ({m}, {n}), x has {x.shape[0]} and out {out.shape[0]} entries")
    if n == 0:
        out[:] = 0.0
        return
    with nogil:
        _matvec(&G[0, 0] if m else NULL, m, n, &x[0], &out[0] if m else NULL)


cdef void _matvec(const double* G, Py_ssize_t m, Py_ssize_t n, const double* x, double* out) noexcept nogil:
    # out (m,) = G x for G (m, n) row-major, each row by dot_n (n > 0)
    cdef Py_ssize_t i
    for i in range(m):
        out[i] = dot_n(G + i * n, x, n)


cdef void _gram(const double* P, Py_ssize_t m, Py_ssize_t n, double* B) noexcept nogil:
    # B (m, m) = P P^T for P (m, n) row-major: the lower triangle by dot_n, mirrored
    cdef Py_ssize_t i, j
    cdef double e
    for i in range(m):
        for j in range(i + 1):
            e = dot_n(P + i * n, P + j * n, n)
            B[i * m + j] = e
            B[j * m + i] = e


def gram(const double[:, ::1] P, double[:, ::1] B):
    """B (m, m) = P P^T for P (m, n), its lower triangle by dot_n and mirrored (exactly symmetric):
    the normal matrix of a minimum-norm step dx = P^T (P P^T)^-1 r (the position projection's)."""
    cdef Py_ssize_t m = P.shape[0], n = P.shape[1]
    if B.shape[0] != m or B.shape[1] != m:
        raise ValueError(f"gram: P is ({m}, {n}) and B must be ({m}, {m})")
    if m == 0:
        return
    if n == 0:
        B[:, :] = 0.0
        return
    with nogil:
        _gram(&P[0, 0], m, n, &B[0, 0])
