"""State snapshots: a State's variables saved by path in a ``.npz`` file, restored bitwise.

A snapshot holds the time, every continuous variable (q, u, z) under its path from the System's
state-variable directory, every discrete variable of every subsystem, the modeling options and
discrete variables declared by name on components, and a hash of the System's topology (its
component paths and kinds, the variable paths and the discrete-variable layout).

``load_state`` into a System of the same topology gives a State whose variables are bitwise the
saved ones. A State is not all a run carries: an error-controlled integrator also carries its
predicted step size (Verlet: its last step too), so an integrator started from the loaded State
alone restarts its step-size control and the run differs from the uninterrupted one at the
accuracy's level. For a bitwise resume, save the integrator's continuation with the State and give
it to the new integrator::

    save_state(stepper.get_state(), path, integrator=integ)
    ...
    stepper2.initialize(load_state(system, path))
    integ2.set_continuation(load_continuation(path))   # before initialize works too (a Simulation) A System of
another topology is refused with the differences named; ``migrate=True`` carries every variable
whose path still exists and leaves the rest at their defaults, as ``System.migrate_state`` does.

The file is read with ``allow_pickle=False``: only numbers and strings, never code.
"""
from __future__ import annotations

import hashlib
import json
import numbers
import os
import warnings
from typing import Any

import numpy as np

from simtk import Stage, State, System

__all__ = ["save_state", "load_state", "load_continuation", "SnapshotError", "topology_signature"]

_FORMAT = 1


class SnapshotError(ValueError):
    """A State cannot be saved, or a snapshot file cannot be loaded into the given System."""


# ---------------------------------------------------------------------- topology
def _subsystems(system: System) -> list:
    return [system.get_subsystem(i) for i in range(system.get_num_subsystems())]


def _discrete_values(sub, state: State) -> list:
    """All discrete variables of ``sub`` in ``state``, by index."""
    return [sub.get_discrete_variable(state, i) for i in range(sub.get_num_discrete_variables(state))]


def _kind_of(value: Any) -> str:
    """A short description of a discrete value's kind, part of the topology (its type is fixed at allocation)."""
    if isinstance(value, np.ndarray):
        return f"array{value.shape}{value.dtype.str}"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    return type(value).__qualname__


def topology_signature(system: System, state: State) -> list[str]:
    """The lines hashed into a snapshot's topology hash: components, variables and discrete layout.

    Parameters
    ----------
    system : System
        The System ``state`` belongs to.
    state : State
        A State of ``system`` realized to Model; snapshots use the default State, since Model-stage
        options (Euler angles) rename variables without changing the topology.

    Returns
    -------
    list of str
        One line per component (``component <path> <kind>``), continuous variable
        (``variable <path>``) and discrete variable (``discrete <subsystem path>#<i> <kind>``).
    """
    lines = [f"component / {type(system).__qualname__}"]
    lines += [f"component {c.get_absolute_path()} {type(c).__qualname__}" for c in system.get_subcomponents()]
    lines += [f"variable {p}" for p in system.get_state_variable_names(state)]
    for sub in _subsystems(system):
        for i, v in enumerate(_discrete_values(sub, state)):
            lines.append(f"discrete {sub.get_absolute_path()}#{i} {_kind_of(v)}")
    return lines


