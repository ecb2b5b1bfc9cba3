# MobilizedBody.FunctionBased as a compiled joint kind (codes J_FUNCTION + n, n = 1..6 mobilities):
# its X_FM(q), H_FM and HDot_FM u from six functions of its coordinates, evaluated from the flat
# function table (core/functions.pxi) without calling Python. The equations are those of
# simtk/multibody/tree/function_based.py, whose Python implementation stays the oracle (and the path of
# a FunctionBased with a user's Function):
#
#   theta_k = f_k(q[ci_k])  (k = 0..5; a function without arguments is the constant folded in Python)
#   R_FM = R(a_0, theta_0) R(a_1, theta_1) R(a_2, theta_2),  R(a, th) = P + cos(th) Q + sin(th) K
#          (P = a a^T, Q = 1 - P, K = [a x]; a constant factor is Python's matrix, the identity skipped)
#   p_FM = T theta[3:6],  T = [a_3 | a_4 | a_5]
#   J = d theta / d q (6, n);  A = [a_0 | R_0 a_1 | R_0 R_1 a_2] (the rotation axes in F)
#   H_FM = [A J_rot ; T J_trans]
#   HDot_FM u = [A b_rot + thetadot_1 (w_0 x A_1) + thetadot_2 ((w_0 + A_1 thetadot_1) x A_2) ; T b_trans]
#          with thetadot = J u, w_0 = A_0 thetadot_0, b_k = u^T (d^2 f_k / dq^2) u
#          (FBF_SIMBODY_HDOT: w_0 is A J_rot[:, 0] u_0, the angular velocity of mobility 0 alone, and
#          w_0 + A_1 thetadot_1 is A J_rot u with u_2 left out, as Simbody's FunctionBased computes them)
#   qdot = u (N = 1), qdotdot = udot (joint_n_mul and joint_qdotdot by joint_nu)
#
# Each term is computed in the Python implementation's order; its matrix products (numpy's matmul, a
# BLAS that may fuse or reorder) are plain loops here, so the two agree to round-off, not bitwise.
#
# Records. Body i's record r = Tree.fbrec[i]:
#   fbi[r] (FB_ISTRIDE int64): FBI_N n; FBI_FLAGS (FBF_* bits); FBI_ROT + k the kind of rotation k
#       (FBR_*); at FBI_FN + FBI_FSTRIDE k function k: its table entry (-1: a constant), its argument
#       count m (<= FB_MAX_ARGS), then its m coordinate indices into the body's own q
#   fbd[r] (FB_DSTRIDE doubles): FBD_AXES the six unit axes (6, 3); FBD_BASIS + 27 k rotation k's
#       P, Q, K (row-major 3x3 each); FBD_RCONST + 9 k a constant rotation k; FBD_PCONST T theta[3:6] of
#       the constants; FBD_T the matrix T (row-major); FBD_THETA the six constants (0 where active)
#   fbw[r] (FB_WSTRIDE doubles, per State): FBW_A + 3 k the column A_k; FBW_J + 6 k + j the entry J[k, j]
# Every number is the Python implementation's own (simtk/multibody/tree/function_based.py,
# FunctionBasedImplementation._compiled_record), copied, never recomputed; TreeKernels checks the
# records when built (fb_records_error), so the kernels below check nothing.

cdef enum:
    FB_MAX_ARGS = 6
    FBI_N = 0
    FBI_FLAGS = 1
    FBI_ROT = 2
    FBI_FN = 8
    FBI_FSTRIDE = 8
    FB_ISTRIDE = 56
    FBD_AXES = 0
    FBD_BASIS = 18
    FBD_RCONST = 99
    FBD_PCONST = 126
    FBD_T = 129
    FBD_THETA = 138
    FB_DSTRIDE = 144
    FBW_A = 0
    FBW_J = 9
    FB_WSTRIDE = 45
    # FBI_FLAGS bits
    FBF_MOVING_AXES = 1     # more than one active rotation: A_1, A_2 turn with the earlier ones
    FBF_T_IDENTITY = 2      # T is exactly the identity
    FBF_TRANS_ACTIVE = 4    # some translation takes coordinates
    FBF_SIMBODY_HDOT = 8    # the axes' rates as Simbody's FunctionBased computes them (see fb_hdot_u)
    # rotation kinds
    FBR_IDENTITY = 0        # a constant 0: no factor
    FBR_CONST = 1           # a constant angle: its matrix at FBD_RCONST
    FBR_ACTIVE = 2          # a function of q

