# The semi-implicit Euler step (SemiImplicitEulerIntegrator): the built-in forces' velocity and
# position derivatives treated implicitly, so that stiff contact, joint damping and friction are
# stable at the 1-10 ms steps robots are run at (MuJoCo's "implicitfast" idea, with compliant
# contact in the matrix as well).
#
# One step of size h from (q0, u0), udot0 the explicit acceleration there (everything the System
# computes: every force, Python parts included, and the Coriolis terms):
#
#     D = -dQ/du,   K = -(dQ/dq) N          (Q the built-in sets' generalized forces, at (q0, u0))
#     (M + h D + h^2 K) du = h M udot0 - h^2 K u0
#     u1 = u0 + du,   q1 = q0 + h N(q0) u1
#
# which is implicit Euler on the linearized forces: M (u1 - u0) = h (Q(q0 + h N u1, u1) - c) to
# first order. The exact forces are on the right, so the step is first-order accurate whatever D
# and K hold; D and K decide only how stiff a force may be before the step goes unstable. They hold
# the parts that restore and dissipate (a spring's negative stiffness and Stribeck's falling
# friction stay explicit), with friction's dependence on the normal force (which makes D and K
# unsymmetric, hence the LU solve).
#
# Linearized per force kind (the others stay explicit):
#   MobilityLinearDamper       D_uu += c
#   MobilityLinearSpring       K_u,: += k dq/du (the joint's N row: exact for q' != u joints)
#   MobilityLinearStop         beyond a limit: K += k (1 -+ d u)+, D += k depth d
#   CoordinateLimitForce       K += the active side's stiffness, D += its damping
#   GlobalDamper               D += c I
#   MobilityCoulombFriction    D_uu += mu/v_eps sech^2(u/v_eps)
#   HuntCrossley (contact)     per contact, with v = J_r u the slip of surface 1's point over
#                              surface 2's (J_r = J_a - J_b, station Jacobians at the contact point):
#                              D += J_r^T C J_r,  K += J_r^T K_c J_r,
#                              C = fH cH c n n^T + (f_t/v_s)(P - t t^T) + max(f_t', 0) t t^T
#                                  + (f_t/fn) t (fH cH c n^T),   K_c = dfn/dd (n + (f_t/fn) t) n^T
#                              (P = 1 - n n^T, t the slip direction; at rest C's tangential part is
#                              the friction law's slope at zero, the same in every direction)
# The station Jacobian columns come from the tree's S (the joint maps about the Ground origin),
# walking each body's ancestors: O(depth) per contact; M is the composite-body algorithm's, the
# solve a dense LU with partial pivoting (O(nu^3/3): robots' nu).
#
# A Linearizer owns a scratch tree of its own (the kinematics at (q0, u0) are computed again, so
# neither the stepper's tree nor a State's workspace is touched), its matrices and pivots; a step
# allocates nothing. The compiled time loop and the Python path call the same step_u, so their
# trajectories are the same bits.

cdef Py_ssize_t _station_columns(const Tree* t, idx_t b, const double* p, double sign, double* Jr, idx_t* cols,
                                 char* mark, Py_ssize_t ncols) noexcept nogil:
    # Jr[:, k] += sign * (velocity of the point p (Ground) of body b per unit u_k), for every mobility
    # k of b and its ancestors: S_k = (w, v_O) at the Ground origin gives v_p = v_O + w x p. Columns
    # touched first are appended to cols (mark: touched). Returns the new column count.
    cdef Py_ssize_t i = b, k, u0, nd
    cdef const double* S
    while i > 0:
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        for k in range(u0, u0 + nd):
            S = t.S + 6 * k
            if not mark[k]:
                mark[k] = 1
                cols[ncols] = k
                ncols += 1
            Jr[k] += sign * (S[3] + S[1] * p[2] - S[2] * p[1])
            Jr[t.nu + k] += sign * (S[4] + S[2] * p[0] - S[0] * p[2])
            Jr[2 * t.nu + k] += sign * (S[5] + S[0] * p[1] - S[1] * p[0])
        i = t.parent[i]
    return ncols


