"""Tutorial 10: assembly -- closing a loop from a bad guess and fitting markers.

``Assembler(system)`` changes q so that the enabled constraints are satisfied (to the tolerance)
and the weighted goals are as small as possible. Here:

1. a four-bar (tutorial 7) starts with every angle zero, the loop 1.5 m open, and is closed;
2. the crank is locked and a q range on the coupler picks which of the loop's two branches
   (elbow up or down) to assemble;
3. markers on the coupler and rocker, "observed" at a known pose, are fitted subject to the loop.

Run: ``python tutorials/10_assembly.py``
"""
import numpy as np

from simtk import (
    Assembler,
    Body,
    Constraint,
    Inertia,
    Markers,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)

system = MultibodySystem()
matter = SimbodyMatterSubsystem(system)
rod = Body.Rigid(MassProperties.from_central_inertia(1.0, [0.5, 0, 0], Inertia([0.002, 1 / 12, 1 / 12])))
crank = MobilizedBody.Pin(matter.Ground(), Transform(), rod, Transform())
coupler = MobilizedBody.Pin(crank, Transform([1, 0, 0]), rod, Transform())
rocker = MobilizedBody.Pin(coupler, Transform([1, 0, 0]), rod, Transform())
Constraint.Ball(matter.Ground(), [1.5, 0, 0], rocker, [1, 0, 0])


def angles(s):
    return np.array([b.get_one_q(s, 0) for b in (crank, coupler, rocker)])


# 1. From all zeros.
state = system.realize_topology()
system.realize(state, Stage.Position)
print("1. guess: angles", angles(state), " loop gap", np.abs(state.get_q_err()).max())
Assembler(system).set_tolerance(1e-10).assemble(state)
system.realize(state, Stage.Position)
print("   assembled: angles", angles(state).round(4), " loop gap", np.abs(state.get_q_err()).max())

# 2. Lock the crank at 1 rad; pick each branch with a range on the coupler angle.
for lo, hi in ((-1.5, 0.0), (-np.pi, -1.5)):
    state = system.realize_topology()
    crank.set_one_q(state, 0, 1.0)
    asm = Assembler(system)
    asm.lock_mobilizer(crank)
    asm.restrict_q(coupler, 0, lo, hi)
    asm.assemble(state)
    system.realize(state, Stage.Position)
    print(f"2. coupler in [{lo:.2f}, {hi:.2f}]: angles", angles(state).round(4),
          " gap", f"{np.abs(state.get_q_err()).max():.1e}")

# 3. Markers: observe two points at a known pose, then fit from a nearby guess.
truth = system.realize_topology()
for b, q in zip((crank, coupler, rocker), (1.3, -1.4, -1.2)):
    b.set_one_q(truth, 0, q)
system.project(truth, 1e-12)
system.realize(truth, Stage.Position)
markers = Markers()
stations = [(coupler, [0.5, 0, 0]), (rocker, [0.3, 0, 0])]
for b, s in stations:
    markers.add_marker(b, s)
rng = np.random.default_rng(1)
observed = np.array([b.find_station_location_in_ground(truth, s) for b, s in stations]) + rng.normal(0, 0.005, (2, 3))
markers.move_all_observations(observed)
state = system.realize_topology()
for b, q in zip((crank, coupler, rocker), (1.0, -1.0, -1.0)):
    b.set_one_q(state, 0, q)
asm = Assembler(system)
asm.adopt_assembly_goal(markers, 1.0)
cost = asm.assemble(state)
system.realize(state, Stage.Position)
print("3. true angles  ", angles(truth).round(4))
print("   fitted angles", angles(state).round(4), f" goal cost {cost:.2e} (noise 5 mm), loop gap "
      f"{np.abs(state.get_q_err()).max():.1e}, {asm.get_num_evaluations()} evaluations")
