"""URDF robots in Pinocchio's conventions (``UrdfModel.state_from_pinocchio`` and its inverses) and the
URDF's dynamics elements: kept inertias, joint friction, mimic joints, contact, torque outputs.

The cross-checks read the same file with Pinocchio (its own parser: joint order, damping and friction
values, inertias) and compare forward dynamics through the library's maps; the maps are also checked
on their own (round trips, refusals). Friction, mimic and the drop on the floor are checked against
closed forms.
"""
from __future__ import annotations

import importlib.metadata
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from simtk import Force, Stage
from simtk.io._urdf_contact import DEFAULTS, floor_frame
from simtk.io.urdf import UrdfWarning, load_urdf
from simtk.multibody.contact.geometry import ContactGeometry
from tolerances import EPS


def _robots_dir() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None


ROBOTS = _robots_dir()
needs_robots = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")

#: floating-base robots of the issue, and fixed-base ones with continuous joints
FLOATING = ["go1_description/urdf/go1.urdf", "talos_data/robots/talos_reduced.urdf",
            "anymal_b_simple_description/robots/anymal.urdf", "solo_description/robots/solo12.urdf"]
CONTINUOUS = ["kinova_description/robots/kinova.urdf", "double_pendulum_description/urdf/double_pendulum_continuous.urdf"]


def _load(rel: str, floating: bool, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        return load_urdf(ROBOTS / rel, floating_base=floating, nonphysical_inertia="keep", limits=False, **kw)


def _pin_model(pin, rel: str, floating: bool):
    path = str(ROBOTS / rel)
    return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)


def _rel(actual, expected) -> float:
    return float(np.abs(np.asarray(actual) - expected).max() / max(np.abs(expected).max(), 1e-300))


# ----------------------------------------------------------------------------- layout and round trips
#: more trees for the joint order: branches whose joint names sort unlike their file order, fixed joints
ORDER_ONLY = ["tiago_description/robots/tiago_no_hand.urdf", "allegro_hand_description/urdf/allegro_right_hand.urdf",
              "icub_description/robots/icub.urdf", "panda_description/urdf/panda.urdf"]


@needs_robots
@pytest.mark.parametrize("rel", FLOATING + CONTINUOUS + ORDER_ONLY, ids=lambda r: Path(r).stem)
def test_joint_order_read_from_the_urdf_is_pinocchios(rel):
    """The order derived from the file (depth first, children by joint name) is Pinocchio's own."""
    pin = pytest.importorskip("pinocchio")
    floating = rel in FLOATING
    model, pm = _load(rel, floating), _pin_model(pin, rel, floating)
    assert [n for n, _ in model._pin_order] == list(pm.names)[1:]
    st = model.default_state()
    q, v = model.state_to_pinocchio(st)
    assert q.shape == (pm.nq,) and v.shape == (pm.nv,)


@needs_robots
@pytest.mark.parametrize("rel", FLOATING[:1] + CONTINUOUS[:1], ids=lambda r: Path(r).stem)
def test_round_trips(rel):
    """state -> Pinocchio -> state gives the same q and u (to round-off), and Pinocchio -> state ->
    Pinocchio the same q and v; Pinocchio's own integrate/difference sees the two q as one point."""
    pin = pytest.importorskip("pinocchio")
    floating = rel in FLOATING
    model, pm = _load(rel, floating), _pin_model(pin, rel, floating)
    rng = np.random.default_rng(7)
    st = model.default_state()
    for _ in range(3):
        q0 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v0 = rng.uniform(-1, 1, pm.nv)
        model.state_from_pinocchio(st, q0, v0)
        qs, us = np.array(st.get_q()), np.array(st.get_u())
        q1, v1 = model.state_to_pinocchio(st)
        assert np.abs(pin.difference(pm, q0, q1)).max() <= 16 * EPS
        assert np.abs(v1 - v0).max() <= 16 * EPS
        model.state_from_pinocchio(st, q1, v1)
        assert np.abs(np.array(st.get_q()) - qs).max() <= 16 * EPS
        assert np.abs(np.array(st.get_u()) - us).max() <= 16 * EPS
    # the q and v readers are state_to_pinocchio's parts
    q2, v2 = model.state_to_pinocchio(st)
    assert np.array_equal(model.q_to_pinocchio(st), q2) and np.array_equal(model.v_to_pinocchio(st), v2)


