"""A double pendulum: the Python twin of the example in Simbody's README.

Two unit-mass bodies hang one below the other from Pin joints, 1 m apart; the lower one starts
swinging at 5 rad/s. The system is simulated for 20 s with the Runge-Kutta-Merson integrator,
printing the angles and the total energy, which gravity and the joints conserve: its drift shows
the integrator's accuracy.

Run: ``python tutorials/03_double_pendulum.py``
"""
from simtk import (
    Body,
    Force,
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


def build():
    # Define the system.
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.8)

    # Mass properties of a generic body: 1 kg, mass center at the origin, unit inertia.
    body_info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(1.0)))

    # The moving (mobilized) bodies: each hangs 1 m below its pin.
    pendulum1 = MobilizedBody.Pin(matter.ground, Transform([0, 0, 0]), body_info, Transform([0, 1, 0]))
    pendulum2 = MobilizedBody.Pin(pendulum1, Transform([0, 0, 0]), body_info, Transform([0, 1, 0]))
    return system, pendulum1, pendulum2


def main(final_time: float = 20.0) -> float:
    system, pendulum1, pendulum2 = build()

    # Initialize the system and state.
    state = system.realize_topology()
    pendulum2.set_rate(state, 5.0)
    system.realize(state, Stage.Velocity)
    energy0 = system.calc_energy(state)

    # Simulate, reporting once a second.
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    print(f"{'t (s)':>6} {'angle1 (rad)':>13} {'angle2 (rad)':>13} {'energy (J)':>12}")
    t = 0.0
    while t < final_time - 1e-12:
        t = min(t + 1.0, final_time)
        ts.step_to(t)
        s = ts.get_state()
        system.realize(s, Stage.Velocity)
        print(f"{s.get_time():6.1f} {pendulum1.get_angle(s):13.6f} {pendulum2.get_angle(s):13.6f} "
              f"{system.calc_energy(s):12.8f}")
    s = ts.get_state()
    system.realize(s, Stage.Velocity)
    drift = abs(system.calc_energy(s) - energy0) / abs(energy0)
    print(f"relative energy drift over {final_time:g} s: {drift:.2e} "
          f"({integ.get_num_steps_taken()} steps, {integ.get_num_realizations()} realizations)")
    return drift


if __name__ == "__main__":
    main()
