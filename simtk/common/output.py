"""Outputs (OpenSim's ``Output``): named, typed quantities of a component with the stage they need.

A class declares an output by decorating a method of the State::

    class MySpring(Force.Custom.Implementation):
        @output(Stage.Position, float)
        def stretch(self, state): ...

and anyone reads it by name: ``component.get_output("stretch").get_value(state)``, which refuses a
State realized below the output's stage (naming the component's path, the output and both stages).
"""
from __future__ import annotations

from typing import Any, Callable

from .errors import StageTooLowError
from .stage import Stage

__all__ = ["Output", "output"]


class Output:
    """One named output of one component.

    Parameters
    ----------
    owner : Component
        The component it belongs to.
    name : str
    fn : callable
        ``fn(state)`` computes the value.
    stage : Stage
        The State must be realized at least to this stage.
    value_type : type
        What the value is (``float``, ``numpy.ndarray`` with its shape in ``doc``, ``Transform``...).
    doc : str
    """

    __slots__ = ("owner", "name", "fn", "stage", "value_type", "doc")

    def __init__(self, owner, name: str, fn: Callable[[Any], Any], stage: Stage, value_type: type = float,
                 doc: str = ""):
        self.owner, self.name, self.fn = owner, name, fn
        self.stage, self.value_type, self.doc = Stage(stage), value_type, doc

    def get_name(self) -> str:
        return self.name

    def get_path_name(self) -> str:
        """``<component path>|<output name>``, OpenSim's spelling of an output's path."""
        return f"{self.owner.get_absolute_path()}|{self.name}"

    def get_depends_on_stage(self) -> Stage:
        return self.stage

    def get_value(self, state) -> Any:
        """The value in ``state``, which must be realized to `get_depends_on_stage()`."""
        current = state._stage
        if current < self.stage:
            raise StageTooLowError(f"output {self.get_path_name()!r}", self.stage, current)
        return self.fn(state)

    def __repr__(self) -> str:
        return f"<Output {self.get_path_name()} ({self.value_type.__name__}, {self.stage.name})>"


def output(stage: Stage, value_type: type = float, name: str | None = None, doc: str = ""):
    """Declare a method ``f(self, state)`` as an output of its class (named after the method)."""

    def mark(fn):
        fn._simtk_output = (name or fn.__name__, Stage(stage), value_type, doc or (fn.__doc__ or "").strip())
        return fn

    return mark


def declared_outputs(cls: type) -> dict[str, tuple[str, Stage, type, str]]:
    """The outputs declared on ``cls`` and its bases: method name -> (output name, stage, type, doc)."""
    out: dict[str, tuple] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            spec = getattr(value, "_simtk_output", None)
            if spec is not None:
                out[attr] = spec
    return out
