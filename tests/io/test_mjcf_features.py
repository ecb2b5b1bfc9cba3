"""`load_mjcf` on small models written here, each exercising MJCF features the published models do not
(ball and free joints with armature, several joints in one body, ref and springref, every way of
writing an orientation, frames, nested default classes, includes, position/velocity/general actuators), checked
against MuJoCo's compiler and ``mj_forward``; and the errors on bad input."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from mjcf_common import compare_mass, compare_qacc, mujoco_without_unbuilt, random_state

from simtk import Stage
from simtk.io import MjcfWarning, ModelFileError, describe_mjcf, load_mjcf
from simtk.io.model_file import model_from_text

mujoco = pytest.importorskip("mujoco")

EPS = np.finfo(float).eps
# Forward dynamics of two implementations (a solve with M of up to 62 mobilities each), relative to the
# largest qacc: measured up to ~900 EPS (dm_control's swimmer) since armature is a term of M rather than
# rotor bodies held by speed constraints (whose solve needed 1e-8); a margin of ~16 over that.
TOL_QACC = 2**14 * EPS
TOL_MASS = 1e4 * EPS

FEATURES = """<mujoco model="features">
  <compiler angle="degree" eulerseq="zyX" autolimits="true"/>
  <option gravity="0.3 -0.2 -9.7" timestep="0.004"/>
  <include file="defaults.xml"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="base" pos="0.1 0.2 1.0" euler="10 20 30">
      <joint name="root" type="free" armature="0.04" damping="0.05"/>
      <geom type="box" size="0.2 0.1 0.05" density="800"/>
      <geom type="ellipsoid" size="0.05 0.07 0.09" pos="0 0.1 0" axisangle="1 1 0 25"/>
      <body name="arm" pos="0.2 0 0" xyaxes="0 1 0 -1 0.1 0" childclass="limb">
        <joint name="arm_x" type="hinge" axis="1 0.3 0" pos="0 0 0.02" ref="15" springref="5" stiffness="3"/>
        <joint name="arm_s" type="slide" axis="0 0 1" ref="0.05" stiffness="40" springref="0.02"/>
        <joint name="arm_y" class="stiff" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0.05 0"/>
        <body name="wrist" pos="0.3 0.05 0" zaxis="0.2 0.1 1">
          <joint name="wrist_ball" type="ball" pos="0 0 0.01" armature="0.02" damping="0.3"/>
          <inertial pos="0.05 0 0" quat="0.9 0.1 0.3 0.2" mass="0.7" diaginertia="0.004 0.003 0.002"/>
          <geom type="sphere" size="0.04"/>
          <body name="tip" pos="0.1 0 0">
            <joint name="tip_z" axis="0 0 1" range="-30 60"/>
            <inertial pos="0.02 0.01 0" mass="0.2" fullinertia="0.002 0.003 0.0025 0.0001 -0.0002 0.0003"/>
          </body>
        </body>
      </body>
      <frame pos="-0.1 0.02 0" euler="0 0 40">
        <body name="fixed" pos="-0.1 0 0" quat="0 0 0 1">
          <geom type="cylinder" size="0.03 0.1" mass="0.5"/>
          <geom type="box" size="0.01 0.02 0.03" pos="0.01 0 0"/>
        </body>
        <frame euler="30 0 0">
          <geom type="box" size="0.02 0.01 0.08" pos="0 0.05 0"/>
        </frame>
      </frame>
    </body>
  </worldbody>
  <actuator>
    <motor name="m_x" joint="arm_x" gear="2.5" ctrlrange="-1 1"/>
    <position name="p_s" joint="arm_s" kp="50" kv="4" gear="1.5"/>
    <position name="p_tip" joint="tip_z" kp="5" inheritrange="0.8"/>
    <velocity name="v_y" joint="arm_y" kv="3"/>
    <general name="g_tip" joint="tip_z" gainprm="7" biastype="affine" biasprm="0.4 -2 -0.5" gear="0.8"/>
  </actuator>
</mujoco>
"""

DEFAULTS = """<mujoco>
  <default>
    <joint damping="0.1" armature="0.01"/>
    <geom density="500"/>
    <default class="limb">
      <joint damping="0.2" armature="0.05"/>
      <geom type="capsule" size="0.03" density="1200"/>
      <default class="stiff">
        <joint stiffness="7" armature="0.03"/>
      </default>
    </default>
  </default>
