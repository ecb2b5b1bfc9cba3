"""Cost per call of the helpers that users' extension code calls from Python once per evaluation.

A ``Force.Custom`` adds its forces with the matter subsystem's ``add_in_station_force`` and friends, a
custom constraint reads its stations' motion and applies its forces with ``Constraint.Custom.Implementation``'s
helpers, a custom mobilizer or force reads a body's kinematics with ``MobilizedBody``'s getters. Each is one
small operation on 3-vectors, so what it costs is the Python call, its checks and conversions, not the
arithmetic: the table prints, for each helper, the median over ``timeit`` repeats of its cost per call in
microseconds, beside the numpy operations it replaces (timed alike on the same arrays), on a 7-link pin chain
(``_chain.pin_chain``) realized to Acceleration.

Sections (each a function returning its rows, so that others can be added to ``SECTIONS``):

* ``mobilized_body``  MobilizedBody: find_station_*_in_ground, get_body_*, apply_*;
* ``force``           the matter subsystem's add_in_* (what a Force.Custom's calc_force calls);
* ``constraint``      Constraint.Custom.Implementation's helpers in the ancestor frame (here a moving body),
                      inside an evaluation: with the kinematics the solver sets around the user's method;
* ``constraint_state`` the same helpers called on a realized State, outside an evaluation.

A helper the code under test does not have (an older version) prints "-". Run from the repository root with
simtk importable: ``python benchmarks/extensions.py [--repeat 9] [--section force ...]``.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import timeit
from typing import Callable

import numpy as np
from _chain import pin_chain

from simtk import Constraint, Stage

#: A row: (helper, its call or None when missing, numpy operations it replaces, their call)
Row = tuple[str, "Callable[[], object] | None", str, Callable[[], object]]


def per_call_us(fn: Callable[[], object], repeat: int) -> float:
    """Median over ``repeat`` timeit repeats of the cost of one call of ``fn``, in microseconds."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return statistics.median(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def _method(obj, name: str, *args) -> Callable[[], object] | None:
    """``lambda: obj.name(*args)``, or None when ``obj`` has no such helper."""
    f = getattr(obj, name, None)
    return None if f is None else (lambda: f(*args))


def _realized_chain():
    system = pin_chain(7)
    matter = system.get_matter_subsystem()
    state = system.realize_topology()
    rng = np.random.default_rng(0)
    matter.upd_q(state)[:] = rng.uniform(-1, 1, 7)
    matter.upd_u(state)[:] = rng.uniform(-1, 1, 7)
    system.realize(state, Stage.Acceleration)
    return system, matter, state


S = np.array([0.1, -0.25, 0.05])  # a station p_BS
F3 = np.array([1.0, -2.0, 0.5])  # a force, a torque


def mobilized_body() -> list[Row]:
    """MobilizedBody's per-body helpers on link 5."""
    system, matter, state = _realized_chain()
    mb = matter.get_mobilized_body(5)
    R, p = matter._body_pose(state, 5)
    V, A = matter._body_velocity(state, 5), matter._body_acceleration(state, 5)
    w, v = V
    b, a = A
    bf, mf = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(state.get_nu())
    F6 = np.array([F3, F3])

    def numpy_station_force():
        bf[5, 0] += np.cross(R @ S, F3)
        bf[5, 1] += F3

    def numpy_acceleration():
        r = R @ S
        return a + np.cross(b, r) + np.cross(w, np.cross(w, r))

    return [
        ("find_station_location_in_ground", _method(mb, "find_station_location_in_ground", state, S),
         "p + R @ s", lambda: p + R @ S),
        ("find_station_velocity_in_ground", _method(mb, "find_station_velocity_in_ground", state, S),
         "v + np.cross(w, R @ s)", lambda: v + np.cross(w, R @ S)),
        ("find_station_acceleration_in_ground", _method(mb, "find_station_acceleration_in_ground", state, S),
         "a + b x r + w x (w x r) (np.cross)", numpy_acceleration),
        ("get_body_transform", _method(mb, "get_body_transform", state), "R.copy(), p.copy()",
         lambda: (R.copy(), p.copy())),
        ("get_body_origin_location", _method(mb, "get_body_origin_location", state), "p_GB[i] (a view)",
         lambda: matter._cache(state).ws.p_GB[5]),
        ("get_body_velocity", _method(mb, "get_body_velocity", state), "V_GB[i] (a view)",
         lambda: matter._cache(state).ws.V_GB[5]),
        ("get_body_acceleration", _method(mb, "get_body_acceleration", state), "A_GB[i] (a view)",
         lambda: matter._cache(state).A_GB[5]),
        ("apply_force_to_body_point", _method(mb, "apply_force_to_body_point", state, S, F3, bf),
         "F[i, 0] += np.cross(R @ s, f); F[i, 1] += f", numpy_station_force),
        ("apply_body_torque", _method(mb, "apply_body_torque", state, F3, bf), "F[i, 0] += t",
         lambda: bf[5, 0].__iadd__(F3)),
        ("apply_body_force", _method(mb, "apply_body_force", state, F6, bf), "F[i] += F6",
         lambda: bf[5].__iadd__(F6)),
        ("apply_one_mobility_force", _method(mb, "apply_one_mobility_force", state, 0, 1.5, mf), "f[k] += x",
         lambda: mf.__setitem__(4, mf[4] + 1.5)),
    ]


