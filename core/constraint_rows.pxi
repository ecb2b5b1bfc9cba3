# Row families of the constraint solve evaluated in the compiled core, from the
# pose and velocity arrays of a TreeKernels (all in Ground). Each function is
# the compiled form of a family's routine in
# simtk/multibody/constraints/_rows.py, whose docstrings give the equations;
# the families call these, so the Python staged path and any compiled caller
# compute the same numbers.
#
# Coincident (Ball, the translation rows of Weld): K point pairs, three rows
# each; S = station s2 on body 2, P = station s1 on body 1, A = the ancestor
# frame of the two bodies (Ground when `ground`), C = the material point of
# body 1 at S.


cdef inline void _station(const Tree* t, idx_t b, const double* s, double* r, double* p) noexcept nogil:
    # r = R_GB s, p = p_GB + r
    mat33_vec(t.R_GB + 9 * b, s, r)
    p[0] = t.p_GB[3 * b] + r[0]
    p[1] = t.p_GB[3 * b + 1] + r[1]
    p[2] = t.p_GB[3 * b + 2] + r[2]


cdef int _check_pairs(TreeKernels ws, const idx_t[::1] b1, const double[:, ::1] s1, const idx_t[::1] b2,
                      const double[:, ::1] s2, const idx_t[::1] a) except -1:
    cdef Py_ssize_t K = b1.shape[0], k
    if b2.shape[0] != K or a.shape[0] != K or s1.shape[0] != K or s2.shape[0] != K \
            or s1.shape[1] != 3 or s2.shape[1] != 3:
        raise ValueError("coincident rows: b1, s1, b2, s2 and the ancestors differ in length")
    for k in range(K):
        if not (0 <= b1[k] < ws.nb and 0 <= b2[k] < ws.nb and 0 <= a[k] < ws.nb):
            raise ValueError(f"coincident rows: pair {k} names a body outside the tree")
    return 0


cdef void coincident_position_t(const Tree* t, Py_ssize_t K, const idx_t* b1, const double* s1, const idx_t* b2,
                                const double* s2, const idx_t* a, bint ground, double* perr,
                                double* S) noexcept nogil:
    # the nogil core of coincident_position (s1, s2, S: (K, 3) row-major)
    cdef Py_ssize_t k, j
    cdef double r[3]
    cdef double pP[3]
    cdef double d[3]
    for k in range(K):
        _station(t, b2[k], s2 + 3 * k, r, S + 3 * k)
        _station(t, b1[k], s1 + 3 * k, r, pP)
        for j in range(3):
            d[j] = S[3 * k + j] - pP[j]
        if ground:
            for j in range(3):
                perr[3 * k + j] = d[j]
        else:
            mat33T_vec(t.R_GB + 9 * a[k], d, perr + 3 * k)


def coincident_position(TreeKernels ws, const idx_t[::1] b1, const double[:, ::1] s1, const idx_t[::1] b2,
                        const double[:, ::1] s2, const idx_t[::1] a, bint ground, double[::1] perr,
                        double[:, ::1] S):
    """perr (3K,) = R_AG (p_S - p_P) (= p_S - p_P when ``ground``) and the stations' locations
    S (K, 3) in Ground (the geometry the force map reuses at this q)."""
    cdef Py_ssize_t K = b1.shape[0]
    _check_pairs(ws, b1, s1, b2, s2, a)
    if perr.shape[0] != 3 * K or S.shape[0] != K or S.shape[1] != 3:
        raise ValueError("coincident_position: perr must have 3K entries and S be (K, 3)")
    if K:
        with nogil:
            coincident_position_t(&ws.t, K, &b1[0], &s1[0, 0], &b2[0], &s2[0, 0], &a[0], ground, &perr[0],
                                  &S[0, 0])


