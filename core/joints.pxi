# Built-in mobilizer (joint) kinematics, dispatched on an integer joint type.
#
# Everything here is in Simbody's meaning (RigidBodyNodeSpec_*.h): the
# mobilizer moves frame M (fixed on the child body B) relative to frame F
# (fixed on the parent P). X_FM(q) is the pose of M in F; H_FM maps the
# mobilities u to V_FM = (w_FM, v_FM), the angular velocity of M in F and the
# velocity of M's ORIGIN in F, both expressed in F. HDot_FM is the time
# derivative of H_FM taken in F. qdot = N(q) u.
#
# | code | joint        | nq | nu | q                                   | u                                     |
# |------|--------------|----|----|-------------------------------------|---------------------------------------|
# |  0   | Weld         | 0  | 0  | -                                   | -                                     |
# |  1   | Pin          | 1  | 1  | angle about the common z of F and M | angular rate about z (= qdot)         |
# |  2   | Slider       | 1  | 1  | displacement along the common x     | rate along x (= qdot)                 |
# |  3   | Ball (quat)  | 4  | 3  | quaternion (w,x,y,z) of R_FM        | w_FM expressed in F                   |
# |  4   | Ball (Euler) | 3  | 3  | body-fixed X-Y-Z angles of R_FM     | w_FM expressed in F                   |
# |  5   | Free (quat)  | 7  | 6  | quaternion of R_FM, then p_FM in F  | w_FM in F, then v_FM (M origin) in F  |
# |  6   | Free (Euler) | 6  | 6  | body-fixed X-Y-Z angles, then p_FM  | w_FM in F, then v_FM in F             |
# |  7   | Translation  | 3  | 3  | p_FM in F (R_FM = 1)                | v_FM in F (= qdot)                    |
# |  8   | Universal    | 2  | 2  | body-fixed X then new Y angles      | their time derivatives (= qdot)       |
# |  9   | Gimbal       | 3  | 3  | body-fixed X-Y-Z angles             | their time derivatives (= qdot)       |
# | 10   | Planar       | 3  | 3  | angle about z, x and y along Fx, Fy | their time derivatives (= qdot)       |
# | 11   | Cylinder     | 2  | 2  | angle about z, displacement along z | their time derivatives (= qdot)       |
# | 12   | Screw        | 1  | 1  | angle about z; p_FM = pitch*q z     | angular rate (= qdot)                 |
# | 13   | BendStretch  | 2  | 2  | angle about z, then length along Mx | their time derivatives (= qdot)       |
# | 14   | Bushing      | 6  | 6  | X-Y-Z angles, then p_FM in F        | their time derivatives (= qdot)       |
# | 15   | SphericalCoords | 3 | 3 | az, ze angles, translation t      | their time derivatives (= qdot)       |
# | 16   | LineOrientation (quat)  | 4 | 2 | quaternion of R_FM       | (x, y) of w_FM expressed in M         |
# | 17   | LineOrientation (Euler) | 3 | 2 | X-Y-Z angles of R_FM     | (x, y) of w_FM expressed in M         |
# | 18   | FreeLine (quat)  | 7 | 5 | quaternion, then p_FM in F       | (x, y) of w_FM in M, then v_FM in F   |
# | 19   | FreeLine (Euler) | 6 | 5 | X-Y-Z angles, then p_FM in F     | (x, y) of w_FM in M, then v_FM in F   |
# | 20   | Ellipsoid (quat)  | 4 | 3 | quaternion of R_FM              | w_FM expressed in F                   |
# | 21   | Ellipsoid (Euler) | 3 | 3 | X-Y-Z angles of R_FM            | w_FM expressed in F                   |
# | 31-36 | FunctionBased (n = code - 30) | n | n | the function arguments (core/function_joint.pxi) | = qdot |
# | 99   | Custom       | any| any| written by Python (see tree.pxi)    |                                       |
#
# Parameters (jparam (nb,3)): Screw uses jparam[i,0] = pitch (m/rad).
# SphericalCoords uses jparam[i] = (az0, ze0, flags), flags a bit mask
# 1 = negate azimuth, 2 = negate zenith, 4 = translate along Mx (else Mz),
# 8 = negate translation (Simbody's constructor options); with
# az = +-q0 + az0, ze = +-q1 + ze0: R_FM = Rz(az) Ry(ze) (body-fixed Z-Y),
# p_FM = +-q2 * (Mz or Mx expressed in F).
# Ellipsoid uses jparam[i] = radii (a, b, c): like a Ball, but M's origin rides
# on the ellipsoid surface where Mz is the normal n = R_FM z:
# p_FM = diag(a,b,c) n, so v_FM = diag(a,b,c) (w_FM x n).
# LineOrientation and FreeLine (Simbody's rotation-about-own-z-free joints)
# have H_FM angular columns Mx, My expressed in F; since w_FM lies in their
# span, HDot_FM u = w_FM x w_FM = 0.
#
# Quaternion joints (Ball and Free in quaternion mode) keep one position error
# slot each: qerr[i] = |q_quat| - 1 (Simbody's choice; R_FM is built from the
# normalized quaternion so an unnormalized q still gives a rotation). With
# w_FM in F the quaternion rate is qdot = 1/2 (0, w_FM) * q (a quaternion
# product), i.e. N = 1/2 E(q) with E(q) = [-v^T ; q0 1 - [v x]] (4x3), v the
# vector part. N^-1 is Simbody's unnormalized 2 E(q)^T (an exact left inverse
# when |q| = 1).
#
# Euler-angle modes (Ball/Free with use_euler_angles) keep u = w_FM in F; the
# angle rates are qdot = N(q) w_FM with N the inverse of
#   Hw(q) = [x | Rx(q0) y | Rx(q0) Ry(q1) z] = [[1,0,s1],[0,c0,-s0 c1],[0,s0,c0 c1]],
# which is singular at q1 = +-pi/2 (as in Simbody). Gimbal and Bushing use
# Hw(q) itself as the angular part of H_FM, with u = qdot.