#: the record layout, for the Python side that packs the records
FB_LAYOUT = dict(max_args=FB_MAX_ARGS, istride=FB_ISTRIDE, dstride=FB_DSTRIDE, wstride=FB_WSTRIDE,
                 i_n=FBI_N, i_flags=FBI_FLAGS, i_rot=FBI_ROT, i_fn=FBI_FN, i_fstride=FBI_FSTRIDE,
                 d_axes=FBD_AXES, d_basis=FBD_BASIS, d_rconst=FBD_RCONST, d_pconst=FBD_PCONST, d_T=FBD_T,
                 d_theta=FBD_THETA, moving_axes=FBF_MOVING_AXES, T_identity=FBF_T_IDENTITY,
                 trans_active=FBF_TRANS_ACTIVE, simbody_hdot=FBF_SIMBODY_HDOT, rot_identity=FBR_IDENTITY, rot_const=FBR_CONST,
                 rot_active=FBR_ACTIVE)


cdef inline void _fb_table(const Tree* t, FnTable* ft) noexcept nogil:
    # the evaluators read ent and par only (the entries were checked against the table when built)
    ft.ent = t.fn_ent
    ft.par = t.fn_par
    ft.n = 0


cdef void fb_position(Tree* t, Py_ssize_t i) noexcept nogil:
    # R_FM, p_FM and the n columns of H_FM of FunctionBased body i at the tree's q; A and J into its
    # fbw row for fb_hdot_u. Cost: one value and m first derivatives per active function, a cos and a
    # sin per active rotation, ~30 flops per H column. O(1) per body.
    cdef Py_ssize_t r = t.fbrec[i]
    cdef const idx_t* I = t.fbi + FB_ISTRIDE * r
    cdef const double* D = t.fbd + FB_DSTRIDE * r
    cdef double* A = t.fbw + FB_WSTRIDE * r
    cdef double* J = A + FBW_J
    cdef const double* q = t.q + t.qoff[i]
    cdef double* R = t.R_FM + 9 * i
    cdef double* p = t.p_FM + 3 * i
    cdef double* h
    cdef const double* B
    cdef const double* T = D + FBD_T
    cdef const idx_t* fk
    cdef FnTable ft
    cdef double theta[6]
    cdef double x[FB_MAX_ARGS]
    cdef double Rk[9]
    cdef double tmp[9]
    cdef double c, s
    cdef idx_t comp
    cdef int n = <int>I[FBI_N], flags = <int>I[FBI_FLAGS], k, j, a, m, kind
    cdef bint have_R = False
    _fb_table(t, &ft)
    t.qerr[i] = 0.0
    memcpy(theta, D + FBD_THETA, 6 * sizeof(double))
    memset(A, 0, FB_WSTRIDE * sizeof(double))  # the A column of an inactive rotation and its J row stay 0
    # theta_k = f_k(x), x = q[ci_k];  J[k, ci_k[j]] += d f_k / d x_j
    for k in range(6):
        fk = I + FBI_FN + FBI_FSTRIDE * k
        if fk[0] < 0:
            continue
        m = <int>fk[1]
        for j in range(m):
            x[j] = q[fk[2 + j]]
        theta[k] = fn_value(&ft, fk[0], x)
        for j in range(m):
            comp = j
            J[6 * k + fk[2 + j]] += fn_derivative(&ft, fk[0], &comp, 1, x)
    # R = R_0 R_1 R_2 (constant factors as given, identities skipped); A_k = (R_0 ... R_{k-1}) a_k
    for k in range(3):
        kind = <int>I[FBI_ROT + k]
        if kind == FBR_ACTIVE:
            if have_R:
                mat33_vec(R, D + FBD_AXES + 3 * k, A + FBW_A + 3 * k)
            else:
                memcpy(A + FBW_A + 3 * k, D + FBD_AXES + 3 * k, 3 * sizeof(double))
            c = cos(theta[k])
            s = sin(theta[k])
            B = D + FBD_BASIS + 27 * k
            for j in range(9):
                Rk[j] = B[j] + c * B[9 + j] + s * B[18 + j]
            B = Rk
        elif kind == FBR_CONST:
            B = D + FBD_RCONST + 9 * k
        else:
            continue
        if have_R:
            mat33_mul(R, B, tmp)
            memcpy(R, tmp, 9 * sizeof(double))
        else:
            memcpy(R, B, 9 * sizeof(double))
            have_R = True
    if not have_R:
        set_identity33(R)
    # p = T theta[3:6] (the constants' sum when no translation moves)
    if not flags & FBF_TRANS_ACTIVE:
        memcpy(p, D + FBD_PCONST, 3 * sizeof(double))
    elif flags & FBF_T_IDENTITY:
        p[0] = theta[3]; p[1] = theta[4]; p[2] = theta[5]
    else:
        mat33_vec(T, theta + 3, p)
    # column j of H = (A J[0:3, j], T J[3:6, j])
    for j in range(n):
        h = t.H_FM + 6 * (t.uoff[i] + j)
        for a in range(3):
            h[a] = A[FBW_A + a] * J[j] + A[FBW_A + 3 + a] * J[6 + j] + A[FBW_A + 6 + a] * J[12 + j]
        if flags & FBF_T_IDENTITY:
            h[3] = J[18 + j]; h[4] = J[24 + j]; h[5] = J[30 + j]
        else:
            for a in range(3):
                h[3 + a] = T[3 * a] * J[18 + j] + T[3 * a + 1] * J[24 + j] + T[3 * a + 2] * J[30 + j]


