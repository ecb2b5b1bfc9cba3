# Deformable bodies' tetrahedral elements (simtk.deformable.DeformableBody.from_tetrahedra): corotational
# linear elasticity (Mueller and Gross 2004; SOFA's TetrahedronFEMForceField, method "large" or "polar").
# A tet t with vertices (a, b, c, d) has rest edge matrix Dm = [Xb - Xa, Xc - Xa, Xd - Xa], Bm = Dm^-1
# (precomputed, row-major 9 per tet), volume V. At positions x:
#
#   F = Ds Bm (Ds the current edges),  F = R S its polar decomposition (R a rotation),
#   e = sym(R^T F) - I,  sigma = 2 mu e + lambda tr(e) I,  P = R sigma,
#   energy = V (mu e:e + lambda/2 tr(e)^2),  f_{b,c,d} = -V (P Bm^T) columns,  f_a = -(f_b + f_c + f_d)
#
# With R the exact polar factor, R^T F = S is symmetric and P is the exact gradient of this energy (the
# "corotated linear" energy: R's own derivative drops out because S - I is symmetric and R^T dR skew), so
# an undamped body conserves energy. An inverted tet (det F <= 0) has no proper polar rotation: there R is
# SOFA's QR-like frame of F's columns (always a rotation), which pushes it back toward positive volume
# (its force is then not the energy's gradient; it is a recovery, not a state the energy describes).
#
# The stiffness K = -df/dx is taken with the rotations frozen (SOFA's choice): K_t = R K0_t R^T, K0_t the
# linear element's, positive semidefinite at any x, exact at rest and at any rigid rotation of it. The
# Rayleigh damping force is -(alpha_M m v + beta_K K v), so D = alpha_M M + beta_K K. Rotations are kept
# per tet beside a copy of the x they belong to; the product recomputes them only when given another x.
# Every call is one pass over the tets, nogil; the caller checked shapes and indices (simtk/_core.py).

cdef inline void _m3_mul(const double* A, const double* B, double* C) noexcept nogil:
    # C = A B (row-major 3 x 3)
    cdef int i, j
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j]


cdef inline void _m3_tmul(const double* A, const double* B, double* C) noexcept nogil:
    # C = A^T B
    cdef int i, j
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j]


cdef inline void _m3_mult(const double* A, const double* B, double* C) noexcept nogil:
    # C = A B^T
    cdef int i, j
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = A[3 * i] * B[3 * j] + A[3 * i + 1] * B[3 * j + 1] + A[3 * i + 2] * B[3 * j + 2]


cdef inline double _m3_det(const double* A) noexcept nogil:
    return (A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6])
            + A[2] * (A[3] * A[7] - A[4] * A[6]))


cdef inline void _edges(const double* x, const int64_t* v, double* D) noexcept nogil:
    # D = [x_b - x_a, x_c - x_a, x_d - x_a] (columns), x rows of 3
    cdef int a, j
    for j in range(3):
        for a in range(3):
            D[3 * a + j] = x[3 * v[j + 1] + a] - x[3 * v[0] + a]


cdef void _qr_frame(const double* F, double* R) noexcept nogil:
    # SOFA's frame: first axis along F's first column, second in the plane of the first two, third their
    # cross product; the identity when the columns give no frame (a collapsed tet)
    cdef double a[3]
    cdef double b[3]
    cdef double c[3]
    cdef double n, d
    cdef int i
    for i in range(3):
        a[i] = F[3 * i]
        b[i] = F[3 * i + 1]
    n = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if n == 0.0:
        for i in range(9):
            R[i] = 1.0 if i % 4 == 0 else 0.0
        return
    for i in range(3):
        a[i] /= n
    d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    for i in range(3):
        b[i] -= d * a[i]
    n = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2])
    if n == 0.0:
        for i in range(9):
            R[i] = 1.0 if i % 4 == 0 else 0.0
        return
    for i in range(3):
        b[i] /= n
    c[0] = a[1] * b[2] - a[2] * b[1]
    c[1] = a[2] * b[0] - a[0] * b[2]
    c[2] = a[0] * b[1] - a[1] * b[0]
    for i in range(3):
        R[3 * i] = a[i]
        R[3 * i + 1] = b[i]
        R[3 * i + 2] = c[i]