cdef void coincident_force_map_t(const Tree* t, Py_ssize_t K, const idx_t* b1, const idx_t* a, bint ground,
                                 const double* S, double* st, double* F, double* sts) noexcept nogil:
    # the nogil core of coincident_force_map (st (3K, 2, 3), F (3K, 2, 2, 3), sts (2K, 3) row-major)
    cdef Py_ssize_t k, j, i, row
    cdef double d[3]
    cdef double sC[3]
    cdef const double* RA
    for k in range(K):
        for i in range(3):
            d[i] = S[3 * k + i] - t.p_GB[3 * b1[k] + i]
        mat33T_vec(t.R_GB + 9 * b1[k], d, sC)
        for i in range(3):
            sts[3 * (K + k) + i] = sC[i]
        for j in range(3):
            row = 3 * k + j
            for i in range(3):
                st[6 * row + 3 + i] = sC[i]
            if not ground:
                RA = t.R_GB + 9 * a[k]
                for i in range(3):
                    F[12 * row + 3 + i] = RA[3 * i + j]
                    F[12 * row + 9 + i] = -RA[3 * i + j]


def coincident_force_map(TreeKernels ws, const idx_t[::1] b1, const idx_t[::1] a, bint ground,
                         const double[:, ::1] S, double[:, :, ::1] st, double[:, :, :, ::1] F,
                         double[:, ::1] sts):
    """The force map at this q for unit multipliers: row j of pair k has entry 0 (+n_j at S on
    body 2, its station a template) and entry 1 (-n_j at C on body 1); n_j = R_GA e_j. Writes C's
    station on body 1, sC = R_GB1^T (S - p_GB1), into st (3K, 2, 3) (entry 1 of each row) and sts
    (2K, 3) (its second half), and unless ``ground`` the directions into F (3K, 2, 2, 3)."""
    cdef Py_ssize_t K = b1.shape[0], k
    if a.shape[0] != K or S.shape[0] != K or S.shape[1] != 3 or st.shape[0] != 3 * K or st.shape[1] != 2 \
            or st.shape[2] != 3 or sts.shape[0] != 2 * K or sts.shape[1] != 3 or F.shape[0] != 3 * K \
            or F.shape[1] != 2 or F.shape[2] != 2 or F.shape[3] != 3:
        raise ValueError("coincident_force_map: the shapes of a, S, st, F and sts do not fit K pairs")
    for k in range(K):
        if not (0 <= b1[k] < ws.nb and 0 <= a[k] < ws.nb):
            raise ValueError(f"coincident_force_map: pair {k} names a body outside the tree")
    if K:
        with nogil:
            coincident_force_map_t(&ws.t, K, &b1[0], &a[0], ground, &S[0, 0], &st[0, 0, 0], &F[0, 0, 0, 0],
                                   &sts[0, 0])


cdef void coincident_fast_t(const Tree* t, Py_ssize_t K, const idx_t* a, bint ground, const double* AB,
                            const double* verr, const double* Gud, double* out) noexcept nogil:
    # the nogil core of coincident_fast (AB (2K, 2, 3) row-major; verr unread when ground)
    cdef Py_ssize_t k, i
    cdef double e[3]
    cdef double dv[3]
    cdef double c[3]
    cdef const double* w
    for k in range(K):
        for i in range(3):
            e[i] = AB[6 * k + 3 + i] - AB[6 * (K + k) + 3 + i]
        if not ground:
            mat33_vec(t.R_GB + 9 * a[k], verr + 3 * k, dv)  # v_S - v_C = R_GA pverr
            w = t.V_GB + 6 * a[k]
            cross3(w, dv, c)
            for i in range(3):
                c[i] = e[i] - 2.0 * c[i]
            mat33T_vec(t.R_GB + 9 * a[k], c, e)
        for i in range(3):
            out[3 * k + i] = Gud[3 * k + i] + e[i]


def coincident_fast(TreeKernels ws, const idx_t[::1] a, bint ground, const double[:, :, ::1] AB,
                    const double[::1] verr, const double[::1] Gud, double[::1] out):
    """The acceleration rows at the unconstrained accelerations: out = Gud + e with
    e = a_S - a_C from the stations' bias accelerations AB (2K, 2, 3) (S's, then C's), and unless
    ``ground`` e = R_AG (e - 2 w_GA x (R_GA verr)) with verr (3K,) the realized velocity errors."""
    cdef Py_ssize_t K = a.shape[0], k
    if AB.shape[0] != 2 * K or Gud.shape[0] != 3 * K or out.shape[0] != 3 * K \
            or (not ground and verr.shape[0] != 3 * K):
        raise ValueError("coincident_fast: the sizes of AB, verr, Gud and out do not fit K pairs")
    for k in range(K):
        if not 0 <= a[k] < ws.nb:
            raise ValueError(f"coincident_fast: pair {k} names a body outside the tree")
    if K:
        with nogil:
            coincident_fast_t(&ws.t, K, &a[0], ground, &AB[0, 0, 0], NULL if ground else &verr[0], &Gud[0],
                              &out[0])