cdef enum:
    J_WELD = 0
    J_PIN = 1
    J_SLIDER = 2
    J_BALL = 3
    J_BALL_EULER = 4
    J_FREE = 5
    J_FREE_EULER = 6
    J_TRANSLATION = 7
    J_UNIVERSAL = 8
    J_GIMBAL = 9
    J_PLANAR = 10
    J_CYLINDER = 11
    J_SCREW = 12
    J_BENDSTRETCH = 13
    J_BUSHING = 14
    J_SPHERICAL_COORDS = 15
    J_LINE_ORIENTATION = 16
    J_LINE_ORIENTATION_EULER = 17
    J_FREE_LINE = 18
    J_FREE_LINE_EULER = 19
    J_ELLIPSOID = 20
    J_ELLIPSOID_EULER = 21
    # MobilizedBody.FunctionBased with n = 1..6 mobilities is code J_FUNCTION + n: the code carries n,
    # so joint_nu and every qdot = u path below serve it as any built-in joint (its kinematics, which
    # read the tree's function records, are in core/function_joint.pxi)
    J_FUNCTION = 30
    J_FUNCTION_MAX = 36
    # a jit mobilizer (core/jit_mobilizers.pxi) with n = 1..6 mobilities (qdot = u) is J_JIT + n
    J_JIT = 40
    J_JIT_MAX = 46
    J_CUSTOM = 99
    # a jit mobilizer with an N kernel (qdot = N(q) u, core/jit_mobilizers.pxi) with nq = 1..7
    # coordinates and nu = 1..6 mobilities is J_JITN + 8 nq + nu: the code carries both sizes
    J_JITN = 100
    J_JITN_MAX = 100 + 8 * 7 + 6


# Python-visible table: name -> (code, nq, nu, uses_quaternion)
JOINT_TYPES = {
    "Weld": (J_WELD, 0, 0, False),
    "Pin": (J_PIN, 1, 1, False),
    "Slider": (J_SLIDER, 1, 1, False),
    "Ball": (J_BALL, 4, 3, True),
    "BallEuler": (J_BALL_EULER, 3, 3, False),
    "Free": (J_FREE, 7, 6, True),
    "FreeEuler": (J_FREE_EULER, 6, 6, False),
    "Translation": (J_TRANSLATION, 3, 3, False),
    "Universal": (J_UNIVERSAL, 2, 2, False),
    "Gimbal": (J_GIMBAL, 3, 3, False),
    "Planar": (J_PLANAR, 3, 3, False),
    "Cylinder": (J_CYLINDER, 2, 2, False),
    "Screw": (J_SCREW, 1, 1, False),
    "BendStretch": (J_BENDSTRETCH, 2, 2, False),
    "Bushing": (J_BUSHING, 6, 6, False),
    "SphericalCoords": (J_SPHERICAL_COORDS, 3, 3, False),
    "LineOrientation": (J_LINE_ORIENTATION, 4, 2, True),
    "LineOrientationEuler": (J_LINE_ORIENTATION_EULER, 3, 2, False),
    "FreeLine": (J_FREE_LINE, 7, 5, True),
    "FreeLineEuler": (J_FREE_LINE_EULER, 6, 5, False),
    "Ellipsoid": (J_ELLIPSOID, 4, 3, True),
    "EllipsoidEuler": (J_ELLIPSOID_EULER, 3, 3, False),
    "Custom": (J_CUSTOM, -1, -1, False),
}

