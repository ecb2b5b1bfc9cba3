# Spatial algebra on raw float64 pointers, shared by the joint library and the
# tree sweeps.
#
# Layouts (all row-major, contiguous):
#   vec3      3 doubles
#   mat33     9 doubles, row-major
#   spatial   6 doubles: [0:3] angular, [3:6] linear (the (2,3) convention)
#   mat66     36 doubles, row-major; spatial inertias are symmetric
#
# The sweeps express every spatial quantity in Ground and about the Ground
# ORIGIN (Featherstone's "absolute" coordinates). That choice makes moving a
# quantity from a body to its parent free (nothing to shift, nothing to
# rotate), which is what keeps the recursions cheap; conversion to the body
# origin (Simbody's V_GB, A_GB convention) happens once per body at the end.
#
# Pointer-level helpers are used (instead of memoryview indexing) because they
# inline to straight-line C with no stride arithmetic.

from libc.math cimport sin, cos, sqrt, fabs, NAN
from libc.string cimport memcpy, memset


cdef inline void cross3(const double* a, const double* b, double* out) noexcept nogil:
    # out = a x b (out must not alias a or b)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


cdef inline void cross3_add(const double* a, const double* b, double* out) noexcept nogil:
    # out += a x b
    out[0] += a[1] * b[2] - a[2] * b[1]
    out[1] += a[2] * b[0] - a[0] * b[2]
    out[2] += a[0] * b[1] - a[1] * b[0]


cdef inline void cross3_sub(const double* a, const double* b, double* out) noexcept nogil:
    # out -= a x b
    out[0] -= a[1] * b[2] - a[2] * b[1]
    out[1] -= a[2] * b[0] - a[0] * b[2]
    out[2] -= a[0] * b[1] - a[1] * b[0]


