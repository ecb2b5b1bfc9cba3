# The constraints of the compiled time loop: point-coincidence (Ball) equations solved and
# projected inside TreeStepper's nogil steps.
#
# The same operations, in the same order, as the Python path's constraint solve
# (simtk/multibody/constraints/_solver.py) and projection (_projection.py), through the same
# compiled functions, so a constrained trajectory is bitwise the same on both paths:
#
#   position      perr, S = coincident_position_t
#   G             coincident_force_map_t, then one jt_entries_t per row (the force map's rows)
#   velocity      verr = G u (_matvec)
#   acceleration  Y^T, A = constraint_operators_t; L = _factor_kept(A);
#                 aerr = coincident_fast_t(G udot0, the stations' bias accelerations);
#                 lambda, du = _multiplier_step(aerr, L, Y^T);
#                 udot = udot0 - du, qdotdot = qdotdot0 - N du
#   project q     Newton steps du = P^T (P P^T)^-1 (-perr) (_gram, _factor_kept, _multiplier_step)
#   project u     du = Y (G M^-1 G^T)^-1 verr, u -= du
#
# The Python layer (simtk/multibody/constraints/_compiled.py) hands over a plan's arrays only
# when every equation is a Coincident row of one part and A is small enough for the compiled
# factor (the Python path's _SMALL); anything the compiled factor refuses (a singular or
# ill-conditioned A) returns the step to Python, which takes its eigen-decomposition.

from libc.math cimport fabs, INFINITY


