"""The semi-implicit Euler step's compiled linear solve (core/implicit_step.pxi), beside ``simtk._core``."""
from __future__ import annotations

from ._core import _k

__all__ = ["make_linearizer", "station_jacobian_into"]


def make_linearizer(batch):
    """A ``simtk_core.Linearizer`` over a TreeBatch's tree and force sets: ``solve(q0, u0, udot0, h, du)``
    gives the step's du, ``matrices(q0, u0)`` its (D, K). The batch's sets were checked when it was made."""
    return _k.Linearizer(batch)


#: ``station_jacobian_into(ws, bodies, p_BS, out)``: the station Jacobian (3k, nu) of a workspace realized to
#: Position into ``out`` (checked shapes and bodies), allocating nothing
station_jacobian_into = _k.station_jacobian_into
