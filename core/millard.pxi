# Muscles: OpenSim 4.6's Millard2012EquilibriumMuscle as the force kind FK_MILLARD (elastic tendon,
# damped or undamped, and rigid tendon), a force with continuous state like FK_THELEN (core/muscles.pxi).
#
# The law is simtk/multibody/forces/_millard.py's (its test oracle: tests/multibody/test_millard_kernel.py
# checks this kernel against it at random states, both are checked against OpenSim): quintic Bezier
# curves (active force-length, force-velocity and its inverse, passive fiber, tendon), whose control
# points the oracle builds at Instance and packs as parameters, so no curve is built here; the fiber
# at constant pennation height; the fiber velocity from the inverse force-velocity curve (undamped),
# from a Newton iteration on the damped fiber-tendon balance (damped), or from the path's speed
# (rigid tendon). Written in the oracle's order of operations (-ffp-contract=off), so the two agree
# to the last bit wherever libm's functions do; where the oracle raises (no convergence, a singular
# undamped velocity) the kernel gives NaN, and the set reports the muscle.
#
# Packed layout: the rows of a GeometryPath set (PATH_NP columns), then ML_NP - PATH_NP columns read
# from an element's first row: the z indices of activation and fiber length (-1: not a state), the
# input of the held excitation, the finalized scalars (MILLARD_COLUMNS), then the five curves, each
# (x0, x1, y0, y1, dydx0, dydx1) and per Bezier section its 6 x then 6 y control points.

cdef enum:
    ML_ZA = 13
    ML_ZL = 14
    ML_IN = 15
    ML_FISO = 16
    ML_OFL = 17
    ML_TSL = 18
    ML_PHI0 = 19
    ML_VMAX = 20
    ML_BETA = 21
    ML_DAMPED = 22
    ML_ELASTIC = 23
    ML_IGNACT = 24
    ML_TACT = 25
    ML_TDEACT = 26
    ML_AMIN = 27
    ML_PHIMAX = 28
    ML_HEIGHT = 29
    ML_MAXSIN = 30
    ML_PENMIN = 31
    ML_PENMIN_ALONG = 32
    ML_LMIN = 33
    ML_FAL = 34      # 5 sections: 6 + 60
    ML_FV = 100     # 4 sections: 6 + 48
    ML_FVI = 154    # 4 sections
    ML_FPE = 208    # 2 sections: 6 + 24
    ML_FSE = 238    # 2 sections
    ML_NP = 268

MILLARD_COLUMNS = ("za", "zl", "input", "max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                   "pennation_angle_at_optimal", "max_contraction_velocity", "beta", "damped", "elastic",
                   "ignore_activation_dynamics", "activation_time_constant", "deactivation_time_constant",
                   "minimum_activation", "maximum_pennation_angle", "height", "max_sin", "pen_min",
                   "pen_min_along", "min_fiber_length")
#: (curve, first column, number of sections)
MILLARD_CURVES = (("fal", ML_FAL, 5), ("fv", ML_FV, 4), ("fv_inv", ML_FVI, 4), ("fpe", ML_FPE, 2),
                  ("fse", ML_FSE, 2))
FORCE_KINDS["MillardMuscle"] = (FK_MILLARD, 1, ("element", "type", "q", "u", "lo", "hi", "fx", "fy", "fz", "law",
                                                "a", "b", "c") + MILLARD_COLUMNS
                                + tuple(f"curve{k}" for k in range(ML_NP - ML_FAL)), False)

cdef double _ML_UTOL = 2.220446049250313e-16 * 1e2


cdef inline double _ml_bez(double u, const double* p) noexcept nogil:
    cdef double v = 1.0 - u
    cdef double u2 = u * u, v2 = v * v
    return (v2 * v2 * v * p[0] + 5.0 * v2 * v2 * u * p[1] + 10.0 * v2 * v * u2 * p[2] + 10.0 * v2 * u2 * u * p[3]
            + 5.0 * v * u2 * u2 * p[4] + u2 * u2 * u * p[5])


