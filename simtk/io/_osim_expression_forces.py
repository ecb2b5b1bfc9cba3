"""OpenSim's forces given by a Lepton expression: ExpressionBasedCoordinateForce and
ExpressionBasedPointToPointForce, each one ``Force.Custom`` evaluating its parsed expression
(`simtk.io._lepton`; no Python ``eval``).

- ExpressionBasedCoordinateForce: the generalized force ``expression(q, qdot)`` on its coordinate's
  mobility (OpenSim's ``applyGeneralizedForce``);
- ExpressionBasedPointToPointForce: ``f = expression(d, ddot)``, d the distance from point1 on body1
  to point2 on body2 and ddot its rate; f along the unit vector from point1 to point2 on body1 and
  its opposite on body2 (a positive f pulls the points together, as OpenSim applies it).

A value that is not finite (``1/q`` at q = 0) raises naming the element, rather than pushing NaN.
"""
from __future__ import annotations

import math

import numpy as np

from simtk import Force, MobilizedBody, State
from simtk.multibody.forces.force import _CustomImplementation

from ._lepton import Expression, LeptonError
from ._osim_reader import _clean_name, _Element, _or, _Reader

__all__: list[str] = []

EXPRESSION_FORCES = ("ExpressionBasedCoordinateForce", "ExpressionBasedPointToPointForce")
_PROPS = {
    "ExpressionBasedCoordinateForce": {"coordinate", "expression", "appliesForce", "components"},
    "ExpressionBasedPointToPointForce": {"body1", "body2", "point1", "point2", "expression", "appliesForce",
                                         "components"},
}


def _refuse(name: str, kind: str, expr: Expression, value: float, args: str) -> ValueError:
    return ValueError(f"{kind} {name!r}: its expression {expr.text!r} is {value} at {args}; it must be finite")


class _CoordinateExpression(_CustomImplementation):
    def __init__(self, name: str, expr: Expression, mobod: MobilizedBody, index: int):
        super().__init__()
        self.name, self.expr, self.mobod, self.index = name, expr, mobod, index

    def calc_force(self, state: State, body_forces: np.ndarray, particle_forces: np.ndarray,
                   mobility_forces: np.ndarray) -> None:
        q = self.mobod.get_one_q(state, self.index)
        qdot = self.mobod.get_one_u(state, self.index)  # OpenSim's speed: qdot of the Euler-angle mobilizers
        f = self.expr.value([q, qdot])
        if not math.isfinite(f):
            raise _refuse(self.name, "ExpressionBasedCoordinateForce", self.expr, f, f"q = {q}, qdot = {qdot}")
        self.mobod.apply_one_mobility_force(state, self.index, f, mobility_forces)


class _PointToPointExpression(_CustomImplementation):
    def __init__(self, name: str, expr: Expression, b1: MobilizedBody, p1: np.ndarray, b2: MobilizedBody,
                 p2: np.ndarray):
        super().__init__()
        self.name, self.expr, self.b1, self.p1, self.b2, self.p2 = name, expr, b1, p1, b2, p2

    def calc_force(self, state: State, body_forces: np.ndarray, particle_forces: np.ndarray,
                   mobility_forces: np.ndarray) -> None:
        r = self.b2.find_station_location_in_ground(state, self.p2) - self.b1.find_station_location_in_ground(
            state, self.p1)
        v = self.b2.find_station_velocity_in_ground(state, self.p2) - self.b1.find_station_velocity_in_ground(
            state, self.p1)
        d = float(np.linalg.norm(r))
        if d == 0.0:  # no direction to push along (OpenSim divides by zero here)
            raise ValueError(f"ExpressionBasedPointToPointForce {self.name!r}: its two points coincide, so the "
                             "force has no direction")
        e = r / d
        ddot = float(v @ e)
        f = self.expr.value([d, ddot])
        if not math.isfinite(f):
            raise _refuse(self.name, "ExpressionBasedPointToPointForce", self.expr, f, f"d = {d}, ddot = {ddot}")
        self.b1.apply_force_to_body_point(state, self.p1, f * e, body_forces)
        self.b2.apply_force_to_body_point(state, self.p2, -f * e, body_forces)


def build_expression_force(r: _Reader, out, el: _Element, unique, wrap) -> None:
    """Build one ExpressionBasedCoordinateForce or ExpressionBasedPointToPointForce."""
    name = r.name_of(el)
    if name in out.force_elements:
        raise r.error(el, f"a second force named {name!r}; force names must be unique")
    for c in el:
        if c.tag not in _PROPS[el.tag]:
            r.notes.append(f"unknown property <{c.tag}> of {el.tag} {name!r} (line {c.line}) ignored")
    coordinate = el.tag == "ExpressionBasedCoordinateForce"
    text = r.string(el, "expression", required=False) or "0.0"
    try:
        expr = Expression(text, ["q", "qdot"] if coordinate else ["d", "ddot"])
    except LeptonError as exc:
        raise r.error(_or(r.child(el, "expression"), el), f"{el.tag} {name!r}: malformed <expression>: {exc}") from None
    fs = out.forces
    with wrap(r, el, f"{el.tag} {name!r}"):
        if coordinate:
            cname = r.string(el, "coordinate")
            c = out.coordinates.get(cname)
            if c is None:
                raise r.error(r.child(el, "coordinate"), f"{el.tag} {name!r}: <coordinate> {cname!r} is not a "
                                                         "coordinate of the model")
            impl: _CustomImplementation = _CoordinateExpression(name, expr, c.mobod, c.index)
        else:
            ends = []
            for k in ("1", "2"):
                bname = r.string(el, "body" + k)
                mobod = out.bodies.get(bname)
                if mobod is None:
                    raise r.error(r.child(el, "body" + k), f"{el.tag} {name!r}: <body{k}> {bname!r} is not a body "
                                                           "of the model")
                ends.append((mobod, r.numbers(el, "point" + k, 3, [0.0, 0.0, 0.0])))
            impl = _PointToPointExpression(name, expr, ends[0][0], ends[0][1], ends[1][0], ends[1][1])
        made = Force.Custom(fs, impl, name=unique(fs, _clean_name(name)))
        if not r.boolean(el, "appliesForce", True):
            made.set_disabled_by_default(True)
    out.force_elements[name] = [made]
