# Built-in force elements, evaluated in bulk over the kinematics of a
# TreeKernels workspace. Each kind is a row of FORCE_KIND_TABLE (below): the
# function that adds a set's forces and the one that sums its energy, which
# fset_add and fset_energy call through the kind's code.
#
# A ForceSet holds the packed parameters of all enabled elements of ONE kind
# (built once per State at Instance stage, validated by simtk/_core.py); one
# call adds every element's forces into body_forces (nb,2,3) (torque about the
# body origin, force at the body origin, in Ground) and mobility_forces (nu,),
# reading R_GB, p_GB, V_GB, p_GC, mass, p_BC, q and u straight from the
# workspace's Tree struct. The kernels are noexcept nogil and allocate nothing.
#
# Sign conventions (Simbody's): a two-point spring pulls its stations together
# when stretched; a positive two-point constant force pushes them apart; a
# mobility spring pushes its coordinate back to q0.
#
# Packed layout of a set of n elements of a kind with nbk bodies and npk
# parameters per element (see FORCE_KINDS):
#   bodies   (n, nbk) int64       body indices
#   stations (n, nbk, 3) float64  a station (in its body's frame) per body
#   params   (n, npk) float64     the constants, in the order FORCE_KINDS lists
#   index    (n, 2) int64         (q index, u index) for the mobility kinds

from libc.math cimport asin, atan2, isfinite, pow

# The exponent of CoordinateLimit's squares, a variable: the C compiler turns pow(x, 2.0) with a constant
# 2.0 into x * x, which may differ in the last bit from the libm pow that Python's float ** 2 calls.
cdef double _SQUARE = 2.0

cdef enum:
    FK_GRAVITY = 0
    FK_TWO_POINT_SPRING = 1
    FK_TWO_POINT_DAMPER = 2
    FK_TWO_POINT_CONSTANT = 3
    FK_MOBILITY_SPRING = 4
    FK_MOBILITY_DAMPER = 5
    FK_MOBILITY_CONSTANT = 6
    FK_MOBILITY_STOP = 7
    FK_GLOBAL_DAMPER = 8
    FK_CONSTANT_FORCE = 9
    FK_CONSTANT_TORQUE = 10
    FK_BUSHING = 11
    FK_SMOOTH_SPHERE = 12
    FK_HUNT_CROSSLEY = 13
    FK_COORDINATE_LIMIT = 14
    FK_ACTUATOR = 15
    FK_PATH = 16
    FK_JIT = 17
    FK_THELEN = 18
    FK_MILLARD = 19
    FK_MOBILITY_FRICTION = 20  # core/mobility_friction.pxi
    FK_DEGROOTE = 21
    FK_NUM_KINDS = 22

# FK_ACTUATOR's "type" parameter
cdef enum:
    ACT_COORDINATE = 0
    ACT_TORQUE = 1
    ACT_POINT = 2

# name -> (code, bodies per element, parameter names, uses (q, u) indices)
FORCE_KINDS = {
    "UniformGravity": (FK_GRAVITY, 0, ("gx", "gy", "gz", "zero_height"), False),
    "TwoPointLinearSpring": (FK_TWO_POINT_SPRING, 2, ("k", "x0"), False),
    "TwoPointLinearDamper": (FK_TWO_POINT_DAMPER, 2, ("c",), False),
    "TwoPointConstantForce": (FK_TWO_POINT_CONSTANT, 2, ("f",), False),
    "MobilityLinearSpring": (FK_MOBILITY_SPRING, 0, ("k", "q0"), True),
    "MobilityLinearDamper": (FK_MOBILITY_DAMPER, 0, ("c",), True),
    "MobilityConstantForce": (FK_MOBILITY_CONSTANT, 0, ("f",), True),
    "MobilityLinearStop": (FK_MOBILITY_STOP, 0, ("k", "d", "q_low", "q_high"), True),
    "GlobalDamper": (FK_GLOBAL_DAMPER, 0, ("c",), False),
    "ConstantForce": (FK_CONSTANT_FORCE, 1, ("fx", "fy", "fz"), False),
    "ConstantTorque": (FK_CONSTANT_TORQUE, 1, ("tx", "ty", "tz"), False),
    "LinearBushing": (FK_BUSHING, 2, tuple(f"R_B1F{i}" for i in range(9)) +
                      tuple(f"R_B2M{i}" for i in range(9)) +
                      tuple(f"k{i}" for i in range(6)) + tuple(f"c{i}" for i in range(6)), False),
    # bodies (sphere's, half-space's), stations (sphere centre p_BS, half-space origin p_HF); the
    # half-space frame's R_HF, then SMOOTH_PARAMS of core/contact_laws.pxi (its element function)
    "SmoothSphereHalfSpace": (FK_SMOOTH_SPHERE, 2, tuple(f"R_HF{i}" for i in range(9)) + (
        "stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction",
        "transition_velocity", "constant_contact_force", "hertz_smoothing", "hunt_crossley_smoothing",
        "radius"), False),
    # one row per contact surface, an element's consecutive; see core/contact_force.pxi
    "HuntCrossley": (FK_HUNT_CROSSLEY, 1, ("element", "clique_plus_1", "shape_code", "shape0", "shape1", "shape2")
                     + tuple(f"R_BS{i}" for i in range(9)) + ("stiffness_2_3", "dissipation", "static_friction",
                                                               "dynamic_friction", "viscous_friction",
                                                               "transition_velocity", "exclude_first",
                                                               "exclude_count"), False),
    # OpenSim's CoordinateLimitForce on one coordinate, in SI units (radians for a rotational one)
    "CoordinateLimit": (FK_COORDINATE_LIMIT, 0, ("upper_stiffness", "upper_limit", "lower_stiffness", "lower_limit",
                                                 "damping", "transition"), True),
    # OpenSim's CoordinateActuator (type 0), TorqueActuator (1) and PointActuator (2): optimal_force times
    # a control, the evaluation's input (Tree.inputs[index[j, 0]]) plus its compiled functions of
    # Tree.time (ForceSet terms); bodies (A or the point's body, B), station 0 the point, R_BA the frame
    # of the vector in its body, v the unit axis or direction; index (input, u of type 0)
    "Actuator": (FK_ACTUATOR, 2, ("type", "optimal_force", "enabled") + tuple(f"R_BA{i}" for i in range(9)) +
                 ("v0", "v1", "v2", "is_global", "point_is_global", "has_b"), True),
}


