# The built-in Function families evaluated in C: a flat table of entries and parameters, and
# fn_value / fn_derivative over it (noexcept nogil, allocation-free).
#
# The Python families (simtk/common/function/families.py and spline.py, and OpenSim's SimmSpline,
# MultiplierFunction and coupler function in simtk/io/_osim_functions.py) append themselves to a table
# through their _compile method (simtk/common/function/_compiled.py builds it); a FunctionTable owns the
# two arrays and checks them when built, so the evaluators below check nothing but the derivative
# order and components they are asked for.
#
# Layout. Entry i is the row ent[i, 0:FN_STRIDE] of int64:
#   family     FN_CONSTANT ... FN_COUPLER
#   nargs      the argument size m (x[0:m] is read)
#   max_order  the highest derivative order the Python class supports (sys.maxsize for all)
#   poff, plen its parameters par[poff : poff + plen]
#   child      a combinator's operand: an entry index < i (so a table is acyclic), else -1
#   aux0, aux1 family-specific integers
# and per family (every number is the Python object's own attribute, copied, never recomputed):
#   CONSTANT   par = (c,)
#   LINEAR     par = (c_0, ..., c_{m-1}, c_m)                         f = sum_k c_k x_k + c_m
#   POLYNOMIAL par = (a_0, ..., a_N), highest power first              f = a_0 t^N + ... + a_N
#   STEP       par = (y0, y1, x0, x1, dy, 1/(x1 - x0), sign(x1 - x0))
#   SINUSOID   par = (a, w, p)                                         f = a sin(w t + p)
#   SPLINE     aux0 = nb breakpoints, aux1 = degree k;
#              par = (bp[0:nb], mid[0:nb-1], coef[0:nb-1, 0:k+1]) with f = sum_r coef[j, r] (t - mid[j])^r
#   SIMM       aux0 = n points; par = (x[0:n], y[0:n], b[0:n-1], c[0:n-1], d[0:n-1], slope_first, slope_last)
#   SCALED     child, par = (s,)                                       f = s g(x)
#   COUPLER    child, aux0 = g's argument size n, par = (s,)           f = s g(x[0:n]) - x[n]
#
# Rounding. Each family is evaluated with its Python method's operations in the same order (the core
# is built with -ffp-contract=off, so no product is fused into a sum; sin, cos and pow are the libm
# calls Python's math module and float ** make, from the same libm in the same process), so a value or
# derivative equals the Python one bitwise. Two exceptions:
# - Linear's value: numpy's `a @ x` is BLAS's ddot, whose summation order and fused multiply-adds are
#   the library's choice; here the sum runs from k = 0 up. (The development machine's OpenBLAS agrees
#   below 16 terms, its kernel's tail loop, and differs by round-off from 16 on, its vector blocks.)
# - a falling factorial p!/(p-n)! of 2^63 or more (a Polynomial of degree above 20): Python multiplies
#   by the exact integer, rounded once; here the product goes on in double past int64.
#
# An order the family does not support (above max_order), a negative order or a component outside
# [0, m) gives NaN, never a number.

from libc.math cimport sin, cos, pow, NAN
from libc.stdint cimport INT64_MAX
import operator

cdef enum:
    FN_CONSTANT = 0
    FN_LINEAR = 1
    FN_POLYNOMIAL = 2
    FN_STEP = 3
    FN_SINUSOID = 4
    FN_SPLINE = 5
    FN_SIMM = 6
    FN_SCALED = 7
    FN_COUPLER = 8
    FN_NUM_FAMILIES = 9

cdef enum:
    FE_FAMILY = 0
    FE_NARGS = 1
    FE_MAXORD = 2
    FE_POFF = 3
    FE_PLEN = 4
    FE_CHILD = 5
    FE_AUX0 = 6
    FE_AUX1 = 7
    FN_STRIDE = 8
    # the deepest chain of combinators a table may hold: fn_value recurses once per level
    FN_MAX_DEPTH = 64
    # the highest Spline degree (Function.Spline.MAX_DEGREE)
    FN_MAX_SPLINE_DEGREE = 5
    # the derivative orders a Python call holds on the stack (a higher one goes through an array)
    _FN_CALL_ORDERS = 16

