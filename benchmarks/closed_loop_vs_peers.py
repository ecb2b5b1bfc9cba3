"""A closed kinematic loop simulated for 1 s: simtk's compiled and Python time loops beside OpenSim and MuJoCo.

Model: the n-link pin chain of ``_chain.pin_chain`` (links of 0.5 m and 1 kg, Pin joints about z,
gravity [0, -9.81, 0]) whose tip (station [0, -0.5, 0] of the last link) is held by a ball-and-socket
constraint at the Ground point where it is at the start: n = 3 is a four-bar linkage. The start
state is q from a seeded uniform draw in [-0.5, 0.5] rad, u = 0 (closed at the start, so nothing is
assembled). Each peer builds the same model with its own API:

==========  ============================================================================================
simtk       ``Constraint.Ball(Ground, p, link[n-1], [0, -0.5, 0])``; the compiled loop solves and projects
            it in its steps (``core/loop_constraints.pxi``), the Python loop
            (``set_use_compiled_loop(False)``) does the same arithmetic in Python calls
OpenSim     ``PointConstraint`` (Simbody's Ball constraint) with its ``Manager`` (RK-Merson at the same
            accuracy); OpenSim projects onto the constraints after every step, as simtk does
MuJoCo      an ``equality/connect`` between a site on the last link and a site on the world, Euler at
            dt = 1e-3 (its constraints are soft: the tip drifts by what the solver's impedance allows;
            the closure error at the end is printed beside the time)
==========  ============================================================================================

A second part drives the same loops: the joint j whose start angle is the smallest has its angle
prescribed as q_j(t) = a sin(pi t + p), a = max(0.2, 1.2 |q_j(0)|), p such that q_j(0) is the start
angle (simtk ``Motion.Sinusoid`` at Position level, whose target the compiled loop evaluates at each
stage's time; OpenSim a prescribed Coordinate with ``Sine(a, pi, p, 0)``, Simbody's PrescribedMotion
constraint). MuJoCo has no prescribed joint motion, so it sits this part out. The start u (zero)
does not meet the drive's speed: simtk's projection moves it onto the constraints once, before the
runs, and every run starts from that State (OpenSim's own projection of u = 0 takes another metric,
Simbody's unit u weights where simtk's is the mass matrix, and would start another trajectory).

Timed (wall time, ``time.perf_counter``, best of ``--repeat``): simtk ``initialize`` + ``step_to(1)``,
OpenSim ``Manager.initialize`` + ``integrate(1)``, MuJoCo a Python loop of 1000 ``mj_step``. The
final q of every run is compared with a reference (simtk's RK-Merson at accuracy 1e-10), and the
closure error |p_tip - p| at the end is printed.

Run: ``python benchmarks/closed_loop_vs_peers.py [--quick] [--repeat R]``. Peers that are not installed
are skipped with a line saying so (``pip install -e ".[crosscheck]"`` installs them).
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from _chain import pin_chain
from simulation_vs_peers import COM, DT, I_C, LINK, MASS, N_FIXED, T_FINAL, opensim_chain

import simtk
from simtk import Constraint, Motion, Stage
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator

try:
    import mujoco
except ImportError:  # a missing peer is skipped, not an error
    mujoco = None
try:
    import opensim as osim
except ImportError:
    osim = None

TIP = np.array([0.0, -LINK, 0.0])


def initial_q(n: int) -> np.ndarray:
    return np.random.default_rng(777 + n).uniform(-0.5, 0.5, n)


def tip_in_ground(q: np.ndarray) -> np.ndarray:
    """Where the tip station is for pin angles q (planar forward kinematics of the chain)."""
    angle, p = 0.0, np.zeros(3)
    for i, qi in enumerate(q):
        angle += qi
        if i + 1 < len(q):
            p += np.array([np.sin(angle), -np.cos(angle), 0.0]) * LINK
    return p + np.array([np.sin(angle), -np.cos(angle), 0.0]) * LINK


# ---------------------------------------------------------------------- the models
class Loop:
    def __init__(self, n: int, driven: bool = False):
        self.n, self.q0 = n, initial_q(n)
        self.anchor = tip_in_ground(self.q0)
        self.system = pin_chain(n)
        matter = self.system.get_matter_subsystem()
        self.tip_body = matter.get_mobilized_body(n)
        Constraint.Ball(matter.ground, self.anchor, self.tip_body, TIP)
        self.drive = None
        if driven:  # (joint, a, w, p): q_j(t) = a sin(w t + p), through q_j(0)
            j = int(np.argmin(np.abs(self.q0)))
            a = max(0.2, 1.2 * abs(float(self.q0[j])))
            self.drive = (j, a, np.pi, float(np.arcsin(self.q0[j] / a)))
            Motion.Sinusoid(matter.get_mobilized_body(j + 1), Motion.Level.Position, *self.drive[1:])
        self.state = self.system.realize_topology()
        self.state.set_q(self.q0)
        self.system.realize(self.state, Stage.Instance)  # the workspace, built once (as MjData is)
        if driven:
            self.system.project(self.state, 1e-12)  # u onto the drive's speed and the loop's velocity constraint
        self.system.realize(self.state, Stage.Position)
        assert np.abs(self.state.get_q_err()).max() < 1e-12  # closed at the start
        self.mj = mujoco_loop_model(n, self.q0, self.anchor) if mujoco and not driven else None
        self.osim = opensim_loop_model(n, self.q0, self.anchor, self.drive) if osim else None

    def closure(self, q: np.ndarray) -> float:
        return float(np.linalg.norm(tip_in_ground(q) - self.anchor))

    def simtk(self, make, compiled: bool):
        integ = make(self.system)
        integ.set_use_compiled_loop(compiled)
        t0 = time.perf_counter()
        integ.initialize(self.state)
        integ.step_to(T_FINAL)
        wall = time.perf_counter() - t0
        assert integ.get_time() == T_FINAL
        assert integ.describe_fast_path().startswith("compiled" if compiled else "Python"), integ.describe_fast_path()
        return wall, np.array(integ.get_state().get_q()), integ.get_num_steps_taken()

    def mujoco_run(self):
        m = self.mj
        d = mujoco.MjData(m)
        d.qpos[:] = self.q0
        step = mujoco.mj_step
        t0 = time.perf_counter()
        for _ in range(N_FIXED):
            step(m, d)
        wall = time.perf_counter() - t0
        return wall, d.qpos.copy(), N_FIXED

    def opensim_run(self, accuracy: float):
        model, state, coords = self.osim
        manager = osim.Manager(model)
        manager.setIntegratorMethod(osim.Manager.IntegratorMethod_RungeKuttaMerson)
        manager.setIntegratorAccuracy(accuracy)
        manager.setWriteToStorage(False)
        manager.setRecordStatesTrajectory(False)
        s = osim.State(state)
        s.setTime(0.0)
        for c, q, u in zip(coords, self.state.get_q(), self.state.get_u()):  # simtk's start (see the head)
            c.setValue(s, float(q), False)
            c.setSpeedValue(s, float(u))
        t0 = time.perf_counter()
        manager.initialize(s)
        end = manager.integrate(T_FINAL)
        wall = time.perf_counter() - t0
        return wall, np.array([c.getValue(end) for c in coords]), None


def mujoco_loop_model(n: int, q0: np.ndarray, anchor: np.ndarray):
    """The chain in MJCF with a site at the tip of the last link and one at the anchor on the world,
    held together by ``equality/connect``; no geoms, no contact, no damping."""
    body = f'<site name="tip" pos="{" ".join(f"{c:g}" for c in TIP)}"/>'
    for i in reversed(range(n)):
        pos = f"0 {-LINK:g} 0" if i else "0 0 0"
        body = (f'<body name="link{i}" pos="{pos}"><joint type="hinge" axis="0 0 1"/>'
                f'<inertial pos="{" ".join(f"{c:g}" for c in COM)}" mass="{MASS:g}" '
                f'diaginertia="{" ".join(f"{c:g}" for c in I_C)}"/>{body}</body>')
    xml = (f'<mujoco><option timestep="{DT:g}" integrator="Euler" gravity="0 -9.81 0">'
           '<flag contact="disable"/></option><worldbody>'
           f'<site name="anchor" pos="{" ".join(f"{c:.17g}" for c in anchor)}"/>{body}</worldbody>'
           '<equality><connect site1="tip" site2="anchor"/></equality></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.nv == n and m.neq == 1
    return m


def opensim_loop_model(n: int, q0: np.ndarray, anchor: np.ndarray, drive=None):
    """simulation_vs_peers' OpenSim chain with the tip held at the anchor by a PointConstraint, and
    joint j's coordinate prescribed as a sin(w t + p) when ``drive`` = (j, a, w, p)."""
    def close(model, tip_body):
        model.addConstraint(osim.PointConstraint(model.getGround(), osim.Vec3(*anchor), tip_body, osim.Vec3(*TIP)))
        if drive is not None:
            j, a, w, p = drive
            coord = osim.PinJoint.safeDownCast(model.getJointSet().get(f"pin{j}")).updCoordinate()
            coord.setPrescribedFunction(osim.Sine(a, w, p, 0.0))
            coord.setDefaultIsPrescribed(True)

    model, state, coords = opensim_chain(n, q0, close)
    q = np.array([c.getValue(state) for c in coords])
    assert np.allclose(q, q0, atol=1e-9), "OpenSim assembled the loop away from the start pose"
    return model, state, coords


