# The O(n) sweeps over a frozen tree of mobilized bodies, and the per-State
# workspace (TreeKernels) that owns their cache arrays.
#
# Conventions (docs/api_contract.md): body 0 is Ground, parent[i] < i. X_GB = X_GP X_PF
# X_FM(q) ~X_BM. Public spatial quantities follow Simbody (V_GB = angular
# velocity and velocity of the body ORIGIN, in Ground; body forces are torque
# about the body origin and force at it, in Ground). Internally every spatial
# quantity is expressed in Ground about the Ground ORIGIN (suffix _O), so that
# no shifting or rotating is needed between a body and its parent; see
# core/spatial.pxi.
#
# FunctionBased mobilizers (jtype J_FUNCTION + n) are a compiled kind: their
# kinematics come from their function records (core/function_joint.pxi).
#
# Custom mobilizers (jtype == J_CUSTOM): the kernels skip the joint library for
# those bodies and use whatever Python wrote into their rows of R_FM, p_FM and
# H_FM (before realize_position), of HDotu_FM and qdot (before realize_velocity)
# and of qdotdot (after forward_dynamics). Everything else (the sweeps) treats
# them like any other body.

cimport numpy as cnp
import numpy as np

cnp.import_array()

ctypedef cnp.int64_t idx_t


cdef struct Tree:
    Py_ssize_t nb, nu, nq
    # a scratch tree (batch items, the compiled loop): it skips the caches that
    # only a State's readers use (p_GC, the station-bias accelerations, A_GB)
    bint lean
    # frozen topology and instance data
    const idx_t* parent
    const idx_t* jtype
    const idx_t* qoff
    const idx_t* uoff
    const double* jparam
    const double* R_PF
    const double* p_PF
    const double* R_BM
    const double* p_BM
    const double* mass
    const double* p_BC
    const double* I_B
    # Weld bodies merged into their nearest non-Weld ancestor (their "root"):
    # rpar[i] = root of parent[i] (0 = Ground); cmass, cp_BC, cI_B = each
    # non-Weld body's mass properties with its welded descendants folded in
    # (exact copies of its own where it has none). See rigid_composites.
    const idx_t* rpar
    # cfirst[i]: the non-Weld body whose composite is added into i's first (the
    # highest-index one whose rpar is i; a tip-to-base sweep meets it first), or 0
    const idx_t* cfirst
    const idx_t* fflag  # FF_* bits: which constant frame products are identities
    const double* cmass
    const double* cp_BC
    const double* cI_B
    # armature (rotor inertia) of each mobility, (nu,): added to the diagonal of M, so to D_i of
    # the articulated sweep, to the inverse dynamics (arm udot) and to the M products; NULL when
    # every one is zero, so that such a tree's sweeps run exactly as without (bitwise)
    const double* arm
    # FunctionBased mobilizers (jtype J_FUNCTION + n, core/function_joint.pxi): fbrec[i] = the record
    # of body i (-1 for other joints); record r is fbi[r] (FB_ISTRIDE int64) and fbd[r] (FB_DSTRIDE
    # doubles), frozen, and fbw[r] (FB_WSTRIDE doubles), what the position sweep leaves for the
    # velocity sweep (a cache, like H_FM); the functions are entries of one flat table (fn_ent,
    # fn_par: a FunctionTable's arrays, core/functions.pxi)
    Py_ssize_t nfb
    const idx_t* fbrec
    const idx_t* fbi
    const double* fbd
    double* fbw
    const idx_t* fn_ent
    const double* fn_par
    # jit mobilizers (jtype J_JIT + n, core/jit_mobilizers.pxi): a JitMobTable or NULL, and the first
    # body whose kernel failed in the last sweep (-1: none; cleared by k_position and k_velocity)
    const void* jm
    Py_ssize_t jm_bad
    # the evaluation's time and inputs (the State's controls that force kinds read, e.g. FK_ACTUATOR's;
    # ninputs of them): per workspace or per scratch tree, set before each use, never by a kernel
    double time
    const double* inputs
    Py_ssize_t ninputs
    # the evaluation's auxiliary variables z (read) and their derivatives zdot (written by the force
    # kinds with state variables, e.g. a muscle's activation and fiber length; nz of each): the
    # State's z and zdot when a State is realized, the step's y and derivative rows in the compiled
    # time loop; NULL and 0 until given, never kept past the evaluation that gave them
    const double* z
    double* zdot
    Py_ssize_t nz
    # state copies
    double* q
    double* u
    # position stage
    double* R_FM
    double* p_FM
    double* H_FM
    double* qerr
    double* R_GF
    double* p_GM
    double* R_GB
    double* p_GB
    double* p_GC
    double* S
    double* I_O
    double* P
    double* Pa
    double* U
    double* Dinv
    # velocity stage
    double* V_FM
    double* HDotu_FM
    double* qdot
    double* V_O
    double* V_GB
    double* c
    double* b
    double* Abias_O
    double* A_bias
    # acceleration stage
    double* udot
    double* qdotdot
    double* A_O
    double* A_GB
    # scratch
    double* f
    double* g
    double* Ic


