# The implicit step's preconditioner for deformable bodies (simtk.deformable.ImplicitEulerIntegrator):
# incomplete Cholesky IC(0) of the free particles' block of A = M (1 + h alpha_M) + h D + h^2 K. Plain
# (1 / m) or 3 x 3 block Jacobi leaves conjugate gradients at the iteration count of A's condition number
# (a homogeneous mesh's diagonal carries no information); IC(0) keeps the mesh's coupling and takes about
# a third of the iterations for the cost of about one element product per solve.
#
# A's lower triangle is stored as CSR (rows in order, columns ascending, the diagonal last in its row) on
# the pattern of the elements' particle pairs: free particle f has 3 rows; row 3 f + i holds, for each
# lower neighbour g < f (ascending), the 3 columns 3 g .. 3 g + 2, then its own columns 3 f .. 3 f + i.
# So an element's block (a, b) (f_a > f_b) lands at data[indptr[3 f_a + i] + slot + k], slot = 3 rank(g)
# within f_a's neighbours (3 times their count for the diagonal block, k <= i there); slot < 0 marks an
# upper block or one with a particle that has no variables (fixed, attached: the rigid block's business).
#
# The elements' blocks, K = -df/dx with frozen rotations (deformable.pxi, deformable_fem.pxi):
#   spring:   K_ii = K_jj = -K_ij = alpha (k e e^T + g (I - e e^T)) + beta c e e^T
#   tet/tri:  K_ab = V [mu (g_a . g_b) R R^T + mu (R g_b)(R g_a)^T + lam (R g_a)(R g_b)^T]
# with g_v the gradient of vertex v's shape function in the rest frame (Bm's rows, vertex 0 minus their
# sum) and R the element's rotation (3 x 3, or 3 x 2 for a membrane, where R R^T is the plane's projector).

cdef inline void _ic_add_block(double* data, const int64_t* indptr, int64_t fa, int64_t fb, int64_t s,
                               const double* B, double scale) noexcept nogil:
    # the block B (3 x 3 row-major, times scale) at (f_a, f_b) into the lower CSR
    cdef int i, k, kmax
    cdef int64_t base
    for i in range(3):
        base = indptr[3 * fa + i] + s
        kmax = i + 1 if fa == fb else 3
        for k in range(kmax):
            data[base + k] += scale * B[3 * i + k]


def fem_lower_blocks(const double[:, ::1] x, const int64_t[:, ::1] elems, const double[:, ::1] Bm,
                     const double[::1] vol, const double[::1] mu, const double[::1] lam, double[:, ::1] R,
                     double[:, ::1] xR, const int64_t[::1] fidx, const int64_t[:, ::1] slot,
                     const int64_t[::1] indptr, double scale, double[::1] data) -> None:
    """Add scale K's lower blocks of the tets (elems (nt, 4), Bm (nt, 9), R (nt, 9)) or membrane triangles
    (elems (nt, 3), Bm (nt, 4), R (nt, 6)) into data; the rotations are recomputed into R and xR when x is
    not xR (as the products do)."""
    cdef Py_ssize_t t, i, a, b, c, nt = elems.shape[0], n = x.shape[0]
    cdef int nv = elems.shape[1], dim = nv - 1
    cdef double g[4][3]
    cdef double rg[4][3]
    cdef double P[9]
    cdef double B[9]
    cdef double F[6]
    cdef double V, gg
    cdef bint stale = False
    cdef const double* r
    cdef const double* bm
    cdef int64_t s
    with nogil:
        for i in range(n):
            for a in range(3):
                if x[i, a] != xR[i, a]:
                    stale = True
        if stale:
            if nv == 4:
                _tet_rotations(&x[0, 0], &elems[0, 0], &Bm[0, 0], nt, &R[0, 0])
            else:
                for t in range(nt):
                    _tri_F(&x[0, 0], &elems[t, 0], &Bm[t, 0], F)
                    _membrane_rotation(F, &R[t, 0])
            for i in range(n):
                for a in range(3):
                    xR[i, a] = x[i, a]
        for t in range(nt):
            r = &R[t, 0]
            bm = &Bm[t, 0]
            V = vol[t]
            for a in range(3):
                g[0][a] = 0.0
            for b in range(1, nv):
                for a in range(dim):
                    g[b][a] = bm[dim * (b - 1) + a]
                    g[0][a] -= g[b][a]
            for b in range(nv):
                for a in range(3):
                    rg[b][a] = 0.0
                    for c in range(dim):
                        rg[b][a] += r[dim * a + c] * g[b][c]
            for a in range(3):
                for c in range(3):
                    P[3 * a + c] = 0.0
                    for i in range(dim):
                        P[3 * a + c] += r[dim * a + i] * r[dim * c + i]
            for a in range(nv):
                if fidx[elems[t, a]] < 0:
                    continue
                for b in range(nv):
                    s = slot[t, nv * a + b]
                    if s < 0:
                        continue
                    gg = 0.0
                    for c in range(dim):
                        gg += g[a][c] * g[b][c]
                    for i in range(3):
                        for c in range(3):
                            B[3 * i + c] = V * (mu[t] * (gg * P[3 * i + c] + rg[b][i] * rg[a][c])
                                                + lam[t] * rg[a][i] * rg[b][c])
                    _ic_add_block(&data[0], &indptr[0], fidx[elems[t, a]], fidx[elems[t, b]], s, B, scale)


