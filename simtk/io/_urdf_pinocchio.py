"""Coordinates of a loaded URDF model in Pinocchio's conventions, and back.

Pinocchio (``buildModelFromUrdf(path[, JointModelFreeFlyer()])``) numbers its joints depth first
from the root link, the children of a link in the order of their joint names (urdfdom keeps the
joints in a sorted map and pushes each child link as it walks that map), fixed joints being merged
into frames. Per joint:

========================  ===========================  ==========================  ====================
joint                     simtk q / u                  Pinocchio q / v             map
========================  ===========================  ==========================  ====================
revolute, prismatic       angle or displacement / rate  the same                    identity
continuous                angle a / rate                (cos a, sin a) / rate       a = atan2(sin, cos)
floating base (Free)      (qw qx qy qz, p) /            (p, qx qy qz qw) /          u = T v,
                          (w, v) in Ground              (v, w) in the base frame    T = [[0, R], [R, 0]]
========================  ===========================  ==========================  ====================

with R the base's orientation and v the velocity of the base frame's origin. Pinocchio's ``a`` for
the free flyer is the time derivative of its body-frame v, so with w_B = R^T w, v_B = R^T v:
``a = (R^T vdot - w_B x v_B, R^T wdot)``. Generalized forces map by the transpose, tau_pin = T^T tau
(T is orthogonal, so tau = T tau_pin).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from simtk import Rotation, Stage, State

#: How far from 1 the norm of a quaternion (and of a continuous joint's (cos, sin)) may be; a vector
#: normalized in double precision is within a few eps of 1, one written with 9 digits within ~1e-9.
UNIT_TOL = 1e-8


@dataclass(frozen=True)
class PinJoint:
    """One of Pinocchio's joints: its name and kind, and its q and v slices in both libraries."""

    name: str
    kind: str  # "free", "continuous" or "axis" (revolute, prismatic)
    iq: int
    nq: int
    iv: int
    nv: int
    q: slice  # in simtk's q
    u: slice  # in simtk's u


def urdf_joint_order(reader: Any, floating: bool) -> list[tuple[str, str]]:
    """Pinocchio's joints of a URDF tree, in Pinocchio's order: (name, URDF type), root joint first."""
    out = [("root_joint", "floating")] if floating else []
    # depth first (a stack, not recursion: a long chain stays within Python's recursion limit); urdfdom
    # descends through fixed joints too, in the same name order
    stack = sorted(reader.children[reader.root], key=lambda j: j.name.encode(), reverse=True)
    while stack:
        j = stack.pop()
        if j.type != "fixed":
            out.append((j.name, j.type))
        stack.extend(sorted(reader.children[j.child], key=lambda k: k.name.encode(), reverse=True))
    return out


def layout(model: Any, state: State, pin_model: Any = None) -> list[PinJoint]:
    """Pinocchio's joints with their slices, from the URDF (or from ``pin_model``'s names and sizes)."""
    slices = model.coordinate_slices(state)
    if pin_model is not None:
        joints = []
        for j in range(1, pin_model.njoints):
            name, short = pin_model.names[j], pin_model.joints[j].shortname()
            # by sizes: the short names vary (JointModelRUBZ, JointModelRevoluteUnboundedUnaligned, ...)
            sizes = (int(pin_model.nqs[j]), int(pin_model.nvs[j]))
            kind = ("free" if "FreeFlyer" in short else {(2, 1): "continuous", (1, 1): "axis"}.get(sizes, short))
            joints.append((name, kind, int(pin_model.idx_qs[j]), int(pin_model.nqs[j]),
                           int(pin_model.idx_vs[j]), int(pin_model.nvs[j])))
    else:
        joints, iq, iv = [], 0, 0
        for name, jtype in model._pin_order:
            kind, nq, nv = {"floating": ("free", 7, 6), "continuous": ("continuous", 2, 1),
                            "revolute": ("axis", 1, 1), "prismatic": ("axis", 1, 1)}.get(jtype, (jtype, 0, 0))
            joints.append((name, kind, iq, nq, iv, nv))
            iq, iv = iq + nq, iv + nv
    out = []
    for name, kind, iq, nq, iv, nv in joints:
        if kind not in ("free", "continuous", "axis"):
            raise NotImplementedError(f"{model.path}: joint {name!r} ({kind}) has no Pinocchio coordinate map here "
                                      "(revolute, continuous, prismatic and the floating base have)")
        if name not in slices:
            raise ValueError(f"{model.path}: Pinocchio's joint {name!r} is not a joint of the loaded model")
        qs, us = slices[name]
        if kind == "free" and qs.stop - qs.start != 7:
            raise ValueError(f"{model.path}: the floating base has {qs.stop - qs.start} q (Euler angles); "
                             "Pinocchio's conventions need the quaternion mode (7 q)")
        out.append(PinJoint(name, kind, iq, nq, iv, nv, qs, us))
    if sum(j.nv for j in out) != state.get_nu():
        raise ValueError(f"{model.path}: Pinocchio's joints have {sum(j.nv for j in out)} velocities, the State "
                         f"{state.get_nu()} mobilities")
    return out


def _vector(x: Any, n: int, what: str, path: Any) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.size != n:
        raise ValueError(f"{path}: Pinocchio's {what} must have {n} entries, got {a.size}")
    if not np.isfinite(a).all():
        raise ValueError(f"{path}: Pinocchio's {what} has non-finite entries at {np.flatnonzero(~np.isfinite(a))}")
    return a


