"""Tutorial 28: robots in MuJoCo's and Pinocchio's conventions, with contact, side by side with those libraries.

Robotics users bring MJCF files and MuJoCo states (``qpos``, ``qvel``), URDF files and Pinocchio states
(``q``, ``v``). This script takes one of each:

1. A MuJoCo model: gymnasium's ant if gymnasium is installed, otherwise a small quadruped written
   here. ``load_mjcf(path, contact=True)`` makes its geoms contact surfaces (the floor plane a
   half-space, MuJoCo's collision filter as cliques, each geom's solref/solimp/friction mapped onto a
   Hunt-Crossley law: see `simtk.io._mjcf_contact`). Its State is set from MuJoCo's qpos/qvel and read
   back; its accelerations are compared with MuJoCo's ``mj_forward`` (in the air, where neither side
   has contact); then it stands on the floor for a second beside MuJoCo's own simulation.
2. A URDF robot: the Go1 quadruped of example-robot-data (skipped when absent). Its State is set from
   Pinocchio's q/v and read back; accelerations are compared with ``pinocchio.aba``; then
   ``contact=True`` + ``add_ground()`` drop it on the floor while a `PDController` holds a standing
   pose, and an `OutputProbe` records each joint's ``mobility_forces`` output (the torques the
   controller, joint friction and damping apply), which are printed (and plotted with ``--plot``).

Run: ``python tutorials/28_robots_mujoco_pinocchio.py [--plot]``. MuJoCo and Pinocchio are optional:
without them the comparisons are skipped and said so.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from simtk import Stage
from simtk.io import load_mjcf, load_urdf
from simtk.math import SemiExplicitEulerIntegrator, SemiImplicitEulerIntegrator
from simtk.simulation import OutputProbe, PDController, Simulation

#: a small quadruped for when gymnasium is absent: a box torso, four two-link capsule legs, a floor
SMALL = """<mujoco model="quad">
  <option timestep="0.002"/>
  <default><joint damping="0.5" armature="0.05"/><geom contype="1" conaffinity="0"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" conaffinity="1"/>
    <body name="torso" pos="0 0 0.4"><freejoint/><geom type="box" size="0.15 0.1 0.04" mass="4"/>
      <body pos="0.15 0.1 0"><joint name="h1" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0.1 -0.15" size="0.02"/>
        <body pos="0 0.1 -0.15"><joint name="k1" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/></body></body>
      <body pos="0.15 -0.1 0"><joint name="h2" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 -0.1 -0.15" size="0.02"/>
        <body pos="0 -0.1 -0.15"><joint name="k2" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/></body></body>
      <body pos="-0.15 0.1 0"><joint name="h3" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0.1 -0.15" size="0.02"/>
        <body pos="0 0.1 -0.15"><joint name="k3" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/></body></body>
      <body pos="-0.15 -0.1 0"><joint name="h4" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 -0.1 -0.15" size="0.02"/>
        <body pos="0 -0.1 -0.15"><joint name="k4" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/></body></body>
    </body>
  </worldbody>
