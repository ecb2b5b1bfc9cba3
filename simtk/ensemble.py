"""Ensembles: one simulation per parameter set, run on Dask (``dask.distributed``), results as arrays.

``run(make, parameters, t_final, outputs)`` builds one ``(system, state)`` per parameter set with
``make(**params)``, drives each with a `Simulation` to ``t_final`` and returns the named outputs
as numpy arrays indexed by member (a `EnsembleResult`). The members run as Dask tasks:

- ``client=None`` (the default): a local cluster of worker *processes* on this machine, one per
  core, one thread each, started for the call and closed after it;
- ``client="tcp://host:8786"``: the scheduler of a running cluster, the same code unchanged;
- ``client=<distributed.Client>``: a client you made (left open).

Dask is imported only here and only when `run` is called (the ``[dask]`` extra:
``pip install 'simtk[dask]'``). `simulate` is what one member does; a serial loop over it
gives bitwise the results `run` gives, since each member runs the same code on the same numbers.

What travels to the workers
---------------------------
Each task carries ``make`` and one parameter set, pickled by Dask with cloudpickle:

- a function defined at module level in an importable module is sent *by reference* (its
  module name): every worker must be able to import that module (on this machine's local
  cluster they can, since the worker processes get this process's ``sys.path``; on a remote
  cluster install the module there, or call ``cloudpickle.register_pickle_by_value(module)``);
- a function defined in ``__main__`` (a script), a lambda or a closure is sent *by value*, with
  what it refers to (a closure over a built System sends that System: a System and a State
  pickle, see ``State.get_system``);
- instead of ``make``, a model file path (``simtk.io.save_model``): the file is read here and its
  text sent, with the user classes registered by ``simtk.io.register_class``, so the workers need
  no shared file system. A parameter set then names what it changes by path (see
  `apply_parameters`): ``{"/forces/spring.stiffness": 30.0, "/matter/upper/angle": 0.4}``.

Parameters
----------
A parameter set is a dict of keyword arguments for ``make``. ``parameters`` is a list of them, or
a dict of lists, which means the grid of all combinations (`grid`: the last key varies fastest,
``result.grid_shape`` gives the grid's shape for reshaping the member axis).

Failures
--------
A member that raises (in ``make``, in the simulation or in an output) does not stop the others:
it is listed in ``result.failed`` as ``(index, parameters, error text)`` with the traceback, and
its rows in the output arrays are NaN.
"""
from __future__ import annotations

import itertools
import math
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .common.state import State
from .simulation.recording import OutputProbe, _flat
from .simulation.simulation import Simulation

__all__ = ["run", "simulate", "grid", "apply_parameters", "EnsembleResult", "ModelText"]


