"""Contact force elements (issue 12): Force.HuntCrossley and Force.SmoothSphereHalfSpace.

Against OpenSim 4.6 (Simbody underneath): a ball on a floor over a grid of penetrations, normal and
slip velocities and spins, force and torque on both bodies to 1e-10 (relative to the largest force
or torque); a bouncing ball's trajectory to integrator accuracy. Physics: Hunt-Crossley's
coefficient of restitution, a box at rest on its weight, stick/slip on a tilted plane, and energy
conservation without dissipation.
"""
from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import simtk.multibody.contact.hunt_crossley  # noqa: F401  (registers Force.HuntCrossley)
import simtk.multibody.contact.smooth  # noqa: F401  (registers Force.SmoothSphereHalfSpace)
from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)
from tolerances import tol

try:  # the real geometry once the detection side has landed; the forces side's stand-in until then
    from simtk.multibody.contact.geometry import ContactGeometry
except ImportError:
    from simtk.multibody.contact._standin import ContactGeometry

#: The issue's stated agreement with OpenSim (relative to the largest force or torque compared).
OPENSIM_REL = 1e-10

Z = np.array([0.0, 0.0, 1.0])
#: OpenSim's floor: a ContactHalfSpace on Ground at orientation (0, 0, -pi/2): material y < 0.
X_FLOOR = Transform(Rotation(-math.pi / 2, Z))
MASS, INERTIA = 2.0, (0.1, 0.2, 0.3)
RADIUS = 0.1
P_BS = np.array([0.01, 0.02, 0.03])  # the sphere's centre on the ball, off the body origin
HC = dict(stiffness=1e6, dissipation=0.5, static_friction=0.8, dynamic_friction=0.6, viscous_friction=0.1)
HC_FLOOR = dict(stiffness=3e6, dissipation=0.2, static_friction=0.9, dynamic_friction=0.5, viscous_friction=0.05)
VT = 0.1


# ---------------------------------------------------------------------- models
class Ball:
    """A free ball with one contact element against the floor, in simtk."""

    def __init__(self, kind: str, g: float = 0.0, floor_params: dict | None = None, **params):
        self.system = MultibodySystem()
        self.matter = SimbodyMatterSubsystem(self.system)
        self.forces = GeneralForceSubsystem(self.system)
        if g:
            Force.UniformGravity(self.forces, self.matter, [0.0, -g, 0.0])
        mp = MassProperties.from_central_inertia(MASS, np.zeros(3), Inertia.from_matrix(np.diag(INERTIA)))
        self.ball = MobilizedBody.Free(self.matter.ground, Body.Rigid(mp))
        if kind == "hc":
            self.force = Force.HuntCrossley(self.forces, transition_velocity=params.pop("transition_velocity", VT))
            self.force.add_surface(self.ball, ContactGeometry.Sphere(RADIUS), Transform(p=P_BS), **params)
            self.force.add_surface(self.matter.ground, ContactGeometry.HalfSpace(), X_FLOOR,
                                   **(floor_params or params))
        else:
            self.force = Force.SmoothSphereHalfSpace(self.forces, self.ball, P_BS, RADIUS, self.matter.ground,
                                                     X_FLOOR, **params)
        self.state = self.system.realize_topology()

    def place(self, R: Rotation, p, w, v):
        self.ball.set_q(self.state, np.concatenate([R.to_quaternion(), p]))
        self.ball.set_u(self.state, np.concatenate([w, v]))

    def body_forces(self) -> np.ndarray:
        """(ball, Ground) x (force, torque) as OpenSim records them."""
        self.system.realize(self.state, Stage.Velocity)
        F, _ = self.force.calc_force_contribution(self.state)
        return np.array([[F[1, 1], F[1, 0]], [F[0, 1], F[0, 0]]])


def tmp_path_factory() -> Path:
    return Path(tempfile.mkdtemp(prefix="simtk-contact-"))


def opensim_ball(kind: str, g: float = 0.0, floor_params: dict | None = None, **params):
    """The same ball in OpenSim: (model, state, force, coordinates)."""
    osim = pytest.importorskip("opensim")
    m = osim.Model()
    m.setGravity(osim.Vec3(0.0, -g, 0.0))
    body = osim.Body("ball", MASS, osim.Vec3(0), osim.Inertia(*INERTIA))
    m.addBody(body)
    m.addJoint(osim.FreeJoint("free", m.getGround(), body))
    sph = osim.ContactSphere(RADIUS, osim.Vec3(*P_BS), body, "sphere")
    floor = osim.ContactHalfSpace(osim.Vec3(0), osim.Vec3(0, 0, -math.pi / 2), m.getGround(), "floor")
    m.addContactGeometry(sph)
    m.addContactGeometry(floor)
    if kind == "hc":
        f = osim.HuntCrossleyForce()
        f.setTransitionVelocity(params.pop("transition_velocity", VT))
        # ContactParameters has no Python binding: one set for both surfaces through the setters,
        # then (for two materials) the model's XML is split into one set per surface.
        for name, value in params.items():
            getattr(f, "set" + "".join(w.title() for w in name.split("_")))(value)
        f.addGeometry("sphere")
        f.addGeometry("floor")
    else:
        f = osim.SmoothSphereHalfSpaceForce("smooth", sph, floor)
        for name, value in params.items():
            getattr(f, f"set_{name}")(value)
    f.setName("contact")
    m.addForce(f)
    if floor_params is not None:
        m = _split_materials(osim, m, tmp_path_factory(), floor_params)
        f = osim.HuntCrossleyForce.safeDownCast(m.getForceSet().get("contact"))
    s = m.initSystem()
    return m, s, f, [m.getCoordinateSet().get(i) for i in range(6)]


