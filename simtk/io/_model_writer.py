"""Writing a MultibodySystem as model-file text (ArtiSynth's write: nested items, references as paths)."""
from __future__ import annotations

import inspect
import math
import os
from typing import Any

import numpy as np

from simtk import (
    Body,
    Constraint,
    Function,
    GeneralForceSubsystem,
    MassProperties,
    MobilizedBody,
    Motion,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Transform,
)

from . import (
    _model_registry_jit,  # noqa: F401  (registers Force.Jit)
    _model_registry_osim,  # noqa: F401  (registers the kinds the OpenSim reader describes)
)
from ._model_registry import (
    _BY_CLASS,
    _NO_DEFAULT,
    _UNSUPPORTED,
    FORMAT,
    _declared,
    _rebuild_default,
    _Ref,
    _Spec,
    _undeclared_attributes,
    _Word,
)
from .errors import ModelFileError


# ====================================================================== values and writing
def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _num(x: float) -> str:
    x = float(x)
    if not math.isfinite(x):
        raise ModelFileError(f"cannot write the non-finite number {x!r}")
    return repr(x)


def _fmt(value: Any, where: str) -> str:
    """The file text of a value."""
    if isinstance(value, _Word):
        return str(value)
    if isinstance(value, _Ref):
        return "@" + _quote(value.path)
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _num(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, Transform):
        return f"Transform [ R={_fmt(value.R.matrix.ravel(), where)} p={_fmt(value.p, where)} ]"
    if isinstance(value, Rotation):
        return f"Rotation [ R={_fmt(value.matrix.ravel(), where)} ]"
    if isinstance(value, MassProperties):
        I = value.inertia
        return (f"MassProperties [ mass={_num(value.mass)} com={_fmt(value.com, where)} "
                f"inertia={_fmt(np.concatenate([I.moments, I.products]), where)} ]")
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b":
            return "[ " + " ".join("true" if b else "false" for b in value.ravel()) + " ]"
        a = np.asarray(value, dtype=float)
        if a.ndim == 0:
            return _num(float(a))
        if a.ndim == 1:
            return "[ " + " ".join(_num(x) for x in a) + " ]" if len(a) else "[ ]"
        return "[ " + " ".join(_fmt(row, where) for row in a) + " ]"
    if isinstance(value, Function):
        return _fmt_function(value, where)
    if isinstance(value, (list, tuple)):
        return "[ " + " ".join(_fmt(x, where) for x in value) + " ]" if len(value) else "[ ]"
    raise ModelFileError(f"{where}: a value of type {type(value).__name__} cannot be written to a model file")


def _fmt_function(f: Function, where: str) -> str:
    """The typed item of a Function: a built-in family by its constructor's arguments, a registered
    user's class by its declared Properties (those that differ from their defaults)."""
    spec = _BY_CLASS.get(type(f))
    if spec is None or spec.category != "function":
        raise ModelFileError(f"{where}: a {type(f).__qualname__} Function cannot be written: "
                             f"{_UNSUPPORTED['Function']} (and rebuilt as cls(**properties) from its declared "
                             "Properties)")
    if not spec.user:
        # parameters() are exactly what the family's constructor takes; written in the registry's order
        params = f.parameters()
        items = [(k, params[k]) for k, _ in spec.params]
    else:
        _refuse_undeclared(f, spec, where)
        items = []
        for pname, prop in _declared(type(f)).items():
            value = prop.get(f)
            default = _rebuild_default(type(f), pname, prop)
            if default is not _MISSING_DEFAULT and default is not _NO_DEFAULT and _same(value, default, where):
                continue
            if _is_component(value):
                raise ModelFileError(f"{where}: {spec.name} property {pname!r} holds a component; a Function "
                                     "in a model file holds values only")
            items.append((pname, value))
    inner = " ".join(f"{k}={_fmt(v, f'{where} {spec.name} {k}')}" for k, v in items)
    return f"{spec.name} [ {inner} ]" if inner else f"{spec.name} [ ]"


def _refuse_undeclared(obj, spec: _Spec, where: str) -> None:
    bad = _undeclared_attributes(obj)
    if bad:
        raise ModelFileError(
            f"{where} ({spec.name}): its attribute {bad[0]!r} is not a declared Property, so the model file could not "
            f"keep it (it would load with its constructor default); declare it in {type(obj).__qualname__}'s class "
            f"body, {bad[0]} = Property(...), and take it as a constructor parameter")


