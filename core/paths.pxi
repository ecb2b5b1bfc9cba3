# Geometry paths (OpenSim's GeometryPath; its wrapping in core/path_wrap.pxi) as the force kind FK_PATH: a path is a
# chain of points on bodies, its length L the sum of the straight segments between the points that
# are active, and a tension T along it pulls each segment's ends towards each other.
#
# Packed layout: one row per path point, the rows of an element consecutive, in path order
# (as HuntCrossley's surfaces). bodies (n, 1) the point's body, stations (n, 1, 3) its location in
# that body (a moving point's constant components), params (n, PATH_NP):
#   element       the element's index in the set (rows with equal index form one path)
#   type          PT_FIXED, PT_CONDITIONAL, PT_MOVING, PT_MOVING_CLAMPED
#   q, u          the coordinate's q and u index (conditional and moving points; qdot = u there)
#   lo, hi        conditional: active when lo <= q <= hi; moving clamped: the coordinate's range,
#                 the location is f(clamp(q, lo, hi)) as OpenSim's MovingPathPoint::getLocation,
#                 its rate f'(q) qdot (at q itself, as OpenSim's getVelocity and getdPointdQ)
#   fx, fy, fz    moving: the entry (in the set's function table) of each component's function of
#                 q, or -1 for the station's constant component
#   law, a, b, c  the tension law (read from an element's first row):
#                 PL_SPRING  T = a max(L - b, 0) (1 + c Ldot)  (OpenSim's PathSpring: stiffness a,
#                            resting length b, dissipation c)
#                 PL_TENSION T = a                             (a constant tension; the path's measures)
#                 PL_INPUT   T = a inputs[b]                   (a PathActuator: optimal_force a, its control
#                            the evaluation's input b, Tree.inputs, as FK_ACTUATOR's)
#
# Forces (OpenSim's GeometryPath::addInEquivalentForces): on the segment from point A to point B
# with unit vector e = (p_B - p_A) / |p_B - p_A|, +T e at A and -T e at B; a moving point whose
# location p_P(q) in its body depends on coordinate q adds the generalized force F . R_GB dp_P/dq
# on q's mobility (F the force on the point), the work its gearing does. Together these are
# -T dL/dq: virtual work. A zero-length segment has no direction and carries no force.
#
# Velocities: v_P = v_GB + w_GB x r + R_GB dp_P/dq qdot, Ldot = sum_segments e . (v_B - v_A).

cdef enum:
    PT_FIXED = 0
    PT_CONDITIONAL = 1
    PT_MOVING = 2
    PT_MOVING_CLAMPED = 3
    PL_SPRING = 0
    PL_TENSION = 1
    PL_INPUT = 2
    PP_ELEMENT = 0
    PP_TYPE = 1
    PP_Q = 2
    PP_U = 3
    PP_LO = 4
    PP_HI = 5
    PP_FN = 6
    PP_LAW = 9
    PP_A = 10
    PP_B = 11
    PP_C = 12
    PATH_NP = 13

FORCE_KINDS["GeometryPath"] = (FK_PATH, 1, ("element", "type", "q", "u", "lo", "hi", "fx", "fy", "fz", "law",
                                            "a", "b", "c"), False)
PATH_CODES = dict(fixed=PT_FIXED, conditional=PT_CONDITIONAL, moving=PT_MOVING, moving_clamped=PT_MOVING_CLAMPED,
                  spring=PL_SPRING, tension=PL_TENSION, input=PL_INPUT)


