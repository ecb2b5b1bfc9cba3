"""One model description for the importers: a reader only parses into model-format nodes, one builder
makes the System.

Checked here: the URDF reader's description is plain data (no simtk System exists until it is
built); its model-file text, read back by ``load_model`` (the format's own parser, then the same
builder), gives a System with the same mass matrix and accelerations at random states as the one
``load_urdf`` returned (to round-off); the builder's errors name the file, the line and the element
of the source; and the tree of the description matches the file's joints as ElementTree reads them.
"""
from __future__ import annotations

import importlib.metadata
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import simtk
from simtk import Stage
from simtk.io import ModelDescription, ModelFileError, describe_urdf, load_urdf
from simtk.io._model_parser import _Node
from simtk.io._model_registry import _Ref, _Word
from simtk.io.model_file import model_from_text
from simtk.io.urdf import UrdfWarning
from tolerances import EPS, scale_of


def _robots_dir() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None


ROBOTS = _robots_dir()
#: fixed and floating robots of test_urdf_pinocchio.py, with their bases
ROBOT_FILES = [("ur_description/urdf/ur5_robot.urdf", False), ("panda_description/urdf/panda.urdf", False),
               ("solo_description/robots/solo12.urdf", True), ("talos_data/robots/talos_reduced.urdf", True)]

# A small arm written here (the form test_urdf.py uses): revolute, prismatic, fixed and continuous joints,
# limits, damping, a rotated inertial and a link merged with merge_fixed.
ARM = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"><inertial><origin xyz="0 0 0.1" rpy="0.1 0 0"/><mass value="2.0"/>
    <inertia ixx="0.1" iyy="0.2" izz="0.25" ixy="0.01" ixz="-0.02" iyz="0.03"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0 0 0.2" rpy="0.1 0.2 0.3"/><mass value="1.0"/>
    <inertia ixx="0.05" iyy="0.06" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="0.5"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool"><inertial><origin xyz="0.02 0 0" rpy="0 0 0"/><mass value="0.1"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="finger"><inertial><origin xyz="0 0.01 0" rpy="0 0 0"/><mass value="0.05"/>
    <inertia ixx="0.0001" iyy="0.0001" izz="0.0001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0 0.5 0"/><axis xyz="0 1 1"/>
    <limit lower="-1.5" upper="1.5" effort="10" velocity="2"/><dynamics damping="0.1"/></joint>
  <joint name="elbow" type="prismatic"><parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 0.4"/><axis xyz="1 0 0"/><limit lower="-0.2" upper="0.2" effort="10" velocity="1"/></joint>
  <joint name="wrist" type="fixed"><parent link="lower"/><child link="tool"/><origin xyz="0.2 0 0"/></joint>
  <joint name="grip" type="continuous"><parent link="tool"/><child link="finger"/>
    <origin xyz="0.05 0 0" rpy="0.3 0 0"/><axis xyz="0 0 1"/></joint>
</robot>
"""


@pytest.fixture
def arm(tmp_path) -> Path:
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    return path


def _plain(v) -> bool:
    """A model-format value: numbers, strings, booleans, lists, references, typed values."""
    if isinstance(v, _Node):
        return all(_plain(x) for x, _ in v.items.values())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return isinstance(v, (bool, int, float, str, _Ref, _Word))


def _walk(node: _Node):
    yield node
    for c in node.children:
        yield from _walk(c)


def test_reading_makes_no_system_and_the_description_is_plain_data(arm, monkeypatch):
    """Reading builds nothing: no MultibodySystem is constructed until ``build()``, and every item of
    every node is plain model-format data."""
    made = []
    original = simtk.MultibodySystem.__init__

    def counting(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(simtk.MultibodySystem, "__init__", counting)
    desc = describe_urdf(arm)
    assert made == []
    nodes = list(_walk(desc.root))
    assert len(nodes) > 5
    for n in nodes:
        for k, (v, line) in n.items.items():
            assert _plain(v), (n.path, k, v)
            assert isinstance(line, int) and line >= 1
    system, comps = desc.build()
    assert made == [system]
    assert comps["/matter/upper"].get_absolute_path() == "/matter/upper"


def test_description_tree_is_the_files_joint_tree(arm):
    """Each link's node references its parent link's node, as the file's joints say (read with
    ElementTree here), and carries the joint's XML line."""
    desc = describe_urdf(arm)
    root = ET.fromstring(ARM)
    parent_of = {j.find("child").get("link"): j.find("parent").get("link") for j in root.findall("joint")}
    mobilizers = {n.items["name"][0]: n for n in desc.matter.children}
    assert set(mobilizers) == {e.get("name") for e in root.findall("link")}
    for link, node in mobilizers.items():
        ref = node.items["parent"][0]
        assert ref.path == ("/matter/ground" if link == "base" else f"/matter/{parent_of[link]}")
        assert node.element == f"<link name={link!r}>"
        assert ARM.splitlines()[node.line - 1].lstrip().startswith(f'<link name="{link}"')


