# Checks the framework runs on every variable change; kept in C so that
# validating a State update costs less than the update itself.

from libc.math cimport isfinite


cdef bint all_finite_kernel(const double[::1] x) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        if not isfinite(x[i]):
            return False
    return True


def all_finite(const double[::1] x):
    """True when every entry of the contiguous float64 vector ``x`` is finite."""
    cdef bint ok
    with nogil:
        ok = all_finite_kernel(x)
    return ok


def first_non_finite(const double[::1] x):
    """Index of the first NaN or infinite entry of ``x``, or -1 when all are finite."""
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        if not isfinite(x[i]):
            return i
    return -1
