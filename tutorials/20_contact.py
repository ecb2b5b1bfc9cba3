"""Tutorial 20: a quadruped standing on the ground on compliant contact, then collapsing.

The Solo-12 quadruped of the example-robot-data package is loaded from its URDF with a floating
base (`simtk.io.load_urdf(..., floating_base=True)`). Its collision geometry is given as meshes,
which simtk's contact does not handle, so the script stands in simple shapes sized from those
meshes' bounding boxes:

- a sphere of radius 16 mm at each foot frame (the foot mesh is a 32 mm wheel around that frame);
- a sphere of the same radius at each knee (the origin of each lower-leg frame);
- an ellipsoid on the base with the base mesh's half-extents, 224 x 110 x 26.5 mm (a box would lie
  flat on the flat floor, and the Hertz law needs a finite radius of curvature on one side).

They touch a ``ContactGeometry.HalfSpace`` on Ground. Simbody's half-space fills ``x > 0`` of its
own frame (outward normal ``-x``), so its frame is turned by +90 degrees about y, which carries
its x axis onto Ground's -z: the floor fills z < 0 and pushes along +z. All the robot's surfaces
share clique 0, so that they only touch the floor, never each other.

``Force.HuntCrossley`` gives each contact Hertz stiffness with Hunt-Crossley damping and Stribeck
friction. The stiffness (1e7, Simbody's units: the pair's k' = k^(2/3)/2) sinks each foot about
half a millimetre under a quarter of the robot's weight; the dissipation (2 s/m) damps the landing
in a few tens of milliseconds; friction is rubber on concrete-like (static 1.0, dynamic 0.8, the
URDF's ``lateral_friction``), with Simbody's Stribeck transition speed of 1 cm/s: below it the
feet creep (the model's friction is viscous there), by about 2 mm/s under the legs' outward push;
the summary prints how far.

A PD controller on the twelve joints holds the SRDF's ``straight_standing`` pose (no gravity
compensation: with the feet on the ground, gravity's joint torques of a fixed-base arm are not
what the legs carry; the PD's small steady-state sag carries the weight instead). After one second
the motors are switched off (a second controller, damping only, takes over, like motors whose
drivers are disabled) and the robot collapses onto its belly and knees.

An `OutputProbe` records, every 5 ms, the Hunt-Crossley element's outputs: its ``dissipated_power``
and, from its ``contacts`` output (one `ContactReport` per contact), the total vertical force and the
number of contacts (two `Output` objects derived from it), along with the base's position. The
summary compares the vertical contact force with the robot's weight while standing.

Integrator: SemiExplicitEuler2 (first order, error-controlled) at accuracy 1e-3. While the robot
stands, the step size is set by stability rather than accuracy: below the transition speed the
friction acts as a viscous damper of slope mu N / vt (about 600 N s/m per foot) on a light foot,
which an explicit method follows only with steps of a fraction of a millisecond. At such steps a
method with two realizations per step beats RK-Merson's five or six: the first second takes
30 032 realizations here and 42 130 with RK-Merson at the same accuracy, for the same standing
ratio to 1e-4. The driver step (when the controllers act) is 1 ms.

Run: ``python tutorials/20_contact.py`` (needs the ``example-robot-data`` package: ``pip install
example-robot-data``).
"""
from __future__ import annotations

import importlib.metadata
import math
import warnings
from pathlib import Path

import numpy as np

from simtk import ContactGeometry, Force, Rotation, SemiExplicitEuler2Integrator, Stage, Transform
from simtk.common.output import Output
from simtk.io import load_urdf
from simtk.simulation import OutputProbe, PDController, Simulation

FOOT_RADIUS = 0.016  # m: the foot mesh's half-extent
CLEARANCE = 0.001  # m: the feet start this far above the floor
BASE_HALF = (0.2241, 0.1095, 0.0265)  # m: the base mesh's half-extents
BASE_CENTRE = (0.0, 0.0, 0.0015)  # m: the base mesh's centre in the base frame
CONTACT = dict(stiffness=1e7, dissipation=2.0, static_friction=1.0, dynamic_friction=0.8, viscous_friction=0.0)
#: ``straight_standing`` of the robot's SRDF (rad)
STANDING = {f"{leg}_{j}": v for leg, sign in (("FL", 1), ("FR", 1), ("HL", -1), ("HR", -1))
            for j, v in (("HAA", 0.0), ("HFE", 0.8 * sign), ("KFE", -1.6 * sign))}


