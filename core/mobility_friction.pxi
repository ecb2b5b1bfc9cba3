# MobilityCoulombFriction (FK_MOBILITY_FRICTION): Coulomb friction on one mobility, smoothed so that the
# force is a smooth function of the speed (an integrator needs no event at u = 0):
#     f = -mu tanh(u / v_eps)
# |f| reaches 0.76 mu at |u| = v_eps and mu - 2 mu e^(-2|u|/v_eps) beyond; its slope at rest,
# mu / v_eps, is a viscous damping, so the joint creeps (at u ~ v_eps tau / mu) under a load tau below
# mu instead of sticking. No potential energy. Packed layout: params (n, 2) = (mu, v_eps), index
# (n, 2) = (q index, u index) (q unused).
#
# The hooks in core/forces.pxi: the kind's code FK_MOBILITY_FRICTION in its enum and FK_NUM_KINDS.

from libc.math cimport tanh


cdef Py_ssize_t _add_mobility_friction(const FSet* s, const Tree* t, const double* q, const double* u,
                                       double* bf, double* mf) noexcept nogil:
    cdef Py_ssize_t j
    cdef idx_t ui
    cdef const double* prm
    for j in range(s.n):
        ui = s.index[2 * j + 1]
        prm = s.params + s.npk * j
        mf[ui] -= prm[0] * tanh(u[ui] / prm[1])
    return -1


FORCE_KINDS["MobilityCoulombFriction"] = (FK_MOBILITY_FRICTION, 0, ("mu", "v_eps"), True)
_set_kind(FK_MOBILITY_FRICTION, _add_mobility_friction, NULL)
