"""Actuators and controllers of an .osim file: CoordinateActuator, TorqueActuator, PointActuator and
PrescribedController.

Each actuator applies ``optimal_force * control`` (OpenSim's ``ScalarActuator::computeActuation``
for these three; controls are not clamped to ``min_control``/``max_control``, which OpenSim only
uses in optimizations). A model's actuators are one compiled ``Force.Actuators`` element
(``/forces/actuators``): each actuator's control is a discrete variable of it named like the
actuator (changing one invalidates Dynamics, so a script, or a simulation's InputProbe or Controller
through the named input ``/forces/actuators:<name>``, may set it between steps and the compiled time
loop still runs), to which every enabled ``PrescribedController`` adds its functions of
time at each evaluation (in the compiled kernel), as OpenSim's ``Model::computeControls`` adds its
controllers' controls to the default ones (zero).

- CoordinateActuator: a generalized force on its coordinate's mobility;
- TorqueActuator: a torque ``f * axis/|axis|`` (in Ground, or in ``bodyA``'s frame unless
  ``torque_is_global``) on ``bodyA`` and its opposite on ``bodyB``;
- PointActuator: a force ``f * direction/|direction|`` (in ``body``'s frame unless
  ``force_is_global``) at ``point`` of ``body`` (a point fixed in Ground that the force is applied
  at, wherever the body is, if ``point_is_global``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from simtk import MobilizedBody, State

from ._osim_elements import element_of
from ._osim_paths import MUSCLE_KINDS
from ._osim_reader import _FUNCTION_TAGS, _clean_name, _Element, _flag_note, _or, _Reader

__all__ = ["OsimActuator"]

ACTUATORS = ("CoordinateActuator", "TorqueActuator", "PointActuator")
_COMMON = {"appliesForce", "optimal_force", "min_control", "max_control"}
_PROPS = {
    "CoordinateActuator": _COMMON | {"coordinate"},
    "TorqueActuator": _COMMON | {"bodyA", "bodyB", "axis", "torque_is_global"},
    "PointActuator": _COMMON | {"body", "point", "point_is_global", "direction", "force_is_global"},
}
_CONTROLLER_PROPS = {"enabled", "actuator_list", "socket_actuators", "FunctionSet", "controls_file",
                     "interpolation_method", "isDisabled"}


@dataclass
class OsimActuator:
    """One OpenSim actuator as built: its kind, ``optimal_force`` and index among the controls.

    ``apply(state, force, body_forces, mobility_forces)`` adds its action for an actuation
    ``force`` (optimal_force times control) through the MobilizedBody API: the reference the compiled
    ``Force.Actuators`` kernel, which the model uses, is tested against.
    """

    name: str
    kind: str
    optimal_force: float
    index: int
    enabled: bool = True
    var: str = ""                            # its held control: discrete variable /forces/actuators:<var>
    mobod: MobilizedBody | None = None       # CoordinateActuator's mobilizer; the Torque/Point body
    which_u: int = 0
    R_BA: np.ndarray = field(default_factory=lambda: np.eye(3))  # bodyA's (or body's) frame in its body
    mobod_b: MobilizedBody | None = None     # TorqueActuator's bodyB
    vector: np.ndarray = field(default_factory=lambda: np.zeros(3))  # unit axis or direction
    is_global: bool = True                   # torque_is_global / force_is_global
    point: np.ndarray = field(default_factory=lambda: np.zeros(3))
    point_is_global: bool = False

    def apply(self, state: State, f: float, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Add the action of actuation ``f`` to the force arrays."""
        mobod = cast(MobilizedBody, self.mobod)
        if self.kind == "CoordinateActuator":
            mobod.apply_one_mobility_force(state, self.which_u, f, mobility_forces)
            return
        v = f * self.vector
        if not self.is_global:
            v = mobod.get_body_rotation(state).matrix @ (self.R_BA @ v)
        if self.kind == "TorqueActuator":
            mobod.apply_body_torque(state, v, body_forces)
            if self.mobod_b is not None:
                self.mobod_b.apply_body_torque(state, -v, body_forces)
            return
        p = self.point
        if self.point_is_global:  # the body's point that is at ``point`` of Ground now
            X = mobod.get_body_transform(state)
            p = X.R.matrix.T @ (p - X.p)
        mobod.apply_force_to_body_point(state, p, v, body_forces)


