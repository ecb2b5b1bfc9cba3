# Extension helpers: what users' Python code asks once per evaluation -- a Force.Custom adding a
# force at a station, a Custom constraint reading a station's motion in its ancestor frame, a Custom
# mobilizer reading a body's pose -- one body and one 3-vector at a time.
#
# Each function is the common case of one Python method (simtk/multibody/tree/mobilized_body.py,
# tree/_matter_tree.py, constraints/constraint.py) in one call. It checks what it needs cheaply, in
# C: a State of the registered class (core/state_ops.pxi) current with the matter subsystem's System,
# realized to the stage the method needs; a station or force given as a float64 array of shape (3,)
# or as a list or tuple of three Python numbers, all finite; an accumulator that is a writable float64
# ndarray of the right shape. Wherever a check fails it returns None (the getters) or False (the
# adders), having written nothing, and the Python method takes its own path, which converts the
# unusual input or raises the error naming what is wrong. So no message is formatted unless raised,
# and a call costs a few hundred nanoseconds instead of numpy's microseconds per 3-vector operation.
#
# The arithmetic is the kernels' (station_in_ground, station_velocity and add_station_force of
# core/forces.pxi; mat33_vec of core/spatial.pxi): the same products in the same order as the
# built-in forces and the station Jacobians, and the Python paths' order of operations (so a copy or
# an elementwise formula such as np.cross's is bitwise the Python path's). Where the Python path
# multiplies a matrix by numpy's R @ x, that goes through BLAS, whose dgemv may fuse or reorder the
# products: the two then agree to round-off.

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_Check
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.sequence cimport PySequence_Fast_GET_ITEM

# the integers a double holds exactly (|v| <= 2**53): a larger int goes to the Python path's conversion
cdef long long _MAX_EXACT_INT = 2 ** 53


# ---------------------------------------------------------------------------------------------
# Reading the arguments
# ---------------------------------------------------------------------------------------------

cdef int _read3(object x, double* out) except -1:
    # x as three finite doubles into out: 1 for a float64 ndarray of shape (3,) (any stride) or a
    # list or tuple of three Python floats (numpy's float64 scalars are ones) or ints, else 0 (out
    # then unspecified). np.asarray(x, dtype=float) gives the same doubles for these.
    cdef cnp.ndarray a
    cdef const char* d
    cdef Py_ssize_t k, st
    cdef long long v
    cdef int overflow = 0
    if type(x) is cnp.ndarray:
        a = <cnp.ndarray>x
        if (cnp.PyArray_NDIM(a) != 1 or cnp.PyArray_DIM(a, 0) != 3 or cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE
                or not cnp.PyArray_ISNOTSWAPPED(a) or not cnp.PyArray_ISALIGNED(a)):
            return 0
        d = <const char*>cnp.PyArray_DATA(a)
        st = cnp.PyArray_STRIDE(a, 0)
        for k in range(3):
            out[k] = (<const double*>(d + k * st))[0]
    elif type(x) is list or type(x) is tuple:
        if len(x) != 3:
            return 0
        for k in range(3):
            item = <object>PySequence_Fast_GET_ITEM(x, k)
            if PyFloat_Check(item):
                out[k] = PyFloat_AS_DOUBLE(item)
            elif PyLong_CheckExact(item):  # (not bool: np.asarray converts it too, the Python path does)
                v = PyLong_AsLongLongAndOverflow(item, &overflow)
                if overflow or v > _MAX_EXACT_INT or v < -_MAX_EXACT_INT:
                    return 0
                out[k] = <double>v
            else:
                return 0
    else:
        return 0
    return isfinite(out[0]) and isfinite(out[1]) and isfinite(out[2])


cdef int _read_number(object x, double* out) except -1:
    # A Python float or an int a double holds exactly, as float(x) gives it (finite or not: the
    # Python paths add a scalar force as given); 0 for anything else.
    cdef long long v
    cdef int overflow = 0
    if PyFloat_Check(x):
        out[0] = PyFloat_AS_DOUBLE(x)
        return 1
    if PyLong_CheckExact(x):
        v = PyLong_AsLongLongAndOverflow(x, &overflow)
        if overflow or v > _MAX_EXACT_INT or v < -_MAX_EXACT_INT:
            return 0
        out[0] = <double>v
        return 1
    return 0


