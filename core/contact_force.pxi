# Force.HuntCrossley as a compiled force kind ("HuntCrossley" of core/forces.pxi): detection and the
# law of one element, over its surfaces, in one nogil call that allocates nothing for elements of
# up to HC_MAX_SURFACES surfaces and HC_MAX_CONTACTS contacts (larger ones use the heap).
#
# It repeats exactly what the element's Python path (simtk/multibody/contact/hunt_crossley.py) does
# with the same compiled functions, so its forces equal that path's bitwise:
#   X_GS = X_GB X_BS per surface (surface_poses);
#   the contacts of detect_kernel, stably sorted by (surface 1, surface 2) (numpy's lexsort);
#   pairs on one body left out;
#   hc_contact per contact in that order, applied to both bodies.
#
# Packed layout (per surface j, an element's surfaces consecutive): bodies[j], stations[j] = p_BS,
# params[j] = (element, clique + 1, shape code, 3 shape parameters, R_BS (9), k^(2/3), c, us, ud,
# uv, transition velocity, first excluded pair, excluded pairs). The set's aux array (FSet.aux) holds
# the variable-length data at those offsets (in doubles): a ConvexHull's vertices (its shape
# parameters are size, vertex count, first), an element's excluded surface pairs (i < j, its own
# surface numbers, sorted; the same two columns on each of its rows). _hc_check_rows checks them.

cdef enum:
    HC_MAX_SURFACES = 64
    HC_MAX_CONTACTS = 256
    HC_NPK = 23


def _hc_check_rows(params, aux):
    """The HuntCrossley rows' aux data as a read-only float64 array, after checking that every offset
    the rows hold addresses it (a wrong offset would read out of bounds in the kernel)."""
    a = np.ascontiguousarray(np.zeros(0) if aux is None else aux, dtype=np.float64).reshape(-1)
    if params.shape[1] != HC_NPK:
        raise ValueError(f"ForceSet (HuntCrossley): params must have {HC_NPK} columns")
    if not np.isfinite(a).all():
        raise ValueError("ForceSet (HuntCrossley): aux holds a non-finite number")
    codes = params[:, 2]
    if not np.isin(codes, np.arange(CS_NUM)).all():
        raise ValueError("ForceSet (HuntCrossley): a shape code is unknown")
    for j in np.flatnonzero(codes == CS_HULL):
        nv, first = params[j, 4], params[j, 5]
        if not (nv >= 4 and first >= 0 and nv == int(nv) and first == int(first) and first + 3 * nv <= a.size):
            raise ValueError(f"ForceSet (HuntCrossley): row {j}: its ConvexHull's vertices are not in aux")
    first, count = params[:, 21], params[:, 22]
    bad = ~((first >= 0) & (count >= 0) & (first == np.floor(first)) & (count == np.floor(count))
            & (first + 2 * count <= a.size))
    if bad.any():
        raise ValueError(f"ForceSet (HuntCrossley): row {int(np.flatnonzero(bad)[0])}: its excluded pairs "
                         "are not in aux")
    a = a.copy()
    a.flags.writeable = False
    return a


# a linearization's accumulators (core/implicit_step.pxi: hc_element with lin != NULL adds each
# contact's damping and stiffness matrices there instead of applying its force)
cdef struct HcLin:
    # D and K (nu, nu), a 3 x nu scratch J_r, the touched columns and their marks
    Py_ssize_t nu
    double* D
    double* K
    double* Jr
    idx_t* cols
    char* mark


cdef inline void surface_pose(const Tree* t, idx_t b, const double* R_BS, const double* p_BS, double* R_GS,
                              double* p_GS) noexcept nogil:
    # X_GS = X_GB X_BS
    mat33_mul(t.R_GB + 9 * b, R_BS, R_GS)
    mat33_vec(t.R_GB + 9 * b, p_BS, p_GS)
    p_GS[0] += t.p_GB[3 * b]
    p_GS[1] += t.p_GB[3 * b + 1]
    p_GS[2] += t.p_GB[3 * b + 2]


def surface_poses(TreeKernels ws, const idx_t[::1] body, const double[:, :, ::1] R_BS, const double[:, ::1] p_BS,
                  double[:, :, ::1] R_GS, double[:, ::1] p_GS):
    """R_GS, p_GS (ns, 3, 3), (ns, 3) of surfaces on ``body`` at X_BS, from the workspace's body poses:
    the products the compiled HuntCrossley kind uses (checked by the caller)."""
    cdef Py_ssize_t i
    for i in range(body.shape[0]):
        surface_pose(&ws.t, body[i], &R_BS[i, 0, 0], &p_BS[i, 0], &R_GS[i, 0, 0], &p_GS[i, 0])


