"""MJCF import: a MuJoCo model file becomes a MultibodySystem, as MuJoCo's compiler reads it.

`load_mjcf` reads the XML (``<include>`` expanded, ``<default>`` classes and ``childclass`` applied,
``<compiler>``'s angle, eulerseq, inertiafromgeom, autolimits, settotalmass) into a model description
(`describe_mjcf`), which the builder every reader shares turns into the System. See
`simtk.io._mjcf_describe` for how bodies, joints, armature, passive forces and actuators are mapped.

What is built: the body tree (pos, quat, euler, axisangle, xyaxes, zaxis; ``<frame>``), mass properties from
``<inertial>`` or from the geoms (sphere, capsule, cylinder, ellipsoid, box) as MuJoCo's compiler
makes them, hinge, slide, ball and free joints (several per body composed in order), joint damping,
stiffness about springref, armature, limits (as stops), gravity, and motor, position, velocity and
general (fixed gain, affine bias) actuators on joints (ctrlrange, inheritrange). What is not (tendons,
equality constraints, sensors, contacts unless ``contact=True``, fluid forces, friction loss, gravcomp,
disabled passive forces, ...) is named in one `MjcfWarning`. The geoms are kept as `MjcfGeom` records;
with ``contact=True`` they are also the surfaces of one ``Force.HuntCrossley`` (`simtk.io._mjcf_contact`
says how shapes, MuJoCo's collision filter and its solref/solimp/friction are mapped). Unnamed bodies, joints and
actuators are named ``body<i>``, ``joint<i>``, ``actuator<i>`` after their MuJoCo index.

A joint's armature is its mobilizer's ``armature`` (`MobilizedBody.set_armature`): the model has
MuJoCo's ``nv`` mobilities, and its mass matrix is MuJoCo's ``M + diag(armature)``.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simtk import State

from ._description import ModelDescription
from ._loaded_model import LoadedModel
from ._mjcf_contact import LAW_KEYS, build_surfaces
from ._mjcf_describe import _Described
from ._mjcf_reader import MjcfGeom, _Reader
from ._mjcf_xml import MjcfWarning, quat_matrix
from ._named import NamedDict
from .errors import ModelFileError

__all__ = ["load_mjcf", "describe_mjcf", "MjcfModel", "MjcfGeom", "MjcfWarning", "ModelFileError"]


@dataclass
class MjcfModel(LoadedModel):
    """A multibody system built from an MJCF file, with MuJoCo's names and state layout.

    Attributes
    ----------
    system, matter, forces, path, description, components, warnings :
        As every loaded model's (`LoadedModel`).
    name : str
        The ``<mujoco model=...>``.
    bodies : dict of str to MobilizedBody
        Each MuJoCo body's mobilized body (a body with several joints: the last of its chain).
    joints : dict of str to MobilizedBody
        The mobilized body whose mobilizer each MuJoCo joint is.
    joint_types : dict of str to str
        ``"hinge"``, ``"slide"``, ``"ball"`` or ``"free"``.
    qpos_adr, dof_adr : dict of str to int
        Where each joint's qpos and qvel start in MuJoCo's vectors (``nq``, ``nv`` in all).
    rotors : dict of str to list of MobilizedBody
        Empty: kept for older callers, from when armature was built as rotor bodies (it is now each
        joint's ``MobilizedBody.get_armature()``).
    stops : dict of str to Force
        The ``Force.MobilityLinearStop`` of each hinge or slide joint with a range.
    actuators : dict of str to str
        MuJoCo actuator name -> the control's name on `actuation`.
    ctrlrange : dict of str to (float, float)
        The control ranges of the actuators that have one (`set_control` clamps to it, as MuJoCo does).
    actuation : Force or None
        The ``Force.Actuators`` element (None without actuators).
    gravity : ndarray, shape (3,)
    timestep : float
        ``<option timestep>``.
    qpos0 : ndarray
        MuJoCo's reference configuration (joint refs, free bodies where the file puts them).
    geoms : list of MjcfGeom
    contact : Force or None
        The ``Force.HuntCrossley`` of the geoms (``contact=True``), else None.
    contact_geoms : list of int
        For each of `contact`'s surfaces, the index in `geoms` of the geom it is.
    """

    name: str = ""
    joint_types: dict = field(default_factory=dict)
    qpos_adr: dict = field(default_factory=dict)
    dof_adr: dict = field(default_factory=dict)
    rotors: dict = field(default_factory=dict)
    stops: dict = field(default_factory=dict)
    actuators: dict = field(default_factory=dict)
    ctrlrange: dict = field(default_factory=dict)
    actuation: Any = None
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    timestep: float = 0.002
    qpos0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    geoms: list = field(default_factory=list)
    nq: int = 0
    nv: int = 0
    contact: Any = None
    contact_geoms: list = field(default_factory=list)

    def default_state(self) -> State:
        """A new State at MuJoCo's reference configuration `qpos0` and zero velocity, realized to Model.

        Returns
        -------
        State
        """
        state = self.system.realize_topology()
        self.state_from_mujoco(state, self.qpos0, np.zeros(self.nv))
        return state

    # ------------------------------------------------------------------ state mapping
    def state_from_mujoco(self, state: State, qpos, qvel) -> None:
        """Set ``state``'s q and u from MuJoCo's ``qpos`` (nq) and ``qvel`` (nv).

        A free joint's qpos is [p (world), quaternion w x y z] and its qvel [v (world), omega (body
        frame)]; a ball's qpos a quaternion and its qvel omega in the body frame; simtk's Free has
        q = [quaternion, p] and u = [omega, v] in Ground, its Ball u = omega in the parent's frame.
        Wrong lengths or non-finite values change nothing.
        """
        qpos = np.asarray(qpos, dtype=float).reshape(-1)
        qvel = np.asarray(qvel, dtype=float).reshape(-1)
        if qpos.shape != (self.nq,) or qvel.shape != (self.nv,):
            raise ValueError(f"{self.path}: state_from_mujoco: expected qpos of {self.nq} and qvel of {self.nv} "
                             f"values, got {qpos.size} and {qvel.size}")
        if not (np.isfinite(qpos).all() and np.isfinite(qvel).all()):
            raise ValueError(f"{self.path}: state_from_mujoco: qpos and qvel must be finite")
        for name, t in self.joint_types.items():
            if t in ("ball", "free") and np.linalg.norm(qpos[self.qpos_adr[name] + (3 if t == "free" else 0):][:4]) \
                    < 1e-10:
                raise ValueError(f"{self.path}: state_from_mujoco: joint {name!r}: a zero quaternion")
        for name, mb in self.joints.items():
            t, a, d = self.joint_types[name], self.qpos_adr[name], self.dof_adr[name]
            if t in ("hinge", "slide"):
                q, u = qpos[a:a + 1], qvel[d:d + 1]
            elif t == "ball":
                quat = qpos[a:a + 4] / np.linalg.norm(qpos[a:a + 4])
                q, u = quat, quat_matrix(quat) @ qvel[d:d + 3]
            else:
                quat = qpos[a + 3:a + 7] / np.linalg.norm(qpos[a + 3:a + 7])
                q = np.concatenate([quat, qpos[a:a + 3]])
                u = np.concatenate([quat_matrix(quat) @ qvel[d + 3:d + 6], qvel[d:d + 3]])
            mb.set_q(state, q)
            mb.set_u(state, u)

    def state_to_mujoco(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """MuJoCo's ``(qpos, qvel)`` of ``state`` (the inverse of `state_from_mujoco`; quaternions with
        simtk's sign, which describes the same rotation as its negative)."""
        qpos, qvel = np.zeros(self.nq), np.zeros(self.nv)
        for name, mb in self.joints.items():
            t, a, d = self.joint_types[name], self.qpos_adr[name], self.dof_adr[name]
            q, u = np.asarray(mb.get_q(state), dtype=float), np.asarray(mb.get_u(state), dtype=float)
            if t in ("hinge", "slide"):
                qpos[a], qvel[d] = q[0], u[0]
            elif t == "ball":
                qpos[a:a + 4], qvel[d:d + 3] = q, _R(q).T @ u
            else:
                qpos[a:a + 3], qpos[a + 3:a + 7] = q[4:7], q[:4]
                qvel[d:d + 3], qvel[d + 3:d + 6] = u[3:6], _R(q[:4]).T @ u[:3]
        return qpos, qvel

    def udot_to_mujoco(self, state: State) -> np.ndarray:
        """MuJoCo's ``qacc`` (nv) from ``state`` realized to Acceleration: each joint's udot in MuJoCo's
        order and frames (ball and free angular accelerations in the body frame)."""
        qacc = np.zeros(self.nv)
        for name, mb in self.joints.items():
            t, d = self.joint_types[name], self.dof_adr[name]
            udot = np.asarray(mb.get_udot(state), dtype=float)
            if t in ("hinge", "slide"):
                qacc[d] = udot[0]
            elif t == "ball":
                qacc[d:d + 3] = _R(mb.get_q(state)).T @ udot
            else:
                R = _R(mb.get_q(state)[:4])
                qacc[d:d + 3] = udot[3:6]
                qacc[d + 3:d + 6] = R.T @ udot[:3]
        return qacc

    # ------------------------------------------------------------------ controls
    def set_control(self, state: State, name: str, value: float) -> None:
        """Hold MuJoCo actuator ``name``'s ctrl at ``value`` (clamped to its ctrlrange, as MuJoCo does)."""
        key = self._actuator(name)
        v = float(value)
        if not np.isfinite(v):
            raise ValueError(f"{self.path}: actuator {name!r}: expected a finite control, got {value!r}")
        if name in self.ctrlrange:
            lo, hi = self.ctrlrange[name]
            v = min(max(v, lo), hi)
        self.actuation.set_control(state, key, v)

    def get_control(self, state: State, name: str) -> float:
        """MuJoCo actuator ``name``'s held ctrl in ``state``."""
        return float(self.actuation.get_control(state, self._actuator(name)))

    def set_controls(self, state: State, ctrl) -> None:
        """Set every actuator's ctrl from MuJoCo's ``ctrl`` vector (actuators in file order)."""
        c = np.asarray(ctrl, dtype=float).reshape(-1)
        if c.shape != (len(self.actuators),) or not np.isfinite(c).all():
            raise ValueError(f"{self.path}: set_controls: expected {len(self.actuators)} finite values, "
                             f"got {c.size}")
        for name, v in zip(self.actuators, c):
            self.set_control(state, name, v)

    def _actuator(self, name: str) -> str:
        if name not in self.actuators:
            raise KeyError(f"{self.path}: no actuator named {name!r} (there are: "
                           f"{', '.join(self.actuators) or 'none'})")
        return self.actuators[name]


