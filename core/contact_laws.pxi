# Compliant contact force laws (issue 12), evaluated over all contacts of an element in one call.
#
# Both kernels read the body kinematics of a TreeKernels workspace (p_GB, R_GB, V_GB, passed as the
# workspace's own arrays) and add (torque about the body origin, force) in Ground into
# body_forces (nb, 2, 3). simtk/multibody/contact/_laws.py checks every argument before calling in;
# the kernels check nothing and allocate nothing.
#
# hunt_crossley_law: Simbody's HuntCrossleyForce for point contacts (Hunt & Crossley 1975 damping
# on a Hertz spring; Sherman, Seth & Delp 2011 for the combination of two materials), and for
# flat-on-flat contacts (R1 = R2 = inf: a brick's vertex on a half-space or on a brick's face, one
# contact of a manifold) the law Simbody's CompliantContactSubsystem applies at each penetrating
# vertex of a brick on a half-space (ContactForceGenerator::BrickHalfSpacePenalty):
#   k_i the stiffnesses themselves (k' ^ 3/2), s1 = k2/(k1+k2), k = k1 s1, c = c1 s1 + c2 s2
#   fK = k d, PE = k d^2 / 2, f = fK (1 + c vn), the point and the friction as below.
# Hertz contacts:
#   per surface  k_i' = k_i^(2/3) (packed already raised), c_i, us_i, ud_i, uv_i
#   s1 = k2'/(k1'+k2'), s2 = 1 - s1, k' = k1' s1, c = c1 s1 + c2 s2
#   R = R1 R2/(R1+R2)  (the flat one of a pair drops out)
#   fH = 4/3 k' d sqrt(R k' d),  PE = 2/5 fH d
#   f  = fH (1 + 3/2 c vn), never pulling: fn = max(f, 0)
#   the contact point moves from the midway point by d (1/2 - s1) along n, toward the softer body
#   friction (Stribeck-Coulomb-viscous) with the pair's harmonic means of us, ud, uv:
#   ff = fn (min(vr, 1) (ud + 2 (us - ud)/(1 + vr^2)) + uv vs), vr = vs/vt, along the slip
# smooth_sphere_half_space_law: Simbody's SmoothSphereHalfSpaceForce (what OpenSim's
# SmoothSphereHalfSpaceForce creates), the same law made differentiable by tanh switches and a
# constant cf under the square roots; see simtk/multibody/contact/smooth.py.

from libc.math cimport tanh, pow, isinf

# Columns of the per-contact report row written by hunt_crossley_law.
HC_REPORT_COLUMNS = ("px", "py", "pz", "normal_force", "fx", "fy", "fz", "energy", "dissipated_power")


cdef inline void _station_velocity(const double* p_GB, const double* V_GB, Py_ssize_t b, const double* p,
                                   double* v) noexcept nogil:
    # velocity of the point of body b at Ground location p: v_origin + w x (p - p_GB)
    cdef double rx = p[0] - p_GB[3 * b], ry = p[1] - p_GB[3 * b + 1], rz = p[2] - p_GB[3 * b + 2]
    cdef const double* w = V_GB + 6 * b
    v[0] = w[3] + w[1] * rz - w[2] * ry
    v[1] = w[4] + w[2] * rx - w[0] * rz
    v[2] = w[5] + w[0] * ry - w[1] * rx


cdef inline void _apply_at_point(const double* p_GB, double* F, Py_ssize_t b, const double* p,
                                 const double* f, double sign) noexcept nogil:
    # add sign * f at Ground point p to body b: torque (p - p_GB) x f about the body origin
    cdef double rx = p[0] - p_GB[3 * b], ry = p[1] - p_GB[3 * b + 1], rz = p[2] - p_GB[3 * b + 2]
    cdef double fx = sign * f[0], fy = sign * f[1], fz = sign * f[2]
    cdef double* out = F + 6 * b
    out[0] += ry * fz - rz * fy
    out[1] += rz * fx - rx * fz
    out[2] += rx * fy - ry * fx
    out[3] += fx
    out[4] += fy
    out[5] += fz


cdef inline double _harmonic(double a, double b) noexcept nogil:
    # Simbody's combination of two friction coefficients: 2ab/(a+b), and 0 when both are 0
    if a == 0.0 and b == 0.0:
        return 0.0
    return 2.0 * a * b / (a + b)