cdef double* _spatial_rows(object F, Py_ssize_t row):
    # The data of F when F is a writable, aligned, native float64 C-contiguous ndarray of shape
    # (n, 2, 3) with 0 <= row < n (a body-force accumulator), else NULL.
    cdef cnp.ndarray a
    if type(F) is not cnp.ndarray:
        return NULL
    a = <cnp.ndarray>F
    if (cnp.PyArray_NDIM(a) != 3 or cnp.PyArray_DIM(a, 1) != 2 or cnp.PyArray_DIM(a, 2) != 3
            or not 0 <= row < cnp.PyArray_DIM(a, 0) or cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE
            or not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISNOTSWAPPED(a)
            or not cnp.PyArray_ISALIGNED(a) or not cnp.PyArray_ISWRITEABLE(a)):
        return NULL
    return <double*>cnp.PyArray_DATA(a)


cdef const double* _f64(object a, Py_ssize_t n):
    # The data of a C-contiguous aligned native float64 ndarray of n entries (any shape), else NULL.
    return <const double*>cnp.PyArray_DATA(<cnp.ndarray>a) if _is_f64_vector(a, n, False) else NULL


cdef Py_ssize_t _num_rotations(object R):
    # nb of a C-contiguous float64 ndarray of shape (nb, 3, 3) (the bodies' R_GB), else -1.
    cdef cnp.ndarray a
    if not isinstance(R, cnp.ndarray):
        return -1
    a = <cnp.ndarray>R
    if cnp.PyArray_NDIM(a) != 3 or cnp.PyArray_DIM(a, 1) != 3 or cnp.PyArray_DIM(a, 2) != 3:
        return -1
    return cnp.PyArray_DIM(a, 0) if _is_f64_vector(a, cnp.PyArray_SIZE(a), False) else -1


# ---------------------------------------------------------------------------------------------
# Finding the matter subsystem's arrays in a State
# ---------------------------------------------------------------------------------------------

cdef object _matter_ss(object matter, object state, int stage):
    # matter's share of state (a _SubsystemState) when state is a State of the registered class,
    # current with matter's System, and matter is realized to ``stage``; else None. Those are the
    # checks of matter._ss and matter._at, whose errors the Python path raises.
    cdef Py_ssize_t i
    if not is_state(state):
        return None
    system = slot_get(state, SL.system)
    if system is None or system is not matter._system:
        return None
    if slot_get(state, SL.topology_version) != system._topology_version:
        return None
    subs = slot_get(state, SL.subs)
    i = matter._index
    if type(subs) is not list or not 0 <= i < len(<list>subs):
        return None
    ss = (<list>subs)[i]
    if type(ss) is not _SUBSTATE or <int>slot_get(ss, SL.sub_stage) < stage:
        return None
    return ss


cdef object _entry_value(object ss, object index):
    # The value of cache entry ``index`` of ss (current: ss is realized past its latest stage).
    cdef Py_ssize_t i = index
    entries = ss.cache
    if type(entries) is not list or not 0 <= i < len(<list>entries):
        return None
    return (<list>entries)[i].value


cdef object _matter_cache(object matter, object state, int stage):
    # matter's Instance-stage cache (a _MatterCache: ws, A_GB, ...) in state realized to ``stage``
    # (Instance or above), or None.
    ss = _matter_ss(matter, state, stage)
    return None if ss is None else _entry_value(ss, matter._cache_index)


cdef TreeKernels _workspace(object cache, Py_ssize_t i):
    # The cache's workspace when body i is one of its bodies, else None.
    if cache is None:
        return None
    ws = cache.ws
    if type(ws) is not TreeKernels or not 0 <= i < (<TreeKernels>ws).nb:
        return None
    return <TreeKernels>ws


cdef inline int _stage_of(int order) noexcept nogil:
    # the stage a quantity of time-derivative order 0, 1, 2 needs: Position, Velocity, Acceleration
    return FS_POSITION if order == 0 else (FS_VELOCITY if order == 1 else FS_ACCELERATION)


cdef inline cnp.ndarray _new_f64(int nd, cnp.npy_intp d0, cnp.npy_intp d1):
    cdef cnp.npy_intp dims[2]
    dims[0] = d0
    dims[1] = d1
    return cnp.PyArray_EMPTY(nd, dims, cnp.NPY_DOUBLE, 0)