#: family name -> code
FN_FAMILIES = {"constant": FN_CONSTANT, "linear": FN_LINEAR, "polynomial": FN_POLYNOMIAL, "step": FN_STEP,
               "sinusoid": FN_SINUSOID, "spline": FN_SPLINE, "simm_spline": FN_SIMM, "scaled": FN_SCALED,
               "coupler": FN_COUPLER}
#: the columns of an entry, in order
FN_ENTRY_COLUMNS = ("family", "nargs", "max_order", "par_offset", "par_length", "child", "aux0", "aux1")
_FN_NAMES = {v: k for k, v in FN_FAMILIES.items()}


cdef struct FnTable:
    const idx_t* ent      # (n, FN_STRIDE)
    const double* par
    Py_ssize_t n


# ---------------------------------------------------------------------------------------------
# helpers shared by the families
# ---------------------------------------------------------------------------------------------

cdef inline double _falling(idx_t p, idx_t n) noexcept nogil:
    # p (p - 1) ... (p - n + 1) = p! / (p - n)!, the factor of d^n/dt^n t^p (1 <= n <= p). Python
    # multiplies a coefficient by this exact integer (math.prod), which float * int rounds once to a
    # double; in int64 the product is exact below 2^63 (every p <= 20) and the conversion rounds it the
    # same way. Past 2^63 it goes on in double (a rounding per factor).
    cdef idx_t r = 1, k, kk
    cdef double d
    if p <= 20:
        # 20! < 2^63: no factor can overflow, so no division to check it (every Spline, most Polynomials)
        for k in range(p - n + 1, p + 1):
            r = r * k
        return <double>r
    for k in range(p - n + 1, p + 1):
        if r > INT64_MAX // k:
            d = <double>r
            for kk in range(k, p + 1):
                d = d * <double>kk
            return d
        r = r * k
    return <double>r


cdef inline Py_ssize_t _interval(const double* a, Py_ssize_t n, double t) noexcept nogil:
    # The piece of a[0:n] (n >= 2, increasing) that holds t: bisect.bisect_right(a, t) - 1 clamped to
    # [0, n - 2], as the Python splines choose it. A knot belongs to the piece it starts (t = a[j] is
    # in piece j), the last knot to the last piece, and t outside [a[0], a[n-1]] to the end piece.
    # bisect's own loop: lo is the first index with t < a[lo] (n when none; a NaN t compares false).
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if t < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    lo -= 1
    if lo < 0:
        return 0
    return lo if lo < n - 2 else n - 2


# ---------------------------------------------------------------------------------------------
# the families with more than a line
# ---------------------------------------------------------------------------------------------

cdef inline double _step_s(const double* p, double t) noexcept nogil:
    # Function.Step._s: s = (t - x0)/(x1 - x0) in (0, 1) strictly inside the interval, -1 outside or at
    # an end (the ends compared as x0, x1 themselves; Python's max(s, 0.0), min(s, 1.0) keep s unless
    # the bound is strictly beyond it)
    cdef double s
    if (t - p[2]) * p[6] <= 0.0 or (t - p[3]) * p[6] >= 0.0:
        return -1.0
    s = (t - p[2]) * p[5]
    if 0.0 > s:
        s = 0.0
    if 1.0 < s:
        s = 1.0
    return s


cdef double _step_value(const double* p, double t) noexcept nogil:
    # f = y0 + dy stepUp(s) for s <= 1/2, y1 - dy stepUp(1 - s) above, stepUp(s) = s^3 (10 + s (6 s - 15))
    cdef double s, u
    if (t - p[2]) * p[6] <= 0.0:
        return p[0]
    if (t - p[3]) * p[6] >= 0.0:
        return p[1]
    s = (t - p[2]) * p[5]
    if 0.0 > s:
        s = 0.0
    if 1.0 < s:
        s = 1.0
    if s <= 0.5:
        return p[0] + p[4] * (s * s * s * (10.0 + s * (6.0 * s - 15.0)))
    u = 1.0 - s
    return p[1] - p[4] * (u * u * u * (10.0 + u * (6.0 * u - 15.0)))


