"""Millard2012EquilibriumMuscle and DeGrooteFregly2016Muscle read from an OpenSim-written .osim file,
against OpenSim 4.6 on the same file.

Laws checked:
- every muscle is built (no warning), with its non-default curve properties read;
- with activations set and fibers equilibrated on both sides: path lengths, moment arms (by
  coordinate name), fiber lengths, tendon forces (1e-6 of F_max), the coordinate's acceleration
  (1e-6 relative);
- the PrescribedController's constant excitations drive the muscles: a 0.2 s forward simulation ends
  at OpenSim Manager's coordinate within 1e-4 (RK-Merson, accuracy 1e-8 on both sides);
- the model round-trips through simtk's format (to_text, model_from_text) with the same accelerations.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from simtk import Force, RungeKuttaMersonIntegrator, Stage, TimeStepper
from simtk.io import load_osim
from simtk.io.model_file import model_from_text
from tolerances import tol

FMAX = 800.0
EXCITATIONS = {"millard": 0.8, "rigid": 0.3, "degroote": 0.15}


@pytest.fixture(scope="module")
def osim_file(tmp_path_factory):
    osim = pytest.importorskip("opensim")
    m = osim.Model()
    m.setName("tug_of_war")
    m.setGravity(osim.Vec3(0, -9.81, 0))
    b = osim.Body("block", 15.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
    m.addBody(b)
    j = osim.SliderJoint("slider", m.getGround(), osim.Vec3(0, 0.05, 0), osim.Vec3(0), b, osim.Vec3(0), osim.Vec3(0))
    j.updCoordinate().setName("x")
    m.addJoint(j)
    controller = osim.PrescribedController()
    controller.setName("excitations")
    mil = osim.Millard2012EquilibriumMuscle("millard", FMAX, 0.11, 0.19, 0.1)
    mil.upd_TendonForceLengthCurve().set_strain_at_one_norm_force(0.04)
    mil.upd_FiberForceLengthCurve().setOptionalProperties(0.3, 3.0, 0.6)
    mil.set_fiber_damping(0.05)
    rigid = osim.Millard2012EquilibriumMuscle("rigid", FMAX, 0.1, 0.2, 0.0)
    rigid.set_ignore_tendon_compliance(True)
    dgf = osim.DeGrooteFregly2016Muscle()
    dgf.setName("degroote")
    dgf.set_max_isometric_force(FMAX)
    dgf.set_optimal_fiber_length(0.12)
    dgf.set_tendon_slack_length(0.2)
    dgf.set_pennation_angle_at_optimal(0.15)
    for mu, origin, insertion in ((mil, (-0.3, 0.12, 0.0), (-0.02, 0.0, 0.01)),
                                  (rigid, (0.0, 0.35, 0.05), (0.0, 0.01, 0.0)),
                                  (dgf, (0.31, 0.08, 0.02), (0.03, 0.01, 0.0))):
        mu.addNewPathPoint("origin", m.getGround(), osim.Vec3(*origin))
        mu.addNewPathPoint("insertion", b, osim.Vec3(*insertion))
        m.addForce(mu)
        controller.addActuator(mu)
        controller.prescribeControlForActuator(mu.getName(), osim.Constant(EXCITATIONS[mu.getName()]))
    m.addController(controller)
    m.finalizeConnections()
    path = tmp_path_factory.mktemp("musc") / "tug_of_war.osim"
    m.printToXML(str(path))
    return str(path)


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every element is built: no warning
        return load_osim(path)


def _opensim_state(osim, path, q, u, activations):
    m = osim.Model(path)
    s = m.initSystem()
    c = m.getCoordinateSet().get("x")
    c.setValue(s, q)
    c.setSpeedValue(s, u)
    for name, a in activations.items():
        m.getMuscles().get(name).setActivation(s, a)
    m.equilibrateMuscles(s)
    m.realizeAcceleration(s)
    return m, s


def test_muscles_read_and_match_opensim(osim_file):
    osim = pytest.importorskip("opensim")
    model = _load(osim_file)
    assert set(model.muscles) == set(EXCITATIONS)
    assert isinstance(model.muscles["millard"], Force.Millard2012EquilibriumMuscle)
    assert isinstance(model.muscles["degroote"], Force.DeGrooteFregly2016Muscle)
    props = model.muscles["millard"].get_properties()
    assert props["TendonForceLengthCurve_strain_at_one_norm_force"] == 0.04
    assert props["FiberForceLengthCurve_stiffness_at_one_norm_force"] == 3.0
    assert model.muscles["rigid"].get_state_variable_names() == ("activation",)
    assert model.muscles["degroote"].get_state_variable_names() == ("activation", "normalized_tendon_force")
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, u = rng.uniform(-0.03, 0.03), rng.uniform(-0.1, 0.1)
        acts = {name: rng.uniform(0.05, 1.0) for name in EXCITATIONS}
        m, s = _opensim_state(osim, osim_file, q, u, acts)
        state = model.initial_state()
        model.set_coordinate_value(state, "x", q)
        model.set_coordinate_speed(state, "x", u)
        for name, a in acts.items():
            model.muscles[name].set_activation(state, a)
        model.equilibrate_muscles(state)
        model.system.realize(state, Stage.Acceleration)
        coord = m.getCoordinateSet().get("x")
        for name, mu in model.muscles.items():
            om = m.getMuscles().get(name)
            assert mu.get_length(state) == pytest.approx(om.getLength(s), abs=1e-9)
            assert mu.compute_moment_arm(state, "x") == pytest.approx(om.computeMomentArm(s, coord), abs=1e-8)
            # the held 0 plus the controller's Constant, one rounding at most
            assert mu.get_excitation(state) == pytest.approx(EXCITATIONS[name], abs=tol(1.0, 4))
            assert mu.get_fiber_length(state) == pytest.approx(om.getFiberLength(s), abs=1e-9), name
            assert abs(mu.get_tendon_force(state) - om.getTendonForce(s)) <= 1e-6 * FMAX, name
        want = s.getUDot().get(0)
        got = model.get_coordinate_acceleration(state, "x")
        assert abs(got - want) <= 1e-6 * max(1.0, abs(want))


def test_forward_simulation_matches_manager(osim_file):
    osim = pytest.importorskip("opensim")
    acts = {"millard": 0.2, "rigid": 0.6, "degroote": 0.4}
    m, s = _opensim_state(osim, osim_file, 0.0, 0.0, acts)
    manager = osim.Manager(m)
    manager.setIntegratorAccuracy(1e-8)
    manager.initialize(s)
    end = manager.integrate(0.2)
    want = m.getCoordinateSet().get("x").getValue(end)

    model = _load(osim_file)
    state = model.initial_state()
    for name, a in acts.items():
        model.muscles[name].set_activation(state, a)
    model.equilibrate_muscles(state)
    integ = RungeKuttaMersonIntegrator(model.system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(model.system, integ)
    ts.initialize(state)
    ts.step_to(0.2)
    assert abs(want) > 1e-3  # it moved
    assert model.get_coordinate_value(ts.get_state(), "x") == pytest.approx(want, abs=1e-4)


def test_round_trip_through_simtk_format(osim_file):
    model = _load(osim_file)
    state = model.initial_state()
    for name, mu in model.muscles.items():
        mu.set_activation(state, 0.4)
    model.equilibrate_muscles(state)
    model.system.realize(state, Stage.Acceleration)
    udot = np.array(model.matter.get_udot(state))
    again = model_from_text(model.description.to_text())
    s2 = again.realize_topology()
    s2.set_y(state.get_y())
    again.realize(s2, Stage.Acceleration)
    assert np.array_equal(again.get_matter_subsystem().get_udot(s2), udot)
