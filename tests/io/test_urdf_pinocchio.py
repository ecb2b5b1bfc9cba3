"""URDF import against Pinocchio loading the same file: mass matrix, forward and inverse dynamics.

Both libraries read the file themselves; nothing of simtk's model goes into Pinocchio's. The maps
between the two sets of coordinates (by joint name):

- revolute and prismatic: the same q (angle or displacement along the URDF axis) and u;
- continuous: Pinocchio's q is (cos, sin) of simtk's angle; same u;
- the floating base (Free / JointModelFreeFlyer): simtk q = (quaternion w x y z, p), Pinocchio's
  (p, x y z w); simtk u = (w, v) in Ground, Pinocchio's v = (v, w) in the base frame, so
  u = T v with T = [[0, R], [R, 0]] and udot = T vdot + (0, R (w x v)).

These maps are the library's (``UrdfModel.state_from_pinocchio``, ``udot_to_pinocchio``,
``mobility_forces_from_pinocchio``, given Pinocchio's model for its joint order); the test checks
them against each other (T from the force map against u from the state map).

Hence M_pin = T^T M T, tau_pin = T^T tau. simtk applies the file's joint damping as a force
element (-c u); Pinocchio's ABA does not, so its tau includes -c v.

Some robot files have inertias no mass distribution has (allegro, anymal, hyq, tiago); simtk
repairs those and warns, Pinocchio takes them as written. For those robots both libraries load a
copy of the file in which this test has replaced the offending inertias by physical ones (its own
repair, not simtk's).
"""
from __future__ import annotations

import importlib.metadata
import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from simtk import Force, Stage
from simtk.io.urdf import load_urdf
from tolerances import EPS

pin = pytest.importorskip("pinocchio")


def _robots_dir() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None


ROBOTS = _robots_dir()
pytestmark = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")

#: (file under robots/, floating base): arms, quadrupeds, humanoids, a hand, a mobile manipulator.
CASES = [
    ("ur_description/urdf/ur5_robot.urdf", False),
    ("panda_description/urdf/panda.urdf", False),
    ("kinova_description/robots/kinova.urdf", False),
    ("xarm_description/urdf/xarm7.urdf", False),
    ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    ("tiago_description/robots/tiago_no_hand.urdf", False),
    ("solo_description/robots/solo12.urdf", True),
    ("anymal_b_simple_description/robots/anymal.urdf", True),
    ("hyq_description/robots/hyq_no_sensors.urdf", True),
    ("go2_description/urdf/go2.urdf", True),
    ("talos_data/robots/talos_reduced.urdf", True),
    ("icub_description/robots/icub.urdf", True),
]

#: Two implementations of recursive sweeps over up to ~60 bodies in SI units: round-off relative to
#: the largest entry of the compared quantity. Measured up to ~8 EPS for the mass matrix and
#: inverse dynamics; forward dynamics is a solve with M, whose round-off grows with cond(M) (iCub's,
#: with links of a few grams, reaches 1e10 and its relative error 2e-8).
SWEEP_MARGIN = 2**8
SOLVE_MARGIN = 2**10


def _rpy(rpy) -> np.ndarray:
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def physical_copy(urdf: Path, tmp_path: Path) -> Path:
    """``urdf`` itself, or a copy whose non-physical central inertias are made physical by adding
    the smallest multiple of the identity that satisfies the triangle inequality and positivity."""
    tree = ET.parse(urdf)
    changed = False
    for inertial in tree.getroot().iter("inertial"):
        m = float(inertial.find("mass").get("value"))
        el = inertial.find("inertia")
        g = {k: float(el.get(k, 0.0)) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
        I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
        origin = inertial.find("origin")
        rpy = [float(v) for v in origin.get("rpy", "0 0 0").split()] if origin is not None else [0, 0, 0]
        R = _rpy(rpy)
        I = R @ I @ R.T
        lam = np.linalg.eigvalsh(I)
        scale = max(float(np.abs(I).max()), 1e-300)
        delta = max(lam[2] - lam[0] - lam[1], -lam[0], 0.0)
        if m == 0 or delta <= 1e-9 * scale:
            continue
        I = I + 1.001 * delta * np.eye(3)
        changed = True
        if origin is not None:
            origin.set("rpy", "0 0 0")
        for k, (a, b) in {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2),
                          "iyz": (1, 2)}.items():
            el.set(k, repr(float(I[a, b])))
    if not changed:
        return urdf
    out = tmp_path / urdf.name
    tree.write(out)
    return out