def _R(quat) -> np.ndarray:
    q = np.asarray(quat, dtype=float)
    return quat_matrix(q / np.linalg.norm(q))


def describe_mjcf(path: str | os.PathLike, *, limits: bool = True, limit_stiffness: float = 1e5,
                  limit_dissipation: float = 1.0, contact: bool = False,
                  contact_parameters: dict | None = None) -> ModelDescription:
    """The declarative description `load_mjcf` builds its System from, without building it.

    Parameters are `load_mjcf`'s; ``describe_mjcf(path).build()[0]`` is the System ``load_mjcf(path)``
    makes. The geoms are on the description's ``geoms`` attribute (`MjcfGeom` records).

    Returns
    -------
    ModelDescription

    Raises
    ------
    ModelFileError
        As `load_mjcf`.
    """
    return _read(Path(path), limits, limit_stiffness, limit_dissipation, contact, contact_parameters).desc


def load_mjcf(path: str | os.PathLike, *, limits: bool = True, limit_stiffness: float = 1e5,
              limit_dissipation: float = 1.0, contact: bool = False,
              contact_parameters: dict | None = None) -> MjcfModel:
    """Build a MultibodySystem from an MJCF (MuJoCo XML) file.

    Parameters
    ----------
    path : str or path-like
        The ``.xml`` file; its ``<include>`` files are found relative to its folder.
    limits : bool
        Add a ``Force.MobilityLinearStop`` for each hinge and slide joint with a range (MuJoCo's
        limits are constraints; a stop acts only beyond the range).
    limit_stiffness, limit_dissipation : float
        The stops' stiffness and Hunt-Crossley dissipation.
    contact : bool
        Make each geom that can collide a surface of one ``Force.HuntCrossley`` (`MjcfModel.contact`):
        planes as half-spaces, cylinders as cylinders, meshes as their convex hulls, MuJoCo's
        contype/conaffinity, parent-child and ``<exclude>`` filter exactly (cliques and excluded pairs), the law from each
        geom's solref, solimp and friction (see `simtk.io._mjcf_contact`).
    contact_parameters : dict, optional
        Values of ``stiffness``, ``dissipation``, ``static_friction``, ``dynamic_friction``,
        ``viscous_friction`` given to every surface in place of those derived from the file.

    Returns
    -------
    MjcfModel

    Raises
    ------
    ModelFileError
        A missing or malformed file, or an invalid model (unknown joint or geom type, a malformed
        number, a duplicate name, an undefined class or joint), naming the file, line and element.
    ValueError
        ``contact_parameters`` with an unknown key or a value the contact law refuses (before reading).

    Warns
    -----
    MjcfWarning
        Once, naming what the file has that is not built.
    """
    path = Path(path)
    d = _read(path, limits, limit_stiffness, limit_dissipation, contact, contact_parameters)
    return _result(d, path)