cdef enum:
    FF_R_PF_ONE = 1    # R_PF is the identity
    FF_R_BM_ONE = 2    # R_BM is the identity
    FF_P_BM_ZERO = 4   # p_BM is zero
    FF_R_PF_PERM = 8   # R_PF is a signed permutation (its code in bits 8-16)
    FF_R_BM_PERM = 16  # R_BM is one (the code of R_BM^T in bits 17-25)
    FF_PF_CODE = 8     # bit offsets of the two codes
    FF_BM_CODE = 17


cdef inline void mat33_mul_signed_perm(const double* A, idx_t code, double* out) noexcept nogil:
    # out = A P for a signed permutation P whose column b holds s_b at row k_b,
    # coded in 3 bits per column (k_b | (s_b < 0) << 2): column b of out is
    # s_b times column k_b of A. The general product gives the same numbers,
    # as every other term is a zero (up to the sign of a zero result).
    cdef int b, k, r
    cdef int cb
    for b in range(3):
        cb = <int>((code >> (3 * b)) & 7)
        k = cb & 3
        if cb & 4:
            for r in range(3):
                out[3 * r + b] = -A[3 * r + k]
        else:
            for r in range(3):
                out[3 * r + b] = A[3 * r + k]


# ---------------------------------------------------------------------------
# Weld bodies folded into their roots (once per workspace)
# ---------------------------------------------------------------------------

cdef void rigid_composites(Py_ssize_t nb, const idx_t* parent, const idx_t* jtype, const double* R_PF,
                           const double* p_PF, const double* R_BM, const double* p_BM, const double* mass,
                           const double* p_BC, const double* I_B, idx_t* rpar, double* cmass,
                           double* cp_BC, double* cI_B, double* h) noexcept nogil:
    # A Weld body moves with its parent, so the dynamics sweeps need only its
    # root (the nearest non-Weld ancestor) with the Weld's mass folded in: a URDF
    # robot's fixed-joint links (sensors, flanges, feet) then cost kinematics
    # only. Weld bodies keep zero spatial inertia; the forces on them are moved
    # to their root (exact in origin form: a spatial force about the Ground
    # origin is the same vector on any rigidly attached body).
    #
    # Tip to base, fold each Weld body W (with what is already folded into it)
    # into its parent P, in P's frame: X_PW = X_PF ~X_BM (X_FM = 1 for a Weld);
    #   m_P += m_W;  h_P += m_W p_PW + R_PW h_W   (first moments about origins)
    #   J_P += R_PW J_W R_PW^T + m_W (|p|^2 1 - p p^T) + 2 (p.g) 1 - p g^T - g p^T
    # with p = p_PW, g = R_PW h_W (the inertia J about the body origin, shifted
    # by p without dividing by a mass that may be zero). Bodies with nothing
    # folded in keep their own properties bit for bit. h: scratch (nb, 3).
    cdef Py_ssize_t i, pa, k, a, bb
    cdef double R[9]
    cdef double tmp9[9]
    cdef double J[9]
    cdef double pw[3]
    cdef double g[3]
    cdef double m, pg, pp
    cdef bint folded
    for i in range(nb):
        cmass[i] = mass[i]
        for k in range(3):
            cp_BC[3 * i + k] = p_BC[3 * i + k]
            h[3 * i + k] = mass[i] * p_BC[3 * i + k]
        for k in range(9):
            cI_B[9 * i + k] = I_B[9 * i + k]
    rpar[0] = 0
    for i in range(1, nb):
        pa = parent[i]
        rpar[i] = rpar[pa] if (pa > 0 and jtype[pa] == J_WELD) else pa
    for i in range(nb - 1, 0, -1):
        if jtype[i] != J_WELD or parent[i] == 0:
            continue
        pa = parent[i]
        mat33_mul_T(R_PF + 9 * i, R_BM + 9 * i, R)
        mat33_vec(R, p_BM + 3 * i, pw)
        for k in range(3):
            pw[k] = p_PF[3 * i + k] - pw[k]
        mat33_vec(R, h + 3 * i, g)
        m = cmass[i]
        mat33_mul(R, cI_B + 9 * i, tmp9)
        mat33_mul_T(tmp9, R, J)
        pp = dot3(pw, pw)
        pg = dot3(pw, g)
        for a in range(3):
            for bb in range(3):
                J[3 * a + bb] -= m * pw[a] * pw[bb] + pw[a] * g[bb] + g[a] * pw[bb]
            J[4 * a] += m * pp + 2.0 * pg
        cmass[pa] += m
        for k in range(3):
            h[3 * pa + k] += m * pw[k] + g[k]
        for k in range(9):
            cI_B[9 * pa + k] += J[k]
    for i in range(1, nb):
        if jtype[i] == J_WELD:
            continue
        folded = False
        for k in range(3):
            folded = folded or h[3 * i + k] != mass[i] * p_BC[3 * i + k]
        folded = folded or cmass[i] != mass[i]
        if folded and cmass[i] > 0.0:
            for k in range(3):
                cp_BC[3 * i + k] = h[3 * i + k] / cmass[i]


# ---------------------------------------------------------------------------
# Position stage
# ---------------------------------------------------------------------------

