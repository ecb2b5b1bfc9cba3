# Wrapping over an ellipsoid (PT_WRAP_ELLIPSOID) with OpenSim's algorithm (WrapEllipsoid::wrapLine,
# calcTangentPoint, CalcDistanceOnEllipsoid, findClosestPoint, closestPointToEllipse), so that lengths
# and moment arms agree with OpenSim's: the wrapping plane through P1, P2 and a point c1 of the surface
# (the "Frans" axial technique, the "fan" of closest points, or their blend by the method), the tangent
# points found in that plane by OpenSim's damped Gauss-Newton iteration (stopped at a sum of squared
# residuals of 1e-8 in its scaled units, as OpenSim stops it), and the length on the surface as the
# polyline of OpenSim's 1 mm segments. Row layout as the cylinder's (core/path_wrap.pxi), with
# d0..d2 the semi-axes and column WP_METHOD the method (0 hybrid, 1 midpoint, 2 axial).

cdef enum:
    PT_WRAP_ELLIPSOID = 6
    WP_METHOD = 12
    WM_HYBRID = 0
    WM_MIDPOINT = 1
    WM_AXIAL = 2

# OpenSim's constants (WrapEllipsoid.cpp)
cdef double _E_TINY = 0.00000001
cdef double _MU_BLEND_MIN = 0.7073
cdef double _MU_BLEND_MAX = 0.9
cdef int _NUM_FAN_SAMPLES = 300
cdef double _SV_BOUNDARY_BLEND = 0.3

PATH_CODES.update(wrap_ellipsoid=PT_WRAP_ELLIPSOID)
PATH_WRAP_METHODS = dict(hybrid=WM_HYBRID, midpoint=WM_MIDPOINT, axial=WM_AXIAL)


cdef double _closest_on_ellipse(double a, double b, double u, double v, double* x, double* y) noexcept nogil:
    # closestPointToEllipse (Eberly's Newton iteration on t)
    cdef double a2 = a * a, b2 = b * b, a2u2 = a * a * u * u, b2v2 = b * b * v * v
    cdef double t, P = 0.0, Q = 0.0, f, fp, mx, dy, dx, r
    cdef bint nx = _wfabs(0.0 - u) <= _WROUNDOFF, ny = _wfabs(0.0 - v) <= _WROUNDOFF
    cdef int i
    if nx and ny:
        if a < b:
            x[0] = -a if u < 0.0 else a
            y[0] = v
            return a
        x[0] = u
        y[0] = -b if v < 0.0 else b
        return b
    if nx:
        if a >= b or _wfabs(v) >= b - a2 / b:
            x[0] = u
            y[0] = b if v >= 0 else -b
            return _wfabs(y[0] - v)
        y[0] = b2 * v / (b2 - a2)
        dy = y[0] - v
        r = y[0] / b
        x[0] = a * _wsqrt(_wfabs(1 - r * r))
        return _wsqrt(x[0] * x[0] + dy * dy)
    if ny:
        if b >= a or _wfabs(u) >= a - b2 / a:
            x[0] = a if u >= 0 else -a
            y[0] = v
            return _wfabs(x[0] - u)
        x[0] = a2 * u / (a2 - b2)
        dx = x[0] - u
        r = x[0] / a
        y[0] = b * _wsqrt(_wfabs(1 - r * r))
        return _wsqrt(dx * dx + y[0] * y[0])
    if (u / a) * (u / a) + (v / b) * (v / b) < 1.0:
        t = 0.0
    else:
        mx = a
        if b > mx:
            mx = b
        t = mx * _wsqrt(u * u + v * v)
    for i in range(64):
        P = t + a2
        Q = t + b2
        f = P * P * Q * Q - a2u2 * Q * Q - b2v2 * P * P
        if _wfabs(f) < 1e-09:
            break
        fp = 2.0 * (P * Q * (P + Q) - a2u2 * Q - b2v2 * P)
        t -= f / fp
    x[0] = a2 * u / P
    y[0] = b2 * v / Q
    return _wsqrt((x[0] - u) ** 2 + (y[0] - v) ** 2)