cdef double _step_derivative(const double* p, int n, double t) noexcept nogil:
    # f^(n) = dy (1/(x1 - x0))^n stepUp^(n)(s) strictly inside, 0 outside and at the ends (n = 1, 2, 3)
    cdef double s = _step_s(p, t), d
    if s < 0.0:
        return 0.0
    if n == 1:
        d = 30.0 * s * s * (1.0 - s) * (1.0 - s)
    elif n == 2:
        d = 60.0 * s * (1.0 - s) * (1.0 - 2.0 * s)
    else:
        d = 60.0 + s * (360.0 * s - 360.0)
    return p[4] * pow(p[5], <double>n) * d


cdef double _spline(const double* p, idx_t nb, idx_t k, int n, double t) noexcept nogil:
    # Function.Spline, its value (n = 0) or n-th derivative, on the piece j that holds t:
    #   f^(n)(t) = sum_{r=n}^{k} coef[j, r] r!/(r-n)! u^(r-n),  u = t - mid[j],  Horner from r = k down
    cdef const double* mid = p + nb
    cdef const double* c
    cdef Py_ssize_t j
    cdef idx_t r
    cdef double u, v = 0.0
    if n > k:
        return 0.0
    j = _interval(p, nb, t)
    c = p + nb + (nb - 1) + j * (k + 1)
    u = t - mid[j]
    if n == 0:
        for r in range(k, -1, -1):
            v = v * u + c[r]
        return v
    for r in range(k, n - 1, -1):
        v = v * u + c[r] * _falling(r, n)
    return v


cdef double _simm(const double* p, idx_t n, int order, double t) noexcept nogil:
    # OpenSim's SimmSpline: on the piece k that holds t, with dx = t - x[k],
    #   f = y[k] + dx (b[k] + dx (c[k] + dx d[k])),  f' = b[k] + dx (2 c[k] + 3 dx d[k]),  f'' = 2 c[k] + 6 dx d[k];
    # below x[0] (above x[n-1]) the tangent line at the end: f' the end slope, f'' = 0.
    cdef const double* x = p
    cdef const double* y = p + n
    cdef const double* b = p + 2 * n
    cdef const double* c = b + (n - 1)
    cdef const double* d = c + (n - 1)
    cdef double sf = d[n - 1], sl = d[n], dx
    cdef Py_ssize_t k
    if t < x[0]:
        if order == 0:
            return y[0] + (t - x[0]) * sf
        return sf if order == 1 else 0.0
    if t > x[n - 1]:
        if order == 0:
            return y[n - 1] + (t - x[n - 1]) * sl
        return sl if order == 1 else 0.0
    k = _interval(x, n, t)
    dx = t - x[k]
    if order == 0:
        return y[k] + dx * (b[k] + dx * (c[k] + dx * d[k]))
    if order == 1:
        return b[k] + dx * (2.0 * c[k] + 3.0 * dx * d[k])
    return 2.0 * c[k] + 6.0 * dx * d[k]


# ---------------------------------------------------------------------------------------------
# the evaluators
# ---------------------------------------------------------------------------------------------

cdef double fn_value(const FnTable* t, Py_ssize_t which, const double* x) noexcept nogil:
    """f(x) of entry ``which`` (< t.n: an index the builder returned); x holds its m arguments (none read
    when m is 0)."""
    cdef const idx_t* e = t.ent + which * FN_STRIDE
    cdef const double* p = t.par + e[FE_POFF]
    cdef idx_t fam = e[FE_FAMILY], m, i
    cdef double v, s
    if fam == FN_CONSTANT:
        return p[0]
    if fam == FN_LINEAR:
        # f = (c_0 x_0 + c_1 x_1 + ... + c_{m-1} x_{m-1}) + c_m, the dot product summed from k = 0 up
        m = e[FE_NARGS]
        s = 0.0
        for i in range(m):
            s = s + p[i] * x[i]
        return s + p[m]
    if fam == FN_POLYNOMIAL:
        # Horner, highest power first: v <- v t + a_i
        v = 0.0
        for i in range(e[FE_PLEN]):
            v = v * x[0] + p[i]
        return v
    if fam == FN_STEP:
        return _step_value(p, x[0])
    if fam == FN_SINUSOID:
        return p[0] * sin(p[1] * x[0] + p[2])
    if fam == FN_SPLINE:
        return _spline(p, e[FE_AUX0], e[FE_AUX1], 0, x[0])
    if fam == FN_SIMM:
        return _simm(p, e[FE_AUX0], 0, x[0])
    if fam == FN_SCALED:
        return p[0] * fn_value(t, e[FE_CHILD], x)
    if fam == FN_COUPLER:
        # the operand reads the prefix x[0:n]
        return p[0] * fn_value(t, e[FE_CHILD], x) - x[e[FE_AUX0]]
    return NAN


