"""Every OpenSim model of opensim-org/opensim-models loads, and agrees with OpenSim 4.6 itself.

For each ``Models/*/*.osim`` file: ``load_osim`` builds it with at most the one warning of elements
not built (and the one naming inertias kept as written); OpenSim reads the same file with every force
simtk did not build switched off (muscles, contact, actuators: ``appliesForce`` false) and its
controllers disabled. At random states (every free coordinate set by name in both, speeds too) the
accelerations of all coordinates agree, and locked coordinates hold OpenSim's values and do not move.
The reference is OpenSim's; nothing expected is computed by simtk.
"""
from __future__ import annotations

import warnings
import zlib

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


def _opensim_model(path, built_forces: set):
    om = osim.Model(str(path))
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
