# The wrapped path of FK_PATH (see core/path_wrap.pxi for the layout and the wrap objects' algorithms):
# OpenSim's computePath and applyWrapObjects, then its lengthening speed and produceForces.

# ------------------------------------------------------------------ the wrapped path
cdef inline Py_ssize_t _path_first_wrap(const FSet* s, Py_ssize_t j0, Py_ssize_t j1) noexcept nogil:
    # the first wrap row of the element of rows [j0, j1) (j1 if it has none)
    cdef Py_ssize_t j = j1
    while j > j0 and <int>s.params[s.npk * (j - 1) + PP_TYPE] >= PT_WRAP_CYLINDER:
        j -= 1
    return j


cdef void _wrap_frame(const FSet* s, const Tree* t, Py_ssize_t w, double* R_GW, double* p_GW) noexcept nogil:
    # X_GW = X_GB X_BW of wrap row w
    cdef const double* qt = s.params + s.npk * w + WP_QW
    cdef double R[9]
    cdef double r[3]
    cdef double a = qt[0], x = qt[1], y = qt[2], z = qt[3]
    R[0] = 1.0 - 2.0 * (y * y + z * z); R[1] = 2.0 * (x * y - a * z); R[2] = 2.0 * (x * z + a * y)
    R[3] = 2.0 * (x * y + a * z); R[4] = 1.0 - 2.0 * (x * x + z * z); R[5] = 2.0 * (y * z - a * x)
    R[6] = 2.0 * (x * z - a * y); R[7] = 2.0 * (y * z + a * x); R[8] = 1.0 - 2.0 * (x * x + y * y)
    mat33_mul(t.R_GB + 9 * s.bodies[w], R, R_GW)
    station_in_ground(t, s.bodies[w], s.stations + 3 * w, r, p_GW)


cdef inline void _to_wrap(const double* R_GW, const double* p_GW, const double* p, double* out) noexcept nogil:
    cdef double d[3]
    d[0] = p[0] - p_GW[0]; d[1] = p[1] - p_GW[1]; d[2] = p[2] - p_GW[2]
    mat33T_vec(R_GW, d, out)


cdef void _tangent_entry(const FSet* s, const Tree* t, Py_ssize_t w, const double* R_GW, const double* p_GW,
                         const double* rW, int which, double wlen, PEnt* e) noexcept nogil:
    cdef idx_t b = s.bodies[w]
    mat33_vec(R_GW, rW, e.p)
    e.p[0] += p_GW[0]; e.p[1] += p_GW[1]; e.p[2] += p_GW[2]
    e.r[0] = e.p[0] - t.p_GB[3 * b]; e.r[1] = e.p[1] - t.p_GB[3 * b + 1]; e.r[2] = e.p[2] - t.p_GB[3 * b + 2]
    station_velocity(t, b, e.r, e.v)
    e.g[0] = 0.0; e.g[1] = 0.0; e.g[2] = 0.0
    e.body = b
    e.row = w
    e.wrap = which
    e.wlen = wlen


cdef inline void _ent_gloc(PEnt* e, Py_ssize_t jw, double* gc, bint* gv) noexcept nogil:
    # OpenSim's Point::getLocationInGround caches a point's location the first time it is asked in a
    # realization, and a PathWrapPoint's setLocation does not invalidate it: when the passes over two
    # or more wraps move a tangent point after it was first measured, OpenSim's lengths and force
    # directions keep using its first location (its wrapLine and produceForces' application point use
    # the new one). e.gl is that location: per tangent point (wrap row, which), the first one asked.
    cdef Py_ssize_t k
    if e.wrap == 0:
        e.gl[0] = e.p[0]; e.gl[1] = e.p[1]; e.gl[2] = e.p[2]
        return
    k = 2 * (e.row - jw) + e.wrap - 1
    if not gv[k]:
        gc[3 * k] = e.p[0]; gc[3 * k + 1] = e.p[1]; gc[3 * k + 2] = e.p[2]
        gv[k] = True
    e.gl[0] = gc[3 * k]; e.gl[1] = gc[3 * k + 1]; e.gl[2] = gc[3 * k + 2]


