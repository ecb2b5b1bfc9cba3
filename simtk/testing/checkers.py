"""Checkers users run on their own extensions; each compares what the extension computes with an
independent estimate and returns a `CheckReport` (``assert_ok=True`` raises `CheckFailure` naming
the worst mismatch).

=====================================  ================================================================
``check_mobilizer(mobod, state)``      V_FM = H u against d/dt X_FM(q) along qdot = N u; H udot + HDot u
                                       against d/dt V_FM; HDot u against d/dt (H u) at speeds all
                                       nonzero; qdotdot against d/dt qdot; for a Custom
                                       implementation also H^T, HDot^T, N^T, N^-1, N^-T, NDot (adjoints
                                       and finite differences) and its fits
``check_force(force, state)``          the generalized force J^T F + f equals -dPE/dq N (conservative forces)
``check_realize_is_pure(system, s)``   realizing each stage leaves t, q, u, z and discrete variables alone
``check_caching(system, state)``       after changes of u, q, z and t, incremental realization (reusing
                                       caches) gives the same results as realizing everything afresh
``check_constraint(c, state)``         position, velocity and acceleration errors are successive time
                                       derivatives; the constraint forces are G^T lambda (see its docstring)
=====================================  ================================================================

Every checker works on copies: the State passed in is never modified.
"""
from __future__ import annotations

import copy as _copy
from typing import Any

import numpy as np

from ..common.stage import Stage
from ..common.state import State
from .report import CheckReport

__all__ = ["check_mobilizer", "check_force", "check_realize_is_pure", "check_caching", "check_constraint"]


def _vee(W: np.ndarray) -> np.ndarray:
    """The vector of the skew-symmetric part of W (for dR/dt R^T = [w x])."""
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def _finish(report: CheckReport, assert_ok: bool) -> CheckReport:
    if assert_ok:
        report.assert_ok()
    return report


# --------------------------------------------------------------------------------------------- mobilizers
def check_mobilizer(mobod, state: State, *, h: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-7,
                    seed: int = 0, assert_ok: bool = False) -> CheckReport:
    """Check a mobilizer's H, HDot, N (and, for a Custom one, every method) against its transform.

    Parameters
    ----------
    mobod : MobilizedBody
        Any mobilized body; a ``MobilizedBody.Custom`` (or ``FunctionBased``) gets the extra checks
        of its implementation's methods.
    state : State
        Where to check (realized to at least Model; it is copied and realized to Acceleration, so
        the system must have a valid forward dynamics there). Choose q away from the mobilizer's
        singularities, and with unit quaternions (N^-1 N = 1 holds only for those). HDot is also
        checked alone (``u`` held, ``q`` moving), at this mobilizer's speeds in ``state`` when
        none is zero, else at random nonzero ones (a zero speed hides its HDot terms).
    h : float
        Finite-difference step in time (s): q and u move by ``h qdot`` and ``h udot``.
    rtol, atol : float
        Tolerances, relative to the larger magnitude compared and absolute.
    seed : int
        Seed of the random test vectors used by the adjoint checks and of the HDot check's speeds.
    assert_ok : bool
        Raise `CheckFailure` (naming the worst mismatch) if any comparison fails.

    Returns
    -------
    CheckReport
    """
    from ..multibody.tree.custom_mobilizer import Custom

    matter = mobod.get_matter_subsystem()
    system = matter.get_system()
    impl = mobod.get_implementation() if isinstance(mobod, Custom) else None
    subject = f"{mobod!r}" + (f" ({type(impl).__name__})" if impl is not None else "")
    report = CheckReport("check_mobilizer", subject)
    base = state.copy()
    system.realize(base, Stage.Acceleration)
    i = mobod.get_mobilized_body_index()
    nu = mobod.get_num_u(base)
    if nu == 0:
        report.note("the mobilizer has no mobilities: nothing to check")
        return _finish(report, assert_ok)
    q, u = mobod.get_q(base).copy(), mobod.get_u(base).copy()
    qdot, udot, qdotdot = mobod.get_qdot(base).copy(), mobod.get_udot(base).copy(), mobod.get_qdotdot(base).copy()
    X = mobod.get_mobilizer_transform(base)
    V = mobod.get_mobilizer_velocity(base).copy()
    ws = matter._cache(base).ws
    u0 = int(ws.uoff[i])
    H = ws.H_FM[u0:u0 + nu].copy()  # (nu, 2, 3): the columns the dynamics used
    HDu = ws.HDotu_FM[i].copy()

    def moved(sign: float) -> State:
        s = base.copy()
        mobod.set_q(s, q + sign * h * qdot)
        mobod.set_u(s, u + sign * h * udot)
        system.realize(s, Stage.Velocity)
        return s

    sp, sm = moved(1.0), moved(-1.0)
    Xp, Xm = mobod.get_mobilizer_transform(sp), mobod.get_mobilizer_transform(sm)
    w_fd = _vee((Xp.R.matrix - Xm.R.matrix) / (2 * h) @ X.R.matrix.T)
    v_fd = (np.asarray(Xp.p) - np.asarray(Xm.p)) / (2 * h)
    report.add("V_FM = H u vs d/dt X_FM(q) along qdot = N u", subject, V, np.array([w_fd, v_fd]), rtol, atol)
    A = np.tensordot(udot, H, axes=(0, 0)) + HDu
    A_fd = (mobod.get_mobilizer_velocity(sp) - mobod.get_mobilizer_velocity(sm)) / (2 * h)
    report.add("H udot + HDot u vs d/dt V_FM", subject, A, A_fd, rtol, atol)
    qdd_fd = (mobod.get_qdot(sp) - mobod.get_qdot(sm)) / (2 * h)
    report.add("qdotdot = N udot + NDot u vs d/dt qdot", subject, qdotdot, qdd_fd, rtol, atol)
    _check_hdot_moving(report, mobod, system, base, subject, u, h, rtol, atol, np.random.default_rng([seed, 1]))
    if impl is not None:
        _check_implementation(report, impl, base, sp, sm, H, u, qdot, h, rtol, atol, np.random.default_rng(seed))
    _check_fits(report, mobod, system, base, X, V, rtol, atol)
    return _finish(report, assert_ok)


