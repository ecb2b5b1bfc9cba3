"""Twin builders: the same random tree as a simtk MultibodySystem and as an OpenSim Model.

OpenSim 4.6 runs Simbody underneath, so an OpenSim Model is Simbody's own answer for the same
inputs. Both twins are built from one list of :class:`BodySpec` (the *inputs*: frames, mass
properties, joint parameters); nothing is ever read from simtk to build the OpenSim side.

Mapping of simtk (Simbody's API in Python) onto OpenSim:

- ``MobilizedBody.<J>(parent, X_PF, body, X_BM)`` is ``osim.<J>Joint`` whose parent offset frame
  sits at X_PF on the parent body and whose child offset frame sits at X_BM on the child body
  (OpenSim's ``Joint::createMobilizedBody`` passes exactly these ``findTransformInBaseFrame()``
  transforms to Simbody). Pin, Slider, Ball, Free, Gimbal, Universal, Planar, Ellipsoid map onto
  Simbody's mobilizers of the same name.
- ``osim.Body(name, m, com, Inertia)`` takes the inertia about the mass center (in B);
  simtk's ``MassProperties`` takes it about the body origin: we go through
  ``MassProperties.from_central_inertia``.
- OpenSim puts the matter subsystem in Euler-angle mode (``Model::initializeState`` calls
  ``setUseEulerAngles(true)``): Ball/Ellipsoid q are body-fixed X-Y-Z angles, Free q are those
  angles then p_FM. Simbody still *allocates* the quaternion-sized q block per mobilizer (Ball 4,
  Free 7) and leaves the last slot unused, so OpenSim's q vector is longer than simtk's
  Euler-mode q. We never assume a layout: each body's q and u slots are found by probing its
  Coordinates (``Coordinate.setValue`` / ``setSpeedValue`` write one q / u of that mobilizer).
- ``osim.CustomJoint`` is Simbody's ``MobilizedBody::FunctionBased``: its SpatialTransform's six
  TransformAxis (three rotations, then three translations) become the six functions, their axes
  and the coordinate each reads; an axis without a coordinate is the constant 0. The simtk twin is
  ``MobilizedBody.FunctionBased`` with the same polynomials (OpenSim's PolynomialFunction and
  simtk's Function.Polynomial both list coefficients from the highest power down). OpenSim lists a
  CustomJoint's coordinates in order of first use over the six axes, so we name them that way.
- OpenSim numbers mobilized bodies by its own multibody graph, which need not be the order we
  built them in (we also add OpenSim's bodies and joints in a shuffled order): everything is
  mapped by *body*, through ``Body.getMobilizedBodyIndex()``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from simtk import (  # noqa: E402  (after the importorskip on purpose)
    Body,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SimbodyMatterSubsystem,
    Transform,
)
from tolerances import tol  # noqa: E402

#: simtk mobilizer name -> OpenSim joint class.
OSIM_JOINTS = {
    "Pin": osim.PinJoint,
    "Slider": osim.SliderJoint,
    "Ball": osim.BallJoint,
    "Free": osim.FreeJoint,
    "Gimbal": osim.GimbalJoint,
    "Universal": osim.UniversalJoint,
    "Planar": osim.PlanarJoint,
    "Ellipsoid": osim.EllipsoidJoint,
}
JOINTS = tuple(OSIM_JOINTS)
#: simtk mobilizer name -> OpenSim joint class, plus "FunctionBased" (osim.CustomJoint).
ALL_JOINTS = JOINTS + ("FunctionBased",)
#: Mobilizers whose q block is a quaternion in simtk's default (non-Euler) mode.
QUATERNION_JOINTS = frozenset({"Ball", "Free", "Ellipsoid"})


# ---------------------------------------------------------------------- SimTK <-> numpy
def vec(v) -> np.ndarray:
    """A SimTK Vec3 / Vec4 / Vector as a numpy array."""
    if hasattr(v, "to_numpy"):
        return np.array(v.to_numpy(), dtype=float)
    return np.array([v.get(i) for i in range(v.size())], dtype=float)


def mat(M) -> np.ndarray:
    """A SimTK Matrix as a numpy array."""
    return np.array(M.to_numpy(), dtype=float).reshape(M.nrow(), M.ncol())


def rot(R) -> np.ndarray:
    """A SimTK Rotation as a (3, 3) array."""
    return np.array([[R.get(i, j) for j in range(3)] for i in range(3)])


def spatial(sv) -> np.ndarray:
    """A SimTK SpatialVec as a (2, 3) array (angular, linear)."""
    return np.array([vec(sv.get(0)), vec(sv.get(1))])


def spatial_vector(V, n: int) -> np.ndarray:
    """A SimTK Vector_<SpatialVec> of length n as (n, 2, 3)."""
    return np.array([spatial(V.get(i)) for i in range(n)])


def osim_vector(a) -> "osim.Vector":
    return osim.Vector.createFromMat(np.ascontiguousarray(a, dtype=float))


def osim_vec3(a) -> "osim.Vec3":
    a = np.asarray(a, dtype=float)
    return osim.Vec3(float(a[0]), float(a[1]), float(a[2]))


def osim_rotation(R: np.ndarray) -> "osim.Rotation":
    """A SimTK Rotation from a rotation matrix, through its quaternion (no Euler angles)."""
    q = quaternion_from_matrix(R)
    return osim.Rotation(osim.Quaternion(*map(float, q)))


def osim_transform(X: Transform) -> "osim.Transform":
    return osim.Transform(osim_rotation(X.R.matrix), osim_vec3(X.p))


def osim_transform_np(T) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of a SimTK Transform."""
    return rot(T.R()), vec(T.p())


