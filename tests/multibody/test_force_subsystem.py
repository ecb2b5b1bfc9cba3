"""Force subsystems: the GeneralForceSubsystem's bookkeeping (totals, enabling, energy, errors)
and user ForceSubsystems written as in seed §2.2-2.4.

The three ``Example*Subsystem`` classes here are the seed's examples turned into Python; they are
also used by ``test_custom_force.py``.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from test_forces import (
    SEEDS,
    build_tree,
    energy_gradient_along_mobilities,
    pick,
    random_transform,
    randomize_state,
    two_distinct_bodies,
)

from simtk import (
    Body,
    Force,
    ForceSubsystem,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    StageTooLowError,
    TopologyVersionError,
    Transform,
)
from tolerances import EPS  # round-off margins below are counts of EPS


# ---------------------------------------------------------------------- seed §2.2-2.4 in Python
def repulsion_pairs(matter, state):
    """(i, j, r) for every pair j < i of mobilized bodies (Ground included), r = p_GBi - p_GBj."""
    for i in range(matter.get_num_bodies()):
        body1 = matter.get_mobilized_body(i)
        for j in range(i):
            body2 = matter.get_mobilized_body(j)
            yield i, j, body1.get_body_origin_location(state) - body2.get_body_origin_location(state)


class ExampleSubsystem(ForceSubsystem):
    """Seed §2.2: every pair of bodies repels with strength / r^2 along the line of their origins.

    The seed writes the energy as ``energy -= 1.0/r.norm()``; for a repulsion F = r/|r|^3 the
    potential is +1/|r| (its gradient is -r/|r|^3), which is what is used here and checked below.
    """

    def __init__(self, system, name="Example"):
        super().__init__(system, name, "1.0")  # sibling names are unique: a second one needs its own

    def get_strength(self, state) -> float:
        return 1.0

    def realize_subsystem_dynamics_impl(self, state):
        system = self.get_system()
        matter = system.get_matter_subsystem()
        forces = system.upd_rigid_body_forces(state, Stage.Dynamics)
        strength = self.get_strength(state)
        for i, j, r in repulsion_pairs(matter, state):
            distance = np.linalg.norm(r)
            force = strength * r / (distance * distance * distance)
            forces[i, 1] += force
            forces[j, 1] -= force

    def calc_potential_energy(self, state):
        matter = self.get_system().get_matter_subsystem()
        strength = self.get_strength(state)
        return float(sum(strength / np.linalg.norm(r) for _, _, r in repulsion_pairs(matter, state)))


class ExampleParameterSubsystem(ExampleSubsystem):
    """Seed §2.3: the strength is a topological property; changing it invalidates every State."""

    def __init__(self, system):
        self._default_force_strength = 1.0
        super().__init__(system)

    def set_default_force_strength(self, strength: float) -> None:
        self._default_force_strength = float(strength)
        self.invalidate_subsystem_topology_cache()

    def get_default_force_strength(self) -> float:
        return self._default_force_strength

    def get_strength(self, state) -> float:
        return self._default_force_strength


class ExampleStateVariableSubsystem(ExampleParameterSubsystem):
    """Seed §2.4: the strength is a discrete variable (Dynamics) whose default is the parameter."""

    def realize_subsystem_topology_impl(self, state):
        # Indices allocated at Topology may be kept on the subsystem (seed §2.4).
        self._force_strength_index = self.allocate_discrete_variable(state, Stage.Dynamics,
                                                                     self._default_force_strength)

    def set_force_strength(self, state, strength: float) -> None:
        self.set_discrete_variable(state, self._force_strength_index, float(strength))

    def get_force_strength(self, state) -> float:
        return self.get_discrete_variable(state, self._force_strength_index)

    get_strength = get_force_strength


def free_bodies_system(rng, n: int):
    """n Free bodies (identity frames) with random mass properties; returns system, matter, bodies."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    bodies = []
    for _ in range(n):
        mp = MassProperties.from_central_inertia(rng.uniform(0.5, 2.0), rng.uniform(-0.2, 0.2, 3),
                                                 Inertia(rng.uniform(0.2, 0.4, 3)))
        bodies.append(MobilizedBody.Free(matter.ground, Body.Rigid(mp)))
    return system, matter, bodies