cdef double _closest_on_ellipsoid(const double* ax, const double* dims, double u, double v, double w, double* out,
                                  int special) noexcept nogil:
    # findClosestPoint: a point of the ellipsoid (semi-axes ax) nearest (u, v, w); with a coordinate
    # at 0 (or special given) the cross-section's ellipse (the smallest such, by the model's dims)
    cdef double uvw[3]
    cdef double best = INFINITY, s, a = ax[0], b = ax[1], c = ax[2]
    cdef double a2, b2, c2, a2u2, b2v2, c2w2, t, P, Q, R, f, fp, mx
    cdef int i, j
    if special < 0:
        uvw[0] = u; uvw[1] = v; uvw[2] = w
        for i in range(3):
            if _wfabs(0.0 - uvw[i]) <= _WROUNDOFF:
                s = 0.0
                for j in range(3):
                    if j != i:
                        s += dims[j]
                if best > s:
                    special = i
                    best = s
    if special == 0:
        out[0] = u
        return _closest_on_ellipse(b, c, v, w, &out[1], &out[2])
    if special == 1:
        out[1] = v
        return _closest_on_ellipse(c, a, w, u, &out[2], &out[0])
    if special == 2:
        out[2] = w
        return _closest_on_ellipse(a, b, u, v, &out[0], &out[1])
    a2 = a * a; b2 = b * b; c2 = c * c
    a2u2 = a2 * u * u; b2v2 = b2 * v * v; c2w2 = c2 * w * w
    if (u / a) * (u / a) + (v / b) * (v / b) + (w / c) * (w / c) < 1.0:
        t = 0.0
    else:
        mx = a
        if b > mx:
            mx = b
        if c > mx:
            mx = c
        t = mx * _wsqrt(u * u + v * v + w * w)
    for i in range(64):
        P = t + a2
        Q = t + b2
        R = t + c2
        f = P * P * Q * Q * R * R - a2u2 * Q * Q * R * R - b2v2 * P * P * R * R - c2w2 * P * P * Q * Q
        if _wfabs(f) < 1e-09:
            out[0] = a2 * u / P
            out[1] = b2 * v / Q
            out[2] = c2 * w / R
            return _wsqrt((out[0] - u) ** 2 + (out[1] - v) ** 2 + (out[2] - w) ** 2)
        fp = 2.0 * (P * Q * R * (Q * R + P * R + P * Q) - a2u2 * Q * R * (Q + R) - b2v2 * P * R * (P + R)
                    - c2w2 * P * Q * (P + Q))
        t -= f / fp
    # (OpenSim leaves the point as it was when Newton's iteration does not settle)
    return -1.0


cdef bint _inv4(const double* A, double* out) noexcept nogil:
    # the inverse of a 4x4 matrix (row-major): Gauss-Jordan with partial pivoting
    cdef double M[4][8]
    cdef double piv, f, tmp
    cdef int i, j, k, p
    for i in range(4):
        for j in range(4):
            M[i][j] = A[4 * i + j]
            M[i][4 + j] = 1.0 if i == j else 0.0
    for k in range(4):
        p = k
        for i in range(k + 1, 4):
            if _wfabs(M[i][k]) > _wfabs(M[p][k]):
                p = i
        if M[p][k] == 0.0:
            return False
        if p != k:
            for j in range(8):
                tmp = M[k][j]; M[k][j] = M[p][j]; M[p][j] = tmp
        piv = M[k][k]
        for j in range(8):
            M[k][j] /= piv
        for i in range(4):
            if i != k:
                f = M[i][k]
                if f != 0.0:
                    for j in range(8):
                        M[i][j] -= f * M[k][j]
    for i in range(4):
        for j in range(4):
            out[4 * i + j] = M[i][4 + j]
    return True