def merson(accuracy: float):
    def make(system):
        integ = RungeKuttaMersonIntegrator(system)
        integ.set_accuracy(accuracy)
        return integ
    return make


def euler(system):
    return SemiExplicitEulerIntegrator(system, DT)


def best_of(runs: dict, repeat: int) -> dict:
    """Each run's (best wall time, q, steps), the repeats interleaved between runs."""
    out: dict = {}
    for _ in range(repeat):
        for key, run in runs.items():
            wall, q, steps = run()
            if key not in out or wall < out[key][0]:
                out[key] = (wall, q, steps)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 3 only, fewer repeats")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sizes = [3] if args.quick else [3, 7, 30]
    if osim:
        osim.Logger.setLevelString("Warn")  # the Manager's per-run report
    repeat = 2 if args.quick else args.repeat
    print(f"Python {platform.python_version()}, simtk {simtk.__version__}, numpy {np.__version__}, "
          f"MuJoCo {mujoco.__version__ if mujoco else 'not installed'}, "
          f"OpenSim {osim.__version__ if osim else 'not installed'}")
    for driven in (False, True):
        if driven:
            print("\nthe same loops with the joint of the smallest start angle driven along a sinusoid (Motion.Sinusoid; "
                  "OpenSim: a prescribed Coordinate); |drive| is that joint's distance from its target at the end")
        else:
            print(f"a pin chain closed by a ball-and-socket at its tip, 1 s from rest, best of {repeat}; "
                  "ratio = simtk compiled time / the other's")
        print(f"{'n':>3}  {'run':<62} {'time':>10} {'steps':>6} {'ratio':>7} {'|q - q_ref|':>12} {'closure':>9}"
              + (f" {'|drive|':>9}" if driven else ""))
        for n in sizes:
            run_loop(Loop(n, driven), repeat)


