"""Built-in force elements: conservative ones are minus the gradient of their potential energy,
every element matches an independent closed form, and dampers never add energy.

The random trees and the finite-difference gradient helpers defined here are also used by
``test_force_subsystem.py`` and ``test_custom_force.py``.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from tolerances import EPS  # round-off margins below are counts of EPS

JOINTS = ("Pin", "Slider", "Ball", "Free", "Gimbal", "Universal", "Translation")
#: Mobilizers whose generalized speeds are the time derivatives of their coordinates.
QDOT_IS_U = ("Pin", "Slider", "Gimbal", "Universal", "Translation")
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


# ---------------------------------------------------------------------- random trees
def random_rotation(rng: np.random.Generator) -> Rotation:
    q = rng.normal(size=4)
    return Rotation.from_quaternion(q / np.linalg.norm(q))


def random_transform(rng: np.random.Generator, scale: float = 0.5) -> Transform:
    return Transform(random_rotation(rng), rng.uniform(-scale, scale, 3))


def random_central_inertia(rng: np.random.Generator) -> np.ndarray:
    """A positive-definite 3x3 inertia whose principal moments satisfy the strict triangle inequality."""
    a, b = rng.uniform(0.1, 1.0, 2)
    lo, hi = abs(a - b), a + b
    c = rng.uniform(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo))
    R = random_rotation(rng).matrix
    return R @ np.diag([a, b, c]) @ R.T


def random_mass_properties(rng: np.random.Generator):
    """``(MassProperties, mass, com, central inertia in B)`` with physical random values."""
    mass = rng.uniform(0.5, 3.0)
    com = rng.uniform(-0.3, 0.3, 3)
    I_C = random_central_inertia(rng)
    return MassProperties.from_central_inertia(mass, com, Inertia.from_matrix(I_C)), mass, com, I_C


def build_tree(rng: np.random.Generator, n_bodies: int, joints=JOINTS, force_subsystem: bool = True):
    """A random tree of ``n_bodies`` mobilized bodies with random frames and mass properties.

    Returns a namespace with ``system, matter, forces, bodies`` (Ground first), ``kinds`` (joint
    names, None for Ground) and ``mass, com, I_C`` per body (what the test knows independently).
    """
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system) if force_subsystem else None
    tree = SimpleNamespace(system=system, matter=matter, forces=forces, bodies=[matter.ground], kinds=[None],
                           mass=[0.0], com=[np.zeros(3)], I_C=[np.zeros((3, 3))])
    for _ in range(n_bodies):
        kind = joints[rng.integers(len(joints))]
        parent = tree.bodies[rng.integers(len(tree.bodies))]
        mp, mass, com, I_C = random_mass_properties(rng)
        mobod = getattr(MobilizedBody, kind)(parent, random_transform(rng), Body.Rigid(mp), random_transform(rng))
        tree.bodies.append(mobod)
        tree.kinds.append(kind)
        tree.mass.append(mass)
        tree.com.append(com)
        tree.I_C.append(I_C)
    return tree


def q_offsets(tree, state) -> list[int]:
    """Start of each body's q in the matter's q (bodies' coordinates are laid out in body order)."""
    out, off = [], 0
    for mobod in tree.bodies:
        out.append(off)
        off += 0 if mobod.is_ground() else mobod.get_num_q(state)
    return out


def quaternion_slices(tree, state) -> list[slice]:
    """Where the quaternions are in the matter's q (mobilizers with nq = nu + 1)."""
    offs = q_offsets(tree, state)
    return [slice(offs[i], offs[i] + 4) for i, mb in enumerate(tree.bodies)
            if not mb.is_ground() and mb.get_num_q(state) == mb.get_num_u(state) + 1]


def normalize_quaternions(tree, state, q: np.ndarray) -> np.ndarray:
    q = q.copy()
    for sl in quaternion_slices(tree, state):
        q[sl] /= np.linalg.norm(q[sl])
    return q


def randomize_state(tree, state, rng: np.random.Generator, speeds: bool = True, q_scale: float = 1.0) -> None:
    """Random q (unit quaternions, angles and lengths of order ``q_scale``) and random u."""
    q = rng.uniform(-q_scale, q_scale, state.get_nq())
    for sl in quaternion_slices(tree, state):
        q[sl] = rng.normal(size=4)
    tree.matter.upd_q(state)[:] = normalize_quaternions(tree, state, q)
    tree.matter.upd_u(state)[:] = rng.uniform(-1.0, 1.0, state.get_nu()) if speeds else 0.0


def generalized_force(matter, state, force) -> np.ndarray:
    """f = J^T F + f_mobility of one element, (nu,)."""
    F, f_mob = force.calc_force_contribution(state)
    return matter.multiply_by_system_jacobian_transpose(state, F) + f_mob


def energy_gradient_along_mobilities(tree, state, energy, h: float = 1e-5) -> np.ndarray:
    """g_j = d/ds energy(q + s N(q) e_j) at s = 0, by central differences (quaternions renormalized).

    Moving along N e_j is the motion with u = e_j, so for a conservative generalized force f,
    f_j = -g_j (its power f . u is minus the rate of change of its potential energy).
    """
    system, matter = tree.system, tree.matter
    system.realize(state, Stage.Position)
    q = np.array(state.get_q())
    grad = np.zeros(state.get_nu())
    for j in range(state.get_nu()):
        direction = matter.multiply_by_n(state, False, np.eye(state.get_nu())[j])
        values = []
        for sign in (1.0, -1.0):
            s = state.copy()
            matter.upd_q(s)[:] = normalize_quaternions(tree, s, q + sign * h * direction)
            system.realize(s, Stage.Position)
            values.append(energy(s))
        grad[j] = (values[0] - values[1]) / (2.0 * h)
    return grad


def assert_conservative(tree, state, force) -> None:
    """The element's generalized force equals minus the gradient of its potential energy."""
    tree.system.realize(state, Stage.Velocity)
    f = generalized_force(tree.matter, state, force)
    grad = energy_gradient_along_mobilities(tree, state, force.calc_potential_energy_contribution)
    scale = max(1.0, float(np.max(np.abs(f))))
    np.testing.assert_allclose(f, -grad, rtol=0, atol=1e-6 * scale)


def fresh_state(tree, q=None, u=None):
    """A new State of the (possibly changed) topology, with the given q and u."""
    state = tree.system.realize_topology()
    if q is not None:
        tree.matter.upd_q(state)[:] = q
    if u is not None:
        tree.matter.upd_u(state)[:] = u
    return state


def pick(rng: np.random.Generator, seq):
    return seq[rng.integers(len(seq))]


def two_distinct_bodies(rng: np.random.Generator, tree):
    i, j = rng.choice(len(tree.bodies), size=2, replace=False)
    return tree.bodies[i], tree.bodies[j]


# ---------------------------------------------------------------------- gradient laws
def _tree_and_state(seed: int, joints=JOINTS, n=(2, 5)):
    rng = np.random.default_rng(seed)
    tree = build_tree(rng, int(rng.integers(n[0], n[1] + 1)), joints)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng, speeds=False)
    return rng, tree, state


