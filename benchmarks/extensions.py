"""Cost per call of the helpers that users' extension code calls from Python once per evaluation.

A ``Force.Custom`` adds its forces with the matter subsystem's ``add_in_station_force`` and friends, a
custom constraint reads its stations' motion and applies its forces with ``Constraint.Custom.Implementation``'s
helpers, a custom mobilizer or force reads a body's kinematics with ``MobilizedBody``'s getters. Each is one
small operation on 3-vectors, so what it costs is the Python call, its checks and conversions, not the
arithmetic: the table prints, for each helper, the median over ``timeit`` repeats of its cost per call in
microseconds, beside the numpy operations it replaces (timed alike on the same arrays), on a 7-link pin chain
(``_chain.pin_chain``) realized to Acceleration.

Sections of helpers (each a function returning its rows, so that others can be added to ``SECTIONS``):

* ``mobilized_body``  MobilizedBody: find_station_*_in_ground, get_body_*, apply_*;
* ``force``           the matter subsystem's add_in_* (what a Force.Custom's calc_force calls);
* ``constraint``      Constraint.Custom.Implementation's helpers in the ancestor frame (here a moving body),
                      inside an evaluation: with the kinematics the solver sets around the user's method;
* ``constraint_state`` the same helpers called on a realized State, outside an evaluation.

A helper the code under test does not have (an older version) prints "-".

Runs, side by side with a twin or a peer in the same process (``RUNS``; the ratios are the figures):

* ``springs``  the 7-link chain with six springs written as ``Force.Custom`` (through the helpers above)
               against the same springs as ``Force.TwoPointLinearSpring``, per step, RK-Merson at 1e-6 and
               semi-explicit Euler at 1 ms, in the compiled time loop (the Python springs called from it) and
               in the Python loop; the two loops' trajectories are checked equal bitwise; then the springs'
               own ``calc_force`` code alone (called directly at a realized State), the floor of the ratio;
* ``pd``       a PDController at 1 kHz through ``Simulation`` (semi-explicit Euler at the control step)
               against MuJoCo's ``mj_step`` with the same PD law computed in numpy each step (semi-implicit
               Euler), on the 7-link chain and on the UR5 arm of example-robot-data (its URDF loaded by both;
               MuJoCo's copy without meshes), per step; skipped without MuJoCo.

Run from the repository root with simtk importable:
``python benchmarks/extensions.py [--repeat 9] [--section force ...] [--run pd ...]``.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import math
import platform
import re
import statistics
import time
import timeit
from pathlib import Path
from typing import Callable

import numpy as np
from _chain import pin_chain

from simtk import Constraint, Force, Stage
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator, TimeStepper
from simtk.simulation import PDController, Simulation

try:
    import mujoco
except ImportError:  # the PD run's peer; skipped without it
    mujoco = None

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


# ---------------------------------------------------------------------- Python springs against built-in ones
class PythonSpring(Force.Custom.Implementation):
    """Force.TwoPointLinearSpring written in Python through the helpers, as a user writes one."""

    def __init__(self, b1, s1, b2, s2, k: float, x0: float):
        super().__init__()
        self.b1, self.b2 = b1, b2
        self.s1, self.s2 = np.asarray(s1, dtype=float), np.asarray(s2, dtype=float)
        self.k, self.x0 = k, x0
        self.matter = b1.get_matter_subsystem()

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        d = self.b2.find_station_location_in_ground(state, self.s2) - \
            self.b1.find_station_location_in_ground(state, self.s1)
        x = math.sqrt(d @ d)
        f = (self.k * (x - self.x0) / x) * d
        self.matter.add_in_station_force(state, self.b1, self.s1, f, body_forces)
        self.matter.add_in_station_force(state, self.b2, self.s2, -f, body_forces)

    def depends_only_on_positions(self):
        return True


def spring_chain(python: bool):
    """The 7-link chain with six springs between neighbouring links' stations."""
    system = pin_chain(7)
    matter = system.get_matter_subsystem()
    forces = system.get_force_subsystems()[0]
    links = [matter.get_mobilized_body(i) for i in range(1, 8)]
    station = [0.1, -0.25, 0.0]
    for a, b in zip(links[:-1], links[1:]):
        if python:
            Force.Custom(forces, PythonSpring(a, station, b, station, 50.0, 0.4))
        else:
            Force.TwoPointLinearSpring(forces, a, station, b, station, 50.0, 0.4)
    return system


