"""``Force.CoordinateLimit`` (OpenSim's CoordinateLimitForce, a compiled force kind) against its Python oracle.

The oracle is the ``Force.Custom`` implementation the OpenSim reader built before the kind was compiled
(`LimitOracle`, kept here verbatim): the compiled kernel (``core/forces.pxi``) performs its operations in
the same order, so one element's force and potential energy equal the oracle's bitwise at any state, near
and across the limits and their transitions. A whole model's forces add the elements in another order
(built-in sets before Force.Custom), so there they agree to a tolerance derived from the rounding of
those sums. OpenSim 4.6 itself is compared where it is installed (``calcLimitForce``,
``computePotentialEnergy``); tests/io/test_osim.py compares whole models' accelerations.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import Force, Function, Stage
from simtk.multibody import GeneralForceSubsystem, MobilizedBody, MultibodySystem, SimbodyMatterSubsystem
from simtk.spatial import Body, Inertia, MassProperties, Transform

sys.path.insert(0, str(Path(__file__).parents[1] / "math"))
from test_compiled_loop import (  # noqa: E402
    COMPILED_TWINS,
    assert_paths_named,
    counting_compiled_steps,
    drive,
    twins,
)

EPS = np.finfo(float).eps


class LimitOracle(Force.Custom.Implementation):
    """OpenSim's CoordinateLimitForce on one coordinate, in Python: the implementation simtk.io built as a
    ``Force.Custom`` before ``Force.CoordinateLimit`` (verbatim, the oracle of the compiled kind)::

        K_up = Step(0 -> Kup; q_up, q_up + tr)(q),   K_lo = Step(Klo -> 0; q_lo - tr, q_lo)(q)
        f = -K_up (q - q_up) + K_lo (q_lo - q) - c (K_up / Kup + K_lo / Klo) qdot

    For a rotational coordinate the limits and transition are in degrees and the stiffnesses and damping
    per degree; they are converted to radians, as OpenSim does. (A zero stiffness's ratio is 0.)
    """

    def __init__(self, mobod, which, upper_stiffness, upper_limit, lower_stiffness, lower_limit, damping,
                 transition, rotational):
        super().__init__()
        w = math.pi / 180.0 if rotational else 1.0
        self._mobod = mobod
        self._k = int(which)
        self.q_up, self.q_lo = w * upper_limit, w * lower_limit
        self.K_up, self.K_lo = upper_stiffness / w, lower_stiffness / w
        self.c = damping / w
        self.tr = w * transition
        self._up = Function.Step(0.0, self.K_up, self.q_up, self.q_up + self.tr)
        self._lo = Function.Step(self.K_lo, 0.0, self.q_lo - self.tr, self.q_lo)

    def limit_force(self, q: float, qdot: float) -> float:
        k_up = self._up.calc_value([q])
        k_lo = self._lo.calc_value([q])
        on = (k_up / self.K_up if self.K_up != 0.0 else 0.0) + (k_lo / self.K_lo if self.K_lo != 0.0 else 0.0)
        return -k_up * (q - self.q_up) + k_lo * (self.q_lo - q) - self.c * on * qdot

    def calc_force(self, state, body_forces, particle_forces, mobility_forces) -> None:
        f = self.limit_force(self._mobod.get_one_q(state, self._k), self._mobod.get_one_u(state, self._k))
        self._mobod.apply_one_mobility_force(state, self._k, f, mobility_forces)

    def calc_potential_energy(self, state) -> float:
        # The integral of the stiffness spring (OpenSim's computePotentialEnergy).
        q = self._mobod.get_one_q(state, self._k)
        if q > self.q_up:
            K, delta = self.K_up, q - self.q_up
        elif q < self.q_lo:
            K, delta = self.K_lo, self.q_lo - q
        else:
            return 0.0
        if delta >= self.tr:
            return K * (-(2.0 / 14.0) * self.tr ** 2 + 0.5 * delta ** 2)
        s = delta / self.tr
        return K * s ** 3 * (2.0 - 2.5 * s + (6.0 / 7.0) * s * s) * delta ** 2


#: OpenSim's parameters (q_upper, K_upper, q_lower, K_lower, damping, transition) of the pin's limit, in
#: degrees, and of the slider's, in metres (those of tests/io/test_osim.py)
PIN = (10.0, 2.0, -15.0, 3.0, 0.05, 8.0)
SLIDER = (0.1, 200.0, -0.2, 100.0, 5.0, 0.05)


def limited_pair(pin_limit=PIN, slider_limit=SLIDER, compiled: bool = True, oracle: bool = False, extra=()):
    """A Pin link under gravity carrying a Slider block, each coordinate limited by a Force.CoordinateLimit
    (``compiled``) and/or its oracle (``oracle``); ``extra(forces, pin, slider)`` may add more. Returns
    (system, pin, slider, {"compiled": [...], "oracle": [...]})."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    link = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -0.25, 0], Inertia([0.02, 0.001, 0.02])))
    pin = MobilizedBody.Pin(matter.ground, Transform(), link, Transform())
    slider = MobilizedBody.Slider(pin, Transform([0, -0.5, 0]), link, Transform())
    made: dict = {"compiled": [], "oracle": []}
    for mb, params, degrees in ((pin, pin_limit, True), (slider, slider_limit, False)):
        q_up, k_up, q_lo, k_lo, c, tr = params
        if compiled:
            made["compiled"].append(Force.CoordinateLimit(forces, mb, 0, *params, degrees=degrees))
        if oracle:
            made["oracle"].append(Force.Custom(forces, LimitOracle(mb, 0, k_up, q_up, k_lo, q_lo, c, tr, degrees)))
    for add in extra:
        add(forces, pin, slider)
    return system, pin, slider, made


def near_limits(params, degrees: bool):
    """Coordinates near and across the limits of ``params``: at the limits and the transitions' ends,
    inside the transitions and beyond them, between the limits."""
    q_up, _, q_lo, _, _, tr = params
    w = math.pi / 180.0 if degrees else 1.0
    up, lo, t = w * q_up, w * q_lo, w * tr
    s = st.one_of(st.sampled_from([-0.5, 0.0, 1e-12, 0.25, 0.5, 0.75, 1.0 - 1e-12, 1.0, 1.0 + 1e-12, 2.5]),
                  st.floats(-1.0, 3.0, allow_nan=False))
    return st.one_of(s.map(lambda x: up + x * t), s.map(lambda x: lo - x * t),
                     st.floats(lo - 3 * t, up + 3 * t, allow_nan=False), st.sampled_from([up, lo, up + t, lo - t]))


_params = st.tuples(st.floats(-1.0, 1.0), st.floats(0.0, 500.0), st.floats(-2.0, -1.0), st.floats(0.0, 500.0),
                    st.floats(0.0, 10.0), st.floats(1e-3, 0.5))


# ---------------------------------------------------------------------------------------------- the oracle
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_one_element_equals_the_oracle_bitwise(data):
    """Law: one Force.CoordinateLimit's generalized force and potential energy equal its Python oracle's
    bitwise, at random parameters (a stiffness may be 0) and states near and across both limits and their
    transitions, for a rotational coordinate in degrees and a translational one in metres."""
    pin_limit = data.draw(_params.map(lambda p: tuple(57.0 * x if i in (0, 2, 5) else x for i, x in enumerate(p))),
                          label="pin's (degrees)")
    slider_limit = data.draw(_params, label="slider's")
    system, pin, slider, made = limited_pair(pin_limit, slider_limit, oracle=True)
    state = system.realize_topology()
    pin.set_one_q(state, 0, data.draw(near_limits(pin_limit, True), label="pin q"))
    slider.set_one_q(state, 0, data.draw(near_limits(slider_limit, False), label="slider q"))
    state.upd_u()[:] = data.draw(st.lists(st.floats(-5, 5), min_size=2, max_size=2), label="u")
    system.realize(state, Stage.Velocity)
    for mine, oracle in zip(made["compiled"], made["oracle"]):
        fm, fo = mine.calc_force_contribution(state), oracle.calc_force_contribution(state)
        assert np.array_equal(fm[1], fo[1]) and not fm[0].any(), (fm[1], fo[1])
        assert mine.calc_potential_energy_contribution(state) == oracle.calc_potential_energy_contribution(state)


@pytest.mark.parametrize("with_other_forces", [False, True])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_model_matches_its_oracle_model(with_other_forces, data):
    """Law: a model whose limits are Force.CoordinateLimit has the forces, potential energy and
    accelerations of the same model with the oracle; bitwise when the limit is the only mobility force on
    its coordinate, else within the rounding of the other order of summing them (the built-in sets are
    added before Force.Custom): |df| <= 4 eps sum |f_i|, and udot within ||M^-1|| of that. The potential
    energy, summed in the other order too, within 4 eps of the sum of the magnitudes."""
    def others(forces, pin, slider):
        Force.MobilityLinearDamper(forces, pin, 0, 0.7)
        Force.MobilityLinearSpring(forces, slider, 0, 30.0, 0.05)
        Force.MobilityLinearDamper(forces, slider, 0, 0.3)

    extra = (others,) if with_other_forces else ()
    mine = limited_pair(extra=extra)
    theirs = limited_pair(compiled=False, oracle=True, extra=extra)
    q = [data.draw(near_limits(PIN, True), label="pin q"), data.draw(near_limits(SLIDER, False), label="slider q")]
    u = data.draw(st.lists(st.floats(-5, 5), min_size=2, max_size=2), label="u")
    results = []
    for system, pin, slider, made in (mine, theirs):
        state = system.realize_topology()
        state.upd_q()[:] = q
        state.upd_u()[:] = u
        system.realize(state, Stage.Acceleration)
        results.append((system.get_mobility_forces(state).copy(), system.calc_potential_energy(state),
                        state.get_udot().copy(), system.get_matter_subsystem().calc_m_inv(state), made, state))
    (fa, ea, ua, minv, made, state), (fb, eb, ub, _, _, _) = results
    # the energies are summed in another order too (the built-in kinds', then Force.Custom's)
    energies = [abs(f.calc_potential_energy_contribution(state)) for f in made["compiled"]]
    assert abs(ea - eb) <= 4 * EPS * (abs(ea - sum(energies)) + sum(energies))
    if not with_other_forces:
        assert np.array_equal(fa, fb) and np.array_equal(ua, ub), (fa - fb, ua - ub)
        return
    # the magnitudes summed into each mobility force: the limits', the springs' and dampers', gravity's none
    forces = made["compiled"][0].get_force_subsystem()
    scale = np.sum([np.abs(forces.get_force(i).calc_force_contribution(state)[1])
                    for i in range(forces.get_num_forces())], axis=0)
    assert np.all(np.abs(fa - fb) <= 4 * EPS * scale), (fa - fb, scale)
    tol_u = np.linalg.norm(minv, 2) * np.linalg.norm(4 * EPS * scale) * 4 + 16 * EPS * np.abs(ub).max()
    assert np.abs(ua - ub).max() <= tol_u, (ua - ub, tol_u)


# ---------------------------------------------------------------------------------------------- fast paths
def test_a_limited_model_takes_every_compiled_path():
    """Law: with the limits compiled the model has no Python part (its fused realization calls none), the
    batch evaluates it (bitwise the State's accelerations), and the compiled time loop takes every step
    from the batch kernels, bitwise as the Python loop; with the oracle the loop calls Python per
    evaluation and says so."""
    system, pin, slider, _ = limited_pair()
    state = system.realize_topology()
    system.realize(state, Stage.Model)
    state.upd_q()[:] = [np.radians(9.0), 0.09]
    state.upd_u()[:] = [2.5, 1.5]
    matter = system.get_matter_subsystem()
    system.realize(state, Stage.Acceleration)
    assert system._describe_python_parts(state) == []
    qs = np.array([[np.radians(d), x] for d, x in ((12.0, 0.1), (-20.0, -0.3), (0.0, 0.0), (15.0, 0.13))])
    us = np.array([[1.0, -2.0], [-3.0, 0.5], [0.0, 0.0], [0.7, 0.2]])
    batch = matter.calc_udot_batch(qs, us, np.zeros((4, 2)))
    for k in range(4):
        s = state.copy()
        s.upd_q()[:] = qs[k]
        s.upd_u()[:] = us[k]
        system.realize(s, Stage.Acceleration)
        assert np.array_equal(batch[k], s.get_udot()), k
    for name in ("RungeKuttaMerson", "SemiExplicitEuler2", "Verlet"):
        a, b = twins(system, COMPILED_TWINS[name], lambda integ: integ.set_accuracy(1e-5))
        a.initialize(state)
        b.initialize(state)
        assert_paths_named(a, b)
        assert "calls Python" not in a.describe_fast_path(), a.describe_fast_path()
        with counting_compiled_steps() as compiled_steps:
            seen, ended = drive(a, b, [0.2, 0.5], max_steps=20000)
        assert ended == "reached" and compiled_steps[0] == a.get_num_steps_taken() > 0
    system, *_ = limited_pair(compiled=False, oracle=True)
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.initialize(system.realize_topology())
    assert "calls Python for Force.Custom" in integ.describe_fast_path()


def test_the_limits_hold_a_swinging_pendulum():
    """Law: a pin swinging against its limits stays within the limits plus a few transitions, and the
    energy it loses (damping only acts past a limit) never exceeds what it had."""
    system, pin, slider, _ = limited_pair()
    state = system.realize_topology()
    state.upd_u()[:] = [6.0, 0.0]
    system.realize(state, Stage.Velocity)
    e0 = system.calc_energy(state)
    integ = COMPILED_TWINS["RungeKuttaMerson"](system)
    integ.set_accuracy(1e-6)
    integ.initialize(state)
    lo, hi = math.radians(PIN[2] - 6 * PIN[5]), math.radians(PIN[0] + 6 * PIN[5])
    for t in np.linspace(0.05, 2.0, 40):
        integ.step_to(t)
        s = integ.get_state()
        assert lo <= pin.get_one_q(s, 0) <= hi
        system.realize(s, Stage.Velocity)
        assert system.calc_energy(s) <= e0 + 1e-6 * abs(e0)


# ---------------------------------------------------------------------------------------------- arguments
@pytest.mark.parametrize("args, match", [
    ((10.0, -2.0, -15.0, 3.0, 0.05, 8.0), "Force.CoordinateLimit: upper_stiffness must be >= 0"),
    ((10.0, 2.0, -15.0, -3.0, 0.05, 8.0), "Force.CoordinateLimit: lower_stiffness must be >= 0"),
    ((10.0, 2.0, -15.0, 3.0, -0.05, 8.0), "Force.CoordinateLimit: damping must be >= 0"),
    ((10.0, 2.0, -15.0, 3.0, 0.05, 0.0), "Force.CoordinateLimit: transition must be > 0"),
    ((10.0, 2.0, -15.0, 3.0, 0.05, -1.0), "Force.CoordinateLimit: transition must be > 0"),
    ((1e20, 2.0, -15.0, 3.0, 0.05, 1e-10), "Force.CoordinateLimit: the transition .* too small"),
    ((float("nan"), 2.0, -15.0, 3.0, 0.05, 8.0), "Force.CoordinateLimit: upper_limit"),
    ((10.0, float("inf"), -15.0, 3.0, 0.05, 8.0), "Force.CoordinateLimit: upper_stiffness"),
    (("ten", 2.0, -15.0, 3.0, 0.05, 8.0), "Force.CoordinateLimit: upper_limit"),
])
def test_bad_arguments_are_refused_naming_the_element(args, match):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                            Transform())
    with pytest.raises((ValueError, TypeError), match=match):
        Force.CoordinateLimit(forces, pin, 0, *args)
    n = forces.get_num_forces()
    limit = Force.CoordinateLimit(forces, pin, 0, *PIN)
    assert forces.get_num_forces() == n + 1
    with pytest.raises(ValueError, match="transition"):
        limit.set_property("transition", 0.0)
    with pytest.raises(ValueError, match="upper_stiffness"):
        limit.set_property("upper_stiffness", -1.0)
    with pytest.raises(TypeError, match="MobilizedBody"):
        Force.CoordinateLimit(forces, matter, 0, *PIN)
    with pytest.raises(ValueError, match="mobility index"):
        Force.CoordinateLimit(forces, pin, -1, *PIN)


