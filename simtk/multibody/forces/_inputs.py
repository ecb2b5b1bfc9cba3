"""Compiled force sets fed from the State: the controls their kernels read are the evaluation's inputs.

A kind whose kernel reads a value held in the State (an actuator's control, a PathActuator's) is
packed like any compiled kind, but the value is not baked into its set: the set is model data, shared
by every State and thread of an instance. The kernel reads ``Tree.inputs`` (and ``Tree.time``), which
each evaluation supplies: a State's realization writes its workspace's (``TreeKernels.set_inputs``)
before the set runs, the compiled time loop its stepper's (``TreeStepper.set_inputs``, held over the
steps as ``Force.DiscreteForces``' values are). The force subsystem lays the inputs of all such kinds
out in one vector, each packed group at its offset, in the order the groups add their forces.
"""
from __future__ import annotations

import numpy as np

from ...common.errors import NonFiniteForceError
from ...common.state import State

__all__: list[str] = []


class _InputPacked:
    """A compiled set reading ``n_inputs`` inputs from ``offset`` on; ``group``: every such set of the
    instance, in order (whose inputs together make the vector the kernels index)."""

    __slots__ = ("fs", "elements", "offset", "n_inputs", "group", "row_owner")

    def __init__(self, fs, elements: list, offset: int, n_inputs: int, row_owner: list | None = None):
        self.fs = fs
        self.elements = list(elements)
        self.offset = offset
        self.n_inputs = n_inputs
        self.group: tuple = (self,)
        self.row_owner = row_owner  # the element of each kernel row (None: a row is an element)

    def __deepcopy__(self, memo):
        return self  # never changed after Instance: copies of a State share it

    @property
    def compiled_only(self) -> bool:
        """Whether its inputs are all the State's values (no Python evaluated at each derivative)."""
        return True

    def controls(self, state: State) -> np.ndarray:
        """This set's inputs in ``state`` (``n_inputs`` of them)."""
        raise NotImplementedError

    def inputs(self, state: State) -> np.ndarray:
        """The whole input vector of the group in ``state``."""
        if len(self.group) == 1 and self.offset == 0:
            return self.controls(state)
        return np.concatenate([p.controls(state) for p in self.group])

    def load_held(self, state: State, stepper) -> None:
        """The compiled time loop's inputs from ``state`` (held over its steps; the time is each
        derivative's)."""
        stepper.set_inputs(self.inputs(state))

    def add(self, ws, state: State, body_forces: np.ndarray, mobility_forces: np.ndarray) -> None:
        """Add the set's forces at ``state``'s time and inputs (the workspace ``ws`` realized)."""
        ws.set_inputs(state.get_time(), self.inputs(state))
        bad = self.fs.add(ws, body_forces, mobility_forces)
        if bad >= 0:
            e = self.elements[bad] if self.row_owner is None else self.row_owner[bad]
            raise NonFiniteForceError(f"{e!r}: its forces are not finite in this configuration", e)


def lay_out_inputs(groups: list) -> None:
    """Tell each input-fed packed set of an instance the group it belongs to (offsets given at packing)."""
    group = tuple(groups)
    for p in group:
        p.group = group
