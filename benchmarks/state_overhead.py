"""Cost of the staged framework itself: set_q followed by realize(state, Stage.Acceleration).

Three kinds of subsystem, in Systems of 1 and of 10:

* ``trivial``   allocates one q and one u; its Velocity hook writes qdot = u, its Acceleration hook
                writes udot = -q (the least a subsystem with dynamics does);
* ``no-hooks``  allocates one q and one u but overrides no runtime hook (realizing only advances stages);
* ``bare``      a Subsystem that overrides nothing at all (no variables; set_q of an empty vector).

Each figure is the best of several ``timeit`` repeats, in microseconds per set_q + realize, and per
subsystem, with the marginal cost of each subsystem beyond the first.

Then the cost of naming: on a 7-link pin chain, one coordinate written and read by index
(``state.upd_q()[i] = v``, ``state.get_q()[i]``) against by path
(``system.set_state_variable_value(state, "/matter/link3/angle", v)``), each followed by nothing
and by a realization to Acceleration, as ratios by-name / by-index. Run with
``python benchmarks/state_overhead.py``.
"""
from __future__ import annotations

import argparse
import platform
import timeit

import numpy as np
from _chain import pin_chain

from simtk import Stage, Subsystem, System


class Trivial(Subsystem):
    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [0.0])
        self.allocate_u(state, [0.0])

    def realize_subsystem_velocity_impl(self, state):
        self.upd_qdot(state)[0] = self.get_u(state)[0]

    def realize_subsystem_acceleration_impl(self, state):
        self.upd_udot(state)[0] = -self.get_q(state)[0]


class NoHooks(Subsystem):
    def realize_subsystem_topology_impl(self, state):
        self.allocate_q(state, [0.0])
        self.allocate_u(state, [0.0])


class Bare(Subsystem):
    pass


def measure(kind: type, n: int, repeat: int) -> float:
    """Best time in seconds of one set_q + realize(Acceleration) for a System of ``n`` ``kind``."""
    system = System(f"{n} x {kind.__name__}")
    for i in range(n):
        kind(system, name=f"s{i}")
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)
    q = np.linspace(0.1, 1.0, state.get_nq())

    def step():
        state.set_q(q)
        system.realize(state, Stage.Acceleration)

    timer = timeit.Timer(step)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit repeats (the best is kept)")
    args = parser.parse_args()
    print(f"set_q + realize(state, Stage.Acceleration); best of {args.repeat}; "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"{'subsystems':<12s}{'n':>4s}{'us per call':>14s}{'us per subsystem':>19s}{'us per extra one':>19s}")
    for kind, label in ((Trivial, "trivial"), (NoHooks, "no-hooks"), (Bare, "bare")):
        t1 = measure(kind, 1, args.repeat) * 1e6
        t10 = measure(kind, 10, args.repeat) * 1e6
        print(f"{label:<12s}{1:>4d}{t1:>14.2f}{t1:>19.2f}")
        # the marginal cost of one more subsystem, free of the fixed per-call cost
        print(f"{label:<12s}{10:>4d}{t10:>14.2f}{t10 / 10:>19.2f}{(t10 - t1) / 9:>19.2f}")
    naming_costs(args.repeat)


def _best(fn, repeat: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def naming_costs(repeat: int) -> None:
    """By-path against by-index access on a 7-link pin chain, alone and with a realization."""
    system = pin_chain(7)
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)
    i, path = 3, "/matter/link3/angle"

    def by_index_write():
        state.upd_q()[i] = 0.3

    def by_name_write():
        system.set_state_variable_value(state, path, 0.3)

    def by_index_read():
        return state.get_q()[i]

    def by_name_read():
        return system.get_state_variable_value(state, path)

    def by_index_realize():
        state.upd_q()[i] = 0.3
        system.realize(state, Stage.Acceleration)

    def by_name_realize():
        system.set_state_variable_value(state, path, 0.3)
        system.realize(state, Stage.Acceleration)

    print("\n7-link pin chain: one coordinate by index against by path (us; ratio by-name / by-index)")
    for label, a, b in (("write", by_index_write, by_name_write), ("read", by_index_read, by_name_read),
                        ("write + realize(Acceleration)", by_index_realize, by_name_realize)):
        ta, tb = _best(a, repeat) * 1e6, _best(b, repeat) * 1e6
        print(f"  {label:<32s} index {ta:7.2f}   path {tb:7.2f}   ratio {tb / ta:5.2f}")


if __name__ == "__main__":
    main()
