"""OpenSim's own forward simulation, the peer of the benchmarks that run OpenSim models."""
from __future__ import annotations

import time

import numpy as np
import opensim as osim


def run_manager(path: str, t_end: float, accuracy: float, count: bool = False) -> tuple[float, np.ndarray, int]:
    """(wall time, final coordinates in the CoordinateSet's order, steps) of OpenSim 4's Manager with
    RK-Merson at ``accuracy`` from the model's default State to ``t_end``; the wall time includes the
    Manager's initialization. The steps are counted (the rows of its storage) only when ``count``,
    which writes a row per step and so is timed apart; else -1."""
    model = osim.Model(path)
    state = model.initSystem()
    manager = osim.Manager(model)
    manager.setIntegratorMethod(osim.Manager.IntegratorMethod_RungeKuttaMerson)
    manager.setIntegratorAccuracy(accuracy)
    manager.setWriteToStorage(count)
    manager.setRecordStatesTrajectory(False)
    state.setTime(0.0)
    t0 = time.perf_counter()
    manager.initialize(state)
    end = manager.integrate(t_end)
    wall = time.perf_counter() - t0
    assert abs(end.getTime() - t_end) < 1e-12 * max(1.0, t_end)
    coords = model.getCoordinateSet()
    q = np.array([coords.get(k).getValue(end) for k in range(coords.getSize())])
    return wall, q, manager.getStateStorage().getSize() - 1 if count else -1