cdef double _ents_length(PEnt* ent, Py_ssize_t n, Py_ssize_t jw, double* gc, bint* gv) noexcept nogil:
    # OpenSim's calcLengthAfterPathComputation (every entry's location asked, as it asks them)
    cdef double L = 0.0
    cdef Py_ssize_t i
    for i in range(n):
        _ent_gloc(&ent[i], jw, gc, gv)
    for i in range(1, n):
        if ent[i - 1].wrap and ent[i].wrap and ent[i - 1].row == ent[i].row:
            L += ent[i].wlen
        else:
            L += _wsqrt(_dist2(ent[i - 1].gl, ent[i].gl))
    return L


cdef inline void _ents_remove(PEnt* ent, Py_ssize_t* n, Py_ssize_t w) noexcept nogil:
    cdef Py_ssize_t j, k
    for j in range(n[0]):
        if ent[j].wrap == 1 and ent[j].row == w:
            for k in range(j, n[0] - 2):
                ent[k] = ent[k + 2]
            n[0] -= 2
            return


cdef Py_ssize_t _wrap_path(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j0,
                           Py_ssize_t jw, Py_ssize_t j1, PEnt* ent, double* L) noexcept nogil:
    # OpenSim's computePath: the active points, applyWrapObjects, then the length (L) as OpenSim's
    # calcLengthAfterPathComputation makes it, which also fixes every entry's gl; the entries' count
    cdef double gc[3 * PATH_MAXPTS]
    cdef bint gv[PATH_MAXPTS]
    cdef Py_ssize_t i, n
    for i in range(PATH_MAXPTS):
        gv[i] = False
    n = _wrap_apply_objects(s, t, q, u, j0, jw, j1, ent, gc, gv)
    L[0] = _ents_length(ent, n, jw, gc, gv)
    return n