def _with_qdot_is_u_body(rng, tree):
    """A body whose mobilizer has qdot = u (adds a Pin if the random tree has none)."""
    candidates = [b for b, k in zip(tree.bodies, tree.kinds) if k in QDOT_IS_U]
    if candidates:
        return pick(rng, candidates)
    mp, mass, com, I_C = random_mass_properties(rng)
    mobod = MobilizedBody.Pin(pick(rng, tree.bodies), random_transform(rng), Body.Rigid(mp), random_transform(rng))
    for name, v in (("bodies", mobod), ("kinds", "Pin"), ("mass", mass), ("com", com), ("I_C", I_C)):
        getattr(tree, name).append(v)
    return mobod


@settings(max_examples=12)
@given(seed=SEEDS)
def test_uniform_gravity_is_minus_gradient_of_its_energy(seed):
    """UniformGravity: f_j = -dPE/ds along every mobility j of a random tree (quaternions included)."""
    rng, tree, state = _tree_and_state(seed)
    g = rng.normal(size=3) * 5.0
    force = Force.UniformGravity(tree.forces, tree.matter, g, zero_height=rng.uniform(-1, 1))
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)


@settings(max_examples=8)
@given(seed=SEEDS)
def test_gravity_is_minus_gradient_of_its_energy(seed):
    """Gravity(direction, magnitude): f_j = -dPE/ds along every mobility j of a random tree."""
    rng, tree, state = _tree_and_state(seed)
    force = Force.Gravity(tree.forces, tree.matter, rng.normal(size=3), rng.uniform(1.0, 10.0))
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)


@settings(max_examples=15)
@given(seed=SEEDS)
def test_two_point_linear_spring_is_minus_gradient_of_its_energy(seed):
    """TwoPointLinearSpring between two random stations: f_j = -dPE/ds, PE = k/2 (|d| - x0)^2."""
    rng, tree, state = _tree_and_state(seed)
    b1, b2 = two_distinct_bodies(rng, tree)
    force = Force.TwoPointLinearSpring(tree.forces, b1, rng.uniform(-0.5, 0.5, 3), b2, rng.uniform(-0.5, 0.5, 3),
                                       rng.uniform(1.0, 100.0), rng.uniform(0.0, 1.0))
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)