def place_apart(matter, state, rng) -> None:
    """Random orientations and speeds; origins at least 0.5 apart from each other and from Ground's."""
    points = [np.zeros(3)]
    for i in range(1, matter.get_num_bodies()):
        while True:
            p = rng.uniform(-2.0, 2.0, 3)
            if min(np.linalg.norm(p - x) for x in points) > 0.5:
                break
        points.append(p)
        quat = rng.normal(size=4)
        body = matter.get_mobilized_body(i)
        body.set_q(state, np.concatenate([quat / np.linalg.norm(quat), p]))
        body.set_u(state, rng.uniform(-1, 1, 6))


def expected_repulsion(points, strength=1.0):
    """Independent pairwise 1/r^2 repulsion on points (Ground's origin first): forces (n, 3), energy."""
    n = len(points)
    f, energy = np.zeros((n, 3)), 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                r = points[i] - points[j]
                f[i] += strength * r / np.linalg.norm(r) ** 3
                if j < i:
                    energy += strength / np.linalg.norm(r)
    return f, energy


# ---------------------------------------------------------------------- seed §2.2
@settings(max_examples=10)
@given(seed=SEEDS)
def test_example_subsystem_applies_pairwise_repulsion(seed):
    """§2.2: the subsystem's body forces are the pairwise 1/r^2 repulsion computed independently
    from the body origins, its energy is sum 1/r, and the System's PE is that energy."""
    rng = np.random.default_rng(seed)
    system, matter, bodies = free_bodies_system(rng, int(rng.integers(2, 5)))
    example = ExampleSubsystem(system)
    state = system.realize_topology()
    place_apart(matter, state, rng)
    system.realize(state, Stage.Acceleration)
    points = [np.zeros(3)] + [np.array(b.get_q(state)[4:]) for b in bodies]
    f, energy = expected_repulsion(points)
    F = system.get_rigid_body_forces(state)
    np.testing.assert_allclose(F[1:, 1], f[1:], rtol=(2**13 * EPS), atol=(2**13 * EPS))
    np.testing.assert_allclose(F[1:, 0], 0.0)
    assert example.calc_potential_energy(state) == pytest.approx(energy, rel=(2**13 * EPS))
    assert system.calc_potential_energy(state) == pytest.approx(energy, rel=(2**13 * EPS))
    # Free bodies at their origins: each origin accelerates as f/m when the mass center is the origin
    # only; in general compare with forward dynamics of the same forces.
    udot, _ = matter.calc_acceleration_ignoring_constraints(state, np.zeros(state.get_nu()), np.array(F))
    np.testing.assert_allclose(state.get_udot(), udot, rtol=(2**13 * EPS), atol=(2**13 * EPS))


@settings(max_examples=6)
@given(seed=SEEDS)
def test_example_subsystem_force_is_minus_gradient_of_its_energy(seed):
    """§2.2 with the energy +1/r: the generalized force J^T F equals -dPE/ds along every mobility
    of a random tree (the seed's -1/r would give +dPE/ds: its sign is a typo)."""
    rng = np.random.default_rng(seed)
    tree = build_tree(rng, int(rng.integers(2, 4)), force_subsystem=False)
    example = ExampleSubsystem(tree.system)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng, speeds=False, q_scale=2.0)
    tree.system.realize(state, Stage.Dynamics)
    origins = [b.get_body_origin_location(state) for b in tree.bodies]
    assume(min(np.linalg.norm(a - b) for k, a in enumerate(origins) for b in origins[:k]) > 0.2)
    F = tree.system.get_rigid_body_forces(state)
    f = tree.matter.multiply_by_system_jacobian_transpose(state, F)
    grad = energy_gradient_along_mobilities(tree, state, example.calc_potential_energy)
    np.testing.assert_allclose(f, -grad, rtol=0, atol=1e-6 * max(1.0, np.max(np.abs(f))))


