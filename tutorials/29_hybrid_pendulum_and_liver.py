"""Tutorial 29: deformable bodies beside rigid ones (seed 003, SOFA's hybrid scenes).

Two scenes, each written as an HTML replay in which the deformable bodies are drawn with the rigid ones
(``simtk.viz.export_html``: a string as its springs and particles, a solid as its surface, the surface's
vertices following the particles frame by frame, SOFA's visual mapping):

(a) The seed's hybrid pendulum (seed 003, sections 1.2 and 1.6.1): a rigid body on a pin, an elastic
    string of particles fixed at one end (SOFA's FixedConstraint, drawn pink), its last particle riding on
    the rigid body (SOFA's RigidMapping, drawn yellow: the string's pull acts on the body there); gravity
    (0, -10, 0). Run twice from the same State: with RK-Merson, which keeps the total energy (rigid and
    particles, kinetic, gravitational and elastic) to its accuracy, and with the linearly implicit Euler
    step of ``simtk.deformable.ImplicitEulerIntegrator`` at 10 ms, which is stable but dissipates.

(b) A small "liver": a rounded tetrahedral blob (corotational linear FEM, ``DeformableBody.from_tetrahedra``)
    hanging from two spots where a few vertices are fixed, poked by a rigid probe on a slider driven by a PD
    law along a prescribed path (in, hold, then out past where it started). Contact between particles and
    rigid geometry is not built: the blob's vertices near the probe's tip are attached to the probe
    (``DeformableBody.attach``), so the probe pushes and pulls the tissue through them, and the tissue's
    forces act back on the probe. Implicit Euler at 10 ms.

(c) Cutting between steps (SOFA's topology changes): a jelly bar hanging from its top face is cut through
    its middle at t = 0.5 s. The cut is a change request (``system.request_change``) that a TimeStepper
    applies between steps: ``DeformableBody.cut`` removes the tets crossing the plane, every particle keeps
    its position and velocity, the new faces join the drawn surface, and the lower piece falls freely (its
    centre of mass then gains exactly g dt of speed). The replay starts at the cut.

Run: ``python tutorials/29_hybrid_pendulum_and_liver.py [output folder]`` (default: a temporary folder).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
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
from simtk.deformable import DeformableBody, ImplicitEulerIntegrator, box_tetrahedra
from simtk.viz import Decoration, decorate, export_html

G = (0.0, -10.0, 0.0)  # the seed's gravity
FPS = 25  # replay frames per simulated second: 4 implicit steps of 10 ms each


def record(system, integ, state, t_end: float, every: float = 1 / FPS) -> list:
    """Step ``integ`` from ``state`` to ``t_end``, keeping a copy of the State every ``every`` seconds."""
    integ.initialize(state)
    frames = [integ.get_state().copy()]
    for k in range(1, int(round(t_end / every)) + 1):
        integ.step_to(k * every)
        frames.append(integ.get_state().copy())
    for s in frames:
        system.realize(s, Stage.Velocity)
    return frames


# ----------------------------------------------------------------------------- (a) the hybrid pendulum
def hybrid_pendulum():
    """The seed's scene: the string from the origin to the rigid body, the body on a pin at (2, 0, 0)."""
    system = MultibodySystem("hybrid_pendulum")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    mp = MassProperties.from_central_inertia(1.0, [0.0, 0.0, 0.0], np.diag([0.01, 0.01, 0.01]))
    # The body's origin hangs 1 m below the pin; at angle pi/2 it is at (3, 0, 0), where the seed puts it.
    body = MobilizedBody.Pin(matter.ground, Transform(p=[2.0, 0.0, 0.0]), Body.Rigid(mp), Transform(p=[0.0, 1.0, 0.0]))
    station = np.array([0.0, 0.5, 0.0])  # halfway up to the pin: at (2.5, 0, 0) when the body is level
    decorate(body, Decoration.Sphere(0.08, color=(0.95, 0.75, 0.05)))
    decorate(body, Decoration.Line([0.0, 0.0, 0.0], [0.0, 1.0, 0.0], color=(0.3, 0.3, 0.3)))
    decorate(body, Decoration.Frame(0.2))
    n = 11  # particles: 0 fixed at the origin, 1..9 free, 10 on the body
    pts = np.zeros((n, 3))
    pts[:, 0] = np.linspace(0.0, 2.5, n)
    seg = [[i, i + 1] for i in range(n - 1)]
    string = DeformableBody.from_segments(system, pts, seg, 0.1, 200.0, 0.0, name="string")
    string.fix(0)
    string.attach(n - 1, body, station)
    state = system.realize_topology()
    system.realize_model(state)
    body.set_one_q(state, 0, np.pi / 2)
    system.realize(state, Stage.Velocity)
    return system, body, string, state


