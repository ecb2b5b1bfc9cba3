# The contact shapes Cylinder and ConvexHull (issue 32), and the per-pair
# exclusions of detection; the other shapes and the narrow phases are in
# core/contact.pxi, which calls these by shape code.
#
# Cylinder (radius r, half-length L): the points within r of S's z axis with
# |z| <= L. Its support function is h(d) = r |d_xy| + L |d_z| (d in S), its
# features a cap (a flat disc), the side (a segment of radius of curvature r)
# or a rim point; centrally symmetric, so EPA starts from its octahedron.
#
# ConvexHull: the convex hull of nv vertices given in S (the vertices of a
# polytope: every one is an extreme point, as scipy's ConvexHull gives them).
# h(d) = max_k V_k.d; its features are the vertices within SUPPORT_TIE x size
# of that maximum: one (a vertex), two (an edge) or more (a face, described to
# finalize_contact by the bounding rectangle of its vertices in its plane: its
# centre places the contact point of face-on-face pairs, not the depth). A hull
# is not centrally symmetric about its frame's origin (the origin need not even
# be inside it), so EPA and GJK start from its vertices' centroid and EPA from
# a tetrahedron of support points.
#
# Half-space manifolds (flat_manifold calls halfspace_manifold_more):
#   Cylinder  four rim points of each cap, 90 degrees apart starting at the
#             deepest one (so the deepest point of the pair is one of them),
#             each a contact if below the plane: a standing cylinder rests on
#             four points of its bottom rim, a lying one on its two ends, a
#             tilted one on its lowest rim point and those near it. Radii: inf
#             (Simbody's vertex law, as a brick's corners) while the axis is
#             nearer the normal than the plane (|d_z| >= |d_xy|), else r (the
#             side's curvature, Hertz, as a lying capsule).
#   ConvexHull  the deepest vertex, then the vertex below the plane farthest
#             along each of 8 directions of the plane 45 degrees apart (the
#             corners of the sunk region's outline, at most 8 contacts in all),
#             with radius inf; a hull of a box's 8 vertices gives the same
#             contacts as the Brick.

cdef inline void shape_centre(const CShape* s, double* out) noexcept nogil:
    # A point inside the shape: its frame's origin, or a hull's vertex centroid.
    cdef double c[3]
    cdef int k, i
    if s.code != CS_HULL or s.nv == 0:
        out[0] = s.p[0]; out[1] = s.p[1]; out[2] = s.p[2]
        return
    c[0] = 0.0; c[1] = 0.0; c[2] = 0.0
    for k in range(s.nv):
        for i in range(3):
            c[i] += s.V[3 * k + i]
    for i in range(3):
        c[i] /= s.nv
    mat33_vec(s.R, c, out)
    for i in range(3):
        out[i] += s.p[i]


cdef inline double hull_max(const CShape* s, const double* d, int* arg) noexcept nogil:
    # max_k V_k.d for d in S, and (arg not NULL) the first vertex attaining it
    cdef double best = -INFINITY, v
    cdef int k, kb = 0
    for k in range(s.nv):
        v = s.V[3 * k] * d[0] + s.V[3 * k + 1] * d[1] + s.V[3 * k + 2] * d[2]
        if v > best:
            best = v
            kb = k
    if arg != NULL:
        arg[0] = kb
    return best


cdef void hull_aabb(const CShape* s, double* lo, double* hi) noexcept nogil:
    # exact: the extreme vertices along each world axis
    cdef double x
    cdef int i, k
    for i in range(3):
        lo[i] = INFINITY
        hi[i] = -INFINITY
    for k in range(s.nv):
        for i in range(3):
            x = s.R[3 * i] * s.V[3 * k] + s.R[3 * i + 1] * s.V[3 * k + 1] + s.R[3 * i + 2] * s.V[3 * k + 2]
            if x < lo[i]:
                lo[i] = x
            if x > hi[i]:
                hi[i] = x
    for i in range(3):
        lo[i] += s.p[i]
        hi[i] += s.p[i]


