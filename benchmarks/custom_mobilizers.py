"""Cost of mobilizers written in Python against their compiled built-in twins, as ratios.

Each figure is the best of several ``timeit`` repeats of ``set_q`` + ``realize(state,
Stage.Acceleration)`` (the work of one integrator stage), in microseconds, for:

* ``knee``: a leg (thigh on a hip Pin, shank on the knee) under gravity, the knee a Pin, a
  FunctionBased pin (rotation = Linear(q)) and the FunctionBased knee of tutorial 11 (rotation plus
  two spline translations). The seed says a FunctionBased knee has "performance comparable to a
  simple Pin joint".
* ``twins``: one body on a built-in (Pin, Translation, Ball) and the same body on a
  ``MobilizedBody.Custom`` twin written as a user would, with a Pin below it.
* ``chain``: 10 bodies in a chain, all Pins or all FunctionBased pins: the marginal cost of one
  Python-side mobilizer.

Also the wall time of a 1 s simulation of the leg (Runge-Kutta-Merson, accuracy 1e-6).
Run with ``python benchmarks/custom_mobilizers.py``.
"""
from __future__ import annotations

import argparse
import platform
import time
import timeit

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
    Rotation,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.math import RungeKuttaMersonIntegrator, TimeStepper

KNEE_ANGLE = np.array([-2.0944, -1.74533, -1.39626, -1.0472, -0.698132, -0.349066, -0.174533, 0.0, 0.174533])
TIBIA_X = np.array([-0.0032, 0.00179, 0.00411, 0.0041, 0.00212, -0.001, -0.0031, -0.005227, -0.005435])
TIBIA_Y = np.array([-0.4226, -0.4082, -0.399, -0.3976, -0.3966, -0.395264, -0.396, -0.396, -0.3971])
THIGH = Body.Rigid(MassProperties.from_central_inertia(8.0, [0, -0.17, 0], Inertia([0.12, 0.03, 0.12])))
SHANK = Body.Rigid(MassProperties.from_central_inertia(3.5, [0, -0.18, 0], Inertia([0.05, 0.006, 0.05])))
Impl = MobilizedBody.Custom.Implementation


def _zero():
    return Function.Constant(0.0, 0)


def knee_joint(kind: str, parent):
    if kind == "Pin":
        return MobilizedBody.Pin(parent, Transform([0, -0.4, 0]), SHANK, Transform())
    if kind == "FunctionBased pin":
        functions = [_zero(), _zero(), Function.Linear([1.0, 0.0]), _zero(), Function.Constant(-0.4, 0), _zero()]
        return MobilizedBody.FunctionBased(parent, SHANK, 1, functions, [[], [], [0], [], [], []])
    functions = [_zero(), _zero(), Function.Linear([1.0, 0.0]), Function.Spline(KNEE_ANGLE, TIBIA_X),
                 Function.Spline(KNEE_ANGLE, TIBIA_Y), _zero()]
    return MobilizedBody.FunctionBased(parent, SHANK, 1, functions, [[], [], [0], [0], [0], []])


def leg(kind: str):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.81)
    hip = MobilizedBody.Pin(matter.ground, Transform([0, 1, 0]), THIGH, Transform())
    knee_joint(kind, hip)
    return system


class PinTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 1, 1, 1)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation(q[0], "z"))

    def multiply_by_h_matrix(self, state, u):
        return np.array([[0.0, 0.0, u[0]], [0.0, 0.0, 0.0]])

    def multiply_by_h_transpose(self, state, F):
        return np.array([F[0][2]])

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(1)


class TranslationTwin(Impl):
    def __init__(self, matter):
        super().__init__(matter, 3, 3, 0)

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(q)

    def multiply_by_h_matrix(self, state, u):
        return np.array([np.zeros(3), u])

    def multiply_by_h_transpose(self, state, F):
        return np.array(F[1], dtype=float)

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)


def _e(q):
    q0, x, y, z = q
    return np.array([[-x, -y, -z], [q0, z, -y], [-z, q0, x], [y, -x, q0]])


class BallTwin(Impl):
    """Quaternion q, u = w_FM in F: qdot = E(q) u / 2."""

    def __init__(self, matter):
        super().__init__(matter, 3, 4, 0)

    def get_default_q(self):
        return np.array([1.0, 0.0, 0.0, 0.0])

    def calc_mobilizer_transform_from_q(self, state, q):
        return Transform(Rotation.from_quaternion(q / np.linalg.norm(q)))

    def multiply_by_h_matrix(self, state, u):
        return np.array([u, np.zeros(3)])

    def multiply_by_h_transpose(self, state, F):
        return np.array(F[0], dtype=float)

    def multiply_by_h_dot_matrix(self, state, u):
        return np.zeros((2, 3))

    def multiply_by_h_dot_transpose(self, state, F):
        return np.zeros(3)

    def multiply_by_n_matrix(self, state, transpose, v):
        E = 0.5 * _e(self.get_q(state))
        return E.T @ v if transpose else E @ v

    def multiply_by_n_inv_matrix(self, state, transpose, v):
        E = 2.0 * _e(self.get_q(state)).T
        return E.T @ v if transpose else E @ v

    def multiply_by_n_dot_matrix(self, state, transpose, v):
        Ed = 0.5 * _e(0.5 * _e(self.get_q(state)) @ self.get_u(state))
        return Ed.T @ v if transpose else Ed @ v


