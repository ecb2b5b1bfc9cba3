"""Plots of recorded time series and phase portraits with matplotlib (the ``[plot]`` extra, imported here only)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["time_series", "phase_portrait"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # an optional extra
        raise ImportError("simtk.plot needs matplotlib: pip install 'simtk[plot]'") from exc
    return plt


def _series(source, columns):
    if hasattr(source, "to_numpy") and hasattr(source, "columns"):
        t, values = source.to_numpy()
        names = list(source.columns)
    else:
        t, values, names = source
        values = np.asarray(values, dtype=float).reshape(len(t), -1)
        names = list(names)
    if columns is not None:
        idx = [names.index(c) for c in columns]
        values, names = values[:, idx], [names[i] for i in idx]
    return np.asarray(t), values, names


def time_series(source, columns: Sequence[str] | None = None, ax=None, path=None):
    """Plot columns against time. ``source``: an OutputProbe or ``(t, values, names)``. Returns the Figure;
    with ``path``, also saves it (PNG, SVG, PDF by the file name)."""
    plt = _pyplot()
    t, values, names = _series(source, columns)
    fig = ax.figure if ax is not None else plt.figure(figsize=(7, 4))
    ax = ax if ax is not None else fig.add_subplot(1, 1, 1)
    for k, name in enumerate(names):
        ax.plot(t, values[:, k], label=name)
    ax.set_xlabel("time")
    if len(names) <= 10:
        ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    if path is not None:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    return fig


def phase_portrait(source, x: str, y: str, ax=None, path=None):
    """Plot column ``y`` against column ``x`` (a phase portrait); returns the Figure."""
    plt = _pyplot()
    _, values, names = _series(source, [x, y])
    fig = ax.figure if ax is not None else plt.figure(figsize=(5, 5))
    ax = ax if ax is not None else fig.add_subplot(1, 1, 1)
    ax.plot(values[:, 0], values[:, 1])
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.grid(True, alpha=0.3)
    if path is not None:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    return fig