cdef int _hc_detect(int ns, CShape* S, const int* clique, double* box, SortKey* keys, Py_ssize_t keys_cap,
                    Py_ssize_t cap, long long* surf, double* pt, double* nrm, double* depth, double* r1,
                    double* r2, Py_ssize_t* nc, const double* ex, Py_ssize_t nex) noexcept nogil:
    nc[0] = detect_kernel(ns, S, clique, box, cap, surf, pt, nrm, depth, r1, r2, 0.0, NULL, NULL, keys, keys_cap,
                          ex, nex)
    return 0 if nc[0] >= 0 else -1


cdef int _hc_apply(const FSet* s, Py_ssize_t j0, const Tree* t, Py_ssize_t nc, const long long* surf,
                   const double* pt, const double* nrm, const double* depth, const double* r1, const double* r2,
                   Py_ssize_t* order, double* bf, double* energy, HcLin* lin) noexcept nogil:
    # Sort the contacts stably by (surface 1, surface 2) (insertion sort: an element has few), then
    # apply each one between two bodies; energy only (bf NULL): the springs' energies; lin not NULL
    # (and bf NULL): each contact's linearization into lin (core/implicit_step.pxi). Returns -1 if
    # a force or its point is not finite (the contact is left out), else 0.
    cdef Py_ssize_t i, k, m, a, b
    cdef idx_t ba, bb
    cdef int ok = 0
    cdef double vt = s.params[HC_NPK * j0 + 20]
    cdef double F[3]
    cdef double loc[3]
    cdef double report[9]
    cdef double s1, c, fH, cH
    cdef const double* la
    cdef const double* lb
    for i in range(nc):
        order[i] = i
    for i in range(1, nc):
        k = order[i]
        m = i - 1
        while m >= 0 and (surf[2 * order[m]] > surf[2 * k]
                          or (surf[2 * order[m]] == surf[2 * k] and surf[2 * order[m] + 1] > surf[2 * k + 1])):
            order[m + 1] = order[m]
            m -= 1
        order[m + 1] = k
    for i in range(nc):
        k = order[i]
        a = j0 + surf[2 * k]
        b = j0 + surf[2 * k + 1]
        ba = s.bodies[a]
        bb = s.bodies[b]
        if ba == bb:
            continue  # a body touching itself: equal and opposite forces at one point, and no energy
        la = s.params + HC_NPK * a + 15
        lb = s.params + HC_NPK * b + 15
        if lin != NULL:
            hc_linearize(lin, t, la, lb, ba, bb, pt + 3 * k, nrm + 3 * k, depth[k], r1[k], r2[k], vt)
            continue
        if bf == NULL:
            energy[0] += hc_spring(la, lb, depth[k], r1[k], r2[k], &s1, &c, &fH, &cH)
            continue
        energy[0] += hc_contact(la, lb, ba, bb, pt + 3 * k, nrm + 3 * k, depth[k], r1[k], r2[k], vt, t.p_GB,
                                t.V_GB, F, loc, report)
        if not (isfinite(F[0]) and isfinite(F[1]) and isfinite(F[2])
                and isfinite(loc[0]) and isfinite(loc[1]) and isfinite(loc[2])):
            ok = -1
            continue
        _apply_at_point(t.p_GB, bf, ba, loc, F, -1.0)
        _apply_at_point(t.p_GB, bf, bb, loc, F, 1.0)
    return ok