def _read(path: Path, limits: bool, limit_stiffness: float, limit_dissipation: float, contact: bool = False,
          contact_parameters: dict | None = None) -> _Described:
    given = _given_law(contact_parameters) if contact else {}
    rd = _Reader(path)
    d = _Described(rd, limits, limit_stiffness, limit_dissipation)
    d.desc.geoms = rd.geoms
    if contact:
        s = build_surfaces(rd, d.body_nodes, given)
        # the reader named the geoms and <contact> as not built: say instead what of them is not
        rd.unbuilt = [u for u in rd.unbuilt if "contact geom(s)" not in u and "<contact>" not in u]
        rd.unbuilt += [f"{len(s.skipped)} geom(s) left out of the contact: " + "; ".join(s.skipped)] \
            if s.skipped else []
        rd.unbuilt += s.notes + ([f"{rd.pairs} <contact><pair> element(s)"] if rd.pairs else [])
        if s.bodies:
            d.contact = d.desc.add("Force.HuntCrossley", d.desc.forces, d._fname("contact"),
                                   transition_velocity=0.01, surface_bodies=s.bodies, surface_shapes=s.shapes,
                                   surface_sizes=s.sizes, surface_frames=s.frames, surface_laws=s.laws,
                                   surface_cliques=s.cliques, **_hull_and_exclusions(s))
            d.contact_geoms = s.geoms
    return d


