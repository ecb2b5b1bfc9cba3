"""MobilizedBody.FunctionBased(hdot="simbody"): HDot as Simbody's FunctionBased computes it.

Simbody (and so OpenSim's CustomJoint) turns rotation axis 1 with the angular velocity of mobility 0
alone and axis 2 with that of every mobility but mobility 2, which is the exact derivative of H only
when mobility k drives rotation k alone. The OpenSim comparison is tests/io/test_osim_custom.py
(test_one_coordinate_driving_three_rotations_with_speed); here: the compiled kind equals the Python
implementation, the two forms agree where they should and differ where they should, and the choice
survives a model file.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_function_based_compiled import BODY, JOINT, python_kind, random_axes, realized, rows

from simtk import Function, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem, Transform
from simtk.io.model_file import model_from_text, model_to_text
from tolerances import assert_close, scale_of


def knee(hdot: str, standard: bool, rng_seed: int = 5):
    """One FunctionBased body of two mobilities on random axes: mobility k on rotation k only
    (``standard``), or mobility 0 turning all three rotations (OpenSim's walker knee)."""
    rng = np.random.default_rng(rng_seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    if standard:
        fns = [Function.Linear([1.0, 0.0]), Function.Polynomial([0.3, -0.5, 0.1]), Function.Constant(0.2, 0)]
        idx = [[0], [1], []]
    else:
        fns = [Function.Linear([1.0, 0.0]), Function.Polynomial([0.3, -0.5, 0.1]), Function.Sinusoid(0.4, 1.3, 0.2)]
        idx = [[0], [0], [0]]
    fns += [Function.Polynomial([0.05, -0.1, 0.02]), Function.Linear([1.0, 0.0]), Function.Constant(0.0, 0)]
    idx += [[0], [1], []]
    if not standard:
        idx[4] = [1]
    axes = random_axes(rng)
    body = MobilizedBody.FunctionBased(matter.ground, Transform(), BODY, Transform([0.02, 0.1, 0.0]), 2, fns, idx,
                                       axes=axes, hdot=hdot)
    return system, matter, [body]


@pytest.mark.parametrize("standard", [True, False])
def test_simbody_hdot_compiled_equals_python(standard):
    compiled = knee("simbody", standard)
    with python_kind():
        python = knee("simbody", standard)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, u = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2)
        a, b = rows(compiled, realized(compiled, q, u)), rows(python, realized(python, q, u))
        for key in ("H_FM", "HDotu_FM", "udot"):
            assert_close(a[key], b[key], margin=JOINT, scale=scale_of(b[key], floor=1.0), what=key)


def test_simbody_hdot_is_the_exact_one_for_standard_joints_only():
    rng = np.random.default_rng(2)
    q, u = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2)
    hd = {}
    for standard in (True, False):
        for kind in ("exact", "simbody"):
            m = knee(kind, standard)
            hd[standard, kind] = rows(m, realized(m, q, u))["HDotu_FM"]
    s = scale_of(hd[True, "exact"], floor=1.0)
    assert_close(hd[True, "simbody"], hd[True, "exact"], margin=JOINT, scale=s, what="standard joint")
    assert np.abs(hd[False, "simbody"] - hd[False, "exact"]).max() > 1e-3  # a real difference, not round-off


def test_hdot_choice_is_checked_read_and_kept_by_model_files():
    with pytest.raises(ValueError, match="hdot must be 'exact' or 'simbody', got 'opensim'"):
        knee("opensim", True)
    system, matter, (body,) = knee("simbody", False)
    assert body.get_hdot() == "simbody"
    assert knee("exact", False)[2][0].get_hdot() == "exact"
    text = model_to_text(system)
    assert "hdot" in text
    again = model_from_text(text)
    m2 = again.get_matter_subsystem()
    mb = [m2.get_mobilized_body(i) for i in range(m2.get_num_bodies())]
    mb = [b for b in mb if isinstance(b, MobilizedBody.FunctionBased)]
    assert [b.get_hdot() for b in mb] == ["simbody"]
    assert "hdot" not in model_to_text(knee("exact", False)[0])