def _unit(r: _Reader, el: _Element, tag: str, default) -> np.ndarray:
    v = r.numbers(el, tag, 3, default)
    n = float(np.linalg.norm(v))
    if n == 0.0:
        raise r.error(_or(r.child(el, tag), el), f"{el.tag} {el.get('name')!r}: <{tag}> must not be the zero vector")
    return v / n


def _frame(r: _Reader, out, el: _Element, tag: str, required: bool = True) -> tuple[Any, np.ndarray]:
    """(mobod, R_BF) of the body or frame that property ``tag`` names (a body name or a frame path)."""
    name = r.string(el, tag, required)
    if not name:
        return None, np.eye(3)
    if name in out.bodies:
        return out.bodies[name], np.eye(3)
    target = r.paths.get(name if name.startswith("/") else "/bodyset/" + name)
    if target is None or target.tag not in ("Body", "Ground", "PhysicalOffsetFrame"):
        raise r.error(r.child(el, tag), f"{el.tag} {el.get('name')!r}: <{tag}> {name!r} is not a body of the model")
    base, X = r.frame_in_body(target)
    bname = "ground" if base.tag == "Ground" else base.get("name")
    return out.bodies[bname], X.R.matrix


class Actuators:
    """The actuators read from the ForceSet and the controllers of the ControllerSet."""

    def __init__(self, r: _Reader):
        self.r = r
        self.list: list[OsimActuator] = []
        self.elements: list[_Element] = []

    def add(self, out, el: _Element) -> None:
        r = self.r
        name = r.new_force(el, set(out.force_elements) | {a.name for a in self.list}, _PROPS[el.tag])
        a = OsimActuator(name, el.tag, r.number(el, "optimal_force", 1.0), len(self.list),
                         enabled=r.boolean(el, "appliesForce", True))
        if el.tag == "CoordinateActuator":
            cname = r.string(el, "coordinate")
            if cname not in out.coordinates:
                raise r.error(r.child(el, "coordinate"), f"CoordinateActuator {name!r}: <coordinate> {cname!r} is not "
                                                         "a coordinate of the model")
            c = out.coordinates[cname]
            a.mobod, a.which_u = c.mobod, c.index
        elif el.tag == "TorqueActuator":
            a.mobod, a.R_BA = _frame(r, out, el, "bodyA")
            a.mobod_b, _ = _frame(r, out, el, "bodyB", required=False)
            a.vector = _unit(r, el, "axis", [0.0, 0.0, 1.0])
            a.is_global = r.boolean(el, "torque_is_global", True)
        else:
            bname = r.string(el, "body")
            if bname not in out.bodies:  # OpenSim looks the name up among the bodies
                raise r.error(r.child(el, "body"), f"PointActuator {name!r}: <body> {bname!r} is not a body of the model")
            a.mobod = out.bodies[bname]
            a.vector = _unit(r, el, "direction", [1.0, 0.0, 0.0])
            a.is_global = r.boolean(el, "force_is_global", False)
            a.point = r.numbers(el, "point", 3, [0.0, 0.0, 0.0])
            a.point_is_global = r.boolean(el, "point_is_global", False)
        self.list.append(a)
        self.elements.append(el)

    def finish(self, out, model: _Element) -> None:
        """Describe the one actuation force (if any actuator) and the controllers; note the others."""
        r = self.r
        out.actuators = {a.name: a for a in self.list}
        used: set = set()
        for a in self.list:
            a.var = _clean_name(a.name)
            if a.var in used:  # two OpenSim names that clean to the same simtk name
                a.var = f"{a.var}_{a.index}"
            used.add(a.var)
        self.controls: list = []  # (actuator's control name, Function of time), in order of addition
        if self.list:
            out.actuation = _describe(out, self.list, self.elements)
        for el in r.objects(model, "ControllerSet"):
            if el.tag != "PrescribedController":
                _flag_note(r.notes, el)
                continue
            self._prescribed(out, el)
        if self.controls:
            out.desc.set(out.actuation, control_actuators=[n for n, _ in self.controls],
                         control_functions=[f for _, f in self.controls])

    def _prescribed(self, out, el: _Element) -> None:
        r = self.r
        name = r.name_of(el)
        for c in cast("list[_Element]", list(el)):
            if c.tag not in _CONTROLLER_PROPS:
                r.notes.append(f"unknown property <{c.tag}> of PrescribedController {name!r} (line {c.line}) ignored")
        if r.child(el, "controls_file") is not None and r.string(el, "controls_file", required=False):
            _flag_note(r.notes, el, "controls_file is not read")
            return
        enabled = r.boolean(el, "enabled", True) and not r.boolean(el, "isDisabled", False)
        words = (r.string(el, "socket_actuators", required=False) or r.string(el, "actuator_list", required=False))
        names = [w.rstrip("/").split("/")[-1] for w in words.split()]
        fset = r.child(el, "FunctionSet")
        objs = r.child(fset, "objects") if fset is not None else None
        fels = cast("list[_Element]", list(objs) if objs is not None else [])
        # muscles take a controller's functions as excitation functions of their own
        muscles = {n: out.force_elements[n][0] for n in names if n not in out.actuators
                   and len(out.force_elements.get(n, ())) == 1
                   and out.force_elements[n][0].kind in MUSCLE_KINDS}
        missing = [n for n in names if n not in out.actuators and n not in muscles]
        if missing:
            # muscles and other actuators simtk does not build: the controller is not built either
            _flag_note(r.notes, el, f"controls actuator(s) not built: {', '.join(missing[:5])}")
            return
        fnames = [f.get("name") for f in fels]
        if set(fnames) == set(names) and len(fels) == len(names):
            fels = [fels[fnames.index(n)] for n in names]  # (older files name each function after its actuator)
        elif len(fels) != len(names):
            raise r.error(_or(fset, el), f"PrescribedController {name!r}: {len(names)} actuator(s) but "
                                         f"{len(fels)} control function(s)")
        odd = [f.tag for f in fels if f.tag not in _FUNCTION_TAGS]
        if odd:
            _flag_note(r.notes, el, f"control function type(s) not supported: {', '.join(sorted(set(odd)))}")
            return
        made = []
        for n, fel in zip(names, fels):
            f = r.function(fel, 1, f"PrescribedController {name!r} control of {n!r}")
            if n in muscles:
                if enabled:
                    node = muscles[n]
                    held = node.items.get("excitation_functions", ([], 0))[0]
                    out.desc.set(node, excitation_functions=list(held) + [f])
                continue
            made.append((out.actuators[n].index, f))
        out.controllers[name] = made
        if enabled and made:
            if out.actuation is None:
                raise r.error(el, f"PrescribedController {name!r}: no actuator to control")
            self.controls += [(self.list[i].var, f) for i, f in made]


