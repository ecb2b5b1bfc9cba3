"""MJCF geoms as contact surfaces (``load_mjcf(contact=True)``).

Checked against MuJoCo's own compiler and collision pipeline where they apply: the surfaces' sizes and
world poses against ``geom_size``, ``geom_xpos`` and ``geom_xmat`` at random states; which geom pairs
touch against the pairs ``mj_forward`` reports when every geom overlaps every other; a ball's rest
depth on a plane against Hertz's closed form; the gymnasium ant standing on its legs.
"""
from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from simtk import Stage
from simtk.io import MjcfWarning, load_mjcf
from simtk.math import SemiExplicitEulerIntegrator
from simtk.simulation import Simulation
from tolerances import EPS

SHAPES = """<mujoco model="shapes">
  <asset>
    <mesh name="tetra" vertex="0 0 0  0.1 0 0  0 0.2 0  0 0 0.3"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" euler="10 -5 0" pos="0 0 -0.2"/>
    <body name="a" pos="0.1 0.2 0.5" euler="20 30 40">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.07" pos="0.01 0.02 0.03"/>
      <geom name="caps" type="capsule" fromto="0 0 0 0.3 0.05 0.1" size="0.03"/>
      <body name="b" pos="0.3 0 0">
        <joint name="hinge" axis="0 1 1"/>
        <inertial pos="0.01 0 0" mass="1" diaginertia="0.01 0.02 0.03"/>
        <geom name="brick" type="box" size="0.1 0.05 0.02" euler="0 0 30"/>
        <geom name="ell" type="ellipsoid" size="0.05 0.07 0.09" pos="0 0.1 0" axisangle="1 1 0 25"/>
        <geom name="cyl" type="cylinder" size="0.04 0.12" pos="0 0 0.1" euler="90 0 0"/>
        <geom name="tet" type="mesh" mesh="tetra" pos="0.2 0 0"/>
        <geom name="ghost" type="sphere" size="0.05" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

#: every geom overlaps every other and the floor: the pairs that touch are the filter's
FILTER = """<mujoco model="filter">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="a" pos="0 0 0.05"><freejoint/><geom name="ga" size="0.1" contype="1" conaffinity="0"/>
      <body name="a2" pos="0.01 0 0"><geom name="ga2" size="0.1" contype="1" conaffinity="0"/></body>
    </body>
    <body name="shelf" pos="0.04 0.04 0.04"><geom name="gs" size="0.1"/></body>
    <body name="b" pos="0.05 0 0.05"><freejoint/><geom name="gb" size="0.1" contype="1" conaffinity="0"/></body>
    <body name="c" pos="0 0.05 0.05"><freejoint/><geom name="gc" size="0.1" contype="3" conaffinity="3"/>
      <body name="d" pos="0.03 0.03 0"><joint axis="1 0 0"/><geom name="gd" size="0.1"/></body>
    </body>
    <body name="e" pos="0.02 0.02 0.08"><freejoint/><geom name="ge" size="0.1" contype="1" conaffinity="0"/></body>
  </worldbody>
  <contact><exclude body1="e" body2="a"/></contact>
</mujoco>
"""

#: a chain whose links touch each other but not their parents: no cliques can say it, excluded pairs do
CHAIN = """<mujoco model="chain">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="p" pos="0 0 0.05"><freejoint/><geom name="gp" size="0.1"/>
      <body name="q" pos="0.05 0 0"><joint axis="1 0 0"/><geom name="gq" size="0.1"/>
        <body name="r" pos="0.05 0 0"><joint axis="1 0 0"/><geom name="gr" size="0.1"/></body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

BALL = """<mujoco model="ball">
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="ball" pos="0 0 0.3"><freejoint/><geom name="s" size="0.1" mass="2"/></body>
  </worldbody>
</mujoco>
"""


