"""Declared parameters of components (OpenSim's properties), with the stage a change invalidates.

A class declares each parameter in one line::

    class MyForce(Force.Custom.Implementation):
        stiffness = Property(10.0, stage=Stage.Instance, check=nonnegative, doc="N/m")

and reads it as ``self.stiffness``. ``component.set_property("stiffness", 20.0)`` (or assigning
``self.stiffness``) validates the value, refusing a bad one with the component's path, the property
and the reason and changing nothing, then tells the System: a Topology property makes every
existing State stale (a new ``realize_topology()`` is needed, as for any topology change); a
property of a later stage invalidates that stage and above in every live State of the System.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable

import numpy as np

from .stage import Stage

__all__ = ["Property", "real", "nonnegative", "positive", "vector3", "instance_of", "boolean", "integer"]

_MISSING = object()


# ---------------------------------------------------------------------- validators
def real(value: Any) -> float:
    """A finite real number."""
    if isinstance(value, bool):
        raise TypeError(f"expected a real number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"expected a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"must be finite, got {x!r}")
    return x


def nonnegative(value: Any) -> float:
    """A finite real number >= 0."""
    x = real(value)
    if x < 0:
        raise ValueError(f"must be >= 0, got {x!r}")
    return x


def positive(value: Any) -> float:
    """A finite real number > 0."""
    x = real(value)
    if x <= 0:
        raise ValueError(f"must be > 0, got {x!r}")
    return x


def integer(value: Any) -> int:
    """An integer (a float with an integer value is accepted)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)) or int(value) != value:
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)


def boolean(value: Any) -> bool:
    """True or False (numpy booleans too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"expected True or False, got {value!r}")
    return bool(value)


def vector3(value: Any) -> np.ndarray:
    """A finite 3-vector (a new read-only array)."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"expected a 3-vector, got {value!r}") from None
    if a.shape != (3,):
        raise ValueError(f"expected shape (3,), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"must be finite, got {a.tolist()}")
    a.flags.writeable = False
    return a


def instance_of(cls: type, convert: Callable[[Any], Any] | None = None) -> Callable[[Any], Any]:
    """A validator accepting instances of ``cls`` (or what ``convert`` turns into one)."""

    def check(value: Any):
        if isinstance(value, cls):
            return value
        if convert is not None:
            return convert(value)
        raise TypeError(f"expected a {cls.__name__}, got {type(value).__name__}")

    check.__name__ = f"instance_of_{cls.__name__}"
    return check


# ---------------------------------------------------------------------- the declaration
class Property:
    """A declared parameter: default, validator, the stage a change invalidates, and where it is kept.

    Parameters
    ----------
    default : optional
        The value until set (for built-in elements, whatever their constructor stored).
    stage : Stage
        The lowest stage whose results depend on it (Instance for parameters read when a State is
        realized to Instance, Topology for structure).
    check : callable, optional
        Turns a proposed value into the stored one or raises TypeError/ValueError saying why.
    attr : str, optional
        The instance attribute that stores it (built-in elements keep their existing attributes).
    doc : str
        One line for ``help`` and the property listing.
    fget, fset : callable, optional
        For a value kept in another form: ``fget(obj)`` reads it, ``fset(obj, validated)`` stores it.
    """

    def __init__(self, default: Any = _MISSING, *, stage: Stage = Stage.Instance,
                 check: Callable[[Any], Any] | None = None, attr: str | None = None, doc: str = "",
                 fget: Callable[[Any], Any] | None = None, fset: Callable[[Any, Any], None] | None = None):
        self.default = default
        self.stage = Stage(stage)
        self.check = check
        self.attr: str = attr or ""  # set from the name in __set_name__ when not given
        self.doc = doc
        self.fget, self.fset = fget, fset
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        if not self.attr:
            self.attr = f"_prop_{name}"

    def get(self, obj: Any) -> Any:
        if self.fget is not None:
            return self.fget(obj)
        value = getattr(obj, self.attr, self.default)
        if value is _MISSING:
            raise AttributeError(f"property {self.name!r} has no value and no default")
        return value

    def validate(self, value: Any) -> Any:
        return self.check(value) if self.check is not None else value

    def store(self, obj: Any, value: Any) -> None:
        """Keep an already validated value."""
        if self.fset is not None:
            self.fset(obj, value)
        else:
            setattr(obj, self.attr, value)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return self.get(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        # An implementation object (Force.Custom's) knows the element it serves.
        component = getattr(obj, "_simtk_component", obj)
        if hasattr(component, "set_property"):
            component.set_property(self.name, value)
        else:  # a plain object (an implementation not yet attached to an element)
            self.store(obj, self.validate(value))

    def __repr__(self) -> str:
        return f"Property({self.name!r}, stage={self.stage.name})"


def declared_properties(cls: type) -> dict[str, Property]:
    """The properties of ``cls`` and its bases, by name (a subclass's declaration wins); read-only."""
    # Looked up on every get_property; walking the MRO each time made loading a model file's
    # properties dominate its build. Properties are declared in class bodies, so a class's set is fixed.
    out = _DECLARED.get(cls)
    if out is None:
        out = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Property):
                    out[name] = value
        _DECLARED[cls] = out
    return out


_DECLARED: "weakref.WeakKeyDictionary[type, dict[str, Property]]" = weakref.WeakKeyDictionary()