def _hash(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


# ---------------------------------------------------------------------- encoding discrete values
def _encode(value: Any, where: str) -> dict[str, np.ndarray]:
    """Arrays that rebuild ``value`` without pickle: {suffix: array}; suffix '' is the value itself."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise SnapshotError(f"{where}: an array of dtype {value.dtype} cannot be saved without pickle")
        return {"": np.array(value)}
    if isinstance(value, (bool, np.bool_, numbers.Real)):
        return {"": np.array(value)}
    if isinstance(value, (dict, list, tuple)):
        # Plain containers of numbers (the matter's locks): JSON text, which json.loads reads back exactly
        # (floats are written as repr) and without running code.
        return {":json": np.array(json.dumps(_tag(value, where)))}
    # An object holding numbers and numeric arrays (DiscreteForces' values): saved field by field.
    fields = getattr(type(value), "__slots__", None)
    if fields is None:
        fields = list(getattr(value, "__dict__", {}))
    if isinstance(fields, str):
        fields = [fields]
    out = {}
    for f in fields:
        if not hasattr(value, f):
            continue
        v = getattr(value, f)
        if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
            out["." + f] = np.array(v)
        elif isinstance(v, (bool, np.bool_, numbers.Real)):
            out["." + f] = np.array(v)
        else:
            raise SnapshotError(f"{where}: a {type(value).__qualname__} whose field {f!r} is a {type(v).__name__} "
                                "cannot be saved without pickle")
    if not out:
        raise SnapshotError(f"{where}: a {type(value).__qualname__} value cannot be saved without pickle")
    return out


def _tag(v: Any, where: str):
    """``v`` as JSON-able data that remembers tuples, lists and dictionaries with non-string keys."""
    if isinstance(v, (bool, np.bool_)):
        return ["b", bool(v)]
    if isinstance(v, numbers.Integral):
        return ["i", int(v)]
    if isinstance(v, numbers.Real):
        return ["f", float(v)]
    if isinstance(v, str):
        return ["s", v]
    if isinstance(v, tuple):
        return ["t", [_tag(x, where) for x in v]]
    if isinstance(v, list):
        return ["l", [_tag(x, where) for x in v]]
    if isinstance(v, dict):
        return ["d", [[_tag(k, where), _tag(x, where)] for k, x in v.items()]]
    raise SnapshotError(f"{where}: a {type(v).__name__} inside a container cannot be saved without pickle")


def _untag(d: Any):
    kind, v = d
    if kind in ("b", "i", "f", "s"):
        return {"b": bool, "i": int, "f": float, "s": str}[kind](v)
    if kind == "t":
        return tuple(_untag(x) for x in v)
    if kind == "l":
        return [_untag(x) for x in v]
    if kind == "d":
        return {_untag(k): _untag(x) for k, x in v}
    raise SnapshotError(f"unknown tag {kind!r} in a saved discrete value")


def _decode_scalar(template: Any, a: np.ndarray):
    if isinstance(template, np.ndarray):
        return np.array(a, dtype=template.dtype)
    if isinstance(template, (bool, np.bool_)):
        return bool(a)
    if isinstance(template, numbers.Integral):
        return int(a)
    return float(a)


# ---------------------------------------------------------------------- save
def save_state(state: State, path: str | os.PathLike, *, integrator: Any = None) -> None:
    """Save ``state``'s variables to ``path`` (a ``.npz`` file).

    Parameters
    ----------
    state : State
        A State realized at least to Model (its layout must exist).
    path : str or path-like
        Where to write; numpy adds ``.npz`` if the name has no such suffix.
    integrator : Integrator, optional
        The integrator whose current State ``state`` is: its continuation (``get_continuation()``:
        the predicted step size and the method's step history) is saved too, for a bitwise resume
        with `load_continuation` and ``Integrator.set_continuation``.

    Raises
    ------
    SnapshotError
        The State is not realized to Model, holds a discrete value made of something other than
        numbers and numeric arrays (it could not be read back without pickle), or is not
        ``integrator``'s current State.
    """
    system = state.get_system()
    if system is None or state.get_system_stage() < Stage.Model:
        raise SnapshotError("save_state: the State must belong to a System and be realized to Model at least")
    continuation = _continuation_arrays(state, integrator) if integrator is not None else {}
    # The signature of the default State: variable names change with Model-stage options (Euler angles).
    lines = topology_signature(system, system.realize_topology())
    arrays: dict[str, Any] = {
        "format": np.array(_FORMAT),
        "time": np.array(state.get_time(), dtype=np.float64),
        "topology_hash": np.array(_hash(lines)),
        "topology": np.array(lines),
        "y_names": np.array(system.get_state_variable_names(state)),
        "y": np.array(state.get_y(), dtype=np.float64),
    }
    # Every discrete variable by subsystem path and index: exact restore into the same topology.
    keys, n = [], 0
    for sub in _subsystems(system):
        for i, v in enumerate(_discrete_values(sub, state)):
            key = f"{sub.get_absolute_path()}#{i}"
            for suffix, a in _encode(v, f"save_state: discrete variable {key}").items():
                keys.append(key + suffix)
                arrays[f"d{n}"] = a
                n += 1
    arrays["discrete_keys"] = np.array(keys, dtype=str)
    # Discrete variables and modeling options declared by name, and built-in options, by component
    # path: what migrate carries into another topology.
    named, values = [], []
    for comp in [system] + system.get_subcomponents():
        cpath = comp.get_absolute_path()
        for name in comp.get_modeling_option_names():
            named.append(f"option {cpath}:{name}")
            values.append(float(comp.get_modeling_option(state, name)))
        for name in comp.get_discrete_variable_names():
            v = comp.get_discrete_variable_value(state, name)
            if isinstance(v, (bool, np.bool_, numbers.Real)):
                named.append(f"discrete {cpath}:{name}:{_kind_of(v)}")
                values.append(float(v))
    arrays["named_keys"] = np.array(named, dtype=str)
    arrays["named_values"] = np.array(values, dtype=np.float64)
    arrays.update(continuation)
    np.savez(path, **arrays)


def _continuation_arrays(state: State, integrator: Any) -> dict[str, np.ndarray]:
    c = integrator.get_continuation()
    if c["time"] != state.get_time() or not np.array_equal(integrator.get_state().get_y(), state.get_y()):
        raise SnapshotError(f"save_state: the State (t = {state.get_time()!r}) is another State than the "
                            f"integrator's current one (t = {c['time']!r}); save the integrator's State "
                            "(stepper.get_state()) with its continuation")
    out = {"continuation_keys": np.array(list(c), dtype=str)}
    for i, value in enumerate(c.values()):
        out[f"c{i}"] = np.array(value)
    return out


def load_continuation(path: str | os.PathLike) -> dict[str, Any] | None:
    """The integrator continuation saved with the State in ``path`` (``save_state(..., integrator=)``).

    Parameters
    ----------
    path : str or path-like
        A file written by `save_state`.

    Returns
    -------
    dict or None
        For ``Integrator.set_continuation`` (on an integrator initialized with ``load_state``'s
        State, or before its ``initialize``); None when the snapshot was saved without one.
    """
    data = _read(path)
    if "continuation_keys" not in data:
        return None
    out: dict[str, Any] = {}
    for i, key in enumerate(data["continuation_keys"].tolist()):
        a = data[f"c{i}"]
        if a.ndim:
            out[key] = np.array(a, dtype=np.float64)
        elif a.dtype.kind == "U":
            out[key] = str(a)
        elif a.dtype.kind == "b":
            out[key] = bool(a)
        elif a.dtype.kind in "iu":
            out[key] = int(a)
        else:
            out[key] = float(a)
    return out


# ---------------------------------------------------------------------- load
def _diff(saved: list[str], now: list[str], limit: int = 8) -> str:
    a, b = set(saved), set(now)
    only_saved = [s for s in saved if s not in b]
    only_now = [s for s in now if s not in a]
    parts = []
    if only_saved:
        parts.append("in the snapshot only: " + "; ".join(only_saved[:limit])
                     + (f" (and {len(only_saved) - limit} more)" if len(only_saved) > limit else ""))
    if only_now:
        parts.append("in the System only: " + "; ".join(only_now[:limit])
                     + (f" (and {len(only_now) - limit} more)" if len(only_now) > limit else ""))
    if not parts:
        parts.append("the same entries in another order")
    return "; ".join(parts)


def _read(path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError) as e:
        raise SnapshotError(f"{os.fspath(path)}: not a readable State snapshot ({e})") from None
    missing = [k for k in ("format", "time", "topology_hash", "topology", "y_names", "y", "discrete_keys",
                           "named_keys", "named_values") if k not in data]
    if missing:
        raise SnapshotError(f"{os.fspath(path)}: not a State snapshot (missing {', '.join(missing)})")
    if int(data["format"]) != _FORMAT:
        raise SnapshotError(f"{os.fspath(path)}: snapshot format {int(data['format'])}, this simtk reads {_FORMAT}")
    return data


def _set_discrete_exact(system: System, state: State, data: dict, allocated_only: bool) -> None:
    """Put the saved discrete values into ``state`` (those allocated so far when ``allocated_only``)."""
    subs = {s.get_absolute_path(): s for s in _subsystems(system)}
    grouped: dict[tuple[str, int], dict[str, np.ndarray]] = {}
    for n, key in enumerate(data["discrete_keys"].tolist()):
        if key.endswith(":json"):
            base, part = key[:-5], ":json"
        else:
            base, _, suffix = key.partition(".")
            part = "." + suffix if suffix else ""
        spath, _, idx = base.rpartition("#")
        grouped.setdefault((spath, int(idx)), {})[part] = data[f"d{n}"]
    for (spath, i), parts in grouped.items():
        sub = subs[spath]
        try:
            current = sub.get_discrete_variable(state, i)
        except IndexError:
            if allocated_only:
                continue
            raise
        if ":json" in parts:
            try:
                value = _untag(json.loads(str(parts[":json"])))
            except (ValueError, TypeError, KeyError) as e:
                raise SnapshotError(f"discrete variable {spath}#{i}: unreadable saved value ({e})") from None
            if not _equal(current, value):
                sub.set_discrete_variable(state, i, value)
        elif "" in parts:
            value = _decode_scalar(current, parts[""])
            if not _equal(current, value):
                sub.set_discrete_variable(state, i, value)
        else:
            obj = sub.upd_discrete_variable(state, i)
            for suffix, a in parts.items():
                old = getattr(obj, suffix[1:])
                setattr(obj, suffix[1:], np.array(a, dtype=old.dtype) if isinstance(old, np.ndarray)
                        else _decode_scalar(old, a))


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b))
    return type(a) is type(b) and a == b


def load_state(system: System, path: str | os.PathLike, *, migrate: bool = False) -> State:
    """A new State of ``system`` with the variables saved in ``path``.

    Parameters
    ----------
    system : System
        The System to make the State for.
    path : str or path-like
        A file written by `save_state`.
    migrate : bool
        Accept a System of another topology: carry the time, every continuous variable whose path
        exists in ``system``, and the modeling options and discrete variables declared by name on
        components that still exist; everything else keeps its default.

    Returns
    -------
    State
        Realized to Model; bitwise the saved variables when the topologies match.

    Raises
    ------
    SnapshotError
        The file is not a snapshot, or (without ``migrate``) ``system``'s topology differs from the
        saved one; the message names what differs.
    """
    data = _read(path)
    fresh = system.realize_topology()
    now = topology_signature(system, fresh)
    saved = data["topology"].tolist()
    same = str(data["topology_hash"]) == _hash(now)
    if not same and not migrate:
        raise SnapshotError(f"{os.fspath(path)}: the snapshot was saved from another topology ({_diff(saved, now)}); "
                            "pass migrate=True to carry the variables whose paths still exist")
    if same:
        state = fresh
        # Model-stage variables first (they decide the layout), then those allocated at Model.
        _set_discrete_exact(system, state, data, allocated_only=True)
        system.realize(state, Stage.Model)
        _set_discrete_exact(system, state, data, allocated_only=False)
        system.realize(state, Stage.Model)
        names = data["y_names"].tolist()
        if names != system.get_state_variable_names(state):
            raise SnapshotError(f"{os.fspath(path)}: the variable layout differs although the topology is the same")
        state.set_y(np.array(data["y"], dtype=np.float64))
        state.set_time(float(data["time"]))
        return state
    return _migrate(system, fresh, data, path)


def _migrate(system: System, state: State, data: dict, path) -> State:
    skipped = []
    for key, value in zip(data["named_keys"].tolist(), data["named_values"].tolist()):
        what, _, rest = key.partition(" ")
        cpath, _, name = rest.partition(":")
        if cpath != "/" and not system.has_component(cpath):
            skipped.append(rest)
            continue
        comp = system if cpath == "/" else system.get_component(cpath)
        try:
            if what == "option":
                if name in comp.get_modeling_option_names():
                    comp.set_modeling_option(state, name, int(value))
                else:
                    skipped.append(rest)
            else:
                name, _, kind = name.partition(":")
                if name in comp.get_discrete_variable_names():
                    v = bool(value) if kind == "bool" else int(value) if kind == "int" else value
                    comp.set_discrete_variable_value(state, name, v)
                else:
                    skipped.append(rest)
        except (TypeError, ValueError) as e:
            warnings.warn(f"{os.fspath(path)}: {rest} not carried over: {e}", stacklevel=3)
    system.realize(state, Stage.Model)
    index = {p: i for i, p in enumerate(system.get_state_variable_names(state))}
    y = np.array(state.get_y())
    for p, v in zip(data["y_names"].tolist(), data["y"].tolist()):
        i = index.get(p)
        if i is not None:
            y[i] = v
    state.set_y(y)
    state.set_time(float(data["time"]))
    return state