def _check_hdot_moving(report, mobod, system, base, subject, u, h, rtol, atol, rng) -> None:
    """HDot u against d/dt (H u) with u held, q moving along qdot = N u, at speeds of this mobilizer
    that are all nonzero: the State's own when they are, else random ones (a zero speed hides HDot:
    H udot + HDot u then tests H alone)."""
    big = max(1.0, float(np.abs(u).max()))
    if np.all(np.abs(u) >= 1e-3 * big):
        speeds = u
    else:
        speeds = rng.uniform(0.5, 1.5, len(u)) * rng.choice([-1.0, 1.0], len(u)) * big
        report.note(f"HDot checked at this mobilizer's speeds u = {np.array2string(speeds, precision=4)} "
                    f"(the State's u = {np.array2string(u, precision=4)} has zeros, which hide HDot)")
    s = base.copy()
    mobod.set_u(s, speeds)
    system.realize(s, Stage.Velocity)
    i = mobod.get_mobilized_body_index()
    HDu = mobod.get_matter_subsystem()._cache(s).ws.HDotu_FM[i].copy()  # what the dynamics use
    q, qdot, V = mobod.get_q(s).copy(), mobod.get_qdot(s).copy(), mobod.get_mobilizer_velocity(s).copy()

    def moved(sign: float) -> np.ndarray:
        m = s.copy()
        mobod.set_q(m, q + sign * h * qdot)
        system.realize(m, Stage.Velocity)
        return mobod.get_mobilizer_velocity(m)

    fd = (moved(1.0) - moved(-1.0)) / (2 * h)
    # the difference's round-off is relative to V_FM itself, not to its rate
    scale = max(float(np.abs(HDu).max()), float(np.abs(fd).max()), float(np.abs(V).max()))
    report.add("HDot u vs d/dt (H u) at fixed u (every speed of the mobilizer nonzero)", subject, HDu, fd, rtol,
               atol, scale)


