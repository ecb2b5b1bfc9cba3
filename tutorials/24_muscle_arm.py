"""Tutorial 24: an arm driven by its muscles; muscle forces recorded, plotted and replayed with the paths.

OpenSim's Arm26 (a shoulder and an elbow, six muscles: three triceps heads, two biceps heads and the
brachialis, Thelen2003Muscle, wrapping over cylinders and ellipsoids at the shoulder and elbow) is read with
``simtk.io.load_osim``; its muscles are simtk elements (``model.muscles``, by OpenSim name) with
their ``activation`` and ``fiber_length`` state variables (a simtk that does not build a muscle
says so and the script drives the others).

The script equilibrates the fibers, then simulates 1.5 s while input probes write an excitation pattern into
four of the muscles (the named input ``<muscle path>:excitation``): the short biceps and the brachialis fire
first, then the lateral and medial triceps; the long heads rest. An output probe records each muscle's
``tendon_force`` and ``activation_value`` and the elbow angle; the recording is written as CSV, plotted
(matplotlib, Agg backend) to a PNG, and the motion is written as an HTML replay (``simtk.viz.export_html``) in
which each muscle is drawn along its path (through its points and around its wrap cylinders), coloured by its
activation from blue (0) to red (1).

The model comes from OpenSim's published models (``$SIMTK_OPENSIM_MODELS``, or a local mirror of
opensim-org/opensim-models, through ``tests/osim_published.py``); without them the script says so
and stops.

Run: ``python tutorials/24_muscle_arm.py [output folder]`` (default: a temporary folder).
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from simtk import Stage
from simtk.io import load_osim
from simtk.simulation import InputProbe, OutputProbe, Simulation, StatesTrajectory
from simtk.viz import Decoration, decorate, export_html

ROOT = Path(__file__).resolve().parent.parent
ELBOW = "/jointset/r_elbow/r_elbow_flex"
# The muscles driven: BIClong and TRIlong, whose paths wrap over ellipsoids, stay at their resting
# excitation (the long triceps' path over its ellipsoid lengthens steeply past about 1.2 rad of elbow
# flexion, in OpenSim's WrapEllipsoid as here, which at a low activation strains its tendon hard).
FLEXORS = ("BICshort", "BRA")
EXTENSORS = ("TRIlat", "TRImed")
T_END = 1.5
HI_F, HOLD_F, HI_E = 0.12, 0.09, 0.3


def published_arm() -> Path | None:
    """Arm26 from OpenSim's published models, when this machine has them."""
    if not (ROOT / "tests" / "osim_published.py").is_file():
        return None
    sys.path.insert(0, str(ROOT / "tests"))
    from osim_published import published_model

    return published_model("Arm26/arm26.osim", skip=False)


def pattern(on: float, off: float, high: float, after: float, low: float = 0.05) -> tuple[list, list]:
    """Times and excitations (in [0, 1]) of a burst to ``high`` from ``on`` to ``off`` with 50 ms ramps,
    ``after`` it."""
    return [0.0, on, on + 0.05, off, off + 0.05, T_END], [low, low, high, high, after, after]


