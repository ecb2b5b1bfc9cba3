"""Tutorial 19: save a model and a State, load both, and resume the simulation bitwise.

A long simulation is often stopped and continued later, or handed to someone else. simtk keeps
the two halves apart, as Simbody does: the *model* (bodies, joints, forces, constraints and their
parameters) goes to a text file written by ``simtk.io.save_model``; the *State* (time, q, u, z
and the discrete variables) goes to a ``.npz`` snapshot written by ``simtk.io.save_state``. The
integrator carries one thing more from step to step, its predicted step size (its
*continuation*): ``save_state(state, path, integrator=integ)`` saves it beside the State and
``integ.set_continuation(load_continuation(path))`` gives it to the new integrator, without which
the resumed run restarts its step-size control and differs at the accuracy's level. This script

1. builds a double pendulum with a spring, a damper and a rod constraint, and simulates it;
2. saves the model, the State and the integrator's continuation halfway, and prints the start of
   the model file;
3. continues the same run to the end (the reference, never interrupted);
4. loads the model into a new System, the State into it and the continuation into a new
   integrator, and runs the second half;
5. checks that the resumed run equals the uninterrupted one bit for bit.

Run: ``python tutorials/19_save_and_resume.py``
"""
from __future__ import annotations

import pathlib
import tempfile

import numpy as np

from simtk import (
    Body,
    Constraint,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    SimbodyMatterSubsystem,
    TimeStepper,
    Transform,
)
from simtk.io import load_continuation, load_model, load_state, save_model, save_state

LINK = 0.5  # m


def build():
    """A pin and a ball in a chain, gravity, a spring to the wall, global damping, and a rod to a slider."""
    system = MultibodySystem(name="pendulum")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity")
    link = Body.Rigid(MassProperties.from_central_inertia(1.0, [0, -LINK / 2, 0], Inertia([0.02, 0.002, 0.02])))
    upper = MobilizedBody.Pin(matter.ground, link, name="upper")
    lower = MobilizedBody.Ball(upper, Transform([0, -LINK, 0]), link, Transform(), name="lower")
    slider = MobilizedBody.Slider(matter.ground, Transform([0, -1.2, 0]), link, Transform(), name="cart")
    Force.TwoPointLinearSpring(forces, matter.ground, [0.4, 0, 0], lower, [0, -LINK, 0], 30.0, 0.3, name="spring")
    Force.GlobalDamper(forces, matter, 0.05, name="damping")
    Constraint.Rod(lower, [0, -LINK, 0], slider, [0, 0, 0], 0.5, name="rod")
    return system


def start_state(system):
    state = system.realize_topology()
    system.set_state_variable_value(state, "/matter/upper/angle", 0.6)
    system.set_state_variable_value(state, "/matter/lower/u1", 1.5)
    system.project(state, 1e-12)  # onto the rod constraint
    return state


def stepper_for(system, state, continuation=None):
    """A TimeStepper with RK-Merson at accuracy 1e-8, started at ``state`` (and at ``continuation``)."""
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    stepper = TimeStepper(system, integ)
    stepper.initialize(state)
    if continuation is not None:
        integ.set_continuation(continuation)
    return stepper


def run(stepper, t_end: float, dt: float = 0.05):
    """Step to ``t_end`` reporting every ``dt``; returns the rows (t, y)."""
    rows = []
    t = stepper.get_time()
    while t < t_end - 1e-12:
        t = min(t + dt, t_end)
        stepper.step_to(t)
        rows.append(np.concatenate([[stepper.get_time()], stepper.get_state().get_y()]))
    return np.array(rows)


def main() -> None:
    system = build()
    stepper = stepper_for(system, start_state(system))
    run(stepper, 0.5)

    with tempfile.TemporaryDirectory() as tmp:
        model_path, state_path = pathlib.Path(tmp) / "pendulum.simtk", pathlib.Path(tmp) / "halfway.npz"
        save_model(system, model_path)
        save_state(stepper.get_state(), state_path, integrator=stepper.get_integrator())
        reference = run(stepper, 1.0)  # the same run, never interrupted
        text = model_path.read_text()
        print(f"model file ({len(text.splitlines())} lines), first lines:")
        for line in text.splitlines()[:12]:
            print("   ", line)
        loaded = load_model(model_path)
        resumed_state = load_state(loaded, state_path)
        continuation = load_continuation(state_path)
    resumed = run(stepper_for(loaded, resumed_state, continuation), 1.0)

    same = reference.shape == resumed.shape and np.array_equal(reference, resumed)
    print(f"resumed at t = {resumed_state.get_time():.2f} s in a System read from the file")
    print(f"final angle of the upper link: reference {reference[-1, 1]:.12f}, resumed {resumed[-1, 1]:.12f}")
    print(f"bitwise equal over {len(reference)} reports: {same}")
    if not same:
        raise SystemExit("the resumed run differs from the uninterrupted one")


if __name__ == "__main__":
    main()
