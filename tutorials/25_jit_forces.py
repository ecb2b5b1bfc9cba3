"""Tutorial 24: seed 004 §3.1's custom force as a compiled kernel (``simtk.jit``, needs numba).

Tutorial 6 wrote §3.1's pairwise 1/r^2 repulsion as a ``Force.Custom.Implementation``: Python run
once per realization. Here the same math is a numba kernel, ``@simtk.jit.force``, added as
``Force.Jit``: the core calls its compiled code directly, without the GIL, in the compiled time loop.

The kernel reads the bodies' origins from ``ctx.p_GB`` and adds into ``body_forces`` (torque first,
then force, in Ground); its potential energy kernel makes ``simtk.testing.check_force`` possible.
The script checks the kernel against tutorial 6's Python implementation (forces, accelerations, a
trajectory), runs ``check_force`` on it, times both, and saves the model with the kernel registered by
name (``simtk.io.register_kernel``).

Run: ``python tutorials/25_jit_forces.py``
"""
import importlib
import time

import numpy as np

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
)
from simtk.io import model_from_text, model_to_text, register_kernel
from simtk.math import RungeKuttaMersonIntegrator
from simtk.testing import check_force

try:
    import simtk.jit as sj
except ImportError:  # (the optional extra [jit])
    print("tutorial 24 skipped: numba is not installed (pip install 'simtk[jit]')")
    raise SystemExit(0) from None


def repulsion_energy(ctx, params):
    # +1/r per pair (tutorial 6 explains the seed's sign)
    p = ctx.p_GB
    energy = 0.0
    for i in range(p.shape[0]):
        for j in range(i):
            energy += 1.0 / sj.norm3(sj.sub3(p[i], p[j]))
    return energy


# C++: class ExampleForce : public Force::Custom::Implementation { ... calcForce ... }
@sj.force(potential_energy=repulsion_energy, depends_only_on_positions=True)
def repulsion(ctx, params, body_forces, mobility_forces):
    p = ctx.p_GB
    for i in range(p.shape[0]):  # every pair of bodies, Ground included, as the seed's loops
        for j in range(i):
            r = sj.sub3(p[i], p[j])
            d = sj.norm3(r)
            f = sj.scale3(1.0 / (d * d * d), r)
            for k in range(3):
                body_forces[i, 1, k] += f[k]
                body_forces[j, 1, k] -= f[k]


def build(kind):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    if kind == "jit":
        element = Force.Jit(forces, matter, repulsion)
    else:
        example_force = importlib.import_module("06_custom_force").ExampleForce  # tutorial 6's class
        element = Force.Custom(forces, example_force(matter))
    body_info = Body.Rigid(MassProperties(1.0, [0, 0, 0], Inertia(0.1)))
    bodies = [MobilizedBody.Free(matter.ground, body_info) for _ in range(3)]
    state = system.realize_topology()
    for body, p, v in zip(bodies, ([1.0, 0, 0], [-0.5, 0.9, 0], [-0.5, -0.9, 0.2]),
                          ([0, 0, 0.3], [0.2, 0, 0], [0, -0.1, 0])):
        body.set_q(state, [1, 0, 0, 0, *p])
        body.set_u(state, [0, 0, 0, *v])
    return system, element, state


def run(system, state, t_end):
    integrator = RungeKuttaMersonIntegrator(system)
    integrator.set_accuracy(1e-8)
    integrator.initialize(state)
    t0 = time.perf_counter()
    integrator.step_to(t_end)
    seconds = time.perf_counter() - t0
    return integrator.get_state(), seconds / integrator.get_num_steps_taken(), integrator.get_num_steps_taken()


def main():
    t0 = time.perf_counter()
    jit_system, jit_element, jit_state = build("jit")
    print(f"§3.1 as a kernel: compiled (or loaded from numba's cache) in {time.perf_counter() - t0:.2f} s")
    py_system, _, py_state = build("python")

    for system, state in ((jit_system, jit_state), (py_system, py_state)):
        system.realize(state, Stage.Acceleration)
    F_jit, F_py = jit_system.get_rigid_body_forces(jit_state), py_system.get_rigid_body_forces(py_state)
    udot_jit = jit_system.get_matter_subsystem().get_udot(jit_state)
    udot_py = py_system.get_matter_subsystem().get_udot(py_state)
    scale = max(1.0, float(np.abs(F_py).max()))
    print(f"  body forces: max |jit - Python| = {np.abs(F_jit - F_py).max():.1e} (scale {scale:.2f}); "
          f"udot: {np.abs(udot_jit - udot_py).max():.1e}")
    assert np.abs(F_jit - F_py).max() <= 64 * np.finfo(float).eps * scale
    pe_jit, pe_py = jit_system.calc_potential_energy(jit_state), py_system.calc_potential_energy(py_state)
    print(f"  potential energy: jit {pe_jit:.12f}, Python {pe_py:.12f}")

    report = check_force(jit_element, jit_state, assert_ok=True)
    print(f"  simtk.testing.check_force (force = -dPE/dq by central differences): "
          f"{report.summary().splitlines()[0]}")

    end_jit, per_step_jit, steps = run(jit_system, jit_state, 10.0)
    end_py, per_step_py, _ = run(py_system, py_state, 10.0)
    dy = np.abs(end_jit.get_y() - end_py.get_y()).max()
    print(f"  10 s of RK-Merson 1e-8 ({steps} steps): |y_jit - y_Python| = {dy:.1e}")
    jit_system.realize(end_jit, Stage.Velocity)
    print(f"  KE + PE after 10 s: {jit_system.calc_energy(end_jit):.9f} (start "
          f"{jit_system.calc_energy(jit_state):.9f})")
    print(f"  per step: jit {per_step_jit * 1e6:.1f} us, Python {per_step_py * 1e6:.1f} us "
          f"({per_step_py / per_step_jit:.0f}x)")

    # A model file keeps the kernel's registered name; the user's module registers it before loading.
    register_kernel(repulsion, "tutorial24.repulsion")
    text = model_to_text(jit_system)
    loaded = model_from_text(text)
    print("  saved as: " + " ".join(line.strip() for line in text.splitlines()
                                    if "Force.Jit" in line or "kernel=" in line))
    state = loaded.realize_topology()
    state.set_y(jit_state.get_y().copy())
    loaded.realize(state, Stage.Acceleration)
    print(f"  reloaded: udot equal to the original's: "
          f"{np.array_equal(loaded.get_matter_subsystem().get_udot(state), udot_jit)}")


if __name__ == "__main__":
    main()