cdef void fb_hdot_u(Tree* t, Py_ssize_t i, double* out) noexcept nogil:
    # out (6) = HDot_FM u of FunctionBased body i at the tree's q and u, from the A and J that
    # fb_position left. Cost: m (m + 1) / 2 second derivatives per active function, ~60 flops.
    cdef Py_ssize_t r = t.fbrec[i]
    cdef const idx_t* I = t.fbi + FB_ISTRIDE * r
    cdef const double* D = t.fbd + FB_DSTRIDE * r
    cdef const double* A = t.fbw + FB_WSTRIDE * r
    cdef const double* J = A + FBW_J
    cdef const double* T = D + FBD_T
    cdef const double* q = t.q + t.qoff[i]
    cdef const double* u = t.u + t.uoff[i]
    cdef const idx_t* fk
    cdef FnTable ft
    cdef double b[6]
    cdef double x[FB_MAX_ARGS]
    cdef double uk[FB_MAX_ARGS]
    cdef double thd[3]
    cdef double w0[3]
    cdef double w01[3]
    cdef double col[3]
    cdef double acc, d
    cdef idx_t comps[2]
    cdef int n = <int>I[FBI_N], flags = <int>I[FBI_FLAGS], k, j, jj, a, m
    _fb_table(t, &ft)
    # b_k = u^T (d^2 f_k / dq^2) u over the pairs j <= jj of f_k's arguments
    for k in range(6):
        b[k] = 0.0
        fk = I + FBI_FN + FBI_FSTRIDE * k
        if fk[0] < 0:
            continue
        m = <int>fk[1]
        for j in range(m):
            x[j] = q[fk[2 + j]]
            uk[j] = u[fk[2 + j]]
        acc = 0.0
        for j in range(m):
            for jj in range(j, m):
                comps[0] = j
                comps[1] = jj
                d = fn_derivative(&ft, fk[0], comps, 2, x)
                if j == jj:
                    acc += d * uk[j] * uk[j]
                else:
                    acc += d * (uk[j] * uk[jj] + uk[jj] * uk[j])
        b[k] = acc
    # (A b_rot, T b_trans)
    for a in range(3):
        out[a] = A[FBW_A + a] * b[0] + A[FBW_A + 3 + a] * b[1] + A[FBW_A + 6 + a] * b[2]
    if flags & FBF_T_IDENTITY:
        out[3] = b[3]; out[4] = b[4]; out[5] = b[5]
    else:
        for a in range(3):
            out[3 + a] = T[3 * a] * b[3] + T[3 * a + 1] * b[4] + T[3 * a + 2] * b[5]
    if not flags & FBF_MOVING_AXES:
        return
    # the axes A_1, A_2 turn with the earlier rotations:
    #   + thetadot_1 (w_0 x A_1) + thetadot_2 ((w_0 + A_1 thetadot_1) x A_2),  w_0 = A_0 thetadot_0
    for k in range(3):
        acc = 0.0
        for j in range(n):
            acc += J[6 * k + j] * u[j]
        thd[k] = acc
    if flags & FBF_SIMBODY_HDOT:
        # Simbody's: A_1 turns with mobility 0's angular velocity, A_2 with that of all mobilities but 2
        for a in range(3):
            w0[a] = 0.0
            w01[a] = 0.0
            for k in range(3):
                w0[a] += A[FBW_A + 3 * k + a] * (J[6 * k] * u[0])
                acc = 0.0
                for j in range(n):
                    if j != 2:
                        acc += J[6 * k + j] * u[j]
                w01[a] += A[FBW_A + 3 * k + a] * acc
        if thd[1] != 0.0:
            for a in range(3):
                col[a] = A[FBW_A + 3 + a] * thd[1]
            cross3_add(w0, col, out)
        if thd[2] != 0.0:
            for a in range(3):
                col[a] = A[FBW_A + 6 + a] * thd[2]
            cross3_add(w01, col, out)
        return
    for a in range(3):
        w0[a] = A[FBW_A + a] * thd[0]
    if thd[1] != 0.0 and thd[0] != 0.0:
        for a in range(3):
            col[a] = A[FBW_A + 3 + a] * thd[1]
        cross3_add(w0, col, out)
    if thd[2] != 0.0:
        for a in range(3):
            w01[a] = w0[a] + A[FBW_A + 3 + a] * thd[1]
        if w01[0] != 0.0 or w01[1] != 0.0 or w01[2] != 0.0:
            for a in range(3):
                col[a] = A[FBW_A + 6 + a] * thd[2]
            cross3_add(w01, col, out)