cdef inline void _frame_f(const Tree* t, Py_ssize_t i, Py_ssize_t pa, idx_t ff, double* R_GF,
                          double* p_GF) noexcept nogil:
    # X_GF = X_GP X_PF, the product with an identity R_PF skipped and with a
    # signed permutation taken by copying and negating (exactly what they give)
    cdef Py_ssize_t k
    if ff & FF_R_PF_ONE:
        memcpy(R_GF, t.R_GB + 9 * pa, 9 * sizeof(double))
    elif ff & FF_R_PF_PERM:
        mat33_mul_signed_perm(t.R_GB + 9 * pa, ff >> FF_PF_CODE, R_GF)
    else:
        mat33_mul(t.R_GB + 9 * pa, t.R_PF + 9 * i, R_GF)
    mat33_vec(t.R_GB + 9 * pa, t.p_PF + 3 * i, p_GF)
    for k in range(3):
        p_GF[k] += t.p_GB[3 * pa + k]


cdef inline void _frame_b(Tree* t, Py_ssize_t i, idx_t ff, const double* R_GM, const double* p_GM) noexcept nogil:
    # X_GB = X_GM ~X_BM (an identity R_BM or a zero p_BM skipped, a signed
    # permutation R_BM copied), and the mass center p_GC = p_GB + R_GB p_BC
    # (every body's own; read by the State's users and the gravity energy, not
    # by a lean tree's sweeps)
    cdef double tmp3[3]
    cdef double* Ri = t.R_GB + 9 * i
    cdef Py_ssize_t k
    if ff & FF_R_BM_ONE:
        memcpy(Ri, R_GM, 9 * sizeof(double))
    elif ff & FF_R_BM_PERM:
        mat33_mul_signed_perm(R_GM, ff >> FF_BM_CODE, Ri)
    else:
        mat33_mul_T(R_GM, t.R_BM + 9 * i, Ri)
    if ff & FF_P_BM_ZERO:
        memcpy(t.p_GB + 3 * i, p_GM, 3 * sizeof(double))
    else:
        mat33_vec(Ri, t.p_BM + 3 * i, tmp3)
        for k in range(3):
            t.p_GB[3 * i + k] = p_GM[k] - tmp3[k]
    if not t.lean:
        mat33_vec(Ri, t.p_BC + 3 * i, tmp3)
        for k in range(3):
            t.p_GC[3 * i + k] = t.p_GB[3 * i + k] + tmp3[k]


cdef inline void _weld_position(Tree* t, Py_ssize_t i, Py_ssize_t pa, idx_t ff) noexcept nogil:
    # A Weld body's frames (X_FM = 1: M = F), without the joint dispatch, the
    # mobility columns (none) and I_O, which stays 0 (its mass is in its
    # root's composite); a lean tree keeps only R_GB and p_GB
    cdef double R_GF[9]
    cdef double p_GF[3]
    cdef double* Rf = R_GF
    cdef double* pi = p_GF
    if not t.lean:  # the State's caches (a lean tree's callers read R_GB and p_GB only)
        Rf = t.R_GF + 9 * i
        pi = t.p_GM + 3 * i
        set_identity33(t.R_FM + 9 * i)  # what joint_position gives a Weld (read by the State's X_FM)
        t.p_FM[3 * i] = 0.0; t.p_FM[3 * i + 1] = 0.0; t.p_FM[3 * i + 2] = 0.0
        t.qerr[i] = 0.0
    _frame_f(t, i, pa, ff, Rf, pi)
    _frame_b(t, i, ff, Rf, pi)


