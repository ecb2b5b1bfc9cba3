# Muscles: OpenSim 4.6's Thelen2003Muscle as the force kind FK_THELEN, a force with continuous state.
#
# A muscle is a GeometryPath (core/paths.pxi: its rows, its measures, the forces of a tension along
# it) whose tension is the tendon force of Thelen's muscle-tendon law, and which writes the
# derivatives of its two state variables, activation a and fiber length l_M, into Tree.zdot:
#
#   da/dt   = (e - a~) / (tau_act (0.5 + 1.5 a~))      when e > a~, else
#             (e - a~) (0.5 + 1.5 a~) / tau_deact       (a~ = clamp(a, a_min, 1))
#   dl_M/dt = l_opt v_max dlceN(a~ f_L f_V)             (Thelen's force-velocity curve, inverted at the
#             fiber force that balances the tendon: a f_L f_V = f_T / cos(phi) - f_PE), 0 while the
#             fiber is clamped at its minimum length and shortening
#   T       = F_max f_T((L - l_M cos(phi)) / l_Ts)      (the tendon force, along the path)
#
# with the curves as simtk/multibody/forces/_thelen.py writes them (that module is the test oracle:
# tests/multibody/test_muscle_kernel.py checks this kernel against it, and both against OpenSim).
# e, the excitation, is the evaluation's input (Tree.inputs: the State's held value, an input of the
# evaluation as FK_ACTUATOR's control) plus the set's compiled functions of Tree.time (FSet.terms,
# (element, function entry) rows); a and l_M are read from Tree.z. The expressions are written in
# the oracle's order of operations (the core is built with -ffp-contract=off), so the two agree to
# the last bit wherever libm's functions do.
#
# Packed layout: the rows of a GeometryPath set (PATH_NP columns, the law columns unused), then
# MUSCLE_NP - PATH_NP columns read from an element's first row:
#   za, zl       the indices in z of the activation and the fiber length
#   input        the index in the inputs of the held excitation
#   the Thelen2003Muscle properties, OpenSim's names, in ThelenParams' order (see MU_* below)

from libc.math cimport exp, tan

cdef enum:
    MU_ZA = 13
    MU_ZL = 14
    MU_IN = 15
    MU_FISO = 16
    MU_OFL = 17
    MU_TSL = 18
    MU_PHI0 = 19
    MU_VMAX = 20
    MU_EPS_T = 21
    MU_EPS_M = 22
    MU_KA = 23
    MU_KPE = 24
    MU_AF = 25
    MU_FLEN = 26
    MU_FVX = 27
    MU_PHIMAX = 28
    MU_TACT = 29
    MU_TDEACT = 30
    MU_AMIN = 31
    MUSCLE_NP = 32

# what thelen_info writes per muscle (its columns)
cdef enum:
    TI_TENDON_FORCE = 0
    TI_FIBER_VELOCITY = 1
    TI_ACTIVATION_RATE = 2
    TI_FIBER_LENGTH = 3
    TI_PENNATION = 4
    TI_TENDON_LENGTH = 5
    TI_ACTIVE_FIBER_FORCE = 6
    TI_PASSIVE_FIBER_FORCE = 7
    TI_FIBER_FORCE = 8
    TI_ACTIVATION = 9
    TI_FAL = 10
    TI_FPE = 11
    TI_FV = 12
    TI_TENDON_VELOCITY = 13
    TI_CLAMPED = 14
    TI_EXCITATION = 15
    TI_LENGTH = 16
    TI_SPEED = 17
    TI_N = 18

THELEN_COLUMNS = ("za", "zl", "input", "max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                  "pennation_angle_at_optimal", "max_contraction_velocity", "FmaxTendonStrain", "FmaxMuscleStrain",
                  "KshapeActive", "KshapePassive", "Af", "Flen", "fv_linear_extrap_threshold",
                  "maximum_pennation_angle", "activation_time_constant", "deactivation_time_constant",
                  "minimum_activation")
THELEN_INFO = ("tendon_force", "fiber_velocity", "activation_rate", "fiber_length", "pennation_angle",
               "tendon_length", "active_fiber_force", "passive_fiber_force", "fiber_force", "activation",
               "active_force_length_multiplier", "passive_force_multiplier", "force_velocity_multiplier",
               "tendon_velocity", "clamped", "excitation", "length", "lengthening_speed")