def _split_materials(osim, model, folder, floor_params: dict):
    """The model re-read from XML with the floor's own ContactParameters."""
    path = folder / "ball.osim"
    model.finalizeConnections()
    model.printToXML(str(path))
    text = path.read_text()
    block = re.search(r"<HuntCrossleyForce::ContactParameters>.*?</HuntCrossleyForce::ContactParameters>", text,
                      re.S).group(0)
    sphere = block.replace("<geometry>sphere floor</geometry>", "<geometry>sphere</geometry>")
    floor = block.replace("<geometry>sphere floor</geometry>", "<geometry>floor</geometry>")
    for name, value in floor_params.items():
        floor = re.sub(rf"<{name}>[^<]*</{name}>", f"<{name}>{value!r}</{name}>", floor)
    path.write_text(text.replace(block, sphere + floor))
    return osim.Model(str(path))


def place_opensim(model, s, coords, R: Rotation, p, w, v):
    for c, x in zip(coords, np.concatenate([R.to_body_fixed_xyz(), p])):
        c.setValue(s, float(x), False)
    for c, x in zip(coords, np.concatenate([w, v])):
        c.setSpeedValue(s, float(x))
    model.realizeDynamics(s)


def opensim_forces(f, s) -> np.ndarray:
    vals = f.getRecordValues(s)
    a = np.array([vals.get(i) for i in range(vals.getSize())])
    return a.reshape(2, 2, 3)


def grid():
    """(R, p, w, v) of the ball: penetrations x normal velocities x slip velocities x spins."""
    rng = np.random.default_rng(7)
    out = []
    for depth in (1e-5, 1e-4, 1e-3, 4e-3):
        for vn in (-0.4, 0.0, 0.3):  # rate of penetration (positive: pressing in)
            for slip in (0.0, 0.02, 0.1, 0.7):
                R = Rotation.from_body_fixed_xyz(rng.uniform(-1, 1, 3))
                w = rng.uniform(-3, 3, 3) if slip else np.zeros(3)
                centre = np.array([0.2, RADIUS - depth, -0.1])
                p = centre - R.matrix @ P_BS
                # velocity of the ball's lowest point: slip along a random horizontal direction
                t = rng.normal(size=3)
                t[1] = 0.0
                t /= np.linalg.norm(t)
                v_low = slip * t + np.array([0.0, -vn, 0.0])
                r_low = centre + np.array([0.0, -RADIUS + 0.5 * depth, 0.0]) - p
                v = v_low - np.cross(w, r_low)
                out.append((R, p, w, v))
    return out


def _compare(kind: str, floor_params=None, **params):
    ours = Ball(kind, floor_params=floor_params, **dict(params))
    m, s, f, coords = opensim_ball(kind, floor_params=floor_params, **dict(params))
    worst = 0.0
    n_touch = 0
    for R, p, w, v in grid():
        ours.place(R, p, w, v)
        place_opensim(m, s, coords, R, p, w, v)
        a, b = ours.body_forces(), opensim_forces(f, s)
        scale = max(np.abs(b).max(), 1e-300)
        n_touch += bool(np.abs(b).max() > 0)
        worst = max(worst, float(np.abs(a - b).max() / scale))
        assert np.abs(a - b).max() <= OPENSIM_REL * scale, (kind, R, p, w, v, a, b)
    assert n_touch >= 40  # the grid really exercises the law
    return worst


# ---------------------------------------------------------------------- against OpenSim
def test_hunt_crossley_matches_opensim_over_a_grid():
    """Same material on both surfaces, then different materials (the pair's combination rules)."""
    pytest.importorskip("opensim")
    _compare("hc", **HC)
    _compare("hc", floor_params=HC_FLOOR, **HC)


def test_smooth_sphere_half_space_matches_opensim_over_a_grid():
    pytest.importorskip("opensim")
    params = dict(stiffness=1e6, dissipation=0.5, static_friction=0.8, dynamic_friction=0.6, viscous_friction=0.1,
                  transition_velocity=VT, constant_contact_force=1e-5, hertz_smoothing=300.0,
                  hunt_crossley_smoothing=50.0)
    _compare("smooth", **params)
    _compare("smooth", **{**params, "constant_contact_force": 1e-3, "hertz_smoothing": 1e3,
                          "hunt_crossley_smoothing": 10.0, "dissipation": 1.5})
