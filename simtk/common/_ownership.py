"""The one check that an element handed to another element, to a helper or to a State is of the same System.

A body, a matter subsystem, a force element or a State of another System looks like one of this System
to everything that indexes arrays: a body of System b has an index that is also a body of System a, so
taking it would silently act on the wrong body. Every constructor and helper that takes one calls
`check_system` before it changes anything. Helpers that run in users' inner loops first test the owning
System themselves (one ``is`` on attributes they hold) and call `check_system` only when that test fails,
so the common case costs one comparison.
"""
from __future__ import annotations

from .component import Component
from .state import State
from .system import System

__all__ = ["check_system", "system_of"]


def system_of(x) -> System | None:
    """The System ``x`` belongs to.

    Parameters
    ----------
    x : State, System or Component
        A State (its System), a System (itself), or a component of a System's tree (a subsystem, a
        mobilized body, a force element, a constraint...): the root of its tree.

    Returns
    -------
    System or None
        None for anything else, or a component no System has adopted.
    """
    if isinstance(x, State):
        return x._system
    if isinstance(x, Component):
        root = x.get_root()
        return root if isinstance(root, System) else None
    return None


def _system_name(system: System | None, other: System | None) -> str:
    if system is None:
        return "no System"
    text = f"{type(system).__name__} {system.get_name()!r}"
    if other is not None and other is not system and other.get_name() == system.get_name():
        text += f" (id 0x{id(system):x})"  # two Systems of one name: say which
    return text


def _element_name(x, what: str) -> str:
    if isinstance(x, State):
        return what or "State"
    if isinstance(x, Component) and not isinstance(x, System):
        path = x.get_absolute_path() if x.get_owner() is not None else type(x).__qualname__
        return f"{what} {path!r}" if what else f"{type(x).__qualname__} {path!r}"
    return f"{what} {x!r}" if what else repr(x)


def check_system(where: str, x, system: System | None, what: str = "") -> None:
    """Refuse ``x`` unless it belongs to ``system``.

    Parameters
    ----------
    where : str
        The operation, as the error names it (``"Force.UniformGravity"``, ``"<MobilizedBody.Pin ...>.apply_body_force()"``).
    x : State or Component
        The element or State given (see `system_of`).
    system : System
        The System the operation works in.
    what : str, optional
        What ``x`` is to the operation (``"matter subsystem"``, ``"body b1"``, ``"State"``); default its kind.

    Raises
    ------
    TypeError
        ``x`` is neither a State nor a component.
    ValueError
        ``x`` is of another System (or of none), naming ``x`` by its path and both Systems.
    """
    if not isinstance(x, (State, Component)):
        raise TypeError(f"{where}: expected {what or 'a State or an element of a System'}, got {type(x).__name__}")
    other = system_of(x)
    if other is system and system is not None:
        return
    if isinstance(x, State) and other is not None and system is not None:
        try:
            x._check_system(system)  # the State's own rule decides which States a System takes
        except ValueError:
            pass
        else:
            return
    raise ValueError(f"{where}: {_element_name(x, what)} belongs to {_system_name(other, system)}, not to this System "
                     f"{_system_name(system, other)}")