FORCE_KINDS["ThelenMuscle"] = (FK_THELEN, 1, ("element", "type", "q", "u", "lo", "hi", "fx", "fy", "fz", "law",
                                              "a", "b", "c") + THELEN_COLUMNS, False)

cdef double _TH_EPS = 2.220446049250313e-16
cdef double _TH_SIGNIFICANT = 2.220446049250313e-16 ** 0.875  # SimTK::SignificantReal, as the oracle's
cdef double _TH_E3 = exp(3.0)


cdef inline double _th_dlceN(const double* m, double a, double fal, double x) noexcept nogil:
    # Thelen's normalized fiber velocity at the active force x = a f_L f_V (his Eqs. 6, 7, linearly
    # extrapolated past the thresholds): the oracle's dlceN_of and _fv_branch
    cdef double af = m[MU_AF], flen = m[MU_FLEN]
    cdef double afl = a * fal
    cdef double asy_e = afl * flen
    cdef double b, db, Fm0, c, slope
    cdef bint inside
    if 0.0 < x and x < asy_e * m[MU_FVX]:
        inside = True
        Fm0 = x
        if x <= afl:
            b = afl + x / af
            db = 1.0 / af
        else:
            b = (2.0 + 2.0 / af) * (afl * flen - x) / (flen - 1.0)
            db = (2.0 + 2.0 / af) * -1.0 / (flen - 1.0)
    elif x <= 0.0:
        inside = False
        b = afl + 0.0 / af
        db = 1.0 / af
        Fm0 = 0.0
    else:
        inside = False
        Fm0 = m[MU_FVX] * asy_e
        b = (2.0 + 2.0 / af) * (afl * flen - Fm0) / (flen - 1.0)
        db = (2.0 + 2.0 / af) * -1.0 / (flen - 1.0)
    c = 0.25 + 0.75 * a
    if inside:
        return c * (x - afl) / b
    slope = c / b - (c * (Fm0 - afl) / (b * b)) * db
    return c * (Fm0 - afl) / b + slope * (x - Fm0)


