"""OpenSim 4.x model files (``.osim``): the multibody part, as a simtk MultibodySystem.

``load_osim(path)`` reads the file with ``xml.etree.ElementTree`` (a tree builder fed by expat, so
that every element knows its line) and builds

- one ``MobilizedBody`` per OpenSim ``Body``, named like it (``/matter/femur``), whose mobilizer is
  the Joint that has the body as its child frame's base;
- the Joint's mobilizer with the transforms OpenSim hands to Simbody: the parent and child frames
  (usually ``PhysicalOffsetFrame``, possibly chained) reduced to transforms in their base bodies;
- ``Coordinate`` defaults (value, speed) applied by `OsimModel.initial_state`; clamped ranges
  (and locks) become restrictions of the ``Assembler`` that `OsimModel.make_assembler` returns,
  as in OpenSim's AssemblySolver;
  ``locked`` and ``prescribed`` coordinates as ``Constraint.PrescribedMotion`` (what OpenSim itself
  creates for them), gravity as ``Force.UniformGravity``;
- forces and constraints, named like in the file (``/forces/<name>``, ``/matter/<name>``).

Mapping onto simtk (the same one OpenSim makes onto Simbody):

============================== ==================================================================
OpenSim                        simtk
============================== ==================================================================
WeldJoint, PinJoint,           ``MobilizedBody.Weld / Pin / Slider / Ball / Free / Universal /
SliderJoint, BallJoint,        Gimbal / Planar / Ellipsoid``; coordinate k of the joint is the
FreeJoint, UniversalJoint,     mobilizer's q k and u k in Euler-angle mode (OpenSim always runs
GimbalJoint, PlanarJoint,      Simbody with Euler angles, so `OsimModel.initial_state` does too)
EllipsoidJoint
CustomJoint                    ``MobilizedBody.FunctionBased``: three rotation then three
                               translation axes; the mobilizer's coordinates in order of first
                               use over the six axes (OpenSim's order); an axis without function
                               is linear (slope 1) in its one coordinate, or the constant 0; an
                               axis without coordinates is the constant OpenSim evaluates with no
                               argument (a Constant's value, a LinearFunction's first coefficient,
                               a MultiplierFunction's scale times that of its function)
Constant, LinearFunction,      ``Function.Constant``, ``Function.Linear``, ``Function.Polynomial``;
PolynomialFunction,            SimmSpline (and NaturalCubicSpline, which OpenSim 4 reads as a
SimmSpline,                    SimmSpline) is the Forsythe-Malcolm-Moler cubic spline, linear
NaturalCubicSpline,            outside its points; implemented here (`SimmSplineFunction`);
MultiplierFunction, Sine,      Sine is ``Function.Sinusoid`` plus its offset, StepFunction
StepFunction,                  ``Function.Step``, PiecewiseLinearFunction a degree-1
PiecewiseLinearFunction,       ``Function.Spline``, PiecewiseConstantFunction y_k on
PiecewiseConstantFunction      [x_k, x_k+1)
GCVSpline                      with error_variance 0: the natural interpolating spline of degree
                               2 half_order - 1 GCVSPL fits (`GCVSplineFunction`); a smoothing one
                               (error_variance not 0) is not read (an `OsimFileError` says so)
MultivariatePolynomialFunction `MultivariatePolynomialFunction`, ``ExpressionFunction`` (a Lepton
ExpressionBasedFunction        parser, ``simtk.io._lepton``): where a place takes several arguments
                               (a coupler's independent coordinates, a TransformAxis's coordinates)
PointToPointSpring             ``Force.TwoPointLinearSpring``
BushingForce                   ``Force.LinearBushing`` with k6 = (rotational, translational)
SpringGeneralizedForce         ``Force.MobilityLinearSpring`` + ``Force.MobilityLinearDamper``
CoordinateLimitForce           ``Force.CoordinateLimit`` (OpenSim's own force, no Simbody
                               built-in; compiled); limits and stiffnesses of rotational
                               coordinates are in degrees, as in OpenSim (``degrees=True``)
WeldConstraint                 ``Constraint.Weld``
PointConstraint                ``Constraint.Ball``
ConstantDistanceConstraint     ``Constraint.Rod``
PointOnLineConstraint          ``Constraint.PointOnLine``; as OpenSim 4.6 does, these three take
                               their points (and line) in the socket's base body, even when the
                               socket names an offset frame
CoordinateCouplerConstraint    ``Constraint.CoordinateCoupler`` with scale * f(q_ind) - q_dep
HuntCrossleyForce with         ``Force.HuntCrossley``, one surface per geometry of each
ContactSphere,                 ContactParameters (``_osim_contact``)
ContactHalfSpace
ContactMesh in a               nothing: Simbody's Hunt-Crossley skips mesh contacts (OpenSim gives
HuntCrossleyForce              no force); ElasticFoundationForce is not built (listed in the warning)
SmoothSphereHalfSpaceForce     ``Force.SmoothSphereHalfSpace``
ExpressionBasedCoordinateForce one ``Force.Custom`` each, evaluating the parsed expression of (q, qdot)
ExpressionBasedPointToPoint-   or (d, ddot) (``_osim_expression_forces``)
Force
CoordinateActuator,            one ``Force.Actuators`` (``/forces/actuators``, compiled) applying
TorqueActuator, PointActuator  optimal_force times control; controls held in the State (`set_control`)
PrescribedController           its functions of time added to the controls (``_osim_actuators``)
============================== ==================================================================

OpenSim's names (`simtk.io._osim_names`): every Coordinate is a component at its OpenSim path
``/jointset/<joint>/<coordinate>`` (a `Coordinate`) whose state variables ``value`` and ``speed``
are views of its mobilizer's q and u and whose outputs are ``value``, ``speed`` and
``acceleration``; ``/bodyset/<body>``, ``/ground``, ``/forceset/<force>`` and
``/constraintset/<constraint>`` lead to the simtk elements built for them.

Everything else with dynamics (muscles and other actuators, elastic-foundation contact, markers, wrap objects,
other controllers, probes, unknown elements and properties) is *not* built: it is listed, by name and
type, in one ``UserWarning`` (and in `OsimModel.warnings`). Visual geometry (``attached_geometry``,
``FrameGeometry``) has no effect on dynamics and is skipped without comment.

The tree grows from Ground level by level, as OpenSim's: a joint whose child is reached before its
parent (its child is Ground, or a body nearer to Ground) mobilizes its parent through the same
mobilizer reversed (``direction=MobilizedBody.Reverse``: the coordinates keep their meaning), as
OpenSim does. A joint left over closes a loop: as OpenSim, it mobilizes a copy (slave) of its child
body, welded to the body at their origins (`OsimModel.loop_welds`), the body's mass shared equally
(the copies' inertias as OpenSim 4.6 makes them). Bodies no joint connects to Ground get OpenSim's
FreeJoints from Ground (``free_<body>``, coordinates ``free_<body>_coord_0`` to ``5``).

Not supported (an `OsimFileError` says so): OpenSim 3.x files, a loop closed at Ground, a CustomJoint
OpenSim would reverse, and function types other than the ones above. Locks, prescribed motion and
couplers are built on every coordinate, that of a reversed joint or of a CustomJoint simtk evaluates in
Python (a function without a compiled form: PiecewiseConstantFunction, a Sine with an offset) included.

A malformed file raises `OsimFileError` (a ``ValueError``) naming the file, the line and what was
expected there.
"""
from __future__ import annotations