cdef double support_feature_more(const CShape* s, const double* n, Feature* f) noexcept nogil:
    # support_feature for a Cylinder or a ConvexHull (see the file's notes); returns h_S(n).
    cdef double d[3]
    cdef double w[3]
    cdef double g[3]
    cdef double e1[3]
    cdef double e2[3]
    cdef double c[3]
    cdef const double* q = s.prm
    cdef const double* v
    cdef double rho, sg, hmax, tie, a, b, amin, amax, bmin, bmax, dmax
    cdef int i, k, k0 = 0, kf = 0, count = 0
    mat33T_vec(s.R, n, d)
    f.dim = 0
    f.radius = INFINITY
    if s.code == CS_CYLINDER:
        col3(s.R, 2, g)
        rho = sqrt(d[0] * d[0] + d[1] * d[1])
        sg = 0.0
        if d[2] > SUPPORT_TIE:
            sg = 1.0
        elif d[2] < -SUPPORT_TIE:
            sg = -1.0
        if rho <= SUPPORT_TIE:
            # a cap: a disc, given as its circumscribed square (the point of face pairs only)
            f.dim = 2
            col3(s.R, 0, f.ax)
            col3(s.R, 1, f.ax + 3)
            f.half[0] = q[0]
            f.half[1] = q[0]
            for i in range(3):
                f.pt[i] = s.p[i] + sg * q[1] * g[i]
        else:
            w[0] = d[0] / rho; w[1] = d[1] / rho; w[2] = 0.0
            mat33_vec(s.R, w, e1)
            for i in range(3):
                f.pt[i] = s.p[i] + sg * q[1] * g[i] + q[0] * e1[i]
            if sg == 0.0:
                f.dim = 1
                f.ax[0] = g[0]; f.ax[1] = g[1]; f.ax[2] = g[2]
                f.half[0] = q[1]
                f.radius = q[0]
            elif fabs(d[2]) < rho:
                f.radius = q[0]
        return dot3(s.p, n) + q[0] * rho + q[1] * fabs(d[2])
    # ConvexHull
    hmax = hull_max(s, d, &k0)
    tie = SUPPORT_TIE * q[0]
    dmax = 0.0
    c[0] = 0.0; c[1] = 0.0; c[2] = 0.0
    for k in range(s.nv):
        v = s.V + 3 * k
        if v[0] * d[0] + v[1] * d[1] + v[2] * d[2] >= hmax - tie:
            count += 1
            for i in range(3):
                c[i] += v[i]
            a = ((v[0] - s.V[3 * k0]) * (v[0] - s.V[3 * k0]) + (v[1] - s.V[3 * k0 + 1]) * (v[1] - s.V[3 * k0 + 1])
                 + (v[2] - s.V[3 * k0 + 2]) * (v[2] - s.V[3 * k0 + 2]))
            if a > dmax:
                dmax = a
                kf = k
    if count == 1 or dmax <= 0.0:      # (repeated vertices: one point)
        mat33_vec(s.R, s.V + 3 * k0, f.pt)
    else:
        # e1 along the farthest supporting vertex from the first, in the plane; e2 = d x e1
        for i in range(3):
            e1[i] = s.V[3 * kf + i] - s.V[3 * k0 + i]
        a = dot3(e1, d)
        for i in range(3):
            e1[i] -= a * d[i]
        a = norm3(e1)
        if a <= 1e-300:                 # two vertices on the normal's line: any in-plane axis
            any_perpendicular(d, e1)
            a = 1.0
        for i in range(3):
            e1[i] /= a
        cross3(d, e1, e2)
        amin = INFINITY; amax = -INFINITY; bmin = INFINITY; bmax = -INFINITY
        for k in range(s.nv):
            v = s.V + 3 * k
            if v[0] * d[0] + v[1] * d[1] + v[2] * d[2] >= hmax - tie:
                for i in range(3):
                    w[i] = v[i] - s.V[3 * k0 + i]
                a = dot3(w, e1)
                b = dot3(w, e2)
                amin = a if a < amin else amin
                amax = a if a > amax else amax
                bmin = b if b < bmin else bmin
                bmax = b if b > bmax else bmax
        for i in range(3):
            w[i] = s.V[3 * k0 + i] + 0.5 * (amin + amax) * e1[i] + 0.5 * (bmin + bmax) * e2[i]
        mat33_vec(s.R, w, f.pt)
        mat33_vec(s.R, e1, f.ax)
        f.half[0] = 0.5 * (amax - amin)
        if count == 2 or bmax - bmin <= tie:
            f.dim = 1
        else:
            f.dim = 2
            mat33_vec(s.R, e2, f.ax + 3)
            f.half[1] = 0.5 * (bmax - bmin)
    for i in range(3):
        f.pt[i] += s.p[i]
    return dot3(s.p, n) + hmax


