# The rows of the constraints a Function defines, for LoopConstraints (core/loop_constraints.pxi):
# CoordinateCoupler, SpeedCoupler and PrescribedMotion, their functions evaluated from a FunctionTable
# (core/functions.pxi, bitwise the Python methods) with the operations of the Python classes
# (simtk/multibody/constraints/function_constraints.py), in the same order, so that every number of
# their rows is the Python one:
#
#   CoordinateCoupler  f(x) = 0 on coordinates, x = q[args] (holonomic):
#       perr = f(x);  G row = sum_j df/dx_j N_row(arg_j)  (verr = G u, as the class's rows of G u);
#       aerr = grad f . qdotdot0[args] + xd^T H xd,  xd = qdot[args], H = f's Hessian
#   SpeedCoupler       f(x) = 0 with x = (u[speed args], q[coordinate args]) (nonholonomic; its G
#                      depends on u, so it is built where the velocity errors are):
#       verr = f(x);  G row = df/du at the speed args;
#       aerr = df/du . udot0[speed args] + df/dq . qdot[coordinate args]
#   PrescribedMotion   q_i - f(t): a coordinate row (LOOP_COORD, qdot rows) whose target is
#                      (f, f', f'')(t) (TARGET_FUNCTION; coupler_target)
#
# Every sum runs from the first term up, starting at 0.0, as the Python classes sum them (_dot,
# _quadratic: no BLAS, whose summation order is the library's).


cdef inline void coupler_gather(const idx_t* arg, Py_ssize_t n, Py_ssize_t nus, const double* u, const double* q,
                                double* x) noexcept nogil:
    # x = (u[arg[0:nus]], q[arg[nus:n]])
    cdef Py_ssize_t j
    for j in range(n):
        x[j] = u[arg[j]] if j < nus else q[arg[j]]


cdef inline double coupler_dot(const double* g, const idx_t* arg, Py_ssize_t n, const double* v) noexcept nogil:
    # sum_j g[j] v[arg[j]], from j = 0 up
    cdef Py_ssize_t j
    cdef double s = 0.0
    for j in range(n):
        s = s + g[j] * v[arg[j]]
    return s


cdef void coupler_gradient(const FnTable* fns, idx_t fn, const double* x, Py_ssize_t n, double* g) noexcept nogil:
    # g[j] = df/dx_j at x
    cdef idx_t comp
    cdef Py_ssize_t j
    for j in range(n):
        comp = j
        g[j] = fn_derivative(fns, fn, &comp, 1, x)


cdef double coupler_quadratic(const FnTable* fns, idx_t fn, const double* x, const double* xd, Py_ssize_t n,
                              double* H) noexcept nogil:
    # xd^T H xd with H[i, j] = d2f/dx_i dx_j, as (xd H) xd: sum_j (sum_i xd_i H_ij) xd_j
    cdef idx_t comps[2]
    cdef Py_ssize_t i, j
    cdef double s = 0.0, v
    for i in range(n):
        for j in range(n):
            comps[0] = i
            comps[1] = j
            H[i * n + j] = fn_derivative(fns, fn, comps, 2, x)
    for j in range(n):
        v = 0.0
        for i in range(n):
            v = v + xd[i] * H[i * n + j]
        s = s + v * xd[j]
    return s


cdef void coupler_n_row(const Tree* t, idx_t b, idx_t qi, double g, double* row) noexcept nogil:
    # row += g N_row(qi): N's row of coordinate qi over its body b's speeds, as _n_rows evaluates it (N
    # times each unit speed) and _coord_mobility_forces adds it (six entries, weighted by g; those past
    # the body's speeds add g 0 at column 0)
    cdef Py_ssize_t k, u0 = t.uoff[b], q0 = t.qoff[b], nub = t.uoff[b + 1] - t.uoff[b]
    cdef double x[6]
    cdef double out[7]
    for k in range(6):
        if k < nub:
            memset(x, 0, 6 * sizeof(double))
            memset(out, 0, 7 * sizeof(double))
            x[k] = 1.0
            tree_n_mul(t, b, t.q + q0, x, out)
            row[u0 + k] += g * out[qi - q0]
        else:
            row[0] += g * 0.0


cdef void coupler_target(const FnTable* fns, idx_t fn, double t, double* tv) noexcept nogil:
    # (f(t), f'(t), f''(t)), as PrescribedMotion._target evaluates them
    cdef idx_t comps[2]
    comps[0] = 0
    comps[1] = 0
    tv[0] = fn_value(fns, fn, &t)
    tv[1] = fn_derivative(fns, fn, comps, 1, &t)
    tv[2] = fn_derivative(fns, fn, comps, 2, &t)