class Twins:
    """simtk's and Pinocchio's models of one file; the coordinate maps are the library's
    (``UrdfModel.state_from_pinocchio`` and its inverses)."""

    def __init__(self, urdf: Path, floating: bool):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # Pinocchio's aba applies no joint friction, and its default model keeps mimic joints independent
            self.sim = load_urdf(urdf, floating_base=floating, friction_velocity=None, mimic=False)
        # the physical copy needs no repair: simtk must take every inertia as written
        assert not any("non-physical" in str(w.message) for w in caught), [str(w.message) for w in caught]
        self.discrete = Force.DiscreteForces(self.sim.forces, self.sim.matter, name="tau")
        self.pm = (pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer()) if floating
                   else pin.buildModelFromUrdf(str(urdf)))
        self.data = self.pm.createData()
        self.state = self.sim.default_state()
        assert self.state.get_nu() == self.pm.nv

    def randomize(self, rng):
        """A random configuration within the joint limits and random speeds; returns (q_pin, v_pin)."""
        pm = self.pm
        lo, hi = np.full(pm.nq, -1.0), np.full(pm.nq, 1.0)
        for j in range(1, pm.njoints):
            if pm.nqs[j] == 1:
                lo[pm.idx_qs[j]], hi[pm.idx_qs[j]] = self.sim.limits.get(pm.names[j], (-math.pi, math.pi))
        q_pin, v_pin = pin.randomConfiguration(pm, lo, hi), rng.uniform(-1.0, 1.0, pm.nv)
        self.sim.state_from_pinocchio(self.state, q_pin, v_pin, pin_model=pm)
        self.sim.system.realize(self.state, Stage.Position)
        return q_pin, v_pin

    def velocity_map(self, v_pin=None):
        """T with u = T v_pin and the vector Tdot v_pin (zero when v_pin is None). T's columns are the
        library's map of Pinocchio's unit generalized forces (T is orthogonal, so forces map as
        velocities do); Tdot v_pin = (0, R (w_B x v_B)) on the floating base."""
        nv = self.pm.nv
        T = np.column_stack([self.sim.mobility_forces_from_pinocchio(self.state, e, pin_model=self.pm)
                             for e in np.eye(nv)])
        Tdot_v = np.zeros(nv)
        if v_pin is not None and self.pm.joints[1].shortname() == "JointModelFreeFlyer":
            R = self.sim.root.get_mobilizer_transform(self.state).R.matrix
            us = self.sim.coordinate_slices(self.state)["root_joint"][1]
            Tdot_v[us.start + 3:us.stop] = R @ np.cross(v_pin[3:6], v_pin[0:3])
        return T, Tdot_v


def _rel(actual, expected) -> float:
    return float(np.abs(np.asarray(actual) - expected).max() / max(np.abs(expected).max(), 1e-300))


@pytest.fixture(scope="module")
def measured():
    """Relative errors measured by the tests, printed at the end (pytest -s) for the report."""
    out = {}
    yield out
    for k, v in sorted(out.items()):
        print(f"{k}: {v:.2e}")


@pytest.mark.parametrize("rel,floating", CASES, ids=[Path(c[0]).stem for c in CASES])
def test_dynamics_match_pinocchio(rel, floating, tmp_path, measured):
    urdf = physical_copy(ROBOTS / rel, tmp_path)
    tw = Twins(urdf, floating)
    rng = np.random.default_rng(sum(map(ord, rel)))
    matter, system, st = tw.sim.matter, tw.sim.system, tw.state
    g = np.array(tw.pm.gravity.linear)
    damping = np.array(tw.pm.damping)
    for trial in range(3):
        q_pin, v_pin = tw.randomize(rng)
        T, Tdot_v = tw.velocity_map(v_pin)
        assert np.allclose(T @ v_pin, st.get_u(), rtol=0, atol=16 * EPS)  # the library's two maps agree
        # mass matrix
        M = matter.calc_m(st)
        M_pin = pin.crba(tw.pm, tw.data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        err_m = _rel(T.T @ M @ T, M_pin)
        assert err_m <= SWEEP_MARGIN * EPS, f"mass matrix: relative error {err_m:.3g}"
        # forward dynamics: gravity and damping elements plus random generalized forces
        tau = rng.uniform(-2.0, 2.0, st.get_nu())
        tw.discrete.set_all_mobility_forces(st, tau)
        system.realize(st, Stage.Acceleration)
        u = np.array(st.get_u())
        expected = pin.aba(tw.pm, tw.data, q_pin, v_pin, T.T @ tau - damping * v_pin)
        cond = np.linalg.cond(M)
        err_a = _rel(tw.sim.udot_to_pinocchio(st, pin_model=tw.pm), expected)
        assert err_a <= SOLVE_MARGIN * cond * EPS, f"forward dynamics: relative error {err_a:.3g}, cond(M) {cond:.3g}"
        if "icub" not in rel:
            # The bar of 1e-10 relative holds for every robot here but iCub, whose M (links of a few
            # grams) has cond ~1e8-1e10: any solve with it, Pinocchio's included, loses that much.
            assert err_a <= 1e-10, f"forward dynamics: relative error {err_a:.3g} above 1e-10"
        # inverse dynamics with the gravity element's body forces
        F_gravity = system.get_rigid_body_forces(st, Stage.Dynamics)
        vdot = rng.uniform(-2.0, 2.0, st.get_nu())
        residual = matter.calc_residual_force_ignoring_constraints(st, np.zeros(st.get_nu()), F_gravity,
                                                                  T @ vdot + Tdot_v)
        err_i = _rel(T.T @ residual, pin.rnea(tw.pm, tw.data, q_pin, v_pin, vdot))
        assert err_i <= SWEEP_MARGIN * EPS, f"inverse dynamics: relative error {err_i:.3g}"
        assert np.allclose(g, [0, 0, -9.81])  # both use the loader's default gravity
        key = Path(rel).stem
        for what, e in (("M", err_m), ("fd", err_a), ("id", err_i)):
            measured[f"{key} {what}"] = max(measured.get(f"{key} {what}", 0.0), e)
        if tw.sim.dampers:  # the damping really entered: u was nonzero
            assert np.abs(u).max() > 0