def part_a(out_dir: Path) -> Path:
    print("(a) the hybrid pendulum: rigid body on a pin, string fixed at the origin, its end on the body")
    t_end = 2.0
    runs = {}
    for label, make in (("RK-Merson 1e-6", lambda s: _merson(s, 1e-6)),
                        ("implicit Euler 10 ms", lambda s: ImplicitEulerIntegrator(s, 0.01))):
        system, body, string, state = hybrid_pendulum()
        e0 = system.calc_energy(state)
        wall = time.perf_counter()
        frames = record(system, make(system), state, t_end)
        wall = time.perf_counter() - wall
        energy = np.array([system.calc_energy(s) for s in frames])
        runs[label] = (system, frames)
        # The energy's scale: what is exchanged (kinetic and potential, rigid and particles).
        scale = max(abs(system.calc_kinetic_energy(s)) for s in frames) + abs(e0)
        e0 = round(e0, 9) + 0.0  # (not "-0.0000": the scene starts level, at zero potential energy)
        print(f"  {label:22s} E(0) = {e0:7.4f} J, E(1 s) = {energy[FPS]:7.4f} J, E(2 s) = {energy[-1]:7.4f} J, "
              f"largest |E - E(0)| / scale = {np.abs(energy - e0).max() / scale:.1e}  ({wall:.2f} s wall)")
        angle = np.degrees([body.get_one_q(s, 0) for s in frames])
        print(f"  {'':22s} pendulum angle from {angle[0]:.0f} to {angle.min():.0f} deg; string's lowest particle at "
              f"y = {min(string.get_positions(s)[:, 1].min() for s in frames):.2f} m")
    system, frames = runs["implicit Euler 10 ms"]
    path = export_html(frames, out_dir / "hybrid_pendulum.html", title="hybrid pendulum (implicit Euler, 10 ms)")
    print(f"  replay: {len(frames)} frames -> {path} ({path.stat().st_size / 1e3:.0f} kB)")
    return path


def _merson(system, accuracy: float):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(accuracy)
    return integ


# ----------------------------------------------------------------------------- (b) the liver and the probe
def rounded_blob(half=(0.09, 0.05, 0.06), cells=(6, 3, 4), roundness=0.75):
    """A box's tets with the box's points pulled toward the ellipsoid of the same half-axes: a rounded blob.

    The map from the cube [-1, 1]^3 to the ball (each point scaled along its ray) is smooth and
    one-to-one; blended with the identity it keeps every tet positively oriented on this grid.
    """
    pts, tets = box_tetrahedra(2.0, 2.0, 2.0, *cells)
    c = pts - 1.0  # in the cube [-1, 1]^3
    r_inf = np.abs(c).max(1)
    r_2 = np.linalg.norm(c, axis=1)
    ball = np.where(r_2[:, None] > 0, c * (r_inf / np.where(r_2 > 0, r_2, 1.0))[:, None], 0.0)
    return ((1 - roundness) * c + roundness * ball) * np.asarray(half), tets


