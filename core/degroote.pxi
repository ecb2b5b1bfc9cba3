# Muscles: OpenSim 4.6's DeGrooteFregly2016Muscle as the force kind FK_DEGROOTE (explicit elastic
# tendon or rigid tendon), a force with continuous state like FK_THELEN (core/muscles.pxi).
#
# The law is simtk/multibody/forces/_degroote.py's (its test oracle: tests/multibody/test_degroote_kernel.py
# checks this kernel against it at random states, both are checked against OpenSim): De Groote et al.'s
# closed-form curves (active force-length a sum of three Gaussians, force-velocity through asinh and
# its inverse through sinh, exponential passive and tendon curves), the fiber at constant width, the
# tanh-smoothed activation dynamics, and with an elastic tendon the normalized tendon force as state,
# its derivative the tendon's stretch rate times the tendon curve's slope. Written in the oracle's order
# of operations (-ffp-contract=off), with the constants the oracle computes once packed from it, so the
# two agree to the last bit wherever libm's functions do. Where the oracle raises (a logarithm of a
# tendon force <= -c3, a division by zero activation, sinh overflowing) the kernel's values are NaN or
# infinite, and the set reports the muscle.
#
# Packed layout: the rows of a GeometryPath set (PATH_NP columns), then DG_NP - PATH_NP columns read
# from an element's first row (DEGROOTE_COLUMNS).

from libc.math cimport fabs, log, pow, sinh, tanh

cdef enum:
    DG_ZA = 13
    DG_ZT = 14
    DG_IN = 15
    DG_FISO = 16
    DG_OFL = 17
    DG_TSL = 18
    DG_VMAX = 19
    DG_TACT = 20
    DG_TDEACT = 21
    DG_AFWS = 22
    DG_DAMP = 23
    DG_E0 = 24
    DG_SMOOTH = 25
    DG_ELASTIC = 26
    DG_IGNACT = 27
    DG_IGNPE = 28
    DG_WIDTH = 29
    DG_KT = 30
    DG_PE_OFFSET = 31
    DG_PE_DEN = 32
    DG_NP = 33

# degroote_info's columns: THELEN_INFO's, then the normalized tendon force's derivative
cdef enum:
    DG_NTF_RATE = TI_N
    DG_INFO_N = TI_N + 1

DEGROOTE_COLUMNS = ("za", "zt", "input", "max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                    "max_contraction_velocity", "activation_time_constant", "deactivation_time_constant",
                    "active_force_width_scale", "fiber_damping", "passive_fiber_strain_at_one_norm_force",
                    "activation_dynamics_smoothing", "elastic", "ignore_activation_dynamics",
                    "ignore_passive_fiber_force", "width", "kT", "passive_offset", "passive_denominator")
DEGROOTE_INFO = THELEN_INFO + ("normalized_tendon_force_rate",)
FORCE_KINDS["DeGrooteMuscle"] = (FK_DEGROOTE, 1, ("element", "type", "q", "u", "lo", "hi", "fx", "fy", "fz", "law",
                                                  "a", "b", "c") + DEGROOTE_COLUMNS, False)

# the oracle's constants, the same decimal literals (so the same doubles)
# (b1, b2, b3, b4) of the three Gaussians
cdef double _DG_B[12]
_DG_B[:] = [0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465,
            0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188,
            0.1, 1.0, 0.353553390593274, 0.0]
cdef double _DG_KPE = 4.0
cdef double _DG_C1 = 0.200, _DG_C2 = 1.0, _DG_C3 = 0.200
cdef double _DG_D1 = -0.3211346127989808, _DG_D2 = -8.149, _DG_D3 = -0.374, _DG_D4 = 0.8825327733249912


# The oracle squares with Python's ``**`` (libm's pow, for a negative base pow(|x|, 2)), which differs
# from x * x in the last bit for ~1e-3 of the arguments; a compiler folds pow(x, 2.0) into x * x, so
# the exponent is read from a volatile it cannot fold.
cdef extern from *:
    """
    static volatile double simtk_dg_two = 2.0;
    """
    double simtk_dg_two