cdef inline object _readonly_new(cnp.ndarray a):
    cnp.PyArray_CLEARFLAGS(a, cnp.NPY_ARRAY_WRITEABLE)
    return a


cdef object _row_view(object base, Py_ssize_t i, int nd, cnp.npy_intp d0, cnp.npy_intp d1):
    # A read-only view of row i of the C-contiguous float64 array ``base`` (rows of shape (d0,) or
    # (d0, d1)): what ``readonly_view(base)[i]`` gives (the same base, flags and data), in one call.
    cdef cnp.npy_intp dims[2]
    cdef Py_ssize_t n = d0 * (d1 if nd == 2 else 1)
    dims[0] = d0
    dims[1] = d1
    cdef cnp.ndarray v = cnp.PyArray_SimpleNewFromData(
        nd, dims, cnp.NPY_DOUBLE, <double*>cnp.PyArray_DATA(<cnp.ndarray>base) + i * n)
    cnp.PyArray_CLEARFLAGS(v, cnp.NPY_ARRAY_WRITEABLE)
    cnp.set_array_base(v, base)
    return v


# ---------------------------------------------------------------------------------------------
# A body in Ground (MobilizedBody, the matter subsystem's add_in_*)
# ---------------------------------------------------------------------------------------------

cdef inline void _station_acceleration(const double* A, const double* W, const double* r, double* out) noexcept nogil:
    # a_GS = (a_GB + b_GB x r) + w_GB x (w_GB x r) for the station at offset r (in G) from the body
    # origin, A = A_GB (b, a), W = V_GB (w, v): the Python path's a + cross(b, r) + cross(w, cross(w, r))
    cdef double br[3]
    cdef double wr[3]
    cdef double wwr[3]
    cross3(A, r, br)
    cross3(W, r, wr)
    cross3(W, wr, wwr)
    out[0] = (A[3] + br[0]) + wwr[0]
    out[1] = (A[4] + br[1]) + wwr[1]
    out[2] = (A[5] + br[2]) + wwr[2]


def mobod_station(object matter, object state, Py_ssize_t i, object station, int order):
    """Location (order 0, needs Position), velocity (1, Velocity) or acceleration (2, Acceleration)
    in Ground of the station p_BS ``station`` of body ``i`` of ``matter``: a new float64 array (3,),
    or None where a check fails (see the head of core/helpers.pxi)."""
    cdef double s[3]
    cdef double r[3]
    cdef TreeKernels ws
    cdef const double* A = NULL
    cdef cnp.ndarray out
    cdef double* o
    if not 0 <= order <= 2:
        raise ValueError(f"mobod_station(): order must be 0, 1 or 2, got {order}")
    cache = _matter_cache(matter, state, _stage_of(order))
    ws = _workspace(cache, i)
    if ws is None or not _read3(station, s):
        return None
    if order == 2:
        A = _f64(cache.A_GB, 6 * ws.nb)  # the realized accelerations (ws.A_GB is the operators' scratch)
        if A == NULL:
            return None
    out = _new_f64(1, 3, 0)
    o = <double*>cnp.PyArray_DATA(out)
    if order == 0:
        station_in_ground(&ws.t, i, s, r, o)
    else:
        mat33_vec(ws.t.R_GB + 9 * i, s, r)
        if order == 1:
            station_velocity(&ws.t, i, r, o)
        else:
            _station_acceleration(A + 6 * i, ws.t.V_GB + 6 * i, r, o)
    return out


def mobod_row(object matter, object state, Py_ssize_t i, int which):
    """A read-only view of body ``i``'s row of the realized p_GB (which 0, needs Position, shape (3,)),
    V_GB (1, Velocity, (2, 3)) or A_GB (2, Acceleration, (2, 3)): what the matter subsystem's getters
    hand out, or None where a check fails."""
    cdef TreeKernels ws
    if not 0 <= which <= 2:
        raise ValueError(f"mobod_row(): which must be 0, 1 or 2, got {which}")
    cache = _matter_cache(matter, state, _stage_of(which))
    ws = _workspace(cache, i)
    if ws is None:
        return None
    if which == 0:
        return _row_view(ws.p_GB, i, 1, 3, 0)
    if which == 1:
        return _row_view(ws.V_GB, i, 2, 2, 3)
    A = cache.A_GB
    if _f64(A, 6 * ws.nb) == NULL:
        return None
    return _row_view(A, i, 2, 2, 3)