_MISSING_DEFAULT = inspect.signature(type(Constraint.Rod.length).__init__).parameters["default"].default


def _holder(comp, name: str):
    """The object whose class declares property ``name``: the component, or the implementation it wraps."""
    for holder in (comp, getattr(comp, "get_implementation", lambda: None)()):
        if holder is not None:
            for klass in type(holder).__mro__:
                if name in vars(klass):
                    return holder
    return comp


class _Writer:
    def __init__(self, system: MultibodySystem):
        self.system = system
        self.lines: list[str] = []
        self.depth = 0

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def spec_of(self, comp) -> _Spec:
        impl = getattr(comp, "get_implementation", None)
        cls = type(comp)
        if impl is not None and cls.__qualname__ in ("Force.Custom", "Constraint.Custom", "Motion.Custom",
                                                     "MobilizedBody.Custom"):
            spec = _BY_CLASS.get(type(impl()))
            if spec is not None:
                return spec
            raise ModelFileError(f"{comp.get_absolute_path()} ({cls.__qualname__} with a {type(impl()).__qualname__}): "
                                 f"cannot be written: {_UNSUPPORTED[cls.__qualname__]}")
        spec = _BY_CLASS.get(cls)
        if spec is None:
            why = _UNSUPPORTED.get(cls.__qualname__, "it is not a built-in kind the model file knows, nor registered")
            raise ModelFileError(f"{comp.get_absolute_path()} ({cls.__qualname__}): cannot be written: {why}")
        return spec

    def component(self, comp, children=()) -> None:
        spec = self.spec_of(comp)
        self.emit(f"{spec.name} [")
        self.depth += 1
        self.emit(f"name={_quote(comp.get_name())}")
        where = comp.get_absolute_path()
        refs, extras = spec.refs, spec.extras
        if spec.user and spec.category == "mobilizer":
            refs = (("parent", lambda m: m.get_parent_mobilized_body()),)
            extras = (("massless", lambda m: True if isinstance(m.get_body(), Body.Massless) else None),)
        for item, get in refs:
            if item in spec.many:
                target = [_Ref(comp.get_relative_path_name(c)) for c in get(comp)]
                if not target and item in spec.optional:
                    continue
                self.emit(f"{item}={_fmt(target, where)}")
            else:
                self.emit(f"{item}={_fmt(_Ref(comp.get_relative_path_name(get(comp))), where)}")
        for item, get in extras:
            value = get(comp)
            if isinstance(value, list) and value and all(isinstance(f, Function) for f in value):
                # a FunctionBased's six functions: one a line, as the defaults, to be read and edited by hand
                self.emit(f"{item}=[")
                for k, f in enumerate(value):
                    self.emit(f"  {_fmt(f, f'{where} ({spec.name}) {item}[{k}]')}")
                self.emit("]")
            elif value is not None:
                self.emit(f"{item}={_fmt(value, f'{where} ({spec.name}) {item}')}")
        user = comp.get_implementation() if spec.user else None
        if user is not None:
            _refuse_undeclared(user, spec, where)
        for pname in comp.get_property_names():
            value = comp.get_property(pname)
            info = comp.get_property_info(pname)
            # A user's class is rebuilt as cls(**properties): a property left out gets the constructor's default.
            default = info.default if user is None or pname not in _declared(type(user)) \
                else _rebuild_default(type(user), pname, info)
            if default is not _MISSING_DEFAULT and default is not _NO_DEFAULT and _same(value, default, where):
                continue  # ArtiSynth writes only the properties that differ from their defaults
            if _is_component(value):
                value = _Ref(comp.get_relative_path_name(value))
            self.emit(f"{pname}={_fmt(value, where + ' property ' + repr(pname))}")
        if getattr(comp, "is_disabled_by_default", lambda: False)():
            self.emit("disabled=true")
        own = self.own_variables(comp)
        if own:
            self.emit("state_variables=[ " + " ".join(f"{_quote(n)} {_num(v)}" for n, v in own) + " ]")
        for child in children:
            self.component(child)
        self.depth -= 1
        self.emit("]")

    def own_variables(self, comp) -> list[tuple[str, float]]:
        """Continuous variables declared directly on a force or constraint (``add_state_variable``)."""
        if isinstance(comp, MobilizedBody):
            return []
        names = [n for n in comp.get_state_variable_names(self.default) if "/" not in n]
        return [(n, comp.get_state_variable_value(self.default, n)) for n in names]

    def write(self) -> str:
        s = self.system
        if type(s) is not MultibodySystem:
            raise ModelFileError(f"{s!r}: only a MultibodySystem can be written, not a {type(s).__qualname__}")
        if s.get_event_handlers() or s.get_event_reporters():
            raise ModelFileError(f"{s!r}: event handlers and reporters (Python code) cannot be written to a model file")
        self.default = s.realize_topology()
        self.emit("# simtk model file: MultibodySystem, matter, forces, constraints and motions")
        self.emit(f"simtk_model={FORMAT}")
        self.emit("MultibodySystem [")
        self.depth += 1
        self.emit(f"name={_quote(s.get_name())}")
        self.emit(f"time_scale={_num(s.get_default_time_scale())}")
        for i in range(s.get_num_subsystems()):
            sub = s.get_subsystem(i)
            if type(sub) is SimbodyMatterSubsystem:
                self.matter(sub)
            elif type(sub) is GeneralForceSubsystem:
                self.emit("GeneralForceSubsystem [")
                self.depth += 1
                self.emit(f"name={_quote(sub.get_name())}")
                for j in range(sub.get_num_forces()):
                    self.component(sub.get_force(j))
                self.depth -= 1
                self.emit("]")
            else:
                raise ModelFileError(f"{sub.get_absolute_path()} ({type(sub).__qualname__}): only the matter "
                                     "subsystem and GeneralForceSubsystems can be written")
        self.emit("# the default value of every continuous variable, by path")
        names = s.get_state_variable_names(self.default)
        values = s.get_state_variable_values(self.default)
        self.emit("defaults=[")
        for n, v in zip(names, values):
            self.emit(f"  {_quote(n)} {_num(v)}")
        self.emit("]")
        self.depth -= 1
        self.emit("]")
        return "\n".join(self.lines) + "\n"

    def matter(self, matter) -> None:
        self.emit("SimbodyMatterSubsystem [")
        self.depth += 1
        self.emit(f"name={_quote(matter.get_name())}")
        for i in range(1, matter.get_num_bodies()):
            body = matter.get_mobilized_body(i)
            motions = [c for c in body.get_child_components() if isinstance(c, Motion)]
            extra = [c for c in body.get_child_components() if not isinstance(c, Motion)]
            if extra:
                raise ModelFileError(f"{extra[0].get_absolute_path()} ({type(extra[0]).__qualname__}): cannot be written")
            self.component(body, motions)
        for i in range(matter.get_num_constraints()):
            self.component(matter.get_constraint(i))
        self.depth -= 1
        self.emit("]")