cdef inline double _stribeck(double fn, double vs, double vt, double us, double ud, double uv) noexcept nogil:
    # Stribeck-Coulomb-viscous friction magnitude at slip speed vs
    cdef double vr = vs / vt
    cdef double m = vr if vr < 1.0 else 1.0
    return fn * (m * (ud + 2.0 * (us - ud) / (1.0 + vr * vr)) + uv * vs)


cdef double hc_spring(const double* la, const double* lb, double d, double R1, double R2, double* s1,
                      double* c, double* fH, double* cH) noexcept nogil:
    # The Hertz (or, flat on flat, linear) spring of one contact of depth d between surfaces with
    # laws la, lb (k^(2/3), c, us, ud, uv): the stiffness share s1 of surface 1, the combined
    # dissipation c, the spring force fH and the damping factor cH. Returns the contact's energy.
    cdef double k1 = la[0], k2 = lb[0], k, R
    cdef bint flat = isinf(R1) and isinf(R2)
    if flat:
        # Simbody's BrickHalfSpacePenalty combines the stiffnesses themselves
        k1 = pow(k1, 1.5)
        k2 = pow(k2, 1.5)
    s1[0] = k2 / (k1 + k2)
    k = k1 * s1[0]
    c[0] = la[1] * s1[0] + lb[1] * (1.0 - s1[0])
    if flat:
        fH[0] = k * d      # the linear spring at a vertex
        cH[0] = 1.0        # and its damping k d c vn (no 3/2: that comes from Hertz's d^(3/2))
        return 0.5 * k * d * d
    if isinf(R1):
        R = R2
    elif isinf(R2):
        R = R1
    else:
        R = R1 * R2 / (R1 + R2)
    fH[0] = (4.0 / 3.0) * k * d * sqrt(R * k * d)
    cH[0] = 1.5
    return 0.4 * fH[0] * d


cdef double hc_contact(const double* la, const double* lb, idx_t ba, idx_t bb, const double* p, const double* n,
                       double d, double R1, double R2, double vt, const double* p_GB, const double* V_GB,
                       double* F, double* loc, double* report) noexcept nogil:
    # One contact (point p, normal n from surface 1 on body ba into surface 2 on body bb, depth d,
    # radii R1, R2): the force F (3) on bb at the Ground point loc (ba gets -F) and the report row
    # (9, HC_REPORT_COLUMNS). Returns the contact's energy. Applies nothing: the callers do.
    cdef double s1, c, fH, cH, pe, vn, f, fn, vs, ff
    cdef double v1[3]
    cdef double v2[3]
    cdef double v[3]
    cdef double vtan[3]
    pe = hc_spring(la, lb, d, R1, R2, &s1, &c, &fH, &cH)
    loc[0] = p[0] + d * (0.5 - s1) * n[0]
    loc[1] = p[1] + d * (0.5 - s1) * n[1]
    loc[2] = p[2] + d * (0.5 - s1) * n[2]
    _station_velocity(p_GB, V_GB, ba, loc, v1)
    _station_velocity(p_GB, V_GB, bb, loc, v2)
    v[0] = v1[0] - v2[0]
    v[1] = v1[1] - v2[1]
    v[2] = v1[2] - v2[2]
    vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2]  # rate of penetration
    vtan[0] = v[0] - vn * n[0]
    vtan[1] = v[1] - vn * n[1]
    vtan[2] = v[2] - vn * n[2]
    f = fH * (1.0 + cH * c * vn)
    fn = f if f > 0.0 else 0.0
    F[0] = fn * n[0]
    F[1] = fn * n[1]
    F[2] = fn * n[2]
    vs = sqrt(vtan[0] * vtan[0] + vtan[1] * vtan[1] + vtan[2] * vtan[2])
    ff = 0.0
    if vs != 0.0:
        # Friction scales with the applied (clamped) normal force: a contact that pushes nothing
        # rubs nothing (the unclamped f would reverse friction while the bodies separate faster
        # than 2/(3c)).
        ff = _stribeck(fn, vs, vt, _harmonic(la[2], lb[2]), _harmonic(la[3], lb[3]), _harmonic(la[4], lb[4])) / vs
    report[4] = ff * vtan[0]
    report[5] = ff * vtan[1]
    report[6] = ff * vtan[2]
    F[0] += report[4]
    F[1] += report[5]
    F[2] += report[6]
    report[0] = loc[0]
    report[1] = loc[1]
    report[2] = loc[2]
    report[3] = fn
    report[7] = pe
    # power the contact takes out of the system beyond the Hertz spring's exchange:
    # d(KE)/dt = -F . v and d(PE)/dt = fH vn
    report[8] = F[0] * v[0] + F[1] * v[1] + F[2] * v[2] - fH * vn
    return pe