def _path_rows_limits(params, functions):
    """(largest q index, largest u index) the rows of a path set read, after checking that every row
    is one the kernel can read safely (raises ValueError naming the row)."""
    cdef Py_ssize_t j, n = params.shape[0]
    cdef idx_t max_q = -1, max_u = -1, nf = 0, c, e
    if params.shape[1] != PATH_NP:
        raise ValueError(f"ForceSet (GeometryPath): params must have {PATH_NP} columns")
    if functions is not None:
        nf = (<FunctionTable?>functions).n
    _path_wrap_rows_check(params)
    for j in range(n):
        row = params[j]
        kind = row[PP_TYPE]
        if kind in (PT_WRAP_CYLINDER, PT_WRAP_SPHERE, PT_WRAP_ELLIPSOID, PT_WRAP_TORUS):
            continue
        if kind not in (PT_FIXED, PT_CONDITIONAL, PT_MOVING, PT_MOVING_CLAMPED):
            raise ValueError(f"ForceSet (GeometryPath): row {j}: unknown point type {kind}")
        if row[PP_ELEMENT] != int(row[PP_ELEMENT]) or row[PP_ELEMENT] < 0 or (
                j and row[PP_ELEMENT] < params[j - 1][PP_ELEMENT]):
            raise ValueError(f"ForceSet (GeometryPath): row {j}: element indices must be integers, "
                             "rows of an element consecutive")
        if row[PP_LAW] not in (PL_SPRING, PL_TENSION, PL_INPUT):
            raise ValueError(f"ForceSet (GeometryPath): row {j}: unknown law {row[PP_LAW]}")
        if row[PP_LAW] == PL_INPUT and (row[PP_B] != int(row[PP_B]) or row[PP_B] < 0):
            raise ValueError(f"ForceSet (GeometryPath): row {j}: bad input index {row[PP_B]}")
        if kind == PT_FIXED:
            continue
        for col in (PP_Q, PP_U):
            if row[col] != int(row[col]) or row[col] < 0:
                raise ValueError(f"ForceSet (GeometryPath): row {j}: bad coordinate index {row[col]}")
        max_q = max(max_q, <idx_t>row[PP_Q])
        max_u = max(max_u, <idx_t>row[PP_U])
        if kind == PT_CONDITIONAL:
            continue
        for c in range(3):
            e = <idx_t>row[PP_FN + c]
            if row[PP_FN + c] != e or e < -1 or e >= nf:
                raise ValueError(f"ForceSet (GeometryPath): row {j}: function entry {row[PP_FN + c]} is not "
                                 f"one of the set's {nf} functions")
            if e >= 0 and (<FunctionTable>functions).argument_size(e) != 1:
                raise ValueError(f"ForceSet (GeometryPath): row {j}: function entry {e} does not take one "
                                 "argument")
    return max_q, max_u


def _path_ninputs(params):
    """How many inputs the rows of a path set read (1 + the largest input index of a PL_INPUT law)."""
    # (a wrap row's columns hold its object, not the law)
    inputs = (params[(params[:, PP_LAW] == PL_INPUT) & (params[:, PP_TYPE] < PT_WRAP_CYLINDER), PP_B]
              if params.shape[0] else params[:0, 0])
    return int(inputs.max()) + 1 if inputs.shape[0] else 0


cdef bint _path_point(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j,
                      double* r, double* p, double* v, double* g) noexcept nogil:
    # Point j if active: r its offset from its body's origin, p its location, v its velocity (all in
    # G), g = R_GB dp/dq (zero but for a moving point). Returns whether it is active.
    cdef const double* prm = s.params + s.npk * j
    cdef int kind = <int>prm[PP_TYPE]
    cdef idx_t b = s.bodies[j], e
    cdef double x
    cdef double pb[3]
    cdef double db[3]
    cdef idx_t comp = 0
    cdef int c
    cdef double xc
    g[0] = 0.0; g[1] = 0.0; g[2] = 0.0
    if kind == PT_CONDITIONAL:
        x = q[<idx_t>prm[PP_Q]]
        if not (x >= prm[PP_LO] and x <= prm[PP_HI]):
            return False
    if kind == PT_FIXED or kind == PT_CONDITIONAL:
        station_in_ground(t, b, s.stations + 3 * j, r, p)
        station_velocity(t, b, r, v)
        return True
    x = q[<idx_t>prm[PP_Q]]
    xc = x
    if kind == PT_MOVING_CLAMPED:
        if xc < prm[PP_LO]:
            xc = prm[PP_LO]
        elif xc > prm[PP_HI]:
            xc = prm[PP_HI]
    for c in range(3):
        e = <idx_t>prm[PP_FN + c]
        if e < 0:
            pb[c] = s.stations[3 * j + c]
            db[c] = 0.0
        else:
            # OpenSim's MovingPathPoint: the location at the clamped value, its rate (getVelocity,
            # getdPointdQ) at the coordinate's own value, so beyond the range Ldot is not dL/dt
            pb[c] = fn_value(s.fn, e, &xc)
            db[c] = fn_derivative(s.fn, e, &comp, 1, &x)
    station_in_ground(t, b, pb, r, p)
    station_velocity(t, b, r, v)
    mat33_vec(t.R_GB + 9 * b, db, g)
    x = u[<idx_t>prm[PP_U]]
    v[0] += g[0] * x; v[1] += g[1] * x; v[2] += g[2] * x
    return True