def spring_lower_blocks(const double[:, ::1] x, const int64_t[:, ::1] seg, const double[::1] k,
                        const double[::1] L0, const double[::1] c, const int64_t[::1] fidx,
                        const int64_t[:, ::1] slot, const int64_t[::1] indptr, double alpha, double beta,
                        bint definite, double[::1] data) -> None:
    """Add the lower blocks of alpha K + beta D of the springs into data (slot (ns, 4): pairs (0, 0), (0, 1),
    (1, 0), (1, 1))."""
    cdef Py_ssize_t sp, a, b, i, j, ns = seg.shape[0]
    cdef double e[3]
    cdef double B[9]
    cdef double l, g, kk
    cdef int64_t s
    with nogil:
        for sp in range(ns):
            l = _spring_dir(&x[seg[sp, 0], 0], &x[seg[sp, 1], 0], e)
            if l == 0.0:
                continue
            g = k[sp] * (1.0 - L0[sp] / l)
            if definite and g < 0.0:
                g = 0.0
            kk = alpha * k[sp] + beta * c[sp]
            for i in range(3):
                for j in range(3):
                    B[3 * i + j] = (kk - alpha * g) * e[i] * e[j] + (alpha * g if i == j else 0.0)
            for a in range(2):
                for b in range(2):
                    s = slot[sp, 2 * a + b]
                    if s >= 0:
                        _ic_add_block(&data[0], &indptr[0], fidx[seg[sp, a]], fidx[seg[sp, b]], s, B,
                                      1.0 if a == b else -1.0)


cdef bint _ic0_in_place(const int64_t* indptr, const int64_t* indices, Py_ssize_t n, double* L,
                        int64_t* pos) noexcept nogil:
    # row by row (left-looking): L[i, j] = (A[i, j] - sum_{k < j} L[i, k] L[j, k]) / L[j, j] on the pattern;
    # row i's entries are found through pos[column] (-1 off the pattern; all -1 on entry and on return), so
    # each entry costs one pass over row j
    cdef Py_ssize_t i, p, q, qe, pk
    cdef int64_t j
    cdef double s
    cdef bint ok = True
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            pos[indices[p]] = p
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = L[p]
            qe = indptr[j + 1] - 1
            if j == i:
                for q in range(indptr[i], p):
                    s -= L[q] * L[q]
                if not s > 0.0:
                    ok = False
                    break
                L[p] = sqrt(s)
            else:
                for q in range(indptr[j], qe):
                    pk = pos[indices[q]]
                    if pk >= 0:
                        s -= L[q] * L[pk]
                L[p] = s / L[qe]
        for p in range(indptr[i], indptr[i + 1]):
            pos[indices[p]] = -1
        if not ok:
            return False
    return True


def ic0_factor(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] a,
               const double[::1] diag_add, double shift, double[::1] L, int64_t[::1] pos) -> bool:
    """L = the IC(0) factor (lower, same pattern) of the matrix whose lower CSR is a, with diag_add added to
    and shift times the diagonal (a Manteuffel shift, for a breakdown). False when a pivot is not positive
    (L is then garbage). pos (n,) is scratch, -1 everywhere on entry and on return."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, p, nnz = a.shape[0]
    cdef bint ok
    with nogil:
        for p in range(nnz):
            L[p] = a[p]
        for i in range(n):
            p = indptr[i + 1] - 1
            L[p] = L[p] * (1.0 + shift) + diag_add[i]
        ok = _ic0_in_place(&indptr[0], &indices[0], n, &L[0], &pos[0])
    return ok


def ic0_solve(const int64_t[::1] indptr, const int64_t[::1] indices, const double[::1] L, const double[::1] r,
              double[::1] z) -> None:
    """z = (L L^T)^-1 r (r and z different arrays)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, p, d
    cdef double s
    with nogil:
        for i in range(n):
            s = r[i]
            d = indptr[i + 1] - 1
            for p in range(indptr[i], d):
                s -= L[p] * z[indices[p]]
            z[i] = s / L[d]
        for i in range(n - 1, -1, -1):
            d = indptr[i + 1] - 1
            z[i] /= L[d]
            s = z[i]
            for p in range(indptr[i], d):
                z[indices[p]] -= L[p] * s