cdef void thelen_law(const double* m, double a_state, double lce_state, double L, double Ldot, double e,
                     double* o) noexcept nogil:
    # The muscle at states a, l_M, path length L and speed Ldot, excitation e: o[TI_*] (OpenSim's
    # calcMuscleLengthInfo, calcFiberVelocityInfo, calcMuscleDynamicsInfo and the activation
    # derivative). Cost: ~80 flops, 6 exponentials and trigonometric functions.
    cdef double fiso = m[MU_FISO], ofl = m[MU_OFL], phi0 = m[MU_PHI0], phimax = m[MU_PHIMAX]
    cdef double h = ofl * sin(phi0)
    cdef double lmin, lce, lceN, sv, phi, cosphi, sinphi, tl, x, f_al, f_pe, a, xt, e0, e_toe, klin, f_se
    cdef double afalfv, fv, dlceN, dlce, dphi, dtl, Fm, aFm
    cdef bint clamped
    lmin = h / sin(phimax) if phimax > _TH_SIGNIFICANT else 0.01 * ofl
    lce = lce_state if lce_state > lmin else lmin
    lceN = lce / ofl
    # the fixed-width pennation model: sin(phi) = h / l_M, at most phi_max
    if phi0 > _TH_EPS:
        if lce > lmin:
            sv = h / lce
            phi = asin(sv) if sv < sin(phimax) else phimax
        else:
            phi = phimax
    else:
        phi = 0.0
    cosphi = cos(phi)
    sinphi = sin(phi)
    tl = L - lce * cosphi
    x = lceN - 1.0
    f_al = exp(-x * x / m[MU_KA])
    f_pe = (exp(m[MU_KPE] * x / m[MU_EPS_M]) - 1.0) / (exp(m[MU_KPE]) - 1.0) if lceN > 1.0 else 0.0
    a = a_state if a_state > m[MU_AMIN] else m[MU_AMIN]
    a = a if a < 1.0 else 1.0
    # the tendon: an exponential toe up to strain e_toe, then linear (OpenSim's exact e_toe, k_lin)
    xt = tl / m[MU_TSL] - 1.0
    e0 = m[MU_EPS_T]
    e_toe = 99.0 * e0 * _TH_E3 / (166.0 * _TH_E3 - 67.0)
    klin = 0.67 / (e0 - e_toe)
    if xt > e_toe:
        f_se = klin * (xt - e_toe) + 0.33
    elif xt > 0.0:
        f_se = 0.33 / (_TH_E3 - 1.0) * (exp(3.0 * xt / e_toe) - 1.0)
    else:
        f_se = 0.0
    afalfv = f_se / cosphi - f_pe
    fv = afalfv / (a * f_al)
    dlceN = _th_dlceN(m, a, f_al, afalfv)
    dlce = dlceN * m[MU_VMAX] * ofl
    dphi = -(dlce / lce) * tan(phi) if phi0 > _TH_EPS else 0.0
    dtl = Ldot - dlce * cosphi + lce * sinphi * dphi
    clamped = lce_state <= lmin and dlceN <= 0.0
    if clamped:
        dlce = 0.0
        dtl = Ldot
        fv = 1.0
        Fm = 0.0
        aFm = 0.0
    else:
        aFm = a * f_al * fv * fiso
        Fm = (a * f_al * fv + f_pe) * fiso
    o[TI_TENDON_FORCE] = f_se * fiso
    o[TI_FIBER_VELOCITY] = dlce
    if e > a:
        o[TI_ACTIVATION_RATE] = (e - a) / (m[MU_TACT] * (0.5 + 1.5 * a))
    else:
        o[TI_ACTIVATION_RATE] = (e - a) * (0.5 + 1.5 * a) / m[MU_TDEACT]
    o[TI_FIBER_LENGTH] = lce
    o[TI_PENNATION] = phi
    o[TI_TENDON_LENGTH] = tl
    o[TI_ACTIVE_FIBER_FORCE] = aFm
    o[TI_PASSIVE_FIBER_FORCE] = f_pe * fiso
    o[TI_FIBER_FORCE] = Fm
    o[TI_ACTIVATION] = a
    o[TI_FAL] = f_al
    o[TI_FPE] = f_pe
    o[TI_FV] = fv
    o[TI_TENDON_VELOCITY] = dtl
    o[TI_CLAMPED] = 1.0 if clamped else 0.0
    o[TI_EXCITATION] = e
    o[TI_LENGTH] = L
    o[TI_SPEED] = Ldot


cdef inline bint _thelen_reads(const FSet* s, const Tree* t, const double* z, Py_ssize_t nz, const double* m,
                               Py_ssize_t k, double* a, double* lce, double* e) noexcept nogil:
    # element k's states (from z) and excitation (its input plus its functions of time); False when
    # the evaluation does not give them (ForceSet.add and the stepper check it before)
    cdef Py_ssize_t i
    cdef double x = t.time
    if <Py_ssize_t>m[MU_ZA] >= nz or <Py_ssize_t>m[MU_ZL] >= nz or <Py_ssize_t>m[MU_IN] >= t.ninputs:
        return False
    a[0] = z[<Py_ssize_t>m[MU_ZA]]
    lce[0] = z[<Py_ssize_t>m[MU_ZL]]
    e[0] = t.inputs[<Py_ssize_t>m[MU_IN]]
    for i in range(s.nterms):
        if s.terms[2 * i] == k:
            e[0] += fn_value(s.fn, s.terms[2 * i + 1], &x)
    return True


cdef Py_ssize_t _add_thelen(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                            double* mf) noexcept nogil:
    # Per muscle: its path's L and Ldot, the law, its two derivatives into zdot, the tendon force
    # along the path. Returns the first muscle whose law or forces are not finite (its forces left
    # out), or -1. Cost: the path's twice over its points, plus the law's.
    cdef Py_ssize_t j0 = 0, j1, k, bad = -1
    cdef double L, Ldot, a, lce, e
    cdef double o[TI_N]
    cdef const double* m
    while j0 < s.n:
        j1 = _path_end(s, j0)
        m = s.params + s.npk * j0
        k = <Py_ssize_t>m[PP_ELEMENT]
        if not _thelen_reads(s, t, t.z, t.nz, m, k, &a, &lce, &e):
            return k
        _path_measure(s, t, q, u, j0, j1, &L, &Ldot)
        thelen_law(m, a, lce, L, Ldot, e, o)
        t.zdot[<Py_ssize_t>m[MU_ZA]] = o[TI_ACTIVATION_RATE]
        t.zdot[<Py_ssize_t>m[MU_ZL]] = o[TI_FIBER_VELOCITY]
        if isfinite(o[TI_TENDON_FORCE]) and isfinite(o[TI_ACTIVATION_RATE]) and isfinite(o[TI_FIBER_VELOCITY]):
            _path_apply(s, t, q, u, j0, j1, o[TI_TENDON_FORCE], bf, mf)
        elif bad < 0:
            bad = k
        j0 = j1
    return bad