import os
import warnings
from typing import cast

import numpy as np

from simtk import (
    Constraint,
    Force,
    Function,
    GeneralForceSubsystem,
    MassProperties,
    MultibodySystem,
    SimbodyMatterSubsystem,
)

from ._inertia_policy import apply as apply_inertia_policy
from ._inertia_policy import check_policy
from ._named import NamedDict
from ._osim_actuators import ACTUATORS, OsimActuator, build_actuators_and_controllers
from ._osim_contact import CONTACT_FORCES, ContactGeometries, build_contact_force
from ._osim_elements import (
    _build_constraint,
    _build_force,
    _build_joint,
    _note_subcomponents,
    _unique,
    _wrap,
)
from ._osim_expression_forces import EXPRESSION_FORCES, build_expression_force
from ._osim_functions import (
    ExpressionFunction,
    GCVSplineFunction,
    MultivariatePolynomialFunction,
    SimmSplineFunction,
)
from ._osim_model import OsimCoordinate, OsimModel
from ._osim_names import Coordinate, OsimJoint, OsimSet, attach_opensim_names
from ._osim_paths import PATH_FORCES, build_path_force
from ._osim_reader import (
    _JOINT_NCOORDS,
    _MODEL_KNOWN,
    _SET_TAGS,
    OsimFileError,
    _clean_name,
    _Element,
    _flag_note,
    _or,
    _parse_xml,
    _Reader,
)
from ._osim_tree import _body_key, _close_loops, _joint_tree, _split_mass