cdef class LoopConstraints:
    """The arrays of a plan of Coincident rows and the scratch of their solve (see the file's head).

    Built by ``simtk._core.make_loop_constraints``; a TreeStepper given one solves and projects
    these equations in its steps.
    """

    cdef readonly Py_ssize_t K, m, nu, nq, nb
    cdef readonly bint ground
    cdef object _keep_alive
    cdef double[:, ::1] Amv, Lmv, Bmv
    cdef idx_t[::1] keepmv
    cdef const idx_t* b1
    cdef const idx_t* b2
    cdef const idx_t* a
    cdef const double* s1
    cdef const double* s2
    cdef const idx_t* e_body
    cdef const idx_t* r_eq
    cdef const idx_t* r_start
    cdef const idx_t* r_stop
    cdef const idx_t* st_b
    cdef double* st
    cdef double* F
    cdef double* st_s
    cdef double* perr
    cdef double* S
    cdef double* G
    cdef double* YT
    cdef double* verr
    cdef double* Gud
    cdef double* AB
    cdef double* aerr
    cdef double* lam
    cdef double* du
    cdef double* Fb
    cdef double* dq
    cdef double* rhs

    def __init__(self, TreeBatch batch, b1, s1, b2, s2, a, bint ground, e_body, e_st0, e_F0, rows_eq, rows_start,
                 rows_stop, st_b, st_s0):
        cdef Py_ssize_t K = len(b1), m = 3 * len(b1), nb = batch.ws.nb, k
        cdef dict arr = {}
        self.K, self.m, self.nu, self.nq, self.nb, self.ground = K, m, batch.ws.nu, batch.ws.nq, nb, ground
        if K == 0 or self.nu == 0:
            raise ValueError("LoopConstraints: no equations, or no speeds to solve for")

        def ints(x, n, what):
            v = np.array(x, dtype=np.int64).reshape(-1)
            if v.shape[0] != n:
                raise ValueError(f"LoopConstraints: {what} must have {n} entries, it has {v.shape[0]}")
            arr[what] = v
            return v

        def floats(x, shape, what):
            v = np.array(x, dtype=np.float64).reshape(shape)
            arr[what] = v
            return v

        for name, v in (("b1", ints(b1, K, "b1")), ("b2", ints(b2, K, "b2")), ("a", ints(a, K, "a")),
                        ("e_body", ints(e_body, 2 * m, "e_body")), ("st_b", ints(st_b, 2 * K, "st_b"))):
            if v.min() < 0 or v.max() >= nb:
                raise ValueError(f"LoopConstraints: {name} names a body outside the tree")
        eq, start, stop = ints(rows_eq, m, "r_eq"), ints(rows_start, m, "r_start"), ints(rows_stop, m, "r_stop")
        for k in range(m):
            if not (0 <= eq[k] < m and 0 <= start[k] <= stop[k] <= 2 * m):
                raise ValueError(f"LoopConstraints: row {k} is out of range")
        floats(s1, (K, 3), "s1")
        floats(s2, (K, 3), "s2")
        floats(e_st0, (2 * m, 3), "st")
        floats(e_F0, (2 * m, 2, 3), "F")
        floats(st_s0, (2 * K, 3), "st_s")
        for what, n in (("perr", m), ("S", 3 * K), ("G", m * self.nu), ("YT", m * self.nu), ("verr", m),
                        ("Gud", m), ("AB", 12 * K), ("aerr", m), ("lam", m), ("du", self.nu), ("Fb", 6 * nb),
                        ("dq", max(self.nq, 1)), ("rhs", m)):
            arr[what] = np.zeros(n)
        arr["A"], arr["L"], arr["B"] = np.zeros((m, m)), np.zeros((m, m)), np.zeros((m, m))
        arr["keep"] = np.zeros(m, dtype=np.int64)
        self._keep_alive = arr
        self.Amv, self.Lmv, self.Bmv, self.keepmv = arr["A"], arr["L"], arr["B"], arr["keep"]
        self.b1, self.b2, self.a = _ip(arr["b1"]), _ip(arr["b2"]), _ip(arr["a"])
        self.s1, self.s2 = _dp(arr["s1"]), _dp(arr["s2"])
        self.e_body, self.st_b = _ip(arr["e_body"]), _ip(arr["st_b"])
        self.r_eq, self.r_start, self.r_stop = _ip(arr["r_eq"]), _ip(arr["r_start"]), _ip(arr["r_stop"])
        self.st, self.F, self.st_s = _dp(arr["st"]), _dp(arr["F"]), _dp(arr["st_s"])
        self.perr, self.S, self.G, self.YT = _dp(arr["perr"]), _dp(arr["S"]), _dp(arr["G"]), _dp(arr["YT"])
        self.verr, self.Gud, self.AB, self.aerr = _dp(arr["verr"]), _dp(arr["Gud"]), _dp(arr["AB"]), _dp(arr["aerr"])
        self.lam, self.du, self.Fb, self.dq = _dp(arr["lam"]), _dp(arr["du"]), _dp(arr["Fb"]), _dp(arr["dq"])
        self.rhs = _dp(arr["rhs"])

    cdef void positions(self, const Tree* t) noexcept nogil:
        # perr and S at the tree's realized positions
        coincident_position_t(t, self.K, self.b1, self.s1, self.b2, self.s2, self.a, self.ground, self.perr, self.S)

    cdef void build_g(self, Tree* t) noexcept nogil:
        # the force map at S and the rows of G from it (after positions)
        cdef Py_ssize_t k
        coincident_force_map_t(t, self.K, self.b1, self.a, self.ground, self.S, self.st, self.F, self.st_s)
        for k in range(self.m):
            jt_entries_t(t, self.e_body, self.st, self.F, self.r_start[k], self.r_stop[k], self.Fb,
                         self.G + self.r_eq[k] * self.nu)

    cdef Py_ssize_t factor(self, Tree* t) noexcept nogil:
        # Y^T, A and A's kept Cholesky factor at the tree's positions and articulated inertias
        constraint_operators_t(t, self.m, self.G, self.YT, &self.Amv[0, 0])
        return _factor_kept(self.Amv, self.Lmv, self.keepmv)

    cdef bint correct(self, Tree* t) noexcept nogil:
        # The constrained udot and qdotdot in place of the tree's unconstrained ones (after a
        # realization to Acceleration at q, u); False when A's factor is refused (Python solves it).
        cdef Py_ssize_t nk, i, m = self.m
        self.positions(t)
        self.build_g(t)
        _matvec(self.G, m, self.nu, t.u, self.verr)
        nk = self.factor(t)
        if nk < 0:
            return False
        _matvec(self.G, m, self.nu, t.udot, self.Gud)
        frame_bias_t(t, 2 * self.K, self.st_b, self.st_s, self.AB)
        coincident_fast_t(t, self.K, self.a, self.ground, self.AB, self.verr, self.Gud, self.aerr)
        _multiplier_step(self.aerr, self.Lmv[:nk, :nk], NULL if nk == m else &self.keepmv[0], self.YT, m,
                         self.nu, self.lam, self.du)
        for i in range(self.nu):
            t.udot[i] = t.udot[i] - self.du[i]
        _n_mul(t, t.q, self.du, self.dq)
        for i in range(self.nq):
            t.qdotdot[i] = t.qdotdot[i] - self.dq[i]
        return True

    cdef Py_ssize_t newton_step(self, Tree* t, double* q) noexcept nogil:
        # q += N du with du = P^T (P P^T)^-1 (-perr), P = G (after positions at q); returns the
        # factor's code (< 0: refused, q unchanged)
        cdef Py_ssize_t nk, i, m = self.m
        self.build_g(t)
        for i in range(m):
            self.rhs[i] = -self.perr[i]
        _gram(self.G, m, self.nu, &self.Bmv[0, 0])
        nk = _factor_kept(self.Bmv, self.Lmv, self.keepmv)
        if nk < 0:
            return nk
        _multiplier_step(self.rhs, self.Lmv[:nk, :nk], NULL if nk == m else &self.keepmv[0], self.G, m,
                         self.nu, self.lam, self.du)
        _n_mul(t, q, self.du, self.dq)
        for i in range(self.nq):
            q[i] = q[i] + self.dq[i]
        return nk

    cdef double max_abs(self, const double* x) noexcept nogil:
        # max |x_i| over the m equations; NaN if any is NaN
        cdef Py_ssize_t i
        cdef double r = 0.0, v
        for i in range(self.m):
            v = fabs(x[i])
            if v != v:
                return v
            if v > r:
                r = v
        return r

