# Wrapping of a geometry path (FK_PATH) over cylinders and spheres fixed in bodies, with OpenSim's
# algorithms (GeometryPath::applyWrapObjects, WrapCylinder::wrapLine and _make_spiral_path,
# WrapSphere::wrapLine), so that lengths, speeds and moment arms agree with OpenSim's.
#
# Packed layout: an element's wrap rows follow its point rows, one row per PathWrap in the order of
# the path's PathWrapSet. bodies: the wrap object's body B; stations: p_BW, the wrap frame's origin
# in B; params (PATH_NP columns):
#   element       as the points'
#   type          PT_WRAP_CYLINDER, PT_WRAP_SPHERE
#   qw..qz        the unit quaternion of R_BW
#   d0, d1, d2    cylinder: radius, length; sphere: radius
#   quadrant      0 (all), +-1, +-2, +-3: wrap only on the side sign(quadrant) of the axis |quadrant|-1
#   start, end    the range of point rows (0-based, within the element, inclusive) the wrap applies to
#
# The path is made as OpenSim makes it: the active points, then for each wrap the segment of the
# range that wraps (the first "mandatory" one, else the one lengthening the path least) gets the two
# tangent points r1, r2 inserted, fixed in the wrap's body; with two or more wraps the passes repeat
# (up to 8) until the length changes by less than 0.5 mm. L adds the straight segments and, between
# a wrap's two tangent points, the length on the surface. Ldot and the forces take the tangent points
# as stations of the wrap body (OpenSim's PathWrapPoint): the segments into and out of the surface
# are tangent to it, so the tension applied there is the -T dL/dq of the wrapped path; a segment
# between two points of one body carries no force (OpenSim's GeometryPath::produceForces).

from libc.math cimport acos, fabs as _wfabs, sqrt as _wsqrt, INFINITY, NAN

cdef enum:
    PT_WRAP_CYLINDER = 4
    PT_WRAP_SPHERE = 5
    WP_QW = 2
    WP_D0 = 6
    WP_QUAD = 9
    WP_START = 10
    WP_END = 11
    PATH_MAXPTS = 64
    WRAP_NONE = 0
    WRAP_INSIDE = 1
    WRAP_WRAPPED = 2
    WRAP_MANDATORY = 3

# OpenSim's constants (SimmMacros.h, WrapMath.cpp, WrapCylinder.cpp)
cdef double _WROUNDOFF = 0.0000000000002
cdef double _WLINE_EPS = 0.00001
cdef double _WEPS = 2.220446049250313e-16
cdef double _WTANGENCY = 0.1 * 3.141592653589793 / 180.0
cdef double _WPI = 3.141592653589793

PATH_CODES.update(wrap_cylinder=PT_WRAP_CYLINDER, wrap_sphere=PT_WRAP_SPHERE)
PATH_WRAP_MAX_POINTS = PATH_MAXPTS


cdef struct PEnt:
    # one entry of the current path: an active point or a tangent point
    idx_t body
    Py_ssize_t row          # the point's row, or the wrap's row for a tangent point
    int wrap                # 0 point, 1 first tangent point, 2 second
    double wlen             # (second tangent point) the length on the surface from the first
    double r[3]             # offset from the body's origin (G)
    double p[3]             # location (G)
    double v[3]             # velocity (G)
    double g[3]             # R_GB dp/dq of a moving point, else 0
    double gl[3]            # the location OpenSim's lengths and directions use (see _ent_gloc)


# ------------------------------------------------------------------ OpenSim's WrapMath, as it computes
cdef inline int _dsign(double a) noexcept nogil:
    return 1 if a >= 0.0 else -1


cdef inline double _norm_or_zero(const double* a, double* out) noexcept nogil:
    cdef double m = _wsqrt(dot3(a, a))
    if m >= _WEPS:
        out[0] = a[0] / m; out[1] = a[1] / m; out[2] = a[2] / m
    else:
        out[0] = 0.0; out[1] = 0.0; out[2] = 0.0
    return m