__all__ = [
    "load_osim",
    "OsimFileError",
    "OsimModel",
    "OsimCoordinate",
    "SimmSplineFunction",
    "GCVSplineFunction",
    "MultivariatePolynomialFunction",
    "ExpressionFunction",
    "Coordinate",
    "OsimJoint",
    "OsimSet",
    "OsimActuator",
]


# ====================================================================== load_osim
def load_osim(path: str | os.PathLike, *, nonphysical_inertia: str = "keep") -> OsimModel:
    """Build the multibody part of an OpenSim 4.x ``.osim`` file as a simtk system.

    Parameters
    ----------
    path : str or path-like
        The ``.osim`` file.
    nonphysical_inertia : {"keep", "repair", "error"}
        What to do with a Body's inertia that no mass distribution has (a violated triangle
        inequality, a negative principal moment; several published models have them): keep it as
        written, as OpenSim does (default), or replace it by the nearest physical inertia, both with
        a warning naming the bodies (and listed in `OsimModel.nonphysical_inertias`); or raise
        `OsimFileError` at the body's ``<inertia>``.

    Returns
    -------
    OsimModel
        ``.system``, ``.matter``, ``.forces`` and the OpenSim names of the bodies, joints,
        coordinates, forces and constraints built; ``.initial_state()`` gives a State at the
        coordinates' default values in Euler-angle mode (the mode OpenSim runs Simbody in, which
        the coordinate indices assume).

    Raises
    ------
    OsimFileError
        The file is not well-formed XML, not an OpenSim 4.x model, or has a value, reference or
        element that cannot be built (the message names the line and what was expected).
    OSError
        The file cannot be read.

    Warns
    -----
    UserWarning
        One warning listing every element that was not built (muscles, other actuators, markers,
        mesh contact, other controllers, unknown elements and properties), by name and type; one
        naming the bodies whose non-physical inertia was kept or repaired.
    """
    check_policy("load_osim", nonphysical_inertia)
    r = _Reader(os.fspath(path))
    root = _parse_xml(r.path)
    model = _model_element(r, root)
    r.read_defaults(model)
    r.index_paths(model, "/")
    out = _build(r, model, nonphysical_inertia)
    out.warnings = list(r.notes)
    attach_opensim_names(out, {el.get("name"): el.tag for el in r.objects(model, "JointSet")})
    if r.notes:
        warnings.warn(f"{r.path}: {len(r.notes)} element(s) of the model were not built: " + "; ".join(r.notes),
                      UserWarning, stacklevel=2)
    if out.nonphysical_inertias:
        done = "kept as written (as OpenSim does)" if nonphysical_inertia == "keep" else \
            "replaced by the nearest physical one"
        warnings.warn(f"{r.path}: {len(out.nonphysical_inertias)} body(ies) with an inertia no mass distribution "
                      f"has, {done}: " + "; ".join(f"{k} ({v})" for k, v in out.nonphysical_inertias.items()),
                      UserWarning, stacklevel=2)
    return out


