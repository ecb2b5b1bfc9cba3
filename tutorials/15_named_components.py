"""Tutorial 15: named components, the OpenSim way of working.

Every element of a System is a component with a name and a path (``/matter/elbow``,
``/forces/biceps``). This script builds a two-link arm with named parts, then works with it only
through names and paths, as an OpenSim user does:

1. list the components and the state variables by path;
2. set the elbow angle by path and read outputs (the hand's position, the spring's tension, the
   system's energy);
3. simulate one second, recording the elbow angle and the spring tension from their outputs;
4. change the spring's stiffness by name (the existing State sees it at its next realize; a bad
   value is refused with the element's path and the reason) and run again;
5. add a damper in the middle of a run through a change request: the simulation goes on from a
   State migrated by path.

Run: ``python tutorials/15_named_components.py``
"""
from __future__ import annotations

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    RungeKuttaMersonIntegrator,
    ScheduledEventHandler,
    SimbodyMatterSubsystem,
    Stage,
    TimeStepper,
    Transform,
)

LINK = 0.3  # m


def build_arm():
    """Shoulder and elbow pins in the vertical plane, gravity, and a spring from the shoulder to the forearm."""
    system = MultibodySystem(name="arm")
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0], name="gravity")
    segment = Body.Rigid(MassProperties.from_central_inertia(1.5, [0, -LINK / 2, 0],
                                                             Inertia([0.012, 0.001, 0.012])))
    upper = MobilizedBody.Pin(matter.ground, Transform(), segment, Transform(), name="upper_arm")
    MobilizedBody.Pin(upper, Transform([0, -LINK, 0]), segment, Transform(), name="forearm")
    Force.TwoPointLinearSpring(forces, matter.ground, [0.05, 0, 0], matter.get_component("forearm"),
                               [0, -0.1, 0], 200.0, 0.2, name="biceps")
    return system


def simulate(system, state, t_final: float, every: float = 0.25):
    """Integrate and record the elbow angle and the biceps tension, read from outputs by path."""
    elbow = system.get_component("/matter/forearm").get_output("angle")
    tension = system.get_component("/forces/biceps").get_output("tension")
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    stepper = TimeStepper(system, integ)
    stepper.initialize(state)
    rows = []
    t = state.get_time()
    while t < t_final - 1e-12:
        t = min(t + every, t_final)
        stepper.step_to(t)
        s = stepper.get_state()
        system.realize(s, Stage.Velocity)
        rows.append((s.get_time(), elbow.get_value(s), tension.get_value(s)))
    return stepper.get_state(), rows


def show(rows, title):
    print(title)
    print(f"  {'t (s)':>6} {'elbow angle (rad)':>18} {'biceps tension (N)':>19}")
    for t, angle, f in rows:
        print(f"  {t:6.2f} {angle:18.6f} {f:19.4f}")


class AddDamperAt(ScheduledEventHandler):
    """At ``t``, ask for a damper at the elbow: a structural change, applied between steps."""

    def __init__(self, t):
        self.t = t

    def get_next_event_time(self, state, include_current_time):
        now = state.get_time()
        return self.t if now < self.t or (include_current_time and now == self.t) else np.inf

    def handle_event(self, state, accuracy):
        def add_damper(system):
            forces, forearm = system.get_component("/forces"), system.get_component("/matter/forearm")
            Force.MobilityLinearDamper(forces, forearm, 0, 2.0, name="elbow_damper")

        self.get_root().request_change(add_damper)
        return False


def main() -> None:
    system = build_arm()
    print("components:")
    for c in system.get_subcomponents():
        print(f"  {c.get_absolute_path():24s} {type(c).__qualname__}")
    print("state variables:", ", ".join(system.get_state_variable_names()))

    state = system.realize_topology()
    system.set_state_variable_value(state, "/matter/upper_arm/angle", 0.4)
    system.set_state_variable_value(state, "/matter/forearm/angle", 1.2)  # bend the elbow by path
    system.realize(state, Stage.Velocity)
    X_GF = system.get_component("/matter/forearm").get_output("transform").get_value(state)
    hand = X_GF.p + X_GF.R.matrix @ [0.0, -LINK, 0.0]
    print(f"elbow at {np.round(X_GF.p, 4).tolist()} m, hand at {np.round(hand, 4).tolist()} m; "
          f"biceps tension {system.get_component('/forces/biceps').get_output('tension').get_value(state):.3f} N; "
          f"energy {system.get_output('kinetic_energy').get_value(state) + system.get_output('potential_energy').get_value(state):.4f} J")

    start = state.copy()
    _, first = simulate(system, state.copy(), 1.0)
    show(first, "stiffness 200 N/m:")

    biceps = system.find_component("biceps")
    try:
        biceps.set_property("stiffness", -5.0)
    except ValueError as e:
        print(f"refused: {e}")
    biceps.set_property("stiffness", 800.0)
    print(f"properties of {biceps.get_absolute_path()}: "
          + ", ".join(f"{n}={np.round(biceps.get_property(n), 3).tolist()}" for n in biceps.get_property_names()))
    _, second = simulate(system, start.copy(), 1.0)
    show(second, "stiffness 800 N/m (the same start State, realized again):")
    assert second[-1][1] != first[-1][1]

    system.add_event_handler(AddDamperAt(0.5))
    run = system.realize_topology()
    run.set_y(start.get_y())  # same layout: the handler changed only the event list
    end, third = simulate(system, run, 1.5)
    show(third, "a damper added at the elbow at t = 0.5 s by a change request:")
    print("after the change:", ", ".join(c.get_absolute_path() for c in system.get_component("/forces")
                                          .get_child_components()))


if __name__ == "__main__":
    main()