@needs_robots
def test_bad_pinocchio_vectors_are_refused_and_leave_the_state_alone():
    pin = pytest.importorskip("pinocchio")
    rel = FLOATING[0]
    model, pm = _load(rel, True), _pin_model(pin, rel, True)
    st = model.default_state()
    q0, u0 = np.array(st.get_q()), np.array(st.get_u())
    good = pin.neutral(pm)
    with pytest.raises(ValueError, match=r"q must have 19 entries, got 18"):
        model.state_from_pinocchio(st, good[:-1], np.zeros(pm.nv))
    with pytest.raises(ValueError, match=r"v must have 18 entries"):
        model.state_from_pinocchio(st, good, np.zeros(pm.nv + 1))
    bad = good.copy()
    bad[3:7] = [0.1, 0.0, 0.0, 0.9]
    with pytest.raises(ValueError, match=r"'root_joint'.*unit quaternion"):
        model.state_from_pinocchio(st, bad, np.zeros(pm.nv))
    nan = good.copy()
    nan[8] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        model.state_from_pinocchio(st, nan)
    assert np.array_equal(st.get_q(), q0) and np.array_equal(st.get_u(), u0)
    rel = CONTINUOUS[1]
    model, pm = _load(rel, False), _pin_model(pin, rel, False)
    st = model.default_state()
    with pytest.raises(ValueError, match=r"continuous joint .*unit circle"):
        model.state_from_pinocchio(st, np.r_[1.0, 0.5, np.zeros(pm.nq - 2)])


# ----------------------------------------------------------------------------- dynamics against Pinocchio
#: Two implementations of recursive sweeps and one solve with M in SI units: the issue's bar.
ABA_REL = 1e-9


@needs_robots
@pytest.mark.parametrize("rel", FLOATING + CONTINUOUS, ids=lambda r: Path(r).stem)
def test_forward_dynamics_match_pinocchio_aba_with_inertias_as_written(rel):
    """udot_to_pinocchio(state) = pinocchio.aba(q, v, tau - damping v - friction tanh(v / v_eps)), with
    the damping and friction of Pinocchio's own parse of the file and the inertias kept as written."""
    pin = pytest.importorskip("pinocchio")
    floating = rel in FLOATING
    v_eps = 0.05
    model, pm = _load(rel, floating, friction_velocity=v_eps), _pin_model(pin, rel, floating)
    data = pm.createData()
    drive = Force.DiscreteForces(model.forces, model.matter, name="drive")
    st = model.default_state()
    rng = np.random.default_rng(sum(map(ord, rel)))
    for _ in range(3):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v = rng.uniform(-1, 1, pm.nv)
        tau = rng.uniform(-5, 5, pm.nv)
        model.state_from_pinocchio(st, q, v)
        drive.set_all_mobility_forces(st, model.mobility_forces_from_pinocchio(st, tau))
        a = model.udot_to_pinocchio(st)
        tau_pin = tau - np.array(pm.damping) * v - np.array(pm.friction) * np.tanh(v / v_eps)
        expected = pin.aba(pm, data, q, v, tau_pin)
        err = _rel(a, expected)
        assert err <= ABA_REL, f"relative error {err:.3g}"
    if "go1" in rel or "talos" in rel:  # these files have friction: it entered
        assert model.frictions and np.abs(pm.friction).max() > 0


# ----------------------------------------------------------------------------- friction and mimic
def _urdf(tmp_path: Path, joints: str, links: str, name: str = "r.urdf") -> Path:
    p = tmp_path / name
    p.write_text(f'<robot name="r">{links}{joints}</robot>')
    return p


def _link(name: str, mass: float = 1.0, com: str = "0 0 0", i: float = 0.01, extra: str = "") -> str:
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
            f'<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>{extra}</link>')


