"""URDF import: conventions (origins, axes, inertials), options, names, decorations, errors.

Expected values are computed here from the URDF specification with numpy (rotation matrices of
fixed-axis roll-pitch-yaw, Rodrigues' formula, the parallel-axis theorem), never read back from
the loader. The comparison with an independent implementation on real robots is in
test_urdf_pinocchio.py.
"""
from __future__ import annotations

import importlib.metadata
import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simtk import MobilizedBody, SingularArticulatedInertiaError, Stage
from simtk.io import load_urdf
from simtk.io.urdf import ModelFileError, UrdfWarning
from tolerances import assert_close, tol


def _robots_dir() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None


ROBOTS = _robots_dir()
ALL_URDFS = sorted(ROBOTS.rglob("*.urdf")) if ROBOTS is not None else []
needs_robots = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")


# ------------------------------------------------------------------------------------------- helpers
def rpy_matrix(rpy) -> np.ndarray:
    """URDF: R = Rz(yaw) Ry(pitch) Rx(roll), built from the three elementary rotations."""
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def axis_angle(axis, angle) -> np.ndarray:
    """Rodrigues' rotation matrix about a unit axis."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def h(R=np.eye(3), p=(0, 0, 0)) -> np.ndarray:
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = R, p
    return X


def write(tmp_path: Path, body: str, name: str = "robot.urdf") -> Path:
    path = tmp_path / name
    path.write_text(f'<?xml version="1.0"?>\n<robot name="test">\n{body}\n</robot>\n')
    return path


def link(name: str, mass: float = 1.0, xyz="0 0 0", rpy="0 0 0", I=(0.1, 0.2, 0.25, 0.01, -0.02, 0.03),
         extra: str = "") -> str:
    ixx, iyy, izz, ixy, ixz, iyz = I
    return (f'<link name="{name}"><inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="{ixy}" ixz="{ixz}" iyz="{iyz}"/></inertial>'
            f'{extra}</link>')


def joint(name: str, jtype: str, parent: str, child: str, xyz="0 0 0", rpy="0 0 0", axis="1 0 0",
          extra: str = "") -> str:
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{extra}</joint>')


def load_quietly(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        return load_urdf(path, **kw)


def frame_pose(model, state, link_name) -> np.ndarray:
    mb, X_BL = model.frames[link_name]
    return (mb.get_body_transform(state) * X_BL).matrix44()


# ------------------------------------------------------------------------------ kinematic conventions
CHAIN = "\n".join([
    link("base"), link("l1"), link("l2"), link("l3"), link("l4"),
    joint("j1", "revolute", "base", "l1", xyz="0.1 0.2 0.3", rpy="0.3 -0.4 0.5", axis="1 2 2",
          extra='<limit lower="-3" upper="3" effort="1" velocity="1"/>'),
    joint("j2", "prismatic", "l1", "l2", xyz="0 0.5 0", rpy="1.2 0 -0.7", axis="0 0 -1",
          extra='<limit lower="-1" upper="1" effort="1" velocity="1"/>'),
    joint("j3", "fixed", "l2", "l3", xyz="0.05 0 0", rpy="0 1.5707963267948966 0"),
    joint("j4", "continuous", "l3", "l4", xyz="0 0 0.2", rpy="-0.2 0.1 2.0", axis="0 1 0"),
])


@pytest.mark.parametrize("merge_fixed", [False, True])
def test_link_frames_follow_origins_and_axes(tmp_path, merge_fixed):
    """X_G,link = prod X_PJ(origin) * motion(q along the URDF axis), for every link."""
    model = load_quietly(write(tmp_path, CHAIN), merge_fixed=merge_fixed)
    state = model.default_state()
    q = {"j1": 0.7, "j2": -0.3, "j4": 1.1}
    for name, value in q.items():
        model.joints[name].set_q(state, [value])
    model.system.realize(state, Stage.Position)
    X1 = h(rpy_matrix([0.3, -0.4, 0.5]), [0.1, 0.2, 0.3]) @ h(axis_angle([1, 2, 2], 0.7))
    X2 = X1 @ h(rpy_matrix([1.2, 0, -0.7]), [0, 0.5, 0]) @ h(p=-0.3 * np.array([0, 0, -1.0]))
    X3 = X2 @ h(rpy_matrix([0, math.pi / 2, 0]), [0.05, 0, 0])
    X4 = X3 @ h(rpy_matrix([-0.2, 0.1, 2.0]), [0, 0, 0.2]) @ h(axis_angle([0, 1, 0], 1.1))
    for name, X in (("base", np.eye(4)), ("l1", X1), ("l2", X2), ("l3", X3), ("l4", X4)):
        assert_close(frame_pose(model, state, name), X, margin=64, scale=2.0, what=name)
    assert ("l3" in model.bodies) is not merge_fixed
    assert isinstance(model.joints["j1"], MobilizedBody.Pin)
    assert isinstance(model.joints["j2"], MobilizedBody.Slider)
    assert isinstance(model.joints["j4"], MobilizedBody.Pin)


AXES = ["1 0 0", "-1 0 0", "0 1 0", "0 -1 0", "0 0 1", "0 0 -1", "0.3 -0.5 0.8", "0 0.6 -0.8", "-1e-9 0 -1"]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("jtype", ["revolute", "prismatic"])
def test_any_axis_moves_the_child_along_it(tmp_path, axis, jtype):
    """A revolute joint turns its child about the URDF axis by q, a prismatic one moves it by q along it."""
    body = link("base") + link("b") + joint("j", jtype, "base", "b", xyz="0.1 0.2 0.3", rpy="0.2 0.3 0.4",
                                             axis=axis, extra='<limit lower="-2" upper="2"/>')
    model = load_quietly(write(tmp_path, body))
    state = model.default_state()
    model.joints["j"].set_q(state, [0.8])
    model.system.realize(state, Stage.Position)
    a = np.array([float(v) for v in axis.split()])
    a /= np.linalg.norm(a)
    motion = h(axis_angle(a, 0.8)) if jtype == "revolute" else h(p=0.8 * a)
    X = h(rpy_matrix([0.2, 0.3, 0.4]), [0.1, 0.2, 0.3]) @ motion
    assert_close(frame_pose(model, state, "b"), X, margin=64, scale=1.0, what=f"{jtype} about {axis}")


def test_coordinate_slices_locate_each_joint(tmp_path):
    model = load_quietly(write(tmp_path, CHAIN), floating_base=True)
    state = model.default_state()
    slices = model.coordinate_slices(state)
    assert set(slices) == {"j1", "j2", "j3", "j4", "root_joint"}
    for name, (qs, us) in slices.items():
        mb = model.joints.get(name, model.root)
        q = np.arange(1.0, mb.get_num_q(state) + 1) / 10
        mb.set_q(state, q)
        assert np.array_equal(state.get_q()[qs], q)
        u = -np.arange(1.0, mb.get_num_u(state) + 1)
        mb.set_u(state, u)
        assert np.array_equal(state.get_u()[us], u)


def test_inertial_origin_rotates_and_places_the_inertia(tmp_path):
    """com = inertial origin xyz; the central inertia in the link frame is R I R^T."""
    I = (0.3, 0.2, 0.25, 0.01, -0.02, 0.03)
    body = link("base") + link("arm", mass=2.5, xyz="0.1 -0.2 0.3", rpy="0.4 0.5 -0.6", I=I) + \
        joint("j", "continuous", "base", "arm", axis="0 0 1")
    model = load_quietly(write(tmp_path, body))
    mp = model.bodies["arm"].get_default_mass_properties()
    ixx, iyy, izz, ixy, ixz, iyz = I
    Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    R = rpy_matrix([0.4, 0.5, -0.6])
    assert mp.mass == 2.5
    assert_close(mp.com, [0.1, -0.2, 0.3], margin=4, what="com")
    assert_close(mp.central_inertia().matrix, R @ Ic @ R.T, margin=64, scale=0.3, what="central inertia")
    c = np.array([0.1, -0.2, 0.3])
    I_O = R @ Ic @ R.T + 2.5 * (c @ c * np.eye(3) - np.outer(c, c))  # parallel-axis theorem
    assert_close(mp.inertia.matrix, I_O, margin=64, scale=0.5, what="inertia about the body origin")


def test_merge_fixed_gives_the_same_dynamics_as_welds(tmp_path):
    path = write(tmp_path, CHAIN)
    results = []
    for merge in (False, True):
        model = load_quietly(path, merge_fixed=merge)
        state = model.default_state()
        for name, value in {"j1": 0.4, "j2": 0.2, "j4": -0.9}.items():
            model.joints[name].set_q(state, [value])
            model.joints[name].set_u(state, [0.5 * value])
        model.system.realize(state, Stage.Acceleration)
        results.append((model.matter.calc_m(state), np.array(state.get_udot()), model.matter.get_num_bodies()))
    (M1, a1, n1), (M2, a2, n2) = results
    assert n2 == n1 - 1  # the fixed joint's child is no body of its own
    assert_close(M2, M1, margin=256, scale=np.abs(M1).max(), what="mass matrix")
    assert_close(a2, a1, margin=256 * np.linalg.cond(M1), scale=np.abs(a1).max(), what="udot")


def test_massless_dummy_root_loads_fixed_and_floating(tmp_path):
    body = ('<link name="world"/>' + link("base") + link("arm") + joint("anchor", "fixed", "world", "base") +
            joint("shoulder", "revolute", "base", "arm", axis="0 1 0", extra='<limit lower="-1" upper="1"/>'))
    path = write(tmp_path, body)
    for floating in (False, True):
        model = load_quietly(path, floating_base=floating)
        assert model.root is model.bodies["world"]
        assert isinstance(model.root, MobilizedBody.Free if floating else MobilizedBody.Weld)
        state = model.default_state()
        model.system.realize(state, Stage.Acceleration)
        assert np.isfinite(state.get_udot()).all()
        if floating:  # a free robot falls with g
            assert_close(model.bodies["base"].get_body_origin_acceleration(state)[2], -9.81, margin=64)


def test_floating_and_planar_joints(tmp_path):
    body = (link("base") + link("puck") + link("float") +
            joint("slide", "planar", "base", "puck", xyz="0 0 1", axis="1 0 0") +
            joint("fly", "floating", "base", "float", xyz="1 2 3"))
    model = load_quietly(write(tmp_path, body), gravity=None)
    puck, flt = model.joints["slide"], model.joints["fly"]
    assert isinstance(puck, MobilizedBody.Planar) and isinstance(flt, MobilizedBody.Free)
    state = model.default_state()
    puck.set_q(state, [0.3, 0.1, 0.2])
    model.system.realize(state, Stage.Position)
    X = puck.get_body_transform(state)
    axis = np.array([1.0, 0, 0])
    # rotation about the plane's normal, translation within the plane through the joint origin
    assert_close(X.R.matrix, axis_angle(axis, 0.3), margin=16)
    d = X.p - np.array([0, 0, 1.0])
    assert abs(d @ axis) <= tol(1.0, 16)
    assert_close(np.linalg.norm(d), math.hypot(0.1, 0.2), margin=16)
    assert_close(flt.get_body_transform(state).p, [1, 2, 3], margin=4)


def test_limits_are_stops_and_damping_is_a_damper(tmp_path):
    """Beyond a limit by x the stop pushes back with k x; damping c gives -c u; friction mu gives
    -mu tanh(u / v_eps) (and only warns with friction_velocity=None)."""
    k = 2.0e4
    body = (link("base") + link("arm") +
            joint("j", "revolute", "base", "arm", axis="0 0 1",
                  extra='<limit lower="-0.5" upper="0.5"/><dynamics damping="0.7" friction="0.1"/>'))
    with pytest.warns(UrdfWarning, match=r"Coulomb friction, which is NOT applied.*\bj\b"):
        load_urdf(write(tmp_path, body, "off.urdf"), gravity=None, friction_velocity=None)
    v_eps = 1e-3
    model = load_urdf(write(tmp_path, body), gravity=None, limit_stiffness=k, limit_dissipation=0.0,
                      friction_velocity=v_eps)
    assert model.limits == {"j": (-0.5, 0.5)} and model.friction == {"j": 0.1} and set(model.frictions) == {"j"}
    state = model.default_state()
    mb = model.joints["j"]
    for q, u, expected in ((0.52, 0.0, -k * 0.02), (0.2, 0.3, -0.7 * 0.3 - 0.1 * math.tanh(0.3 / v_eps)),
                           (-0.53, -0.1, k * 0.03 + 0.07 + 0.1 * math.tanh(0.1 / v_eps))):
        mb.set_q(state, [q])
        mb.set_u(state, [u])
        model.system.realize(state, Stage.Dynamics)
        f = model.system.get_mobility_forces(state, Stage.Dynamics)[0]
        assert_close(f, expected, margin=64, scale=abs(expected) + k * 0.03)
    free = load_quietly(write(tmp_path, body, "b.urdf"), gravity=None, limits=False)
    assert not free.stops


def test_names_are_kept_and_sanitized_only_when_refused(tmp_path):
    body = (link("base") + link("link_11.0") + link("ground") + link("9lives") +
            joint("a.b", "revolute", "base", "link_11.0", extra='<limit lower="-1" upper="1"/>') +
            joint("g", "continuous", "base", "ground") + joint("n", "continuous", "base", "9lives"))
    model = load_quietly(write(tmp_path, body))
    names = {ln: mb.get_name() for ln, mb in model.bodies.items()}
    assert names["base"] == "base"
    assert names["link_11.0"] == "link_11_0"
    assert names["ground"] != "ground" and names["9lives"][0] != "9"
    assert len(set(names.values())) == len(names)
    assert model.joints["a.b"].joint_name == "a.b" and model.joints["a.b"].link_name == "link_11.0"
    assert model.system.get_component("/matter/link_11_0") is model.bodies["link_11.0"]


def test_decorations_and_mesh_lookup(tmp_path):
    (tmp_path / "pkg" / "meshes").mkdir(parents=True)
    (tmp_path / "pkg" / "meshes" / "arm.stl").write_bytes(b"solid")
    (tmp_path / "local.stl").write_bytes(b"solid")
    vis = ('<visual name="v"><origin xyz="0 0 0.1" rpy="0 0 1"/><geometry><box size="1 2 3"/></geometry>'
           '<material name="red"/></visual>'
           '<visual><geometry><mesh filename="package://pkg/meshes/arm.stl" scale="2 2 2"/></geometry></visual>'
           '<visual><geometry><mesh filename="local.stl"/></geometry></visual>'
           '<collision><geometry><cylinder radius="0.1" length="0.5"/></geometry></collision>'
           '<collision><geometry><mesh filename="package://pkg/meshes/missing.stl"/></geometry></collision>')
    body = ('<material name="red"><color rgba="1 0 0 1"/></material>' + link("base") +
            link("arm", extra=vis) + link("tip", extra='<visual><geometry><sphere radius="0.2"/></geometry></visual>') +
            joint("j", "continuous", "base", "arm") + joint("f", "fixed", "arm", "tip", xyz="0 0 0.4"))
    with pytest.warns(UrdfWarning, match="1 mesh file.*missing.stl"):
        model = load_urdf(write(tmp_path, body), merge_fixed=True, package_dirs=[tmp_path])
    box, pkg_mesh, local_mesh, sphere = model.visuals
    assert box.kind == "box" and box.size == (1.0, 2.0, 3.0) and box.rgba == (1.0, 0, 0, 1.0) and box.name == "v"
    assert_close(box.X_BG.matrix44(), h(rpy_matrix([0, 0, 1]), [0, 0, 0.1]), margin=16)
    assert pkg_mesh.path == tmp_path / "pkg" / "meshes" / "arm.stl" and pkg_mesh.scale == (2.0, 2.0, 2.0)
    assert local_mesh.path is not None and local_mesh.path.name == "local.stl"
    # merged into arm's body: the sphere is placed by the fixed joint's origin
    assert sphere.body is model.bodies["arm"] and sphere.link == "tip"
    assert_close(sphere.X_BG.p, [0, 0, 0.4], margin=4)
    cyl, missing = model.collisions
    assert (cyl.radius, cyl.length) == (0.1, 0.5) and missing.path is None


# ------------------------------------------------------------------------------------------- errors
def _error(path, **kw) -> ModelFileError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        with pytest.raises(ModelFileError) as info:
            load_urdf(path, **kw)
    return info.value


def _line_of(path: Path, needle: str) -> int:
    for i, text in enumerate(path.read_text().splitlines(), start=1):
        if needle in text:
            return i
    raise AssertionError(needle)


@pytest.mark.parametrize("case,body,needle,words", [
    ("dangling child", link("a") + "\n" + '<joint name="j" type="fixed"><parent link="a"/>\n<child link="zz"/></joint>',
     '<child link="zz"/>', "not defined"),
    ("dangling parent", link("a") + "\n" + '<joint name="j" type="fixed">\n<parent link="zz"/><child link="a"/></joint>',
     '<parent link="zz"/>', "not defined"),
    ("cycle", link("a") + link("b") + link("c") + "\n" + joint("ab", "fixed", "a", "b") + "\n" +
     joint("bc", "fixed", "b", "c") + "\n" + joint("cb", "fixed", "c", "b"), 'name="cb"', "child of joints"),
    ("full cycle", link("a") + link("b") + "\n" + joint("ab", "fixed", "a", "b") + "\n" + joint("ba", "fixed", "b", "a"),
     'name="ab"', "cycle"),
    ("duplicate link", link("a") + "\n" + link("a"), None, "duplicate link"),
    ("duplicate joint", link("a") + link("b") + link("c") + "\n" + joint("j", "fixed", "a", "b") + "\n" +
     joint("j", "fixed", "a", "c"), None, "duplicate joint"),
    ("nan", link("a") + "\n" + link("b", xyz="0 nan 0"), "nan", "finite"),
    ("negative mass", link("a") + "\n" + link("b", mass=-1), "-1", "negative mass"),
    ("bad type", link("a") + link("b") + "\n" + joint("j", "hinge", "a", "b"), 'name="j"', "joint type"),
    ("word for number", link("a") + link("b") + "\n" + joint("j", "revolute", "a", "b", xyz="0 one 0"), 'name="j"',
     "expected 3 number"),
    ("two roots", link("a") + "\n" + link("b"), None, "separate trees"),
    ("zero axis", link("a") + link("b") + "\n" + joint("j", "continuous", "a", "b", axis="0 0 0"), 'name="j"', "zero"),
])
def test_semantic_errors_name_file_line_and_element(tmp_path, case, body, needle, words):
    path = write(tmp_path, body)
    e = _error(path)
    assert str(e).startswith(f"{path}:"), str(e)
    assert words in str(e), str(e)
    assert e.file == str(path) and e.line is not None
    if needle is not None:
        assert e.line == _line_of(path, needle), (e.line, str(e))


def test_malformed_xml_and_wrong_documents(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text('<robot name="x">\n<link name="a">\n</robot>\n')
    e = _error(path)
    assert e.line == 3 and "malformed XML" in str(e)
    path.write_text('<sdf version="1.6"><model/></sdf>')
    assert "expected the root element <robot>" in str(_error(path))
    path.write_text('<robot name="empty"/>')
    assert "no <link>" in str(_error(path))
    e = _error(tmp_path / "absent.urdf")
    assert "cannot read" in str(e)


def test_nonphysical_inertia_is_repaired_with_a_warning_or_refused(tmp_path):
    path = write(tmp_path, link("base") + link("rod", I=(1.0, 0.1, 0.1, 0, 0, 0)) + joint("j", "continuous", "base", "rod"))
    with pytest.warns(UrdfWarning, match="non-physical inertia.*rod"):
        model = load_urdf(path)
    lam = np.linalg.eigvalsh(model.bodies["rod"].get_default_mass_properties().central_inertia().matrix)
    assert lam[0] >= -tol(1.0) and lam[2] <= lam[0] + lam[1] + tol(1.0)
    assert "rod" in model.repaired_inertias
    assert "not physical" in str(_error(path, nonphysical_inertia="error"))



def test_nonphysical_inertia_kept_as_written(tmp_path):
    """nonphysical_inertia="keep" (Pinocchio's and OpenSim's way): the inertia is the file's, also
    when the link is merged into its parent; a warning names the link."""
    I = np.diag([1.0, 0.1, 0.1])  # 1 > 0.1 + 0.1: no mass distribution has it
    body = (link("base") + link("rod", I=(1.0, 0.1, 0.1, 0, 0, 0)) + joint("j", "continuous", "base", "rod") +
            link("tip", I=(1.0, 0.1, 0.1, 0, 0, 0)) + joint("f", "fixed", "rod", "tip"))
    path = write(tmp_path, body)
    with pytest.warns(UrdfWarning, match="non-physical inertia, kept as written.*rod"):
        model = load_urdf(path, nonphysical_inertia="keep")
    central = model.bodies["rod"].get_default_mass_properties().central_inertia().matrix
    assert np.array_equal(central, I)
    assert set(model.nonphysical_inertias) == {"rod", "tip"} and not model.repaired_inertias
    with pytest.warns(UrdfWarning, match="kept as written"):
        merged = load_urdf(path, nonphysical_inertia="keep", merge_fixed=True)
    mp = merged.bodies["rod"].get_default_mass_properties()
    lam = np.linalg.eigvalsh(mp.central_inertia().matrix)
    assert lam[2] > lam[0] + lam[1]  # still the files' inertias, not a repaired one
    with pytest.raises(ValueError, match="nonphysical_inertia must be one of 'keep', 'repair', 'error'"):
        load_urdf(path, nonphysical_inertia="fix")

def test_unknown_elements_and_mimic_warn(tmp_path):
    body = (link("a", extra="<inertal/>") + link("b") + link("c") +
            joint("j", "revolute", "a", "b", extra='<limit lower="0" upper="1"/><axes xyz="0 0 1"/>') +
            joint("k", "revolute", "a", "c", extra='<limit lower="0" upper="1"/><mimic joint="j" multiplier="2"/>'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_urdf(write(tmp_path, body), mimic=False)
    text = " | ".join(str(w.message) for w in caught)
    assert all(issubclass(w.category, UrdfWarning) for w in caught)
    assert "<inertal>" in text and "<axes>" in text and "mimic" in text
    assert model.mimics == {"k": ("j", 2.0, 0.0)}


# ----------------------------------------------------------------------------- real robot files
def _massless_subtrees(urdf: Path) -> list[str]:
    """Movable joints whose child link and all its descendants have no mass (judged from the XML)."""
    root = ET.parse(urdf).getroot()
    mass = {}
    for ln in root.findall("link"):
        m = ln.find("inertial/mass")
        mass[ln.get("name")] = float(m.get("value")) if m is not None else 0.0
    children = {}
    for j in root.findall("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j.find("child").get("link"))

    def subtree_mass(name):
        return mass[name] + sum(subtree_mass(c) for c in children.get(name, []))
    return [j.get("name") for j in root.findall("joint")
            if j.get("type") != "fixed" and subtree_mass(j.find("child").get("link")) == 0.0]


@needs_robots
@pytest.mark.parametrize("urdf", ALL_URDFS, ids=[f"{p.parent.parent.name}/{p.stem}" for p in ALL_URDFS])
def test_every_robot_file_loads(urdf):
    """Every file loads (warnings only of simtk's kind), except one that has no link at all; forward
    dynamics works exactly when no movable joint carries a massless subtree, else it raises
    SingularArticulatedInertiaError naming such a body."""
    has_links = ET.parse(urdf).getroot().find("link") is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if not has_links:
            with pytest.raises(ModelFileError, match="no <link>"):
                load_urdf(urdf)
            return
        model = load_urdf(urdf)
    assert all(issubclass(w.category, UrdfWarning) for w in caught), [str(w.message) for w in caught]
    state = model.default_state()
    singular = _massless_subtrees(urdf)
    if singular:
        with pytest.raises(SingularArticulatedInertiaError) as info:
            model.system.realize(state, Stage.Acceleration)
        names = {mb.joint_name for mb in model.joints.values() if repr(mb) in str(info.value)}
        assert names & set(singular), str(info.value)
    else:
        model.system.realize(state, Stage.Acceleration)
        assert np.isfinite(state.get_udot()).all()


@needs_robots
def test_which_robots_have_massless_subtrees():
    """Documents the finding: Romeo (full and LAAS small) has movable joints with nothing massive beyond."""
    found = sorted(p.stem for p in ALL_URDFS if ET.parse(p).getroot().find("link") is not None
                   and _massless_subtrees(p))
    assert "romeo" in found
    assert found == ["romeo", "romeo_laas_small"], found


# --------------------------------------------------------------------------- hypothesis mutations
BASE = "\n".join([
    '<material name="grey"><color rgba="0.5 0.5 0.5 1"/></material>',
    link("base", extra='<visual><origin xyz="0 0 0.1" rpy="0 0 0"/><geometry><box size="0.2 0.2 0.2"/>'
                       '</geometry><material name="grey"/></visual>'),
    link("upper", xyz="0 0 0.2", rpy="0.1 0.2 0.3",
         extra='<collision><geometry><cylinder radius="0.05" length="0.4"/></geometry></collision>'),
    link("lower", xyz="0.1 0 0"),
    link("tool", mass=0.1),
    joint("shoulder", "revolute", "base", "upper", xyz="0 0 0.3", rpy="0 0.5 0", axis="0 1 0",
          extra='<limit lower="-1.5" upper="1.5" effort="10" velocity="2"/><dynamics damping="0.1"/>'),
    joint("elbow", "prismatic", "upper", "lower", xyz="0 0 0.4", axis="1 0 0",
          extra='<limit lower="-0.2" upper="0.2" effort="10" velocity="1"/>'),
    joint("wrist", "fixed", "lower", "tool", xyz="0.2 0 0"),
])
BASE_TEXT = f'<?xml version="1.0"?>\n<robot name="arm">\n{BASE}\n</robot>\n'
#: attributes the loader reads as numbers
NUMERIC = ("xyz", "rpy", "value", "ixx", "iyy", "izz", "ixy", "ixz", "iyz", "lower", "upper", "effort",
           "velocity", "damping", "size", "radius", "length", "rgba")
BAD_NUMBERS = ("nan", "inf", "-inf", "abc", "1 2 x", "", "1e400", "0x10")


def _mutate(kind: str, data) -> tuple[str, str]:
    """(mutated text, expectation): 'error', 'warning', or 'any' (a valid file or an error)."""
    root = ET.fromstring(BASE_TEXT)
    elements = [e for e in root.iter()]
    if kind == "truncate":
        end = BASE_TEXT.rindex("</robot>")
        return BASE_TEXT[:data.draw(st.integers(0, end))], "error"
    if kind == "bad number":
        cands = [(e, a) for e in elements for a in e.attrib if a in NUMERIC]
        e, a = data.draw(st.sampled_from(cands))
        e.set(a, data.draw(st.sampled_from(BAD_NUMBERS)))
        expect = "error"
    elif kind == "unknown element":
        cands = [e for e in elements if e.tag in ("link", "joint", "inertial", "visual", "collision")]
        e = data.draw(st.sampled_from(cands))
        e.insert(data.draw(st.integers(0, len(e))), ET.Element(data.draw(st.sampled_from(["foo", "inertail", "orign"]))))
        expect = "warning"
    elif kind == "dangling":
        e = data.draw(st.sampled_from([e for e in elements if e.tag in ("parent", "child")]))
        e.set("link", "nowhere")
        expect = "error"
    elif kind == "cycle":
        e = data.draw(st.sampled_from(root.findall("joint/child")))
        e.set("link", "base")
        expect = "error"
    elif kind == "duplicate":
        e = data.draw(st.sampled_from(root.findall("link") + root.findall("joint")))
        root.append(ET.fromstring(ET.tostring(e)))
        expect = "error"
    elif kind == "wrong type":
        e = data.draw(st.sampled_from(root.findall("joint")))
        e.set("type", data.draw(st.sampled_from(["hinge", "Revolute", "", "ball"])))
        expect = "error"
    elif kind == "negative":
        e = data.draw(st.sampled_from(root.findall(".//mass") + root.findall(".//limit")))
        if e.tag == "mass":
            e.set("value", "-0.5")
        else:
            e.set("lower", "2"), e.set("upper", "1")
        expect = "error"
    else:  # delete an element: the file may stay valid, or become invalid
        parents = [(p, c) for p in elements for c in p]
        p, c = data.draw(st.sampled_from(parents))
        p.remove(c)
        expect = "any"
    return ET.tostring(root, encoding="unicode"), expect


KINDS = ("truncate", "bad number", "unknown element", "dangling", "cycle", "duplicate", "wrong type", "negative",
         "delete")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS), data=st.data())
def test_mutated_files_fail_clearly(tmp_path, kind, data):
    """Every mutation ends in a ModelFileError naming the file (with its line when an element is
    at fault), a UrdfWarning, or a valid model; never another exception or a silent change."""
    text, expect = _mutate(kind, data)
    path = tmp_path / "mutant.urdf"
    path.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = load_urdf(path)
        except ModelFileError as e:
            assert expect in ("error", "any"), f"{kind}: unexpected error {e}"
            assert str(e).startswith(str(path)) and e.reason
            assert e.line is not None or "cannot read" in str(e), str(e)
            return
    assert expect != "error", f"{kind}: loaded without error:\n{text}"
    if expect == "warning":
        assert any(issubclass(w.category, UrdfWarning) and "not understood" in str(w.message) for w in caught)
    state = model.default_state()
    model.system.realize(state, Stage.Position)
