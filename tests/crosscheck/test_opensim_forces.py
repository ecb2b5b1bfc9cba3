"""simtk's built-in force elements against Simbody's, run through OpenSim 4.6.

OpenSim force components that are thin wrappers of a Simbody built-in are compared one to one:

==========================  =====================================  ===============================
OpenSim                     Simbody element it creates             simtk
==========================  =====================================  ===============================
``Model.setGravity(g)``     ``Force::Gravity``                     ``Force.UniformGravity(g)``
``PointToPointSpring``      ``Force::TwoPointLinearSpring``        ``Force.TwoPointLinearSpring``
``BushingForce``            ``Force::LinearBushing`` (k6, c6 as    ``Force.LinearBushing``
                            (rotational xyz, translational xyz))
``SpringGeneralizedForce``  none: OpenSim's own f = -k (q - q0)    ``MobilityLinearSpring`` +
                            - c u on the coordinate's mobility     ``MobilityLinearDamper``
==========================  =====================================  ===============================

What is compared: udot (forward dynamics with the forces applied), each element alone (with
gravity), the mobilizer reaction forces, and potential energy where OpenSim reports it. Known
differences of *OpenSim* (not of Simbody or simtk), checked as such below:

- ``SpringGeneralizedForce`` reports no potential energy (its force is OpenSim's own, through a
  Force::Custom adapter that leaves computePotentialEnergy at 0).
- ``BushingForce``'s energy is counted twice by ``Model.calcPotentialEnergy``: OpenSim's base
  ``Force::extendAddToSystem`` adds a Force::Custom adapter for every OpenSim Force, and
  BushingForce, which also creates the Simbody ``LinearBushing``, overrides
  ``computePotentialEnergy`` to return that LinearBushing's energy, so both count it. An
  energy-rate test shows which value is the potential of the forces applied.
- OpenSim refuses two-body elements with both ends on one body (PointToPointSpring raises at
  initSystem; a BushingForce whose two frames are on one body crashed the process with "pure
  virtual method called"), so the random elements always join two different bodies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

osim = pytest.importorskip("opensim")

from opensim_models import (  # noqa: E402
    JOINTS,
    SWEEP_TOL,
    build_opensim,
    build_simtk,
    cond_m,
    n_coords,
    osim_transform,
    osim_vec3,
    osim_vector,
    random_coordinates,
    random_specs,
    random_transform,
    rel_err,
    solve_tol,
    spatial_vector,
    vec,
)

from simtk import Force, Stage  # noqa: E402
from tolerances import tol  # noqa: E402

G = np.array([0.4, -9.81, 0.7])
TOL = SWEEP_TOL  # energies; udot and the reactions come out of forward dynamics: udot_tol
SEEDS = [11, 12, 13, 14]


@dataclass
class ForcePair:
    """A random tree with the same force elements in simtk and OpenSim (names map both ways)."""

    specs: list
    st: object
    s: object
    os: object
    simtk_forces: dict   # OpenSim force name -> list of simtk Force elements it stands for
    rng: np.random.Generator
    elements: list       # (kind, name, arguments) as given to both twins

    @property
    def nb(self) -> int:
        return len(self.specs)

    def realize(self) -> None:
        self.st.system.realize(self.s, Stage.Acceleration)
        self.os.model.realizeAcceleration(self.os.state)

    def only(self, name: str | None) -> None:
        """Enable only the element ``name`` (gravity always stays on) in both twins."""
        force_set = self.os.model.getForceSet()
        for n, elements in self.simtk_forces.items():
            force_set.get(n).setAppliesForce(self.os.state, n == name)
            for e in elements:
                (e.enable if n == name else e.disable)(self.s)
        self.realize()

    def all_on(self) -> None:
        force_set = self.os.model.getForceSet()
        for n, elements in self.simtk_forces.items():
            force_set.get(n).setAppliesForce(self.os.state, True)
            for e in elements:
                e.enable(self.s)
        self.realize()


def _other_body(rng: np.random.Generator, nb: int, b: int) -> int:
    """A body index in [0, nb) other than ``b`` (see the module docstring: OpenSim refuses both ends
    of a two-body element on one body)."""
    i = int(rng.integers(0, nb - 1))
    return i + 1 if i >= b else i


def random_force_elements(rng: np.random.Generator, specs: list) -> list:
    """Parameters of the elements: (kind, name, arguments) with body indices of ``specs``."""
    nb = len(specs)
    out = []
    for k in range(2):
        b2 = int(rng.integers(1, nb))
        b1 = 0 if k == 0 else _other_body(rng, nb, b2)
        out.append(("spring", f"spring{k}", (b1, rng.normal(size=3) * 0.5, b2, rng.normal(size=3) * 0.5,
                                             float(rng.uniform(2, 20)), float(rng.uniform(0.1, 1.0)))))
    for k in range(2):
        j = int(rng.integers(1, nb))
        c = int(rng.integers(0, n_coords(specs[j])))
        out.append(("genspring", f"genspring{k}", (j, c, float(rng.uniform(1, 10)), float(rng.uniform(-0.5, 0.5)),
                                                   float(rng.uniform(0.1, 2.0)))))
    b2 = int(rng.integers(1, nb))
    b1 = _other_body(rng, nb, b2)
    out.append(("bushing", "bushing", (b1, random_transform(rng, 0.3), b2, random_transform(rng, 0.3),
                                       rng.uniform(1, 30, 6), rng.uniform(0.1, 3, 6))))
    return out


def add_osim_elements(elements):
    def add(model, bodies, joints):
        def frame(i):
            return (model.getGround() if i == 0 else bodies[i])
        for kind, name, a in elements:
            if kind == "spring":
                b1, s1, b2, s2, k, x0 = a
                f = osim.PointToPointSpring(frame(b1), osim_vec3(s1), frame(b2), osim_vec3(s2), k, x0)
            elif kind == "genspring":
                j, c, k, q0, damping = a
                f = osim.SpringGeneralizedForce(joints[j].get_coordinates(c).getName())
                f.setStiffness(k)
                f.setRestLength(q0)
                f.setViscosity(damping)
            else:
                b1, X1, b2, X2, k6, c6 = a
                # OpenSim's arguments: translational then rotational stiffness, the same for damping;
                # Simbody's Vec6 (and simtk's k6, c6) put the three rotational values first.
                f = osim.BushingForce(name, frame(b1), osim_transform(X1), frame(b2), osim_transform(X2),
                                      osim_vec3(k6[3:]), osim_vec3(k6[:3]), osim_vec3(c6[3:]), osim_vec3(c6[:3]))
            f.setName(name)
            model.addForce(f)
    return add


def add_simtk_elements(st, elements) -> dict:
    out = {}
    mob = st.mobods
    for kind, name, a in elements:
        if kind == "spring":
            b1, s1, b2, s2, k, x0 = a
            out[name] = [Force.TwoPointLinearSpring(st.forces, mob[b1], s1, mob[b2], s2, k, x0)]
        elif kind == "genspring":
            j, c, k, q0, damping = a
            out[name] = [Force.MobilityLinearSpring(st.forces, mob[j], c, k, q0),
                         Force.MobilityLinearDamper(st.forces, mob[j], c, damping)]
        else:
            b1, X1, b2, X2, k6, c6 = a
            out[name] = [Force.LinearBushing(st.forces, mob[b1], X1, mob[b2], X2, k6, c6)]
    return out


def make_force_pair(seed: int, gravity=G, edit_elements=None) -> ForcePair:
    """Twins of a random tree with the random elements (``edit_elements(list) -> list`` may
    change them first)."""
    rng = np.random.default_rng(seed)
    specs = random_specs(rng, JOINTS, int(rng.integers(4, 7)))
    elements = random_force_elements(rng, specs)
    if edit_elements is not None:
        elements = edit_elements(elements)
    os_twin = build_opensim(specs, gravity, rng, add_components=add_osim_elements(elements))
    st = build_simtk(specs, gravity)
    simtk_forces = add_simtk_elements(st, elements)
    s = st.new_state(euler=True)
    qs, us = random_coordinates(rng, specs)
    st.set_coordinates(s, qs, us)
    os_twin.set_coordinates(qs, us)
    pair = ForcePair(specs, st, s, os_twin, simtk_forces, rng, elements)
    pair.realize()
    return pair


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def fpair(request) -> ForcePair:
    pair = make_force_pair(request.param)
    yield pair
    pair.all_on()


def osim_udot(pair: ForcePair) -> np.ndarray:
    return vec(pair.os.state.getUDot())[pair.os.u_perm()]


def udot_tol(pair: ForcePair) -> float:
    """Forward dynamics by two implementations: round-off times the condition number of M."""
    pair.st.system.realize(pair.s, Stage.Position)
    return solve_tol(cond_m(pair.st.matter, pair.s))


def test_udot_with_every_force(fpair):
    """Forward dynamics with gravity, two point-to-point springs, two generalized springs with
    damping and a bushing: simtk's udot equals Simbody's."""
    fpair.all_on()
    assert rel_err(fpair.s.get_udot(), osim_udot(fpair)) < udot_tol(fpair)


@pytest.mark.parametrize("name", ["spring0", "spring1", "genspring0", "genspring1", "bushing"])
def test_each_element_alone(fpair, name):
    """Each element alone (with gravity) gives Simbody's udot: checks that element's definition
    (direction, sign, which point, which frame, which of the six bushing axes)."""
    fpair.only(None)
    udot_gravity = osim_udot(fpair)
    fpair.only(name)
    try:
        assert rel_err(fpair.s.get_udot(), osim_udot(fpair)) < udot_tol(fpair)
        assert rel_err(osim_udot(fpair), udot_gravity) > 1e-6  # the element does act (a threshold)
    finally:
        fpair.all_on()


def test_gravity_alone(fpair):
    """Gravity alone: udot and potential energy (Simbody's Force::Gravity, zero height at the
    Ground origin) equal simtk's UniformGravity."""
    fpair.only(None)
    try:
        assert rel_err(fpair.s.get_udot(), osim_udot(fpair)) < udot_tol(fpair)
        assert rel_err(fpair.st.system.calc_potential_energy(fpair.s),
                       fpair.os.model.calcPotentialEnergy(fpair.os.state)) < TOL
    finally:
        fpair.all_on()