def _compare(a, b, rng, floating: bool, n: int = 4) -> None:
    """Mass matrix and accelerations of systems ``a`` and ``b`` at the same random states."""
    sa, sb = a.realize_topology(), b.realize_topology()
    assert (sa.get_nq(), sa.get_nu()) == (sb.get_nq(), sb.get_nu())
    for _ in range(n):
        q = rng.uniform(-1.0, 1.0, sa.get_nq())
        u = rng.uniform(-1.0, 1.0, sa.get_nu())
        out = []
        for system, state in ((a, sa), (b, sb)):
            state.set_q(q)
            state.set_u(u)
            matter = system.get_matter_subsystem()
            system.realize(state, Stage.Position)
            M = matter.calc_m(state)
            system.realize(state, Stage.Acceleration)
            out.append((M, state.get_udot().copy()))
        (Ma, ua), (Mb, ub) = out
        # the same builder on the same values, once through text (repr of each float is exact): any
        # difference is the last bits of the rebuilt rotations, carried through an O(n) sweep
        n_b = len(q) + 1
        assert np.max(np.abs(Ma - Mb)) <= 64 * n_b * EPS * scale_of(Ma)
        assert np.max(np.abs(ua - ub)) <= 1e3 * n_b * EPS * scale_of(ua, floor=1.0) * np.linalg.cond(Ma)


def test_arm_text_round_trips_to_the_same_dynamics(arm):
    rng = np.random.default_rng(7)
    for merge in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UrdfWarning)
            model = load_urdf(arm, merge_fixed=merge)
        text = model.description.to_text()
        again = model_from_text(text, "arm.simtk")
        _compare(model.system, again, rng, floating=False)


@pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
@pytest.mark.parametrize("rel,floating", ROBOT_FILES)
def test_robot_text_round_trips_to_the_same_dynamics(rel, floating):
    """The robots of test_urdf_pinocchio.py: the description's text, loaded by load_model, has the
    loaded System's mass matrix and accelerations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        model = load_urdf(ROBOTS / rel, floating_base=floating, nonphysical_inertia="keep")
    again = model_from_text(model.description.to_text())
    _compare(model.system, again, np.random.default_rng(11), floating=floating)


def test_kept_nonphysical_inertia_goes_through_the_text(tmp_path):
    """An inertia kept as written (nonphysical_inertia='keep') is written as such and read back."""
    bad = ARM.replace('ixx="0.05" iyy="0.06" izz="0.02"', 'ixx="0.05" iyy="0.01" izz="0.01"')
    path = tmp_path / "bad.urdf"
    path.write_text(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        model = load_urdf(path, nonphysical_inertia="keep")
    assert "upper" in model.nonphysical_inertias
    text = model.description.to_text()
    assert "nonphysical=true" in text
    again = model_from_text(text)
    _compare(model.system, again, np.random.default_rng(3), floating=False)


def test_builder_errors_name_file_line_and_element(arm):
    """What only the builder refuses (here a mobilizer's frame made invalid in the description) is a
    ModelFileError with the URDF's file, the link's line and its element."""
    desc = describe_urdf(arm)
    node = next(n for n in desc.matter.children if n.items["name"][0] == "lower")
    desc.set(node, inboard_frame=3.0)
    with pytest.raises(ModelFileError) as info:
        desc.build()
    e = info.value
    assert e.file == str(arm)
    assert e.line == node.line and ARM.splitlines()[e.line - 1].lstrip().startswith('<link name="lower"')
    assert e.element == "<link name='lower'>" and "inboard_frame" in str(e), str(e)


def test_description_errors_for_the_format():
    """A description may also be made by hand; the builder's errors then name its file and line."""
    desc = ModelDescription("hand", "hand.model")
    body = desc.add("MobilizedBody.Pin", desc.matter, "b", line=12, parent=desc.ground,
                    inboard_frame=simtk.Transform(), outboard_frame=simtk.Transform(),
                    mass_properties=desc.mass_properties(1.0, [0, 0, 0], np.eye(3)))
    desc.add("Force.MobilityLinearSpring", desc.forces, "s", line=20, body=body, which=0, stiffness="stiff",
             q_zero=0.0)
    with pytest.raises(ModelFileError) as info:
        desc.build()
    assert info.value.file == "hand.model" and info.value.line == 20 and "stiffness" in str(info.value), str(info.value)
    with pytest.raises(ValueError, match="has a component named 'b'"):
        desc.add("MobilizedBody.Pin", desc.matter, "b")
    assert desc.unique_name(desc.matter, "b") == "b_1"