@settings(max_examples=8)
@given(seed=SEEDS)
def test_conservative_forces_with_euler_angles_are_minus_gradients(seed):
    """With Ball and Free on X-Y-Z Euler angles instead of quaternions (nq = nu, but qdot != u),
    gravity and a two-point spring still satisfy f_j = -dPE/ds along N e_j."""
    rng = np.random.default_rng(seed)
    tree = build_tree(rng, int(rng.integers(2, 5)), ("Ball", "Free", "Pin", "Gimbal"))
    b1, b2 = two_distinct_bodies(rng, tree)
    gravity = Force.UniformGravity(tree.forces, tree.matter, rng.normal(size=3) * 5.0)
    spring = Force.TwoPointLinearSpring(tree.forces, b1, rng.uniform(-0.5, 0.5, 3), b2, rng.uniform(-0.5, 0.5, 3),
                                        rng.uniform(1.0, 100.0), rng.uniform(0.0, 1.0))
    state = tree.system.realize_topology()
    tree.matter.set_use_euler_angles(state, True)
    tree.system.realize_model(state)
    assert state.get_nq() == state.get_nu()
    randomize_state(tree, state, rng, speeds=False)
    for force in (gravity, spring):
        assert_conservative(tree, state, force)


@settings(max_examples=12)
@given(seed=SEEDS)
def test_two_point_constant_force_is_minus_gradient_of_its_energy(seed):
    """TwoPointConstantForce: f_j = -dPE/ds with PE = -f |d|."""
    rng, tree, state = _tree_and_state(seed)
    b1, b2 = two_distinct_bodies(rng, tree)
    force = Force.TwoPointConstantForce(tree.forces, b1, rng.uniform(-0.5, 0.5, 3), b2, rng.uniform(-0.5, 0.5, 3),
                                        rng.uniform(-10.0, 10.0))
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)


@settings(max_examples=12)
@given(seed=SEEDS)
def test_mobility_linear_spring_is_minus_gradient_of_its_energy(seed):
    """MobilityLinearSpring on a qdot = u coordinate: f_j = -dPE/ds with PE = k/2 (q - q0)^2."""
    rng, tree, state = _tree_and_state(seed)
    mobod = _with_qdot_is_u_body(rng, tree)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng, speeds=False)
    which = int(rng.integers(mobod.get_num_u(state)))
    force = Force.MobilityLinearSpring(tree.forces, mobod, which, rng.uniform(1.0, 50.0), rng.uniform(-1.0, 1.0))
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)
    # Independent closed form: the generalized force sits on that one speed only.
    f = generalized_force(tree.matter, state, force)
    assert np.count_nonzero(f) <= 1


@settings(max_examples=12)
@given(seed=SEEDS, above=st.booleans())
def test_mobility_linear_stop_beyond_a_stop_at_rest_is_minus_gradient_of_its_energy(seed, above):
    """MobilityLinearStop, the coordinate beyond a stop and u = 0: f_j = -dPE/ds with PE = k x^2 / 2."""
    rng, tree, state = _tree_and_state(seed)
    mobod = _with_qdot_is_u_body(rng, tree)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng, speeds=False)
    which = int(rng.integers(mobod.get_num_u(state)))
    q = mobod.get_one_q(state, which)
    depth = rng.uniform(0.05, 0.5)
    low, high = (q - depth - 1.0, q - depth) if above else (q + depth, q + depth + 1.0)
    k = rng.uniform(10.0, 100.0)
    force = Force.MobilityLinearStop(tree.forces, mobod, which, k, rng.uniform(0.0, 2.0), low, high)
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)
    tree.system.realize(state, Stage.Position)
    assert force.calc_potential_energy_contribution(state) == pytest.approx(0.5 * k * depth ** 2, rel=(2**13 * EPS))