cdef double fn_derivative(const FnTable* t, Py_ssize_t which, const idx_t* comps, int order,
                          const double* x) noexcept nogil:
    """The partial derivative d^order f / dx_{comps[0]} ... dx_{comps[order-1]} of entry ``which`` at x.

    Order 0 is the value. NaN for a negative order, an order above the entry's max_order, or a component
    outside [0, m).
    """
    cdef const idx_t* e = t.ent + which * FN_STRIDE
    cdef const double* p = t.par + e[FE_POFF]
    cdef idx_t fam = e[FE_FAMILY], m = e[FE_NARGS], i, npar
    cdef double v, th, sc
    cdef int k
    if order == 0:
        return fn_value(t, which, x)
    if order < 0 or order > e[FE_MAXORD]:
        return NAN
    for i in range(order):
        if comps[i] < 0 or comps[i] >= m:
            return NAN
    if fam == FN_CONSTANT:
        return 0.0
    if fam == FN_LINEAR:
        return p[comps[0]] if order == 1 else 0.0
    if fam == FN_POLYNOMIAL:
        # f^(n) = sum_{i=0}^{N-n} a_i (N-i)!/(N-i-n)! t^(N-i-n), Horner over i; 0 for n > N
        npar = e[FE_PLEN]
        if order >= npar:
            return 0.0
        v = 0.0
        for i in range(npar - order):
            v = v * x[0] + p[i] * _falling(npar - 1 - i, order)
        return v
    if fam == FN_STEP:
        return _step_derivative(p, order, x[0])
    if fam == FN_SINUSOID:
        # f^(n) = a w^n sin(w t + p + n pi/2): a w^n (sin, cos, -sin, -cos)(w t + p) for n mod 4 = 0, 1, 2, 3
        th = p[1] * x[0] + p[2]
        k = order & 3
        sc = sin(th) if k == 0 or k == 2 else cos(th)
        return ((-1.0 if k >= 2 else 1.0) * p[0]) * pow(p[1], <double>order) * sc
    if fam == FN_SPLINE:
        return _spline(p, e[FE_AUX0], e[FE_AUX1], order, x[0])
    if fam == FN_SIMM:
        return _simm(p, e[FE_AUX0], order, x[0])
    if fam == FN_SCALED:
        return p[0] * fn_derivative(t, e[FE_CHILD], comps, order, x)
    if fam == FN_COUPLER:
        # x[n] enters linearly with slope -1: any derivative that involves it is -1 (order 1) or 0
        for i in range(order):
            if comps[i] == e[FE_AUX0]:
                return -1.0 if order == 1 else 0.0
        return p[0] * fn_derivative(t, e[FE_CHILD], comps, order, x)
    return NAN


# ---------------------------------------------------------------------------------------------
# the table's owner, with its checks and the Python entry points
# ---------------------------------------------------------------------------------------------

