# The constraints of the compiled time loop, solved and projected inside TreeStepper's nogil
# steps: the rows of Ball, Weld, ConstantOrientation, ConstantAngle, Rod, PointInPlane and
# PointOnLine constraints (the Coincident, Angle, Plane and Rod row families), NoSlip1D (velocity
# level), ConstantCoordinate and Position-level Motions (coordinates held at a value or moved
# along a time function), ConstantSpeed, Velocity-level Motions and locks (speeds), and
# ConstantAcceleration, Acceleration-level Motions and locks (acceleration-only rows); and the
# constraints a compiled Function defines (core/loop_couplers.pxi): CoordinateCoupler (holonomic),
# SpeedCoupler (velocity level, its G at the current u) and PrescribedMotion (a coordinate row whose
# target is a function of time).
#
# The same operations, in the same order, as the Python path's constraint solve
# (simtk/multibody/constraints/_solver.py) and projection (_projection.py), through the same
# compiled functions, so a constrained trajectory is bitwise the same on both paths:
#
#   position      per part: perr rows and the geometry at q (<family>_position_t; q_i - value)
#   G             per part: the force map (<family>_force_map_t), one jt_entries_t per family
#                 row, then the rows of N (coordinates) and of the identity (speeds)
#   targets       the coordinate, speed and udot rows' targets at the evaluation's time t:
#                 a constant, or a sin(w t + p) with its two derivatives (Motion.Sinusoid)
#   velocity      verr = G u (_matvec), the speed rows u_i - value, a Motion's coordinate
#                 rows qdot_i - value'
#   acceleration  Y^T, A = constraint_operators_t; L = _factor_kept(A) (one equation: 1 / A);
#                 per part: its aerr rows from its rows of G udot0, the stations' bias
#                 accelerations and (Plane, Rod, NoSlip) velocities (<family>_fast_t), or
#                 qdotdot0_i - value'', udot0_i - value' (speeds), udot0_i - value (udot rows);
#                 lambda, du = _multiplier_step(aerr, L, Y^T);
#                 udot = udot0 - du, qdotdot = qdotdot0 - N du
#   project q     Newton steps du = P^T (P P^T)^-1 (-perr) over the mp position rows P of G
#                 (_gram, _factor_kept, _multiplier_step)
#   project u     du = Y (G M^-1 G^T)^-1 verr, u -= du over the nv = mp + mv rows that have a
#                 velocity error (A's leading block when acceleration-only rows follow)
#
# The Python layer (simtk/multibody/constraints/_compiled.py) hands over a plan's arrays only
# when every equation is one of these rows and A is small enough for the
# compiled factor (the Python path's _SMALL); anything the compiled factor refuses (a singular
# or ill-conditioned A) returns the step to Python, which takes its eigen-decomposition.


cdef enum:
    LOOP_COINCIDENT = 0
    LOOP_ANGLE = 1
    LOOP_PLANE = 2
    LOOP_ROD = 3
    LOOP_COORD = 4      # q_i - value (ConstantCoordinate): G's row is row i of N
    LOOP_SPEED = 5      # u_i - value (ConstantSpeed, a lock's u = 0 or u = u0): G's row is e_i
    LOOP_NOSLIP = 6     # n . (v1_P - v0_P) (NoSlip1D): velocity-level, G u
    LOOP_UDOT = 7       # udot_i - value (ConstantAcceleration, udot prescribed): acceleration-only, G's row e_i
    LOOP_COUPLER = 8    # f(q[args]) (CoordinateCoupler): holonomic, G's row grad f N
    LOOP_SPEED_COUPLER = 9  # f(u[args], q[args]) (SpeedCoupler): velocity-level, G's row df/du (depends on u)
    LOOP_JIT = 10       # Constraint.Jit: a compiled kernel's rows at every level (core/jit_constraints.pxi)

#: name -> code of the row families LoopConstraints solves
LOOP_FAMILIES = {"coincident": LOOP_COINCIDENT, "angle": LOOP_ANGLE, "plane": LOOP_PLANE, "rod": LOOP_ROD,
                 "coordinate": LOOP_COORD, "speed": LOOP_SPEED, "noslip": LOOP_NOSLIP, "udot": LOOP_UDOT,
                 "coupler": LOOP_COUPLER, "speed_coupler": LOOP_SPEED_COUPLER, "jit": LOOP_JIT}

cdef enum:
    TARGET_CONSTANT = 0  # value, with zero derivatives
    TARGET_SINUSOID = 1  # a sin(w t + p), a w cos(w t + p), -a w w sin(w t + p)
    TARGET_FUNCTION = 2  # f(t), f'(t), f''(t) of a FunctionTable entry (PrescribedMotion)

#: name -> code of the targets' time functions
LOOP_TARGETS = {"constant": TARGET_CONSTANT, "sinusoid": TARGET_SINUSOID, "function": TARGET_FUNCTION}