def draw_bones(model, state) -> None:
    """A line along each arm segment, from its joint to the next (the model's meshes are not read)."""
    humerus = model.system.get_component("/bodyset/r_humerus")
    forearm = model.system.get_component("/bodyset/r_ulna_radius_hand")
    X_GH = humerus.get_body_transform(state)
    elbow_in_h = X_GH.R.matrix.T @ (np.asarray(forearm.get_body_transform(state).p) - np.asarray(X_GH.p))
    grey = (0.55, 0.55, 0.55)
    decorate(humerus, Decoration.Line([0.0, 0.0, 0.0], elbow_in_h, color=grey))
    decorate(humerus, Decoration.Sphere(0.02, color=grey))
    decorate(forearm, Decoration.Sphere(0.02, color=grey))
    decorate(forearm, Decoration.Line([0.0, 0.0, 0.0], [0.0, -0.25, 0.0], color=grey))


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = published_arm()
    if path is None:
        print("tutorial 24 skipped: OpenSim's published models (Arm26) are not available here; set "
              "SIMTK_OPENSIM_MODELS to a copy of opensim-org/opensim-models")
        return
    with warnings.catch_warnings():
        # what simtk does not build (markers; in older versions the muscles over wrap ellipsoids) is
        # listed below, once
        warnings.simplefilter("ignore")
        model = load_osim(path)
    muscles = model.muscles
    print(f"loaded {path.name}: {len(model.coordinates)} coordinates, {len(muscles)} muscles: "
          f"{', '.join(muscles)}")
    missing = [n for n in FLEXORS + EXTENSORS if n not in muscles]
    if missing:
        print(f"not built by this simtk (and not driven): {', '.join(missing)}")
    system = model.system
    state = model.initial_state()
    for name in muscles:
        muscles[name].set_activation(state, 0.05)
        muscles[name].set_excitation(state, 0.05)
    system.realize(state, Stage.Velocity)
    model.equilibrate_muscles(state)
    print(f"{'muscle':10s} {'length (m)':>10s} {'fiber (m)':>10s} {'tendon force (N)':>17s} "
          f"{'elbow moment arm (m)':>21s}")
    system.realize(state, Stage.Velocity)
    for name, m in muscles.items():
        print(f"{name:10s} {m.get_length(state):10.4f} {m.get_fiber_length(state):10.4f} "
              f"{m.get_tendon_force(state):17.3f} {m.compute_moment_arm(state, 'r_elbow_flex'):21.4f}")
    draw_bones(model, state)

    sim = Simulation(system, state, step_size=0.002)
    # The flexors lift the forearm against gravity and then hold it; the triceps push it back down
    # against their hold. Weak bursts: Arm26 has no limit forces to keep the elbow within its range.
    for group, (on, off, high, after) in ((FLEXORS, (0.1, 0.6, HI_F, HOLD_F)), (EXTENSORS, (0.8, 1.2, HI_E, 0.05))):
        times, values = pattern(on, off, high, after)
        for name in (n for n in group if n in muscles):
            where = muscles[name].get_absolute_path()
            sim.add_input_probe(InputProbe(f"{where}:excitation", times, values, interpolation="linear"),
                                name=f"excite_{name}")
    columns = [ELBOW + "|value"]
    for name, m in muscles.items():
        columns += [f"{m.get_absolute_path()}|tendon_force", f"{m.get_absolute_path()}|activation_value"]
    probe = sim.add_output_probe(OutputProbe(columns, interval=0.01), name="recording")
    frames = sim.add_output_probe(StatesTrajectory(interval=1 / 60), name="frames")
    print(sim.run(T_END))

    t = probe.to_numpy()[0]
    elbow = probe.column(ELBOW + "|value")
    print(f"{len(t)} samples; elbow from {elbow[0]:.3f} rad, flexed to {elbow.max():.3f}, back to {elbow[-1]:.3f}")
    print(f"{'t':>5} {'elbow':>7} " + " ".join(f"{n:>8s}" for n in muscles))
    for k in range(0, len(t), 15):
        forces = [probe.column(f"{m.get_absolute_path()}|tendon_force")[k] for m in muscles.values()]
        print(f"{t[k]:5.2f} {elbow[k]:7.3f} " + " ".join(f"{f:8.1f}" for f in forces))

    probe.to_csv(out_dir / "muscle_arm.csv")
    print(f"wrote {out_dir / 'muscle_arm.csv'}")
    replay = export_html(frames, out_dir / "muscle_arm.html", title="Arm26 driven by its muscles")
    print(f"wrote {replay} ({len(frames)} frames; the muscles drawn along their paths, blue relaxed to red active)")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'simtk[plot]'): no plot")
        return
    fig, ax = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    for name, m in muscles.items():
        style = "-" if name in FLEXORS else "--"
        ax[0].plot(t, probe.column(f"{m.get_absolute_path()}|activation_value"), style, label=name)
        ax[1].plot(t, probe.column(f"{m.get_absolute_path()}|tendon_force"), style, label=name)
    ax[0].set_ylabel("activation")
    ax[0].legend(ncol=3, fontsize=8)
    ax[1].set_ylabel("tendon force (N)")
    ax[2].plot(t, elbow)
    ax[2].set_ylabel("elbow flexion (rad)")
    ax[2].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(out_dir / "muscle_arm.png", dpi=100)
    plt.close(fig)
    print(f"wrote {out_dir / 'muscle_arm.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="simtk_")))
