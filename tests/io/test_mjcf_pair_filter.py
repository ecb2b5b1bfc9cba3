"""Which geom pairs touch, ``load_mjcf(..., contact=True)`` against MuJoCo, on the published models.

At random states of each gymnasium and dm_control model, the geom pairs simtk's contact detection
reports penetrating are the pairs MuJoCo's ``mj_forward`` reports penetrating (``data.contact`` with
``dist < 0``): MuJoCo's collision filter (contype/conaffinity, the parent-child rule, ``<exclude>``) is
reproduced exactly by cliques and excluded pairs. Pairs within ``GRAZE`` of first contact on either
side are left out of the comparison (the two narrow phases are different algorithms: MuJoCo's convex
ones iterate to ~1e-6), as are MuJoCo's explicit ``<pair>`` elements (not built).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from mjcf_common import random_state
from test_mjcf_published import CASES, _path

from simtk import Stage
from simtk.io import MjcfWarning, load_mjcf

mujoco = pytest.importorskip("mujoco")

#: penetrations this shallow (m) may be reported by one side and not the other
GRAZE = 1e-4
#: models whose random states make penetrating pairs (the others' geoms seldom or never meet)
MUST_TOUCH = {"ant", "humanoid", "walker2d", "half_cheetah", "hopper", "walker", "cheetah", "humanoid_CMU",
              "humanoid_CMU_V2020"}


@pytest.mark.parametrize("package,rel", CASES, ids=[f"{p}:{Path(r).stem}" for p, r in CASES])
def test_penetrating_pairs_are_mujocos(package, rel):
    path = _path(package, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MjcfWarning)
        model = load_mjcf(path, contact=True, limits=False)
    m = mujoco.MjModel.from_xml_path(str(path))
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT:
        pytest.skip("contact is disabled in this model")
    d = mujoco.MjData(m)
    hc = model.contact
    if hc is None:  # nothing collides in the file
        assert not (m.geom_contype.any() or m.geom_conaffinity.any())
        return
    geom_of = list(model.contact_geoms)  # surface -> geom index (MuJoCo's geom order)
    ours_geoms = set(geom_of)
    explicit = {frozenset((int(a), int(b))) for a, b in zip(m.pair_geom1, m.pair_geom2)}
    rng = np.random.default_rng(17)
    st = model.default_state()
    compared = 0
    for _ in range(12):
        qpos, _, _ = random_state(m, rng, spread=0.5)
        model.state_from_mujoco(st, qpos, np.zeros(m.nv))
        model.system.realize(st, Stage.Position)
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        # the surfaces are where MuJoCo's geoms are (the index mapping is right)
        for k, g in enumerate(geom_of):
            s = hc._surfaces[k]
            if s.geometry.kind in ("HalfSpace", "ConvexHull"):
                continue
            p = np.asarray((s.mobod.get_body_transform(st) * s.X_BS).p)
            assert np.abs(p - d.geom_xpos[g]).max() < 1e-9 * (1 + np.abs(p).max())
        c = hc.get_contacts(st)
        ours = {frozenset((geom_of[int(i)], geom_of[int(j)])) for i, j, dep in zip(c.surf1, c.surf2, c.depth)}
        ours_deep = {frozenset((geom_of[int(i)], geom_of[int(j)])) for i, j, dep in zip(c.surf1, c.surf2, c.depth)
                     if dep > GRAZE}
        con = d.contact[:d.ncon]
        theirs = {frozenset((int(a), int(b))) for a, b, dist in zip(con.geom[:, 0], con.geom[:, 1], con.dist)
                  if dist < 0 and int(a) in ours_geoms and int(b) in ours_geoms} - explicit
        theirs_deep = {frozenset((int(a), int(b))) for a, b, dist in zip(con.geom[:, 0], con.geom[:, 1], con.dist)
                       if dist < -GRAZE and int(a) in ours_geoms and int(b) in ours_geoms} - explicit
        assert ours_deep <= theirs, [tuple(m.geom(int(g)).name for g in p) for p in ours_deep - theirs]
        assert theirs_deep <= ours, [tuple(m.geom(int(g)).name for g in p) for p in theirs_deep - ours]
        compared += len(theirs_deep)
    print(f"{rel}: {compared} penetrating pairs compared")
    if Path(rel).stem in MUST_TOUCH:
        assert compared > 0  # the random states made contacts to compare