@settings(max_examples=12)
@given(seed=SEEDS)
def test_linear_bushing_at_zero_relative_velocity_is_minus_gradient_of_its_energy(seed):
    """LinearBushing (6 stiffnesses, 6 dampings) with no relative motion: f_j = -dPE/ds.

    The frames are chosen so that F and M are within a small random transform of each other, away
    from the X-Y-Z angles' singularity.
    """
    rng, tree, state = _tree_and_state(seed)
    b1, b2 = two_distinct_bodies(rng, tree)
    tree.system.realize(state, Stage.Position)
    X_B1F = random_transform(rng)
    X_GF = b1.get_body_transform(state) * X_B1F
    X_FM = Transform(Rotation.from_body_fixed_xyz(rng.uniform(-0.6, 0.6, 3)), rng.uniform(-0.3, 0.3, 3))
    X_B2M = ~b2.get_body_transform(state) * X_GF * X_FM
    force = Force.LinearBushing(tree.forces, b1, X_B1F, b2, X_B2M, rng.uniform(1.0, 50.0, 6),
                                rng.uniform(0.0, 5.0, 6))
    state = fresh_state(tree, state.get_q(), np.zeros(state.get_nu()))
    assert_conservative(tree, state, force)
    # PE = 1/2 sum k q^2 with q = (body-fixed X-Y-Z angles of R_FM, p_FM): X_FM is what we built.
    tree.system.realize(state, Stage.Position)
    qb = np.concatenate([X_FM.R.to_body_fixed_xyz(), X_FM.p])
    assert force.calc_potential_energy_contribution(state) == pytest.approx(
        0.5 * float(np.sum(force._k6 * qb * qb)), rel=1e-9)


# ---------------------------------------------------------------------- closed forms
def _single_free_body(rng, mass=None, com=None):
    """One Free body with identity frames: q = (quaternion of R_GB, p_GB), u = (w_GB, v_GB) in G."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    m = rng.uniform(0.5, 3.0) if mass is None else mass
    c = rng.uniform(-0.3, 0.3, 3) if com is None else np.asarray(com, float)
    mp = MassProperties.from_central_inertia(m, c, Inertia.from_matrix(random_central_inertia(rng)))
    body = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    return SimpleNamespace(system=system, matter=matter, forces=forces, body=body, mass=m, com=c)


def _place_free_body(fb, state, R: Rotation, p, w=np.zeros(3), v=np.zeros(3)) -> None:
    fb.body.set_q(state, np.concatenate([R.to_quaternion(), p]))
    fb.body.set_u(state, np.concatenate([w, v]))


@settings(max_examples=10)
@given(seed=SEEDS)
def test_gravity_on_one_body_is_m_g_at_its_mass_center(seed):
    """Gravity on a single Free body: force m g; torque about the body origin r_C x m g and about
    the Ground origin p_GC x m g; PE = m |g| (height of C - zero_height); Gravity(direction,
    magnitude) is the same force as UniformGravity(magnitude * unit direction)."""
    rng = np.random.default_rng(seed)
    fb = _single_free_body(rng)
    g = rng.normal(size=3) * 4.0
    h0 = rng.uniform(-1.0, 1.0)
    uniform = Force.UniformGravity(fb.forces, fb.matter, g, zero_height=h0)
    directional = Force.Gravity(fb.forces, fb.matter, 3.0 * g, np.linalg.norm(g), zero_height=h0)
    state = fb.system.realize_topology()
    R, p = random_rotation(rng), rng.uniform(-2, 2, 3)
    _place_free_body(fb, state, R, p)
    fb.system.realize(state, Stage.Dynamics)
    r_C = R.matrix @ fb.com  # mass center from the body origin, in G
    p_GC = p + r_C
    for force in (uniform, directional):
        F, f_mob = force.calc_force_contribution(state)
        np.testing.assert_allclose(F[1, 1], fb.mass * g, rtol=(2**13 * EPS), atol=(2**13 * EPS))
        np.testing.assert_allclose(F[1, 0], np.cross(r_C, fb.mass * g), rtol=(2**13 * EPS), atol=(2**13 * EPS))
        np.testing.assert_allclose(F[1, 0] + np.cross(p, F[1, 1]), np.cross(p_GC, fb.mass * g), atol=(2**16 * EPS))
        assert not F[0].any() and not f_mob.any()
        height = -g @ p_GC / np.linalg.norm(g)
        assert force.calc_potential_energy_contribution(state) == pytest.approx(
            fb.mass * np.linalg.norm(g) * (height - h0), rel=1e-10, abs=2**13 * EPS)
    # The system total is both elements; with nothing else the mass center falls at 2 g.
    fb.system.realize(state, Stage.Acceleration)
    np.testing.assert_allclose(fb.body.find_station_acceleration_in_ground(state, fb.com), 2 * g, atol=1e-10)


@settings(max_examples=10)
@given(seed=SEEDS)
def test_two_point_linear_spring_along_x(seed):
    """A spring from Ground's origin to a Slider body's origin at x > 0 pulls the body with
    -k (x - x0) along x and Ground with the opposite force; PE = k/2 (x - x0)^2."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    slider = MobilizedBody.Slider(matter.ground, Body.Rigid(MassProperties(1.0, np.zeros(3), Inertia(1.0))))
    k, x0, x = rng.uniform(1, 100), rng.uniform(0, 2), rng.uniform(0.1, 3.0)
    spring = Force.TwoPointLinearSpring(forces, matter.ground, np.zeros(3), slider, np.zeros(3), k, x0)
    state = system.realize_topology()
    slider.set_length(state, x)
    system.realize(state, Stage.Dynamics)
    F, _ = spring.calc_force_contribution(state)
    np.testing.assert_allclose(F[1, 1], [-k * (x - x0), 0, 0], atol=(2**13 * EPS))
    np.testing.assert_allclose(F[0, 1], [k * (x - x0), 0, 0], atol=(2**13 * EPS))
    np.testing.assert_allclose(F[:, 0], 0.0, atol=(2**13 * EPS))
    np.testing.assert_allclose(system.get_mobility_forces(state), 0.0)  # a body force, not a mobility force
    assert spring.calc_potential_energy_contribution(state) == pytest.approx(0.5 * k * (x - x0) ** 2, rel=(2**13 * EPS))
    system.realize(state, Stage.Acceleration)
    assert slider.get_udot(state)[0] == pytest.approx(-k * (x - x0), rel=(2**13 * EPS))