def mobod_pose(object matter, object state, Py_ssize_t i):
    """``(R_GB, p_GB)`` of body ``i`` (needs Position) as new read-only float64 arrays (3, 3) and (3,),
    or None where a check fails (or p_GB is not finite, which Transform refuses)."""
    cdef TreeKernels ws
    cdef cnp.ndarray R, p
    ws = _workspace(_matter_cache(matter, state, FS_POSITION), i)
    if ws is None or first_non_finite_at(ws.t.p_GB + 3 * i, 3) >= 0:
        return None
    R = _new_f64(2, 3, 3)
    p = _new_f64(1, 3, 0)
    memcpy(cnp.PyArray_DATA(R), ws.t.R_GB + 9 * i, 9 * sizeof(double))
    memcpy(cnp.PyArray_DATA(p), ws.t.p_GB + 3 * i, 3 * sizeof(double))
    return _readonly_new(R), _readonly_new(p)


def mobod_add_station_force(object matter, object state, Py_ssize_t i, object station, object force,
                            object body_forces):
    """Add the force ``force`` (3,) in Ground, applied at the station p_BS ``station`` of body ``i``,
    into ``body_forces`` (n, 2, 3): torque (R_GB p_BS) x f about the origin, force f (needs
    Position). True when done; False, having written nothing, where a check fails."""
    cdef double s[3]
    cdef double f[3]
    cdef double r[3]
    cdef TreeKernels ws = _workspace(_matter_cache(matter, state, FS_POSITION), i)
    cdef double* F = _spatial_rows(body_forces, i)
    if ws is None or F == NULL or not _read3(station, s) or not _read3(force, f):
        return False
    mat33_vec(ws.t.R_GB + 9 * i, s, r)
    add_station_force(F, i, r, f, 1.0)
    return True


def mobod_add_mobility_force(object matter, object state, Py_ssize_t i, object which_u, object f,
                             object mobility_forces, object before=None):
    """Add the scalar ``f`` to speed ``which_u`` of body ``i``'s mobilizer in ``mobility_forces``
    (needs Model): at the body's u offset in the system's u (``before`` None), or after the speeds
    of the bodies listed in ``before`` (a Custom constraint's mobility forces, indexed over its
    constrained mobilizers). True when done; False, having written nothing, where a check fails
    (``which_u`` out of range included: the Python path raises IndexError)."""
    cdef double v
    cdef Py_ssize_t k, m, off, n, w, nb
    cdef const idx_t* uoff
    cdef cnp.ndarray mf
    cdef int overflow = 0
    ss = _matter_ss(matter, state, SO_MODEL)
    if ss is None or type(which_u) is not int or not _read_number(f, &v):
        return False
    layout = _entry_value(ss, matter._layout_index)
    if layout is None:
        return False
    uo = layout.uoff
    if not isinstance(uo, cnp.ndarray) or cnp.PyArray_TYPE(<cnp.ndarray>uo) != cnp.NPY_INT64 \
            or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>uo) or cnp.PyArray_NDIM(<cnp.ndarray>uo) != 1:
        return False
    nb = cnp.PyArray_DIM(<cnp.ndarray>uo, 0) - 1
    uoff = <const idx_t*>cnp.PyArray_DATA(<cnp.ndarray>uo)
    if not 0 <= i < nb:
        return False
    w = PyLong_AsLongLongAndOverflow(which_u, &overflow)
    n = uoff[i + 1] - uoff[i]
    if overflow or not 0 <= w < n:
        return False
    if before is None:
        off = uoff[i]
    else:
        if type(before) is not list:
            return False
        off = 0
        for b in <list>before:
            if type(b) is not int:
                return False
            m = b
            if not 0 <= m < nb:
                return False
            off += uoff[m + 1] - uoff[m]
    if type(mobility_forces) is not cnp.ndarray:
        return False
    mf = <cnp.ndarray>mobility_forces
    k = off + w
    if (cnp.PyArray_NDIM(mf) != 1 or not 0 <= k < cnp.PyArray_DIM(mf, 0) or cnp.PyArray_TYPE(mf) != cnp.NPY_DOUBLE
            or not cnp.PyArray_ISNOTSWAPPED(mf) or not cnp.PyArray_ISALIGNED(mf) or not cnp.PyArray_ISWRITEABLE(mf)):
        return False
    (<double*>(<char*>cnp.PyArray_DATA(mf) + k * cnp.PyArray_STRIDE(mf, 0)))[0] += v
    return True