# Angle (ConstantAngle, ConstantOrientation and Weld's orientation rows): K rows
# b . f - cos, with b = R_GB_b a_b the unit axis on the base body and f = R_GB_f a_f
# the one on the follower; the force map applies the torque c = f x b to the
# follower and -c to the base. The geometry kept at a q is (b, f) per row, (K, 2, 3).

cdef void angle_position_t(const Tree* t, Py_ssize_t K, const idx_t* bb, const double* ab, const idx_t* bf,
                           const double* af, const double* cosv, double* perr, double* geom) noexcept nogil:
    # the nogil core of angle_position
    cdef Py_ssize_t k
    for k in range(K):
        mat33_vec(t.R_GB + 9 * bb[k], ab + 3 * k, geom + 6 * k)
        mat33_vec(t.R_GB + 9 * bf[k], af + 3 * k, geom + 6 * k + 3)
        perr[k] = dot3(geom + 6 * k, geom + 6 * k + 3) - cosv[k]


cdef void angle_force_map_t(Py_ssize_t K, const double* geom, double* c, double* F) noexcept nogil:
    # the nogil core of angle_force_map (F (K, 2, 2, 3): the torques of entries 0 and 1 written)
    cdef Py_ssize_t k, i
    for k in range(K):
        cross3(geom + 6 * k + 3, geom + 6 * k, c + 3 * k)
        for i in range(3):
            F[12 * k + i] = c[3 * k + i]
            F[12 * k + 6 + i] = -c[3 * k + i]


cdef void angle_fast_t(const Tree* t, Py_ssize_t K, const idx_t* bb, const idx_t* bf, const double* geom,
                       const double* c, const double* Gud, double* out) noexcept nogil:
    # the nogil core of angle_fast (needs A_bias: not a lean tree)
    cdef Py_ssize_t k, i
    cdef double d[3]
    cdef double x[3]
    cdef double y[3]
    cdef double xb[3]
    cdef double yf[3]
    cdef const double* wb
    cdef const double* wf
    for k in range(K):
        wb = t.V_GB + 6 * bb[k]
        wf = t.V_GB + 6 * bf[k]
        for i in range(3):
            d[i] = t.A_bias[6 * bf[k] + i] - t.A_bias[6 * bb[k] + i]
        cross3(wf, geom + 6 * k + 3, x)  # w_f x f
        cross3(x, geom + 6 * k, xb)      # (w_f x f) x b
        cross3(wb, geom + 6 * k, y)      # w_b x b
        cross3(y, geom + 6 * k + 3, yf)  # (w_b x b) x f
        for i in range(3):
            x[i] = wf[i] - wb[i]
            y[i] = xb[i] - yf[i]
        out[k] = (Gud[k] + dot3(d, c + 3 * k)) + dot3(x, y)


def angle_position(TreeKernels ws, const idx_t[::1] bb, const double[:, ::1] ab, const idx_t[::1] bf,
                   const double[:, ::1] af, const double[::1] cosv, double[::1] perr, double[:, :, ::1] geom):
    """perr (K,) = b . f - cos with b = R_GB_b a_b, f = R_GB_f a_f, and the axes into geom (K, 2, 3)."""
    cdef Py_ssize_t K = bb.shape[0], k
    if bf.shape[0] != K or ab.shape[0] != K or af.shape[0] != K or ab.shape[1] != 3 or af.shape[1] != 3 \
            or cosv.shape[0] != K or perr.shape[0] != K or geom.shape[0] != K or geom.shape[1] != 2 \
            or geom.shape[2] != 3:
        raise ValueError("angle_position: the shapes of the axes, cos, perr and geom do not fit K rows")
    for k in range(K):
        if not (0 <= bb[k] < ws.nb and 0 <= bf[k] < ws.nb):
            raise ValueError(f"angle_position: row {k} names a body outside the tree")
    if K:
        with nogil:
            angle_position_t(&ws.t, K, &bb[0], &ab[0, 0], &bf[0], &af[0, 0], &cosv[0], &perr[0], &geom[0, 0, 0])


