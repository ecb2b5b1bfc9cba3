"""Tutorial 20 (a quadruped standing on Hunt-Crossley contact, then collapsing): its physical claims.

tests/test_tutorials.py runs the script for completion; this runs its ``main`` with a shorter stance
and fall (0.6 s and 0.75 s: the landing settles in 0.3 s and the collapse is over in 0.5 s) and
checks what the script prints from the values it returns.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import pathlib

import numpy as np
import pytest

from tolerances import tol

TUTORIAL = pathlib.Path(__file__).parent.parent.parent / "tutorials" / "20_contact.py"
#: The tutorial's integrator accuracy: the relative error allowed to what it integrates.
ACCURACY = 1e-3


@pytest.fixture(scope="module")
def tutorial():
    try:
        importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    spec = importlib.util.spec_from_file_location("tutorial_20", TUTORIAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(t_stand=0.6, t_fall=0.75, verbose=False)
    assert out is not None
    return module, out


def test_the_contacts_carry_the_weight_while_standing(tutorial):
    """Newton for the whole robot over the settled stance: the only external vertical forces are
    gravity and the contacts (the PD torques and the joint stops are internal), so the contacts'
    recorded impulse minus the weight's equals the change of the robot's vertical momentum, to the
    integrator's accuracy relative to the impulses involved. That makes the printed ratio
    1 + dp/(W T); the robot stands (its momentum barely changes), so the ratio is 1 within 2%."""
    _, out = tutorial
    t, fz, pz, stand, W = out["t"], out["fz"], out["pz"], out["stand"], out["weight"]
    T = t[stand][-1] - t[stand][0]
    impulse = np.trapezoid(fz[stand] - W, t[stand])
    dp = pz[stand][-1] - pz[stand][0]
    assert abs(impulse - dp) <= ACCURACY * W * T, (impulse, dp)
    assert out["ratio"] == pytest.approx(1.0 + dp / (W * T), abs=2 * ACCURACY)
    assert out["ratio"] == pytest.approx(1.0, abs=0.02)
    assert out["standing_contacts"] == (4, 4)  # the four feet, and nothing else, all along


def test_after_release_it_lies_on_its_belly(tutorial):
    """With the motors off the base falls from standing height onto the floor: the base frame ends
    where the belly ellipsoid touching the floor puts it, h(z) - depth - offset, with h the
    ellipsoid's support distance along -z (sqrt(z^T R diag(r^2) R^T z)) and the depth the belly
    contact's; the feet, knees and belly all touch, and at rest they carry the weight again."""
    module, out = tutorial
    assert out["z_standing"] > 0.2 and out["z_final"] < 0.5 * out["z_standing"]
    R = out["final_R"].matrix
    belly = [r for r in out["final_reports"] if r.body2.get_name() == "base_link" or r.body1.get_name() == "base_link"]
    assert len(belly) == 1
    A = R @ np.diag(np.square(module.BASE_HALF)) @ R.T
    offset = (R @ module.BASE_CENTRE)[2]
    expected = np.sqrt(A[2, 2]) - belly[0].depth - offset
    assert out["z_final"] == pytest.approx(expected, abs=tol(module.BASE_HALF[0]))
    assert out["final_contacts"] == 9
    assert out["final_ratio"] == pytest.approx(1.0, abs=0.02)