cdef inline double _ml_bez_du(double u, const double* p) noexcept nogil:
    cdef double v = 1.0 - u
    cdef double u2 = u * u, v2 = v * v
    return 5.0 * (v2 * v2 * (p[1] - p[0]) + 4.0 * v2 * v * u * (p[2] - p[1]) + 6.0 * v2 * u2 * (p[3] - p[2])
                  + 4.0 * v * u2 * u * (p[4] - p[3]) + u2 * u2 * (p[5] - p[4]))


cdef double _ml_solve_u(double x, const double* px) noexcept nogil:
    # the oracle's _solve_u: Newton inside a shrinking bracket, bisecting when it leaves it; NaN where
    # the oracle raises
    cdef double lo = 0.0, hi = 1.0, span = px[5] - px[0], u, f, d, nxt
    cdef int it
    u = (x - px[0]) / span if span > 0.0 else 0.5
    u = u if u > 0.0 else 0.0
    u = u if u < 1.0 else 1.0
    for it in range(200):
        f = _ml_bez(u, px) - x
        if fabs(f) <= _ML_UTOL:
            return u
        if f > 0.0:
            hi = u
        else:
            lo = u
        d = _ml_bez_du(u, px)
        nxt = u - f / d if d > 0.0 else -1.0
        u = nxt if (lo < nxt and nxt < hi) else 0.5 * (lo + hi)
        if hi - lo <= _TH_EPS:
            return u
    return NAN


cdef double _ml_curve(const double* c, int nsec, double x, double* dydx) noexcept nogil:
    # y(x) and dy/dx of a packed curve (the oracle's Curve.value_and_slope)
    cdef int i = nsec - 1, k
    cdef double u = 1.0
    cdef const double* px
    if x < c[0]:
        dydx[0] = c[4]
        return c[2] + c[4] * (x - c[0])
    if x > c[1]:
        dydx[0] = c[5]
        return c[3] + c[5] * (x - c[1])
    if not x == x:
        dydx[0] = NAN
        return NAN
    for k in range(nsec):
        px = c + 6 + 12 * k
        if px[0] <= x and x < px[5]:
            i = k
            u = _ml_solve_u(x, px)
            break
    px = c + 6 + 12 * i
    dydx[0] = _ml_bez_du(u, px + 6) / _ml_bez_du(u, px)
    return _ml_bez(u, px + 6)


cdef inline double _ml_clamp_activation(const double* m, double a) noexcept nogil:
    # min(1, max(a_min, a)) as Python's min and max choose (NaN gives a_min)
    a = a if a > m[ML_AMIN] else m[ML_AMIN]
    return a if a < 1.0 else 1.0


cdef bint _ml_damped_velocity(const double* m, double a, double fal, double fpe, double fse, double cosphi,
                              double* v_out, double* fv_out) noexcept nogil:
    # OpenSim's Newton iteration on a f_L f_V(v) + f_PE + beta v = f_SE / cos(phi) (the oracle's
    # _damped_velocity); False where it does not converge
    cdef double fiso = m[ML_FISO], beta = m[ML_BETA]
    cdef double tol = 1e-10 * fiso, fv0, v, err = 1e10, fv = 0.0, dfv, d, t, slope
    cdef int it = 0
    if _TH_SIGNIFICANT * 100.0 > tol:
        tol = _TH_SIGNIFICANT * 100.0
    fv0 = (fse / (cosphi if not 0.01 > cosphi else 0.01) - fpe) / (
        (a if not 0.01 > a else 0.01) * (fal if not 0.01 > fal else 0.01))
    t = _ml_curve(m + ML_FVI, 4, fv0, &slope)
    t = t if t > -1.0 else -1.0
    v = t if t < 1.0 else 1.0
    while fabs(err) > tol and it < 20:
        fv = _ml_curve(m + ML_FV, 4, v, &dfv)
        err = fiso * (a * fal * fv + fpe + beta * v) * cosphi - fse * fiso
        d = fiso * (a * fal * dfv + beta) * cosphi
        if fabs(err) > tol and fabs(d) > _TH_SIGNIFICANT:
            v -= err / d
        it += 1
    v_out[0] = v
    fv_out[0] = fv
    return fabs(err) <= tol