cdef void _add_congruence(HcLin* L, const double* C, double* out, Py_ssize_t ncols) noexcept nogil:
    # out += J_r^T C J_r over the touched columns (C 3 x 3 row-major), then clear J_r and the marks
    cdef Py_ssize_t a, bcol, i, j, nu = L.nu
    cdef idx_t ka, kb
    cdef double CJ[3]
    for bcol in range(ncols):
        kb = L.cols[bcol]
        for i in range(3):
            CJ[i] = C[3 * i] * L.Jr[kb] + C[3 * i + 1] * L.Jr[nu + kb] + C[3 * i + 2] * L.Jr[2 * nu + kb]
        for a in range(ncols):
            ka = L.cols[a]
            out[nu * ka + kb] += L.Jr[ka] * CJ[0] + L.Jr[nu + ka] * CJ[1] + L.Jr[2 * nu + ka] * CJ[2]


cdef void _clear_columns(HcLin* L, Py_ssize_t ncols) noexcept nogil:
    cdef Py_ssize_t a
    cdef idx_t k
    for a in range(ncols):
        k = L.cols[a]
        L.Jr[k] = 0.0
        L.Jr[L.nu + k] = 0.0
        L.Jr[2 * L.nu + k] = 0.0
        L.mark[k] = 0


cdef inline double _stribeck_slope(double fn, double vs, double vt, double us, double ud, double uv) noexcept nogil:
    # d/dvs of _stribeck's magnitude
    cdef double vr = vs / vt, w = 1.0 + vr * vr, dlt = us - ud
    if vr < 1.0:
        return fn * ((ud + 2.0 * dlt / w - 4.0 * dlt * vr * vr / (w * w)) / vt + uv)
    return fn * (-4.0 * dlt * vr / (w * w * vt) + uv)


cdef void hc_linearize(HcLin* L, const Tree* t, const double* la, const double* lb, idx_t ba, idx_t bb,
                       const double* p, const double* n, double d, double R1, double R2, double vt) noexcept nogil:
    # One contact's D and K (see the file's head), at the point and with the law hc_contact uses.
    cdef double s1, c, fH, cH, vn, f, vs, g, gs, dfn, us, ud, uv, ff
    cdef double loc[3]
    cdef double v1[3]
    cdef double v2[3]
    cdef double v[3]
    cdef double tdir[3]
    cdef double C[9]
    cdef double Kc[9]
    cdef Py_ssize_t i, j, ncols
    hc_spring(la, lb, d, R1, R2, &s1, &c, &fH, &cH)
    for i in range(3):
        loc[i] = p[i] + d * (0.5 - s1) * n[i]
    _station_velocity(t.p_GB, t.V_GB, ba, loc, v1)
    _station_velocity(t.p_GB, t.V_GB, bb, loc, v2)
    for i in range(3):
        v[i] = v1[i] - v2[i]
    vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2]
    f = fH * (1.0 + cH * c * vn)
    if not f > 0.0 or not d > 0.0:
        return  # pushes nothing, rubs nothing
    # normal: d fn / d v = fH cH c n^T;  d fn / d depth = (cH fH / d) (1 + cH c vn)  (fH ~ d^cH)
    dfn = cH * fH / d * (1.0 + cH * c * vn)
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = fH * cH * c * n[i] * n[j]
            Kc[3 * i + j] = dfn * n[i] * n[j]
    us = _harmonic(la[2], lb[2])
    ud = _harmonic(la[3], lb[3])
    uv = _harmonic(la[4], lb[4])
    for i in range(3):
        tdir[i] = v[i] - vn * n[i]
    vs = sqrt(tdir[0] * tdir[0] + tdir[1] * tdir[1] + tdir[2] * tdir[2])
    if vs > 1e-12 * vt:
        g = _stribeck(f, vs, vt, us, ud, uv)
        ff = g / vs
        gs = _stribeck_slope(f, vs, vt, us, ud, uv)
        if gs < 0.0:
            gs = 0.0
        for i in range(3):
            tdir[i] /= vs
    else:
        ff = _stribeck_slope(f, 0.0, vt, us, ud, uv)  # the slope at rest, isotropic in the plane
        gs = ff
        tdir[0] = 0.0; tdir[1] = 0.0; tdir[2] = 0.0
    for i in range(3):
        for j in range(3):
            C[3 * i + j] += ff * ((1.0 if i == j else 0.0) - n[i] * n[j] - tdir[i] * tdir[j]) + gs * tdir[i] * tdir[j]
    if vs > 1e-12 * vt:
        # friction scales with the normal force: F_t = (g / fn) t with g ~ fn, so it changes with the
        # depth and the normal speed as fn does (a stiff coupling: explicit, it undoes the step's stability)
        for i in range(3):
            for j in range(3):
                C[3 * i + j] += g / f * tdir[i] * fH * cH * c * n[j]
                Kc[3 * i + j] += g / f * tdir[i] * dfn * n[j]
    ncols = _station_columns(t, ba, loc, 1.0, L.Jr, L.cols, L.mark, 0)
    ncols = _station_columns(t, bb, loc, -1.0, L.Jr, L.cols, L.mark, ncols)
    _add_congruence(L, C, L.D, ncols)
    _add_congruence(L, Kc, L.K, ncols)
    _clear_columns(L, ncols)


