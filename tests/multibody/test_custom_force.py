"""Force.Custom (seed §3.1): the same repulsion as the seed's ForceSubsystem, position-only caching,
state of its own, and the errors a custom force can make."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from test_force_subsystem import (
    ExampleParameterSubsystem,
    ExampleStateVariableSubsystem,
    ExampleSubsystem,
    expected_repulsion,
    free_bodies_system,
    place_apart,
    repulsion_pairs,
)
from test_forces import SEEDS, build_tree, energy_gradient_along_mobilities, randomize_state

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    TopologyVersionError,
)
from tolerances import assert_close, scale_of


def _pair_terms(matter, state, strength: float = 1.0) -> float:
    """The largest sum of repulsion magnitudes on one body, |strength| sum_j 1/r_ij^2: the scale of
    the terms of a body's net force (which may cancel)."""
    sums = np.zeros(matter.get_num_bodies())
    for i, j, r in repulsion_pairs(matter, state):
        sums[[i, j]] += abs(strength) / (r @ r)
    return float(sums.max())


def _udot_scale(matter, state, force_terms: float) -> float:
    """Scale of udot's round-off: forces equal to round-off of ``force_terms`` give accelerations
    equal to round-off of |M^-1| force_terms; the forward dynamics adds its own, of udot's scale."""
    return scale_of(matter.calc_m_inv(state)) * force_terms + scale_of(state.get_udot())


class ExampleForce(Force.Custom.Implementation):
    """Seed §3.1: every pair of bodies repels with strength / r^2 (the energy is +strength/r; the
    seed's ``energy -= 1.0/r.norm()`` has the sign of an attraction)."""

    def __init__(self, matter, strength: float = 1.0, position_only: bool = True):
        super().__init__()
        self.matter = matter
        self.strength = strength
        self.position_only = position_only
        self.calls = 0

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        self.calls += 1
        for i, j, r in repulsion_pairs(self.matter, state):
            distance = np.linalg.norm(r)
            force = self.strength * r / (distance * distance * distance)
            body_forces[i, 1] += force
            body_forces[j, 1] -= force

    def calc_potential_energy(self, state):
        return float(sum(self.strength / np.linalg.norm(r) for _, _, r in repulsion_pairs(self.matter, state)))

    def depends_only_on_positions(self):
        return self.position_only


def _twin_systems(seed: int, n: int, make_force):
    """Two identical Free-body systems, the first with ``make_force(system, matter)``, the second with
    the seed's Force.Custom; both States placed identically."""
    out = []
    for with_custom in (False, True):
        system, matter, bodies = free_bodies_system(np.random.default_rng(seed), n)
        if with_custom:
            forces = GeneralForceSubsystem(system)
            impl = ExampleForce(matter)
            Force.Custom(forces, impl)
            extra = impl
        else:
            extra = make_force(system, matter)
        state = system.realize_topology()
        place_apart(matter, state, np.random.default_rng(seed + 1))
        out.append((system, matter, state, extra))
    return out


@settings(max_examples=8)
@given(seed=SEEDS)
def test_custom_force_equals_the_force_subsystem(seed):
    """§3.1 vs §2.2: Force.Custom and the ForceSubsystem give the same udot and potential energy,
    both equal to the independently computed repulsion."""
    n = int(np.random.default_rng(seed).integers(2, 5))
    (sa, ma, a, sub), (sb, mb, b, impl) = _twin_systems(seed, n, lambda s, m: ExampleSubsystem(s))
    sa.realize(a, Stage.Acceleration)
    sb.realize(b, Stage.Acceleration)
    # the same pairwise sums (perhaps in another order), then the same forward dynamics
    terms = _pair_terms(mb, b)
    assert_close(b.get_udot(), a.get_udot(), margin=512, scale=_udot_scale(mb, b, terms), what="udot")
    # the energies are sums of positive terms 1/r: relative round-off of a few flops per pair
    assert_close(sb.calc_potential_energy(b), sa.calc_potential_energy(a), margin=512, what="energy")
    points = [np.zeros(3)] + [np.array(mb.get_mobilized_body(i).get_q(b)[4:]) for i in range(1, n + 1)]
    f, energy = expected_repulsion(points)
    assert_close(sb.get_rigid_body_forces(b)[1:, 1], f[1:], margin=512, scale=terms, what="forces")
    assert_close(sb.calc_potential_energy(b), energy, margin=512, what="energy")


