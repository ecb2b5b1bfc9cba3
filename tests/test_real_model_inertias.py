"""Inertias of real robot files (example-robot-data): round-off accepted, physical errors refused.

CAD exporters write inertias with round-off where a value should be zero (iCub's URDF has central
moments of -5.4e-20 kg m^2 and principal moments (0, 0, 4.1e-18)). Law: every inertial of every
URDF in example-robot-data builds a `MassProperties` unless its central inertia violates
positive semi-definiteness or the triangle inequality by far more than round-off, as judged here
independently with numpy's eigenvalues; and every link that does violate them that much is refused
with the reason. Skips when example-robot-data (in the ``crosscheck`` extra) is not installed.
"""
from __future__ import annotations

import importlib.metadata
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from simtk import Inertia, MassProperties
from tolerances import EPS


def _robots_dir() -> Path | None:
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None


ROBOTS = _robots_dir()
pytestmark = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")


def _rpy_matrix(rpy) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _inertials(urdf: Path):
    """(link name, mass, p_BC, central inertia in B) for each link with an <inertial>."""
    root = ET.parse(urdf).getroot()
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        mass = float(inertial.find("mass").get("value"))
        origin = inertial.find("origin")
        xyz = np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()])
        rpy = [float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
        el = inertial.find("inertia")
        g = {k: float(el.get(k, 0.0)) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
        I_C = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
        R = _rpy_matrix(rpy)
        yield link.get("name"), mass, xyz, R @ I_C @ R.T


def _violation(I: np.ndarray) -> float:
    """How far the principal moments are from a physical inertia (0 when they are one)."""
    lam = np.linalg.eigvalsh(0.5 * (I + I.T))
    return float(max(-lam[0], lam[2] - lam[0] - lam[1], 0.0))


def _urdfs() -> list[Path]:
    return sorted(ROBOTS.glob("*/robots/*.urdf")) if ROBOTS is not None else []


def test_icub_builds_every_link():
    """iCub's inertias carry round-off of 1e-20..1e-18 kg m^2 about zero; every link must build."""
    urdf = ROBOTS / "icub_description" / "robots" / "icub.urdf"
    links = list(_inertials(urdf))
    assert len(links) > 30
    tiny = [name for name, _, _, I in links if 0 < _violation(I) < 1e-16]
    assert tiny, "the file no longer has the round-off this test is about"
    for name, mass, com, I_C in links:
        mp = MassProperties.from_central_inertia(mass, com, Inertia.from_matrix(I_C))
        assert mp.mass == mass


def test_every_robot_file_refuses_exactly_the_non_physical_inertias():
    n_ok = n_refused = 0
    for urdf in _urdfs():
        try:
            links = list(_inertials(urdf))
        except ET.ParseError:
            continue  # a xacro-generated file that is not plain XML is not this test's concern
        for name, mass, com, I_C in links:
            scale = max(float(np.max(np.abs(I_C))), 1.0)  # SI units: round-off of order-one numbers
            viol = _violation(I_C)
            physical = viol <= 64 * EPS * scale and (mass > 0 or not I_C.any())
            clearly_wrong = viol > 1e-8 * float(np.max(np.abs(I_C))) + 1e-12 or (mass == 0 and I_C.any())
            try:
                MassProperties.from_central_inertia(mass, com, Inertia.from_matrix(I_C))
            except ValueError as e:
                assert not physical, f"{urdf.name}:{name}: a physical inertia was refused: {e}"
                assert any(w in str(e) for w in ("semi-definite", "triangle", "negative", "massless")), str(e)
                n_refused += 1
            else:
                assert not clearly_wrong, f"{urdf.name}:{name}: a non-physical inertia {I_C.tolist()} was accepted"
                n_ok += 1
    assert n_ok > 500 and n_refused > 0