cdef inline double _sech2(double x) noexcept nogil:
    cdef double th = tanh(x)
    return 1.0 - th * th


cdef void _linearize_mobility(const FSet* s, const Tree* t, const double* q, const double* u, double* D, double* K,
                              double* e, double* col, const idx_t* body_of_u) noexcept nogil:
    # The mobility kinds' D and K (diagonal, but for a spring on a coordinate whose q' is not its u:
    # the row of N). e, col: scratch (6,), (7,).
    cdef Py_ssize_t j, k, nu = t.nu, u0, nd, b
    cdef idx_t qi, ui
    cdef const double* prm
    cdef double x, below, above, fac, c, on
    cdef double up[7]
    cdef double lo[7]
    for j in range(s.n):
        qi = s.index[2 * j]
        ui = s.index[2 * j + 1]
        prm = s.params + s.npk * j
        if s.kind == FK_MOBILITY_DAMPER:
            D[nu * ui + ui] += prm[0]
        elif s.kind == FK_MOBILITY_SPRING:
            # dQ_ui/du = -k dq_qi/du: the body's N row of q_qi
            b = body_of_u[ui]
            u0 = t.uoff[b]
            nd = t.uoff[b + 1] - u0
            for k in range(nd):
                e[k] = 0.0
            for k in range(nd):
                e[k] = 1.0
                tree_n_mul(t, b, q + t.qoff[b], e, col)
                e[k] = 0.0
                K[nu * ui + u0 + k] += prm[0] * col[qi - t.qoff[b]]
        elif s.kind == FK_MOBILITY_STOP:
            x = q[qi]
            below = prm[2] - x
            above = x - prm[3]
            if below > 0.0:
                fac = 1.0 - prm[1] * u[ui]
                if fac > 0.0:
                    K[nu * ui + ui] += prm[0] * fac
                    D[nu * ui + ui] += prm[0] * below * prm[1]
            if above > 0.0:
                fac = 1.0 + prm[1] * u[ui]
                if fac > 0.0:
                    K[nu * ui + ui] += prm[0] * fac
                    D[nu * ui + ui] += prm[0] * above * prm[1]
        elif s.kind == FK_COORDINATE_LIMIT:
            x = q[qi]
            _limit_steps(prm, up, lo)
            c = _step_value(up, x)
            on = (c / prm[0] if prm[0] != 0.0 else 0.0)
            K[nu * ui + ui] += c
            c = _step_value(lo, x)
            on += (c / prm[2] if prm[2] != 0.0 else 0.0)
            K[nu * ui + ui] += c
            D[nu * ui + ui] += prm[4] * on
        elif s.kind == FK_MOBILITY_FRICTION:
            D[nu * ui + ui] += prm[0] / prm[1] * _sech2(u[ui] / prm[1])


cdef int _lu_solve(double* A, Py_ssize_t n, double* b, idx_t* piv) noexcept nogil:
    # A x = b in place (x into b), LU with partial pivoting; -1 for a zero or non-finite pivot
    cdef Py_ssize_t i, j, k, p
    cdef double amax, a, m, tmp
    for k in range(n):
        p = k
        amax = fabs(A[n * k + k])
        for i in range(k + 1, n):
            a = fabs(A[n * i + k])
            if a > amax:
                amax = a
                p = i
        if not (amax > 0.0 and isfinite(amax)):
            return -1
        piv[k] = p
        if p != k:
            for j in range(n):
                tmp = A[n * k + j]
                A[n * k + j] = A[n * p + j]
                A[n * p + j] = tmp
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
        for i in range(k + 1, n):
            m = A[n * i + k] / A[n * k + k]
            if m != 0.0:
                A[n * i + k] = m
                for j in range(k + 1, n):
                    A[n * i + j] -= m * A[n * k + j]
                b[i] -= m * b[k]
    for i in range(n - 1, -1, -1):
        a = b[i]
        for j in range(i + 1, n):
            a -= A[n * i + j] * b[j]
        b[i] = a / A[n * i + i]
    return 0


