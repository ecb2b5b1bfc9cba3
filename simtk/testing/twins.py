"""Compare an element with its twin in one call: a jitted element and its Python version, a user's
element and the built-in it stands for.

The two may be in one System (then one State serves both) or in two Systems built alike (the same
mobilizers in the same order, so that their q and u mean the same): at random states drawn around
the given one, the same q and u are written into both, and what each element computes is compared:

==================  ===========================================================================
Force               its generalized force J^T F + f (whichever of body and mobility forces it
                    uses) and its potential energy
MobilizedBody       X_FM, V_FM and, in two Systems, the whole udot (H and HDot show there)
Constraint          its position, velocity and acceleration errors and its rows of G
==================  ===========================================================================
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..common.stage import Stage
from ..common.state import State
from .report import CheckReport

__all__ = ["check_twins"]


def _kind(element: Any) -> tuple[str, Any]:
    from ..multibody.constraints import Constraint
    from ..multibody.forces import Force
    from ..multibody.tree.mobilized_body import MobilizedBody

    if isinstance(element, Force.Custom.Implementation) and element._force is not None:
        element = element._force
    if isinstance(element, Constraint.Custom.Implementation) and element._constraint is not None:
        element = element._constraint
    for kind, cls in (("force", Force), ("mobilizer", MobilizedBody), ("constraint", Constraint)):
        if isinstance(element, cls):
            return kind, element
    raise TypeError(f"check_twins: expected a Force, MobilizedBody or Constraint, got {type(element).__name__}")


def _system_of(kind: str, element: Any):
    if kind == "force":
        return element.get_force_subsystem().get_system()
    return element.get_matter_subsystem().get_system()


def _draw(matter, base: State, rng: np.random.Generator, q_scale: float, u_scale: float) -> tuple:
    """q around the base's (each quaternion normalized) and random u."""
    q = matter.get_q(base) + q_scale * rng.normal(size=matter.get_q(base).shape)
    layout = matter._layout(base)
    qb = np.asarray(layout.quaternion_bodies, dtype=np.int64)
    if len(qb):
        idx = np.asarray(layout.qoff, dtype=np.int64)[qb][:, None] + np.arange(4)
        q[idx] /= np.linalg.norm(q[idx], axis=1, keepdims=True)
    return q, u_scale * rng.normal(size=matter.get_u(base).shape)


def _placed(system, base: State, q: np.ndarray, u: np.ndarray, stage: Stage) -> State:
    s = base.copy()
    matter = system.get_matter_subsystem()
    matter.upd_q(s)[:] = q
    matter.upd_u(s)[:] = u
    system.realize(s, stage)
    return s


def check_twins(a: Any, b: Any, state_a: State, state_b: State | None = None, *, n_states: int = 5, seed: int = 0,
                q_scale: float = 0.3, u_scale: float = 1.0, rtol: float = 1e-9, atol: float = 1e-12,
                assert_ok: bool = False) -> CheckReport:
    """Compare element ``a`` with its twin ``b`` at ``n_states`` random states.

    Parameters
    ----------
    a, b : Force, MobilizedBody or Constraint (or a Custom implementation attached to one)
        The two elements, of the same kind.
    state_a : State
        A State of ``a``'s System (copied), around which the states are drawn.
    state_b : State, optional
        A State of ``b``'s System when it is another System (built alike: same nq and nu, in the
        same order); None when ``b`` is in ``a``'s System.
    n_states, seed : int
        How many random states, from which seed.
    q_scale, u_scale : float
        Spread of the drawn q (around ``state_a``'s, quaternions normalized) and u (around 0).
    rtol, atol : float
        Tolerances (relative to each quantity's largest entry); the defaults suit twins that
        compute the same formulas (a jitted element against its Python version).
    assert_ok : bool
        Raise `CheckFailure` on a mismatch.

    Returns
    -------
    CheckReport
    """
    from .checkers import _finish

    kind_a, a = _kind(a)
    kind_b, b = _kind(b)
    if kind_a != kind_b:
        raise TypeError(f"check_twins: {a!r} is a {kind_a} and {b!r} a {kind_b}: twins are of one kind")
    if not (isinstance(n_states, int) and n_states >= 1):
        raise ValueError(f"check_twins: n_states must be a positive int, got {n_states!r}")
    sys_a, sys_b = _system_of(kind_a, a), _system_of(kind_b, b)
    if state_b is None and sys_b is not sys_a:
        raise ValueError(f"check_twins: {b!r} is in another System than {a!r}: give a State of it (state_b)")
    base_a = state_a.copy()
    sys_a.realize(base_a, Stage.Model)
    base_b = base_a if state_b is None else state_b.copy()
    sys_b.realize(base_b, Stage.Model)
    m_a, m_b = sys_a.get_matter_subsystem(), sys_b.get_matter_subsystem()
    if (m_a.get_q(base_a).shape, m_a.get_u(base_a).shape) != (m_b.get_q(base_b).shape, m_b.get_u(base_b).shape):
        raise ValueError(f"check_twins: the two Systems' q and u differ in size ({len(m_a.get_q(base_a))}, "
                         f"{len(m_a.get_u(base_a))}) vs ({len(m_b.get_q(base_b))}, {len(m_b.get_u(base_b))}): "
                         "build the twins alike")
    report = CheckReport("check_twins", f"{a!r} vs {b!r}")
    rng = np.random.default_rng(seed)
    for k in range(n_states):
        q, u = _draw(m_a, base_a, rng, q_scale, u_scale)
        where = f"state {k}"
        if kind_a == "force":
            sa, sb = _placed(sys_a, base_a, q, u, Stage.Dynamics), _placed(sys_b, base_b, q, u, Stage.Dynamics)
            Fa, fa = a.calc_force_contribution(sa)
            ga = m_a.multiply_by_system_jacobian_transpose(sa, Fa) + fa
            Fb, fb = b.calc_force_contribution(sb)
            gb = m_b.multiply_by_system_jacobian_transpose(sb, Fb) + fb
            report.add("generalized force J^T F + f", where, ga, gb, rtol, atol)
            report.add("potential energy", where, np.array([a.calc_potential_energy_contribution(sa)]),
                       np.array([b.calc_potential_energy_contribution(sb)]), rtol, atol)
        elif kind_a == "mobilizer":
            stage = Stage.Acceleration if sys_b is not sys_a else Stage.Velocity
            sa, sb = _placed(sys_a, base_a, q, u, stage), _placed(sys_b, base_b, q, u, stage)
            Xa, Xb = a.get_mobilizer_transform(sa), b.get_mobilizer_transform(sb)
            report.add("R_FM", where, Xa.R.matrix, Xb.R.matrix, rtol, atol)
            report.add("p_FM", where, np.asarray(Xa.p), np.asarray(Xb.p), rtol, atol)
            report.add("V_FM", where, a.get_mobilizer_velocity(sa), b.get_mobilizer_velocity(sb), rtol, atol)
            if sys_b is not sys_a:
                report.add("udot of the System", where, sa.get_udot(), sb.get_udot(), rtol, atol)
        else:
            sa, sb = _placed(sys_a, base_a, q, u, Stage.Acceleration), _placed(sys_b, base_b, q, u, Stage.Acceleration)
            for what in ("position", "velocity", "acceleration"):
                get = f"get_{what}_errors"
                report.add(f"{what} errors", where, getattr(a, get)(sa), getattr(b, get)(sb), rtol, atol)
            report.add("rows of G", where, m_a.calc_g(sa)[a._slots(sa)], m_b.calc_g(sb)[b._slots(sb)], rtol, atol)
    return _finish(report, assert_ok)