@settings(max_examples=10)
@given(seed=SEEDS)
def test_two_point_linear_damper_opposes_the_separation_rate(seed):
    """Damper between stations on two Free bodies: the force on body 2 is -c (e . (v2 - v1)) e with
    e the unit vector from station 1 to station 2 and v1, v2 the station velocities (v + w x r)."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = MassProperties(1.0, np.zeros(3), Inertia(1.0))
    b1 = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    b2 = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    s1, s2, c = rng.uniform(-0.5, 0.5, 3), rng.uniform(-0.5, 0.5, 3), rng.uniform(0.1, 10.0)
    damper = Force.TwoPointLinearDamper(forces, b1, s1, b2, s2, c)
    state = system.realize_topology()
    poses = []
    for b in (b1, b2):
        R, p, w, v = random_rotation(rng), rng.uniform(-2, 2, 3), rng.normal(size=3), rng.normal(size=3)
        b.set_q(state, np.concatenate([R.to_quaternion(), p]))
        b.set_u(state, np.concatenate([w, v]))
        poses.append((R.matrix, p, w, v))
    system.realize(state, Stage.Dynamics)
    (R1, p1, w1, v1), (R2, p2, w2, v2) = poses
    r1, r2 = R1 @ s1, R2 @ s2
    d = (p2 + r2) - (p1 + r1)
    e = d / np.linalg.norm(d)
    rate = e @ ((v2 + np.cross(w2, r2)) - (v1 + np.cross(w1, r1)))
    f2 = -c * rate * e
    F, f_mob = damper.calc_force_contribution(state)
    np.testing.assert_allclose(F[2, 1], f2, atol=(2**13 * EPS))
    np.testing.assert_allclose(F[1, 1], -f2, atol=(2**13 * EPS))
    np.testing.assert_allclose(F[2, 0], np.cross(r2, f2), atol=(2**13 * EPS))
    np.testing.assert_allclose(F[1, 0], np.cross(r1, -f2), atol=(2**13 * EPS))
    assert not f_mob.any()
    assert damper.calc_potential_energy_contribution(state) == 0.0


@settings(max_examples=10)
@given(seed=SEEDS)
def test_two_point_constant_force_pushes_the_points_apart(seed):
    """TwoPointConstantForce f > 0 on two Free bodies: f e on body 2 and -f e on body 1, e from
    station 1 to station 2; PE = -f |d|."""
    rng = np.random.default_rng(seed)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = MassProperties(1.0, np.zeros(3), Inertia(1.0))
    b1 = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    b2 = MobilizedBody.Free(matter.ground, Body.Rigid(mp))
    f = rng.uniform(0.1, 10.0)
    push = Force.TwoPointConstantForce(forces, b1, np.zeros(3), b2, np.zeros(3), f)
    state = system.realize_topology()
    p1, p2 = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)
    b1.set_q(state, np.concatenate([[1, 0, 0, 0], p1]))
    b2.set_q(state, np.concatenate([[1, 0, 0, 0], p2]))
    system.realize(state, Stage.Acceleration)
    e = (p2 - p1) / np.linalg.norm(p2 - p1)
    F, _ = push.calc_force_contribution(state)
    np.testing.assert_allclose(F[2, 1], f * e, atol=(2**13 * EPS))
    np.testing.assert_allclose(F[1, 1], -f * e, atol=(2**13 * EPS))
    # Apart: the separation accelerates along e.
    a_rel = b2.get_body_origin_acceleration(state) - b1.get_body_origin_acceleration(state)
    assert a_rel @ e > 0
    assert push.calc_potential_energy_contribution(state) == pytest.approx(-f * np.linalg.norm(p2 - p1))


@settings(max_examples=10)
@given(seed=SEEDS)
def test_mobility_linear_damper_and_global_damper_are_minus_c_u(seed):
    """MobilityLinearDamper gives -c u on its one speed (zero elsewhere, no body forces);
    GlobalDamper gives -c u on every speed, quaternion mobilizers included."""
    rng, tree, _ = _tree_and_state(seed)
    state = tree.system.realize_topology()
    mobod = pick(rng, tree.bodies[1:])
    which = int(rng.integers(mobod.get_num_u(state)))
    c1, c2 = rng.uniform(0.1, 5.0, 2)
    one = Force.MobilityLinearDamper(tree.forces, mobod, which, c1)
    every = Force.GlobalDamper(tree.forces, tree.matter, c2)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng)
    tree.system.realize(state, Stage.Velocity)
    u = np.array(state.get_u())
    F1, f1 = one.calc_force_contribution(state)
    F2, f2 = every.calc_force_contribution(state)
    assert not F1.any() and not F2.any()
    expected = np.zeros_like(u)
    # Locate the damped speed independently: it is the only one that changes when mobod's u[which] does.
    s = state.copy()
    mobod.set_one_u(s, which, mobod.get_one_u(state, which) + 1.0)
    j = int(np.flatnonzero(np.array(s.get_u()) != u)[0])
    expected[j] = -c1 * u[j]
    np.testing.assert_allclose(f1, expected, rtol=(64 * EPS), atol=0)
    np.testing.assert_allclose(f2, -c2 * u, rtol=(64 * EPS), atol=0)


@settings(max_examples=10)
@given(seed=SEEDS)
def test_constant_force_and_constant_torque(seed):
    """ConstantForce f at station s of a body: body force (R s x f, f); ConstantTorque t: (t, 0).
    Both are the same in every configuration and at every speed."""
    rng, tree, _ = _tree_and_state(seed)
    mobod = pick(rng, tree.bodies[1:])
    s, f, t = rng.uniform(-1, 1, 3), rng.normal(size=3), rng.normal(size=3)
    cf = Force.ConstantForce(tree.forces, mobod, s, f)
    ct = Force.ConstantTorque(tree.forces, mobod, t)
    for _ in range(2):
        state = tree.system.realize_topology()
        randomize_state(tree, state, rng)
        tree.system.realize(state, Stage.Velocity)
        R = mobod.get_body_rotation(state).matrix
        F, f_mob = cf.calc_force_contribution(state)
        expected = np.zeros_like(F)
        expected[mobod.get_mobilized_body_index()] = [np.cross(R @ s, f), f]
        np.testing.assert_allclose(F, expected, atol=(64 * EPS))
        F, f_mob2 = ct.calc_force_contribution(state)
        expected = np.zeros_like(F)
        expected[mobod.get_mobilized_body_index(), 0] = t
        np.testing.assert_allclose(F, expected, atol=0)
        assert not f_mob.any() and not f_mob2.any()


def test_mobility_constant_force_and_linear_stop_closed_forms():
    """MobilityConstantForce is f on its speed; MobilityLinearStop beyond q_high with speed v pushes
    back with k x max(1 + d v, 0), beyond q_low with k x max(1 - d v, 0), nothing in between."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    slider = MobilizedBody.Slider(matter.ground, Body.Rigid(MassProperties(2.0, np.zeros(3), Inertia(1.0))))
    push = Force.MobilityConstantForce(forces, slider, 0, 1.5)
    k, d, lo, hi = 100.0, 0.5, -1.0, 1.0
    stop = Force.MobilityLinearStop(forces, slider, 0, k, d, lo, hi)
    state = system.realize_topology()
    for q, v, expected in [(0.3, 5.0, 0.0), (1.2, 0.0, -k * 0.2), (1.2, 1.0, -k * 0.2 * 1.5),
                           (1.2, -3.0, 0.0), (-1.1, -1.0, k * 0.1 * 1.5), (-1.1, 4.0, 0.0)]:
        slider.set_length(state, q)
        slider.set_rate(state, v)
        system.realize(state, Stage.Acceleration)
        assert stop.calc_force_contribution(state)[1][0] == pytest.approx(expected, rel=(2**13 * EPS), abs=(2**13 * EPS))
        assert push.calc_force_contribution(state)[1][0] == 1.5
        assert slider.get_udot(state)[0] == pytest.approx((expected + 1.5) / 2.0, rel=(2**13 * EPS), abs=(2**13 * EPS))