cdef class Linearizer:
    """The semi-implicit Euler step's linear solve over a TreeBatch's tree and force sets (see
    core/implicit_step.pxi). Build it through :func:`simtk._core_implicit.make_linearizer`."""

    cdef readonly TreeBatch batch
    cdef readonly Py_ssize_t nu, nq
    cdef BatchScratch scr
    cdef double* block
    cdef object _M, _D, _K, _Jr, _cols, _mark, _piv, _body_of_u, _w
    cdef double* Mp
    cdef double* wp
    cdef idx_t* pivp
    cdef idx_t* bodyp
    cdef HcLin lin

    def __cinit__(self):
        self.block = NULL

    def __init__(self, TreeBatch batch):
        cdef Py_ssize_t nb = batch.ws.nb, nu = batch.ws.nu, i, k
        self.batch = batch
        self.nu = nu
        self.nq = batch.ws.nq
        self.block = <double*>malloc(_block_doubles(nb, nu, self.nq, batch.ws.nfb) * sizeof(double) + 64)
        if self.block == NULL:
            raise MemoryError()
        memset(self.block, 0, _block_doubles(nb, nu, self.nq, batch.ws.nfb) * sizeof(double) + 64)
        _bind_block(&self.scr, &batch.ws.t, self.block)
        self._M = np.zeros((max(nu, 1), max(nu, 1)))
        self._D = np.zeros((max(nu, 1), max(nu, 1)))
        self._K = np.zeros((max(nu, 1), max(nu, 1)))
        self._Jr = np.zeros(3 * max(nu, 1))
        self._cols = np.zeros(max(nu, 1), dtype=np.int64)
        self._mark = np.zeros(max(nu, 1), dtype=np.int8)
        self._piv = np.zeros(max(nu, 1), dtype=np.int64)
        self._w = np.zeros(2 * max(nu, 1) + 16)
        self._body_of_u = np.zeros(max(nu, 1), dtype=np.int64)
        for i in range(1, nb):
            for k in range(batch.ws.t.uoff[i], batch.ws.t.uoff[i + 1]):
                self._body_of_u[k] = i
        self.Mp = _dp(self._M)
        self.wp = _dp(self._w)
        self.pivp = <idx_t*>cnp.PyArray_DATA(self._piv)
        self.bodyp = <idx_t*>cnp.PyArray_DATA(self._body_of_u)
        self.lin.nu = nu
        self.lin.D = _dp(self._D)
        self.lin.K = _dp(self._K)
        self.lin.Jr = _dp(self._Jr)
        self.lin.cols = <idx_t*>cnp.PyArray_DATA(self._cols)
        self.lin.mark = <char*>cnp.PyArray_DATA(self._mark)

    def __dealloc__(self):
        free(self.block)

    cdef int step_u(self, const double* q0, const double* u0, const double* udot0, double h,
                    double* du) noexcept nogil:
        # du of one semi-implicit step (the file's head); -1 when the matrix is singular or an entry
        # is not finite (the caller refuses the step)
        cdef Tree* t = &self.scr.t
        cdef Py_ssize_t nu = self.nu, i, j, k
        cdef const FSet* s
        cdef double* M = self.Mp
        cdef double* D = self.lin.D
        cdef double* K = self.lin.K
        cdef double* w = self.wp
        cdef double e, h2 = h * h
        if nu == 0:
            return 0
        memcpy(t.q, q0, self.nq * sizeof(double))
        memcpy(t.u, u0, nu * sizeof(double))
        k_position(t)
        k_velocity(t)
        memset(D, 0, nu * nu * sizeof(double))
        memset(K, 0, nu * nu * sizeof(double))
        for k in range(self.batch.nsets):
            s = self.batch.fsets + k
            if s.n == 0:
                continue
            if s.kind == FK_HUNT_CROSSLEY:
                _hc_linearize_set(s, t, &self.lin)
            elif (s.kind == FK_MOBILITY_DAMPER or s.kind == FK_MOBILITY_SPRING or s.kind == FK_MOBILITY_STOP
                  or s.kind == FK_COORDINATE_LIMIT or s.kind == FK_MOBILITY_FRICTION):
                _linearize_mobility(s, t, t.q, t.u, D, K, w, w + 8, self.bodyp)
            elif s.kind == FK_GLOBAL_DAMPER:
                e = 0.0
                for j in range(s.n):
                    e += s.params[s.npk * j]
                for i in range(nu):
                    D[nu * i + i] += e
        k_mass_matrix(t, M)  # (after the contacts, which read I_O-free kinematics: a lean tree sums into I_O)
        # du = h udot0 (M du = h M udot0 - h^2 K u0, written with M du's right side in w)
        for i in range(nu):
            e = 0.0
            for j in range(nu):
                e += M[nu * i + j] * udot0[j]
            e = h * e
            for j in range(nu):
                e -= h2 * (K[nu * i + j] * u0[j])
            du[i] = e
        for i in range(nu * nu):
            M[i] = M[i] + h * D[i] + h2 * K[i]
        if _lu_solve(M, nu, du, self.pivp) != 0:
            return -1
        return 0 if first_non_finite_at(du, nu) < 0 else -1

    def solve(self, const double[::1] q0, const double[::1] u0, const double[::1] udot0, double h, double[::1] du):
        """du of one semi-implicit step from (q0, u0) with the explicit acceleration udot0 (nu,) and
        step h, into ``du``; False when the step's matrix is singular or an entry is not finite."""
        cdef int r
        if q0.shape[0] != self.nq or u0.shape[0] != self.nu or udot0.shape[0] != self.nu or du.shape[0] != self.nu:
            raise ValueError(f"Linearizer.solve: expected q0 ({self.nq},), u0, udot0 and du ({self.nu},)")
        with nogil:
            r = self.step_u(&q0[0] if self.nq else NULL, &u0[0] if self.nu else NULL,
                            &udot0[0] if self.nu else NULL, h, &du[0] if self.nu else NULL)
        return r == 0

    def matrices(self, const double[::1] q0, const double[::1] u0):
        """(D, K) at (q0, u0): copies of the linearization's matrices (a test's view of them)."""
        cdef double[::1] z = np.zeros(self.nu)
        cdef double[::1] du = np.zeros(self.nu)
        self.solve(q0, u0, z, 1.0, du)
        return np.array(self._D[:self.nu, :self.nu]), np.array(self._K[:self.nu, :self.nu])