cdef struct FSet:
    int kind
    Py_ssize_t n
    int nbk             # bodies (and stations) per element
    int npk             # parameters per element
    const idx_t* bodies
    const double* stations
    const double* params
    const idx_t* index
    # the set's own function table (core/functions.pxi: FK_PATH's moving points, FK_ACTUATOR's
    # functions of time), or NULL
    const FnTable* fn
    # FK_ACTUATOR and FK_THELEN only (NULL, 0 otherwise): terms (nterms, 2): (actuator or muscle, entry
    # of fn), functions of time added to that actuator's control (muscle's excitation) in order. (The controls and the time are the evaluation's,
    # Tree.inputs and Tree.time: a set is model data, shared by every State and thread.)
    const idx_t* terms
    Py_ssize_t nterms
    # FK_JIT only (NULL otherwise): the user's compiled kernels (core/jit_forces.pxi)
    void* jit_add
    void* jit_energy
    # FK_HUNT_CROSSLEY only (NULL otherwise): the set's variable-length data (hull vertices,
    # excluded surface pairs), addressed by offsets in its rows (core/contact_force.pxi)
    const double* aux


# ---------------------------------------------------------------------------
# Shared kinematics
# ---------------------------------------------------------------------------

cdef inline void station_in_ground(const Tree* t, idx_t b, const double* p_BS, double* r,
                                   double* p_GS) noexcept nogil:
    # r = R_GB p_BS (offset from the body origin, in G), p_GS = p_GB + r
    mat33_vec(t.R_GB + 9 * b, p_BS, r)
    p_GS[0] = t.p_GB[3 * b] + r[0]
    p_GS[1] = t.p_GB[3 * b + 1] + r[1]
    p_GS[2] = t.p_GB[3 * b + 2] + r[2]


cdef inline void station_velocity(const Tree* t, idx_t b, const double* r, double* v) noexcept nogil:
    # v_GS = v_GB + w_GB x r
    cdef const double* V = t.V_GB + 6 * b
    v[0] = V[3]; v[1] = V[4]; v[2] = V[5]
    cross3_add(V, r, v)


cdef inline void add_station_force(double* body_forces, idx_t b, const double* r,
                                   const double* f, double sign) noexcept nogil:
    # body b gets sign*f applied at offset r from its origin: torque r x (sign f), force sign f
    cdef double* F = body_forces + 6 * b
    cdef double g0 = sign * f[0], g1 = sign * f[1], g2 = sign * f[2]
    F[0] += r[1] * g2 - r[2] * g1
    F[1] += r[2] * g0 - r[0] * g2
    F[2] += r[0] * g1 - r[1] * g0
    F[3] += g0
    F[4] += g1
    F[5] += g2


# ---------------------------------------------------------------------------
# Kernels, one per family of kinds
# ---------------------------------------------------------------------------

cdef void k_gravity_forces(const FSet* s, const Tree* t, double* bf) noexcept nogil:
    # The elements' g add up: F_i = m_i sum(g) at the mass center, i.e.
    # torque (R_GB p_BC) x F_i about the origin. Cost: ~30 flops per body.
    cdef Py_ssize_t i, j
    cdef double g[3]
    cdef double r[3]
    cdef double F[3]
    cdef double m
    g[0] = 0.0; g[1] = 0.0; g[2] = 0.0
    for j in range(s.n):
        g[0] += s.params[s.npk * j]
        g[1] += s.params[s.npk * j + 1]
        g[2] += s.params[s.npk * j + 2]
    for i in range(1, t.nb):
        m = t.mass[i]
        F[0] = m * g[0]; F[1] = m * g[1]; F[2] = m * g[2]
        mat33_vec(t.R_GB + 9 * i, t.p_BC + 3 * i, r)
        add_station_force(bf, i, r, F, 1.0)


cdef double k_gravity_energy(const FSet* s, const Tree* t) noexcept nogil:
    # PE = sum_e [ -sum_i m_i (g_e . p_GCi) - |g_e| h0_e sum_i m_i ]
    cdef Py_ssize_t i, j
    cdef const double* g
    cdef double e = 0.0, mgp, msum
    for j in range(s.n):
        g = s.params + s.npk * j
        mgp = 0.0
        msum = 0.0
        for i in range(1, t.nb):
            mgp += t.mass[i] * dot3(t.p_GC + 3 * i, g)
            msum += t.mass[i]
        e += -mgp - sqrt(dot3(g, g)) * g[3] * msum
    return e


cdef inline double two_point_geometry(const FSet* s, const Tree* t, Py_ssize_t j, double* r1,
                                      double* r2, double* e) noexcept nogil:
    # Station offsets r1, r2 (in G), unit vector e from station 1 to station 2
    # (zero for coincident stations: no line of action, no force, as Simbody);
    # returns the distance.
    cdef double p1[3]
    cdef double p2[3]
    cdef double L
    station_in_ground(t, s.bodies[2 * j], s.stations + 6 * j, r1, p1)
    station_in_ground(t, s.bodies[2 * j + 1], s.stations + 6 * j + 3, r2, p2)
    e[0] = p2[0] - p1[0]; e[1] = p2[1] - p1[1]; e[2] = p2[2] - p1[2]
    L = sqrt(dot3(e, e))
    if L > 0.0:
        e[0] /= L; e[1] /= L; e[2] /= L
    else:
        e[0] = 0.0; e[1] = 0.0; e[2] = 0.0
    return L


cdef void k_two_point_forces(const FSet* s, const Tree* t, double* bf) noexcept nogil:
    # f_on_2 = a e along the line, -f_on_2 on station 1, with
    #   spring a = -k (L - x0), damper a = -c (v2 - v1) . e, constant a = f.
    cdef Py_ssize_t j
    cdef double r1[3]
    cdef double r2[3]
    cdef double e[3]
    cdef double v1[3]
    cdef double v2[3]
    cdef double f[3]
    cdef double L, a
    cdef const double* prm
    for j in range(s.n):
        L = two_point_geometry(s, t, j, r1, r2, e)
        if L == 0.0:
            continue
        prm = s.params + s.npk * j
        if s.kind == FK_TWO_POINT_SPRING:
            a = -prm[0] * (L - prm[1])
        elif s.kind == FK_TWO_POINT_DAMPER:
            station_velocity(t, s.bodies[2 * j], r1, v1)
            station_velocity(t, s.bodies[2 * j + 1], r2, v2)
            a = -prm[0] * ((v2[0] - v1[0]) * e[0] + (v2[1] - v1[1]) * e[1] + (v2[2] - v1[2]) * e[2])
        else:
            a = prm[0]
        f[0] = a * e[0]; f[1] = a * e[1]; f[2] = a * e[2]
        add_station_force(bf, s.bodies[2 * j], r1, f, -1.0)
        add_station_force(bf, s.bodies[2 * j + 1], r2, f, 1.0)