def _write(tmp_path: Path, text: str, name: str = "m.xml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _load(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MjcfWarning)
        return load_mjcf(path, contact=True, **kw)


def _surface_pose(model, k: int, state):
    s = model.contact._surfaces[k]
    X = s.mobod.get_body_transform(state) * s.X_BS
    return np.asarray(X.R.matrix), np.asarray(X.p)


def test_geoms_become_surfaces_as_mujoco_places_them(tmp_path):
    """Law: each colliding geom is one surface of the kind the module names (plane -> HalfSpace,
    cylinder -> Cylinder, mesh -> ConvexHull), with MuJoCo's compiled size, and at random states its
    frame in Ground is MuJoCo's geom_xpos / geom_xmat (a plane's inward x axis is MuJoCo's -z); a geom
    with contype = conaffinity = 0 is not a surface; a mesh's hull has the mesh's vertices, placed in
    Ground where MuJoCo places them."""
    mujoco = pytest.importorskip("mujoco")
    pytest.importorskip("trimesh")
    path = _write(tmp_path, SHAPES)
    model = _load(path)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    names = [model.geoms[g].name for g in model.contact_geoms]
    assert names == ["floor", "ball", "caps", "brick", "ell", "cyl", "tet"]
    kinds = [model.contact._surfaces[k].geometry.kind for k in range(len(names))]
    assert kinds == ["HalfSpace", "Sphere", "Capsule", "Brick", "Ellipsoid", "Cylinder", "ConvexHull"]
    rng = np.random.default_rng(3)
    st = model.default_state()
    for _ in range(3):
        qpos = np.concatenate([rng.normal(size=3), rng.normal(size=4), rng.normal(size=1)])
        qpos[3:7] /= np.linalg.norm(qpos[3:7])
        model.state_from_mujoco(st, qpos, np.zeros(model.nv))
        model.system.realize(st, Stage.Position)
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        for k, name in enumerate(names[:-1]):  # MuJoCo moves a mesh geom's frame to its inertial frame
            gid = m.geom(name).id
            R, p = _surface_pose(model, k, st)
            tol = 64 * EPS * (1 + np.abs(d.geom_xpos[gid]).max())
            if kinds[k] == "HalfSpace":
                assert np.abs(R[:, 0] + d.geom_xmat[gid].reshape(3, 3)[:, 2]).max() < 64 * EPS
                assert abs(np.dot(p - d.geom_xpos[gid], R[:, 0])) < tol  # on the plane
                continue
            assert np.abs(p - d.geom_xpos[gid]).max() < tol, name
            R_mj = d.geom_xmat[gid].reshape(3, 3)
            if name == "caps":  # from fromto: only the axis is defined (MuJoCo points it the other way)
                assert abs(abs(R[:, 2] @ R_mj[:, 2]) - 1) < 64 * EPS
            else:
                assert np.abs(R - R_mj).max() < 64 * EPS, name
            params = np.array(model.contact._surfaces[k].geometry.params)
            size = m.geom_size[gid]
            n = {"Sphere": 1, "Capsule": 2, "Cylinder": 2}.get(kinds[k], 3)
            assert np.abs(params[:n] - size[:n]).max() < 16 * EPS * size.max(), name
        # the hull's vertices in Ground are MuJoCo's mesh vertices placed by the geom's pose (MuJoCo
        # moves them to the mesh's inertial frame, and its geom frame with them)
        s = model.contact._surfaces[6]
        R, p = _surface_pose(model, 6, st)
        ours = np.sort(s.geometry.vertices @ R.T + p, axis=0)
        gid = m.geom("tet").id
        mv = m.mesh_vert[m.mesh_vertadr[m.geom_dataid[gid]]:][:m.mesh_vertnum[m.geom_dataid[gid]]]
        theirs = np.sort(mv @ d.geom_xmat[gid].reshape(3, 3).T + d.geom_xpos[gid], axis=0)
        assert np.abs(ours - theirs).max() < 1e-6  # (MuJoCo keeps mesh vertices in float32)


def test_pairs_that_touch_are_mujocos(tmp_path):
    """Law: with every geom overlapping every other, the surface pairs in contact are exactly the geom
    pairs MuJoCo's collision reports (contype/conaffinity, a parent and child, an <exclude>, the
    world's geoms among themselves, a body welded to the world or to its parent counted as that one),
    when cliques can say it (no pair is reported lost)."""
    mujoco = pytest.importorskip("mujoco")
    path = _write(tmp_path, FILTER)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf(path, contact=True)
    assert not any("lets touch do not" in str(w.message) for w in caught)
    st = model.default_state()
    model.system.realize(st, Stage.Position)
    c = model.contact.get_contacts(st)
    geom = [model.geoms[g].name for g in model.contact_geoms]
    ours = {frozenset((geom[int(i)], geom[int(j)])) for i, j in zip(c.surf1, c.surf2)}
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    theirs = {frozenset((m.geom(int(d.contact.geom1[k])).name, m.geom(int(d.contact.geom2[k])).name))
              for k in range(d.ncon)}
    assert len(theirs) > 5  # the case has something to say
    assert ours == theirs


def test_a_filter_cliques_cannot_say_is_kept_exactly(tmp_path):
    """A chain p-q-r whose links all collide: MuJoCo lets p and r touch (not parent and child), but p-q
    and q-r must not, which no cliques can say (they would put all three in one): the excluded pairs
    p-q and q-r keep them apart, p-r touches, and the floor touches all three, as in MuJoCo."""
    mujoco = pytest.importorskip("mujoco")
    path = _write(tmp_path, CHAIN)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf(path, contact=True)
    assert not any("lets touch" in str(w.message) for w in caught)
    assert len(model.contact.get_excluded_pairs()) == 2
    st = model.default_state()
    model.system.realize(st, Stage.Position)
    c = model.contact.get_contacts(st)
    geom = [model.geoms[g].name for g in model.contact_geoms]
    ours = {frozenset((geom[int(i)], geom[int(j)])) for i, j in zip(c.surf1, c.surf2)}
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    theirs = {frozenset((m.geom(int(d.contact.geom1[k])).name, m.geom(int(d.contact.geom2[k])).name))
              for k in range(d.ncon)}
    assert frozenset(("gp", "gr")) in theirs and len(theirs) == 4
    assert ours == theirs


def test_ball_comes_to_rest_on_the_plane_at_hertz_depth(tmp_path):
    """A 2 kg ball of radius 0.1 dropped on an MJCF plane comes to rest with its centre at its radius
    less the Hertz depth d of the pair's law (m g = 4/3 k'^(3/2) sqrt(R) d^(3/2), k' = k1' k2'/(k1'+k2'),
    k_i' = k_i^(2/3): Simbody's combination, computed here from the surfaces' stiffnesses); and that
    depth is the module's mapping of MuJoCo's default solref/solimp, 3/2 g (dmax timeconst)^2, to the
    1.5 % the rigid floor's finite stiffness allows."""
    path = _write(tmp_path, BALL)
    model = _load(path)
    k_ball = model.contact.get_surface_parameters(1)["stiffness"]
    k_floor = model.contact.get_surface_parameters(0)["stiffness"]
    kb, kf = k_ball ** (2 / 3), k_floor ** (2 / 3)
    kp = kb * kf / (kb + kf)
    g, m, R = 9.81, 2.0, 0.1
    depth = (m * g / (4 / 3 * kp**1.5 * math.sqrt(R))) ** (2 / 3)
    assert abs(depth / (1.5 * g * (0.95 * 0.02) ** 2) - 1) < 0.015
    st = model.default_state()
    integ = SemiExplicitEulerIntegrator(model.system, model.timestep)
    sim = Simulation(model.system, st, integrator=integ, step_size=0.1)
    sim.run(2.0)
    end = sim.get_state()
    qpos, qvel = model.state_to_mujoco(end)
    assert np.isfinite(qpos).all()
    assert abs(qpos[2] - (R - depth)) < 1e-3 * depth  # settled: the damped oscillation is long gone
    assert np.abs(qvel).max() < 1e-3


def test_ant_stands_on_its_legs():
    """The gymnasium ant (contact=True, zero controls) set on the floor from gymnasium's initial pose
    stands for 1 s at its own time step: the torso stays level and between 0.45 and 0.6 m (it starts at
    0.55 m with its feet a little in the floor; MuJoCo's stays at 0.57 m, its contacts acting 1 cm
    early, the geoms' margin), and everything stays finite."""
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or spec.origin is None:
        pytest.skip("gymnasium is not installed")
    path = Path(spec.origin).parent / "envs/mujoco/assets/ant.xml"
    model = _load(path)
    assert model.contact.get_num_surfaces() == 14  # the floor, the torso and 12 leg capsules
    st = model.default_state()
    model.state_from_mujoco(st, [0, 0, 0.55, 1, 0, 0, 0, 0, 1, 0, -1, 0, -1, 0, 1], np.zeros(model.nv))
    sim = Simulation(model.system, st, integrator=SemiExplicitEulerIntegrator(model.system, model.timestep),
                     step_size=0.1)
    heights = []
    for k in range(10):
        sim.run(round(0.1 * (k + 1), 10))
        qpos, qvel = model.state_to_mujoco(sim.get_state())
        assert np.isfinite(qpos).all() and np.isfinite(qvel).all()
        heights.append(qpos[2])
        w, x, y = qpos[3:6] / np.linalg.norm(qpos[3:7])
        assert 1 - 2 * (x * x + y * y) > math.cos(math.radians(5))  # level within 5 degrees
    assert 0.45 < min(heights) and max(heights) < 0.6


def test_contact_parameters_and_refusals(tmp_path):
    """``contact_parameters`` replaces the derived law on every surface; an unknown key or a negative
    value is refused before the file is read; without contact=True there is no contact element."""
    path = _write(tmp_path, BALL)
    model = _load(path, contact_parameters={"stiffness": 1e6, "static_friction": 0.3, "dynamic_friction": 0.2})
    for k in range(2):
        law = model.contact.get_surface_parameters(k)
        assert (law["stiffness"], law["static_friction"], law["dynamic_friction"]) == (1e6, 0.3, 0.2)
    with pytest.raises(ValueError, match="unknown key"):
        load_mjcf(tmp_path / "absent.xml", contact=True, contact_parameters={"stifness": 1.0})
    with pytest.raises(ValueError, match="stiffness"):
        load_mjcf(tmp_path / "absent.xml", contact=True, contact_parameters={"stiffness": -1.0})
    with pytest.warns(MjcfWarning, match="no contact surfaces"):
        assert load_mjcf(path).contact is None


def test_what_is_not_a_surface_is_named(tmp_path):
    """A height field is left out and a <pair> is not built: both named in the one warning, while the
    sphere beside them is a surface; and the geoms' own warning (no contact surfaces) is gone."""
    text = BALL.replace('<geom name="floor" type="plane" size="5 5 0.1"/>',
                        '<geom name="floor" type="plane" size="5 5 0.1"/><geom name="terrain" type="hfield" '
                        'hfield="h"/>').replace("<worldbody>", '<asset><hfield name="h" nrow="2" ncol="2" '
                                                              'size="1 1 0.1 0.1"/></asset><worldbody>')
    text = text.replace("</mujoco>", '<contact><pair geom1="floor" geom2="s"/></contact></mujoco>')
    path = _write(tmp_path, text)
    with pytest.warns(MjcfWarning) as caught:
        model = load_mjcf(path, contact=True)
    message = " ".join(str(w.message) for w in caught)
    assert "hfield geom terrain of body 'world' (no hfield surface)" in message
    assert "1 <contact><pair> element(s)" in message
    assert "no contact surfaces" not in message
    assert [model.geoms[g].name for g in model.contact_geoms] == ["floor", "s"]