cdef struct LoopPart:
    int fam             # a LOOP_* family
    Py_ssize_t K, R     # elements, rows (3K for Coincident, K for the others)
    bint ground         # Coincident: every pair's ancestor is Ground
    bint all_eqs        # its rows are equations 0..m-1, in order
    const idx_t* eq     # (R,) its equations
    Py_ssize_t e0, s0   # its first force-map entry and bias station
    const idx_t* i1     # Coincident: b1, b2, a; Angle: bb, bf; Plane: bp, bf; Rod: b1, b2, a;
                        # coordinate: the q index, its body; speed, udot: the u index
    const idx_t* i2
    const idx_t* i3
    const idx_t* i4     # NoSlip: bc, b0, b1, a
    const double* v1    # Coincident: s1, s2 (K, 3); Angle: a_b, a_f (K, 3), cos (K,);
    const double* v2    # Plane: n_B, s (K, 3), h (K,); Rod: s1, s2 (K, 3), L (K,); NoSlip: p_C, n_C (K, 3)
    const double* v3
    double* geom        # Coincident: S (K, 3); Angle: b, f; Plane: n, d (K, 2, 3); Rod: Cz, dist (K, 4);
                        # NoSlip: n (K, 3)
    double* c           # Angle: f x b (K, 3)
    double* perr        # (R,) its rows of perr, G udot0, verr and aerr
    double* gud
    double* verr
    double* aerr
    # coordinate, speed and udot rows: their targets (each row's value and two time derivatives, (R, 3)),
    # the time functions (TARGET_*, (R,)) and their parameters (sinusoid: a, w, p; (R, 3))
    double* tv
    const idx_t* tkind
    const double* tpar
    bint timed          # some row's target varies with time
    bint qdot_rows      # coordinate rows of Motions: their velocity error is qdot_i - value', not G u
    # couplers (a row each; core/loop_couplers.pxi): their functions' entries in the table (fn; also
    # each function target's), their arguments arg[a0[r] : a0[r + 1]] (u indices, nus[r] of them, then
    # q indices), a coordinate argument's body (argb) and the gradient at the last evaluation (grad)
    const idx_t* fn
    const idx_t* a0
    const idx_t* nus
    const idx_t* arg
    const idx_t* argb
    double* grad
    # Constraint.Jit (K elements of m = jmp + jmv + jma rows each, eq (K, m)): the kernel, each element's
    # parameters (v1, (K, jnpk)) and their counts (i1); geom holds the errors of a level (K, m), c the
    # work of jit_con_g_rows_t and the velocities and accelerations the kernel reads (m + 18 nb + nu)
    void* jfn
    Py_ssize_t jmp, jmv, jma, jnpk


