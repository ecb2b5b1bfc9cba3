"""Robots with contact beside MuJoCo: wall time per simulated second, as ratios from one run.

Run: ``python benchmarks/robots_vs_mujoco.py`` (needs ``mujoco``; Go1 needs ``example-robot-data``, the
ant and half_cheetah ``gymnasium``). Each case prints simtk's and MuJoCo's wall time per simulated
second, their ratio (simtk / MuJoCo; the target is <= 2) and the state each side ends in.

(a) Go1 (example-robot-data URDF): simtk ``load_urdf(contact=True)`` + ``add_ground()``, a `PDController`
    holding a standing pose (tau = kp (q* - q) - kd qdot on the 12 leg joints), dropped with its feet 35 cm
    above the floor, 2 s at a fixed 1 ms step of SemiExplicitEuler and of SemiImplicitEuler (the controller
    acting every step), and at 2 ms on both sides with SemiImplicitEuler (semi-explicit Euler diverges there).
    MuJoCo loads the same URDF (a ``<mujoco><compiler discardvisual=...>`` block inserted), gets a free
    joint, a floor plane and position actuators (kp, kv) with the same law through `MjSpec`, and steps
    with its Euler method at 1 ms. The robot's geoms collide with the floor only on both sides.
(b) gymnasium's ant, half_cheetah, hopper and walker2d MJCF with ``load_mjcf(contact=True)``, zero
    controls, 2 s at the model's own ``timestep`` on both sides (simtk: SemiImplicitEuler, whose contact,
    joint damping, stops and friction are linearized in the step; MuJoCo: the model's integrator). If
    simtk's step diverged there, the largest of timestep/2, /4, /5 that does not would be used and said.

Times are each side's best of `REPEATS` runs from the same start. Where the time goes: each case prints
simtk's ``describe_fast_path()`` (cProfile of the Go1 run: all of it in ``run_ticks``, the compiled
driver stretches with the PD law, detection and the contact law in the core).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import time
import warnings
from pathlib import Path

import numpy as np

from simtk import Stage
from simtk.math import SemiExplicitEulerIntegrator, SemiImplicitEulerIntegrator
from simtk.math.integrator_errors import SimulationDivergedError
from simtk.simulation import PDController, Simulation

T_END = 2.0
REPEATS = 5  # each side's best of these (from the same start), so a busy machine skews the ratio less
GO1_POSE = {"hip": 0.0, "thigh": 0.9, "calf": -1.8}
KP, KD = 30.0, 1.0
LEGS = ("FR", "FL", "RR", "RL")


def _robots() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    p = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return p if p.is_dir() else None


def _gym(name: str) -> Path | None:
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or spec.origin is None:
        return None
    p = Path(spec.origin).parent / "envs/mujoco/assets" / f"{name}.xml"
    return p if p.is_file() else None


# ----------------------------------------------------------------------------------- (a) Go1
def go1_simtk(urdf: Path, h: float = 1e-3, method=SemiExplicitEulerIntegrator) -> dict:
    from simtk.io import load_urdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_urdf(urdf, floating_base=True, contact=True)
    model.add_ground(0.0)
    st = model.default_state()
    joints = {f"{leg}_{part}_joint": q for leg in LEGS for part, q in GO1_POSE.items()}
    for name, q in joints.items():
        model.joints[name].set_one_q(st, 0, q)
    model.system.realize(st, Stage.Position)
    lowest = min(model.bodies[f"{leg}_foot"].get_body_origin_location(st)[2] for leg in LEGS)
    base_z = 0.35 - lowest + 0.02  # the foot spheres' radius: their bottoms 35 cm up
    pin_q, pin_v = model.state_to_pinocchio(st)
    pin_q[:3], pin_q[3:7] = [0.0, 0.0, base_z], [0.0, 0.0, 0.0, 1.0]
    model.state_from_pinocchio(st, pin_q, np.zeros_like(pin_v))
    paths = {n: f"{model.joints[n].get_absolute_path()}/angle" for n in joints}
    wall = math.inf
    for _ in range(REPEATS):  # the best of a few: the machine may be shared
        integ = method(model.system, h)
        sim = Simulation(model.system, st.copy(), integrator=integ, step_size=h)
        sim.add_controller(PDController({paths[n]: (KP, KD) for n in joints},
                                        {paths[n]: q for n, q in joints.items()}), name="hold")
        sim.run(0.01)  # the first call builds the compiled loop: not timed
        t0 = time.perf_counter()
        sim.run(T_END)
        wall = min(wall, time.perf_counter() - t0)
    end = sim.get_state()
    z = float(model.root.get_body_origin_location(end)[2])
    return dict(wall=wall / (T_END - 0.01), z=z, z0=base_z, finite=bool(np.isfinite(end.get_u()).all()),
                path=integ.describe_fast_path())


def go1_mujoco(urdf: Path, base_z: float, h: float = 1e-3) -> dict:
    import mujoco
    text = urdf.read_text()
    meshdir = urdf.parent.parent / "meshes"
    block = f'<mujoco><compiler discardvisual="true" meshdir="{meshdir}" balanceinertia="true"/></mujoco>'
    text = text.replace("<robot name=\"go1\">", "<robot name=\"go1\">" + block, 1)
    # the base link's placeholder inertia is not positive definite: MuJoCo refuses it (simtk keeps it)
    text = text.replace('ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6"', 'ixy="0" ixz="0" iyy="1e-6" iyz="0"')
    spec = mujoco.MjSpec.from_string(text)
    spec.option.timestep = h
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    root = spec.worldbody.first_body()
    root.add_freejoint()
    for g in spec.geoms:  # the robot's geoms touch the floor only, as simtk's one clique does
        g.contype, g.conaffinity, g.friction = 1, 0, [0.8, 0.005, 0.0001]
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], contype=1, conaffinity=1,
                            friction=[0.8, 0.005, 0.0001])
    names = [f"{leg}_{part}_joint" for leg in LEGS for part in GO1_POSE]
    for n in names:
        a = spec.add_actuator(name=n, target=n, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.gainprm[0] = KP
        a.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        a.biasprm[:3] = [0.0, -KP, -KD]
    m = spec.compile()
    d = mujoco.MjData(m)
    steps = int(round(T_END / h))
    wall = math.inf
    for _ in range(REPEATS):
        mujoco.mj_resetData(m, d)
        d.qpos[:3], d.qpos[3:7] = [0, 0, base_z], [1, 0, 0, 0]
        for k, n in enumerate(names):
            d.qpos[m.joint(n).qposadr[0]] = GO1_POSE[n.split("_")[1]]
            d.ctrl[k] = GO1_POSE[n.split("_")[1]]
        t0 = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        wall = min(wall, time.perf_counter() - t0)
    return dict(wall=wall / T_END, z=float(d.qpos[2]), finite=bool(np.isfinite(d.qvel).all()))


# ----------------------------------------------------------------------------------- (b) MJCF
def mjcf_simtk(path: Path, qpos=None, contact_parameters=None) -> dict:
    from simtk.io import load_mjcf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_mjcf(path, contact=True, contact_parameters=contact_parameters)
    h0 = model.timestep
    note = ""
    for div in (1, 2, 4, 5, 10):
        h = h0 / div
        st = model.default_state()
        if qpos is not None:
            model.state_from_mujoco(st, qpos, np.zeros(model.nv))
        wall = math.inf
        try:
            for _ in range(REPEATS):
                integ = SemiImplicitEulerIntegrator(model.system, h)
                sim = Simulation(model.system, st.copy(), integrator=integ, step_size=0.1)
                sim.run(0.1)  # builds the compiled loop: not timed
                t0 = time.perf_counter()
                sim.run(T_END)
                wall = min(wall, time.perf_counter() - t0)
        except SimulationDivergedError as e:
            note += f"diverged at h={h:g} ({type(e).__name__}); "
            continue
        end = sim.get_state()
        qpos_end, _ = model.state_to_mujoco(end)
        if not np.isfinite(qpos_end).all() or np.abs(end.get_u()).max() > 1e3:
            note += f"blew up at h={h:g}; "
            continue
        return dict(wall=wall / (T_END - 0.1), h=h, qpos=qpos_end, note=note, path=integ.describe_fast_path())
    return dict(wall=math.nan, h=math.nan, qpos=None, note=note, path="")


def mjcf_mujoco(path: Path, qpos=None) -> dict:
    import mujoco
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    steps = int(round(T_END / m.opt.timestep))
    wall = math.inf
    for _ in range(REPEATS):
        mujoco.mj_resetData(m, d)
        if qpos is not None:
            d.qpos[:] = qpos
        t0 = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        wall = min(wall, time.perf_counter() - t0)
    return dict(wall=wall / T_END, h=m.opt.timestep, qpos=d.qpos.copy())


def _upright(name: str, qpos) -> str:
    if qpos is None:
        return "diverged"
    if name == "ant":  # free joint: torso height and the tilt of its z axis
        w, x, y, z = qpos[3:7] / np.linalg.norm(qpos[3:7])
        tilt = math.degrees(math.acos(max(-1.0, min(1.0, 1 - 2 * (x * x + y * y)))))
        return f"torso z {qpos[2]:.3f} m, tilt {tilt:.1f} deg"
    # the planar models: slide x, slide z, hinge y first
    return f"rootz {qpos[1]:+.3f} m, pitch {math.degrees(qpos[2]):+.1f} deg"


def main() -> None:
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("mujoco is not installed")
        return
    warnings.filterwarnings("ignore", message=".*settotalmass.*")
    robots = _robots()
    print(f"{'case':14} {'simtk s/s':>10} {'MuJoCo s/s':>11} {'ratio':>7}  end state (simtk | MuJoCo)")
    if robots is None:
        print("Go1: example-robot-data is not installed")
    else:
        urdf = robots / "go1_description/urdf/go1.urdf"
        mj: dict = {}
        for label, method, h in (("go1 PD 1ms", SemiExplicitEulerIntegrator, 1e-3),
                                 ("  implicit", SemiImplicitEulerIntegrator, 1e-3),
                                 ("go1 PD 2ms", SemiImplicitEulerIntegrator, 2e-3)):
            a = go1_simtk(urdf, h=h, method=method)
            b = mj[h] = mj.get(h) or go1_mujoco(urdf, a["z0"], h=h)
            print(f"{label:14} {a['wall']:10.4f} {b['wall']:11.4f} {a['wall'] / b['wall']:7.2f}  "
                  f"base z {a['z']:.3f} m | {b['z']:.3f} m (dropped from {a['z0']:.3f})")
            print(f"    simtk ({method.__name__}): {a['path']}; per step: simtk {1e6 * h * a['wall']:.1f} us, "
                  f"MuJoCo {1e6 * h * b['wall']:.1f} us")
    ant0 = [0, 0, 0.55, 1, 0, 0, 0, 0, 1, 0, -1, 0, -1, 0, 1]  # gymnasium's init_qpos (the <custom> of ant.xml)
    for name, label, qpos, cp in (("ant", "ant", ant0, None), ("half_cheetah", "half_cheetah", None, None),
                                  ("hopper", "hopper", None, None), ("walker2d", "walker2d", None, None)):
        path = _gym(name)
        if path is None:
            print(f"{name}: gymnasium is not installed")
            continue
        a = mjcf_simtk(path, qpos, cp)
        b = mjcf_mujoco(path, qpos)
        print(f"{label:14} {a['wall']:10.4f} {b['wall']:11.4f} {a['wall'] / b['wall']:7.2f}  "
              f"{_upright(name, a['qpos'])} | {_upright(name, b['qpos'])}")
        print(f"    steps: simtk {a['h']:g} s, MuJoCo {b['h']:g} s; {a['note'].rstrip('; ') or 'stable at the model timestep'}; "
              f"per step: simtk {1e6 * a['wall'] * a['h']:.1f} us, MuJoCo {1e6 * b['wall'] * b['h']:.1f} us")
        print(f"    simtk: {a['path']}")


if __name__ == "__main__":
    main()