cdef Py_ssize_t _wrap_apply_objects(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j0,
                                    Py_ssize_t jw, Py_ssize_t j1, PEnt* ent, double* gc, bint* gv) noexcept nogil:
    # the active points, then OpenSim's applyWrapObjects
    cdef bint act[PATH_MAXPTS]
    cdef int order[PATH_MAXPTS]
    cdef int result[PATH_MAXPTS]
    cdef double R_GW[9]
    cdef double p_GW[3]
    cdef double P1[3]
    cdef double P2[3]
    cdef double r1[3]
    cdef double r2[3]
    cdef double b1[3]
    cdef double b2[3]
    cdef double wlen, bwlen, change, best, length, last = INFINITY
    cdef Py_ssize_t n = 0, j, w, nw = j1 - jw, i, jf, jr, start, end, pt1, bend, k
    cdef int kk, maxit, code, kind
    cdef bint single = nw == 1
    cdef const double* prm
    for j in range(j0, jw):
        act[j - j0] = _path_point(s, t, q, u, j, ent[n].r, ent[n].p, ent[n].v, ent[n].g)
        if act[j - j0]:
            ent[n].body = s.bodies[j]
            ent[n].row = j
            ent[n].wrap = 0
            ent[n].wlen = 0.0
            n += 1
    for i in range(nw):
        order[i] = <int>i
        result[i] = WRAP_NONE
    maxit = 1 if nw < 2 else 8
    for kk in range(maxit):
        for i in range(nw):
            result[i] = WRAP_NONE
            w = jw + order[i]
            prm = s.params + s.npk * w
            _ents_remove(ent, &n, w)
            # the range's first and last active points, and where they are in the path
            jf = j0 + <Py_ssize_t>prm[WP_START]
            while jf <= j0 + <Py_ssize_t>prm[WP_END] and not act[jf - j0]:
                jf += 1
            if jf > j0 + <Py_ssize_t>prm[WP_END]:
                return n
            jr = j0 + <Py_ssize_t>prm[WP_END]
            while not act[jr - j0]:
                jr -= 1
            start = end = -1
            for k in range(n):
                if not ent[k].wrap and ent[k].row == jf:
                    start = k
                if not ent[k].wrap and ent[k].row == jr:
                    end = k
            if start < 0 or end < 0:
                return n
            _wrap_frame(s, t, w, R_GW, p_GW)
            kind = <int>prm[PP_TYPE]
            best = INFINITY
            bend = -1
            bwlen = 0.0
            for pt1 in range(start, end):
                if ent[pt1].wrap and ent[pt1 + 1].wrap and ent[pt1].row == ent[pt1 + 1].row:
                    continue
                _to_wrap(R_GW, p_GW, ent[pt1].p, P1)
                _to_wrap(R_GW, p_GW, ent[pt1 + 1].p, P2)
                if kind == PT_WRAP_CYLINDER:
                    code = _wrap_cylinder(P1, P2, prm[WP_D0], prm[WP_D0 + 1], <int>prm[WP_QUAD], single, r1, r2,
                                          &wlen)
                elif kind == PT_WRAP_SPHERE:
                    code = _wrap_sphere(P1, P2, prm[WP_D0], <int>prm[WP_QUAD], r1, r2, &wlen)
                elif kind == PT_WRAP_TORUS:
                    code = _wrap_torus(P1, P2, prm[WP_D0], prm[WP_D0 + 1], <int>prm[WP_QUAD], single, r1, r2, &wlen)
                else:
                    code = _wrap_ellipsoid(P1, P2, prm + WP_D0, <int>prm[WP_QUAD], <int>prm[WP_METHOD], r1, r2,
                                           &wlen)
                result[i] = code
                if code == WRAP_MANDATORY:
                    bend = pt1 + 1
                    b1[0] = r1[0]; b1[1] = r1[1]; b1[2] = r1[2]
                    b2[0] = r2[0]; b2[1] = r2[1]; b2[2] = r2[2]
                    bwlen = wlen
                    break
                elif code == WRAP_WRAPPED:
                    # OpenSim's calcPathLengthChange, over the locations its points' caches hold
                    _ent_gloc(&ent[pt1], jw, gc, gv)
                    _ent_gloc(&ent[pt1 + 1], jw, gc, gv)
                    _to_wrap(R_GW, p_GW, ent[pt1].gl, P1)
                    _to_wrap(R_GW, p_GW, ent[pt1 + 1].gl, P2)
                    change = (_wsqrt(_dist2(P1, r1)) + wlen + _wsqrt(_dist2(r2, P2))) - _wsqrt(_dist2(P1, P2))
                    if change < best:
                        best = change
                        bend = pt1 + 1
                        b1[0] = r1[0]; b1[1] = r1[1]; b1[2] = r1[2]
                        b2[0] = r2[0]; b2[1] = r2[1]; b2[2] = r2[2]
                        bwlen = wlen
            if bend >= 0:
                for k in range(n - 1, bend - 1, -1):
                    ent[k + 2] = ent[k]
                _tangent_entry(s, t, w, R_GW, p_GW, b1, 1, 0.0, &ent[bend])
                _tangent_entry(s, t, w, R_GW, p_GW, b2, 2, bwlen, &ent[bend + 1])
                n += 2
        length = _ents_length(ent, n, jw, gc, gv)
        if _wfabs(length - last) < 0.0005:
            break
        last = length
        if kk == 0 and nw > 1 and result[0] == WRAP_NONE and result[1] == WRAP_INSIDE:
            # OpenSim tries the first two wraps the other way round
            order[0] = 1
            order[1] = 0
            _ents_remove(ent, &n, jw)
    return n


cdef void _wrap_measure(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j0,
                        Py_ssize_t jw, Py_ssize_t j1, double* L, double* Ldot) noexcept nogil:
    cdef PEnt ent[PATH_MAXPTS]
    cdef Py_ssize_t n = _wrap_path(s, t, q, u, j0, jw, j1, ent, L), i
    cdef double d[3]
    cdef double dv[3]
    cdef double m
    cdef int k
    Ldot[0] = 0.0
    for i in range(1, n):
        # OpenSim's Point::calcSpeedBetween (its cached locations, the velocities of the final ones)
        for k in range(3):
            d[k] = ent[i].gl[k] - ent[i - 1].gl[k]
            dv[k] = ent[i].v[k] - ent[i - 1].v[k]
        m = _wsqrt(dot3(d, d))
        if m < _WEPS:
            Ldot[0] += _wsqrt(dot3(dv, dv))
        else:
            Ldot[0] += dot3(d, dv) / m