def test_coulomb_friction_force_and_spin_down(tmp_path):
    """The friction element adds -mu tanh(u / v_eps); a rotor spinning at u0 >> v_eps about a vertical
    axis (no gravity torque) slows at the constant rate mu / I until it nearly stops."""
    mu, v_eps, izz = 0.3, 1e-3, 0.02
    path = _urdf(tmp_path, '<joint name="j" type="continuous"><parent link="base"/><child link="rotor"/>'
                           f'<axis xyz="0 0 1"/><dynamics friction="{mu}"/></joint>',
                 _link("base") + _link("rotor", i=izz))
    model = load_urdf(path)
    assert set(model.frictions) == {"j"} and model.friction == {"j": mu}
    st = model.default_state()
    mb = model.joints["j"]
    for u in (-2.0, -v_eps, 0.0, 0.3 * v_eps, 5.0):
        mb.set_u(st, [u])
        model.system.realize(st, Stage.Dynamics)
        f = model.system.get_mobility_forces(st, Stage.Dynamics)[0]
        assert abs(f - (-mu * math.tanh(u / v_eps))) <= 4 * EPS * mu
    from simtk.simulation import Simulation
    u0, t_end = 6.0, 0.2
    mb.set_u(st, [u0])
    sim = Simulation(model.system, st, step_size=1e-3)
    sim.run(t_end)
    end = sim.get_state()
    # u0 / v_eps = 6000: tanh is 1 to round-off along the whole run, so the deceleration is mu / I exactly
    expected = u0 - mu / izz * t_end
    assert abs(mb.get_u(end)[0] - expected) <= 1e-6 * u0
    with pytest.warns(UrdfWarning, match="Coulomb friction, which is NOT applied"):
        off = load_urdf(path, friction_velocity=None)
    assert not off.frictions
    with pytest.raises(ValueError, match="friction_velocity must be a finite number > 0"):
        load_urdf(path, friction_velocity=0.0)


MIMIC_LINKS = (_link("base") + _link("a", mass=1.5, com="0.3 0 0", i=0.02) + _link("b", mass=0.7, com="0.2 0 0"))
MIMIC_JOINTS = ('<joint name="lead" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 1 0"/>'
                '<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>'
                '<joint name="follow" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.6 0 0"/>'
                '<axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/>{mimic}</joint>')