def hunt_crossley_law(const idx_t[::1] surf_body, const double[:, ::1] surf_law, double vt,
                      const idx_t[::1] surf1, const idx_t[::1] surf2, const double[:, ::1] p_G,
                      const double[:, ::1] n_G, const double[::1] depth, const double[::1] R1,
                      const double[::1] R2, const double[:, ::1] p_GB, const double[:, :, ::1] V_GB,
                      double[:, :, ::1] body_forces, double[:, ::1] report):
    """Add the Hunt-Crossley forces of ``nc`` contacts; fill ``report`` (nc, 9); return the energy.

    ``surf_law`` (ns, 5) holds per surface (k^(2/3), c, us, ud, uv); ``surf_body`` (ns,) the body
    index of each surface. The contact arrays are those of ``detect`` (normal from surface 1 into
    surface 2); ``report`` rows are HC_REPORT_COLUMNS: the contact point used, the normal force
    (>= 0), the friction force on surface 2's body, the contact's energy and its dissipated power.
    The compiled force kind "HuntCrossley" runs the same contact function (core/contact_force.pxi).
    """
    cdef Py_ssize_t i, nc = depth.shape[0]
    cdef idx_t a, b
    cdef double pe_total = 0.0
    cdef double F[3]
    cdef double loc[3]
    with nogil:
        for i in range(nc):
            a = surf1[i]
            b = surf2[i]
            pe_total += hc_contact(&surf_law[a, 0], &surf_law[b, 0], surf_body[a], surf_body[b], &p_G[i, 0],
                                   &n_G[i, 0], depth[i], R1[i], R2[i], vt, &p_GB[0, 0], &V_GB[0, 0, 0], F, loc,
                                   &report[i, 0])
            _apply_at_point(&p_GB[0, 0], &body_forces[0, 0, 0], surf_body[a], loc, F, -1.0)
            _apply_at_point(&p_GB[0, 0], &body_forces[0, 0, 0], surf_body[b], loc, F, 1.0)
    return pe_total


# Parameter columns of smooth_sphere_half_space_law, per element.
SMOOTH_PARAMS = ("stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction",
                 "transition_velocity", "constant_contact_force", "hertz_smoothing", "hunt_crossley_smoothing",
                 "radius")
# Columns of its report row: indentation, contact point (3), normal force, friction force on the
# half-space body (3), energy.
SMOOTH_REPORT_COLUMNS = ("indentation", "px", "py", "pz", "normal_force", "fx", "fy", "fz", "energy")