cdef str _fn_table_error(const idx_t* ent, Py_ssize_t n, const double* par, Py_ssize_t npar, idx_t* depth):
    # What is wrong with the table, or None; fills depth[i], the combinator levels below entry i.
    cdef Py_ssize_t i, j
    cdef const idx_t* e
    cdef const double* p
    cdef const idx_t* c
    cdef idx_t fam, m, mo, poff, plen, ch, a0, a1, need
    for i in range(n):
        e = ent + i * FN_STRIDE
        fam, m, mo, poff, plen, ch, a0, a1 = e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]
        if not 0 <= fam < FN_NUM_FAMILIES:
            return f"entry {i}: unknown family code {fam} (known: {FN_FAMILIES})"
        name = _FN_NAMES[fam]
        if m < 0 or mo < 0:
            return f"entry {i} ({name}): negative argument size {m} or max order {mo}"
        if poff < 0 or plen < 0 or poff > npar or plen > npar - poff:
            return f"entry {i} ({name}): parameters [{poff}, {poff} + {plen}) outside the {npar} given"
        p = par + poff
        depth[i] = 0
        if fam == FN_SCALED or fam == FN_COUPLER:
            if not 0 <= ch < i:
                return f"entry {i} ({name}): child {ch} is not an earlier entry (0 <= child < {i})"
            c = ent + ch * FN_STRIDE
            depth[i] = depth[ch] + 1
            if depth[i] > FN_MAX_DEPTH:
                return f"entry {i} ({name}): combinators nested deeper than {FN_MAX_DEPTH}"
            if mo > c[FE_MAXORD]:
                return f"entry {i} ({name}): max order {mo} above its child's, {c[FE_MAXORD]}"
            if fam == FN_SCALED and m != c[FE_NARGS]:
                return f"entry {i} (scaled): takes {m} argument(s), its child {ch} takes {c[FE_NARGS]}"
            if fam == FN_COUPLER and (a0 != c[FE_NARGS] or m != a0 + 1):
                return (f"entry {i} (coupler): takes {m} argument(s) and passes {a0} to its child {ch}, "
                        f"which takes {c[FE_NARGS]} (the coupler takes one more than its child)")
        elif ch != -1:
            return f"entry {i} ({name}): child {ch} given to a family without one (-1)"
        elif fam != FN_CONSTANT and fam != FN_LINEAR and m != 1:
            return f"entry {i} ({name}): takes {m} argument(s), the family takes 1"
        # the parameters each family reads
        if fam == FN_LINEAR:
            need = m + 1
        elif fam == FN_POLYNOMIAL:
            need = plen if plen >= 1 else 1
        elif fam == FN_STEP:
            need = 7
        elif fam == FN_SINUSOID:
            need = 3
        elif fam == FN_SPLINE:
            if a0 < 2 or not 1 <= a1 <= FN_MAX_SPLINE_DEGREE:
                return f"entry {i} (spline): {a0} breakpoints (need >= 2), degree {a1} (need 1 to 5)"
            need = a0 + (a0 - 1) * (a1 + 2)
        elif fam == FN_SIMM:
            if a0 < 2:
                return f"entry {i} (simm_spline): {a0} points (need >= 2)"
            need = 5 * a0 - 1
        else:
            need = 1
        if plen != need:
            return f"entry {i} ({name}): {plen} parameters, the family reads {need}"
        if (fam == FN_STEP and mo > 3) or (fam == FN_SIMM and mo > 2):
            return f"entry {i} ({name}): max order {mo} above the family's ({3 if fam == FN_STEP else 2})"
        if fam == FN_STEP and p[2] == p[3]:
            return f"entry {i} (step): a zero-length switching interval (x0 = x1 = {p[2]})"
        if fam == FN_SPLINE or fam == FN_SIMM:
            # the binary search needs increasing knots
            for j in range(a0 - 1):
                if not p[j] < p[j + 1]:
                    return f"entry {i} ({name}): knots {j} and {j + 1} not increasing ({p[j]}, {p[j + 1]})"
    return None