TWINS = {"Pin": PinTwin, "Translation": TranslationTwin, "Ball": BallTwin}


def twin_system(kind: str, custom: bool):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.81)
    if custom:
        a = MobilizedBody.Custom(matter.ground, Transform(), SHANK, Transform([0, 0.3, 0]), TWINS[kind](matter))
    else:
        a = getattr(MobilizedBody, kind)(matter.ground, Transform(), SHANK, Transform([0, 0.3, 0]))
    MobilizedBody.Pin(a, Transform([0.1, 0, 0]), SHANK, Transform([0, 0.4, 0]))
    return system


def chain(function_based: bool, n: int = 10):
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.Gravity(forces, matter, [0, -1, 0], 9.81)
    parent = matter.ground
    for _ in range(n):
        if function_based:
            functions = [_zero(), _zero(), Function.Linear([1.0, 0.0]), _zero(), Function.Constant(-0.4, 0), _zero()]
            parent = MobilizedBody.FunctionBased(parent, SHANK, 1, functions, [[], [], [0], [], [], []])
        else:
            parent = MobilizedBody.Pin(parent, Transform([0, -0.4, 0]), SHANK, Transform())
    return system


def per_realization(system, repeat: int) -> float:
    """Best time (s) of set_q + realize(Acceleration)."""
    state = system.realize_topology()
    system.realize(state, Stage.Acceleration)
    q = state.get_q().copy()
    q[-1] += 0.3
    q2 = q + 1e-3

    flip = [q, q2]
    k = [0]

    def step():
        k[0] ^= 1
        state.set_q(flip[k[0]])
        system.realize(state, Stage.Acceleration)

    timer = timeit.Timer(step)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def simulate_leg(kind: str) -> tuple[float, int]:
    system = leg(kind)
    state = system.realize_topology()
    state.upd_q()[:] = [0.6, -0.3]
    state.upd_u()[:] = [0.0, -1.0]
    integ = RungeKuttaMersonIntegrator(system)
    integ.set_accuracy(1e-6)
    ts = TimeStepper(system, integ)
    ts.initialize(state)
    t0 = time.perf_counter()
    ts.step_to(1.0)
    return time.perf_counter() - t0, integ.get_num_realizations()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timeit repeats (the best is kept)")
    args = parser.parse_args()
    print(f"set_q + realize(state, Stage.Acceleration), best of {args.repeat}; Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print("\nknee (thigh on a hip Pin + shank on the knee, gravity)")
    base = per_realization(leg("Pin"), args.repeat) * 1e6
    print(f"  {'knee':<28s}{'us per call':>12s}{'ratio to Pin':>14s}")
    print(f"  {'Pin':<28s}{base:>12.2f}{1.0:>14.2f}")
    for kind in ("FunctionBased pin", "FunctionBased spline knee"):
        t = per_realization(leg(kind), args.repeat) * 1e6
        print(f"  {kind:<28s}{t:>12.2f}{t / base:>14.2f}")
    print("\n  1 s simulation of the leg (RK-Merson, accuracy 1e-6)")
    wall_pin, n_pin = simulate_leg("Pin")
    for kind in ("Pin", "FunctionBased spline knee"):
        wall, n = simulate_leg(kind)
        print(f"  {kind:<28s}{wall * 1e3:>9.1f} ms {n:>6d} realizations {wall / wall_pin:>6.2f} x Pin")

    print("\nCustom twins (the body on the twin, a Pin below it, gravity)")
    print(f"  {'mobilizer':<14s}{'built-in us':>12s}{'Custom us':>12s}{'ratio':>8s}")
    for kind in TWINS:
        tb = per_realization(twin_system(kind, False), args.repeat) * 1e6
        tc = per_realization(twin_system(kind, True), args.repeat) * 1e6
        print(f"  {kind:<14s}{tb:>12.2f}{tc:>12.2f}{tc / tb:>8.2f}")

    print("\nchain of 10 bodies")
    tp = per_realization(chain(False), args.repeat) * 1e6
    tf = per_realization(chain(True), args.repeat) * 1e6
    print(f"  all Pin {tp:.2f} us, all FunctionBased pins {tf:.2f} us: ratio {tf / tp:.2f}, "
          f"{(tf - tp) / 10:.2f} us per FunctionBased body")


if __name__ == "__main__":
    main()