def test_custom_force_with_strength_equals_parameter_and_state_variable_subsystems():
    """A Force.Custom of strength s matches §2.3 with default strength s and §2.4 with s set in the
    State; §2.3's parameter change refuses old States with TopologyVersionError."""
    s_param = 2.0

    def with_parameter(system, matter):
        sub = ExampleParameterSubsystem(system)
        sub.set_default_force_strength(s_param)
        return sub

    (sa, ma, a, sub), (sb, mb, b, impl) = _twin_systems(21, 3, with_parameter)
    impl.strength = s_param  # a Python attribute of the implementation, read on every calc_force
    sa.realize(a, Stage.Acceleration)
    sb.realize(b, Stage.Acceleration)
    terms = _pair_terms(mb, b, s_param)
    assert_close(b.get_udot(), a.get_udot(), margin=512, scale=_udot_scale(mb, b, terms), what="udot")
    assert_close(sb.calc_potential_energy(b), sa.calc_potential_energy(a), margin=512, what="energy")
    sub.set_default_force_strength(3.0)
    with pytest.raises(TopologyVersionError):
        sa.realize(a, Stage.Acceleration)

    (sc, mc, c, var), _ = _twin_systems(21, 3, lambda s, m: ExampleStateVariableSubsystem(s))
    sc.realize(c, Stage.Acceleration)
    var.set_force_strength(c, s_param)
    assert c.get_system_stage() == Stage.Velocity
    sc.realize(c, Stage.Acceleration)
    assert_close(c.get_udot(), b.get_udot(), margin=512, scale=_udot_scale(mb, b, terms), what="udot")
    assert_close(sc.calc_potential_energy(c), sb.calc_potential_energy(b), margin=512, what="energy")


@settings(max_examples=6)
@given(seed=SEEDS)
def test_custom_force_is_minus_gradient_of_its_energy(seed):
    """The §3.1 force with energy +1/r is conservative: J^T F = -dPE/ds along every mobility of a
    random tree (quaternion mobilizers included)."""
    rng = np.random.default_rng(seed)
    tree = build_tree(rng, int(rng.integers(2, 4)))
    custom = Force.Custom(tree.forces, ExampleForce(tree.matter))
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng, speeds=False, q_scale=2.0)
    tree.system.realize(state, Stage.Velocity)
    origins = [b.get_body_origin_location(state) for b in tree.bodies]
    # Origins too close make the difference quotient ill-conditioned; other seeds cover the law.
    assume(min(np.linalg.norm(x - y) for k, x in enumerate(origins) for y in origins[:k]) > 0.2)
    F, f_mob = custom.calc_force_contribution(state)
    f = tree.matter.multiply_by_system_jacobian_transpose(state, F) + f_mob
    grad = energy_gradient_along_mobilities(tree, state, custom.calc_potential_energy_contribution)
    # the accuracy of the central differences in energy_gradient_along_mobilities, not round-off
    np.testing.assert_allclose(f, -grad, rtol=0, atol=1e-6 * max(1.0, np.max(np.abs(f))))


# ---------------------------------------------------------------------- depends_only_on_positions
def _counting_system(position_only: bool):
    system, matter, bodies = free_bodies_system(np.random.default_rng(2), 3)
    forces = GeneralForceSubsystem(system)
    impl = ExampleForce(matter, position_only=position_only)
    Force.Custom(forces, impl)
    Force.GlobalDamper(forces, matter, 0.5)  # a velocity-dependent neighbour
    discrete = Force.DiscreteForces(forces, matter)
    state = system.realize_topology()
    place_apart(matter, state, np.random.default_rng(3))
    return system, matter, bodies, impl, discrete, state