cdef inline double dot3(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


cdef inline double dot_n(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    # a . b over n entries in four interleaved partial sums, so that the
    # additions do not wait on each other: ((s0 + s1) + (s2 + s3))
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k, n4 = n - n % 4
    for k in range(0, n4, 4):
        s0 = s0 + a[k] * b[k]
        s1 = s1 + a[k + 1] * b[k + 1]
        s2 = s2 + a[k + 2] * b[k + 2]
        s3 = s3 + a[k + 3] * b[k + 3]
    for k in range(n4, n):
        s0 = s0 + a[k] * b[k]
    return (s0 + s1) + (s2 + s3)


cdef inline double dot6(const double* a, const double* b) noexcept nogil:
    return (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
            + a[3] * b[3] + a[4] * b[4] + a[5] * b[5])


cdef inline void mat33_vec(const double* R, const double* x, double* out) noexcept nogil:
    # out = R x
    out[0] = R[0] * x[0] + R[1] * x[1] + R[2] * x[2]
    out[1] = R[3] * x[0] + R[4] * x[1] + R[5] * x[2]
    out[2] = R[6] * x[0] + R[7] * x[1] + R[8] * x[2]


cdef inline void mat33T_vec(const double* R, const double* x, double* out) noexcept nogil:
    # out = R^T x
    out[0] = R[0] * x[0] + R[3] * x[1] + R[6] * x[2]
    out[1] = R[1] * x[0] + R[4] * x[1] + R[7] * x[2]
    out[2] = R[2] * x[0] + R[5] * x[1] + R[8] * x[2]


cdef inline void mat33_mul(const double* A, const double* B, double* C) noexcept nogil:
    # C = A B (27 mul)
    cdef int r
    for r in range(3):
        C[3 * r + 0] = A[3 * r] * B[0] + A[3 * r + 1] * B[3] + A[3 * r + 2] * B[6]
        C[3 * r + 1] = A[3 * r] * B[1] + A[3 * r + 1] * B[4] + A[3 * r + 2] * B[7]
        C[3 * r + 2] = A[3 * r] * B[2] + A[3 * r + 1] * B[5] + A[3 * r + 2] * B[8]


cdef inline void mat33_mul_T(const double* A, const double* B, double* C) noexcept nogil:
    # C = A B^T
    cdef int r
    for r in range(3):
        C[3 * r + 0] = A[3 * r] * B[0] + A[3 * r + 1] * B[1] + A[3 * r + 2] * B[2]
        C[3 * r + 1] = A[3 * r] * B[3] + A[3 * r + 1] * B[4] + A[3 * r + 2] * B[5]
        C[3 * r + 2] = A[3 * r] * B[6] + A[3 * r + 1] * B[7] + A[3 * r + 2] * B[8]


cdef inline void rot_z(double c, double s, double* R) noexcept nogil:
    R[0] = c; R[1] = -s; R[2] = 0.0
    R[3] = s; R[4] = c; R[5] = 0.0
    R[6] = 0.0; R[7] = 0.0; R[8] = 1.0


cdef inline void set_identity33(double* R) noexcept nogil:
    R[0] = 1.0; R[1] = 0.0; R[2] = 0.0
    R[3] = 0.0; R[4] = 1.0; R[5] = 0.0
    R[6] = 0.0; R[7] = 0.0; R[8] = 1.0


cdef inline void quat_to_rot(const double* q, double* R) noexcept nogil:
    # R from the quaternion (w, x, y, z), normalized here (Simbody normalizes
    # before building R_FM, so an unnormalized q still gives a rotation).
    cdef double n2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]
    cdef double s = 2.0 / n2
    cdef double w = q[0], x = q[1], y = q[2], z = q[3]
    R[0] = 1.0 - s * (y * y + z * z)
    R[1] = s * (x * y - w * z)
    R[2] = s * (x * z + w * y)
    R[3] = s * (x * y + w * z)
    R[4] = 1.0 - s * (x * x + z * z)
    R[5] = s * (y * z - w * x)
    R[6] = s * (x * z - w * y)
    R[7] = s * (y * z + w * x)
    R[8] = 1.0 - s * (x * x + y * y)


cdef inline void body_xyz_to_rot(const double* a, double* R) noexcept nogil:
    # R = Rx(a0) Ry(a1) Rz(a2): body-fixed X-Y-Z (1-2-3) sequence.
    cdef double c0 = cos(a[0]), s0 = sin(a[0])
    cdef double c1 = cos(a[1]), s1 = sin(a[1])
    cdef double c2 = cos(a[2]), s2 = sin(a[2])
    R[0] = c1 * c2
    R[1] = -c1 * s2
    R[2] = s1
    R[3] = s0 * s1 * c2 + c0 * s2
    R[4] = -s0 * s1 * s2 + c0 * c2
    R[5] = -s0 * c1
    R[6] = -c0 * s1 * c2 + s0 * s2
    R[7] = c0 * s1 * s2 + s0 * c2
    R[8] = c0 * c1


cdef inline void mat66_vec(const double* P, const double* x, double* out) noexcept nogil:
    # out = P x (36 mul)
    cdef int r
    for r in range(6):
        out[r] = (P[6 * r] * x[0] + P[6 * r + 1] * x[1] + P[6 * r + 2] * x[2]
                  + P[6 * r + 3] * x[3] + P[6 * r + 4] * x[4] + P[6 * r + 5] * x[5])


cdef inline void inertia_vec(const double* M, const double* x, double* out) noexcept nogil:
    # out = M x for a spatial inertia [[I, m [c x]], [m [c x]^T, m 1]] (as
    # spatial_inertia_at_origin lays it out): mat66_vec without the products
    # with its structural zeros, the others summed in the same order (24 mul).
    out[0] = M[0] * x[0] + M[1] * x[1] + M[2] * x[2] + M[4] * x[4] + M[5] * x[5]
    out[1] = M[6] * x[0] + M[7] * x[1] + M[8] * x[2] + M[9] * x[3] + M[11] * x[5]
    out[2] = M[12] * x[0] + M[13] * x[1] + M[14] * x[2] + M[15] * x[3] + M[16] * x[4]
    out[3] = M[19] * x[1] + M[20] * x[2] + M[21] * x[3]
    out[4] = M[24] * x[0] + M[26] * x[2] + M[28] * x[4]
    out[5] = M[30] * x[0] + M[31] * x[1] + M[35] * x[5]


cdef inline void mat66_vec_add(const double* P, const double* x, double* out) noexcept nogil:
    # out += P x
    cdef int r
    for r in range(6):
        out[r] += (P[6 * r] * x[0] + P[6 * r + 1] * x[1] + P[6 * r + 2] * x[2]
                   + P[6 * r + 3] * x[3] + P[6 * r + 4] * x[4] + P[6 * r + 5] * x[5])


cdef inline void add6(double* a, const double* b) noexcept nogil:
    a[0] += b[0]; a[1] += b[1]; a[2] += b[2]
    a[3] += b[3]; a[4] += b[4]; a[5] += b[5]


cdef inline void add36(double* A, const double* B) noexcept nogil:
    cdef int k
    for k in range(36):
        A[k] += B[k]


cdef inline void motion_cross(const double* a, const double* b, double* out) noexcept nogil:
    # out = a x_m b for motion vectors at a common point:
    #   [wa x wb ; wa x vb + va x wb]
    cross3(a, b, out)
    cross3(a, b + 3, out + 3)
    cross3_add(a + 3, b, out + 3)


cdef inline void force_cross(const double* a, const double* f, double* out) noexcept nogil:
    # out = a x_f f for a motion vector a and a force f at a common point:
    #   [wa x n + va x f ; wa x f]
    cross3(a, f, out)
    cross3_add(a + 3, f + 3, out)
    cross3(a, f + 3, out + 3)


cdef inline void motion_origin_to_point(const double* V_O, const double* p, double* out) noexcept nogil:
    # Velocity field at the origin -> velocity of the point p: (w, v_O + w x p)
    out[0] = V_O[0]; out[1] = V_O[1]; out[2] = V_O[2]
    out[3] = V_O[3]; out[4] = V_O[4]; out[5] = V_O[5]
    cross3_add(V_O, p, out + 3)


cdef inline void motion_point_to_origin(const double* V_P, const double* p, double* out) noexcept nogil:
    # Velocity of point p -> velocity field value at the origin: (w, v_P - w x p)
    out[0] = V_P[0]; out[1] = V_P[1]; out[2] = V_P[2]
    out[3] = V_P[3]; out[4] = V_P[4]; out[5] = V_P[5]
    cross3_sub(V_P, p, out + 3)


cdef inline void force_point_to_origin(const double* F_P, const double* p, double* out) noexcept nogil:
    # Force (torque about p, force) -> (torque about origin, force): n_O = n + p x f
    out[0] = F_P[0]; out[1] = F_P[1]; out[2] = F_P[2]
    out[3] = F_P[3]; out[4] = F_P[4]; out[5] = F_P[5]
    cross3_add(p, F_P + 3, out)


cdef inline void spatial_inertia_at_origin(double m, const double* c, const double* I_O,
                                           double* M) noexcept nogil:
    # 6x6 spatial inertia about the Ground origin from the mass m, the mass
    # center c (in G) and the rotational inertia I_O about the origin (in G):
    #   [[I_O, m [c x]], [m [c x]^T, m 1]]
    cdef int r, k
    for r in range(3):
        for k in range(3):
            M[6 * r + k] = I_O[3 * r + k]
            M[6 * (r + 3) + k + 3] = m if r == k else 0.0
    # m [c x]
    M[3] = 0.0;        M[4] = -m * c[2];  M[5] = m * c[1]
    M[9] = m * c[2];   M[10] = 0.0;       M[11] = -m * c[0]
    M[15] = -m * c[1]; M[16] = m * c[0];  M[17] = 0.0
    # its transpose
    for r in range(3):
        for k in range(3):
            M[6 * (r + 3) + k] = M[6 * k + r + 3]


cdef int spd_inverse(const double* A, int n, double* Ainv, double* work) noexcept nogil:
    # Inverse of a small (n <= 6) symmetric positive definite matrix by
    # Cholesky. Returns 0 on success, -1 if A is not positive definite (a
    # massless body at the end of a chain, say): Ainv is then filled with NaN
    # so the failure is visible in the results instead of silently wrong.
    # work needs n*n doubles.
    cdef int i, j, k
    cdef double s
    cdef double* L = work
    for i in range(n):
        for j in range(i + 1):
            s = A[n * i + j]
            for k in range(j):
                s -= L[n * i + k] * L[n * j + k]
            if i == j:
                if s <= 0.0:
                    for k in range(n * n):
                        Ainv[k] = NAN
                    return -1
                L[n * i + i] = sqrt(s)
            else:
                L[n * i + j] = s / L[n * j + j]
    # Ainv = L^-T L^-1: column j solves L y = e_j then L^T x = y
    for j in range(n):
        for i in range(n):
            s = 1.0 if i == j else 0.0
            for k in range(i):
                s -= L[n * i + k] * Ainv[n * k + j]
            Ainv[n * i + j] = s / L[n * i + i]
        for i in range(n - 1, -1, -1):
            s = Ainv[n * i + j]
            for k in range(i + 1, n):
                s -= L[n * k + i] * Ainv[n * k + j]
            Ainv[n * i + j] = s / L[n * i + i]
    return 0