# n -> the code of a FunctionBased mobilizer with n mobilities (kept out of JOINT_TYPES: such a joint
# needs its function records, given to TreeKernels with the tree)
FUNCTION_JOINT_CODES = {n: J_FUNCTION + n for n in range(1, 7)}


cdef inline bint is_function_joint(int jt) noexcept nogil:
    return J_FUNCTION < jt <= J_FUNCTION_MAX


cdef inline bint is_jitn_joint(int jt) noexcept nogil:
    return J_JITN < jt <= J_JITN_MAX and 1 <= (jt - J_JITN) % 8 <= 6


cdef inline bint is_jit_joint(int jt) noexcept nogil:
    # either jit kind (qdot = u, or with an N kernel): both run their position and hdot kernels
    return (J_JIT < jt <= J_JIT_MAX) or is_jitn_joint(jt)


cdef inline void _zero(double* x, int n) noexcept nogil:
    cdef int k
    for k in range(n):
        x[k] = 0.0


# ---- Euler (body-fixed X-Y-Z) helpers -----------------------------------

cdef inline void euler_hw_mul(const double* a, const double* x, double* out) noexcept nogil:
    # out = Hw(a) x  (angle rates -> w_FM in F)
    cdef double c0 = cos(a[0]), s0 = sin(a[0]), c1 = cos(a[1]), s1 = sin(a[1])
    out[0] = x[0] + s1 * x[2]
    out[1] = c0 * x[1] - s0 * c1 * x[2]
    out[2] = s0 * x[1] + c0 * c1 * x[2]


cdef inline void euler_hwT_mul(const double* a, const double* x, double* out) noexcept nogil:
    # out = Hw(a)^T x
    cdef double c0 = cos(a[0]), s0 = sin(a[0]), c1 = cos(a[1]), s1 = sin(a[1])
    out[0] = x[0]
    out[1] = c0 * x[1] + s0 * x[2]
    out[2] = s1 * x[0] - s0 * c1 * x[1] + c0 * c1 * x[2]


cdef inline void euler_n_mul(const double* a, const double* w, double* out) noexcept nogil:
    # out = N(a) w = Hw(a)^-1 w  (w_FM in F -> angle rates)
    cdef double c0 = cos(a[0]), s0 = sin(a[0]), c1 = cos(a[1]), s1 = sin(a[1])
    cdef double qd2 = (-s0 * w[1] + c0 * w[2]) / c1
    out[2] = qd2
    out[1] = c0 * w[1] + s0 * w[2]
    out[0] = w[0] - s1 * qd2


cdef inline void euler_nT_mul(const double* a, const double* x, double* out) noexcept nogil:
    # out = N(a)^T x with N = [[1, s0 s1/c1, -c0 s1/c1], [0, c0, s0], [0, -s0/c1, c0/c1]]
    cdef double c0 = cos(a[0]), s0 = sin(a[0]), c1 = cos(a[1]), s1 = sin(a[1])
    cdef double t = 1.0 / c1
    out[0] = x[0]
    out[1] = s0 * s1 * t * x[0] + c0 * x[1] - s0 * t * x[2]
    out[2] = -c0 * s1 * t * x[0] + s0 * x[1] + c0 * t * x[2]


cdef inline void euler_hwdot_mul(const double* a, const double* ad, const double* x,
                                 double* out) noexcept nogil:
    # out = (d/dt Hw(a)) x, given the angle rates ad
    cdef double c0 = cos(a[0]), s0 = sin(a[0]), c1 = cos(a[1]), s1 = sin(a[1])
    out[0] = c1 * ad[1] * x[2]
    out[1] = -s0 * ad[0] * x[1] + (-c0 * c1 * ad[0] + s0 * s1 * ad[1]) * x[2]
    out[2] = c0 * ad[0] * x[1] + (-s0 * c1 * ad[0] - c0 * s1 * ad[1]) * x[2]


# ---- quaternion helpers ---------------------------------------------------

cdef inline void quat_e_mul(const double* q, const double* w, double s, double* out) noexcept nogil:
    # out (4) = s E(q) w = s (0, w) * q
    out[0] = -s * (q[1] * w[0] + q[2] * w[1] + q[3] * w[2])
    out[1] = s * (q[0] * w[0] + w[1] * q[3] - w[2] * q[2])
    out[2] = s * (q[0] * w[1] + w[2] * q[1] - w[0] * q[3])
    out[3] = s * (q[0] * w[2] + w[0] * q[2] - w[1] * q[1])


cdef inline void quat_eT_mul(const double* q, const double* x, double s, double* out) noexcept nogil:
    # out (3) = s E(q)^T x = s (-v x0 + q0 x_v + v x x_v)
    out[0] = s * (-q[1] * x[0] + q[0] * x[1] + q[2] * x[3] - q[3] * x[2])
    out[1] = s * (-q[2] * x[0] + q[0] * x[2] + q[3] * x[1] - q[1] * x[3])
    out[2] = s * (-q[3] * x[0] + q[0] * x[3] + q[1] * x[2] - q[2] * x[1])