def test_position_only_custom_force_is_not_recomputed_when_only_u_changes():
    """A Force.Custom whose depends_only_on_positions() is True is computed once per change of q
    (or t, or anything lower) and reused when u or a Dynamics variable changes; one returning False
    is computed at every realization of Dynamics. udot is the same either way."""
    runs = {}
    for position_only in (True, False):
        system, matter, bodies, impl, discrete, state = _counting_system(position_only)
        log = []

        def realize():
            system.realize(state, Stage.Acceleration)
            log.append((impl.calls, np.array(state.get_udot())))

        realize()
        bodies[0].set_u(state, [0.3, -0.2, 0.1, 1.0, 2.0, 3.0])
        realize()
        discrete.set_all_mobility_forces(state, np.ones(state.get_nu()))
        realize()
        bodies[1].set_q(state, np.concatenate([[1, 0, 0, 0], [2.5, 2.5, 2.5]]))
        realize()
        state.set_time(1.0)
        realize()
        runs[position_only] = log
    assert [calls for calls, _ in runs[True]] == [1, 1, 1, 2, 3]
    assert [calls for calls, _ in runs[False]] == [1, 2, 3, 4, 5]
    # a reused force is the same computation on the same q; the terms are the repulsions, the damper
    # and the unit discrete forces (the systems are alike: the last State's M^-1 is theirs too)
    terms = _pair_terms(matter, state) + scale_of(0.5 * np.array(state.get_u()), floor=1.0)
    for (_, udot_cached), (_, udot_fresh) in zip(runs[True], runs[False]):
        assert_close(udot_cached, udot_fresh, margin=512, scale=_udot_scale(matter, state, terms), what="udot")


def test_position_only_custom_force_udot_matches_forward_dynamics_after_u_change():
    """After only u changed, the reused position-only force still gives the udot of forward dynamics
    with the complete (current) forces: the velocity-dependent ones are recomputed."""
    system, matter, bodies, impl, discrete, state = _counting_system(True)
    system.realize(state, Stage.Acceleration)
    bodies[2].set_u(state, [1.0, 0.0, -1.0, 0.5, 0.5, -2.0])
    system.realize(state, Stage.Acceleration)
    F, f = system.get_rigid_body_forces(state), system.get_mobility_forces(state)
    # the damper is current: -0.5 u (a power-of-two scaling, and the other mobility forces are zero): exact
    np.testing.assert_array_equal(f, -0.5 * np.array(state.get_u()))
    udot, _ = matter.calc_acceleration_ignoring_constraints(state, f, F)
    # the same forward dynamics on the same forces
    assert_close(state.get_udot(), udot, margin=64, scale=_udot_scale(matter, state, scale_of(F, f)), what="udot")


# ---------------------------------------------------------------------- state of its own
class StrengthInState(ExampleForce):
    """§3.1 with §2.4's idea: the strength is a Dynamics discrete variable the force allocates itself."""

    def realize_topology(self, state):
        self.index = self.get_force_subsystem().allocate_discrete_variable(state, Stage.Dynamics, self.strength)

    def set_strength(self, state, value: float) -> None:
        self.get_force_subsystem().set_discrete_variable(state, self.index, float(value))

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        self.strength = self.get_force_subsystem().get_discrete_variable(state, self.index)
        super().calc_force(state, body_forces, particle_forces, mobility_forces)

    def depends_only_on_positions(self):
        return False  # it reads a Dynamics variable


def test_custom_force_with_its_own_discrete_variable():
    """A Force.Custom may allocate a discrete variable in its realize_topology hook; setting it drops
    the State to Velocity and the force scales with it."""
    system, matter, bodies = free_bodies_system(np.random.default_rng(9), 2)
    impl = StrengthInState(matter)
    Force.Custom(GeneralForceSubsystem(system), impl)
    state = system.realize_topology()
    place_apart(matter, state, np.random.default_rng(10))
    system.realize(state, Stage.Acceleration)
    F1 = np.array(system.get_rigid_body_forces(state))
    impl.set_strength(state, -3.0)
    assert state.get_system_stage() == Stage.Velocity
    system.realize(state, Stage.Acceleration)
    # strength x r / d^3 against strength x (r / d^3): a rounding or two per pair, summed over pairs
    assert_close(system.get_rigid_body_forces(state), -3.0 * F1, margin=64, scale=_pair_terms(matter, state, -3.0),
                 what="forces")
    assert impl.get_force_subsystem().get_discrete_variable(system.realize_topology(), impl.index) == 1.0


