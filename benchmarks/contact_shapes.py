"""Cost of detection per contact shape (issue 32): the Cylinder and ConvexHull beside the older shapes.

The scene: n shapes of one kind (about 0.2 m across), randomly oriented and scattered over a 3 m x 3 m
patch of a half-space floor, sunk slightly into it, so that each touches the floor and a few of its
neighbours. Printed per kind: contacts found and the best-of-repeats time per `detect` call, as a
ratio to the Brick's (closed-form narrow phases) and to the Ellipsoid's (EPA). Cylinders and hulls
take EPA against every shape but the half-space. Run with ``python benchmarks/contact_shapes.py``.
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np
from scipy.spatial.transform import Rotation as SciRot

from simtk.multibody.contact._detection import detect_unchecked
from simtk.multibody.contact.geometry import ContactGeometry


def scene(make, n: int, seed: int = 0) -> tuple:
    """detect_unchecked's arguments for the floor and n shapes made by ``make``."""
    rng = np.random.default_rng(seed)
    geoms = [ContactGeometry.HalfSpace()] + [make(rng) for _ in range(n)]
    params, verts, row = [], [], 0
    for g in geoms:
        p = list(g.params)
        if g.kind == "ConvexHull":
            p[2] = row
            verts.append(g.vertices)
            row += g.vertices.shape[0]
        params.append(p)
    R = np.stack([SciRot.from_euler("y", 90, degrees=True).as_matrix()]  # material z < 0
                 + [SciRot.random(random_state=rng).as_matrix() for _ in range(n)])
    p = np.concatenate([[np.zeros(3)], rng.uniform(-1.5, 1.5, (n, 3)) * [1, 1, 0] + [0, 0, 0.08]])
    return (np.array([g.shape_code for g in geoms], np.int32), np.array(params), np.ascontiguousarray(R), p,
            np.full(n + 1, -1, np.int32), np.concatenate(verts) if verts else None, None)


def _sphere_points(rng, m: int) -> np.ndarray:
    v = rng.normal(size=(m, 3))
    return 0.1 * v / np.linalg.norm(v, axis=1)[:, None]


KINDS = {
    "Brick": lambda rng: ContactGeometry.Brick([0.1, 0.1, 0.1]),
    "Capsule": lambda rng: ContactGeometry.Capsule(0.1, 0.1),
    "Ellipsoid": lambda rng: ContactGeometry.Ellipsoid([0.1, 0.12, 0.08]),
    "Cylinder": lambda rng: ContactGeometry.Cylinder(0.1, 0.1),
    "ConvexHull (box, 8 vertices)": lambda rng: ContactGeometry.ConvexHull(
        [[x, y, z] for x in (-.1, .1) for y in (-.1, .1) for z in (-.1, .1)]),
    "ConvexHull (40 points on a sphere)": lambda rng: ContactGeometry.ConvexHull(_sphere_points(rng, 40)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="shapes in the scene")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    times = {}
    print(f"{args.n} shapes on a floor; best of {args.repeats} x 10 calls")
    found = {}
    for name, make in KINDS.items():
        a = scene(make, args.n)
        found[name] = len(detect_unchecked(*a))
        times[name] = min(timeit.repeat(lambda: detect_unchecked(*a), number=10, repeat=args.repeats)) / 10
    for name in KINDS:
        print(f"  {name:36s} contacts {found[name]:5d}  {times[name] * 1e3:8.3f} ms  "
              f"x{times[name] / times['Brick']:.2f} Brick  x{times[name] / times['Ellipsoid']:.2f} Ellipsoid")


if __name__ == "__main__":
    main()
