"""The constraints the compiled time loop solves itself: which plans qualify, and their arrays.

The compiled loop (``simtk_core.TreeStepper`` with a ``LoopConstraints``) repeats the Python path's
constraint solve and projection for the rows of the holonomic families (Coincident, Angle, Plane,
Rod) and of NoSlip: ``Ball``, ``Weld``, ``ConstantOrientation``, ``ConstantAngle``, ``Rod``,
``PointInPlane``, ``PointOnLine`` and ``NoSlip1D`` constraints; for ``ConstantCoordinate``,
``ConstantSpeed`` and ``ConstantAcceleration``; for mobilizer locks (``MobilizedBody.lock``) at any
level; for the built-in Motions (``Motion.Steady``, and ``Motion.Sinusoid`` at any level, whose
targets the loop evaluates at each stage's time); and for ``CoordinateCoupler``, ``SpeedCoupler`` and
``PrescribedMotion`` when their functions compile (``FunctionTableBuilder.try_add``: the built-in
families; the loop evaluates them from one ``FunctionTable``); for ``Constraint.Jit`` (its kernel, called
without the GIL); all when A is small enough for the
compiled factor. Any other kind (a Custom constraint, a ``Motion.Custom``, a coupler or prescribed
motion whose function is a user's), and any row on a coordinate of a Custom or reversed mobilizer (the
loop evaluates N by joint type; such a body's N is its owner's Python, which the matter's Python solve
calls), keeps the model on the Python time loop, and ``Integrator.describe_fast_path`` names it.
"""
from __future__ import annotations

import numpy as np

from ... import _core
from ...common.function import FunctionTableBuilder
from . import _rows as rows
from ._solver import _Plan
from .builtin_constraints import ConstantAcceleration, ConstantCoordinate, ConstantSpeed
from .function_constraints import CoordinateCoupler, PrescribedMotion, SpeedCoupler
from .motion import _LockSource, _PrescribedQ, _PrescribedU, _PrescribedUDot, _Sinusoid, _Steady

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
                   "ConstantCoordinate, ConstantSpeed and ConstantAcceleration constraints, CoordinateCoupler, "
                   "SpeedCoupler and PrescribedMotion constraints of built-in Functions, Jit constraints, locks, and "
                   "Steady and Sinusoid Motions")
#: The kinds whose rows are a Function's
_FUNCTION_KINDS = (CoordinateCoupler, SpeedCoupler, PrescribedMotion)


def _constant(values) -> tuple[list, np.ndarray]:
    """Rows held at ``values``: the targets' names and parameters (a constant's value is its a)."""
    values = np.asarray(values, dtype=np.float64)
    params = np.zeros((len(values), 3))
    params[:, 0] = values
    return ["constant"] * len(values), params


def _functions_of(part) -> list:
    """The Functions of a coupler or PrescribedMotion part, one per element, in order."""
    if part.cls is PrescribedMotion:
        return list(part.packed["f"])
    return [row[0] for row in part.packed]


def _refused(matter, plan: _Plan, part, builder: FunctionTableBuilder) -> str:
    """Why a class part is solved in Python: a Motion evaluated in Python, a Function without a compiled
    form (naming the constraint and the class, the function's or an operand's), or a constraint kind."""
    if getattr(part.cls, "_is_motion", False):
        src = next((s for s, _, _ in part.packed["sources"] if type(s) not in (_LockSource, _Steady, _Sinusoid)),
                   None)
        if src is not None:
            return f"{src!r}, whose targets are computed in Python, is not compiled"
    if part.cls in _FUNCTION_KINDS:
        for f, eq in zip(_functions_of(part), part.eq[:, 0].tolist()):
            try:
                builder.add(f)
            except NotImplementedError as exc:
                owner = next((matter.get_constraint(ci) for ci, e in plan.slots.items() if e[0] == eq), None)
                # (the builder's message names the class without a compiled form, then advises its callers)
                what = str(exc).split(" (", 1)[0]
                return (f"the function of {owner!r} is evaluated in Python: {what}, a user's Function or a "
                        f"subclass of a built-in one, whose methods the core cannot run")
    return f"a {part.cls.__name__} constraint is not compiled"


def _custom_coordinate_body(matter, plan: _Plan):
    """The first Custom (or reversed) mobilized body one of whose coordinates the plan's rows read, or None:
    the loop evaluates N(q) by joint type, and such a body's N is its owner's Python."""
    codes = plan._layout.codes
    for b in plan.coord_body:
        if codes[b] == _core.CUSTOM:
            return matter.get_mobilized_body(b)
    return None


def _motion_targets(plan: _Plan, sources) -> tuple[list, np.ndarray] | None:
    """The targets of a Motion part's rows, source by source (each has n rows), or None when a source
    is evaluated in Python (a Motion.Custom)."""
    names, params = [], []
    for src, _, n in sources:
        if type(src) is _LockSource:
            more = _constant(src.values)
        elif type(src) is _Steady:
            more = _constant(src._velocity(plan._state, n)[0])
        elif type(src) is _Sinusoid:
            more = ["sinusoid"] * n, np.tile([src._a, src._w, src._p], (n, 1))
        else:
            return None
        names += more[0]
        params.append(more[1])
    return names, np.concatenate(params)