cdef double k_two_point_energy(const FSet* s, const Tree* t) noexcept nogil:
    # spring k/2 (L - x0)^2; constant force -f L; damper 0
    cdef Py_ssize_t j
    cdef double r1[3]
    cdef double r2[3]
    cdef double e[3]
    cdef double L, x, total = 0.0
    cdef const double* prm
    if s.kind == FK_TWO_POINT_DAMPER:
        return 0.0
    for j in range(s.n):
        L = two_point_geometry(s, t, j, r1, r2, e)
        prm = s.params + s.npk * j
        if s.kind == FK_TWO_POINT_SPRING:
            x = L - prm[1]
            total += 0.5 * prm[0] * x * x
        else:
            total -= prm[0] * L
    return total


cdef void k_mobility_forces(const FSet* s, const double* q, const double* u, double* mf) noexcept nogil:
    # spring -k (q - q0); damper -c u; constant f; stop: with penetration
    # below = max(q_low - q, 0), above = max(q - q_high, 0) and v = u,
    #   k below max(1 - d v, 0) - k above max(1 + d v, 0)   (never pulls)
    cdef Py_ssize_t j
    cdef idx_t qi, ui
    cdef const double* prm
    cdef double x, below, above, up, down
    for j in range(s.n):
        qi = s.index[2 * j]
        ui = s.index[2 * j + 1]
        prm = s.params + s.npk * j
        if s.kind == FK_MOBILITY_SPRING:
            mf[ui] += -prm[0] * (q[qi] - prm[1])
        elif s.kind == FK_MOBILITY_DAMPER:
            mf[ui] += -prm[0] * u[ui]
        elif s.kind == FK_MOBILITY_CONSTANT:
            mf[ui] += prm[0]
        else:
            x = q[qi]
            below = prm[2] - x
            above = x - prm[3]
            up = 0.0
            down = 0.0
            if below > 0.0:
                up = 1.0 - prm[1] * u[ui]
                up = prm[0] * below * (up if up > 0.0 else 0.0)
            if above > 0.0:
                down = 1.0 + prm[1] * u[ui]
                down = prm[0] * above * (down if down > 0.0 else 0.0)
            mf[ui] += up - down


cdef double k_mobility_energy(const FSet* s, const double* q) noexcept nogil:
    # spring k/2 (q - q0)^2; stop k/2 (below^2 + above^2); others 0
    cdef Py_ssize_t j
    cdef const double* prm
    cdef double x, below, above, total = 0.0
    if s.kind != FK_MOBILITY_SPRING and s.kind != FK_MOBILITY_STOP:
        return 0.0
    for j in range(s.n):
        prm = s.params + s.npk * j
        x = q[s.index[2 * j]]
        if s.kind == FK_MOBILITY_SPRING:
            total += 0.5 * prm[0] * (x - prm[1]) * (x - prm[1])
        else:
            below = prm[2] - x
            above = x - prm[3]
            if below > 0.0:
                total += 0.5 * prm[0] * below * below
            if above > 0.0:
                total += 0.5 * prm[0] * above * above
    return total


cdef inline void _limit_steps(const double* prm, double* up, double* lo) noexcept nogil:
    # The element's two Function.Step, in that family's parameter layout (core/functions.pxi: y0, y1,
    # x0, x1, dy, 1/(x1 - x0), sign(x1 - x0)), each number formed as Function.Step's constructor forms it:
    #   K_up(q) = Step(0 -> Kup over [q_up, q_up + tr]),   K_lo(q) = Step(Klo -> 0 over [q_lo - tr, q_lo])
    up[0] = 0.0
    up[1] = prm[0]
    up[2] = prm[1]
    up[3] = prm[1] + prm[5]
    lo[0] = prm[2]
    lo[1] = 0.0
    lo[2] = prm[3] - prm[5]
    lo[3] = prm[3]
    up[4] = up[1] - up[0]
    lo[4] = lo[1] - lo[0]
    up[5] = 1.0 / (up[3] - up[2])
    lo[5] = 1.0 / (lo[3] - lo[2])
    up[6] = 1.0 if up[3] > up[2] else -1.0
    lo[6] = 1.0 if lo[3] > lo[2] else -1.0


cdef void k_coordinate_limit_forces(const FSet* s, const double* q, const double* u, double* mf) noexcept nogil:
    # OpenSim's CoordinateLimitForce, as simtk.io's CoordinateLimitForceImpl computes it (the same
    # operations in the same order): with params (Kup, q_up, Klo, q_lo, c, tr) and x = q, v = u,
    #   k_up = K_up(x),  k_lo = K_lo(x)                       (_limit_steps, _step_value)
    #   on = k_up / Kup + k_lo / Klo                            (a term whose stiffness is 0: 0)
    #   f = -k_up (x - q_up) + k_lo (q_lo - x) - c on v
    cdef Py_ssize_t j
    cdef const double* prm
    cdef double up[7]
    cdef double lo[7]
    cdef double x, k_up, k_lo, on
    for j in range(s.n):
        prm = s.params + s.npk * j
        x = q[s.index[2 * j]]
        _limit_steps(prm, up, lo)
        k_up = _step_value(up, x)
        k_lo = _step_value(lo, x)
        on = (k_up / prm[0] if prm[0] != 0.0 else 0.0) + (k_lo / prm[2] if prm[2] != 0.0 else 0.0)
        mf[s.index[2 * j + 1]] += -k_up * (x - prm[1]) + k_lo * (prm[3] - x) - prm[4] * on * u[s.index[2 * j + 1]]


cdef double k_coordinate_limit_energy(const FSet* s, const double* q) noexcept nogil:
    # OpenSim's computePotentialEnergy, the integral of the stiffness spring, as CoordinateLimitForceImpl
    # computes it: beyond a limit by delta with stiffness K (Kup above, Klo below; 0 within the limits),
    #   delta >= tr:  K (-(2/14) tr^2 + delta^2 / 2)
    #   delta < tr:   K s^3 (2 - 2.5 s + (6/7) s^2) delta^2,  s = delta / tr
    # (the powers through libm's pow, as Python's float ** calls it; see _SQUARE)
    cdef Py_ssize_t j
    cdef const double* prm
    cdef double x, K, delta, sr, total = 0.0
    for j in range(s.n):
        prm = s.params + s.npk * j
        x = q[s.index[2 * j]]
        if x > prm[1]:
            K = prm[0]
            delta = x - prm[1]
        elif x < prm[3]:
            K = prm[2]
            delta = prm[3] - x
        else:
            continue
        if delta >= prm[5]:
            total += K * (-(2.0 / 14.0) * pow(prm[5], _SQUARE) + 0.5 * pow(delta, _SQUARE))
        else:
            sr = delta / prm[5]
            total += K * pow(sr, 3.0) * (2.0 - 2.5 * sr + (6.0 / 7.0) * sr * sr) * pow(delta, _SQUARE)
    return total


