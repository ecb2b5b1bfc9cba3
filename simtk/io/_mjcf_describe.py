"""The MJCF reader's bodies, joints and actuators as a model description (nodes only; no simtk element
is made here).

How MuJoCo's model maps onto simtk's:

- A body with one joint is a mobilized body on that joint's mobilizer (hinge ``Pin``, slide
  ``Slider``, ball ``Ball``, free ``Free``); a body without joints is welded to its parent. A body with
  several joints gets a chain of massless bodies, one per joint but the last, composed in the file's
  order as MuJoCo composes them: each joint moves the frame the previous ones left, about its own
  ``pos`` and ``axis`` (in the body frame).
- A hinge's frames are F = X_PB0 T(pos) R Rz(-ref) and M = T(pos) R (R turns z onto the axis), so
  q is MuJoCo's qpos, ``ref`` included; a slide's likewise along x.
- Armature (MuJoCo's rotor inertia, added to the mass matrix's diagonal) is the mobilizer's own
  ``armature`` property, one value for each of its mobilities: for ball and free joints ``a |u|^2`` is
  the same in simtk's and MuJoCo's velocity bases (they differ by rotations), so ``a I`` is too.
- Damping, stiffness (about ``springref``) and limits are mobility dampers, springs and stops; an
  actuator on a joint is a coordinate actuator of force ``gear * gain * ctrl`` plus its affine bias
  ``gear * (b0 + b1 * gear * q + b2 * gear * qdot)`` as a constant force, a spring and a damper.
"""
from __future__ import annotations

import numpy as np

from simtk import Rotation, Transform

from ._description import ModelDescription
from ._mjcf_reader import _Joint, _Reader
from ._mjcf_xml import _describe
from ._model_parser import _Node
from ._urdf_reader import _frame_with_axis, _sanitize

__all__: list[str] = []

_KIND = {"hinge": "MobilizedBody.Pin", "slide": "MobilizedBody.Slider", "ball": "MobilizedBody.Ball",
         "free": "MobilizedBody.Free"}