cdef void _hc_linearize_set(const FSet* s, const Tree* t, HcLin* L) noexcept nogil:
    # every element of a HuntCrossley set, as k_hunt_crossley runs them
    cdef Py_ssize_t j0 = 0, j1
    cdef double e
    cdef double energy = 0.0
    while j0 < s.n:
        e = s.params[HC_NPK * j0]
        j1 = j0 + 1
        while j1 < s.n and s.params[HC_NPK * j1] == e:
            j1 += 1
        hc_element(s, j0, j1, t, NULL, &energy, L)
        j0 = j1


def station_jacobian_into(TreeKernels ws, const idx_t[::1] bodies, const double[:, ::1] p_BS, double[:, ::1] out):
    """out (3k, nu) = the station Jacobian of k stations ``p_BS`` (k, 3) on ``bodies`` (k,), from the
    workspace's positions (a State realized to Position): row 3 i + a is the velocity component a of
    station i per unit of each u. Allocates nothing (the deformable bodies' implicit step calls it every
    step); the columns walk each body's ancestors through the tree's S, as the semi-implicit step's do."""
    cdef Tree* t = &ws.t
    cdef Py_ssize_t nk = bodies.shape[0], nu = ws.nu, k, j, i
    cdef double r[3]
    cdef double p[3]
    cdef const double* S
    if p_BS.shape[0] != nk or p_BS.shape[1] != 3 or out.shape[0] != 3 * nk or out.shape[1] != nu:
        raise ValueError(f"station_jacobian_into: expected p_BS ({nk}, 3) and out ({3 * nk}, {nu}), got "
                         f"{(p_BS.shape[0], p_BS.shape[1])} and {(out.shape[0], out.shape[1])}")
    for k in range(nk):
        if not 0 <= bodies[k] < ws.nb:
            raise ValueError(f"station_jacobian_into: body {bodies[k]} is not a body of this tree")
    with nogil:
        for k in range(nk):
            for j in range(nu):
                out[3 * k, j] = 0.0
                out[3 * k + 1, j] = 0.0
                out[3 * k + 2, j] = 0.0
            station_in_ground(t, bodies[k], &p_BS[k, 0], r, p)
            i = bodies[k]
            while i > 0:
                for j in range(t.uoff[i], t.uoff[i + 1]):
                    S = t.S + 6 * j
                    out[3 * k, j] = S[3] + S[1] * p[2] - S[2] * p[1]
                    out[3 * k + 1, j] = S[4] + S[2] * p[0] - S[0] * p[2]
                    out[3 * k + 2, j] = S[5] + S[0] * p[1] - S[1] * p[0]
                i = t.parent[i]