cdef void _polar_rotation(const double* F, double* R) noexcept nogil:
    # R = the rotation of F = R S (det F > 0) by Higham's scaled Newton iteration X <- (g X + X^-T / g) / 2,
    # which converges quadratically; the scaling (Frobenius) is dropped near convergence so the last steps
    # reach round-off. det F <= 0: the QR-like frame.
    cdef double X[9]
    cdef double Y[9]
    cdef double det, g, nx, ny, delta
    cdef int i, it
    det = _m3_det(F)
    if not det > 0.0:
        _qr_frame(F, R)
        return
    for i in range(9):
        X[i] = F[i]
    g = 1.0
    for it in range(60):
        det = _m3_det(X)
        # Y = X^-T = cofactor(X) / det
        Y[0] = (X[4] * X[8] - X[5] * X[7]) / det
        Y[1] = (X[5] * X[6] - X[3] * X[8]) / det
        Y[2] = (X[3] * X[7] - X[4] * X[6]) / det
        Y[3] = (X[2] * X[7] - X[1] * X[8]) / det
        Y[4] = (X[0] * X[8] - X[2] * X[6]) / det
        Y[5] = (X[1] * X[6] - X[0] * X[7]) / det
        Y[6] = (X[1] * X[5] - X[2] * X[4]) / det
        Y[7] = (X[2] * X[3] - X[0] * X[5]) / det
        Y[8] = (X[0] * X[4] - X[1] * X[3]) / det
        if g != 1.0 or it == 0:
            nx = 0.0
            ny = 0.0
            for i in range(9):
                nx += X[i] * X[i]
                ny += Y[i] * Y[i]
            g = sqrt(sqrt(ny / nx))
        delta = 0.0
        for i in range(9):
            Y[i] = 0.5 * (g * X[i] + Y[i] / g)
            delta += (Y[i] - X[i]) * (Y[i] - X[i])
            X[i] = Y[i]
        if delta < 1e-4:
            g = 1.0
        if delta <= 1e-30:
            break
    for i in range(9):
        R[i] = X[i]


cdef inline void _linear_stress_forces(const double* G, double mu, double lam, double vol, const double* R,
                                       const double* Bm, double* H) noexcept nogil:
    # H = V R sigma(G) Bm^T, sigma = 2 mu sym(G) + lam tr(G) I: the columns are -f on vertices b, c, d
    cdef double s[9]
    cdef double P[9]
    cdef double tr = G[0] + G[4] + G[8]
    cdef int i, j
    for i in range(3):
        for j in range(3):
            s[3 * i + j] = vol * (mu * (G[3 * i + j] + G[3 * j + i]) + (lam * tr if i == j else 0.0))
    _m3_mul(R, s, P)
    _m3_mult(P, Bm, H)


cdef inline void _scatter(const int64_t* v, const double* H, double scale, double* f) noexcept nogil:
    # f_{b,c,d} -= scale H columns, f_a += scale (their sum)
    cdef int a, j
    cdef double t
    for a in range(3):
        for j in range(3):
            t = scale * H[3 * a + j]
            f[3 * v[j + 1] + a] -= t
            f[3 * v[0] + a] += t


cdef void _tet_rotations(const double* x, const int64_t* tets, const double* Bm, Py_ssize_t nt,
                         double* R) noexcept nogil:
    cdef double D[9]
    cdef double F[9]
    cdef Py_ssize_t t
    for t in range(nt):
        _edges(x, &tets[4 * t], D)
        _m3_mul(D, &Bm[9 * t], F)
        _polar_rotation(F, &R[9 * t])