</mujoco>
"""


def _optional(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None


def mjcf_model(tmp: Path) -> tuple[Path, np.ndarray | None]:
    """(the MJCF file, the initial qpos to stand from, or None for the file's own)."""
    spec = importlib.util.find_spec("gymnasium")
    if spec is not None and spec.origin is not None:
        p = Path(spec.origin).parent / "envs/mujoco/assets/ant.xml"
        if p.is_file():  # gymnasium's initial pose (the file's qpos0 has the ankles outside their range)
            return p, np.array([0, 0, 0.55, 1, 0, 0, 0, 0, 1, 0, -1, 0, -1, 0, 1], dtype=float)
    p = tmp / "quad.xml"
    p.write_text(SMALL)
    return p, None


def mujoco_part(tmp: Path) -> None:
    path, qpos0 = mjcf_model(tmp)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf(path, contact=True)
    print(f"== MJCF: {path.name}: nq={model.nq}, nv={model.nv}, {model.contact.get_num_surfaces()} contact surfaces "
          f"({', '.join(sorted({s.geometry.kind for s in model.contact._surfaces}))})")
    for w in caught:
        print(f"   note: {w.message}")
    st = model.default_state()
    if qpos0 is None:
        qpos0 = model.qpos0

    # MuJoCo's qpos/qvel -> State -> qpos/qvel (a free joint: [p, quat] / [v world, omega body])
    rng = np.random.default_rng(0)
    qvel = rng.normal(size=model.nv)
    model.state_from_mujoco(st, qpos0, qvel)
    qpos_back, qvel_back = model.state_to_mujoco(st)
    print(f"   round trip qpos, qvel: max difference {np.abs(qpos_back - qpos0).max():.1e}, "
          f"{np.abs(qvel_back - qvel).max():.1e}")

    mujoco = _optional("mujoco")
    if mujoco is None:
        print("   mujoco is not installed: no comparison with mj_forward")
    else:
        m = mujoco.MjModel.from_xml_path(str(path))
        d = mujoco.MjData(m)
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        lifted = qpos0.copy()
        lifted[2] += 2.0  # in the air: no contact on either side, joint limits inactive
        model.state_from_mujoco(st, lifted, qvel)
        model.system.realize(st, Stage.Acceleration)
        d.qpos[:], d.qvel[:] = lifted, qvel
        mujoco.mj_forward(m, d)
        ours = model.udot_to_mujoco(st)
        print(f"   qacc vs mj_forward: max |difference| / max |qacc| = "
              f"{np.abs(ours - d.qacc).max() / np.abs(d.qacc).max():.1e}")

    # a second on the floor, at the model's own time step, zero controls (the contact linearized in the step)
    model.state_from_mujoco(st, qpos0, np.zeros(model.nv))
    sim = Simulation(model.system, st, integrator=SemiImplicitEulerIntegrator(model.system, model.timestep),
                     step_size=0.1)
    sim.run(1.0)
    z = model.state_to_mujoco(sim.get_state())[0][2]
    line = f"   after 1 s standing: torso height {z:.3f} m"
    if mujoco is not None:
        m = mujoco.MjModel.from_xml_path(str(path))
        d = mujoco.MjData(m)
        d.qpos[:] = qpos0
        mujoco.mj_step(m, d, int(round(1.0 / m.opt.timestep)))
        margin = max(float(m.geom_margin.max()), 0.0)
        line += f" (MuJoCo: {d.qpos[2]:.3f} m" + (f"; its contacts act {margin:g} m early, the geoms' margin, which "
                                                  "simtk does not build)" if margin > 0 else ")")
    print(line)


def go1_file() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    p = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/go1_description/urdf/go1.urdf"))
    return p if p.is_file() else None


LEGS = ("FR", "FL", "RR", "RL")
POSE = {"hip": 0.0, "thigh": 0.9, "calf": -1.8}


def pinocchio_part(plot: bool) -> None:
    path = go1_file()
    if path is None:
        print("== URDF: example-robot-data is not installed: pip install example-robot-data")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the visual meshes are not needed here
        robot = load_urdf(path, floating_base=True, contact=True, nonphysical_inertia="keep",
                          friction_velocity=0.05)
    st = robot.default_state()
    print(f"== URDF: {robot.name}: {st.get_nq()} q, {st.get_nu()} u, {robot.contact.get_num_surfaces()} contact "
          "surfaces")
    pin = _optional("pinocchio")
    rng = np.random.default_rng(1)
    if pin is None:
        print("   pinocchio is not installed: no comparison with pinocchio.aba")
    else:
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        data = pm.createData()
        # a random pose within the joints' ranges (beyond them simtk's stops push; aba has none)
        lo, hi = np.maximum(pm.lowerPositionLimit, -1.0), np.minimum(pm.upperPositionLimit, 1.0)
        q = pin.randomConfiguration(pm, lo, hi)
        q[2] += 2.0  # in the air: no floor yet anyway
        v = rng.uniform(-1, 1, pm.nv)
        robot.state_from_pinocchio(st, q, v)
        q_back, v_back = robot.state_to_pinocchio(st)
        print(f"   round trip q, v: max difference {np.abs(q_back - q).max():.1e}, {np.abs(v_back - v).max():.1e}")
        # Pinocchio's aba has no joint damping or friction: pass them as its tau
        tau = -np.array(pm.damping) * v - np.array(pm.friction) * np.tanh(v / 0.05)
        expected = pin.aba(pm, data, q, v, tau)
        ours = robot.udot_to_pinocchio(st)
        print(f"   a vs pinocchio.aba: max |difference| / max |a| = "
              f"{np.abs(ours - expected).max() / np.abs(expected).max():.1e}")

    robot.add_ground(0.0)  # a topology change: States made from here on have the floor
    st = robot.default_state()
    joints = {f"{leg}_{part}_joint": POSE[part] for leg in LEGS for part in POSE}
    for name, q in joints.items():
        robot.joints[name].set_one_q(st, 0, q)
    robot.system.realize(st, Stage.Position)
    lowest = min(robot.bodies[f"{leg}_foot"].get_body_origin_location(st)[2] for leg in LEGS)
    pin_q, _ = robot.state_to_pinocchio(st)
    pin_q[2] = 0.10 - lowest + 0.02  # the feet (2 cm spheres) 10 cm above the floor
    robot.state_from_pinocchio(st, pin_q, np.zeros(st.get_nu()))

    h = 1e-3
    sim = Simulation(robot.system, st, integrator=SemiExplicitEulerIntegrator(robot.system, h), step_size=h)
    angles = {n: f"{robot.joints[n].get_absolute_path()}/angle" for n in joints}
    sim.add_controller(PDController({angles[n]: (30.0, 1.0) for n in joints}, {angles[n]: q for n, q in joints.items()}),
                       name="hold")
    columns = [f"{robot.joints[n].get_absolute_path()}|mobility_forces" for n in joints]
    columns.append(f"{robot.root.get_absolute_path()}|position")
    probe = sim.add_output_probe(OutputProbe(columns, interval=0.05), name="torques")
    summary = sim.run(1.0)
    print(f"   dropped from 10 cm, PD hold for 1 s: {summary}")
    t, values = probe.to_numpy()
    tau = values[:, :12]
    print(f"   {'t (s)':>6} {'base z':>7}  " + " ".join(f"{n[:-6]:>9}" for n in list(joints)[:6]) + "  (N m)")
    for k in range(0, len(t), 4):
        print(f"   {t[k]:6.2f} {values[k, 14]:7.3f}  " + " ".join(f"{x:9.3f}" for x in tau[k, :6]))
    if plot:
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4))
        for j, n in enumerate(joints):
            ax.plot(t, tau[:, j], label=n)
        ax.set_xlabel("t (s)")
        ax.set_ylabel("joint torque (N m)")
        ax.legend(fontsize=6, ncol=3)
        out = Path(tempfile.gettempdir()) / "go1_torques.png"
        fig.savefig(out, dpi=120)
        print(f"   plot: {out}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        mujoco_part(Path(tmp))
    pinocchio_part("--plot" in sys.argv)


if __name__ == "__main__":
    main()
