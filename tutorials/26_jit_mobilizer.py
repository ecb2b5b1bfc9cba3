"""Tutorial 26: seed 004 §3.5's custom mobilizer as a compiled kernel (``simtk.jit``, needs numba).

Tutorial 12 wrote §3.5's CustomTranslation as a ``MobilizedBody.Custom.Implementation``: Python run
once per body and stage, and a model the compiled time loop cannot take. Here the same kinematics are
a numba kernel, ``@simtk.jit.mobilizer``, added as ``MobilizedBody.Jit``: the core's sweeps call its
compiled code directly, without the GIL, as they do a built-in mobilizer's.

The kernel fills R_FM (3, 3), p_FM (3,) and the columns of H_FM (nu, 2, 3: for each speed, the
angular then the linear velocity of M in F, in F). H is constant here, so no HDot kernel is needed
(HDot = 0). Here qdot = u; a mobilizer whose qdot is N(q) u (Euler angles with u the angular
velocity, a quaternion) also gives ``n(q, params, N)`` and ``ndot(q, qdot, params, NDot)`` kernels
(``@sj.mobilizer(nq=4, nu=3, n=..., ndot=...)``). The script checks the kernel against tutorial 12's Python implementation (a trajectory),
runs ``simtk.testing.check_mobilizer`` on it, times both, and saves the model with the kernel
registered by name (``simtk.io.register_kernel``).

Run: ``python tutorials/26_jit_mobilizer.py``
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
    Transform,
)
from simtk.io import model_from_text, model_to_text, register_kernel
from simtk.math import RungeKuttaMersonIntegrator
from simtk.testing import check_mobilizer

try:
    import simtk.jit as sj
except ImportError:  # (the optional extra [jit])
    print("tutorial 26 skipped: numba is not installed (pip install 'simtk[jit]')")
    raise SystemExit(0) from None


@sj.mobilizer(nu=3)
def custom_translation(q, params, R, p, H):
    """§3.5's CustomTranslation: M's origin displaced by q along F's X, Y and Z, no rotation."""
    R[0, 0] = 1.0
    R[1, 1] = 1.0
    R[2, 2] = 1.0
    for k in range(3):
        p[k] = q[k]
        H[k, 1, k] = 1.0  # speed k moves M's origin along F's axis k


def build(kind: str):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.81)
    info = Body.Rigid(MassProperties(2.0, [0.1, 0, 0], Inertia([0.1, 0.2, 0.2])))
    if kind == "jit":
        body = MobilizedBody.Jit(matter.ground, Transform(), info, Transform(), custom_translation, [])
    else:
        custom = importlib.import_module("12_custom_mobilizer").CustomTranslation  # tutorial 12's class
        body = MobilizedBody.Custom(matter.ground, Transform(), info, Transform(), custom(matter))
    bob = MobilizedBody.Pin(body, Transform([0.1, 0, 0]), Body.Rigid(MassProperties(0.5, [0, 0, 0], Inertia(0.01))),
                            Transform([0, 0.6, 0]))
    Force.TwoPointLinearSpring(forces, matter.ground, [0, 0, 0], body, [0, 0, 0], 50.0, 0.3)
    state = system.realize_topology()
    body.set_q(state, [0.2, -0.4, 0.1])
    body.set_u(state, [0.0, 0.5, -0.3])
    bob.set_q(state, [0.8])
    return system, body, state


def simulate(system, state, t_end: float):
    integrator = RungeKuttaMersonIntegrator(system)
    integrator.set_accuracy(1e-10)
    integrator.initialize(state)
    path = integrator.describe_fast_path().split(":")[0]
    t0 = time.perf_counter()
    integrator.step_to(t_end)
    seconds = time.perf_counter() - t0
    return integrator.get_state(), seconds / integrator.get_num_steps_taken(), path


def main(t_end: float = 2.0) -> float:
    t0 = time.perf_counter()
    jit_system, jit_body, jit_state = build("jit")
    print(f"§3.5 as a kernel: compiled (or loaded from numba's cache) in {time.perf_counter() - t0:.2f} s")
    py_system, py_body, py_state = build("python")

    jit_end, jit_step, jit_path = simulate(jit_system, jit_state, t_end)
    py_end, py_step, py_path = simulate(py_system, py_state, t_end)
    difference = float(np.max(np.abs(jit_end.get_y() - py_end.get_y())))
    print(f"after {t_end:g} s: |y_kernel - y_python| = {difference:.1e}")
    print(f"  kernel: {jit_step * 1e6:8.1f} us/step ({jit_path})")
    print(f"  Python: {py_step * 1e6:8.1f} us/step ({py_path}); the kernel is {py_step / jit_step:.0f}x faster")
    assert difference < 1e-7, difference  # two codes of one ODE, integrated to 1e-10 each

    print(check_mobilizer(jit_body, jit_end, assert_ok=True))

    register_kernel(custom_translation, "tutorial26.custom_translation")
    loaded = model_from_text(model_to_text(jit_system))
    state = loaded.realize_topology()
    state.set_y(jit_end.get_y())
    loaded.realize(state, Stage.Acceleration)
    jit_system.realize(jit_end, Stage.Acceleration)
    assert np.array_equal(loaded.get_matter_subsystem().get_udot(state), jit_system.get_matter_subsystem().get_udot(jit_end))
    print("saved and loaded by the kernel's registered name: the same accelerations")
    return difference


if __name__ == "__main__":
    main()