def _is_component(v) -> bool:
    return hasattr(v, "get_absolute_path") and hasattr(v, "get_relative_path_name")


def _bits(v: Any) -> Any:
    """The exact bits a value is written with, for the common kinds (None: compare the text)."""
    if isinstance(v, Transform):
        return v.R.matrix.tobytes(), np.asarray(v.p, dtype=float).tobytes()
    if isinstance(v, Rotation):
        return v.matrix.tobytes()
    if isinstance(v, MassProperties):
        I = v.inertia
        return np.array([v.mass]).tobytes(), v.com.tobytes(), I.moments.tobytes(), I.products.tobytes()
    if isinstance(v, np.ndarray) and v.dtype == np.float64:
        return v.shape, v.tobytes()
    return None


def _same(a, b, where: str) -> bool:
    # Equal bits write equal text (repr of a float is exact, signed zeros apart): no text needed.
    if type(a) is type(b):
        ba = _bits(a)
        if ba is not None:
            return ba == _bits(b)
    try:
        return _fmt(a, where) == _fmt(b, where)
    except ModelFileError:
        return False


def model_to_text(system: MultibodySystem) -> str:
    """The model file text of ``system`` (what `save_model` writes).

    Raises
    ------
    ModelFileError
        An element cannot be written; the message names it and says why.
    """
    return _Writer(system).write()


def save_model(system: MultibodySystem, path: str | os.PathLike) -> None:
    """Write ``system``'s model (its elements, properties and default variable values) to ``path``.

    Parameters
    ----------
    system : MultibodySystem
        The model to write.
    path : str or path-like
        The file to create (text, UTF-8).

    Raises
    ------
    ModelFileError
        An element cannot be written (a user class or a user's Function not registered with
        `register_class`, an event handler); nothing is written then.
    """
    text = model_to_text(system)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