cdef inline double quat_err(const double* q) noexcept nogil:
    return sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) - 1.0


# ---- the dispatch functions ------------------------------------------------

cdef inline void _col(double* H, int k, double w0, double w1, double w2,
                      double v0, double v1, double v2) noexcept nogil:
    H[6 * k + 0] = w0; H[6 * k + 1] = w1; H[6 * k + 2] = w2
    H[6 * k + 3] = v0; H[6 * k + 4] = v1; H[6 * k + 5] = v2


cdef void joint_position(int jt, const double* q, const double* prm, double* R, double* p,
                         double* H, double* qerr) noexcept nogil:
    # Fill R_FM (9), p_FM (3), the nu columns of H_FM (6 each) and the
    # quaternion error (0 for joints without a quaternion).
    cdef double c, s
    cdef int k
    qerr[0] = 0.0
    if jt == J_PIN:
        rot_z(cos(q[0]), sin(q[0]), R)
        p[0] = 0.0; p[1] = 0.0; p[2] = 0.0
        _col(H, 0, 0, 0, 1, 0, 0, 0)
    elif jt == J_SLIDER:
        set_identity33(R)
        p[0] = q[0]; p[1] = 0.0; p[2] = 0.0
        _col(H, 0, 0, 0, 0, 1, 0, 0)
    elif jt == J_BALL or jt == J_FREE:
        quat_to_rot(q, R)
        qerr[0] = quat_err(q)
        _zero(H, 6 * (3 if jt == J_BALL else 6))
        for k in range(3):
            H[6 * k + k] = 1.0
        if jt == J_FREE:
            p[0] = q[4]; p[1] = q[5]; p[2] = q[6]
            for k in range(3):
                H[6 * (k + 3) + 3 + k] = 1.0
        else:
            p[0] = 0.0; p[1] = 0.0; p[2] = 0.0
    elif jt == J_BALL_EULER or jt == J_FREE_EULER:
        body_xyz_to_rot(q, R)
        _zero(H, 6 * (3 if jt == J_BALL_EULER else 6))
        for k in range(3):
            H[6 * k + k] = 1.0
        if jt == J_FREE_EULER:
            p[0] = q[3]; p[1] = q[4]; p[2] = q[5]
            for k in range(3):
                H[6 * (k + 3) + 3 + k] = 1.0
        else:
            p[0] = 0.0; p[1] = 0.0; p[2] = 0.0
    elif jt == J_TRANSLATION:
        set_identity33(R)
        p[0] = q[0]; p[1] = q[1]; p[2] = q[2]
        _col(H, 0, 0, 0, 0, 1, 0, 0)
        _col(H, 1, 0, 0, 0, 0, 1, 0)
        _col(H, 2, 0, 0, 0, 0, 0, 1)
    elif jt == J_UNIVERSAL:
        c = cos(q[0]); s = sin(q[0])
        R[0] = cos(q[1]); R[1] = 0.0; R[2] = sin(q[1])
        R[3] = s * R[2]; R[4] = c; R[5] = -s * R[0]
        R[6] = -c * R[2]; R[7] = s; R[8] = c * R[0]
        p[0] = 0.0; p[1] = 0.0; p[2] = 0.0
        _col(H, 0, 1, 0, 0, 0, 0, 0)
        _col(H, 1, 0, c, s, 0, 0, 0)        # R_FM y
    elif jt == J_GIMBAL or jt == J_BUSHING:
        body_xyz_to_rot(q, R)
        c = cos(q[0]); s = sin(q[0])
        _col(H, 0, 1, 0, 0, 0, 0, 0)
        _col(H, 1, 0, c, s, 0, 0, 0)
        _col(H, 2, R[2], -s * cos(q[1]), c * cos(q[1]), 0, 0, 0)
        if jt == J_BUSHING:
            p[0] = q[3]; p[1] = q[4]; p[2] = q[5]
            _col(H, 3, 0, 0, 0, 1, 0, 0)
            _col(H, 4, 0, 0, 0, 0, 1, 0)
            _col(H, 5, 0, 0, 0, 0, 0, 1)
        else:
            p[0] = 0.0; p[1] = 0.0; p[2] = 0.0
    elif jt == J_PLANAR:
        rot_z(cos(q[0]), sin(q[0]), R)
        p[0] = q[1]; p[1] = q[2]; p[2] = 0.0
        _col(H, 0, 0, 0, 1, 0, 0, 0)
        _col(H, 1, 0, 0, 0, 1, 0, 0)
        _col(H, 2, 0, 0, 0, 0, 1, 0)
    elif jt == J_CYLINDER:
        rot_z(cos(q[0]), sin(q[0]), R)
        p[0] = 0.0; p[1] = 0.0; p[2] = q[1]
        _col(H, 0, 0, 0, 1, 0, 0, 0)
        _col(H, 1, 0, 0, 0, 0, 0, 1)
    elif jt == J_SCREW:
        rot_z(cos(q[0]), sin(q[0]), R)
        p[0] = 0.0; p[1] = 0.0; p[2] = prm[0] * q[0]
        _col(H, 0, 0, 0, 1, 0, 0, prm[0])
    elif jt == J_BENDSTRETCH:
        c = cos(q[0]); s = sin(q[0])
        rot_z(c, s, R)
        p[0] = c * q[1]; p[1] = s * q[1]; p[2] = 0.0
        _col(H, 0, 0, 0, 1, -p[1], p[0], 0)     # (z, z x p_FM)
        _col(H, 1, 0, 0, 0, c, s, 0)            # (0, Mx in F)
    elif jt == J_SPHERICAL_COORDS:
        _spherical_coords_position(q, prm, R, p, H)
    elif jt == J_ELLIPSOID or jt == J_ELLIPSOID_EULER:
        if jt == J_ELLIPSOID:
            quat_to_rot(q, R)
            qerr[0] = quat_err(q)
        else:
            body_xyz_to_rot(q, R)
        # n = R z; p = diag(r) n;  column k = (e_k, diag(r) (e_k x n))
        p[0] = prm[0] * R[2]; p[1] = prm[1] * R[5]; p[2] = prm[2] * R[8]
        _col(H, 0, 1, 0, 0, 0, -prm[1] * R[8], prm[2] * R[5])
        _col(H, 1, 0, 1, 0, prm[0] * R[8], 0, -prm[2] * R[2])
        _col(H, 2, 0, 0, 1, -prm[0] * R[5], prm[1] * R[2], 0)
    elif (jt == J_LINE_ORIENTATION or jt == J_LINE_ORIENTATION_EULER
          or jt == J_FREE_LINE or jt == J_FREE_LINE_EULER):
        if jt == J_LINE_ORIENTATION or jt == J_FREE_LINE:
            quat_to_rot(q, R)
            qerr[0] = quat_err(q)
        else:
            body_xyz_to_rot(q, R)
        _col(H, 0, R[0], R[3], R[6], 0, 0, 0)     # Mx in F
        _col(H, 1, R[1], R[4], R[7], 0, 0, 0)     # My in F
        p[0] = 0.0; p[1] = 0.0; p[2] = 0.0
        if jt == J_FREE_LINE or jt == J_FREE_LINE_EULER:
            k = 4 if jt == J_FREE_LINE else 3
            p[0] = q[k]; p[1] = q[k + 1]; p[2] = q[k + 2]
            _col(H, 2, 0, 0, 0, 1, 0, 0)
            _col(H, 3, 0, 0, 0, 0, 1, 0)
            _col(H, 4, 0, 0, 0, 0, 0, 1)
    else:  # Weld (and anything unknown): M = F
        set_identity33(R)
        p[0] = 0.0; p[1] = 0.0; p[2] = 0.0