cdef void _wrap_apply(const FSet* s, const Tree* t, const double* q, const double* u, Py_ssize_t j0,
                      Py_ssize_t jw, Py_ssize_t j1, double T, double* bf, double* mf) noexcept nogil:
    # OpenSim's GeometryPath::produceForces over the wrapped path
    cdef PEnt ent[PATH_MAXPTS]
    cdef double L
    cdef Py_ssize_t n = _wrap_path(s, t, q, u, j0, jw, j1, ent, &L), i
    cdef double f[3]
    cdef double dirn[3]
    cdef double prev[3]
    cdef double m
    cdef idx_t pb = -1
    cdef int k
    for i in range(n):
        f[0] = 0.0; f[1] = 0.0; f[2] = 0.0
        if pb >= 0 and ent[i].body != pb:
            f[0] -= T * prev[0]; f[1] -= T * prev[1]; f[2] -= T * prev[2]
        if i + 1 < n and ent[i + 1].body != ent[i].body:
            for k in range(3):
                dirn[k] = ent[i + 1].gl[k] - ent[i].gl[k]
            m = _wsqrt(dot3(dirn, dirn))
            if m > 0.0:
                dirn[0] /= m; dirn[1] /= m; dirn[2] /= m
            f[0] += T * dirn[0]; f[1] += T * dirn[1]; f[2] += T * dirn[2]
            # the work a moving point's gearing does
            if ent[i].g[0] != 0.0 or ent[i].g[1] != 0.0 or ent[i].g[2] != 0.0:
                mf[<idx_t>s.params[s.npk * ent[i].row + PP_U]] += T * dot3(dirn, ent[i].g)
            if ent[i + 1].g[0] != 0.0 or ent[i + 1].g[1] != 0.0 or ent[i + 1].g[2] != 0.0:
                mf[<idx_t>s.params[s.npk * ent[i + 1].row + PP_U]] -= T * dot3(dirn, ent[i + 1].g)
            pb = ent[i].body
            prev[0] = dirn[0]; prev[1] = dirn[1]; prev[2] = dirn[2]
        else:
            pb = -1
        if f[0] != 0.0 or f[1] != 0.0 or f[2] != 0.0:
            add_station_force(bf, ent[i].body, ent[i].r, f, 1.0)


def _path_wrap_rows_check(params):
    """Raise ValueError naming the row unless every wrap row of a path set is one the kernel reads
    safely: after its element's points, a range within them, a unit quaternion, positive sizes."""
    cdef Py_ssize_t j, n = params.shape[0], first = 0, npts = 0, nwr = 0
    for j in range(n):
        row = params[j]
        if j and row[PP_ELEMENT] != params[j - 1][PP_ELEMENT]:
            first, npts, nwr = j, 0, 0
        kind = row[PP_TYPE]
        if kind not in (PT_WRAP_CYLINDER, PT_WRAP_SPHERE, PT_WRAP_ELLIPSOID, PT_WRAP_TORUS):
            if nwr:
                raise ValueError(f"ForceSet (GeometryPath): row {j}: a point after its path's wrap rows")
            npts += 1
            continue
        nwr += 1
        what = f"ForceSet (GeometryPath): row {j} (a wrap)"
        if npts < 2:
            raise ValueError(f"{what}: its path has {npts} point rows before it; a wrap follows at least two")
        if npts + 2 * nwr > PATH_MAXPTS:
            raise ValueError(f"{what}: a path with wraps holds at most {PATH_MAXPTS} points and tangent points "
                             f"({npts} points, {nwr} wraps)")
        a, b = row[WP_START], row[WP_END]
        if a != int(a) or b != int(b) or not 0 <= a <= b < npts:
            raise ValueError(f"{what}: its range [{a}, {b}] is not within its path's {npts} points")
        qt = row[WP_QW:WP_QW + 4]
        if not abs(float((qt * qt).sum()) - 1.0) <= 1e-12:
            raise ValueError(f"{what}: expected a unit quaternion, got {list(qt)}")
        if not (row[WP_D0] > 0.0 and isfinite(row[WP_D0])):
            raise ValueError(f"{what}: radius {row[WP_D0]} is not positive")
        if kind == PT_WRAP_CYLINDER and not (row[WP_D0 + 1] >= 0.0 and isfinite(row[WP_D0 + 1])):
            raise ValueError(f"{what}: length {row[WP_D0 + 1]} is not >= 0")
        if kind == PT_WRAP_TORUS and not (row[WP_D0 + 1] > row[WP_D0] and isfinite(row[WP_D0 + 1])):
            raise ValueError(f"{what}: a torus's tube radius {row[WP_D0]} is not less than its circle's radius "
                             f"{row[WP_D0 + 1]}")
        if kind == PT_WRAP_ELLIPSOID:
            if not all(row[WP_D0 + k] > 0.0 and isfinite(row[WP_D0 + k]) for k in range(3)):
                raise ValueError(f"{what}: semi-axes {list(row[WP_D0:WP_D0 + 3])} are not all positive")
            if row[WP_METHOD] not in (WM_HYBRID, WM_MIDPOINT, WM_AXIAL):
                raise ValueError(f"{what}: method code {row[WP_METHOD]} is not 0 (hybrid), 1 (midpoint) or 2 (axial)")
        if row[WP_QUAD] not in (-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0):
            raise ValueError(f"{what}: quadrant code {row[WP_QUAD]} is not one of -3..3")