def _check_implementation(report, impl, base, sp, sm, H, u, qdot, h, rtol, atol, rng) -> None:
    """Adjoint and finite-difference checks of a Custom implementation's other methods."""
    where = type(impl).__name__
    nu, nq = impl.get_num_u(), impl.get_num_q()
    F = rng.normal(size=(2, 3))
    v = rng.normal(size=nu)
    w = rng.normal(size=nq)
    Hm = H.reshape(nu, 6)
    report.add("multiply_by_h_transpose(F) vs (H columns)^T F", where, impl.multiply_by_h_transpose(base, F),
               Hm @ F.reshape(6), rtol, atol)
    HD = np.stack([np.asarray(impl.multiply_by_h_dot_matrix(base, e), dtype=float) for e in np.eye(nu)])
    report.add("multiply_by_h_dot_transpose(F) vs (HDot columns)^T F", where,
               impl.multiply_by_h_dot_transpose(base, F), HD.reshape(nu, 6) @ F.reshape(6), rtol, atol)
    report.add("multiply_by_h_dot_matrix(v) vs sum of its columns v_j", where,
               impl.multiply_by_h_dot_matrix(base, v), np.tensordot(v, HD, axes=(0, 0)), rtol, atol)
    N = np.stack([np.asarray(impl.multiply_by_n_matrix(base, False, e), dtype=float) for e in np.eye(nu)], axis=1)
    report.add("multiply_by_n_matrix(transpose=True) vs N^T", where, impl.multiply_by_n_matrix(base, True, w),
               N.T @ w, rtol, atol)
    report.add("multiply_by_n_inv_matrix(N v) vs v", where, impl.multiply_by_n_inv_matrix(base, False, N @ v), v,
               rtol, atol)
    Ninv = np.stack([np.asarray(impl.multiply_by_n_inv_matrix(base, False, e), dtype=float) for e in np.eye(nq)],
                    axis=1)
    report.add("multiply_by_n_inv_matrix(transpose=True) vs (N^-1)^T", where,
               impl.multiply_by_n_inv_matrix(base, True, v), Ninv.T @ v, rtol, atol)
    # NDot: the rate of N along qdot; sp/sm moved q by +-h qdot (N depends on q only).
    nd_fd = (np.asarray(impl.multiply_by_n_matrix(sp, False, v))
             - np.asarray(impl.multiply_by_n_matrix(sm, False, v))) / (2 * h)
    report.add("multiply_by_n_dot_matrix(v) vs d/dt (N v)", where, impl.multiply_by_n_dot_matrix(base, False, v),
               nd_fd, rtol, atol)
    ND = np.stack([np.asarray(impl.multiply_by_n_dot_matrix(base, False, e), dtype=float) for e in np.eye(nu)],
                  axis=1)
    report.add("multiply_by_n_dot_matrix(transpose=True) vs NDot^T", where,
               impl.multiply_by_n_dot_matrix(base, True, w), ND.T @ w, rtol, atol)


def _check_fits(report, mobod, system, base, X, V, rtol, atol) -> None:
    s = base.copy()
    try:
        mobod.set_q_to_fit_transform(s, X)
    except NotImplementedError as exc:
        report.note(f"set_q_to_fit_transform not checked: {exc}")
        return
    system.realize(s, Stage.Position)
    Xf = mobod.get_mobilizer_transform(s)
    report.add("X_FM(set_q_to_fit_transform(X_FM)) vs X_FM", repr(mobod), Xf.matrix34(), X.matrix34(), rtol, atol)
    try:
        mobod.set_u_to_fit_velocity(s, V)
    except NotImplementedError as exc:
        report.note(f"set_u_to_fit_velocity not checked: {exc}")
        return
    system.realize(s, Stage.Velocity)
    report.add("H set_u_to_fit_velocity(V_FM) vs V_FM", repr(mobod), mobod.get_mobilizer_velocity(s), V, rtol, atol)


# --------------------------------------------------------------------------------------------- forces
def _force_element(force):
    from ..multibody.forces import Force

    if isinstance(force, Force):
        return force
    if isinstance(force, Force.Custom.Implementation):
        if force._force is None:
            raise ValueError(f"check_force: {type(force).__name__} is not attached to a Force.Custom")
        return force._force
    raise TypeError(f"check_force: expected a Force element or a Force.Custom.Implementation, got "
                    f"{type(force).__name__}")


