"""The MuJoCo models shipped with gymnasium and dm_control, loaded by `load_mjcf` and checked against
MuJoCo's own compiler (body masses, centers, inertias) and forward dynamics (``mj_forward``'s qacc at
random states and controls, with what simtk does not build switched off on MuJoCo's side)."""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from mjcf_common import compare_mass, compare_qacc, mujoco_without_unbuilt

from simtk.io import MjcfWarning, load_mjcf

mujoco = pytest.importorskip("mujoco")

# relative agreement of two O(n) dynamics algorithms in double precision on trees of <= 60 dofs with
# mass ratios ~1e3: a few hundred ulps, taken with a wide margin
EPS = np.finfo(float).eps
# Forward dynamics of two implementations (a solve with M of up to 62 mobilities each), relative to the
# largest qacc: measured up to ~900 EPS (dm_control's swimmer) since armature is a term of M rather than
# rotor bodies held by speed constraints (whose solve needed 1e-8); a margin of ~16 over that.
TOL_QACC = 2**14 * EPS
TOL_MASS = 1e4 * EPS  # MuJoCo diagonalizes the inertia (one eigen-solve) and stores it in float64


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # finds the package without importing it
    return None if spec is None or spec.origin is None else Path(spec.origin).parent


_GYM = ["ant", "half_cheetah", "hopper", "humanoid", "walker2d", "swimmer", "reacher", "inverted_pendulum",
        "inverted_double_pendulum"]
_SUITE = ["cartpole", "acrobot", "finger", "cheetah", "walker", "humanoid", "humanoid_CMU", "swimmer"]
CASES = [("gymnasium", f"envs/mujoco/assets/{n}.xml") for n in _GYM]
CASES += [("dm_control", f"suite/{n}.xml") for n in _SUITE]
CASES += [("dm_control", "locomotion/walkers/assets/humanoid_CMU_V2020.xml")]


def _path(package: str, rel: str) -> Path:
    base = _package_dir(package)
    if base is None:
        pytest.skip(f"{package} is not installed")
    p = base / rel
    if not p.is_file():
        pytest.skip(f"{p} is not in this {package} version")
    return p


@pytest.mark.parametrize("package,rel", CASES, ids=[f"{p}:{Path(r).stem}" for p, r in CASES])
def test_published_model_matches_mujoco(package, rel):
    """Law: simtk's System built from a published MJCF has MuJoCo's compiled body masses, centers and
    inertias, and its forward dynamics gives ``mj_forward``'s qacc (passive forces, armature and
    actuators included) at random states, to 1e-8 relative."""
    path = _path(package, rel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf(path, limits=False)
    assert len([w for w in caught if issubclass(w.category, MjcfWarning)]) <= 1  # everything unbuilt, once
    m = mujoco_without_unbuilt(mujoco, path)
    assert (model.nq, model.nv, len(model.actuators)) == (m.nq, m.nv, m.nu)
    assert compare_mass(mujoco, m, model) < TOL_MASS
    np.testing.assert_allclose(model.qpos0, m.qpos0, rtol=0, atol=1e3 * EPS)
    gravity_off = m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY
    np.testing.assert_array_equal(model.gravity, 0.0 * m.opt.gravity if gravity_off else m.opt.gravity)
    assert model.timestep == m.opt.timestep
    assert compare_qacc(mujoco, m, model, np.random.default_rng(32)) < TOL_QACC


def test_unbuilt_elements_are_named_once():
    """The gymnasium humanoid's tendons and contact geoms are named in one MjcfWarning."""
    path = _path("gymnasium", "envs/mujoco/assets/humanoid.xml")
    with pytest.warns(MjcfWarning) as caught:
        model = load_mjcf(path)
    msgs = [str(w.message) for w in caught if issubclass(w.category, MjcfWarning)]
    assert len(msgs) == 1 and "tendon" in msgs[0] and "contact geom" in msgs[0]
    assert model.warnings == msgs
    assert any(g.contype for g in model.geoms)