</mujoco>
"""


@pytest.fixture
def features(tmp_path):
    (tmp_path / "defaults.xml").write_text(DEFAULTS)
    path = tmp_path / "features.xml"
    path.write_text(FEATURES)
    return path


def test_features_match_mujoco(features):
    """Law: with every feature above, simtk's bodies have MuJoCo's compiled mass properties and the
    forward dynamics gives ``mj_forward``'s qacc at random states and controls (1e-8 relative)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_mjcf(features, limits=False)
    m = mujoco_without_unbuilt(mujoco, features)
    assert (model.nq, model.nv) == (m.nq, m.nv) == (7 + 3 + 4 + 1, 6 + 3 + 3 + 1)
    assert compare_mass(mujoco, m, model) < TOL_MASS
    np.testing.assert_allclose(model.qpos0, m.qpos0, rtol=0, atol=1e3 * EPS)
    assert compare_qacc(mujoco, m, model, np.random.default_rng(7), trials=5) < TOL_QACC
    # armature is the mobilizers' own: MuJoCo's nv mobilities, no rotor bodies and no constraints
    assert model.rotors == {}
    state = model.default_state()
    assert state.get_nu() == m.nv and model.matter.get_num_constraints() == 0
    for name, mb in model.joints.items():
        d = model.dof_adr[name]
        np.testing.assert_array_equal(mb.get_armature(), m.dof_armature[d:d + mb.get_num_u(state)])


def test_body_poses_match_mujoco(features):
    """Law: each body's pose in Ground at a random MuJoCo configuration is MuJoCo's xpos and xmat (the
    frames, joint composition order, refs and quaternion conventions)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_mjcf(features)
    m = mujoco.MjModel.from_xml_path(str(features))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    for _ in range(3):
        qpos = m.qpos0 + 0.4 * rng.standard_normal(m.nq)
        qpos[3:7] /= np.linalg.norm(qpos[3:7])
        a = m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "wrist_ball")]
        qpos[a:a + 4] /= np.linalg.norm(qpos[a:a + 4])
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        state = model.default_state()
        model.state_from_mujoco(state, qpos, np.zeros(m.nv))
        model.system.realize(state, Stage.Position)
        for i in range(1, m.nbody):
            X = model.bodies[mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i)].get_body_transform(state)
            np.testing.assert_allclose(X.p, d.xpos[i], rtol=0, atol=100 * EPS)
            np.testing.assert_allclose(X.R.matrix, d.xmat[i].reshape(3, 3), rtol=0, atol=100 * EPS)


def test_controls_clamped_to_ctrlrange(features):
    """MuJoCo clamps ctrl to ctrlrange; `set_control` does the same, and a bad name or value changes
    nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_mjcf(features)
    state = model.default_state()
    model.set_control(state, "m_x", 3.0)
    assert model.get_control(state, "m_x") == 1.0
    model.set_control(state, "p_s", 3.0)  # no ctrlrange: as given
    assert model.get_control(state, "p_s") == 3.0
    with pytest.raises(KeyError, match="no actuator named 'nope'"):
        model.set_control(state, "nope", 0.0)
    with pytest.raises(ValueError, match="finite"):
        model.set_control(state, "p_s", float("nan"))
    assert model.get_control(state, "p_s") == 3.0
    with pytest.raises(ValueError, match="expected qpos of 15"):
        model.state_from_mujoco(state, np.zeros(3), np.zeros(13))


# ---------------------------------------------------------------------------------------- bad input
def _write(tmp_path, body: str, name: str = "bad.xml"):
    p = tmp_path / name
    p.write_text(f"<mujoco>\n  <worldbody>\n{body}\n  </worldbody>\n</mujoco>\n")
    return p


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ModelFileError, match="cannot read the file") as e:
        load_mjcf(tmp_path / "nope.xml")
    assert e.value.file.endswith("nope.xml")