cdef inline double _dist2(const double* a, const double* b) noexcept nogil:
    return (a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2


cdef inline void _unit(double* a) noexcept nogil:
    # SimTK::UnitVec3(v): v / |v|
    cdef double m = _wsqrt(dot3(a, a))
    a[0] /= m; a[1] /= m; a[2] /= m


cdef double _closest_on_line(const double* pt, const double* line_pt, const double* line, double* out) noexcept nogil:
    # WrapMath::GetClosestPointOnLineToPoint: returns t
    cdef double v1[3]
    cdef double v2[3]
    cdef double d[3]
    cdef double mag, mag2, t
    d[0] = pt[0] - line_pt[0]; d[1] = pt[1] - line_pt[1]; d[2] = pt[2] - line_pt[2]
    mag = _norm_or_zero(d, v1)
    mag2 = _norm_or_zero(line, v2)
    t = dot3(v1, v2) * mag
    out[0] = line_pt[0] + t * v2[0]; out[1] = line_pt[1] + t * v2[1]; out[2] = line_pt[2] + t * v2[2]
    return t / mag2


cdef inline double _det3(const double* a, const double* b, const double* c) noexcept nogil:
    return (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
            + a[2] * (b[0] * c[1] - b[1] * c[0]))


cdef bint _intersect_lines(const double* p1, const double* p2, const double* p3, const double* p4, double* i1,
                           double* s, double* i2, double* t) noexcept nogil:
    # WrapMath::IntersectLines: the closest points i1 (p1 + s (p2 - p1)) and i2 of two lines
    cdef double v1[3]
    cdef double v2[3]
    cdef double d[3]
    cdef double c[3]
    cdef double m1, m2, den
    cdef int k
    for k in range(3):
        d[k] = p2[k] - p1[k]
    m1 = _norm_or_zero(d, v1)
    for k in range(3):
        d[k] = p4[k] - p3[k]
    m2 = _norm_or_zero(d, v2)
    cross3(v1, v2, c)
    den = dot3(c, c)
    if _wfabs(den) <= _WROUNDOFF:
        s[0] = NAN; t[0] = NAN
        return False
    for k in range(3):
        d[k] = p3[k] - p1[k]
    t[0] = _det3(d, v1, c) / den
    s[0] = _det3(d, v2, c) / den
    for k in range(3):
        i2[k] = p3[k] + t[0] * v2[k]
        i1[k] = p1[k] + s[0] * v1[k]
    s[0] /= m1
    t[0] /= m2
    return True


cdef bint _intersect_seg_plane(const double* a, const double* b, const double* n, double d,
                               double* out) noexcept nogil:
    # WrapMath::IntersectLineSegPlane
    cdef double vec[3]
    cdef double dp, t
    vec[0] = b[0] - a[0]; vec[1] = b[1] - a[1]; vec[2] = b[2] - a[2]
    dp = dot3(vec, n)
    if _wfabs(dp) < _WLINE_EPS:
        return False
    t = (-d - n[0] * a[0] - n[1] * a[1] - n[2] * a[2]) / dp
    if t < -_WLINE_EPS or t > 1.0 + _WLINE_EPS:
        return False
    out[0] = a[0] + t * vec[0]; out[1] = a[1] + t * vec[1]; out[2] = a[2] + t * vec[2]
    return True


# ------------------------------------------------------------------ cylinder
cdef double _cyl_spiral(const double* r1, const double* r2, bint far, double radius, double* theta_,
                        double* axial_) noexcept nogil:
    # the helix from r1 to r2 (WrapCylinder::_make_spiral_path): its length; theta and the axial run
    cdef double p0[3]
    cdef double dn[3]
    cdef double r1a[3]
    cdef double r2a[3]
    cdef double uu[3]
    cdef double vv[3]
    cdef double c[3]
    cdef double theta, axial
    cdef int k
    p0[0] = 0.0; p0[1] = 0.0; p0[2] = -1.0
    dn[0] = 0.0; dn[1] = 0.0; dn[2] = 1.0
    _closest_on_line(r1, p0, dn, r1a)
    _closest_on_line(r2, p0, dn, r2a)
    axial = r2a[2] - r1a[2]
    for k in range(3):
        uu[k] = r1[k] - r1a[k]
        vv[k] = r2[k] - r2a[k]
    cross3(uu, vv, c)
    theta = atan2(c[2], dot3(uu, vv))
    if far:
        theta = 2.0 * _WPI - theta
    theta_[0] = theta
    axial_[0] = axial
    return _wsqrt((radius * theta) ** 2 + axial * axial)


cdef inline void _spiral_point(const double* r1, double a, double dz, double* out) noexcept nogil:
    # Rotation(a, z) r1 + z dz
    cdef double c = cos(a), s = sin(a)
    out[0] = c * r1[0] - s * r1[1]
    out[1] = s * r1[0] + c * r1[1]
    out[2] = r1[2] + dz


cdef bint _adjust_tangent(const double* pt, double* r, const double* w) noexcept nogil:
    # WrapCylinder::_adjust_tangent_point: slide r along the axis towards tangency of pt-r
    cdef double dn[3]
    cdef double pr[3]
    cdef double rw[3]
    cdef double d[3]
    cdef double pa[3]
    cdef double wa[3]
    cdef double i1[3]
    cdef double i2[3]
    cdef double s, t
    cdef int k
    dn[0] = 0.0; dn[1] = 0.0; dn[2] = 1.0
    for k in range(3):
        d[k] = r[k] - pt[k]
    _norm_or_zero(d, pr)
    for k in range(3):
        d[k] = w[k] - r[k]
    _norm_or_zero(d, rw)
    if not _wfabs(acos(pr[2]) - acos(rw[2])) > _WTANGENCY:
        return False
    _closest_on_line(pt, r, dn, pa)
    _closest_on_line(w, r, dn, wa)
    i2[0] = r[0]; i2[1] = r[1]; i2[2] = r[2]
    _intersect_lines(pt, w, pa, wa, i1, &s, i2, &t)
    for k in range(3):
        r[k] += 1.5 * (i2[k] - r[k])
    return True


cdef int _wrap_cylinder(const double* P1, const double* P2, double radius, double length, int quad,
                        bint single, double* r1, double* r2, double* wlen) noexcept nogil:
    # WrapCylinder::wrapLine in the cylinder's frame (axis z, centred at the origin)
    cdef double p0[3]
    cdef double dn[3]
    cdef double cs[3]
    cdef double ce[3]
    cdef double near12[3]
    cdef double near00[3]
    cdef double p11[3]
    cdef double p22[3]
    cdef double vv[3]
    cdef double uu[3]
    cdef double pp[3]
    cdef double r1a[3]
    cdef double r1b[3]
    cdef double r2a[3]
    cdef double r2b[3]
    cdef double r1am[3]
    cdef double r1bm[3]
    cdef double r2am[3]
    cdef double r2bm[3]
    cdef double tmp[3]
    cdef double mpt[3]
    cdef double axispt[3]
    cdef double l1[3]
    cdef double l2[3]
    cdef double pn[3]
    cdef double vert1[3]
    cdef double vert2[3]
    cdef double apex1[3]
    cdef double apex2[3]
    cdef double apex[3]
    cdef double r1p[3]
    cdef double r2p[3]
    cdef double sum_musc[3]
    cdef double sum_r[3]
    cdef double w[3]
    cdef double r2sq = radius * radius, t12, t00, t, p11d, p22d, st, dist, alpha, beta, d
    cdef double d1, d2, d3, d4, halfL, theta, axial, seg
    cdef int ax = abs(quad) - 1, sgn = (1 if quad > 0 else -1) if quad != 0 else 0
    cdef int code = WRAP_WRAPPED, k, iters, nseg
    cdef bint constrained = quad != 0, far = False, long_wrap = False, adj1, adj2, i1, i2
    p0[0] = 0.0; p0[1] = 0.0; p0[2] = -1.0
    dn[0] = 0.0; dn[1] = 0.0; dn[2] = 1.0
    wlen[0] = 0.0
    if P1[0] * P1[0] + P1[1] * P1[1] < r2sq or P2[0] * P2[0] + P2[1] * P2[1] < r2sq:
        return WRAP_INSIDE
    cs[0] = 0.0; cs[1] = 0.0; cs[2] = -0.5 * length
    ce[0] = 0.0; ce[1] = 0.0; ce[2] = 0.5 * length
    for k in range(3):
        near12[k] = NAN
        near00[k] = NAN
    _intersect_lines(P1, P2, cs, ce, near12, &t12, near00, &t00)
    if not constrained:
        if _dist2(near12, near00) < r2sq and t12 > 0.0 and t12 < 1.0:
            code = WRAP_MANDATORY
        else:
            return WRAP_NONE
    _closest_on_line(P1, p0, dn, p11)
    _closest_on_line(P2, p0, dn, p22)
    # the tangent point candidates from each end, in the plane across the axis
    for k in range(3):
        tmp[k] = P1[k] - p11[k]
    p11d = _norm_or_zero(tmp, vv)
    st = radius / p11d
    dist = radius * st
    for k in range(3):
        pp[k] = p11[k] + dist * vv[k]
    dist = _wsqrt(r2sq - dist * dist)
    cross3(dn, vv, uu)
    for k in range(3):
        r1a[k] = pp[k] + dist * uu[k]
        r1b[k] = pp[k] - dist * uu[k]
    for k in range(3):
        tmp[k] = P2[k] - p22[k]
    p22d = _norm_or_zero(tmp, vv)
    st = radius / p22d
    dist = radius * st
    for k in range(3):
        pp[k] = p22[k] + dist * vv[k]
    dist = _wsqrt(r2sq - dist * dist)
    cross3(dn, vv, uu)
    for k in range(3):
        r2a[k] = pp[k] + dist * uu[k]
        r2b[k] = pp[k] - dist * uu[k]
    if constrained:
        if _dsign(P1[ax]) == sgn or _dsign(P2[ax]) == sgn:
            if _dist2(near12, near00) < r2sq and t12 > 0.0 and t12 < 1.0:
                code = WRAP_MANDATORY
            elif _dsign(P1[ax]) != _dsign(P2[ax]) and _dsign(near12[ax]) != sgn:
                code = WRAP_WRAPPED
            else:
                return WRAP_NONE
        for k in range(3):
            r1am[k] = r1a[k] - p11[k]
            r1bm[k] = r1b[k] - p11[k]
            r2am[k] = r2a[k] - p22[k]
            r2bm[k] = r2b[k] - p22[k]
        alpha = acos(dot3(r1am, r2bm) / (_wsqrt(dot3(r1am, r1am)) * _wsqrt(dot3(r2bm, r2bm))))
        beta = acos(dot3(r1bm, r2am) / (_wsqrt(dot3(r1bm, r1bm)) * _wsqrt(dot3(r2am, r2am))))
        # which candidates lie on the active side (r1's first, then r2's)
        if _dsign(r1a[ax]) == sgn and _dsign(r1b[ax]) == sgn:
            if _dsign(r2a[ax]) == sgn:
                k = 1
            else:
                k = 0
        elif _dsign(r1a[ax]) == sgn:
            k = 0
        elif _dsign(r1b[ax]) == sgn:
            k = 1
        elif _dsign(r2a[ax]) == sgn:
            k = 1
        elif _dsign(r2b[ax]) == sgn:
            k = 0
        else:
            k = 2
        if k == 1:      # r1b, r2a
            r1[0] = r1b[0]; r1[1] = r1b[1]; r1[2] = r1b[2]
            r2[0] = r2a[0]; r2[1] = r2a[1]; r2[2] = r2a[2]
            far = not alpha > beta
        elif k == 0:    # r1a, r2b
            r1[0] = r1a[0]; r1[1] = r1a[1]; r1[2] = r1a[2]
            r2[0] = r2b[0]; r2[1] = r2b[1]; r2[2] = r2b[2]
            far = alpha > beta
        else:           # none on the active side
            far = True
            if alpha > beta:
                r1[0] = r1a[0]; r1[1] = r1a[1]; r1[2] = r1a[2]
                r2[0] = r2b[0]; r2[1] = r2b[1]; r2[2] = r2b[2]
            else:
                r1[0] = r1b[0]; r1[1] = r1b[1]; r1[2] = r1b[2]
                r2[0] = r2a[0]; r2[1] = r2a[1]; r2[2] = r2a[2]
        for k in range(3):
            sum_musc[k] = (r1[k] - P1[k]) + (r2[k] - P2[k])
            sum_r[k] = (r1[k] - p11[k]) + (r2[k] - p22[k])
        long_wrap = dot3(sum_r, sum_musc) < 0.0
    else:
        for k in range(3):
            tmp[k] = r1a[k] - p11[k]
        _norm_or_zero(tmp, r1am)
        for k in range(3):
            tmp[k] = r1b[k] - p11[k]
        _norm_or_zero(tmp, r1bm)
        for k in range(3):
            tmp[k] = r2a[k] - p22[k]
        _norm_or_zero(tmp, r2am)
        for k in range(3):
            tmp[k] = r2b[k] - p22[k]
        _norm_or_zero(tmp, r2bm)
        d1 = dot3(r1am, r2am)
        d2 = dot3(r1am, r2bm)
        d3 = dot3(r1bm, r2am)
        d4 = dot3(r1bm, r2bm)
        if d1 > d2 and d1 > d3 and d1 > d4:
            r1[0] = r1a[0]; r1[1] = r1a[1]; r1[2] = r1a[2]
            r2[0] = r2a[0]; r2[1] = r2a[1]; r2[2] = r2a[2]
        elif d2 > d3 and d2 > d4:
            r1[0] = r1a[0]; r1[1] = r1a[1]; r1[2] = r1a[2]
            r2[0] = r2b[0]; r2[1] = r2b[1]; r2[2] = r2b[2]
        elif d3 > d4:
            r1[0] = r1b[0]; r1[1] = r1b[1]; r1[2] = r1b[2]
            r2[0] = r2a[0]; r2[1] = r2a[1]; r2[2] = r2a[2]
        else:
            r1[0] = r1b[0]; r1[1] = r1b[1]; r1[2] = r1b[2]
            r2[0] = r2b[0]; r2[1] = r2b[1]; r2[2] = r2b[2]
    # the apex: where the plane of P1, P2 and the axis point under the path meets the surface
    t = p11d / (p11d + p22d)
    for k in range(3):
        mpt[k] = P1[k] + t * (P2[k] - P1[k])
    _closest_on_line(mpt, p0, dn, axispt)
    for k in range(3):
        tmp[k] = P1[k] - axispt[k]
    _norm_or_zero(tmp, l1)
    for k in range(3):
        tmp[k] = P2[k] - axispt[k]
    _norm_or_zero(tmp, l2)
    cross3(l1, l2, tmp)
    _unit(tmp)
    _norm_or_zero(tmp, pn)
    cross3(dn, pn, tmp)
    _norm_or_zero(tmp, vert1)
    cross3(pn, dn, tmp)
    _norm_or_zero(tmp, vert2)
    for k in range(3):
        apex1[k] = axispt[k] + radius * vert1[k]
        apex2[k] = axispt[k] + radius * vert2[k]
    if (_dist2(mpt, apex1) < _dist2(mpt, apex2)) != far:
        apex[0] = apex1[0]; apex[1] = apex1[1]; apex[2] = apex1[2]
    else:
        apex[0] = apex2[0]; apex[1] = apex2[1]; apex[2] = apex2[2]
    # slide r1, r2 along the surface lines to the plane of P1, P2 and the apex
    for k in range(3):
        tmp[k] = P1[k] - apex[k]
    _norm_or_zero(tmp, uu)
    for k in range(3):
        tmp[k] = P2[k] - apex[k]
    _norm_or_zero(tmp, vv)
    cross3(uu, vv, pn)
    _unit(pn)
    d = -P1[0] * pn[0] - P1[1] * pn[1] - P1[2] * pn[2]
    for k in range(3):
        r1a[k] = r1[k] - 10.0 * dn[k]
        r2a[k] = r2[k] - 10.0 * dn[k]
        r1b[k] = r1[k] + 10.0 * dn[k]
        r2b[k] = r2[k] + 10.0 * dn[k]
    i1 = _intersect_seg_plane(r1a, r1b, pn, d, r1p)
    i2 = _intersect_seg_plane(r2a, r2b, pn, d, r2p)
    if i1:
        # (OpenSim passes p22 as the line's direction here: the axis, as p22 lies on it)
        _closest_on_line(r1p, p11, p22, r1a)
        if _dist2(r1a, p22) < _dist2(p11, p22):
            r1[0] = r1p[0]; r1[1] = r1p[1]; r1[2] = r1p[2]
    if i2:
        _closest_on_line(r2p, p11, p22, r2a)
        if _dist2(r2a, p11) < _dist2(p22, p11):
            r2[0] = r2p[0]; r2[1] = r2p[1]; r2[2] = r2p[2]
    halfL = 0.5 * length
    if (r1[2] < -halfL or r1[2] > halfL) and (r2[2] < -halfL or r2[2] > halfL):
        return WRAP_NONE
    # the helix; with more than one wrap on the path OpenSim also slides r1, r2 axially until the
    # helix leaves them within 0.1 degree of the straight segments' directions
    iters = 0
    while True:
        wlen[0] = _cyl_spiral(r1, r2, long_wrap, radius, &theta, &axial)
        if single:
            break
        nseg = <int>(wlen[0] / 0.002)
        if nseg < 2 or iters >= 100:
            break
        seg = 1.0 / nseg
        _spiral_point(r1, (-1.0 if long_wrap else 1.0) * seg * theta, seg * axial, w)
        adj1 = _adjust_tangent(P1, r1, w)
        _spiral_point(r1, (-1.0 if long_wrap else 1.0) * (1.0 - seg) * theta, (1.0 - seg) * axial, w)
        adj2 = _adjust_tangent(P2, r2, w)
        if not (adj1 or adj2):
            break
        iters += 1
    return code


# ------------------------------------------------------------------ sphere
cdef int _wrap_sphere(const double* P1, const double* P2, double radius, int quad, double* r1, double* r2,
                      double* wlen) noexcept nogil:
    # WrapSphere::wrapLine in the sphere's frame (centred at the origin)
    cdef double ri[3]
    cdef double p1p2[3]
    cdef double np2[3]
    cdef double hp2[3]
    cdef double n[3]
    cdef double y[3]
    cdef double z[3]
    cdef double tmp[3]
    cdef double r1a[3]
    cdef double r1b[3]
    cdef double r2a[3]
    cdef double r2b[3]
    cdef double r1am[3]
    cdef double r1bm[3]
    cdef double r2am[3]
    cdef double r2bm[3]
    cdef double r11[3]
    cdef double r22[3]
    cdef double mm[3]
    cdef double org[3]
    cdef double sum_musc[3]
    cdef double sum_r[3]
    cdef double r1n[3]
    cdef double r2n[3]
    cdef double a, b, c, disc, l1, l2, m1, m2, a1, a2, j1, j2, j3, j4, tt, angle
    cdef int ax = abs(quad) - 1, sgn = (1 if quad > 0 else -1) if quad != 0 else 0
    cdef int code = WRAP_WRAPPED, k
    cdef bint far = False
    wlen[0] = 0.0
    m1 = _wsqrt(dot3(P1, P1))
    m2 = _wsqrt(dot3(P2, P2))
    if m1 < radius or m2 < radius:
        return WRAP_INSIDE
    for k in range(3):
        ri[k] = P1[k] - P2[k]
        org[k] = 0.0
    a = dot3(ri, ri)
    b = 2.0 * dot3(P2, ri)        # -2 (origin - P2) . ri
    c = dot3(P2, P2) - radius * radius
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        return WRAP_NONE
    l1 = (-b + _wsqrt(disc)) / (2.0 * a)
    l2 = (-b - _wsqrt(disc)) / (2.0 * a)
    if not (0.0 < l1 and l1 < 1.0) or not (0.0 < l2 and l2 < 1.0) or l1 < l2:
        return WRAP_NONE
    _norm_or_zero(ri, p1p2)
    _norm_or_zero(P2, np2)
    cross3(p1p2, np2, hp2)
    if _wsqrt(dot3(hp2, hp2)) < 0.00001:
        # through the centre: OpenSim reuses the tangent points of its previous wrap (a history
        # simtk's State has not); no wrap here
        return WRAP_NONE
    _norm_or_zero(hp2, n)
    # the tangent candidates from P1: in the plane of n, at angle asin(R/|P1|) from P1's line to the centre
    for k in range(3):
        tmp[k] = -P1[k]
    _norm_or_zero(tmp, y)
    cross3(n, y, z)
    a1 = asin(radius / m1)
    for k in range(3):
        r1a[k] = P1[k] + (y[k] * cos(a1) - z[k] * sin(a1)) * m1 * cos(a1)
        r1b[k] = P1[k] + (y[k] * cos(-a1) - z[k] * sin(-a1)) * m1 * cos(a1)
    for k in range(3):
        tmp[k] = -P2[k]
    _norm_or_zero(tmp, y)
    cross3(n, y, z)
    a2 = asin(radius / m2)
    for k in range(3):
        r2a[k] = P2[k] + (y[k] * cos(a2) - z[k] * sin(a2)) * m2 * cos(a2)
        r2b[k] = P2[k] + (y[k] * cos(-a2) - z[k] * sin(-a2)) * m2 * cos(a2)
    _norm_or_zero(r1a, r1am)
    _norm_or_zero(r1b, r1bm)
    _norm_or_zero(r2a, r2am)
    _norm_or_zero(r2b, r2bm)
    j1 = dot3(r1am, r2am)
    j2 = dot3(r1am, r2bm)
    j3 = dot3(r1bm, r2am)
    j4 = dot3(r1bm, r2bm)
    for k in range(3):
        if j1 > j2 and j1 > j3 and j1 > j4:
            r1[k] = r1a[k]; r2[k] = r2a[k]; r11[k] = r1b[k]; r22[k] = r2b[k]
        elif j2 > j3 and j2 > j4:
            r1[k] = r1a[k]; r2[k] = r2b[k]; r11[k] = r1b[k]; r22[k] = r2a[k]
        elif j3 > j4:
            r1[k] = r1b[k]; r2[k] = r2a[k]; r11[k] = r1a[k]; r22[k] = r2b[k]
        else:
            r1[k] = r1b[k]; r2[k] = r2b[k]; r11[k] = r1a[k]; r22[k] = r2a[k]
    if sgn != 0:
        if _dsign(P1[ax]) == sgn or _dsign(P2[ax]) == sgn:
            tt = -_closest_on_line(org, P1, p1p2, mm)
            if _dist2(org, mm) < radius * radius and tt > 0.0 and tt < 1.0:
                code = WRAP_MANDATORY
            elif _dsign(P1[ax]) != _dsign(P2[ax]) and _dsign(mm[ax]) != sgn:
                code = WRAP_WRAPPED
            else:
                return WRAP_NONE
        if _dsign(P1[ax]) != sgn or _dsign(P2[ax]) != sgn:
            for k in range(3):
                tmp[k] = -P1[k] - P2[k]
            _norm_or_zero(tmp, sum_musc)
            if dot3(r1am, sum_musc) > dot3(r1bm, sum_musc):
                for k in range(3):
                    r1[k] = r1a[k]; r11[k] = r1b[k]
            else:
                for k in range(3):
                    r1[k] = r1b[k]; r11[k] = r1a[k]
            if dot3(r2am, sum_musc) > dot3(r2bm, sum_musc):
                for k in range(3):
                    r2[k] = r2a[k]; r22[k] = r2b[k]
            else:
                for k in range(3):
                    r2[k] = r2b[k]; r22[k] = r2a[k]
            for k in range(3):
                tmp[k] = (r1[k] - P1[k]) + (r2[k] - P2[k])
            _norm_or_zero(tmp, sum_musc)
            if sum_musc[ax] * sgn < 0.0:
                for k in range(3):
                    r1[k] = r11[k]; r2[k] = r22[k]
            for k in range(3):
                sum_musc[k] = (r1[k] - P1[k]) + (r2[k] - P2[k])
                sum_r[k] = r1[k] + r2[k]
            far = dot3(sum_r, sum_musc) < 0.0
    _norm_or_zero(r1, r1n)
    _norm_or_zero(r2, r2n)
    angle = acos(dot3(r1n, r2n))
    if far:
        # (OpenSim's sign: a far-side wrap's length on the sphere counts negative)
        angle = -(2.0 * _WPI - angle)
    wlen[0] = radius * angle
    return code


