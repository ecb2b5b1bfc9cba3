# TreeKernels: the per-State workspace of the matter subsystem's kernels.
#
# Built once per State (at Instance stage) from the frozen tree arrays; it
# owns every cache array (numpy, exposed read-only-by-convention as
# attributes) and keeps raw pointers to them in a Tree struct, so each stage
# is one method call that allocates nothing. simtk/_core.py validates every
# argument before calling in; nothing here checks shapes beyond what keeps
# memory safe (the constructor copies its inputs into contiguous arrays).

cdef inline double* _dp(cnp.ndarray a):
    return <double*>cnp.PyArray_DATA(a)


cdef inline idx_t* _ip(cnp.ndarray a):
    return <idx_t*>cnp.PyArray_DATA(a)


_TREE_INPUTS = ("parent", "jtype", "qoff", "uoff", "jparam", "R_PF", "p_PF", "R_BM", "p_BM",
                "mass", "p_BC", "I_B")

# name -> shape code: n = nb, u = nu, q = nq, f = the FunctionBased records, digits literal
_CACHE_ARRAYS = {
    "q": "q", "u": "u",
    "R_FM": "n33", "p_FM": "n3", "H_FM": "u23", "qerr": "n", "R_GF": "n33", "p_GM": "n3",
    "R_GB": "n33", "p_GB": "n3", "p_GC": "n3", "S": "u23", "I_O": "n66",
    "P": "n66", "Pa": "n66", "U": "u23", "Dinv": "n66",
    "V_FM": "n23", "HDotu_FM": "n23", "qdot": "q", "V_O": "n23", "V_GB": "n23", "c": "n23",
    "b": "n23", "A_bias_O": "n23", "A_bias": "n23",
    "udot": "u", "qdotdot": "q", "A_O": "n23", "A_GB": "n23",
    "_f": "n23", "_g": "n23", "_Ic": "n66", "_F": "n23",
    "_fbw": "f59",  # FB_WSTRIDE = 45 doubles a record
}


cdef inline bint _is_f64_vector(object a, Py_ssize_t n, bint writable):
    # memory safety only: the caller (simtk/_core.py or a trusted hook) has
    # already made the arrays; this keeps a mistake from writing out of bounds
    cdef cnp.ndarray x
    if not isinstance(a, cnp.ndarray):
        return False
    x = <cnp.ndarray>a
    # (a float64 of another byte order has the same type number: its bytes are not doubles here)
    return (cnp.PyArray_TYPE(x) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(x)
            and cnp.PyArray_ISNOTSWAPPED(x) and cnp.PyArray_ISALIGNED(x)
            and cnp.PyArray_SIZE(x) == n and (not writable or cnp.PyArray_ISWRITEABLE(x)))


#: the frame flags of k_position (TreeKernels.fflag), by name
FRAME_FLAGS = dict(R_PF_ONE=FF_R_PF_ONE, R_BM_ONE=FF_R_BM_ONE, P_BM_ZERO=FF_P_BM_ZERO,
                   R_PF_PERM=FF_R_PF_PERM, R_BM_PERM=FF_R_BM_PERM)


def _signed_permutation_code(P):
    """The code of mat33_mul_signed_perm for a 3x3 matrix with one entry +-1 per column and row
    and zeros elsewhere (exactly), or -1 for any other matrix."""
    cdef int b, k, code = 0
    rows = set()
    for b in range(3):
        col = [float(P[r, b]) for r in range(3)]
        nz = [r for r in range(3) if col[r] != 0.0]
        if len(nz) != 1 or abs(col[nz[0]]) != 1.0:
            return -1
        k = nz[0]
        rows.add(k)
        code |= (k | (4 if col[k] < 0.0 else 0)) << (3 * b)
    return code if len(rows) == 3 else -1


cdef inline object _dup(object a):
    # a C-contiguous copy of the ndarray a
    return cnp.PyArray_NewCopy(<cnp.ndarray>a, cnp.NPY_CORDER)


cdef extern from "numpy/arrayobject.h":
    object PyArray_View(cnp.ndarray a, void* dtype, void* subtype)


def readonly_view(cnp.ndarray a):
    """A read-only view of ``a`` (what ``a.view()`` and clearing its writeable flag give, in one call)."""
    cdef cnp.ndarray v = PyArray_View(a, NULL, NULL)
    cnp.PyArray_CLEARFLAGS(v, cnp.NPY_ARRAY_WRITEABLE)
    return v


cdef inline bint _is_finite_f64(object a, int ndim, Py_ssize_t n0):
    # a float64 C-contiguous ndarray of shape (n0,) (ndim 1) or (n0, 2, 3)
    # (ndim 3) whose entries are all finite
    cdef cnp.ndarray x
    if not isinstance(a, cnp.ndarray):
        return False
    x = <cnp.ndarray>a
    if (cnp.PyArray_TYPE(x) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(x)
            or not cnp.PyArray_ISNOTSWAPPED(x) or not cnp.PyArray_ISALIGNED(x)
            or cnp.PyArray_NDIM(x) != ndim or cnp.PyArray_DIM(x, 0) != n0):
        return False
    if ndim == 3 and (cnp.PyArray_DIM(x, 1) != 2 or cnp.PyArray_DIM(x, 2) != 3):
        return False
    return first_non_finite_at(<const double*>cnp.PyArray_DATA(x), cnp.PyArray_SIZE(x)) < 0


cdef double* _f64_data(cnp.ndarray a, Py_ssize_t n, bint writable, str name) except? NULL:
    # The data of a C-contiguous float64 array of n entries (any shape), checked by its flags only:
    # the cheap check for the per-evaluation calls of a time loop.
    if not _is_f64_vector(a, n, writable):
        raise ValueError(f"{name}: expected a C-contiguous{' writable' if writable else ''} float64 array of "
                         f"{n} entries")
    return <double*>cnp.PyArray_DATA(a)