def test_force_subsystems_are_realized_after_matter_and_add_up():
    """A ForceSubsystem added before the GeneralForceSubsystem and one added after both add into the
    same accumulators, which matter zeroes first: totals are the sums, at every realization."""
    rng = np.random.default_rng(11)
    system, matter, bodies = free_bodies_system(rng, 3)
    first = ExampleSubsystem(system)
    forces = GeneralForceSubsystem(system)
    g = Force.UniformGravity(forces, matter, [0.0, -9.8, 0.0])
    second = ExampleSubsystem(system, "Example2")
    assert system.get_force_subsystems() == (first, forces, second)
    state = system.realize_topology()
    place_apart(matter, state, rng)
    for _ in range(2):  # the second realization must not accumulate on top of the first
        system.realize(state, Stage.Acceleration)
        points = [np.zeros(3)] + [np.array(b.get_q(state)[4:]) for b in bodies]
        f, energy = expected_repulsion(points)
        F_g, _ = g.calc_force_contribution(state)
        F = system.get_rigid_body_forces(state)
        np.testing.assert_allclose(F[1:, 1], 2 * f[1:] + F_g[1:, 1], rtol=(2**13 * EPS), atol=(2**13 * EPS))
        assert system.calc_potential_energy(state) == pytest.approx(
            2 * energy + g.calc_potential_energy_contribution(state), rel=2**13 * EPS)
        bodies[0].set_u(state, rng.uniform(-1, 1, 6))


# ---------------------------------------------------------------------- seed §2.3
def test_parameter_change_is_a_topology_change():
    """§2.3: set_default_force_strength invalidates the topology: States made before are refused
    with TopologyVersionError; new States see forces scaled by the strength."""
    rng = np.random.default_rng(5)
    system, matter, bodies = free_bodies_system(rng, 3)
    example = ExampleParameterSubsystem(system)
    old = system.realize_topology()
    place_apart(matter, old, rng)
    system.realize(old, Stage.Acceleration)
    F1 = np.array(system.get_rigid_body_forces(old))
    q, u = np.array(old.get_q()), np.array(old.get_u())
    example.set_default_force_strength(2.5)
    assert example.get_default_force_strength() == 2.5
    with pytest.raises(TopologyVersionError):
        system.realize(old, Stage.Acceleration)
    with pytest.raises(TopologyVersionError):
        system.get_rigid_body_forces(old)
    new = system.realize_topology()
    new.set_q(q)
    new.set_u(u)
    system.realize(new, Stage.Acceleration)
    np.testing.assert_allclose(system.get_rigid_body_forces(new), 2.5 * F1, rtol=(2**13 * EPS), atol=(2**13 * EPS))


# ---------------------------------------------------------------------- seed §2.4
def test_state_variable_strength_invalidates_dynamics_only():
    """§2.4: the strength is a Dynamics discrete variable defaulting to the parameter; setting it in a
    State realized to Acceleration drops it to Velocity; udot is affine in the strength
    (udot(s) = udot(0) + s (udot(1) - udot(0))); other States and copies keep their own value."""
    rng = np.random.default_rng(6)
    system, matter, bodies = free_bodies_system(rng, 3)
    Force.UniformGravity(GeneralForceSubsystem(system), matter, [0, 0, -9.8])
    example = ExampleStateVariableSubsystem(system)
    example.set_default_force_strength(1.5)
    state = system.realize_topology()
    assert example.get_force_strength(state) == 1.5
    place_apart(matter, state, rng)
    udots = {}
    for strength in (0.0, 1.0, 3.0):
        system.realize(state, Stage.Acceleration)
        example.set_force_strength(state, strength)
        assert state.get_system_stage() == Stage.Velocity
        system.realize(state, Stage.Acceleration)
        udots[strength] = np.array(state.get_udot())
    np.testing.assert_allclose(udots[3.0], udots[0.0] + 3.0 * (udots[1.0] - udots[0.0]), rtol=1e-10, atol=1e-10)
    copy = state.copy()
    example.set_force_strength(copy, 7.0)
    assert example.get_force_strength(state) == 3.0
    assert example.get_force_strength(system.realize_topology()) == 1.5