cdef void millard_law(const double* m, double za, double zl, double L, double Ldot, double e,
                      double* o) noexcept nogil:
    # The muscle at its states (za, zl: activation and fiber length, read only when they are states),
    # path length L and speed Ldot, excitation e: o[TI_*] as thelen_law's (activation_rate 0 when
    # activation is not a state; fiber_velocity the fiber's, integrated only with an elastic tendon).
    # All NaN where the oracle raises. Cost: ~100 flops and 2 to 4 curve inversions (Newton on a
    # quintic, ~4 iterations), plus up to 20 Newton steps of 1 more for the damped velocity.
    cdef double fiso = m[ML_FISO], ofl = m[ML_OFL], tsl = m[ML_TSL], vmax = m[ML_VMAX], h = m[ML_HEIGHT]
    cdef double lmin = m[ML_LMIN], beta = m[ML_BETA]
    cdef bint elastic = m[ML_ELASTIC] != 0.0, damped = m[ML_DAMPED] != 0.0
    cdef double a, adot = 0.0, lce, along, f, lceN, phi, s, cosphi, sinphi, tl, fpe, dfpe, fal, dfal
    cdef double fse = NAN, dfse, dlce, dlceN, fv, dfv, dphi, dtl, aFm = 0.0, pFm = 0.0, fm = 0.0, p1, p2, ar, tendon
    cdef bint clamped
    cdef int i
    if m[ML_IGNACT] != 0.0:
        a = _ml_clamp_activation(m, e)
    else:
        a = _ml_clamp_activation(m, za)
        ar = a  # the oracle's first_order_activation_rate clamps the raw state as clamp_activation does
        if e > ar:
            adot = (e - ar) / (m[ML_TACT] * (0.5 + 1.5 * ar))
        else:
            adot = (e - ar) * (0.5 + 1.5 * ar) / m[ML_TDEACT]
    if elastic:
        lce = lmin if lmin > zl else zl
    else:
        along = L - tsl
        f = sqrt(h * h + along * along) if along >= m[ML_PENMIN_ALONG] else m[ML_PENMIN]
        lce = lmin if lmin > f else f
    lceN = lce / ofl
    if m[ML_PHI0] > _TH_EPS:
        if lce > m[ML_PENMIN]:
            s = h / lce
            phi = asin(s) if s < m[ML_MAXSIN] else m[ML_PHIMAX]
        else:
            phi = m[ML_PHIMAX]
    else:
        phi = 0.0
    cosphi = cos(phi)
    sinphi = sin(phi)
    tl = L - lce * cosphi
    fpe = _ml_curve(m + ML_FPE, 2, lceN, &dfpe)
    fal = _ml_curve(m + ML_FAL, 5, lceN, &dfal)
    if not elastic:
        if tl < tsl - _TH_SIGNIFICANT:
            dlce = 0.0
            dlceN = 0.0
            fv = 1.0
        else:
            dlce = Ldot * cosphi
            dlceN = dlce / (ofl * vmax)
            fv = _ml_curve(m + ML_FV, 4, dlceN, &dfv)
    elif not damped:
        fse = _ml_curve(m + ML_FSE, 2, tl / tsl, &dfse)
        if not (cosphi > _TH_SIGNIFICANT and a > _TH_SIGNIFICANT and fal > _TH_SIGNIFICANT):
            for i in range(TI_N):
                o[i] = NAN
            return
        fv = (fse / cosphi - fpe) / (a * fal)
        dlceN = _ml_curve(m + ML_FVI, 4, fv, &dfv)
        dlce = dlceN * vmax * ofl
    else:
        fse = _ml_curve(m + ML_FSE, 2, tl / tsl, &dfse)
        if not _ml_damped_velocity(m, a, fal, fpe, fse, cosphi, &dlceN, &fv):
            for i in range(TI_N):
                o[i] = NAN
            return
        dlce = dlceN * ofl * vmax
    dphi = -(dlce / lce) * tan(phi) if m[ML_PHI0] > _TH_EPS else 0.0
    dtl = Ldot - dlce * cosphi + lce * sinphi * dphi if elastic else 0.0
    clamped = lce <= lmin and dlce <= 0.0
    if clamped:
        dlce = 0.0
        dlceN = 0.0
        dtl = Ldot
        fv = 1.0
    else:
        aFm = fiso * a * fal * fv
        p1 = fiso * fpe
        p2 = fiso * beta * dlceN
        fm = aFm + p1 + p2
        if not elastic and fm < 0.0:
            fm = 0.0
            p2 = -aFm - p1
        pFm = p1 + p2
    tendon = fse * fiso if elastic else fm * cosphi
    o[TI_TENDON_FORCE] = tendon
    o[TI_FIBER_VELOCITY] = dlce
    o[TI_ACTIVATION_RATE] = adot
    o[TI_FIBER_LENGTH] = lce
    o[TI_PENNATION] = phi
    o[TI_TENDON_LENGTH] = tl
    o[TI_ACTIVE_FIBER_FORCE] = aFm
    o[TI_PASSIVE_FIBER_FORCE] = pFm
    o[TI_FIBER_FORCE] = fm
    o[TI_ACTIVATION] = a
    o[TI_FAL] = fal
    o[TI_FPE] = fpe
    o[TI_FV] = fv
    o[TI_TENDON_VELOCITY] = dtl
    o[TI_CLAMPED] = 1.0 if clamped else 0.0
    o[TI_EXCITATION] = e
    o[TI_LENGTH] = L
    o[TI_SPEED] = Ldot