cdef void k_global_damper(const FSet* s, const Tree* t, const double* u, double* mf) noexcept nogil:
    # -c u on every mobility, with c the sum of the elements' c
    cdef Py_ssize_t j
    cdef double c = 0.0
    for j in range(s.n):
        c += s.params[s.npk * j]
    for j in range(t.nu):
        mf[j] -= c * u[j]


cdef void k_body_constants(const FSet* s, const Tree* t, double* bf) noexcept nogil:
    # ConstantForce: f (in G) at station r = R_GB p_BS; ConstantTorque: t (in G)
    cdef Py_ssize_t j
    cdef idx_t b
    cdef double r[3]
    cdef const double* prm
    for j in range(s.n):
        b = s.bodies[j]
        prm = s.params + s.npk * j
        if s.kind == FK_CONSTANT_FORCE:
            mat33_vec(t.R_GB + 9 * b, s.stations + 3 * j, r)
            add_station_force(bf, b, r, prm, 1.0)
        else:
            bf[6 * b] += prm[0]
            bf[6 * b + 1] += prm[1]
            bf[6 * b + 2] += prm[2]


cdef inline void bushing_frames(const FSet* s, const Tree* t, Py_ssize_t j, double* R_GF,
                                double* rF, double* rM, double* d, double* qb) noexcept nogil:
    # Frames F = X_GB1 X_B1F and M = X_GB2 X_B2M; rF = R_GB1 p_B1F,
    # rM = R_GB2 p_B2M, d = p_GM - p_GF; qb = (X-Y-Z body-fixed angles of
    # R_FM = R_GF^T R_GM, p_FM = R_GF^T d).
    cdef idx_t b1 = s.bodies[2 * j], b2 = s.bodies[2 * j + 1]
    cdef const double* prm = s.params + s.npk * j
    cdef double R_GM[9]
    cdef double p_GF[3]
    cdef double p_GM[3]
    cdef double R02, R12, R22, R01, R00
    cdef int a
    mat33_mul(t.R_GB + 9 * b1, prm, R_GF)
    mat33_mul(t.R_GB + 9 * b2, prm + 9, R_GM)
    station_in_ground(t, b1, s.stations + 6 * j, rF, p_GF)
    station_in_ground(t, b2, s.stations + 6 * j + 3, rM, p_GM)
    for a in range(3):
        d[a] = p_GM[a] - p_GF[a]
    # only five entries of R_FM are needed for the angles: R_FM[r, c] = col_r(R_GF) . col_c(R_GM)
    R00 = R_GF[0] * R_GM[0] + R_GF[3] * R_GM[3] + R_GF[6] * R_GM[6]
    R01 = R_GF[0] * R_GM[1] + R_GF[3] * R_GM[4] + R_GF[6] * R_GM[7]
    R02 = R_GF[0] * R_GM[2] + R_GF[3] * R_GM[5] + R_GF[6] * R_GM[8]
    R12 = R_GF[1] * R_GM[2] + R_GF[4] * R_GM[5] + R_GF[7] * R_GM[8]
    R22 = R_GF[2] * R_GM[2] + R_GF[5] * R_GM[5] + R_GF[8] * R_GM[8]
    if R02 > 1.0:
        R02 = 1.0
    elif R02 < -1.0:
        R02 = -1.0
    qb[0] = atan2(-R12, R22)
    qb[1] = asin(R02)
    qb[2] = atan2(-R01, R00)
    mat33T_vec(R_GF, d, qb + 3)


cdef Py_ssize_t k_bushing_forces(const FSet* s, const Tree* t, double* bf) noexcept nogil:
    # Generalized force f = -(k6 q + c6 qdot) on the bushing coordinates q
    # (X-Y-Z angles of R_FM, p_FM in F). Its power f . qdot equals
    # (Hw^-T f_ang) . w_FM + f_lin . v_FM with w_FM = Hw(q) angle rates, so b2
    # gets torque R_GF Hw^-T f_ang and force R_GF f_lin at M's origin, and b1
    # their opposite at the same point. Hw = [[1,0,s1],[0,c0,-s0 c1],[0,s0,c0 c1]]
    # has det c1 and is inverted in closed form. Returns the first element
    # whose forces are not finite (left out), or -1.
    cdef Py_ssize_t j
    cdef idx_t b1, b2
    cdef double R_GF[9]
    cdef double rF[3]
    cdef double rM[3]
    cdef double d[3]
    cdef double qb[6]
    cdef double qd[6]
    cdef double f[6]
    cdef double dw[3]
    cdef double tmp[3]
    cdef double w_FM[3]
    cdef double y[3]
    cdef double torque[3]
    cdef double force[3]
    cdef double rb1[3]
    cdef double c0, s0, c1, s1, g
    cdef const double* prm
    cdef const double* V1
    cdef const double* V2
    cdef int a
    cdef Py_ssize_t bad = -1
    for j in range(s.n):
        b1 = s.bodies[2 * j]
        b2 = s.bodies[2 * j + 1]
        prm = s.params + s.npk * j
        V1 = t.V_GB + 6 * b1
        V2 = t.V_GB + 6 * b2
        bushing_frames(s, t, j, R_GF, rF, rM, d, qb)
        # w_FM = R_GF^T (w2 - w1);  v_FM = R_GF^T (v_GM - v_GF - w1 x d)
        for a in range(3):
            dw[a] = V2[a] - V1[a]
            tmp[a] = V2[3 + a] - V1[3 + a]
        cross3_add(V2, rM, tmp)
        cross3_sub(V1, rF, tmp)
        cross3_sub(V1, d, tmp)
        mat33T_vec(R_GF, dw, w_FM)
        mat33T_vec(R_GF, tmp, qd + 3)
        c0 = cos(qb[0]); s0 = sin(qb[0]); c1 = cos(qb[1]); s1 = sin(qb[1])
        # angle rates = Hw^-1 w_FM
        qd[1] = c0 * w_FM[1] + s0 * w_FM[2]
        qd[2] = (c0 * w_FM[2] - s0 * w_FM[1]) / c1
        qd[0] = w_FM[0] - s1 * qd[2]
        for a in range(6):
            f[a] = -(prm[18 + a] * qb[a] + prm[24 + a] * qd[a])
        # torque in F: y = Hw^-T f_ang
        g = f[2] - s1 * f[0]
        y[0] = f[0]
        y[1] = c0 * f[1] - s0 * g / c1
        y[2] = c0 * g / c1 + s0 * f[1]
        mat33_vec(R_GF, y, torque)
        mat33_vec(R_GF, f + 3, force)
        if not (isfinite(torque[0]) and isfinite(torque[1]) and isfinite(torque[2])
                and isfinite(force[0]) and isfinite(force[1]) and isfinite(force[2])):
            if bad < 0:
                bad = j
            continue
        # b2: torque + rM x force at its origin; b1: -(torque + (p_GM - p_GB1) x force)
        for a in range(3):
            bf[6 * b2 + a] += torque[a]
            bf[6 * b1 + a] -= torque[a]
            rb1[a] = rF[a] + d[a]
        add_station_force(bf, b2, rM, force, 1.0)
        add_station_force(bf, b1, rb1, force, -1.0)
    return bad


