# Wrapping over a torus (PT_WRAP_TORUS) with OpenSim's algorithm (WrapTorus::wrapLine, findClosestPoint,
# calcCircleResids), so that lengths and moment arms agree with OpenSim's. The torus lies in W's xy
# plane about W's z axis: its tube's centre circle has radius d1 (OpenSim's outer_radius) and the tube
# radius d0 (OpenSim's inner_radius). OpenSim looks for the point of the path's line nearest that
# circle (its residual, see _circle_resid, heads for the circle of twice the radius) with MINPACK's
# lmdif (its copy in OpenSim/Common/Lmdif.cpp: a fixed forward-difference step of 1e-5, ftol = xtol =
# 1e-4), once from each end; the tube is then replaced by a cylinder of radius d0, 10 km long, tangent
# to the circle at that point, wrapped on its side facing the hole ("+x" of its frame). lmdif stops
# short of the residual's zero (by up to ~5e-9 m along the line, measured over random lines), and the
# cylinder's axis, hence the length, moves with where it stops: _lm_1d repeats lmdif's iteration for
# this one residual in one unknown step for step (the same Jacobian estimate, trust region,
# Levenberg-Marquardt parameter search and stopping tests) so that it stops where OpenSim's does. Row
# layout as the cylinder's (core/path_wrap.pxi), with d0 the tube radius, d1 the circle radius.
#
# OpenSim's wrapLine says "wrapped" whenever it found a nearest point, even when the cylinder does not
# wrap; GeometryPath::applyWrapObjects then weighs tangent points copied from a previous result whose
# scale factor is NaN, so that segment is never chosen. _wrap_torus returns WRAP_WRAPPED with NaN
# tangent points and length there: the caller's "change < best" is false for them, as OpenSim's is.

cdef enum:
    PT_WRAP_TORUS = 7

# OpenSim's constants (WrapTorus.cpp, Lmdif.cpp)
cdef double _T_CYL_LENGTH = 10000.0
cdef double _LM_H = 1e-5
cdef double _LM_FTOL = 1e-4
cdef double _LM_XTOL = 1e-4
cdef double _LM_FACTOR = 0.2
cdef int _LM_MAXFEV = 500
cdef double _LM_MACHEP = 1.2e-16
cdef double _LM_DWARF = 1.0e-38

PATH_CODES.update(wrap_torus=PT_WRAP_TORUS)


cdef inline double _circle_resid(const double* a, const double* b, double r, double u) noexcept nogil:
    # calcCircleResids, as OpenSim writes it: at x = a + u (b - a)/|b - a|, d/du (|x|^2 - 4 r rho) with
    # rho = |(x, y)|, which is the derivative of the squared distance to the circle of radius 2 r (that
    # of radius r would have 2 r rho); its zero is where lmdif heads. The pass's result is then judged by
    # the distance to the circle of radius r (_torus_closest), as OpenSim judges it.
    cdef double mag = _wsqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1])
                             + (b[2] - a[2]) * (b[2] - a[2]))
    cdef double nx = (b[0] - a[0]) / mag, ny = (b[1] - a[1]) / mag, nz = (b[2] - a[2]) / mag
    cdef double c2 = 2.0 * (a[0] * nx + a[1] * ny + a[2] * nz)
    cdef double c3 = a[0] * nx + a[1] * ny
    cdef double c4 = nx * nx + ny * ny
    cdef double c5 = a[0] * a[0] + a[1] * a[1]
    return c2 + 2.0 * u - 2.0 * r * (2.0 * c4 * u + 2.0 * c3) / _wsqrt(u * u * c4 + 2.0 * c3 * u + c5)


cdef inline double _lm_max(double a, double b) noexcept nogil:
    # lmdif's dmax1 (the first when equal or unordered)
    return a if a >= b else b


cdef inline double _lm_min(double a, double b) noexcept nogil:
    return a if a <= b else b


