# The per-call bookkeeping of simtk.common.state.State, compiled: what every set_q, set_u, set_time
# and upd_y pays (a time loop on the Python path, a user's set_q + realize). Each function is the
# Python method's logic, line by line, on the same attributes (the State stays a Python object);
# simtk/common/state.py binds them.

cdef enum:
    SO_NSTAGES = 11     # simtk.common.stage's Empty .. Infinity (FS_INSTANCE: core/realize.pxi)


def state_invalidate(object self, int stage):
    """State._invalidate(stage): drop every subsystem below ``stage``; forget the allocations made
    at ``stage`` or later (Instance and below)."""
    cdef list ie = self._inval_epoch
    cdef Py_ssize_t s
    cdef int lower
    e = self._epoch + 1
    self._epoch = e
    # _inval_epoch[s] is the epoch of the last invalidation at or below s (epochs only grow)
    for s in range(stage, SO_NSTAGES):
        ie[s] = e
    if self._hi >= stage:
        lower = stage - 1
        for ss in self._subs:
            if ss.stage > lower:
                ss.stage = lower
        self._hi = lower
        if self._stage > lower:
            self._stage = lower
        if stage <= FS_INSTANCE:
            self._forget_allocations(stage)
            self._fused = None


def copied_if_finite(cnp.ndarray dst, object src):
    """Copy ``src`` into ``dst`` and return True when ``src`` is a C-contiguous float64 vector of
    dst's length whose entries are all finite (``dst``: a writable C-contiguous float64 array);
    else copy nothing and return False, for the caller to convert ``src`` or say what is wrong."""
    cdef Py_ssize_t n = cnp.PyArray_SIZE(dst)
    cdef const double* s
    if type(src) is not np.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>src) != 1 \
            or not _is_f64_vector(src, n, False) or not _is_f64_vector(dst, n, True):
        return False
    s = <const double*>cnp.PyArray_DATA(<cnp.ndarray>src)
    if first_non_finite_at(s, n) >= 0:
        return False
    if n:
        memcpy(<double*>cnp.PyArray_DATA(dst), s, n * sizeof(double))
    return True