cdef void constraint_operators_t(Tree* t, Py_ssize_t m, const double* G, double* YT, double* A) noexcept nogil:
    # YT (m, nu) row by row = M^-1 G_i and A (m, m) = G M^-1 G^T on its lower triangle, mirrored
    # (the nogil core of TreeKernels.constraint_operators; needs the articulated inertias).
    cdef Py_ssize_t nu = t.nu, i, j
    cdef double e
    for i in range(m):
        k_multiply_by_m_inv(t, G + i * nu, YT + i * nu)
    for i in range(m):
        for j in range(i + 1):
            e = dot_n(G + i * nu, YT + j * nu, nu)
            A[i * m + j] = e
            A[j * m + i] = e


cdef void jt_entries_t(Tree* t, const idx_t* bodies, const double* stations, const double* F, Py_ssize_t j0,
                       Py_ssize_t j1, double* Fb, double* out) noexcept nogil:
    # out (nu,) = J^T of the force-map entries j0:j1 (torque, force at stations[j] on bodies[j]),
    # gathered into the body forces Fb (nb, 2, 3) at the origins first.
    cdef Py_ssize_t j, bi
    cdef double r[3]
    memset(Fb, 0, 6 * t.nb * sizeof(double))
    for j in range(j0, j1):
        bi = bodies[j]
        mat33_vec(t.R_GB + 9 * bi, stations + 3 * j, r)
        add6(Fb + 6 * bi, F + 6 * j)
        cross3_add(r, F + 6 * j + 3, Fb + 6 * bi)
    k_jacobian_transpose(t, Fb, out)


cdef void frame_bias_t(const Tree* t, Py_ssize_t nk, const idx_t* bodies, const double* stations,
                       double* out) noexcept nogil:
    # out (nk, 2, 3) = JDot u of the frames at stations[j] on bodies[j] (needs A_bias: not a lean tree)
    cdef Py_ssize_t j, bi
    cdef double r[3]
    cdef double wr[3]
    cdef double* o
    for j in range(nk):
        bi = bodies[j]
        o = out + 6 * j
        mat33_vec(t.R_GB + 9 * bi, stations + 3 * j, r)
        memcpy(o, t.A_bias + 6 * bi, 6 * sizeof(double))
        cross3_add(o, r, o + 3)
        cross3(t.V_GB + 6 * bi, r, wr)
        cross3_add(t.V_GB + 6 * bi, wr, o + 3)


cdef void frame_jacobian_t(Tree* t, Py_ssize_t nk, const idx_t* bodies, const double* stations, const double* x,
                           double* V, double* out) noexcept nogil:
    # out (nk, 2, 3): the spatial velocities (w, station velocity) of the frames at stations[j] on
    # bodies[j] for speeds x; V (nb, 2, 3) scratch for J x at the body origins
    cdef Py_ssize_t j, bi
    cdef double r[3]
    k_jacobian(t, x, V)
    for j in range(nk):
        bi = bodies[j]
        mat33_vec(t.R_GB + 9 * bi, stations + 3 * j, r)
        motion_origin_to_point(V + 6 * bi, r, out + 6 * j)