def angle_force_map(const double[:, :, ::1] geom, double[:, ::1] c, double[:, :, :, ::1] F):
    """c (K, 3) = f x b from the axes geom (K, 2, 3), and the torques +c (entry 0, the follower) and
    -c (entry 1, the base) into F (K, 2, 2, 3)."""
    cdef Py_ssize_t K = geom.shape[0]
    if geom.shape[1] != 2 or geom.shape[2] != 3 or c.shape[0] != K or c.shape[1] != 3 or F.shape[0] != K \
            or F.shape[1] != 2 or F.shape[2] != 2 or F.shape[3] != 3:
        raise ValueError("angle_force_map: the shapes of geom, c and F do not fit K rows")
    if K:
        with nogil:
            angle_force_map_t(K, &geom[0, 0, 0], &c[0, 0], &F[0, 0, 0, 0])


def angle_fast(TreeKernels ws, const idx_t[::1] bb, const idx_t[::1] bf, const double[:, :, ::1] geom,
               const double[:, ::1] c, const double[::1] Gud, double[::1] out):
    """The acceleration rows at the unconstrained accelerations: out = Gud + (a_f - a_b) . c +
    (w_f - w_b) . ((w_f x f) x b - (w_b x b) x f), from the bodies' bias angular accelerations and
    angular velocities."""
    cdef Py_ssize_t K = bb.shape[0], k
    if bf.shape[0] != K or geom.shape[0] != K or geom.shape[1] != 2 or geom.shape[2] != 3 or c.shape[0] != K \
            or c.shape[1] != 3 or Gud.shape[0] != K or out.shape[0] != K:
        raise ValueError("angle_fast: the shapes of geom, c, Gud and out do not fit K rows")
    for k in range(K):
        if not (0 <= bb[k] < ws.nb and 0 <= bf[k] < ws.nb):
            raise ValueError(f"angle_fast: row {k} names a body outside the tree")
    if K:
        with nogil:
            angle_fast_t(&ws.t, K, &bb[0], &bf[0], &geom[0, 0, 0], &c[0, 0], &Gud[0], &out[0])


# Plane (PointInPlane, PointOnLine): K rows n . (p_S - p_B) - h, n = R_GB n_B fixed on the plane
# body B (bp), S station s on the follower (bf); +n at S on the follower, -n at the plane body's
# material point C at S. The geometry kept at a q is (n, d = p_S - p_B) per row, (K, 2, 3).

cdef void plane_position_t(const Tree* t, Py_ssize_t K, const idx_t* bp, const double* nB, const double* h,
                           const idx_t* bf, const double* s, double* perr, double* geom) noexcept nogil:
    # the nogil core of plane_position
    cdef Py_ssize_t k, i
    cdef double r[3]
    cdef double S[3]
    for k in range(K):
        _station(t, bf[k], s + 3 * k, r, S)
        mat33_vec(t.R_GB + 9 * bp[k], nB + 3 * k, geom + 6 * k)
        for i in range(3):
            geom[6 * k + 3 + i] = S[i] - t.p_GB[3 * bp[k] + i]
        perr[k] = dot3(geom + 6 * k, geom + 6 * k + 3) - h[k]


cdef void plane_force_map_t(const Tree* t, Py_ssize_t K, const idx_t* bp, const double* geom, double* st, double* F,
                            double* sts) noexcept nogil:
    # the nogil core of plane_force_map
    cdef Py_ssize_t k, i
    cdef double sC[3]
    for k in range(K):
        mat33T_vec(t.R_GB + 9 * bp[k], geom + 6 * k + 3, sC)
        for i in range(3):
            st[6 * k + 3 + i] = sC[i]
            sts[3 * (K + k) + i] = sC[i]
            F[12 * k + 3 + i] = geom[6 * k + i]
            F[12 * k + 9 + i] = -geom[6 * k + i]


