"""Random multibody systems built through the PUBLIC API only, shared by the system-level tests.

Everything a test may need to check the dynamics independently (the frames, mass properties and
joint parameters it asked for) is recorded here as the *inputs* given to the API, never read back
from the matter subsystem's caches.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    Transform,
)

#: Every built-in mobilizer (by its MobilizedBody.<Name>), Custom and FunctionBased aside.
ALL_JOINTS = ("Weld", "Pin", "Slider", "Screw", "Universal", "Cylinder", "BendStretch", "Planar", "Gimbal",
              "SphericalCoords", "Translation", "Ball", "Free", "Ellipsoid", "LineOrientation", "FreeLine",
              "Bushing")
#: Mobilizers whose rotational coordinates are a quaternion unless Euler angles are chosen.
QUATERNION_JOINTS = frozenset({"Ball", "Free", "Ellipsoid", "LineOrientation", "FreeLine"})


# ---------------------------------------------------------------------- random values
def random_unit_quaternion(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_rotation(rng: np.random.Generator) -> Rotation:
    return Rotation.from_quaternion(random_unit_quaternion(rng))


def random_transform(rng: np.random.Generator, scale: float = 0.6) -> Transform:
    return Transform(random_rotation(rng), rng.uniform(-scale, scale, 3))


def random_central_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """Central inertia of a random solid box of ``mass``, randomly oriented: always physical."""
    a, b, c = rng.uniform(0.15, 1.0, 3) ** 2
    R = random_rotation(rng).matrix
    return R @ np.diag(mass / 12.0 * np.array([b + c, a + c, a + b])) @ R.T


@dataclass
class BodySpec:
    """What was asked of the API for one mobilized body (all in Simbody's meanings)."""

    joint: str
    parent: int
    X_PF: Transform
    X_BM: Transform
    mass: float
    com: np.ndarray          # p_BC, in B
    I_C: np.ndarray          # central inertia, in B
    params: tuple = ()

    @property
    def I_B(self) -> np.ndarray:
        """Inertia about the body origin, in B (parallel-axis theorem)."""
        c = self.com
        return self.I_C + self.mass * (c @ c * np.eye(3) - np.outer(c, c))


@dataclass
class Model:
    """A MultibodySystem made by :func:`build`, with its specs (index 0 is Ground: spec None)."""

    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    mobods: list
    specs: list
    gravity: object = None
    discrete: object = None

    @property
    def nb(self) -> int:
        return len(self.mobods)


def joint_params(rng: np.random.Generator, joint: str) -> tuple:
    """Random extra constructor arguments of a joint (Screw pitch, Ellipsoid radii)."""
    if joint == "Screw":
        return (float(rng.uniform(-0.5, 0.5)),)
    if joint == "Ellipsoid":
        return (rng.uniform(0.2, 1.2, 3),)
    return ()


def make_mobod(parent, spec: BodySpec):
    """Construct ``MobilizedBody.<spec.joint>`` under ``parent`` through the public constructor."""
    if spec.mass == 0.0:
        body = Body.Massless()
    else:
        body = Body.Rigid(MassProperties.from_central_inertia(spec.mass, spec.com, Inertia.from_matrix(spec.I_C)))
    cls = getattr(MobilizedBody, spec.joint)
    return cls(parent, spec.X_PF, body, spec.X_BM, *spec.params)


def build(specs: list, gravity=None, discrete_forces: bool = False) -> Model:
    """A MultibodySystem with one mobilized body per spec (``specs[0]`` is None for Ground)."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mobods = [matter.ground]
    for spec in specs[1:]:
        mobods.append(make_mobod(mobods[spec.parent], spec))
    grav = Force.UniformGravity(forces, matter, gravity) if gravity is not None else None
    disc = Force.DiscreteForces(forces, matter) if discrete_forces else None
    return Model(system, matter, forces, mobods, list(specs), grav, disc)


def random_specs(rng: np.random.Generator, joints, nb: int | None = None, *, depth_first: bool = False,
                 chain: bool = False) -> list:
    """Random tree specs: ``nb`` bodies including Ground, joints drawn from ``joints``.

    ``depth_first`` numbers bodies in depth-first preorder (every subtree contiguous), which
    Pinocchio's algorithms need; otherwise any parent with a lower index is allowed.
    """
    if nb is None:
        nb = int(rng.integers(3, 9))
    specs: list = [None]
    path = [0]
    for i in range(1, nb):
        if chain:
            parent = i - 1
        elif depth_first:
            parent = path[int(rng.integers(0, len(path)))]
            path = path[:path.index(parent) + 1] + [i]
        else:
            parent = int(rng.integers(0, i))
        joint = str(joints[int(rng.integers(0, len(joints)))])
        mass = float(rng.uniform(0.5, 3.0))
        specs.append(BodySpec(joint, parent, random_transform(rng), random_transform(rng), mass,
                              rng.uniform(-0.4, 0.4, 3), random_central_inertia(rng, mass),
                              joint_params(rng, joint)))
    return specs


def random_model(rng: np.random.Generator, joints, nb: int | None = None, *, gravity=None,
                 discrete_forces: bool = False, depth_first: bool = False, chain: bool = False) -> Model:
    return build(random_specs(rng, joints, nb, depth_first=depth_first, chain=chain), gravity, discrete_forces)


# ---------------------------------------------------------------------- states
def random_q(rng: np.random.Generator, joint: str, nq: int, euler: bool = False, spread: float = 1.0) -> np.ndarray:
    """Random coordinates for one mobilizer: a unit quaternion first for quaternion joints (unless
    ``euler``), angles/lengths in [-spread, spread] otherwise (Euler middle angles stay well away
    from the +-pi/2 singularity)."""
    q = rng.uniform(-spread, spread, nq)
    if joint in QUATERNION_JOINTS and not euler:
        q[:4] = random_unit_quaternion(rng)
    return q


def randomize_state(model: Model, state, rng: np.random.Generator, speed: float = 1.0) -> None:
    """Random q and u for every body of ``model`` in ``state`` (realized to Model at least)."""
    euler = model.matter.get_use_euler_angles(state)
    for mb, spec in zip(model.mobods[1:], model.specs[1:]):
        mb.set_q(state, random_q(rng, spec.joint, mb.get_num_q(state), euler))
        mb.set_u(state, rng.uniform(-speed, speed, mb.get_num_u(state)))


def quaternion_q_to_euler_q(joint: str, q: np.ndarray) -> np.ndarray:
    """The Euler-angle-mode coordinates of the same X_FM: the quaternion becomes body-fixed X-Y-Z
    angles (via simtk.Rotation), the translations after it are kept."""
    if joint not in QUATERNION_JOINTS:
        return np.array(q, dtype=float)
    angles = Rotation.from_quaternion(q[:4]).to_body_fixed_xyz()
    return np.concatenate([angles, q[4:]])


def new_state(model: Model, euler: bool = False):
    """A fresh State of ``model`` realized to Model (with Euler angles if asked)."""
    state = model.system.realize_topology()
    if euler:
        model.matter.set_use_euler_angles(state, True)
    model.system.realize_model(state)
    return state


# ---------------------------------------------------------------------- numerics
def rel_err(actual, expected) -> float:
    """max |actual - expected| over max(1, max |expected|)."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    return float(np.abs(actual - expected).max(initial=0.0) / max(1.0, np.abs(expected).max(initial=0.0)))


def skew_to_vec(W: np.ndarray) -> np.ndarray:
    """The vector w of a (nearly) skew-symmetric matrix W ~ [w x]."""
    A = 0.5 * (W - W.T)
    return np.array([A[2, 1], A[0, 2], A[1, 0]])