def _hull_and_exclusions(s) -> dict[str, Any]:
    """The optional items of the contact's description: the hulls' vertices, the excluded pairs."""
    out: dict[str, Any] = {}
    if s.vertices:
        out["surface_vertices"] = s.vertices
    if s.excluded:
        out["excluded_pairs"] = s.excluded
    return out


def _given_law(given: dict | None) -> dict:
    given = dict(given or {})
    unknown = set(given) - set(LAW_KEYS)
    if unknown:
        raise ValueError(f"load_mjcf: contact_parameters has unknown key(s) {sorted(unknown)}: expected some of "
                         f"{list(LAW_KEYS)}")
    for k, v in given.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
            raise ValueError(f"load_mjcf: contact_parameters[{k!r}] must be a finite number >= 0, got {v!r}")
    if given.get("dynamic_friction", 0.0) > given.get("static_friction", np.inf):
        raise ValueError("load_mjcf: contact_parameters: dynamic_friction exceeds static_friction")
    return {k: float(v) for k, v in given.items()}


def _result(d: _Described, path: Path) -> MjcfModel:
    rd = d.rd
    system, comps = d.desc.build()
    model = MjcfModel(system, comps["/matter"], comps["/forces"], path, description=d.desc, components=comps,
                      name=rd.x.model_name, gravity=np.array(rd.gravity), timestep=rd.timestep, geoms=rd.geoms)
    if d.contact is not None:
        model.contact = comps[d.contact.path]
        model.contact_geoms = list(d.contact_geoms)
    model.bodies = NamedDict({b: comps[n.path] for b, n in d.body_nodes.items() if b != "world"}, "body", path)
    model.joints = NamedDict({j: comps[n.path] for j, n in d.joint_nodes.items()}, "joint", path)
    qpos0: list = []
    for j in rd.joints:
        model.joint_types[j.name] = j.type
        model.qpos_adr[j.name], model.dof_adr[j.name] = model.nq, model.nv
        model.nq += j.nq
        model.nv += j.nv
        if j.type in ("hinge", "slide"):
            qpos0.append([j.ref])
        elif j.type == "ball":
            qpos0.append([1.0, 0.0, 0.0, 0.0])
        else:
            body = next(b for b in rd.bodies if b.name == j.body)
            qpos0.append(np.concatenate([body.p, _quat(body.R)]))
    model.qpos0 = np.concatenate(qpos0) if qpos0 else np.zeros(0)
    model.stops = {j: comps[n.path] for j, n in d.stops.items()}
    model.actuators = dict(d.actuator_names)
    model.ctrlrange = {a.name: a.ctrlrange for a in rd.actuators if a.ctrlrange is not None}
    if rd.actuators:
        model.actuation = comps["/forces/actuators"]
    if rd.unbuilt:
        items = rd.unbuilt
        shown = "; ".join(items[:12]) + (f"; ... ({len(items) - 12} more)" if len(items) > 12 else "")
        model.warnings.append(f"{path}: not built: {shown}")
        warnings.warn(model.warnings[-1], MjcfWarning, stacklevel=3)
    return model


def _quat(R: np.ndarray) -> np.ndarray:
    """The unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method)."""
    t = float(np.trace(R))
    k = int(np.argmax([t, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif k == 1:
        s = 2.0 * np.sqrt(1.0 + 2 * R[0, 0] - t)
        q = np.array([(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif k == 2:
        s = 2.0 * np.sqrt(1.0 + 2 * R[1, 1] - t)
        q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + 2 * R[2, 2] - t)
        q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s])
    return q if q[0] >= 0 else -q