cdef void plane_fast_t(const Tree* t, Py_ssize_t K, const idx_t* bp, const double* geom, const double* AB,
                       const double* VS, const double* Gud, double* out) noexcept nogil:
    # the nogil core of plane_fast
    cdef Py_ssize_t k, i
    cdef double dv[3]
    cdef double c[3]
    cdef double e[3]
    for k in range(K):
        for i in range(3):
            dv[i] = VS[6 * k + 3 + i] - VS[6 * (K + k) + 3 + i]
        cross3(t.V_GB + 6 * bp[k], dv, c)
        for i in range(3):
            e[i] = (AB[6 * k + 3 + i] - AB[6 * (K + k) + 3 + i]) - 2.0 * c[i]
        out[k] = Gud[k] + dot3(geom + 6 * k, e)


def plane_position(TreeKernels ws, const idx_t[::1] bp, const double[:, ::1] nB, const double[::1] h,
                   const idx_t[::1] bf, const double[:, ::1] s, double[::1] perr, double[:, :, ::1] geom):
    """perr (K,) = n . (p_S - p_B) - h with n = R_GB n_B, and (n, p_S - p_B) into geom (K, 2, 3)."""
    cdef Py_ssize_t K = bp.shape[0], k
    if bf.shape[0] != K or nB.shape[0] != K or s.shape[0] != K or nB.shape[1] != 3 or s.shape[1] != 3 \
            or h.shape[0] != K or perr.shape[0] != K or geom.shape[0] != K or geom.shape[1] != 2 \
            or geom.shape[2] != 3:
        raise ValueError("plane_position: the shapes of n, h, s, perr and geom do not fit K rows")
    for k in range(K):
        if not (0 <= bp[k] < ws.nb and 0 <= bf[k] < ws.nb):
            raise ValueError(f"plane_position: row {k} names a body outside the tree")
    if K:
        with nogil:
            plane_position_t(&ws.t, K, &bp[0], &nB[0, 0], &h[0], &bf[0], &s[0, 0], &perr[0], &geom[0, 0, 0])


def plane_force_map(TreeKernels ws, const idx_t[::1] bp, const double[:, :, ::1] geom, double[:, :, ::1] st,
                    double[:, :, :, ::1] F, double[:, ::1] sts):
    """The force map at this q for unit multipliers: +n at S on the follower (entry 0, its station
    a template), -n at C on the plane body (entry 1); writes C's station sC = R_GB^T (p_S - p_B)
    into st (K, 2, 3) (entry 1) and sts (2K, 3) (its second half), and the forces into F."""
    cdef Py_ssize_t K = bp.shape[0], k
    if geom.shape[0] != K or geom.shape[1] != 2 or geom.shape[2] != 3 or st.shape[0] != K or st.shape[1] != 2 \
            or st.shape[2] != 3 or F.shape[0] != K or F.shape[1] != 2 or F.shape[2] != 2 or F.shape[3] != 3 \
            or sts.shape[0] != 2 * K or sts.shape[1] != 3:
        raise ValueError("plane_force_map: the shapes of geom, st, F and sts do not fit K rows")
    for k in range(K):
        if not 0 <= bp[k] < ws.nb:
            raise ValueError(f"plane_force_map: row {k} names a body outside the tree")
    if K:
        with nogil:
            plane_force_map_t(&ws.t, K, &bp[0], &geom[0, 0, 0], &st[0, 0, 0], &F[0, 0, 0, 0], &sts[0, 0])


def plane_fast(TreeKernels ws, const idx_t[::1] bp, const double[:, :, ::1] geom, const double[:, :, ::1] AB,
               const double[:, :, ::1] VS, const double[::1] Gud, double[::1] out):
    """The acceleration rows at the unconstrained accelerations: out = Gud + n . (a_S - a_C
    - 2 w_B x (v_S - v_C)), from the stations' bias accelerations AB and velocities VS (2K, 2, 3)."""
    cdef Py_ssize_t K = bp.shape[0], k
    if geom.shape[0] != K or AB.shape[0] != 2 * K or VS.shape[0] != 2 * K or Gud.shape[0] != K \
            or out.shape[0] != K:
        raise ValueError("plane_fast: the shapes of geom, AB, VS, Gud and out do not fit K rows")
    for k in range(K):
        if not 0 <= bp[k] < ws.nb:
            raise ValueError(f"plane_fast: row {k} names a body outside the tree")
    if K:
        with nogil:
            plane_fast_t(&ws.t, K, &bp[0], &geom[0, 0, 0], &AB[0, 0, 0], &VS[0, 0, 0], &Gud[0], &out[0])