def test_state_variable_strength_matches_parameter_version():
    """§2.4 with strength s in the State gives the same forces and energy as §2.3 with default s."""
    rng = np.random.default_rng(8)
    sys_a, matter_a, _ = free_bodies_system(np.random.default_rng(1), 3)
    sys_b, matter_b, _ = free_bodies_system(np.random.default_rng(1), 3)
    a = ExampleParameterSubsystem(sys_a)
    a.set_default_force_strength(0.7)
    b = ExampleStateVariableSubsystem(sys_b)
    sa, sb = sys_a.realize_topology(), sys_b.realize_topology()
    b.set_force_strength(sb, 0.7)
    place_apart(matter_a, sa, rng)
    sb.set_q(sa.get_q())
    sb.set_u(sa.get_u())
    sys_a.realize(sa, Stage.Acceleration)
    sys_b.realize(sb, Stage.Acceleration)
    np.testing.assert_allclose(sb.get_udot(), sa.get_udot(), rtol=(512 * EPS), atol=(512 * EPS))
    assert sys_b.calc_potential_energy(sb) == pytest.approx(sys_a.calc_potential_energy(sa), rel=(512 * EPS))


# ---------------------------------------------------------------------- GeneralForceSubsystem totals
def _many_elements(rng, tree):
    """Several elements of every kind (two of each, so bulk evaluation is exercised)."""
    state = tree.system.realize_topology()
    qu_bodies = [b for b, k in zip(tree.bodies, tree.kinds) if k in ("Pin", "Slider", "Gimbal", "Universal",
                                                                    "Translation")]
    nu = {b: b.get_num_u(state) for b in tree.bodies[1:]}  # before the topology changes
    mobilities = [(b, int(rng.integers(nu[b]))) for b in tree.bodies[1:]]
    out = []
    for _ in range(2):
        b1, b2 = two_distinct_bodies(rng, tree)
        s1, s2 = rng.uniform(-.5, .5, 3), rng.uniform(-.5, .5, 3)
        mb, w = pick(rng, mobilities)
        out += [
            Force.UniformGravity(tree.forces, tree.matter, rng.normal(size=3)),
            Force.TwoPointLinearSpring(tree.forces, b1, s1, b2, s2, rng.uniform(1, 10), rng.uniform(0, 1)),
            Force.TwoPointLinearDamper(tree.forces, b1, s2, b2, s1, rng.uniform(0.1, 2)),
            Force.TwoPointConstantForce(tree.forces, b2, s1, b1, s2, rng.uniform(-2, 2)),
            Force.MobilityLinearDamper(tree.forces, mb, w, rng.uniform(0.1, 2)),
            Force.MobilityConstantForce(tree.forces, mb, w, rng.normal()),
            Force.GlobalDamper(tree.forces, tree.matter, rng.uniform(0.1, 2)),
            Force.ConstantForce(tree.forces, b2 if not b2.is_ground() else b1, s1, rng.normal(size=3)),
            Force.ConstantTorque(tree.forces, b1 if not b1.is_ground() else b2, rng.normal(size=3)),
            Force.LinearBushing(tree.forces, b1, random_transform(rng, 0.1), b2, random_transform(rng, 0.1),
                                rng.uniform(0, 5, 6), rng.uniform(0, 1, 6)),
        ]
        if qu_bodies:
            mb = pick(rng, qu_bodies)
            which = int(rng.integers(nu[mb]))
            out += [Force.MobilityLinearSpring(tree.forces, mb, which, rng.uniform(1, 10), rng.normal()),
                    Force.MobilityLinearStop(tree.forces, mb, which, rng.uniform(1, 10), rng.uniform(0, 1),
                                             -0.3, 0.3)]
    return out


@settings(max_examples=10)
@given(seed=SEEDS)
def test_totals_are_the_sum_of_the_elements(seed):
    """The System's body and mobility forces are the sums of every element's own contribution
    (each evaluated alone); udot is forward dynamics of those totals; PE is the sum of energies."""
    rng = np.random.default_rng(seed)
    tree = build_tree(rng, int(rng.integers(2, 5)))
    elements = _many_elements(rng, tree)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng)
    tree.system.realize(state, Stage.Acceleration)
    F = sum(e.calc_force_contribution(state)[0] for e in elements)
    f = sum(e.calc_force_contribution(state)[1] for e in elements)
    np.testing.assert_allclose(tree.system.get_rigid_body_forces(state), F, rtol=(2**13 * EPS), atol=(2**13 * EPS))
    np.testing.assert_allclose(tree.system.get_mobility_forces(state), f, rtol=(2**13 * EPS), atol=(2**13 * EPS))
    udot, _ = tree.matter.calc_acceleration_ignoring_constraints(state, f, F)
    np.testing.assert_allclose(state.get_udot(), udot, rtol=1e-10, atol=1e-10)
    pe = sum(e.calc_potential_energy_contribution(state) for e in elements)
    assert tree.system.calc_potential_energy(state) == pytest.approx(pe, rel=(2**13 * EPS), abs=(2**13 * EPS))
    assert tree.forces.calc_potential_energy(state) == pytest.approx(pe, rel=(2**13 * EPS), abs=(2**13 * EPS))


