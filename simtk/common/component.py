"""Named components: OpenSim's Component contract on the staged framework, with ArtiSynth's path rules.

Every element of a System (the System itself, its subsystems, mobilized bodies, force elements,
constraints, motions, event handlers and reporters, and users' own classes of these kinds) is a
`Component`: it has a ``name``, a parent, and an absolute path such as ``/matter/upper_arm`` or
``/forces/elbow_spring`` (seed 001; seed 000 §1.1-1.4 for the path rules).

Names follow ArtiSynth's rule: not empty, no leading digit, none of ``. / : * ?``, and not
``null``; siblings have distinct names. A component built without ``name=`` gets one derived from
its kind (``pin``, ``two_point_linear_spring``), made unique among its siblings by a suffix
(``pin_1``, ``pin_2``, ...).

Paths are resolved from the root (``/matter/elbow``) or relative to a component (``elbow``,
``../forces/spring``; ``.`` is the component itself and ``..`` its parent).
"""
from __future__ import annotations

import functools
import inspect
import re
from typing import Iterator

import numpy as np

from .output import Output, declared_outputs
from .property import Property, declared_properties, integer, real
from .stage import Stage

__all__ = ["Component", "ComponentNotFoundError", "check_component_name"]

_FORBIDDEN = frozenset("./:*?")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class ComponentNotFoundError(LookupError):
    """A path or name matched no component, or a name matched several; the message lists candidates."""


def check_component_name(name, where: str) -> str:
    """Return ``name`` if it is a valid component name, else raise ValueError saying why."""
    if not isinstance(name, str):
        raise TypeError(f"{where}: a component name must be a string, got {type(name).__name__}")
    why = None
    if not name:
        why = "it is empty"
    elif name[0].isdigit():
        why = "it begins with a digit"
    elif _FORBIDDEN.intersection(name):
        why = f"it contains {''.join(sorted(_FORBIDDEN.intersection(name)))!r} (none of '. / : * ?' is allowed)"
    elif name == "null":
        why = "'null' is reserved"
    elif name != name.strip():
        why = "it has leading or trailing white space"
    if why:
        raise ValueError(f"{where}: invalid component name {name!r}: {why}")
    return name


def _stem(cls: type) -> str:
    """The default name stem of a class: its name in snake case (``TwoPointLinearSpring`` -> ``two_point_linear_spring``)."""
    return _CAMEL.sub("_", cls.__name__.lstrip("_")).lower() or "component"


def _takes_name(init) -> bool:
    try:
        return "name" in inspect.signature(init).parameters
    except (TypeError, ValueError):
        return False