def force() -> list[Row]:
    """The matter subsystem's helpers for a Force.Custom, on link 5."""
    system, matter, state = _realized_chain()
    mb = matter.get_mobilized_body(5)
    R, _ = matter._body_pose(state, 5)
    bf, mf = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(state.get_nu())

    def numpy_station_force():
        bf[5, 0] += np.cross(R @ S, F3)
        bf[5, 1] += F3

    return [
        ("matter.add_in_station_force", _method(matter, "add_in_station_force", state, mb, S, F3, bf),
         "F[i, 0] += np.cross(R @ s, f); F[i, 1] += f", numpy_station_force),
        ("matter.add_in_body_torque", _method(matter, "add_in_body_torque", state, mb, F3, bf), "F[i, 0] += t",
         lambda: bf[5, 0].__iadd__(F3)),
        ("matter.add_in_mobility_force", _method(matter, "add_in_mobility_force", state, mb, 0, 1.5, mf),
         "f[k] += x", lambda: mf.__setitem__(4, mf[4] + 1.5)),
    ]


class _Reader(Constraint.Custom.Implementation):
    """A constraint without equations: registers links 4 and 6 (ancestor link 4) and link 2's mobilizer."""

    def __init__(self, matter):
        super().__init__(matter, 0, 0, 0)
        self.a = self.add_constrained_body(matter.get_mobilized_body(4))
        self.b = self.add_constrained_body(matter.get_mobilized_body(6))
        self.m = self.add_constrained_mobilizer(matter.get_mobilized_body(2))


