"""A State of a structural copy of a System, taken into that System (a State back from a worker).

A State pickled alone brings a copy of its System along, since a State needs its System to mean
anything. Simbody's States are independent of the System object: any System of the same topology
realizes them. Here the original System takes such a State as its own when the copy is
*structurally identical*: one of its copies (the same lineage: a System built alike by the same code
is another System), at the same topology version and the same signature (every component's path
and class, every property's value, the subsystems and the event handlers' kinds). The State's
variables (t, y, every discrete variable) are kept bitwise; its cache is computed again by the
original System up to the stage the State had, which gives bitwise the same results since both
Systems compute them from the same numbers. Anything else (another topology, a property whose value
differs) is refused as a State of another System.
"""
from __future__ import annotations

import hashlib
import io
import pickle
import weakref
from typing import TYPE_CHECKING

from ._values import _copied_value, _same_value
from .component import Component
from .stage import MODEL, POSITION, REPORT, TIME

if TYPE_CHECKING:
    from .state import State
    from .system import System


class _SignaturePickler(pickle.Pickler):
    # A property that refers to an element (a constraint's body, a function's frame) is the same when
    # the element is at the same path: pickling the element itself would pickle the whole System.
    def persistent_id(self, obj):
        if isinstance(obj, Component):
            return "component " + obj.get_absolute_path()
        return None


def _value_bytes(value) -> bytes:
    buf = io.BytesIO()
    try:
        _SignaturePickler(buf, protocol=4).dump(value)
    except Exception:  # a value that cannot pickle (a lambda): its kind is all that can be compared
        t = type(value)
        return f"unpicklable {t.__module__}.{t.__qualname__}".encode()
    return buf.getvalue()


def _kind(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def system_signature(system: "System") -> bytes:
    """A digest of ``system``'s structure and parameters, computed once per topology version and
    property change (``System._parameter_changed`` moves the key)."""
    key = (system._topology_version, system.__dict__.get("_parameter_epoch", 0))
    cached = system.__dict__.get("_signature_cache")
    if cached is not None and cached[0] == key:
        return cached[1]
    h = hashlib.sha256()
    h.update(f"topology {system._topology_version}\n".encode())
    h.update(("subsystems " + " ".join(s._name for s in system._subsystems) + "\n").encode())
    for comp in [system] + system.get_subcomponents():
        h.update(f"component {comp.get_absolute_path()} {_kind(comp)}\n".encode())
        for name in comp.get_property_names():
            try:
                value = comp.get_property(name)
            except AttributeError:  # declared without a value
                h.update(f"property {name} unset\n".encode())
                continue
            h.update(f"property {name} ".encode())
            h.update(_value_bytes(value))
            h.update(b"\n")
    for what in (system._event_handlers, system._event_reporters):
        h.update((" ".join(_kind(x) for x in what) + "\n").encode())
    digest = h.digest()
    system.__dict__["_signature_cache"] = (key, digest)
    return digest


def _component_memo(copy: "System", system: "System") -> dict:
    """id of each element of ``copy`` -> the element at the same path in ``system`` (for values that
    refer to elements: they must refer to the original's)."""
    memo: dict = {id(copy): system}
    for a, b in zip(copy._subsystems, system._subsystems):
        memo[id(a)] = b
    theirs = {c.get_absolute_path(): c for c in system.get_subcomponents()}
    for c in copy.get_subcomponents():
        twin = theirs.get(c.get_absolute_path())
        if twin is not None:
            memo[id(c)] = twin
            impl, twin_impl = getattr(c, "_impl", None), getattr(twin, "_impl", None)
            if impl is not None and twin_impl is not None:
                memo[id(impl)] = twin_impl
    return memo


def is_structural_copy(state: "State", system: "System") -> bool:
    """Whether ``state``'s System is a structurally identical copy of ``system``, at its own topology."""
    other = state._system
    if other is None or other is system or type(other) is not type(system):
        return False
    lineage = system.__dict__.get("_lineage")
    if lineage is None or other.__dict__.get("_lineage") != lineage:  # a System built alike is another System
        return False
    if state._topology_version != other._topology_version or other._topology_version != system._topology_version:
        return False
    return system_signature(other) == system_signature(system)


def _copy_discrete(fresh: "State", state: "State", memo: dict) -> None:
    for mine, theirs in zip(fresh._subs, state._subs):
        for v, w in zip(mine.discrete, theirs.discrete):
            if not _same_value(v.value, w.value):
                fresh._invalidate(v.invalidates)
                v.value = _copied_value(w.value, memo)


def take_into(state: "State", system: "System") -> None:
    """Make ``state`` (of a structural copy of ``system``) a State of ``system``, in place.

    Everything is built on a new State of ``system`` first and moved into ``state`` at the end, so a
    failure leaves ``state`` as it was.
    """
    other = state._system
    memo = _component_memo(other, system)
    fresh = system.realize_topology()
    if state._stage < MODEL:
        fresh.invalidate_all(MODEL)
        _copy_discrete(fresh, state, memo)
    else:
        # Discrete variables first: a Model-stage one (an Euler-angle option) decides the layout.
        _copy_discrete(fresh, state, memo)
        if fresh._stage < MODEL:
            system.realize(fresh, MODEL)
            _copy_discrete(fresh, state, memo)  # those allocated at Model exist only now
        if len(fresh._y) != len(state._y) or fresh._names != state._names:
            raise ValueError(f"this State of a copy of {system!r} has another variable layout than the "
                             "System's States; use System.migrate_state(state)")
    if any(len(a.discrete) != len(b.discrete) for a, b in zip(fresh._subs, state._subs)):
        raise ValueError(f"this State of a copy of {system!r} has other discrete variables than the System's "
                         "States; use System.migrate_state(state)")
    if fresh._t != state._t:
        fresh._invalidate(TIME)
        fresh._t = state._t
    if state._stage >= MODEL:
        fresh._invalidate(POSITION)
        fresh._y[:] = state._y
        system.realize(fresh, min(state._stage, REPORT))
    for name in type(state).__slots__:
        if name != "__weakref__" and hasattr(fresh, name):
            object.__setattr__(state, name, getattr(fresh, name))
    state._fused = None  # the compiled realization, if any, was made for ``fresh``: made again on demand
    live = other.__dict__.get("_live_states")
    if live is not None:
        live.discard(state)
    system.__dict__.setdefault("_live_states", weakref.WeakSet()).add(state)
