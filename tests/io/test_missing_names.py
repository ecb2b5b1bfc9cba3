"""A loaded model's missing joint or link says which names exist (issue 28), and batched dynamics on
a State below Instance says which call realizes it."""
from __future__ import annotations

import pickle
import warnings

import pytest

from simtk import Stage
from simtk.common.errors import StageTooLowError
from simtk.io import load_urdf
from simtk.io._named import NamedDict
from simtk.io.urdf import UrdfWarning

LINK = ('<link name="{0}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" '
        'iyz="0"/></inertial></link>')
JOINT = ('<joint name="{0}" type="revolute"><parent link="{1}"/><child link="{2}"/><axis xyz="0 0 1"/>'
         '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


def arm(tmp_path):
    body = "".join(LINK.format(n) for n in ("base", "upper", "fore")) + JOINT.format("shoulder", "base", "upper") \
        + JOINT.format("elbow", "upper", "fore")
    path = tmp_path / "arm.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="arm">{body}</robot>\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        return load_urdf(path)


def test_a_missing_joint_lists_the_closest_names(tmp_path):
    model = arm(tmp_path)
    with pytest.raises(KeyError) as info:
        model.joints["elbo"]
    text = str(info.value)
    assert "no joint named 'elbo'" in text and "did you mean 'elbow'" in text and "'shoulder'" in text
    assert "arm.urdf" in text
    with pytest.raises(KeyError, match="no link named 'hand'"):
        model.bodies["hand"]
    assert model.joints["elbow"] is model.bodies["fore"]
    assert model.joints.get("elbo") is None and "elbo" not in model.joints  # a dict otherwise


def test_named_dict_lists_many_names_briefly_and_pickles():
    d = NamedDict({f"j{i}": i for i in range(40)}, "joint", "big.osim")
    with pytest.raises(KeyError) as info:
        d["knee"]
    assert "40 names, e.g. 'j0'" in str(info.value) and "big.osim" in str(info.value)
    back = pickle.loads(pickle.dumps(d))
    assert back == d and back.kind == "joint" and back.where == "big.osim"


def test_functional_dynamics_below_instance_says_what_realizes_it(tmp_path):
    model = arm(tmp_path)
    state = model.system.realize_topology()
    with pytest.raises(StageTooLowError) as info:
        model.matter.functional_dynamics(state)
    assert "call system.realize(state, Stage.Instance) first" in str(info.value)
    model.system.realize(state, Stage.Instance)
    model.matter.functional_dynamics(state)  # then it works