def check_force(force, state: State, *, h: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-7,
                at_rest: bool = True, assert_ok: bool = False) -> CheckReport:
    """Check that a conservative force is minus the gradient of its potential energy.

    The generalized force of the element, ``J^T F + f`` (body forces F, mobility forces f), is
    compared with ``-dPE/dq N``, each column ``-d/dh PE(q + h N e_j)`` by central differences.

    Parameters
    ----------
    force : Force or Force.Custom.Implementation
        The element (a built-in or ``Force.Custom``).
    state : State
        Where to check (realized to at least Model; copied).
    h : float
        Finite-difference step along each ``N e_j``.
    rtol, atol : float
        Tolerances (relative to the largest generalized force).
    at_rest : bool
        Evaluate the force with u = 0, so that velocity-dependent parts (dampers) drop out.
    assert_ok : bool
        Raise `CheckFailure` on a mismatch.

    Returns
    -------
    CheckReport
    """
    element = _force_element(force)
    subsystem = element.get_force_subsystem()
    system = subsystem.get_system()
    matter = system.get_matter_subsystem()
    name = f"{element!r}" + (f" ({type(element.get_implementation()).__name__})"
                             if hasattr(element, "get_implementation") else "")
    report = CheckReport("check_force", name)
    base = state.copy()
    system.realize(base, Stage.Model)
    if at_rest:
        matter.upd_u(base)[:] = 0.0
    system.realize(base, Stage.Dynamics)
    F, f = element.calc_force_contribution(base)
    generalized = matter.multiply_by_system_jacobian_transpose(base, F) + f
    q = matter.get_q(base).copy()
    nu = len(generalized)

    def energy(qq) -> float:
        s = base.copy()
        matter.upd_q(s)[:] = qq
        system.realize(s, Stage.Dynamics)
        return element.calc_potential_energy_contribution(s)

    grad = np.zeros(nu)
    for j in range(nu):
        s = base.copy()
        e = np.zeros(nu)
        e[j] = 1.0
        matter.upd_u(s)[:] = e
        system.realize(s, Stage.Velocity)
        n_j = matter.get_qdot(s).copy()  # N e_j, Custom rows included
        grad[j] = (energy(q + h * n_j) - energy(q - h * n_j)) / (2 * h)
    report.add("generalized force J^T F + f vs -dPE/dq N", name, generalized, -grad, rtol, atol)
    if not np.any(grad) and not np.any(generalized):
        report.note("both the force and the energy gradient are zero here: choose another state")
    return _finish(report, assert_ok)


# --------------------------------------------------------------------------------------------- realization
def _snapshot(state: State) -> dict:
    """Every state variable: time, q, u, z and each subsystem's discrete variables (deep copies)."""
    snap = {"t": np.array([state.get_time()])}
    if state.get_system_stage() >= Stage.Model:
        snap["q"], snap["u"], snap["z"] = state.get_q().copy(), state.get_u().copy(), state.get_z().copy()
    for ss in state._subs:
        for k, dv in enumerate(ss.discrete):
            snap[f"discrete variable {k} of subsystem '{ss.name}'"] = _copy.deepcopy(dv.value)
    return snap


def _compare_values(report: CheckReport, quantity: str, where: str, actual: Any, expected: Any) -> None:
    try:
        a = np.asarray(actual, dtype=np.float64)
        e = np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        same = bool(actual == expected) if type(actual) is type(expected) else False
        report.add(quantity, f"{where} ({actual!r} vs {expected!r})", [0.0 if same else 1.0], [0.0], 0.0, 0.0)
        return
    report.add(quantity, where, a, e, 0.0, 0.0)