def add_to_row(object body_forces, Py_ssize_t row, int half, object v):
    """``body_forces[row, half] += v`` for a 3-vector ``v`` (half 0: a torque, 1: a force), or
    ``body_forces[row] += v`` for a float64 ndarray ``v`` of shape (2, 3) (half -1: a spatial force),
    ``body_forces`` a float64 accumulator (n, 2, 3). No State is read. True when done; False, having
    written nothing, where a check fails (a non-finite entry of ``v`` included)."""
    cdef double x[6]
    cdef double* F = _spatial_rows(body_forces, row)
    cdef cnp.ndarray a
    cdef const char* d
    cdef Py_ssize_t j, k
    if F == NULL or not -1 <= half <= 1:
        return False
    F += 6 * row
    if half >= 0:
        if not _read3(v, x):
            return False
        F += 3 * half
        F[0] += x[0]
        F[1] += x[1]
        F[2] += x[2]
        return True
    if type(v) is not cnp.ndarray:
        return False
    a = <cnp.ndarray>v
    if (cnp.PyArray_NDIM(a) != 2 or cnp.PyArray_DIM(a, 0) != 2 or cnp.PyArray_DIM(a, 1) != 3
            or cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or not cnp.PyArray_ISNOTSWAPPED(a)
            or not cnp.PyArray_ISALIGNED(a)):
        return False
    d = <const char*>cnp.PyArray_DATA(a)
    for j in range(2):
        for k in range(3):
            x[3 * j + k] = (<const double*>(d + j * cnp.PyArray_STRIDE(a, 0) + k * cnp.PyArray_STRIDE(a, 1)))[0]
    if any_non_finite(x, 6):
        return False
    for k in range(6):
        F[k] += x[k]
    return True


# ---------------------------------------------------------------------------------------------
# A constrained body in the ancestor frame A (Constraint.Custom.Implementation's helpers)
# ---------------------------------------------------------------------------------------------
# The arrays are the kinematics a Custom constraint is evaluated at (its _Kinematics: R = R_GB
# (nb, 3, 3), p = p_GB (nb, 3), V = V_GB (nb, 2, 3), A = the (trial) body accelerations (nb, 2, 3));
# b is the constrained body, a the ancestor. Everything is measured from A's origin and expressed in
# A: with r = p_S - p_A and derivatives taken in A (d^A/dt x = d^G/dt x - w_A x x),
#   p_AS = R_AG r
#   v_AS = R_AG ((v_S - v_A) - w_A x r)
#   a_AS = R_AG ((((a_S - a_A) - b_A x r) - 2 w_A x (v_S - v_A)) + w_A x (w_A x r))
# the Python path's get_body_velocity and get_body_acceleration for a station at the body origin.
# With A Ground (a = 0) the velocity and the acceleration are those in Ground as given (no product
# with the identity), as the Python path returns them.

cdef inline void _sub3(const double* x, const double* y, double* out) noexcept nogil:
    out[0] = x[0] - y[0]
    out[1] = x[1] - y[1]
    out[2] = x[2] - y[2]