cdef inline bint _millard_reads(const FSet* s, const Tree* t, const double* z, Py_ssize_t nz, const double* m,
                                Py_ssize_t k, double* za, double* zl, double* e) noexcept nogil:
    # element k's states (from z; NaN where not a state) and excitation (its input plus its functions
    # of time); False when the evaluation does not give them (the set and the stepper check it before)
    cdef Py_ssize_t i, ia = <Py_ssize_t>m[ML_ZA], il = <Py_ssize_t>m[ML_ZL]
    cdef double x = t.time
    if ia >= nz or il >= nz or <Py_ssize_t>m[ML_IN] >= t.ninputs:
        return False
    za[0] = z[ia] if ia >= 0 else NAN
    zl[0] = z[il] if il >= 0 else NAN
    e[0] = t.inputs[<Py_ssize_t>m[ML_IN]]
    for i in range(s.nterms):
        if s.terms[2 * i] == k:
            e[0] += fn_value(s.fn, s.terms[2 * i + 1], &x)
    return True


cdef Py_ssize_t _add_millard(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                             double* mf) noexcept nogil:
    # Per muscle: its path's L and Ldot, the law, its states' derivatives into zdot, the tendon force
    # along the path. Returns the first muscle whose law or forces are not finite (its forces left
    # out), or -1.
    cdef Py_ssize_t j0 = 0, j1, k, bad = -1, ia, il
    cdef double L, Ldot, za, zl, e
    cdef double o[TI_N]
    cdef const double* m
    cdef bint ok
    while j0 < s.n:
        j1 = _path_end(s, j0)
        m = s.params + s.npk * j0
        k = <Py_ssize_t>m[PP_ELEMENT]
        if not _millard_reads(s, t, t.z, t.nz, m, k, &za, &zl, &e):
            return k
        _path_measure(s, t, q, u, j0, j1, &L, &Ldot)
        millard_law(m, za, zl, L, Ldot, e, o)
        ia = <Py_ssize_t>m[ML_ZA]
        il = <Py_ssize_t>m[ML_ZL]
        ok = isfinite(o[TI_TENDON_FORCE])
        if ia >= 0:
            t.zdot[ia] = o[TI_ACTIVATION_RATE]
            ok = ok and isfinite(o[TI_ACTIVATION_RATE])
        if il >= 0:
            t.zdot[il] = o[TI_FIBER_VELOCITY]
            ok = ok and isfinite(o[TI_FIBER_VELOCITY])
        if ok:
            _path_apply(s, t, q, u, j0, j1, o[TI_TENDON_FORCE], bf, mf)
        elif bad < 0:
            bad = k
        j0 = j1
    return bad


_set_kind(FK_MILLARD, _add_millard, NULL)