cdef inline double _dg_square(double x) noexcept nogil:
    return pow(fabs(x), simtk_dg_two)


cdef inline double _dg_fal(const double* m, double lceN) noexcept nogil:
    cdef double x = (lceN - 1.0) / m[DG_AFWS] + 1.0, s = 0.0
    cdef int i
    for i in range(3):
        s = s + _DG_B[4 * i] * exp(-0.5 * _dg_square(x - _DG_B[4 * i + 1])
                                   / _dg_square(_DG_B[4 * i + 2] + _DG_B[4 * i + 3] * x))
    return s


cdef void degroote_law(const double* m, double za, double zt, double L, double Ldot, double e,
                       double* o) noexcept nogil:
    # The muscle at its states (za, zt: activation and normalized tendon force, read only when they are
    # states), path length L and speed Ldot, excitation e: o[TI_*] as thelen_law's (activation_rate 0
    # when activation is not a state) and o[DG_NTF_RATE] (0 with a rigid tendon). Cost: ~60 flops,
    # 5 exp, 1 log, 1 sqrt, 1 asin, and sinh or asinh's log.
    cdef double fiso = m[DG_FISO], ofl = m[DG_OFL], tsl = m[DG_TSL], w = m[DG_WIDTH], kT = m[DG_KT]
    cdef double vmax = m[DG_VMAX] * ofl
    cdef bint elastic = m[DG_ELASTIC] != 0.0
    cdef double a, adot = 0.0, k, f, tlN, tl, along, lce, cosphi, sinphi, lceN, fpe, fal, fv, t
    cdef double dlce, dlceN, dtl, aFm, pFm, fm, tendon, ntf_dot = 0.0
    if m[DG_IGNACT] != 0.0:
        a = e
    else:
        a = za
        k = 0.5 + 1.5 * a
        f = 0.5 * tanh(m[DG_SMOOTH] * (e - a))
        adot = ((f + 0.5) / (m[DG_TACT] * k) + (0.5 - f) * k / m[DG_TDEACT]) * (e - a)
    tlN = log((zt + _DG_C3) / _DG_C1) / kT + _DG_C2 if elastic else 1.0
    tl = tsl * tlN
    along = L - tl
    lce = sqrt(along * along + w * w)
    cosphi = along / lce
    sinphi = w / lce
    lceN = lce / ofl
    if m[DG_IGNPE] != 0.0:
        fpe = 0.0
    else:
        fpe = (exp(_DG_KPE * (lceN - 1.0) / m[DG_E0]) - m[DG_PE_OFFSET]) / m[DG_PE_DEN]
    fal = _dg_fal(m, lceN)
    if elastic:
        fv = (zt / cosphi - fpe) / (a * fal)
        dlceN = (sinh((fv - _DG_D4) / _DG_D1) - _DG_D3) / _DG_D2
        dlce = dlceN * vmax
        dtl = Ldot - dlce / cosphi
    else:
        dtl = 0.0
        dlce = (Ldot - dtl) * cosphi
        dlceN = dlce / vmax
        t = _DG_D2 * dlceN + _DG_D3
        fv = _DG_D1 * log(t + sqrt(t * t + 1.0)) + _DG_D4
    aFm = fiso * a * fal * fv
    pFm = fiso * fpe + fiso * m[DG_DAMP] * dlceN
    fm = aFm + pFm
    if elastic:
        tendon = fiso * zt
        ntf_dot = dtl / tsl * (_DG_C1 * kT * exp(kT * (tlN - _DG_C2)))
    else:
        tendon = fm * cosphi
    o[TI_TENDON_FORCE] = tendon
    o[TI_FIBER_VELOCITY] = dlce
    o[TI_ACTIVATION_RATE] = adot
    o[TI_FIBER_LENGTH] = lce
    o[TI_PENNATION] = asin(sinphi)
    o[TI_TENDON_LENGTH] = tl
    o[TI_ACTIVE_FIBER_FORCE] = aFm
    o[TI_PASSIVE_FIBER_FORCE] = pFm
    o[TI_FIBER_FORCE] = fm
    o[TI_ACTIVATION] = a
    o[TI_FAL] = fal
    o[TI_FPE] = fpe
    o[TI_FV] = fv
    o[TI_TENDON_VELOCITY] = dtl
    o[TI_CLAMPED] = 0.0
    o[TI_EXCITATION] = e
    o[TI_LENGTH] = L
    o[TI_SPEED] = Ldot
    o[DG_NTF_RATE] = ntf_dot