cdef double _lm_par_1d(double r, double d, double qtb, double delta, double* par) noexcept nogil:
    # lmpar for one unknown: the step x (before lmdif negates it) minimizing |r x - qtb| within
    # |d x| <= delta (to 10 %), and the Levenberg-Marquardt parameter par; r is the 1x1 "R" of the QR
    # of the Jacobian, d the scaling. The 1x1 qrsolv's Givens rotation is written out.
    cdef bint nonsing = r != 0.0
    cdef double x = qtb / r if nonsing else 0.0
    cdef double dxnorm = _wfabs(d * x), fp = dxnorm - delta, parl = 0.0, paru, gnorm, temp, w, parc
    cdef double sd, cs, sn, t, rkk, wa, prev
    cdef int it = 0
    if fp <= 0.1 * delta:
        par[0] = 0.0
        return x
    if nonsing:
        w = d * ((d * x) / dxnorm)
        w = w / r
        temp = _wfabs(w)
        parl = ((fp / delta) / temp) / temp
    gnorm = _wfabs((0.0 + r * qtb) / d)
    paru = gnorm / delta
    if paru == 0.0:
        paru = _LM_DWARF / _lm_min(delta, 0.1)
    par[0] = _lm_max(par[0], parl)
    par[0] = _lm_min(par[0], paru)
    if par[0] == 0.0:
        par[0] = gnorm / dxnorm
    while True:
        it += 1
        if par[0] == 0.0:
            par[0] = _lm_max(_LM_DWARF, 0.001 * paru)
        sd = _wsqrt(par[0]) * d
        # qrsolv: eliminate the row sd with a Givens rotation against r
        wa = qtb
        if sd != 0.0:
            if _wfabs(r) < _wfabs(sd):
                t = r / sd
                sn = 0.5 / _wsqrt(0.25 + 0.25 * t * t)
                cs = sn * t
            else:
                t = sd / r
                cs = 0.5 / _wsqrt(0.25 + 0.25 * t * t)
                sn = cs * t
            rkk = cs * r + sn * sd
            wa = cs * wa + sn * 0.0
        else:
            rkk = r
        x = 0.0 if rkk == 0.0 else (wa - 0.0) / rkk
        dxnorm = _wfabs(d * x)
        prev = fp
        fp = dxnorm - delta
        if _wfabs(fp) <= 0.1 * delta or (parl == 0.0 and fp <= prev and prev < 0.0) or it == 10:
            return x
        w = d * ((d * x) / dxnorm)
        w = w / rkk
        temp = _wfabs(w)
        parc = ((fp / delta) / temp) / temp
        if fp > 0.0:
            parl = _lm_max(parl, par[0])
        if fp < 0.0:
            paru = _lm_min(paru, par[0])
        par[0] = _lm_max(parl, par[0] + parc)


cdef double _lm_1d(const double* a, const double* b, double radius) noexcept nogil:
    # OpenSim's lmdif_C on calcCircleResids (one residual, one unknown u, from u = 0; mode 1,
    # factor 0.2, ftol = xtol = 1e-4, gtol = 0, at most 500 evaluations), step for step: returns u
    cdef double x = 0.0, f = _circle_resid(a, b, radius, 0.0), fnorm, par = 0.0, delta = 0.0, xnorm
    cdef double diag = 0.0, J, r, acn, qtf, gnorm, p, xn, pnorm, f1, fnorm1, actred, prered, dirder
    cdef double ratio, temp, t1, t2
    cdef int nfev = 1, it = 1
    fnorm = _wfabs(f)
    while True:
        # fdjac2 (OpenSim's: a fixed step of 1e-5), then qrfac of the 1x1 Jacobian: R = -J, Q^T f = -f
        J = (_circle_resid(a, b, radius, x + _LM_H) - f) / _LM_H
        acn = _wfabs(J)
        if J != 0.0:
            r = -J
            qtf = -f
        else:
            r = -0.0
            qtf = f
        if it == 1:
            diag = acn if acn != 0.0 else 1.0
            xnorm = _wfabs(diag * x)
            delta = _LM_FACTOR * xnorm
            if _wfabs(delta) <= 1e-4:
                delta = _LM_FACTOR
        gnorm = 0.0
        if fnorm != 0.0 and acn != 0.0:
            gnorm = _wfabs((0.0 + r * (qtf / fnorm)) / acn)
        if gnorm <= 0.0:
            return x
        diag = _lm_max(diag, acn)
        while True:
            p = -_lm_par_1d(r, diag, qtf, delta, &par)
            xn = x + p
            pnorm = _wfabs(diag * p)
            if it == 1:
                delta = _lm_min(delta, pnorm)
            f1 = _circle_resid(a, b, radius, xn)
            nfev += 1
            fnorm1 = _wfabs(f1)
            actred = -1.0
            if 0.1 * fnorm1 < fnorm:
                temp = fnorm1 / fnorm
                actred = 1.0 - temp * temp
            t1 = _wfabs(0.0 + r * p) / fnorm
            t2 = (_wsqrt(par) * pnorm) / fnorm
            prered = t1 * t1 + (t2 * t2) / 0.5
            dirder = -(t1 * t1 + t2 * t2)
            ratio = actred / prered if prered != 0.0 else 0.0
            if ratio <= 0.25:
                if actred >= 0.0:
                    temp = 0.5
                else:
                    temp = 0.5 * dirder / (dirder + 0.5 * actred)
                if 0.1 * fnorm1 >= fnorm or temp < 0.1:
                    temp = 0.1
                delta = temp * _lm_min(delta, pnorm / 0.1)
                par = par / temp
            elif par == 0.0 or ratio >= 0.75:
                delta = pnorm / 0.5
                par = 0.5 * par
            if ratio >= 1e-4:
                x = xn
                xnorm = _wfabs(diag * x)
                fnorm = fnorm1
                f = f1
                it += 1
            if _wfabs(actred) <= _LM_FTOL and prered <= _LM_FTOL and 0.5 * ratio <= 1.0:
                return x
            if delta <= _LM_XTOL * xnorm:
                return x
            if nfev >= _LM_MAXFEV:
                return x
            if _wfabs(actred) <= _LM_MACHEP and prered <= _LM_MACHEP and 0.5 * ratio <= 1.0:
                return x
            if delta <= _LM_MACHEP * xnorm or gnorm <= _LM_MACHEP:
                return x
            if ratio >= 1e-4:
                break