@settings(max_examples=10)
@given(seed=SEEDS)
def test_energy_is_kinetic_plus_potential(seed):
    """calc_energy = KE + PE, with KE = sum over bodies of 1/2 m |v_C|^2 + 1/2 w . I_C w computed
    from each body's velocity and the mass properties the test chose, and PE from closed forms
    (gravity: -sum m g . p_C; spring: k/2 (|d| - x0)^2)."""
    rng = np.random.default_rng(seed)
    tree = build_tree(rng, int(rng.integers(1, 5)))
    g = rng.normal(size=3) * 3
    Force.UniformGravity(tree.forces, tree.matter, g)
    b1, b2 = two_distinct_bodies(rng, tree)
    s1, s2, k, x0 = rng.uniform(-.5, .5, 3), rng.uniform(-.5, .5, 3), rng.uniform(1, 10), rng.uniform(0, 1)
    Force.TwoPointLinearSpring(tree.forces, b1, s1, b2, s2, k, x0)
    Force.GlobalDamper(tree.forces, tree.matter, 1.0)  # no energy of its own
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng)
    tree.system.realize(state, Stage.Velocity)
    ke, pe = 0.0, 0.0
    for body, m, com, I_C in zip(tree.bodies[1:], tree.mass[1:], tree.com[1:], tree.I_C[1:]):
        R = body.get_body_rotation(state).matrix
        w, v = body.get_body_velocity(state)
        v_C = v + np.cross(w, R @ com)
        ke += 0.5 * m * v_C @ v_C + 0.5 * w @ (R @ I_C @ R.T) @ w
        pe -= m * g @ (body.get_body_origin_location(state) + R @ com)
    d = b2.find_station_location_in_ground(state, s2) - b1.find_station_location_in_ground(state, s1)
    pe += 0.5 * k * (np.linalg.norm(d) - x0) ** 2
    assert tree.system.calc_kinetic_energy(state) == pytest.approx(ke, rel=1e-10)
    assert tree.system.calc_potential_energy(state) == pytest.approx(pe, rel=1e-10, abs=1e-10)
    assert tree.system.calc_energy(state) == pytest.approx(ke + pe, rel=1e-10, abs=1e-10)


# ---------------------------------------------------------------------- enabling
def _pin_with_two_forces():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Transform(), Body.Rigid(MassProperties.from_central_inertia(
        2.0, [1.0, 0, 0], Inertia(0.5))), Transform())
    spring = Force.MobilityLinearSpring(forces, pin, 0, 10.0, 0.0)
    push = Force.MobilityConstantForce(forces, pin, 0, 3.0)
    return system, matter, pin, spring, push


def test_disable_drops_to_model_and_removes_the_element():
    """Disabling an element drops a State realized to Acceleration to Model (Instance - 1); the
    disabled element contributes no force and no energy; enabling restores it."""
    system, matter, pin, spring, push = _pin_with_two_forces()
    state = system.realize_topology()
    pin.set_angle(state, 0.4)
    I_about_axis = 0.5 + 2.0 * 1.0  # central + m d^2
    system.realize(state, Stage.Acceleration)
    assert pin.get_udot(state)[0] == pytest.approx((-10.0 * 0.4 + 3.0) / I_about_axis, rel=(2**13 * EPS))
    spring.disable(state)
    assert state.get_system_stage() == Stage.Model
    assert spring.is_disabled(state) and not push.is_disabled(state)
    system.realize(state, Stage.Acceleration)
    assert pin.get_udot(state)[0] == pytest.approx(3.0 / I_about_axis, rel=(2**13 * EPS))
    assert not spring.calc_force_contribution(state)[1].any()
    assert spring.calc_potential_energy_contribution(state) == 0.0
    assert system.calc_potential_energy(state) == 0.0
    spring.enable(state)
    assert state.get_system_stage() == Stage.Model
    system.realize(state, Stage.Acceleration)
    assert system.calc_potential_energy(state) == pytest.approx(0.5 * 10.0 * 0.4 ** 2, rel=(2**13 * EPS))


