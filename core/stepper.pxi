# The compiled time loop: many integrator steps over one tree in one nogil call.
#
# A TreeStepper runs the steps of simtk.math's integrators (explicit
# Runge-Kutta tables, semi-explicit Euler with and without its error estimate,
# velocity Verlet) for a System whose derivative is y' = (N(q) u, udot(q, u))
# with udot from the built-in force sets of a TreeBatch, constrained by the
# equations of a LoopConstraints when given (core/loop_constraints.pxi); no z
# (the Python layer, simtk/math/_compiled_loop.py, checks what it hands over).
#
# Bitwise the Python path. Every number is computed by the same operations,
# in the same order, as simtk/math/integrator.py and its method classes:
#   - the linear combinations of stage derivatives and the error norm are the
#     functions below, which the Python path calls too (rk_combine,
#     error_norm), so neither depends on a BLAS's summation order;
#   - a derivative is _item_udot, the kernels a realization to Acceleration
#     runs (position, articulated, velocity, the force sets, forward), at the
#     time the Python path sets (t0 + c_i h for stage i of a Runge-Kutta
#     table, t1 at the step's end), where the constraints' targets are taken;
#   - the step-size control repeats Integrator._take_one_step line by line,
#     with Python's min/max (py_min, py_max) and libm's pow, which Python's
#     float ** calls;
#   - the core is compiled with -ffp-contract=off, so no multiply-add is fused
#     here that numpy would round twice.
# The loop returns to Python when it lands on t_max, after max_steps steps, or
# when a step needs what only Python does (a non-finite derivative, a step
# below the minimum): then the step's attempts are not counted and Python
# takes that step again from its start, with the same numbers.
#
# A System with Python parts (a Force.Custom, a user's subsystem: see
# core/realize.pxi) is stepped the same way with its derivatives evaluated
# through its State (a StateDerivative): the State is put at (t, y) as the
# Python path puts it and realized to Acceleration by its fused realization,
# which calls the Python parts where the stage hooks would, with the GIL; the
# kernels and the steps' arithmetic stay here. An exception in a Python part
# hands the step back to Python, which takes it again and raises or recovers
# as it does on its own path.

from libc.math cimport pow, fabs, isfinite

cdef double _EPS = 2.220446049250313e-16

cdef enum:
    STEPPER_RK = 0
    STEPPER_SEMI_EXPLICIT = 1
    STEPPER_VERLET = 2
    STEPPER_SEMI_IMPLICIT = 3  # the semi-implicit Euler step of core/implicit_step.pxi (set_linearizer)

#: name -> method code of TreeStepper
STEPPER_METHODS = {"rk": STEPPER_RK, "semi_explicit": STEPPER_SEMI_EXPLICIT, "verlet": STEPPER_VERLET,
                   "semi_implicit": STEPPER_SEMI_IMPLICIT}

cdef enum:
    RUN_REACHED = 0      # landed on t_max
    RUN_STEP_LIMIT = 1   # took max_steps steps
    RUN_PYTHON = 2       # the next step needs the Python path
    RUN_RAISED = 3       # a Python part raised during a step (StateDerivative.raised): the step failed
    RUN_NOT_BEGUN = 4    # run_ticks: the next driver step's restart needs Python (it was not begun)

#: TreeStepper.run's return codes
RUN_CODES = {"reached": RUN_REACHED, "step_limit": RUN_STEP_LIMIT, "python": RUN_PYTHON, "raised": RUN_RAISED,
             "not_begun": RUN_NOT_BEGUN}

# the slots of TreeStepper.run's ctl (float64) and cnt (int64) arrays
cdef enum:
    C_T0 = 0
    C_TMAX = 1
    C_HPRED = 2
    C_FIXED = 3         # NaN: no fixed step
    C_MAXSTEP = 4
    C_MINSTEP = 5
    C_ACC = 6
    C_P1 = 7
    C_HPREV = 8
    C_HFIRST = 9
    C_HP = 10           # Verlet: the previous step's size
    C_HISTORY = 11      # Verlet: 1.0 when the previous step counts
    C_CONSTOL = 12      # the constraint tolerance in use (quaternion errors)
    C_PROJECT_EVERY = 13  # 1.0: project after every step
    C_HFAIL = 14        # RUN_RAISED: the size of the step that failed
    C_NCTL = 15
cdef enum:
    N_MAX = 0           # steps allowed (<= 0: no limit)
    N_TAKEN = 1
    N_ATTEMPTED = 2
    N_REALIZE = 3
    N_ERRFAIL = 4
    N_STEPS = 5         # steps taken by this call
    N_PROJECT = 6
    N_NCNT = 7

STEPPER_CTL = dict(t0=C_T0, t_max=C_TMAX, h_pred=C_HPRED, fixed=C_FIXED, max_step=C_MAXSTEP,
                   min_step=C_MINSTEP, accuracy=C_ACC, p1=C_P1, h_prev=C_HPREV, h_first=C_HFIRST,
                   hp=C_HP, history=C_HISTORY, constraint_tolerance=C_CONSTOL, project_every=C_PROJECT_EVERY,
                   h_fail=C_HFAIL, size=C_NCTL)
STEPPER_CNT = dict(max_steps=N_MAX, taken=N_TAKEN, attempted=N_ATTEMPTED, realize=N_REALIZE,
                   err_fail=N_ERRFAIL, steps=N_STEPS, projections=N_PROJECT, size=N_NCNT)


cdef inline double py_min(double a, double b) noexcept nogil:
    # Python's min(a, b): the first unless the second is smaller
    return b if b < a else a


cdef inline double py_max(double a, double b) noexcept nogil:
    # Python's max(a, b): the first unless the second is larger
    return b if b > a else a


cdef inline double np_maximum(double a, double b) noexcept nogil:
    # numpy.maximum: NaN if either is NaN
    if a != a or b != b:
        return a + b
    return a if a >= b else b


cdef void _lincomb(double* out, const double* y0, double h, const double* a, Py_ssize_t m,
                   const double* K, Py_ssize_t ny) noexcept nogil:
    # out = y0 + (sum_k a_k K_k) h, the sum from k = 0 up (y0 NULL: no y0 term).
    # Cost: m multiply-adds per entry.
    cdef Py_ssize_t j, k
    cdef double acc
    for j in range(ny):
        acc = a[0] * K[j] if m > 0 else 0.0
        for k in range(1, m):
            acc = acc + a[k] * K[k * ny + j]
        if y0 != NULL:
            out[j] = y0[j] + acc * h
        else:
            out[j] = acc * h


cdef double _error_norm(const double* err, const double* y0, const double* y1, const double* w,
                        Py_ssize_t n, bint infinity) noexcept nogil:
    # s_i = w_i |e_i| / max(1, w_i max(|y0_i|, |y1_i|)); RMS(s), or max |s_i|. NaN propagates.
    cdef Py_ssize_t i
    cdef double a, b, acc = 0.0
    if n == 0:
        return 0.0
    for i in range(n):
        a = np_maximum(np_maximum(fabs(y0[i]), fabs(y1[i])) * w[i], 1.0)
        b = err[i] * w[i] / a
        if infinity:
            acc = np_maximum(acc, fabs(b))
        else:
            acc = acc + b * b
    if infinity:
        return acc
    return sqrt(acc / n)