def solo_file() -> Path | None:
    """Solo-12's URDF in the installed example-robot-data package, or None."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/solo_description/robots/solo12.urdf"))
    return path if path.is_file() else None


def build(path: Path):
    """The robot with its contact surfaces and the floor: (model, Hunt-Crossley element)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the meshes: not needed here
        robot = load_urdf(path, floating_base=True)
    hc = Force.HuntCrossley(robot.forces, transition_velocity=0.01, name="contact")
    floor = Transform(Rotation(math.pi / 2, [0.0, 1.0, 0.0]))  # x -> -z: the floor fills z < 0
    hc.add_surface(robot.matter.ground, ContactGeometry.HalfSpace(), floor, **CONTACT)
    sphere = ContactGeometry.Sphere(FOOT_RADIUS)
    for leg in ("FL", "FR", "HL", "HR"):
        # each link is a body (its frame the body's), the foot welded to its lower leg
        hc.add_surface(robot.bodies[f"{leg}_FOOT"], sphere, clique=0, **CONTACT)
        hc.add_surface(robot.bodies[f"{leg}_LOWER_LEG"], sphere, clique=0, **CONTACT)  # the knee
    hc.add_surface(robot.root, ContactGeometry.Ellipsoid(BASE_HALF), Transform(p=BASE_CENTRE), clique=0, **CONTACT)
    return robot, hc


def vertical_force_output(hc) -> Output:
    """Total vertical force of the contacts on the robot: the sum over the element's ``contacts``."""
    contacts = hc.get_output("contacts")

    def total(state) -> float:
        # each report's force acts on its body 2; the floor (on Ground) is surface 0, so when it is
        # body 1 the robot gets the report's force, and its opposite otherwise
        return float(sum(r.force[2] if r.surface1 == 0 else -r.force[2] for r in contacts.get_value(state)))

    return Output(hc, "vertical_force", total, Stage.Velocity, float, "sum of the contacts' vertical forces on the robot")


def count_output(hc) -> Output:
    """Number of contacts: the length of the element's ``contacts``."""
    contacts = hc.get_output("contacts")
    return Output(hc, "num_contacts", lambda state: float(len(contacts.get_value(state))), Stage.Velocity, float,
                  "number of contacts")