def test_disabling_is_per_state_and_copies_are_independent():
    """Disabling in one State or in a copy leaves the others alone."""
    system, matter, pin, spring, push = _pin_with_two_forces()
    a = system.realize_topology()
    b = system.realize_topology()
    c = a.copy()
    push.disable(c)
    assert push.is_disabled(c) and not push.is_disabled(a) and not push.is_disabled(b)
    d = c.copy()
    push.enable(d)
    assert push.is_disabled(c) and not push.is_disabled(d)


def test_disabled_by_default_affects_new_states_only():
    """set_disabled_by_default is a topology change: States made before are refused; new States
    start with the element disabled, and can still enable it."""
    system, matter, pin, spring, push = _pin_with_two_forces()
    old = system.realize_topology()
    spring.set_disabled_by_default(True)
    assert spring.is_disabled_by_default()
    with pytest.raises(TopologyVersionError):
        spring.is_disabled(old)
    new = system.realize_topology()
    assert spring.is_disabled(new) and not push.is_disabled(new)
    spring.enable(new)
    assert not spring.is_disabled(new)
    assert spring.is_disabled(system.realize_topology())


def test_contribution_needs_the_right_stage():
    """calc_force_contribution needs Position for a position-only element and Velocity otherwise."""
    system, matter, pin, spring, push = _pin_with_two_forces()
    damper = Force.MobilityLinearDamper(spring.get_force_subsystem(), pin, 0, 1.0)
    state = system.realize_topology()
    system.realize(state, Stage.Time)
    with pytest.raises(StageTooLowError):
        spring.calc_force_contribution(state)
    system.realize(state, Stage.Position)
    spring.calc_force_contribution(state)
    with pytest.raises(StageTooLowError):
        damper.calc_force_contribution(state)


# ---------------------------------------------------------------------- validation
def _one_pin():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Body.Rigid(MassProperties(1.0, np.zeros(3), Inertia(1.0))))
    ball = MobilizedBody.Ball(pin, Body.Rigid(MassProperties(1.0, np.zeros(3), Inertia(1.0))))
    return system, matter, forces, pin, ball


Z = np.zeros(3)
NAN3 = np.array([np.nan, 0.0, 0.0])

