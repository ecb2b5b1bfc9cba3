"""Armature (rotor inertia) against Pinocchio's ``Model.armature``: a robot of example-robot-data loaded by
both libraries, the same random armature given to each joint in both, then the mass matrix (``crba``),
forward dynamics (``aba``) and inverse dynamics (``rnea``) compared as in ``test_urdf_pinocchio``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_urdf_pinocchio import ROBOTS, SOLVE_MARGIN, SWEEP_MARGIN, Twins, _rel, physical_copy

from simtk import Stage
from tolerances import EPS

pin = pytest.importorskip("pinocchio")
pytestmark = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")


@pytest.mark.parametrize("rel,floating", [("ur_description/urdf/ur5_robot.urdf", False),
                                          ("solo_description/robots/solo12.urdf", True)],
                         ids=["ur5_robot", "solo12"])
def test_armature_matches_pinocchio(rel, floating, tmp_path):
    tw = Twins(physical_copy(ROBOTS / rel, tmp_path), floating)
    rng = np.random.default_rng(sum(map(ord, rel)) + 1)
    pm, st, matter, system = tw.pm, tw.state, tw.sim.matter, tw.sim.system
    arm = np.zeros(pm.nv)
    for j in range(1, pm.njoints):
        name, iv, nv = pm.names[j], pm.idx_vs[j], pm.nvs[j]
        if name == "root_joint":
            # none on the floating base: Pinocchio's linear speed is in the moving base frame, where
            # a * vdot is not simtk's a * (d/dt of the speed in Ground) (they differ by a w x v term)
            continue
        mb = tw.sim.joints[name]
        a = float(rng.uniform(0.05, 0.5))
        arm[iv:iv + nv] = a
        mb.set_armature(a)
    pm.armature = arm
    assert np.abs(np.array(pm.armature)).max() > 0
    damping = np.array(pm.damping)
    for _ in range(3):
        q_pin, v_pin = tw.randomize(rng)
        T, Tdot_v = tw.velocity_map(v_pin)
        M = matter.calc_m(st)
        M_pin = pin.crba(pm, tw.data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        assert _rel(T.T @ M @ T, M_pin) <= SWEEP_MARGIN * EPS
        tau = rng.uniform(-2.0, 2.0, st.get_nu())
        tw.discrete.set_all_mobility_forces(st, tau)
        system.realize(st, Stage.Acceleration)
        vdot = pin.aba(pm, tw.data, q_pin, v_pin, T.T @ tau - damping * v_pin)
        cond = np.linalg.cond(M)
        assert _rel(st.get_udot(), T @ vdot + Tdot_v) <= SOLVE_MARGIN * cond * EPS
        F_gravity = system.get_rigid_body_forces(st, Stage.Dynamics)
        vdot = rng.uniform(-2.0, 2.0, st.get_nu())
        residual = matter.calc_residual_force_ignoring_constraints(st, np.zeros(st.get_nu()), F_gravity,
                                                                  T @ vdot + Tdot_v)
        # Pinocchio's rnea adds armature * vdot as well (M vdot with its armed M)
        expected = pin.rnea(pm, tw.data, q_pin, v_pin, vdot)
        assert _rel(T.T @ residual, expected) <= SWEEP_MARGIN * EPS, Path(rel).stem
