"""Forward-dynamics evaluations per second of the batched calls, beside Pinocchio and MuJoCo.

Run: ``python benchmarks/batch.py`` (needs ``pinocchio``; the MuJoCo columns appear when
``mujoco`` imports, e.g. after ``pip install mujoco``).

Model: the benchmarks' planar pin chain (``_chain.pin_chain``: links of 0.5 m and 1 kg under
gravity) with 7 and 30 links, built the same way in all three libraries and checked to give the
same accelerations before anything is timed. For each batch size K (rows of random q, u, tau):

- ``simtk udot``: ``matter.calc_udot_batch(q, u, tau)`` (K evaluations per call), on 1 thread and
  on all threads (``simtk.get_num_threads()``);
- ``simtk step``: ``matter.step_batch(q, u, tau, h, n_steps=N, scheme="semi_explicit_euler")``,
  K * N evaluations per call (each step is one evaluation, as in MuJoCo's Euler);
- ``pin.aba``: a Python loop over the K rows calling ``pinocchio.aba`` (K evaluations);
- ``mj rollout``: ``mujoco.rollout.rollout`` of the K initial states for N Euler steps (K * N
  ``mj_step``s: forward dynamics plus the integration), on 1 thread and on as many as simtk uses.

Numbers are evaluations per second (thousands), the best of several repeats in one process; on a
machine shared with other work the multi-thread columns are the least reliable.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from _chain import pin_chain

import simtk
from simtk import Stage

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    sys.exit("pinocchio is not installed; nothing to compare against")

try:
    import mujoco
    from mujoco import rollout as mj_rollout
except ImportError:  # pragma: no cover - the column is skipped
    mujoco = None

H = 1e-3
N_STEPS = 10
GRAVITY = np.array([0.0, -9.81, 0.0])
I_C = np.diag([0.02, 0.001, 0.02])


def pinocchio_chain(n: int):
    model = pin.Model()
    model.gravity = pin.Motion(GRAVITY, np.zeros(3))
    parent = 0
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([0.0, -0.5, 0.0]) if i else np.zeros(3))
        parent = model.addJoint(parent, pin.JointModelRZ(), placement, f"link{i}")
        model.appendBodyToJoint(parent, pin.Inertia(1.0, np.array([0.0, -0.25, 0.0]), I_C), pin.SE3.Identity())
    return model


def mujoco_chain(n: int):
    body = ""
    for i in reversed(range(n)):
        pos = "0 -0.5 0" if i else "0 0 0"
        body = (f'<body name="link{i}" pos="{pos}"><joint type="hinge" axis="0 0 1"/>'
                f'<inertial pos="0 -0.25 0" mass="1" diaginertia="0.02 0.001 0.02"/>{body}</body>')
    xml = (f'<mujoco><option timestep="{H}" integrator="Euler" gravity="0 -9.81 0">'
           '<flag contact="disable" constraint="disable"/></option>'
           f'<worldbody>{body}</worldbody></mujoco>')
    return mujoco.MjModel.from_xml_string(xml)


def rate(fn, evals: int, min_time: float = 0.05, repeat: int = 5) -> float:
    """Best evaluations per second of ``fn`` (``evals`` evaluations per call)."""
    fn()
    calls = 1
    while True:
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - t > min_time / repeat or calls > 1 << 16:
            break
        calls *= 2
    best = 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = max(best, evals * calls / (time.perf_counter() - t))
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    threads = simtk.get_num_threads()
    print(f"simtk: OpenMP {'on' if simtk.OPENMP else 'off'}, {threads} threads; "
          f"mujoco: {mujoco.__version__ if mujoco else 'not installed'}; pinocchio {pin.__version__}")
    print(f"thousands of forward-dynamics evaluations per second (step and rollout: {N_STEPS} Euler steps of {H})")
    head = (f"{'links':>5} {'K':>5} | {'udot 1T':>8} {f'udot {threads}T':>8} {f'step {threads}T':>8} | "
            f"{'pin.aba':>8} | {'mj 1T':>8} {f'mj {threads}T':>8} | {'best simtk / best other':>23}")
    print(head)
    print("-" * len(head))
    for n in (7, 30):
        system = pin_chain(n)
        matter = system.get_matter_subsystem()
        state = system.realize_topology()
        system.realize(state, Stage.Instance)
        pmodel = pinocchio_chain(n)
        pdata = pmodel.createData()
        mmodel = mujoco_chain(n) if mujoco else None
        for K in (1, 64, 4096):
            q = rng.uniform(-1, 1, (K, n))
            u = rng.uniform(-1, 1, (K, n))
            tau = rng.uniform(-1, 1, (K, n))
            udot = matter.calc_udot_batch(q, u, tau, state=state)
            ref = np.array([pin.aba(pmodel, pdata, q[k], u[k], tau[k]) for k in range(K)])
            assert np.allclose(udot, ref, rtol=1e-8, atol=1e-8 * max(1.0, float(np.abs(ref).max()))), \
                "simtk and pinocchio disagree on this model"
            r = {
                "u1": rate(lambda: matter.calc_udot_batch(q, u, tau, state=state, threads=1), K),
                "uT": rate(lambda: matter.calc_udot_batch(q, u, tau, state=state, threads=threads), K),
                "sT": rate(lambda: matter.step_batch(q, u, tau, h=H, n_steps=N_STEPS, state=state,
                                                     threads=threads), K * N_STEPS),
                "pin": rate(lambda: [pin.aba(pmodel, pdata, q[k], u[k], tau[k]) for k in range(K)], K),
            }
            if mmodel is not None:
                datas = [mujoco.MjData(mmodel) for _ in range(threads)]
                d = datas[0]
                spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
                x0 = np.zeros((K, mujoco.mj_stateSize(mmodel, spec)))
                for k in range(K):
                    d.qpos[:], d.qvel[:] = q[k], u[k]
                    mujoco.mj_getState(mmodel, d, x0[k], spec)
                d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q[0], u[0], tau[0]
                mujoco.mj_forward(mmodel, d)
                assert np.allclose(d.qacc, udot[0], rtol=1e-8, atol=1e-8 * max(1.0, float(np.abs(udot[0]).max()))), \
                    "simtk and mujoco disagree on this model"
                d.qfrc_applied[:] = 0.0  # rollout's controls are actuators (none here): tau is not applied
                out = np.zeros((K, N_STEPS, x0.shape[1]))
                r["mj1"] = rate(lambda: mj_rollout.rollout(mmodel, d, x0, nstep=N_STEPS, state=out), K * N_STEPS)
                r["mjT"] = rate(lambda: mj_rollout.rollout(mmodel, datas, x0, nstep=N_STEPS, state=out),
                                K * N_STEPS)
            ours = max(r["u1"], r["uT"], r["sT"])
            other = max(v for key, v in r.items() if key in ("pin", "mj1", "mjT"))
            mj = (f"{r['mj1'] / 1e3:8.0f} {r['mjT'] / 1e3:8.0f}" if "mj1" in r else f"{'-':>8} {'-':>8}")
            print(f"{n:>5} {K:>5} | {r['u1'] / 1e3:8.0f} {r['uT'] / 1e3:8.0f} {r['sT'] / 1e3:8.0f} | "
                  f"{r['pin'] / 1e3:8.0f} | {mj} | {ours / other:23.2f}")


if __name__ == "__main__":
    main()