CONSTRUCTION_ERRORS = [
    # (element name that must be in the message, exception type, constructor taking (forces, matter, pin, ball))
    ("TwoPointLinearSpring", TypeError, lambda f, m, p, b: Force.TwoPointLinearSpring(f, "pin", Z, p, Z, 1.0, 0.0)),
    ("TwoPointLinearSpring", ValueError, lambda f, m, p, b: Force.TwoPointLinearSpring(f, m.ground, Z, p, Z, -1.0, 0.)),
    ("TwoPointLinearSpring", ValueError, lambda f, m, p, b: Force.TwoPointLinearSpring(f, m.ground, Z, p, Z, np.nan, 0)),
    ("TwoPointLinearSpring", ValueError, lambda f, m, p, b: Force.TwoPointLinearSpring(f, m.ground, NAN3, p, Z, 1, 0)),
    ("TwoPointLinearSpring", ValueError, lambda f, m, p, b: Force.TwoPointLinearSpring(f, m.ground, Z, p, Z, 1, np.inf)),
    ("TwoPointLinearDamper", ValueError, lambda f, m, p, b: Force.TwoPointLinearDamper(f, m.ground, Z, p, Z, -0.5)),
    ("TwoPointLinearDamper", TypeError, lambda f, m, p, b: Force.TwoPointLinearDamper(f, m.ground, Z, 3, Z, 0.5)),
    ("TwoPointConstantForce", ValueError, lambda f, m, p, b: Force.TwoPointConstantForce(f, m.ground, Z, p, Z, np.nan)),
    ("UniformGravity", ValueError, lambda f, m, p, b: Force.UniformGravity(f, m, NAN3)),
    ("UniformGravity", ValueError, lambda f, m, p, b: Force.UniformGravity(f, m, [0, 0, -9.8], np.inf)),
    ("Gravity", ValueError, lambda f, m, p, b: Force.Gravity(f, m, Z, 9.8)),
    ("Gravity", ValueError, lambda f, m, p, b: Force.Gravity(f, m, [0, 0, -1], np.nan)),
    ("MobilityLinearSpring", TypeError, lambda f, m, p, b: Force.MobilityLinearSpring(f, None, 0, 1.0, 0.0)),
    ("MobilityLinearSpring", ValueError, lambda f, m, p, b: Force.MobilityLinearSpring(f, p, -1, 1.0, 0.0)),
    ("MobilityLinearSpring", ValueError, lambda f, m, p, b: Force.MobilityLinearSpring(f, p, 0, np.nan, 0.0)),
    ("MobilityLinearDamper", ValueError, lambda f, m, p, b: Force.MobilityLinearDamper(f, p, 0, -1.0)),
    ("MobilityConstantForce", ValueError, lambda f, m, p, b: Force.MobilityConstantForce(f, p, 0, np.inf)),
    ("MobilityLinearStop", ValueError, lambda f, m, p, b: Force.MobilityLinearStop(f, p, 0, -1.0, 0.0, -1, 1)),
    ("MobilityLinearStop", ValueError, lambda f, m, p, b: Force.MobilityLinearStop(f, p, 0, 1.0, -0.1, -1, 1)),
    ("MobilityLinearStop", ValueError, lambda f, m, p, b: Force.MobilityLinearStop(f, p, 0, 1.0, 0.1, 1, -1)),
    ("GlobalDamper", ValueError, lambda f, m, p, b: Force.GlobalDamper(f, m, -2.0)),
    ("ConstantForce", TypeError, lambda f, m, p, b: Force.ConstantForce(f, 1, Z, [1, 0, 0])),
    ("ConstantForce", ValueError, lambda f, m, p, b: Force.ConstantForce(f, p, Z, NAN3)),
    ("ConstantForce", ValueError, lambda f, m, p, b: Force.ConstantForce(f, p, [0, 0], [1, 0, 0])),
    ("ConstantTorque", ValueError, lambda f, m, p, b: Force.ConstantTorque(f, p, [np.inf, 0, 0])),
    ("LinearBushing", TypeError, lambda f, m, p, b: Force.LinearBushing(f, m.ground, "X", p, Transform(),
                                                                          np.ones(6), np.ones(6))),
    ("LinearBushing", ValueError, lambda f, m, p, b: Force.LinearBushing(f, m.ground, Transform(), p, Transform(),
                                                                           -np.ones(6), np.ones(6))),
    ("LinearBushing", ValueError, lambda f, m, p, b: Force.LinearBushing(f, m.ground, Transform(), p, Transform(),
                                                                           np.ones(5), np.ones(6))),
    ("LinearBushing", TypeError, lambda f, m, p, b: Force.LinearBushing(f, "ground", Transform(), p, Transform(),
                                                                          np.ones(6), np.ones(6))),
    ("UniformGravity", TypeError, lambda f, m, p, b: Force.UniformGravity(m, m, [0, 0, -9.8])),
]


@pytest.mark.parametrize("name, error, make", CONSTRUCTION_ERRORS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CONSTRUCTION_ERRORS)])
def test_bad_construction_is_refused_with_a_message_naming_the_element(name, error, make):
    """Wrong types, non-finite or negative parameters are refused at construction, naming the element."""
    system, matter, forces, pin, ball = _one_pin()
    with pytest.raises(error, match=rf"\b{name}\b"):
        make(forces, matter, pin, ball)