def test_a_quaternion_coordinate_is_refused_naming_the_element():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    ball = MobilizedBody.Ball(matter.ground, Transform(), Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0))),
                              Transform())
    Force.CoordinateLimit(forces, ball, 0, *SLIDER, name="ball_limit")
    state = system.realize_topology()
    with pytest.raises(ValueError, match="ball_limit.*qdot = u"):
        system.realize(state, Stage.Instance)


def test_degrees_are_converted_as_opensim_converts_them():
    """Law: ``degrees=True`` keeps, as properties, the values OpenSim's conversion gives (angles times
    pi/180, per-degree values divided by it); the same element in radians is the same force."""
    system, pin, slider, made = limited_pair()
    limit = made["compiled"][0]
    w = math.pi / 180.0
    assert [limit.get_property(p) for p in ("upper_limit", "upper_stiffness", "lower_limit", "lower_stiffness",
                                             "damping", "transition")] == [
        w * PIN[0], PIN[1] / w, w * PIN[2], PIN[3] / w, PIN[4] / w, w * PIN[5]]


# ---------------------------------------------------------------------------------------------- OpenSim 4.6
def test_against_opensim(tmp_path):
    """Law: the force and potential energy of each CoordinateLimitForce read from a .osim file equal
    OpenSim 4.6's own (``calcLimitForce``, ``computePotentialEnergy``) near and across the limits, to
    64 eps of the force's scale (K (|q - limit| + tr) + c |u|: OpenSim converts units and forms the steps
    with its own operations)."""
    osim = pytest.importorskip("opensim")
    osim.Logger.removeFileSink()
    from simtk.io import load_osim

    model = osim.Model()
    model.setGravity(osim.Vec3(0, -9.81, 0))
    parent = model.getGround()
    for i, J in enumerate((osim.PinJoint, osim.SliderJoint), start=1):
        b = osim.Body(f"b{i}", 1.0, osim.Vec3(0, -0.25, 0), osim.Inertia(0.02, 0.001, 0.02))
        model.addBody(b)
        model.addJoint(J(f"j{i}", parent, osim.Vec3(0, -0.5 * (i - 1), 0), osim.Vec3(0, 0, 0), b,
                         osim.Vec3(0, 0, 0), osim.Vec3(0, 0, 0)))
        parent = b
    names = [model.getCoordinateSet().get(i).getName() for i in range(2)]
    for name, params, label in zip(names, (PIN, SLIDER), ("pin_limit", "slider_limit")):
        clf = osim.CoordinateLimitForce(name, *params)
        clf.setName(label)
        model.addForce(clf)
    path = tmp_path / "limits.osim"
    model.finalizeConnections()
    model.printToXML(str(path))
    om = osim.Model(str(path))
    s = om.initSystem()
    m = load_osim(path)
    st_ = m.initial_state()
    rng = np.random.default_rng(7)
    cs = om.getCoordinateSet()
    for k in range(60):
        q = [math.radians(rng.choice([rng.uniform(8, 30), rng.uniform(-35, -13), rng.uniform(-14, 9)])),
             float(rng.choice([rng.uniform(0.08, 0.2), rng.uniform(-0.3, -0.18), rng.uniform(-0.19, 0.09)]))]
        u = rng.uniform(-3, 3, 2)
        for n, qi, ui in zip(names, q, u):
            cs.get(n).setValue(s, qi, False)
            cs.get(n).setSpeedValue(s, ui)
            m.set_coordinate_value(st_, n, qi)
            m.set_coordinate_speed(st_, n, ui)
        om.realizeVelocity(s)
        m.system.realize(st_, Stage.Velocity)
        for n, label, params, degrees, qi, ui in zip(names, ("pin_limit", "slider_limit"), (PIN, SLIDER),
                                                     (True, False), q, u):
            (mine,) = m.force_elements[label]
            assert type(mine).__name__ == "CoordinateLimit"
            f = mine.calc_force_contribution(st_)[1]
            theirs = om.getForceSet().get(label)
            theirs = osim.CoordinateLimitForce.safeDownCast(theirs)
            w = math.pi / 180.0 if degrees else 1.0
            K, c, tr = max(params[1], params[3]) / w, params[4] / w, w * params[5]
            scale = K * (abs(qi - w * params[0]) + abs(qi - w * params[2]) + tr) + c * abs(ui)
            assert abs(f.sum() - theirs.calcLimitForce(s)) <= 64 * EPS * scale, (k, label, f, theirs.calcLimitForce(s))
            e = mine.calc_potential_energy_contribution(st_)
            assert abs(e - theirs.computePotentialEnergy(s)) <= 64 * EPS * scale * (abs(qi) + tr), (k, label)