def _merson(system):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    return integ


def _spring_run(python: bool, make, compiled: bool, repeats: int) -> tuple[float, int, np.ndarray]:
    """Best wall time of 1 s simulated, its steps and final y."""
    best, steps, y = math.inf, 0, np.zeros(0)
    for _ in range(repeats):
        system = spring_chain(python)
        state = system.realize_topology()
        state.upd_q()[:] = 0.3
        integ = make(system)
        integ.set_use_compiled_loop(compiled)
        stepper = TimeStepper(system, integ)
        stepper.initialize(state)
        t0 = time.perf_counter()
        stepper.step_to(1.0)
        best = min(best, time.perf_counter() - t0)
        steps, y = integ.get_num_steps_taken(), integ.get_state().get_y().copy()
    return best, steps, y


def run_springs(repeat: int) -> None:
    print("\nsprings: six springs on the 7-link chain, us per step (1 s simulated, best of 3)")
    print(f"  {'integrator':<26s}{'built-in':>10s}{'Python, compiled loop':>23s}{'ratio':>8s}"
          f"{'Python, Python loop':>21s}{'ratio':>8s}")
    for name, make in (("RK-Merson 1e-6", _merson), ("semi-explicit Euler 1 ms",
                                                      lambda s: SemiExplicitEulerIntegrator(s, 1e-3))):
        wb, nb, _ = _spring_run(False, make, True, 3)
        wp, np_, yp = _spring_run(True, make, True, 3)
        wl, nl, yl = _spring_run(True, make, False, 1)
        assert np.array_equal(yp, yl) and np_ == nl, "the compiled and Python loops must agree bitwise"
        b, p, pl = wb / nb * 1e6, wp / np_ * 1e6, wl / nl * 1e6
        print(f"  {name:<26s}{b:10.2f}{p:23.2f}{p / b:8.1f}{pl:21.2f}{pl / b:8.1f}")
        if name.startswith("semi"):
            semi_builtin = b
    user = _user_code_us(repeat)
    print("  (target: the Python springs at most 10x their built-in twin per step)")
    print(f"  the six springs' own calc_force code alone, at a realized State: {user:.2f} us per evaluation, "
          f"{user / semi_builtin:.1f}x the built-in semi-explicit step (one force evaluation per step): the floor "
          "of the ratio whatever the loop costs")


def _user_code_us(repeat: int) -> float:
    """Cost of one evaluation of the six PythonSprings' calc_force, called directly (no loop, no realization)."""
    system = spring_chain(True)
    state = system.realize_topology()
    state.upd_q()[:] = 0.3
    system.realize(state, Stage.Acceleration)
    forces = system.get_force_subsystems()[0]
    springs = [f.get_implementation() for f in (forces.get_force(i) for i in range(forces.get_num_forces()))
               if isinstance(f, Force.Custom)]
    body_forces = np.zeros((system.get_matter_subsystem().get_num_bodies(), 2, 3))
    particle_forces, mobility_forces = np.zeros((0, 3)), np.zeros(state.get_nu())

    def evaluate():
        for spring in springs:
            spring.calc_force(state, body_forces, particle_forces, mobility_forces)
    return per_call_us(evaluate, repeat)


# ---------------------------------------------------------------------- a PD controller at 1 kHz against MuJoCo
def _ur5_urdf() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"))
    return path if path.exists() else None


def _mujoco_chain(n: int, h: float):
    """The 7-link chain in MJCF: hinges about z, the links' mass properties, gravity, nothing else."""
    body = ""
    for i in reversed(range(n)):
        pos = "0 -0.5 0" if i else "0 0 0"
        body = (f'<body name="link{i}" pos="{pos}"><joint type="hinge" axis="0 0 1"/>'
                f'<inertial pos="0 -0.25 0" mass="1" diaginertia="0.02 0.001 0.02"/>{body}</body>')
    return mujoco.MjModel.from_xml_string(f'<mujoco><option timestep="{h:g}" integrator="Euler" '
                                          f'gravity="0 -9.81 0"/><worldbody>{body}</worldbody></mujoco>')


