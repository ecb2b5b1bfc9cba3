# Small dense linear algebra of the constraint solve: the Cholesky factor of
# A = G M^-1 G^T and its solves, with no Python call per operation (the
# multiplier systems have a few to a few dozen equations, where LAPACK's
# wrappers cost more than the arithmetic).

from libc.math cimport sqrt


def cholesky_lower(const double[:, ::1] A, double[:, ::1] L):
    """L (m, m) lower triangular with L L^T = A for a symmetric positive definite A (its lower
    triangle read), row by row as LAPACK's unblocked dpotf2 does; the upper triangle of L is
    zeroed. Returns 0, or j + 1 when the pivot of row j is not positive (L is then partial).
    Cost: m^3 / 6 multiplications."""
    cdef Py_ssize_t m = A.shape[0], i, j, k, info = 0
    cdef double s, d
    if A.shape[1] != m or L.shape[0] != m or L.shape[1] != m:
        raise ValueError(f"cholesky_lower: A and L must be square of one size, got ({A.shape[0]}, "
                         f"{A.shape[1]}) and ({L.shape[0]}, {L.shape[1]})")
    with nogil:
        for i in range(m):
            for j in range(i + 1, m):
                L[i, j] = 0.0
        for j in range(m):
            s = A[j, j]
            for k in range(j):
                s = s - L[j, k] * L[j, k]
            if not s > 0.0:  # also a NaN
                info = j + 1
                break
            d = sqrt(s)
            L[j, j] = d
            for i in range(j + 1, m):
                s = A[i, j]
                for k in range(j):
                    s = s - L[i, k] * L[j, k]
                L[i, j] = s / d
    return info


def cholesky_solve(const double[:, ::1] L, const double[::1] b, double[::1] x):
    """x = (L L^T)^-1 b: forward then backward substitution (x may be b)."""
    cdef Py_ssize_t m = L.shape[0], i, k
    cdef double s
    if L.shape[1] != m or b.shape[0] != m or x.shape[0] != m:
        raise ValueError(f"cholesky_solve: L is ({L.shape[0]}, {L.shape[1]}), b has {b.shape[0]} and x "
                         f"{x.shape[0]} entries")
    with nogil:
        for i in range(m):
            s = b[i]
            for k in range(i):
                s = s - L[i, k] * x[k]
            x[i] = s / L[i, i]
        for i in range(m - 1, -1, -1):
            s = x[i]
            for k in range(i + 1, m):
                s = s - L[k, i] * x[k]
            x[i] = s / L[i, i]


def multiplier_step(const double[::1] rhs, const double[:, ::1] L, const idx_t[::1] keep,
                    const double[:, ::1] YT, double[::1] lam, double[::1] du):
    """The multipliers lam (m,) of A lam = rhs from A's Cholesky factor L, and du = lam YT (nu,).

    ``keep`` names the rows of A that L factors (the others, rows of zeros, get lam = 0); empty
    when L factors all of A. du is summed over the rows in index order."""
    cdef Py_ssize_t m = lam.shape[0], nk = L.shape[0], nu = du.shape[0], i, k, j
    cdef double s
    cdef bint all_rows = keep.shape[0] == 0
    if rhs.shape[0] != m or YT.shape[0] != m or YT.shape[1] != nu or L.shape[1] != nk \
            or (all_rows and nk != m) or (not all_rows and keep.shape[0] != nk):
        raise ValueError("multiplier_step: the sizes of rhs, L, keep, YT, lam and du do not match")
    for k in range(keep.shape[0]):
        if not 0 <= keep[k] < m:
            raise ValueError(f"multiplier_step: keep[{k}] = {keep[k]} is not a row")
    with nogil:
        # forward then backward substitution into lam's kept rows (x = lam[keep])
        for i in range(m):
            lam[i] = 0.0
        for i in range(nk):
            s = rhs[i] if all_rows else rhs[keep[i]]
            for k in range(i):
                s = s - L[i, k] * (lam[k] if all_rows else lam[keep[k]])
            if all_rows:
                lam[i] = s / L[i, i]
            else:
                lam[keep[i]] = s / L[i, i]
        for i in range(nk - 1, -1, -1):
            s = lam[i] if all_rows else lam[keep[i]]
            for k in range(i + 1, nk):
                s = s - L[k, i] * (lam[k] if all_rows else lam[keep[k]])
            if all_rows:
                lam[i] = s / L[i, i]
            else:
                lam[keep[i]] = s / L[i, i]
        for j in range(nu):
            du[j] = 0.0
        for i in range(m):
            s = lam[i]
            for j in range(nu):
                du[j] = du[j] + s * YT[i, j]
