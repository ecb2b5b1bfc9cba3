"""Tutorial 27: seed 004 §3.2's custom constraint as a compiled kernel (``simtk.jit``, needs numba).

Tutorial 8 wrote §3.2's ``ExampleConstraint`` (two body origins held at a distance d) as a
``Constraint.Custom.Implementation``: Python methods run once per stage, and once per equation for
the constraint's forces. Here the same math is four numba functions made into one kernel by
``simtk.jit.constraint`` and added as ``Constraint.Jit``: the core calls the compiled code without
the GIL, in the realization and inside the compiled time loop (which solves and projects the
constraint itself), where the Python constraint sends the model to the Python time loop.

    perr = (r.r - d^2)/2,   pverr = v.r,   paerr = a.r + v.v,   forces: lambda r on body 2, -lambda r on body 1

The errors are written in Ground from ``ctx.p_GB``, ``ctx.V_GB`` and ``ctx.A_GB`` (angular, then
linear); G is taken from the force function (the forces of a unit multiplier), so
``simtk.testing.check_constraint`` checks that the force function is the errors' gradient and that
each error is the previous one's time derivative. The script compares the kernel with tutorial 8's
Python implementation (udot, multipliers, a 2 s trajectory), runs ``check_constraint``, times both,
and saves the model with the kernel registered by name.

Run: ``python tutorials/27_jit_constraint.py``
"""
import importlib
import time

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
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.io import model_from_text, model_to_text, register_kernel
from simtk.math import RungeKuttaMersonIntegrator
from simtk.testing import check_constraint

try:
    import simtk.jit as sj
except ImportError:  # (the optional extra [jit])
    print("tutorial 27 skipped: numba is not installed (pip install 'simtk[jit]')")
    raise SystemExit(0) from None

tutorial8 = importlib.import_module("08_custom_constraint")  # its ExampleConstraint


# params: (body1, body2, distance)
# C++: void realizePositionErrors(const State& state, int mp, Real* perr) const {
def position_errors(ctx, params, perr):
    r = sj.sub3(ctx.p_GB[int(params[1])], ctx.p_GB[int(params[0])])
    perr[0] = (sj.dot3(r, r) - params[2] * params[2]) / 2


# C++: void realizePositionDotErrors(const State& state, int mp, Real* pverr) const {
def velocity_errors(ctx, params, pverr):
    b1, b2 = int(params[0]), int(params[1])
    r = sj.sub3(ctx.p_GB[b2], ctx.p_GB[b1])
    v = sj.sub3(ctx.V_GB[b2, 1], ctx.V_GB[b1, 1])
    pverr[0] = sj.dot3(v, r)


# C++: void realizePositionDotDotErrors(const State& state, int mp, Real* paerr) const {
def acceleration_errors(ctx, params, paerr):
    b1, b2 = int(params[0]), int(params[1])
    r = sj.sub3(ctx.p_GB[b2], ctx.p_GB[b1])
    v = sj.sub3(ctx.V_GB[b2, 1], ctx.V_GB[b1, 1])
    a = sj.sub3(ctx.A_GB[b2, 1], ctx.A_GB[b1, 1])
    paerr[0] = sj.dot3(a, r) + sj.dot3(v, v)


# C++: void applyPositionConstraintForces(const State& state, int mp, const Real* multipliers,
# C++:     Vector_<SpatialVec>& bodyForcesInA, Vector& mobilityForces) const {
@sj.constraint(mp=1, position_errors=position_errors, velocity_errors=velocity_errors,
               acceleration_errors=acceleration_errors, name="example_constraint")
def example_constraint(ctx, params, multipliers, body_forces, mobility_forces):
    b1, b2 = int(params[0]), int(params[1])
    force = sj.scale3(multipliers[0], sj.sub3(ctx.p_GB[b2], ctx.p_GB[b1]))
    for k in range(3):  # C++: addInStationForce(state, body2, Vec3(0), force, bodyForcesInA); and -force on body1
        body_forces[b2, 1, k] += force[k]
        body_forces[b1, 1, k] -= force[k]