_set_kind(FK_THELEN, _add_thelen, NULL)


def _thelen_rows(params):
    """(ninputs, nz, number of muscles) a Thelen muscle set reads, after checking that the rows'
    muscle columns are ones the kernel can read safely (raises ValueError naming the row)."""
    cdef Py_ssize_t j, n = params.shape[0]
    if params.shape[1] != MUSCLE_NP:
        raise ValueError(f"ForceSet (ThelenMuscle): params must have {MUSCLE_NP} columns")
    ninputs = nz = m = 0
    for j in range(n):
        row = params[j]
        for col in (MU_ZA, MU_ZL, MU_IN):
            if row[col] != int(row[col]) or row[col] < 0:
                raise ValueError(f"ForceSet (ThelenMuscle): row {j}: bad index {row[col]} in column "
                                 f"{THELEN_COLUMNS[col - MU_ZA]!r}")
        if not np.isfinite(row[MU_FISO:MUSCLE_NP]).all():
            raise ValueError(f"ForceSet (ThelenMuscle): row {j}: a property is not finite")
        nz = max(nz, int(row[MU_ZA]) + 1, int(row[MU_ZL]) + 1)
        ninputs = max(ninputs, int(row[MU_IN]) + 1)
        m = max(m, int(row[PP_ELEMENT]) + 1)
    return ninputs, nz, m


def thelen_info(ForceSet fs, TreeKernels ws, z, out):
    """Write every muscle's law at the workspace's realized kinematics, its time and inputs
    (``ws.set_inputs``) and the states ``z`` into ``out`` (m, len(THELEN_INFO)): the values the
    kernel applies and integrates (nothing is written into any zdot)."""
    cdef Py_ssize_t j0 = 0, j1, k, nz
    cdef double L, Ldot, a, lce, e
    cdef double* o
    cdef const double* zp
    if fs.kind != FK_THELEN:
        raise ValueError("thelen_info: expected a ThelenMuscle ForceSet")
    fs._fits(ws, ws.nq)
    if fs.ninputs > ws.t.ninputs:
        raise ValueError(f"thelen_info: the muscles read {fs.ninputs} inputs, but the workspace gives "
                         f"{ws.t.ninputs} (TreeKernels.set_inputs)")
    nz = z.shape[0] if isinstance(z, cnp.ndarray) and z.ndim == 1 else -1
    if nz < fs.nz or not _is_f64_vector(z, nz, False):
        raise ValueError(f"thelen_info: z: expected a C-contiguous float64 vector of at least {fs.nz} entries")
    m = int(fs.params[-1, PP_ELEMENT]) + 1 if fs.n else 0
    if not _is_f64_vector(out, TI_N * m, True):
        raise ValueError(f"thelen_info: out: expected a writable C-contiguous float64 ({m}, {TI_N}) array")
    o = _dp(out)
    zp = _dp(z) if nz else NULL
    with nogil:
        while j0 < fs.s.n:
            j1 = _path_end(&fs.s, j0)
            k = <Py_ssize_t>fs.s.params[fs.s.npk * j0 + PP_ELEMENT]
            if not _thelen_reads(&fs.s, &ws.t, zp, nz, fs.s.params + fs.s.npk * j0, k, &a, &lce, &e):
                a = lce = e = NAN  # (not reached: the checks above give every muscle its states and input)
            _path_measure(&fs.s, &ws.t, ws.t.q, ws.t.u, j0, j1, &L, &Ldot)
            thelen_law(fs.s.params + fs.s.npk * j0, a, lce, L, Ldot, e, o + TI_N * k)
            j0 = j1
