"""A one-coordinate knee from spline data: MobilizedBody.FunctionBased (seed §3.4).

A human knee has one degree of freedom, but the shank does not simply turn about a fixed pin: as
the knee flexes, the tibia rolls and slides on the femur, so its translation changes with the
flexion angle. MobilizedBody.FunctionBased models that with one generalized coordinate and no
constraint: six functions of the coordinates give three rotation angles (about X, Y, Z here) and
three translations (along X, Y, Z). Here

* the rotation about Z is the flexion angle itself (``Function.Linear([1, 0])`` of q0);
* the translations along X and Y are splines through tabulated data (the values below are in the
  style of the planar knee of Yamaguchi & Zajac (1989) used by OpenSim's gait models; treat them as
  illustrative);
* the other three functions are ``Function.Constant(0, 0)``, which take no coordinate.

The leg (a thigh on a hip Pin, the shank on the knee) swings under gravity for two seconds; the
total energy is conserved to the integrator's accuracy, which shows that the knee's H and HDot
(computed from the splines' derivatives) are consistent with its transform.
``simtk.testing.check_mobilizer`` confirms it directly.

Run: ``python tutorials/11_function_based_knee.py``
"""
import numpy as np

from simtk import (
    Body,
    Force,
    Function,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper
from simtk.testing import check_mobilizer

# Knee flexion angle (rad; negative is flexion) and the tibia origin's position in the femur frame (m).
KNEE_ANGLE = np.array([-2.0944, -1.74533, -1.39626, -1.0472, -0.698132, -0.349066, -0.174533, 0.0, 0.174533])
TIBIA_X = np.array([-0.0032, 0.00179, 0.00411, 0.0041, 0.00212, -0.001, -0.0031, -0.005227, -0.005435])
TIBIA_Y = np.array([-0.4226, -0.4082, -0.399, -0.3976, -0.3966, -0.395264, -0.396, -0.396, -0.3971])


def make_knee_functions():
    """The six functions of the knee and the coordinate each one takes."""
    zero = Function.Constant(0.0, 0)  # no argument: a constant needs no coordinate
    functions = [zero, zero, Function.Linear([1.0, 0.0]),  # rotations about X, Y, Z
                 Function.Spline(KNEE_ANGLE, TIBIA_X), Function.Spline(KNEE_ANGLE, TIBIA_Y), zero]  # X, Y, Z
    coord_indices = [[], [], [0], [0], [0], []]  # every moving function takes the one coordinate q0
    return functions, coord_indices


def build():
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.81)
    thigh_info = Body.Rigid(MassProperties.from_central_inertia(8.0, [0, -0.17, 0], Inertia([0.12, 0.03, 0.12])))
    shank_info = Body.Rigid(MassProperties.from_central_inertia(3.5, [0, -0.18, 0], Inertia([0.05, 0.006, 0.05])))
    hip = MobilizedBody.Pin(matter.ground, Transform([0, 1.0, 0]), thigh_info, Transform())
    functions, coord_indices = make_knee_functions()
    knee = MobilizedBody.FunctionBased(hip, shank_info, 1, functions, coord_indices)
    # The data cover flexion up to 120 degrees and 10 degrees of hyperextension: a stiff, undamped
    # stop keeps the knee in that range (it stores energy, so the total is still conserved).
    Force.MobilityLinearStop(forces, knee, 0, 2000.0, 0.0, KNEE_ANGLE[0] + 0.1, 0.0)
    return system, hip, knee


def main(final_time: float = 2.0) -> float:
    system, hip, knee = build()
    state = system.realize_topology()
    hip.set_q(state, [0.6])       # thigh swung forward
    knee.set_q(state, [-0.3])     # knee slightly flexed
    knee.set_u(state, [-1.0])
    system.realize(state, Stage.Velocity)
    print(check_mobilizer(knee, state, assert_ok=True).summary().splitlines()[0])
    energy0 = system.calc_energy(state)

    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    print(f"{'t (s)':>6} {'hip (rad)':>10} {'knee (rad)':>11} {'tibia x (mm)':>13} {'tibia y (mm)':>13} "
          f"{'energy (J)':>12}")
    for t in np.linspace(0.25, final_time, int(round(final_time / 0.25))):
        ts.step_to(t)
        s = ts.get_state()
        system.realize(s, Stage.Velocity)
        p = knee.get_mobilizer_transform(s).p * 1000
        print(f"{s.get_time():6.2f} {hip.get_one_q(s, 0):10.4f} {knee.get_one_q(s, 0):11.4f} {p[0]:13.3f} "
              f"{p[1]:13.3f} {system.calc_energy(s):12.7f}")
    s = ts.get_state()
    system.realize(s, Stage.Velocity)
    drift = abs(system.calc_energy(s) - energy0) / abs(energy0)
    print(f"relative energy drift: {drift:.2e} ({integ.get_num_steps_taken()} steps)")
    return drift


if __name__ == "__main__":
    main()