def run_loop(loop: Loop, repeat: int) -> None:
    """The runs of one loop, a row each: the reference, then each method's runs side by side."""
    n = loop.n
    ref = loop.simtk(merson(1e-10), True)[1]
    groups = [] if loop.drive else [("SemiExplicitEuler dt = 1e-3", euler, None, True)]
    groups += [(f"RK-Merson accuracy {a:g}", merson(a), a, False) for a in (1e-3, 1e-6)]
    labels = {"compiled": "simtk compiled loop", "python": "simtk Python loop",
              "opensim": "OpenSim Manager (PointConstraint" + (", prescribed)" if loop.drive else ")"),
              "mujoco": "MuJoCo Euler (connect, soft)"}
    for title, make, accuracy, fixed in groups:
        runs = {"compiled": lambda: loop.simtk(make, True), "python": lambda: loop.simtk(make, False)}
        if osim and accuracy is not None:
            runs["opensim"] = lambda: loop.opensim_run(accuracy)
        if loop.mj is not None and fixed:
            runs["mujoco"] = loop.mujoco_run
        res = best_of(runs, repeat)
        base = res["compiled"][0]
        for key, (wall, q, steps) in res.items():
            ratio = "" if key == "compiled" else f"{base / wall:7.3f}"
            drive = ""
            if loop.drive:
                j, a, w, p = loop.drive
                drive = f" {abs(q[j] - a * np.sin(w * T_FINAL + p)):9.1e}"
            print(f"{n:>3}  {title + ': ' + labels[key]:<62} {wall * 1e3:8.2f}ms "
                  f"{steps if steps is not None else '':>6} {ratio:>7} {np.abs(q - ref).max():12.2e} "
                  f"{loop.closure(q):9.1e}{drive}")

if __name__ == "__main__":
    main()