# ====================================================================== parameter sets
def grid(axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the values in ``axes``, as parameter sets (the last key varies fastest).

    Parameters
    ----------
    axes : mapping of str to sequence
        Each parameter's values.

    Returns
    -------
    list of dict
        ``len = prod(len(v) for v in axes.values())`` parameter sets, in C order of the grid.
    """
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(list(axes[n]) for n in names))]


def _parameter_sets(parameters) -> tuple[list[dict[str, Any]], tuple[int, ...] | None]:
    """(the list of parameter sets, the grid's shape when ``parameters`` is a dict of lists)."""
    if isinstance(parameters, Mapping):
        shape = tuple(len(list(v)) for v in parameters.values())
        return grid(parameters), shape
    sets = list(parameters)
    for i, p in enumerate(sets):
        if not isinstance(p, Mapping):
            raise TypeError(f"ensemble: parameter set {i} is a {type(p).__name__}; give dicts of make()'s keyword "
                            "arguments (or a dict of lists for a grid)")
    return [dict(p) for p in sets], None


# ====================================================================== model files as make
@dataclass(frozen=True)
class ModelText:
    """A model file's text and the user classes it may need: what stands for ``make`` on a worker.

    Built by `run` from a model file path. Calling it with a parameter set loads the model and
    applies the set (`apply_parameters`).

    Parameters
    ----------
    text : str
        The model file's content.
    file : str
        Its name, for error messages.
    classes : dict
        Registered name -> user class (``simtk.io.register_class``) of the classes the text names,
        registered on the worker if missing.
    """

    text: str
    file: str
    classes: dict = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | os.PathLike) -> "ModelText":
        """The text of the model file at ``path`` and the registered user classes it names."""
        from .io import _model_registry
        from .io.model_file import load_model

        file = os.fspath(path)
        load_model(file)  # a bad file fails here, once, rather than in every member
        with open(file, encoding="utf-8") as f:
            text = f.read()
        # only the classes the text names: another registered class may be one that cannot pickle
        classes = {name: spec.cls for name, spec in _model_registry._BY_NAME.items()
                   if spec.user and re.search(rf"(?<![\w.$]){re.escape(name)}(?![\w.$])", text)}
        return cls(text, file, classes)

    def __call__(self, **params: Any) -> tuple[Any, State]:
        from .io import _model_registry
        from .io.model_file import model_from_text, register_class

        for name, klass in self.classes.items():
            if name not in _model_registry._BY_NAME:  # a worker that never imported the registering module
                register_class(klass, name)
        system = model_from_text(self.text, self.file)
        return system, apply_parameters(system, params)


def apply_parameters(system, params: Mapping[str, Any]) -> State:
    """Apply a parameter set named by paths to ``system``; return its default State with the set's values.

    Parameters
    ----------
    system : System
        A System not yet realized for a run (its properties are set before ``realize_topology``).
    params : mapping
        Keys are paths, as a simulation's inputs name them:

        - ``"/forces/spring.stiffness"``: a component's property;
        - ``"/matter/upper/angle"``: a continuous state variable (a q, u or z by path);
        - ``"/osc:k"``: a component's discrete variable declared by name.

    Returns
    -------
    State
        ``system.realize_topology()`` with the state variables and discrete variables set.
    """
    later = []
    for key, value in params.items():
        last = key.rsplit("/", 1)[-1]
        if ":" not in key and "." in last:
            path, prop = key.rsplit(".", 1)
            system.get_component(path).set_property(prop, value)
        else:
            later.append((key, value))
    state = system.realize_topology()
    for key, value in later:  # after the properties: a Topology property makes a new State
        if ":" in key:
            path, name = key.rsplit(":", 1)
            system.get_component(path).set_discrete_variable_value(state, name, value)
        else:
            system.set_state_variable_value(state, key, float(value))
    return state


# ====================================================================== one member
def _resolve(system, spec: str):
    if not isinstance(spec, str) or "|" not in spec:
        raise ValueError(f"ensemble: output {spec!r} is not a '<component path>|<output name>' string")
    path, name = spec.split("|", 1)
    return system.get_component(path).get_output(name)


def simulate(make: Callable[..., tuple[Any, State]], params: Mapping[str, Any], t_final: float,
             outputs: Sequence[str], interval: float | None = None, step_size: float = 0.01,
             accuracy: float = 1e-6) -> dict[str, np.ndarray]:
    """What one member of an ensemble does: build, run to ``t_final``, read the outputs.

    Parameters
    ----------
    make : callable
        ``make(**params)`` returns ``(system, state)``.
    params : mapping
        The keyword arguments for ``make``.
    t_final : float
        The final time (on the driver's tick grid, see `Simulation.run`).
    outputs : sequence of str
        Output paths, ``"<component path>|<output name>"``.
    interval : float, optional
        Record every ``interval`` from the start (an `OutputProbe`); only at ``t_final`` when None.
    step_size : float
        The driver step of the `Simulation`.
    accuracy : float
        The accuracy of its (default, Runge-Kutta-Merson) integrator.

    Returns
    -------
    dict
        ``"time"``: the sample times (``(n_times,)``; a 0-d array ``t_final`` without an interval), and
        each output path: its values flattened to floats, ``(width,)`` at the final time or
        ``(n_times, width)`` at the interval; a scalar output has its width axis dropped.
    """
    system, state = make(**params)
    sim = Simulation(system, state, step_size=step_size, progress=False)
    sim.get_integrator().set_accuracy(accuracy)
    probe = None
    if interval is not None:
        probe = sim.add_output_probe(OutputProbe(list(outputs), interval=interval), name="ensemble_outputs")
    sim.run(t_final)
    final = sim.get_state()
    bound = [_resolve(system, o) for o in outputs]
    system.realize(final, max(o.stage for o in bound))
    last = [_flat(o.get_value(final)) for o in bound]
    out: dict[str, np.ndarray] = {}
    if probe is None:
        out["time"] = np.asarray(final.get_time())
        for spec, v in zip(outputs, last):
            out[spec] = v[0].copy() if len(v) == 1 else v.copy()  # 0-d for a scalar
        return out
    times, values = probe.to_numpy()
    out["time"] = times
    k = 0
    for spec, v in zip(outputs, last):  # the final values give each output's width among the probe's columns
        w = len(v)
        out[spec] = values[:, k] if w == 1 else values[:, k:k + w]
        k += w
    return out


def _members(indices: list[int], make, sets: list[dict], t_final: float, outputs: list[str], interval,
             step_size: float, accuracy: float) -> list[tuple[int, dict | None, str | None]]:
    """A Dask task: a batch of members, each ``(index, results, None)`` or ``(index, None, its traceback)``."""
    done: list[tuple[int, dict | None, str | None]] = []
    for index, params in zip(indices, sets):
        try:
            done.append((index, simulate(make, params, t_final, outputs, interval, step_size, accuracy), None))
        except Exception:  # a member's failure is data for the caller, not a reason to stop the others
            done.append((index, None, traceback.format_exc()))
    return done


# ====================================================================== results
@dataclass
class EnsembleResult:
    """What an ensemble gave: the outputs stacked along a first, member axis.

    Attributes
    ----------
    parameters : list of dict
        The parameter sets, in member order.
    outputs : dict
        Output path -> array ``(n_members, ...)``: ``(n_members,)`` for a scalar output at the final
        time, ``(n_members, width)`` for an array output, ``(n_members, n_times[, width])`` at an
        interval. A failed member's rows are NaN.
    time : numpy.ndarray
        The sample times (``(n_times,)``), or the 0-d final time.
    failed : list of tuple
        ``(index, parameters, error text)`` for every member that raised, in member order.
    grid_shape : tuple of int or None
        The grid's shape when the parameters were given as a dict of lists
        (``result[path].reshape(result.grid_shape + result[path].shape[1:])``).
    wall_seconds : float
        Wall time of the whole ensemble, cluster start included.
    n_workers : int
        The worker threads of the cluster it ran on (a local cluster's: its processes).
    """

    parameters: list[dict[str, Any]]
    outputs: dict[str, np.ndarray]
    time: np.ndarray
    failed: list[tuple[int, dict[str, Any], str]]
    grid_shape: tuple[int, ...] | None = None
    wall_seconds: float = 0.0
    n_workers: int = 0

    def __getitem__(self, path: str) -> np.ndarray:
        return self.outputs[path]

    def __len__(self) -> int:
        return len(self.parameters)

    @property
    def ok(self) -> np.ndarray:
        """Boolean mask ``(n_members,)``: True where the member finished."""
        mask = np.ones(len(self.parameters), dtype=bool)
        mask[[i for i, _p, _e in self.failed]] = False
        return mask

    def to_xarray(self) -> Any:
        """An ``xarray.Dataset`` (needs xarray): one variable per output over ``member`` (and ``time``),
        the parameters as coordinates along ``member`` (those whose values are numbers or strings)."""
        import xarray as xr

        n = len(self.parameters)
        coords: dict[str, Any] = {"member": np.arange(n)}
        if self.time.ndim:
            coords["time"] = self.time
        for key in {k for p in self.parameters for k in p}:
            values = [p.get(key) for p in self.parameters]
            if all(isinstance(v, (int, float, str, np.number)) for v in values):
                coords[key] = ("member", np.asarray(values))
        data = {}
        for path, a in self.outputs.items():
            dims = ["member"] + (["time"] if self.time.ndim else [])
            dims += [f"{path}:component"] * (a.ndim - len(dims))
            data[path] = (dims, a)
        return xr.Dataset(data, coords=coords)

    def __repr__(self) -> str:
        return (f"<EnsembleResult {len(self)} members, {len(self.failed)} failed, outputs "
                f"{list(self.outputs)}, {self.wall_seconds:.3g} s>")


def _stack(n: int, results: dict[int, dict], failed: list) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Stack the members' results along a first axis; NaN rows for failures and mismatched shapes."""
    if not results:
        return {}, np.asarray(np.nan)
    first = results[min(results)]
    for i in sorted(results):  # a member whose shapes differ (another number of samples) cannot be stacked
        r = results[i]
        bad = [k for k in first if k not in r or np.shape(r[k]) != np.shape(first[k])]
        if bad or (first["time"].ndim and not np.array_equal(r["time"], first["time"])):
            failed.append((i, None, f"member {i}: its output shapes or sample times differ from member "
                                    f"{min(results)}'s ({bad or 'time'}), so it cannot be stacked"))
            del results[i]
    out = {}
    for key, v in first.items():
        if key == "time":
            continue
        a = np.full((n,) + np.shape(v), np.nan)
        for i, r in results.items():
            a[i] = r[key]
        out[key] = a
    return out, np.asarray(first["time"])


# ====================================================================== the ensemble
def run(make: Callable[..., tuple[Any, State]] | str | os.PathLike, parameters, t_final: float,
        outputs: Sequence[str], *, interval: float | None = None, client: Any = None, n_workers: int | None = None,
        step_size: float = 0.01, accuracy: float = 1e-6, batch_size: int | None = None,
        progress: bool | None = None) -> EnsembleResult:
    """Run one simulation per parameter set on Dask; return the outputs as arrays indexed by member.

    Parameters
    ----------
    make : callable or path
        ``make(**params)`` returns ``(system, state)``; or a model file path, whose parameter sets
        name what they change by path (`apply_parameters`). See the module doc for what pickles.
    parameters : list of dict, or dict of lists
        The parameter sets; a dict of lists is the grid of all combinations (`grid`).
    t_final : float
        Every member runs from its State's time to ``t_final``.
    outputs : sequence of str
        Output paths, ``"<component path>|<output name>"`` (``"/|kinetic_energy"``, ``"/matter/arm|angle"``).
    interval : float, optional
        Record at this interval (an `OutputProbe`); only at ``t_final`` when None.
    client : None, str or distributed.Client
        None: a local cluster of ``n_workers`` processes, started and closed by this call; a
        scheduler address: connect to it (and disconnect after); a Client: use it as it is.
    n_workers : int, optional
        Worker processes of the local cluster (default: the cores this process may use).
    step_size, accuracy : float
        The `Simulation`'s driver step and its integrator's accuracy (as in `simulate`).
    batch_size : int, optional
        Members per Dask task (default: about a quarter of an equal share per worker thread, so
        that short simulations do not pay Dask's cost per task each, and long ones still balance).
    progress : bool, optional
        A progress bar (tqdm if installed, else a line per tenth) on standard error; by default
        only when standard error is a terminal.

    Returns
    -------
    EnsembleResult
        ``result[path]`` is ``(n_members, ...)``; ``result.failed`` lists the members that raised.
    """
    wall0 = time.perf_counter()
    sets, shape = _parameter_sets(parameters)
    outputs = list(outputs)
    for o in outputs:
        if not isinstance(o, str) or "|" not in o:
            raise ValueError(f"ensemble.run: output {o!r} is not a '<component path>|<output name>' string")
    if isinstance(make, (str, os.PathLike)):
        make = ModelText.read(make)
    elif not callable(make):
        raise TypeError(f"ensemble.run: make must be a callable or a model file path, got {type(make).__name__}")
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as e:  # the optional extra
        raise ImportError("simtk.ensemble.run needs dask.distributed: pip install 'simtk[dask]'") from e

    cluster = own_client = None
    if client is None:
        import logging

        n = n_workers if n_workers is not None else _cores()
        # The cluster's own log only at CRITICAL: what a user needs comes back in the result (a member's
        # error in result.failed, a lost worker as its batch's failure), and at its close distributed logs
        # a traceback (ERROR) when a worker's heartbeat is in flight as the scheduler removes the worker.
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL)
        client = own_client = Client(cluster)
    elif isinstance(client, str):
        client = own_client = Client(client)
    try:
        make_on_cluster = client.scatter(make, broadcast=True) if isinstance(make, ModelText) else make
        workers = sum(client.nthreads().values())
        if batch_size is None:  # a few batches per worker thread: Dask's per-task cost spread, the load balanced
            batch_size = max(1, math.ceil(len(sets) / (4 * max(1, workers))))
        batches = [list(range(a, min(a + batch_size, len(sets)))) for a in range(0, len(sets), batch_size)]
        futures = [client.submit(_members, b, make_on_cluster, [sets[i] for i in b], float(t_final), outputs,
                                 interval, step_size, accuracy, pure=False) for b in batches]
        batch_of = {fut.key: b for fut, b in zip(futures, batches)}
        results: dict[int, dict] = {}
        failed: list[tuple[int, Any, str]] = []
        bar = _Progress(len(sets), progress)
        for fut in as_completed(futures):
            if fut.status == "error":  # the task itself failed (its worker died): each member's error all the same
                exc = fut.exception()
                done = [(i, None, f"{type(exc).__name__}: {exc}") for i in batch_of[fut.key]]
            else:
                done = fut.result()
            for i, r, err in done:
                if err is None:
                    results[i] = r
                else:
                    failed.append((i, sets[i], err))
            bar.update(len(done))
        bar.close()
    finally:
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()
    arrays, times = _stack(len(sets), results, failed)
    failed = sorted(((i, p if p is not None else sets[i], e) for i, p, e in failed), key=lambda f: f[0])
    return EnsembleResult(sets, arrays, times, failed, shape, time.perf_counter() - wall0, workers)


def _cores() -> int:
    """The cores this process may run on (the affinity mask where the OS has one)."""
    sched = getattr(os, "sched_getaffinity", None)
    return len(sched(0)) if sched is not None else (os.cpu_count() or 1)


class _Progress:
    """A progress bar over the members: tqdm when installed, otherwise a line at every tenth."""

    def __init__(self, total: int, show: bool | None):
        self.total, self.done = total, 0
        self.show = sys.stderr.isatty() if show is None else bool(show)
        self._bar: Any = None
        if self.show:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc="ensemble", unit="sim")
            except ImportError:
                pass

    def update(self, n: int = 1) -> None:
        tenth = max(1, math.ceil(self.total / 10))
        before, self.done = self.done, self.done + n
        if self._bar is not None:
            self._bar.update(n)
        elif self.show and (self.done == self.total or self.done // tenth > before // tenth):
            print(f"ensemble: {self.done}/{self.total} done", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