cdef inline bint _degroote_reads(const FSet* s, const Tree* t, const double* z, Py_ssize_t nz, const double* m,
                                 Py_ssize_t k, double* za, double* zt, double* e) noexcept nogil:
    # element k's states (from z; NaN where not a state) and excitation (its input plus its functions
    # of time); False when the evaluation does not give them (the set and the stepper check it before)
    cdef Py_ssize_t i, ia = <Py_ssize_t>m[DG_ZA], it = <Py_ssize_t>m[DG_ZT]
    cdef double x = t.time
    if ia >= nz or it >= nz or <Py_ssize_t>m[DG_IN] >= t.ninputs:
        return False
    za[0] = z[ia] if ia >= 0 else NAN
    zt[0] = z[it] if it >= 0 else NAN
    e[0] = t.inputs[<Py_ssize_t>m[DG_IN]]
    for i in range(s.nterms):
        if s.terms[2 * i] == k:
            e[0] += fn_value(s.fn, s.terms[2 * i + 1], &x)
    return True


cdef Py_ssize_t _add_degroote(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                              double* mf) noexcept nogil:
    # Per muscle: its path's L and Ldot, the law, its states' derivatives into zdot, the tendon force
    # along the path. Returns the first muscle whose law or forces are not finite (its forces left
    # out), or -1.
    cdef Py_ssize_t j0 = 0, j1, k, bad = -1, ia, it
    cdef double L, Ldot, za, zt, e
    cdef double o[DG_INFO_N]
    cdef const double* m
    cdef bint ok
    while j0 < s.n:
        j1 = _path_end(s, j0)
        m = s.params + s.npk * j0
        k = <Py_ssize_t>m[PP_ELEMENT]
        if not _degroote_reads(s, t, t.z, t.nz, m, k, &za, &zt, &e):
            return k
        _path_measure(s, t, q, u, j0, j1, &L, &Ldot)
        degroote_law(m, za, zt, L, Ldot, e, o)
        ia = <Py_ssize_t>m[DG_ZA]
        it = <Py_ssize_t>m[DG_ZT]
        ok = isfinite(o[TI_TENDON_FORCE]) and isfinite(o[TI_FIBER_VELOCITY])
        if ia >= 0:
            t.zdot[ia] = o[TI_ACTIVATION_RATE]
            ok = ok and isfinite(o[TI_ACTIVATION_RATE])
        if it >= 0:
            t.zdot[it] = o[DG_NTF_RATE]
            ok = ok and isfinite(o[DG_NTF_RATE])
        if ok:
            _path_apply(s, t, q, u, j0, j1, o[TI_TENDON_FORCE], bf, mf)
        elif bad < 0:
            bad = k
        j0 = j1
    return bad


_set_kind(FK_DEGROOTE, _add_degroote, NULL)