def osim_spatial_vector(F: np.ndarray) -> "osim.VectorOfSpatialVec":
    """(n, 2, 3) body forces as a SimTK Vector_<SpatialVec>."""
    out = osim.VectorOfSpatialVec(len(F), osim.SpatialVec(osim.Vec3(0.0), osim.Vec3(0.0)))
    for i, f in enumerate(F):
        out.set(i, osim.SpatialVec(osim_vec3(f[0]), osim_vec3(f[1])))
    return out


# ---------------------------------------------------------------------- independent rotation helpers
def quaternion_from_matrix(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > max(R[0, 0], R[1, 1], R[2, 2]):
        w = 0.5 * np.sqrt(1.0 + t)
        q = np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)])
    else:
        i = int(np.argmax([R[0, 0], R[1, 1], R[2, 2]]))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.empty(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    return q / np.linalg.norm(q)


def axis_rotation(axis: int, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def body_fixed_xyz(angles) -> np.ndarray:
    """R = Rx(a) Ry(b) Rz(c): body-fixed X, then new Y, then newer Z."""
    return axis_rotation(0, angles[0]) @ axis_rotation(1, angles[1]) @ axis_rotation(2, angles[2])


def euler_q_to_quaternion_q(joint: str, q: np.ndarray) -> np.ndarray:
    """simtk's default-mode q of the mobilizer whose Euler-mode q is ``q`` (same X_FM)."""
    if joint not in QUATERNION_JOINTS:
        return np.array(q, dtype=float)
    return np.concatenate([quaternion_from_matrix(body_fixed_xyz(q[:3])), q[3:]])


# ---------------------------------------------------------------------- specs
def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return Rotation.from_quaternion(q).matrix


def random_transform(rng: np.random.Generator, scale: float = 0.6) -> Transform:
    return Transform(Rotation.from_matrix(random_rotation(rng)), rng.uniform(-scale, scale, 3))


def random_central_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """Central inertia of a randomly oriented solid box of ``mass``: always physical."""
    a, b, c = rng.uniform(0.15, 1.0, 3) ** 2
    R = random_rotation(rng)
    return R @ np.diag(mass / 12.0 * np.array([b + c, a + c, a + b])) @ R.T


@dataclass
class BodySpec:
    """The inputs for one body: joint, parent (spec index), frames, mass properties."""

    joint: str
    parent: int
    X_PF: Transform
    X_BM: Transform
    mass: float
    com: np.ndarray      # p_BC, in B
    I_C: np.ndarray      # central inertia, in B
    radii: np.ndarray | None = None  # Ellipsoid only
    custom: "CustomPlan | None" = None  # FunctionBased only


@dataclass
class CustomPlan:
    """A FunctionBased / CustomJoint mobilizer: per axis (3 rotations, 3 translations) the
    coordinate it reads (None: constant 0) and its polynomial coefficients (highest power first)."""

    n: int
    coords: list          # 6 entries: int or None
    coefficients: list    # 6 entries: (k,) arrays or None
    axes: np.ndarray      # (6, 3) unit axes


def random_custom_plan(rng: np.random.Generator) -> CustomPlan:
    """1-3 coordinates on random (non-orthogonal) axes, linear to cubic functions, some axes unused.
    Coordinates are numbered by first use over the axes (OpenSim's order)."""
    n = int(rng.integers(1, 4))
    raw: list = [int(rng.integers(0, n)) if rng.random() < 0.6 else None for _ in range(6)]
    for c, a in enumerate(rng.permutation(6)[:n]):  # every coordinate drives at least one axis
        raw[a] = c
    relabel: dict = {}
    coords = [None if c is None else relabel.setdefault(c, len(relabel)) for c in raw]
    coefficients = [None if c is None else rng.normal(size=int(rng.integers(2, 5))) * 0.8 for c in coords]
    axes = rng.normal(size=(6, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return CustomPlan(n, coords, coefficients, axes)


def random_specs(rng: np.random.Generator, joints, nb: int | None = None, must_have: str | None = None) -> list:
    """Random tree: ``nb`` bodies including Ground (specs[0] is None), joints drawn from ``joints``.

    ``must_have`` forces that joint onto the first and the last body (a root and a leaf-ish body).
    """
    if nb is None:
        nb = int(rng.integers(3, 9))
    specs: list = [None]
    for i in range(1, nb):
        parent = int(rng.integers(0, i))
        joint = str(joints[int(rng.integers(0, len(joints)))])
        if must_have is not None and i in (1, nb - 1):
            joint = must_have
        mass = float(rng.uniform(0.5, 3.0))
        radii = rng.uniform(0.2, 1.2, 3) if joint == "Ellipsoid" else None
        custom = random_custom_plan(rng) if joint == "FunctionBased" else None
        specs.append(BodySpec(joint, parent, random_transform(rng), random_transform(rng), mass,
                              rng.uniform(-0.4, 0.4, 3), random_central_inertia(rng, mass), radii, custom))
    return specs


def chain_specs(rng: np.random.Generator, joints) -> list:
    """A chain Ground - 1 - 2 - ... with the given joints (random frames and mass properties)."""
    specs: list = [None]
    for i, joint in enumerate(joints, start=1):
        mass = float(rng.uniform(0.5, 3.0))
        specs.append(BodySpec(joint, i - 1, random_transform(rng), random_transform(rng), mass,
                              rng.uniform(-0.4, 0.4, 3), random_central_inertia(rng, mass)))
    return specs


def n_coords(spec: BodySpec) -> int:
    """Number of OpenSim coordinates = Simbody Euler-mode nq = nu, for the joints used here."""
    if spec.joint == "FunctionBased":
        return spec.custom.n
    return {"Pin": 1, "Slider": 1, "Ball": 3, "Free": 6, "Gimbal": 3, "Universal": 2, "Planar": 3,
            "Ellipsoid": 3}[spec.joint]


def random_coordinates(rng: np.random.Generator, specs: list, spread: float = 1.0):
    """Per body: Euler-mode q (angles stay well inside the X-Y-Z singularity at +-pi/2) and u."""
    qs, us = [None], [None]
    for spec in specs[1:]:
        n = n_coords(spec)
        qs.append(rng.uniform(-spread, spread, n))
        us.append(rng.uniform(-spread, spread, n))
    return qs, us


# ---------------------------------------------------------------------- simtk twin
@dataclass
class SimtkTwin:
    system: MultibodySystem
    matter: SimbodyMatterSubsystem
    forces: GeneralForceSubsystem
    mobods: list
    specs: list
    gravity: object = None
    extra: dict = field(default_factory=dict)

    def new_state(self, euler: bool = True):
        """A State realized to Model, in Euler-angle mode (OpenSim's) unless told otherwise."""
        state = self.system.realize_topology()
        if euler:
            self.matter.set_use_euler_angles(state, True)
        self.system.realize_model(state)
        return state

    def set_coordinates(self, state, qs, us) -> None:
        """Set per-body Euler-mode q (converted to quaternions in default mode) and u."""
        euler = self.matter.get_use_euler_angles(state)
        for mb, spec, q, u in zip(self.mobods[1:], self.specs[1:], qs[1:], us[1:]):
            mb.set_q(state, q if euler else euler_q_to_quaternion_q(spec.joint, q))
            mb.set_u(state, u)

    def u_slices(self, state) -> list:
        """Per body (index = spec index) the slice of its u in simtk's u vector."""
        out = [slice(0, 0)]
        start = 0
        for mb in self.mobods[1:]:
            n = mb.get_num_u(state)
            out.append(slice(start, start + n))
            start += n
        return out


def make_body(spec: BodySpec) -> Body:
    return Body.Rigid(MassProperties.from_central_inertia(spec.mass, spec.com, Inertia.from_matrix(spec.I_C)))


def build_simtk(specs: list, gravity=None) -> SimtkTwin:
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    mobods = [matter.ground]
    for spec in specs[1:]:
        parent = mobods[spec.parent]
        if spec.joint == "FunctionBased":
            plan = spec.custom
            functions = [Function.Constant(0.0, 0) if c is None else Function.Polynomial(list(k))
                         for c, k in zip(plan.coords, plan.coefficients)]
            coord_indices = [[] if c is None else [c] for c in plan.coords]
            mobods.append(MobilizedBody.FunctionBased(parent, spec.X_PF, make_body(spec), spec.X_BM, plan.n,
                                                      functions, coord_indices, plan.axes))
            continue
        cls = getattr(MobilizedBody, spec.joint)
        extra = (spec.radii,) if spec.joint == "Ellipsoid" else ()
        mobods.append(cls(parent, spec.X_PF, make_body(spec), spec.X_BM, *extra))
    grav = Force.UniformGravity(forces, matter, np.asarray(gravity, float)) if gravity is not None else None
    return SimtkTwin(system, matter, forces, mobods, list(specs), grav)


# ---------------------------------------------------------------------- OpenSim twin
@dataclass
class OsimTwin:
    model: object
    state: object
    bodies: list          # osim.Body per spec index (None for Ground)
    joints: list          # osim.Joint per spec index
    mobod: np.ndarray     # OpenSim MobilizedBodyIndex per spec index (0 for Ground)
    q_index: list         # per spec index: global q indices of its coordinates, in mobilizer order
    u_index: list         # per spec index: global u indices
    nq: int
    nu: int
    extra: dict = field(default_factory=dict)

    @property
    def matter(self):
        return self.model.getMatterSubsystem()

    @property
    def nb(self) -> int:
        return len(self.bodies)

    def set_coordinates(self, qs, us) -> None:
        """Write per-body q and u into the state (unused quaternion slots stay 0)."""
        q = np.zeros(self.nq)
        u = np.zeros(self.nu)
        for i in range(1, self.nb):
            q[self.q_index[i]] = qs[i]
            u[self.u_index[i]] = us[i]
        self.state.setQ(osim_vector(q))
        self.state.setU(osim_vector(u))

    def u_perm(self) -> np.ndarray:
        """p with u_osim[p] = u_simtk (simtk lays out u by spec index, in the same per-body order)."""
        return np.concatenate([self.u_index[i] for i in range(1, self.nb)]).astype(int)

    def body_rows(self) -> np.ndarray:
        """OpenSim's mobilized-body index of each spec body (Ground included)."""
        return self.mobod


def _spatial_transform(plan: CustomPlan, prefix: str):
    st = osim.SpatialTransform()
    for a in range(6):
        axis = st.updTransformAxis(a)
        axis.setAxis(osim_vec3(plan.axes[a]))
        if plan.coords[a] is not None:
            names = osim.ArrayStr()
            names.append(f"{prefix}_c{plan.coords[a]}")
            axis.setCoordinateNames(names)
            # set_function copies; setFunction would take ownership of a Python-owned object.
            axis.set_function(osim.PolynomialFunction(osim_vector(plan.coefficients[a])))
    return st


def _probe_indices(coords, state, setter, getter_vec, n: int) -> list:
    """Global state indices written by each coordinate's setter, found one coordinate at a time."""
    out = []
    for c in coords:
        before = getter_vec()
        setter(c, 0.123456789)
        after = getter_vec()
        changed = np.flatnonzero(after != before)
        assert len(changed) == 1, f"coordinate {c.getName()} wrote {len(changed)} state entries"
        out.append(int(changed[0]))
        setter(c, 0.0)
    return out


def build_opensim(specs: list, gravity=None, rng: np.random.Generator | None = None,
                  add_components=None) -> OsimTwin:
    """The OpenSim Model of ``specs``; bodies and joints are added in a shuffled order if ``rng``.

    ``add_components(model, bodies, joints)`` may add forces or constraints before the system is
    built (``bodies[0]`` is None: use ``model.getGround()``).
    """
    model = osim.Model()
    model.setGravity(osim_vec3(gravity if gravity is not None else np.zeros(3)))
    nb = len(specs)
    bodies = [None] * nb
    joints = [None] * nb
    for i in range(1, nb):
        s = specs[i]
        bodies[i] = osim.Body(f"b{i}", s.mass, osim_vec3(s.com),
                              osim.Inertia(*map(float, (s.I_C[0, 0], s.I_C[1, 1], s.I_C[2, 2],
                                                        s.I_C[0, 1], s.I_C[0, 2], s.I_C[1, 2]))))
    zero = osim.Vec3(0.0)
    for i in range(1, nb):
        s = specs[i]
        parent = model.getGround() if s.parent == 0 else bodies[s.parent]
        args = (f"j{i}", parent, zero, zero, bodies[i], zero, zero)
        if s.joint == "Ellipsoid":
            j = osim.EllipsoidJoint(*args, osim_vec3(s.radii))
        elif s.joint == "FunctionBased":
            j = osim.CustomJoint(*args, _spatial_transform(s.custom, f"j{i}"))
        else:
            j = OSIM_JOINTS[s.joint](*args)
        # The joint owns its two offset frames: frames(0) on the parent, frames(1) on the child.
        j.upd_frames(0).setOffsetTransform(osim_transform(s.X_PF))
        j.upd_frames(1).setOffsetTransform(osim_transform(s.X_BM))
        joints[i] = j
    order = list(range(1, nb))
    if rng is not None:
        rng.shuffle(order)
    for i in order:
        model.addBody(bodies[i])
    if rng is not None:
        rng.shuffle(order)
    for i in order:
        model.addJoint(joints[i])
    if add_components is not None:
        add_components(model, bodies, joints)
    state = model.initSystem()
    mobod = np.zeros(nb, dtype=int)
    for i in range(1, nb):
        mobod[i] = int(bodies[i].getMobilizedBodyIndex())
    nq, nu = state.getNQ(), state.getNU()
    q_index, u_index = [np.zeros(0, int)], [np.zeros(0, int)]
    for i in range(1, nb):
        coords = [joints[i].get_coordinates(k) for k in range(joints[i].numCoordinates())]
        if specs[i].joint == "FunctionBased":  # the numbering the simtk twin was given
            assert [c.getName() for c in coords] == [f"j{i}_c{k}" for k in range(specs[i].custom.n)]
        q_index.append(np.array(_probe_indices(coords, state, lambda c, v: c.setValue(state, v, False),
                                               lambda: vec(state.getQ()), nq), dtype=int))
        u_index.append(np.array(_probe_indices(coords, state, lambda c, v: c.setSpeedValue(state, v),
                                               lambda: vec(state.getU()), nu), dtype=int))
    return OsimTwin(model, state, bodies, joints, mobod, q_index, u_index, nq, nu)


def check_frames(twin: OsimTwin, specs: list) -> float:
    """Largest difference between the OpenSim joint frames (as Simbody gets them) and the specs."""
    err = 0.0
    for i in range(1, twin.nb):
        for frame, X in ((twin.joints[i].getParentFrame(), specs[i].X_PF),
                         (twin.joints[i].getChildFrame(), specs[i].X_BM)):
            R, p = osim_transform_np(frame.findTransformInBaseFrame())
            err = max(err, np.abs(R - X.R.matrix).max(), np.abs(p - X.p).max())
    return err


# ---------------------------------------------------------------------- numerics
def rel_err(actual, expected) -> float:
    """max |actual - expected| / max(1, max |expected|)."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    return float(np.abs(actual - expected).max(initial=0.0) / max(1.0, np.abs(expected).max(initial=0.0)))


# The comparisons' tolerances, on rel_err's scale max(1, max|expected|) (at least the unit lengths
# and speeds of these models): round-off of two implementations, simtk's and Simbody's.
#: The same recursive sweeps over up to 8 bodies (kinematics, M, Jacobians, residuals, forces of
#: given multipliers) and the tests' explicit formulas: measured up to ~35 EPS.
SWEEP_TOL = tol(1.0, 2**10)
#: Results of solves (forward dynamics, M^-1, the multipliers and what depends on them) lose the
#: condition numbers of the matrices solved, M and G M^-1 G^T: measured up to ~8 (cond M + cond A) EPS.
SOLVE_MARGIN = 256


def solve_tol(*conds: float) -> float:
    """The tolerance of a result of solves with matrices of condition numbers ``conds``."""
    return tol(sum(conds), SOLVE_MARGIN)


def cond_m(matter, state) -> float:
    """The condition number of simtk's mass matrix at ``state``."""
    return float(np.linalg.cond(matter.calc_m(state)))