cdef double k_bushing_energy(const FSet* s, const Tree* t) noexcept nogil:
    # 1/2 sum k6 q^2
    cdef Py_ssize_t j
    cdef double R_GF[9]
    cdef double rF[3]
    cdef double rM[3]
    cdef double d[3]
    cdef double qb[6]
    cdef double total = 0.0
    cdef const double* prm
    cdef int a
    for j in range(s.n):
        bushing_frames(s, t, j, R_GF, rF, rM, d, qb)
        prm = s.params + s.npk * j
        for a in range(6):
            total += 0.5 * prm[18 + a] * qb[a] * qb[a]
    return total


cdef Py_ssize_t k_smooth_sphere_forces(const FSet* s, const Tree* t, double* bf) noexcept nogil:
    # Each element's force by smooth_element (core/contact_laws.pxi), applied at its contact point
    # to the half-space's body and its opposite to the sphere's. Returns the first element whose
    # force is not finite (left out), or -1.
    cdef Py_ssize_t j, bad = -1
    cdef idx_t sb, hb
    cdef const double* prm
    cdef double F[3]
    cdef double pt[3]
    cdef double report[9]
    for j in range(s.n):
        sb = s.bodies[2 * j]
        hb = s.bodies[2 * j + 1]
        prm = s.params + s.npk * j
        smooth_element(prm + 9, sb, s.stations + 6 * j, hb, prm, s.stations + 6 * j + 3, t.R_GB, t.p_GB,
                       t.V_GB, F, pt, report)
        if not (isfinite(F[0]) and isfinite(F[1]) and isfinite(F[2])
                and isfinite(pt[0]) and isfinite(pt[1]) and isfinite(pt[2])):
            if bad < 0:
                bad = j
            continue
        _apply_at_point(t.p_GB, bf, sb, pt, F, -1.0)
        _apply_at_point(t.p_GB, bf, hb, pt, F, 1.0)
    return bad


cdef double k_smooth_sphere_energy(const FSet* s, const Tree* t) noexcept nogil:
    # OpenSim's approximation 2/5 fH d per element (positions only: the velocity part of the
    # element function is computed and dropped).
    cdef Py_ssize_t j
    cdef const double* prm
    cdef double F[3]
    cdef double pt[3]
    cdef double report[9]
    cdef double total = 0.0
    for j in range(s.n):
        prm = s.params + s.npk * j
        total += smooth_element(prm + 9, s.bodies[2 * j], s.stations + 6 * j, s.bodies[2 * j + 1], prm,
                                s.stations + 6 * j + 3, t.R_GB, t.p_GB, t.V_GB, F, pt, report)
    return total


# ---------------------------------------------------------------------------
# The table of kinds: per kind code, the function that adds a set's forces
# and the one that sums its potential energy (NULL: not conservative). A new
# kind is a row here (and a FORCE_KINDS entry), not a branch in every caller.
# ---------------------------------------------------------------------------

# add a set's forces into bf (nb,2,3) and mf (nu,); the first element left out (non-finite), or -1
ctypedef Py_ssize_t (*fkind_add_t)(const FSet* s, const Tree* t, const double* q, const double* u,
                                   double* bf, double* mf) noexcept nogil
# a set's potential energy at the tree's positions and q
ctypedef double (*fkind_energy_t)(const FSet* s, const Tree* t, const double* q) noexcept nogil

cdef struct ForceKind:
    fkind_add_t add
    fkind_energy_t energy


cdef Py_ssize_t _add_gravity(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                             double* mf) noexcept nogil:
    k_gravity_forces(s, t, bf)
    return -1


cdef Py_ssize_t _add_two_point(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                               double* mf) noexcept nogil:
    k_two_point_forces(s, t, bf)
    return -1


cdef Py_ssize_t _add_mobility(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                              double* mf) noexcept nogil:
    k_mobility_forces(s, q, u, mf)
    return -1


cdef Py_ssize_t _add_global_damper(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                                   double* mf) noexcept nogil:
    k_global_damper(s, t, u, mf)
    return -1


cdef Py_ssize_t _add_body_constants(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                                    double* mf) noexcept nogil:
    k_body_constants(s, t, bf)
    return -1


cdef Py_ssize_t _add_bushing(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                             double* mf) noexcept nogil:
    return k_bushing_forces(s, t, bf)


cdef Py_ssize_t _add_smooth_sphere(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                                   double* mf) noexcept nogil:
    return k_smooth_sphere_forces(s, t, bf)


cdef Py_ssize_t _add_hunt_crossley(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                                   double* mf) noexcept nogil:
    cdef double energy = 0.0  # (the contact kind's energy, unused here)
    return k_hunt_crossley(s, t, bf, &energy)


cdef Py_ssize_t _add_coordinate_limit(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                                      double* mf) noexcept nogil:
    k_coordinate_limit_forces(s, q, u, mf)
    return -1