cdef bint _torus_closest(const double* P1, const double* P2, double radius, int quad, double* c) noexcept nogil:
    # WrapTorus::findClosestPoint: the point c of the circle (radius, about z, z = 0) nearest the line
    # P1 P2, from lmdif run from P1 and from P2; False when the quadrant leaves neither
    cdef double a1[3]
    cdef double a2[3]
    cdef double u, mag, d1, d2, m
    cdef int ax = abs(quad) - 1, sgn = (1 if quad > 0 else -1) if quad != 0 else 0
    cdef int k
    cdef bint second
    mag = _wsqrt((P2[0] - P1[0]) * (P2[0] - P1[0]) + (P2[1] - P1[1]) * (P2[1] - P1[1])
                 + (P2[2] - P1[2]) * (P2[2] - P1[2]))
    u = _lm_1d(P1, P2, radius)
    for k in range(3):
        a1[k] = P1[k] + u * ((P2[k] - P1[k]) / mag)
    d1 = _wsqrt(a1[0] * a1[0] + a1[1] * a1[1] + a1[2] * a1[2] + radius * radius
                - 2.0 * radius * _wsqrt(a1[0] * a1[0] + a1[1] * a1[1]))
    u = _lm_1d(P2, P1, radius)
    for k in range(3):
        a2[k] = P2[k] + u * ((P1[k] - P2[k]) / mag)
    d2 = _wsqrt(a2[0] * a2[0] + a2[1] * a2[1] + a2[2] * a2[2] + radius * radius
                - 2.0 * radius * _wsqrt(a2[0] * a2[0] + a2[1] * a2[1]))
    if sgn != 0:
        if _dsign(a1[ax]) == sgn and _dsign(a2[ax]) == sgn:
            second = not d1 < d2
        elif _dsign(a1[ax]) == sgn:
            second = False
        elif _dsign(a2[ax]) == sgn:
            second = True
        else:
            return False
    else:
        second = not d1 < d2
    if second:
        a1[0] = a2[0]; a1[1] = a2[1]
    m = _wsqrt(a1[0] * a1[0] + a1[1] * a1[1])
    c[0] = a1[0] * radius / m
    c[1] = a1[1] * radius / m
    c[2] = 0.0
    return True


cdef int _wrap_torus(const double* P1, const double* P2, double tube, double circle, int quad, bint single,
                     double* r1, double* r2, double* wlen) noexcept nogil:
    # WrapTorus::wrapLine in the torus's frame
    cdef double c[3]
    cdef double X[3]
    cdef double Rc[9]     # rows: the cylinder's axes in W (OpenSim's Mat33 by rows)
    cdef double o[3]      # Rc (-c): the shift putting the cylinder's origin at c
    cdef double p1c[3]
    cdef double p2c[3]
    cdef double r1c[3]
    cdef double r2c[3]
    cdef double d[3]
    cdef int code, k
    if not _torus_closest(P1, P2, circle, quad, c):
        return WRAP_NONE
    for k in range(3):
        d[k] = -c[k]
    if not (c[0] == c[0] and c[1] == c[1]) or _norm_or_zero(d, X) < _WEPS:
        # (a line through the torus's axis: OpenSim's nearest point is NaN there, and so would be every
        # length after it; no wrap instead)
        return WRAP_NONE
    # x towards the hole, y = -z of the torus, z = x cross y (in the torus's plane)
    Rc[0] = X[0]; Rc[1] = X[1]; Rc[2] = X[2]
    Rc[3] = 0.0; Rc[4] = 0.0; Rc[5] = -1.0
    Rc[6] = X[1] * -1.0 - X[2] * 0.0; Rc[7] = X[2] * 0.0 - X[0] * -1.0; Rc[8] = X[0] * 0.0 - X[1] * 0.0
    mat33_vec(Rc, d, o)
    mat33_vec(Rc, P1, p1c)
    mat33_vec(Rc, P2, p2c)
    for k in range(3):
        p1c[k] += o[k]
        p2c[k] += o[k]
    # (an unfinalized WrapCylinder keeps WrapObject's defaults _wrapAxis 0, _wrapSign 1: "+x")
    code = _wrap_cylinder(p1c, p2c, tube, _T_CYL_LENGTH, 1, single, r1c, r2c, wlen)
    if code == WRAP_WRAPPED or code == WRAP_MANDATORY:
        for k in range(3):
            r1c[k] -= o[k]
            r2c[k] -= o[k]
        mat33T_vec(Rc, r1c, r1)
        mat33T_vec(Rc, r2c, r2)
    else:
        for k in range(3):
            r1[k] = NAN
            r2[k] = NAN
        wlen[0] = NAN
    return WRAP_WRAPPED
