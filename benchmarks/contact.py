"""Cost of contact: detection alone, then a whole simulation step with ``Force.HuntCrossley``.

Detection: `detect` on n spheres resting on a plane and on each other. The scene is a random pile
of constant density: spheres of radius 0.1 on a jittered grid of three layers whose footprint grows
with n, each layer sinking slightly into the one below and the lowest into the ground plane (a
half-space), so every sphere touches a few neighbours. Printed: contacts found, best-of-repeats time
per call, and the growth exponent fitted to time ~ n^k (sort-and-sweep is O(n log n) plus the
overlapping pairs, so k should come out near 1).

Step cost: 100 spheres of the same size as free bodies (4.2 kg each) under gravity, stacked as a
square pyramid on the floor (`resting_pile`), with a ``Force.HuntCrossley`` among them and the floor,
against the same system without the contact element (the spheres then fall freely), both stepped by
a fixed-step ``SemiExplicitEulerIntegrator`` at 1 ms for a fixed number of steps after a warm-up in
which the contacts take up the weight. Printed: the time per step of each, their ratio (issue 12
asks for at most 3), the contacts at the end and the largest speed (small: the pile rests). Run
with ``python benchmarks/contact.py``.
"""
from __future__ import annotations

import argparse
import math
import platform
import time
import timeit

import numpy as np

from simtk import (
    Body,
    Force,
    GeneralForceSubsystem,
    Inertia,
    MassProperties,
    MobilizedBody,
    MultibodySystem,
    Rotation,
    SemiExplicitEulerIntegrator,
    SimbodyMatterSubsystem,
    Stage,
    Transform,
)
from simtk.multibody.contact._detection import detect, detect_unchecked
from simtk.multibody.contact.geometry import ContactGeometry


def pile(n: int, seed: int = 0):
    """The arguments of `detect` for a half-space (surface 0) and n spheres piled on it."""
    rng = np.random.default_rng(seed)
    r, layers, spacing = 0.1, 3, 0.19
    per_layer = math.ceil(n / layers)
    side = math.ceil(math.sqrt(per_layer))
    p = np.zeros((n + 1, 3))
    for i in range(n):
        layer, k = divmod(i, per_layer)
        gx, gz = divmod(k, side)
        p[i + 1] = [gx * spacing + 0.5 * spacing * (layer % 2), 0.098 + 0.18 * layer, gz * spacing]
    p[1:] += rng.uniform(-0.01, 0.01, (n, 3))
    up = np.array([[0.0, 1, 0], [-1, 0, 0], [0, 0, 1]])     # the plane y = 0, outward normal +y
    geoms = [ContactGeometry.HalfSpace()] + [ContactGeometry.Sphere(r)] * n
    codes = np.array([g.shape_code for g in geoms], np.int32)
    params = np.array([g.params for g in geoms])
    R = np.repeat(np.eye(3)[None], n + 1, axis=0)
    R[0] = up
    return codes, params, R, p, np.full(n + 1, -1, np.int32)


def resting_pile(n: int, r: float) -> np.ndarray:
    """Centres (n, 3) of n spheres of radius r stacked as a square pyramid on the plane y = 0.

    Each layer is a square grid of side 2r (neighbours touching) in the hollows of the one below
    (offset r along x and z, r sqrt(2) higher), filled from the bottom; the bottom layer is the
    smallest square that leaves at most two layers above it. Every sphere above the bottom rests on
    four below, so the pile stands still once its contacts have compressed under the weight.
    """
    side = 1
    while sum(max(side - k, 0) ** 2 for k in range(3)) < n:
        side += 1
    out = []
    layer = 0
    while len(out) < n:
        m = side - layer
        for i in range(m * m):
            if len(out) == n:
                break
            gx, gz = divmod(i, m)
            out.append([(2 * gx + layer) * r, r + layer * r * math.sqrt(2.0), (2 * gz + layer) * r])
        layer += 1
    return np.array(out)