def test_linear_bushing_on_translation_and_gimbal_is_minus_k_q_minus_c_qdot():
    """A bushing from Ground to a Translation body (identity frames) is the generalized force
    -(k q + c u) on the translation; one to a Gimbal body (identity frames, u = qdot = body-fixed
    X-Y-Z angle rates) is -(k q + c u) on the gimbal's speeds: the torque is mapped so that its
    power is f . qdot."""
    rng = np.random.default_rng(7)
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mp = MassProperties(1.0, np.zeros(3), Inertia(1.0))
    trans = MobilizedBody.Translation(matter.ground, Body.Rigid(mp))
    gimbal = MobilizedBody.Gimbal(matter.ground, Body.Rigid(mp))
    k, c = rng.uniform(1, 10, 6), rng.uniform(0, 3, 6)
    bt = Force.LinearBushing(forces, matter.ground, Transform(), trans, Transform(), k, c)
    bg = Force.LinearBushing(forces, matter.ground, Transform(), gimbal, Transform(), k, c)
    state = system.realize_topology()
    for _ in range(3):
        qt, ut = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        qg, ug = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        trans.set_q(state, qt), trans.set_u(state, ut), gimbal.set_q(state, qg), gimbal.set_u(state, ug)
        system.realize(state, Stage.Velocity)
        ft = generalized_force(matter, state, bt)
        fg = generalized_force(matter, state, bg)
        np.testing.assert_allclose(ft[:3], -(k[3:] * qt + c[3:] * ut), rtol=1e-10, atol=(2**13 * EPS))
        np.testing.assert_allclose(ft[3:], 0.0, atol=(2**13 * EPS))
        np.testing.assert_allclose(fg[3:], -(k[:3] * qg + c[:3] * ug), rtol=1e-10, atol=(2**13 * EPS))
        np.testing.assert_allclose(fg[:3], 0.0, atol=(2**13 * EPS))


