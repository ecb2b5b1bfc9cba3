"""Tutorials 11-13 run and show what they claim: the spline knee conserves energy, CustomTranslation
moves exactly as Translation, and the property tests of tutorial 13 pass (its checker catches the
wrong energy it demonstrates)."""
from __future__ import annotations

import runpy
from pathlib import Path

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"


def _load(name: str) -> dict:
    return runpy.run_path(str(TUTORIALS / name), run_name="tutorial")


def test_tutorial_11_function_based_knee(capsys):
    drift = _load("11_function_based_knee.py")["main"](final_time=1.0)
    assert drift < 1e-6  # relative energy drift: integration error at the tutorial's accuracy 1e-8
    assert "all 14 comparisons passed" in capsys.readouterr().out  # 14: with the HDot check at nonzero speeds


def test_tutorial_12_custom_mobilizer():
    # The twins' derivatives agree to round-off (identical bits here); should round-off change a
    # step size, they part by the integration error at the tutorial's accuracy 1e-10: its bound.
    assert _load("12_custom_mobilizer.py")["main"](final_time=1.0) < 1e-10


def test_tutorial_13_property_tests(capsys):
    module = _load("13_property_testing_your_model.py")
    assert module["main"]() == 3
    out = capsys.readouterr().out
    assert "1 of 1 comparisons FAILED" in out and out.count("passed: ") == 3