cdef inline double _ell_resid(const double* r1, const double* p1, const double* m, const double* a, const double* vs,
                              double vs4, double d1, double* ee) noexcept nogil:
    cdef double nr1[3]
    cdef int i
    for i in range(3):
        nr1[i] = 2.0 * (r1[i] - m[i]) / (a[i] * a[i])
    ee[0] = dot3(vs, r1) + vs4
    ee[1] = -1.0
    for i in range(3):
        ee[1] += ((r1[i] - m[i]) / a[i]) ** 2
    ee[2] = dot3(nr1, r1) + d1
    ee[3] = dot3(nr1, p1) + d1
    return ee[0] * ee[0] + ee[1] * ee[1] + ee[2] * ee[2] + ee[3] * ee[3]


cdef void _ell_tangent(double p1e, double* r1, const double* p1, const double* m, const double* a, const double* vs,
                       double vs4) noexcept nogil:
    # calcTangentPoint: move r1 (in the plane vs.x + vs4 = 0, on the surface) until p1-r1 is tangent
    cdef double nr1[3]
    cdef double p1r1[3]
    cdef double p1m[3]
    cdef double tmp[3]
    cdef double ee[4]
    cdef double v[4]
    cdef double vt[4]
    cdef double diag[4]
    cdef double J[16]
    cdef double JJ[16]
    cdef double inv[16]
    cdef double d1, ssqo, ssq, pcos, dd, fakt, alpha = 0.01
    cdef int i, j, k, nit = 0, nit2
    if _wfabs(p1e) < 0.0001:
        r1[0] = p1[0]; r1[1] = p1[1]; r1[2] = p1[2]
        return
    for i in range(3):
        nr1[i] = 2.0 * (r1[i] - m[i]) / (a[i] * a[i])
    d1 = -dot3(nr1, r1)
    ssqo = _ell_resid(r1, p1, m, a, vs, vs4, d1, ee)
    ssq = ssqo
    for i in range(4):
        vt[i] = 0.0
    while ssq > _E_TINY and nit < 50:
        nit += 1
        for i in range(3):
            J[4 * i] = vs[i]
            J[4 * i + 1] = 2.0 * (r1[i] - m[i]) / (a[i] * a[i])
            J[4 * i + 2] = 2.0 * (2.0 * r1[i] - m[i]) / (a[i] * a[i])
            J[4 * i + 3] = 2.0 * p1[i] / (a[i] * a[i])
        J[12] = 0.0; J[13] = 0.0; J[14] = 1.0; J[15] = 1.0
        for i in range(3):
            tmp[i] = p1[i] - r1[i]
        _norm_or_zero(tmp, p1r1)
        for i in range(3):
            tmp[i] = p1[i] - m[i]
        _norm_or_zero(tmp, p1m)
        pcos = dot3(p1r1, p1m)
        dd = 1.0 - pcos ** 100 if pcos > 0.1 else 1.0
        for i in range(4):
            v[i] = 0.0
            for j in range(4):
                v[i] -= J[4 * i + j] * ee[j]
        for i in range(4):
            for j in range(4):
                JJ[4 * i + j] = 0.0
                for k in range(4):
                    JJ[4 * i + j] += J[4 * i + k] * J[4 * j + k]
        for i in range(4):
            diag[i] = JJ[5 * i]
        nit2 = 0
        while ssq >= ssqo and nit2 < 1000:
            for i in range(4):
                JJ[5 * i] = diag[i] * (1.0 + alpha)
            if not _inv4(JJ, inv):
                for i in range(16):
                    inv[i] = NAN
            for i in range(4):
                vt[i] = 0.0
                for j in range(4):
                    vt[i] += dd * inv[4 * i + j] * v[j] / 16.0
            for i in range(3):
                r1[i] += vt[i]
            d1 += vt[3]
            ssqo = ssq
            ssq = _ell_resid(r1, p1, m, a, vs, vs4, d1, ee)
            alpha *= 4.0
            nit2 += 1
        alpha /= 8.0
        fakt = 0.5
        nit2 = 0
        while ssq <= ssqo and nit2 < 1000:
            fakt *= 2.0
            for i in range(3):
                r1[i] += vt[i] * fakt
            d1 += vt[3] * fakt
            ssqo = ssq
            ssq = _ell_resid(r1, p1, m, a, vs, vs4, d1, ee)
            nit2 += 1
        for i in range(3):
            r1[i] -= vt[i] * fakt
        d1 -= vt[3] * fakt
        ssq = _ell_resid(r1, p1, m, a, vs, vs4, d1, ee)
        ssqo = ssq