def _constraint_rows(inside: bool) -> list[Row]:
    """Constraint.Custom.Implementation's helpers for constrained link 6 in its ancestor link 4, inside an
    evaluation (the kinematics set, as the solver sets them around each of the user's methods) or not."""
    from simtk.multibody.constraints._solver import kinematics_of_state

    system = pin_chain(7)
    matter = system.get_matter_subsystem()
    impl = _Reader(matter)
    Constraint.Custom(impl)
    state = system.realize_topology()
    rng = np.random.default_rng(0)
    matter.upd_q(state)[:] = rng.uniform(-1, 1, 7)
    matter.upd_u(state)[:] = rng.uniform(-1, 1, 7)
    system.realize(state, Stage.Acceleration)
    kin = kinematics_of_state(matter, state)
    if inside:
        impl._kin = kin  # (left set: the rows are timed after this returns)
    R, p, V, A = kin.R, kin.p, kin.V, kin.A
    b, a = 7, 5  # the bodies' indices (links 6 and 4)
    bfa, mfa = np.zeros((2, 2, 3)), np.zeros(1)

    def numpy_location():
        return R[a].T @ (p[b] + R[b] @ S - p[a])

    def numpy_velocity():
        r_b = R[b] @ S
        return R[a].T @ (V[b, 1] + np.cross(V[b, 0], r_b) - V[a, 1] - np.cross(V[a, 0], p[b] + r_b - p[a]))

    def numpy_acceleration():
        r_b = R[b] @ S
        v_S = V[b, 1] + np.cross(V[b, 0], r_b)
        a_S = A[b, 1] + np.cross(A[b, 0], r_b) + np.cross(V[b, 0], np.cross(V[b, 0], r_b))
        r = p[b] + r_b - p[a]
        w = V[a, 0]
        return R[a].T @ (a_S - A[a, 1] - np.cross(A[a, 0], r) - 2.0 * np.cross(w, v_S - V[a, 1])
                         + np.cross(w, np.cross(w, r)))

    def numpy_station_force():
        bfa[1, 0] += np.cross(R[a].T @ (R[b] @ S), F3)
        bfa[1, 1] += F3

    def numpy_body_velocity():
        out = np.empty((2, 3))
        out[0] = R[a].T @ (V[b, 0] - V[a, 0])
        out[1] = R[a].T @ (V[b, 1] - V[a, 1] - np.cross(V[a, 0], p[b] - p[a]))
        return out

    return [
        ("get_station_location", _method(impl, "get_station_location", state, impl.b, S),
         "R_AG @ (p_B + R_GB @ s - p_A)", numpy_location),
        ("get_station_velocity", _method(impl, "get_station_velocity", state, impl.b, S),
         "R_AG @ (v_S - v_A - w_A x r) (np.cross)", numpy_velocity),
        ("get_station_acceleration", _method(impl, "get_station_acceleration", state, impl.b, S),
         "R_AG @ (a_S - a_A - b_A x r - 2 w_A x v + w_A x (w_A x r))", numpy_acceleration),
        ("get_body_origin_location", _method(impl, "get_body_origin_location", state, impl.b),
         "R_AG @ (p_B - p_A)", lambda: R[a].T @ (p[b] - p[a])),
        ("get_body_transform", _method(impl, "get_body_transform", state, impl.b),
         "R_AG @ R_GB, R_AG @ (p_B - p_A)", lambda: (R[a].T @ R[b], R[a].T @ (p[b] - p[a]))),
        ("get_body_velocity", _method(impl, "get_body_velocity", state, impl.b), "R_AG @ (...) x 2 (np.cross)",
         numpy_body_velocity),
        ("add_in_station_force", _method(impl, "add_in_station_force", state, impl.b, S, F3, bfa),
         "F[cb, 0] += np.cross(R_AG @ (R_GB @ s), f); F[cb, 1] += f", numpy_station_force),
        ("add_in_body_torque", _method(impl, "add_in_body_torque", state, impl.b, F3, bfa), "F[cb, 0] += t",
         lambda: bfa[1, 0].__iadd__(F3)),
        ("add_in_one_mobility_force", _method(impl, "add_in_one_mobility_force", state, impl.m, 0, 1.5, mfa),
         "f[k] += x", lambda: mfa.__setitem__(0, mfa[0] + 1.5)),
    ]


def constraint() -> list[Row]:
    """The Custom constraint's helpers as its methods call them, inside an evaluation."""
    return _constraint_rows(inside=True)


def constraint_state() -> list[Row]:
    """The Custom constraint's helpers called on a realized State."""
    return _constraint_rows(inside=False)


SECTIONS: dict[str, Callable[[], list[Row]]] = {
    "mobilized_body": mobilized_body,
    "force": force,
    "constraint": constraint,
    "constraint_state": constraint_state,
}


def print_table(title: str, rows: list[Row], repeat: int) -> None:
    """The section's table: helper, its us per call, the numpy operations it replaces and theirs."""
    print(f"\n{title}")
    print(f"  {'helper':<44s}{'us/call':>9s}   {'numpy it replaces':<58s}{'us':>7s}")
    for name, call, numpy_text, numpy_call in rows:
        t = f"{per_call_us(call, repeat):9.2f}" if call is not None else f"{'-':>9s}"
        tn = f"{per_call_us(numpy_call, repeat):7.2f}" if numpy_text else ""
        print(f"  {name:<44s}{t}   {numpy_text:<58s}{tn}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timeit repeats (the median is kept)")
    parser.add_argument("--section", action="append", choices=sorted(SECTIONS),
                        help="a section to run (repeatable; default: all)")
    args = parser.parse_args()
    print(f"Extension helpers: us per call, median of {args.repeat} timeit repeats; 7-link pin chain realized "
          f"to Acceleration; Python {platform.python_version()}, numpy {np.__version__}")
    for name in args.section or list(SECTIONS):
        print_table(name, SECTIONS[name](), args.repeat)


if __name__ == "__main__":
    main()