cdef class TreeKernels:
    """Compiled multibody kernels over one frozen tree, with their cache arrays.

    Build it through :func:`simtk._core.make_tree_kernels`, which validates the
    inputs. See that function for the meaning of every array.
    """

    cdef Tree t
    cdef readonly Py_ssize_t nb, nu, nq
    cdef readonly object parent, jtype, qoff, uoff, jparam, R_PF, p_PF, R_BM, p_BM
    cdef readonly object mass, p_BC, I_B
    cdef readonly object q, u, R_FM, p_FM, H_FM, qerr, R_GF, p_GM, R_GB, p_GB, p_GC, S
    cdef readonly object I_O, P, Pa, U, Dinv
    cdef readonly object V_FM, HDotu_FM, qdot, V_O, V_GB, c, b, A_bias_O, A_bias
    cdef readonly object udot, qdotdot, A_O, A_GB
    cdef readonly object rpar, cfirst, fflag, cmass, cp_BC, cI_B
    # FunctionBased mobilizers (core/function_joint.pxi): their table (a FunctionTable, or None),
    # each body's record (-1: none) and the records; nfb records
    cdef readonly object fn_table, fbrec, fbi, fbd
    # jit mobilizers (core/jit_mobilizers.pxi): a JitMobilizers, or None
    cdef readonly object jit_mobilizers
    cdef readonly Py_ssize_t nfb
    # each mobility's armature (rotor inertia), (nu,), read-only; t.arm points into it only when one
    # is nonzero (the sweeps then add it; all zeros leave them as they were, bitwise)
    cdef readonly object armature
    cdef object _f, _g, _Ic, _F, _fbw
    cdef bint _abi_valid
    # the evaluation's inputs (set_inputs; None until given), which t.inputs points into
    cdef object _inputs
    # the arrays t.z and t.zdot point into (set_z), kept alive while bound
    cdef object _zrefs

    def __init__(self, parent, jtype, qoff, uoff, jparam, R_PF, p_PF, R_BM, p_BM,
                 mass, p_BC, I_B, function_joints=None, jit_mobilizers=None, armature=None):
        self.parent = np.array(parent, dtype=np.int64, order="C")
        self.jtype = np.array(jtype, dtype=np.int64, order="C")
        self.qoff = np.array(qoff, dtype=np.int64, order="C")
        self.uoff = np.array(uoff, dtype=np.int64, order="C")
        self.nb = self.parent.shape[0]
        self.nq = int(self.qoff[self.nb])
        self.nu = int(self.uoff[self.nb])
        self.jparam = np.array(jparam, dtype=np.float64, order="C").reshape(self.nb, 3)
        self.R_PF = np.array(R_PF, dtype=np.float64, order="C").reshape(self.nb, 3, 3)
        self.p_PF = np.array(p_PF, dtype=np.float64, order="C").reshape(self.nb, 3)
        self.R_BM = np.array(R_BM, dtype=np.float64, order="C").reshape(self.nb, 3, 3)
        self.p_BM = np.array(p_BM, dtype=np.float64, order="C").reshape(self.nb, 3)
        self.mass = np.array(mass, dtype=np.float64, order="C").reshape(self.nb)
        self.p_BC = np.array(p_BC, dtype=np.float64, order="C").reshape(self.nb, 3)
        self.I_B = np.array(I_B, dtype=np.float64, order="C").reshape(self.nb, 3, 3)
        self._fold_welds()
        self._set_function_joints(function_joints)
        self._set_jit_mobilizers(jit_mobilizers)
        self._set_armature(armature)
        dims = {"n": self.nb, "u": self.nu, "q": self.nq, "f": self.nfb}
        for name, code in _CACHE_ARRAYS.items():
            shape = tuple(dims[ch] if ch in dims else int(ch) for ch in code)
            setattr_fast = np.zeros(shape, dtype=np.float64)
            self._set(name, setattr_fast)
        self.R_GB[0] = np.eye(3)
        self.R_GF[0] = np.eye(3)
        self.R_FM[0] = np.eye(3)
        self._bind()

    cdef _fold_welds(self):
        # rpar and the composite mass properties of the sweeps (see rigid_composites), and the
        # frame flags of k_position; the tree's inputs are frozen from here on, so neither can go stale.
        cdef cnp.ndarray h = np.zeros((self.nb, 3))
        self.rpar = np.zeros(self.nb, dtype=np.int64)
        self.cmass = np.zeros(self.nb)
        self.cp_BC = np.zeros((self.nb, 3))
        self.cI_B = np.zeros((self.nb, 3, 3))
        rigid_composites(self.nb, _ip(self.parent), _ip(self.jtype), _dp(self.R_PF), _dp(self.p_PF),
                         _dp(self.R_BM), _dp(self.p_BM), _dp(self.mass), _dp(self.p_BC), _dp(self.I_B),
                         _ip(self.rpar), _dp(self.cmass), _dp(self.cp_BC), _dp(self.cI_B), _dp(h))
        # cfirst: the first composite k_mass_matrix adds into each body's (tip to base: the highest index)
        self.cfirst = np.zeros(self.nb, dtype=np.int64)
        for i in range(self.nb - 1, 0, -1):
            if self.jtype[i] != J_WELD and self.rpar[i] > 0 and self.cfirst[self.rpar[i]] == 0:
                self.cfirst[self.rpar[i]] = i
        one = np.eye(3)
        flags = []
        for i in range(self.nb):
            f = ((FF_R_PF_ONE if np.array_equal(self.R_PF[i], one) else 0)
                 | (FF_R_BM_ONE if np.array_equal(self.R_BM[i], one) else 0)
                 | (FF_P_BM_ZERO if not self.p_BM[i].any() else 0))
            code = _signed_permutation_code(self.R_PF[i])
            if code >= 0 and not f & FF_R_PF_ONE:
                f |= FF_R_PF_PERM | (code << FF_PF_CODE)
            code = _signed_permutation_code(self.R_BM[i].T)
            if code >= 0 and not f & FF_R_BM_ONE:
                f |= FF_R_BM_PERM | (code << FF_BM_CODE)
            flags.append(f)
        self.fflag = np.array(flags, dtype=np.int64)
        for a in (self.parent, self.jtype, self.qoff, self.uoff, self.jparam, self.R_PF, self.p_PF, self.R_BM,
                  self.p_BM, self.mass, self.p_BC, self.I_B, self.rpar, self.cfirst, self.fflag, self.cmass, self.cp_BC,
                  self.cI_B):
            a.flags.writeable = False

    cdef _set_function_joints(self, object function_joints):
        # function_joints = (table, fbrec (nb,), fbi (nfb, FB_ISTRIDE), fbd (nfb, FB_DSTRIDE)) or None,
        # checked here (fb_records_error) so that the kernels may read them unchecked
        cdef cnp.ndarray ent
        if function_joints is None:
            table, rec = None, np.full(self.nb, -1, dtype=np.int64)
            fi, fd = np.zeros((0, FB_ISTRIDE), dtype=np.int64), np.zeros((0, FB_DSTRIDE))
        else:
            table, rec, fi, fd = function_joints
            rec = np.array(rec, dtype=np.int64, order="C").reshape(self.nb)
            fi = np.array(fi, dtype=np.int64, order="C").reshape(-1, FB_ISTRIDE)
            fd = np.array(fd, dtype=np.float64, order="C").reshape(-1, FB_DSTRIDE)
            if fi.shape[0] != fd.shape[0]:
                raise ValueError(f"TreeKernels: {fi.shape[0]} integer and {fd.shape[0]} real FunctionBased records")
            if fi.shape[0] and not isinstance(table, FunctionTable):
                raise TypeError(f"TreeKernels: FunctionBased records need a FunctionTable, got {type(table).__name__}")
        ent = table.entries if table is not None else np.zeros((0, FN_STRIDE), dtype=np.int64)
        err = fb_records_error(self.nb, _ip(self.jtype), _ip(self.qoff), _ip(self.uoff), _ip(rec), fi.shape[0],
                               _ip(fi), _dp(fd), _ip(ent), ent.shape[0])
        if err is not None:
            raise ValueError(f"TreeKernels: {err}")
        for a in (rec, fi, fd):
            a.flags.writeable = False
        self.fn_table, self.fbrec, self.fbi, self.fbd = table, rec, fi, fd
        self.nfb = fi.shape[0]

    cdef _set_jit_mobilizers(self, object jm):
        if jm is None:
            if any(is_jit_joint(jt) for jt in self.jtype):
                raise ValueError("TreeKernels: jit mobilizers need their records (jit_mobilizers)")
        else:
            err = (<JitMobilizers?>jm).check(self.jtype, self.qoff, self.uoff)
            if err is not None:
                raise ValueError(f"TreeKernels: {err}")
        self.jit_mobilizers = jm

    @property
    def jit_mobilizer_failed(self):
        """The first body whose jit mobilizer kernel failed (or gave a non-finite value) in the last
        position and velocity sweeps, or -1."""
        return self.t.jm_bad

    cdef _set_armature(self, object armature):
        # checked here too (make_tree_kernels names the body): the kernels divide by D_i + armature
        a = np.zeros(self.nu) if armature is None else np.array(armature, dtype=np.float64, order="C").reshape(-1)
        if a.shape[0] != self.nu:
            raise ValueError(f"TreeKernels: armature needs {self.nu} values (one per mobility), got {a.shape[0]}")
        if not (np.isfinite(a).all() and (a >= 0.0).all()):
            raise ValueError("TreeKernels: armature values must be finite and >= 0")
        a.flags.writeable = False
        self.armature = a

    cdef _set(self, str name, object a):
        # Cython cdef attributes cannot be set by name with setattr
        if name == "q": self.q = a
        elif name == "u": self.u = a
        elif name == "R_FM": self.R_FM = a
        elif name == "p_FM": self.p_FM = a
        elif name == "H_FM": self.H_FM = a
        elif name == "qerr": self.qerr = a
        elif name == "R_GF": self.R_GF = a
        elif name == "p_GM": self.p_GM = a
        elif name == "R_GB": self.R_GB = a
        elif name == "p_GB": self.p_GB = a
        elif name == "p_GC": self.p_GC = a
        elif name == "S": self.S = a
        elif name == "I_O": self.I_O = a
        elif name == "P": self.P = a
        elif name == "Pa": self.Pa = a
        elif name == "U": self.U = a
        elif name == "Dinv": self.Dinv = a
        elif name == "V_FM": self.V_FM = a
        elif name == "HDotu_FM": self.HDotu_FM = a
        elif name == "qdot": self.qdot = a
        elif name == "V_O": self.V_O = a
        elif name == "V_GB": self.V_GB = a
        elif name == "c": self.c = a
        elif name == "b": self.b = a
        elif name == "A_bias_O": self.A_bias_O = a
        elif name == "A_bias": self.A_bias = a
        elif name == "udot": self.udot = a
        elif name == "qdotdot": self.qdotdot = a
        elif name == "A_O": self.A_O = a
        elif name == "A_GB": self.A_GB = a
        elif name == "_f": self._f = a
        elif name == "_g": self._g = a
        elif name == "_Ic": self._Ic = a
        elif name == "_F": self._F = a
        elif name == "_fbw": self._fbw = a
        else:
            raise KeyError(name)

    cdef _get(self, str name):
        if name.startswith("_"):
            return {"_f": self._f, "_g": self._g, "_Ic": self._Ic, "_F": self._F, "_fbw": self._fbw}[name]
        return getattr(self, name)

    cdef void _bind(self):
        cdef Tree* t = &self.t
        t.nb = self.nb; t.nu = self.nu; t.nq = self.nq
        t.parent = _ip(self.parent); t.jtype = _ip(self.jtype)
        t.qoff = _ip(self.qoff); t.uoff = _ip(self.uoff)
        t.jparam = _dp(self.jparam)
        t.R_PF = _dp(self.R_PF); t.p_PF = _dp(self.p_PF)
        t.R_BM = _dp(self.R_BM); t.p_BM = _dp(self.p_BM)
        t.mass = _dp(self.mass); t.p_BC = _dp(self.p_BC); t.I_B = _dp(self.I_B)
        t.rpar = _ip(self.rpar); t.cfirst = _ip(self.cfirst); t.fflag = _ip(self.fflag)
        t.cmass = _dp(self.cmass); t.cp_BC = _dp(self.cp_BC); t.cI_B = _dp(self.cI_B)
        t.arm = _dp(self.armature) if (<cnp.ndarray>self.armature).any() else NULL
        t.nfb = self.nfb
        t.fbrec = _ip(self.fbrec); t.fbi = _ip(self.fbi); t.fbd = _dp(self.fbd); t.fbw = _dp(self._fbw)
        t.fn_ent = _ip(self.fn_table.entries) if self.fn_table is not None else NULL
        t.fn_par = _dp(self.fn_table.params) if self.fn_table is not None else NULL
        t.jm = &(<JitMobilizers>self.jit_mobilizers).s if self.jit_mobilizers is not None else NULL
        t.jm_bad = -1
        t.q = _dp(self.q); t.u = _dp(self.u)
        t.R_FM = _dp(self.R_FM); t.p_FM = _dp(self.p_FM); t.H_FM = _dp(self.H_FM)
        t.qerr = _dp(self.qerr); t.R_GF = _dp(self.R_GF); t.p_GM = _dp(self.p_GM)
        t.R_GB = _dp(self.R_GB); t.p_GB = _dp(self.p_GB); t.p_GC = _dp(self.p_GC)
        t.S = _dp(self.S); t.I_O = _dp(self.I_O)
        t.P = _dp(self.P); t.Pa = _dp(self.Pa); t.U = _dp(self.U); t.Dinv = _dp(self.Dinv)
        t.V_FM = _dp(self.V_FM); t.HDotu_FM = _dp(self.HDotu_FM); t.qdot = _dp(self.qdot)
        t.V_O = _dp(self.V_O); t.V_GB = _dp(self.V_GB); t.c = _dp(self.c); t.b = _dp(self.b)
        t.Abias_O = _dp(self.A_bias_O); t.A_bias = _dp(self.A_bias)
        t.udot = _dp(self.udot); t.qdotdot = _dp(self.qdotdot)
        t.A_O = _dp(self.A_O); t.A_GB = _dp(self.A_GB)
        t.f = _dp(self._f); t.g = _dp(self._g); t.Ic = _dp(self._Ic)
        t.inputs = _dp(self._inputs) if self._inputs is not None else NULL
        t.ninputs = self._inputs.shape[0] if self._inputs is not None else 0
        # (z belongs to one State's evaluation: a copy or an unpickled workspace has none bound)
        t.z = NULL; t.zdot = NULL; t.nz = 0
        self._zrefs = None

    # -- copying ------------------------------------------------------------

    def copy(self):
        """An independent workspace with the same tree and a copy of every cache array."""
        cdef TreeKernels other = TreeKernels.__new__(TreeKernels)
        other.nb = self.nb; other.nu = self.nu; other.nq = self.nq
        # the tree's inputs and composites are read-only: shared
        other.parent = self.parent; other.jtype = self.jtype
        other.qoff = self.qoff; other.uoff = self.uoff
        other.jparam = self.jparam
        other.R_PF = self.R_PF; other.p_PF = self.p_PF
        other.R_BM = self.R_BM; other.p_BM = self.p_BM
        other.mass = self.mass; other.p_BC = self.p_BC; other.I_B = self.I_B
        other.rpar = self.rpar; other.cfirst = self.cfirst; other.fflag = self.fflag
        other.cmass = self.cmass; other.cp_BC = self.cp_BC; other.cI_B = self.cI_B
        other.fn_table = self.fn_table; other.fbrec = self.fbrec; other.fbi = self.fbi; other.fbd = self.fbd
        other.nfb = self.nfb
        other.jit_mobilizers = self.jit_mobilizers
        other.armature = self.armature
        # (one C-API copy per array, named one by one: the State's copy runs this per State)
        other.q = _dup(self.q); other.u = _dup(self.u)
        other.R_FM = _dup(self.R_FM); other.p_FM = _dup(self.p_FM); other.H_FM = _dup(self.H_FM)
        other.qerr = _dup(self.qerr); other.R_GF = _dup(self.R_GF); other.p_GM = _dup(self.p_GM)
        other.R_GB = _dup(self.R_GB); other.p_GB = _dup(self.p_GB); other.p_GC = _dup(self.p_GC)
        other.S = _dup(self.S); other.I_O = _dup(self.I_O)
        other.P = _dup(self.P); other.Pa = _dup(self.Pa); other.U = _dup(self.U); other.Dinv = _dup(self.Dinv)
        other.V_FM = _dup(self.V_FM); other.HDotu_FM = _dup(self.HDotu_FM); other.qdot = _dup(self.qdot)
        other.V_O = _dup(self.V_O); other.V_GB = _dup(self.V_GB); other.c = _dup(self.c); other.b = _dup(self.b)
        other.A_bias_O = _dup(self.A_bias_O); other.A_bias = _dup(self.A_bias)
        other.udot = _dup(self.udot); other.qdotdot = _dup(self.qdotdot)
        other.A_O = _dup(self.A_O); other.A_GB = _dup(self.A_GB)
        other._f = _dup(self._f); other._g = _dup(self._g); other._Ic = _dup(self._Ic); other._F = _dup(self._F)
        other._fbw = _dup(self._fbw)
        other._inputs = _dup(self._inputs) if self._inputs is not None else None
        other._bind()
        other.t.time = self.t.time
        other._abi_valid = self._abi_valid
        return other

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        # The tree inputs and every cache array, so that a realized State pickles with its results.
        # (the FunctionBased records as a fifth argument only when there are some, the jit mobilizers
        # as a sixth and the armature as a seventh only when there are some: a tree without them
        # pickles as before)
        fj = (self.fn_table, self.fbrec, self.fbi, self.fbd) if self.nfb else None
        jm = self.jit_mobilizers
        extra = ((fj, jm, self.armature) if self.t.arm != NULL else (fj, jm) if jm is not None
                 else (fj,) if self.nfb else ())
        return (_tree_kernels_from_arrays,
                ((self.nb, self.nu, self.nq), {name: getattr(self, name) for name in _TREE_INPUTS},
                 {name: self._get(name) for name in _CACHE_ARRAYS}, bool(self._abi_valid)) + extra)

    def set_inputs(self, double time, values):
        """The time and the inputs (controls) the next force evaluations read (copied): the State's,
        written by the elements that own them before they evaluate their sets (``values`` (n,))."""
        cdef cnp.ndarray v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        if not np.isfinite(v).all() or not np.isfinite(time):
            raise ValueError("TreeKernels.set_inputs: the time and the inputs must be finite")
        if self._inputs is None or (<cnp.ndarray>self._inputs).shape[0] != v.shape[0]:
            self._inputs = np.empty(v.shape[0])
            self.t.inputs = _dp(self._inputs)
            self.t.ninputs = v.shape[0]
        (<cnp.ndarray>self._inputs)[:] = v
        self.t.time = time

    def set_z(self, z, zdot):
        """Bind the auxiliary variables the next force evaluations read (``z`` (n,)) and the array
        their derivatives are written into (``zdot`` (n,), writable): a State's z and zdot, bound
        (not copied) by the elements with state variables before their sets run. ``None, None``
        unbinds them."""
        cdef Py_ssize_t n
        if z is None and zdot is None:
            self.t.z = NULL; self.t.zdot = NULL; self.t.nz = 0
            self._zrefs = None
            return
        n = z.shape[0] if isinstance(z, cnp.ndarray) and z.ndim == 1 else -1
        if n < 0 or not _is_f64_vector(z, n, False) or not _is_f64_vector(zdot, n, True):
            raise ValueError("TreeKernels.set_z: expected C-contiguous float64 vectors z and zdot of one length, "
                             "zdot writable")
        self._zrefs = (z, zdot)
        self.t.z = _dp(z) if n else NULL
        self.t.zdot = _dp(zdot) if n else NULL
        self.t.nz = n

    # -- stages ---------------------------------------------------------------

    def realize_position(self, const double[::1] q=None):
        """Position kinematics, spatial and articulated inertias (q only).

        Copies ``q`` (nq,) into ``self.q`` when given, else uses ``self.q``.
        Fills R_FM, p_FM, H_FM (built-in joints), qerr, R_GF, p_GM, R_GB, p_GB,
        p_GC, S, I_O. The articulated inertias (P, Pa, U, Dinv) are marked
        stale and rebuilt on first use (or by :meth:`realize_articulated`).
        A Weld body's I_O (and P) stay zero: its mass is folded into its root's
        (``cmass``, ``cp_BC``, ``cI_B``; ``rpar`` the root of each parent).
        Returns whether every q is finite (the caller names a non-finite one).
        """
        if q is not None and self.nq > 0:
            memcpy(self.t.q, &q[0], self.nq * sizeof(double))
        with nogil:
            k_position(&self.t)
        self._abi_valid = False
        return self.nq == 0 or first_non_finite_at(self.t.q, self.nq) < 0

    def realize_articulated(self):
        """Articulated-body inertias P, Pa, U, Dinv (q only; needs realize_position).

        Called automatically by forward_dynamics and multiply_by_m_inv when
        stale; depends only on q, so it survives a change of time or u.
        """
        with nogil:
            k_articulated(&self.t)
        self._abi_valid = True

    @property
    def articulated_valid(self):
        """True when P, Pa, U, Dinv match the last realize_position."""
        return bool(self._abi_valid)

    def realize_velocity(self, const double[::1] u=None):
        """Velocity kinematics and the velocity-dependent bias terms.

        Copies ``u`` (nu,) into ``self.u`` when given. Needs realize_position.
        Fills V_FM, HDotu_FM and qdot (built-in joints), V_O, V_GB, c, b,
        A_bias_O, A_bias.
        """
        if u is not None and self.nu > 0:
            memcpy(self.t.u, &u[0], self.nu * sizeof(double))
        with nogil:
            k_velocity(&self.t)

    def forward_dynamics(self, const double[::1] mobility_forces,
                         const double[:, :, ::1] body_forces):
        """Articulated-body accelerations (no constraints).

        Needs realize_velocity. Fills udot, A_O, A_GB and qdotdot (and the
        articulated inertias first if they are stale).
        """
        cdef const double* tau = &mobility_forces[0] if self.nu > 0 else NULL
        if not self._abi_valid:
            self.realize_articulated()
        with nogil:
            k_forward(&self.t, tau, &body_forces[0, 0, 0])

    def realize_velocity_into(self, cnp.ndarray u, cnp.ndarray qdot_out):
        """realize_velocity(u), then qdot copied into ``qdot_out`` (nq,): one call for the
        matter's Velocity stage (the arrays are checked by size, dtype and layout only: a time
        loop calls this once per evaluation). Returns whether every u is finite."""
        cdef double* up = _f64_data(u, self.nu, False, "u")
        cdef double* qp = _f64_data(qdot_out, self.nq, True, "qdot_out")
        if self.nu > 0:
            memcpy(self.t.u, up, self.nu * sizeof(double))
        with nogil:
            k_velocity(&self.t)
        if self.nq > 0:
            memcpy(qp, self.t.qdot, self.nq * sizeof(double))
        return self.nu == 0 or first_non_finite_at(self.t.u, self.nu) < 0

    def forward_dynamics_into(self, cnp.ndarray mobility_forces, cnp.ndarray body_forces, cnp.ndarray udot_out,
                              cnp.ndarray qdotdot_out, cnp.ndarray A_GB_out):
        """forward_dynamics, then udot, qdotdot and A_GB copied out, in one call (the matter's
        Acceleration stage of a tree without constraints or Custom mobilizers). Returns whether
        every udot is finite (nothing is copied when one is not)."""
        cdef bint finite
        cdef double* tau = _f64_data(mobility_forces, self.nu, False, "mobility_forces")
        cdef double* F = _f64_data(body_forces, 6 * self.nb, False, "body_forces")
        cdef double* ud = _f64_data(udot_out, self.nu, True, "udot_out")
        cdef double* qdd = _f64_data(qdotdot_out, self.nq, True, "qdotdot_out")
        cdef double* A = _f64_data(A_GB_out, 6 * self.nb, True, "A_GB_out")
        if not self._abi_valid:
            self.realize_articulated()
        with nogil:
            k_forward(&self.t, tau if self.nu > 0 else NULL, F)
            finite = first_non_finite_at(self.t.udot, self.nu) < 0
            if finite:
                if self.nu > 0:
                    memcpy(ud, self.t.udot, self.nu * sizeof(double))
                if self.nq > 0:
                    memcpy(qdd, self.t.qdotdot, self.nq * sizeof(double))
                memcpy(A, self.t.A_GB, 6 * self.nb * sizeof(double))
        return finite

    def inverse_dynamics(self, const double[::1] udot, const double[::1] mobility_forces,
                         const double[:, :, ::1] body_forces, double[::1] out):
        """out = M udot + bias - mobility_forces - J^T body_forces (RNEA)."""
        if self.nu == 0:
            return
        with nogil:
            k_inverse(&self.t, &udot[0], &mobility_forces[0], &body_forces[0, 0, 0], &out[0])

    def inverse_dynamics_new(self, object udot, object mobility_forces, object body_forces):
        """The residual of ``inverse_dynamics`` as a new (nu,) array, or None when an argument is
        not already a C-contiguous float64 array of its shape ((nu,), (nu,), (nb, 2, 3)) with
        finite entries; the caller then converts it or names what is wrong. One call, checks in C."""
        cdef cnp.npy_intp n = self.nu
        cdef cnp.ndarray out
        if not (_is_finite_f64(udot, 1, self.nu) and _is_finite_f64(mobility_forces, 1, self.nu)
                and _is_finite_f64(body_forces, 3, self.nb)):
            return None
        out = cnp.PyArray_EMPTY(1, &n, cnp.NPY_DOUBLE, 0)
        if self.nu > 0:
            with nogil:
                k_inverse(&self.t, <const double*>cnp.PyArray_DATA(<cnp.ndarray>udot),
                          <const double*>cnp.PyArray_DATA(<cnp.ndarray>mobility_forces),
                          <const double*>cnp.PyArray_DATA(<cnp.ndarray>body_forces),
                          <double*>cnp.PyArray_DATA(out))
        return out

    def is_finite_vector(self, object x):
        """Whether x is a C-contiguous float64 array of shape (nu,) with finite entries."""
        return _is_finite_f64(x, 1, self.nu)

    def is_finite_body_forces(self, object F):
        """Whether F is a C-contiguous float64 array of shape (nb, 2, 3) with finite entries."""
        return _is_finite_f64(F, 3, self.nb)

    def mass_matrix_new(self):
        """M(q) (nu, nu) as a new array by the composite-body method. Needs realize_position."""
        cdef cnp.npy_intp dims[2]
        dims[0] = self.nu
        dims[1] = self.nu
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, dims, cnp.NPY_DOUBLE, 0)
        if self.nu > 0:
            with nogil:
                k_mass_matrix(&self.t, <double*>cnp.PyArray_DATA(out))
        return out

    def mass_matrix(self, double[:, ::1] out):
        """out (nu, nu) = M(q) by the composite-body method. Needs realize_position."""
        if self.nu == 0:
            return
        with nogil:
            k_mass_matrix(&self.t, &out[0, 0])

    def multiply_by_m(self, const double[::1] x, double[::1] out):
        """out = M x in O(n). Needs realize_position."""
        if self.nu == 0:
            return
        with nogil:
            k_multiply_by_m(&self.t, &x[0], &out[0])

    def multiply_by_m_inv(self, const double[::1] v, double[::1] out):
        """out = M^-1 v in O(n) (reuses the articulated factorization)."""
        if self.nu == 0:
            return
        if not self._abi_valid:
            self.realize_articulated()
        with nogil:
            k_multiply_by_m_inv(&self.t, &v[0], &out[0])

    def constraint_operators(self, const double[:, ::1] G, double[:, ::1] YT, double[:, ::1] A):
        """YT (m, nu) = (M^-1 G^T)^T row by row and A (m, m) = G M^-1 G^T, in one call.

        A is computed on its lower triangle (A[i, j] = G[i] . YT[j], j <= i, by dot_n) and
        mirrored, so it is exactly symmetric. Needs realize_position.
        Cost: m O(n) sweeps and m^2 nu / 2 multiplications.
        """
        cdef Py_ssize_t m = G.shape[0], nu = self.nu
        if G.shape[1] != nu or YT.shape[0] != m or YT.shape[1] != nu or A.shape[0] != m or A.shape[1] != m:
            raise ValueError(f"constraint_operators: G, YT must be ({m}, {nu}) and A ({m}, {m})")
        if m == 0:
            return
        if nu == 0:
            A[:, :] = 0.0
            return
        if not self._abi_valid:
            self.realize_articulated()
        with nogil:
            constraint_operators_t(&self.t, m, &G[0, 0], &YT[0, 0], &A[0, 0])

    def frame_jacobian_transpose_rows(self, const idx_t[::1] bodies, const double[:, ::1] stations,
                                      const double[:, :, ::1] F, const idx_t[::1] rows, const idx_t[::1] starts,
                                      const idx_t[::1] stops, double[:, ::1] out):
        """out[rows[k]] = frame_jacobian_transpose of the entries starts[k]:stops[k], for every k:
        the rows of G from a force map in one call (the rows named are overwritten)."""
        cdef Py_ssize_t k, nr = rows.shape[0], ne = bodies.shape[0], m = out.shape[0]
        if starts.shape[0] != nr or stops.shape[0] != nr or out.shape[1] != self.nu:
            raise ValueError("frame_jacobian_transpose_rows: rows, starts, stops and out do not match")
        for k in range(nr):
            if not (0 <= rows[k] < m and 0 <= starts[k] <= stops[k] <= ne):
                raise ValueError(f"frame_jacobian_transpose_rows: row {k} is out of range")
        if stations.shape[0] != ne or F.shape[0] != ne:
            raise ValueError("frame_jacobian_transpose_rows: bodies, stations and F differ in length")
        for k in range(ne):
            if not 0 <= bodies[k] < self.nb:
                raise ValueError(f"frame_jacobian_transpose_rows: entry {k}: no body {bodies[k]}")
        if self.nu == 0:
            return
        for k in range(nr):
            self._jt_entries(bodies, stations, F, starts[k], stops[k], &out[rows[k], 0])

    cdef void _jt_entries(self, const idx_t[::1] bodies, const double[:, ::1] stations, const double[:, :, ::1] F,
                          Py_ssize_t j0, Py_ssize_t j1, double* out) noexcept:
        cdef double* Fb = _dp(self._F)
        with nogil:
            jt_entries_t(&self.t, &bodies[0] if j1 > j0 else NULL, &stations[0, 0] if j1 > j0 else NULL,
                         &F[0, 0, 0] if j1 > j0 else NULL, j0, j1, Fb, out)

    def jacobian(self, const double[::1] x, double[:, :, ::1] out):
        """out (nb,2,3) = J x: body spatial velocities (at body origins) for speeds x."""
        cdef const double* xp = &x[0] if self.nu > 0 else NULL
        with nogil:
            k_jacobian(&self.t, xp, &out[0, 0, 0])

    def jacobian_transpose(self, const double[:, :, ::1] F, double[::1] out):
        """out (nu,) = J^T F for body forces F (nb,2,3) (torque about, force at the origin)."""
        if self.nu == 0:
            return
        with nogil:
            k_jacobian_transpose(&self.t, &F[0, 0, 0], &out[0])

    def frame_jacobian(self, const idx_t[::1] bodies, const double[:, ::1] stations,
                       const double[::1] x, double[:, :, ::1] out):
        """out (k,2,3): spatial velocity (w, velocity of the station) of each
        frame whose origin is ``stations[j]`` (in its body's frame) on body
        ``bodies[j]``, for speeds x."""
        cdef Py_ssize_t nk = bodies.shape[0]
        cdef const double* xp = &x[0] if self.nu > 0 else NULL
        cdef double* V = _dp(self._F)
        if nk == 0:
            return
        with nogil:
            frame_jacobian_t(&self.t, nk, &bodies[0], &stations[0, 0], xp, V, &out[0, 0, 0])

    def frame_jacobian_transpose(self, const idx_t[::1] bodies, const double[:, ::1] stations,
                                 const double[:, :, ::1] F, double[::1] out):
        """out (nu,) = sum_j J_j^T F_j for spatial forces F (k,2,3) (torque, force
        applied at the station) on the frames of :meth:`frame_jacobian`."""
        if self.nu == 0:
            return
        self._jt_entries(bodies, stations, F, 0, bodies.shape[0], &out[0])

    def frame_bias(self, const idx_t[::1] bodies, const double[:, ::1] stations,
                   double[:, :, ::1] out):
        """out (k,2,3) = JDot u for the frames of :meth:`frame_jacobian`: the
        angular acceleration and the station acceleration when udot = 0.
        Needs realize_velocity."""
        if bodies.shape[0]:
            with nogil:
                frame_bias_t(&self.t, bodies.shape[0], &bodies[0], &stations[0, 0], &out[0, 0, 0])

    def multiply_by_n(self, bint transpose, const double[::1] x, double[::1] out):
        """out = N x (x (nu,), out (nq,)) or N^T x (x (nq,), out (nu,)).

        Rows of Custom bodies are left untouched. Needs realize_position (uses self.q).
        """
        cdef Py_ssize_t i
        cdef int jt
        cdef const double* xp = &x[0] if x.shape[0] > 0 else NULL
        cdef double* op = &out[0] if out.shape[0] > 0 else NULL
        cdef Py_ssize_t bad = self.t.jm_bad
        with nogil:
            for i in range(1, self.nb):
                jt = <int>self.t.jtype[i]
                if jt == J_CUSTOM:
                    continue
                if transpose:
                    tree_nT_mul(&self.t, i, self.t.q + self.t.qoff[i], xp + self.t.qoff[i],
                                 op + self.t.uoff[i])
                else:
                    tree_n_mul(&self.t, i, self.t.q + self.t.qoff[i], xp + self.t.uoff[i],
                                op + self.t.qoff[i])
        # (a jit mobilizer's failed N kernel leaves NaN rows, which the caller explains; the sweeps' record
        # of failures is theirs)
        self.t.jm_bad = bad

    def subtract_correction(self, const double[::1] du, const double[::1] udot0, const double[:, :, ::1] A0,
                            const double[::1] qdd0, double[::1] udot, double[:, :, ::1] A, double[::1] qdd):
        """The constrained accelerations from the unconstrained ones and the correction du = Y lambda:
        udot = udot0 - du, A = A0 - J du, qdd = qdd0 - N du (what three numpy subtractions after
        ``jacobian`` and ``multiply_by_n`` give, in one call; the rows of Custom bodies in qdd are
        qdd0 minus what qdd held). Needs realize_position."""
        cdef Py_ssize_t i, nu = self.nu, nq = self.nq, nb = self.nb
        if (du.shape[0] != nu or udot0.shape[0] != nu or udot.shape[0] != nu or qdd0.shape[0] != nq
                or qdd.shape[0] != nq or A0.shape[0] != nb or A.shape[0] != nb):
            raise ValueError("subtract_correction: an array's size does not match the tree")
        with nogil:
            for i in range(nu):
                udot[i] = udot0[i] - du[i]
            if nu:
                k_jacobian(&self.t, &du[0], &A[0, 0, 0])
            else:
                memset(&A[0, 0, 0], 0, 6 * nb * sizeof(double))
            for i in range(6 * nb):
                (&A[0, 0, 0])[i] = (&A0[0, 0, 0])[i] - (&A[0, 0, 0])[i]
            for i in range(1, nb):
                if self.t.jtype[i] != J_CUSTOM:
                    tree_n_mul(&self.t, i, self.t.q + self.t.qoff[i], &du[0] + self.t.uoff[i],
                                &qdd[0] + self.t.qoff[i])
            for i in range(nq):
                qdd[i] = qdd0[i] - qdd[i]

    def multiply_by_n_inv(self, bint transpose, const double[::1] x, double[::1] out):
        """out = N^-1 x (x (nq,), out (nu,)) or N^-T x (x (nu,), out (nq,)).

        For quaternions N^-1 is Simbody's unnormalized 2 E(q)^T. Rows of Custom
        bodies are left untouched.
        """
        cdef Py_ssize_t i
        cdef int jt
        cdef const double* xp = &x[0] if x.shape[0] > 0 else NULL
        cdef double* op = &out[0] if out.shape[0] > 0 else NULL
        cdef Py_ssize_t bad = self.t.jm_bad
        with nogil:
            for i in range(1, self.nb):
                jt = <int>self.t.jtype[i]
                if jt == J_CUSTOM:
                    continue
                if transpose:
                    tree_ninvT_mul(&self.t, i, self.t.q + self.t.qoff[i], xp + self.t.uoff[i],
                                    op + self.t.qoff[i])
                else:
                    tree_ninv_mul(&self.t, i, self.t.q + self.t.qoff[i], xp + self.t.qoff[i],
                                   op + self.t.uoff[i])
        # (a jit mobilizer's failed N kernel leaves NaN rows, which the caller explains; the sweeps' record
        # of failures is theirs)
        self.t.jm_bad = bad

    def kinetic_energy(self):
        """1/2 u^T M u from the realized velocities (sum of body energies, and of the rotors' 1/2 a u^2)."""
        cdef Py_ssize_t i
        cdef double e = 0.0
        cdef double h[6]
        with nogil:
            for i in range(1, self.nb):
                mat66_vec(self.t.I_O + 36 * i, self.t.V_O + 6 * i, h)
                e += dot6(self.t.V_O + 6 * i, h)
            if self.t.arm != NULL:
                for i in range(self.nu):
                    e += self.t.arm[i] * self.t.u[i] * self.t.u[i]
        return 0.5 * e