cdef int epa_tetra_start(const CShape* A, const CShape* B, double* V, int* F) noexcept nogil:
    # Four support points of K = A - B spanning a tetrahedron (each the extreme of K along a
    # direction, so K holds the tetrahedron), its faces oriented outwards; returns 4, or 0 if K is
    # flat to round-off (EPA then keeps its first query).
    cdef double d[3]
    cdef double e[3]
    cdef double s1[3]
    cdef double s2[3]
    cdef double m, a1, a2
    cdef int i, j, k, l, t, tmp
    cdef int faces[12]
    d[0] = 1.0; d[1] = 0.0; d[2] = 0.0
    support_K(A, B, d, V)
    d[0] = -1.0
    support_K(A, B, d, V + 3)
    for i in range(3):
        e[i] = V[3 + i] - V[i]
    m = norm3(e)
    if m <= 1e-300:
        return 0
    for i in range(3):
        e[i] /= m
    any_perpendicular(e, d)
    # the third and fourth: whichever of the two opposite support points is farther off
    for t in range(2):
        support_K(A, B, d, s1)
        for i in range(3):
            e[i] = -d[i]
        support_K(A, B, e, s2)
        a1 = fabs((s1[0] - V[0]) * d[0] + (s1[1] - V[1]) * d[1] + (s1[2] - V[2]) * d[2])
        a2 = fabs((s2[0] - V[0]) * d[0] + (s2[1] - V[1]) * d[1] + (s2[2] - V[2]) * d[2])
        for i in range(3):
            V[6 + 3 * t + i] = s1[i] if a1 >= a2 else s2[i]
        if (a1 if a1 >= a2 else a2) <= 1e-14 * (norm3(V) + norm3(V + 3) + 1e-300):
            return 0
        if t == 0:
            for i in range(3):
                s1[i] = V[3 + i] - V[i]
                s2[i] = V[6 + i] - V[i]
            cross3(s1, s2, d)
            m = norm3(d)
            if m <= 1e-300:
                return 0
            for i in range(3):
                d[i] /= m
    faces[0] = 0; faces[1] = 1; faces[2] = 2
    faces[3] = 0; faces[4] = 3; faces[5] = 1
    faces[6] = 1; faces[7] = 3; faces[8] = 2
    faces[9] = 0; faces[10] = 2; faces[11] = 3
    for t in range(4):
        i = faces[3 * t]; j = faces[3 * t + 1]; k = faces[3 * t + 2]
        l = 6 - i - j - k
        for tmp in range(3):
            s1[tmp] = V[3 * j + tmp] - V[3 * i + tmp]
            s2[tmp] = V[3 * k + tmp] - V[3 * i + tmp]
        cross3(s1, s2, d)
        for tmp in range(3):
            e[tmp] = V[3 * l + tmp] - V[3 * i + tmp]
        if dot3(d, e) > 0.0:
            j, k = k, j
        F[3 * t] = i; F[3 * t + 1] = j; F[3 * t + 2] = k
    return 4