def test_unknown_joint_type_names_element_and_line(tmp_path):
    p = _write(tmp_path, '    <body name="b">\n      <joint name="j" type="hinj"/>\n'
                         '      <geom size="0.1"/>\n    </body>')
    with pytest.raises(ModelFileError, match="joint type 'hinj'") as e:
        load_mjcf(p)
    assert e.value.line == 4 and e.value.element == "<joint name='j'>"


def test_malformed_attribute_names_element_and_line(tmp_path):
    p = _write(tmp_path, '    <body name="b" pos="0 0 x">\n      <geom size="0.1"/>\n    </body>')
    with pytest.raises(ModelFileError, match=r"pos='0 0 x'") as e:
        load_mjcf(p)
    assert e.value.line == 3 and e.value.element == "<body name='b'>"
    p = _write(tmp_path, '    <body name="b">\n      <geom size="0.1 0.2 0.3 0.4"/>\n    </body>')
    with pytest.raises(ModelFileError, match="expected 1 or 2 or 3 number") as e:
        load_mjcf(p)
    assert e.value.line == 4


def test_undefined_class_and_include_are_named(tmp_path):
    p = _write(tmp_path, '    <body name="b">\n      <geom class="nope" size="0.1"/>\n    </body>')
    with pytest.raises(ModelFileError, match="no <default class='nope'>") as e:
        load_mjcf(p)
    assert e.value.line == 4
    p = tmp_path / "inc.xml"
    p.write_text('<mujoco>\n  <include file="missing.xml"/>\n</mujoco>\n')
    with pytest.raises(ModelFileError, match="cannot read the included file") as e:
        load_mjcf(p)
    assert e.value.line == 2


def test_malformed_xml_names_line(tmp_path):
    p = tmp_path / "broken.xml"
    p.write_text("<mujoco>\n  <worldbody>\n    <body>\n  </worldbody>\n</mujoco>\n")
    with pytest.raises(ModelFileError, match="malformed XML") as e:
        load_mjcf(p)
    assert e.value.line == 4


def test_actuator_on_undefined_joint(tmp_path):
    p = tmp_path / "act.xml"
    p.write_text('<mujoco>\n  <worldbody>\n    <body>\n      <joint name="j"/>\n      <geom size="0.1"/>\n'
                 '    </body>\n  </worldbody>\n  <actuator>\n    <motor name="a" joint="k"/>\n  </actuator>\n'
                 '</mujoco>\n')
    with pytest.raises(ModelFileError, match="joint 'k' is not defined") as e:
        load_mjcf(p)
    assert e.value.line == 9