def test_spring_potential_energy(fpair):
    """Potential energy of each PointToPointSpring (OpenSim's total minus gravity's) equals
    simtk's TwoPointLinearSpring energy; the generalized springs report none in OpenSim."""
    fpair.only(None)
    pe_gravity = fpair.os.model.calcPotentialEnergy(fpair.os.state)
    try:
        for name in ("spring0", "spring1", "genspring0"):
            fpair.only(name)
            theirs = fpair.os.model.calcPotentialEnergy(fpair.os.state) - pe_gravity
            mine = fpair.simtk_forces[name][0].calc_potential_energy_contribution(fpair.s)
            if name.startswith("genspring"):
                # no energy of its own: the difference of two totals, on the scale of gravity's
                assert abs(theirs) <= tol(abs(pe_gravity), 64) and mine > 0.0
            else:
                assert rel_err(mine, theirs) < TOL
    finally:
        fpair.all_on()


def test_reaction_forces_include_mobility_forces(fpair):
    """Mobilizer reaction forces with every element on: Simbody does not subtract applied mobility
    forces (here the generalized springs), it reports them as part of the reaction; so does simtk."""
    fpair.all_on()
    RF = osim.VectorOfSpatialVec()
    fpair.os.matter.calcMobilizerReactionForces(fpair.os.state, RF)
    theirs = spatial_vector(RF, fpair.nb)[fpair.os.mobod]
    assert rel_err(fpair.st.matter.calc_mobilizer_reaction_forces(fpair.s)[1:], theirs[1:]) < udot_tol(fpair)