def _model_element(r: _Reader, root: _Element) -> _Element:
    if root.tag != "OpenSimDocument":
        if root.tag == "Model":
            return root  # a bare <Model> (no document wrapper) is read as 4.x
        raise r.error(root, f"expected an <OpenSimDocument> root element, got <{root.tag}>")
    version = root.get("Version")
    if version is not None:
        try:
            v = int(version)
        except ValueError:
            raise r.error(root, f"OpenSimDocument Version: expected an integer, got {version!r}") from None
        if v < 40000:
            raise r.error(root, f"OpenSimDocument Version {v} is an OpenSim 3.x file; only the 4.x format "
                                "(Version >= 40000) is read: open and save it in OpenSim 4 first")
    models = [c for c in root if c.tag == "Model"]
    if len(models) != 1:
        raise r.error(root, f"expected one <Model> inside <OpenSimDocument>, found {len(models)}")
    return cast(_Element, models[0])


def _build(r: _Reader, model: _Element, nonphysical_inertia: str = "keep") -> OsimModel:
    system = MultibodySystem(_clean_name(model.get("name") or "model"))
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    out = OsimModel(system, matter, forces, path=r.path)
    out.bodies = NamedDict((), "body", r.path)
    out.bodies["ground"] = matter.ground

    for c in cast("list[_Element]", list(model)):
        if c.tag not in _MODEL_KNOWN:
            r.notes.append(f"unknown element <{c.tag}> {c.get('name') or ''} (line {c.line})".replace("  ", " "))
    for set_tag in sorted(_SET_TAGS - {"ContactGeometrySet", "ControllerSet"}):  # (those: below)
        for el in r.objects(model, set_tag):
            _flag_note(r.notes, el)
    comps = r.child(model, "components")
    if comps is not None:
        for el in cast("list[_Element]", list(comps)):
            _flag_note(r.notes, el)

    ground = r.child(model, "Ground")
    ground_path = "/" + ((ground.get("name") or "ground") if ground is not None else "ground")
    if ground is None:  # a model without <Ground> still has OpenSim's default one
        ground = _Element("Ground", {"name": "ground"})
        r.paths[ground_path] = ground

    # ---------------------------------------------------------------- bodies
    body_els: dict[str, _Element] = {}
    mass_props: dict[str, MassProperties] = {}
    for el in r.objects(model, "BodySet"):
        if el.tag != "Body":
            _flag_note(r.notes, el, "not a Body")
            continue
        name = r.name_of(el)
        if name in body_els or name == ground.get("name"):
            raise r.error(el, f"a second body named {name!r}; body names must be unique")
        r.check_props(el, "Body")
        _note_subcomponents(r, el)
        m = r.number(el, "mass", 1.0)
        com = r.numbers(el, "mass_center", 3, [0.0, 0.0, 0.0])
        I6 = r.numbers(el, "inertia", 6, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
        if m < 0:
            raise r.error(r.child(el, "mass"), f"Body {name!r}: expected a mass >= 0, got {m}")
        try:
            I = np.array([[I6[0], I6[3], I6[4]], [I6[3], I6[1], I6[5]], [I6[4], I6[5], I6[2]]])
            inertia, why = apply_inertia_policy(I, nonphysical_inertia)
            mass_props[name] = MassProperties.from_central_inertia(m, com, inertia)
            if why is not None:
                out.nonphysical_inertias[name] = f"line {_or(r.child(el, 'inertia'), el).line}: {why}"
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise r.error(_or(r.child(el, "inertia"), el), f"Body {name!r}: invalid mass properties: {exc}") from None
        body_els[name] = el

    # ---------------------------------------------------------------- joints: the tree
    joints: list[tuple] = []
    for el in r.objects(model, "JointSet"):
        if el.tag not in _JOINT_NCOORDS:
            _flag_note(r.notes, el, "joint type not supported; its child body gets no mobilizer from it")
            continue
        name = r.name_of(el)
        r.check_props(el, "Joint")
        pf = r.resolve(el, r.child(el, "socket_parent_frame"), "socket_parent_frame")
        cf = r.resolve(el, r.child(el, "socket_child_frame"), "socket_child_frame")
        pbase, X_PF = r.frame_in_body(pf)
        cbase, X_BM = r.frame_in_body(cf)
        for base, sock in ((pbase, "socket_parent_frame"), (cbase, "socket_child_frame")):
            if base.tag == "Body" and body_els.get(base.get("name") or "") is not base:
                raise r.error(_or(r.child(el, sock), el), f"{el.tag} {name!r}: the {sock[7:]}'s body "
                                                          f"{base.get('name')!r} is not a Body of the BodySet")
        if pbase is cbase:
            raise r.error(el, f"{el.tag} {name!r}: its parent and child frames are on the same body "
                              f"{cbase.get('name')!r}")
        joints.append((el, _body_key(pbase), X_PF, _body_key(cbase), X_BM))
    mobilizer_of, loops = _joint_tree(r, joints, body_els, r.notes)
    for child in {j[3] for j in loops}:  # a body split for loops shares its mass with its slaves
        mass_props[child] = _split_mass(mass_props[child], sum(j[3] == child for j in loops))

    coord_els: dict[str, _Element] = {}
    for bname, (el, pname, X_PF, X_BM, reverse) in mobilizer_of.items():
        _build_joint(r, out, el, out.bodies[pname], X_PF, bname, mass_props[bname], X_BM, coord_els,
                     reverse=reverse)
    _close_loops(r, out, loops, mass_props, coord_els)
    # The file's order (OpenSim's CoordinateSet and JointSet order), not the tree's.
    file_order = {el.get("name"): i for i, el in enumerate(r.objects(model, "JointSet"))}
    for name in out.joints:  # the FreeJoints OpenSim adds come after the file's joints
        file_order.setdefault(name, len(file_order))
    out.joints = NamedDict(sorted(out.joints.items(), key=lambda kv: file_order[kv[0]]), "joint", r.path)
    out.coordinates = dict(sorted(out.coordinates.items(), key=lambda kv: (file_order[kv[1].joint], kv[1].index)))

    # ---------------------------------------------------------------- coordinates: locks and prescriptions
    for cname, c in out.coordinates.items():
        cel = coord_els[cname]
        if c.locked or r.boolean(cel, "prescribed", False):
            if c.locked:
                f = Function.Constant(c.default_value, 1)
            else:
                holder = r.child(cel, "prescribed_function")
                inner = [x for x in holder] if holder is not None else []
                if len(inner) != 1:
                    r.notes.append(f"{cname} (Coordinate, line {cel.line}): prescribed without a "
                                   "prescribed_function; not prescribed")
                    continue
                unreadable = r.unreadable_function(cast(_Element, inner[0]))
                if unreadable is not None:
                    r.notes.append(f"{cname} (Coordinate, line {cel.line}): its prescribed_function <{unreadable}> is "
                                   "not one simtk reads; not prescribed")
                    continue
                f = r.function(cast(_Element, inner[0]), 1, f"prescribed_function of Coordinate {cname!r}")
            with _wrap(r, cel, f"Coordinate {cname!r}"):
                c.lock = Constraint.PrescribedMotion(matter, f, c.mobod, c.index,
                                                     name=_unique(matter, _clean_name(cname) + ("_lock" if c.locked else "_prescribed")))

    # ---------------------------------------------------------------- forces
    geoms = ContactGeometries(r, model, out.bodies)
    for el in r.objects(model, "ForceSet"):
        if el.tag in CONTACT_FORCES:
            build_contact_force(r, out, el, geoms, _unique, _wrap)
        elif el.tag in EXPRESSION_FORCES:
            build_expression_force(r, out, el, _unique, _wrap)
        elif el.tag in PATH_FORCES:
            build_path_force(r, out, el, _unique, _wrap)
        elif el.tag not in ACTUATORS:
            _build_force(r, out, el)
    build_actuators_and_controllers(r, out, model, _unique)
    g = r.numbers(model, "gravity", 3, [0.0, -9.80665, 0.0])
    grav = Force.UniformGravity(forces, matter, g, name=_unique(forces, "gravity"))
    out.force_elements.setdefault("gravity", [grav])

    # ---------------------------------------------------------------- constraints
    for el in r.objects(model, "ConstraintSet"):
        _build_constraint(r, out, el)

    # Catch what only shows when the system is realized (a bad FunctionBased axis set, ...).
    try:
        out.initial_state()
    except (ValueError, TypeError, ArithmeticError, LookupError, NotImplementedError) as exc:
        raise OsimFileError(r.path, None, f"the model does not realize: {type(exc).__name__}: {exc}") from None
    return out