def test_mimic_joint_is_a_coupler_matching_reduced_pinocchio_dynamics(tmp_path):
    """q_follow = m q_lead + c is kept; the coupled accelerations are Pinocchio's dynamics reduced to the
    leader: with G = (1, m), udot_lead = (G^T M G)^-1 G^T (tau - b) and udot_follow = m udot_lead."""
    pin = pytest.importorskip("pinocchio")
    m_, c_ = -1.5, 0.1
    path = _urdf(tmp_path, MIMIC_JOINTS.format(mimic=f'<mimic joint="lead" multiplier="{m_}" offset="{c_}"/>'),
                 MIMIC_LINKS)
    model = load_urdf(path, limits=False)
    assert set(model.couplers) == {"follow"} and model.mimics == {"follow": ("lead", m_, c_)}
    st = model.default_state()
    model.system.realize(st, Stage.Position)
    assert model.joints["follow"].get_q(st)[0] == c_  # the default State satisfies the coupler
    assert np.abs(model.couplers["follow"].get_position_errors(st)).max() <= 4 * EPS
    q1, u1 = 0.4, -0.8
    model.joints["lead"].set_q(st, [q1])
    model.joints["follow"].set_q(st, [m_ * q1 + c_])
    model.joints["lead"].set_u(st, [u1])
    model.joints["follow"].set_u(st, [m_ * u1])
    model.system.realize(st, Stage.Acceleration)
    udot = np.array(st.get_udot())
    free = _urdf(tmp_path, MIMIC_JOINTS.format(mimic=""), MIMIC_LINKS, "free.urdf")
    pm = pin.buildModelFromUrdf(str(free))
    data = pm.createData()
    q, v = np.array([q1, m_ * q1 + c_]), np.array([u1, m_ * u1])
    M = pin.crba(pm, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    b = pin.nonLinearEffects(pm, data, q, v)
    G = np.array([1.0, m_])
    a1 = float(G @ -b) / float(G @ M @ G)
    expected = np.array([a1, m_ * a1])
    assert _rel(udot, expected) <= 1e-12
    with pytest.warns(UrdfWarning, match="mimic joint"):
        independent = load_urdf(path, mimic=False)
    assert not independent.couplers


# ----------------------------------------------------------------------------- contact and outputs
@needs_robots
def test_go1_dropped_on_the_floor_comes_to_rest():
    """Go1 with contact=True, its feet dropped from 35 cm onto add_ground()'s floor: unactuated, its legs
    fold and it comes to rest lying on its trunk, whose collision box (0.114 m high, centred on the base
    frame) then holds the base half that height above the floor, less a sub-millimetre indentation.
    (Its hips are cylinders: for a while it lies tilted on two of them, then rolls flat.)"""
    from simtk.math import RungeKuttaMersonIntegrator
    from simtk.simulation import Simulation
    rel = FLOATING[0]
    model = _load(rel, True, contact=True)
    assert model.contact is not None and model.contact.get_num_surfaces() == 38
    model.add_ground(0.0)
    st = model.default_state()
    model.system.realize(st, Stage.Position)
    foot_radius = 0.02
    lowest = min(model.bodies[f"{leg}_foot"].get_body_origin_location(st)[2] for leg in ("FR", "FL", "RR", "RL"))
    pin_q = np.zeros(19)
    pin_q[2], pin_q[6] = 0.35 - lowest + foot_radius, 1.0
    model.state_from_pinocchio(st, pin_q, np.zeros(18))
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_accuracy(1e-3)  # a settling check, not a trajectory comparison: keeps the test short
    sim = Simulation(model.system, st, integrator=integ, step_size=5e-3)
    sim.run(3.0)
    end = sim.get_state()
    q, u = np.array(end.get_q()), np.array(end.get_u())
    assert np.isfinite(q).all() and np.isfinite(u).all()
    z = model.root.get_body_origin_location(end)[2]
    assert abs(z - 0.114 / 2) < 1e-3, z
    assert np.abs(model.root.get_u(end)).max() < 1e-2  # the base is at rest
    with pytest.raises(ValueError, match="load with contact=True"):
        _load(rel, True).add_ground()


def test_contact_shapes_of_a_urdf(tmp_path):
    """A sphere, a box, a cylinder and a capsule become surfaces; a missing mesh is left out and named."""
    shapes = ('<collision><geometry><sphere radius="0.1"/></geometry></collision>'
              '<collision><geometry><box size="0.2 0.4 0.6"/></geometry></collision>'
              '<collision><geometry><cylinder radius="0.05" length="0.3"/></geometry></collision>'
              '<collision><geometry><capsule radius="0.05" length="0.3"/></geometry></collision>'
              '<collision><geometry><mesh filename="nowhere.stl"/></geometry></collision>')
    path = _urdf(tmp_path, "", _link("base", extra=shapes))
    with pytest.warns(UrdfWarning, match=r"left out of the contact.*mesh of link 'base'"):
        model = load_urdf(path, floating_base=True, contact=True)
    kinds = [model.contact._surfaces[k].geometry.kind for k in range(model.contact.get_num_surfaces())]
    assert kinds == ["Sphere", "Brick", "Cylinder", "Capsule"]
    assert model.contact._surfaces[2].geometry.params == (0.05, 0.15, 0.0)
    assert model.contact._surfaces[1].geometry.half_lengths == (0.1, 0.2, 0.3)
    with pytest.raises(ValueError, match="unknown key"):
        load_urdf(path, contact=True, contact_parameters={"stifness": 1.0})


def test_mobility_force_outputs_record_damping_friction_and_the_drivers_input(tmp_path):
    """An OutputProbe records a joint's applied generalized force (the body's ``mobility_forces``) and
    the driver's input; the applied force is input - c u - mu tanh(u / v_eps) of the recorded u."""
    from simtk.simulation import OutputProbe, Simulation
    c, mu, v_eps, tau = 0.05, 0.2, 1e-2, 0.5
    path = _urdf(tmp_path, '<joint name="j" type="continuous"><parent link="base"/><child link="rotor"/>'
                           f'<axis xyz="0 0 1"/><dynamics damping="{c}" friction="{mu}"/></joint>',
                 _link("base") + _link("rotor", i=0.02))
    model = load_urdf(path, friction_velocity=v_eps)
    drive = Force.DiscreteForces(model.forces, model.matter, name="drive")
    st = model.default_state()
    drive.set_one_mobility_force(st, model.joints["j"], 0, tau)
    sim = Simulation(model.system, st, step_size=1e-3)
    body = model.joints["j"].get_absolute_path()
    probe = sim.add_output_probe(OutputProbe([f"{body}|mobility_forces", f"{body}|u", "/forces/drive|mobility_forces"],
                                             interval=0.01), name="rec")
    sim.run(0.3)
    _, values = probe.to_numpy()
    f, u, given = values[:, 0], values[:, 1], values[:, 2]
    assert len(f) >= 30 and np.all(given == tau)
    assert np.abs(u).max() > 10 * v_eps  # it turned: the friction and damping terms were exercised
    expected = tau - c * u - mu * np.tanh(u / v_eps)
    assert np.abs(f - expected).max() <= 8 * EPS * (tau + mu + c * np.abs(u).max())


@needs_robots
def test_mesh_collision_shapes_are_the_convex_hulls_of_their_vertices():
    """Each of Solo12's mesh shapes becomes a ConvexHull, in the URDF's collision frame, whose vertices
    are the extreme points of the mesh file's vertices (read here with trimesh, scaled): trimesh's own
    hull of the file has the same vertex set."""
    trimesh = pytest.importorskip("trimesh")
    rel = "solo_description/robots/solo12.urdf"
    model = _load(rel, True, contact=True)
    surfaces = [model.contact._surfaces[k] for k in range(model.contact.get_num_surfaces())]
    meshes = [(g, s) for g, s in zip(model.collisions, surfaces) if g.kind == "mesh"]
    assert len(surfaces) == len(model.collisions) and len(meshes) >= 8
    for g, s in meshes:
        assert s.mobod is g.body and s.geometry.kind == "ConvexHull"
        assert np.abs(np.asarray(s.X_BS.R.matrix) - np.asarray(g.X_BG.R.matrix)).max() == 0.0
        assert np.abs(np.asarray(s.X_BS.p) - np.asarray(g.X_BG.p)).max() == 0.0
        v = np.asarray(trimesh.load(str(g.path), force="mesh").vertices) * np.asarray(g.scale)
        theirs = np.asarray(trimesh.convex.convex_hull(v).vertices)
        ours = s.geometry.vertices
        tol = 1e-9 * max(1.0, float(np.abs(v).max()))
        # every vertex of trimesh's hull is one of ours and conversely (qhull may merge near-coplanar ones)
        d1 = np.linalg.norm(theirs[:, None] - ours[None], axis=2).min(axis=1)
        d2 = np.linalg.norm(ours[:, None] - theirs[None], axis=2).min(axis=1)
        assert np.quantile(d1, 0.95) < tol and d2.max() < tol, g.filename


def test_friction_mimic_and_contact_go_through_the_model_text(tmp_path):
    """The description's text (load_model's format) rebuilds the friction, the mimic coupler and the
    collision surfaces: the rebuilt System has the loaded one's accelerations in a state with the
    rotor spinning, the coupled joints moving and the sphere pressed into the floor of the text."""
    from simtk.io.model_file import model_from_text
    sphere = '<collision><origin xyz="0.2 0 0"/><geometry><sphere radius="0.05"/></geometry></collision>'
    links = (_link("base") + _link("a", mass=1.5, com="0.3 0 0", i=0.02, extra=sphere) +
             _link("b", mass=0.7, com="0.2 0 0"))
    joints = MIMIC_JOINTS.format(mimic='<mimic joint="lead" multiplier="2" offset="0.1"/>').replace(
        '<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>',
        '<limit lower="-3" upper="3" effort="10" velocity="10"/><dynamics friction="0.3"/></joint>', 1)
    model = load_urdf(_urdf(tmp_path, joints, links), floating_base=True, contact=True, limits=False)
    assert model.frictions and model.couplers and model.contact.get_num_surfaces() == 1
    text = model.description.to_text()
    assert "MobilityCoulombFriction" in text and "CoordinateCoupler" in text and "HuntCrossley" in text
    again = model_from_text(text)
    # the floor is added after loading (it is not the file's): on both
    model.add_ground(0.0)
    again_contact = again.get_component("/forces/contact")
    again_contact.add_surface(again.get_component("/matter").get_ground(), ContactGeometry.HalfSpace(),
                              floor_frame(0.0), **DEFAULTS)
    states = []
    for system in (model.system, again):
        st = system.realize_topology()
        q = np.zeros(st.get_nq())
        q[0], q[6], q[7], q[8] = 1.0, 0.03, 0.4, 0.9  # base at z = 0.03, the sphere below it
        u = np.zeros(st.get_nu())
        u[6], u[7] = 0.5, 1.0
        st.set_q(q)
        st.set_u(u)
        system.realize(st, Stage.Acceleration)
        states.append(st)
    assert len(model.contact.get_contact_reports(states[0])) == 1  # the sphere is pressed into the floor
    a, b = (np.array(s.get_udot()) for s in states)
    assert np.abs(a).max() > 0 and np.allclose(a, b, rtol=0, atol=64 * EPS * np.abs(a).max())


@pytest.mark.parametrize("h", [1e-3, 2e-3])
def test_go1_stands_under_pd_after_a_35_cm_drop(h):
    """Go1 (contact=True, the floor in the model: ground=0) dropped with its feet 35 cm above the floor, a
    PDController holding the standing pose (kp 30, kd 1, every step) through SemiImplicitEulerIntegrator
    at 1 and 2 ms: after 2 s it stands still, upright, its base at the pose's height less the legs' sag
    (MuJoCo with the same law: 0.222 m, benchmarks/robots_vs_mujoco.py), its joints within 0.4 rad of the
    pose (the weak gains sag under its 13 kg). (At 5 ms the contact is stable but the PD law, held over
    each step, is explicit: the light legs chatter.)"""
    from simtk.math import SemiImplicitEulerIntegrator
    from simtk.simulation import PDController, Simulation
    model = _load(FLOATING[0], True, contact=True, ground=0.0)
    pose = {"hip": 0.0, "thigh": 0.9, "calf": -1.8}
    joints = {f"{leg}_{part}_joint": q for leg in ("FR", "FL", "RR", "RL") for part, q in pose.items()}
    st = model.default_state()
    for name, q in joints.items():
        model.joints[name].set_one_q(st, 0, q)
    model.system.realize(st, Stage.Position)
    lowest = min(model.bodies[f"{leg}_foot"].get_body_origin_location(st)[2] for leg in ("FR", "FL", "RR", "RL"))
    pin_q, pin_v = model.state_to_pinocchio(st)
    pin_q[:3], pin_q[3:7] = [0.0, 0.0, 0.35 - lowest + 0.02], [0.0, 0.0, 0.0, 1.0]
    model.state_from_pinocchio(st, pin_q, np.zeros_like(pin_v))
    paths = {n: f"{model.joints[n].get_absolute_path()}/angle" for n in joints}
    sim = Simulation(model.system, st, integrator=SemiImplicitEulerIntegrator(model.system, h), step_size=h)
    sim.add_controller(PDController({paths[n]: (30.0, 1.0) for n in joints}, {paths[n]: q for n, q in joints.items()}),
                       name="hold")
    sim.run(2.0)
    end = sim.get_state()
    assert np.isfinite(end.get_y()).all()
    z = model.root.get_body_origin_location(end)[2]
    assert 0.2 < z < 0.25, z
    R = model.root.get_body_rotation(end).matrix
    assert R[2, 2] > math.cos(math.radians(15)), R  # upright (the weak PD lets it pitch by ~11 degrees)
    assert max(abs(model.joints[n].get_one_q(end, 0) - q) for n, q in joints.items()) < 0.4  # (kp 30 sags)
    assert np.abs(model.root.get_u(end)).max() < 0.05  # standing still


def test_the_floor_of_ground_is_in_the_model_text(tmp_path):
    """``ground=h`` puts add_ground's floor into the description: its text names the half-space, and the
    System it rebuilds has the accelerations of ``load_urdf`` + ``add_ground(h)`` with a sphere pressed
    into the floor; ground without contact, or not finite, is refused."""
    from simtk.io.model_file import model_from_text
    from simtk.io.urdf import describe_urdf
    sphere = '<collision><origin xyz="0.2 0 0"/><geometry><sphere radius="0.05"/></geometry></collision>'
    path = _urdf(tmp_path, MIMIC_JOINTS.format(mimic=""), _link("base") + _link("a", mass=1.5, com="0.3 0 0",
                 i=0.02, extra=sphere) + _link("b", mass=0.7, com="0.2 0 0"))
    text = describe_urdf(path, floating_base=True, contact=True, limits=False, ground=0.01).to_text()
    assert "HalfSpace" in text
    rebuilt = model_from_text(text)
    model = load_urdf(path, floating_base=True, contact=True, limits=False)
    model.add_ground(0.01)
    loaded = load_urdf(path, floating_base=True, contact=True, limits=False, ground=0.01)
    assert loaded.contact.get_num_surfaces() == model.contact.get_num_surfaces() == 2
    accelerations = []
    no_floor = load_urdf(path, floating_base=True, contact=True, limits=False)
    for system in (model.system, rebuilt, loaded.system, no_floor.system):
        st = system.realize_topology()
        q = np.zeros(st.get_nq())
        q[0], q[6], q[7] = 1.0, 0.04, 0.4  # base at z = 0.04: the sphere pressed into the floor at 0.01
        st.set_q(q)
        st.upd_u()[6] = 0.5
        system.realize(st, Stage.Acceleration)
        accelerations.append(np.array(st.get_udot()))
    a = accelerations[0]
    assert np.abs(a - accelerations[-1]).max() > 1e-3 * np.abs(a).max()  # the floor pushes
    for b in accelerations[1:-1]:
        assert np.allclose(a, b, rtol=0, atol=64 * EPS * np.abs(a).max()), (a, b)
    with pytest.raises(ValueError, match="contact=True"):
        load_urdf(path, ground=0.0)
    with pytest.raises(ValueError, match="finite"):
        describe_urdf(path, contact=True, ground=float("nan"))


def test_a_controllers_torque_is_recorded_as_the_drivers_input_and_the_joints_force(tmp_path):
    """A PD controller's generalized force reaches the joint through the simulation's driver inputs
    (``/forces/driver_inputs``): both outputs record it, the joint's less its damping -c u."""
    from simtk import Function
    from simtk.simulation import OutputProbe, PDController, Simulation
    c = 0.05
    path = _urdf(tmp_path, '<joint name="j" type="continuous"><parent link="base"/><child link="rotor"/>'
                           f'<axis xyz="0 0 1"/><dynamics damping="{c}"/></joint>',
                 _link("base") + _link("rotor", i=0.02))
    model = load_urdf(path)
    body = model.joints["j"].get_absolute_path()
    sim = Simulation(model.system, model.default_state(), step_size=1e-3)
    sim.add_controller(PDController({f"{body}/angle": (4.0, 0.4)}, {f"{body}/angle": Function.Constant(0.5, 1)}),
                       name="pd")
    probe = sim.add_output_probe(OutputProbe([f"{body}|mobility_forces", f"{body}|u",
                                              "/forces/driver_inputs|mobility_forces"], interval=0.01), name="rec")
    sim.run(0.2)
    _, values = probe.to_numpy()
    f, u, given = values[:, 0], values[:, 1], values[:, 2]
    assert np.abs(given).max() > 1.0  # the controller pushed
    assert np.abs(f - (given - c * u)).max() <= 8 * EPS * np.abs(given).max()