def _degroote_rows(params):
    """(ninputs, nz, number of muscles) a DeGroote muscle set reads, after checking that the rows'
    muscle columns are ones the kernel can read safely (raises ValueError naming the row)."""
    cdef Py_ssize_t j, n = params.shape[0]
    if params.shape[1] != DG_NP:
        raise ValueError(f"ForceSet (DeGrooteMuscle): params must have {DG_NP} columns")
    ninputs = nz = m = 0
    for j in range(n):
        row = params[j]
        for col in (DG_ZA, DG_ZT, DG_IN):
            if row[col] != int(row[col]) or row[col] < (0 if col == DG_IN else -1):
                raise ValueError(f"ForceSet (DeGrooteMuscle): row {j}: bad index {row[col]} in column "
                                 f"{DEGROOTE_COLUMNS[col - DG_ZA]!r}")
        if not np.isfinite(row[DG_FISO:DG_NP]).all():
            raise ValueError(f"ForceSet (DeGrooteMuscle): row {j}: a property is not finite")
        if row[DG_ELASTIC] != 0.0 and row[DG_ZT] < 0:
            raise ValueError(f"ForceSet (DeGrooteMuscle): row {j}: an elastic tendon needs a normalized tendon "
                             "force state")
        if row[DG_IGNACT] == 0.0 and row[DG_ZA] < 0:
            raise ValueError(f"ForceSet (DeGrooteMuscle): row {j}: activation dynamics need an activation state")
        nz = max(nz, int(row[DG_ZA]) + 1, int(row[DG_ZT]) + 1)
        ninputs = max(ninputs, int(row[DG_IN]) + 1)
        m = max(m, int(row[PP_ELEMENT]) + 1)
    return ninputs, nz, m


def degroote_info(ForceSet fs, TreeKernels ws, z, out):
    """Write every muscle's law at the workspace's realized kinematics, its time and inputs
    (``ws.set_inputs``) and the states ``z`` into ``out`` (m, len(DEGROOTE_INFO)): the values the
    kernel applies and integrates (nothing is written into any zdot)."""
    cdef Py_ssize_t j0 = 0, j1, k, nz
    cdef double L, Ldot, za, zt, e
    cdef double* o
    cdef const double* zp
    if fs.kind != FK_DEGROOTE:
        raise ValueError("degroote_info: expected a DeGrooteMuscle ForceSet")
    fs._fits(ws, ws.nq)
    if fs.ninputs > ws.t.ninputs:
        raise ValueError(f"degroote_info: the muscles read {fs.ninputs} inputs, but the workspace gives "
                         f"{ws.t.ninputs} (TreeKernels.set_inputs)")
    nz = z.shape[0] if isinstance(z, cnp.ndarray) and z.ndim == 1 else -1
    if nz < fs.nz or not _is_f64_vector(z, nz, False):
        raise ValueError(f"degroote_info: z: expected a C-contiguous float64 vector of at least {fs.nz} entries")
    m = int(fs.params[-1, PP_ELEMENT]) + 1 if fs.n else 0
    if not _is_f64_vector(out, DG_INFO_N * m, True):
        raise ValueError(f"degroote_info: out: expected a writable C-contiguous float64 ({m}, {DG_INFO_N}) array")
    o = _dp(out)
    zp = _dp(z) if nz else NULL
    with nogil:
        while j0 < fs.s.n:
            j1 = _path_end(&fs.s, j0)
            k = <Py_ssize_t>fs.s.params[fs.s.npk * j0 + PP_ELEMENT]
            if not _degroote_reads(&fs.s, &ws.t, zp, nz, fs.s.params + fs.s.npk * j0, k, &za, &zt, &e):
                za = zt = e = NAN  # (not reached: the checks above give every muscle its states and input)
            _path_measure(&fs.s, &ws.t, ws.t.q, ws.t.u, j0, j1, &L, &Ldot)
            degroote_law(fs.s.params + fs.s.npk * j0, za, zt, L, Ldot, e, o + DG_INFO_N * k)
            j0 = j1


def degroote_law_at(params, double za, double zt, double L, double Ldot, double e):
    """The law's row (DEGROOTE_INFO) of a muscle whose columns from ``za`` on are ``params[13:]``, at
    its states, path length and speed and excitation, with no path or workspace (for tests)."""
    cdef double[::1] p = np.ascontiguousarray(params, dtype=np.float64)
    out = np.empty(DG_INFO_N)
    cdef double[::1] o = out
    if p.shape[0] != DG_NP:
        raise ValueError(f"degroote_law_at: params must have {DG_NP} entries")
    degroote_law(&p[0], za, zt, L, Ldot, e, &o[0])
    return out