cdef Py_ssize_t _add_actuator(const FSet* s, const Tree* t, const double* q, const double* u, double* bf,
                              double* mf) noexcept nogil:
    # As simtk.io's _Actuation oracle (tests/io/_actuation_oracle.py): c = held + its functions of
    # time in order; an enabled actuator with c != 0 applies f = c optimal_force as
    #   coordinate: mf[u] += f
    #   torque:     g = f v (R_GB R_BA applied unless global) on A, -g on B
    #   point:      g likewise at the body's point p (p = R_GB^T (p - p_GB) when the point is global)
    cdef Py_ssize_t j, k
    cdef const double* prm
    cdef double c, f, x
    cdef double v[3]
    cdef double w[3]
    cdef double g[3]
    cdef double p[3]
    cdef double r[3]
    cdef double d[3]
    cdef idx_t b, b2
    x = t.time
    for j in range(s.n):
        prm = s.params + s.npk * j
        if s.index[2 * j] >= t.ninputs:
            return j  # (its input was not given: ForceSet.add and the stepper check it before)
        c = t.inputs[s.index[2 * j]]
        for k in range(s.nterms):
            if s.terms[2 * k] == j:
                c += fn_value(s.fn, s.terms[2 * k + 1], &x)
        if prm[2] == 0.0 or c == 0.0:
            continue
        f = c * prm[1]
        if <int>prm[0] == ACT_COORDINATE:
            mf[s.index[2 * j + 1]] += f
            continue
        b = s.bodies[2 * j]
        v[0] = f * prm[12]; v[1] = f * prm[13]; v[2] = f * prm[14]
        if prm[15] == 0.0:
            mat33_vec(prm + 3, v, w)
            mat33_vec(t.R_GB + 9 * b, w, g)
        else:
            g[0] = v[0]; g[1] = v[1]; g[2] = v[2]
        if <int>prm[0] == ACT_TORQUE:
            bf[6 * b] += g[0]; bf[6 * b + 1] += g[1]; bf[6 * b + 2] += g[2]
            if prm[17] != 0.0:
                b2 = s.bodies[2 * j + 1]
                bf[6 * b2] += -g[0]; bf[6 * b2 + 1] += -g[1]; bf[6 * b2 + 2] += -g[2]
            continue
        p[0] = s.stations[6 * j]; p[1] = s.stations[6 * j + 1]; p[2] = s.stations[6 * j + 2]
        if prm[16] != 0.0:
            d[0] = p[0] - t.p_GB[3 * b]; d[1] = p[1] - t.p_GB[3 * b + 1]; d[2] = p[2] - t.p_GB[3 * b + 2]
            mat33T_vec(t.R_GB + 9 * b, d, p)
        mat33_vec(t.R_GB + 9 * b, p, r)
        add_station_force(bf, b, r, g, 1.0)
    return -1