# Rod: K rows |p_S2 - p_S1| - L along Cz = (p_S2 - p_S1) / |p_S2 - p_S1|, the force +Cz at S2 on
# body 2 and -Cz at S1 on body 1. When the stations coincide (|d| < eps^1.25, ROD_TINY) Cz is
# body 1's z axis and the distance 0, as in Simbody. The geometry kept at a q is (Cz, dist) per
# row, (K, 4); dist == 0 marks the coincident case.

cdef double ROD_TINY = 2.220446049250313e-16 ** 1.25


cdef void rod_position_t(const Tree* t, Py_ssize_t K, const idx_t* b1, const double* s1, const idx_t* b2,
                         const double* s2, const double* L, double* perr, double* geom) noexcept nogil:
    # the nogil core of rod_position
    cdef Py_ssize_t k, i
    cdef double r[3]
    cdef double S2[3]
    cdef double S1[3]
    cdef double d[3]
    cdef double dist
    for k in range(K):
        _station(t, b2[k], s2 + 3 * k, r, S2)
        _station(t, b1[k], s1 + 3 * k, r, S1)
        for i in range(3):
            d[i] = S2[i] - S1[i]
        dist = sqrt(dot3(d, d))
        if dist >= ROD_TINY:
            for i in range(3):
                geom[4 * k + i] = d[i] / dist
        else:
            for i in range(3):
                geom[4 * k + i] = t.R_GB[9 * b1[k] + 3 * i + 2]  # body 1's z axis
            dist = 0.0
        geom[4 * k + 3] = dist
        perr[k] = dist - L[k]


cdef void rod_force_map_t(Py_ssize_t K, const double* geom, double* F) noexcept nogil:
    # the nogil core of rod_force_map
    cdef Py_ssize_t k, i
    for k in range(K):
        for i in range(3):
            F[12 * k + 3 + i] = geom[4 * k + i]
            F[12 * k + 9 + i] = -geom[4 * k + i]


cdef void rod_fast_t(const Tree* t, Py_ssize_t K, const idx_t* b1, const idx_t* a, const double* geom,
                     const double* AB, const double* VS, const double* verr, const double* Gud,
                     double* out) noexcept nogil:
    # the nogil core of rod_fast
    cdef Py_ssize_t k, i
    cdef double dv[3]
    cdef double da[3]
    cdef double w[3]
    cdef double x[3]
    cdef double y[3]
    cdef double curv
    cdef const double* Cz
    cdef const double* wA
    for k in range(K):
        Cz = geom + 4 * k
        for i in range(3):
            dv[i] = VS[6 * k + 3 + i] - VS[6 * (K + k) + 3 + i]
            da[i] = AB[6 * k + 3 + i] - AB[6 * (K + k) + 3 + i]
        if geom[4 * k + 3] != 0.0:
            curv = (dot3(dv, dv) - verr[k] * verr[k]) / geom[4 * k + 3]
        else:  # coincident stations: dv . (w_1 - w_A) x Cz - 2 Cz . (w_A x dv)
            wA = t.V_GB + 6 * a[k]
            for i in range(3):
                w[i] = t.V_GB[6 * b1[k] + i] - wA[i]
            cross3(w, Cz, x)
            cross3(wA, dv, y)
            curv = dot3(dv, x) - 2.0 * dot3(Cz, y)
        out[k] = (Gud[k] + dot3(Cz, da)) + curv


def rod_position(TreeKernels ws, const idx_t[::1] b1, const double[:, ::1] s1, const idx_t[::1] b2,
                 const double[:, ::1] s2, const double[::1] L, double[::1] perr, double[:, ::1] geom):
    """perr (K,) = |p_S2 - p_S1| - L and (Cz, dist) into geom (K, 4) (see the Rod rows above)."""
    cdef Py_ssize_t K = b1.shape[0], k
    if b2.shape[0] != K or s1.shape[0] != K or s2.shape[0] != K or s1.shape[1] != 3 or s2.shape[1] != 3 \
            or L.shape[0] != K or perr.shape[0] != K or geom.shape[0] != K or geom.shape[1] != 4:
        raise ValueError("rod_position: the shapes of the stations, L, perr and geom do not fit K rows")
    for k in range(K):
        if not (0 <= b1[k] < ws.nb and 0 <= b2[k] < ws.nb):
            raise ValueError(f"rod_position: row {k} names a body outside the tree")
    if K:
        with nogil:
            rod_position_t(&ws.t, K, &b1[0], &s1[0, 0], &b2[0], &s2[0, 0], &L[0], &perr[0], &geom[0, 0])