cdef str fb_records_error(Py_ssize_t nb, const idx_t* jtype, const idx_t* qoff, const idx_t* uoff,
                          const idx_t* fbrec, Py_ssize_t nfb, const idx_t* fbi, const double* fbd,
                          const idx_t* ent, Py_ssize_t nent):
    # What is wrong with the FunctionBased records of a tree, or None: what keeps the kernels above
    # within their arrays (each function body has its own record, its sizes are its code's, its
    # entries exist in the table and take the arguments listed) and evaluating what they mean.
    cdef Py_ssize_t i, r, k, j
    cdef idx_t n, m, e, kind, jt
    cdef const idx_t* I
    cdef const idx_t* fk
    seen = set()
    for i in range(nb):
        jt = jtype[i]
        r = fbrec[i]
        if not (J_FUNCTION < jt <= J_FUNCTION_MAX):
            if r != -1:
                return f"body {i}: a record ({r}) for a joint that is not FunctionBased (code {jt})"
            continue
        if not 0 <= r < nfb or r in seen:
            return f"body {i}: FunctionBased record {r} is not one of its own in [0, {nfb})"
        seen.add(r)
        I = fbi + FB_ISTRIDE * r
        n = jt - J_FUNCTION
        if I[FBI_N] != n or qoff[i + 1] - qoff[i] != n or uoff[i + 1] - uoff[i] != n:
            return f"body {i}: a FunctionBased of {n} mobilities with record n = {I[FBI_N]} and sizes " \
                   f"nq = {qoff[i + 1] - qoff[i]}, nu = {uoff[i + 1] - uoff[i]}"
        for k in range(6):
            fk = I + FBI_FN + FBI_FSTRIDE * k
            e, m = fk[0], fk[1]
            if k < 3:
                kind = I[FBI_ROT + k]
                if (e >= 0) != (kind == FBR_ACTIVE) or not FBR_IDENTITY <= kind <= FBR_ACTIVE:
                    return f"body {i}: rotation {k} of kind {kind} with function entry {e}"
            if e < 0:
                if e != -1 or m != 0:
                    return f"body {i}: function {k}: a constant (entry -1) takes no arguments, got entry {e}, m = {m}"
                continue
            if e >= nent:
                return f"body {i}: function {k}: entry {e} outside the table's {nent}"
            if not 0 <= m <= FB_MAX_ARGS or ent[FN_STRIDE * e + FE_NARGS] != m:
                return f"body {i}: function {k}: {m} arguments listed, the entry takes " \
                       f"{ent[FN_STRIDE * e + FE_NARGS]} (at most {FB_MAX_ARGS})"
            if ent[FN_STRIDE * e + FE_MAXORD] < 2:
                return f"body {i}: function {k}: entry {e} has no second derivative"
            for j in range(m):
                if not 0 <= fk[2 + j] < n:
                    return f"body {i}: function {k}: argument {j} is coordinate {fk[2 + j]}, outside [0, {n})"
        if first_non_finite_at(fbd + FB_DSTRIDE * r, FB_DSTRIDE) >= 0:
            return f"body {i}: a non-finite number in its FunctionBased record"
    return None
