"""The constraints the compiled time loop solves itself: which plans qualify, and their arrays.

The compiled loop (``simtk_core.TreeStepper`` with a ``LoopConstraints``) repeats the Python path's
constraint solve and projection for the rows of the holonomic families (Coincident, Angle, Plane,
Rod) and of NoSlip: ``Ball``, ``Weld``, ``ConstantOrientation``, ``ConstantAngle``, ``Rod``,
``PointInPlane``, ``PointOnLine`` and ``NoSlip1D`` constraints; for ``ConstantCoordinate`` and
``ConstantSpeed``; and for mobilizer locks (``MobilizedBody.lock``: prescribed speeds of constant
value), when A is small enough for the compiled factor. Any other kind (``ConstantAcceleration``, a
coupler, a Custom constraint, a prescribed Motion) keeps the model on the Python time loop, and
``Integrator.describe_fast_path`` names it.
"""
from __future__ import annotations

import numpy as np

from ... import _core
from . import _rows as rows
from ._solver import _SMALL, _Plan
from .builtin_constraints import ConstantCoordinate, ConstantSpeed
from .motion import _LockSource, _PrescribedU

_NO_INT = np.zeros(0, dtype=np.intp)

__all__: list[str] = []


def _kinds(matter, plan: _Plan) -> str:
    names = sorted({type(matter.get_constraint(ci)).__name__ for ci in plan.slots})
    if plan.motion_slots:
        names.append("locks and Motions")
    return ", ".join(names)


#: The row families the compiled loop evaluates, by the name LoopConstraints knows them by.
_FAMILIES = {rows.Coincident: "coincident", rows.Angle: "angle", rows.Plane: "plane", rows.Rod: "rod",
             rows.NoSlip: "noslip"}
_COMPILED_KINDS = ("Ball, Weld, ConstantOrientation, ConstantAngle, Rod, PointInPlane, PointOnLine, NoSlip1D, "
                   "ConstantCoordinate and ConstantSpeed")


def _class_rows(plan: _Plan, part) -> dict | None:
    """The spec of a class part the compiled loop evaluates (ConstantCoordinate, ConstantSpeed, a lock's
    prescribed speeds), else None."""
    P, eq = part.packed, part.eq.reshape(-1)
    if part.cls is ConstantCoordinate:
        body = [plan.coord_body[c] for c in P["cid"]]
        return dict(family="coordinate", eq=eq, q=P["q"], body=body, value=P["value"], e0=0, s0=0)
    if part.cls is ConstantSpeed:
        return dict(family="speed", eq=eq, u=P["u"], value=P["value"], e0=0, s0=0)
    if part.cls is _PrescribedU and all(type(src) is _LockSource for src, _, _ in P["sources"]):
        value = np.concatenate([src.values for src, _, _ in P["sources"]])
        return dict(family="speed", eq=eq, u=P["u"], value=value, e0=0, s0=0)
    return None


def loop_constraints_spec(matter, plan: _Plan) -> tuple[dict | None, str | None]:
    """``(spec, None)`` for :func:`make_loop_constraints` when the compiled loop can solve the plan's
    equations, ``(None, None)`` when there are none, else ``(None, reason)``."""
    if plan.m == 0:
        return None, None
    parts = []
    for part in plan.parts:
        if part.fam is None:
            spec = _class_rows(plan, part)
        elif part.fam in _FAMILIES:
            spec = dict(family=_FAMILIES[part.fam], eq=part.eq_flat, e0=part.e0, s0=part.s0)
        else:
            spec = None
        if spec is None:  # (Custom constraints and acceleration-only rows are such class parts)
            return None, (f"its constraints ({_kinds(matter, plan)}) are solved in Python; the compiled loop "
                          f"solves {_COMPILED_KINDS} constraints and locks only")
        parts.append(spec)
        if part.fam is None:
            continue
        P = part.P
        if part.fam is rows.Coincident:
            spec.update(b1=P["b1"], s1=P["s1"], b2=P["b2"], s2=P["s2"], a=P["a"], ground=bool(P["ground"]))
        elif part.fam is rows.Angle:
            spec.update(bb=P["bb"], ab=P["ab"], bf=P["bf"], af=P["af"], cos=P["cos"])
        elif part.fam is rows.Plane:
            spec.update(bp=P["bp"], n=P["n"], h=P["h"], bf=P["bf"], s=P["s"])
        elif part.fam is rows.NoSlip:
            spec.update(bc=P["bc"], P=P["P"], n=P["n"], b0=P["b0"], b1=P["b1"], a=P["a"])
        else:
            spec.update(b1=P["b1"], s1=P["s1"], b2=P["b2"], s2=P["s2"], L=P["L"], a=P["a"])
    if plan.quaternion_err_start != plan.mp:
        return None, f"its constraints ({_kinds(matter, plan)}) are laid out for the Python solve"
    if plan.m > _SMALL:
        return None, (f"its {plan.m} constraint equations are factored by LAPACK in Python (the compiled "
                      f"loop factors up to {_SMALL})")
    eq, start, stop = plan.rows if plan.rows is not None else (_NO_INT, _NO_INT, _NO_INT)
    return dict(mp=plan.mp, m=plan.m, parts=parts, e_body=plan.e_body, e_st0=plan.e_st0, e_F0=plan.e_F0,
                rows_eq=eq, rows_start=start, rows_stop=stop, st_b=plan.st_b, st_s0=plan.st_s0), None


def make_loop_constraints(batch, spec: dict):
    """The ``simtk_core.LoopConstraints`` of ``spec`` (from :func:`loop_constraints_spec`) over the
    tree of ``batch`` (a ``simtk_core.TreeBatch``), for ``simtk._core.make_tree_stepper``."""
    return _core._k.LoopConstraints(batch, spec["mp"], spec["m"], spec["parts"], spec["e_body"], spec["e_st0"], spec["e_F0"],
                                    spec["rows_eq"], spec["rows_start"], spec["rows_stop"], spec["st_b"],
                                    spec["st_s0"])