# ---------------------------------------------------------------------- errors
def _pin_system():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Body.Rigid(MassProperties(1.0, np.zeros(3), Inertia(1.0))))
    return system, matter, forces, pin


def test_custom_needs_an_implementation_object():
    """Force.Custom refuses anything that is not a Force.Custom.Implementation, and an implementation
    already used by another Force.Custom; the messages name Force.Custom."""
    system, matter, forces, pin = _pin_system()

    class NotAnImplementation:
        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            pass

    with pytest.raises(TypeError, match="Force.Custom"):
        Force.Custom(forces, NotAnImplementation())
    with pytest.raises(TypeError, match="Force.Custom"):
        Force.Custom(forces, ExampleForce)  # the class, not an instance
    impl = ExampleForce(matter)
    Force.Custom(forces, impl)
    with pytest.raises(ValueError, match="Force.Custom"):
        Force.Custom(forces, impl)
    with pytest.raises(TypeError, match="Custom"):
        Force.Custom(matter, ExampleForce(matter))


def test_missing_calc_force_is_reported():
    """An implementation that does not override calc_force fails when realized, naming its class."""
    system, matter, forces, pin = _pin_system()

    class Lazy(Force.Custom.Implementation):
        pass

    Force.Custom(forces, Lazy())
    with pytest.raises(NotImplementedError, match="Lazy"):
        system.realize(system.realize_topology(), Stage.Dynamics)


@pytest.mark.parametrize("where", ["body", "mobility"])
@pytest.mark.parametrize("position_only", [True, False])
def test_non_finite_custom_force_raises_floating_point_error(where, position_only):
    """A custom force that produces NaN or Inf raises FloatingPointError naming Force.Custom and the
    implementation class, both while realizing and from calc_force_contribution."""
    system, matter, forces, pin = _pin_system()

    class Broken(Force.Custom.Implementation):
        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            if where == "body":
                body_forces[1, 0, 2] += np.inf
            else:
                mobility_forces[0] += np.nan

        def depends_only_on_positions(self):
            return position_only

    custom = Force.Custom(forces, Broken())
    state = system.realize_topology()
    with pytest.raises(FloatingPointError, match=r"Force\.Custom.*Broken"):
        system.realize(state, Stage.Dynamics)
    with pytest.raises(FloatingPointError, match=r"Force\.Custom.*Broken"):
        custom.calc_force_contribution(state)


def test_retry_after_a_failed_dynamics_realization_gives_the_right_forces():
    """If a force raises while Dynamics is realized, realizing again once it is fixed gives exactly
    the forces of one realization."""
    system, matter, forces, pin = _pin_system()
    Force.GlobalDamper(forces, matter, 2.0)

    class FailsOnce(Force.Custom.Implementation):
        failed = False

        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            if not self.failed:
                self.failed = True
                raise RuntimeError("transient failure")

    Force.Custom(forces, FailsOnce())
    state = system.realize_topology()
    pin.set_rate(state, 1.0)
    with pytest.raises(RuntimeError, match="transient"):
        system.realize(state, Stage.Acceleration)
    system.realize(state, Stage.Acceleration)
    np.testing.assert_array_equal(system.get_mobility_forces(state), [-2.0])  # -2 x 1, once: exact


def test_copied_state_uses_the_users_implementation_object():
    """Force elements belong to the System: a copy of a State (as integrators make at every step)
    calls the very implementation object the user gave to Force.Custom."""
    import threading

    system, matter, forces, pin = _pin_system()

    class Counting(Force.Custom.Implementation):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.lock = threading.Lock()  # any resource the user's object may hold

        def calc_force(self, state, body_forces, particle_forces, mobility_forces):
            with self.lock:
                self.calls += 1
            mobility_forces[0] += 1.0

    impl = Counting()
    Force.Custom(forces, impl)
    state = system.realize_topology()
    system.realize(state, Stage.Instance)
    copy = state.copy()
    system.realize(copy, Stage.Acceleration)
    assert impl.calls == 1
