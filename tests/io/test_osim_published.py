"""Every OpenSim model of opensim-org/opensim-models loads, and agrees with OpenSim 4.6 itself.

For each ``Models/*/*.osim`` file: ``load_osim`` builds it with at most the one warning of elements
not built (and the one naming inertias kept as written); OpenSim reads the same file with every force
simtk did not build switched off (muscles, contact, actuators: ``appliesForce`` false) and its
controllers disabled. At random states (every free coordinate set by name in both, speeds too) the
accelerations of all coordinates agree, and locked coordinates hold OpenSim's values and do not move.
The reference is OpenSim's; nothing expected is computed by simtk.
"""
from __future__ import annotations

import re
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")  # the models' own warnings (mesh files not found, ...) are not ours
osim.Logger.removeFileSink()

from osim_published import published_models, require_published_model  # noqa: E402

from simtk import SingularArticulatedInertiaError, Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402
from tolerances import EPS  # noqa: E402

MODELS = published_models()

#: Round-off margin of one forward-dynamics solve of a model of up to ~40 coordinates with constraints
#: (the tolerances module's 1e3-1e4 for a recursive sweep over tens of bodies, times the conditioning
#: of the constraint projection; the issue's bound is 1e-9 relative)
MARGIN = 2e5


def _states(n_coords: int) -> int:
    # OpenSim's realizeAcceleration on the big models costs ~10 ms, their initSystem seconds: a few
    # states each, more for the small ones
    return 4 if n_coords <= 12 else 2


def _read_by_opensim(path) -> "osim.Model":
    """``osim.Model(path)``, without the file's ``<defaults>`` outliving it: OpenSim makes them the
    process's default objects of their types, so every file read afterwards would take them where it
    omits a property (a later test's CoordinateActuator gets optimal_force 300 instead of 1); the
    types are registered afresh from their constructors."""
    om = osim.Model(str(path))
    for tag in sorted(_default_types(path)):
        cls = getattr(osim, tag, None)
        if cls is not None:
            osim.OpenSimObject.registerType(cls())
    return om


def _default_types(path) -> set:
    """The element types the file's ``<defaults>`` name (read as text: some published files are not
    well-formed enough for ElementTree; OpenSim's parser is lenient)."""
    found = re.search(r"<defaults>(.*?)</defaults>", Path(path).read_text(errors="replace"), re.S)
    return set(re.findall(r'<(\w+)\s+name="default"', found.group(1))) if found else set()


def _opensim_model(path, built_forces: set):
    om = _read_by_opensim(path)
    fs = om.getForceSet()
    off = []
    for i in range(fs.getSize()):
        f = fs.get(i)
        if f.getName() not in built_forces:
            f.set_appliesForce(False)
            off.append(f.getName())
    cs = om.getControllerSet()
    for i in range(cs.getSize()):
        cs.get(i).setEnabled(False)
    return om, off


@pytest.mark.parametrize("relpath", MODELS, ids=[m.split("/", 1)[1] for m in MODELS])
def test_published_model_loads_and_agrees_with_opensim(relpath):
    path = require_published_model(relpath)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_osim(path)
    texts = [str(w.message) for w in caught]
    not_built = [t for t in texts if "element(s) of the model were not built" in t]
    inertias = [t for t in texts if "with an inertia no mass distribution has" in t]
    assert len(not_built) <= 1 and len(inertias) <= 1 and len(texts) == len(not_built) + len(inertias), \
        [t[:200] for t in texts]

    om, off = _opensim_model(path, set(m.force_elements))
    s = om.initSystem()
    cs = om.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    assert list(m.coordinates) == names
    st_ = m.initial_state()
    locked = [n for n in names if cs.get(n).getLocked(s)]
    assert locked == [n for n, c in m.coordinates.items() if c.locked]
    for n in locked:  # where OpenSim holds them
        assert m.get_coordinate_value(st_, n) == cs.get(n).getValue(s)
        assert m.get_coordinate_speed(st_, n) == cs.get(n).getSpeedValue(s)

    if om.getTotalMass(s) == 0.0:
        # a kinematic model (the wrist's: every body massless): OpenSim's accelerations are NaN, simtk
        # refuses with the body named instead of returning them
        om.realizeAcceleration(s)
        assert np.isnan([cs.get(n).getAccelerationValue(s) for n in names]).all()
        with pytest.raises(SingularArticulatedInertiaError, match="massless body"):
            m.system.realize(st_, Stage.Acceleration)
        return

    rng = np.random.default_rng(zlib.crc32(relpath.encode()))
    worst = 0.0
    for _ in range(_states(len(names))):
        for n in names:
            if n in locked:
                continue
            c = cs.get(n)
            q = c.getDefaultValue() + float(rng.uniform(-0.3, 0.3))
            u = float(rng.uniform(-0.5, 0.5))
            c.setValue(s, q, False)
            c.setSpeedValue(s, u)
            m.set_coordinate_value(st_, n, q)
            m.set_coordinate_speed(st_, n, u)
        om.realizeAcceleration(s)
        m.system.realize(st_, Stage.Acceleration)
        theirs = np.array([cs.get(n).getAccelerationValue(s) for n in names])
        mine = np.array([m.get_coordinate_acceleration(st_, n) for n in names])
        scale = max(1.0, float(np.abs(theirs).max()))
        err = float(np.abs(mine - theirs).max())
        worst = max(worst, err / scale)
        assert err <= MARGIN * EPS * scale, (relpath, names[int(np.argmax(np.abs(mine - theirs)))], err, scale)
        for n in locked:
            assert abs(m.get_coordinate_acceleration(st_, n)) <= MARGIN * EPS * scale
    print(f"{relpath}: {len(names)} coordinates, {len(off)} forces off in OpenSim, worst relative udot error "
          f"{worst:.2e}")


def test_a_files_defaults_apply_to_its_elements_and_not_beyond(tmp_path):
    """An element that omits a property takes it from the file's ``<defaults>`` (here a
    CoordinateActuator's optimal_force), as OpenSim reads it; a file without them takes the type's own."""
    relpath = "Models/DoublePendulum/double_pendulum.osim"
    text = re.sub(r"\s*<optimal_force>[^<]*</optimal_force>", "", require_published_model(relpath).read_text())
    plain = tmp_path / "plain.osim"
    plain.write_text(text)
    with_defaults = tmp_path / "defaults.osim"
    with_defaults.write_text(re.sub(r'(<Model name="[^"]*">)', r'\1<defaults><CoordinateActuator name="default">'
                                    r'<optimal_force>300</optimal_force></CoordinateActuator></defaults>', text, count=1))
    for path, expected in ((with_defaults, 300.0), (plain, 1.0), (with_defaults, 300.0), (plain, 1.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = load_osim(path)
        om = _read_by_opensim(path)
        theirs = osim.CoordinateActuator.safeDownCast(om.getForceSet().get("Torq1")).getOptimalForce()
        assert theirs == expected  # OpenSim's reading, the reference
        assert m.actuators["Torq1"].optimal_force == theirs