def rod_force_map(const double[:, ::1] geom, double[:, :, :, ::1] F):
    """The forces +Cz (entry 0, at S2 on body 2) and -Cz (entry 1, at S1 on body 1) into F (K, 2, 2, 3)."""
    cdef Py_ssize_t K = geom.shape[0]
    if geom.shape[1] != 4 or F.shape[0] != K or F.shape[1] != 2 or F.shape[2] != 2 or F.shape[3] != 3:
        raise ValueError("rod_force_map: the shapes of geom and F do not fit K rows")
    if K:
        with nogil:
            rod_force_map_t(K, &geom[0, 0], &F[0, 0, 0, 0])


def rod_fast(TreeKernels ws, const idx_t[::1] b1, const idx_t[::1] a, const double[:, ::1] geom,
             const double[:, :, ::1] AB, const double[:, :, ::1] VS, const double[::1] verr, const double[::1] Gud,
             double[::1] out):
    """The acceleration rows at the unconstrained accelerations: out = Gud + Cz . (a_S2 - a_S1) +
    (|dv|^2 - verr^2) / dist with dv = v_S2 - v_S1 (or, for coincident stations, the rotating-frame
    terms dv . ((w_1 - w_A) x Cz) - 2 Cz . (w_A x dv)); AB, VS (2K, 2, 3) the stations' bias
    accelerations and velocities (S2's, then S1's), verr (K,) the realized velocity errors."""
    cdef Py_ssize_t K = b1.shape[0], k
    if a.shape[0] != K or geom.shape[0] != K or geom.shape[1] != 4 or AB.shape[0] != 2 * K \
            or VS.shape[0] != 2 * K or verr.shape[0] != K or Gud.shape[0] != K or out.shape[0] != K:
        raise ValueError("rod_fast: the shapes of geom, AB, VS, verr, Gud and out do not fit K rows")
    for k in range(K):
        if not (0 <= b1[k] < ws.nb and 0 <= a[k] < ws.nb):
            raise ValueError(f"rod_fast: row {k} names a body outside the tree")
    if K:
        with nogil:
            rod_fast_t(&ws.t, K, &b1[0], &a[0], &geom[0, 0], &AB[0, 0, 0], &VS[0, 0, 0], &verr[0], &Gud[0],
                       &out[0])


# NoSlip (NoSlip1D): K nonholonomic rows n . (v1_P - v0_P) at the contact point P and direction n
# fixed on the case body bc; +n on moving body 1 and -n on moving body 0, each at its material
# point at P. Only the force map and the fast rows (the velocity rows are G u); the geometry kept
# is n (K, 3).

cdef void noslip_force_map_t(const Tree* t, Py_ssize_t K, const idx_t* bc, const double* pC, const double* nC,
                             const idx_t* b0, const idx_t* b1, double* n, double* st, double* F,
                             double* sts) noexcept nogil:
    # the nogil core of noslip_force_map
    cdef Py_ssize_t k, i
    cdef double r[3]
    cdef double Pg[3]
    cdef double d[3]
    cdef double s1[3]
    cdef double s0[3]
    for k in range(K):
        _station(t, bc[k], pC + 3 * k, r, Pg)
        mat33_vec(t.R_GB + 9 * bc[k], nC + 3 * k, n + 3 * k)
        for i in range(3):
            d[i] = Pg[i] - t.p_GB[3 * b1[k] + i]
        mat33T_vec(t.R_GB + 9 * b1[k], d, s1)
        for i in range(3):
            d[i] = Pg[i] - t.p_GB[3 * b0[k] + i]
        mat33T_vec(t.R_GB + 9 * b0[k], d, s0)
        for i in range(3):
            st[6 * k + i] = s1[i]
            st[6 * k + 3 + i] = s0[i]
            sts[3 * k + i] = s1[i]
            sts[3 * (K + k) + i] = s0[i]
            F[12 * k + 3 + i] = n[3 * k + i]
            F[12 * k + 9 + i] = -n[3 * k + i]


