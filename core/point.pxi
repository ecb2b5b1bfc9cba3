# One configuration at a time: the lean, functional counterpart of a TreeBatch.
#
# PointKernels runs the batch's item functions (_item_udot, _item_mass_matrix,
# _item_inverse) on one scratch block of its own, so each call is one Python
# call into C: the checks of its arguments (shape, finiteness, zero
# quaternions) in C, one nogil kernel call, the output checked for finiteness.
# That is what Pinocchio's aba / crba / rnea are: a function of (q, v, tau)
# over a model and its data. The results are bitwise those of the batch rows,
# and so of the State API (same functions, same order).
#
# Not for several threads at once (one scratch): a second thread entering
# while the first runs its kernel is refused, not raced. A failure is named by
# the Python subclass (simtk/multibody/tree/_functional.py, _failure), which
# knows the force elements.


cdef class PointKernels:
    """udot, M and inverse dynamics of one (q, u) over a TreeBatch's tree and force sets.

    Build it through the matter subsystem's ``functional_dynamics``; see that
    class for the meaning of each method.
    """

    cdef readonly TreeBatch batch
    cdef readonly object quat_q
    cdef BatchScratch scr
    cdef double* block
    cdef bint busy

    def __cinit__(self, *args, **kwargs):  # a Python subclass may take other arguments
        self.block = NULL
        self.busy = False

    def __init__(self, TreeBatch batch, quat_q):
        cdef Py_ssize_t n = _block_doubles(batch.ws.nb, batch.ws.nu, batch.ws.nq, batch.ws.nfb)
        if batch.ninputs:
            raise ValueError("PointKernels: the force sets read inputs (actuators' controls), which the "
                             "functional forms do not take")
        self.batch = batch
        self.quat_q = np.array(quat_q, dtype=np.int64, order="C").reshape(-1)
        self.quat_q.flags.writeable = False
        self.block = <double*>malloc(n * sizeof(double))
        if self.block == NULL:
            raise MemoryError()
        memset(self.block, 0, n * sizeof(double))
        _bind_block(&self.scr, &batch.ws.t, self.block)

    def __dealloc__(self):
        free(self.block)

    @property
    def nq(self) -> int:
        return self.batch.ws.nq

    @property
    def nu(self) -> int:
        return self.batch.ws.nu

    cdef cnp.ndarray _input(self, object x, Py_ssize_t n, str method, str name):
        # x as a C-contiguous float64 vector of n finite numbers (converted if needed)
        cdef cnp.ndarray a
        cdef const double* p
        cdef Py_ssize_t i
        if not _is_f64_vector(x, n, False) or cnp.PyArray_NDIM(<cnp.ndarray>x) != 1:
            a = np.ascontiguousarray(x, dtype=np.float64)
            if a.ndim != 1 or a.shape[0] != n:
                raise ValueError(f"{method}: {name}: expected a vector of {n} numbers, got shape {np.shape(x)}")
        else:
            a = <cnp.ndarray>x
        p = <const double*>cnp.PyArray_DATA(a)
        i = first_non_finite_at(p, n)
        if i >= 0:
            raise ValueError(f"{method}: {name}[{i}] is not finite ({p[i]!r})")
        return a

    cdef cnp.ndarray _q(self, object q, str method):
        cdef cnp.ndarray a = self._input(q, self.batch.ws.nq, method, "q")
        cdef idx_t k = zero_quaternion_at(<const double*>cnp.PyArray_DATA(a),
                                          <const idx_t*>cnp.PyArray_DATA(self.quat_q),
                                          cnp.PyArray_SIZE(self.quat_q))
        if k >= 0:
            raise ValueError(f"{method}: q has a zero quaternion (q[{k}:{k + 4}]), which is no rotation")
        return a

    cdef cnp.ndarray _output(self, object out, Py_ssize_t n, int ndim, str method):
        cdef cnp.npy_intp dims[2]
        if out is None:
            dims[0] = self.batch.ws.nu
            dims[1] = self.batch.ws.nu
            return cnp.PyArray_EMPTY(ndim, dims, cnp.NPY_DOUBLE, 0)
        if (not _is_f64_vector(out, n, True) or cnp.PyArray_NDIM(<cnp.ndarray>out) != ndim
                or cnp.PyArray_DIM(<cnp.ndarray>out, 0) != self.batch.ws.nu):
            raise ValueError(f"{method}: out: expected a writable C-contiguous float64 array of shape "
                             f"{(self.batch.ws.nu,) * ndim}, got {getattr(out, 'shape', type(out).__name__)}")
        return <cnp.ndarray>out

    cdef int _enter(self) except -1:
        if self.busy:
            raise RuntimeError("FunctionalDynamics: already running on another thread; make one per thread")
        self.busy = True
        return 0

    cdef object _checked(self, cnp.ndarray out, Py_ssize_t n, Py_ssize_t bad, str method):
        if bad >= 0:
            self._failure(method, bad // BATCH_SHIFT, bad % BATCH_SHIFT)
        if first_non_finite_at(<const double*>cnp.PyArray_DATA(out), n) >= 0:
            self._failure(method, -1, -1)
        return out

    def _failure(self, method, force_set, element):
        raise FloatingPointError(f"{method}: not finite")

    def calc_udot(self, q, u, tau=None, out=None):
        """udot = M(q)^-1 (f_sys(q, u) + tau - bias(q, u)) of one configuration, shape (nu,)."""
        cdef Py_ssize_t nu = self.batch.ws.nu, bad = -1
        cdef cnp.ndarray qa = self._q(q, "calc_udot()")
        cdef cnp.ndarray ua = self._input(u, nu, "calc_udot()", "u")
        cdef cnp.ndarray ta = None if tau is None else self._input(tau, nu, "calc_udot()", "tau")
        cdef cnp.ndarray oa = self._output(out, nu, 1, "calc_udot()")
        cdef const double* qp = <const double*>cnp.PyArray_DATA(qa)
        cdef const double* up = <const double*>cnp.PyArray_DATA(ua)
        cdef const double* tp = NULL if ta is None else <const double*>cnp.PyArray_DATA(ta)
        cdef double* op = <double*>cnp.PyArray_DATA(oa)
        cdef const FSet* fs = self.batch.fsets
        cdef Py_ssize_t ns = self.batch.nsets
        self._enter()
        try:
            with nogil:
                if nu:
                    bad = _item_udot(&self.scr, fs, ns, qp, up, tp)
                    memcpy(op, self.scr.t.udot, nu * sizeof(double))
        finally:
            self.busy = False
        return self._checked(oa, nu, bad, "calc_udot()")

    def calc_m(self, q, out=None):
        """M(q), shape (nu, nu), by the composite-body method."""
        cdef Py_ssize_t nu = self.batch.ws.nu
        cdef cnp.ndarray qa = self._q(q, "calc_m()")
        cdef cnp.ndarray oa = self._output(out, nu * nu, 2, "calc_m()")
        cdef const double* qp = <const double*>cnp.PyArray_DATA(qa)
        cdef double* op = <double*>cnp.PyArray_DATA(oa)
        self._enter()
        try:
            with nogil:
                if nu:
                    _item_mass_matrix(&self.scr, qp, op)
        finally:
            self.busy = False
        return self._checked(oa, nu * nu, -1, "calc_m()")

    def calc_inverse_dynamics(self, q, u, udot, out=None):
        """tau = M(q) udot + bias(q, u) - f_sys(q, u) of one configuration, shape (nu,)."""
        cdef Py_ssize_t nu = self.batch.ws.nu, bad = -1
        cdef cnp.ndarray qa = self._q(q, "calc_inverse_dynamics()")
        cdef cnp.ndarray ua = self._input(u, nu, "calc_inverse_dynamics()", "u")
        cdef cnp.ndarray da = self._input(udot, nu, "calc_inverse_dynamics()", "udot")
        cdef cnp.ndarray oa = self._output(out, nu, 1, "calc_inverse_dynamics()")
        cdef const double* qp = <const double*>cnp.PyArray_DATA(qa)
        cdef const double* up = <const double*>cnp.PyArray_DATA(ua)
        cdef const double* dp = <const double*>cnp.PyArray_DATA(da)
        cdef double* op = <double*>cnp.PyArray_DATA(oa)
        cdef const FSet* fs = self.batch.fsets
        cdef Py_ssize_t ns = self.batch.nsets
        self._enter()
        try:
            with nogil:
                if nu:
                    bad = _item_inverse(&self.scr, fs, ns, qp, up, dp, op)
        finally:
            self.busy = False
        return self._checked(oa, nu, bad, "calc_inverse_dynamics()")
