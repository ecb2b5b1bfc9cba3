"""Cost of contact detection: `detect` on n spheres resting on a plane and on each other.

The scene is a random pile of constant density: spheres of radius 0.1 on a jittered grid of three
layers whose footprint grows with n, each layer sinking slightly into the one below and the lowest
into the ground plane (a half-space), so every sphere touches a few neighbours. Printed: contacts
found, best-of-repeats time per call, and the growth exponent fitted to time ~ n^k (sort-and-sweep
is O(n log n) plus the overlapping pairs, so k should come out near 1). Run with
``python benchmarks/contact.py``.
"""
from __future__ import annotations

import argparse
import math
import platform
import timeit

import numpy as np

from simtk.multibody.contact._detection import detect
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000])
    ap.add_argument("--repeats", type=int, default=5)
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


if __name__ == "__main__":
    main()
