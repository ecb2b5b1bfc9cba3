# Checks the framework runs on every variable change; kept in C so that
# validating a State update costs less than the update itself.

from libc.math cimport isfinite


cdef inline Py_ssize_t first_non_finite_at(const double* x, Py_ssize_t n) noexcept nogil:
    # index of the first NaN or infinite entry of x[0:n], or -1
    cdef Py_ssize_t i
    for i in range(n):
        if not isfinite(x[i]):
            return i
    return -1


cdef bint all_finite_kernel(const double[::1] x) noexcept nogil:
    return x.shape[0] == 0 or first_non_finite_at(&x[0], x.shape[0]) < 0


def all_finite(const double[::1] x):
    """True when every entry of the contiguous float64 vector ``x`` is finite."""
    cdef bint ok
    with nogil:
        ok = all_finite_kernel(x)
    return ok


def first_non_finite(const double[::1] x):
    """Index of the first NaN or infinite entry of ``x``, or -1 when all are finite."""
    return -1 if x.shape[0] == 0 else first_non_finite_at(&x[0], x.shape[0])