def _tree_kernels_from_arrays(tuple dims, dict inputs, dict cache, bint abi_valid, function_joints=None,
                              jit_mobilizers=None, armature=None):
    """Rebuild a pickled TreeKernels: its arrays as they were, pointers bound to them anew."""
    cdef TreeKernels ws = TreeKernels.__new__(TreeKernels)
    ws.nb, ws.nu, ws.nq = dims
    ws.parent = np.ascontiguousarray(inputs["parent"], dtype=np.int64)
    ws.jtype = np.ascontiguousarray(inputs["jtype"], dtype=np.int64)
    ws.qoff = np.ascontiguousarray(inputs["qoff"], dtype=np.int64)
    ws.uoff = np.ascontiguousarray(inputs["uoff"], dtype=np.int64)
    ws.jparam = np.ascontiguousarray(inputs["jparam"], dtype=np.float64)
    ws.R_PF = np.ascontiguousarray(inputs["R_PF"], dtype=np.float64)
    ws.p_PF = np.ascontiguousarray(inputs["p_PF"], dtype=np.float64)
    ws.R_BM = np.ascontiguousarray(inputs["R_BM"], dtype=np.float64)
    ws.p_BM = np.ascontiguousarray(inputs["p_BM"], dtype=np.float64)
    ws.mass = np.ascontiguousarray(inputs["mass"], dtype=np.float64)
    ws.p_BC = np.ascontiguousarray(inputs["p_BC"], dtype=np.float64)
    ws.I_B = np.ascontiguousarray(inputs["I_B"], dtype=np.float64)
    ws._fold_welds()
    ws._set_function_joints(function_joints)
    ws._set_jit_mobilizers(jit_mobilizers)
    ws._set_armature(armature)
    ws._fbw = np.zeros((ws.nfb, 5, 9))  # (a pickle of an older version has none: no records either)
    for name, a in cache.items():
        if name in _CACHE_ARRAYS:  # (a pickle of an older version may hold arrays no longer kept: H)
            ws._set(name, np.array(a, dtype=np.float64, order="C"))
    ws._bind()
    ws._abi_valid = abi_valid
    return ws