def ancestor_station(object R, object p, object V, object A, Py_ssize_t b, Py_ssize_t a, object station,
                     int order):
    """p_AS (order 0), v_AS (1) or a_AS (2) of the station p_BS ``station`` of body ``b``, measured
    from and expressed in the ancestor body ``a`` (see above; ``station`` None at order 0: the body
    origin, p_AB = R_AG (p_GB - p_GA)): a new float64 array (3,), or None where a check fails. ``V``
    is read at orders 1 and 2, ``A`` at 2 (pass None below)."""
    cdef Py_ssize_t nb = _num_rotations(R)
    cdef const double* Rp
    cdef const double* pp = _f64(p, 3 * nb)
    cdef const double* Vp = NULL
    cdef const double* Ap = NULL
    cdef double s[3]
    cdef double rb[3]
    cdef double r[3]
    cdef double x[3]
    cdef double y[3]
    cdef double vS[3]
    cdef double aS[3]
    cdef cnp.ndarray out
    cdef double* o
    cdef int k
    if not 0 <= order <= 2:
        raise ValueError(f"ancestor_station(): order must be 0, 1 or 2, got {order}")
    if nb < 0 or pp == NULL or not (0 <= b < nb and 0 <= a < nb):
        return None
    Rp = <const double*>cnp.PyArray_DATA(<cnp.ndarray>R)
    if order >= 1:
        Vp = _f64(V, 6 * nb)
        if Vp == NULL:
            return None
    if order == 2:
        Ap = _f64(A, 6 * nb)
        if Ap == NULL:
            return None
    out = _new_f64(1, 3, 0)
    o = <double*>cnp.PyArray_DATA(out)
    if station is None:
        if order != 0:
            return None
        _sub3(pp + 3 * b, pp + 3 * a, x)  # the Python path's p_b - p_a (no zero station added)
        mat33T_vec(Rp + 9 * a, x, o)
        return out
    if not _read3(station, s):
        return None
    mat33_vec(Rp + 9 * b, s, rb)
    for k in range(3):
        r[k] = (pp[3 * b + k] + rb[k]) - pp[3 * a + k]
    if order == 0:
        mat33T_vec(Rp + 9 * a, r, o)
        return out
    vS[0] = Vp[6 * b + 3]; vS[1] = Vp[6 * b + 4]; vS[2] = Vp[6 * b + 5]
    cross3_add(Vp + 6 * b, rb, vS)  # v_GS = v_GB + w_GB x r_BS
    if order == 1:
        if a == 0:
            o[0] = vS[0]; o[1] = vS[1]; o[2] = vS[2]
            return out
        _sub3(vS, Vp + 6 * a + 3, y)
        cross3_sub(Vp + 6 * a, r, y)
        mat33T_vec(Rp + 9 * a, y, o)
        return out
    _station_acceleration(Ap + 6 * b, Vp + 6 * b, rb, aS)
    if a == 0:
        o[0] = aS[0]; o[1] = aS[1]; o[2] = aS[2]
        return out
    _sub3(aS, Ap + 6 * a + 3, y)
    cross3_sub(Ap + 6 * a, r, y)  # - b_A x r
    _sub3(vS, Vp + 6 * a + 3, x)  # v_S - v_A
    cross3(Vp + 6 * a, x, vS)  # (vS reused) w_A x (v_S - v_A)
    for k in range(3):
        y[k] = y[k] - 2.0 * vS[k]
    cross3(Vp + 6 * a, r, x)  # w_A x r
    cross3_add(Vp + 6 * a, x, y)  # + w_A x (w_A x r)
    mat33T_vec(Rp + 9 * a, y, o)
    return out


def ancestor_body_pose(object R, object p, Py_ssize_t b, Py_ssize_t a):
    """``(R_AB, p_AB)`` of body ``b`` in the ancestor ``a`` as new read-only float64 arrays (3, 3)
    and (3,): R_AB = R_AG R_GB, p_AB = R_AG (p_GB - p_GA); None where a check fails (or p_AB is not
    finite, which Transform refuses)."""
    cdef Py_ssize_t nb = _num_rotations(R)
    cdef const double* pp = _f64(p, 3 * nb)
    cdef const double* Ra
    cdef const double* Rb
    cdef double x[3]
    cdef cnp.ndarray RAB, pAB
    cdef double* m
    cdef int i, j
    if nb < 0 or pp == NULL or not (0 <= b < nb and 0 <= a < nb):
        return None
    Ra = <const double*>cnp.PyArray_DATA(<cnp.ndarray>R) + 9 * a
    Rb = <const double*>cnp.PyArray_DATA(<cnp.ndarray>R) + 9 * b
    RAB = _new_f64(2, 3, 3)
    pAB = _new_f64(1, 3, 0)
    m = <double*>cnp.PyArray_DATA(RAB)
    for i in range(3):
        for j in range(3):  # (R_GA^T R_GB)_ij
            m[3 * i + j] = (Ra[i] * Rb[j] + Ra[3 + i] * Rb[3 + j]) + Ra[6 + i] * Rb[6 + j]
    _sub3(pp + 3 * b, pp + 3 * a, x)
    mat33T_vec(Ra, x, <double*>cnp.PyArray_DATA(pAB))
    if first_non_finite_at(<const double*>cnp.PyArray_DATA(pAB), 3) >= 0:
        return None
    return _readonly_new(RAB), _readonly_new(pAB)