class ProbeDrive(Force.Custom.Implementation):
    """A PD law on the probe's slider toward a prescribed path: in 2 cm, hold, out to 2 cm behind the start."""

    def __init__(self, kp: float, kd: float):
        self.kp, self.kd = kp, kd

    @staticmethod
    def target(t: float) -> tuple[float, float]:
        """(position, rate) of the path at time t: cosine ramps between holds."""
        knots = [(0.0, 0.0), (0.3, 0.0), (0.8, 0.02), (1.3, 0.02), (2.0, -0.02), (3.0, -0.02)]
        for (t0, q0), (t1, q1) in zip(knots[:-1], knots[1:]):
            if t <= t1:
                s = (min(max(t, t0), t1) - t0) / (t1 - t0)
                return q0 + (q1 - q0) * (1 - np.cos(np.pi * s)) / 2, (q1 - q0) * np.pi * np.sin(np.pi * s) / (2 * (t1 - t0))
        return knots[-1][1], 0.0

    def calc_force(self, state, body_forces, particle_forces, mobility_forces):
        q_ref, u_ref = self.target(state.get_time())
        q, u = state.get_q()[0], state.get_u()[0]
        mobility_forces[0] += self.kp * (q_ref - q) + self.kd * (u_ref - u)


def liver_and_probe():
    system = MultibodySystem("liver")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    pts, tets = rounded_blob()
    # Two hanging spots on top, 10 cm apart: the vertices within 2.5 cm of each are held (SOFA's FixedConstraint).
    top = pts[:, 1].max()
    spots = np.array([[-0.05, top, 0.0], [0.05, top, 0.0]])
    fixed = np.flatnonzero((np.linalg.norm(pts[:, None, :] - spots[None], axis=2) < 0.025).any(1))
    # The probe comes along +x; its tip starts on the blob's -x side, at mid height.
    tip = np.array([pts[:, 0].min(), 0.0, 0.0])
    grabbed = np.flatnonzero(np.linalg.norm(pts - tip, axis=1) < 0.04)
    mp = MassProperties.from_central_inertia(5.0, [0.0, 0.0, 0.0], np.diag([1e-2, 1e-2, 1e-2]))
    probe = MobilizedBody.Slider(matter.ground, Transform(p=tip), Body.Rigid(mp), Transform(), name="probe")
    decorate(probe, Decoration.Cylinder(0.006, 0.12, color=(0.55, 0.6, 0.7)), Transform(Rotation(np.pi / 2, [0, 1, 0]),
                                                                                          [-0.06, 0.0, 0.0]))
    decorate(probe, Decoration.Sphere(0.008, color=(0.55, 0.6, 0.7)))
    # Liver-like tissue, stiffened a little so that it hangs from two spots without tearing its mesh apart.
    liver = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, 3e4, 0.45, (2.0, 0.005), name="liver")
    liver.fix(fixed)
    for i in grabbed:
        liver.attach(int(i), probe, pts[i] - tip)
    Force.Custom(forces, ProbeDrive(kp=2e4, kd=600.0), name="probe_drive")
    decorate(matter.ground, Decoration.Sphere(0.006, color=(0.95, 0.3, 0.75)), Transform(p=spots[0]))
    decorate(matter.ground, Decoration.Sphere(0.006, color=(0.95, 0.3, 0.75)), Transform(p=spots[1]))
    state = system.realize_topology()
    system.realize_model(state)
    system.realize(state, Stage.Velocity)
    return system, probe, liver, state, len(tets), fixed, grabbed