cdef double _energy_gravity(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    return k_gravity_energy(s, t)


cdef double _energy_two_point(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    return k_two_point_energy(s, t)


cdef double _energy_mobility(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    return k_mobility_energy(s, q)


cdef double _energy_bushing(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    return k_bushing_energy(s, t)


cdef double _energy_smooth_sphere(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    return k_smooth_sphere_energy(s, t)


cdef double _energy_hunt_crossley(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    cdef double energy = 0.0
    k_hunt_crossley(s, t, NULL, &energy)
    return energy


cdef double _energy_coordinate_limit(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    return k_coordinate_limit_energy(s, q)


cdef ForceKind FORCE_KIND_TABLE[FK_NUM_KINDS]


cdef void _set_kind(int kind, fkind_add_t add, fkind_energy_t energy) noexcept:
    FORCE_KIND_TABLE[kind].add = add
    FORCE_KIND_TABLE[kind].energy = energy


_set_kind(FK_GRAVITY, _add_gravity, _energy_gravity)
_set_kind(FK_TWO_POINT_SPRING, _add_two_point, _energy_two_point)
_set_kind(FK_TWO_POINT_DAMPER, _add_two_point, _energy_two_point)
_set_kind(FK_TWO_POINT_CONSTANT, _add_two_point, _energy_two_point)
_set_kind(FK_MOBILITY_SPRING, _add_mobility, _energy_mobility)
_set_kind(FK_MOBILITY_DAMPER, _add_mobility, _energy_mobility)
_set_kind(FK_MOBILITY_CONSTANT, _add_mobility, _energy_mobility)
_set_kind(FK_MOBILITY_STOP, _add_mobility, _energy_mobility)
_set_kind(FK_GLOBAL_DAMPER, _add_global_damper, NULL)
_set_kind(FK_CONSTANT_FORCE, _add_body_constants, NULL)
_set_kind(FK_CONSTANT_TORQUE, _add_body_constants, NULL)
_set_kind(FK_BUSHING, _add_bushing, _energy_bushing)
_set_kind(FK_SMOOTH_SPHERE, _add_smooth_sphere, _energy_smooth_sphere)
_set_kind(FK_HUNT_CROSSLEY, _add_hunt_crossley, _energy_hunt_crossley)
_set_kind(FK_COORDINATE_LIMIT, _add_coordinate_limit, _energy_coordinate_limit)
_set_kind(FK_ACTUATOR, _add_actuator, NULL)


def _force_kind_table_is_complete():
    """True when every kind code has its add function (checked by simtk._core at import)."""
    cdef int k
    for k in range(FK_NUM_KINDS):
        if FORCE_KIND_TABLE[k].add == NULL:
            return False
    return True


cdef Py_ssize_t fset_add(const FSet* s, const Tree* t, const double* q, const double* u,
                         double* bf, double* mf) noexcept nogil:
    # Adds the forces of every element of s; returns the first element whose
    # forces could not be evaluated (left out), or -1.
    if s.n == 0:
        return -1
    return FORCE_KIND_TABLE[s.kind].add(s, t, q, u, bf, mf)


cdef double fset_energy(const FSet* s, const Tree* t, const double* q) noexcept nogil:
    cdef fkind_energy_t energy
    if s.n == 0:
        return 0.0
    energy = FORCE_KIND_TABLE[s.kind].energy
    return 0.0 if energy == NULL else energy(s, t, q)


# ---------------------------------------------------------------------------
# Python entry points
# ---------------------------------------------------------------------------

cdef class ForceSet:
    """The packed parameters of all enabled built-in force elements of one kind.

    Build it through the checked builders of :mod:`simtk._core` (e.g.
    ``two_point_linear_spring_set``); see core/forces.pxi for the layout.
    """

    cdef FSet s
    cdef readonly int kind
    cdef readonly Py_ssize_t n
    cdef readonly object bodies, stations, params, index
    # its function table (FK_PATH, FK_ACTUATOR, FK_THELEN), FK_ACTUATOR's and FK_THELEN's terms; ninputs:
    # the inputs an evaluation needs; nz: the state variables z it reads (and whose zdot it writes)
    cdef readonly object terms, functions
    cdef readonly Py_ssize_t ninputs, nz
    # FK_JIT: the object that owns the kernels' code (kept alive while the set is)
    cdef readonly object jit_owner
    # FK_HUNT_CROSSLEY: its variable-length data (FSet.aux), a read-only float64 array
    cdef readonly object aux
    cdef idx_t max_body, max_q, max_u

    def __init__(self, int kind, bodies, stations, params, index, functions=None, terms=None, jit=None, aux=None):
        cdef Py_ssize_t nbk, npk
        if not 0 <= kind < FK_NUM_KINDS:
            raise ValueError(f"unknown force kind {kind}")
        if (kind == FK_JIT) != (jit is not None):
            raise ValueError("ForceSet: the jit kind, and only it, takes jit=(add address, energy address, owner)")
        self.bodies = np.array(bodies, dtype=np.int64, order="C", copy=True)
        self.stations = np.array(stations, dtype=np.float64, order="C", copy=True)
        self.params = np.array(params, dtype=np.float64, order="C", copy=True)
        self.index = np.array(index, dtype=np.int64, order="C", copy=True)
        if self.bodies.ndim != 2 or self.params.ndim != 2 or self.index.ndim != 2:
            raise ValueError("ForceSet: bodies, params and index must be 2-D")
        self.n = self.params.shape[0]
        nbk = self.bodies.shape[1]
        npk = self.params.shape[1]
        if (self.bodies.shape[0] != self.n or self.stations.shape != (self.n, nbk, 3)
                or self.index.shape != (self.n, 2)):
            raise ValueError("ForceSet: inconsistent shapes of bodies, stations, params, index")
        for name, a in (("bodies", self.bodies), ("index", self.index)):
            if a.size and a.min() < 0:
                raise ValueError(f"ForceSet: negative entry in {name}")
        for a in (self.bodies, self.stations, self.params, self.index):
            a.flags.writeable = False
        self.max_body = int(self.bodies.max()) if self.bodies.size else -1
        # only the spring, the stop and the coordinate limit read q (the other kinds' q column is unused)
        self.max_q = (int(self.index[:, 0].max()) if self.n and kind in (FK_MOBILITY_SPRING, FK_MOBILITY_STOP,
                                                                         FK_COORDINATE_LIMIT) else -1)
        self.max_u = (int(self.index[:, 1].max()) if self.n and (FK_MOBILITY_SPRING <= kind <= FK_MOBILITY_STOP
                                                                 or kind == FK_COORDINATE_LIMIT) else -1)
        if kind == FK_PATH:
            # a path's rows name coordinates and functions in their parameters: bound them here
            self.max_q, self.max_u = _path_rows_limits(self.params, functions)
        elif kind == FK_THELEN:
            # a muscle's rows are a path's, then its own columns
            if self.params.shape[1] != MUSCLE_NP:
                raise ValueError(f"ForceSet (ThelenMuscle): params must have {MUSCLE_NP} columns")
            self.max_q, self.max_u = _path_rows_limits(self.params[:, :PATH_NP], functions)
        elif kind == FK_MILLARD:
            if self.params.shape[1] != ML_NP:
                raise ValueError(f"ForceSet (MillardMuscle): params must have {ML_NP} columns")
            self.max_q, self.max_u = _path_rows_limits(self.params[:, :PATH_NP], functions)
        elif kind == FK_DEGROOTE:
            if self.params.shape[1] != DG_NP:
                raise ValueError(f"ForceSet (DeGrooteMuscle): params must have {DG_NP} columns")
            self.max_q, self.max_u = _path_rows_limits(self.params[:, :PATH_NP], functions)
        elif functions is not None and kind != FK_ACTUATOR:
            raise ValueError(f"ForceSet (kind {kind}): this kind takes no function table")
        self.functions = functions
        self.s.fn = NULL
        if functions is not None:
            self.s.fn = &(<FunctionTable?>functions).t
        self.kind = kind
        self.s.kind = kind
        self.s.n = self.n
        self.s.nbk = <int>nbk
        self.s.npk = <int>npk
        self.s.bodies = _ip(self.bodies)
        self.s.stations = _dp(self.stations)
        self.s.params = _dp(self.params)
        self.s.index = _ip(self.index)
        self.ninputs = 0
        self.nz = 0
        self.terms = None
        self.s.terms = NULL
        self.s.nterms = 0
        if kind == FK_ACTUATOR:
            self._actuator(terms, functions)
        elif kind == FK_THELEN:
            self.ninputs, self.nz, nmuscles = _thelen_rows(self.params)
            self._terms(terms, functions, nmuscles, "muscles")
        elif kind == FK_MILLARD:
            self.ninputs, self.nz, nmuscles = _millard_rows(self.params)
            self._terms(terms, functions, nmuscles, "muscles")
        elif kind == FK_DEGROOTE:
            self.ninputs, self.nz, nmuscles = _degroote_rows(self.params)
            self._terms(terms, functions, nmuscles, "muscles")
        elif terms is not None:
            raise ValueError(f"ForceSet (kind {kind}): only the actuator and muscle kinds take terms")
        elif kind == FK_PATH:
            self.ninputs = _path_ninputs(self.params)
        self.s.jit_add = NULL
        self.s.jit_energy = NULL
        self.jit_owner = None
        if kind == FK_JIT:
            _jit_set_init(self, jit)
        self.aux = None
        self.s.aux = NULL
        if kind == FK_HUNT_CROSSLEY:
            self.aux = _hc_check_rows(self.params, aux)
            self.s.aux = _dp(self.aux)
        elif aux is not None:
            raise ValueError(f"ForceSet (kind {kind}): only the HuntCrossley kind takes aux data")

    cdef int _actuator(self, terms, functions) except -1:
        if self.params.shape[1] != 18:
            raise ValueError("ForceSet (actuators): expected 18 parameters per element")
        kinds = self.params[:, 0]
        if not np.isin(kinds, (ACT_COORDINATE, ACT_TORQUE, ACT_POINT)).all():
            raise ValueError("ForceSet (actuators): a type is not 0, 1 or 2")
        coordinate = kinds == ACT_COORDINATE
        self.max_u = int(self.index[coordinate, 1].max()) if coordinate.any() else -1
        self.max_body = int(self.bodies.max()) if self.n else -1
        self._terms(terms, functions, self.n, "actuators")
        self.ninputs = int(self.index[:, 0].max()) + 1 if self.n else 0
        return 0

    cdef int _terms(self, terms, functions, Py_ssize_t nelements, str what) except -1:
        # terms (m, 2): (element, function entry), each function of one argument (time)
        cdef FunctionTable table
        cdef Py_ssize_t k
        self.terms = np.array(np.zeros((0, 2)) if terms is None else terms, dtype=np.int64, order="C", copy=True)
        if self.terms.ndim != 2 or self.terms.shape[1] != 2:
            raise ValueError(f"ForceSet ({what}): terms must have shape (m, 2)")
        self.terms.flags.writeable = False
        if self.terms.shape[0]:
            if not isinstance(functions, FunctionTable):
                raise TypeError(f"ForceSet ({what}): terms need a FunctionTable of their functions")
            table = <FunctionTable>functions
            for k in range(self.terms.shape[0]):
                if not (0 <= self.terms[k, 0] < nelements and 0 <= self.terms[k, 1] < table.n):
                    raise ValueError(f"ForceSet ({what}): term {k} names no element or no function")
                if table.entries[self.terms[k, 1], 1] != 1:
                    raise ValueError(f"ForceSet ({what}): term {k}'s function is not of one argument (time)")
        self.s.terms = _ip(self.terms)
        self.s.nterms = self.terms.shape[0]
        return 0

    def __reduce__(self):
        if self.kind == FK_JIT:
            # the kernels' addresses belong to this process: the owner gives them again where it is loaded
            return (_jit_set_rebuild, (self.params, self.index, self.jit_owner))
        return (ForceSet, (self.kind, self.bodies, self.stations, self.params, self.index, self.functions,
                           self.terms, None, self.aux))

    def __deepcopy__(self, memo):
        return self  # immutable

    def __copy__(self):
        return self

    cdef int _fits(self, TreeKernels ws, Py_ssize_t nq) except -1:
        if self.max_body >= ws.nb or self.max_q >= nq or self.max_u >= ws.nu:
            raise ValueError(f"ForceSet (kind {self.kind}): its body or mobility indices do not fit "
                             f"a tree with nb={ws.nb}, nq={nq}, nu={ws.nu}")
        return 0

    cdef int _inputs_given(self, const Tree* t) except -1:
        if self.ninputs > t.ninputs:
            raise ValueError(f"ForceSet (kind {self.kind}): its elements read {self.ninputs} inputs, but the "
                             f"evaluation gives {t.ninputs} (TreeKernels.set_inputs)")
        if self.nz > t.nz:
            raise ValueError(f"ForceSet (kind {self.kind}): its elements read {self.nz} state variables z, but the "
                             f"evaluation gives {t.nz} (TreeKernels.set_z)")
        return 0

    def add(self, TreeKernels ws, body_forces, mobility_forces):
        """Add every element's forces into ``body_forces`` (nb,2,3) and
        ``mobility_forces`` (nu,), in place, from the workspace's realized
        kinematics (ws.q, ws.u, R_GB, p_GB, V_GB, ...) and its time and
        inputs (``ws.set_inputs``).

        Returns the index of the first element whose forces are not finite
        (left out; a LinearBushing at its angle singularity), or -1.
        """
        cdef Py_ssize_t bad
        cdef double* bf
        cdef double* mf
        if not _is_f64_vector(body_forces, 6 * ws.nb, True):
            raise ValueError(f"body_forces: expected a writable C-contiguous float64 ({ws.nb}, 2, 3) array")
        if not _is_f64_vector(mobility_forces, ws.nu, True):
            raise ValueError(f"mobility_forces: expected a writable C-contiguous float64 ({ws.nu},) array")
        self._fits(ws, ws.nq)
        self._inputs_given(&ws.t)
        bf = _dp(body_forces)
        mf = _dp(mobility_forces)
        with nogil:
            bad = fset_add(&self.s, &ws.t, ws.t.q, ws.t.u, bf, mf)
        return bad

    def energy(self, TreeKernels ws, q=None):
        """Potential energy of the elements (0 for non-conservative kinds), from
        the workspace's realized positions and ``q`` (nq,) (default ``ws.q``)."""
        cdef const double* qp = ws.t.q
        cdef double e
        if q is not None:
            if not _is_f64_vector(q, ws.nq, False):
                raise ValueError(f"q: expected a C-contiguous float64 ({ws.nq},) array")
            qp = _dp(q)
        self._fits(ws, ws.nq)
        with nogil:
            e = fset_energy(&self.s, &ws.t, qp)
        return e


def add_force_sets(tuple sets, TreeKernels ws, body_forces, mobility_forces, bint zero_first=False):
    """Add the forces of every ForceSet in ``sets`` into ``body_forces``
    (nb,2,3) and ``mobility_forces`` (nu,), zeroing them first if asked (one
    call for a whole group of kinds). Returns None, or ``(i, j)``: element j of sets[i]
    gave non-finite forces (they were left out; the rest are added)."""
    cdef Py_ssize_t i, bad, nsets = len(sets)
    cdef double* bf
    cdef double* mf
    cdef ForceSet fs
    cdef object failed = None
    if not _is_f64_vector(body_forces, 6 * ws.nb, True):
        raise ValueError(f"body_forces: expected a writable C-contiguous float64 ({ws.nb}, 2, 3) array")
    if not _is_f64_vector(mobility_forces, ws.nu, True):
        raise ValueError(f"mobility_forces: expected a writable C-contiguous float64 ({ws.nu},) array")
    for i in range(nsets):
        (<ForceSet?>sets[i])._fits(ws, ws.nq)
        (<ForceSet>sets[i])._inputs_given(&ws.t)
    bf = _dp(body_forces)
    mf = _dp(mobility_forces)
    if zero_first:
        memset(bf, 0, 6 * ws.nb * sizeof(double))
        if ws.nu:
            memset(mf, 0, ws.nu * sizeof(double))
    for i in range(nsets):
        fs = <ForceSet>sets[i]
        with nogil:
            bad = fset_add(&fs.s, &ws.t, ws.t.q, ws.t.u, bf, mf)
        if bad >= 0 and failed is None:
            failed = (i, bad)
    return failed


def accumulate_forces(src_body_forces, src_mobility_forces, body_forces, mobility_forces):
    """body_forces += src_body_forces; mobility_forces += src_mobility_forces
    (float64, C-contiguous, matching sizes)."""
    cdef Py_ssize_t k, nbf, nmf
    cdef double* d
    cdef const double* s
    if not isinstance(body_forces, cnp.ndarray) or not isinstance(mobility_forces, cnp.ndarray):
        raise TypeError("accumulate_forces: expected numpy arrays")
    nbf = cnp.PyArray_SIZE(<cnp.ndarray>body_forces)
    nmf = cnp.PyArray_SIZE(<cnp.ndarray>mobility_forces)
    if not (_is_f64_vector(body_forces, nbf, True) and _is_f64_vector(src_body_forces, nbf, False)
            and _is_f64_vector(mobility_forces, nmf, True)
            and _is_f64_vector(src_mobility_forces, nmf, False)):
        raise ValueError("accumulate_forces: expected C-contiguous float64 arrays of matching sizes, "
                         "the targets writable")
    cdef double* d2 = _dp(mobility_forces)
    cdef const double* s2 = _dp(src_mobility_forces)
    d = _dp(body_forces)
    s = _dp(src_body_forces)
    with nogil:
        for k in range(nbf):
            d[k] += s[k]
        for k in range(nmf):
            d2[k] += s2[k]


def forces_finite(body_forces, mobility_forces):
    """True when every entry of both C-contiguous float64 arrays is finite."""
    cdef Py_ssize_t k, n
    cdef const double* x
    for a in (body_forces, mobility_forces):
        if not isinstance(a, cnp.ndarray):
            raise TypeError("forces_finite: expected numpy arrays")
        n = cnp.PyArray_SIZE(<cnp.ndarray>a)
        if not _is_f64_vector(a, n, False):
            raise ValueError("forces_finite: expected C-contiguous float64 arrays")
        x = _dp(a)
        for k in range(n):
            if not isfinite(x[k]):
                return False
    return True
