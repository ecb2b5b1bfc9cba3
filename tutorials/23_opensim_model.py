"""Tutorial 23: an OpenSim model, addressed by OpenSim's names, driven, recorded and plotted.

OpenSim's Arm26 (a shoulder and an elbow; its six muscles are not built by simtk and are listed
in one warning) is read with ``simtk.io.load_osim``. On the loaded model OpenSim's paths work as
in OpenSim:

- every Coordinate is a component at ``/jointset/<joint>/<coordinate>``, with state variables
  ``value`` and ``speed`` (views of its mobilizer's q and u) and outputs ``value``, ``speed`` and
  ``acceleration``;
- ``/bodyset/<body>`` and ``/ground`` lead to the mobilized bodies.

The script lists the coordinates by OpenSim path, checks the accelerations against OpenSim's at a
few random states (when ``opensim`` is installed), then simulates 3 s: a PD controller makes the
elbow follow a sinusoid, an input probe pushes the shoulder with a torque pulse, and an output
probe records the coordinates' outputs and the hand's position. The recording is written as CSV
and plotted (matplotlib, Agg backend) to a PNG.

The model comes from OpenSim's published models (``$SIMTK_OPENSIM_MODELS``, or a local mirror of
opensim-org/opensim-models, through ``tests/osim_published.py``); without them, an arm with the
same names is written with OpenSim's Python API; without either, the script says so and stops.

Run: ``python tutorials/23_opensim_model.py [output folder]`` (default: a temporary folder).
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from simtk import Function, Stage
from simtk.io import load_osim
from simtk.simulation import InputProbe, OutputProbe, PDController, Simulation

ROOT = Path(__file__).resolve().parent.parent
SHOULDER = "/jointset/r_shoulder/r_shoulder_elev"
ELBOW = "/jointset/r_elbow/r_elbow_flex"
HAND = "/bodyset/r_ulna_radius_hand"


class ElbowTarget(Function):
    """The elbow's target angle, 1 + 0.5 sin(pi t) rad (inside Arm26's elbow range [0, 2.27])."""

    def calc_value(self, x):
        return 1.0 + 0.5 * np.sin(np.pi * x[0])

    def calc_derivative(self, deriv_components, x):
        # the PD controller asks for the first derivative (its qdot target)
        n = len(deriv_components)
        return 0.5 * np.pi ** n * np.sin(np.pi * x[0] + n * np.pi / 2)

    def get_argument_size(self):
        return 1

    def get_max_derivative_order(self):
        return 2


def _opensim():
    try:
        import opensim
    except ImportError:
        return None
    opensim.Logger.setLevelString("off")
    return opensim


def published_arm() -> Path | None:
    """Arm26 from OpenSim's published models, when this machine has them."""
    if not (ROOT / "tests" / "osim_published.py").is_file():
        return None
    sys.path.insert(0, str(ROOT / "tests"))
    from osim_published import published_model

    return published_model("Arm26/arm26.osim", skip=False)


def written_arm(osim, out_dir: Path) -> Path:
    """A two-link arm with Arm26's names, written by OpenSim's API."""
    V = osim.Vec3
    model = osim.Model()
    model.setName("arm")
    humerus = osim.Body("r_humerus", 1.86, V(0, -0.165, 0), osim.Inertia(0.0132, 0.0020, 0.0132))
    forearm = osim.Body("r_ulna_radius_hand", 1.53, V(0, -0.181, 0), osim.Inertia(0.0199, 0.0014, 0.0204))
    model.addBody(humerus)
    model.addBody(forearm)
    model.addJoint(osim.PinJoint("r_shoulder", model.getGround(), V(-0.017, -0.036, 0.17), V(0, 0, 0),
                                 humerus, V(0, 0, 0), V(0, 0, 0)))
    model.addJoint(osim.PinJoint("r_elbow", humerus, V(0.006, -0.286, -0.012), V(0, 0, 0),
                                 forearm, V(0, 0, 0), V(0, 0, 0)))
    model.getCoordinateSet().get(0).setName("r_shoulder_elev")
    model.getCoordinateSet().get(1).setName("r_elbow_flex")
    model.finalizeConnections()
    path = out_dir / "arm.osim"
    model.printToXML(str(path))
    return path


