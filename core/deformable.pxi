# Deformable bodies' element kernels (simtk.deformable): particles joined by springs (SOFA's
# StiffSpringForceField). Positions x and velocities v are (n, 3) in Ground; a spring s joins
# particles i = seg[s, 0] and j = seg[s, 1] with stiffness k_s, rest length L0_s and damping c_s
# along its line:
#
#   d = x_j - x_i,  l = |d|,  e = d / l,  t = k (l - L0) + c e . (v_j - v_i)
#   f_i += t e,  f_j -= t e,  energy = 1/2 k (l - L0)^2
#
# A spring of zero length has no direction and gives no force (its energy still counts). The
# implicit step needs the force's derivatives as products, never as matrices:
#
#   df = -(alpha K dx + beta D dv),  K = -df/dx per spring block on (dx_j - dx_i):
#   K_s = k [e e^T + (1 - L0 / l)(I - e e^T)],  D_s = c e e^T
#
# (the damping's dependence on x is left out, as SOFA's springs leave it). With ``definite`` the
# transverse term of a compressed spring (l < L0, where it is negative) is dropped, so that K is
# positive semidefinite and an implicit step's matrix M + h D + h^2 K stays positive definite
# (Choi and Ko's fix; the step then linearizes approximately, which leaves it first-order). Each call is one pass
# over the springs, O(number of springs), nogil; the caller checked the shapes (simtk/_core.py).

cdef inline double _spring_dir(const double* xi, const double* xj, double* e) noexcept nogil:
    # e = (xj - xi) / l; returns l (0 and e = 0 for coincident ends)
    cdef double l
    e[0] = xj[0] - xi[0]
    e[1] = xj[1] - xi[1]
    e[2] = xj[2] - xi[2]
    l = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    if l > 0.0:
        e[0] /= l
        e[1] /= l
        e[2] /= l
    return l


def spring_forces(const double[:, ::1] x, const double[:, ::1] v, const int64_t[:, ::1] seg, const double[::1] k,
                  const double[::1] L0, const double[::1] c, double[:, ::1] f) -> float:
    """Add the springs' forces into f (n, 3); returns their elastic energy."""
    cdef Py_ssize_t s, i, j, a, ns = seg.shape[0]
    cdef double e[3]
    cdef double l, t, stretch, energy = 0.0
    with nogil:
        for s in range(ns):
            i = seg[s, 0]
            j = seg[s, 1]
            l = _spring_dir(&x[i, 0], &x[j, 0], e)
            stretch = l - L0[s]
            energy += 0.5 * k[s] * stretch * stretch
            if l == 0.0:
                continue
            t = k[s] * stretch + c[s] * (e[0] * (v[j, 0] - v[i, 0]) + e[1] * (v[j, 1] - v[i, 1])
                                         + e[2] * (v[j, 2] - v[i, 2]))
            for a in range(3):
                f[i, a] += t * e[a]
                f[j, a] -= t * e[a]
    return energy


def spring_force_derivative_product(const double[:, ::1] x, const int64_t[:, ::1] seg, const double[::1] k,
                                    const double[::1] L0, const double[::1] c, const double[:, ::1] dx,
                                    const double[:, ::1] dv, double alpha, double beta,
                                    double[:, ::1] out, bint definite=False) -> None:
    """Add alpha K dx + beta D dv into out (n, 3): K = -df/dx, D = -df/dv of the springs (K without
    compressed springs' transverse term when ``definite``)."""
    cdef Py_ssize_t s, i, j, a, ns = seg.shape[0]
    cdef double e[3]
    cdef double r[3]
    cdef double w[3]
    cdef double l, g, ed, ew, t
    with nogil:
        for s in range(ns):
            i = seg[s, 0]
            j = seg[s, 1]
            l = _spring_dir(&x[i, 0], &x[j, 0], e)
            if l == 0.0:
                continue
            g = k[s] * (1.0 - L0[s] / l)
            if definite and g < 0.0:
                g = 0.0
            for a in range(3):
                r[a] = dx[j, a] - dx[i, a]
                w[a] = dv[j, a] - dv[i, a]
            ed = e[0] * r[0] + e[1] * r[1] + e[2] * r[2]
            ew = e[0] * w[0] + e[1] * w[1] + e[2] * w[2]
            for a in range(3):
                # K_s r = k e (e.r) + g (r - e (e.r)); D_s w = c e (e.w); on i with a minus sign
                t = alpha * (k[s] * e[a] * ed + g * (r[a] - e[a] * ed)) + beta * c[s] * e[a] * ew
                out[j, a] += t
                out[i, a] -= t