cdef void _path_measure(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j0,
                        Py_ssize_t j1, double* L, double* Ldot) noexcept nogil:
    # L and Ldot of the path of rows [j0, j1)
    cdef double r[3]
    cdef double p[3]
    cdef double v[3]
    cdef double g[3]
    cdef double pa[3]
    cdef double va[3]
    cdef double d[3]
    cdef double n
    cdef bint have = False
    cdef Py_ssize_t j, jw = _path_first_wrap(s, j0, j1)
    if jw < j1:
        _wrap_measure(s, t, q, u, j0, jw, j1, L, Ldot)
        return
    L[0] = 0.0
    Ldot[0] = 0.0
    for j in range(j0, j1):
        if not _path_point(s, t, q, u, j, r, p, v, g):
            continue
        if have:
            d[0] = p[0] - pa[0]; d[1] = p[1] - pa[1]; d[2] = p[2] - pa[2]
            n = sqrt(dot3(d, d))
            L[0] += n
            if n > 0.0:
                Ldot[0] += (d[0] * (v[0] - va[0]) + d[1] * (v[1] - va[1]) + d[2] * (v[2] - va[2])) / n
        pa[0] = p[0]; pa[1] = p[1]; pa[2] = p[2]
        va[0] = v[0]; va[1] = v[1]; va[2] = v[2]
        have = True


cdef inline void _path_apply_point(const FSet* s, Py_ssize_t j, const double* r, const double* g,
                                   const double* f, double* bf, double* mf) noexcept nogil:
    # force f (in G) on point j: its body's spatial force and a moving point's gearing force
    add_station_force(bf, s.bodies[j], r, f, 1.0)
    if g[0] != 0.0 or g[1] != 0.0 or g[2] != 0.0:
        mf[<idx_t>s.params[s.npk * j + PP_U]] += dot3(f, g)


cdef void _path_apply(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j0,
                      Py_ssize_t j1, double T, double* bf, double* mf) noexcept nogil:
    cdef double r[3]
    cdef double p[3]
    cdef double v[3]
    cdef double g[3]
    cdef double ra[3]
    cdef double pa[3]
    cdef double ga[3]
    cdef double f[3]
    cdef double n
    cdef Py_ssize_t j, ja = -1, jw = _path_first_wrap(s, j0, j1)
    if jw < j1:
        _wrap_apply(s, t, q, u, j0, jw, j1, T, bf, mf)
        return
    for j in range(j0, j1):
        if not _path_point(s, t, q, u, j, r, p, v, g):
            continue
        if ja >= 0:
            f[0] = p[0] - pa[0]; f[1] = p[1] - pa[1]; f[2] = p[2] - pa[2]
            n = sqrt(dot3(f, f))
            if n > 0.0:
                n = T / n
                f[0] *= n; f[1] *= n; f[2] *= n
                _path_apply_point(s, ja, ra, ga, f, bf, mf)
                f[0] = -f[0]; f[1] = -f[1]; f[2] = -f[2]
                _path_apply_point(s, j, r, g, f, bf, mf)
        ra[0] = r[0]; ra[1] = r[1]; ra[2] = r[2]
        pa[0] = p[0]; pa[1] = p[1]; pa[2] = p[2]
        ga[0] = g[0]; ga[1] = g[1]; ga[2] = g[2]
        ja = j