cdef class FunctionTable:
    """Built-in Functions compiled into one flat table, evaluated by the core.

    Build it through ``simtk.common.function.FunctionTableBuilder``, which appends each function's
    entries (its operands first). The constructor takes the raw arrays and refuses an inconsistent table
    (an unknown family, a child that is not an earlier entry, parameters out of range or not finite,
    knots not increasing, ...), so that evaluating never reads out of bounds. See core/functions.pxi for
    the layout. Immutable (pickles by its arrays).

    Parameters
    ----------
    entries : array_like of int, shape (n, 8)
        One row per function: family, argument size, max derivative order, parameter offset and
        length, child, two family-specific integers (``FN_ENTRY_COLUMNS``).
    params : array_like of float, shape (p,)
        The parameters.

    Raises
    ------
    TypeError, ValueError
        Arrays of the wrong kind or shape, or a table the evaluators cannot read safely.
    """

    cdef FnTable t
    cdef readonly object entries, params
    cdef readonly Py_ssize_t n

    def __init__(self, entries, params):
        e = np.asarray(entries)
        pr = np.asarray(params)
        if e.size and e.dtype.kind not in "iu":
            raise TypeError(f"FunctionTable: entries must be integers, got dtype {e.dtype}")
        if pr.size and pr.dtype.kind not in "iuf":
            raise TypeError(f"FunctionTable: params must be real numbers, got dtype {pr.dtype}")
        if e.size and (e.ndim != 2 or e.shape[1] != FN_STRIDE):
            raise ValueError(f"FunctionTable: entries must have shape (n, {FN_STRIDE}), got {e.shape}")
        e = np.array(e, dtype=np.int64, order="C").reshape(-1, FN_STRIDE)
        pr = np.array(pr, dtype=np.float64, order="C").reshape(-1)
        bad = first_non_finite_at(_dp(pr), pr.shape[0])
        if bad >= 0:
            raise ValueError(f"FunctionTable: params[{bad}] = {pr[bad]} is not finite")
        depth = np.zeros(e.shape[0] + 1, dtype=np.int64)
        # (every family reads at least one parameter, so an empty params is read by no valid entry)
        err = _fn_table_error(_ip(e), e.shape[0], _dp(pr), pr.shape[0], _ip(depth))
        if err is not None:
            raise ValueError(f"FunctionTable: {err}")
        e.flags.writeable = False
        pr.flags.writeable = False
        self.entries, self.params = e, pr
        self.n = e.shape[0]
        self.t.ent = _ip(e)
        self.t.par = _dp(pr)
        self.t.n = self.n

    def __reduce__(self):
        return (FunctionTable, (self.entries, self.params))

    def __deepcopy__(self, memo):
        return self  # immutable

    def __copy__(self):
        return self

    def __len__(self):
        return self.n

    def __repr__(self):
        return f"<FunctionTable of {self.n} entries, {self.params.shape[0]} parameters>"

    cdef const idx_t* _entry(self, Py_ssize_t i) except NULL:
        if not 0 <= i < self.n:
            raise IndexError(f"FunctionTable: entry {i} out of range [0, {self.n})")
        return self.t.ent + i * FN_STRIDE

    def family(self, Py_ssize_t i):
        """The family name of entry ``i`` (a key of ``FN_FAMILIES``)."""
        return _FN_NAMES[self._entry(i)[FE_FAMILY]]

    def argument_size(self, Py_ssize_t i):
        """The number m of arguments entry ``i`` takes."""
        return self._entry(i)[FE_NARGS]

    def max_derivative_order(self, Py_ssize_t i):
        """The highest derivative order entry ``i`` evaluates (a higher one gives NaN)."""
        return self._entry(i)[FE_MAXORD]

    cdef cnp.ndarray _point(self, Py_ssize_t i, object x):
        # x as a C-contiguous float64 array of entry i's m arguments (one entry, unread, when m == 0)
        cdef Py_ssize_t m = self.t.ent[i * FN_STRIDE + FE_NARGS]
        if m and _is_f64_vector(x, m, False) and cnp.PyArray_NDIM(<cnp.ndarray>x) <= 1:
            return <cnp.ndarray>x
        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.ndim > 1 or a.size != m:
            raise ValueError(f"FunctionTable: entry {i} takes {m} argument(s), got x of shape {a.shape}")
        return a.reshape(m) if m else np.zeros(1)

    cdef object _components(self, Py_ssize_t i, object components, idx_t* buf, int* order):
        # The components, each checked in [0, m), and their number in order[0]: in buf[0:order] when
        # they fit the caller's _FN_CALL_ORDERS (returns None), else in the int64 array returned.
        cdef Py_ssize_t m = self.t.ent[i * FN_STRIDE + FE_NARGS], n = 0, k, length
        cdef object held = None
        if isinstance(components, (str, bytes)):
            raise TypeError(f"FunctionTable: components must be a sequence of ints, got {components!r}")
        length = len(components)
        if length > 2**31 - 1:
            raise ValueError(f"FunctionTable: derivative order {length} too high")
        if length > _FN_CALL_ORDERS:
            held = np.empty(length, dtype=np.int64)
            buf = _ip(held)
        for c in components:
            if type(c) is int:
                k = c
            elif isinstance(c, (bool, np.bool_)):
                raise TypeError(f"FunctionTable: components must be ints, got {c!r}")
            else:
                k = operator.index(c)
            if not 0 <= k < m:
                raise ValueError(f"FunctionTable: component {k} out of range for entry {i}, which takes "
                                 f"{m} argument(s)")
            if n < length:
                buf[n] = k
            n += 1
        if n != length:
            raise ValueError("FunctionTable: the components changed length while read")
        order[0] = <int>length
        return held

    def value(self, Py_ssize_t i, x):
        """f_i(x).

        Parameters
        ----------
        i : int
            The entry.
        x : float or array_like, shape (m,)
            The arguments (a float when m == 1). Not checked for finiteness: a NaN propagates.

        Returns
        -------
        float
        """
        cdef double xs
        cdef const idx_t* e = self._entry(i)
        cdef cnp.ndarray a
        if type(x) is float and e[FE_NARGS] == 1:
            xs = x
            return fn_value(&self.t, i, &xs)
        a = self._point(i, x)  # held while the core reads it
        return fn_value(&self.t, i, <const double*>cnp.PyArray_DATA(a))

    def derivative(self, Py_ssize_t i, components, x):
        """The partial derivative of f_i with respect to x[components[0]], ..., x[components[-1]].

        Parameters
        ----------
        i : int
            The entry.
        components : sequence of int
            The argument indices; their number is the order (none: the value).
        x : float or array_like, shape (m,)
            As in `value`.

        Returns
        -------
        float
            NaN when the order is above `max_derivative_order` (the family has no such derivative).

        Raises
        ------
        ValueError
            A component outside [0, m).
        """
        cdef idx_t buf[_FN_CALL_ORDERS]
        cdef const idx_t* cp = buf
        cdef const idx_t* e = self._entry(i)
        cdef cnp.ndarray a
        cdef int order
        cdef double xs
        cdef const double* xp = &xs
        held = self._components(i, components, buf, &order)
        if held is not None:
            cp = _ip(held)
        if type(x) is float and e[FE_NARGS] == 1:
            xs = x
        else:
            a = self._point(i, x)
            xp = <const double*>cnp.PyArray_DATA(a)
        return fn_derivative(&self.t, i, cp, order, xp)

    def values(self, Py_ssize_t i, X):
        """f_i at many points.

        Parameters
        ----------
        i : int
            The entry.
        X : array_like, shape (n, m)
            One point per row; shape (n,) when m == 1.

        Returns
        -------
        ndarray, shape (n,)
        """
        return self.derivatives(i, (), X)

    def derivatives(self, Py_ssize_t i, components, X):
        """One partial derivative of f_i (as in `derivative`) at many points (as in `values`).

        Returns
        -------
        ndarray, shape (n,)
            NaN everywhere when the order is above `max_derivative_order`.
        """
        cdef Py_ssize_t m = self._entry(i)[FE_NARGS], npts, r
        cdef idx_t buf[_FN_CALL_ORDERS]
        cdef const idx_t* cp = buf
        cdef int order
        held = self._components(i, components, buf, &order)  # held (if any) while the loop reads it
        if held is not None:
            cp = _ip(held)
        a = np.ascontiguousarray(X, dtype=np.float64)
        if a.ndim == 1 and m == 1:
            a = a.reshape(-1, 1)
        if a.ndim != 2 or a.shape[1] != m:
            raise ValueError(f"FunctionTable: points for entry {i} must have shape (n, {m})"
                             + (" or (n,)" if m == 1 else "") + f", got {a.shape}")
        npts = a.shape[0]
        cdef cnp.ndarray out = np.empty(npts)
        cdef double* o = _dp(out)
        cdef double zero = 0.0
        cdef const double* xp = &zero
        if m:
            xp = <const double*>cnp.PyArray_DATA(a)
        with nogil:
            for r in range(npts):
                o[r] = fn_derivative(&self.t, i, cp, order, xp + r * m)
        return out