cdef double _rms_or_max(const double* v, Py_ssize_t n, bint infinity) noexcept nogil:
    # max |v_i| or sqrt(sum v_i^2 / n), summed in index order; NaN propagates. n > 0.
    cdef Py_ssize_t i
    cdef double acc = 0.0
    for i in range(n):
        if infinity:
            acc = np_maximum(acc, fabs(v[i])) if i else fabs(v[i])
        else:
            acc = acc + v[i] * v[i]
    return acc if infinity else sqrt(acc / n)


cdef void _normalize_quats(double* q, const idx_t* qoff, Py_ssize_t n) noexcept nogil:
    # q[o:o+4] /= |q[o:o+4]| for each quaternion offset o (the projection of quaternion coordinates)
    cdef Py_ssize_t i
    cdef double r
    cdef double* x
    for i in range(n):
        x = q + qoff[i]
        r = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3])
        x[0] = x[0] / r
        x[1] = x[1] / r
        x[2] = x[2] / r
        x[3] = x[3] / r


cdef void _quaternion_weights(const double* q, const idx_t* qoff, Py_ssize_t n, double* w) noexcept nogil:
    # The unit weights of quaternion coordinates (MultibodySystem.calc_q_weights): with a = |q|,
    # w0 = 2 max(a1, a2, a3), w_k = 2 max(a0, the two other vector parts), each at least 1.
    cdef Py_ssize_t i
    cdef double a0, a1, a2, a3
    cdef double* wq
    for i in range(n):
        a0 = fabs(q[qoff[i]]); a1 = fabs(q[qoff[i] + 1]); a2 = fabs(q[qoff[i] + 2]); a3 = fabs(q[qoff[i] + 3])
        wq = w + qoff[i]
        wq[0] = np_maximum(2.0 * np_maximum(np_maximum(a1, a2), a3), 1.0)
        wq[1] = np_maximum(2.0 * np_maximum(a0, np_maximum(a2, a3)), 1.0)
        wq[2] = np_maximum(2.0 * np_maximum(a0, np_maximum(a1, a3)), 1.0)
        wq[3] = np_maximum(2.0 * np_maximum(a0, np_maximum(a1, a2)), 1.0)


def constraint_norm(const double[::1] v, bint infinity):
    """max |v_i|, or sqrt(sum v_i^2 / n) summed in index order: the integrators' norm of weighted
    constraint errors (0 for an empty v)."""
    if v.shape[0] == 0:
        return 0.0
    return _rms_or_max(&v[0], v.shape[0], infinity)


def normalize_quaternions(double[::1] q, const idx_t[::1] qoff):
    """q[o:o+4] /= |q[o:o+4]| for each offset o in qoff (the projection of quaternion coordinates)."""
    cdef Py_ssize_t i
    for i in range(qoff.shape[0]):
        if not 0 <= qoff[i] <= q.shape[0] - 4:
            raise IndexError(f"normalize_quaternions: offset {qoff[i]} out of range")
    if qoff.shape[0]:
        _normalize_quats(&q[0], &qoff[0], qoff.shape[0])


def rk_combine(double[::1] out, y0, double h, const double[::1] a, const double[:, ::1] K):
    """out = y0 + (sum_k a[k] K[k]) h over the first len(a) rows of K, summed from k = 0
    up (y0 None: without it). The integrators' stage and error combinations."""
    cdef const double[::1] yv
    cdef const double* yp = NULL
    cdef Py_ssize_t m = a.shape[0], ny = out.shape[0]
    if K.shape[1] != ny or K.shape[0] < m or (m > 0 and K.shape[0] == 0):
        raise ValueError("rk_combine: shapes do not match")
    if y0 is not None:
        yv = y0
        if yv.shape[0] != ny:
            raise ValueError("rk_combine: shapes do not match")
        yp = &yv[0] if ny else NULL
    if ny == 0:
        return
    with nogil:
        _lincomb(&out[0], yp, h, &a[0] if m else NULL, m, &K[0, 0], ny)


def error_norm(const double[::1] err, const double[::1] y0, const double[::1] y1, const double[::1] w,
               bint infinity):
    """The integrators' weighted error norm (see Integrator), summed in index order."""
    cdef Py_ssize_t n = err.shape[0]
    if y0.shape[0] != n or y1.shape[0] != n or w.shape[0] != n:
        raise ValueError("error_norm: shapes do not match")
    if n == 0:
        return 0.0
    return _error_norm(&err[0], &y0[0], &y1[0], &w[0], n, infinity)