cdef int halfspace_manifold_more(const CShape* A, const CShape* B, const double* n, double dep,
                                 Manifold* M) noexcept nogil:
    # The manifold of a Cylinder or a ConvexHull B on the half-space A (see the file's notes); 0 if
    # it does not reach the pair's exact depth dep (the single exact contact stands).
    cdef double m[3]
    cdef double ml[3]
    cdef double y[3]
    cdef double w[3]
    cdef double e1[3]
    cdef double e2[3]
    cdef double t[3]
    cdef double tl[3]
    cdef int idx[MAX_MANIFOLD]
    cdef double h, x, best = -INFINITY, rho, ur0, ur1, cth, sth, proj, bp, off, tie
    cdef int i, j, k, kb, cap, nid = 0
    cdef bint seen
    for i in range(3):
        m[i] = n[i]
    h = support_value(A, m)
    if B.code == CS_CYLINDER:
        for i in range(3):
            w[i] = -m[i]
        mat33T_vec(B.R, w, ml)     # the deepest direction, in B
        rho = sqrt(ml[0] * ml[0] + ml[1] * ml[1])
        ur0 = 1.0
        ur1 = 0.0
        if rho > 0.0:
            ur0 = ml[0] / rho
            ur1 = ml[1] / rho
        for cap in range(2):
            for k in range(4):
                # rotations of (ur0, ur1) by k quarter turns
                cth = ur0 if k == 0 else (-ur1 if k == 1 else (-ur0 if k == 2 else ur1))
                sth = ur1 if k == 0 else (ur0 if k == 1 else (-ur1 if k == 2 else -ur0))
                w[0] = B.prm[0] * cth
                w[1] = B.prm[0] * sth
                w[2] = B.prm[1] if cap == 0 else -B.prm[1]
                mat33_vec(B.R, w, y)
                for i in range(3):
                    y[i] += B.p[i]
                x = h - dot3(y, m)
                if x > 0.0 and M.count < MAX_MANIFOLD:
                    M.depth[M.count] = x
                    for i in range(3):
                        M.pt[3 * M.count + i] = y[i] + 0.5 * x * m[i]
                    M.count += 1
                    if x > best:
                        best = x
        if fabs(ml[2]) < rho:
            M.rB = B.prm[0]
    else:
        mat33T_vec(B.R, m, ml)
        off = h - dot3(B.p, m)           # depth of vertex k: off - V_k.ml
        kb = -1
        for k in range(B.nv):
            x = off - (B.V[3 * k] * ml[0] + B.V[3 * k + 1] * ml[1] + B.V[3 * k + 2] * ml[2])
            if x > best:
                best = x
                kb = k
        if kb < 0 or not best > 0.0:
            return 0
        idx[0] = kb
        nid = 1
        any_perpendicular(m, e1)
        cross3(m, e1, e2)
        for j in range(8):
            cth = _COS8[j]
            sth = _COS8[(j + 6) % 8]     # sin(j pi/4) = cos((j - 2) pi/4)
            for i in range(3):
                t[i] = cth * e1[i] + sth * e2[i]
            mat33T_vec(B.R, t, tl)
            bp = -INFINITY
            kb = -1
            for k in range(B.nv):
                x = off - (B.V[3 * k] * ml[0] + B.V[3 * k + 1] * ml[1] + B.V[3 * k + 2] * ml[2])
                if x > 0.0:
                    proj = B.V[3 * k] * tl[0] + B.V[3 * k + 1] * tl[1] + B.V[3 * k + 2] * tl[2]
                    if proj > bp:
                        bp = proj
                        kb = k
            if kb < 0:
                continue
            seen = False
            for i in range(nid):
                if idx[i] == kb:
                    seen = True
            if not seen and nid < MAX_MANIFOLD:
                idx[nid] = kb
                nid += 1
        for j in range(nid):
            k = idx[j]
            mat33_vec(B.R, B.V + 3 * k, y)
            for i in range(3):
                y[i] += B.p[i]
            x = h - dot3(y, m)
            M.depth[M.count] = x
            for i in range(3):
                M.pt[3 * M.count + i] = y[i] + 0.5 * x * m[i]
            M.count += 1
    tie = SUPPORT_TIE * (fabs(h) + shape_size(A) + shape_size(B))
    if M.count == 0 or fabs(best - dep) > tie:
        M.count = 0
        M.rB = INFINITY
        return 0
    return M.count


cdef double _COS8[8]
_COS8[0] = 1.0
_COS8[1] = sqrt(0.5)
_COS8[2] = 0.0
_COS8[3] = -sqrt(0.5)
_COS8[4] = -1.0
_COS8[5] = -sqrt(0.5)
_COS8[6] = 0.0
_COS8[7] = sqrt(0.5)


cdef inline bint pair_excluded(const double* ex, Py_ssize_t nex, int a, int b) noexcept nogil:
    # binary search of (min, max) in the sorted pairs ex (2 doubles each)
    cdef double i = a if a < b else b
    cdef double j = b if a < b else a
    cdef Py_ssize_t lo = 0, hi = nex, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if ex[2 * mid] < i or (ex[2 * mid] == i and ex[2 * mid + 1] < j):
            lo = mid + 1
        else:
            hi = mid
    return lo < nex and ex[2 * lo] == i and ex[2 * lo + 1] == j


cdef int _hull_vertices(CShape* s, const double[:, ::1] vertices) except -1:
    # a ConvexHull's vertices (params: size, count, first row), bounds checked; none for the others
    cdef Py_ssize_t first, count
    s.V = NULL
    s.nv = 0
    if s.code != CS_HULL:
        return 0
    first = <Py_ssize_t>s.prm[2]
    count = <Py_ssize_t>s.prm[1]
    if vertices is None or count < 4 or first < 0 or first + count > vertices.shape[0] or vertices.shape[1] != 3:
        raise ValueError("a ConvexHull's vertex rows (params: size, count >= 4, first) are not in vertices")
    s.V = &vertices[first, 0]
    s.nv = <int>count
    return 0