def _describe(out, actuators: list, elements: list):
    """The ``Force.Actuators`` node holding ``actuators`` (their bodies are nodes while reading)."""
    first = elements[0]
    ground = out.bodies["ground"]
    return out.desc.add(
        "Force.Actuators", out.forces, out.desc.unique_name(out.forces, "actuators"), line=first.line,
        element=element_of(first), names=[a.var for a in actuators],
        kinds=[{"CoordinateActuator": "coordinate", "TorqueActuator": "torque"}.get(a.kind, "point") for a in actuators],
        bodies=[a.mobod for a in actuators], optimal_forces=[a.optimal_force for a in actuators],
        enabled=[a.enabled for a in actuators], which_u=[a.which_u for a in actuators],
        second_bodies=[a.mobod_b if a.mobod_b is not None else ground for a in actuators],
        has_second_body=[a.mobod_b is not None for a in actuators], vectors=[a.vector for a in actuators],
        R_BA=[np.asarray(a.R_BA, dtype=float).ravel() for a in actuators], is_global=[a.is_global for a in actuators],
        points=[a.point for a in actuators], point_is_global=[a.point_is_global for a in actuators])


def build_actuators_and_controllers(r: _Reader, out, model: _Element) -> None:
    """Hook for `load_osim`: the ForceSet's actuators and the ControllerSet."""
    acts = Actuators(r)
    for el in r.objects(model, "ForceSet"):
        if el.tag in ACTUATORS:
            acts.add(out, el)
    acts.finish(out, model)