# ---------------------------------------------------------------------- bushing energy
def _opensim_pe_at(pair: ForcePair, q_os: np.ndarray) -> float:
    S = pair.os.state
    S.setQ(osim_vector(q_os))
    pair.os.model.realizeVelocity(S)
    return pair.os.model.calcPotentialEnergy(S)


def _simtk_pe_at(pair: ForcePair, q: np.ndarray) -> float:
    pair.s.set_q(q)
    pair.st.system.realize(pair.s, Stage.Velocity)
    return pair.st.system.calc_potential_energy(pair.s)


def _undamped_bushing_only(elements: list) -> list:
    (kind, name, (b1, X1, b2, X2, k6, c6)), = [e for e in elements if e[0] == "bushing"]
    return [(kind, name, (b1, X1, b2, X2, k6, np.zeros(6)))]


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_bushing_potential_energy(seed):
    """LinearBushing energy is sum_i k_i q_i^2 / 2 (Simbody's LinearBushingImpl). OpenSim's
    Model.calcPotentialEnergy reports twice that for a BushingForce (double count, see the module
    docstring). The energy-rate law settles which is right: with no gravity and no damping,
    -dPE/dt must equal the power u . f of the bushing's generalized forces f = M udot + C
    (Simbody's residual at its own udot with nothing applied). simtk's energy obeys it; OpenSim's
    rate is twice it."""
    pair = make_force_pair(seed, gravity=None, edit_elements=_undamped_bushing_only)
    S = pair.os.state
    mine = pair.simtk_forces["bushing"][0].calc_potential_energy_contribution(pair.s)
    theirs = pair.os.model.calcPotentialEnergy(S)
    assert mine > 1e-3
    assert rel_err(2.0 * mine, theirs) < TOL
    assert rel_err(pair.s.get_udot(), osim_udot(pair)) < udot_tol(pair)

    r = osim.Vector()
    pair.os.matter.calcResidualForceIgnoringConstraints(
        S, osim_vector(np.zeros(pair.os.nu)),
        osim.VectorOfSpatialVec(pair.nb, osim.SpatialVec(osim.Vec3(0.0), osim.Vec3(0.0))), S.getUDot(), r)
    power = float(vec(S.getU()) @ vec(r))

    h = 1e-6  # central differences; the 1e-6 below is their accuracy
    q_os, qdot_os = vec(S.getQ()), vec(S.getQDot())
    rate_os = (_opensim_pe_at(pair, q_os + h * qdot_os) - _opensim_pe_at(pair, q_os - h * qdot_os)) / (2 * h)
    q, qdot = pair.s.get_q().copy(), pair.s.get_qdot().copy()
    rate_mine = (_simtk_pe_at(pair, q + h * qdot) - _simtk_pe_at(pair, q - h * qdot)) / (2 * h)
    scale = max(1.0, abs(power))
    assert abs(power) > 1e-3
    assert abs(rate_mine + power) < 1e-6 * scale
    assert abs(rate_os + 2.0 * power) < 1e-6 * scale