cdef inline void _spherical_coords_signs(const double* prm, double* sAz, double* sZe,
                                         double* sT, int* axis) noexcept nogil:
    cdef int flags = <int>prm[2]
    sAz[0] = -1.0 if flags & 1 else 1.0
    sZe[0] = -1.0 if flags & 2 else 1.0
    axis[0] = 0 if flags & 4 else 2
    sT[0] = -1.0 if flags & 8 else 1.0


cdef void _spherical_coords_position(const double* q, const double* prm, double* R, double* p,
                                     double* H) noexcept nogil:
    cdef double sAz, sZe, sT
    cdef int ax
    _spherical_coords_signs(prm, &sAz, &sZe, &sT, &ax)
    cdef double az = sAz * q[0] + prm[0], ze = sZe * q[1] + prm[1]
    cdef double ca = cos(az), sa = sin(az), cz = cos(ze), sz = sin(ze)
    # R = Rz(az) Ry(ze)
    R[0] = ca * cz; R[1] = -sa; R[2] = ca * sz
    R[3] = sa * cz; R[4] = ca;  R[5] = sa * sz
    R[6] = -sz;     R[7] = 0.0; R[8] = cz
    cdef double t = sT * q[2]
    p[0] = t * R[ax]; p[1] = t * R[3 + ax]; p[2] = t * R[6 + ax]
    cdef double sMy[3]
    sMy[0] = sZe * R[1]; sMy[1] = sZe * R[4]; sMy[2] = sZe * R[7]
    _col(H, 0, 0, 0, sAz, -sAz * p[1], sAz * p[0], 0)     # (sFz, sFz x p)
    H[6] = sMy[0]; H[7] = sMy[1]; H[8] = sMy[2]
    cross3(sMy, p, H + 9)                                  # (sMy, sMy x p)
    _col(H, 2, 0, 0, 0, sT * R[ax], sT * R[3 + ax], sT * R[6 + ax])