def _rotation(q: np.ndarray, js: list[PinJoint]) -> dict[str, np.ndarray]:
    """Each free joint's orientation R_GB from simtk's quaternion (w, x, y, z) in q."""
    out = {}
    for j in js:
        if j.kind == "free":
            w, x, y, z = q[j.q.start:j.q.start + 4] / np.linalg.norm(q[j.q.start:j.q.start + 4])
            out[j.name] = Rotation.from_quaternion([w, x, y, z]).matrix
    return out


def from_pinocchio(model: Any, state: State, q: Any, v: Any, pin_model: Any = None) -> None:
    """Set the State's q (and u when v is given) from Pinocchio's q and v; see `UrdfModel.state_from_pinocchio`."""
    js = layout(model, state, pin_model)
    nq_pin = sum(j.nq for j in js)
    qp = _vector(q, nq_pin, "q", model.path)
    vp = None if v is None else _vector(v, sum(j.nv for j in js), "v", model.path)
    qs = np.array(state.get_q(), dtype=float)
    us = np.array(state.get_u(), dtype=float)
    for j in js:  # everything is checked and computed before the State is touched
        x = qp[j.iq:j.iq + j.nq]
        if j.kind == "free":
            quat = x[3:7]
            n = float(np.linalg.norm(quat))
            if abs(n - 1.0) > UNIT_TOL:
                raise ValueError(f"{model.path}: joint {j.name!r}: Pinocchio's quaternion (x y z w) = {quat.tolist()} "
                                 f"has norm {n!r}: expected a unit quaternion (within {UNIT_TOL:g})")
            qs[j.q] = np.r_[quat[3], quat[:3], x[:3]]
            if vp is not None:
                R = Rotation.from_quaternion([quat[3], *quat[:3]]).matrix
                vb = vp[j.iv:j.iv + 6]
                us[j.u] = np.r_[R @ vb[3:], R @ vb[:3]]
        elif j.kind == "continuous":
            n = math.hypot(x[0], x[1])
            if abs(n - 1.0) > UNIT_TOL:
                raise ValueError(f"{model.path}: continuous joint {j.name!r}: Pinocchio's (cos, sin) = {x.tolist()} "
                                 f"has norm {n!r}: expected a point of the unit circle (within {UNIT_TOL:g})")
            qs[j.q] = math.atan2(x[1], x[0])
            if vp is not None:
                us[j.u] = vp[j.iv]
        else:
            qs[j.q] = x[0]
            if vp is not None:
                us[j.u] = vp[j.iv]
    state.set_q(qs)
    if vp is not None:
        state.set_u(us)


def to_pinocchio(model: Any, state: State, pin_model: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Pinocchio's (q, v) of the State's q and u; see `UrdfModel.state_to_pinocchio`."""
    js = layout(model, state, pin_model)
    q, u = np.asarray(state.get_q(), dtype=float), np.asarray(state.get_u(), dtype=float)
    qp, vp = np.zeros(sum(j.nq for j in js)), np.zeros(sum(j.nv for j in js))
    Rs = _rotation(q, js)
    for j in js:
        if j.kind == "free":
            quat = q[j.q.start:j.q.start + 4] / np.linalg.norm(q[j.q.start:j.q.start + 4])
            qp[j.iq:j.iq + 7] = np.r_[q[j.q.start + 4:j.q.stop], quat[1:], quat[0]]
            R = Rs[j.name]
            w, vel = u[j.u.start:j.u.start + 3], u[j.u.start + 3:j.u.stop]
            vp[j.iv:j.iv + 6] = np.r_[R.T @ vel, R.T @ w]
        elif j.kind == "continuous":
            a = float(q[j.q.start])
            qp[j.iq:j.iq + 2] = (math.cos(a), math.sin(a))
            vp[j.iv] = u[j.u.start]
        else:
            qp[j.iq] = q[j.q.start]
            vp[j.iv] = u[j.u.start]
    return qp, vp


def udot_to_pinocchio(model: Any, state: State, pin_model: Any = None) -> np.ndarray:
    """Pinocchio's a of the State's udot; see `UrdfModel.udot_to_pinocchio`."""
    model.system.realize(state, Stage.Acceleration)
    js = layout(model, state, pin_model)
    q, u = np.asarray(state.get_q(), dtype=float), np.asarray(state.get_u(), dtype=float)
    udot = np.asarray(state.get_udot(), dtype=float)
    a = np.zeros(sum(j.nv for j in js))
    Rs = _rotation(q, js)
    for j in js:
        if j.kind == "free":
            R = Rs[j.name]
            wB, vB = R.T @ u[j.u.start:j.u.start + 3], R.T @ u[j.u.start + 3:j.u.stop]
            wdot, vdot = udot[j.u.start:j.u.start + 3], udot[j.u.start + 3:j.u.stop]
            a[j.iv:j.iv + 6] = np.r_[R.T @ vdot - np.cross(wB, vB), R.T @ wdot]
        else:
            a[j.iv] = udot[j.u.start]
    return a


def forces_from_pinocchio(model: Any, state: State, tau: Any, pin_model: Any = None) -> np.ndarray:
    """simtk's mobility forces (nu,) of Pinocchio's generalized forces tau (tau = T tau_pin)."""
    js = layout(model, state, pin_model)
    tp = _vector(tau, sum(j.nv for j in js), "tau", model.path)
    Rs = _rotation(np.asarray(state.get_q(), dtype=float), js)
    out = np.zeros(state.get_nu())
    for j in js:
        if j.kind == "free":
            R = Rs[j.name]
            t = tp[j.iv:j.iv + 6]
            out[j.u] = np.r_[R @ t[3:], R @ t[:3]]
        else:
            out[j.u.start] = tp[j.iv]
    return out