def _pd_simtk(system, paths: list[str], kp: float, kd: float, targets: np.ndarray, h: float, t_final: float,
              state=None) -> tuple[float, np.ndarray]:
    """Best of 3 wall times of a Simulation with a PDController, and the final q."""
    best, q = math.inf, np.zeros(0)
    for _ in range(3):
        s = system.realize_topology() if state is None else state.copy()
        sim = Simulation(system, s, integrator=SemiExplicitEulerIntegrator(system, h), step_size=h)
        sim.add_controller(PDController({p: (kp, kd) for p in paths}, dict(zip(paths, map(float, targets)))))
        t0 = time.perf_counter()
        sim.run(t_final)
        best = min(best, time.perf_counter() - t0)
        q = sim.get_state().get_q().copy()
    return best, q


def _pd_mujoco(m, kp: float, kd: float, targets: np.ndarray, steps: int) -> tuple[float, np.ndarray]:
    best, q = math.inf, np.zeros(0)
    for _ in range(3):
        d = mujoco.MjData(m)
        t0 = time.perf_counter()
        for _ in range(steps):
            d.qfrc_applied[:] = kp * (targets - d.qpos) + kd * (0.0 - d.qvel)
            mujoco.mj_step(m, d)
        best = min(best, time.perf_counter() - t0)
        q = d.qpos.copy()
    return best, q


def run_pd(repeat: int) -> None:
    h, t_final = 1e-3, 2.0
    steps = round(t_final / h)
    print(f"\npd: PDController at 1 kHz through Simulation against MuJoCo with the same PD law, us per step "
          f"({steps} steps, best of 3)")
    if mujoco is None:
        print("  MuJoCo is not installed: skipped")
        return
    print(f"  {'model':<22s}{'simtk':>9s}{'MuJoCo':>9s}{'ratio':>8s}   final q differ by")
    system = pin_chain(7)
    paths = [f"/matter/link{i}/angle" for i in range(7)]
    targets = np.full(7, 0.2)
    w, q = _pd_simtk(system, paths, 50.0, 5.0, targets, h, t_final)
    wm, qm = _pd_mujoco(_mujoco_chain(7, h), 50.0, 5.0, targets, steps)
    print(f"  {'7-link chain':<22s}{w / steps * 1e6:9.2f}{wm / steps * 1e6:9.2f}{w / wm:8.2f}   "
          f"{np.abs(q - qm).max():.2e}")
    urdf = _ur5_urdf()
    if urdf is None:
        print("  UR5: example-robot-data is not installed: skipped")
    else:
        from simtk.io import load_urdf
        model = load_urdf(str(urdf))
        state = model.system.realize_topology()
        paths = [p for p in state._names if p.endswith("/angle")]
        targets = np.linspace(-0.5, 0.5, len(paths))
        w, q = _pd_simtk(model.system, paths, 100.0, 5.0, targets, h, t_final, state)
        xml = re.sub(r"<(visual|collision)>.*?</\1>", "", urdf.read_text(), flags=re.S)
        m = mujoco.MjModel.from_xml_string(xml)
        m.opt.timestep, m.opt.integrator = h, mujoco.mjtIntegrator.mjINT_EULER
        wm, qm = _pd_mujoco(m, 100.0, 5.0, targets, steps)
        print(f"  {'UR5 (URDF)':<22s}{w / steps * 1e6:9.2f}{wm / steps * 1e6:9.2f}{w / wm:8.2f}   "
              f"{np.abs(q - qm).max():.2e} (the two loaders' models, joint limits and damping as each reads them)")
    print("  (target: at most 1.5x MuJoCo's time per step)")


RUNS: dict[str, Callable[[int], None]] = {"springs": run_springs, "pd": run_pd}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timeit repeats (the median is kept)")
    parser.add_argument("--section", action="append", choices=sorted(SECTIONS),
                        help="a section of helpers to run (repeatable; default: all, unless --run is given)")
    parser.add_argument("--run", action="append", choices=sorted(RUNS),
                        help="a run against a twin or peer (repeatable; default: all, unless --section is given)")
    args = parser.parse_args()
    sections = args.section or ([] if args.run else list(SECTIONS))
    runs = args.run or ([] if args.section else list(RUNS))
    if sections:
        print(f"Extension helpers: us per call, median of {args.repeat} timeit repeats; 7-link pin chain realized "
              f"to Acceleration; Python {platform.python_version()}, numpy {np.__version__}")
    for name in sections:
        print_table(name, SECTIONS[name](), args.repeat)
    for name in runs:
        RUNS[name](args.repeat)


if __name__ == "__main__":
    main()