cdef void noslip_fast_t(const Tree* t, Py_ssize_t K, const idx_t* bc, const idx_t* a, const double* n,
                        const double* AB, const double* VS, const double* Gud, double* out) noexcept nogil:
    # the nogil core of noslip_fast
    cdef Py_ssize_t k, i
    cdef double w[3]
    cdef double dv[3]
    cdef double c[3]
    cdef double e[3]
    for k in range(K):
        for i in range(3):
            w[i] = t.V_GB[6 * bc[k] + i] + t.V_GB[6 * a[k] + i]
            dv[i] = VS[6 * k + 3 + i] - VS[6 * (K + k) + 3 + i]
        cross3(w, dv, c)
        for i in range(3):
            e[i] = (AB[6 * k + 3 + i] - AB[6 * (K + k) + 3 + i]) - c[i]
        out[k] = Gud[k] + dot3(n + 3 * k, e)


def noslip_force_map(TreeKernels ws, const idx_t[::1] bc, const double[:, ::1] pC, const double[:, ::1] nC,
                     const idx_t[::1] b0, const idx_t[::1] b1, double[:, ::1] n, double[:, :, ::1] st,
                     double[:, :, :, ::1] F, double[:, ::1] sts):
    """The force map at this q for unit multipliers: +n at body 1's material point at P (entry 0),
    -n at body 0's (entry 1); writes their stations into st (K, 2, 3) and sts (2K, 3) (body 1's,
    then body 0's), the forces into F (K, 2, 2, 3) and n = R_GC n_C into n (K, 3)."""
    cdef Py_ssize_t K = bc.shape[0], k
    if pC.shape[0] != K or nC.shape[0] != K or pC.shape[1] != 3 or nC.shape[1] != 3 or b0.shape[0] != K \
            or b1.shape[0] != K or n.shape[0] != K or n.shape[1] != 3 or st.shape[0] != K or st.shape[1] != 2 \
            or st.shape[2] != 3 or F.shape[0] != K or F.shape[1] != 2 or F.shape[2] != 2 or F.shape[3] != 3 \
            or sts.shape[0] != 2 * K or sts.shape[1] != 3:
        raise ValueError("noslip_force_map: the shapes of the arrays do not fit K rows")
    for k in range(K):
        if not (0 <= bc[k] < ws.nb and 0 <= b0[k] < ws.nb and 0 <= b1[k] < ws.nb):
            raise ValueError(f"noslip_force_map: row {k} names a body outside the tree")
    if K:
        with nogil:
            noslip_force_map_t(&ws.t, K, &bc[0], &pC[0, 0], &nC[0, 0], &b0[0], &b1[0], &n[0, 0], &st[0, 0, 0],
                               &F[0, 0, 0, 0], &sts[0, 0])


def noslip_fast(TreeKernels ws, const idx_t[::1] bc, const idx_t[::1] a, const double[:, ::1] n,
                const double[:, :, ::1] AB, const double[:, :, ::1] VS, const double[::1] Gud, double[::1] out):
    """The acceleration rows at the unconstrained accelerations: out = Gud + n . (a_1 - a_0
    - (w_C + w_A) x (v_1 - v_0)) at the material points (AB, VS (2K, 2, 3): body 1's, then body 0's)."""
    cdef Py_ssize_t K = bc.shape[0], k
    if a.shape[0] != K or n.shape[0] != K or n.shape[1] != 3 or AB.shape[0] != 2 * K or VS.shape[0] != 2 * K \
            or Gud.shape[0] != K or out.shape[0] != K:
        raise ValueError("noslip_fast: the shapes of n, AB, VS, Gud and out do not fit K rows")
    for k in range(K):
        if not (0 <= bc[k] < ws.nb and 0 <= a[k] < ws.nb):
            raise ValueError(f"noslip_fast: row {k} names a body outside the tree")
    if K:
        with nogil:
            noslip_fast_t(&ws.t, K, &bc[0], &a[0], &n[0, 0], &AB[0, 0, 0], &VS[0, 0, 0], &Gud[0], &out[0])