def build(kind):
    """Tutorial 8's two pendulums, their bobs held 1 m apart by the kernel or by tutorial 8's class."""
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0, -9.81, 0])
    body = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    p1 = MobilizedBody.Ball(matter.Ground(), Transform([0, 0, 0]), body, Transform([0, 1, 0]))
    p2 = MobilizedBody.Ball(matter.Ground(), Transform([1, 0, 0]), body, Transform([0, 1, 0]))
    if kind == "jit":
        c = Constraint.Jit(matter, example_constraint, [p1, p2, 1.0])
    else:
        c = Constraint.Custom(tutorial8.ExampleConstraint(p1, p2, 1.0))
    state = system.realize_topology()
    for p in (p1, p2):
        p.set_q(state, [np.cos(0.3), 0.0, 0.0, np.sin(0.3)])  # swung toward each other: 1 m apart
    p1.set_u(state, [1.5, 0.0, 0.0])
    return system, matter, c, state


def run(system, state, t_end):
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-8)
    integ.initialize(state)
    path = integ.describe_fast_path()
    t0 = time.perf_counter()
    integ.step_to(t_end)
    seconds = time.perf_counter() - t0
    return integ.get_state(), seconds / integ.get_num_steps_taken(), integ.get_num_steps_taken(), path


def main():
    t0 = time.perf_counter()
    jit_system, jit_matter, jit_c, jit_state = build("jit")
    print(f"§3.2 as a kernel: compiled in {time.perf_counter() - t0:.2f} s")
    py_system, py_matter, py_c, py_state = build("python")

    for system, state in ((jit_system, jit_state), (py_system, py_state)):
        system.realize(state, Stage.Acceleration)
    du = np.abs(jit_matter.get_udot(jit_state) - py_matter.get_udot(py_state)).max()
    dl = abs(jit_c.get_multipliers(jit_state)[0] - py_c.get_multipliers(py_state)[0])
    scale = max(1.0, float(np.abs(py_matter.get_udot(py_state)).max()))
    print(f"  udot: max |jit - Python| = {du:.1e}; multiplier: {dl:.1e} (scale {scale:.1f})")
    assert du <= 1e3 * np.finfo(float).eps * scale and dl <= 1e3 * np.finfo(float).eps * scale

    report = check_constraint(jit_c, jit_state, assert_ok=True)
    print(f"  simtk.testing.check_constraint (errors' time derivatives and G^T by central differences): "
          f"{report.summary().splitlines()[0]}")

    end_jit, per_step_jit, steps, path = run(jit_system, jit_state, 2.0)
    end_py, per_step_py, _, py_path = run(py_system, py_state, 2.0)
    print(f"  jit:    {path}")
    print(f"  Python: {py_path}")
    dq = np.abs(end_jit.get_q() - end_py.get_q()).max()
    jit_system.realize(end_jit, Stage.Position)
    print(f"  2 s of RK-Merson 1e-8 ({steps} steps): |q_jit - q_Python| = {dq:.1e}; "
          f"position error after 2 s {jit_c.get_position_errors(end_jit)[0]:.1e}")
    print(f"  per step: jit {per_step_jit * 1e6:.1f} us, Python {per_step_py * 1e6:.1f} us "
          f"({per_step_py / per_step_jit:.0f}x)")

    # A model file keeps the kernel's registered name; the user's module registers it before loading.
    register_kernel(example_constraint, "tutorial27.example_constraint")
    text = model_to_text(jit_system)
    loaded = model_from_text(text)
    print("  saved as: " + " ".join(line.strip() for line in text.splitlines() if "Constraint.Jit" in line
                                    or "kernel=" in line))
    state = loaded.realize_topology()
    state.set_y(jit_state.get_y().copy())
    loaded.realize(state, Stage.Acceleration)
    print(f"  reloaded: udot equal to the original's: "
          f"{np.array_equal(loaded.get_matter_subsystem().get_udot(state), jit_matter.get_udot(jit_state))}")


if __name__ == "__main__":
    main()
