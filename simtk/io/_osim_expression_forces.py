"""OpenSim's forces given by a Lepton expression: ExpressionBasedCoordinateForce and
ExpressionBasedPointToPointForce, each one ``Force.Custom`` evaluating its parsed expression
(`simtk.io._lepton`; no Python ``eval``).

- ExpressionBasedCoordinateForce: the generalized force ``expression(q, qdot)`` on its coordinate's
  mobility (OpenSim's ``applyGeneralizedForce``);
- ExpressionBasedPointToPointForce: ``f = expression(d, ddot)``, d the distance from point1 on body1
  to point2 on body2 and ddot its rate; f along the unit vector from point1 to point2 on body1 and
  its opposite on body2 (a positive f pulls the points together, as OpenSim applies it).

A value that is not finite (``1/q`` at q = 0) raises naming the element, rather than pushing NaN.

The implementations keep their parameters (the OpenSim name, the expression's text, the bodies and
points) as declared Properties and are registered kinds (``OpenSim.ExpressionBasedCoordinateForce``,
``OpenSim.ExpressionBasedPointToPointForce``): the reader describes each force as a node, which the
builder makes into a ``Force.Custom``, and a model file keeps it.
"""
from __future__ import annotations

import math

import numpy as np

from simtk import MobilizedBody, State
from simtk.common.property import Property
from simtk.multibody.forces.force import _CustomImplementation

from ._lepton import Expression, LeptonError
from ._osim_elements import element_of
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
    label = Property(attr="_label", doc="the OpenSim force's name, for errors")
    expression = Property(attr="_text", doc="the Lepton expression of q and qdot")
    body = Property(attr="_mobod", doc="the body whose mobilizer's coordinate it is")
    which = Property(attr="_index", doc="the coordinate's index among the mobilizer's q")

    def __init__(self, label: str, expression: str, body: MobilizedBody, which: int):
        super().__init__()
        self._label, self._text, self._mobod, self._index = label, expression, body, int(which)
        self._expr = Expression(expression, _VARIABLES["ExpressionBasedCoordinateForce"])

    def calc_force(self, state: State, body_forces: np.ndarray, particle_forces: np.ndarray,
                   mobility_forces: np.ndarray) -> None:
        q = self._mobod.get_one_q(state, self._index)
        qdot = self._mobod.get_one_u(state, self._index)  # OpenSim's speed: qdot of the Euler-angle mobilizers
        f = self._expr.value([q, qdot])
        if not math.isfinite(f):
            raise _refuse(self._label, "ExpressionBasedCoordinateForce", self._expr, f, f"q = {q}, qdot = {qdot}")
        self._mobod.apply_one_mobility_force(state, self._index, f, mobility_forces)


class _PointToPointExpression(_CustomImplementation):
    label = Property(attr="_label", doc="the OpenSim force's name, for errors")
    expression = Property(attr="_text", doc="the Lepton expression of d and ddot")
    body1 = Property(attr="_b1", doc="the first point's body")
    point1 = Property(attr="_p1", doc="the first point, in body1")
    body2 = Property(attr="_b2", doc="the second point's body")
    point2 = Property(attr="_p2", doc="the second point, in body2")

    def __init__(self, label: str, expression: str, body1: MobilizedBody, point1, body2: MobilizedBody, point2):
        super().__init__()
        self._label, self._text = label, expression
        self._b1, self._p1 = body1, np.asarray(point1, dtype=float)
        self._b2, self._p2 = body2, np.asarray(point2, dtype=float)
        self._expr = Expression(expression, _VARIABLES["ExpressionBasedPointToPointForce"])

    def calc_force(self, state: State, body_forces: np.ndarray, particle_forces: np.ndarray,
                   mobility_forces: np.ndarray) -> None:
        r = self._b2.find_station_location_in_ground(state, self._p2) - self._b1.find_station_location_in_ground(
            state, self._p1)
        v = self._b2.find_station_velocity_in_ground(state, self._p2) - self._b1.find_station_velocity_in_ground(
            state, self._p1)
        d = float(np.linalg.norm(r))
        if d == 0.0:  # no direction to push along (OpenSim divides by zero here)
            raise ValueError(f"ExpressionBasedPointToPointForce {self._label!r}: its two points coincide, so the "
                             "force has no direction")
        e = r / d
        ddot = float(v @ e)
        f = self._expr.value([d, ddot])
        if not math.isfinite(f):
            raise _refuse(self._label, "ExpressionBasedPointToPointForce", self._expr, f, f"d = {d}, ddot = {ddot}")
        self._b1.apply_force_to_body_point(state, self._p1, f * e, body_forces)
        self._b2.apply_force_to_body_point(state, self._p2, -f * e, body_forces)


_VARIABLES = {"ExpressionBasedCoordinateForce": ["q", "qdot"], "ExpressionBasedPointToPointForce": ["d", "ddot"]}
#: the registered kind of each force's implementation (``_model_registry_osim`` registers them)
KINDS = {"ExpressionBasedCoordinateForce": ("OpenSim.ExpressionBasedCoordinateForce", _CoordinateExpression),
         "ExpressionBasedPointToPointForce": ("OpenSim.ExpressionBasedPointToPointForce", _PointToPointExpression)}


def build_expression_force(r: _Reader, out, el: _Element) -> None:
    """Describe one ExpressionBasedCoordinateForce or ExpressionBasedPointToPointForce."""
    name = r.new_force(el, out.force_elements, _PROPS[el.tag])
    coordinate = el.tag == "ExpressionBasedCoordinateForce"
    text = r.string(el, "expression", required=False) or "0.0"
    try:  # parsed here to name the <expression>'s line; the element parses it again when built
        Expression(text, _VARIABLES[el.tag])
    except LeptonError as exc:
        raise r.error(_or(r.child(el, "expression"), el), f"{el.tag} {name!r}: malformed <expression>: {exc}") from None
    if coordinate:
        cname = r.string(el, "coordinate")
        c = out.coordinates.get(cname)
        if c is None:
            raise r.error(r.child(el, "coordinate"), f"{el.tag} {name!r}: <coordinate> {cname!r} is not a "
                                                     "coordinate of the model")
        items = dict(body=c.mobod, which=c.index)
    else:
        items = {}
        for k in ("1", "2"):
            bname = r.string(el, "body" + k)
            mobod = out.bodies.get(bname)
            if mobod is None:
                raise r.error(r.child(el, "body" + k), f"{el.tag} {name!r}: <body{k}> {bname!r} is not a body "
                                                       "of the model")
            items["body" + k] = mobod
            items["point" + k] = r.numbers(el, "point" + k, 3, [0.0, 0.0, 0.0])
    made = out.desc.add(KINDS[el.tag][0], out.forces, out.desc.unique_name(out.forces, _clean_name(name)),
                        line=el.line, element=element_of(el), label=name, expression=text,
                        disabled=None if r.boolean(el, "appliesForce", True) else True, **items)
    out.force_elements[name] = [made]
