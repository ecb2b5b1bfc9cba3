"""Recording: output probes (named outputs into preallocated arrays) and trajectories of whole States.

An `OutputProbe` records outputs named by path (``/matter/elbow|angle``, OpenSim's spelling, or
``Output`` objects) at its interval or every driver step. Its storage is preallocated for the run
and doubled when a run goes on longer, so a step records without allocating; values that are
arrays (a transform, a spatial velocity) take one column per element.
"""
from __future__ import annotations

import csv
from typing import Sequence

import numpy as np

from ..common.output import Output
from ..common.stage import Stage
from ..common.state import State
from ..spatial import Rotation, Transform
from .agents import Agent

__all__ = ["OutputProbe", "StatesTrajectory"]


def _flat(value) -> np.ndarray:
    if isinstance(value, Transform):
        return np.concatenate([value.R.matrix.ravel(), value.p])
    if isinstance(value, Rotation):
        return value.matrix.ravel()
    return np.asarray(value, dtype=float).ravel()


class OutputProbe(Agent):
    """Record named outputs at ``interval`` (or every driver step) into numpy arrays.

    Parameters
    ----------
    outputs : sequence of str or Output
        ``"<component path>|<output name>"`` or Output objects.
    interval : float, optional
        Time between samples (a whole number of driver ticks); every step when None.
    start, stop : float
        Record only within this window.
    name : str, optional
    """

    _order = 3

    def __init__(self, outputs: Sequence, interval: float | None = None, start: float = -np.inf,
                 stop: float = np.inf):
        super().__init__(interval, start, stop)
        if not len(outputs):
            raise ValueError("OutputProbe: give at least one output")
        for o in outputs:
            if not isinstance(o, (str, Output)) or (isinstance(o, str) and "|" not in o):
                raise ValueError(f"OutputProbe: {o!r} is not an Output or a '<path>|<output>' string")
        self._specs = list(outputs)
        self._bound_outputs: list[Output] = []  # bound at the start of a run
        self._t = np.zeros(0)
        self._data = np.zeros((0, 0))
        self._n = 0
        self.columns: list[str] = []

    # ------------------------------------------------------------------ set-up and recording
    def _bind(self, system, state: State, capacity: int) -> None:
        """Resolve the outputs and preallocate ``capacity`` rows (first sample gives the widths)."""
        outs = []
        for o in self._specs:
            if isinstance(o, Output):
                outs.append(o)
            else:
                path, name = o.split("|", 1)
                outs.append(system.get_component(path).get_output(name))
        self._bound_outputs = outs
        self._need = Stage(max(o.stage for o in outs))
        self._fns = [o.fn for o in outs]  # the State is realized to every output's stage before they run
        self._capacity = max(int(capacity), 16)

    def _layout(self, values: list[np.ndarray]) -> None:
        self._widths = [len(v) for v in values]
        cols = []
        for o, w in zip(self._bound_outputs, self._widths):
            base = o.get_path_name()
            cols += [base] if w == 1 else [f"{base}[{k}]" for k in range(w)]
        self.columns = cols
        self._t = np.empty(self._capacity)
        self._data = np.empty((self._capacity, sum(self._widths)))
        starts = np.concatenate([[0], np.cumsum(self._widths)[:-1]]).astype(int).tolist()
        self._slots = list(zip(starts, self._widths, self._fns))

    def record(self, state: State) -> None:
        """Append one sample of every output at the State's time (realizing what they need)."""
        if state._stage < self._need:
            if self._sim is None:
                raise RuntimeError(f"{self._component_where()}: record() needs a State realized to "
                                   f"{self._need.name}, or a Simulation to realize it")
            self._sim._system.realize(state, self._need)
        if self._n == 0 and self._data.shape[1] == 0:
            self._layout([_flat(fn(state)) for fn in self._fns])
        if self._n == len(self._t):  # a longer run than planned: double (amortized, rare)
            self._t = np.concatenate([self._t, np.empty(len(self._t))])
            self._data = np.concatenate([self._data, np.empty_like(self._data)])
        row = self._data[self._n]
        # (column, width, output function); a scalar output is stored without making an array of it
        for k, w, fn in self._slots:
            if w == 1:
                v = fn(state)
                row[k] = v if type(v) is float else _flat(v)[0]
            else:
                row[k:k + w] = _flat(fn(state))
        self._t[self._n] = state.get_time()
        self._n += 1

    def _truncate_after(self, t: float) -> None:
        """Forget the samples later than ``t`` (a rewind)."""
        self._n = int(np.searchsorted(self._t[:self._n], t, side="right"))

    # ------------------------------------------------------------------ results
    def __len__(self) -> int:
        return self._n

    def get_times(self) -> np.ndarray:
        return self._t[:self._n].copy()

    def to_numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """(times (n,), values (n, columns)), copies."""
        return self._t[:self._n].copy(), self._data[:self._n].copy()

    def column(self, name: str) -> np.ndarray:
        """The samples of one column (``"<path>|<output>"`` or ``"<path>|<output>[k]"``)."""
        return self._data[:self._n, self.columns.index(name)].copy()

    def to_csv(self, path) -> None:
        """Write ``time`` and every column, with a header line."""
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time"] + self.columns)
            for t, row in zip(self._t[:self._n], self._data[:self._n]):
                w.writerow([repr(float(t))] + [repr(float(x)) for x in row])

    def to_npz(self, path) -> None:
        """Save ``time``, ``values`` and ``columns`` in a NumPy .npz file."""
        np.savez(path, time=self._t[:self._n], values=self._data[:self._n], columns=np.array(self.columns))

    @staticmethod
    def read_npz(path) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(times, values, columns) of a file written by `to_npz`."""
        with np.load(path) as z:
            return z["time"], z["values"], [str(c) for c in z["columns"]]

    def to_dataframe(self):
        """A pandas DataFrame indexed by time (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self._data[:self._n].copy(), index=pd.Index(self._t[:self._n].copy(), name="time"),
                            columns=list(self.columns))

    def plot(self, columns: Sequence[str] | None = None, ax=None, path=None):
        """Plot the columns against time (matplotlib, the ``[plot]`` extra); returns the Figure."""
        from ..plot import time_series

        return time_series(self, columns=columns, ax=ax, path=path)


class StatesTrajectory(Agent):
    """Whole States at ``interval`` (or every step), OpenSim's StatesTrajectory, for replay and analysis.

    After a run its States are States of the System as built (see `Simulation.get_state`), made from
    the Simulation's recorded ones when first read.
    """

    _order = 3

    def __init__(self, interval: float | None = None, start: float = -np.inf, stop: float = np.inf):
        super().__init__(interval, start, stop)
        self._states: list[State] = []
        self._exported: dict[int, State] = {}

    def record(self, state: State) -> None:
        self._states.append(state.copy())

    def _truncate_after(self, t: float) -> None:
        while self._states and self._states[-1].get_time() > t:
            self._states.pop()
        self._exported = {i: s for i, s in self._exported.items() if i < len(self._states)}

    def __len__(self) -> int:
        return len(self._states)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._states)))]
        raw = self._states[i]
        if self._sim is None:
            return raw
        i = i % len(self._states)
        out = self._exported.get(i)
        if out is None or out._system is not raw._system:
            out = self._sim._export(raw)
            if out is not raw:
                self._exported[i] = out
        return out

    def __iter__(self):
        return (self[i] for i in range(len(self._states)))

    def get_times(self) -> np.ndarray:
        return np.array([s.get_time() for s in self._states])
