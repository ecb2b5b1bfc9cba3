# Contact detection: broad phase and exact narrow phases between the contact
# shapes of simtk.multibody.contact.geometry (issue 12).
#
# Every surface is a shape in its frame S, given by a code, three parameters
# and X_GS = (R_GS row-major, p_GS). For a pair (A, B) the penetration depth is
#
#     depth = min over unit n of  h_A(n) + h_B(-n),   h_X(n) = max_{x in X} x.n
#
# (h_A(n) + h_B(-n) = h_K(n) is the support function of the Minkowski
# difference K = A - B; the pair overlaps when the origin is inside K and depth
# is then the distance from the origin to K's boundary). The minimizing n is
# the contact normal, pointing from A into B (the direction B is pushed); the
# deepest points are a = s_A(n) and b = s_B(-n) with a - b = depth n, and the
# contact point is their midpoint.
#
# Every narrow phase only finds n; depth, points and radii of curvature then
# come from the shapes' support features along n (finalize_contact), so all
# pairs share one definition of what is reported. A flat pair (a brick or a
# capsule on a half-space, a brick or a capsule on a brick's face) reports
# instead a manifold of several contacts with the same n (flat_manifold).
# Narrow phases (A.code <= B.code):
#   HalfSpace-X         n = the plane's outward normal (exact);
#   Sphere/Capsule      closest points of the axis segments (exact);
#   Sphere/Capsule-Brick  segment-box distance, or when the segment meets the
#                       box, the separating-axis minimum over the box's face
#                       normals and axis x face normals (exact);
#   Brick-Brick         separating-axis minimum over 15 axes (exact);
#   X-Ellipsoid, X-Cylinder, X-ConvexHull
#                       EPA on K's support function (iterative, EPA_REL_TOL).
# Cylinder and ConvexHull (their support functions, features, boxes and
# half-space manifolds) are in core/contact_shapes.pxi.
#
# Broad phase: sort-and-sweep on world AABBs along the axis of largest spread,
# in strips across the second axis (detect_kernel), O(n log n + pairs);
# half-spaces are unbounded and tested against every bounded surface.

from libc.stdlib cimport malloc, free, qsort
from libc.math cimport sqrt, fabs, INFINITY

cdef enum:
    CS_HALFSPACE = 0
    CS_SPHERE = 1
    CS_CAPSULE = 2
    CS_BRICK = 3
    CS_ELLIPSOID = 4
    CS_CYLINDER = 5
    CS_HULL = 6
    CS_NUM = 7

# name -> (code, number of used parameters)
CONTACT_SHAPES = {
    "HalfSpace": (CS_HALFSPACE, 0),
    "Sphere": (CS_SPHERE, 1),
    "Capsule": (CS_CAPSULE, 2),
    "Brick": (CS_BRICK, 3),
    "Ellipsoid": (CS_ELLIPSOID, 3),
    "Cylinder": (CS_CYLINDER, 2),
    # (size: the largest vertex distance from the frame's origin, vertex count, first vertex): the
    # vertices are in a separate array (core/contact_shapes.pxi)
    "ConvexHull": (CS_HULL, 3),
}

# A direction cosine below this counts as perpendicular when picking a support
# feature: a brick face within 1e-9 rad of facing n is reported as a face (its
# centroid), not as its deepest vertex. Depth always uses the exact support value.
cdef double SUPPORT_TIE = 1e-9

# EPA stops when the upper and lower bounds on the depth differ by less than
# EPA_REL_TOL times the pair's size (largest shape parameter).
EPA_REL_TOL = 1e-9
cdef double C_EPA_REL_TOL = 1e-9

cdef enum:
    EPA_MAXV = 256
    EPA_MAXF = 1024
    EPA_MAXE = 3 * 1024


cdef struct CShape:
    int code
    const double* prm
    const double* R     # R_GS, row-major: column j is S's axis j in G
    const double* p
    const double* V     # CS_HULL: its nv vertices in S (3 doubles each), else NULL
    int nv


cdef struct Feature:
    # The supporting feature of a shape along a direction: its centroid, its
    # dimension (0 point, 1 segment, 2 face, 3 the half-space plane), its free
    # directions (unit, in G) with half-lengths, and the radius of curvature.
    double pt[3]
    int dim
    double ax[6]
    double half[2]
    double radius


cdef inline void col3(const double* R, int j, double* out) noexcept nogil:
    out[0] = R[j]; out[1] = R[3 + j]; out[2] = R[6 + j]


cdef inline double norm3(const double* a) noexcept nogil:
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


cdef inline void any_perpendicular(const double* u, double* out) noexcept nogil:
    # A unit vector perpendicular to u: u crossed with the axis it is least aligned with.
    cdef double e[3]
    cdef double m
    e[0] = 0.0; e[1] = 0.0; e[2] = 0.0
    if fabs(u[0]) <= fabs(u[1]) and fabs(u[0]) <= fabs(u[2]):
        e[0] = 1.0
    elif fabs(u[1]) <= fabs(u[2]):
        e[1] = 1.0
    else:
        e[2] = 1.0
    cross3(u, e, out)
    m = norm3(out)
    if m == 0.0:
        out[0] = 0.0; out[1] = 0.0; out[2] = 1.0
        return
    out[0] /= m; out[1] /= m; out[2] /= m


# ---------------------------------------------------------------------------
# Support functions
# ---------------------------------------------------------------------------

cdef double support_value(const CShape* s, const double* n) noexcept nogil:
    # h_S(n) = p.n + h_local(R^T n). The half-space is only ever asked along its
    # outward normal, where h is the plane's offset.
    cdef double d[3]
    cdef const double* q = s.prm
    cdef double h = dot3(s.p, n)
    if s.code == CS_HALFSPACE:
        return h
    if s.code == CS_SPHERE:
        return h + q[0] * norm3(n)
    mat33T_vec(s.R, n, d)
    if s.code == CS_CAPSULE:
        return h + q[0] * norm3(n) + q[1] * fabs(d[2])
    if s.code == CS_BRICK:
        return h + q[0] * fabs(d[0]) + q[1] * fabs(d[1]) + q[2] * fabs(d[2])
    if s.code == CS_CYLINDER:
        return h + q[0] * sqrt(d[0] * d[0] + d[1] * d[1]) + q[1] * fabs(d[2])
    if s.code == CS_HULL:
        return h + hull_max(s, d, NULL)
    return h + sqrt(q[0] * q[0] * d[0] * d[0] + q[1] * q[1] * d[1] * d[1] + q[2] * q[2] * d[2] * d[2])


cdef void support_point(const CShape* s, const double* n, double* out) noexcept nogil:
    # Any point of S where x.n = h_S(n) (n unit); ties broken towards the centre.
    cdef Feature f
    support_feature(s, n, &f)
    out[0] = f.pt[0]; out[1] = f.pt[1]; out[2] = f.pt[2]


cdef double support_feature(const CShape* s, const double* n, Feature* f) noexcept nogil:
    # The supporting feature of S along unit n; returns h_S(n).
    cdef double d[3]
    cdef double x[3]
    cdef double g[3]
    cdef const double* q = s.prm
    cdef double hl, sg
    cdef int i
    f.dim = 0
    f.radius = INFINITY
    if s.code == CS_HALFSPACE:
        f.pt[0] = s.p[0]; f.pt[1] = s.p[1]; f.pt[2] = s.p[2]
        f.dim = 3
        return dot3(s.p, n)
    if s.code >= CS_CYLINDER:
        return support_feature_more(s, n, f)
    mat33T_vec(s.R, n, d)
    if s.code == CS_SPHERE:
        for i in range(3):
            f.pt[i] = s.p[i] + q[0] * n[i]
        f.radius = q[0]
        return dot3(s.p, n) + q[0]
    if s.code == CS_CAPSULE:
        # a cap's pole when n leans along the axis, else the side line; the radius is r
        # either way: a capsule is the union of the spheres of radius r centred on its
        # axis, and a contact is that of the sphere centred at the nearest axis point
        col3(s.R, 2, g)
        sg = 0.0
        f.radius = q[0]
        if d[2] > SUPPORT_TIE:
            sg = 1.0
        elif d[2] < -SUPPORT_TIE:
            sg = -1.0
        else:
            f.dim = 1
            f.ax[0] = g[0]; f.ax[1] = g[1]; f.ax[2] = g[2]
            f.half[0] = q[1]
        for i in range(3):
            f.pt[i] = s.p[i] + sg * q[1] * g[i] + q[0] * n[i]
        return dot3(s.p, n) + q[0] + q[1] * fabs(d[2])
    if s.code == CS_BRICK:
        # brick: flat faces (radius inf); edges and vertices are reported flat too
        for i in range(3):
            f.pt[i] = s.p[i]
        for i in range(3):
            col3(s.R, i, g)
            if d[i] > SUPPORT_TIE:
                sg = q[i]
            elif d[i] < -SUPPORT_TIE:
                sg = -q[i]
            else:
                sg = 0.0
                if f.dim < 2:
                    f.ax[3 * f.dim] = g[0]; f.ax[3 * f.dim + 1] = g[1]; f.ax[3 * f.dim + 2] = g[2]
                    f.half[f.dim] = q[i]
                f.dim += 1
            f.pt[0] += sg * g[0]; f.pt[1] += sg * g[1]; f.pt[2] += sg * g[2]
        if f.dim > 2:       # n = 0 cannot happen for unit n; keep the struct sane
            f.dim = 2
        return dot3(s.p, n) + q[0] * fabs(d[0]) + q[1] * fabs(d[1]) + q[2] * fabs(d[2])
    # ellipsoid: x = diag(a^2) d / sqrt(d^T diag(a^2) d); Gaussian curvature h^4 / (abc)^2,
    # so the geometric mean of the principal radii is abc / h^2
    hl = sqrt(q[0] * q[0] * d[0] * d[0] + q[1] * q[1] * d[1] * d[1] + q[2] * q[2] * d[2] * d[2])
    x[0] = q[0] * q[0] * d[0] / hl
    x[1] = q[1] * q[1] * d[1] / hl
    x[2] = q[2] * q[2] * d[2] / hl
    mat33_vec(s.R, x, g)
    for i in range(3):
        f.pt[i] = s.p[i] + g[i]
    f.radius = q[0] * q[1] * q[2] / (hl * hl)
    return dot3(s.p, n) + hl