def test_refused_construction_leaves_the_subsystem_usable():
    """After any refused construction the force subsystem holds no new element and the System
    realizes as if the call had not been made."""
    leaked = []
    for name, error, make in CONSTRUCTION_ERRORS:
        system, matter, forces, pin, ball = _one_pin()
        with pytest.raises(error):
            make(forces, matter, pin, ball)
        if forces.get_num_forces() != 0:
            leaked.append(name)
        else:
            system.realize(system.realize_topology(), Stage.Acceleration)
    assert not leaked, f"half-built elements left behind by: {sorted(set(leaked))}"


def test_mobility_linear_spring_refuses_negative_stiffness():
    """A negative spring stiffness is refused, as for every other stiffness."""
    system, matter, forces, pin, ball = _one_pin()
    with pytest.raises(ValueError, match="MobilityLinearSpring"):
        Force.MobilityLinearSpring(forces, pin, 0, -5.0, 0.0)


def test_a_body_of_another_system_is_refused():
    """An element may only name bodies of its own system's matter subsystem."""
    system, matter, forces, pin, ball = _one_pin()
    other_system, other_matter, _, other_pin, _ = _one_pin()
    with pytest.raises(ValueError, match="TwoPointLinearSpring"):
        Force.TwoPointLinearSpring(forces, matter.ground, Z, other_pin, Z, 1.0, 0.0)
        system.realize(system.realize_topology(), Stage.Instance)


@pytest.mark.parametrize("make", [
    lambda f: Force.UniformGravity(f, "matter", [0, 0, -9.8]),
    lambda f: Force.GlobalDamper(f, "matter", 1.0),
    lambda f: Force.DiscreteForces(f, None),
], ids=["UniformGravity", "GlobalDamper", "DiscreteForces"])
def test_matter_argument_must_be_a_matter_subsystem(make):
    """Passing something other than a SimbodyMatterSubsystem as `matter` is a TypeError."""
    system, matter, forces, pin, ball = _one_pin()
    with pytest.raises(TypeError, match="Force"):
        make(forces)


def test_mobility_index_errors_name_the_element_when_realized():
    """A mobility index past the mobilizer's, or a coordinate of a quaternion mobilizer for an
    element needing qdot = u, is reported at Instance naming the element and the body."""
    system, matter, forces, pin, ball = _one_pin()
    Force.MobilityLinearDamper(forces, pin, 1, 1.0)
    with pytest.raises(IndexError, match=r"MobilityLinearDamper.*Pin"):
        system.realize(system.realize_topology(), Stage.Instance)
    system, matter, forces, pin, ball = _one_pin()
    Force.MobilityLinearSpring(forces, ball, 0, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"MobilityLinearSpring.*Ball"):
        system.realize(system.realize_topology(), Stage.Instance)


def test_discrete_forces_refuse_wrong_shapes_and_values():
    """DiscreteForces setters refuse wrong shapes and non-finite values, naming the element."""
    system, matter, forces, pin, ball = _one_pin()
    discrete = Force.DiscreteForces(forces, matter)
    state = system.realize_topology()
    nu, nb = state.get_nu(), matter.get_num_bodies()
    for bad in (np.zeros(nu + 1), np.zeros((nu, 1)), np.full(nu, np.nan)):
        with pytest.raises(ValueError, match="DiscreteForces"):
            discrete.set_all_mobility_forces(state, bad)
    for bad in (np.zeros((nb, 3)), np.zeros((nb + 1, 2, 3)), np.full((nb, 2, 3), np.inf)):
        with pytest.raises(ValueError, match="DiscreteForces"):
            discrete.set_all_body_forces(state, bad)
    with pytest.raises(IndexError, match="DiscreteForces"):
        discrete.set_one_mobility_force(state, pin, 1, 1.0)
    with pytest.raises(ValueError, match="DiscreteForces"):
        discrete.set_one_mobility_force(state, pin, 0, np.nan)
    with pytest.raises(TypeError, match="DiscreteForces"):
        discrete.set_one_mobility_force(state, "pin", 0, 1.0)
    system.realize(state, Stage.Position)
    with pytest.raises(ValueError, match="DiscreteForces"):
        discrete.add_force_to_body_point(state, pin, Z, NAN3)
    # Nothing was applied by the refused calls.
    system.realize(state, Stage.Dynamics)
    assert not system.get_rigid_body_forces(state).any() and not system.get_mobility_forces(state).any()