def main(t_stand: float = 1.0, t_fall: float = 1.5, verbose: bool = True) -> dict | None:
    """Stand for ``t_stand`` s, then fall for ``t_fall`` s; returns the summary's numbers (None
    without example-robot-data)."""
    path = solo_file()
    if path is None:
        print("example-robot-data is not installed: pip install example-robot-data")
        return None
    robot, hc = build(path)
    state = robot.default_state()
    for joint, q in STANDING.items():
        robot.joints[joint].set_one_q(state, 0, q)
    # the base's height: the feet's lowest points CLEARANCE above the floor
    robot.system.realize(state, Stage.Position)
    feet = [robot.bodies[f"{leg}_FOOT"] for leg in ("FL", "FR", "HL", "HR")]
    z_feet = min(foot.get_body_transform(state).p[2] for foot in feet)  # the foot frames are the bodies'
    q_base = robot.root.get_q(state).copy()  # [quaternion, position]
    q_base[6] += -z_feet + FOOT_RADIUS + CLEARANCE
    robot.root.set_q(state, q_base)
    mass = robot.matter.calc_system_mass(state)
    weight = mass * float(np.linalg.norm(robot.gravity.get_gravity()))
    if verbose:
        print(f"loaded {robot.name!r}: {len(robot.bodies)} links, {state.get_nu()} degrees of freedom, "
              f"{mass:.3f} kg (weight {weight:.3f} N); {hc.get_num_surfaces()} contact surfaces")

    integ = SemiExplicitEuler2Integrator(robot.system)
    integ.set_accuracy(1e-3)
    sim = Simulation(robot.system, state, integrator=integ, step_size=0.001)
    angles = {j: f"{robot.joints[j].get_absolute_path()}/angle" for j in STANDING}
    # plain joint gains (N m/rad, N m s/rad), of the order of Solo's own; the knee's inertia
    # (5e-4 kg m^2) makes kd * step / I = 0.3 per 1 ms driver step: well inside the zero-order
    # hold's stability limit of 2
    hold = sim.add_controller(PDController({a: (6.0, 0.15) for a in angles.values()},
                                           {angles[j]: q for j, q in STANDING.items()}), name="hold")
    # the motors switched off: their drivers leave only a little damping (no stiffness)
    limp = sim.add_controller(PDController({a: (0.0, 0.01) for a in angles.values()},
                                           {a: 0.0 for a in angles.values()}), name="limp")
    limp.set_active(False)
    base = robot.root.get_absolute_path()
    probe = sim.add_output_probe(OutputProbe(
        [vertical_force_output(hc), count_output(hc), hc.get_output("dissipated_power"), f"{base}|position"]
        + [f"{foot.get_absolute_path()}|position" for foot in feet] + ["/|momentum"], interval=0.005), name="contact_forces")

    standing = sim.run(t_stand)
    hold.set_active(False)
    limp.set_active(True)
    falling = sim.run(t_stand + t_fall)

    t, _ = probe.to_numpy()
    fz = probe.column(f"{hc.get_absolute_path()}|vertical_force")
    n = probe.column(f"{hc.get_absolute_path()}|num_contacts")
    power = probe.column(f"{hc.get_absolute_path()}|dissipated_power")
    z = probe.column(f"{base}|position[2]")
    stand = (t >= 0.5 * t_stand) & (t <= t_stand)  # after the landing has settled
    # how far each foot slid over the settled stance (its horizontal displacement)
    slid = []
    for foot in feet:
        xy = np.array([probe.column(f"{foot.get_absolute_path()}|position[{k}]")[stand] for k in (0, 1)])
        slid.append(float(np.hypot(*(xy[:, -1] - xy[:, 0]))))
    drift = max(slid)
    stand_window = t[stand][-1] - t[stand][0]
    out = dict(ratio=float(fz[stand].mean() / weight), ratio_min=float(fz[stand].min() / weight),
               ratio_max=float(fz[stand].max() / weight), standing_contacts=(int(n[stand].min()), int(n[stand].max())),
               z_standing=float(z[stand].mean()), z_start=float(z[0]), z_final=float(z[-1]),
               final_contacts=int(n[-1]), final_ratio=float(fz[-1] / weight), foot_creep=drift / stand_window,
               max_dissipated_power=float(power.max()), wall_seconds=standing.wall_seconds + falling.wall_seconds,
               weight=weight, t=t, fz=fz, pz=probe.column("/|momentum[5]"), stand=stand,
               final_reports=hc.get_contact_reports(sim.get_state()), final_R=robot.root.get_body_transform(sim.get_state()).R)
    if verbose:
        print(f"standing: {standing}")
        print(f"falling:  {falling}")
        print(f"{'t (s)':>6} {'contacts':>8} {'Fz (N)':>8} {'Fz/weight':>9} {'base z (m)':>10} {'dissipated (W)':>14}")
        for k in range(0, len(t), 50):
            print(f"{t[k]:6.2f} {int(n[k]):8d} {fz[k]:8.3f} {fz[k] / weight:9.4f} {z[k]:10.4f} {power[k]:14.4f}")
        print(f"standing ({0.5 * t_stand:g} to {t_stand:g} s): vertical contact force / weight = {out['ratio']:.4f} "
              f"on average (from {out['ratio_min']:.4f} to {out['ratio_max']:.4f}), "
              f"{n[stand].min():.0f} to {n[stand].max():.0f} contacts, base at {out['z_standing']:.4f} m, "
              f"feet creeping at most {1e3 * out['foot_creep']:.2f} mm/s")
        print(f"motors off at {t_stand:g} s; after the fall ({t[-1]:g} s): base at {out['z_final']:.4f} m "
              f"(it dropped {out['z_standing'] - out['z_final']:.4f} m), {out['final_contacts']} contacts "
              f"(feet, knees, belly), force / weight = {out['final_ratio']:.4f}")
        print(f"wall time: {out['wall_seconds']:.1f} s")
    return out


if __name__ == "__main__":
    main()
