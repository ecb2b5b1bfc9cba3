"""What the matter subsystem keeps in a State: its Model-stage layout and its Instance-stage cache
(the compiled workspace and the arrays the stages fill)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...common._values import _readonly

__all__: list[str] = []


class _Layout:
    """Model-stage layout: joint codes and q/u offsets per body (depends on the Euler-angle switch)."""

    __slots__ = ("codes", "qoff", "uoff", "nq", "nu", "quaternion_bodies", "euler", "custom")

    def __init__(self, codes, qoff, uoff, quaternion_bodies, euler):
        self.codes, self.qoff, self.uoff = codes, qoff, uoff
        self.nq, self.nu = int(qoff[-1]), int(uoff[-1])
        self.quaternion_bodies = quaternion_bodies
        self.euler = euler
        self.custom: list = []  # Custom mobilized bodies: Python fills their kernel rows each stage

    def __deepcopy__(self, memo):
        return self  # never changed once made (a Model change makes a new one): a State's copy shares it


class _MatterCache:
    """Instance-stage cache of one State: the kernel workspace and the arrays the stages fill."""

    def __init__(self, ws, layout: _Layout, body_forces=None, mobility_forces=None, A_GB=None):
        nb, nu = ws.nb, ws.nu
        self.ws = ws
        self.layout = layout
        # Dynamics accumulators (nb, 2, 3) and (nu,), and the realized body accelerations (ws.A_GB is
        # scratch): zeros, or a copy's own arrays
        self.body_forces = np.zeros((nb, 2, 3)) if body_forces is None else body_forces
        self.mobility_forces = np.zeros(nu) if mobility_forces is None else mobility_forces
        self.A_GB = np.zeros((nb, 2, 3)) if A_GB is None else A_GB
        self.plan = None  # the constraint plan of this instance (built by the constraints layer)
        self.stage_hooks: dict = {"time": [], "dynamics": [], "acceleration": [], "report": []}  # set at Instance
        self._ro = None

    @property
    def ro(self) -> SimpleNamespace:
        """Read-only views of the arrays the getters hand out, made at the first get (a State's copy,
        which makes a new cache, does not pay for a dozen views that an integrator never reads)."""
        if self._ro is None:
            ws = self.ws
            self._ro = SimpleNamespace(
                R_GB=_readonly(ws.R_GB), p_GB=_readonly(ws.p_GB), R_FM=_readonly(ws.R_FM), p_FM=_readonly(ws.p_FM),
                V_GB=_readonly(ws.V_GB), V_FM=_readonly(ws.V_FM), A_GB=_readonly(self.A_GB),
                mass=_readonly(ws.mass), p_BC=_readonly(ws.p_BC), p_GC=_readonly(ws.p_GC),
                body_forces=_readonly(self.body_forces), mobility_forces=_readonly(self.mobility_forces))
        return self._ro

    def __deepcopy__(self, memo):
        new = _MatterCache(self.ws.copy(), self.layout, self.body_forces.copy(), self.mobility_forces.copy(),
                           self.A_GB.copy())
        new.plan = self.plan  # never mutated after Instance: share it
        new.stage_hooks = self.stage_hooks  # bound methods of topology objects: shared, like them
        return new

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_ro"}  # views: made again after unpickling

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        state.pop("ro", None)  # a pickle of an earlier version holds the views
        self.__dict__.update(state, _ro=None)