def path_points(ForceSet fs, TreeKernels ws, Py_ssize_t element, out):
    """Write the current path of element ``element`` of the GeometryPath set ``fs`` into ``out``
    (m, 6), m >= the element's rows plus its wraps: per entry px, py, pz (G), kind (0 an active
    point, 1 a wrap's first tangent point, 2 its second), the row within the element (a point's
    index, or the number of points plus the wrap's index), and (kind 2) the length on the surface
    from the first tangent point. Returns the number of entries, from the workspace's kinematics.
    For drawing: evaluated once per call, outside the time loop."""
    cdef PEnt ent[PATH_MAXPTS]
    cdef double r[3]
    cdef double v[3]
    cdef double g[3]
    cdef Py_ssize_t j0 = 0, j1, jw, n = 0, j, i
    cdef double Lw  # (the wrapped length, which drawing does not need)
    cdef double* o
    if fs.kind != FK_PATH:
        raise ValueError("path_points: expected a GeometryPath ForceSet")
    fs._fits(ws, ws.nq)
    while j0 < fs.s.n and <Py_ssize_t>fs.s.params[fs.s.npk * j0 + PP_ELEMENT] != element:
        j0 = _path_end(&fs.s, j0)
    if j0 >= fs.s.n:
        raise ValueError(f"path_points: the set has no element {element}")
    j1 = _path_end(&fs.s, j0)
    jw = _path_first_wrap(&fs.s, j0, j1)
    m = (j1 - j0) + (j1 - jw)
    if not (isinstance(out, cnp.ndarray) and out.ndim == 2 and out.shape[1] == 6 and out.shape[0] >= m
            and _is_f64_vector(out, out.shape[0] * 6, True)):
        raise ValueError(f"path_points: out: expected a writable C-contiguous float64 (>= {m}, 6) array")
    o = _dp(out)
    with nogil:
        if jw < j1:
            n = _wrap_path(&fs.s, &ws.t, ws.t.q, ws.t.u, j0, jw, j1, ent, &Lw)
            for i in range(n):
                o[6 * i] = ent[i].p[0]; o[6 * i + 1] = ent[i].p[1]; o[6 * i + 2] = ent[i].p[2]
                o[6 * i + 3] = ent[i].wrap
                o[6 * i + 4] = ent[i].row - j0 if ent[i].wrap == 0 else (jw - j0) + (ent[i].row - jw)
                o[6 * i + 5] = ent[i].wlen
        else:
            for j in range(j0, j1):
                if _path_point(&fs.s, &ws.t, ws.t.q, ws.t.u, j, r, o + 6 * n, v, g):
                    o[6 * n + 3] = 0.0
                    o[6 * n + 4] = j - j0
                    o[6 * n + 5] = 0.0
                    n += 1
    return n