def part_b(out_dir: Path) -> Path:
    print("(b) a liver hanging from two spots, poked and pulled by a rigid probe (implicit Euler, 10 ms)")
    system, probe, liver, state, n_tets, fixed, grabbed = liver_and_probe()
    print(f"  {liver.get_num_particles()} particles, {n_tets} tets, "
          f"{len(liver.get_surface_triangles())} surface triangles; {len(fixed)} fixed, {len(grabbed)} on the probe")
    # The probe's PD law is a rigid force element, explicit in the step: its h sqrt(kp / m) = 0.6 stays
    # well inside the explicit limit. A 1e-6 residual is far below what the replay can show.
    integ = ImplicitEulerIntegrator(system, 0.01, cg_tolerance=1e-6)
    wall = time.perf_counter()
    frames = record(system, integ, state, 3.0)
    wall = time.perf_counter() - wall
    x0 = liver.get_positions(frames[0])
    for t in (0.3, 1.3, 3.0):
        s = frames[int(round(t * FPS))]
        x = liver.get_positions(s)
        ref, _ = ProbeDrive.target(t)
        print(f"  t = {t:3.1f} s: probe at {1e3 * probe.get_one_q(s, 0):6.1f} mm (path {1e3 * ref:6.1f} mm); "
              f"blob's lowest point y = {1e3 * x[:, 1].min():6.1f} mm; largest move since t = 0: "
              f"{1e3 * np.linalg.norm(x - x0, axis=1).max():5.1f} mm")
    print(f"  {integ.get_num_steps_taken()} steps, {integ.get_num_cg_iterations()} CG iterations, {wall:.1f} s wall")
    path = export_html(frames, out_dir / "liver_probe.html", title="liver poked by a probe (implicit Euler, 10 ms)")
    print(f"  replay: {len(frames)} frames -> {path} ({path.stat().st_size / 1e3:.0f} kB)")
    return path


# ----------------------------------------------------------------------------- (c) cutting between steps
def part_c(out_dir: Path) -> Path:
    print("(c) a jelly bar hanging from its top face, cut through its middle at t = 0.5 s (implicit Euler, 5 ms)")
    system = MultibodySystem("cut_bar")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, G)
    pts, tets = box_tetrahedra(0.05, 0.3, 0.05, 1, 6, 1)
    pts[:, 1] -= 0.3  # hanging down from y = 0
    bar = DeformableBody.from_tetrahedra(system, pts, tets, 1000.0, 2e5, 0.3, (0.0, 0.01), name="bar")
    bar.fix(np.flatnonzero(pts[:, 1] == 0.0))
    state = system.realize_topology()
    system.realize(state, Stage.Velocity)
    stepper = TimeStepper(system, ImplicitEulerIntegrator(system, 0.005))
    stepper.initialize(state)
    stepper.step_to(0.5)
    before = stepper.get_state()
    x_cut, v_cut = bar.get_positions(before).copy(), bar.get_velocities(before).copy()
    n_surface = len(bar.get_surface_triangles())
    # The plane goes between two layers of nodes (through a layer of cells): a plane through nodes cuts nothing.
    system.request_change(lambda s: bar.cut([0.0, -0.175, 0.0], [0.0, 1.0, 0.0]))
    stepper.step_to(0.5)  # applies the change (between steps), then nothing to step
    after = stepper.get_state()
    system.realize(after, Stage.Velocity)
    same = np.array_equal(bar.get_positions(after), x_cut) and np.array_equal(bar.get_velocities(after), v_cut)
    print(f"  {len(tets)} tets -> {len(bar.get_tetrahedra())}; surface triangles {n_surface} -> "
          f"{len(bar.get_surface_triangles())}; every particle's position and velocity kept: {same}")
    lower = np.flatnonzero(pts[:, 1] < -0.175)
    m = bar.get_masses()[lower]
    v0 = m @ bar.get_velocities(after)[lower] / m.sum()
    frames = [after.copy()]
    for k in range(1, 13):
        stepper.step_to(0.5 + k / FPS)
        frames.append(stepper.get_state().copy())
    for s in frames:
        system.realize(s, Stage.Velocity)
    v1 = m @ bar.get_velocities(frames[-1])[lower] / m.sum()
    print(f"  the lower piece's centre: speed {v0[1]:+.3f} -> {v1[1]:+.3f} m/s over {12 / FPS:.2f} s "
          f"(free fall: {v0[1] + G[1] * 12 / FPS:+.3f} m/s)")
    path = export_html(frames, out_dir / "cut_bar.html", title="a hanging bar cut at t = 0.5 s")
    print(f"  replay: {len(frames)} frames -> {path} ({path.stat().st_size / 1e3:.0f} kB)")
    return path


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    part_a(out_dir)
    part_b(out_dir)
    part_c(out_dir)
    print("open the .html files in any browser: they need no network")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="simtk_")))
