"""Steps per second of a whole simulation: simtk beside MuJoCo, Pinocchio and OpenSim, in one run.

Model: the shared n-link pin chain of ``_chain.pin_chain`` (links of 0.5 m and 1 kg, mass center at
[0, -0.25, 0], central inertia diag(0.02, 0.001, 0.02), Pin joints about z, gravity [0, -9.81, 0])
for n = 7, 30, 100, built again with each peer's own API. Every run simulates 1 s from the same state:
q from a seeded uniform draw in [-0.5, 0.5] rad, u = 0.

Before anything is timed, the initial accelerations of every peer's model are compared with simtk's
``state.get_udot()`` (at the start state and at a random (q, u)): this checks that the models and the
meaning of the coordinates agree (MuJoCo hinge angles, Pinocchio RZ angles and OpenSim PinJoint
coordinates are each the relative rotation about z). The script stops if they do not.

Timed (wall time, ``time.perf_counter``, best of ``--repeat``, repeats interleaved between peers):

=========================  =====================================================================
group                      runs
=========================  =====================================================================
Euler, dt = 1e-3           simtk ``SemiExplicitEulerIntegrator``: ``initialize`` + ``step_to(1.0)``;
                           MuJoCo ``integrator="Euler"`` (semi-implicit Euler): a Python loop of
                           1000 ``mj_step`` (and, for information, one ``mj_step(m, d, 1000)``);
                           Pinocchio: a Python loop ``v += dt*aba(q, v, 0); q += dt*v``
4th order, dt = 1e-3       simtk ``RungeKuttaMersonIntegrator`` with a fixed step (5 evaluations
                           per step) beside MuJoCo ``integrator="RK4"`` (4 evaluations per step)
RK-Merson, accuracy a      simtk ``RungeKuttaMersonIntegrator.set_accuracy(a)`` beside OpenSim's
(a = 1e-3, 1e-6)           ``Manager`` with ``IntegratorMethod_RungeKuttaMerson``; a Manager that
                           writes no storage (simtk records nothing either); steps and evaluations
                           are read from the Manager's log of one untimed run of the same integration
=========================  =====================================================================

Everything a user pays for one simulation is inside the timed region (simtk's ``initialize`` too: a
copy of the State, its projection and first evaluation); building the models, integrators and MjData
is outside, and so is realizing simtk's start State to Instance, which builds its workspace as
``MjData`` does MuJoCo's (about 0.3 ms for the 7-link chain, printed once). The final state is compared with a reference
from simtk's RK-Merson at accuracy 1e-10, itself checked against OpenSim's at 1e-10. The issue's
targets are printed under the tables, each computed as PASS or MISS.

Run: ``python benchmarks/simulation_vs_peers.py [--quick] [--repeat R]``. Peers that are not
installed are skipped with a line saying so (``pip install -e ".[crosscheck]"`` installs them).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import sys
import tempfile
import time

import numpy as np
from _chain import pin_chain

import simtk
from simtk import Stage
from simtk.math import RungeKuttaMersonIntegrator, SemiExplicitEulerIntegrator

try:
    import mujoco
except ImportError:  # a missing peer is skipped, not an error
    mujoco = None
try:
    import pinocchio as pin
except ImportError:
    pin = None
try:
    import opensim as osim
except ImportError:
    osim = None
else:
    osim.Logger.setLevelString("Warn")  # the Manager's report is read only in the counting run

T_FINAL, DT = 1.0, 1e-3
N_FIXED = int(round(T_FINAL / DT))
ACCURACIES = (1e-3, 1e-6)
REF_ACCURACY = 1e-10
SLOW_RUN = 60.0  # seconds: a run longer than this is not repeated
# The chain of _chain.pin_chain, for the peers' builders.
LINK, MASS, COM, I_C = 0.5, 1.0, np.array([0.0, -0.25, 0.0]), np.array([0.02, 0.001, 0.02])
GRAVITY = np.array([0.0, -9.81, 0.0])
# The initial accelerations must agree to roundoff, relative to max(1, |udot|): within
# max(UDOT_TOL, 10 eps cond(M)). The recursive O(n) peers agree to ~1e-12, MuJoCo (which forms and
# factors M, dense for a chain) to ~eps cond(M); a model that differs is off by 1e-3 or more.
UDOT_TOL = 1e-10


def initial_q(n: int) -> np.ndarray:
    return np.random.default_rng(20240 + n).uniform(-0.5, 0.5, n)


# ---------------------------------------------------------------------- the peers' models
MJ_DISABLED = ("constraint", "equality", "frictionloss", "limit", "contact", "spring", "damper", "clampctrl",
               "warmstart", "actuation", "refsafe", "sensor", "eulerdamp", "autoreset", "island")


def mujoco_chain(n: int, integrator: str):
    """The chain in MJCF: hinges about z at each body's origin, no geoms, no contact, no damping or
    armature, and every pipeline stage that simtk does not have switched off (gravity kept)."""
    body = ""
    for i in reversed(range(n)):
        pos = f"0 {-LINK:g} 0" if i else "0 0 0"
        body = (f'<body name="link{i}" pos="{pos}"><joint type="hinge" axis="0 0 1"/>'
                f'<inertial pos="{" ".join(f"{c:g}" for c in COM)}" mass="{MASS:g}" '
                f'diaginertia="{" ".join(f"{c:g}" for c in I_C)}"/>{body}</body>')
    known = {name[7:].lower() for name in mujoco.mjtDisableBit.__members__}  # older versions have fewer
    flags = " ".join(f'{f}="disable"' for f in MJ_DISABLED if f in known)
    xml = (f'<mujoco><option timestep="{DT:g}" integrator="{integrator}" gravity="0 -9.81 0">'
           f'<flag {flags}/></option><worldbody>{body}</worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.nv == n and not m.dof_armature.any() and not m.dof_damping.any() and not m.dof_frictionloss.any()
    assert m.ngeom == 0 and m.opt.enableflags == 0
    return m


def mujoco_flags(m) -> str:
    bits = [(name[7:].lower(), int(b)) for name, b in mujoco.mjtDisableBit.__members__.items()
            if name.startswith("mjDSBL_")]
    off = [name for name, b in bits if m.opt.disableflags & b]
    on = [name for name, b in bits if not m.opt.disableflags & b]
    return f"disabled: {', '.join(off)}; left on: {', '.join(on)}; enabled extras: {m.opt.enableflags or 'none'}"


def pinocchio_chain(n: int):
    model = pin.Model()
    model.gravity = pin.Motion(GRAVITY, np.zeros(3))
    parent = 0
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([0.0, -LINK, 0.0]) if i else np.zeros(3))
        parent = model.addJoint(parent, pin.JointModelRZ(), placement, f"link{i}")
        # pin.Inertia(mass, lever, inertia about the mass center)
        model.appendBodyToJoint(parent, pin.Inertia(MASS, COM.copy(), np.diag(I_C)), pin.SE3.Identity())
    return model


def opensim_chain(n: int, q0: np.ndarray, extend=None):
    """Bodies with the inertia about the mass center in the body frame (OpenSim's convention); a
    PinJoint rotates about the common z axis of its parent and child frames. ``extend(model, last
    body)`` adds more (a constraint) before the system is built."""
    model = osim.Model()
    model.setName(f"chain{n}")
    model.setGravity(osim.Vec3(*GRAVITY))
    parent = model.getGround()
    for i in range(n):
        body = osim.Body(f"link{i}", MASS, osim.Vec3(*COM), osim.Inertia(*I_C))
        model.addBody(body)
        joint = osim.PinJoint(f"pin{i}", parent, osim.Vec3(0, -LINK if i else 0.0, 0), osim.Vec3(0, 0, 0),
                              body, osim.Vec3(0, 0, 0), osim.Vec3(0, 0, 0))
        joint.updCoordinate().setDefaultValue(float(q0[i]))
        model.addJoint(joint)
        parent = body
    if extend is not None:
        extend(model, parent)
    state = model.initSystem()
    coords = [model.getCoordinateSet().get(i) for i in range(n)]
    return model, state, coords


# ---------------------------------------------------------------------- one chain, every peer
class Chain:
    def __init__(self, n: int):
        self.n, self.q0 = n, initial_q(n)
        self.system = pin_chain(n)
        self.state = self.state_at(self.q0, np.zeros(n))
        # the workspace of the start State, like MuJoCo's MjData: built once, outside the timed runs
        t0 = time.perf_counter()
        self.system.realize(self.state, Stage.Instance)
        self.instance_seconds = time.perf_counter() - t0
        self.mj = {k: mujoco_chain(n, k) for k in ("Euler", "RK4")} if mujoco else None
        if pin:
            self.pin_model = pinocchio_chain(n)
            self.pin_data = self.pin_model.createData()
        if osim:
            self.osim_model, self.osim_state, self.osim_coords = opensim_chain(n, self.q0)

    def state_at(self, q, u):
        s = self.system.realize_topology()
        s.set_q(q)
        s.set_u(u)
        return s

    def udot(self, q, u) -> np.ndarray:
        s = self.state_at(q, u)
        self.system.realize(s, Stage.Acceleration)
        return np.array(s.get_udot())

    def peer_udot(self, peer: str, q, u) -> np.ndarray:
        if peer == "mujoco":
            m = self.mj["Euler"]
            d = mujoco.MjData(m)
            d.qpos[:], d.qvel[:] = q, u
            mujoco.mj_forward(m, d)
            return d.qacc.copy()
        if peer == "pinocchio":
            return np.array(pin.aba(self.pin_model, self.pin_data, q, u, np.zeros(self.n)))
        s = osim.State(self.osim_state)
        for c, qi, ui in zip(self.osim_coords, q, u):
            c.setValue(s, float(qi), False)
            c.setSpeedValue(s, float(ui))
        self.osim_model.realizeAcceleration(s)
        return np.array([c.getAccelerationValue(s) for c in self.osim_coords])

    def check_models(self) -> tuple[dict, float]:
        """Largest relative difference of the accelerations per peer (start state and a random one), and
        the tolerance: max(UDOT_TOL, 10 eps cond(M)) with the largest cond(M) of the two states."""
        rng = np.random.default_rng(self.n)
        states = [(self.q0, np.zeros(self.n)), (rng.uniform(-1, 1, self.n), rng.uniform(-1, 1, self.n))]
        peers = [p for p, mod in (("mujoco", mujoco), ("pinocchio", pin), ("opensim", osim)) if mod]
        matter = self.system.get_matter_subsystem()
        cond = 1.0
        for q, u in states:
            s = self.state_at(q, u)
            self.system.realize(s, Stage.Position)
            cond = max(cond, np.linalg.cond(np.array(matter.calc_m(s))))
        out = {}
        for peer in peers:
            worst = 0.0
            for q, u in states:
                ref = self.udot(q, u)
                worst = max(worst, np.abs(self.peer_udot(peer, q, u) - ref).max() / max(1.0, np.abs(ref).max()))
            out[peer] = worst
        return out, max(UDOT_TOL, 10 * np.finfo(float).eps * cond)

    # ------------------------------------------------------------------ runs: (wall s, q(1), steps, info)
    def simtk(self, make):
        integ = make(self.system)
        t0 = time.perf_counter()
        integ.initialize(self.state)
        integ.step_to(T_FINAL)
        wall = time.perf_counter() - t0
        end = integ.get_state()
        assert end.get_time() == T_FINAL
        steps = integ.get_num_steps_taken()
        info = {"evals": integ.get_num_realizations(), "attempted": integ.get_num_steps_attempted(),
                "integ": integ}
        return wall, np.array(end.get_q()), steps, info

    def mujoco_loop(self, integrator: str, nstep: bool = False):
        m = self.mj[integrator]
        d = mujoco.MjData(m)
        d.qpos[:] = self.q0
        step = mujoco.mj_step
        if nstep:
            t0 = time.perf_counter()
            step(m, d, N_FIXED)
        else:
            t0 = time.perf_counter()
            for _ in range(N_FIXED):
                step(m, d)
        wall = time.perf_counter() - t0
        assert abs(d.time - T_FINAL) < 1e-9
        return wall, d.qpos.copy(), N_FIXED, {}

    def pinocchio_loop(self):
        model, data, aba = self.pin_model, self.pin_data, pin.aba
        q, v, tau = self.q0.copy(), np.zeros(self.n), np.zeros(self.n)
        t0 = time.perf_counter()
        for _ in range(N_FIXED):
            v += DT * aba(model, data, q, v, tau)
            q += DT * v  # pin.integrate for revolute (RZ) joints, without the call
        return time.perf_counter() - t0, q, N_FIXED, {}

    def opensim_manager(self, accuracy: float, record: bool = False):
        manager = osim.Manager(self.osim_model)
        manager.setIntegratorMethod(osim.Manager.IntegratorMethod_RungeKuttaMerson)
        manager.setIntegratorAccuracy(accuracy)
        manager.setWriteToStorage(record)
        manager.setRecordStatesTrajectory(False)
        state = osim.State(self.osim_state)
        state.setTime(0.0)
        t0 = time.perf_counter()
        manager.initialize(state)
        end = manager.integrate(T_FINAL)
        wall = time.perf_counter() - t0
        assert abs(end.getTime() - T_FINAL) < 1e-12
        q = np.array([c.getValue(end) for c in self.osim_coords])
        return wall, q, None, {"manager": manager}

    def opensim_counts(self, accuracy: float) -> dict:
        """Steps taken/attempted and realizations of one (untimed) run, from the Manager's report at level
        Info; the storage (a row per step) is written too, as a cross-check of the step count."""
        with _captured_output() as text:
            osim.Logger.setLevelString("Info")
            try:
                _, _, _, info = self.opensim_manager(accuracy, record=True)
            finally:
                osim.Logger.setLevelString("Warn")
        out = {"rows": info["manager"].getStateStorage().getSize()}
        steps = re.search(r"number of steps taken / attempted: (\d+) / (\d+)", text[0])
        evals = re.search(r"number of realizations: (\d+)", text[0])
        if steps:
            out["steps"], out["attempted"] = int(steps.group(1)), int(steps.group(2))
        if evals:
            out["evals"] = int(evals.group(1))
        return out


@contextlib.contextmanager
def _captured_output():
    """What the C++ side writes to stdout and stderr meanwhile, in ``text[0]`` after the block."""
    text = [""]
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield text
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            f.seek(0)
            text[0] = f.read().decode(errors="replace")


# ---------------------------------------------------------------------- timing
def best_of(runs: dict, repeat: int) -> dict:
    """name -> (best wall, q(1), steps, info, repeats done); repeats interleaved between the runs."""
    best, done = {}, dict.fromkeys(runs, 0)
    for _ in range(repeat):
        for name, fn in runs.items():
            if done[name] and best[name][0] > SLOW_RUN:
                continue
            wall, q, steps, info = fn()
            done[name] += 1
            if name not in best or wall < best[name][0]:
                best[name] = (wall, q, steps, info)
    return {k: (*v, done[k]) for k, v in best.items()}


def reference(chain: Chain) -> np.ndarray:
    integ = RungeKuttaMersonIntegrator(chain.system)
    integ.set_accuracy(REF_ACCURACY)
    _, q, _, _ = chain.simtk(lambda s: integ)
    return q


def merson(accuracy=None):
    def make(system):
        integ = RungeKuttaMersonIntegrator(system)
        if accuracy is None:
            integ.set_fixed_step_size(DT)
        else:
            integ.set_accuracy(accuracy)
        return integ
    return make


HEADER = (f"{'n':>4} {'peer':<28} {'wall ms':>9} {'steps':>6} {'steps/s':>9} {'FD evals/step':>13} "
          f"{'|dq| vs ref':>11} {'simtk/peer':>10}")


def print_table(title: str, rows: list, notes: list) -> None:
    print(f"\n== {title}")
    print(HEADER)
    print("-" * len(HEADER))
    last_n = None
    for r in rows:
        if last_n is not None and r["n"] != last_n:
            print()
        last_n = r["n"]
        steps = f"{r['steps']:6d}" if r["steps"] is not None else f"{'n/a':>6}"
        rate = f"{r['steps'] / r['wall']:9.0f}" if r["steps"] is not None else f"{'n/a':>9}"
        ratio = f"{r['ratio']:10.3f}" if r.get("ratio") is not None else f"{'-':>10}"
        label = r["peer"] + (f" (best of {r['done']})" if r["done"] < r["repeat"] else "")
        print(f"{r['n']:>4} {label:<28} {r['wall'] * 1e3:9.2f} {steps} {rate} {r['evals']:>13} "
              f"{r['dq']:11.2e} {ratio}")
    for note in notes:
        print(f"  {note}")


def row(n, peer, result, q_ref, repeat, evals, simtk_wall=None):
    wall, q, steps, info, done = result
    return {"n": n, "peer": peer, "wall": wall, "steps": steps, "evals": evals, "dq": np.abs(q - q_ref).max(),
            "ratio": None if simtk_wall is None else simtk_wall / wall, "done": done, "repeat": repeat,
            "q": q, "info": info}


# ---------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 7 and 30 only, 2 repeats")
    parser.add_argument("--repeat", type=int, default=None,
                        help="repeats per run, the best kept (default 5; 2 with --quick)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.quick else 5)
    sizes = (7, 30) if args.quick else (7, 30, 100)

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    print(f"{platform.platform()}; {cpu}; {os.cpu_count()} CPUs; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, simtk {simtk.__version__}")
    for name, mod in (("mujoco", mujoco), ("pinocchio", pin), ("opensim", osim)):
        print(f"{name}: {mod.__version__ if mod else 'not installed: its rows are skipped'}")
    print(f"{T_FINAL:g} s simulated from q ~ U[-0.5, 0.5] (seeded), u = 0; wall time best of {repeat} "
          f"(a run over {SLOW_RUN:g} s is not repeated); simtk/peer < 1 means simtk is faster")

    chains = [Chain(n) for n in sizes]
    print("\nModel check: max |udot_peer - udot_simtk| / max(1, |udot|) at the start state and a random (q, u);\n"
          "tolerance max(1e-10, 10 eps cond(M)) (MuJoCo factors the mass matrix M, dense for a chain)")
    bad = []
    for c in chains:
        diffs, tol = c.check_models()
        print(f"  n = {c.n:3d}: " + (", ".join(f"{p} {d:.1e}" for p, d in diffs.items()) or "no peer installed")
              + f"; tolerance {tol:.1e}")
        bad += [f"{p} at n = {c.n} ({d:.1e} > {tol:.1e})" for p, d in diffs.items() if not d <= tol]
    if bad:
        sys.exit(f"MODEL MISMATCH: {', '.join(bad)}: the peers' models are not simtk's, the timings would not "
                 "compare the same physics")
    if mujoco:
        print(f"  MuJoCo flags: {mujoco_flags(chains[0].mj['Euler'])}")

    euler, rk4, variable = [], [], {a: [] for a in ACCURACIES}
    notes_euler, notes_var = [], {a: [] for a in ACCURACIES}
    targets = {k: [] for k in ("mujoco", "merson", "pinocchio", "opensim")}  # printed in this order

    def target(group: str, label: str, ok: bool, detail: str) -> None:
        targets[group].append((label, ok, detail))
    fast_path = None
    merson_per_attempt = []
    for c in chains:
        n = c.n
        t_ref = time.perf_counter()
        q_ref = reference(c)
        t_ref = time.perf_counter() - t_ref
        ref_note = f"n = {n}: reference (simtk RK-Merson, accuracy {REF_ACCURACY:g}) took {t_ref:.2f} s"
        if osim:
            _, q_osim_ref, _, _ = c.opensim_manager(REF_ACCURACY)
            ref_note += f"; OpenSim at the same accuracy differs from it by {np.abs(q_osim_ref - q_ref).max():.1e}"
        print(ref_note, flush=True)

        # -- semi-implicit Euler, dt = 1e-3
        runs = {"simtk": lambda: c.simtk(lambda s: SemiExplicitEulerIntegrator(s, DT))}
        if mujoco:
            runs["mujoco"] = lambda: c.mujoco_loop("Euler")
            runs["mujoco_nstep"] = lambda: c.mujoco_loop("Euler", nstep=True)
        if pin:
            runs["pinocchio"] = c.pinocchio_loop
        res = best_of(runs, repeat)
        s = res["simtk"]
        if not fast_path:
            fast_path = s[3]["integ"].describe_fast_path()
            notes_euler.append(f"n = {n}: realizing simtk's start State to Instance (its workspace, outside the timed "
                               f"runs) took {c.instance_seconds * 1e3:.2f} ms")
        euler.append(row(n, "simtk SemiExplicitEuler", s, q_ref, repeat, f"{s[3]['evals'] / s[2]:.3f}*"))
        if mujoco:
            mj = row(n, "mujoco Euler, mj_step loop", res["mujoco"], q_ref, repeat, "1", s[0])
            euler.append(mj)
            euler.append(row(n, "mujoco Euler, mj_step(nstep)", res["mujoco_nstep"], q_ref, repeat, "1", s[0]))
            notes_euler.append(f"n = {n}: same method, same steps: |q_mujoco - q_simtk| = "
                               f"{np.abs(mj['q'] - s[1]).max():.1e}")
            if n == 7:
                target("mujoco", "fixed step, n = 7: simtk SemiExplicitEuler <= 1.0x MuJoCo Euler (mj_step loop)",
                       mj["ratio"] <= 1.0, f"ratio {mj['ratio']:.3f}")
        if pin:
            p = row(n, "pinocchio aba loop", res["pinocchio"], q_ref, repeat, "1", s[0])
            euler.append(p)
            notes_euler.append(f"n = {n}: same method, same steps: |q_pinocchio - q_simtk| = "
                               f"{np.abs(p['q'] - s[1]).max():.1e}")
            target("pinocchio", f"n = {n}: simtk ahead of the Pinocchio aba loop (ratio < 1)", p["ratio"] < 1.0,
                   f"ratio {p['ratio']:.3f}")

        # -- fourth order, dt = 1e-3
        runs = {"simtk": lambda: c.simtk(merson())}
        if mujoco:
            runs["mujoco"] = lambda: c.mujoco_loop("RK4")
        res = best_of(runs, repeat)
        s = res["simtk"]
        assert s[2] == N_FIXED
        merson_per_attempt.append((f"fixed step, n = {n}", (s[3]["evals"] - 1) / s[3]["attempted"]))
        rk4.append(row(n, "simtk RK-Merson fixed step", s, q_ref, repeat, f"{s[3]['evals'] / s[2]:.3f}"))
        if mujoco:
            rk4.append(row(n, "mujoco RK4, mj_step loop", res["mujoco"], q_ref, repeat, "4", s[0]))

        # -- variable step RK-Merson
        for acc in ACCURACIES:
            runs = {"simtk": lambda: c.simtk(merson(acc))}
            if osim:
                runs["opensim"] = lambda: c.opensim_manager(acc)
            res = best_of(runs, repeat)
            s = res["simtk"]
            merson_per_attempt.append((f"accuracy {acc:g}, n = {n}", (s[3]["evals"] - 1) / s[3]["attempted"]))
            variable[acc].append(row(n, "simtk RK-Merson", s, q_ref, repeat, f"{s[3]['evals'] / s[2]:.3f}"))
            notes_var[acc].append(f"n = {n}: simtk steps taken/attempted {s[2]}/{s[3]['attempted']}")
            if osim:
                counts = c.opensim_counts(acc)
                o = res["opensim"]
                o = (o[0], o[1], counts.get("steps"), o[3], o[4])
                evals = f"{counts['evals'] / counts['steps']:.3f}" if "evals" in counts and counts.get("steps") \
                    else "n/a"
                r = row(n, "opensim Manager RK-Merson", o, q_ref, repeat, evals, s[0])
                variable[acc].append(r)
                notes_var[acc][-1] += (f", OpenSim {counts.get('steps', 'n/a')}/{counts.get('attempted', 'n/a')} "
                                       f"(storage rows - 1 = {counts['rows'] - 1}); |q_opensim - q_simtk| = "
                                       f"{np.abs(r['q'] - s[1]).max():.1e}")
                target("opensim", f"accuracy {acc:g}, n = {n}: simtk >= 10x ahead of OpenSim (ratio <= 0.1)",
                       r["ratio"] <= 0.1, f"ratio {r['ratio']:.3f}")
        print(f"n = {n} done", flush=True)

    print(f"\nsimtk's time loop: {fast_path}")
    nstep_note = ["mj_step(nstep) runs the 1000 steps in one call (the loop in C): for information, "
                  "the target is against the Python loop"] if mujoco else []
    print_table(f"Semi-implicit Euler, fixed step dt = {DT:g} ({N_FIXED} steps, one forward dynamics per step)",
                euler, ["* simtk counts a Velocity-stage realization per step besides the forward dynamics "
                        "(q is advanced with qdot at the new u): one FD evaluation per step",
                        *nstep_note, *notes_euler])
    print_table(f"Fourth order, fixed step dt = {DT:g}: simtk RK-Merson (5 evaluations per step) beside "
                "MuJoCo RK4 (4 per step)", rk4,
                ["simtk's count includes the one evaluation of initialize(); MuJoCo's is the method's"])
    for acc in ACCURACIES:
        print_table(f"RK-Merson, variable step, accuracy {acc:g}", variable[acc],
                    ["FD evals/step = realizations / steps taken (rejected attempts included); OpenSim's from its "
                     "Manager's report", *notes_var[acc]])

    worst = max(merson_per_attempt, key=lambda x: x[1])
    target("merson", "RK-Merson <= 5 FD evaluations per step (per attempted step, initialize()'s one aside)",
           worst[1] <= 5.0 + 1e-12, f"worst {worst[1]:.3f} ({worst[0]})")
    print("\nTargets")
    for label, ok, detail in (t for group in targets.values() for t in group):
        print(f"  {'PASS' if ok else 'MISS'}  {label}: {detail}")
    if not pin:
        print("  (Pinocchio targets skipped: pinocchio is not installed)")
    if not osim:
        print("  (OpenSim targets skipped: opensim is not installed)")
    if not mujoco:
        print("  (MuJoCo target skipped: mujoco is not installed)")


if __name__ == "__main__":
    main()