def test_limits_are_stops_in_radians(features):
    """A hinge range in degrees becomes a stop in radians at MuJoCo's compiled jnt_range; a slide's as
    written."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_mjcf(features, limit_stiffness=2e4, limit_dissipation=0.5)
    m = mujoco.MjModel.from_xml_path(str(features))
    limited = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt) if m.jnt_limited[j]]
    assert sorted(model.stops) == sorted(limited) == ["tip_z"]
    stop = model.stops["tip_z"]
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "tip_z")
    np.testing.assert_allclose([stop.q_low, stop.q_high], m.jnt_range[j], rtol=4 * EPS, atol=0)
    assert (stop.stiffness, stop.dissipation) == (2e4, 0.5)
    assert not load_mjcf_quiet(features, limits=False).stops


def load_mjcf_quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_mjcf(path, **kw)


def test_description_text_rebuilds_the_same_system(features):
    """Law: the description written as model-file text and read back by ``model_from_text`` is the same
    System: the same accelerations at the same random state and controls."""
    model = load_mjcf_quiet(features)
    text = describe_mjcf(features).to_text()
    system = model_from_text(text)
    rng = np.random.default_rng(11)
    m = mujoco.MjModel.from_xml_path(str(features))
    qpos, qvel, ctrl = random_state(m, rng)
    s1 = model.default_state()
    model.state_from_mujoco(s1, qpos, qvel)
    model.set_controls(s1, ctrl)
    model.system.realize(s1, Stage.Acceleration)
    s2 = system.realize_topology()
    s2.set_q(s1.get_q())
    s2.set_u(s1.get_u())
    acts = system.get_component("/forces/actuators")
    for name in model.actuators.values():
        acts.set_control(s2, name, model.actuation.get_control(s1, name))
    system.realize(s2, Stage.Acceleration)
    scale = max(1.0, float(np.abs(s1.get_udot()).max()))
    np.testing.assert_allclose(s2.get_udot(), s1.get_udot(), rtol=0, atol=100 * EPS * scale)


def test_inheritrange_and_unbuilt_attributes(features, tmp_path):
    """A position actuator's inheritrange gives MuJoCo's compiled ctrlrange; attributes that change
    the dynamics and are not built (gravcomp, <flag passive>) are named in the one warning."""
    model = load_mjcf_quiet(features)
    m = mujoco.MjModel.from_xml_path(str(features))
    k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, "p_tip")
    np.testing.assert_allclose(model.ctrlrange["p_tip"], m.actuator_ctrlrange[k], rtol=4 * EPS, atol=0)
    p = tmp_path / "unbuilt.xml"
    p.write_text('<mujoco>\n  <option><flag passive="disable"/></option>\n  <worldbody>\n'
                 '    <body name="b" gravcomp="1">\n      <joint name="j"/>\n      <geom size="0.1"/>\n'
                 '    </body>\n  </worldbody>\n</mujoco>\n')
    with pytest.warns(MjcfWarning) as caught:
        load_mjcf(p)
    (msg,) = [str(w.message) for w in caught if issubclass(w.category, MjcfWarning)]
    assert "gravcomp='1' of <body name='b'> (line 4)" in msg and "<flag passive='disable'> (line 2)" in msg


def test_state_round_trip(features):
    """state_to_mujoco inverts state_from_mujoco (quaternions up to their sign)."""
    model = load_mjcf_quiet(features)
    m = mujoco.MjModel.from_xml_path(str(features))
    qpos, qvel, _ = random_state(m, np.random.default_rng(5))
    state = model.default_state()
    model.state_from_mujoco(state, qpos, qvel)
    qpos2, qvel2 = model.state_to_mujoco(state)
    for j in range(m.njnt):  # a quaternion and its negative are the same rotation
        a, n = m.jnt_qposadr[j], {0: 7, 1: 4}.get(int(m.jnt_type[j]), 1)
        if n > 1 and qpos2[a + n - 4] * qpos[a + n - 4] < 0:
            qpos2[a + n - 4:a + n] *= -1
    np.testing.assert_allclose(qpos2, qpos, rtol=0, atol=10 * EPS)
    np.testing.assert_allclose(qvel2, qvel, rtol=0, atol=10 * EPS * max(1.0, np.abs(qvel).max()))


def test_simulation_follows_mujoco(features):
    """Law: simtk's compiled time loop (RK-Merson, accuracy 1e-10; armature in its mass matrix) and
    MuJoCo's RK4 at dt = 1e-4 (error ~ dt^4) end
    0.2 s of free motion, with constant controls, at the same qpos and qvel."""
    from simtk import RungeKuttaMersonIntegrator

    model = load_mjcf_quiet(features, limits=False)
    m = mujoco_without_unbuilt(mujoco, features)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = 1e-4
    d = mujoco.MjData(m)
    qpos, qvel, ctrl = random_state(m, np.random.default_rng(9), spread=0.2)
    d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, 0.5 * qvel, ctrl
    state = model.default_state()
    model.state_from_mujoco(state, qpos, 0.5 * qvel)
    model.set_controls(state, ctrl)
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_accuracy(1e-10)
    integ.initialize(state)
    integ.step_to(0.2)
    for _ in range(2000):
        mujoco.mj_step(m, d)
    qpos2, qvel2 = model.state_to_mujoco(integ.get_state())
    for j in range(m.njnt):
        a, n = m.jnt_qposadr[j], {0: 7, 1: 4}.get(int(m.jnt_type[j]), 1)
        if n > 1 and qpos2[a + n - 4] * d.qpos[a + n - 4] < 0:
            qpos2[a + n - 4:a + n] *= -1
    # the integrators' own errors (1e-10 per unit time; RK4 at dt = 1e-4: ~1e-16 per step), with a margin of 100
    np.testing.assert_allclose(qpos2, d.qpos, rtol=0, atol=1e-8)
    np.testing.assert_allclose(qvel2, d.qvel, rtol=0, atol=1e-8 * max(1.0, np.abs(d.qvel).max()))