def check_against_opensim(osim, path: Path, model, n: int = 3) -> float:
    """The largest relative difference of the coordinates' accelerations from OpenSim's at ``n``
    random states; values are written in simtk by OpenSim path and in OpenSim by name."""
    om = osim.Model(str(path))
    for i in range(om.getForceSet().getSize()):  # what simtk did not build (the muscles) is off there too
        f = om.getForceSet().get(i)
        if f.getName() not in model.force_elements:
            f.set_appliesForce(False)
    s = om.initSystem()
    state = model.initial_state()
    cs = om.getCoordinateSet()
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(n):
        for i in range(cs.getSize()):
            c = cs.get(i)
            q, u = (float(x) for x in rng.uniform(-1, 1, 2))
            c.setValue(s, q, False)
            c.setSpeedValue(s, u)
            model.system.set_state_variable_value(state, c.getAbsolutePathString() + "/value", q)
            model.system.set_state_variable_value(state, c.getAbsolutePathString() + "/speed", u)
        om.realizeAcceleration(s)
        model.system.realize(state, Stage.Acceleration)
        theirs = np.array([cs.get(i).getAccelerationValue(s) for i in range(cs.getSize())])
        ours = np.array([model.system.get_component(cs.get(i).getAbsolutePathString())
                         .get_acceleration_value(state) for i in range(cs.getSize())])
        worst = max(worst, float(np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max())))
    return worst


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    osim = _opensim()
    path = published_arm()
    if path is None:
        if osim is None:
            print("tutorial 23 skipped: neither OpenSim's published models (set SIMTK_OPENSIM_MODELS) nor the "
                  "opensim package (to write a model) is available here")
            return
        path = written_arm(osim, out_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_osim(path)
    print(f"loaded {path.name}: {len(model.coordinates)} coordinates; "
          f"{len(model.warnings)} element(s) not built{' (one warning)' if caught else ''}")

    system = model.system
    state = model.initial_state()
    print(f"{'OpenSim path':40s} {'value':>8s} {'range':>17s}")
    for c in system.get_component("/jointset").get_subcomponents():
        if hasattr(c, "get_value"):
            print(f"{c.get_absolute_path():40s} {c.get_value(state):8.4f} "
                  f"[{c.get_range_min():7.3f}, {c.get_range_max():6.3f}]")
    print(f"{HAND} is {system.get_component(HAND)!r}")

    if osim is not None:
        print(f"accelerations vs OpenSim at 3 random states: max relative difference "
              f"{check_against_opensim(osim, path, model):.1e}")

    # This arm is driven by a PD controller on its elbow: its muscles (tutorial 24's subject) are
    # switched off, as OpenSim's appliesForce = false does.
    for muscle in model.muscles.values():
        muscle.disable(state)
    target = ElbowTarget()
    # Start on the target, set by OpenSim path (as OpenSim's setStateVariableValue).
    system.set_state_variable_value(state, ELBOW + "/value", target.calc_value([0.0]))
    system.set_state_variable_value(state, ELBOW + "/speed", target.calc_derivative([0], [0.0]))
    sim = Simulation(system, state, step_size=0.005)
    gravity = model.force_elements["gravity"][0]
    sim.add_controller(PDController({ELBOW + "/value": (900.0, 60.0)}, {ELBOW + "/value": target},
                                    gravity=gravity, inertia_weighted=True), name="elbow_pd")
    # a torque pulse on the shoulder (N m), written into the generalized force of its speed
    sim.add_input_probe(InputProbe(SHOULDER + "/speed", [0.0, 0.5, 1.0, 1.5], [0.0, 3.0, 3.0, 0.0],
                                   interpolation="linear"), name="shoulder_torque")
    columns = [ELBOW + "|value", ELBOW + "|speed", ELBOW + "|acceleration", SHOULDER + "|value", HAND + "|position"]
    probe = sim.add_output_probe(OutputProbe(columns, interval=0.01), name="recording")
    print(sim.run(3.0))

    t = probe.to_numpy()[0]
    elbow = probe.column(ELBOW + "|value")
    err = elbow - np.array([target.calc_value([x]) for x in t])
    print(f"{len(t)} samples; elbow tracking error after 1 s: max {np.abs(err[t >= 1.0]).max():.2e} rad; "
          f"shoulder swung to {probe.column(SHOULDER + '|value').max():.3f} rad")
    print(f"{'t':>5} {'shoulder':>9} {'elbow':>8} {'target':>8}")
    for k in range(0, len(t), 60):
        print(f"{t[k]:5.2f} {probe.column(SHOULDER + '|value')[k]:9.4f} {elbow[k]:8.4f} "
              f"{target.calc_value([t[k]]):8.4f}")

    probe.to_csv(out_dir / "arm26.csv")
    print(f"wrote {out_dir / 'arm26.csv'}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'simtk[plot]'): no plot")
        return
    fig, ax = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    ax[0].plot(t, elbow, label="r_elbow_flex")
    ax[0].plot(t, [target.calc_value([x]) for x in t], "--", label="target")
    ax[0].plot(t, probe.column(SHOULDER + "|value"), label="r_shoulder_elev")
    ax[0].set_ylabel("value (rad)")
    ax[0].legend()
    ax[1].plot(t, probe.column(ELBOW + "|acceleration"), label="r_elbow_flex acceleration")
    ax[1].set_ylabel("rad/s²")
    ax[1].set_xlabel("t (s)")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(out_dir / "arm26.png", dpi=100)
    plt.close(fig)
    print(f"wrote {out_dir / 'arm26.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="simtk_")))