class _Described:
    """The description of a read file, and where each MuJoCo name went."""

    def __init__(self, rd: _Reader, limits: bool, limit_stiffness: float, limit_dissipation: float):
        self.rd = rd
        x = rd.x
        self.desc = ModelDescription(_sanitize(x.model_name, set()), rd.path, make_error=None)
        self.taken = {"ground"}
        self.body_nodes: dict[str, _Node] = {"world": self.desc.ground}
        self.joint_nodes: dict[str, _Node] = {}
        self.stops: dict[str, _Node] = {}
        self.actuator_names: dict[str, str] = {}
        self.contact: _Node | None = None  # the geoms' Force.HuntCrossley (load_mjcf's contact=True)
        self.contact_geoms: list[int] = []
        forces_taken: set = set()
        self.forces_taken = forces_taken
        for body in rd.bodies[1:]:
            self._body(body)
        for j in rd.joints:
            self._passive(j, limits, limit_stiffness, limit_dissipation)
        self._actuators()
        if np.any(rd.gravity != 0):
            self.desc.add("Force.UniformGravity", self.desc.forces, "gravity", gravity=rd.gravity, zero_height=0.0)

    def _name(self, name: str) -> str:
        return _sanitize(name, self.taken)

    def _fname(self, name: str) -> str:
        return _sanitize(name, self.forces_taken)

    def _mass(self, body) -> _Node:
        return self.desc.mass_properties(body.mass, body.com, body.inertia)

    def _body(self, body) -> None:
        desc, x = self.desc, self.rd.x
        parent = self.body_nodes[self.rd.bodies[body.parent].name]
        line, element = x.line(body.el), _describe(body.el)
        X = Transform(Rotation.from_matrix(body.R), body.p)  # where the chain continues, on ``parent``
        if not body.joints:
            self.body_nodes[body.name] = desc.add("MobilizedBody.Weld", desc.matter, self._name(body.name), line=line,
                                                  element=element, parent=parent, inboard_frame=X,
                                                  mass_properties=self._mass(body), outboard_frame=Transform())
            return
        n = len(body.joints)
        for k, j in enumerate(body.joints):
            last = k == n - 1
            X_PF, X_BM = _joint_frames(j, X)
            name = self._name(body.name if last else f"{body.name}_{j.name}")
            items = dict(mass_properties=self._mass(body)) if last else dict(massless=True)
            if j.armature > 0:
                items["armature"] = float(j.armature)
            node = desc.add(_KIND[j.type], desc.matter, name, line=x.line(j.el), element=_describe(j.el),
                            parent=parent, inboard_frame=X_PF, outboard_frame=X_BM, **items)
            self.joint_nodes[j.name] = node
            parent, X = node, Transform()
        self.body_nodes[body.name] = parent

    def _passive(self, j: _Joint, limits: bool, k_stop: float, d_stop: float) -> None:
        desc, x, rd = self.desc, self.rd.x, self.rd
        node = self.joint_nodes[j.name]
        line, element = x.line(j.el), _describe(j.el)
        forces = desc.forces
        where = dict(line=line, element=element, body=node)
        if j.damping > 0:
            for k in range(j.nv):
                desc.add("Force.MobilityLinearDamper", forces, self._fname(f"{j.name}_damping{k or ''}"), which=k,
                         damping=j.damping, **where)
        if j.stiffness > 0:
            if j.type in ("hinge", "slide"):
                desc.add("Force.MobilityLinearSpring", forces, self._fname(f"{j.name}_stiffness"), which=0,
                         stiffness=j.stiffness, q_zero=j.springref, **where)
            else:
                rd.unbuilt.append(f"the stiffness of {j.type} joint {j.name!r} (line {line})")
        if j.frictionloss > 0:
            rd.unbuilt.append(f"the frictionloss of joint {j.name!r} (line {line})")
        if j.range is not None:
            if j.type not in ("hinge", "slide"):
                rd.unbuilt.append(f"the range of {j.type} joint {j.name!r} (line {line})")
            elif limits:
                self.stops[j.name] = desc.add("Force.MobilityLinearStop", forces, self._fname(f"{j.name}_limits"),
                                              which=0, stiffness=k_stop, dissipation=d_stop, q_low=j.range[0],
                                              q_high=j.range[1], **where)

    def _actuators(self) -> None:
        acts = self.rd.actuators
        if not acts:
            return
        desc, x = self.desc, self.rd.x
        taken: set = set()
        bodies, names, gains = [], [], []
        for a in acts:
            node = self.joint_nodes[a.joint]
            self.actuator_names[a.name] = _sanitize(a.name, taken)
            bodies.append(node)
            names.append(self.actuator_names[a.name])
            gains.append(a.gear * a.gain)
            where = dict(line=x.line(a.el), element=_describe(a.el), body=node, which=0)
            b0, b1, b2 = a.bias
            if b0 != 0:
                desc.add("Force.MobilityConstantForce", desc.forces, self._fname(f"{a.name}_bias"), force=a.gear * b0,
                         **where)
            if b1 != 0:
                desc.add("Force.MobilityLinearSpring", desc.forces, self._fname(f"{a.name}_bias_q"),
                         stiffness=-a.gear * a.gear * b1, q_zero=0.0, **where)
            if b2 != 0:
                desc.add("Force.MobilityLinearDamper", desc.forces, self._fname(f"{a.name}_bias_qdot"),
                         damping=-a.gear * a.gear * b2, **where)
        desc.add("Force.Actuators", desc.forces, self._fname("actuators"), line=x.line(acts[0].el),
                 element=_describe(acts[0].el), bodies=bodies, names=names, kinds=["coordinate"] * len(acts),
                 optimal_forces=gains, which_u=[0] * len(acts),
                 second_bodies=[desc.ground] * len(acts), has_second_body=[False] * len(acts))


def _joint_frames(j: _Joint, X: Transform) -> tuple[Transform, Transform]:
    """(F on the parent, M on the body) of joint ``j``, whose motion starts at X on the parent."""
    if j.type == "free":  # its qpos is the body's pose in the world (the file's pose: MuJoCo's qpos0)
        return Transform(), Transform()
    if j.type == "ball":
        return X * Transform(Rotation(), j.pos), Transform(Rotation(), j.pos)
    k = 2 if j.type == "hinge" else 0
    R = _frame_with_axis(j.axis, k)
    M = Transform(R, j.pos)
    if j.ref == 0.0:
        return X * M, M
    shift = Transform(Rotation(-j.ref, 2)) if j.type == "hinge" else Transform(Rotation(), [-j.ref, 0.0, 0.0])
    return X * M * shift, M