def _millard_rows(params):
    """(ninputs, nz, number of muscles) a Millard muscle set reads, after checking that the rows'
    muscle columns are ones the kernel can read safely (raises ValueError naming the row)."""
    cdef Py_ssize_t j, n = params.shape[0]
    if params.shape[1] != ML_NP:
        raise ValueError(f"ForceSet (MillardMuscle): params must have {ML_NP} columns")
    ninputs = nz = m = 0
    for j in range(n):
        row = params[j]
        for col in (ML_ZA, ML_ZL, ML_IN):
            if row[col] != int(row[col]) or row[col] < (0 if col == ML_IN else -1):
                raise ValueError(f"ForceSet (MillardMuscle): row {j}: bad index {row[col]} in column "
                                 f"{MILLARD_COLUMNS[col - ML_ZA]!r}")
        if not np.isfinite(row[ML_FISO:ML_NP]).all():
            raise ValueError(f"ForceSet (MillardMuscle): row {j}: a property or curve point is not finite")
        if row[ML_ELASTIC] != 0.0 and row[ML_ZL] < 0:
            raise ValueError(f"ForceSet (MillardMuscle): row {j}: an elastic tendon needs a fiber-length state")
        if row[ML_IGNACT] == 0.0 and row[ML_ZA] < 0:
            raise ValueError(f"ForceSet (MillardMuscle): row {j}: activation dynamics need an activation state")
        nz = max(nz, int(row[ML_ZA]) + 1, int(row[ML_ZL]) + 1)
        ninputs = max(ninputs, int(row[ML_IN]) + 1)
        m = max(m, int(row[PP_ELEMENT]) + 1)
    return ninputs, nz, m


def millard_info(ForceSet fs, TreeKernels ws, z, out):
    """Write every muscle's law at the workspace's realized kinematics, its time and inputs
    (``ws.set_inputs``) and the states ``z`` into ``out`` (m, len(THELEN_INFO)): the values the
    kernel applies and integrates (nothing is written into any zdot)."""
    cdef Py_ssize_t j0 = 0, j1, k, nz
    cdef double L, Ldot, za, zl, e
    cdef double* o
    cdef const double* zp
    if fs.kind != FK_MILLARD:
        raise ValueError("millard_info: expected a MillardMuscle ForceSet")
    fs._fits(ws, ws.nq)
    if fs.ninputs > ws.t.ninputs:
        raise ValueError(f"millard_info: the muscles read {fs.ninputs} inputs, but the workspace gives "
                         f"{ws.t.ninputs} (TreeKernels.set_inputs)")
    nz = z.shape[0] if isinstance(z, cnp.ndarray) and z.ndim == 1 else -1
    if nz < fs.nz or not _is_f64_vector(z, nz, False):
        raise ValueError(f"millard_info: z: expected a C-contiguous float64 vector of at least {fs.nz} entries")
    m = int(fs.params[-1, PP_ELEMENT]) + 1 if fs.n else 0
    if not _is_f64_vector(out, TI_N * m, True):
        raise ValueError(f"millard_info: out: expected a writable C-contiguous float64 ({m}, {TI_N}) array")
    o = _dp(out)
    zp = _dp(z) if nz else NULL
    with nogil:
        while j0 < fs.s.n:
            j1 = _path_end(&fs.s, j0)
            k = <Py_ssize_t>fs.s.params[fs.s.npk * j0 + PP_ELEMENT]
            if not _millard_reads(&fs.s, &ws.t, zp, nz, fs.s.params + fs.s.npk * j0, k, &za, &zl, &e):
                za = zl = e = NAN  # (not reached: the checks above give every muscle its states and input)
            _path_measure(&fs.s, &ws.t, ws.t.q, ws.t.u, j0, j1, &L, &Ldot)
            millard_law(fs.s.params + fs.s.npk * j0, za, zl, L, Ldot, e, o + TI_N * k)
            j0 = j1


def millard_curve(params, int column, int nsec, double x):
    """(y, dy/dx) of the packed curve at ``params[column:]`` with ``nsec`` sections (for tests)."""
    cdef double[::1] p = np.ascontiguousarray(params, dtype=np.float64)
    cdef double slope
    if column < 0 or column + 6 + 12 * nsec > p.shape[0]:
        raise ValueError("millard_curve: the curve does not fit in params")
    y = _ml_curve(&p[column], nsec, x, &slope)
    return y, slope