def pile_system(n: int, contact: bool):
    """n free spheres stacked by `resting_pile` under gravity -y, with or without Hunt-Crossley contact.

    Returns (system, state, bodies, element or None)."""
    _, params, R, _, _ = pile(1)
    r, density = float(params[1, 0]), 1000.0
    p = resting_pile(n, r)
    m = density * 4.0 / 3.0 * math.pi * r**3
    system = MultibodySystem()
    matter = SimbodyMatterSubsystem(system)
    forces = GeneralForceSubsystem(system)
    Force.UniformGravity(forces, matter, [0.0, -9.81, 0.0])
    ball = Body.Rigid(MassProperties.from_central_inertia(m, np.zeros(3), Inertia.from_matrix(0.4 * m * r**2 * np.eye(3))))
    bodies = [MobilizedBody.Free(matter.ground, ball) for _ in range(n)]
    hc = None
    if contact:
        # stiff enough to hold three layers at a few mm of penetration, damped, with friction whose
        # transition speed keeps its slope (mu N / vt) stable at the 1 ms explicit step
        material = dict(stiffness=1e7, dissipation=1.0, static_friction=0.6, dynamic_friction=0.5)
        hc = Force.HuntCrossley(forces, transition_velocity=0.1)
        hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), Transform(Rotation.from_matrix(R[0])), **material)
        # a bin: four walls touching the bottom layer (spheres roll, so an unwalled pyramid spreads)
        lo, hi = p[:, [0, 2]].min(axis=0) - r, p[:, [0, 2]].max(axis=0) + r
        x_to = {"-x": Rotation(math.pi, [0.0, 1.0, 0.0]), "+x": Rotation(),
                "-z": Rotation(math.pi / 2, [0.0, 1.0, 0.0]), "+z": Rotation(-math.pi / 2, [0.0, 1.0, 0.0])}
        for side, where in (("-x", [lo[0], 0, 0]), ("+x", [hi[0], 0, 0]), ("-z", [0, 0, lo[1]]), ("+z", [0, 0, hi[1]])):
            hc.add_surface(matter.ground, ContactGeometry.HalfSpace(), Transform(x_to[side], where), **material)
        for b in bodies:
            hc.add_surface(b, ContactGeometry.Sphere(r), **material)
    state = system.realize_topology()
    for b, pos in zip(bodies, p):
        b.set_q(state, np.concatenate([[1.0, 0.0, 0.0, 0.0], pos]))
    return system, state, bodies, hc


def time_steps(n: int, contact: bool, steps: int, h: float = 1e-3, warmup: int = 300):
    """Seconds per fixed step of `pile_system` (best of three runs of ``steps``) after ``warmup`` steps
    (in which the contacts take up the weight), the contacts at the end, the largest speed, the end time."""
    system, state, bodies, hc = pile_system(n, contact)
    integ = SemiExplicitEulerIntegrator(system, h)
    integ.initialize(state)
    integ.step_to(warmup * h)
    best = math.inf
    for _ in range(3):
        t0, wall = integ.get_time(), time.perf_counter()
        integ.step_to(t0 + steps * h)
        best = min(best, (time.perf_counter() - wall) / steps)
    out = integ.get_state()
    system.realize(out, Stage.Velocity)
    speed = max(float(np.linalg.norm(b.get_body_velocity(out)[1])) for b in bodies)
    ncontacts = len(hc.get_contacts(out).depth) if hc is not None else 0
    parts = {}
    if hc is not None:  # the contact kind's kernel call of an evaluation, and detection alone, on the final State
        matter = system.get_matter_subsystem()
        ws = matter._at(out, Stage.Velocity, "benchmark").ws
        fs = type(hc)._pack([hc], matter, out).fs
        F, f = np.zeros((matter.get_num_bodies(), 2, 3)), np.zeros(out.get_nu())
        a = hc._surface_arrays()
        R_GS, p_GS = hc._surface_poses(out, "benchmark")
        for name, fn in (("kernel", lambda: fs.add(ws, F, f)),
                         ("detect", lambda: detect_unchecked(a.codes, a.params, R_GS, p_GS, a.clique))):
            parts[name] = min(timeit.repeat(fn, number=200, repeat=3)) / 200
    return best, ncontacts, speed, out.get_time(), parts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bodies", type=int, default=100, help="free spheres in the step benchmark")
    ap.add_argument("--steps", type=int, default=200, help="steps per timed run (best of three)")
    args = ap.parse_args()
    print(f"contact detection, {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}")
    times = []
    for n in args.sizes:
        scene = pile(n)
        c = detect(*scene)
        number = max(1, int(2000 / n))
        t = min(timeit.repeat(lambda: detect(*scene), number=number, repeat=args.repeats)) / number
        times.append(t)
        print(f"  n = {n:5d} spheres + plane: {len(c):6d} contacts, {t * 1e3:8.3f} ms per call "
              f"({t / n * 1e6:.2f} us per sphere)")
    if len(args.sizes) > 1:
        k = np.polyfit(np.log(args.sizes), np.log(times), 1)[0]
        print(f"  fitted growth: time ~ n^{k:.2f}")

    n, h = args.bodies, 1e-3
    print(f"step cost, {n} free spheres on a plane and on each other, SemiExplicitEuler at h = {h * 1e3:g} ms, "
          f"best of 3 x {args.steps} steps")
    free, _, v_free, t_end, _ = time_steps(n, False, args.steps, h)
    print(f"  without contact:             {free * 1e3:8.3f} ms per step (falling freely: {v_free:.2f} m/s "
          f"at t = {t_end:.3f} s)")
    hc, nc, v_hc, _, parts = time_steps(n, True, args.steps, h)
    print(f"  with Force.HuntCrossley:     {hc * 1e3:8.3f} ms per step ({nc} contacts at the end, largest speed "
          f"{v_hc:.3f} m/s)")
    print(f"  ratio (issue 12 asks <= 3): {hc / free:8.2f}x")
    print(f"  of the {1e3 * (hc - free):.3f} ms contact adds per step: the compiled kind's one kernel call "
          f"{1e3 * parts['kernel']:.3f} ms (detection, sorting and the law; detection alone, through Python, "
          f"{1e3 * parts['detect']:.3f} ms), the rest the integration of the bodies in contact")


if __name__ == "__main__":
    main()
