"""URDF import: a robot description file becomes a MultibodySystem.

`load_urdf` reads a URDF file with the standard library's expat parser (line numbers are kept for
the error messages) and builds:

- one mobilized body per link, named after the link; the mobilizer comes from the joint whose child
  the link is (revolute and continuous: ``Pin``; prismatic: ``Slider``; fixed: ``Weld``, or merged
  into the parent with ``merge_fixed=True``; floating: ``Free``; planar: ``Planar``). The root link is
  welded to Ground, or mounted on a ``Free`` mobilizer with ``floating_base=True``.
- gravity (``Force.UniformGravity``), a ``Force.MobilityLinearDamper`` per joint with damping and a
  ``Force.MobilityLinearStop`` per joint with position limits.
- the visual and collision geometry as `Geometry` records on the returned `UrdfModel` (simtk's
  bodies have no place for decorations yet).

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

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    State,
    Transform,
)

from ._inertia_policy import apply as apply_inertia_policy
from ._inertia_policy import check_policy
from ._named import NamedDict
from ._urdf_reader import Geometry, UrdfWarning, _frame_with_axis, _Reader, _resolve_mesh, _sanitize
from .errors import ModelFileError

__all__ = ["load_urdf", "UrdfModel", "Geometry", "ModelFileError", "UrdfWarning"]


@dataclass
class UrdfModel:
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
        Coulomb friction of ``<dynamics friction>``, NOT applied (simtk has no friction element).
    mimics : dict of str to (str, float, float)
        ``<mimic>`` joints: (leader joint, multiplier, offset); loaded as independent joints.
    repaired_inertias : dict of str to str
        Links whose inertial was not physical and was replaced by the nearest physical one, with the
        reason.
    nonphysical_inertias : dict of str to str
        Links whose inertial was not physical and was kept as written (``nonphysical_inertia="keep"``),
        with the reason.
    """

    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    gravity: Force | None
    name: str
    path: Path
    root: MobilizedBody
    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    frames: dict = field(default_factory=dict)
    visuals: list = field(default_factory=list)
    collisions: list = field(default_factory=list)
    limits: dict = field(default_factory=dict)
    stops: dict = field(default_factory=dict)
    dampers: dict = field(default_factory=dict)
    friction: dict = field(default_factory=dict)
    mimics: dict = field(default_factory=dict)
    repaired_inertias: dict = field(default_factory=dict)
    nonphysical_inertias: dict = field(default_factory=dict)

    def default_state(self) -> State:
        """A new default State (all joint coordinates zero, the floating base at the origin), at Model.

        Returns
        -------
        State
        """
        return self.system.realize_topology()

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


