"""Shared by the MJCF tests: MuJoCo's model with the elements simtk does not build switched off, random
states in MuJoCo's layout, and simtk's accelerations in MuJoCo's layout."""
from __future__ import annotations

import numpy as np

from simtk import Stage


def mujoco_without_unbuilt(mujoco, path):
    """MuJoCo's compiled model with contacts, equality constraints, limits, friction loss and fluid
    forces off (simtk's load is asked for no limits; the others it does not build)."""
    m = mujoco.MjModel.from_xml_path(str(path))
    off = mujoco.mjtDisableBit
    m.opt.disableflags |= off.mjDSBL_CONTACT | off.mjDSBL_EQUALITY | off.mjDSBL_LIMIT | off.mjDSBL_FRICTIONLOSS
    m.opt.density = 0.0
    m.opt.viscosity = 0.0
    return m


def random_state(m, rng, spread: float = 0.3):
    """A random (qpos, qvel, ctrl) of MuJoCo model ``m``: unit quaternions, controls in their ranges."""
    qpos = m.qpos0 + spread * rng.standard_normal(m.nq)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == 0:  # free
            qpos[a + 3:a + 7] /= np.linalg.norm(qpos[a + 3:a + 7])
        elif m.jnt_type[j] == 1:  # ball
            qpos[a:a + 4] /= np.linalg.norm(qpos[a:a + 4])
    qvel = rng.standard_normal(m.nv)
    ctrl = rng.uniform(-1.0, 1.0, m.nu)
    for k in range(m.nu):
        if m.actuator_ctrllimited[k]:
            lo, hi = m.actuator_ctrlrange[k]
            ctrl[k] = rng.uniform(lo, hi)
    return qpos, qvel, ctrl


def compare_qacc(mujoco, m, model, rng, trials: int = 3):
    """The largest |qacc_simtk - qacc_mujoco| / max(1, |qacc_mujoco|) over random states."""
    d = mujoco.MjData(m)
    worst = 0.0
    for _ in range(trials):
        qpos, qvel, ctrl = random_state(m, rng)
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(m, d)
        state = model.default_state()
        model.state_from_mujoco(state, qpos, qvel)
        if m.nu:
            model.set_controls(state, ctrl)
        model.system.realize(state, Stage.Acceleration)
        qacc = model.udot_to_mujoco(state)
        worst = max(worst, float(np.abs(qacc - d.qacc).max() / max(1.0, np.abs(d.qacc).max())))
    return worst


def compare_mass(mujoco, m, model):
    """The largest relative difference of body masses, centers and inertias (about the center, in the
    body frame) between MuJoCo's compiled model and simtk's bodies."""
    worst = 0.0
    for i in range(1, m.nbody):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}"  # load_mjcf names unnamed ones so
        mp = model.bodies[name].get_body().get_default_rigid_body_mass_properties()
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, m.body_iquat[i])
        R = R.reshape(3, 3)
        I_mj = R @ np.diag(m.body_inertia[i]) @ R.T
        scale_I = max(np.abs(I_mj).max(), 1e-300)
        scale_m = max(m.body_mass[i], 1e-300)
        worst = max(worst, abs(mp.mass - m.body_mass[i]) / scale_m,
                    float(np.abs(np.asarray(mp.get_mass_center()) - m.body_ipos[i]).max()) / max(1.0, np.abs(m.body_ipos[i]).max()),
                    float(np.abs(np.asarray(mp.central_inertia().matrix) - I_mj).max()) / scale_I)
    return worst
