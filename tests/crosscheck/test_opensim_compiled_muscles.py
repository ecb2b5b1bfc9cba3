"""The compiled muscles on published models against OpenSim 4.6's Manager.

Law checked: Leg6Dof9Musc (9 Thelen2003Muscles on paths with conditional and moving points, a
coordinate coupler) and Gait10dof18musc (18 Millard2012EquilibriumMuscles, damped elastic tendons,
compiled kind MillardMuscle) read by load_osim, under constant excitations held in the State (OpenSim: a
PrescribedController of Constants), integrated 0.2 s by RK-Merson at 1e-8 in the compiled time loop
with the muscles in the core (no Python part per evaluation), ends where OpenSim's Manager ends at
the same accuracy: coordinates, activations and fiber lengths within the integrators' error.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.removeFileSink()

from osim_published import published_model  # noqa: E402

from simtk import RungeKuttaMersonIntegrator, Stage  # noqa: E402
from simtk.io import load_osim  # noqa: E402

T_END = 0.2
ACCURACY = 1e-8
# the two integrators' global errors at 1e-8 (their difference shrinks with the accuracy: ~1e-4 at
# 1e-5, ~3e-7 at 1e-7, ~6e-8 at 1e-9 over 0.3 s, benchmarks/muscles.py; ~9e-8 here), with a margin
TOL = 1e-6


@pytest.mark.parametrize("model, n_muscles", [("Models/Leg6Dof9Musc/leg6dof9musc.osim", 9),
                                              ("Models/Gait10dof18musc/gait10dof18musc.osim", 18)])
def test_published_muscle_model_simulation_matches_opensim_manager(model, n_muscles):
    path = str(published_model(model))
    om = osim.Model(path)
    names = [om.getMuscles().get(i).getName() for i in range(om.getMuscles().getSize())]
    excitations = {n: 0.1 + 0.8 * k / (len(names) - 1) for k, n in enumerate(names)}
    controller = osim.PrescribedController()
    for n, e in excitations.items():
        controller.addActuator(om.getMuscles().get(n))
        controller.prescribeControlForActuator(n, osim.Constant(e))
    om.addController(controller)
    s = om.initSystem()
    manager = osim.Manager(om)
    manager.setIntegratorMethod(osim.Manager.IntegratorMethod_RungeKuttaMerson)
    manager.setIntegratorAccuracy(ACCURACY)
    manager.initialize(s)
    end = manager.integrate(T_END)
    coords = om.getCoordinateSet()
    q_os = {coords.get(k).getName(): coords.get(k).getValue(end) for k in range(coords.getSize())}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_osim(path)
    assert sorted(m.muscles) == sorted(names) and len(names) == n_muscles
    state = m.initial_state()
    for n, e in excitations.items():
        m.muscles[n].set_excitation(state, e)
    m.system.realize(state, Stage.Acceleration)
    integ = RungeKuttaMersonIntegrator(m.system)
    integ.set_accuracy(ACCURACY)
    integ.initialize(state)
    text = integ.describe_fast_path()
    assert text.startswith("compiled time loop") and f"{n_muscles} muscles are compiled" in text and "calls Python" not in text
    integ.step_to(T_END)
    final = integ.get_state()
    q = {n: m.get_coordinate_value(final, n) for n in m.coordinates}
    moved = max(abs(q[n] - m.get_coordinate_value(state, n)) for n in q)
    assert moved > 1e-3  # the model moved
    for n, v in q_os.items():
        assert q[n] == pytest.approx(v, abs=TOL), n
    for n in names:
        mu_os = om.getMuscles().get(n)
        assert m.muscles[n].get_activation(final) == pytest.approx(mu_os.getActivation(end), abs=TOL), n
        assert m.muscles[n].get_fiber_length(final) == pytest.approx(mu_os.getFiberLength(end), abs=TOL), n
    assert np.isfinite(final.get_y()).all()