cdef void joint_hdot_u(int jt, const double* q, const double* u, const double* prm,
                       const double* R, const double* p, const double* V,
                       double* out) noexcept nogil:
    # out (6) = HDot_FM u, the derivative in F of H_FM times u; V = V_FM = H_FM u.
    cdef double c, s
    cdef double nvec[3]
    cdef double nd[3]
    cdef double nn[3]
    _zero(out, 6)
    if jt == J_UNIVERSAL:
        # d/dt (R_FM y) = w_FM x R_FM y, and w_FM x (R_FM y) = u0 (x x R_FM y)
        c = cos(q[0]); s = sin(q[0])
        out[1] = -s * u[0] * u[1]
        out[2] = c * u[0] * u[1]
    elif jt == J_GIMBAL or jt == J_BUSHING:
        euler_hwdot_mul(q, u, u, out)      # u = qdot for these joints
    elif jt == J_SPHERICAL_COORDS:
        _spherical_coords_hdot_u(u, prm, R, p, V, out)
    elif jt == J_ELLIPSOID or jt == J_ELLIPSOID_EULER:
        # HDot u = (0, diag(r) (w x ndot)), ndot = w x n
        nvec[0] = R[2]; nvec[1] = R[5]; nvec[2] = R[8]
        cross3(V, nvec, nd)
        cross3(V, nd, nn)
        out[3] = prm[0] * nn[0]; out[4] = prm[1] * nn[1]; out[5] = prm[2] * nn[2]
    elif jt == J_BENDSTRETCH:
        # col 0: d/dt (z x p) = z x v_FM ; col 1: d/dt Mx = w_FM x Mx = u0 z x Mx
        c = cos(q[0]); s = sin(q[0])
        out[3] = -V[4] * u[0] - s * u[0] * u[1]
        out[4] = V[3] * u[0] + c * u[0] * u[1]


cdef void _spherical_coords_hdot_u(const double* u, const double* prm, const double* R,
                                   const double* p, const double* V, double* out) noexcept nogil:
    # d/dt H0 = (0, sFz x v);  d/dt H1 = (w x sMy, (w x sMy) x p + sMy x v);
    # d/dt H2 = (0, w x sMt), with w = w_FM, v = v_FM (vectors fixed in M turn with w)
    cdef double sAz, sZe, sT
    cdef int ax
    _spherical_coords_signs(prm, &sAz, &sZe, &sT, &ax)
    cdef double sMy[3]
    cdef double sMt[3]
    cdef double wxy[3]
    cdef double sFz[3]
    sFz[0] = 0.0; sFz[1] = 0.0; sFz[2] = sAz
    sMy[0] = sZe * R[1]; sMy[1] = sZe * R[4]; sMy[2] = sZe * R[7]
    sMt[0] = sT * R[ax]; sMt[1] = sT * R[3 + ax]; sMt[2] = sT * R[6 + ax]
    cross3(V, sMy, wxy)
    out[0] = u[1] * wxy[0]; out[1] = u[1] * wxy[1]; out[2] = u[1] * wxy[2]
    out[3] = 0.0; out[4] = 0.0; out[5] = 0.0
    cdef double tmp[3]
    cross3(sFz, V + 3, tmp)
    out[3] += u[0] * tmp[0]; out[4] += u[0] * tmp[1]; out[5] += u[0] * tmp[2]
    cross3(wxy, p, tmp)
    out[3] += u[1] * tmp[0]; out[4] += u[1] * tmp[1]; out[5] += u[1] * tmp[2]
    cross3(sMy, V + 3, tmp)
    out[3] += u[1] * tmp[0]; out[4] += u[1] * tmp[1]; out[5] += u[1] * tmp[2]
    cross3(V, sMt, tmp)
    out[3] += u[2] * tmp[0]; out[4] += u[2] * tmp[1]; out[5] += u[2] * tmp[2]


cdef inline bint _is_line(int jt) noexcept nogil:
    return (jt == J_LINE_ORIENTATION or jt == J_LINE_ORIENTATION_EULER
            or jt == J_FREE_LINE or jt == J_FREE_LINE_EULER)


cdef inline void _line_rot(int jt, const double* q, double* R) noexcept nogil:
    if jt == J_LINE_ORIENTATION or jt == J_FREE_LINE:
        quat_to_rot(q, R)
    else:
        body_xyz_to_rot(q, R)