cdef void k_position(Tree* t) noexcept nogil:
    # Cost: per body 3 rotation products, 2 for the inertia, ~40 flops per
    # mobility column. O(n).
    cdef Py_ssize_t i, pa, k, a, bb, nd, u0
    cdef int jt
    cdef double R_GM[9]
    cdef double tmp9[9]
    cdef double I_G[9]
    cdef double p_GF[3]
    cdef double d[3]
    cdef double cc[3]
    cdef double m, e
    cdef double* Ri
    cdef double* Rf
    cdef const double* Rm
    cdef double* pi
    cdef double* s
    cdef double* h
    cdef double* c
    cdef idx_t ff
    # base to tip: X_GF = X_GP X_PF;  X_GM = X_GF X_FM(q);  X_GB = X_GM ~X_BM
    #              S_k = (R_GF hw_k, R_GF hv_k + p_GM x R_GF hw_k)   (at the origin)
    #              I_O = spatial inertia about the origin
    t.jm_bad = -1
    for i in range(1, t.nb):
        pa = t.parent[i]
        jt = <int>t.jtype[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        ff = t.fflag[i]
        if jt == J_WELD:
            _weld_position(t, i, pa, ff)
            continue
        if is_function_joint(jt):
            fb_position(t, i)
        elif is_jit_joint(jt):
            jm_position(t, i)
        elif jt != J_CUSTOM:
            joint_position(jt, t.q + t.qoff[i], t.jparam + 3 * i, t.R_FM + 9 * i,
                           t.p_FM + 3 * i, t.H_FM + 6 * u0, t.qerr + i)
        # The products with a constant identity (R_PF, R_BM) or zero (p_BM,
        # p_FM of a Pin) are skipped: what they would give, up to the sign of a
        # zero. A Pin's R_FM is a rotation about z and its H_FM the column
        # (z, 0). Cost: 90 of ~400 flops saved for a Pin body with R_PF = R_BM = 1.
        Rf = t.R_GF + 9 * i
        _frame_f(t, i, pa, ff, Rf, p_GF)
        pi = t.p_GM + 3 * i
        if jt == J_PIN:  # R_FM = [[c, -s, 0], [s, c, 0], [0, 0, 1]], p_FM = 0
            Rm = t.R_FM + 9 * i
            for k in range(3):
                R_GM[3 * k] = Rf[3 * k] * Rm[0] + Rf[3 * k + 1] * Rm[3]
                R_GM[3 * k + 1] = Rf[3 * k] * Rm[1] + Rf[3 * k + 1] * Rm[4]
                R_GM[3 * k + 2] = Rf[3 * k + 2]
            memcpy(pi, p_GF, 3 * sizeof(double))
        else:
            mat33_mul(Rf, t.R_FM + 9 * i, R_GM)
            mat33_vec(Rf, t.p_FM + 3 * i, pi)
            for k in range(3):
                pi[k] += p_GF[k]
        _frame_b(t, i, ff, R_GM, pi)
        Ri = t.R_GB + 9 * i
        for k in range(nd):
            h = t.H_FM + 6 * (u0 + k)
            s = t.S + 6 * (u0 + k)
            if jt == J_PIN:  # (R_GF z, p_GM x R_GF z)
                s[0] = Rf[2]; s[1] = Rf[5]; s[2] = Rf[8]
                s[3] = 0.0; s[4] = 0.0; s[5] = 0.0
            else:
                mat33_vec(Rf, h, s)
                mat33_vec(Rf, h + 3, s + 3)
            cross3_add(pi, s, s + 3)
        # spatial inertia of the body with its welded descendants (composite m,
        # p_BC, I_B): d = R_GB p_BC, c = p_GB + d,
        # I_O = R_GB I_B R_GB^T + m((|c|^2 - |d|^2) 1 - (c c^T - d d^T))
        # (symmetric: its upper triangle computed, the lower one mirrored)
        m = t.cmass[i]
        mat33_vec(Ri, t.cp_BC + 3 * i, d)
        c = cc
        for k in range(3):
            c[k] = t.p_GB[3 * i + k] + d[k]
        mat33_mul(Ri, t.cI_B + 9 * i, tmp9)
        e = m * (dot3(c, c) - dot3(d, d))
        for a in range(3):
            for bb in range(a, 3):
                I_G[3 * a + bb] = (tmp9[3 * a] * Ri[3 * bb] + tmp9[3 * a + 1] * Ri[3 * bb + 1]
                                   + tmp9[3 * a + 2] * Ri[3 * bb + 2]) - m * (c[a] * c[bb] - d[a] * d[bb])
                I_G[3 * bb + a] = I_G[3 * a + bb]
            I_G[4 * a] += e
        spatial_inertia_at_origin(m, c, I_G, t.I_O + 36 * i)


cdef inline void _add_into_root(const Tree* t, double* sums, Py_ssize_t pa, Py_ssize_t i, const double* X) noexcept nogil:
    # sums(pa) += X for the tip-to-base sums of k_articulated (P) and k_mass_matrix (Ic): the first
    # child to arrive (cfirst[pa] == i) writes I_O(pa) + X, so the sums are written on first touch
    # instead of copied from I_O beforehand (sums may be I_O itself: then this is the in-place sum)
    cdef double* Sp = sums + 36 * pa
    cdef const double* Ip = t.I_O + 36 * pa
    cdef int k
    if t.cfirst[pa] != i:
        add36(Sp, X)
    else:
        for k in range(36):
            Sp[k] = Ip[k] + X[k]


cdef void k_articulated(Tree* t) noexcept nogil:
    # Articulated-body inertias and their joint-space factorization (q only,
    # needs k_position). Kept apart from k_position so that CRBA and RNEA users
    # do not pay for it. Cost: ~150 flops per 1-dof body. O(n).
    cdef Py_ssize_t i, pa, k, a, bb, nd, u0
    cdef double e
    cdef double D[36]
    cdef double work[36]
    cdef double* Pi
    cdef double* Pai
    cdef double* Ui
    cdef double* Di
    # tip to base: U_i = P_i S_i;  D_i = S_i^T U_i;  Pa_i = P_i - U_i D_i^-1 U_i^T;
    #              P_root(parent) += Pa_i   (Weld bodies hold no inertia: skipped)
    # P is written on first touch (I_O of the parent + its first child's Pa), not
    # copied from I_O beforehand: a tip's P is its I_O, read where it is.
    for i in range(t.nb - 1, 0, -1):
        if t.jtype[i] == J_WELD:
            continue
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        Pi = (t.P if t.cfirst[i] else t.I_O) + 36 * i
        Pai = t.Pa + 36 * i
        Ui = t.U + 6 * u0
        Di = t.Dinv + 36 * i
        if nd == 1:
            mat66_vec(Pi, t.S + 6 * u0, Ui)
            if t.arm != NULL:
                Di[0] = 1.0 / (dot6(t.S + 6 * u0, Ui) + t.arm[u0])
            else:
                Di[0] = 1.0 / dot6(t.S + 6 * u0, Ui)
            for a in range(6):
                e = Di[0] * Ui[a]
                for bb in range(6):
                    Pai[6 * a + bb] = Pi[6 * a + bb] - e * Ui[bb]
        else:
            memcpy(Pai, Pi, 36 * sizeof(double))
        if nd > 1:
            for k in range(nd):
                mat66_vec(Pi, t.S + 6 * (u0 + k), Ui + 6 * k)
            for a in range(nd):
                for bb in range(nd):
                    D[nd * a + bb] = dot6(t.S + 6 * (u0 + a), Ui + 6 * bb)
            if t.arm != NULL:  # Featherstone's rotor inertia: D_i = S_i^T P_i S_i + diag(armature_i)
                for a in range(nd):
                    D[nd * a + a] += t.arm[u0 + a]
            spd_inverse(D, <int>nd, Di, work)
            # G = U Dinv (6 x nd), then Pa -= G U^T
            for a in range(6):
                for k in range(nd):
                    e = 0.0
                    for bb in range(nd):
                        e += Ui[6 * bb + a] * Di[nd * bb + k]
                    work[k] = e
                for bb in range(6):
                    e = 0.0
                    for k in range(nd):
                        e += work[k] * Ui[6 * k + bb]
                    Pai[6 * a + bb] -= e
        if pa > 0:
            _add_into_root(t, t.P, pa, i, Pai)


# ---------------------------------------------------------------------------
# Velocity stage
# ---------------------------------------------------------------------------

cdef void k_velocity(Tree* t) noexcept nogil:
    # A lean tree leaves A_bias_O and A_bias (the station-bias caches, which
    # the forward and inverse sweeps do not read) unwritten.
    cdef bint bias = not t.lean
    # Cost: per body ~150 flops plus ~12 per mobility. O(n).
    cdef Py_ssize_t i, pa, k, u0, nd
    cdef int jt
    cdef double Vrel[6]
    cdef double W[3]
    cdef double w_rel[3]
    cdef double v_M[3]
    cdef double hI[6]
    cdef double uk
    cdef double* Vfm
    cdef double* ci
    cdef double* VO
    cdef double* VB
    cdef double* Ab
    cdef double* AbO
    cdef double* HD
    cdef double* s
    cdef double* h
    # base to tip: V_FM = H_FM u;  V_O = V_O(parent) + S u
    #   c = V_O(parent) x_m (S u) + X_GF * d/dt|_F (V_FM moved to F's origin)
    #     (the udot-free part of the spatial acceleration across the joint)
    #   b = V_O x_f (I_O V_O)   (gyroscopic force);  A_bias_O = A_bias_O(parent) + c
    # A Weld body moves with its root (rpar: the parent's root): V_O, A_bias_O its
    # root's, c = 0, b = 0 (its root's b has its inertia). Its c and b are never
    # written (zero since the tree was made) and a lean tree does not copy its V_O:
    # its children read their parent's root's.
    t.jm_bad = -1  # (a failure at Position left NaN rows, which every caller checks first)
    for i in range(1, t.nb):
        pa = t.rpar[i]
        jt = <int>t.jtype[i]
        if jt == J_WELD:
            VO = t.V_O + 6 * pa
            if not t.lean:  # the State's caches: every body's V_O
                memcpy(t.V_O + 6 * i, VO, 6 * sizeof(double))
            VB = t.V_GB + 6 * i
            motion_origin_to_point(VO, t.p_GB + 3 * i, VB)
            if bias:
                AbO = t.Abias_O + 6 * i
                for k in range(6):
                    AbO[k] = t.Abias_O[6 * pa + k]
                _classical_accel(AbO, VB, t.p_GB + 3 * i, t.A_bias + 6 * i)
            continue
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        Vfm = t.V_FM + 6 * i
        HD = t.HDotu_FM + 6 * i
        for k in range(6):
            Vfm[k] = 0.0
            Vrel[k] = 0.0
        for k in range(nd):
            uk = t.u[u0 + k]
            h = t.H_FM + 6 * (u0 + k)
            s = t.S + 6 * (u0 + k)
            Vfm[0] += h[0] * uk; Vfm[1] += h[1] * uk; Vfm[2] += h[2] * uk
            Vfm[3] += h[3] * uk; Vfm[4] += h[4] * uk; Vfm[5] += h[5] * uk
            Vrel[0] += s[0] * uk; Vrel[1] += s[1] * uk; Vrel[2] += s[2] * uk
            Vrel[3] += s[3] * uk; Vrel[4] += s[4] * uk; Vrel[5] += s[5] * uk
        if is_function_joint(jt):
            fb_hdot_u(t, i, HD)
            joint_n_mul(jt, t.q + t.qoff[i], t.u + u0, t.qdot + t.qoff[i])  # qdot = u
        elif is_jit_joint(jt):  # (qdot first: the N kind's HDot is taken along it)
            tree_n_mul(t, i, t.q + t.qoff[i], t.u + u0, t.qdot + t.qoff[i])
            jm_hdot_u(t, i, HD)
        elif jt != J_CUSTOM:
            joint_hdot_u(jt, t.q + t.qoff[i], t.u + u0, t.jparam + 3 * i,
                         t.R_FM + 9 * i, t.p_FM + 3 * i, Vfm, HD)
            joint_n_mul(jt, t.q + t.qoff[i], t.u + u0, t.qdot + t.qoff[i])
        VO = t.V_O + 6 * i
        for k in range(6):
            VO[k] = t.V_O[6 * pa + k] + Vrel[k]
        ci = t.c + 6 * i
        motion_cross(t.V_O + 6 * pa, Vrel, ci)
        # ring = (W, R_GF HDv - W x p_GM - w_rel x v_M), W = R_GF HDw; zero for a
        # Pin or a Slider (HDot_FM = 0, and one of w_rel, v_M is zero)
        if jt != J_PIN and jt != J_SLIDER:
            mat33_vec(t.R_GF + 9 * i, HD, W)
            mat33_vec(t.R_GF + 9 * i, Vfm, w_rel)
            mat33_vec(t.R_GF + 9 * i, Vfm + 3, v_M)
            mat33_vec(t.R_GF + 9 * i, HD + 3, hI)
            ci[0] += W[0]; ci[1] += W[1]; ci[2] += W[2]
            ci[3] += hI[0]; ci[4] += hI[1]; ci[5] += hI[2]
            cross3_sub(W, t.p_GM + 3 * i, ci + 3)
            cross3_sub(w_rel, v_M, ci + 3)
        VB = t.V_GB + 6 * i
        motion_origin_to_point(VO, t.p_GB + 3 * i, VB)
        inertia_vec(t.I_O + 36 * i, VO, hI)
        force_cross(VO, hI, t.b + 6 * i)
        if bias:
            AbO = t.Abias_O + 6 * i
            for k in range(6):
                AbO[k] = t.Abias_O[6 * pa + k] + ci[k]
            _classical_accel(AbO, VB, t.p_GB + 3 * i, t.A_bias + 6 * i)


cdef inline void _classical_accel(const double* A_O, const double* V_B, const double* p,
                                  double* out) noexcept nogil:
    # Spatial acceleration at the origin -> (wdot, acceleration of the body
    # point at p): a_p = vdot_O + wdot x p + w x v_p
    out[0] = A_O[0]; out[1] = A_O[1]; out[2] = A_O[2]
    out[3] = A_O[3]; out[4] = A_O[4]; out[5] = A_O[5]
    cross3_add(A_O, p, out + 3)
    cross3_add(V_B, V_B + 3, out + 3)


# ---------------------------------------------------------------------------
# Acceleration stage: articulated-body forward dynamics
# ---------------------------------------------------------------------------

cdef void k_forward(Tree* t, const double* tau, const double* F) noexcept nogil:
    # Cost: per body one 6x6 product (Pa c) and ~30 flops per mobility on
    # each pass. O(n).
    cdef Py_ssize_t i, pa, k, l, u0, nd
    cdef int jt
    cdef double r[6]
    cdef double gk[6]
    cdef double a[6]
    cdef double e
    cdef double* fi
    cdef double* fp
    cdef double* Ui
    cdef double* Di
    cdef double* Ai
    # base to tip: f_i = b_i - F_i (moved to the origin); a Weld body's -F_i
    # goes to its root (computed before it, as the root's index is lower)
    for i in range(1, t.nb):
        fi = t.f + 6 * i
        force_point_to_origin(F + 6 * i, t.p_GB + 3 * i, fi)
        if t.jtype[i] == J_WELD:
            pa = t.rpar[i]
            if pa > 0:
                fp = t.f + 6 * pa
                for k in range(6):
                    fp[k] -= fi[k]
            continue
        for k in range(6):
            fi[k] = t.b[6 * i + k] - fi[k]
    # tip to base: r_i = tau_i - S_i^T f_i;
    #              f_root(parent) += f_i + Pa_i c_i + U_i D_i^-1 r_i
    for i in range(t.nb - 1, 0, -1):
        if t.jtype[i] == J_WELD:
            continue
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        fi = t.f + 6 * i
        for k in range(nd):
            t.udot[u0 + k] = tau[u0 + k] - dot6(t.S + 6 * (u0 + k), fi)
        if pa > 0:
            fp = t.f + 6 * pa
            add6(fp, fi)
            mat66_vec_add(t.Pa + 36 * i, t.c + 6 * i, fp)
            Ui = t.U + 6 * u0
            Di = t.Dinv + 36 * i
            for k in range(nd):
                e = 0.0
                for l in range(nd):
                    e += Di[nd * k + l] * t.udot[u0 + l]
                for l in range(6):
                    fp[l] += Ui[6 * k + l] * e
    # base to tip: a = A_O(parent) + c_i;  udot_i = D_i^-1 (r_i - U_i^T a);
    #              A_O_i = a + S_i udot_i
    # (a Weld body's A_O is its root's: a lean tree does not copy it, and the
    # bodies read their parent's root's)
    for i in range(1, t.nb):
        pa = t.rpar[i]
        jt = <int>t.jtype[i]
        Ai = t.A_O + 6 * i
        if jt == J_WELD:
            if not t.lean:  # the State's caches: every body's A_O and A_GB
                memcpy(Ai, t.A_O + 6 * pa, 6 * sizeof(double))
                _classical_accel(Ai, t.V_GB + 6 * i, t.p_GB + 3 * i, t.A_GB + 6 * i)
            continue
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        for k in range(6):
            Ai[k] = t.A_O[6 * pa + k] + t.c[6 * i + k]
        Ui = t.U + 6 * u0
        Di = t.Dinv + 36 * i
        for k in range(nd):
            r[k] = t.udot[u0 + k] - dot6(Ui + 6 * k, Ai)
        for k in range(nd):
            e = 0.0
            for l in range(nd):
                e += Di[nd * k + l] * r[l]
            t.udot[u0 + k] = e
            for l in range(6):
                Ai[l] += t.S[6 * (u0 + k) + l] * e
        if not t.lean:  # A_GB: for a State's readers (a lean tree's callers read udot and qdotdot)
            _classical_accel(Ai, t.V_GB + 6 * i, t.p_GB + 3 * i, t.A_GB + 6 * i)
        if jt != J_CUSTOM:
            tree_qdotdot(t, i, t.q + t.qoff[i], t.u + u0, t.udot + u0,
                          t.qdot + t.qoff[i], t.qdotdot + t.qoff[i])


# ---------------------------------------------------------------------------
# Inverse dynamics (RNEA)
# ---------------------------------------------------------------------------

cdef void k_inverse(Tree* t, const double* udot, const double* tau, const double* F,
                    double* out) noexcept nogil:
    # residual = M udot + bias - tau - J^T F.  Cost: one 6x6 product per body. O(n).
    cdef Py_ssize_t i, pa, k, l, u0, nd
    cdef double Fo[6]
    cdef double* ai
    cdef double* fi
    cdef double e
    # base to tip: a_i = a_parent + c_i + S_i udot_i;  f_i = I_O a_i + b_i - F_i
    # (a Weld body moves with its root: its a is its root's, read there by its
    # children, so g of a Weld is not written; its -F_i goes to its root)
    for i in range(1, t.nb):
        pa = t.rpar[i]
        ai = t.g + 6 * i
        if t.jtype[i] == J_WELD:
            if pa > 0:
                force_point_to_origin(F + 6 * i, t.p_GB + 3 * i, Fo)
                fi = t.f + 6 * pa
                for l in range(6):
                    fi[l] -= Fo[l]
            continue
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        for l in range(6):
            ai[l] = t.g[6 * pa + l] + t.c[6 * i + l]
        for k in range(nd):
            e = udot[u0 + k]
            for l in range(6):
                ai[l] += t.S[6 * (u0 + k) + l] * e
        fi = t.f + 6 * i
        inertia_vec(t.I_O + 36 * i, ai, fi)
        force_point_to_origin(F + 6 * i, t.p_GB + 3 * i, Fo)
        for l in range(6):
            fi[l] += t.b[6 * i + l] - Fo[l]
    # tip to base: out_i = S_i^T f_i - tau_i;  f_root(parent) += f_i
    for i in range(t.nb - 1, 0, -1):
        if t.jtype[i] == J_WELD:
            continue
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        fi = t.f + 6 * i
        if t.arm != NULL:  # a rotor's torque arm udot, on the mobility alone
            for k in range(nd):
                out[u0 + k] = (dot6(t.S + 6 * (u0 + k), fi) + t.arm[u0 + k] * udot[u0 + k]) - tau[u0 + k]
        else:
            for k in range(nd):
                out[u0 + k] = dot6(t.S + 6 * (u0 + k), fi) - tau[u0 + k]
        if pa > 0:
            add6(t.f + 6 * pa, fi)


# ---------------------------------------------------------------------------
# Mass matrix (CRBA) and O(n) products with M and M^-1
# ---------------------------------------------------------------------------

cdef void k_mass_matrix(Tree* t, double* M) noexcept nogil:
    # Cost: O(n) for the composite inertias plus O(nu * depth) for the
    # off-diagonal blocks (each column walks its ancestors).
    cdef Py_ssize_t i, j, pa, k, l, u0, nd, uj, ndj, nu = t.nu
    cdef double Fc[36]
    cdef double e
    cdef double* Ici
    # A lean tree's I_O is read by no one after this: the composites are summed
    # in place (Ic is I_O, and a first touch is then the in-place sum).
    # Otherwise I_O stays and Ic holds the sums, written on first touch (I_O of
    # the parent + its first child's composite) rather than copied from I_O
    # beforehand: a tip's composite is its I_O, read where it is.
    cdef double* Ic = t.I_O if t.lean else t.Ic
    memset(M, 0, nu * nu * sizeof(double))
    # tip to base: Ic_i complete (children added);  F = Ic_i S_i;
    #   M[i,i] = S_i^T F;  for each ancestor j: M[j,i] = S_j^T F = M[i,j]^T;
    #   Ic_root(parent) += Ic_i
    for i in range(t.nb - 1, 0, -1):
        if t.jtype[i] == J_WELD:
            continue  # no inertia of its own (folded into its root)
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        Ici = (Ic if t.cfirst[i] else t.I_O) + 36 * i
        for k in range(nd):
            inertia_vec(Ici, t.S + 6 * (u0 + k), Fc + 6 * k)  # Ic: a sum of spatial inertias
        for k in range(nd):  # its upper triangle, mirrored: M is exactly symmetric
            for l in range(k, nd):
                e = dot6(t.S + 6 * (u0 + k), Fc + 6 * l)
                M[nu * (u0 + k) + u0 + l] = e
                M[nu * (u0 + l) + u0 + k] = e
        if t.arm != NULL:
            for k in range(nd):
                M[nu * (u0 + k) + u0 + k] += t.arm[u0 + k]
        j = pa
        while j > 0:
            uj = t.uoff[j]
            ndj = t.uoff[j + 1] - uj
            for k in range(ndj):
                for l in range(nd):
                    e = dot6(t.S + 6 * (uj + k), Fc + 6 * l)
                    M[nu * (uj + k) + u0 + l] = e
                    M[nu * (u0 + l) + uj + k] = e
            j = t.rpar[j]
        if pa > 0:
            _add_into_root(t, Ic, pa, i, Ici)


cdef void k_multiply_by_m(Tree* t, const double* x, double* out) noexcept nogil:
    # M x with zero velocity: a_i = a_parent + S_i x_i;  f_i = I_O a_i;
    # then tip to base out_i = S_i^T f_i, f_parent += f_i.  O(n).
    cdef Py_ssize_t i, pa, k, l, u0, nd
    cdef double e
    cdef double* ai
    # (a Weld body moves with its root: a body reads the a of its parent's root)
    for i in range(1, t.nb):
        if t.jtype[i] == J_WELD:
            continue
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        ai = t.g + 6 * i
        for l in range(6):
            ai[l] = t.g[6 * pa + l]
        for k in range(nd):
            e = x[u0 + k]
            for l in range(6):
                ai[l] += t.S[6 * (u0 + k) + l] * e
        inertia_vec(t.I_O + 36 * i, ai, t.f + 6 * i)
    for i in range(t.nb - 1, 0, -1):
        if t.jtype[i] == J_WELD:
            continue
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        if t.arm != NULL:
            for k in range(nd):
                out[u0 + k] = dot6(t.S + 6 * (u0 + k), t.f + 6 * i) + t.arm[u0 + k] * x[u0 + k]
        else:
            for k in range(nd):
                out[u0 + k] = dot6(t.S + 6 * (u0 + k), t.f + 6 * i)
        if pa > 0:
            add6(t.f + 6 * pa, t.f + 6 * i)


cdef void k_multiply_by_m_inv(Tree* t, const double* v, double* out) noexcept nogil:
    # M^-1 v: the articulated-body sweeps with zero velocity and no body forces,
    # reusing the q-only factorization (U, D^-1, Pa).  O(n).
    cdef Py_ssize_t i, pa, k, l, u0, nd
    cdef double r[6]
    cdef double e
    cdef double* fi
    cdef double* fp
    cdef double* ai
    cdef double* Ui
    cdef double* Di
    memset(t.f, 0, 6 * t.nb * sizeof(double))
    # tip to base: r_i = v_i - S_i^T f_i;  f_root(parent) += f_i + U_i D_i^-1 r_i
    for i in range(t.nb - 1, 0, -1):
        if t.jtype[i] == J_WELD:
            continue
        pa = t.rpar[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        fi = t.f + 6 * i
        for k in range(nd):
            out[u0 + k] = v[u0 + k] - dot6(t.S + 6 * (u0 + k), fi)
        if pa > 0:
            fp = t.f + 6 * pa
            add6(fp, fi)
            Ui = t.U + 6 * u0
            Di = t.Dinv + 36 * i
            for k in range(nd):
                e = 0.0
                for l in range(nd):
                    e += Di[nd * k + l] * out[u0 + l]
                for l in range(6):
                    fp[l] += Ui[6 * k + l] * e
    # base to tip: a = a_parent;  out_i = D_i^-1 (r_i - U_i^T a);  a_i = a + S_i out_i
    for i in range(1, t.nb):
        pa = t.parent[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        ai = t.g + 6 * i
        for l in range(6):
            ai[l] = t.g[6 * pa + l]
        Ui = t.U + 6 * u0
        Di = t.Dinv + 36 * i
        for k in range(nd):
            r[k] = out[u0 + k] - dot6(Ui + 6 * k, ai)
        for k in range(nd):
            e = 0.0
            for l in range(nd):
                e += Di[nd * k + l] * r[l]
            out[u0 + k] = e
            for l in range(6):
                ai[l] += t.S[6 * (u0 + k) + l] * e


# ---------------------------------------------------------------------------
# Jacobian products
# ---------------------------------------------------------------------------

cdef void k_jacobian(Tree* t, const double* x, double* out) noexcept nogil:
    # J x: base to tip V_i = V_parent + S_i x_i (at the origin), out_i = V_i at
    # the body origin, (nb, 2, 3).  O(n).
    cdef Py_ssize_t i, pa, k, l, u0, nd
    cdef double e
    cdef double* Vi
    out[0] = 0.0; out[1] = 0.0; out[2] = 0.0; out[3] = 0.0; out[4] = 0.0; out[5] = 0.0
    for i in range(1, t.nb):
        pa = t.parent[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        Vi = t.g + 6 * i
        for l in range(6):
            Vi[l] = t.g[6 * pa + l]
        for k in range(nd):
            e = x[u0 + k]
            for l in range(6):
                Vi[l] += t.S[6 * (u0 + k) + l] * e
        motion_origin_to_point(Vi, t.p_GB + 3 * i, out + 6 * i)


cdef void k_jacobian_transpose(Tree* t, const double* F, double* out) noexcept nogil:
    # J^T F: tip to base f_i = F_i (moved to the origin) + sum of children;
    # out_i = S_i^T f_i.  O(n).
    cdef Py_ssize_t i, pa, k, u0, nd
    cdef double* fi
    for i in range(1, t.nb):
        force_point_to_origin(F + 6 * i, t.p_GB + 3 * i, t.f + 6 * i)
    for i in range(t.nb - 1, 0, -1):
        pa = t.parent[i]
        u0 = t.uoff[i]
        nd = t.uoff[i + 1] - u0
        fi = t.f + 6 * i
        for k in range(nd):
            out[u0 + k] = dot6(t.S + 6 * (u0 + k), fi)
        if pa > 0:
            add6(t.f + 6 * pa, fi)