# ---------------------------------------------------------------------------
# Closest points of two segments
# ---------------------------------------------------------------------------

cdef inline double clampd(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef void segment_closest(const double* cA, const double* uA, double LA,
                          const double* cB, const double* uB, double LB,
                          double* P, double* Q) noexcept nogil:
    # Minimize |cA + s uA - cB - t uB|^2 over |s| <= LA, |t| <= LB (u unit, or
    # L = 0 for a point). Stationarity: s - b t = -d, -b s + t = e with
    # b = uA.uB, d = uA.w, e = uB.w, w = cA - cB. Clamping s, recomputing t from
    # it, clamping t and recomputing s is exact for this convex problem on a
    # rectangle. For parallel segments the minimizers form an interval and s
    # is taken at the middle of the overlap, so that two capsules lying side by
    # side touch at the middle of their common part.
    cdef double w[3]
    cdef double b, d, e, den, s = 0.0, t = 0.0, lo, hi, t1, t2
    cdef int i
    for i in range(3):
        w[i] = cA[i] - cB[i]
    d = dot3(uA, w) if LA > 0.0 else 0.0
    e = dot3(uB, w) if LB > 0.0 else 0.0
    if LA > 0.0 and LB > 0.0:
        b = dot3(uA, uB)
        den = 1.0 - b * b
        if den > 1e-12:
            s = clampd((b * e - d) / den, -LA, LA)
        else:
            # parallel: B's ends seen on A's axis are at s = b t - d
            t1 = -b * LB - d
            t2 = b * LB - d
            lo = t1 if t1 < t2 else t2
            hi = t2 if t1 < t2 else t1
            if lo < -LA:
                lo = -LA
            if hi > LA:
                hi = LA
            s = 0.5 * (lo + hi) if lo <= hi else (LA if lo > LA else -LA)
        t = clampd(e + b * s, -LB, LB)
        s = clampd(b * t - d, -LA, LA)
    elif LA > 0.0:
        s = clampd(-d, -LA, LA)
    elif LB > 0.0:
        t = clampd(e, -LB, LB)
    for i in range(3):
        P[i] = cA[i] + (s * uA[i] if LA > 0.0 else 0.0)
        Q[i] = cB[i] + (t * uB[i] if LB > 0.0 else 0.0)


cdef inline void as_segment(const CShape* s, double* u, double* L, double* r) noexcept nogil:
    # A sphere or a capsule as (axis segment, radius)
    r[0] = s.prm[0]
    if s.code == CS_CAPSULE:
        col3(s.R, 2, u)
        L[0] = s.prm[1]
    else:
        u[0] = 0.0; u[1] = 0.0; u[2] = 1.0
        L[0] = 0.0


# ---------------------------------------------------------------------------
# Normals of the closed-form pairs
# ---------------------------------------------------------------------------

cdef int normal_round_round(const CShape* A, const CShape* B, double* n, double* gap) noexcept nogil:
    # Sphere/Capsule pairs: K = (segA - segB) + ball(rA + rB). With the closest
    # points P, Q at distance dist the depth is rA + rB - dist along (Q - P);
    # when the segments cross (dist = 0) K's nearest boundary is along the
    # normal of the plane of both axes, at depth rA + rB. Apart: gap = the
    # separation dist - rA - rB (exact).
    cdef double uA[3]
    cdef double uB[3]
    cdef double P[3]
    cdef double Q[3]
    cdef double D[3]
    cdef double LA, LB, rA, rB, dist
    cdef int i
    as_segment(A, uA, &LA, &rA)
    as_segment(B, uB, &LB, &rB)
    segment_closest(A.p, uA, LA, B.p, uB, LB, P, Q)
    for i in range(3):
        n[i] = Q[i] - P[i]
    dist = norm3(n)
    if dist >= rA + rB:
        gap[0] = dist - rA - rB
        return 0
    if dist > 1e-300:
        n[0] /= dist; n[1] /= dist; n[2] /= dist
        return 1
    for i in range(3):
        D[i] = B.p[i] - A.p[i]
    if LA > 0.0 and LB > 0.0:
        cross3(uA, uB, n)
        dist = norm3(n)
        if dist > 1e-12:
            n[0] /= dist; n[1] /= dist; n[2] /= dist
        else:
            any_perpendicular(uA, n)
    elif LA > 0.0:
        any_perpendicular(uA, n)
    elif LB > 0.0:
        any_perpendicular(uB, n)
    else:
        n[0] = 0.0; n[1] = 0.0; n[2] = 1.0
    if dot3(n, D) < 0.0:
        n[0] = -n[0]; n[1] = -n[1]; n[2] = -n[2]
    return 1


cdef double box_gap2(const double* x, const double* h) noexcept nogil:
    # squared distance from local point x to the box |x_i| <= h_i
    cdef double g = 0.0, e
    cdef int i
    for i in range(3):
        e = fabs(x[i]) - h[i]
        if e > 0.0:
            g += e * e
    return g


cdef int normal_round_brick(const CShape* A, const CShape* B, double* n, double* gap) noexcept nogil:
    # Sphere or Capsule A against Brick B. In B's frame the axis segment is
    # x(t) = m + t u, |t| <= L; its squared distance to the box,
    # g(t) = sum_i max(|x_i(t)| - h_i, 0)^2, is convex and piecewise quadratic
    # with breaks where x_i(t) = +-h_i: minimized exactly piece by piece.
    # If the segment stays outside (dist > 0) the normal is from its closest
    # point to the box's; if it meets the box, K = segment - box is a polytope
    # whose facet normals are the box's face normals and u x (box axes), and
    # the depth is r + the least support value among them (separating axes).
    # Apart: gap = the separation dist - r (exact).
    cdef double uG[3]
    cdef double u[3]
    cdef double m[3]
    cdef double x[3]
    cdef double q[3]
    cdef double w[3]
    cdef double e[3]
    cdef double c[3]
    cdef double brk[8]
    cdef const double* h = B.prm
    cdef double L, r, t0, t1, tm, a2, a1, ts, best_t = 0.0, best_g = INFINITY, g, sg, dist, v, best_v
    cdef int nb = 0, i, j, k
    as_segment(A, uG, &L, &r)
    for i in range(3):
        w[i] = A.p[i] - B.p[i]
    mat33T_vec(B.R, w, m)
    mat33T_vec(B.R, uG, u)
    brk[nb] = -L; nb += 1
    if L > 0.0:
        for i in range(3):
            if u[i] != 0.0:
                for j in range(2):
                    sg = 2.0 * j - 1.0
                    ts = (sg * h[i] - m[i]) / u[i]
                    if -L < ts < L:
                        brk[nb] = ts; nb += 1
    brk[nb] = L; nb += 1
    # insertion sort of at most 8 breaks
    for i in range(1, nb):
        v = brk[i]
        j = i - 1
        while j >= 0 and brk[j] > v:
            brk[j + 1] = brk[j]
            j -= 1
        brk[j + 1] = v
    for k in range(nb - 1 if nb > 1 else 1):
        t0 = brk[k]
        t1 = brk[k + 1] if nb > 1 else brk[k]
        tm = 0.5 * (t0 + t1)
        # on this piece the active coordinates and their sides are fixed
        a2 = 0.0
        a1 = 0.0
        for i in range(3):
            v = m[i] + tm * u[i]
            if fabs(v) > h[i]:
                sg = h[i] if v > 0.0 else -h[i]
                a2 += u[i] * u[i]
                a1 += u[i] * (m[i] - sg)
        ts = clampd(-a1 / a2, t0, t1) if a2 > 1e-300 else tm
        for i in range(3):
            x[i] = m[i] + ts * u[i]
        g = box_gap2(x, h)
        if g < best_g:
            best_g = g
            best_t = ts
    for i in range(3):
        x[i] = m[i] + best_t * u[i]
        q[i] = clampd(x[i], -h[i], h[i])
        w[i] = q[i] - x[i]
    dist = norm3(w)
    if dist >= r:
        gap[0] = dist - r
        return 0
    if dist > 0.0:
        w[0] /= dist; w[1] /= dist; w[2] /= dist
        mat33_vec(B.R, w, n)
        return 1
    # the segment meets the box: least support value of K over candidate facet normals
    best_v = INFINITY
    for k in range(6):
        if k < 3:
            col3(B.R, k, c)
        else:
            col3(B.R, k - 3, e)
            cross3(uG, e, c)
            v = norm3(c)
            if L == 0.0 or v < 1e-9:
                continue
            c[0] /= v; c[1] /= v; c[2] /= v
        for j in range(2):
            sg = 2.0 * j - 1.0
            e[0] = sg * c[0]; e[1] = sg * c[1]; e[2] = sg * c[2]
            v = support_value(A, e) + support_value(B, e) - 2.0 * dot3(B.p, e)
            if v < best_v:
                best_v = v
                n[0] = e[0]; n[1] = e[1]; n[2] = e[2]
    return 1


cdef int normal_brick_brick(const CShape* A, const CShape* B, double* n, double* gap) noexcept nogil:
    # K = A - B is a polytope whose facet normals are among A's 3 axes, B's 3
    # axes and their 9 cross products; with the origin inside K the depth is
    # the least h_K over them (separating-axis theorem), exact.
    # h_K(n) = (pA - pB).n + sum hA_i |n.a_i| + sum hB_j |n.b_j|, least over
    # +-n when n points from A to B. Apart: gap = the largest separation along
    # the 15 axes, a lower bound of the distance (equal to it when the closest
    # features are a face and a vertex or two crossing edges), exact in sign.
    cdef double a[3]
    cdef double b[3]
    cdef double c[3]
    cdef double D[3]
    cdef double best = INFINITY, v, m, dd
    cdef int i, j, k
    for i in range(3):
        D[i] = A.p[i] - B.p[i]
    for k in range(15):
        if k < 3:
            col3(A.R, k, c)
        elif k < 6:
            col3(B.R, k - 3, c)
        else:
            col3(A.R, (k - 6) // 3, a)
            col3(B.R, (k - 6) % 3, b)
            cross3(a, b, c)
            m = norm3(c)
            if m < 1e-9:        # parallel edges: their axis is already a face normal
                continue
            c[0] /= m; c[1] /= m; c[2] /= m
        v = 0.0
        for j in range(3):
            col3(A.R, j, a)
            col3(B.R, j, b)
            v += A.prm[j] * fabs(dot3(c, a)) + B.prm[j] * fabs(dot3(c, b))
        dd = dot3(D, c)
        v -= fabs(dd)
        if v < best:
            best = v
            if dd > 0.0:
                n[0] = -c[0]; n[1] = -c[1]; n[2] = -c[2]
            else:
                n[0] = c[0]; n[1] = c[1]; n[2] = c[2]
    gap[0] = -best
    return 1 if best > 0.0 else 0


# ---------------------------------------------------------------------------
# EPA on the Minkowski difference, for the pairs with an ellipsoid
# ---------------------------------------------------------------------------

cdef inline double support_K(const CShape* A, const CShape* B, const double* n, double* out) noexcept nogil:
    # s_K(n) = s_A(n) - s_B(-n); returns h_K(n) = s_K(n).n
    cdef double a[3]
    cdef double b[3]
    cdef double mn[3]
    mn[0] = -n[0]; mn[1] = -n[1]; mn[2] = -n[2]
    support_point(A, n, a)
    support_point(B, mn, b)
    out[0] = a[0] - b[0]; out[1] = a[1] - b[1]; out[2] = a[2] - b[2]
    return dot3(out, n)


cdef inline void epa_face(const double* V, const int* F, double* fn, double* fd, int f) noexcept nogil:
    cdef const double* p0 = V + 3 * F[3 * f]
    cdef const double* p1 = V + 3 * F[3 * f + 1]
    cdef const double* p2 = V + 3 * F[3 * f + 2]
    cdef double e1[3]
    cdef double e2[3]
    cdef double m
    cdef int i
    for i in range(3):
        e1[i] = p1[i] - p0[i]
        e2[i] = p2[i] - p0[i]
    cross3(e1, e2, fn + 3 * f)
    m = norm3(fn + 3 * f)
    if m < 1e-300:
        fd[f] = INFINITY        # a degenerate sliver is never the nearest face
        return
    for i in range(3):
        fn[3 * f + i] /= m
    fd[f] = dot3(fn + 3 * f, p0)


cdef int normal_epa(const CShape* A, const CShape* B, double scale, double* n) noexcept nogil:
    # Expanding polytope (van den Bergen's EPA) on K = A - B, started from an
    # octahedron around K's centre c = pA - pB (every shape but a hull is
    # centrally symmetric, so c + v on K's boundary implies c - v on it too; a
    # pair with a hull starts from a tetrahedron of support points). Faces are
    # kept with signed distances from the origin: while the origin is outside
    # the polytope the nearest face has a negative distance and expanding it
    # moves the polytope over the origin, so no GJK start is needed. Every
    # polytope lies inside K, so min face distance <= depth <= h_K(n) for any
    # queried n; we stop when the two bounds meet within tol, and report the
    # queried n of least h_K. h_K(n) <= 0 for some n means A and B are apart.
    cdef double V[3 * EPA_MAXV]
    cdef int F[3 * EPA_MAXF]
    cdef double fn[3 * EPA_MAXF]
    cdef double fd[EPA_MAXF]
    cdef char alive[EPA_MAXF]
    cdef int E[2 * EPA_MAXE]
    cdef double c[3]
    cdef double u[3]
    cdef double v[3]
    cdef double w[3]
    cdef double d[3]
    cdef double s[3]
    cdef double tol = C_EPA_REL_TOL * scale, best_h = INFINITY, h, m, lo
    cdef int nv, nf, ne, i, j, k, f, it, a0, a1, a2, found, sgn
    cdef int fi, fj, fk
    shape_centre(A, u)
    shape_centre(B, v)
    for i in range(3):
        c[i] = u[i] - v[i]
    # quick exit along the centres' line (the broad phase's false positives)
    m = norm3(c)
    if m > 0.0:
        d[0] = -c[0] / m; d[1] = -c[1] / m; d[2] = -c[2] / m
        h = support_K(A, B, d, s)
        if h <= 0.0:
            return 0
        best_h = h
        n[0] = d[0]; n[1] = d[1]; n[2] = d[2]
    if A.code == CS_HULL or B.code == CS_HULL:
        # not centrally symmetric: start from a tetrahedron of K's support points instead
        nv = epa_tetra_start(A, B, V, F)
        if nv == 0:
            return 1 if best_h > 0.0 else 0
        nf = 4
        for i in range(4):
            alive[i] = 1
            epa_face(V, F, fn, fd, i)
    else:
        # three independent half-diagonals: u along x; v along a direction
        # perpendicular to u; w along u x v (each has a positive component along its
        # direction that the previous ones lack)
        d[0] = 1.0; d[1] = 0.0; d[2] = 0.0
        support_K(A, B, d, s)
        for i in range(3):
            u[i] = s[i] - c[i]
        any_perpendicular(u, d)
        support_K(A, B, d, s)
        for i in range(3):
            v[i] = s[i] - c[i]
        cross3(u, v, d)
        m = norm3(d)
        d[0] /= m; d[1] /= m; d[2] /= m
        support_K(A, B, d, s)
        for i in range(3):
            w[i] = s[i] - c[i]
            V[i] = c[i] + u[i]; V[3 + i] = c[i] - u[i]
            V[6 + i] = c[i] + v[i]; V[9 + i] = c[i] - v[i]
            V[12 + i] = c[i] + w[i]; V[15 + i] = c[i] - w[i]
        nv = 6
        # the 8 faces (+-u, +-v, +-w); (u, v, w) is right-handed, so a face with an
        # odd number of minus signs has its order reversed to face outwards
        nf = 0
        for k in range(8):
            a0 = 0 if (k & 1) == 0 else 1
            a1 = 2 if (k & 2) == 0 else 3
            a2 = 4 if (k & 4) == 0 else 5
            sgn = (k & 1) + ((k >> 1) & 1) + ((k >> 2) & 1)
            F[3 * nf] = a0
            if sgn % 2 == 0:
                F[3 * nf + 1] = a1; F[3 * nf + 2] = a2
            else:
                F[3 * nf + 1] = a2; F[3 * nf + 2] = a1
            alive[nf] = 1
            epa_face(V, F, fn, fd, nf)
            nf += 1
    for it in range(4 * EPA_MAXV):
        f = -1
        lo = INFINITY
        for i in range(nf):
            if alive[i] and fd[i] < lo:
                lo = fd[i]
                f = i
        if f < 0:
            break
        h = support_K(A, B, fn + 3 * f, s)
        if h <= 0.0:
            return 0
        if h < best_h:
            best_h = h
            n[0] = fn[3 * f]; n[1] = fn[3 * f + 1]; n[2] = fn[3 * f + 2]
        if best_h - lo <= tol or nv >= EPA_MAXV:
            break
        if h - lo <= 0.25 * tol:
            # this face is (numerically) on K's boundary but another query was
            # better: retire it so the search moves on
            alive[f] = 0
            continue
        # add s: remove every face that sees it, then close the hole with faces
        # from the horizon edges (those of removed faces whose twin survives)
        for i in range(3):
            V[3 * nv + i] = s[i]
        ne = 0
        for i in range(nf):
            if alive[i]:
                for j in range(3):
                    d[j] = s[j] - V[3 * F[3 * i] + j]
                if i == f or dot3(fn + 3 * i, d) > 1e-14 * scale:
                    alive[i] = 0
                    for j in range(3):
                        if ne < EPA_MAXE:
                            E[2 * ne] = F[3 * i + j]
                            E[2 * ne + 1] = F[3 * i + (j + 1) % 3]
                            ne += 1
        for i in range(ne):
            fi = E[2 * i]
            fj = E[2 * i + 1]
            found = 0
            for j in range(ne):
                if E[2 * j] == fj and E[2 * j + 1] == fi:
                    found = 1
                    break
            if found:
                continue
            k = -1
            for j in range(nf):
                if not alive[j] and j != f:
                    k = j
                    break
            if k < 0 or k == f:
                if nf >= EPA_MAXF:
                    return 1 if best_h > 0.0 else 0
                k = nf
                nf += 1
            F[3 * k] = fi; F[3 * k + 1] = fj; F[3 * k + 2] = nv
            alive[k] = 1
            epa_face(V, F, fn, fd, k)
        nv += 1
    return 1 if best_h > 0.0 else 0


# ---------------------------------------------------------------------------
# Contact manifolds of flat contacts
# ---------------------------------------------------------------------------
#
# A pair whose contact is flat on one side (a half-space, or a brick face the
# normal is a face normal of) and spread on the other (a brick face, a
# capsule's axis) gets several contacts with the pair's normal, one per corner
# of the touching region, as Simbody's CompliantContactSubsystem does for a
# brick on a half-space (ContactForceGenerator::BrickHalfSpacePenalty, which
# takes the brick face most antiparallel to the half-space normal and applies a
# force at each of its vertices that penetrates). Here:
#   reference  the flat side: a half-space, or a brick's face whose outward
#              normal m is within SUPPORT_TIE of the pair's normal (m ~ n for
#              surface A, -n for B; of two bricks' faces the better aligned);
#              the plane is the face's own plane x.m = h;
#   incident   a brick: the face most antiparallel to m (the one holding the
#              deepest vertex, whatever the tilt), as a quadrilateral clipped
#              to the reference face's side slabs (Sutherland-Hodgman); a
#              capsule: its axis segment clipped likewise, each end standing
#              for the sphere of radius r centred there (a capsule is the union
#              of those spheres, so a lying capsule rests on its two end caps);
#   contacts   every corner y (for a capsule the sphere's pole x - r m) below
#              the plane: depth h - y.m, point y + depth m / 2 (midway, as for
#              every contact).
# The deepest corner is the pair's deepest point; if clipping removed it (the
# deepest vertex hangs beyond the reference face) the manifold does not reach
# the exact depth and the pair keeps its single exact contact instead.

cdef enum:
    MAX_MANIFOLD = 8    # a quadrilateral clipped by four slabs has at most 8 corners


cdef struct Manifold:
    int count
    double pt[3 * MAX_MANIFOLD]
    double depth[MAX_MANIFOLD]
    double rA
    double rB


cdef double brick_face(const CShape* s, const double* m, double* c, double* nf, double* u1, double* u2,
                       double* h1, double* h2) noexcept nogil:
    # The face of brick s whose outward normal is most aligned with unit m: its
    # centre c, its outward normal nf, in-plane axes u1, u2 (unit, in G) with
    # half-lengths h1, h2. Returns the direction cosine of its normal with m.
    cdef double d[3]
    cdef int i = 0, k
    cdef double sg
    mat33T_vec(s.R, m, d)
    for k in range(1, 3):
        if fabs(d[k]) > fabs(d[i]):
            i = k
    sg = 1.0 if d[i] >= 0.0 else -1.0
    col3(s.R, i, nf)
    for k in range(3):
        nf[k] *= sg
        c[k] = s.p[k] + s.prm[i] * nf[k]
    col3(s.R, (i + 1) % 3, u1)
    col3(s.R, (i + 2) % 3, u2)
    h1[0] = s.prm[(i + 1) % 3]
    h2[0] = s.prm[(i + 2) % 3]
    return fabs(d[i])


cdef int clip_polygon(double* P, int np_, const double* c, const double* u, double half,
                      double* tmp) noexcept nogil:
    # Clip the polygon P (np_ corners, 3 doubles each) to the slab
    # |(x - c).u| <= half (Sutherland-Hodgman, one side at a time); returns the
    # new count (at most np_ + 2, so at most 8 from a quadrilateral and 4 slabs).
    cdef double s0, s1, t, sgn
    cdef int i, k, j, nq
    for j in range(2):
        sgn = 1.0 if j == 0 else -1.0
        nq = 0
        for i in range(np_):
            k = (i + 1) % np_
            s0 = half - sgn * ((P[3 * i] - c[0]) * u[0] + (P[3 * i + 1] - c[1]) * u[1] + (P[3 * i + 2] - c[2]) * u[2])
            s1 = half - sgn * ((P[3 * k] - c[0]) * u[0] + (P[3 * k + 1] - c[1]) * u[1] + (P[3 * k + 2] - c[2]) * u[2])
            if s0 >= 0.0 and nq < MAX_MANIFOLD:
                tmp[3 * nq] = P[3 * i]; tmp[3 * nq + 1] = P[3 * i + 1]; tmp[3 * nq + 2] = P[3 * i + 2]
                nq += 1
            if (s0 >= 0.0) != (s1 >= 0.0) and nq < MAX_MANIFOLD:
                t = s0 / (s0 - s1)
                tmp[3 * nq] = P[3 * i] + t * (P[3 * k] - P[3 * i])
                tmp[3 * nq + 1] = P[3 * i + 1] + t * (P[3 * k + 1] - P[3 * i + 1])
                tmp[3 * nq + 2] = P[3 * i + 2] + t * (P[3 * k + 2] - P[3 * i + 2])
                nq += 1
        for i in range(3 * nq):
            P[i] = tmp[i]
        np_ = nq
        if np_ == 0:
            break
    return np_


cdef void clip_segment(double* e0, double* e1, const double* c, const double* u, double half,
                       bint* empty) noexcept nogil:
    # Shrink the segment e0-e1 to the slab |(x - c).u| <= half.
    cdef double a0 = (e0[0] - c[0]) * u[0] + (e0[1] - c[1]) * u[1] + (e0[2] - c[2]) * u[2]
    cdef double a1 = (e1[0] - c[0]) * u[0] + (e1[1] - c[1]) * u[1] + (e1[2] - c[2]) * u[2]
    cdef double lo = 0.0, hi = 1.0, t, da = a1 - a0
    cdef double f0[3]
    cdef int k
    if empty[0]:
        return
    if fabs(da) <= 1e-300:
        if fabs(a0) > half:
            empty[0] = True
        return
    # parameter range where -half <= a0 + t da <= half
    t = (-half - a0) / da
    if da > 0.0:
        lo = t if t > lo else lo
        t = (half - a0) / da
        hi = t if t < hi else hi
    else:
        hi = t if t < hi else hi
        t = (half - a0) / da
        lo = t if t > lo else lo
    if lo > hi:
        empty[0] = True
        return
    for k in range(3):
        f0[k] = e0[k]
        e0[k] = f0[k] + lo * (e1[k] - f0[k])
        e1[k] = f0[k] + hi * (e1[k] - f0[k])


cdef int flat_manifold(const CShape* A, const CShape* B, const double* n, double dep,
                       Manifold* M) noexcept nogil:
    # The manifold of pair (A, B), A.code <= B.code, normal n from A into B and
    # exact depth dep; 0 when the pair has none (the single exact contact stands).
    cdef const CShape* ref
    cdef const CShape* inc
    cdef double m[3]
    cdef double c[3]
    cdef double u1[3]
    cdef double u2[3]
    cdef double ic[3]
    cdef double v1[3]
    cdef double v2[3]
    cdef double c2[3]
    cdef double m2[3]
    cdef double w1[3]
    cdef double w2[3]
    cdef double P[3 * MAX_MANIFOLD]
    cdef double tmp[3 * MAX_MANIFOLD]
    cdef double h1 = 0.0, h2 = 0.0, g1, g2, h, r = 0.0, x, y, best = -INFINITY, tie, cosA, cosB
    cdef int np_ = 0, i, k
    cdef bint clip = False, empty = False, capsule
    M.count = 0
    M.rA = INFINITY
    M.rB = INFINITY
    if A.code == CS_HALFSPACE and B.code >= CS_CYLINDER:
        return halfspace_manifold_more(A, B, n, dep, M)
    if A.code == CS_HALFSPACE and (B.code == CS_BRICK or B.code == CS_CAPSULE):
        ref = A
        inc = B
        m[0] = n[0]; m[1] = n[1]; m[2] = n[2]      # the plane's normal itself
        h = support_value(A, m)
    elif A.code == CS_BRICK and B.code == CS_BRICK:
        # the reference is the face n is the normal of (separating axes pick one exactly); the
        # depths are measured from that face's own plane, so that a face within the tie of n
        # still gives each vertex its own depth
        inc = B
        ref = A
        cosA = brick_face(A, n, c, m, u1, u2, &h1, &h2)
        for k in range(3):
            w1[k] = -n[k]
        cosB = brick_face(B, w1, c2, m2, w1, w2, &g1, &g2)
        if cosB > cosA:
            ref = B
            inc = A
            cosA = cosB
            for k in range(3):
                c[k] = c2[k]; m[k] = m2[k]; u1[k] = w1[k]; u2[k] = w2[k]
            h1 = g1
            h2 = g2
        if cosA < 1.0 - SUPPORT_TIE:
            return 0            # edge on edge: a single contact
        h = dot3(c, m)
        clip = True
    elif A.code == CS_CAPSULE and B.code == CS_BRICK:
        ref = B
        inc = A
        for k in range(3):
            w1[k] = -n[k]
        if brick_face(B, w1, c, m, u1, u2, &h1, &h2) < 1.0 - SUPPORT_TIE:
            return 0            # a cap or the side on an edge or a vertex: one point
        h = dot3(c, m)
        clip = True
    else:
        return 0
    capsule = inc.code == CS_CAPSULE
    if capsule:
        r = inc.prm[0]
        col3(inc.R, 2, v1)
        for k in range(3):
            P[k] = inc.p[k] + inc.prm[1] * v1[k]
            P[3 + k] = inc.p[k] - inc.prm[1] * v1[k]
        np_ = 2
        if clip:
            clip_segment(P, P + 3, c, u1, h1, &empty)
            clip_segment(P, P + 3, c, u2, h2, &empty)
            if empty:
                return 0
        for i in range(2):
            for k in range(3):
                P[3 * i + k] -= r * m[k]        # the sphere's pole toward the reference
    else:
        for k in range(3):
            w1[k] = -m[k]
        brick_face(inc, w1, ic, w2, v1, v2, &g1, &g2)     # the incident face: most antiparallel
        for i in range(4):
            # corners in order around the face: (+,+), (-,+), (-,-), (+,-)
            x = 1.0 if (i == 0 or i == 3) else -1.0
            y = 1.0 if i < 2 else -1.0
            for k in range(3):
                P[3 * i + k] = ic[k] + x * g1 * v1[k] + y * g2 * v2[k]
        np_ = 4
        if clip:
            np_ = clip_polygon(P, np_, c, u1, h1, tmp)
            if np_ > 0:
                np_ = clip_polygon(P, np_, c, u2, h2, tmp)
    for i in range(np_):
        x = h - dot3(P + 3 * i, m)
        if x > 0.0 and M.count < MAX_MANIFOLD:
            M.depth[M.count] = x
            for k in range(3):
                M.pt[3 * M.count + k] = P[3 * i + k] + 0.5 * x * m[k]
            M.count += 1
            if x > best:
                best = x
    # the manifold's deepest contact must be the pair's (to the round-off of the numbers
    # involved): not if clipping removed the deepest vertex, nor if the reference face is only
    # within the tie of an edge-on-edge normal
    tie = SUPPORT_TIE * (fabs(h) + shape_size(A) + shape_size(B))
    if M.count == 0 or fabs(best - dep) > tie:
        M.count = 0
        return 0
    if capsule:
        if inc == A:
            M.rA = r
        else:
            M.rB = r
    return M.count


# ---------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------

cdef inline double shape_size(const CShape* s) noexcept nogil:
    cdef double m = s.prm[0]
    if s.code == CS_HULL:
        return m        # (its other parameters are a count and an offset)
    if s.prm[1] > m:
        m = s.prm[1]
    if s.prm[2] > m:
        m = s.prm[2]
    return m


cdef int narrow_normal(const CShape* A, const CShape* B, double* n) noexcept nogil:
    # the contact normal from A into B, or 0 when apart; A.code <= B.code
    cdef double gap
    if A.code == CS_HALFSPACE:
        col3(A.R, 0, n)
        n[0] = -n[0]; n[1] = -n[1]; n[2] = -n[2]
        return 1
    if B.code >= CS_ELLIPSOID:
        return normal_epa(A, B, shape_size(A) + shape_size(B), n)
    if B.code == CS_BRICK:
        if A.code == CS_BRICK:
            return normal_brick_brick(A, B, n, &gap)
        return normal_round_brick(A, B, n, &gap)
    return normal_round_round(A, B, n, &gap)


cdef int simplex_closest(double* W, int nw, double* x) noexcept nogil:
    # The point x of the hull of the nw <= 4 points W nearest the origin, by
    # trying every face of the simplex (its affine hull's nearest point, kept
    # if inside the face: barycentric weights >= 0) and keeping the nearest;
    # W is reduced to that face's corners. Returns the new count.
    cdef double E[9]
    cdef double Gm[9]
    cdef double r[3]
    cdef double lam[3]
    cdef double y[3]
    cdef double best = INFINITY, det, d2, w0
    cdef int mask, bmask = 0, k, c, i, j, idx[4], n
    cdef bint ok
    for mask in range(1, 1 << nw):
        n = 0
        for k in range(nw):
            if mask & (1 << k):
                idx[n] = k
                n += 1
        # minimize |p0 + sum lam_i e_i|^2: G lam = -E^T p0 (Cramer's rule, n - 1 <= 3)
        for i in range(n - 1):
            for c in range(3):
                E[3 * i + c] = W[3 * idx[i + 1] + c] - W[3 * idx[0] + c]
        for i in range(n - 1):
            r[i] = -dot3(E + 3 * i, W + 3 * idx[0])
            for j in range(n - 1):
                Gm[3 * i + j] = dot3(E + 3 * i, E + 3 * j)
        ok = True
        if n == 1:
            pass
        elif n == 2:
            if Gm[0] <= 1e-300:
                ok = False
            else:
                lam[0] = r[0] / Gm[0]
        elif n == 3:
            det = Gm[0] * Gm[4] - Gm[1] * Gm[3]
            if fabs(det) <= 1e-30 * (Gm[0] * Gm[4] + 1e-300):
                ok = False
            else:
                lam[0] = (r[0] * Gm[4] - Gm[1] * r[1]) / det
                lam[1] = (Gm[0] * r[1] - Gm[3] * r[0]) / det
        else:
            det = (Gm[0] * (Gm[4] * Gm[8] - Gm[5] * Gm[7]) - Gm[1] * (Gm[3] * Gm[8] - Gm[5] * Gm[6])
                   + Gm[2] * (Gm[3] * Gm[7] - Gm[4] * Gm[6]))
            if fabs(det) <= 1e-30 * (Gm[0] * Gm[4] * Gm[8] + 1e-300):
                ok = False
            else:
                lam[0] = (r[0] * (Gm[4] * Gm[8] - Gm[5] * Gm[7]) - Gm[1] * (r[1] * Gm[8] - Gm[5] * r[2])
                          + Gm[2] * (r[1] * Gm[7] - Gm[4] * r[2])) / det
                lam[1] = (Gm[0] * (r[1] * Gm[8] - Gm[5] * r[2]) - r[0] * (Gm[3] * Gm[8] - Gm[5] * Gm[6])
                          + Gm[2] * (Gm[3] * r[2] - r[1] * Gm[6])) / det
                lam[2] = (Gm[0] * (Gm[4] * r[2] - r[1] * Gm[7]) - Gm[1] * (Gm[3] * r[2] - r[1] * Gm[6])
                          + r[0] * (Gm[3] * Gm[7] - Gm[4] * Gm[6])) / det
        if not ok:
            continue
        w0 = 1.0
        for i in range(n - 1):
            w0 -= lam[i]
            if lam[i] < 0.0:
                ok = False
        if not ok or w0 < 0.0:
            continue
        for c in range(3):
            y[c] = W[3 * idx[0] + c]
            for i in range(n - 1):
                y[c] += lam[i] * E[3 * i + c]
        d2 = dot3(y, y)
        if d2 < best:
            best = d2
            bmask = mask
            x[0] = y[0]; x[1] = y[1]; x[2] = y[2]
    n = 0
    for k in range(nw):
        if bmask & (1 << k):
            for c in range(3):
                W[3 * n + c] = W[3 * k + c]
            n += 1
    return n


cdef double separation_bound(const CShape* A, const CShape* B, double tol) noexcept nogil:
    # The distance of a pair EPA found apart, by GJK on the Minkowski
    # difference K = A - B: x is the point of the current simplex nearest the
    # origin, K's support point s along -x joins the simplex, and the nearest
    # face is kept. |x| is an upper bound of the distance and -h_K(-x/|x|) a
    # lower one; it stops when they are within tol and returns |x|: positive
    # whenever the pair is apart, within tol of the distance.
    cdef double W[12]
    cdef double x[3]
    cdef double v[3]
    cdef double mv[3]
    cdef double a[3]
    cdef double b[3]
    cdef double m, lower
    cdef int it, k, nw = 1
    shape_centre(A, a)
    shape_centre(B, b)
    for k in range(3):
        W[k] = a[k] - b[k]
        x[k] = W[k]
    m = norm3(x)
    for it in range(64):
        if m <= 1e-300:
            return 0.0
        for k in range(3):
            v[k] = -x[k] / m
            mv[k] = -v[k]
        support_point(A, v, a)
        support_point(B, mv, b)
        lower = -(dot3(a, v) - dot3(b, v))
        if m - lower <= tol or nw >= 4:
            break
        for k in range(3):
            W[3 * nw + k] = a[k] - b[k]
        nw = simplex_closest(W, nw + 1, x)
        m = norm3(x)
    return m


cdef double pair_separation(const CShape* S1, const CShape* S2) noexcept nogil:
    # The signed separation of a pair: minus the depth when they overlap (as
    # detection reports it), the distance (or the lower bound noted at each
    # narrow phase) when apart; continuous through first contact.
    cdef double n[3]
    cdef double mn[3]
    cdef double gap = 0.0
    cdef const CShape* A = S1
    cdef const CShape* B = S2
    cdef int ok
    if S1.code > S2.code:
        A = S2
        B = S1
    if A.code == CS_HALFSPACE:
        ok = 1
        col3(A.R, 0, n)
        n[0] = -n[0]; n[1] = -n[1]; n[2] = -n[2]
    elif B.code >= CS_ELLIPSOID:
        ok = normal_epa(A, B, shape_size(A) + shape_size(B), n)
        if not ok:
            return separation_bound(A, B, C_EPA_REL_TOL * (shape_size(A) + shape_size(B)))
    elif B.code == CS_BRICK:
        if A.code == CS_BRICK:
            ok = normal_brick_brick(A, B, n, &gap)
        else:
            ok = normal_round_brick(A, B, n, &gap)
    else:
        ok = normal_round_round(A, B, n, &gap)
    if not ok:
        return gap
    mn[0] = -n[0]; mn[1] = -n[1]; mn[2] = -n[2]
    return -(support_value(A, n) + support_value(B, mn))


cdef void clip_segment_to_face(const Feature* seg, const Feature* face, double* out) noexcept nogil:
    # Centre of the part of segment `seg` whose projection along the normal lies
    # inside the rectangle `face`: the middle of a capsule's side or of a
    # brick's edge that rests on a face. The segment's own centre if none does.
    cdef double lo = -seg.half[0], hi = seg.half[0], a, b, t1, t2
    cdef double w[3]
    cdef int k, i
    for i in range(3):
        w[i] = seg.pt[i] - face.pt[i]
    for k in range(2):
        a = dot3(seg.ax, face.ax + 3 * k)
        b = dot3(w, face.ax + 3 * k)
        if fabs(a) > 1e-12:
            t1 = (-face.half[k] - b) / a
            t2 = (face.half[k] - b) / a
            if t1 > t2:
                t1, t2 = t2, t1
            if t1 > lo:
                lo = t1
            if t2 < hi:
                hi = t2
        elif fabs(b) > face.half[k]:
            lo = 1.0; hi = -1.0
    a = 0.5 * (lo + hi) if lo <= hi else 0.0
    for i in range(3):
        out[i] = seg.pt[i] + a * seg.ax[i]


cdef void face_face_point(const Feature* fa, const Feature* fb, double* out) noexcept nogil:
    # Centre of the overlap of two parallel rectangles (brick on brick), seen
    # along the normal: B's rectangle, in A's face coordinates, clipped against
    # A's rectangle (Sutherland-Hodgman); the mean of the clipped polygon's
    # vertices. A's face centre when they do not overlap.
    cdef double P[2 * 16]
    cdef double Qp[2 * 16]
    cdef double w[3]
    cdef double x0, y0, x1, y1, s0, s1, t, lim, sx, sy
    cdef int np_ = 4, nq, i, k, sgn, axis
    for i in range(4):
        x0 = 1.0 if (i == 0 or i == 3) else -1.0
        y0 = 1.0 if i < 2 else -1.0
        for k in range(3):
            w[k] = fb.pt[k] + x0 * fb.half[0] * fb.ax[k] + y0 * fb.half[1] * fb.ax[3 + k] - fa.pt[k]
        P[2 * i] = dot3(w, fa.ax)
        P[2 * i + 1] = dot3(w, fa.ax + 3)
    for axis in range(2):
        lim = fa.half[axis]
        for sgn in range(-1, 2, 2):
            nq = 0
            for i in range(np_):
                k = (i + 1) % np_
                s0 = lim - sgn * P[2 * i + axis]
                s1 = lim - sgn * P[2 * k + axis]
                if s0 >= 0.0:
                    Qp[2 * nq] = P[2 * i]; Qp[2 * nq + 1] = P[2 * i + 1]; nq += 1
                if (s0 >= 0.0) != (s1 >= 0.0) and nq < 16:
                    t = s0 / (s0 - s1)
                    Qp[2 * nq] = P[2 * i] + t * (P[2 * k] - P[2 * i])
                    Qp[2 * nq + 1] = P[2 * i + 1] + t * (P[2 * k + 1] - P[2 * i + 1])
                    nq += 1
            np_ = nq if nq < 8 else 8
            for i in range(np_):
                P[2 * i] = Qp[2 * i]; P[2 * i + 1] = Qp[2 * i + 1]
            if np_ == 0:
                break
        if np_ == 0:
            break
    sx = 0.0
    sy = 0.0
    for i in range(np_):
        sx += P[2 * i]; sy += P[2 * i + 1]
    if np_ > 0:
        sx /= np_; sy /= np_
    for k in range(3):
        out[k] = fa.pt[k] + sx * fa.ax[k] + sy * fa.ax[3 + k]


cdef int finalize_contact(const CShape* A, const CShape* B, const double* n, double* pt,
                          double* depth, double* rA, double* rB) noexcept nogil:
    # depth = h_A(n) + h_B(-n) from the exact support values; the deepest points
    # from the support features: the lower-dimensional feature is taken as it is
    # and the other deepest point is its image across the gap (a - b = depth n),
    # so that a sphere on a brick touches where the sphere is, not at the face's
    # centre; two segments meet at their closest points; two faces at the centre
    # of their overlap.
    cdef Feature fa
    cdef Feature fb
    cdef double mn[3]
    cdef double a[3]
    cdef double b[3]
    cdef double g[3]
    cdef double dep, t
    cdef int i
    mn[0] = -n[0]; mn[1] = -n[1]; mn[2] = -n[2]
    dep = support_feature(A, n, &fa) + support_feature(B, mn, &fb)
    if not dep > 0.0:
        return 0
    if fa.dim < fb.dim:
        if fa.dim == 1 and fb.dim == 2:
            clip_segment_to_face(&fa, &fb, a)
        else:
            a[0] = fa.pt[0]; a[1] = fa.pt[1]; a[2] = fa.pt[2]
        for i in range(3):
            b[i] = a[i] - dep * n[i]
    elif fb.dim < fa.dim:
        if fb.dim == 1 and fa.dim == 2:
            clip_segment_to_face(&fb, &fa, b)
        else:
            b[0] = fb.pt[0]; b[1] = fb.pt[1]; b[2] = fb.pt[2]
        for i in range(3):
            a[i] = b[i] + dep * n[i]
    elif fa.dim == 1:
        segment_closest(fa.pt, fa.ax, fa.half[0], fb.pt, fb.ax, fb.half[0], a, b)
    elif fa.dim == 2:
        face_face_point(&fa, &fb, a)
        for i in range(3):
            b[i] = a[i] - dep * n[i]
    else:
        b[0] = fb.pt[0]; b[1] = fb.pt[1]; b[2] = fb.pt[2]
        if A.code == CS_CAPSULE and B.code == CS_ELLIPSOID:
            # A cap against an ellipsoid (EPA): an iterative normal is only so exact, and near a
            # tie between a cap and the side the pole taken can be the far end's; the capsule's
            # point is the pole of the sphere centred at the axis point nearest the centre of
            # curvature b + (dep - r) n (the cap's own pole when the cap is the feature).
            col3(A.R, 2, g)
            for i in range(3):
                a[i] = b[i] + (dep - A.prm[0]) * n[i] - A.p[i]
            t = clampd(dot3(a, g), -A.prm[1], A.prm[1])
            for i in range(3):
                a[i] = A.p[i] + t * g[i] + A.prm[0] * n[i]
        elif A.code == CS_BRICK and B.code == CS_ELLIPSOID:
            # likewise a brick's vertex against an ellipsoid can be a near tie with an edge: the
            # ellipsoid's point is the well-defined one, carried across the gap
            for i in range(3):
                a[i] = b[i] + dep * n[i]
        else:
            a[0] = fa.pt[0]; a[1] = fa.pt[1]; a[2] = fa.pt[2]
    for i in range(3):
        pt[i] = 0.5 * (a[i] + b[i])
    depth[0] = dep
    rA[0] = fa.radius
    rB[0] = fb.radius
    return 1


cdef int contact_pair(const CShape* S1, const CShape* S2, double* n, Manifold* M) noexcept nogil:
    # The contacts between surfaces 1 and 2 (normal n from 1 into 2) into M;
    # returns their count, 0 if none. Narrow phases are written for
    # A.code <= B.code; a swapped pair flips the normal and swaps the radii.
    # One exact contact, or the pair's flat manifold when it has one.
    cdef double m[3]
    cdef double p_[3]
    cdef double d_, ra, rb
    cdef const CShape* A = S1
    cdef const CShape* B = S2
    cdef bint swap = S1.code > S2.code
    if swap:
        A = S2
        B = S1
    if not narrow_normal(A, B, m):
        return 0
    if not finalize_contact(A, B, m, p_, &d_, &ra, &rb):
        return 0
    if not flat_manifold(A, B, m, d_, M):
        M.count = 1
        M.pt[0] = p_[0]; M.pt[1] = p_[1]; M.pt[2] = p_[2]
        M.depth[0] = d_
        M.rA = ra
        M.rB = rb
    if swap:
        n[0] = -m[0]; n[1] = -m[1]; n[2] = -m[2]
        ra = M.rA
        M.rA = M.rB
        M.rB = ra
    else:
        n[0] = m[0]; n[1] = m[1]; n[2] = m[2]
    return M.count


# ---------------------------------------------------------------------------
# Broad phase
# ---------------------------------------------------------------------------

cdef struct SortKey:
    int strip
    int idx
    double key


cdef int cmp_key(const void* x, const void* y) noexcept nogil:
    # by strip, then by the box's low end along the sweep axis
    cdef const SortKey* a = <const SortKey*>x
    cdef const SortKey* b = <const SortKey*>y
    if a.strip != b.strip:
        return -1 if a.strip < b.strip else 1
    return -1 if a.key < b.key else (1 if a.key > b.key else 0)


cdef void shape_aabb(const CShape* s, double* lo, double* hi) noexcept nogil:
    # world AABB half-extents e_i: sphere r; capsule r + L |z_i|; brick
    # sum_j |R_ij| h_j; ellipsoid sqrt(sum_j R_ij^2 a_j^2) (exact)
    cdef const double* R = s.R
    cdef const double* q = s.prm
    cdef double e
    cdef int i
    if s.code == CS_HULL:
        hull_aabb(s, lo, hi)
        return
    for i in range(3):
        if s.code == CS_SPHERE:
            e = q[0]
        elif s.code == CS_CAPSULE:
            e = q[0] + q[1] * fabs(R[3 * i + 2])
        elif s.code == CS_BRICK:
            e = q[0] * fabs(R[3 * i]) + q[1] * fabs(R[3 * i + 1]) + q[2] * fabs(R[3 * i + 2])
        elif s.code == CS_CYLINDER:
            # the disc of radius r perpendicular to z spans r sqrt(1 - z_i^2) along axis i
            e = 1.0 - R[3 * i + 2] * R[3 * i + 2]
            e = q[0] * sqrt(e if e > 0.0 else 0.0) + q[1] * fabs(R[3 * i + 2])
        else:
            e = sqrt(q[0] * q[0] * R[3 * i] * R[3 * i] + q[1] * q[1] * R[3 * i + 1] * R[3 * i + 1]
                     + q[2] * q[2] * R[3 * i + 2] * R[3 * i + 2])
        lo[i] = s.p[i] - e
        hi[i] = s.p[i] + e


cdef inline int emit(const CShape* S, int i, int j, Py_ssize_t nc, Py_ssize_t cap, long long* surf,
                     double* pt, double* nrm, double* depth, double* r1, double* r2) noexcept nogil:
    # evaluate pair (i, j), i < j; write its contacts from row nc on while there is
    # room; returns how many it has (all counted, so the caller can size again)
    cdef Manifold M
    cdef double n_[3]
    cdef int k, c
    cdef Py_ssize_t row
    if not contact_pair(S + i, S + j, n_, &M):
        return 0
    for c in range(M.count):
        row = nc + c
        if row >= cap:
            break
        surf[2 * row] = i
        surf[2 * row + 1] = j
        for k in range(3):
            pt[3 * row + k] = M.pt[3 * c + k]
            nrm[3 * row + k] = n_[k]
        depth[row] = M.depth[c]
        r1[row] = M.rA
        r2[row] = M.rB
    return M.count


cdef inline int visit(const CShape* S, int a, int b, const int* body, double* min_sep, Py_ssize_t nc,
                      Py_ssize_t cap, long long* surf, double* pt, double* nrm, double* depth, double* r1,
                      double* r2) noexcept nogil:
    # One candidate pair: its contacts (returns their count), or in separation
    # mode (min_sep given) its signed separation folded into min_sep[0],
    # skipping pairs on one body.
    cdef double g
    if a > b:
        a, b = b, a
    if min_sep != NULL:
        if body[a] != body[b]:
            g = pair_separation(S + a, S + b)
            if g < min_sep[0]:
                min_sep[0] = g
        return 0
    return emit(S, a, b, nc, cap, surf, pt, nrm, depth, r1, r2)


cdef inline int _strip_of(double v, int nstrip) noexcept nogil:
    # The strip holding offset v (in strip widths, >= 0 by construction): int(v), at most the last.
    # A NaN or an overflow (a scene whose coordinates overflow to inf) goes to strip 0 or to the
    # last instead of through an undefined conversion.
    if not v > 0.0:
        return 0
    if v >= nstrip:
        return nstrip - 1
    return <int>v


cdef Py_ssize_t detect_kernel(int ns, CShape* S, const int* clique, double* box,
                              Py_ssize_t cap, long long* surf, double* pt, double* nrm, double* depth,
                              double* r1, double* r2, double margin=0.0, const int* body=NULL,
                              double* min_sep=NULL, SortKey* keys_buf=NULL,
                              Py_ssize_t keys_cap=0, const double* excl=NULL,
                              Py_ssize_t nexcl=0) noexcept nogil:
    # Returns the number of contacts (only the first `cap` are written), or -1
    # if out of memory. keys_buf (keys_cap entries), when given and large
    # enough, holds the sweep's keys (else they are allocated and freed). excl:
    # nexcl surface pairs (i < j, as doubles, sorted) that never touch, checked
    # after the broad phase (pair_excluded), for filters cliques cannot express.
    # Separation mode (min_sep given): every box is grown by margin / 2, so
    # that the pairs within margin of each other are met, and min_sep[0]
    # becomes the least signed separation among them (no contacts).
    #
    # Sort-and-sweep in strips: a sweep along one axis alone costs O(n^1.5)
    # when the surfaces spread over a plane (a pile on the ground: each box's
    # slab holds ~sqrt(n) others), so the axis of second-largest spread is cut
    # into strips about two mean box sizes wide, each box is entered in the
    # strips it overlaps, and each strip is swept along the axis of largest
    # spread. A pair met in several strips is evaluated only in the strip that
    # holds the larger of the two boxes' low ends. Cost: O(m log m) for m
    # entries (about 2 per box for boxes of similar size) plus the box pairs
    # that overlap within a strip's slab, plus ns per half-space.
    cdef Py_ssize_t nc = 0, m = 0, e0, e1, ea, eb
    cdef int i, j, a, b, nbd = 0, axis, ax2, ax3, k, nstrip, s0, s1, st
    cdef double mean[3]
    cdef double var[3]
    cdef double ext[3]
    cdef double lo2 = INFINITY, hi2 = -INFINITY, w, x
    cdef SortKey* keys
    cdef bint own_keys
    for k in range(3):
        mean[k] = 0.0; var[k] = 0.0; ext[k] = 0.0
    for i in range(ns):
        if S[i].code == CS_HALFSPACE:
            continue
        shape_aabb(S + i, box + 6 * i, box + 6 * i + 3)
        for k in range(3):
            box[6 * i + k] -= 0.5 * margin
            box[6 * i + 3 + k] += 0.5 * margin
        nbd += 1
        for k in range(3):
            x = box[6 * i + k] + box[6 * i + 3 + k]
            mean[k] += x
            var[k] += x * x
            ext[k] += box[6 * i + 3 + k] - box[6 * i + k]
    # the axes ordered by the spread of the boxes' centres
    for k in range(3):
        if nbd > 0:
            var[k] = var[k] / nbd - (mean[k] / nbd) * (mean[k] / nbd)
    axis = 0
    for k in range(3):
        if var[k] > var[axis]:
            axis = k
    ax2 = (axis + 1) % 3
    ax3 = (axis + 2) % 3
    if var[ax3] > var[ax2]:
        ax2, ax3 = ax3, ax2
    for i in range(ns):
        if S[i].code != CS_HALFSPACE:
            if box[6 * i + ax2] < lo2:
                lo2 = box[6 * i + ax2]
            if box[6 * i + 3 + ax2] > hi2:
                hi2 = box[6 * i + 3 + ax2]
    nstrip = 1
    w = 1.0
    if nbd > 1:
        w = 2.0 * ext[ax2] / nbd
        if w > 0.0 and (hi2 - lo2) / w < nbd:
            nstrip = <int>((hi2 - lo2) / w) + 1
        else:
            nstrip = nbd
        w = (hi2 - lo2) / nstrip
        if not w > 0.0:
            nstrip = 1
            w = 1.0
    for i in range(ns):
        if S[i].code != CS_HALFSPACE:
            s0 = _strip_of((box[6 * i + ax2] - lo2) / w, nstrip)
            s1 = _strip_of((box[6 * i + 3 + ax2] - lo2) / w, nstrip)
            m += s1 - s0 + 1
    own_keys = not (keys_buf != NULL and m <= keys_cap)
    keys = <SortKey*>malloc((m if m > 0 else 1) * sizeof(SortKey)) if own_keys else keys_buf
    if keys == NULL:
        return -1
    m = 0
    for i in range(ns):
        if S[i].code != CS_HALFSPACE:
            s0 = _strip_of((box[6 * i + ax2] - lo2) / w, nstrip)
            s1 = _strip_of((box[6 * i + 3 + ax2] - lo2) / w, nstrip)
            for st in range(s0, s1 + 1):
                keys[m].strip = st
                keys[m].idx = i
                keys[m].key = box[6 * i + axis]
                m += 1
    qsort(keys, m, sizeof(SortKey), cmp_key)
    e0 = 0
    while e0 < m:
        st = keys[e0].strip
        e1 = e0
        while e1 < m and keys[e1].strip == st:
            e1 += 1
        for ea in range(e0, e1):
            a = keys[ea].idx
            for eb in range(ea + 1, e1):
                b = keys[eb].idx
                if box[6 * b + axis] > box[6 * a + 3 + axis]:
                    break
                if (box[6 * b + ax2] > box[6 * a + 3 + ax2] or box[6 * a + ax2] > box[6 * b + 3 + ax2]
                        or box[6 * b + ax3] > box[6 * a + 3 + ax3] or box[6 * a + ax3] > box[6 * b + 3 + ax3]):
                    continue
                # evaluate the pair only in the strip of the larger low end
                x = box[6 * a + ax2] if box[6 * a + ax2] > box[6 * b + ax2] else box[6 * b + ax2]
                s0 = _strip_of((x - lo2) / w, nstrip)
                if s0 != st:
                    continue
                if clique[a] >= 0 and clique[a] == clique[b]:
                    continue
                if nexcl > 0 and pair_excluded(excl, nexcl, a, b):
                    continue
                nc += visit(S, a, b, body, min_sep, nc, cap, surf, pt, nrm, depth, r1, r2)
        e0 = e1
    if own_keys:
        free(keys)
    for a in range(ns):
        if S[a].code != CS_HALFSPACE:
            continue
        for b in range(ns):
            if S[b].code == CS_HALFSPACE or (clique[a] >= 0 and clique[a] == clique[b]):
                continue
            if nexcl > 0 and pair_excluded(excl, nexcl, a, b):
                continue
            nc += visit(S, a, b, body, min_sep, nc, cap, surf, pt, nrm, depth, r1, r2)
    return nc


def contact_detect(const int[::1] codes, const double[:, ::1] params, const double[:, :, ::1] R_GS,
                   const double[:, ::1] p_GS, const int[::1] clique, long long[:, ::1] surf,
                   double[:, ::1] p_G, double[:, ::1] n_G, double[::1] depth, double[::1] R1,
                   double[::1] R2, const double[:, ::1] vertices=None, const double[:, ::1] exclude=None):
    """Detect the contacts among ns surfaces into arrays of capacity cap = surf.shape[0].

    Returns the number of contacts nc; when nc > cap only the first cap were written and the
    caller should call again with room for nc. A ConvexHull's params are (size, vertex count, first
    row of ``vertices``); ``exclude`` (m, 2): the sorted pairs i < j that never touch. Inputs are
    validated by simtk/_core_contact.py.
    """
    cdef int ns = codes.shape[0], i
    cdef Py_ssize_t cap = surf.shape[0], nc
    cdef const double* ex = NULL
    cdef Py_ssize_t nex = 0
    cdef CShape* S = <CShape*>malloc(max(ns, 1) * sizeof(CShape))
    cdef double* box = <double*>malloc(max(ns, 1) * 6 * sizeof(double))
    if S == NULL or box == NULL:
        free(S); free(box)
        raise MemoryError()
    if ns == 0 or cap == 0:
        free(S); free(box)
        raise ValueError("contact_detect needs at least one surface and room for one contact")
    for i in range(ns):
        S[i].code = codes[i]
        S[i].prm = &params[i, 0]
        S[i].R = &R_GS[i, 0, 0]
        S[i].p = &p_GS[i, 0]
        _hull_vertices(S + i, vertices)
    if exclude is not None and exclude.shape[0] > 0:
        ex = &exclude[0, 0]
        nex = exclude.shape[0]
    try:
        with nogil:
            nc = detect_kernel(ns, S, &clique[0], box, cap, &surf[0, 0], &p_G[0, 0], &n_G[0, 0],
                               &depth[0], &R1[0], &R2[0], 0.0, NULL, NULL, NULL, 0, ex, nex)
    finally:
        free(S); free(box)
    if nc < 0:
        raise MemoryError()
    return nc


def contact_min_separation(const int[::1] codes, const double[:, ::1] params, const double[:, :, ::1] R_GS,
                           const double[:, ::1] p_GS, const int[::1] clique, const int[::1] body, double margin,
                           const double[:, ::1] vertices=None, const double[:, ::1] exclude=None):
    """The least signed separation (positive apart, minus the depth when overlapping) over the pairs
    detection would consider whose surfaces are on different bodies, or ``margin`` if no such pair is
    within ``margin`` of touching. Inputs are validated by simtk/_core.py.
    """
    cdef int ns = codes.shape[0], i
    cdef double best = margin
    cdef Py_ssize_t nc
    cdef const double* ex = NULL
    cdef Py_ssize_t nex = 0
    cdef CShape* S = <CShape*>malloc(max(ns, 1) * sizeof(CShape))
    cdef double* box = <double*>malloc(max(ns, 1) * 6 * sizeof(double))
    if S == NULL or box == NULL:
        free(S); free(box)
        raise MemoryError()
    if ns < 2:
        free(S); free(box)
        return best
    for i in range(ns):
        S[i].code = codes[i]
        S[i].prm = &params[i, 0]
        S[i].R = &R_GS[i, 0, 0]
        S[i].p = &p_GS[i, 0]
        _hull_vertices(S + i, vertices)
    if exclude is not None and exclude.shape[0] > 0:
        ex = &exclude[0, 0]
        nex = exclude.shape[0]
    try:
        with nogil:
            nc = detect_kernel(ns, S, &clique[0], box, 0, NULL, NULL, NULL, NULL, NULL, NULL,
                               margin, &body[0], &best, NULL, 0, ex, nex)
    finally:
        free(S); free(box)
    if nc < 0:
        raise MemoryError()
    return best