cdef int hc_element(const FSet* s, Py_ssize_t j0, Py_ssize_t j1, const Tree* t, double* bf,
                    double* energy, HcLin* lin=NULL) noexcept nogil:
    # One element's contacts (its surfaces j0..j1-1): forces into bf, or (bf NULL) the energy.
    # Returns 0, or -1 when its surfaces' poses or forces are not finite, or memory ran out.
    cdef int ns = <int>(j1 - j0), i, ok
    cdef Py_ssize_t nc = 0, cap = HC_MAX_CONTACTS
    cdef const double* prm
    cdef const double* ex
    cdef Py_ssize_t nex
    # stack scratch for the common case
    cdef CShape S_[HC_MAX_SURFACES]
    cdef int clique_[HC_MAX_SURFACES]
    cdef double box_[6 * HC_MAX_SURFACES]
    cdef double R_[9 * HC_MAX_SURFACES]
    cdef double p_[3 * HC_MAX_SURFACES]
    cdef SortKey keys_[4 * HC_MAX_SURFACES]
    cdef long long surf_[2 * HC_MAX_CONTACTS]
    cdef double pt_[3 * HC_MAX_CONTACTS]
    cdef double nrm_[3 * HC_MAX_CONTACTS]
    cdef double depth_[HC_MAX_CONTACTS]
    cdef double r1_[HC_MAX_CONTACTS]
    cdef double r2_[HC_MAX_CONTACTS]
    cdef Py_ssize_t order_[HC_MAX_CONTACTS]
    cdef CShape* S = S_
    cdef int* clique = clique_
    cdef double* box = box_
    cdef double* R = R_
    cdef double* p = p_
    cdef void* heap_s = NULL
    cdef void* heap_c = NULL
    cdef long long* surf = surf_
    cdef double* pt = pt_
    cdef double* nrm = nrm_
    cdef double* depth = depth_
    cdef double* r1 = r1_
    cdef double* r2 = r2_
    cdef Py_ssize_t* order = order_
    if ns < 2:
        return 0
    if ns > HC_MAX_SURFACES:
        heap_s = malloc(ns * (sizeof(CShape) + sizeof(int) + 18 * sizeof(double)))
        if heap_s == NULL:
            return -1
        S = <CShape*>heap_s
        R = <double*>(S + ns)
        p = R + 9 * ns
        box = p + 3 * ns
        clique = <int*>(box + 6 * ns)
    for i in range(ns):
        prm = s.params + HC_NPK * (j0 + i)
        surface_pose(t, s.bodies[j0 + i], prm + 6, s.stations + 3 * (j0 + i), R + 9 * i, p + 3 * i)
        if first_non_finite_at(R + 9 * i, 9) >= 0 or first_non_finite_at(p + 3 * i, 3) >= 0:
            free(heap_s)
            return -1
        S[i].code = <int>prm[2]
        S[i].prm = prm + 3
        S[i].R = R + 9 * i
        S[i].p = p + 3 * i
        S[i].V = NULL
        S[i].nv = 0
        if S[i].code == CS_HULL:
            S[i].V = s.aux + <Py_ssize_t>prm[5]
            S[i].nv = <int>prm[4]
        clique[i] = <int>prm[1] - 1
    prm = s.params + HC_NPK * j0
    nex = <Py_ssize_t>prm[22]
    ex = s.aux + <Py_ssize_t>prm[21] if nex > 0 else NULL
    ok = _hc_detect(ns, S, clique, box, keys_, 4 * HC_MAX_SURFACES, cap, surf, pt, nrm, depth, r1, r2, &nc,
                    ex, nex)
    if ok == 0 and nc > cap:  # more contacts than the stack holds: again into the heap
        cap = nc
        heap_c = malloc(cap * (2 * sizeof(long long) + 9 * sizeof(double) + sizeof(Py_ssize_t)))
        if heap_c == NULL:
            free(heap_s)
            return -1
        surf = <long long*>heap_c
        pt = <double*>(surf + 2 * cap)
        nrm = pt + 3 * cap
        depth = nrm + 3 * cap
        r1 = depth + cap
        r2 = r1 + cap
        order = <Py_ssize_t*>(r2 + cap)
        ok = _hc_detect(ns, S, clique, box, keys_, 4 * HC_MAX_SURFACES, cap, surf, pt, nrm, depth, r1, r2, &nc,
                        ex, nex)
    if ok == 0:
        ok = _hc_apply(s, j0, t, nc, surf, pt, nrm, depth, r1, r2, order, bf, energy, lin)
    free(heap_s)
    free(heap_c)
    return ok


cdef Py_ssize_t k_hunt_crossley(const FSet* s, const Tree* t, double* bf, double* energy) noexcept nogil:
    # Every element of the set (consecutive runs of one element number). Returns the first element
    # whose forces failed (see hc_element), or -1.
    cdef Py_ssize_t j0 = 0, j1, bad = -1
    cdef double e
    while j0 < s.n:
        e = s.params[HC_NPK * j0]
        j1 = j0 + 1
        while j1 < s.n and s.params[HC_NPK * j1] == e:
            j1 += 1
        if hc_element(s, j0, j1, t, bf, energy) != 0 and bad < 0:
            bad = <Py_ssize_t>e
        j0 = j1
    return bad