# ---------------------------------------------------------------------- dampers dissipate
@settings(max_examples=15)
@given(seed=SEEDS)
def test_dampers_never_add_energy(seed):
    """The power f . u of each damper (TwoPointLinearDamper, MobilityLinearDamper, GlobalDamper,
    a LinearBushing with only damping) is <= 0 at any configuration and speed."""
    rng, tree, _ = _tree_and_state(seed)
    b1, b2 = two_distinct_bodies(rng, tree)
    mobod = pick(rng, tree.bodies[1:])
    which = int(rng.integers(mobod.get_num_u(tree.system.realize_topology())))
    elements = [
        Force.TwoPointLinearDamper(tree.forces, b1, rng.uniform(-.5, .5, 3), b2, rng.uniform(-.5, .5, 3),
                                   rng.uniform(0.1, 5)),
        Force.MobilityLinearDamper(tree.forces, mobod, which, rng.uniform(0.1, 5)),
        Force.GlobalDamper(tree.forces, tree.matter, rng.uniform(0.1, 5)),
        Force.LinearBushing(tree.forces, b1, random_transform(rng, 0.1), b2, random_transform(rng, 0.1),
                            np.zeros(6), rng.uniform(0.1, 5, 6)),
    ]
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng, q_scale=0.3)
    tree.system.realize(state, Stage.Velocity)
    u = np.array(state.get_u())
    for element in elements:
        power = generalized_force(tree.matter, state, element) @ u
        assert power <= (2**13 * EPS), (element, power)