def ancestor_body_motion(object R, object p, object V, object A, Py_ssize_t b, Py_ssize_t a, int order):
    """V_AB (order 1) or A_AB (order 2) of body ``b`` measured and expressed in the ancestor ``a``,
    (angular, linear) as a new float64 array (2, 3): the station formulas above at the body origin,
    and the angular parts R_AG (w_B - w_A) and R_AG ((b_B - b_A) - w_A x w_B); None where a check
    fails. ``A`` is read at order 2 only (pass None at 1)."""
    cdef Py_ssize_t nb = _num_rotations(R)
    cdef const double* pp = _f64(p, 3 * nb)
    cdef const double* Vp = _f64(V, 6 * nb)
    cdef const double* Ap = NULL
    cdef const double* Ra
    cdef double r[3]
    cdef double x[3]
    cdef double y[3]
    cdef double dv[3]
    cdef cnp.ndarray out
    cdef double* o
    cdef int k
    if not 1 <= order <= 2:
        raise ValueError(f"ancestor_body_motion(): order must be 1 or 2, got {order}")
    if nb < 0 or pp == NULL or Vp == NULL or not (0 <= b < nb and 0 <= a < nb):
        return None
    if order == 2:
        Ap = _f64(A, 6 * nb)
        if Ap == NULL:
            return None
    out = _new_f64(2, 2, 3)
    o = <double*>cnp.PyArray_DATA(out)
    if a == 0:  # (the Python path's copy of the body's row)
        memcpy(o, (Vp if order == 1 else Ap) + 6 * b, 6 * sizeof(double))
        return out
    Ra = <const double*>cnp.PyArray_DATA(<cnp.ndarray>R) + 9 * a
    _sub3(pp + 3 * b, pp + 3 * a, r)
    if order == 1:
        _sub3(Vp + 6 * b, Vp + 6 * a, x)
        mat33T_vec(Ra, x, o)
        _sub3(Vp + 6 * b + 3, Vp + 6 * a + 3, y)
        cross3_sub(Vp + 6 * a, r, y)
        mat33T_vec(Ra, y, o + 3)
        return out
    _sub3(Ap + 6 * b, Ap + 6 * a, x)
    cross3_sub(Vp + 6 * a, Vp + 6 * b, x)
    mat33T_vec(Ra, x, o)
    _sub3(Vp + 6 * b + 3, Vp + 6 * a + 3, dv)
    _sub3(Ap + 6 * b + 3, Ap + 6 * a + 3, y)
    cross3_sub(Ap + 6 * a, r, y)
    cross3(Vp + 6 * a, dv, x)
    for k in range(3):
        y[k] = y[k] - 2.0 * x[k]
    cross3(Vp + 6 * a, r, x)
    cross3_add(Vp + 6 * a, x, y)
    mat33T_vec(Ra, y, o + 3)
    return out


def ancestor_add_station_force(object R, Py_ssize_t b, Py_ssize_t a, object station, object force,
                               object body_forces_in_a, Py_ssize_t cb):
    """Add the force ``force`` (3,) in A, applied at the station p_BS ``station`` of body ``b``, into
    row ``cb`` of ``body_forces_in_a`` (ncb, 2, 3): torque r_A x f with r_A = R_AG R_GB p_BS, force f.
    True when done; False, having written nothing, where a check fails."""
    cdef Py_ssize_t nb = _num_rotations(R)
    cdef double* F = _spatial_rows(body_forces_in_a, cb)
    cdef const double* Rp
    cdef double s[3]
    cdef double f[3]
    cdef double rb[3]
    cdef double r[3]
    if nb < 0 or F == NULL or not (0 <= b < nb and 0 <= a < nb) or not _read3(station, s) or not _read3(force, f):
        return False
    Rp = <const double*>cnp.PyArray_DATA(<cnp.ndarray>R)
    mat33_vec(Rp + 9 * b, s, rb)
    mat33T_vec(Rp + 9 * a, rb, r)
    add_station_force(F, cb, r, f, 1.0)
    return True