cdef inline Py_ssize_t _path_end(const FSet* s, Py_ssize_t j0) noexcept nogil:
    cdef double e = s.params[s.npk * j0 + PP_ELEMENT]
    cdef Py_ssize_t j1 = j0 + 1
    while j1 < s.n and s.params[s.npk * j1 + PP_ELEMENT] == e:
        j1 += 1
    return j1


cdef inline double _path_tension(const double* prm, double L, double Ldot) noexcept nogil:
    cdef double stretch
    if <int>prm[PP_LAW] == PL_TENSION:
        return prm[PP_A]
    stretch = L - prm[PP_B] if L > prm[PP_B] else 0.0
    return prm[PP_A] * stretch * (1.0 + prm[PP_C] * Ldot)


cdef Py_ssize_t _add_path(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                          double* mf) noexcept nogil:
    # Per element: L and Ldot (a first pass over its points), the tension, then the forces (a second
    # pass). Cost: two evaluations of each point, ~60 flops each plus its functions.
    cdef Py_ssize_t j0 = 0, j1, bad = -1
    cdef double L, Ldot, T
    cdef const double* prm
    while j0 < s.n:
        j1 = _path_end(s, j0)
        prm = s.params + s.npk * j0
        if <int>prm[PP_LAW] == PL_TENSION:
            T = prm[PP_A]
        elif <int>prm[PP_LAW] == PL_INPUT:
            if <idx_t>prm[PP_B] >= t.ninputs:
                return <Py_ssize_t>prm[PP_ELEMENT]  # (no input given: ForceSet.add checks it before)
            T = prm[PP_A] * t.inputs[<idx_t>prm[PP_B]]
        else:
            _path_measure(s, t, q, u, j0, j1, &L, &Ldot)
            T = _path_tension(prm, L, Ldot)
        if isfinite(T):
            _path_apply(s, t, q, u, j0, j1, T, bf, mf)
        elif bad < 0:
            bad = <Py_ssize_t>prm[PP_ELEMENT]
        j0 = j1
    return bad


cdef double _energy_path(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    # a spring's a/2 max(L - b, 0)^2 (its dissipation does no conservative work); a tension's 0
    cdef Py_ssize_t j0 = 0, j1
    cdef double L, Ldot, x, total = 0.0
    cdef const double* prm
    while j0 < s.n:
        j1 = _path_end(s, j0)
        prm = s.params + s.npk * j0
        if <int>prm[PP_LAW] == PL_SPRING:
            # (u is not read for the length: the speeds' zeros stand in)
            _path_measure(s, t, q, t.u, j0, j1, &L, &Ldot)
            x = L - prm[PP_B] if L > prm[PP_B] else 0.0
            total += 0.5 * prm[PP_A] * x * x
        j0 = j1
    return total


_set_kind(FK_PATH, _add_path, _energy_path)


def path_measures(ForceSet fs, TreeKernels ws, out):
    """Write (L, Ldot) of every element of the GeometryPath set ``fs`` into ``out`` (m, 2), m the
    number of elements, from the workspace's realized kinematics, q and u."""
    cdef Py_ssize_t j0 = 0, j1, k
    cdef double L, Ldot
    cdef double* o
    if fs.kind != FK_PATH:
        raise ValueError("path_measures: expected a GeometryPath ForceSet")
    fs._fits(ws, ws.nq)
    m = int(fs.params[-1, PP_ELEMENT]) + 1 if fs.n else 0
    if not _is_f64_vector(out, 2 * m, True):
        raise ValueError(f"path_measures: out: expected a writable C-contiguous float64 ({m}, 2) array")
    o = _dp(out)
    with nogil:
        while j0 < fs.s.n:
            j1 = _path_end(&fs.s, j0)
            k = <Py_ssize_t>fs.s.params[fs.s.npk * j0 + PP_ELEMENT]
            _path_measure(&fs.s, &ws.t, ws.t.q, ws.t.u, j0, j1, &L, &Ldot)
            o[2 * k] = L
            o[2 * k + 1] = Ldot
            j0 = j1
