"""URDF import: a robot description file becomes a MultibodySystem.

`load_urdf` reads a URDF file with the standard library's expat parser (line numbers are kept for
the error messages) into a model description (`describe_urdf`: simtk model-format nodes, each with
the line and element it came from; no simtk element is made while reading), which the one builder
every reader shares (``load_model``'s) turns into the System; the description describes:

- one mobilized body per link, named after the link; the mobilizer comes from the joint whose child
  the link is (revolute and continuous: ``Pin``; prismatic: ``Slider``; fixed: ``Weld``, or merged
  into the parent with ``merge_fixed=True``; floating: ``Free``; planar: ``Planar``). The root link is
  welded to Ground, or mounted on a ``Free`` mobilizer with ``floating_base=True``.
- gravity (``Force.UniformGravity``), a ``Force.MobilityLinearDamper`` per joint with damping, a
  ``Force.MobilityCoulombFriction`` per joint with friction, a ``Force.MobilityLinearStop`` per joint
  with position limits, and a ``Constraint.CoordinateCoupler`` per ``<mimic>`` joint.
- with ``contact=True``, the collision shapes as surfaces of one ``Force.HuntCrossley``
  (`simtk.io._urdf_contact`); `UrdfModel.add_ground` adds a floor.
- the visual and collision geometry as `Geometry` records on the returned `UrdfModel` (simtk's
  bodies have no place for decorations yet).

`UrdfModel.state_from_pinocchio` and its inverses map states and accelerations to and from
Pinocchio's conventions for the same file (`simtk.io._urdf_pinocchio`).

Conventions of the file and how they are mapped:

- A joint's frame J sits at ``<origin>`` in the parent link's frame; the child link's frame is J
  at zero joint coordinate. URDF's ``rpy`` is fixed-axis X, then Y, then Z: ``R = Rz(y) Ry(p) Rx(r)``.
- Simbody's Pin turns about the common z axis of its F and M frames and its Slider moves along
  their x axis; the loader puts F = J * R and M = R on the child (R turns z, resp. x, onto the
  URDF axis), so that X_PB(q) = X_PJ * (motion along the URDF axis by q), and q means what the
  URDF's joint value means (angle in rad, or displacement in m, along the axis as written).
- ``<inertial>`` gives the mass center's frame C in the link frame and the inertia about C in C;
  simtk's `MassProperties` wants the mass center and the inertia in the body frame, so the inertia
  is rotated by C's orientation (the mass center is its origin).
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from simtk import (
    Force,
    Function,
    MobilizedBody,
    Rotation,
    State,
    Transform,
)
from simtk.multibody.contact.geometry import ContactGeometry
from simtk.multibody.contact.hunt_crossley import _law as _hc_law

from . import _urdf_contact
from . import _urdf_pinocchio as _pinocchio
from ._description import ModelDescription
from ._inertia_policy import apply as apply_inertia_policy
from ._inertia_policy import check_policy
from ._loaded_model import LoadedModel
from ._model_parser import _Node
from ._named import NamedDict
from ._urdf_reader import (
    Geometry,
    UrdfWarning,
    _describe,
    _frame_with_axis,
    _Reader,
    _resolve_mesh,
    _sanitize,
)
from .errors import ModelFileError

__all__ = ["load_urdf", "describe_urdf", "UrdfModel", "Geometry", "ModelFileError", "UrdfWarning"]


@dataclass
class UrdfModel(LoadedModel):
    """A multibody system built from a URDF file, with the file's names.

    Attributes
    ----------
    system : MultibodySystem
    matter : SimbodyMatterSubsystem
    forces : GeneralForceSubsystem
    gravity : Force or None
        The ``Force.UniformGravity`` element (None when loaded with ``gravity=None``).
    name : str
        The ``<robot name=...>``.
    path : Path
        The file read.
    root : MobilizedBody
        The root link's body: welded to Ground, or on a Free mobilizer (``floating_base=True``).
    bodies : dict of str to MobilizedBody
        The mobilized body of each link that has one, by URDF link name (with
        ``merge_fixed=True`` the links merged into their parent are not here; see `frames`).
    joints : dict of str to MobilizedBody
        The mobilized body each URDF joint moves, by joint name (fixed joints merged away are not
        here). Each body also carries ``joint_name`` and ``link_name`` attributes with the file's
        names (its component name is the link's, changed only where simtk's name rule refuses it).
    frames : dict of str to (MobilizedBody, Transform)
        Every link: the body it is part of and the link frame's pose X_BL in that body.
    visuals, collisions : list of Geometry
        The shapes, in file order.
    limits : dict of str to (float, float)
        Position limits (lower, upper) of the joints that have them.
    stops : dict of str to Force
        The ``Force.MobilityLinearStop`` enforcing each joint's limits.
    dampers : dict of str to Force
        The ``Force.MobilityLinearDamper`` of each joint with ``<dynamics damping>`` > 0.
    friction : dict of str to float
        Coulomb friction of ``<dynamics friction>``, by joint.
    frictions : dict of str to Force
        The ``Force.MobilityCoulombFriction`` applying it (none with ``friction_velocity=None``).
    mimics : dict of str to (str, float, float)
        ``<mimic>`` joints: (leader joint, multiplier, offset).
    couplers : dict of str to Constraint
        The ``Constraint.CoordinateCoupler`` of each mimic joint (none with ``mimic=False``).
    contact : Force or None
        The ``Force.HuntCrossley`` of the collision shapes (``contact=True``).
    repaired_inertias : dict of str to str
        Links whose inertial was not physical and was replaced by the nearest physical one, with the
        reason.
    nonphysical_inertias : dict of str to str
        Links whose inertial was not physical and was kept as written (``nonphysical_inertia="keep"``),
        with the reason.
    warnings : list of str
        The warnings issued while loading (each a `UrdfWarning` too).
    description : ModelDescription
        The declarative description read from the file, which the builder made `system` from.
    """

    gravity: Force | None = None
    name: str = ""
    root: MobilizedBody | None = None
    frames: dict = field(default_factory=dict)
    visuals: list = field(default_factory=list)
    collisions: list = field(default_factory=list)
    limits: dict = field(default_factory=dict)
    stops: dict = field(default_factory=dict)
    dampers: dict = field(default_factory=dict)
    friction: dict = field(default_factory=dict)
    mimics: dict = field(default_factory=dict)
    repaired_inertias: dict = field(default_factory=dict)
    frictions: dict = field(default_factory=dict)
    couplers: dict = field(default_factory=dict)
    contact: Force | None = None
    _pin_order: list = field(default_factory=list, repr=False)

    def default_state(self) -> State:
        """A new default State (all joint coordinates zero, the floating base at the origin), at Model.

        A mimic joint (with its coupler) is at its offset, where its zero leader puts it, so that the
        State satisfies the couplers.

        Returns
        -------
        State
        """
        state = self.system.realize_topology()
        for jname in self.couplers:
            leader, m, offset = self.mimics[jname]
            lead = self.joints[leader].get_q(state)[0]
            self.joints[jname].set_q(state, [m * lead + offset])
        return state

    def coordinate_slices(self, state: State) -> dict:
        """Where each joint's q and u are in the State's q and u vectors.

        Parameters
        ----------
        state : State
            A State of `system`, realized to Model (the counts depend on the quaternion mode).

        Returns
        -------
        dict of str to (slice, slice)
            Joint name -> (q slice, u slice); the floating base's mobilizer is under
            ``"root_joint"`` when there is one and no URDF joint has that name.
        """
        nq = np.cumsum([0] + [self.matter.get_mobilized_body(i).get_num_q(state)
                              for i in range(1, self.matter.get_num_bodies())])
        nu = np.cumsum([0] + [self.matter.get_mobilized_body(i).get_num_u(state)
                              for i in range(1, self.matter.get_num_bodies())])
        out = {}
        named = dict(self.joints)
        if isinstance(self.root, MobilizedBody.Free) and "root_joint" not in named:
            named["root_joint"] = self.root
        for jname, mb in named.items():
            i = mb.get_mobilized_body_index() - 1
            out[jname] = (slice(int(nq[i]), int(nq[i + 1])), slice(int(nu[i]), int(nu[i + 1])))
        return out


    def add_ground(self, height: float = 0.0, *, stiffness: float = _urdf_contact.DEFAULTS["stiffness"],
                   dissipation: float = _urdf_contact.DEFAULTS["dissipation"],
                   static_friction: float = _urdf_contact.DEFAULTS["static_friction"],
                   dynamic_friction: float = _urdf_contact.DEFAULTS["dynamic_friction"],
                   viscous_friction: float = _urdf_contact.DEFAULTS["viscous_friction"]) -> int:
        """Add a floor, the half-space z < height fixed to Ground, to the contact of ``contact=True``.

        Parameters
        ----------
        height : float
            The floor's top, in m (z up).
        stiffness, dissipation, static_friction, dynamic_friction, viscous_friction : float
            The floor surface's contact law (``Force.HuntCrossley.add_surface``).

        Returns
        -------
        int
            The floor's surface index in `contact`. Adding it is a topology change (make States after).

        Raises
        ------
        ValueError
            The model was loaded without ``contact=True``, or a parameter is refused by the law.
        """
        if self.contact is None:
            raise ValueError(f"{self.path}: add_ground needs the collision shapes' contact: load with contact=True")
        if not math.isfinite(height):
            raise ValueError(f"{self.path}: add_ground: height must be finite, got {height!r}")
        contact: Any = self.contact  # a Force.HuntCrossley (the Force base class has no add_surface)
        return contact.add_surface(self.matter.get_ground(), ContactGeometry.HalfSpace(),
                                        _urdf_contact.floor_frame(height), stiffness=stiffness,
                                        dissipation=dissipation, static_friction=static_friction,
                                        dynamic_friction=dynamic_friction, viscous_friction=viscous_friction)

    # -- Pinocchio's conventions (simtk.io._urdf_pinocchio) ---------------------------------------
    def state_from_pinocchio(self, state: State, q: ArrayLike, v: ArrayLike | None = None,
                             pin_model: Any = None) -> None:
        """Set the State's q (and u) from Pinocchio's q and v of the same URDF.

        Parameters
        ----------
        state : State
            A State of `system` (realized to Model at least).
        q : array_like
            Pinocchio's configuration: per joint in Pinocchio's order, an angle or displacement,
            (cos, sin) for a continuous joint, (p, qx qy qz qw) for the floating base.
        v : array_like, optional
            Pinocchio's velocity: per joint a rate; for the floating base (v, w) of the base frame,
            in the base frame. None leaves u as it is.
        pin_model : pinocchio.Model, optional
            Take the joint order and sizes from this model (by joint name) instead of from the
            URDF (Pinocchio's order: depth first, children by joint name, fixed joints merged).

        Raises
        ------
        ValueError
            q or v of the wrong length or non-finite, a quaternion or (cos, sin) pair off the unit
            sphere by more than 1e-8, or a joint the model does not have; the State is unchanged.
        NotImplementedError
            A joint kind without a map here (planar; floating joints other than the base).
        """
        _pinocchio.from_pinocchio(self, state, q, v, pin_model)

    def state_to_pinocchio(self, state: State, pin_model: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Pinocchio's (q, v) of the State's q and u (the inverse of `state_from_pinocchio`).

        Returns
        -------
        q, v : ndarray
            Pinocchio's configuration (unit quaternion, normalized here) and velocity.
        """
        return _pinocchio.to_pinocchio(self, state, pin_model)

    def q_to_pinocchio(self, state: State, pin_model: Any = None) -> np.ndarray:
        """Pinocchio's q of the State (see `state_to_pinocchio`)."""
        return _pinocchio.to_pinocchio(self, state, pin_model)[0]

    def v_to_pinocchio(self, state: State, pin_model: Any = None) -> np.ndarray:
        """Pinocchio's v of the State (see `state_to_pinocchio`)."""
        return _pinocchio.to_pinocchio(self, state, pin_model)[1]

    def udot_to_pinocchio(self, state: State, pin_model: Any = None) -> np.ndarray:
        """Pinocchio's acceleration ``a`` (what ``pinocchio.aba`` returns) of the State's udot.

        The State is realized to Acceleration. For the floating base, ``a = (R^T vdot - w_B x v_B,
        R^T wdot)`` with R the base's orientation and w_B, v_B its body-frame velocities: Pinocchio's
        a is the time derivative of its body-frame v.

        Returns
        -------
        ndarray, shape (nv,)
        """
        return _pinocchio.udot_to_pinocchio(self, state, pin_model)

    def mobility_forces_from_pinocchio(self, state: State, tau: ArrayLike, pin_model: Any = None) -> np.ndarray:
        """simtk's mobility forces (nu,) equivalent to Pinocchio's generalized forces ``tau``.

        For the floating base, Pinocchio's (force, torque) in the base frame become (torque, force)
        in Ground; the other joints' entries are the same. Needs the State's q only.

        Returns
        -------
        ndarray, shape (nu,)
        """
        return _pinocchio.forces_from_pinocchio(self, state, tau, pin_model)


# ---------------------------------------------------------------------------------------------
# The loader
# ---------------------------------------------------------------------------------------------
def load_urdf(path: str | os.PathLike, floating_base: bool = False, *, merge_fixed: bool = False,
              gravity: Sequence[float] | None = (0.0, 0.0, -9.81), limits: bool = True,
              limit_stiffness: float = 1e5, limit_dissipation: float = 1.0,
              nonphysical_inertia: str = "repair", package_dirs: Sequence[str | os.PathLike] = (),
              friction_velocity: float | None = 1e-3, mimic: bool = True, contact: bool = False,
              contact_parameters: dict | None = None, ground: float | None = None) -> UrdfModel:
    """Build a MultibodySystem from a URDF file.

    Parameters
    ----------
    path : str or path-like
        The ``.urdf`` file (plain XML; xacro must be expanded first).
    floating_base : bool
        Mount the root link on a ``MobilizedBody.Free`` (six mobilities; q = quaternion [w, x, y, z]
        then position, u = angular then linear velocity, both in Ground) instead of welding it to
        Ground.
    merge_fixed : bool
        Merge the child link of each fixed joint into its parent's body (its mass properties are
        added, its frame recorded in `UrdfModel.frames`) instead of making it a Weld body.
    gravity : sequence of 3 floats or None
        Gravity in Ground (m/s^2); None adds no gravity element.
    limits : bool
        Add a ``Force.MobilityLinearStop`` for each joint with ``<limit lower upper>`` (revolute and
        prismatic). The stop acts only beyond the limits.
    limit_stiffness, limit_dissipation : float
        The stops' stiffness k (N m/rad or N/m) and Hunt-Crossley dissipation d (s/rad or s/m).
    nonphysical_inertia : {"repair", "error", "keep"}
        What to do with an inertial that no mass distribution has (negative principal moments or a
        violated triangle inequality, beyond round-off; several published robot files have them):
        replace it by the nearest physical inertia and warn (default), raise `ModelFileError`, or
        keep it as written and warn (as Pinocchio and OpenSim do; `UrdfModel.nonphysical_inertias`).
    package_dirs : sequence of path-like
        Folders in which ``package://name/...`` mesh references are looked up (as ``dir/name/...``
        and, for a folder named ``name``, ``dir/...``); the URDF's own ancestors are searched too.
    friction_velocity : float or None
        ``<dynamics friction=mu>`` becomes a ``Force.MobilityCoulombFriction`` ``-mu tanh(u / v_eps)``
        with v_eps this speed (rad/s or m/s; `UrdfModel.frictions`); None applies no friction.
    mimic : bool
        ``<mimic joint= multiplier= offset=>`` becomes a ``Constraint.CoordinateCoupler`` keeping
        q = multiplier q_leader + offset (`UrdfModel.couplers`; `UrdfModel.default_state` satisfies
        it, a State set otherwise must too); False loads mimic joints as independent joints.
    contact : bool
        Make each ``<collision>`` shape a surface of one ``Force.HuntCrossley`` (`UrdfModel.contact`;
        see `simtk.io._urdf_contact` for the shapes: cylinders as cylinders, meshes as their convex
        hulls); the robot's surfaces do not touch each other. Add a floor with
        `UrdfModel.add_ground`.
    contact_parameters : dict, optional
        The robot surfaces' law (``stiffness``, ``dissipation``, ``static_friction``,
        ``dynamic_friction``, ``viscous_friction``), each defaulting to `_urdf_contact.DEFAULTS`.
    ground : float, optional
        With ``contact=True``: a floor, the half-space z < ``ground`` fixed to Ground with the default
        law (`_urdf_contact.DEFAULTS`), as a surface of the contact element itself, so that it is part
        of the model (``describe_urdf(..., ground=0.0).to_text()`` writes it); `UrdfModel.add_ground`
        adds one to a loaded model instead.

    Returns
    -------
    UrdfModel
        The system, its subsystems, and the bodies and joints by their URDF names.

    Raises
    ------
    ModelFileError
        A malformed file or an invalid model (unknown joint type, a joint naming an undefined
        link, two parents for a link, a cycle, duplicate names, a non-finite number, a negative
        mass, a zero axis, lower limit above upper), naming the file, the line and the element.

    Warns
    -----
    UrdfWarning
        Once per file for each kind of thing not loaded as written: mesh files not found, repaired
        inertias, massless links with an inertia (dropped), unknown elements inside links and joints,
        collision shapes left out of the contact, friction or mimic not applied (``friction_velocity=None``,
        ``mimic=False``, or a joint kind they do not apply to).

    Notes
    -----
    A mobilized body takes its link's name, with the characters simtk's component names refuse
    (``. / : * ?``, a leading digit, ``null``) replaced, and made unique against ``ground``; the
    file's names stay in the body's ``link_name`` and ``joint_name`` attributes and are the keys of
    `UrdfModel.bodies` and `UrdfModel.joints`.

    A movable joint whose whole outboard subtree has no mass has a singular articulated inertia;
    such a model loads, and forward dynamics raises ``SingularArticulatedInertiaError`` naming the
    body.
    """
    path = Path(path)
    d = _read(path, floating_base, merge_fixed, gravity, limits, limit_stiffness, limit_dissipation,
              nonphysical_inertia, friction_velocity, mimic, contact, contact_parameters, package_dirs, ground)
    return _result(d.rd, d, path, package_dirs)


def describe_urdf(path: str | os.PathLike, floating_base: bool = False, *, merge_fixed: bool = False,
                  gravity: Sequence[float] | None = (0.0, 0.0, -9.81), limits: bool = True,
                  limit_stiffness: float = 1e5, limit_dissipation: float = 1.0,
                  nonphysical_inertia: str = "repair", package_dirs: Sequence[str | os.PathLike] = (),
                  friction_velocity: float | None = 1e-3, mimic: bool = True, contact: bool = False,
                  contact_parameters: dict | None = None, ground: float | None = None) -> ModelDescription:
    """The declarative description `load_urdf` builds its System from, without building it.

    Parameters are `load_urdf`'s. ``describe_urdf(path).build()[0]`` is the System ``load_urdf(path)``
    makes, and ``describe_urdf(path).to_text()`` is it as a model file (``load_model`` reads it).

    Returns
    -------
    ModelDescription
        The model-format nodes of the file's links (mobilized bodies), limits, dampers and gravity,
        each with the line and element of the file it came from.

    Raises
    ------
    ModelFileError
        As `load_urdf`, for what the reader finds; what only the builder finds is raised by ``build()``.
    """
    return _read(Path(path), floating_base, merge_fixed, gravity, limits, limit_stiffness, limit_dissipation,
                 nonphysical_inertia, friction_velocity, mimic, contact, contact_parameters, package_dirs, ground).desc


def _read(path: Path, floating_base: bool, merge_fixed: bool, gravity, limits: bool, limit_stiffness: float,
          limit_dissipation: float, nonphysical_inertia: str, friction_velocity: float | None, mimic: bool,
          contact: bool, contact_parameters: dict | None, package_dirs: Sequence,
          ground: float | None = None) -> "_Description":
    check_policy("load_urdf", nonphysical_inertia)
    if ground is not None and not contact:
        raise ValueError(f"load_urdf: ground={ground!r} is a contact surface: it needs contact=True")
    if ground is not None and not (isinstance(ground, (int, float)) and math.isfinite(ground)):
        raise ValueError(f"load_urdf: ground must be a finite height in m or None, got {ground!r}")
    if friction_velocity is not None and not (math.isfinite(friction_velocity) and friction_velocity > 0):
        raise ValueError(f"load_urdf: friction_velocity must be a finite number > 0 or None, got {friction_velocity!r}")
    rd = _Reader(path, nonphysical_inertia)
    d = _Description(rd, floating_base, merge_fixed, nonphysical_inertia)
    d.friction_velocity = friction_velocity
    for name in rd.order[1:]:
        d.joint(rd.parent_joint[name], limits, limit_stiffness, limit_dissipation)
    if mimic:
        for name in rd.order[1:]:
            if rd.parent_joint[name].mimic is not None:
                d.mimic(rd.parent_joint[name])
    if contact:
        law = _contact_law(contact_parameters)
        bodies, shapes, sizes, frames, verts, d.contact_skipped = _urdf_contact.collision_surfaces(
            rd, d.home, d.nodes, path.resolve().parent, _package_dirs(package_dirs), _resolve_mesh)
        laws, cliques = [law] * len(bodies), [_urdf_contact.ROBOT_CLIQUE] * len(bodies)
        if ground is not None:  # the floor add_ground makes, in the description
            bodies.append(d.desc.ground)
            shapes.append("HalfSpace")
            sizes.append([0.0, 0.0, 0.0])
            frames.append(_urdf_contact.floor_frame(float(ground)))
            laws.append(_contact_law(None))
            cliques.append(-1)
            verts.append([])
        d.contact = d.desc.add("Force.HuntCrossley", d.desc.forces, "contact", transition_velocity=0.01,
                               surface_bodies=bodies, surface_shapes=shapes, surface_sizes=sizes,
                               surface_frames=frames, surface_laws=laws, surface_cliques=cliques,
                               **({"surface_vertices": verts} if any(len(v) for v in verts) else {}))
    if gravity is not None:
        d.desc.add("Force.UniformGravity", d.desc.forces, "gravity", gravity=np.asarray(gravity, dtype=float),
                   zero_height=0.0)
    return d


class _Description:
    """The URDF's links and joints as a model description (nodes only: no simtk element is made here)."""

    def __init__(self, rd: _Reader, floating_base: bool, merge_fixed: bool, policy: str):
        self.rd, self.policy = rd, policy
        self.desc = ModelDescription(_sanitize(rd.robot_name, set()), rd.path)
        # Which body each link belongs to and where its frame is on that body (merge_fixed).
        self.home: dict[str, tuple[str, Transform]] = {rd.root: (rd.root, Transform())}
        for name in rd.order[1:]:
            j = rd.parent_joint[name]
            if merge_fixed and j.type == "fixed":
                body, X_BP = self.home[j.parent]
                self.home[name] = (body, X_BP * j.X_PJ)
            else:
                self.home[name] = (name, Transform())
        # Mass properties per body: its links' (mass, com, inertia about the body origin), in B.
        self.parts: dict[str, list] = {}
        for name in rd.order:
            link = rd.links[name]
            body, X_BL = self.home[name]
            self.parts.setdefault(body, [])
            if link.mass > 0:
                self.parts[body].append((link, X_BL))
        self.taken = {"ground"}
        self.nodes: dict[str, _Node] = {}
        self.stops: dict[str, _Node] = {}
        self.dampers: dict[str, _Node] = {}
        self.frictions: dict[str, _Node] = {}
        self.couplers: dict[str, _Node] = {}
        self.contact: _Node | None = None
        self.contact_skipped: list[str] = []
        self.friction_velocity: float | None = None
        kind = "MobilizedBody.Free" if floating_base else "MobilizedBody.Weld"
        self.body(kind, rd.root, self.desc.ground, Transform(), Transform())

    def mass_properties(self, body: str) -> _Node:
        ps = self.parts[body]
        if not ps:
            return self.desc.mass_properties(0.0, np.zeros(3), np.zeros((3, 3)))
        if len(ps) == 1 and ps[0][0].name == body:
            link = ps[0][0]
            m, c, I_C = link.mass, link.com, link.I_C
        else:
            m = sum(link.mass for link, _ in ps)
            c = sum(link.mass * (X_BL * link.com) for link, X_BL in ps) / m
            I_C = np.zeros((3, 3))
            for link, X_BL in ps:
                R = X_BL.R.matrix
                I_C += R @ link.I_C @ R.T
                p = X_BL * link.com - c
                I_C += link.mass * (float(p @ p) * np.eye(3) - np.outer(p, p))  # about the composite's center
        try:
            # a kept inertia stays unchecked (and so does a body it is merged into); the others are physical
            inertia, why = apply_inertia_policy(I_C, self.policy)
        except ValueError as e:
            raise self.rd.doc.error(self.rd.links[body].el, str(e)) from None
        return self.desc.mass_properties(m, c, inertia.matrix, nonphysical=why is not None and self.policy == "keep")

    def body(self, kind: str, link: str, parent: _Node, X_PF: Transform, X_BM: Transform) -> _Node:
        el = self.rd.links[link].el
        node = self.desc.add(kind, self.desc.matter, _sanitize(link, self.taken), line=self.rd.doc.line(el),
                             element=_describe(el), parent=parent, inboard_frame=X_PF,
                             mass_properties=self.mass_properties(link), outboard_frame=X_BM)
        self.nodes[link] = node
        return node

    def joint(self, j, limits: bool, k: float, dissipation: float) -> None:
        """The mobilizer of joint ``j``'s child link (none when merged), its stop and its damper."""
        if self.home[j.child][0] != j.child:
            return
        parent_body, X_BP = self.home[j.parent]
        X_PJ = X_BP * j.X_PJ  # the joint frame on the parent's body
        kind, k_axis = _MOBILIZER[j.type]
        R = Rotation() if k_axis is None else _frame_with_axis(j.axis, k_axis)
        mb = self.body(kind, j.child, self.nodes[parent_body], X_PJ * Transform(R), Transform(R))
        line, element = self.rd.doc.line(j.el), _describe(j.el)
        forces = self.desc.forces
        name = mb.items["name"][0]
        if j.limits is not None and limits:
            self.stops[j.name] = self.desc.add("Force.MobilityLinearStop", forces, f"{name}_limits", line=line,
                                               element=element, body=mb, which=0, stiffness=k,
                                               dissipation=dissipation, q_low=j.limits[0], q_high=j.limits[1])
        if j.friction > 0 and self.friction_velocity is not None:
            if kind in ("MobilizedBody.Pin", "MobilizedBody.Slider"):
                self.frictions[j.name] = self.desc.add("Force.MobilityCoulombFriction", forces, f"{name}_friction",
                                                       line=line, element=element, body=mb, which=0,
                                                       friction=j.friction, transition_velocity=self.friction_velocity)
            elif kind != "MobilizedBody.Weld":
                self.rd.unknown.append(f"<dynamics friction> of {j.type} joint {j.name!r}: not applied")
        if j.damping > 0:
            if kind in ("MobilizedBody.Pin", "MobilizedBody.Slider"):
                self.dampers[j.name] = self.desc.add("Force.MobilityLinearDamper", forces, f"{name}_damping",
                                                     line=line, element=element, body=mb, which=0, damping=j.damping)
            elif kind != "MobilizedBody.Weld":  # URDF defines damping for one-axis joints only
                self.rd.unknown.append(f"<dynamics damping> of {j.type} joint {j.name!r}: not applied")


    def mimic(self, j) -> None:
        """``<mimic>``: q_j = multiplier q_leader + offset, a ``Constraint.CoordinateCoupler`` on the two."""
        leader = self.rd.joints.get(j.mimic[0])
        one_axis = ("revolute", "continuous", "prismatic")
        line, element = self.rd.doc.line(j.el), _describe(j.el)
        if leader is None or j.child not in self.nodes or leader.child not in self.nodes:
            return  # an unknown leader is reported by the reader; a merged (fixed) joint has no coordinate
        if j.type not in one_axis or leader.type not in one_axis:
            self.rd.unknown.append(f"<mimic> of {j.type} joint {j.name!r} following {leader.type} joint "
                                   f"{leader.name!r}: not applied (one-axis joints only)")
            return
        m, offset = j.mimic[1], j.mimic[2]
        name = self.nodes[j.child].items["name"][0]
        self.couplers[j.name] = self.desc.add(
            "Constraint.CoordinateCoupler", self.desc.matter, f"{name}_mimic", line=line, element=element,
            function=Function.Linear([m, -1.0, offset]), coord_bodies=[self.nodes[leader.child], self.nodes[j.child]],
            coord_indices=[0, 0])


#: URDF joint type -> (mobilizer kind, which axis of its frames turns onto the URDF axis, or None)
_MOBILIZER = {"revolute": ("MobilizedBody.Pin", 2), "continuous": ("MobilizedBody.Pin", 2),
              "prismatic": ("MobilizedBody.Slider", 0), "planar": ("MobilizedBody.Planar", 2),
              "floating": ("MobilizedBody.Free", None), "fixed": ("MobilizedBody.Weld", None)}


def _result(rd: _Reader, d: _Description, path: Path, package_dirs: Sequence[str | os.PathLike]) -> UrdfModel:
    """Build the description and give the built components the file's names."""
    system, comps = d.desc.build()
    mobods = {link: comps[node.path] for link, node in d.nodes.items()}
    for link, mb in mobods.items():  # the file's names, kept on the body beside its component name
        mb.link_name = link
        mb.joint_name = rd.parent_joint[link].name if link in rd.parent_joint else (
            "root_joint" if isinstance(mb, MobilizedBody.Free) else None)
    model = UrdfModel(system, comps["/matter"], comps["/forces"], path, description=d.desc, components=comps,
                      name=rd.robot_name, root=mobods[rd.root])
    model._pin_order = _pinocchio.urdf_joint_order(rd, isinstance(model.root, MobilizedBody.Free))
    model.gravity = comps.get("/forces/gravity")
    model.joints, model.bodies = NamedDict((), "joint", path), NamedDict((), "link", path)
    for name in rd.order[1:]:
        j = rd.parent_joint[name]
        if name in mobods:
            model.joints[j.name] = mobods[name]
        if j.limits is not None:
            model.limits[j.name] = j.limits
        if j.friction > 0 and j.type != "fixed" and name in mobods:
            model.friction[j.name] = j.friction
        if j.mimic is not None and name in mobods:
            model.mimics[j.name] = j.mimic
    model.stops = {k: comps[n.path] for k, n in d.stops.items()}
    model.dampers = {k: comps[n.path] for k, n in d.dampers.items()}
    model.frictions = {k: comps[n.path] for k, n in d.frictions.items()}
    model.couplers = {k: comps[n.path] for k, n in d.couplers.items()}
    model.contact = comps[d.contact.path] if d.contact is not None else None
    for name in rd.order:
        body, X_BL = d.home[name]
        model.frames[name] = (mobods[body], X_BL)
        if body == name:
            model.bodies[name] = mobods[name]
    missing = _decorations(rd, d, model, path, package_dirs)
    model.repaired_inertias = dict(rd.repaired)
    model.nonphysical_inertias = dict(rd.kept)
    w = model.warnings
    _warn_once(w, path, missing, "mesh file(s) not found (kept as references, Geometry.path is None)")
    _warn_once(w, path, [f"{k} ({v})" for k, v in rd.repaired.items()],
               "link(s) with a non-physical inertia, replaced by the nearest physical one")
    _warn_once(w, path, [f"{k} ({v})" for k, v in rd.kept.items()],
               "link(s) with a non-physical inertia, kept as written (nonphysical_inertia='keep')")
    _warn_once(w, path, rd.massless_with_inertia, "link(s) with mass 0 but a nonzero inertia: the inertia is dropped "
                                                  "(a massless simtk body has none)")
    _warn_once(w, path, [f"{k} (friction {v:g})" for k, v in model.friction.items() if k not in model.frictions],
               "joint(s) with Coulomb friction, which is NOT applied (friction_velocity=None)")
    _warn_once(w, path, [f"{k} (follows {v[0]!r})" for k, v in model.mimics.items() if k not in model.couplers],
               "mimic joint(s) loaded as independent joints (the coupling is not applied)")
    _warn_once(w, path, d.contact_skipped, "collision shape(s) left out of the contact")
    _warn_once(w, path, rd.unknown, "element(s) not understood, ignored")
    return model


def _contact_law(given: dict | None) -> list[float]:
    law = dict(_urdf_contact.DEFAULTS)
    unknown = set(given or {}) - set(law)
    if unknown:
        raise ValueError(f"load_urdf: contact_parameters has unknown key(s) {sorted(unknown)}: expected some of "
                         f"{list(law)}")
    law.update(given or {})
    _hc_law(*law.values())  # refused here, before anything is read, with Force.HuntCrossley's message
    return [float(v) for v in law.values()]


def _package_dirs(package_dirs: Sequence) -> list[Path]:
    out = [Path(p) for p in package_dirs]
    return out + [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]


def _decorations(rd: _Reader, d: _Description, model: UrdfModel, path: Path, package_dirs) -> list[str]:
    """The visual and collision shapes (records for a viewer, not System elements); the meshes not found."""
    missing: list[str] = []
    urdf_dir = path.resolve().parent
    pkg_dirs = _package_dirs(package_dirs)
    found_cache: dict[str, Path | None] = {}
    for name in rd.order:
        link = rd.links[name]
        body, X_BL = d.home[name]
        for tag, out in (("visual", model.visuals), ("collision", model.collisions)):
            for gname, X_LG, kind, dims, mname, rgba in rd.shapes(link, tag):
                if "filename" in dims:
                    fn = dims["filename"]
                    if fn not in found_cache:
                        found_cache[fn] = _resolve_mesh(fn, urdf_dir, pkg_dirs)
                        if found_cache[fn] is None:
                            missing.append(fn)
                    dims["path"] = found_cache[fn]
                out.append(Geometry(name, model.bodies[body], X_BL * X_LG, kind, name=gname, material=mname,
                                    rgba=rgba, **dims))
    return missing


def _warn_once(out: list, path: Path, items: list[str], what: str) -> None:
    if items:
        shown = ", ".join(items[:8]) + (f", ... ({len(items) - 8} more)" if len(items) > 8 else "")
        out.append(f"{path}: {len(items)} {what}: {shown}")
        warnings.warn(out[-1], UrdfWarning, stacklevel=4)