def check_realize_is_pure(system, state: State, *, up_to: Stage = Stage.Report, assert_ok: bool = False) -> CheckReport:
    """Check that realizing each stage changes no state variable (t, q, u, z, discrete variables).

    A copy of ``state`` is realized one stage at a time up to ``up_to``; after each stage every
    variable must be bit-for-bit what it was before. A stage hook that writes a variable (a counter
    kept in a discrete variable, a "clamp" of u) is reported with the stage that did it.
    """
    report = CheckReport("check_realize_is_pure", repr(system))
    s = state.copy()
    system.realize(s, Stage.Model)
    before = _snapshot(s)
    for g in range(int(Stage.Instance), int(up_to) + 1):
        system.realize(s, Stage(g))
        after = _snapshot(s)
        for key, value in before.items():
            _compare_values(report, f"{key} after realizing {Stage(g).name}", key, after.get(key), value)
    return _finish(report, assert_ok)


def _outputs(system, s: State) -> dict:
    out = {"qdot": s.get_qdot(), "udot": s.get_udot(), "zdot": s.get_zdot(), "qdotdot": s.get_qdotdot(),
           "qerr": s.get_q_err(), "uerr": s.get_u_err(), "udoterr": s.get_udot_err(),
           "multipliers": s.get_multipliers()}
    if hasattr(system, "get_rigid_body_forces"):
        out["rigid body forces"] = system.get_rigid_body_forces(s)
        out["mobility forces"] = system.get_mobility_forces(s)
        out["energy"] = np.array([system.calc_energy(s)])
    return {k: np.array(v, dtype=np.float64, copy=True) for k, v in out.items()}


def check_caching(system, state: State, *, changes=("u", "q", "z", "t", "u"), seed: int = 0,
                  rtol: float = 0.0, atol: float = 0.0, assert_ok: bool = False) -> CheckReport:
    """Check that cached results equal results computed with caching disabled.

    A copy of ``state`` is realized to Acceleration; then, for each entry of ``changes`` (``"u"``,
    ``"q"``, ``"z"`` or ``"t"``), those variables are perturbed a little and the copy is realized
    again, reusing whatever its caches say is still valid. Its results (qdot, udot, zdot, qdotdot,
    the error and multiplier arrays, and for a MultibodySystem the force accumulators and the
    energy) must equal those of a second copy whose cache is discarded from Instance up. A force
    that claims ``depends_only_on_positions()`` but reads u, or a cache entry computed at too low a
    stage, shows up here.

    ``rtol = atol = 0`` asks for identical bits (the same computations on the same inputs).
    """
    report = CheckReport("check_caching", repr(system))
    rng = np.random.default_rng(seed)
    s = state.copy()
    system.realize(s, Stage.Acceleration)
    for step, what in enumerate(changes):
        if what == "u" and s.get_nu():
            s.upd_u()[:] += 0.1 * rng.normal(size=s.get_nu())
        elif what == "q" and s.get_nq():
            s.upd_q()[:] += 0.01 * rng.normal(size=s.get_nq())
        elif what == "z" and s.get_nz():
            s.upd_z()[:] += 0.1 * rng.normal(size=s.get_nz())
        elif what == "t":
            s.set_time(s.get_time() + 0.01)
        elif what not in ("u", "q", "z", "t"):
            raise ValueError(f"check_caching: unknown change {what!r}; use 'u', 'q', 'z' or 't'")
        else:
            report.note(f"change {step} ({what}): the system has no such variables")
            continue
        system.realize(s, Stage.Acceleration)
        cached = _outputs(system, s)
        fresh_state = s.copy()
        fresh_state.invalidate_all(Stage.Instance)
        system.realize(fresh_state, Stage.Acceleration)
        fresh = _outputs(system, fresh_state)
        for key in cached:
            report.add(f"{key} (cached vs recomputed)", f"after change {step} ({what})", cached[key], fresh[key],
                       rtol, atol)
    return _finish(report, assert_ok)


