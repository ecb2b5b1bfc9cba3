"""OpenSim 4.x model files (``.osim``): the multibody part, as a simtk MultibodySystem.

``load_osim(path)`` reads the file with ``xml.etree.ElementTree`` (a tree builder fed by expat, so
that every element knows its line) into a model description (`describe_osim`: simtk model-format
nodes, each with the line and element it came from; no simtk element is made while reading), which
the one builder every reader shares (``load_model``'s) turns into the System; the OpenSim names are
then given to the built components (`simtk.io._osim_described`). The description describes

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
GCVSpline                      the natural spline of degree 2 half_order - 1 GCVSPL fits
                               (`GCVSplineFunction`): interpolating with error_variance 0, smoothing
                               for a positive one (GCVSPL's search for p repeated), the variance
                               estimated by cross-validation for a negative one; <weights> is
                               ignored, as OpenSim passes weights 1
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

from ._description import ModelDescription
from ._inertia_policy import check_policy
from ._osim_actuators import OsimActuator
from ._osim_described import describe, result
from ._osim_functions import (
    ExpressionFunction,
    GCVSplineFunction,
    MultivariatePolynomialFunction,
    SimmSplineFunction,
)
from ._osim_model import OsimCoordinate, OsimModel
from ._osim_names import Coordinate, OsimJoint, OsimSet
from ._osim_reader import OsimFileError, _Element, _parse_xml, _Reader

__all__ = [
    "load_osim",
    "describe_osim",
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
    r, d = _read(path, nonphysical_inertia, "load_osim")
    out = result(d)
    # Catch what only shows when the system is realized (a bad FunctionBased axis set, ...).
    try:
        out.initial_state()
    except (ValueError, TypeError, ArithmeticError, LookupError, NotImplementedError) as exc:
        raise OsimFileError(r.path, None, f"the model does not realize: {type(exc).__name__}: {exc}") from None
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


def describe_osim(path: str | os.PathLike, *, nonphysical_inertia: str = "keep") -> ModelDescription:
    """The declarative description `load_osim` builds its System from, without building it.

    Parameters are `load_osim`'s. ``describe_osim(path).build()[0]`` is the System ``load_osim(path)``
    makes (without OpenSim's names), and ``describe_osim(path).to_text()`` is it as a model file
    (``load_model`` reads it).

    Returns
    -------
    ModelDescription
        The model-format nodes of the file's bodies (mobilized bodies), coordinate locks and
        prescriptions, loop welds, forces, contact, actuators and constraints, each with the line and
        element of the file it came from. Nothing of a System is made.

    Raises
    ------
    OsimFileError
        As `load_osim`, for what the reader finds; what only an element's constructor checks is raised
        by ``build()`` (an `OsimFileError` too, naming the file, line and element).
    OSError
        The file cannot be read.
    """
    return _read(path, nonphysical_inertia, "describe_osim")[1].desc


def _read(path: str | os.PathLike, nonphysical_inertia: str, caller: str):
    check_policy(caller, nonphysical_inertia)
    r = _Reader(os.fspath(path))
    root = _parse_xml(r.path)
    model = _model_element(r, root)
    r.read_defaults(model)
    r.index_paths(model, "/")
    return r, describe(r, model, nonphysical_inertia)


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


