"""simtk's own model file: a MultibodySystem written as nested ``[ name=value ... ]`` items.

The design is ArtiSynth's write/scan (seed 000 §3): every component writes itself as its class
name followed by a bracketed list of ``name=value`` pairs and its child components; ``#`` starts
a comment. A component writes its declared properties that differ from their defaults (a
built-in element's properties have no default apart from what its constructor stored, so they are
always written) and what its constructor needs besides (its parent, the bodies it acts on, a
mobility index). References between components are written as paths relative to the
referencing component (``parent=@"../ground"``) and resolved in a second pass over the whole
file, so a reference may point forward. Numbers are written with ``repr(float)`` and read back
exactly. The default values of every continuous variable are part of the model (``defaults``).

Reading never runs code from the file: a small tokenizer and recursive-descent parser build a
tree of items, class names are looked up in a registry (built-ins under their kind names,
``MobilizedBody.Pin``, ``Force.TwoPointLinearSpring``, ``Constraint.Rod``, ``Motion.Sinusoid``;
users' classes under the name given to `register_class`), and the model is built by calling the
elements' constructors. Any problem is a `ModelFileError` naming the file, the line and what was
expected.

File grammar (after ArtiSynth §3.3)::

    file      := item*
    item      := NAME '=' value | CLASS '[' item* ']'        (a child component)
    value     := NUMBER | STRING | 'true' | 'false' | '@' STRING (a reference)
               | '[' value* ']' | CLASS '[' item* ']'        (a typed value: Transform, ...)

A user's class (a ``Force.Custom.Implementation``, ``Constraint.Custom.Implementation``,
``MobilizedBody.Custom.Implementation`` or ``Motion.Custom.Implementation`` subclass) is saved by
its registered name with its declared properties; it is rebuilt as ``cls(**properties)`` (plus
``matter=`` for mobilizer and constraint implementations), so its constructor must accept its
declared properties as keyword arguments. Properties holding components are references.

A `Function` (what ``MobilizedBody.FunctionBased``, ``Constraint.CoordinateCoupler``,
``Constraint.SpeedCoupler`` and ``Constraint.PrescribedMotion`` are defined by) is a typed value:
a built-in family by its constructor's arguments, ``Function.Linear [ coefficients=[ 1.0 0.5 ] ]``,
``Function.Spline [ x=[ ... ] y=[ ... ] degree=3 ]``, rebuilt by calling that constructor (so bit for
bit); a user's Function subclass by its registered name and declared Properties, rebuilt as
``cls(**properties)``. A Function of an unregistered class is refused when saving.
"""
from __future__ import annotations

import os

from simtk import (
    MultibodySystem,
)

from ._model_loader import build_system, parse_model
from ._model_registry import ModelFileWarning, register_class
from ._model_writer import model_to_text, save_model
from .errors import ModelFileError

__all__ = ["save_model", "load_model", "register_class", "ModelFileError", "ModelFileWarning", "model_to_text", "model_from_text"]


def model_from_text(text: str, file: str | None = None) -> MultibodySystem:
    """The MultibodySystem described by model file ``text`` (see `load_model`): parsed into a
    description, then made by the one builder every reader uses."""
    return build_system(parse_model(text, file), file)[0]


def load_model(path: str | os.PathLike) -> MultibodySystem:
    """Read a model file written by `save_model` (or by hand) and build its MultibodySystem.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    MultibodySystem
        A new System with the file's elements, properties and default variable values.

    Raises
    ------
    ModelFileError
        The file is malformed or describes an impossible model; the message gives the file, the
        line and what was expected.
    """
    file = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ModelFileError(f"not UTF-8 text ({e})", file) from None
    return model_from_text(text, file)
