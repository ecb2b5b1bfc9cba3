# Checks the framework runs on every variable change; kept in C so that
# validating a State update costs less than the update itself.

from libc.math cimport isfinite
from libc.stdint cimport uint64_t
from libc.string cimport memcpy


cdef inline bint any_non_finite(const double* x, Py_ssize_t n) noexcept nogil:
    # Whether x[0:n] holds a NaN or an infinity: those have every exponent bit
    # set, so adding one to the exponent field carries into the sign bit. An
    # OR over the words, which the compiler vectorizes (an early-exit loop it
    # does not); memcpy reads the bits without breaking aliasing rules.
    # Four accumulators, so that the ORs do not wait on each other.
    cdef uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0, b1, b2, b3
    cdef Py_ssize_t i, n4 = n - n % 4
    for i in range(0, n4, 4):
        memcpy(&b0, x + i, 8)
        memcpy(&b1, x + i + 1, 8)
        memcpy(&b2, x + i + 2, 8)
        memcpy(&b3, x + i + 3, 8)
        a0 |= (b0 & 0x7FF0000000000000ULL) + 0x0010000000000000ULL
        a1 |= (b1 & 0x7FF0000000000000ULL) + 0x0010000000000000ULL
        a2 |= (b2 & 0x7FF0000000000000ULL) + 0x0010000000000000ULL
        a3 |= (b3 & 0x7FF0000000000000ULL) + 0x0010000000000000ULL
    for i in range(n4, n):
        memcpy(&b0, x + i, 8)
        a0 |= (b0 & 0x7FF0000000000000ULL) + 0x0010000000000000ULL
    return ((a0 | a1 | a2 | a3) >> 63) != 0


cdef inline Py_ssize_t first_non_finite_at(const double* x, Py_ssize_t n) noexcept nogil:
    # index of the first NaN or infinite entry of x[0:n], or -1. Blocks are
    # screened by any_non_finite; only a flagged block is searched entry by entry.
    cdef Py_ssize_t i, start, stop
    for start in range(0, n, 512):
        stop = start + 512 if start + 512 < n else n
        if any_non_finite(x + start, stop - start):
            for i in range(start, stop):
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