cdef class StateDerivative:
    """y' = (qdot, udot) of a System's State, evaluated as the integrators' Python path evaluates it:
    the State put at time t (``set_time``) and y (``upd_y``), realized to Acceleration through its
    System, and its ydot read. The time loop's derivative for Systems with Python parts.

    ``state``'s y and ydot arrays are bound once: the stepper is rebuilt when its layout changes.
    """

    cdef readonly object system, state
    cdef object _y_arr, _ydot_arr, _set_time, _upd_y, _realize
    cdef double* y
    cdef const double* ydot
    cdef readonly Py_ssize_t ny
    cdef object pending  # a BaseException that is not an Exception (KeyboardInterrupt), re-raised by the caller
    cdef public object raised  # the Exception a Python part raised (not a step adjustment), or None
    cdef readonly object acceleration
    cdef object retake  # the exception class whose steps Python takes again (StepAdjustment)

    # Integrator._finish_step's work on the State after an accepted step, in Python (a projection onto
    # constraint equations, auto-update discrete variables), or None: see finish_step
    cdef public object finish
    # the event witnesses' check after a step (Python: returns the realizations it did, or None when a
    # witness changed sign: Python takes the step again and localizes), and their values before and
    # after the step (w0 takes w1's when the step is committed); None without witnesses
    cdef public object witnesses
    cdef double* w0
    cdef const double* w1
    cdef Py_ssize_t nw
    cdef object _w_refs
    cdef object _velocity_stage
    cdef const double* qdot
    cdef const double* qdotdot
    cdef object _qdot_arr, _qdotdot_arr
    cdef Py_ssize_t nq

    def __init__(self, object system, object state, object acceleration_stage, object retake, object finish=None,
                 object velocity_stage=None):
        y, ydot = state._y, state._ydot
        self.ny = y.shape[0]
        self.y = _f64_data(y, self.ny, True, "y")
        self.ydot = _f64_data(ydot, self.ny, True, "ydot")
        self._y_arr, self._ydot_arr = y, ydot
        self.system, self.state = system, state
        self._set_time, self._upd_y, self._realize = state.set_time, state.upd_y, system.realize
        self.acceleration = acceleration_stage
        self.pending = None
        self.raised = None
        self.retake = retake
        self.finish = finish
        self.witnesses = None
        self.nw = 0
        self._velocity_stage = velocity_stage
        qdot = state._qdot
        self.nq = qdot.shape[0]
        self.qdot = _f64_data(qdot, self.nq, False, "qdot")
        self._qdot_arr = qdot
        # the State's qdotdot (the constrained one where the matter solves constraints): Verlet's start
        self._qdotdot_arr = state._qdotdot
        self.qdotdot = _f64_data(self._qdotdot_arr, self.nq, False, "qdotdot")

    def take_pending(self):
        """The KeyboardInterrupt (or other BaseException that is not an Exception) a Python part raised
        during the last run, or None; cleared. The caller raises it once the steps taken are committed."""
        exc, self.pending = self.pending, None
        return exc

    def fits(self, object state):
        """True when ``state`` is the State bound here, with the same y, ydot, qdot and qdotdot arrays."""
        return (state is self.state and state._y is self._y_arr and state._ydot is self._ydot_arr
                and state._qdot is self._qdot_arr and state._qdotdot is self._qdotdot_arr)

    cdef bint velocity(self, double t, const double* y, double* qdot) noexcept nogil:
        # qdot = N(q) u at (t, y), the State realized to Velocity (the semi-explicit step's qdot, as
        # _SemiExplicitEulerStep._semi_explicit takes it); False when the realization raised
        cdef bint ok = False
        with gil:
            try:
                self._set_time(t)
                self._upd_y()
                memcpy(self.y, y, self.ny * sizeof(double))
                self._realize(self.state, self._velocity_stage)
                memcpy(qdot, self.qdot, self.nq * sizeof(double))
                ok = True
            except Exception as exc:
                if not isinstance(exc, self.retake):
                    self.raised = exc
            except BaseException as exc:
                self.pending = exc
        return ok

    def set_witnesses(self, check, cnp.ndarray w0, cnp.ndarray w1):
        """Check the event witnesses after every step: ``check(t0)`` (see the attribute) with ``w0``,
        ``w1`` the integrator's witness values at the step's start and end."""
        self.nw = w0.shape[0]
        self.w0 = _f64_data(w0, self.nw, True, "w0")
        self.w1 = _f64_data(w1, self.nw, False, "w1")
        self._w_refs = (w0, w1)
        self.witnesses = check

    cdef int check_witnesses(self, double t0) noexcept nogil:
        # after an accepted step (the State at its end): the realizations the check did, or -1 when
        # Python must take the step again (a witness changed sign, or the check raised)
        cdef int code = -1
        with gil:
            try:
                done = self.witnesses(t0)
                if done is not None:
                    code = <int>done
            except Exception:
                code = -1
            except BaseException as exc:
                self.pending = exc
                code = -1
        return code

    cdef void commit_witnesses(self) noexcept nogil:
        if self.nw:
            memcpy(self.w0, self.w1, self.nw * sizeof(double))

    cdef int finish_step(self, double* y, double* ydot) noexcept nogil:
        # After an accepted step whose end the State holds (realized): ``finish()`` (Python) projects
        # and updates as Integrator._finish_step does and returns (projected, realizations) or None
        # (Python must take the step again: a failed projection, a non-finite derivative). On success
        # y and ydot are the State's. Returns projected + 2 realizations, or -1.
        cdef int code = -1
        with gil:
            try:
                done = self.finish()
                if done is not None:
                    memcpy(y, self.y, self.ny * sizeof(double))
                    memcpy(ydot, self.ydot, self.ny * sizeof(double))
                    code = (1 if done[0] else 0) + 2 * <int>done[1]
            except Exception:
                code = -1
            except BaseException as exc:
                self.pending = exc
                code = -1
        return code

    cdef bint evaluate(self, double t, const double* y, double* out) noexcept nogil:
        # out = ydot at (t, y); False when the realization raised (the step goes back to Python) or
        # an entry is not finite
        cdef bint ok = False
        with gil:
            try:
                self._set_time(t)
                self._upd_y()
                memcpy(self.y, y, self.ny * sizeof(double))
                self._realize(self.state, self.acceleration)
                memcpy(out, self.ydot, self.ny * sizeof(double))
                ok = first_non_finite_at(out, self.ny) < 0
            except Exception as exc:
                # a step adjustment: Python takes the step again and asks again; anything else fails
                # the step as it fails on the Python path
                if not isinstance(exc, self.retake):
                    self.raised = exc
                ok = False
            except BaseException as exc:
                self.pending = exc
                ok = False
        return ok