# --------------------------------------------------------------------------------------------- constraints
def check_constraint(constraint, state: State, *, h: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-7,
                     seed: int = 0, assert_ok: bool = False) -> CheckReport:
    """Check that a constraint's errors are successive time derivatives and its forces are G^T lambda.

    With q, u moved along the motion (``q +- h qdot``, ``u +- h udot``, udot the realized
    constrained accelerations) by central differences:

    * position-dot errors (pverr) = d/dt position errors (perr);
    * acceleration-level errors (paerr, vaerr) at the realized udot = d/dt (pverr, verr);
    * G as the matter subsystem builds it from the acceleration-error routines = d(pverr, verr)/du
      (velocity errors are linear in u, so this difference is exact);
    * the forces the force routines produce for random multipliers lambda, as generalized forces
      ``J^T F + f``, = ``G^T lambda`` (the rows of G for acceleration-only equations are taken from
      the acceleration errors, the only place they exist).

    Parameters
    ----------
    constraint : Constraint or Constraint.Custom.Implementation
    state : State
        Where to check (copied, realized to Acceleration). The constraint need not be satisfied.
    h, rtol, atol, seed, assert_ok
        As for `check_mobilizer`.

    Returns
    -------
    CheckReport
    """
    from ..multibody.constraints import Constraint

    if isinstance(constraint, Constraint.Custom.Implementation):
        if constraint._constraint is None:
            raise ValueError(f"check_constraint: {type(constraint).__name__} is not attached to a Constraint.Custom")
        constraint = constraint._constraint
    if not isinstance(constraint, Constraint):
        raise TypeError(f"check_constraint: expected a Constraint, got {type(constraint).__name__}")
    matter = constraint.get_matter_subsystem()
    system = matter.get_system()
    name = f"{constraint!r}" + (f" ({type(constraint.get_implementation()).__name__})"
                                if hasattr(constraint, "get_implementation") else "")
    report = CheckReport("check_constraint", name)
    base = state.copy()
    system.realize(base, Stage.Acceleration)
    mp, mv, ma = constraint.get_num_constraint_equations_in_use(base)
    if mp + mv + ma == 0:
        report.note("the constraint is disabled or has no equations in this state")
        return _finish(report, assert_ok)
    slots = constraint._slots(base)
    q, u = matter.get_q(base).copy(), matter.get_u(base).copy()
    qdot, udot = matter.get_qdot(base).copy(), matter.get_udot(base).copy()

    def moved(dq, du, stage) -> State:
        s = base.copy()
        matter.upd_q(s)[:] = q + dq
        matter.upd_u(s)[:] = u + du
        system.realize(s, stage)
        return s

    if mp:
        sp, sm = moved(h * qdot, 0.0, Stage.Position), moved(-h * qdot, 0.0, Stage.Position)
        fd = (constraint.get_position_errors(sp) - constraint.get_position_errors(sm)) / (2 * h)
        report.add("position-dot errors vs d/dt position errors", name, constraint.get_velocity_errors(base)[:mp],
                   fd, rtol, atol)
    nv = mp + mv
    nu = len(u)
    G = matter.calc_g(base)[slots]  # from the acceleration-error routines
    if nv:
        sp, sm = moved(h * qdot, h * udot, Stage.Velocity), moved(-h * qdot, -h * udot, Stage.Velocity)
        fd = (constraint.get_velocity_errors(sp) - constraint.get_velocity_errors(sm)) / (2 * h)
        report.add("acceleration errors vs d/dt velocity errors (at the realized udot)", name,
                   constraint.get_acceleration_errors(base)[:nv], fd, rtol, atol)
        v0 = constraint.get_velocity_errors(moved(0.0, 0.0, Stage.Velocity))
        G_fd = np.zeros((nv, nu))
        for j in range(nu):
            e = np.zeros(nu)
            e[j] = 1.0
            G_fd[:, j] = constraint.get_velocity_errors(moved(0.0, e, Stage.Velocity)) - v0
        report.add("G (from the acceleration errors) vs d(velocity errors)/du", name, G[:nv], G_fd, rtol, atol)
        G = G.copy()
        G[:nv] = G_fd
    lam = np.random.default_rng(seed).normal(size=len(slots))
    full = np.zeros(sum(matter.get_num_constraint_equations(base)))
    full[slots] = lam
    F, f = matter.calc_constraint_forces_from_multipliers(base, full)
    generalized = matter.multiply_by_system_jacobian_transpose(base, F) + f
    report.add("constraint forces for multipliers lambda (J^T F + f) vs G^T lambda", name, generalized, G.T @ lam,
               rtol, atol)
    return _finish(report, assert_ok)