cdef void _ell_distance(const double* r1, const double* r2, const double* m, const double* a, const double* vs,
                        double vs4, bint far, double factor, double* length, double* w1,
                        double* w2, double* pts=NULL) noexcept nogil:
    # CalcDistanceOnEllipsoid: the polyline over the surface in the plane (vs, vs4), in about 1 mm
    # pieces (at most 499); its length; w1, w2 its second and second-to-last points; its interior
    # points (at most 498, scaled) into pts when given (for drawing)
    cdef double dr[3]
    cdef double u[3]
    cdef double a0[3]
    cdef double ar1[3]
    cdef double ar2[3]
    cdef double vsy[3]
    cdef double vsz[3]
    cdef double tmp[3]
    cdef double r[3]
    cdef double f1[3]
    cdef double f2[3]
    cdef double prev[3]
    cdef double cur[3]
    cdef double ln, mu, phi0, dphi, phi, aa, bb, cc, mu3, c, s
    cdef int i, j, imax = 0, nseg, ninterior
    for j in range(3):
        dr[j] = r1[j] - r2[j]
    ln = _wsqrt(dot3(dr, dr)) / factor
    if ln < 0.001:
        length[0] = ln * factor
        w1[0] = r2[0]; w1[1] = r2[1]; w1[2] = r2[2]
        w2[0] = r1[0]; w2[1] = r1[1]; w2[2] = r1[2]
        return
    nseg = <int>(ln / 0.001)
    if nseg > 499:
        nseg = 499
    ninterior = nseg - 1
    for i in range(1, 3):
        if _wfabs(vs[i]) > _wfabs(vs[imax]):
            imax = i
    u[0] = 0.0; u[1] = 0.0; u[2] = 0.0
    u[imax] = 1.0
    mu = (-dot3(vs, m) - vs4) / dot3(vs, u)
    for j in range(3):
        a0[j] = m[j] + mu * u[j]
        tmp[j] = r1[j] - a0[j]
    _norm_or_zero(tmp, ar1)
    for j in range(3):
        tmp[j] = r2[j] - a0[j]
    _norm_or_zero(tmp, ar2)
    phi0 = acos(dot3(ar1, ar2))
    if far:
        dphi = -(2 * _WPI - phi0) / <double>nseg
    else:
        dphi = phi0 / <double>nseg
    cross3(ar1, ar2, tmp)
    _norm_or_zero(tmp, vsz)
    cross3(vsz, ar1, vsy)
    length[0] = 0.0
    prev[0] = r1[0]; prev[1] = r1[1]; prev[2] = r1[2]
    for i in range(ninterior):
        phi = (i + 1) * dphi
        c = cos(phi)
        s = sin(phi)
        # r0 rphi ux: ar1 cos(phi) + vsy sin(phi)
        for j in range(3):
            r[j] = ar1[j] * c + vsy[j] * s + vsz[j] * 0.0
        for j in range(3):
            f1[j] = r[j] / a[j]
            f2[j] = (a0[j] - m[j]) / a[j]
        aa = dot3(f1, f1)
        bb = 2.0 * dot3(f1, f2)
        cc = dot3(f2, f2) - 1.0
        mu3 = (-bb + _wsqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
        for j in range(3):
            cur[j] = a0[j] + mu3 * r[j]
        if i == 0:
            w1[0] = cur[0]; w1[1] = cur[1]; w1[2] = cur[2]
        if pts != NULL:
            pts[3 * i] = cur[0]; pts[3 * i + 1] = cur[1]; pts[3 * i + 2] = cur[2]
        length[0] += _wsqrt(_dist2(prev, cur))
        prev[0] = cur[0]; prev[1] = cur[1]; prev[2] = cur[2]
    if ninterior == 0:
        w1[0] = r2[0]; w1[1] = r2[1]; w1[2] = r2[2]
        w2[0] = r1[0]; w2[1] = r1[1]; w2[2] = r1[2]
    else:
        w2[0] = prev[0]; w2[1] = prev[1]; w2[2] = prev[2]
    length[0] += _wsqrt(_dist2(prev, r2))


cdef inline int _ell_npts(const double* r1, const double* r2, double factor) noexcept nogil:
    # how many points CalcDistanceOnEllipsoid's polyline has
    cdef double ln = _wsqrt(_dist2(r1, r2)) / factor
    cdef int n
    if ln < 0.001:
        return 2
    n = <int>(ln / 0.001)
    if n > 499:
        n = 499
    return n + 1


cdef inline int _wrap_ellipsoid(const double* P1, const double* P2, const double* dims, int quad, int method,
                                double* r1o, double* r2o, double* wlen) noexcept nogil:
    return _wrap_ellipsoid_pts(P1, P2, dims, quad, method, r1o, r2o, wlen, NULL, NULL)


cdef int _wrap_ellipsoid_pts(const double* P1, const double* P2, const double* dims, int quad, int method,
                             double* r1o, double* r2o, double* wlen, double* pts, int* npts) noexcept nogil:
    # WrapEllipsoid::wrapLine in the ellipsoid's frame (centred at the origin, semi-axes dims); with
    # pts (room for 498 points) the wrap's interior points along the surface and their count in npts
    cdef double p1[3]
    cdef double p2[3]
    cdef double m[3]
    cdef double a[3]
    cdef double p1p2[3]
    cdef double p1m[3]
    cdef double p2m[3]
    cdef double tmp[3]
    cdef double f1[3]
    cdef double f2[3]
    cdef double r1[3]
    cdef double r2[3]
    cdef double r1r2[3]
    cdef double mu[3]
    cdef double t[3]
    cdef double sv[3]
    cdef double c1[3]
    cdef double tsv[3]
    cdef double tc1[3]
    cdef double tc2[3]
    cdef double vsum[3]
    cdef double bv[3]
    cdef double vs[3]
    cdef double w1[3]
    cdef double w2[3]
    cdef double orig[3]
    cdef double q1[3]
    cdef double q2[3]
    cdef double factor, p1e = -1.0, p2e = -1.0, ppm, aa, bb, cc, disc, l1, l2, s, tt, vs4, fan = -INFINITY
    cdef double bis, again
    cdef int i, j, best = 0, ax = abs(quad) - 1, sgn = (1 if quad > 0 else -1) if quad != 0 else 0
    cdef bint far = False, use_c1
    wlen[0] = 0.0
    factor = 3.0 / (dims[0] + dims[1] + dims[2])
    for i in range(3):
        p1[i] = P1[i] * factor
        p2[i] = P2[i] * factor
        m[i] = 0.0 * factor
        a[i] = dims[i] * factor
    for i in range(3):
        p1e += ((p1[i] - m[i]) / a[i]) ** 2
        p2e += ((p2[i] - m[i]) / a[i]) ** 2
    if p1e < -0.0001 or p2e < -0.0001:
        return WRAP_INSIDE
    for i in range(3):
        p1p2[i] = p1[i] - p2[i]
        tmp[i] = p1[i] - m[i]
    _norm_or_zero(tmp, p1m)
    for i in range(3):
        tmp[i] = p2[i] - m[i]
    _norm_or_zero(tmp, p2m)
    ppm = dot3(p1m, p2m) - 1.0
    if _wfabs(ppm) < 0.0001:
        return WRAP_NONE
    for i in range(3):
        f1[i] = p1p2[i] / a[i]
        f2[i] = (p2[i] - m[i]) / a[i]
    aa = dot3(f1, f1)
    bb = 2.0 * dot3(f1, f2)
    cc = dot3(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    if disc < 0.0:
        return WRAP_NONE
    l1 = (-bb + _wsqrt(disc)) / (2.0 * aa)
    l2 = (-bb - _wsqrt(disc)) / (2.0 * aa)
    if not (0.0 < l1 and l1 < 1.0) or not (0.0 < l2 and l2 < 1.0):
        return WRAP_NONE
    for i in range(3):
        r1[i] = p2[i] + l1 * p1p2[i]
        r2[i] = p2[i] + l2 * p1p2[i]
    for i in range(3):
        r1r2[i] = r2[i] - r1[i]
    _norm_or_zero(p1p2, mu)
    for i in range(3):
        mu[i] = _wfabs(mu[i])
        t[i] = (m[i] - r1[i]) / r1r2[i]
    for i in range(1, 3):
        if mu[i] > mu[best]:
            best = i
    # the Frans point: where the line crosses the plane of the most parallel axis at 0
    for j in range(3):
        tsv[j] = r1[j] + t[best] * r1r2[j]
    _closest_on_ellipsoid(a, dims, tsv[0], tsv[1], tsv[2], tc1, best)
    if method == WM_HYBRID or method == WM_AXIAL:
        if method == WM_HYBRID and mu[best] > _MU_BLEND_MIN:
            s = 1.0
            if t[best] < 0.0 or t[best] > 1.0:
                s = 0.0
            elif t[best] < _SV_BOUNDARY_BLEND:
                s = t[best] / _SV_BOUNDARY_BLEND
            elif t[best] > (1.0 - _SV_BOUNDARY_BLEND):
                s = (1.0 - t[best]) / _SV_BOUNDARY_BLEND
            if s < 1.0:
                mu[best] = _MU_BLEND_MIN + s * (mu[best] - _MU_BLEND_MIN)
        if method == WM_AXIAL or mu[best] > _MU_BLEND_MIN:
            for i in range(3):
                c1[i] = tc1[i]
                sv[i] = tsv[i]
        if method == WM_HYBRID and mu[best] < _MU_BLEND_MAX:
            # the fan: the mean direction from the line's points to their closest surface points
            vsum[0] = 0.0; vsum[1] = 0.0; vsum[2] = 0.0
            for i in range(3):
                q2[i] = r1[i] + 0.5 * r1r2[i]
            for i in range(1, _NUM_FAN_SAMPLES - 1):
                tt = <double>i / _NUM_FAN_SAMPLES
                for j in range(3):
                    q1[j] = r1[j] + tt * r1r2[j]
                _closest_on_ellipsoid(a, dims, q1[0], q1[1], q1[2], tc2, -1)
                for j in range(3):
                    tmp[j] = tc2[j] - q1[j]
                _norm_or_zero(tmp, bv)
                for j in range(3):
                    vsum[j] += bv[j]
            _norm_or_zero(vsum, vsum)
            for i in range(3):
                tc2[i] = q2[i] + vsum[i]
            if mu[best] <= _MU_BLEND_MIN:
                _closest_on_ellipsoid(a, dims, tc2[0], tc2[1], tc2[2], c1, -1)
                for i in range(3):
                    sv[i] = q2[i]
                fan = 1.0
            else:
                tt = (mu[best] - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN)
                _closest_on_ellipsoid(a, dims, tc2[0], tc2[1], tc2[2], tc1, -1)
                for i in range(3):
                    tmp[i] = tt * c1[i] + (1.0 - tt) * tc1[i]
                    sv[i] = tt * sv[i] + (1.0 - tt) * q2[i]
                _closest_on_ellipsoid(a, dims, tmp[0], tmp[1], tmp[2], c1, -1)
                fan = 1.0 - tt
    else:
        for i in range(3):
            sv[i] = r1[i] + 0.5 * (r2[i] - r1[i])
        _closest_on_ellipsoid(a, dims, sv[0], sv[1], sv[2], c1, -1)
    use_c1 = True
    if method == WM_AXIAL:
        use_c1 = t[best] > 0.0 and t[best] < 1.0
    if use_c1:
        for i in range(3):
            r1[i] = c1[i]
            r2[i] = c1[i]
    if sgn != 0:
        if _dsign(c1[ax] - m[ax]) != sgn:
            orig[0] = c1[0]; orig[1] = c1[1]; orig[2] = c1[2]
            c1[ax] = -c1[ax]
            for i in range(3):
                r1[i] = c1[i]
                r2[i] = c1[i]
            if _wfabs(fan - (-INFINITY)) <= _WROUNDOFF:
                fan = 1.0 - (mu[best] - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN)
            if fan > 1.0:
                fan = 1.0
            if fan > 0.0:
                bis = (orig[ax] + c1[ax]) / 2.0
                c1[ax] = c1[ax] + fan * (bis - c1[ax])
                tmp[0] = c1[0]; tmp[1] = c1[1]; tmp[2] = c1[2]
                _closest_on_ellipsoid(a, dims, tmp[0], tmp[1], tmp[2], c1, -1)
    # the wrapping plane through p1, p2 and c1
    for i in range(3):
        tmp[i] = p1[i] - c1[i]
    cross3(p1p2, tmp, f1)
    _norm_or_zero(f1, vs)
    vs4 = -dot3(vs, c1)
    _ell_tangent(p1e, r1, p1, m, a, vs, vs4)
    _ell_tangent(p2e, r2, p2, m, a, vs, vs4)
    while True:
        _ell_distance(r1, r2, m, a, vs, vs4, far, factor, wlen, w1, w2)
        if sgn == 0 or far or _ell_npts(r1, r2, factor) <= 2:
            break
        # a wrong-way wrap (the first or last piece turning back): wrap the far side instead
        for i in range(3):
            f1[i] = p1[i] - r1[i]
            f2[i] = w1[i] - r1[i]
        _norm_or_zero(f1, q1)
        _norm_or_zero(f2, q2)
        s = dot3(q1, q2)
        for i in range(3):
            f1[i] = p2[i] - r2[i]
            f2[i] = w2[i] - r2[i]
        _norm_or_zero(f1, q1)
        _norm_or_zero(f2, q2)
        if s > 0.0 or dot3(q1, q2) > 0.0:
            far = True
        else:
            break
    wlen[0] /= factor
    for i in range(3):
        r1o[i] = r1[i] / factor
        r2o[i] = r2[i] / factor
    if pts != NULL:
        # the same polyline again, its points kept (the loop above may have switched to the far side)
        _ell_distance(r1, r2, m, a, vs, vs4, far, factor, &again, w1, w2, pts)
        npts[0] = _ell_npts(r1, r2, factor) - 2
        for i in range(3 * npts[0]):
            pts[i] /= factor
    return WRAP_MANDATORY


def ellipsoid_wrap_points(P1, P2, dims, int quadrant, int method):
    """OpenSim's wrap of the line P1-P2 (in the ellipsoid's frame W) over the ellipsoid of semi-axes
    ``dims``: (code, r1 (3,), r2 (3,), wrap length, the polyline's interior points (n, 3)); for
    drawing a path (the compiled sets compute the same without keeping the points)."""
    cdef double[::1] p1 = np.ascontiguousarray(P1, dtype=np.float64)
    cdef double[::1] p2 = np.ascontiguousarray(P2, dtype=np.float64)
    cdef double[::1] d = np.ascontiguousarray(dims, dtype=np.float64)
    if p1.shape[0] != 3 or p2.shape[0] != 3 or d.shape[0] != 3:
        raise ValueError("ellipsoid_wrap_points: P1, P2 and dims must have 3 entries")
    for i in range(3):
        if not (d[i] > 0.0 and d[i] < INFINITY):
            raise ValueError(f"ellipsoid_wrap_points: dims must be positive and finite, got {np.asarray(d)!r}")
    if method not in (WM_HYBRID, WM_MIDPOINT, WM_AXIAL) or not -3 <= quadrant <= 3:
        raise ValueError(f"ellipsoid_wrap_points: method {method} or quadrant {quadrant} out of range")
    r1 = np.zeros(3)
    r2 = np.zeros(3)
    pts = np.zeros((498, 3))
    cdef double[::1] r1v = r1
    cdef double[::1] r2v = r2
    cdef double[:, ::1] pv = pts
    cdef double wlen = 0.0
    cdef int n = 0, code
    code = _wrap_ellipsoid_pts(&p1[0], &p2[0], &d[0], quadrant, method, &r1v[0], &r2v[0], &wlen, &pv[0, 0], &n)
    return code, r1, r2, wlen, pts[:n].copy()