cdef class TreeStepper:
    """Integrator steps over the tree and force sets of a TreeBatch (see the file's head).

    Build it through :func:`simtk._core.make_tree_stepper`. ``run`` works on the integrator's own
    arrays (K, y0, the weights, Verlet's history), so a segment of steps allocates nothing.
    """

    cdef readonly TreeBatch batch
    cdef readonly int method
    cdef readonly Py_ssize_t nq, nu, ny, ns
    cdef readonly bint fsal, error_control
    cdef object _A, _b, _c, _e, _y, _err, _fend, _qdot, _quat_q, _quat_b, _qerr, _w1
    cdef readonly Py_ssize_t nquat
    cdef readonly LoopConstraints constraints
    cdef bint has_constraints
    cdef BatchScratch scr
    cdef double* block
    # the State mode (a System with Python parts): its derivatives, and the tree the State's
    # realization leaves its kinematics in (else the batch scratch's)
    cdef readonly StateDerivative state_derivative
    cdef Tree* tr
    # forces held over the steps (Force.DiscreteForces elements' values: see set_held)
    cdef Held held
    cdef Held* held_p
    cdef object _held_refs
    # the inputs the force sets read (set_inputs), held over the steps as the held forces are
    cdef object _inputs
    # the z stepped with (q, u) when the force sets have state (muscles): y = (q, u, z), each
    # derivative's sets reading z from y and writing zdot into its rows (the others zero); 0: none
    cdef readonly Py_ssize_t nzc
    # STEPPER_SEMI_IMPLICIT: the linear solve of its steps (set_linearizer)
    cdef readonly Linearizer linearizer

    def __cinit__(self):
        self.block = NULL
        self.held_p = NULL

    def __init__(self, TreeBatch batch, int method, A, b, e, bint fsal, bint error_control, quaternion_q,
                 quaternion_bodies, LoopConstraints constraints=None, c=None, StateDerivative state_derivative=None,
                 Py_ssize_t nz=0):
        # A (s, s) lower-triangular stage table, b (n_inner,) the propagated weights, e (s,) the
        # error weights, c (s,) the nodes (stage i is evaluated at t0 + c_i h; RK only, ignored
        # otherwise; c None: zeros, for derivatives that do not depend on t). quaternion_q: the offsets in y of the
        # quaternion coordinates; quaternion_bodies: their bodies (whose qerr is |q| - 1).
        # constraints: the constraint equations solved and projected in the steps (or None).
        # state_derivative: the derivatives come from a State realized by its System (batch: that
        # State's workspace, without force sets; no constraints).
        # nz: without a state_derivative, the State's number of z, all of which the force sets'
        # elements with state own (the caller checks it): stepped by Runge-Kutta tables.
        cdef Py_ssize_t nb = batch.ws.nb
        if method != STEPPER_RK and method != STEPPER_SEMI_EXPLICIT and method != STEPPER_VERLET \
                and method != STEPPER_SEMI_IMPLICIT:
            raise ValueError(f"TreeStepper: unknown method code {method}")
        self.batch = batch
        self.method = method
        self.nq = batch.ws.nq
        self.nu = batch.ws.nu
        self.ny = self.nq + self.nu
        if state_derivative is not None:
            # a State's y may end in z (auxiliary variables), stepped as the Runge-Kutta tables step y
            if state_derivative.ny < self.ny or (state_derivative.ny > self.ny and method != STEPPER_RK):
                raise ValueError("TreeStepper: a State's y must be (q, u), or (q, u, z) for a Runge-Kutta table")
            self.ny = state_derivative.ny
        elif nz or batch.nz:
            if nz < batch.nz:
                raise ValueError(f"TreeStepper: the force sets read {batch.nz} state variables z; {nz} were given")
            if method != STEPPER_RK:
                raise ValueError("TreeStepper: state variables z are stepped by the Runge-Kutta tables only")
            self.ny = self.nq + self.nu + nz
        self.nzc = self.ny - self.nq - self.nu if state_derivative is None else 0
        self._A = np.ascontiguousarray(A, dtype=np.float64)
        self._b = np.ascontiguousarray(b, dtype=np.float64)
        self._e = np.ascontiguousarray(e, dtype=np.float64)
        self.ns = self._e.shape[0] if method == STEPPER_RK else (3 if method == STEPPER_VERLET else 2)
        if method == STEPPER_SEMI_IMPLICIT and (error_control or self.ny != self.nq + self.nu):
            raise ValueError("TreeStepper: the semi-implicit method has no error control and steps y = (q, u)")
        self._c = np.zeros(self.ns) if c is None else np.ascontiguousarray(c, dtype=np.float64)
        if method == STEPPER_RK and (self._A.ndim != 2 or self._A.shape[0] != self.ns or self._A.shape[1] != self.ns
                                     or self._b.shape[0] > self.ns or self._b.shape[0] < 1
                                     or self._c.shape != (self.ns,)):
            raise ValueError("TreeStepper: the Runge-Kutta table's shapes do not match")
        self.fsal = fsal
        self.error_control = error_control
        self._y = np.zeros(self.ny)
        self._err = np.zeros(self.ny)
        self._fend = np.zeros(self.ny)
        self._qdot = np.zeros(self.nq)
        self._quat_q = np.ascontiguousarray(quaternion_q, dtype=np.int64)
        self._quat_b = np.ascontiguousarray(quaternion_bodies, dtype=np.int64)
        self.nquat = self._quat_q.shape[0]
        if self._quat_b.shape[0] != self.nquat or any(not 0 <= o <= self.nq - 4 for o in self._quat_q) \
                or any(not 0 < b_ < nb for b_ in self._quat_b):
            raise ValueError("TreeStepper: quaternion offsets or bodies out of range")
        if constraints is not None and (constraints.nu != self.nu or constraints.nq != self.nq
                                        or constraints.nb != nb):
            raise ValueError("TreeStepper: the constraints were built for another tree")
        self.constraints = constraints
        self.has_constraints = constraints is not None
        # the position constraint errors as the State lays them out: the equations', then the quaternions'
        self._qerr = np.zeros(self.nquat + (constraints.mp if constraints is not None else 0))
        self._w1 = np.zeros(self.ny)
        self.block = <double*>malloc(_block_doubles(nb, self.nu, self.nq, batch.ws.nfb) * sizeof(double) + 64)
        if self.block == NULL:
            raise MemoryError()
        memset(self.block, 0, _block_doubles(nb, self.nu, self.nq, batch.ws.nfb) * sizeof(double) + 64)
        _bind_block(&self.scr, &batch.ws.t, self.block)
        if constraints is not None:
            self.scr.t.lean = False  # the constraints read the bias accelerations and H
        self.state_derivative = state_derivative
        self.tr = &self.scr.t
        if state_derivative is not None:
            if constraints is not None or batch.nsets:
                raise ValueError("TreeStepper: a State's derivatives take no constraints or force sets here")
            self.tr = &batch.ws.t

    def __dealloc__(self):
        free(self.block)

    def set_held(self, cnp.ndarray body_forces, cnp.ndarray mobility_forces, cnp.ndarray has_mobility):
        """Hold forces over the steps: ``body_forces`` (k, nb, 2, 3), ``mobility_forces`` (k, nu) and
        ``has_mobility`` (k,) uint8, one row per Force.DiscreteForces element in the order the force
        subsystem adds them (after its force sets; a row's mobility forces only where has_mobility),
        read at every derivative. The arrays are the caller's, written between runs (and by
        ``run_ticks``' controller law); k = 0 holds none."""
        cdef Py_ssize_t k = has_mobility.shape[0], nb = self.batch.ws.nb
        if self.state_derivative is not None:
            raise ValueError("TreeStepper.set_held: a State's derivatives hold their forces in the State")
        self.held.bf = _f64_data(body_forces, k * 6 * nb, True, "held body forces")
        self.held.mf = _f64_data(mobility_forces, k * self.nu, True, "held mobility forces")
        if has_mobility.dtype != np.uint8 or has_mobility.ndim != 1 or not has_mobility.flags.c_contiguous:
            raise ValueError("TreeStepper.set_held: has_mobility must be a contiguous uint8 vector")
        self.held.has_mf = <const char*>cnp.PyArray_DATA(has_mobility)
        self.held.k = k
        self.held_p = &self.held if k else NULL
        self._held_refs = (body_forces, mobility_forces, has_mobility)

    def set_linearizer(self, Linearizer linearizer):
        """The semi-implicit method's linear solve (a Linearizer over this stepper's tree)."""
        if linearizer.nu != self.nu or linearizer.nq != self.nq:
            raise ValueError("TreeStepper.set_linearizer: the Linearizer was built for another tree")
        self.linearizer = linearizer

    def set_inputs(self, values):
        """Hold the inputs (controls) the force sets read over the steps: ``values`` (n,), at least
        ``batch.ninputs`` of them, copied; the time is each derivative's."""
        cdef cnp.ndarray v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        if v.shape[0] < self.batch.ninputs or not np.isfinite(v).all():
            raise ValueError(f"TreeStepper.set_inputs: expected {self.batch.ninputs} finite inputs, got {v.shape[0]}")
        if self.state_derivative is not None:
            raise ValueError("TreeStepper.set_inputs: a State's derivatives read their inputs from the State")
        if self._inputs is None or (<cnp.ndarray>self._inputs).shape[0] != v.shape[0]:
            self._inputs = np.empty(v.shape[0])
        (<cnp.ndarray>self._inputs)[:] = v
        self.scr.t.inputs = _dp(self._inputs)
        self.scr.t.ninputs = v.shape[0]

    cdef int _inputs_given(self) except -1:
        if self.scr.t.ninputs < self.batch.ninputs:
            raise ValueError(f"TreeStepper: the force sets read {self.batch.ninputs} inputs; none were given "
                             "(set_inputs)")
        return 0

    @property
    def y(self):
        """The last y the stepper wrote (read only)."""
        v = self._y.view()
        v.flags.writeable = False
        return v

    cdef bint _deriv(self, double t, const double* y, double* out, Py_ssize_t reuse=-2) noexcept nogil:
        # out = (N(q) u, udot(q, u)) at time t and y = (q, u) (t: the constraints' targets); False if a
        # force element failed, an entry is not finite, or the constraints' factor was refused. reuse
        # (constraints only; see LoopConstraints.correct): -2 evaluates everything at q; -1 and above take the tree's
        # positions and articulated inertias, and the constraints' G (and factor), as a projection
        # has just left them at this q.
        cdef BatchScratch* s = &self.scr
        cdef Py_ssize_t bad
        if self.state_derivative is not None:
            return self.state_derivative.evaluate(t, y, out)
        s.t.time = t  # (the force kinds' functions of time are evaluated at the derivative's t)
        if self.nzc:
            # z's derivatives: those the sets' elements write, zero for the others (a disabled muscle's)
            memset(out + self.nq + self.nu, 0, self.nzc * sizeof(double))
            s.t.z = y + self.nq + self.nu
            s.t.zdot = out + self.nq + self.nu
            s.t.nz = self.nzc
        if reuse == -2:
            bad = _item_udot(s, self.batch.fsets, self.batch.nsets, y, y + self.nq, NULL, self.held_p)
        else:
            bad = _item_udot_at_q(s, self.batch.fsets, self.batch.nsets, y + self.nq, NULL, self.held_p)
        if self.has_constraints:
            self.constraints.set_time(t)
            if not self.constraints.correct(&s.t, reuse):
                return False
        memcpy(out, s.t.qdot, self.nq * sizeof(double))
        memcpy(out + self.nq, s.t.udot, self.nu * sizeof(double))
        return bad < 0 and first_non_finite_at(out, self.ny) < 0

    cdef int _attempt(self, double t0, double t1, double* K, const double* y0, double* y, double* err,
                      double* ctl, Py_ssize_t* n_realize, const double* qdd0, const double* a_prev,
                      const double* A, const double* b, const double* e, const double* nodes,
                      Py_ssize_t n_b) noexcept nogil:
        # One attempt from (t0, y0, K[0]) to t1: y1 into y, the error estimate into err.
        # Returns 1, or 0 when a derivative was not finite (as _attempt_step's False).
        cdef Py_ssize_t nq = self.nq, ny = self.ny, i, j, s = self.ns
        cdef double h = t1 - t0
        cdef double c, hp, a2
        cdef double* f0 = K
        cdef double* Kp
        cdef double* K1
        cdef double* qdot
        cdef double* du
        if self.method == STEPPER_RK:
            # stage i at t0 + c_i h: y = y0 + h sum_{k<i} A[i, k] K[k]  (Python: _ExplicitRungeKutta._attempt_step)
            for i in range(1, n_b):
                _lincomb(y, y0, h, A + s * i, i, K, ny)
                n_realize[0] += 1
                if not self._deriv(t0 + nodes[i] * h, y, K + i * ny):
                    return 0
            _lincomb(y, y0, h, b, n_b, K, ny)
            if self.fsal:
                n_realize[0] += 1
                if not self._deriv(t1, y, K + (s - 1) * ny):
                    return 0
            _lincomb(err, NULL, h, e, s, K, ny)
            return 1
        if self.method == STEPPER_SEMI_EXPLICIT or self.method == STEPPER_SEMI_IMPLICIT:
            # u1 = u0 + h udot0;  q1 = q0 + h N(q0) u1   (Python: _SemiExplicitEulerStep._semi_explicit)
            # semi-implicit: u1 = u0 + du of the linearized step (Python: SemiImplicitEulerIntegrator)
            if self.method == STEPPER_SEMI_EXPLICIT:
                for i in range(nq, ny):
                    y[i] = f0[i] * h + y0[i]
            else:
                du = self.scr.uacc  # (nu,) scratch
                if self.linearizer.step_u(y0, y0 + nq, f0 + nq, h, du) != 0:
                    return 0
                for i in range(nq, ny):
                    y[i] = y0[i] + du[i - nq]
            qdot = self.scr.qacc  # (nq,) scratch
            n_realize[0] += 1  # (counted before the evaluation, as the stages' are: see _raised)
            if self.state_derivative is not None:
                # q0 with u1, realized to Velocity through the State (its Python parts included)
                memcpy(y, y0, nq * sizeof(double))
                if not self.state_derivative.velocity(t1, y, qdot):
                    return 0
            else:
                _n_mul(&self.scr.t, y0, y + nq, qdot)
            for i in range(nq):
                y[i] = qdot[i] * h + y0[i]
            if not self.error_control:
                return 1
            # SemiExplicitEuler2: e_u = h/2 (udot1 - udot0), e_q = q1 - q0 - h/2 (qdot0 + qdot1)
            K1 = K + ny  # the end derivative
            n_realize[0] += 1
            if not self._deriv(t1, y, K1):
                return 0
            for i in range(ny):
                err[i] = (K1[i] - f0[i]) * (0.5 * h)
            for i in range(nq):
                err[i] = (((f0[i] + K1[i]) * (-0.5 * h)) + y[i]) - y0[i]
            return 1
        # Verlet (Python: VerletIntegrator._attempt_step)
        Kp = K + ny
        K1 = K + 2 * ny
        for i in range(ny):
            y[i] = f0[i] * h + y0[i]
        c = 0.5 * h * h
        for i in range(nq):
            y[i] = y[i] + c * qdd0[i]
        n_realize[0] += 1
        if not self._deriv(t1, y, Kp):
            return 0
        for i in range(nq, ny):
            y[i] = ((f0[i] + Kp[i]) * (0.5 * h)) + y0[i]
        n_realize[0] += 1
        if not self._deriv(t1, y, K1):
            return 0
        for i in range(nq):
            err[i] = (((f0[i] + K1[i]) * (-0.5 * h)) + y[i]) - y0[i]
        for i in range(nq, ny):
            err[i] = fabs(K1[i] - Kp[i]) * (0.5 * h)
        if ctl[C_HISTORY] != 0.0:
            hp = ctl[C_HP]
            c = pow(h, 3.0) / 12.0
            for i in range(nq, ny):
                j = i - nq
                a2 = ((K1[i] - f0[i]) / h - (f0[i] - a_prev[j]) / hp) * (2.0 / (h + hp))
                err[i] = err[i] + fabs(a2) * c
        else:
            for i in range(nq, ny):
                err[i] = err[i] + fabs(K1[i] - f0[i]) * (0.5 * h)
        return 1

    cdef bint _project_constraints(self, double t1, double* y, double tol, const idx_t* quat_q, bint* changed,
                                   Py_ssize_t* nk_out) noexcept nogil:
        # System.project's constraint part after the quaternions' normalization: project_q's Newton
        # steps, then project_u's mass-weighted corrections (simtk/multibody/constraints/_projection.py,
        # line by line). False when Python must take over (a refused factor, a non-finite error, or
        # errors left above tol, which Python reports). On True the tree holds the positions and
        # articulated inertias of the projected q, the constraints its G, and nk_out says whether A's
        # factor at it is current too (>= 0) or not (-1). t1: the time of the targets.
        cdef Tree* t = &self.scr.t
        cdef double* q = y
        cdef double* u = y + self.nq
        cdef double target = 0.01 * tol, best = INFINITY, err = 0.0
        cdef Py_ssize_t it, nk = -1, i, nv = self.constraints.nv, mp = self.constraints.mp
        cdef bint converged = mp == 0  # no position equations: project_q stops after the quaternions
        self.constraints.set_time(t1)
        for it in range(30 if mp else 0):
            if q != t.q:
                memcpy(t.q, q, self.nq * sizeof(double))
            k_position(t)
            self.constraints.positions(t)
            err = _rms_or_max(self.constraints.perr, mp, True)
            if err != err:
                return False
            if err <= target or (err >= 0.5 * best and err <= tol):
                converged = True
                break
            best = py_min(best, err)
            if self.constraints.newton_step(t, q) < 0:
                return False
            if self.nquat:
                _normalize_quats(q, quat_q, self.nquat)
            changed[0] = True
        if not converged:
            memcpy(t.q, q, self.nq * sizeof(double))
            k_position(t)
            self.constraints.positions(t)
            err = _rms_or_max(self.constraints.perr, mp, True)
        if not err <= tol:
            return False
        if mp == 0:  # the positions at q (the quaternions may have been normalized)
            memcpy(t.q, q, self.nq * sizeof(double))
            k_position(t)
            self.constraints.positions(t)
        self.constraints.build_g(t)  # G at the projected q
        k_articulated(t)
        nk_out[0] = -1
        if nv == 0:  # acceleration-only equations: project_u has nothing to do
            return True
        converged = False
        for it in range(5):
            self.constraints.velocity_errors(t, u)
            err = _rms_or_max(self.constraints.verr, nv, True)
            if err != err:
                return False
            if err <= target:
                converged = True
                break
            if nk < 0 or self.constraints.u_dependent:
                # (rows of G that depend on u were built again at this u: project_u's gmap is a new one
                # whenever u changes, and so is its factor)
                nk = self.constraints.factor_velocity(t)
                if nk < 0:
                    return False
            self.constraints.solve_velocity(self.constraints.verr, nk)
            for i in range(self.constraints.nu):
                u[i] = u[i] - self.constraints.du[i]
            changed[0] = True
        if not converged:
            self.constraints.velocity_errors(t, u)
            err = _rms_or_max(self.constraints.verr, nv, True)
        if nv == self.constraints.m and not self.constraints.u_dependent:
            # A's factor is current (the block's is not A's; with rows of G that depend on u, it is that of
            # the u before the last correction)
            nk_out[0] = nk
        return err <= tol

    cdef double _constraint_worst(self, double* qerr, const idx_t* quat_b, bint infinity) noexcept nogil:
        # The weighted constraint error norm at the tree's last evaluation (the error weights are ones),
        # as Integrator._constraint_error_norm: the position equations' errors then the quaternions'
        # (gathered into qerr), and the velocity equations'; the larger.
        cdef Py_ssize_t k, nerr = 0
        cdef double worst
        if self.has_constraints:
            memcpy(qerr, self.constraints.perr, self.constraints.mp * sizeof(double))
            nerr = self.constraints.mp
        for k in range(self.nquat):
            qerr[nerr + k] = self.tr.qerr[quat_b[k]]
        worst = py_max(0.0, _rms_or_max(qerr, nerr + self.nquat, infinity))
        if self.has_constraints and self.constraints.nv:
            worst = py_max(worst, _rms_or_max(self.constraints.verr, self.constraints.nv, infinity))
        return worst

    cdef bint _raised(self, double* c, idx_t* cnt, Py_ssize_t attempted, Py_ssize_t realize, Py_ssize_t err_fail,
                      double h_try) noexcept nogil:
        # After a failed evaluation: True when a Python part raised (not a step adjustment). The step
        # failed as it fails on the Python path, whose statistics count its attempts, its error-test
        # failures and its evaluations but the one that raised; they are committed, and the step's size.
        cdef bint raised
        if self.state_derivative is None:
            return False
        with gil:
            raised = self.state_derivative.raised is not None
        if raised:
            cnt[N_ATTEMPTED] += attempted
            cnt[N_REALIZE] += realize - 1
            cnt[N_ERRFAIL] += err_fail
            c[C_HFAIL] = h_try
        return raised

    def run(self, double[:, ::1] K, double[::1] y0, double[::1] w, bint infinity, double[::1] ctl,
            idx_t[::1] cnt, double[::1] qdd0, double[::1] a_prev):
        """Take steps from (ctl[t0], y0, K[0]) until t_max or cnt[max_steps] steps.

        On return y0, K[0], ctl[t0] are the last accepted step's end (and the controls, counters
        and Verlet's history are updated as the Python path would), and the code says why it
        returned (RUN_CODES). The attempts of a step handed back to Python are not counted.
        """
        cdef Py_ssize_t ny = self.ny, nq = self.nq, nu = self.nu, s = self.ns, n_b = 0
        cdef double* Kp = &K[0, 0] if ny else NULL
        cdef double* y0p = &y0[0] if ny else NULL
        cdef double* yp
        cdef double* errp
        cdef double* fend
        cdef double* c = &ctl[0]
        cdef const double* A = NULL
        cdef const double* b = NULL
        cdef const double* e = NULL
        cdef const double* nodes = NULL
        cdef const double[:, ::1] Av
        cdef const double[::1] bv, ev, cv
        cdef double[::1] yv = self._y, errv = self._err, fv = self._fend, qev = self._qerr, w1v = self._w1
        cdef const idx_t[::1] qqv = self._quat_q, qbv = self._quat_b
        cdef int code
        if K.shape[0] < s or K.shape[1] != ny or y0.shape[0] != ny or w.shape[0] != ny or ctl.shape[0] < C_NCTL \
                or cnt.shape[0] < N_NCNT or qdd0.shape[0] < (nq if self.method == STEPPER_VERLET else 0) \
                or a_prev.shape[0] < (nu if self.method == STEPPER_VERLET else 0):
            raise ValueError("TreeStepper.run: array shapes do not match the stepper")
        self._inputs_given()
        if self.method == STEPPER_SEMI_IMPLICIT and self.linearizer is None:
            raise ValueError("TreeStepper.run: the semi-implicit method needs its Linearizer (set_linearizer)")
        cnt[N_STEPS] = 0
        if ny == 0:
            return RUN_PYTHON
        if self.method == STEPPER_RK:
            Av = self._A
            bv = self._b
            ev = self._e
            cv = self._c
            A = &Av[0, 0]
            b = &bv[0]
            e = &ev[0]
            nodes = &cv[0]
            n_b = bv.shape[0]
        yp = &yv[0]
        errp = &errv[0]
        fend = &fv[0]
        with nogil:
            code = self._run(Kp, y0p, &w[0], infinity, c, &cnt[0], yp, errp, fend,
                             &qdd0[0] if qdd0.shape[0] else NULL, &a_prev[0] if a_prev.shape[0] else NULL,
                             A, b, e, nodes, n_b, &qqv[0] if self.nquat else NULL, &qbv[0] if self.nquat else NULL,
                             &qev[0] if qev.shape[0] else NULL, &w1v[0])
        return code

    def run_ticks(self, double[:, ::1] K, double[::1] y0, double[::1] w, bint infinity, double[::1] ctl,
                  idx_t[::1] cnt, double[::1] qdd0, double[::1] a_prev, const double[::1] T,
                  const idx_t[::1] pd_q, const idx_t[::1] pd_u, const double[::1] pd_kp, const double[::1] pd_kd,
                  const double[::1] pd_target, Py_ssize_t pd_row, double[::1] y_start, idx_t[::1] tick_info):
        """Driver steps from T[0] (= ctl[t0]) through T[1], ..., T[n] (simtk.simulation's loop, for PD
        controllers of constant targets acting every driver step; the held mobility forces of row
        ``pd_row`` are the driver's inputs).

        Each driver step j, as the Python driver takes it: the controllers' law at (T[j], y0),
        ``tau[u_i] = kp_i (q*_i - q[q_i]) + kd_i (0 - u[u_i])``, written into the held row; the
        integrator's restart at Dynamics (Integrator._setup_interval: the derivative at the start,
        the unit weights, Verlet's history); its steps to T[j+1] (``run``'s). Returns the number of
        driver steps completed and a code: RUN_REACHED (all n), else ``run``'s code for the step that
        stopped inside driver step j (which was begun: its law applied and the restart done), or
        RUN_NOT_BEGUN with driver step j not begun (its restart needs Python: a projection, a
        non-finite derivative, or cnt[max_steps] > 0 steps taken: RUN_STEP_LIMIT inside a driver step).
        y_start and tick_info[0] are the start y and the steps taken at the start of the
        last driver step begun (the integrator's interval start); the controls and counters are
        ``run``'s, cnt[steps] the steps of all driver steps.
        """
        cdef Py_ssize_t ny = self.ny, nq = self.nq, nu = self.nu, n = T.shape[0] - 1, m = pd_q.shape[0]
        cdef Py_ssize_t j, i, k, o, nerr, done = 0, steps = 0
        cdef double* c = &ctl[0]
        cdef double* Kp
        cdef double* y0p
        cdef double* mf
        cdef double[::1] qev = self._qerr, w1v = self._w1
        cdef const idx_t[::1] qqv = self._quat_q, qbv = self._quat_b
        cdef double* qe = &qev[0] if qev.shape[0] else NULL
        cdef double* w1 = &w1v[0]
        cdef double worst
        cdef int code = RUN_REACHED
        # cnt[max_steps] on entry: the steps this call may take over all its driver steps (<= 0: no limit),
        # so that a driver step whose steps never end returns to Python, which watches for divergence
        cdef idx_t cap = cnt[N_MAX]
        if self.held_p == NULL or not 0 <= pd_row < self.held.k or pd_u.shape[0] != m or pd_kp.shape[0] != m \
                or pd_kd.shape[0] != m or pd_target.shape[0] != m or y_start.shape[0] != ny or n < 0 \
                or tick_info.shape[0] < 1 or cnt.shape[0] < N_NCNT or ctl.shape[0] < C_NCTL or ny == 0 \
                or K.shape[1] != ny or y0.shape[0] != ny:
            raise ValueError("TreeStepper.run_ticks: the arguments do not fit the stepper")
        for i in range(m):
            if not (0 <= pd_q[i] < nq and 0 <= pd_u[i] < nu):
                raise ValueError("TreeStepper.run_ticks: a controlled coordinate is out of range")
        if n and T[0] != c[C_T0]:
            raise ValueError("TreeStepper.run_ticks: T[0] must be the integrator's time")
        self._inputs_given()
        Kp = &K[0, 0]
        y0p = &y0[0]
        mf = <double*>self.held.mf + pd_row * nu
        for j in range(n):
            if cap > 0 and steps >= cap:
                cnt[N_STEPS] = steps
                return done, RUN_NOT_BEGUN
            with nogil:
                # --- the restart's projection: none needed (errors within tolerance), or Python takes it
                if (self.nquat or self.has_constraints) and \
                        not (self._constraint_worst(qe, &qbv[0] if self.nquat else NULL, infinity) <= c[C_CONSTOL]):
                    code = RUN_PYTHON
                if code == RUN_REACHED:
                    # --- the controllers' law at the start of the driver step (PDController.compute)
                    (<char*>self.held.has_mf)[pd_row] = 1
                    for i in range(m):
                        mf[pd_u[i]] = pd_kp[i] * (pd_target[i] - y0p[pd_q[i]]) + pd_kd[i] * (0.0 - y0p[nq + pd_u[i]])
                    # --- the restart (Integrator._setup_interval at Dynamics)
                    if self.method == STEPPER_VERLET:
                        for i in range(nq, ny):
                            a_prev[i - nq] = Kp[i]  # Verlet's _save_start: the previous start's udot
                    if self._deriv(c[C_T0], y0p, Kp):
                        cnt[N_REALIZE] += 1
                    else:
                        code = RUN_PYTHON  # Python raises its NonFiniteDerivativeError
                if code == RUN_REACHED and self.nquat:
                    _quaternion_weights(y0p, &qqv[0], self.nquat, w1)
                    for k in range(self.nquat):
                        for i in range(4):
                            if not isfinite(w1[qqv[k] + i]):
                                code = RUN_PYTHON
                    if code == RUN_REACHED:
                        for k in range(self.nquat):
                            for i in range(4):
                                o = qqv[k] + i
                                w[o] = w1[o]
                if code == RUN_REACHED:
                    if self.method == STEPPER_VERLET:
                        memcpy(&qdd0[0], self.tr.qdotdot, nq * sizeof(double))
                        c[C_HP] = 0.0
                        c[C_HISTORY] = 0.0
                    memcpy(&y_start[0], y0p, ny * sizeof(double))
                    tick_info[0] = cnt[N_TAKEN]
            if code != RUN_REACHED:
                cnt[N_STEPS] = steps
                return done, RUN_NOT_BEGUN
            # --- the integrator's steps to the end of the driver step
            c[C_TMAX] = T[j + 1]
            cnt[N_MAX] = cap - steps if cap > 0 else 0
            code = self.run(K, y0, w, infinity, ctl, cnt, qdd0, a_prev)
            steps += cnt[N_STEPS]
            if code != RUN_REACHED:
                cnt[N_STEPS] = steps
                return done, code
            done += 1
        cnt[N_STEPS] = steps
        return done, RUN_REACHED

    cdef int _run(self, double* K, double* y0, double* w, bint infinity, double* c, idx_t* cnt,
                  double* y, double* err, double* fend, double* qdd0, double* a_prev,
                  const double* A, const double* b, const double* e, const double* nodes, Py_ssize_t n_b,
                  const idx_t* quat_q,
                  const idx_t* quat_b, double* qerr, double* w1) noexcept nogil:
        cdef Py_ssize_t ny = self.ny, nq = self.nq, i, k
        cdef Py_ssize_t realize, attempted, err_fail, projected
        cdef bint project
        cdef double t_max = c[C_TMAX], fixed = c[C_FIXED], max_step = c[C_MAXSTEP], min_step = c[C_MINSTEP]
        cdef double acc = c[C_ACC], p1 = c[C_P1]
        cdef bint has_fixed = fixed == fixed
        cdef bint controlled = (not has_fixed) and self.error_control
        cdef bint end_needed = (self.method == STEPPER_RK and not self.fsal) or \
            ((self.method == STEPPER_SEMI_EXPLICIT or self.method == STEPPER_SEMI_IMPLICIT) and not self.error_control)
        cdef double t0, h, remaining, h_try, t1, factor, errn, h_min, h_next, t_old
        cdef int ok
        cdef bint accepted, changed
        cdef double* f_end
        cdef double worst
        cdef Py_ssize_t nerr, nk
        while True:
            if cnt[N_MAX] > 0 and cnt[N_STEPS] >= cnt[N_MAX]:
                return RUN_STEP_LIMIT
            t0 = c[C_T0]
            if t0 >= t_max:
                return RUN_REACHED
            # --- one successful step (Integrator._take_one_step) ---
            h = py_min(fixed, max_step) if has_fixed else py_max(py_min(c[C_HPRED], max_step), min_step)
            realize = 0
            attempted = 0
            err_fail = 0
            factor = 1.0
            errn = 0.0
            while True:
                remaining = t_max - t0
                if h * 1.05 >= remaining:
                    h_try = remaining
                    t1 = t_max
                elif (not has_fixed) and 2 * h > remaining:
                    h_try = 0.5 * remaining
                    t1 = t0 + h_try
                else:
                    h_try = h
                    t1 = t0 + h
                attempted += 1
                ok = self._attempt(t0, t1, K, y0, y, err, c, &realize, qdd0, a_prev, A, b, e, nodes, n_b)
                accepted = ok and not controlled
                if accepted:
                    factor = 1.0
                elif ok:
                    errn = _error_norm(err, y0, y, w, ny, infinity)
                    accepted = errn <= acc
                    if accepted:
                        factor = 5.0 if errn == 0 else py_min(5.0, py_max(0.2, 0.9 * pow(acc / errn, p1)))
                if accepted:
                    break
                if not ok:
                    if self._raised(c, cnt, attempted, realize, err_fail, h_try):
                        return RUN_RAISED
                    return RUN_PYTHON  # a non-finite derivative: Python diagnoses or recovers
                err_fail += 1
                factor = py_min(0.5, py_max(0.1, 0.9 * pow(acc / errn, p1))) if isfinite(errn) else 0.1
                h = h_try * factor
                h_min = py_max(min_step, 16 * _EPS * py_max(1.0, fabs(t0)))
                if h < h_min and h_try > h_min and h_try < remaining:
                    h = h_min
                elif h < h_min:
                    return RUN_PYTHON  # Python raises StepSizeTooSmallError
            # the end derivative: evaluated now by the methods that did not, else their last stage
            if end_needed:
                realize += 1
                if not self._deriv(t1, y, fend):
                    if self._raised(c, cnt, attempted, realize, err_fail, h_try):
                        return RUN_RAISED
                    return RUN_PYTHON
                f_end = fend
            else:
                f_end = K + (self.ns - 1) * ny  # FSAL RK: the last stage; SemiExplicitEuler2: K[1]; Verlet: K[2]
            # --- Integrator.step_to: the event witnesses at the step's end (before _finish_step)
            if self.state_derivative is not None and self.state_derivative.witnesses is not None:
                k = self.state_derivative.check_witnesses(t0)
                if k < 0:
                    return RUN_PYTHON  # an event in the step: Python takes it again and localizes it
                realize += k
            # --- Integrator._finish_step: the projection onto the constraints, and the quaternions' weights ---
            projected = 0
            project = c[C_PROJECT_EVERY] != 0.0
            if self.state_derivative is not None and self.state_derivative.finish is not None:
                # constraint equations or auto-update variables the State's Python handles (Python
                # counts nothing here: the statistics are the stepper's)
                if f_end != fend:
                    memcpy(fend, f_end, ny * sizeof(double))
                k = self.state_derivative.finish_step(y, fend)
                if k < 0:
                    return RUN_PYTHON  # Python takes the step again and finishes it itself
                projected = k & 1
                realize += k >> 1
                f_end = fend
                project = False
            elif (self.nquat or self.has_constraints) and not project:
                project = not (self._constraint_worst(qerr, quat_b, infinity) <= c[C_CONSTOL])
            if project:
                projected = 1
                changed = False
                if self.nquat:
                    _normalize_quats(y, quat_q, self.nquat)
                    changed = True
                if self.has_constraints and not self._project_constraints(t1, y, c[C_CONSTOL], quat_q, &changed,
                                                                          &nk):
                    return RUN_PYTHON  # Python projects again and says why it failed
                if changed:
                    realize += 1
                    if not self._deriv(t1, y, fend, nk if self.has_constraints else -2):
                        return RUN_PYTHON  # Python evaluates it again and reports it
                    f_end = fend
            if self.nquat:
                _quaternion_weights(y, quat_q, self.nquat, w1)
                for k in range(self.nquat):
                    for i in range(4):
                        if not isfinite(w1[quat_q[k] + i]):
                            return RUN_PYTHON  # Python refuses such weights with its message
            # --- commit: statistics, the next step size, and the new start (_finish_step) ---
            if self.state_derivative is not None and self.state_derivative.witnesses is not None:
                self.state_derivative.commit_witnesses()
            cnt[N_TAKEN] += 1
            cnt[N_ATTEMPTED] += attempted
            cnt[N_REALIZE] += realize
            cnt[N_ERRFAIL] += err_fail
            cnt[N_STEPS] += 1
            cnt[N_PROJECT] += projected
            for k in range(self.nquat):
                for i in range(4):
                    w[quat_q[k] + i] = w1[quat_q[k] + i]
            c[C_HPREV] = h_try
            if cnt[N_TAKEN] == 1:
                c[C_HFIRST] = h_try
            if not has_fixed:
                h_next = h_try * factor
                if t1 == t_max and h_try < h:
                    h_next = py_max(h_next, h)
                c[C_HPRED] = py_min(h_next, max_step)
            if self.method == STEPPER_VERLET:
                for i in range(nq, ny):
                    a_prev[i - nq] = K[i]
            t_old = t0
            c[C_T0] = t1
            memcpy(y0, y, ny * sizeof(double))
            if f_end != K:
                memcpy(K, f_end, ny * sizeof(double))
            if self.method == STEPPER_VERLET:
                memcpy(qdd0, self.state_derivative.qdotdot if self.state_derivative is not None else self.tr.qdotdot,
                       nq * sizeof(double))
                c[C_HP] = t1 - t_old
                c[C_HISTORY] = 1.0 if c[C_HP] > 0 else 0.0