class Component:
    """Base of every named element: a name, a parent, subcomponents, and a path from the root.

    Subclasses call nothing special: a constructor without a ``name`` parameter of its own accepts
    ``name=`` anyway (the base wraps it), and the element gets its name when it joins its parent
    (`_adopt_component`). ``get_*`` lookups never change anything.
    """

    #: The stem of default names; derived from the class name when empty.
    _component_stem: str = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or _takes_name(init):
            return

        @functools.wraps(init)
        def __init__(self, *args, name: str | None = None, **kw):
            if name is not None:
                # Known before the constructor joins the element to its parent, which refuses a taken
                # name before anything is added.
                self._component_fields()
                self._c_name = check_component_name(name, f"{type(self).__qualname__}()")
            init(self, *args, **kw)

        cls.__init__ = __init__

    # ------------------------------------------------------------------ identity
    def _component_fields(self) -> None:
        if "_c_children" not in self.__dict__:
            self._c_parent: Component | None = None
            self._c_children: dict[str, Component] = {}
            self._c_name: str | None = None

    def get_name(self) -> str:
        """This component's name (unique among its siblings)."""
        self._component_fields()
        return self._c_name if self._c_name is not None else self._default_stem()

    @property
    def name(self) -> str:
        """This component's name; assigning it is `set_name`."""
        return self.get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.set_name(value)

    def set_name(self, name: str) -> None:
        """Rename this component; refused if invalid or already taken by a sibling."""
        self._component_fields()
        name = check_component_name(name, f"{self._component_where()}: set_name()")
        parent = self._c_parent
        if parent is not None:
            other = parent._c_children.get(name)
            if other is not None and other is not self:
                raise ValueError(f"{parent.get_absolute_path()}: a child named {name!r} exists already "
                                 f"({other!r}); sibling names must be unique")
            del parent._c_children[self.get_name()]
            parent._c_children[name] = self
        self._c_name = name
        root = self.get_root()
        if parent is not None and hasattr(root, "invalidate_system_topology_cache"):
            root.invalidate_system_topology_cache()  # paths name the variables: existing States are stale

    def _default_stem(self) -> str:
        return type(self)._component_stem or _stem(type(self))

    def get_owner(self) -> "Component | None":
        """The parent component (None for the root System or a component not yet adopted)."""
        self._component_fields()
        return self._c_parent

    get_parent = get_owner

    def get_root(self) -> "Component":
        """The top of this component's tree (the System, once adopted)."""
        c: Component = self
        while (owner := c.get_owner()) is not None:
            c = owner
        return c

    def get_absolute_path(self) -> str:
        """The path from the root, e.g. ``/matter/upper_arm``; the root's is ``/``."""
        parts = []
        c: Component | None = self
        while c is not None and c.get_owner() is not None:
            parts.append(c.get_name())
            c = c.get_owner()
        return "/" + "/".join(reversed(parts))

    def get_relative_path_name(self, other: "Component") -> str:
        """The path of ``other`` relative to this component (with ``..`` where needed)."""
        a = [p for p in self.get_absolute_path().split("/") if p]
        b = [p for p in other.get_absolute_path().split("/") if p]
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return "/".join([".."] * (len(a) - n) + b[n:]) or "."

    def _component_where(self) -> str:
        """How errors name this component: its full path when adopted, else its kind."""
        if self.get_owner() is not None:
            return f"{type(self).__qualname__} {self.get_absolute_path()!r}"
        return type(self).__qualname__

    # ------------------------------------------------------------------ the tree
    def _adopt_component(self, child: "Component", name: str | None = None) -> None:
        """Make ``child`` a subcomponent named ``name`` (or a unique default from its kind)."""
        self._component_fields()
        child._component_fields()
        if child._c_parent is not None and child._c_parent is not self:
            raise ValueError(f"{child.get_absolute_path()!r} already belongs to {child._c_parent.get_absolute_path()}")
        if name is None:
            name = child._c_name
        if name is None:
            stem, k = child._default_stem(), 0
            name = stem
            while name in self._c_children:
                k += 1
                name = f"{stem}_{k}"
        else:
            check_component_name(name, f"{self.get_absolute_path()}: adding a {type(child).__qualname__}")
            if name in self._c_children and self._c_children[name] is not child:
                raise ValueError(f"{self.get_absolute_path()}: a child named {name!r} exists already "
                                 f"({self._c_children[name]!r}); sibling names must be unique")
        child._c_parent = self
        child._c_name = name
        self._c_children[name] = child

    def _disown_component(self, child: "Component") -> None:
        self._component_fields()
        if self._c_children.get(child.get_name()) is child:
            del self._c_children[child.get_name()]
        child._c_parent = None

    def get_subcomponents(self) -> list["Component"]:
        """Every component below this one, depth first in the order they were added."""
        out: list[Component] = []
        for c in self._children():
            out.append(c)
            out.extend(c.get_subcomponents())
        return out

    def get_child_components(self) -> list["Component"]:
        """The immediate subcomponents, in the order they were added."""
        return list(self._children())

    def _children(self) -> Iterator["Component"]:
        self._component_fields()
        # An alias (`_add_alias`) is reachable by path but belongs elsewhere: listing it here would
        # show its component twice and make find_component ambiguous.
        return iter([c for c in self._c_children.values() if c._c_parent is self])

    def _add_alias(self, name: str, target: "Component") -> None:
        """Make ``target`` reachable as ``<this path>/<name>`` without moving it (its path stays its own).

        How a file format's own paths (OpenSim's ``/bodyset/femur``) reach components that simtk
        keeps elsewhere (``/matter/femur``); `get_subcomponents` does not list aliases.
        """
        self._component_fields()
        check_component_name(name, f"{self.get_absolute_path()}: adding an alias")
        if name in self._c_children and self._c_children[name] is not target:
            raise ValueError(f"{self.get_absolute_path()}: a child named {name!r} exists already "
                             f"({self._c_children[name]!r}); sibling names must be unique")
        self._c_children[name] = target

    def get_component(self, path: str) -> "Component":
        """The component at ``path``: absolute (``/matter/elbow``) or relative to this one (``..`` allowed).

        Raises
        ------
        ComponentNotFoundError
            No component there; the message lists what the last existing component has below it.
        """
        if not isinstance(path, str) or not path:
            raise TypeError(f"{self._component_where()}: get_component() needs a path string, got {path!r}")
        c: Component = self.get_root() if path.startswith("/") else self
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                parent = c.get_owner()
                if parent is None:
                    raise ComponentNotFoundError(f"{path!r}: '..' goes above the root {c.get_absolute_path()!r}")
                c = parent
                continue
            c._component_fields()
            nxt = c._c_children.get(part)
            if nxt is None:
                names = ", ".join(repr(n) for n in c._c_children) or "none"
                raise ComponentNotFoundError(
                    f"{path!r}: {c.get_absolute_path()!r} has no component named {part!r} (its children: {names})"
                    + c._missing_child_note(part))
            c = nxt
        return c

    def _missing_child_note(self, name: str) -> str:
        """Hook: why there is no child ``name`` (a loaded file's element that was not built), or ''."""
        return ""

    def has_component(self, path: str) -> bool:
        """Whether `get_component` would find ``path``."""
        try:
            self.get_component(path)
        except ComponentNotFoundError:
            return False
        return True

    def find_component(self, name: str) -> "Component":
        """The one component below this one named ``name`` (or whose path ends with ``name``, e.g. ``arm/motion``).

        Raises
        ------
        ComponentNotFoundError
            None or several match; the message lists the candidates' paths.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"{self._component_where()}: find_component() needs a name, got {name!r}")
        tail = "/" + name.strip("/")
        hits = [c for c in self.get_subcomponents() if c.get_absolute_path().endswith(tail)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            last = name.split("/")[-1].lower()
            close = [c.get_absolute_path() for c in self.get_subcomponents()
                     if last in c.get_name().lower() or c.get_name().lower() in last]
            hint = f"; similar: {', '.join(close[:10])}" if close else ""
            raise ComponentNotFoundError(f"{self.get_absolute_path()}: no component named {name!r} below it{hint}")
        raise ComponentNotFoundError(
            f"{self.get_absolute_path()}: {len(hits)} components are named {name!r}: "
            f"{', '.join(c.get_absolute_path() for c in hits)}; give a longer path to choose one")

    def print_subcomponent_info(self) -> str:
        """A table of the subcomponents' paths and kinds (returned, and printed)."""
        rows = [f"{c.get_absolute_path():40s} {type(c).__qualname__}" for c in self.get_subcomponents()]
        text = "\n".join(rows)
        print(text)
        return text

    # ------------------------------------------------------------------ properties
    def _property_holders(self) -> Iterator[object]:
        """Where properties and outputs are declared: the component, and a user implementation it wraps."""
        yield self
        impl = getattr(self, "_impl", None)
        if impl is not None:
            yield impl

    def _find_property(self, name: str):
        for holder in self._property_holders():
            p = declared_properties(type(holder)).get(name)
            if p is not None:
                return holder, p
        raise ComponentNotFoundError(f"{self._component_where()}: no property {name!r} "
                                     f"(its properties: {', '.join(self.get_property_names()) or 'none'})")

    def get_property_names(self) -> list[str]:
        """The names of the declared properties, base classes' first."""
        names: list[str] = []
        for holder in self._property_holders():
            names += [n for n in declared_properties(type(holder)) if n not in names]
        return names

    def get_property(self, name: str):
        """The current value of property ``name``."""
        holder, p = self._find_property(name)
        return p.get(holder)

    def get_property_info(self, name: str) -> Property:
        """The declaration of property ``name`` (its stage, validator and documentation)."""
        return self._find_property(name)[1]

    def set_property(self, name: str, value) -> None:
        """Validate and set property ``name``; a bad value is refused with the reason and nothing changes.

        Every live State of the System loses the property's stage and above at once; a Topology
        property makes them stale, as any topology change does.
        """
        holder, p = self._find_property(name)
        try:
            new = p.validate(value)
            self._validate_property_change(name, new)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self._component_where()}: property {name!r}: {e}") from None
        p.store(holder, new)
        root = self.get_root()
        changed = getattr(root, "_parameter_changed", None)
        if changed is not None:
            changed(p.stage, self)

    def _validate_property_change(self, name: str, value) -> None:
        """Hook: refuse (ValueError) a value that is valid alone but not with the other properties."""

    # ------------------------------------------------------------------ outputs
    def _outputs(self) -> dict[str, Output]:
        out: dict[str, Output] = {}
        for holder in self._property_holders():
            for attr, (name, stage, value_type, doc) in declared_outputs(type(holder)).items():
                out[name] = Output(self, name, getattr(holder, attr), stage, value_type, doc)
        out.update(self._extra_outputs())
        return out

    def _extra_outputs(self) -> dict[str, Output]:
        """Hook: outputs that depend on the instance (a mobilizer's coordinates)."""
        return {}

    def get_output_names(self) -> list[str]:
        """The names of this component's outputs."""
        return list(self._outputs())

    def get_output(self, name: str) -> Output:
        """The output ``name``; read it with ``get_output(name).get_value(state)``."""
        outs = self._outputs()
        if name not in outs:
            raise ComponentNotFoundError(f"{self._component_where()}: no output {name!r} "
                                         f"(its outputs: {', '.join(outs) or 'none'})")
        return outs[name]

    # ------------------------------------------------------------------ continuous state variables
    def _directory(self, state):
        root = self.get_root()
        if not hasattr(root, "_variable_directory"):
            raise RuntimeError(f"{self._component_where()} is not part of a System")
        return root._variable_directory(state)

    def _prefix(self) -> str:
        path = self.get_absolute_path()
        return path if path.endswith("/") else path + "/"

    def get_state_variable_names(self, state=None) -> list[str]:
        """The names of the continuous variables (q, u, z) of this component and those below it.

        Relative to this component (``angle``, ``elbow/rate``); the System's are absolute paths
        (``/matter/elbow/angle``). Without ``state``, the layout of the default State.
        """
        d = self._directory(state)
        pre = self._prefix()
        if pre == "/":
            return list(d)
        n = len(pre)
        return [p[n:] for p in d if p.startswith(pre)]

    def _resolve_variable(self, state, name: str) -> int:
        d = self._directory(state)
        path = name if name.startswith("/") else self._prefix() + name
        i = d.get(path)
        if i is None:
            i = self._variable_view_index(state, path)
        if i is None:
            near = [p for p in d if p.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]][:8]
            hint = f"; variables with that name: {', '.join(near)}" if near else ""
            if not near and self.get_root().has_component(path):
                names = self.get_root().get_component(path).get_state_variable_names(state)
                hint = (f"; {path!r} is a component, whose state variables are "
                        f"{', '.join(repr(f'{path}/{n}') for n in names[:8]) or 'none'}")
            raise ComponentNotFoundError(f"{self._component_where()}: no state variable {name!r}{hint}")
        return i

    def _variable_view_index(self, state, path: str, value: float | None = None) -> int | None:
        """The index in y of ``path`` when a component presents one of the State's variables under a
        name of its own (an OpenSim Coordinate's ``value`` is its mobilizer's q), else None. With
        ``value``, the component may refuse (raise) to have it written there."""
        owner_path, _, leaf = path.rpartition("/")
        try:
            owner = self.get_root().get_component(owner_path or "/")
        except ComponentNotFoundError:
            return None
        view = getattr(owner, "_state_variable_view", None)
        return None if view is None else view(state, leaf, value)

    def get_state_variable_value(self, state, name: str) -> float:
        """The value of continuous variable ``name`` (a path relative to this component, or absolute)."""
        return float(state.get_y()[self._resolve_variable(state, name)])

    def set_state_variable_value(self, state, name: str, value: float) -> None:
        """Set continuous variable ``name``; invalidates exactly what ``set_q``/``set_u``/``set_z`` would."""
        i = self._resolve_variable(state, name)
        try:
            v = real(value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self._component_where()}: state variable {name!r}: {e}") from None
        path = name if name.startswith("/") else self._prefix() + name
        if path not in self._directory(state):
            self._variable_view_index(state, path, v)  # a view may refuse the value (a locked coordinate)
        nq, nu = state.get_nq(), state.get_nu()
        if i < nq:
            state.upd_q()[i] = v
        elif i < nq + nu:
            state.upd_u()[i - nq] = v
        else:
            state.upd_z()[i - nq - nu] = v

    def get_state_variable_values(self, state) -> np.ndarray:
        """The values of `get_state_variable_names()`, in that order (a new array)."""
        d = self._directory(state)
        pre = self._prefix()
        y = state.get_y()
        if pre == "/":
            return np.array(y)
        return np.array([y[i] for p, i in d.items() if p.startswith(pre)])

    def set_state_variable_values(self, state, values) -> None:
        """Set all of `get_state_variable_names()` at once, in that order."""
        d = self._directory(state)
        pre = self._prefix()
        idx = np.array([i for p, i in d.items() if pre == "/" or p.startswith(pre)], dtype=np.intp)
        v = np.asarray(values, dtype=float)
        if v.shape != idx.shape:
            raise ValueError(f"{self._component_where()}: set_state_variable_values() needs {len(idx)} values, "
                             f"got shape {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError(f"{self._component_where()}: set_state_variable_values() got non-finite values")
        y = np.array(state.get_y())
        y[idx] = v
        state.set_y(y)

    # ------------------------------------------------------------------ discrete, cache, options by name
    def _declare(self, kind: str, name: str, spec: tuple) -> None:
        self._component_fields()
        check_component_name(name, f"{self._component_where()}: add_{kind}()")
        declared = self.__dict__.setdefault("_c_declared", {})
        if name in declared:
            raise ValueError(f"{self._component_where()}: a {declared[name][0]} named {name!r} is declared already")
        declared[name] = (kind, spec)
        root = self.get_root()
        if hasattr(root, "invalidate_system_topology_cache"):
            root.invalidate_system_topology_cache()  # a new variable is a change of topology

    def add_state_variable(self, name: str, initial: float = 0.0) -> None:
        """Declare a continuous variable z named ``name`` (OpenSim's ``addStateVariable``); its subsystem
        allocates it when the topology is realized. Set its derivative with `set_state_variable_derivative`."""
        self._declare("state_variable", name, (real(initial),))

    def get_state_variable_derivative(self, state, name: str) -> float:
        """The time derivative of a variable declared with `add_state_variable` (needs Acceleration)."""
        sub, i = self._slot(name, "state_variable")
        return float(sub.get_zdot(state)[i])

    def set_state_variable_derivative(self, state, name: str, value: float) -> None:
        """Set the derivative of a declared state variable (from the subsystem's Dynamics or Acceleration hook)."""
        sub, i = self._slot(name, "state_variable")
        sub.upd_zdot(state)[i] = real(value)

    def add_discrete_variable(self, name: str, stage: Stage, default) -> None:
        """Declare a discrete variable whose change invalidates ``stage`` (allocated with the topology)."""
        self._declare("discrete_variable", name, (Stage(stage), default))

    def add_cache_variable(self, name: str, default, depends_on_stage: Stage) -> None:
        """Declare a lazy cache variable that depends on ``depends_on_stage`` (allocated with the topology)."""
        self._declare("cache_variable", name, (default, Stage(depends_on_stage)))

    def add_modeling_option(self, name: str, n_options: int, stage: Stage = Stage.Model) -> None:
        """Declare an integer modeling option in ``range(n_options)``, default 0; changing it invalidates ``stage``."""
        n = integer(n_options)
        if n < 2:
            raise ValueError(f"{self._component_where()}: a modeling option needs at least 2 choices, got {n}")
        self._declare("modeling_option", name, (n, Stage(stage)))

    def _slot(self, name: str, kind: str):
        """(subsystem, index) of the declared variable ``name`` of ``kind``, once the topology is realized."""
        self._component_fields()
        slots = self.__dict__.get("_c_slots", {})
        entry = slots.get(name)
        if entry is None or entry[0] != kind:
            declared = self.__dict__.get("_c_declared", {})
            have = [n for n, (k, _) in declared.items() if k == kind]
            if name in declared and declared[name][0] == kind:
                raise RuntimeError(f"{self._component_where()}: {kind} {name!r} is not allocated yet; call "
                                   "realize_topology() first")
            raise ComponentNotFoundError(f"{self._component_where()}: no {kind.replace('_', ' ')} {name!r} "
                                         f"(it has: {', '.join(have) or 'none'})")
        return entry[1], entry[2]

    def _names_of(self, kind: str) -> list[str]:
        return [n for n, (k, _) in self.__dict__.get("_c_declared", {}).items() if k == kind]

    def get_discrete_variable_names(self) -> list[str]:
        return self._names_of("discrete_variable")

    def get_discrete_variable_value(self, state, name: str):
        sub, i = self._slot(name, "discrete_variable")
        return sub.get_discrete_variable(state, i)

    def set_discrete_variable_value(self, state, name: str, value) -> None:
        sub, i = self._slot(name, "discrete_variable")
        sub.set_discrete_variable(state, i, value)

    def get_cache_variable_names(self) -> list[str]:
        return self._names_of("cache_variable")

    def get_cache_variable_value(self, state, name: str):
        """The cached value, which must be valid (marked since its inputs last changed)."""
        sub, i = self._slot(name, "cache_variable")
        return sub.get_cache_entry(state, i)

    def set_cache_variable_value(self, state, name: str, value) -> None:
        """Store ``value`` and mark it valid (OpenSim's ``setCacheVariableValue``)."""
        sub, i = self._slot(name, "cache_variable")
        sub.set_cache_entry(state, i, value)
        sub.mark_cache_value_realized(state, i)

    def upd_cache_variable_value(self, state, name: str):
        """The stored object, for in-place change; mark it valid when done."""
        sub, i = self._slot(name, "cache_variable")
        return sub.upd_cache_entry(state, i)

    def mark_cache_variable_valid(self, state, name: str) -> None:
        sub, i = self._slot(name, "cache_variable")
        sub.mark_cache_value_realized(state, i)

    def mark_cache_variable_invalid(self, state, name: str) -> None:
        sub, i = self._slot(name, "cache_variable")
        sub.mark_cache_value_not_realized(state, i)

    def is_cache_variable_valid(self, state, name: str) -> bool:
        sub, i = self._slot(name, "cache_variable")
        return sub.is_cache_value_realized(state, i)

    def _builtin_modeling_options(self) -> dict:
        """Hook: options kept elsewhere by a built-in element: name -> (n_options, get(state), set(state, i))."""
        return {}

    def get_modeling_option_names(self) -> list[str]:
        return list(self._builtin_modeling_options()) + self._names_of("modeling_option")

    def get_modeling_option(self, state, name: str) -> int:
        builtin = self._builtin_modeling_options().get(name)
        if builtin is not None:
            return int(builtin[1](state))
        sub, i = self._slot(name, "modeling_option")
        return int(sub.get_discrete_variable(state, i))

    def set_modeling_option(self, state, name: str, value: int) -> None:
        """Choose option ``value`` in ``range(n_options)``; a Model-stage change unless declared otherwise."""
        builtin = self._builtin_modeling_options().get(name)
        n = builtin[0] if builtin is not None else self.__dict__.get("_c_declared", {}).get(name, (None, (0,)))[1][0]
        if builtin is None:
            self._slot(name, "modeling_option")  # refuses an unknown name with the list
        try:
            v = integer(value)
            if not 0 <= v < n:
                raise ValueError(f"must be in range({n}), got {v}")
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self._component_where()}: modeling option {name!r}: {e}") from None
        if builtin is not None:
            builtin[2](state, v)
        else:
            sub, i = self._slot(name, "modeling_option")
            sub.set_discrete_variable(state, i, v)

    def _owning_subsystem(self):
        """The nearest subsystem at or above this component (which allocates its declared variables)."""
        c = self
        while c is not None and not hasattr(c, "allocate_discrete_variable"):
            c = c.get_owner()
        return c