cdef double smooth_element(const double* prm, idx_t s, const double* p_BS, idx_t h, const double* R_HF,
                           const double* p_HF, const double* R_GB, const double* p_GB, const double* V_GB,
                           double* F, double* pt, double* report) noexcept nogil:
    # One smooth sphere/half-space element (prm: its SMOOTH_PARAMS; R_HF (9), p_HF (3) the
    # half-space frame in body h; p_BS the sphere centre in body s). Writes the force F (3) on the
    # half-space's body at the Ground point pt (the sphere's body gets -F) and the report row (9);
    # returns the element's (approximate) energy. Applies nothing: the callers do, after checking.
    cdef Py_ssize_t j
    cdef double r = prm[9], ind, kk, fh, fhs, fhc, vn, vs, ff
    cdef double c_B[3]
    cdef double c[3]
    cdef double x[3]
    cdef double o[3]
    cdef double v1[3]
    cdef double v2[3]
    cdef double v[3]
    cdef double vtan[3]
    mat33_vec(R_GB + 9 * s, p_BS, c)  # sphere centre, from the body origin, in G
    for j in range(3):
        c[j] += p_GB[3 * s + j]
        c_B[j] = R_HF[3 * j]  # the half-space frame's x axis, in H
    mat33_vec(R_GB + 9 * h, c_B, x)
    mat33_vec(R_GB + 9 * h, p_HF, o)
    for j in range(3):
        o[j] += p_GB[3 * h + j]
    # depth of the sphere's deepest point below the plane (the material is on +x)
    ind = (c[0] - o[0]) * x[0] + (c[1] - o[1]) * x[1] + (c[2] - o[2]) * x[2] + r
    # contact point: the sphere's deepest point moved back by half the indentation
    for j in range(3):
        pt[j] = c[j] + r * x[j] - 0.5 * ind * x[j]
    _station_velocity(p_GB, V_GB, s, pt, v1)
    _station_velocity(p_GB, V_GB, h, pt, v2)
    for j in range(3):
        v[j] = v1[j] - v2[j]
    vn = v[0] * x[0] + v[1] * x[1] + v[2] * x[2]
    for j in range(3):
        vtan[j] = v[j] - vn * x[j]
    kk = 0.5 * pow(prm[0], 2.0 / 3.0)  # two equal materials: s1 = 1/2
    fh = (4.0 / 3.0) * kk * sqrt(r * kk) * pow(sqrt(ind * ind + prm[6]), 1.5)
    fhs = fh * (0.5 + 0.5 * tanh(prm[7] * ind))
    # c = 0 gives 2/(3c) = +inf and the switch is 1 (cdivision: IEEE division)
    fhc = fhs * (1.0 + 1.5 * prm[1] * vn) * (0.5 + 0.5 * tanh(prm[8] * (vn + 2.0 / (3.0 * prm[1]))))
    vs = sqrt(vtan[0] * vtan[0] + vtan[1] * vtan[1] + vtan[2] * vtan[2] + prm[6])
    ff = _stribeck(fhc, vs, prm[5], prm[2], prm[3], prm[4]) / vs
    for j in range(3):
        report[5 + j] = ff * vtan[j]
        F[j] = fhc * x[j] + ff * vtan[j]
        report[1 + j] = pt[j]
    report[0] = ind
    report[4] = fhc
    report[8] = 0.4 * fhs * ind
    return report[8]


def smooth_sphere_half_space_law(const idx_t[::1] sphere_body, const double[:, ::1] p_BS,
                                 const idx_t[::1] half_space_body, const double[:, :, ::1] R_HF,
                                 const double[:, ::1] p_HF, const double[:, ::1] params,
                                 const double[:, :, ::1] R_GB, const double[:, ::1] p_GB,
                                 const double[:, :, ::1] V_GB, double[:, :, ::1] body_forces,
                                 double[:, ::1] report):
    """Add the smoothed sphere/half-space forces of ``n`` elements; fill ``report``; return the energy.

    Element i: a sphere of radius params[i, 9] centred at p_BS[i] on body sphere_body[i], and the
    half-space x > 0 of frame (R_HF[i], p_HF[i]) on body half_space_body[i] (Simbody's and
    OpenSim's convention: the material is on the frame's +x side). ``params`` columns are
    SMOOTH_PARAMS; ``report`` (n, 9) rows SMOOTH_REPORT_COLUMNS. The compiled force kind
    "SmoothSphereHalfSpace" (core/forces.pxi) runs the same element function.
    """
    cdef Py_ssize_t i, n = params.shape[0]
    cdef double pe_total = 0.0
    cdef double F[3]
    cdef double pt[3]
    with nogil:
        for i in range(n):
            pe_total += smooth_element(&params[i, 0], sphere_body[i], &p_BS[i, 0], half_space_body[i],
                                       &R_HF[i, 0, 0], &p_HF[i, 0], &R_GB[0, 0, 0], &p_GB[0, 0], &V_GB[0, 0, 0],
                                       F, pt, &report[i, 0])
            _apply_at_point(&p_GB[0, 0], &body_forces[0, 0, 0], sphere_body[i], pt, F, -1.0)
            _apply_at_point(&p_GB[0, 0], &body_forces[0, 0, 0], half_space_body[i], pt, F, 1.0)
    return pe_total