def test_linear_stop_dissipates_only_its_damping_part():
    """For a stop with dissipation d, power + d(PE)/dt = -d k x v^2 <= 0 while in contact."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    pin = MobilizedBody.Pin(matter.ground, Body.Rigid(MassProperties.from_central_inertia(1.0, [1, 0, 0], Inertia(1.0))))
    k, d = 50.0, 0.3
    stop = Force.MobilityLinearStop(forces, pin, 0, k, d, -0.5, 0.5)
    state = system.realize_topology()
    for q, v in [(0.7, 0.4), (0.7, -0.4), (-0.6, -1.0), (-0.6, 1.0)]:
        pin.set_angle(state, q)
        pin.set_rate(state, v)
        system.realize(state, Stage.Velocity)
        x = q - 0.5 if q > 0 else -0.5 - q
        dPE_dt = k * x * (v if q > 0 else -v)
        power = stop.calc_force_contribution(state)[1][0] * v
        assert power + dPE_dt == pytest.approx(-d * k * x * v * v, rel=(2**13 * EPS))


# ---------------------------------------------------------------------- DiscreteForces
def test_discrete_forces_apply_what_was_set_and_invalidate_dynamics_only():
    """DiscreteForces: set_all_mobility_forces / set_all_body_forces / set_one_mobility_force /
    add_force_to_body_point / clear_all_forces are applied as given, and each change drops a
    State realized to Acceleration back to Velocity (Dynamics - 1), not lower."""
    rng = np.random.default_rng(3)
    tree = build_tree(rng, 4, ("Pin", "Free", "Ball", "Gimbal"))
    discrete = Force.DiscreteForces(tree.forces, tree.matter)
    state = tree.system.realize_topology()
    randomize_state(tree, state, rng)
    nb, nu = len(tree.bodies), state.get_nu()
    matter, system = tree.matter, tree.system

    def changed_at_velocity(change):
        system.realize(state, Stage.Acceleration)
        change()
        assert state.get_system_stage() == Stage.Velocity
        system.realize(state, Stage.Acceleration)
        F_tot, f_tot = system.get_rigid_body_forces(state), system.get_mobility_forces(state)
        udot, _ = matter.calc_acceleration_ignoring_constraints(state, f_tot, F_tot)
        np.testing.assert_allclose(state.get_udot(), udot, rtol=(2**13 * EPS), atol=(2**13 * EPS))
        return discrete.calc_force_contribution(state)

    f = rng.normal(size=nu)
    F, f_mob = changed_at_velocity(lambda: discrete.set_all_mobility_forces(state, f))
    np.testing.assert_array_equal(f_mob, f)
    assert not F.any()
    np.testing.assert_array_equal(discrete.get_all_mobility_forces(state), f)

    F_all = rng.normal(size=(nb, 2, 3))
    F, f_mob = changed_at_velocity(lambda: discrete.set_all_body_forces(state, F_all))
    np.testing.assert_array_equal(F, F_all)
    np.testing.assert_array_equal(f_mob, f)  # the mobility forces are kept
    np.testing.assert_array_equal(discrete.get_all_body_forces(state), F_all)

    mobod = next(b for b in tree.bodies[1:] if b.get_num_u(state) >= 2)
    F, f_mob = changed_at_velocity(lambda: discrete.set_one_mobility_force(state, mobod, 1, 4.25))
    s = state.copy()
    mobod.set_one_u(s, 1, 123.0)
    j = int(np.flatnonzero(np.array(s.get_u()) != np.array(state.get_u()))[0])
    expected = f.copy()
    expected[j] = 4.25
    np.testing.assert_array_equal(f_mob, expected)

    F, _ = changed_at_velocity(lambda: discrete.clear_all_forces(state))
    assert not F.any() and not discrete.calc_force_contribution(state)[1].any()

    station, force = rng.normal(size=3), rng.normal(size=3)
    F, _ = changed_at_velocity(lambda: discrete.add_force_to_body_point(state, mobod, station, force))
    r = mobod.get_body_rotation(state).matrix @ station
    expected = np.zeros((nb, 2, 3))
    expected[mobod.get_mobilized_body_index()] = [np.cross(r, force), force]
    np.testing.assert_allclose(F, expected, atol=(64 * EPS))
    # add_... adds: twice the same point force is twice the force.
    F, _ = changed_at_velocity(lambda: discrete.add_force_to_body_point(state, mobod, station, force))
    np.testing.assert_allclose(F, 2 * expected, atol=(64 * EPS))


def test_discrete_forces_are_per_state():
    """Forces set in one State (or a copy of it) do not leak into another State."""
    rng = np.random.default_rng(4)
    tree = build_tree(rng, 2, ("Pin", "Slider"))
    discrete = Force.DiscreteForces(tree.forces, tree.matter)
    a = tree.system.realize_topology()
    b = tree.system.realize_topology()
    discrete.set_all_mobility_forces(a, [1.0, 2.0])
    c = a.copy()
    discrete.set_all_mobility_forces(c, [5.0, 6.0])
    np.testing.assert_array_equal(discrete.get_all_mobility_forces(a), [1.0, 2.0])
    np.testing.assert_array_equal(discrete.get_all_mobility_forces(b), [0.0, 0.0])
    np.testing.assert_array_equal(discrete.get_all_mobility_forces(c), [5.0, 6.0])