cdef class LoopConstraints:
    """The arrays of a plan of the row families above (LOOP_FAMILIES) and the scratch of their solve
    (see the file's head).

    Built by ``simtk.multibody.constraints._compiled.make_loop_constraints``; a TreeStepper given
    one solves and projects these equations in its steps.
    """

    cdef readonly Py_ssize_t mp, nv, m, nu, nq, nb, nparts, nstations
    cdef readonly bint timed
    # u_dependent: some rows of G depend on u (SpeedCoupler), built where the velocity errors are
    cdef readonly bint u_dependent
    # jit_failed: a Constraint.Jit kernel failed or gave a non-finite value since the last positions(); the
    # loop refuses the step (a factor < 0, correct() False, NaN errors) and Python raises, naming it
    cdef readonly bint jit_failed
    # the functions of the couplers and function targets, and the scratch of their arguments (x, xd)
    # and Hessians (H)
    cdef readonly object functions
    cdef FnTable fns
    cdef double* x
    cdef double* xd
    cdef double* H
    cdef double inv1, inv1v, t_set
    cdef bint needs_vs
    cdef Py_ssize_t nrows
    cdef object _keep_alive
    cdef LoopPart* parts
    cdef double[:, ::1] Amv, Lmv, Bmv, Avmv
    cdef idx_t[::1] keepmv
    cdef const idx_t* e_body
    cdef const idx_t* r_eq
    cdef const idx_t* r_start
    cdef const idx_t* r_stop
    cdef const idx_t* st_b
    cdef double* st
    cdef double* F
    cdef double* st_s
    cdef double* perr
    cdef double* G
    cdef double* YT
    cdef double* verr
    cdef double* Gud
    cdef double* AB
    cdef double* VS
    cdef double* aerr
    cdef double* lam
    cdef double* du
    cdef double* Fb
    cdef double* dq
    cdef double* rhs

    def __cinit__(self):
        self.parts = NULL

    def __dealloc__(self):
        free(self.parts)

    def __init__(self, TreeBatch batch, Py_ssize_t mp, Py_ssize_t nv, Py_ssize_t m, list parts, e_body, e_st0, e_F0,
                 rows_eq, rows_start, rows_stop, st_b, st_s0, FunctionTable functions=None):
        # parts: dicts of family ("coincident": b1, s1, b2, s2, a, ground; "angle": bb, ab, bf, af, cos;
        # "plane": bp, n, h, bf, s; "rod": b1, s1, b2, s2, L, a; "coordinate": q, body, target, params,
        # qdot_rows, and fn with function targets; "speed", "udot": u, target, params; "coupler",
        # "speed_coupler": fn, args (per row: its u indices, then its q indices), nus (per row: how many of
        # its args are speeds), bodies (per row: a body per arg, any for a speed)), eq (its equations), e0 and
        # s0 (its first entry and station), in the plan's order. The equations 0..mp-1 are holonomic
        # (position errors), mp..nv-1 velocity-level (speed, NoSlip and SpeedCoupler rows), nv..m-1
        # acceleration-only (udot rows). A target is a name of LOOP_TARGETS per row, with params (a, w, p)
        # per row; a constant's value is its a; a function target's function is the row's fn. functions: the
        # FunctionTable of every fn (needed when some part has one).
        cdef Py_ssize_t nb = batch.ws.nb, k, E, S, R, K, i, lo, hi, nmax = 1
        cdef list keep = []
        cdef LoopPart* p
        self.mp, self.nv, self.m, self.nu, self.nq, self.nb = mp, nv, m, batch.ws.nu, batch.ws.nq, nb
        self.t_set = NAN
        if m == 0 or self.nu == 0 or not parts or not 0 <= mp <= nv <= m:
            raise ValueError("LoopConstraints: no equations, or no speeds to solve for")

        def ints(x, n=None, what="an index array"):
            v = np.array(x, dtype=np.int64).reshape(-1)
            if n is not None and v.shape[0] != n:
                raise ValueError(f"LoopConstraints: {what} must have {n} entries, it has {v.shape[0]}")
            keep.append(v)
            return v

        def bodies(x, n, what):
            v = ints(x, n, what)
            if v.shape[0] and (v.min() < 0 or v.max() >= nb):
                raise ValueError(f"LoopConstraints: {what} names a body outside the tree")
            return v

        def floats(x, shape):
            v = np.array(x, dtype=np.float64).reshape(shape)
            keep.append(v)
            return v

        eb = bodies(e_body, None, "e_body")
        E = eb.shape[0]
        sb = bodies(st_b, None, "st_b")
        S = sb.shape[0]
        self.nstations = S
        r_eq = ints(rows_eq, None, "rows_eq")
        self.nrows = r_eq.shape[0]
        r_start, r_stop = ints(rows_start, self.nrows, "rows_start"), ints(rows_stop, self.nrows, "rows_stop")
        for k in range(self.nrows):
            if not (0 <= r_eq[k] < m and 0 <= r_start[k] <= r_stop[k] <= E):
                raise ValueError(f"LoopConstraints: row {k} is out of range")
        self.e_body, self.st_b = _ip(eb), _ip(sb)
        self.r_eq, self.r_start, self.r_stop = _ip(r_eq), _ip(r_start), _ip(r_stop)
        self.st, self.F, self.st_s = _dp(floats(e_st0, (E, 3))), _dp(floats(e_F0, (E, 2, 3))), \
            _dp(floats(st_s0, (S, 3)))

        def scratch(n):
            v = np.zeros(max(n, 1))
            keep.append(v)
            return v

        self.perr, self.verr, self.Gud, self.aerr = _dp(scratch(mp)), _dp(scratch(m)), _dp(scratch(m)), _dp(scratch(m))
        self.lam, self.rhs = _dp(scratch(m)), _dp(scratch(m))
        self.G, self.YT = _dp(scratch(m * self.nu)), _dp(scratch(m * self.nu))
        self.VS = _dp(scratch(6 * S))
        self.AB, self.du = _dp(scratch(6 * S)), _dp(scratch(self.nu))
        self.Fb, self.dq = _dp(scratch(6 * nb)), _dp(scratch(self.nq))
        arrays = {name: np.zeros((m, m)) for name in ("A", "L")}
        arrays["B"] = np.zeros((max(mp, 1), max(mp, 1)))
        arrays["Av"] = np.zeros((max(nv, 1), max(nv, 1)))
        arrays["keep"] = np.zeros(m, dtype=np.int64)
        keep.append(arrays)
        self.Amv, self.Lmv, self.Bmv, self.keepmv = arrays["A"], arrays["L"], arrays["B"], arrays["keep"]
        self.Avmv = arrays["Av"]
        self.parts = <LoopPart*>malloc(len(parts) * sizeof(LoopPart))
        if self.parts == NULL:
            raise MemoryError()
        self.nparts = 0
        self.functions = functions
        if functions is not None:
            self.fns = functions.t
        seen = []

        def entries_of(fn, K, nargs, order):
            # the rows' functions: entries of the table, of nargs[r] arguments and derivatives up to order
            v = ints(fn, K, "fn")
            if functions is None:
                raise ValueError("LoopConstraints: a part evaluates functions, but no FunctionTable was given")
            for r in range(K):
                if not 0 <= v[r] < functions.n:
                    raise ValueError(f"LoopConstraints: function entry {v[r]} is not in the table")
                if functions.argument_size(v[r]) != nargs[r] or functions.max_derivative_order(v[r]) < order:
                    raise ValueError(f"LoopConstraints: function entry {v[r]} takes {functions.argument_size(v[r])} "
                                     f"argument(s) and derivatives up to order {functions.max_derivative_order(v[r])}, "
                                     f"the row needs {nargs[r]} and order {order}")
            return v  # (kept alive by ints)
        for spec in parts:
            p = &self.parts[self.nparts]
            memset(p, 0, sizeof(LoopPart))
            p.fam = LOOP_FAMILIES[spec["family"]]
            if p.fam == LOOP_COINCIDENT:
                K = len(spec["b1"])
                R = 3 * K
                p.i1, p.i2, p.i3 = _ip(bodies(spec["b1"], K, "b1")), _ip(bodies(spec["b2"], K, "b2")), \
                    _ip(bodies(spec["a"], K, "a"))
                p.v1, p.v2 = _dp(floats(spec["s1"], (K, 3))), _dp(floats(spec["s2"], (K, 3)))
                p.ground = bool(spec["ground"])
                p.geom = _dp(scratch(3 * K))
            elif p.fam == LOOP_ANGLE:
                K = len(spec["bb"])
                R = K
                p.i1, p.i2 = _ip(bodies(spec["bb"], K, "bb")), _ip(bodies(spec["bf"], K, "bf"))
                p.v1, p.v2 = _dp(floats(spec["ab"], (K, 3))), _dp(floats(spec["af"], (K, 3)))
                p.v3 = _dp(floats(spec["cos"], (K,)))
                p.geom, p.c = _dp(scratch(6 * K)), _dp(scratch(3 * K))
            elif p.fam == LOOP_PLANE:
                K = len(spec["bp"])
                R = K
                p.i1, p.i2 = _ip(bodies(spec["bp"], K, "bp")), _ip(bodies(spec["bf"], K, "bf"))
                p.v1, p.v2 = _dp(floats(spec["n"], (K, 3))), _dp(floats(spec["s"], (K, 3)))
                p.v3 = _dp(floats(spec["h"], (K,)))
                p.geom = _dp(scratch(6 * K))
                self.needs_vs = True
            elif p.fam == LOOP_ROD:
                K = len(spec["b1"])
                R = K
                p.i1, p.i2, p.i3 = _ip(bodies(spec["b1"], K, "b1")), _ip(bodies(spec["b2"], K, "b2")), \
                    _ip(bodies(spec["a"], K, "a"))
                p.v1, p.v2 = _dp(floats(spec["s1"], (K, 3))), _dp(floats(spec["s2"], (K, 3)))
                p.v3 = _dp(floats(spec["L"], (K,)))
                p.geom = _dp(scratch(4 * K))
                self.needs_vs = True
            elif p.fam == LOOP_NOSLIP:
                K = len(spec["bc"])
                R = K
                p.i1, p.i2, p.i3 = _ip(bodies(spec["bc"], K, "bc")), _ip(bodies(spec["b0"], K, "b0")), \
                    _ip(bodies(spec["b1"], K, "b1"))
                p.i4 = _ip(bodies(spec["a"], K, "a"))
                p.v1, p.v2 = _dp(floats(spec["P"], (K, 3))), _dp(floats(spec["n"], (K, 3)))
                p.geom = _dp(scratch(3 * K))
                self.needs_vs = True
            elif p.fam == LOOP_COORD:
                K = len(spec["q"])
                R = K
                qi = ints(spec["q"], K, "q")
                if qi.min() < 0 or qi.max() >= self.nq:
                    raise ValueError("LoopConstraints: a coordinate row names no q")
                p.i1, p.i2 = _ip(qi), _ip(bodies(spec["body"], K, "body"))
                p.qdot_rows = bool(spec["qdot_rows"])
            elif p.fam == LOOP_COUPLER or p.fam == LOOP_SPEED_COUPLER:
                K = len(spec["args"])
                R = K
                a0 = np.zeros(K + 1, dtype=np.int64)
                a0[1:] = np.cumsum([len(a) for a in spec["args"]])
                nus = ints(spec["nus"], K, "nus")
                arg = ints([i for a in spec["args"] for i in a], None, "args")
                argb = bodies([b for bs in spec["bodies"] for b in bs], arg.shape[0], "bodies")
                keep.append(a0)
                for r in range(K):
                    n = a0[r + 1] - a0[r]
                    if n == 0 or not 0 <= nus[r] <= n or (p.fam == LOOP_COUPLER and nus[r]):
                        raise ValueError(f"LoopConstraints: coupler row {r} has {n} argument(s), {nus[r]} of them speeds")
                    for j in range(a0[r], a0[r + 1]):
                        if not 0 <= arg[j] < (self.nu if j - a0[r] < nus[r] else self.nq):
                            raise ValueError(f"LoopConstraints: coupler row {r} names no u or q at argument {j - a0[r]}")
                        if j - a0[r] >= nus[r] and not batch.ws.qoff[argb[j]] <= arg[j] < batch.ws.qoff[argb[j] + 1]:
                            raise ValueError(f"LoopConstraints: coupler row {r}: q {arg[j]} is not a coordinate of "
                                             f"body {argb[j]}")
                    nmax = max(nmax, n)
                fn = entries_of(spec["fn"], K, np.diff(a0), 2 if p.fam == LOOP_COUPLER else 1)
                p.fn = _ip(fn)
                p.a0, p.nus, p.arg, p.argb = _ip(a0), _ip(nus), _ip(arg), _ip(argb)
                p.grad = _dp(scratch(arg.shape[0]))
                p.geom = _dp(scratch(K))  # a SpeedCoupler's row values (its velocity errors)
                if p.fam == LOOP_SPEED_COUPLER:
                    self.u_dependent = True
            elif p.fam == LOOP_JIT:
                jp = np.array(spec["params"], dtype=np.float64, order="C").reshape(len(spec["nparams"]), -1)
                keep.append(jp)
                K = jp.shape[0]
                p.jmp, p.jmv, p.jma, p.jnpk = spec["mp"], spec["mv"], spec["ma"], jp.shape[1]
                R = K * (p.jmp + p.jmv + p.jma)
                if spec["address"] == 0 or p.jmp < 0 or p.jmv < 0 or p.jma < 0 or R == 0 and K:
                    raise ValueError("LoopConstraints: a jit part needs a kernel and equations")
                nparams = ints(spec["nparams"], K, "nparams")
                if K and (nparams.min() < 0 or nparams.max() > p.jnpk):
                    raise ValueError("LoopConstraints: a jit part's parameter counts are out of range")
                keep.append(spec["owner"])
                p.jfn = <void*><size_t>spec["address"]
                p.v1 = _dp(jp) if p.jnpk else _dp(scratch(1))
                p.i1 = _ip(nparams)
                p.geom = _dp(scratch(R))
                p.c = _dp(scratch(R + 18 * nb + self.nu))
            else:
                K = len(spec["u"])
                R = K
                ui = ints(spec["u"], K, "u")
                if ui.min() < 0 or ui.max() >= self.nu:
                    raise ValueError("LoopConstraints: a speed row names no u")
                p.i1 = _ip(ui)
            if p.fam == LOOP_COORD or p.fam == LOOP_SPEED or p.fam == LOOP_UDOT:
                kinds = ints([LOOP_TARGETS[name] for name in spec["target"]], K, "target")
                par = floats(spec["params"], (K, 3))
                tv = np.zeros((K, 3))
                tv[:, 0] = par[:, 0]  # a constant's value; its derivatives are 0
                keep.append(tv)
                p.tkind, p.tpar, p.tv = _ip(kinds), _dp(par), _dp(tv)
                p.timed = bool((kinds != TARGET_CONSTANT).any())
                self.timed = self.timed or p.timed
                if (kinds == TARGET_FUNCTION).any():
                    fn = np.array(spec["fn"], dtype=np.int64).reshape(-1)
                    if fn.shape[0] != K:
                        raise ValueError(f"LoopConstraints: fn must have {K} entries, it has {fn.shape[0]}")
                    fn[kinds != TARGET_FUNCTION] = -1
                    entries_of(fn[kinds == TARGET_FUNCTION], int((kinds == TARGET_FUNCTION).sum()),
                               np.ones(K, dtype=np.int64), 2)
                    keep.append(fn)
                    p.fn = _ip(fn)
            if p.fam in (LOOP_COINCIDENT, LOOP_PLANE, LOOP_ROD, LOOP_NOSLIP) and spec["s0"] + 2 * K > S:
                raise ValueError("LoopConstraints: a part's stations are out of range")
            eq = ints(spec["eq"], R, "a part's equations")
            entries = p.fam in (LOOP_COINCIDENT, LOOP_ANGLE, LOOP_PLANE, LOOP_ROD, LOOP_NOSLIP)  # force-map entries
            if K == 0 or eq.min() < 0 or eq.max() >= m or (entries and spec["e0"] + 2 * R > E) or spec["e0"] < 0 \
                    or spec["s0"] < 0:
                raise ValueError("LoopConstraints: a part's equations or entries are out of range")
            p.K, p.R, p.eq, p.e0, p.s0 = K, R, _ip(eq), spec["e0"], spec["s0"]
            p.all_eqs = eq.tolist() == list(range(m))
            p.perr, p.gud, p.verr, p.aerr = _dp(scratch(R)), _dp(scratch(R)), _dp(scratch(R)), _dp(scratch(R))
            if p.fam == LOOP_JIT:  # each element's rows: mp position-level, mv velocity-level, ma acceleration-only
                levels = np.tile(np.repeat([0, 1, 2], [p.jmp, p.jmv, p.jma]), K)
                lo, hi = 0, m
                if ((levels == 0) & (eq >= mp)).any() or ((levels == 1) & ((eq < mp) | (eq >= nv))).any() \
                        or ((levels == 2) & (eq < nv)).any():
                    lo = m  # (refused below)
            elif p.fam == LOOP_SPEED or p.fam == LOOP_NOSLIP or p.fam == LOOP_SPEED_COUPLER:
                lo, hi = mp, nv
            elif p.fam == LOOP_UDOT:
                lo, hi = nv, m
            else:
                lo, hi = 0, mp
            if eq.min() < lo or eq.max() >= hi:
                raise ValueError("LoopConstraints: the position-level rows must be the equations 0..mp-1, the "
                                 "velocity-level ones mp..nv-1 and the acceleration-only ones nv..m-1")
            seen.extend(eq.tolist())
            self.nparts += 1
        if sorted(seen) != list(range(m)):
            raise ValueError(f"LoopConstraints: the parts' rows do not cover the {m} equations once each")
        self.x, self.xd, self.H = _dp(scratch(nmax)), _dp(scratch(nmax)), _dp(scratch(nmax * nmax))
        self._keep_alive = keep

    cdef void positions(self, const Tree* t) noexcept nogil:
        # perr and each part's geometry at the tree's realized positions (position_errors)
        cdef Py_ssize_t j, r
        cdef LoopPart* p
        self.jit_failed = False
        for j in range(self.nparts):
            p = &self.parts[j]
            if p.fam == LOOP_JIT:
                self._jit_rows(<Tree*>t, p, JIT_CON_PERR, self.perr, t.u, NULL)
                continue
            if p.fam == LOOP_COINCIDENT:
                coincident_position_t(t, p.K, p.i1, p.v1, p.i2, p.v2, p.i3, p.ground, p.perr, p.geom)
            elif p.fam == LOOP_ANGLE:
                angle_position_t(t, p.K, p.i1, p.v1, p.i2, p.v2, p.v3, p.perr, p.geom)
            elif p.fam == LOOP_PLANE:
                plane_position_t(t, p.K, p.i1, p.v1, p.v3, p.i2, p.v2, p.perr, p.geom)
            elif p.fam == LOOP_ROD:
                rod_position_t(t, p.K, p.i1, p.v1, p.i2, p.v2, p.v3, p.perr, p.geom)
            elif p.fam == LOOP_COORD:
                for r in range(p.R):
                    p.perr[r] = t.q[p.i1[r]] - p.tv[3 * r]
            elif p.fam == LOOP_COUPLER:  # f(q[args])
                for r in range(p.R):
                    coupler_gather(p.arg + p.a0[r], p.a0[r + 1] - p.a0[r], 0, t.u, t.q, self.x)
                    p.perr[r] = fn_value(&self.fns, p.fn[r], self.x)
            else:
                continue  # velocity-level and acceleration-only rows have no position error
            for r in range(p.R):
                self.perr[p.eq[r]] = p.perr[r]

    cdef void build_g(self, Tree* t) noexcept nogil:
        # each part's force map, then the rows of G from it (_build_gmap; after positions)
        cdef Py_ssize_t j, k
        cdef LoopPart* p
        for j in range(self.nparts):
            p = &self.parts[j]
            if p.fam == LOOP_COINCIDENT:
                coincident_force_map_t(t, p.K, p.i1, p.i3, p.ground, p.geom, self.st + 3 * p.e0, self.F + 6 * p.e0,
                                       self.st_s + 3 * p.s0)
            elif p.fam == LOOP_ANGLE:
                angle_force_map_t(p.K, p.geom, p.c, self.F + 6 * p.e0)
            elif p.fam == LOOP_PLANE:
                plane_force_map_t(t, p.K, p.i1, p.geom, self.st + 3 * p.e0, self.F + 6 * p.e0, self.st_s + 3 * p.s0)
            elif p.fam == LOOP_ROD:
                rod_force_map_t(p.K, p.geom, self.F + 6 * p.e0)
            elif p.fam == LOOP_NOSLIP:
                noslip_force_map_t(t, p.K, p.i1, p.v1, p.v2, p.i2, p.i3, p.geom, self.st + 3 * p.e0,
                                   self.F + 6 * p.e0, self.st_s + 3 * p.s0)
        for k in range(self.nrows):
            jt_entries_t(t, self.e_body, self.st, self.F, self.r_start[k], self.r_stop[k], self.Fb,
                         self.G + self.r_eq[k] * self.nu)
        for j in range(self.nparts):  # then the mobility entries, as _build_gmap adds them
            p = &self.parts[j]
            if p.fam == LOOP_COORD:
                self._coordinate_rows(t, p)
            elif p.fam == LOOP_SPEED or p.fam == LOOP_UDOT:
                for k in range(p.R):
                    memset(self.G + p.eq[k] * self.nu, 0, self.nu * sizeof(double))
                    self.G[p.eq[k] * self.nu + p.i1[k]] += 1.0
            elif p.fam == LOOP_COUPLER:
                self._coupler_rows(t, p)
            elif p.fam == LOOP_SPEED_COUPLER:
                self._speed_coupler_rows(t, p, t.u)
            elif p.fam == LOOP_JIT and p.K:
                if not jit_con_g_rows_t(p.jfn, p.jmp, p.jmv, p.jma, t, p.K, p.v1, p.jnpk, p.i1, p.eq, p.c, self.G):
                    self.jit_failed = True

    cdef void _jit_rows(self, Tree* t, LoopPart* p, int what, double* out, const double* u,
                        const double* udot) noexcept nogil:
        # a jit part's errors of level what into out at its equations (NaN there when its kernel failed):
        # the velocities at u (J u) for the velocity errors, the accelerations J udot + the bias
        # accelerations for the acceleration errors (at the tree's u), as the Python path reads V_GB, A_GB
        cdef Py_ssize_t j, i, k, m = p.jmp + p.jmv + p.jma, w
        cdef double* V = p.c + m + 6 * t.nb + t.nu
        cdef double* A = V + 6 * t.nb
        w = p.jmp if what == JIT_CON_PERR else (p.jmp + p.jmv if what == JIT_CON_VERR else m)
        if what == JIT_CON_VERR:
            k_jacobian(t, u, V)
        elif what == JIT_CON_AERR:
            k_jacobian(t, udot, A)
            for i in range(6 * t.nb):
                A[i] = A[i] + t.A_bias[i]
        if not jit_con_errors_t(p.jfn, what, p.jmp, p.jmv, p.jma, t, u, udot if udot != NULL else u,
                                V if what != JIT_CON_PERR else t.V_GB, A if what == JIT_CON_AERR else t.V_GB,
                                p.K, p.v1, p.jnpk, p.i1, p.geom):
            self.jit_failed = True
            for j in range(p.K):
                for i in range(w):
                    out[p.eq[m * j + i]] = NAN
            return
        for j in range(p.K):
            for i in range(w):
                out[p.eq[m * j + i]] = p.geom[w * j + i]

    cdef void _coupler_rows(self, const Tree* t, LoopPart* p) noexcept nogil:
        # G's row of f(q[args]) = 0: sum_j g_j N_row(arg_j), g = grad f at q (kept for the acceleration
        # errors), as CoordinateCoupler._force_map adds it (an argument after the other, six entries each)
        cdef Py_ssize_t r, j, a0, n
        cdef double* row
        for r in range(p.R):
            a0 = p.a0[r]
            n = p.a0[r + 1] - a0
            coupler_gather(p.arg + a0, n, 0, t.u, t.q, self.x)
            coupler_gradient(&self.fns, p.fn[r], self.x, n, p.grad + a0)
            row = self.G + p.eq[r] * self.nu
            memset(row, 0, self.nu * sizeof(double))
            for j in range(n):
                coupler_n_row(t, p.argb[a0 + j], p.arg[a0 + j], p.grad[a0 + j], row)

    cdef void _speed_coupler_rows(self, const Tree* t, LoopPart* p, const double* u) noexcept nogil:
        # at x = (u[speed args], q[coordinate args]): the row values f(x) (into geom: the velocity errors),
        # g = grad f (kept for the acceleration errors) and G's row, g's speed part added at the speeds in
        # order (SpeedCoupler._force_map)
        cdef Py_ssize_t r, j, a0, n
        cdef double* row
        for r in range(p.R):
            a0 = p.a0[r]
            n = p.a0[r + 1] - a0
            coupler_gather(p.arg + a0, n, p.nus[r], u, t.q, self.x)
            p.geom[r] = fn_value(&self.fns, p.fn[r], self.x)
            coupler_gradient(&self.fns, p.fn[r], self.x, n, p.grad + a0)
            row = self.G + p.eq[r] * self.nu
            memset(row, 0, self.nu * sizeof(double))
            for j in range(p.nus[r]):
                row[p.arg[a0 + j]] += p.grad[a0 + j]

    cdef void _coordinate_rows(self, Tree* t, LoopPart* p) noexcept nogil:
        # G's row of q_i - value: row i of N over its body's speeds, as _n_rows evaluates it (N times
        # each unit speed) and _coord_mobility_forces adds it (six entries a row, the ones past the
        # body's speeds adding 0 at column 0)
        cdef Py_ssize_t k, j, b, u0, nub, q0
        cdef double x[6]
        cdef double out[7]
        cdef double v
        cdef double* row
        for k in range(p.R):
            row = self.G + p.eq[k] * self.nu
            memset(row, 0, self.nu * sizeof(double))
            b = p.i2[k]
            u0, q0 = t.uoff[b], t.qoff[b]
            nub = t.uoff[b + 1] - u0
            for j in range(6):
                if j < nub:
                    memset(x, 0, 6 * sizeof(double))
                    memset(out, 0, 7 * sizeof(double))
                    x[j] = 1.0
                    tree_n_mul(t, b, t.q + q0, x, out)
                    v = 1.0 * out[p.i1[k] - q0]
                    row[u0 + j] += v
                else:
                    row[0] += 1.0 * 0.0

    cdef void set_time(self, double t) noexcept nogil:
        # the time-varying targets at t (Motion.Sinusoid's values as motion.py computes them, a
        # PrescribedMotion's function's as its _target does)
        cdef Py_ssize_t j, r
        cdef LoopPart* p
        cdef double a, w, x, sn
        if not self.timed or t == self.t_set:
            return
        self.t_set = t
        for j in range(self.nparts):
            p = &self.parts[j]
            if not p.timed:
                continue
            for r in range(p.R):
                if p.tkind[r] == TARGET_SINUSOID:
                    a, w = p.tpar[3 * r], p.tpar[3 * r + 1]
                    x = w * t + p.tpar[3 * r + 2]
                    sn = sin(x)
                    p.tv[3 * r] = a * sn
                    p.tv[3 * r + 1] = a * w * cos(x)
                    p.tv[3 * r + 2] = -a * w * w * sn
                elif p.tkind[r] == TARGET_FUNCTION:
                    coupler_target(&self.fns, p.fn[r], t, p.tv + 3 * r)

    cdef Py_ssize_t _factor_of(self, double[:, ::1] A, double* inv1) noexcept nogil:
        # A's kept Cholesky factor into Lmv, keepmv; for one equation its reciprocal (0 when A is 0),
        # as the Python path's _Factor takes it
        cdef double a
        if A.shape[0] == 1:
            a = A[0, 0]
            inv1[0] = 1.0 / a if a > 0.0 else 0.0
            return 1
        return _factor_kept(A, self.Lmv, self.keepmv)

    cdef void _solve_of(self, Py_ssize_t n, const double* rhs, Py_ssize_t nk, double inv1) noexcept nogil:
        # lam = A^+ rhs over the first n equations from their factor (nk: its code) and du = lam Y^T,
        # as _Factor.step takes them (one equation: scalar arithmetic)
        cdef Py_ssize_t j
        if n == 1:
            self.lam[0] = rhs[0] * inv1
            for j in range(self.nu):
                self.du[j] = self.YT[j] * self.lam[0]
            return
        _multiplier_step(rhs, self.Lmv[:nk, :nk], NULL if nk == n else &self.keepmv[0], self.YT, n,
                         self.nu, self.lam, self.du)

    cdef Py_ssize_t factor(self, Tree* t) noexcept nogil:
        # Y^T, A and A's factor at the tree's positions and articulated inertias
        if self.jit_failed:
            return -1
        constraint_operators_t(t, self.m, self.G, self.YT, &self.Amv[0, 0])
        return self._factor_of(self.Amv, &self.inv1)

    cdef void solve(self, const double* rhs, Py_ssize_t nk) noexcept nogil:
        # the multipliers of all m equations and du (after factor)
        self._solve_of(self.m, rhs, nk, self.inv1)

    cdef Py_ssize_t factor_velocity(self, Tree* t) noexcept nogil:
        # project_u's factor: A's, or that of its leading nv x nv block (a copy, as project_u takes it)
        # when acceleration-only rows follow
        cdef Py_ssize_t i, j
        if self.jit_failed:
            return -1
        if self.nv == self.m:
            return self.factor(t)
        constraint_operators_t(t, self.m, self.G, self.YT, &self.Amv[0, 0])
        for i in range(self.nv):
            for j in range(self.nv):
                self.Avmv[i, j] = self.Amv[i, j]
        return self._factor_of(self.Avmv, &self.inv1v)

    cdef void solve_velocity(self, const double* rhs, Py_ssize_t nk) noexcept nogil:
        # the multipliers of the nv velocity-level equations and du (after factor_velocity)
        self._solve_of(self.nv, rhs, nk, self.inv1 if self.nv == self.m else self.inv1v)

    cdef bint correct(self, Tree* t, Py_ssize_t nk) noexcept nogil:
        # The constrained udot and qdotdot in place of the tree's unconstrained ones (after a
        # realization to Acceleration at q, u); False when A's factor is refused (Python solves it).
        # nk = -2: evaluate everything at q; nk = -1: the geometry and G are current at q (a
        # projection has just computed them), A's factor is not; nk >= 0: A's factor is current too.
        # What is reused is what would be computed again from the same q, so the numbers are the same.
        cdef Py_ssize_t i, j, r, m = self.m
        cdef LoopPart* p
        cdef const double* gud
        cdef const double* verr
        if nk == -2:
            self.positions(t)
            self.build_g(t)
        self.velocity_errors(t, t.u)
        if nk < 0:
            nk = self.factor(t)
        if nk < 0:
            return False
        _matvec(self.G, m, self.nu, t.udot, self.Gud)
        if self.nstations:
            frame_bias_t(t, self.nstations, self.st_b, self.st_s, self.AB)
            if self.needs_vs:
                frame_jacobian_t(t, self.nstations, self.st_b, self.st_s, t.u, self.Fb, self.VS)
        for j in range(self.nparts):  # solve_accelerations' loop over the parts
            p = &self.parts[j]
            if p.all_eqs:
                gud, verr = self.Gud, self.verr
            else:
                for r in range(p.R):
                    p.gud[r] = self.Gud[p.eq[r]]
                    p.verr[r] = self.verr[p.eq[r]]
                gud, verr = p.gud, p.verr
            if p.fam == LOOP_COINCIDENT:
                coincident_fast_t(t, p.K, p.i3, p.ground, self.AB + 6 * p.s0, verr, gud, p.aerr)
            elif p.fam == LOOP_ANGLE:
                angle_fast_t(t, p.K, p.i1, p.i2, p.geom, p.c, gud, p.aerr)
            elif p.fam == LOOP_PLANE:
                plane_fast_t(t, p.K, p.i1, p.geom, self.AB + 6 * p.s0, self.VS + 6 * p.s0, gud, p.aerr)
            elif p.fam == LOOP_ROD:
                rod_fast_t(t, p.K, p.i1, p.i3, p.geom, self.AB + 6 * p.s0, self.VS + 6 * p.s0, verr, gud, p.aerr)
            elif p.fam == LOOP_NOSLIP:
                noslip_fast_t(t, p.K, p.i1, p.i4, p.geom, self.AB + 6 * p.s0, self.VS + 6 * p.s0, gud, p.aerr)
            elif p.fam == LOOP_COORD:  # qdotdot0_i - value'' (the class's acceleration errors at udot0)
                for r in range(p.R):
                    p.aerr[r] = t.qdotdot[p.i1[r]] - p.tv[3 * r + 2]
            elif p.fam == LOOP_SPEED:  # udot0_i - value'
                for r in range(p.R):
                    p.aerr[r] = t.udot[p.i1[r]] - p.tv[3 * r + 1]
            elif p.fam == LOOP_COUPLER or p.fam == LOOP_SPEED_COUPLER:
                self._coupler_accelerations(t, p)
            elif p.fam == LOOP_JIT:  # the kernel's acceleration errors at udot0
                self._jit_rows(t, p, JIT_CON_AERR, self.aerr, t.u, t.udot)
                continue
            else:  # udot0_i - value
                for r in range(p.R):
                    p.aerr[r] = t.udot[p.i1[r]] - p.tv[3 * r]
            for r in range(p.R):
                self.aerr[p.eq[r]] = p.aerr[r]
        if self.jit_failed:
            return False
        self.solve(self.aerr, nk)
        for i in range(self.nu):
            t.udot[i] = t.udot[i] - self.du[i]
        _n_mul(t, t.q, self.du, self.dq)
        for i in range(self.nq):
            t.qdotdot[i] = t.qdotdot[i] - self.dq[i]
        return True

    cdef void _coupler_accelerations(self, const Tree* t, LoopPart* p) noexcept nogil:
        # the couplers' acceleration errors at udot0 (their classes' _acceleration_errors), from the
        # gradient their G rows were built with at this q (and u):
        #   CoordinateCoupler  g . qdotdot0[args] + xd^T H xd,  xd = qdot[args]
        #   SpeedCoupler       g_u . udot0[speed args] + g_q . qdot[coordinate args]
        cdef Py_ssize_t r, j, a0, n, nus
        for r in range(p.R):
            a0 = p.a0[r]
            n = p.a0[r + 1] - a0
            if p.fam == LOOP_COUPLER:
                coupler_gather(p.arg + a0, n, 0, t.u, t.q, self.x)
                for j in range(n):
                    self.xd[j] = t.qdot[p.arg[a0 + j]]
                p.aerr[r] = (coupler_dot(p.grad + a0, p.arg + a0, n, t.qdotdot)
                             + coupler_quadratic(&self.fns, p.fn[r], self.x, self.xd, n, self.H))
            else:
                nus = p.nus[r]
                p.aerr[r] = (coupler_dot(p.grad + a0, p.arg + a0, nus, t.udot)
                             + coupler_dot(p.grad + a0 + nus, p.arg + a0 + nus, n - nus, t.qdot))

    cdef void velocity_errors(self, const Tree* t, const double* u) noexcept nogil:
        # verr = G u, the speed rows u_i - value, a Motion's coordinate rows qdot_i - value' with qdot_i
        # from its body's N(q) u (as realize_velocity computes them; after build_g; the udot rows' entries
        # are not velocity errors), and the SpeedCoupler rows f(x), their G rows built at this u first
        # (the Python path builds G again whenever u changes, for them)
        cdef Py_ssize_t j, r, b
        cdef LoopPart* p
        cdef double qdot[7]
        if self.u_dependent:
            for j in range(self.nparts):
                if self.parts[j].fam == LOOP_SPEED_COUPLER:
                    self._speed_coupler_rows(t, &self.parts[j], u)
        _matvec(self.G, self.m, self.nu, u, self.verr)
        for j in range(self.nparts):
            p = &self.parts[j]
            if p.fam == LOOP_SPEED_COUPLER:
                for r in range(p.R):
                    self.verr[p.eq[r]] = p.geom[r]
            elif p.fam == LOOP_SPEED:
                for r in range(p.R):
                    self.verr[p.eq[r]] = u[p.i1[r]] - p.tv[3 * r]
            elif p.fam == LOOP_COORD and p.qdot_rows:
                for r in range(p.R):
                    b = p.i2[r]
                    tree_n_mul(t, b, t.q + t.qoff[b], u + t.uoff[b], qdot)
                    self.verr[p.eq[r]] = qdot[p.i1[r] - t.qoff[b]] - p.tv[3 * r + 1]
            elif p.fam == LOOP_JIT and p.jmp + p.jmv:
                self._jit_rows(<Tree*>t, p, JIT_CON_VERR, self.verr, u, NULL)

    cdef Py_ssize_t newton_step(self, Tree* t, double* q) noexcept nogil:
        # q += N du with du = P^T (P P^T)^-1 (-perr), P = the mp holonomic rows of G (after positions
        # at q); returns the factor's code (< 0: refused, q unchanged)
        cdef Py_ssize_t nk, i, mp = self.mp
        self.build_g(t)
        if self.jit_failed:
            return -1
        for i in range(mp):
            self.rhs[i] = -self.perr[i]
        _gram(self.G, mp, self.nu, &self.Bmv[0, 0])
        nk = _factor_kept(self.Bmv, self.Lmv, self.keepmv)
        if nk < 0:
            return nk
        _multiplier_step(self.rhs, self.Lmv[:nk, :nk], NULL if nk == mp else &self.keepmv[0], self.G, mp,
                         self.nu, self.lam, self.du)
        _n_mul(t, q, self.du, self.dq)
        for i in range(self.nq):
            q[i] = q[i] + self.dq[i]
        return nk