cdef void _line_n(int jt, const double* q, const double* x, double* out, bint transpose,
                  bint inverse) noexcept nogil:
    # LineOrientation / FreeLine: u_rot = (x, y) of w_FM in M, so the rotational
    # block is N_rot(q) R_FM[:, :2] (N_rot the Ball's N in the same q mode).
    cdef double R[9]
    cdef double w[3]
    cdef double y[4]
    cdef bint quat = jt == J_LINE_ORIENTATION or jt == J_FREE_LINE
    cdef bint free = jt == J_FREE_LINE or jt == J_FREE_LINE_EULER
    cdef int nqr = 4 if quat else 3
    _line_rot(jt, q, R)
    if not transpose and not inverse:     # N x: x (nu) -> (nq)
        w[0] = R[0] * x[0] + R[1] * x[1]
        w[1] = R[3] * x[0] + R[4] * x[1]
        w[2] = R[6] * x[0] + R[7] * x[1]
        if quat:
            quat_e_mul(q, w, 0.5, out)
        else:
            euler_n_mul(q, w, out)
        if free:
            out[nqr] = x[2]; out[nqr + 1] = x[3]; out[nqr + 2] = x[4]
    elif transpose and not inverse:       # N^T x: (nq) -> (nu)
        if quat:
            quat_eT_mul(q, x, 0.5, w)
        else:
            euler_nT_mul(q, x, w)
        out[0] = R[0] * w[0] + R[3] * w[1] + R[6] * w[2]
        out[1] = R[1] * w[0] + R[4] * w[1] + R[7] * w[2]
        if free:
            out[2] = x[nqr]; out[3] = x[nqr + 1]; out[4] = x[nqr + 2]
    elif not transpose:                   # N^-1 x: (nq) -> (nu)
        if quat:
            quat_eT_mul(q, x, 2.0, w)
        else:
            euler_hw_mul(q, x, w)
        out[0] = R[0] * w[0] + R[3] * w[1] + R[6] * w[2]
        out[1] = R[1] * w[0] + R[4] * w[1] + R[7] * w[2]
        if free:
            out[2] = x[nqr]; out[3] = x[nqr + 1]; out[4] = x[nqr + 2]
    else:                                 # N^-T x: (nu) -> (nq)
        w[0] = R[0] * x[0] + R[1] * x[1]
        w[1] = R[3] * x[0] + R[4] * x[1]
        w[2] = R[6] * x[0] + R[7] * x[1]
        if quat:
            quat_e_mul(q, w, 2.0, out)
        else:
            euler_hwT_mul(q, w, out)
        if free:
            out[nqr] = x[2]; out[nqr + 1] = x[3]; out[nqr + 2] = x[4]


cdef void joint_n_mul(int jt, const double* q, const double* x, double* out) noexcept nogil:
    # out (nq) = N(q) x, x of length nu
    cdef int k
    if _is_line(jt):
        _line_n(jt, q, x, out, False, False)
    elif jt == J_BALL or jt == J_FREE or jt == J_ELLIPSOID:
        quat_e_mul(q, x, 0.5, out)
        if jt == J_FREE:
            out[4] = x[3]; out[5] = x[4]; out[6] = x[5]
    elif jt == J_BALL_EULER or jt == J_FREE_EULER or jt == J_ELLIPSOID_EULER:
        euler_n_mul(q, x, out)
        if jt == J_FREE_EULER:
            out[3] = x[3]; out[4] = x[4]; out[5] = x[5]
    else:
        for k in range(joint_nu(jt)):
            out[k] = x[k]


cdef void joint_nT_mul(int jt, const double* q, const double* x, double* out) noexcept nogil:
    # out (nu) = N(q)^T x, x of length nq
    cdef int k
    if _is_line(jt):
        _line_n(jt, q, x, out, True, False)
    elif jt == J_BALL or jt == J_FREE or jt == J_ELLIPSOID:
        quat_eT_mul(q, x, 0.5, out)
        if jt == J_FREE:
            out[3] = x[4]; out[4] = x[5]; out[5] = x[6]
    elif jt == J_BALL_EULER or jt == J_FREE_EULER or jt == J_ELLIPSOID_EULER:
        euler_nT_mul(q, x, out)
        if jt == J_FREE_EULER:
            out[3] = x[3]; out[4] = x[4]; out[5] = x[5]
    else:
        for k in range(joint_nu(jt)):
            out[k] = x[k]


cdef void joint_ninv_mul(int jt, const double* q, const double* x, double* out) noexcept nogil:
    # out (nu) = N(q)^-1 x, x of length nq
    cdef int k
    if _is_line(jt):
        _line_n(jt, q, x, out, False, True)
    elif jt == J_BALL or jt == J_FREE or jt == J_ELLIPSOID:
        quat_eT_mul(q, x, 2.0, out)
        if jt == J_FREE:
            out[3] = x[4]; out[4] = x[5]; out[5] = x[6]
    elif jt == J_BALL_EULER or jt == J_FREE_EULER or jt == J_ELLIPSOID_EULER:
        euler_hw_mul(q, x, out)
        if jt == J_FREE_EULER:
            out[3] = x[3]; out[4] = x[4]; out[5] = x[5]
    else:
        for k in range(joint_nu(jt)):
            out[k] = x[k]