def tet_forces(const double[:, ::1] x, const double[:, ::1] v, const int64_t[:, ::1] tets,
               const double[:, ::1] Bm, const double[::1] vol, const double[::1] mu, const double[::1] lam,
               const double[::1] vmass, double alpha_m, double beta_k, double[:, ::1] R, double[:, ::1] xR,
               double[:, ::1] f) -> float:
    """Add the tets' elastic and Rayleigh damping forces into f (n, 3); returns the elastic energy. Stores
    each tet's rotation in R (nt, 9) and x in xR (n, 3)."""
    cdef Py_ssize_t t, i, a, nt = tets.shape[0], n = x.shape[0]
    cdef double D[9]
    cdef double F[9]
    cdef double S[9]
    cdef double G[9]
    cdef double H[9]
    cdef double e0, e1, e2, tr, ee, energy = 0.0
    cdef const int64_t* vt
    with nogil:
        for t in range(nt):
            vt = &tets[t, 0]
            _edges(&x[0, 0], vt, D)
            _m3_mul(D, &Bm[t, 0], F)
            _polar_rotation(F, &R[t, 0])
            _m3_tmul(&R[t, 0], F, S)
            # G = sym(R^T F) - I (the rotated strain); the stress routine symmetrizes it
            for i in range(9):
                G[i] = 0.5 * (S[i] + S[3 * (i % 3) + i // 3])
            G[0] -= 1.0
            G[4] -= 1.0
            G[8] -= 1.0
            tr = G[0] + G[4] + G[8]
            ee = 0.0
            for i in range(9):
                ee += G[i] * G[i]
            energy += vol[t] * (mu[t] * ee + 0.5 * lam[t] * tr * tr)
            _linear_stress_forces(G, mu[t], lam[t], vol[t], &R[t, 0], &Bm[t, 0], H)
            _scatter(vt, H, 1.0, &f[0, 0])
            if beta_k != 0.0:
                # K v with this rotation: G = R^T Dv Bm (its symmetric part is the strain rate)
                _edges(&v[0, 0], vt, D)
                _m3_mul(D, &Bm[t, 0], F)
                _m3_tmul(&R[t, 0], F, G)
                _linear_stress_forces(G, mu[t], lam[t], vol[t], &R[t, 0], &Bm[t, 0], H)
                _scatter(vt, H, beta_k, &f[0, 0])
        if alpha_m != 0.0:
            for i in range(n):
                for a in range(3):
                    f[i, a] -= alpha_m * vmass[i] * v[i, a]
        for i in range(n):
            for a in range(3):
                xR[i, a] = x[i, a]
    return energy


def tet_derivative_product(const double[:, ::1] x, const int64_t[:, ::1] tets, const double[:, ::1] Bm,
                           const double[::1] vol, const double[::1] mu, const double[::1] lam,
                           const double[::1] vmass, double alpha_m, double beta_k, double[:, ::1] R,
                           double[:, ::1] xR, double[:, ::1] C, double[:, ::1] xC, const double[:, ::1] dx,
                           const double[:, ::1] dv, double alpha, double beta, double[:, ::1] w,
                           double[:, ::1] out) -> None:
    """Add alpha K dx + beta D dv into out (n, 3), K = R K0 R^T per tet (rotations frozen at x, recomputed
    into R and xR when x is not xR), D = alpha_m M + beta_k K; w (n, 3) is scratch. C (nt, 9) keeps
    Bm R^T per tet for the positions in xC (recomputed when x is not xC)."""
    # With X = W C (W the edges of w, C = Bm R^T): R sigma(R^T W Bm) R^T = mu (X + X^T) + lam tr(X) I =: S(X)
    # and V R sigma Bm^T = V S(X) C^T, so a product is two 3 x 3 products per tet instead of four (C is
    # made once per set of rotations: the CG's products all share it).
    cdef Py_ssize_t t, i, j, a, nt = tets.shape[0], n = x.shape[0]
    cdef double D[9]
    cdef double X[9]
    cdef double S[9]
    cdef double H[9]
    cdef bint stale = False, stale_c = False
    cdef double cb = beta * beta_k
    cdef double tr, V, m
    cdef const int64_t* vt
    with nogil:
        for i in range(n):
            for a in range(3):
                if x[i, a] != xR[i, a]:
                    stale = True
                if x[i, a] != xC[i, a]:
                    stale_c = True
                w[i, a] = alpha * dx[i, a] + cb * dv[i, a]
        if stale:
            _tet_rotations(&x[0, 0], &tets[0, 0], &Bm[0, 0], nt, &R[0, 0])
            for i in range(n):
                for a in range(3):
                    xR[i, a] = x[i, a]
        if stale or stale_c:
            for t in range(nt):
                _m3_mult(&Bm[t, 0], &R[t, 0], &C[t, 0])
            for i in range(n):
                for a in range(3):
                    xC[i, a] = x[i, a]
        for t in range(nt):
            vt = &tets[t, 0]
            _edges(&w[0, 0], vt, D)
            _m3_mul(D, &C[t, 0], X)
            tr = X[0] + X[4] + X[8]
            V = vol[t]
            m = mu[t]
            for i in range(3):
                for j in range(3):
                    S[3 * i + j] = V * (m * (X[3 * i + j] + X[3 * j + i]) + (lam[t] * tr if i == j else 0.0))
            _m3_mult(S, &C[t, 0], H)
            # K w = -(the force of displacement w): the negative of _scatter's sign
            _scatter(vt, H, -1.0, &out[0, 0])
        if beta * alpha_m != 0.0:
            for i in range(n):
                for a in range(3):
                    out[i, a] += beta * alpha_m * vmass[i] * dv[i, a]


# Membrane triangles (SOFA's TriangularFEMForceField, method "large"): a triangle t (a, b, c) of thickness h_t has
# rest edges in its own plane's 2-D frame, Dm (2 x 2, row-major 4 per triangle), Bm = Dm^-1, area A. At x,
# F = Ds Bm (3 x 2, Ds = [x_b - x_a, x_c - x_a]), C = F^T F, S = sqrt(C) in closed form (2 x 2:
# S = (C + sqrt(det C) I) / sqrt(tr C + 2 sqrt(det C))), R = F S^-1 (3 x 2, orthonormal columns). Plane stress:
# e = S - I, sigma = 2 mu e + lambda' tr(e) I (lambda' = 2 mu lambda / (lambda + 2 mu)), energy
# = h A (mu e:e + lambda'/2 tr(e)^2), P = R sigma is its exact gradient (sigma commutes with S). A collapsed
# triangle (det C = 0) takes R from F's first column and the in-plane normal to it. No bending: a flat
# membrane's out-of-plane stiffness is zero (pair it with mass, or springs across edges, in an implicit step).

cdef inline void _unit_normal_to(double* R, int col) noexcept nogil:
    # R's column 1 - col (3 x 2 row-major) = a unit vector normal to its unit column col
    cdef double u0 = R[col], u1 = R[2 + col], u2 = R[4 + col]
    cdef double h0 = 1.0 if abs(u0) < 0.9 else 0.0
    cdef double h1 = 1.0 - h0
    cdef double d = h0 * u0 + h1 * u1
    cdef double r0 = h0 - d * u0, r1 = h1 - d * u1, r2 = -d * u2
    cdef double n = sqrt(r0 * r0 + r1 * r1 + r2 * r2)
    R[1 - col] = r0 / n
    R[3 - col] = r1 / n
    R[5 - col] = r2 / n


cdef void _membrane_rotation(const double* F, double* R) noexcept nogil:
    # F, R: 3 x 2 row-major (6)
    cdef double c00 = F[0] * F[0] + F[2] * F[2] + F[4] * F[4]
    cdef double c01 = F[0] * F[1] + F[2] * F[3] + F[4] * F[5]
    cdef double c11 = F[1] * F[1] + F[3] * F[3] + F[5] * F[5]
    cdef double det = c00 * c11 - c01 * c01
    cdef double sd, k, s00, s01, s11, ds, n, d
    cdef int i
    if det > 1e-28 * (c00 + c11) * (c00 + c11):
        sd = sqrt(det)
        k = 1.0 / sqrt(c00 + c11 + 2.0 * sd)
        s00 = (c00 + sd) * k
        s01 = c01 * k
        s11 = (c11 + sd) * k
        ds = s00 * s11 - s01 * s01
        # R = F S^-1, S^-1 = [[s11, -s01], [-s01, s00]] / ds
        for i in range(3):
            R[2 * i] = (F[2 * i] * s11 - F[2 * i + 1] * s01) / ds
            R[2 * i + 1] = (F[2 * i + 1] * s00 - F[2 * i] * s01) / ds
        return
    # collapsed: the first nonzero column, and the part of the other normal to it (or any normal)
    n = sqrt(c00)
    if n == 0.0:
        n = sqrt(c11)
        if n == 0.0:
            for i in range(6):
                R[i] = 1.0 if i == 0 or i == 3 else 0.0
            return
        for i in range(3):
            R[2 * i + 1] = F[2 * i + 1] / n
        _unit_normal_to(R, 1)
        return
    for i in range(3):
        R[2 * i] = F[2 * i] / n
    d = R[0] * F[1] + R[2] * F[3] + R[4] * F[5]
    for i in range(3):
        R[2 * i + 1] = F[2 * i + 1] - d * R[2 * i]
    d = sqrt(R[1] * R[1] + R[3] * R[3] + R[5] * R[5])
    if d <= 1e-14 * n:
        _unit_normal_to(R, 0)
        return
    for i in range(3):
        R[2 * i + 1] /= d


cdef inline void _tri_F(const double* x, const int64_t* v, const double* Bm, double* F) noexcept nogil:
    # F = Ds Bm: Ds (3 x 2) the edges from vertex a
    cdef double e0, e1
    cdef int a
    for a in range(3):
        e0 = x[3 * v[1] + a] - x[3 * v[0] + a]
        e1 = x[3 * v[2] + a] - x[3 * v[0] + a]
        F[2 * a] = e0 * Bm[0] + e1 * Bm[2]
        F[2 * a + 1] = e0 * Bm[1] + e1 * Bm[3]


cdef inline void _tri_stress_scatter(const double* G, double mu, double lam, double ha, const double* R,
                                     const double* Bm, double scale, const int64_t* v, double* f) noexcept nogil:
    # H = h A R sigma(G) Bm^T (3 x 2), sigma = 2 mu sym(G) + lam tr(G) I; f_{b,c} -= scale H columns, f_a += both
    cdef double tr = G[0] + G[3]
    cdef double s00 = ha * (2.0 * mu * G[0] + lam * tr)
    cdef double s11 = ha * (2.0 * mu * G[3] + lam * tr)
    cdef double s01 = ha * mu * (G[1] + G[2])
    cdef double p0, p1, h0, h1
    cdef int a
    for a in range(3):
        p0 = R[2 * a] * s00 + R[2 * a + 1] * s01
        p1 = R[2 * a] * s01 + R[2 * a + 1] * s11
        h0 = scale * (p0 * Bm[0] + p1 * Bm[1])
        h1 = scale * (p0 * Bm[2] + p1 * Bm[3])
        f[3 * v[1] + a] -= h0
        f[3 * v[2] + a] -= h1
        f[3 * v[0] + a] += h0 + h1


cdef inline void _tri_rtf(const double* R, const double* F, double* G) noexcept nogil:
    # G = R^T F (2 x 2) for R, F 3 x 2
    G[0] = R[0] * F[0] + R[2] * F[2] + R[4] * F[4]
    G[1] = R[0] * F[1] + R[2] * F[3] + R[4] * F[5]
    G[2] = R[1] * F[0] + R[3] * F[2] + R[5] * F[4]
    G[3] = R[1] * F[1] + R[3] * F[3] + R[5] * F[5]


def tri_forces(const double[:, ::1] x, const double[:, ::1] v, const int64_t[:, ::1] tris,
               const double[:, ::1] Bm, const double[::1] ha, const double[::1] mu, const double[::1] lam,
               const double[::1] vmass, double alpha_m, double beta_k, double[:, ::1] R, double[:, ::1] xR,
               double[:, ::1] f) -> float:
    """Add the membranes' elastic and Rayleigh damping forces into f (n, 3); returns the elastic energy. ha is
    thickness times area, lam the plane-stress lambda'. Stores the rotations in R (nt, 6) and x in xR."""
    cdef Py_ssize_t t, i, a, nt = tris.shape[0], n = x.shape[0]
    cdef double F[6]
    cdef double G[4]
    cdef double e0, e1, e01, tr, energy = 0.0
    cdef const int64_t* vt
    with nogil:
        for t in range(nt):
            vt = &tris[t, 0]
            _tri_F(&x[0, 0], vt, &Bm[t, 0], F)
            _membrane_rotation(F, &R[t, 0])
            _tri_rtf(&R[t, 0], F, G)
            G[0] -= 1.0
            G[3] -= 1.0
            e01 = 0.5 * (G[1] + G[2])
            G[1] = e01
            G[2] = e01
            tr = G[0] + G[3]
            energy += ha[t] * (mu[t] * (G[0] * G[0] + G[3] * G[3] + 2.0 * e01 * e01) + 0.5 * lam[t] * tr * tr)
            _tri_stress_scatter(G, mu[t], lam[t], ha[t], &R[t, 0], &Bm[t, 0], 1.0, vt, &f[0, 0])
            if beta_k != 0.0:
                _tri_F(&v[0, 0], vt, &Bm[t, 0], F)
                _tri_rtf(&R[t, 0], F, G)
                _tri_stress_scatter(G, mu[t], lam[t], ha[t], &R[t, 0], &Bm[t, 0], beta_k, vt, &f[0, 0])
        if alpha_m != 0.0:
            for i in range(n):
                for a in range(3):
                    f[i, a] -= alpha_m * vmass[i] * v[i, a]
        for i in range(n):
            for a in range(3):
                xR[i, a] = x[i, a]
    return energy


def tri_derivative_product(const double[:, ::1] x, const int64_t[:, ::1] tris, const double[:, ::1] Bm,
                           const double[::1] ha, const double[::1] mu, const double[::1] lam,
                           const double[::1] vmass, double alpha_m, double beta_k, double[:, ::1] R,
                           double[:, ::1] xR, const double[:, ::1] dx, const double[:, ::1] dv, double alpha,
                           double beta, double[:, ::1] w, double[:, ::1] out) -> None:
    """Add alpha K dx + beta D dv into out (n, 3) for the membranes (rotations frozen at x, recomputed when x
    is not xR); w (n, 3) is scratch."""
    cdef Py_ssize_t t, i, a, nt = tris.shape[0], n = x.shape[0]
    cdef double F[6]
    cdef double G[4]
    cdef bint stale = False
    cdef double cb = beta * beta_k
    cdef const int64_t* vt
    with nogil:
        for i in range(n):
            for a in range(3):
                if x[i, a] != xR[i, a]:
                    stale = True
                w[i, a] = alpha * dx[i, a] + cb * dv[i, a]
        if stale:
            for t in range(nt):
                _tri_F(&x[0, 0], &tris[t, 0], &Bm[t, 0], F)
                _membrane_rotation(F, &R[t, 0])
            for i in range(n):
                for a in range(3):
                    xR[i, a] = x[i, a]
        for t in range(nt):
            vt = &tris[t, 0]
            _tri_F(&w[0, 0], vt, &Bm[t, 0], F)
            _tri_rtf(&R[t, 0], F, G)
            _tri_stress_scatter(G, mu[t], lam[t], ha[t], &R[t, 0], &Bm[t, 0], -1.0, vt, &out[0, 0])
        if beta * alpha_m != 0.0:
            for i in range(n):
                for a in range(3):
                    out[i, a] += beta * alpha_m * vmass[i] * dv[i, a]