# ---------------------------------------------------------------------------------------------
# The loader
# ---------------------------------------------------------------------------------------------
def load_urdf(path: str | os.PathLike, floating_base: bool = False, *, merge_fixed: bool = False,
              gravity: Sequence[float] | None = (0.0, 0.0, -9.81), limits: bool = True,
              limit_stiffness: float = 1e5, limit_dissipation: float = 1.0,
              nonphysical_inertia: str = "repair", package_dirs: Sequence[str | os.PathLike] = ()) -> UrdfModel:
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
        Once per file for each kind of thing not loaded as written: mesh files not found, Coulomb
        friction (not applied), mimic joints (loaded as independent joints), repaired inertias,
        massless links with an inertia (dropped), unknown elements inside links and joints.

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
    check_policy("load_urdf", nonphysical_inertia)
    rd = _Reader(path, nonphysical_inertia)
    doc = rd.doc

    # Which body each link belongs to and where its frame is on that body (merge_fixed).
    home: dict[str, tuple[str, Transform]] = {rd.root: (rd.root, Transform())}
    for name in rd.order[1:]:
        j = rd.parent_joint[name]
        if merge_fixed and j.type == "fixed":
            body, X_BP = home[j.parent]
            home[name] = (body, X_BP * j.X_PJ)
        else:
            home[name] = (name, Transform())

    # Mass properties per body: its links' (mass, com, inertia about the body origin), in B.
    parts: dict[str, list] = {}
    for name in rd.order:
        link = rd.links[name]
        body, X_BL = home[name]
        parts.setdefault(body, [])
        if link.mass > 0:
            parts[body].append((link, X_BL))

    def inertia_of(I: np.ndarray) -> Inertia:
        # a kept inertia stays unchecked (and so does a body it is merged into); the others are physical
        return apply_inertia_policy(I, nonphysical_inertia)[0]

    def mass_properties(body: str) -> MassProperties:
        ps = parts[body]
        if not ps:
            return MassProperties(0.0, np.zeros(3), Inertia(0.0))
        if len(ps) == 1 and ps[0][0].name == body:
            link = ps[0][0]
            return MassProperties.from_central_inertia(link.mass, link.com, inertia_of(link.I_C))
        m = sum(link.mass for link, _ in ps)
        c = sum(link.mass * (X_BL * link.com) for link, X_BL in ps) / m
        I_B = np.zeros((3, 3))
        for link, X_BL in ps:
            R = X_BL.R.matrix
            I_B += R @ link.I_C @ R.T
            p = X_BL * link.com - c
            I_B += link.mass * (float(p @ p) * np.eye(3) - np.outer(p, p))  # about the composite's center
        return MassProperties.from_central_inertia(m, c, inertia_of(I_B))

    system = MultibodySystem(name=_sanitize(rd.robot_name, set()))
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    taken = {"ground"}
    mobods: dict[str, MobilizedBody] = {}

    def make(cls, parent, X_PF, body_name, X_BM):
        try:
            return cls(parent, X_PF, Body.Rigid(mass_properties(body_name)), X_BM, name=_sanitize(body_name, taken))
        except ValueError as e:  # the mass properties of a merged body, or a frame: name the link
            raise doc.error(rd.links[body_name].el, str(e)) from None

    root_cls = MobilizedBody.Free if floating_base else MobilizedBody.Weld
    mobods[rd.root] = make(root_cls, matter.ground, Transform(), rd.root, Transform())
    # the file's names, kept on the body beside its component name (which the name rule may have changed)
    root = mobods[rd.root]
    root.link_name = rd.root  # type: ignore[attr-defined]  # the file's names, beside the component name
    root.joint_name = "root_joint" if floating_base else None  # type: ignore[attr-defined]
    model = UrdfModel(system, matter, forces, None, rd.robot_name, path, mobods[rd.root])
    model.joints, model.bodies = NamedDict((), "joint", path), NamedDict((), "link", path)
    for name in rd.order[1:]:
        j = rd.parent_joint[name]
        if home[name][0] != name:
            continue
        parent_body, X_BP = home[j.parent]
        X_PJ = X_BP * j.X_PJ  # the joint frame on the parent's body
        if j.type in ("revolute", "continuous"):
            cls, R = MobilizedBody.Pin, _frame_with_axis(j.axis, 2)
        elif j.type == "prismatic":
            cls, R = MobilizedBody.Slider, _frame_with_axis(j.axis, 0)
        elif j.type == "planar":
            cls, R = MobilizedBody.Planar, _frame_with_axis(j.axis, 2)
        elif j.type == "floating":
            cls, R = MobilizedBody.Free, Rotation()
        else:
            cls, R = MobilizedBody.Weld, Rotation()
        mb = make(cls, mobods[parent_body], X_PJ * Transform(R), name, Transform(R))
        mb.link_name, mb.joint_name = name, j.name
        mobods[name] = mb
        model.joints[j.name] = mb
        if j.limits is not None:
            model.limits[j.name] = j.limits
            if limits:
                model.stops[j.name] = Force.MobilityLinearStop(forces, mb, 0, limit_stiffness, limit_dissipation,
                                                               j.limits[0], j.limits[1], name=f"{mb.name}_limits")
        one_dof = cls in (MobilizedBody.Pin, MobilizedBody.Slider)
        if j.damping > 0:
            if one_dof:
                model.dampers[j.name] = Force.MobilityLinearDamper(forces, mb, 0, j.damping, name=f"{mb.name}_damping")
            elif cls is not MobilizedBody.Weld:  # URDF defines damping for one-axis joints only
                rd.unknown.append(f"<dynamics damping> of {j.type} joint {j.name!r}: not applied")
        if j.friction > 0 and cls is not MobilizedBody.Weld:
            model.friction[j.name] = j.friction
        if j.mimic is not None:
            model.mimics[j.name] = j.mimic
    for name in rd.order:
        body, X_BL = home[name]
        model.frames[name] = (mobods[body], X_BL)
        if body == name:
            model.bodies[name] = mobods[name]

    if gravity is not None:
        model.gravity = Force.UniformGravity(forces, matter, np.asarray(gravity, dtype=float), name="gravity")

    # Decorations.
    missing: list[str] = []
    urdf_dir = path.resolve().parent
    pkg_dirs = [Path(d) for d in package_dirs]
    pkg_dirs += [Path(d) for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]
    found_cache: dict[str, Path | None] = {}
    for name in rd.order:
        link = rd.links[name]
        body, X_BL = home[name]
        for tag, out in (("visual", model.visuals), ("collision", model.collisions)):
            for gname, X_LG, kind, dims, mname, rgba in rd.shapes(link, tag):
                if "filename" in dims:
                    fn = dims["filename"]
                    if fn not in found_cache:
                        found_cache[fn] = _resolve_mesh(fn, urdf_dir, pkg_dirs)
                        if found_cache[fn] is None:
                            missing.append(fn)
                    dims["path"] = found_cache[fn]
                out.append(Geometry(name, mobods[body], X_BL * X_LG, kind, name=gname, material=mname, rgba=rgba,
                                    **dims))

    model.repaired_inertias = dict(rd.repaired)
    model.nonphysical_inertias = dict(rd.kept)
    _warn_once(path, missing, "mesh file(s) not found (kept as references, Geometry.path is None)")
    _warn_once(path, [f"{k} ({v})" for k, v in rd.repaired.items()],
               "link(s) with a non-physical inertia, replaced by the nearest physical one")
    _warn_once(path, [f"{k} ({v})" for k, v in rd.kept.items()],
               "link(s) with a non-physical inertia, kept as written (nonphysical_inertia='keep')")
    _warn_once(path, rd.massless_with_inertia, "link(s) with mass 0 but a nonzero inertia: the inertia is dropped "
                                              "(a massless simtk body has none)")
    _warn_once(path, [f"{k} (friction {v:g})" for k, v in model.friction.items()],
               "joint(s) with Coulomb friction, which is NOT applied (simtk has no friction element yet)")
    _warn_once(path, [f"{k} (follows {v[0]!r})" for k, v in model.mimics.items()],
               "mimic joint(s) loaded as independent joints (the coupling is not applied)")
    _warn_once(path, rd.unknown, "element(s) not understood, ignored")
    return model


def _warn_once(path: Path, items: list[str], what: str) -> None:
    if items:
        shown = ", ".join(items[:8]) + (f", ... ({len(items) - 8} more)" if len(items) > 8 else "")
        warnings.warn(f"{path}: {len(items)} {what}: {shown}", UrdfWarning, stacklevel=3)