cdef void joint_ninvT_mul(int jt, const double* q, const double* x, double* out) noexcept nogil:
    # out (nq) = N(q)^-T x, x of length nu
    cdef int k
    if _is_line(jt):
        _line_n(jt, q, x, out, True, True)
    elif jt == J_BALL or jt == J_FREE or jt == J_ELLIPSOID:
        quat_e_mul(q, x, 2.0, out)
        if jt == J_FREE:
            out[4] = x[3]; out[5] = x[4]; out[6] = x[5]
    elif jt == J_BALL_EULER or jt == J_FREE_EULER or jt == J_ELLIPSOID_EULER:
        euler_hwT_mul(q, x, out)
        if jt == J_FREE_EULER:
            out[3] = x[3]; out[4] = x[4]; out[5] = x[5]
    else:
        for k in range(joint_nu(jt)):
            out[k] = x[k]


cdef void joint_qdotdot(int jt, const double* q, const double* u, const double* udot,
                        const double* qdot, double* out) noexcept nogil:
    # out (nq) = N udot + NDot u
    cdef double tmp[4]
    cdef double wd[3]
    cdef double w[3]
    cdef double R[9]
    cdef int k, nqr
    if _is_line(jt):
        # w_F = R_FM (u0, u1, 0), wdot_F = R_FM (udot0, udot1, 0) (w_F x w_F = 0)
        _line_rot(jt, q, R)
        wd[0] = R[0] * udot[0] + R[1] * udot[1]
        wd[1] = R[3] * udot[0] + R[4] * udot[1]
        wd[2] = R[6] * udot[0] + R[7] * udot[1]
        if jt == J_LINE_ORIENTATION or jt == J_FREE_LINE:
            w[0] = R[0] * u[0] + R[1] * u[1]
            w[1] = R[3] * u[0] + R[4] * u[1]
            w[2] = R[6] * u[0] + R[7] * u[1]
            quat_e_mul(q, wd, 0.5, out)
            quat_e_mul(qdot, w, 0.5, tmp)
            for k in range(4):
                out[k] += tmp[k]
            nqr = 4
        else:
            euler_hwdot_mul(q, qdot, qdot, tmp)
            for k in range(3):
                wd[k] -= tmp[k]
            euler_n_mul(q, wd, out)
            nqr = 3
        if jt == J_FREE_LINE or jt == J_FREE_LINE_EULER:
            out[nqr] = udot[2]; out[nqr + 1] = udot[3]; out[nqr + 2] = udot[4]
    elif jt == J_BALL or jt == J_FREE or jt == J_ELLIPSOID:
        quat_e_mul(q, udot, 0.5, out)
        quat_e_mul(qdot, u, 0.5, tmp)
        for k in range(4):
            out[k] += tmp[k]
        if jt == J_FREE:
            out[4] = udot[3]; out[5] = udot[4]; out[6] = udot[5]
    elif jt == J_BALL_EULER or jt == J_FREE_EULER or jt == J_ELLIPSOID_EULER:
        # w = Hw qdot  =>  qdotdot = N (wdot - HwDot qdot)
        euler_hwdot_mul(q, qdot, qdot, tmp)
        for k in range(3):
            wd[k] = udot[k] - tmp[k]
        euler_n_mul(q, wd, out)
        if jt == J_FREE_EULER:
            out[3] = udot[3]; out[4] = udot[4]; out[5] = udot[5]
    else:
        for k in range(joint_nu(jt)):
            out[k] = udot[k]


cdef inline int joint_nu(int jt) noexcept nogil:
    if jt == J_WELD:
        return 0
    if jt == J_PIN or jt == J_SLIDER or jt == J_SCREW:
        return 1
    if (jt == J_UNIVERSAL or jt == J_CYLINDER or jt == J_BENDSTRETCH
            or jt == J_LINE_ORIENTATION or jt == J_LINE_ORIENTATION_EULER):
        return 2
    if jt == J_FREE_LINE or jt == J_FREE_LINE_EULER:
        return 5
    if jt == J_FREE or jt == J_FREE_EULER or jt == J_BUSHING:
        return 6
    if is_function_joint(jt):
        return jt - J_FUNCTION
    if J_JIT < jt <= J_JIT_MAX:
        return jt - J_JIT
    if is_jitn_joint(jt):
        return (jt - J_JITN) % 8
    return 3