def _coupler_rows(plan: _Plan, part, builder: FunctionTableBuilder) -> dict | None:
    """The spec of a part of couplers or prescribed motions whose functions all compile (appended to
    ``builder``), else None."""
    P, eq, cls = part.packed, part.eq.reshape(-1), part.cls
    fn = [builder.try_add(f) for f in _functions_of(part)]
    if any(i is None for i in fn):
        return None
    if cls is PrescribedMotion:  # q_i - f(t): a coordinate row whose target is f's (f, f', f'') at t
        K = len(fn)
        return dict(family="coordinate", q=P["q"], body=[plan.coord_body[c] for c in P["cid"]], qdot_rows=True,
                    target=["function"] * K, params=np.zeros((K, 3)), fn=fn, eq=eq, e0=0, s0=0)
    if cls is CoordinateCoupler:  # f(q[args])
        args = [plan.coord_q[c].tolist() for _, c in P]
        bodies = [[plan.coord_body[k] for k in c.tolist()] for _, c in P]
        nus = [0] * len(P)
    else:  # f(u[speed args], q[coordinate args])
        args = [ui.tolist() + plan.coord_q[qc].tolist() for _, ui, qc in P]
        bodies = [[0] * len(ui) + [plan.coord_body[k] for k in qc.tolist()] for _, ui, qc in P]
        nus = [len(ui) for _, ui, _ in P]
    return dict(family="coupler" if cls is CoordinateCoupler else "speed_coupler", fn=fn, args=args, nus=nus,
                bodies=bodies, eq=eq, e0=0, s0=0)


def _class_rows(plan: _Plan, part, builder: FunctionTableBuilder) -> dict | None:
    """The spec of a class part the compiled loop evaluates (the Constant* kinds, couplers and prescribed
    motions of compiled Functions, locks, Steady and Sinusoid Motions), else None."""
    P, eq, cls = part.packed, part.eq.reshape(-1), part.cls
    if hasattr(cls, "_loop_rows"):  # (Constraint.Jit: its kernel's rows)
        return cls._loop_rows(P, part.eq)
    if cls in _FUNCTION_KINDS:
        return _coupler_rows(plan, part, builder)
    if cls is ConstantCoordinate or cls is _PrescribedQ:
        targets = _constant(P["value"]) if cls is ConstantCoordinate else _motion_targets(plan, P["sources"])
        family = dict(family="coordinate", q=P["q"], body=[plan.coord_body[c] for c in P["cid"]],
                      qdot_rows=cls is _PrescribedQ)
    elif cls is ConstantSpeed or cls is ConstantAcceleration:
        targets = _constant(P["value"])
        family = dict(family="speed" if cls is ConstantSpeed else "udot", u=P["u"])
    elif cls is _PrescribedU or cls is _PrescribedUDot:
        targets = _motion_targets(plan, P["sources"])
        family = dict(family="speed" if cls is _PrescribedU else "udot", u=P["u"])
    else:
        return None
    if targets is None:
        return None
    return dict(family, eq=eq, target=targets[0], params=targets[1], e0=0, s0=0)


def loop_constraints_spec(matter, plan: _Plan) -> tuple[dict | None, str | None]:
    """``(spec, None)`` for :func:`make_loop_constraints` when the compiled loop can solve the plan's
    equations, ``(None, None)`` when there are none, else ``(None, reason)``."""
    if plan.m == 0:
        return None, None
    custom = _custom_coordinate_body(matter, plan)
    if custom is not None:
        return None, (f"its constraints ({_kinds(matter, plan)}) are solved in Python: a coordinate of {custom!r} is "
                      "constrained, whose N the loop's rows cannot evaluate (its mobilizer is Python's)")
    parts = []
    builder = FunctionTableBuilder()  # the functions of the couplers and prescribed motions, in one table
    for part in plan.parts:
        if part.fam is None:
            spec = _class_rows(plan, part, builder)
        elif part.fam in _FAMILIES:
            spec = dict(family=_FAMILIES[part.fam], eq=part.eq_flat, e0=part.e0, s0=part.s0)
        else:
            spec = None
        if spec is None:  # (Custom constraints, Motion.Custom and users' Functions are such class parts)
            return None, (f"its constraints ({_kinds(matter, plan)}) are solved in Python: "
                          f"{_refused(matter, plan, part, builder)} (the compiled loop solves {_COMPILED_KINDS})")
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
    eq, start, stop = plan.rows if plan.rows is not None else (_NO_INT, _NO_INT, _NO_INT)
    return dict(mp=plan.mp, nv=plan.mp + plan.mv, m=plan.m, parts=parts, e_body=plan.e_body, e_st0=plan.e_st0,
                e_F0=plan.e_F0, rows_eq=eq, rows_start=start, rows_stop=stop, st_b=plan.st_b, st_s0=plan.st_s0,
                functions=builder.build() if len(builder) else None), None


def make_loop_constraints(batch, spec: dict):
    """The ``simtk_core.LoopConstraints`` of ``spec`` (from :func:`loop_constraints_spec`) over the
    tree of ``batch`` (a ``simtk_core.TreeBatch``), for ``simtk._core.make_tree_stepper``."""
    return _core._k.LoopConstraints(batch, spec["mp"], spec["nv"], spec["m"], spec["parts"], spec["e_body"],
                                    spec["e_st0"], spec["e_F0"], spec["rows_eq"], spec["rows_start"],
                                    spec["rows_stop"], spec["st_b"], spec["st_s0"], spec["functions"])
